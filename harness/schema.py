"""The verification report's JSON schema — the stable contract other tools read —
as a JSON-Schema (draft 2020-12) dict, plus a small validator for the subset of
JSON Schema it uses (type, enum, properties, required, items, minimum,
minProperties), so the harness needs no extra dependency to check its own
output before writing it, a baseline, or a report given to ``parity report``.
Every key the renderers read is covered, so a report that validates renders."""

from __future__ import annotations

import math

SCHEMA_ID = "https://parity.invalid/schemas/verify-report.json"

_INT_LIST = {"type": "array", "items": {"type": "integer", "minimum": 0}}
_ERROR = {"type": ["number", "null"], "minimum": 0}
_TEXT = {"type": ["string", "null"]}
_STEP = {"type": "integer", "minimum": 0}

TOKENS = {
    "type": "object",
    "required": ["expected", "actual", "agree"],
    "properties": {"expected": _INT_LIST, "actual": _INT_LIST, "agree": {"type": "boolean"}},
}

CHECK = {
    "type": "object",
    "required": ["step", "tensor", "dtype_match", "max_abs_error", "max_rel_error", "passed"],
    "properties": {
        "step": {"type": "integer", "minimum": 0},
        "tensor": {"type": "string"},
        "dtype_match": {"type": "boolean"},
        "max_abs_error": _ERROR,
        "max_rel_error": _ERROR,
        "tolerance_ratio": _ERROR,
        "passed": {"type": "boolean"},
    },
}

FIRST_DIVERGENCE = {
    "type": ["object", "null"],
    "required": ["step", "tensor", "max_abs_error", "op", "source"],
    "properties": {
        "step": _STEP,
        "tensor": {"type": "string"},
        "max_abs_error": _ERROR,
        "op": _TEXT,
        "source": _TEXT,
        "reason": _TEXT,
        "localization": _TEXT,
        "source_text": _TEXT,
        "op_max_abs_error": _ERROR,
        # the tensor whose sublayer holds `op` (upstream of `tensor` when the error was born there)
        "sublayer": _TEXT,
        # the function whose line `source` is, and its callers ("path:LINE (function)", innermost first)
        "function": _TEXT,
        "called_from": {"type": ["array", "null"], "items": {"type": "string"}},
        # the diverging tensor's element furthest outside its allowance
        "worst_index": {"type": ["array", "null"], "items": {"type": "integer", "minimum": 0}},
        # the CPU pipeline step whose addition makes the sublayer diverge on the reference's input, and how
        # that was found (subgraph mode on the CPU)
        "introduced_by": _TEXT,
        "pass_bisection": _TEXT,
        # a kernel MLIR refused (status "compile_error"): the failing MLIR op and MLIR's own words
        "mlir_op": _TEXT,
        "mlir_diagnostic": _TEXT,
    },
}

NEAR_TIE = {
    "type": "object",
    "required": ["kind", "step", "expected", "actual", "margin"],
    "properties": {
        "kind": {"enum": ["forced_tokens", "tokens"]},
        "step": _STEP,
        "expected": {"type": "integer", "minimum": 0},
        "actual": {"type": ["integer", "null"], "minimum": 0},
        "margin": {"type": "number", "minimum": 0},
        "bound": {"type": "number", "minimum": 0},
    },
}

REGRESSION = {
    "type": "object",
    "required": ["mode", "step", "tensor", "baseline_max_abs_error", "max_abs_error", "ratio"],
    "properties": {
        "mode": {"type": "string"},
        "step": _STEP,
        "tensor": {"type": "string"},
        "baseline_max_abs_error": {"type": "number", "minimum": 0},
        "max_abs_error": _ERROR,
        "ratio": _ERROR,
    },
}

TOLERANCE = {
    "type": "object",
    "required": ["rtol", "atol"],
    "properties": {"rtol": {"type": "number", "minimum": 0}, "atol": {"type": "number", "minimum": 0}},
}

MODE = {
    "type": "object",
    "required": ["status", "reason", "tokens", "max_abs_error", "first_divergence", "checks"],
    "properties": {
        "status": {"enum": ["pass", "diverged", "compile_error", "error", "skipped"]},
        "reason": _TEXT,
        "kind": {"type": "string"},
        "target": {"type": "string"},
        "tokens": TOKENS,
        "forced_tokens": TOKENS,
        "max_abs_error": _ERROR,
        "first_divergence": FIRST_DIVERGENCE,
        "checks": {"type": "array", "items": CHECK},
        "near_ties": {"type": "array", "items": NEAR_TIE},
        "duration_s": {"type": "number", "minimum": 0},
    },
}

REPORT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "parity verify report",
    "type": "object",
    "required": ["reference", "checkpoint", "prompt", "input_ids", "modes"],
    "properties": {
        "reference": {
            "type": "object",
            "required": ["kind", "url", "revision", "numpy_version"],
            "properties": {
                "kind": {"enum": ["upstream", "bundled", "path"]},
                "url": {"type": ["string", "null"]},
                "revision": {"type": ["string", "null"]},
                "numpy_version": {"type": ["string", "null"]},
            },
        },
        "checkpoint": {
            "type": "object",
            "required": ["name", "sha256"],
            "properties": {"name": {"type": ["string", "null"]}, "sha256": {"type": ["string", "null"]}},
        },
        "prompt": {"type": "string"},
        "input_ids": _INT_LIST,
        "output_ids": _INT_LIST,
        "completion": _TEXT,
        "margins": {"type": ["array", "null"], "items": {"type": "number"}},
        "tolerance": TOLERANCE,
        "banner": _TEXT,
        "created": _TEXT,
        # set when the run compiled with a deliberate fault (parity verify --inject-fault)
        "injected_fault": {
            "type": ["object", "null"],
            "required": ["op", "factor", "offset"],
            # a non-finite factor or offset (a miscompile that yields inf/NaN) is a string: "inf", "-inf", "nan"
            "properties": {"op": {"type": "string"}, "factor": {"type": ["number", "string"]},
                           "offset": {"type": ["number", "string"]}},
        },
        # A report with no modes verified nothing; it must not read as a pass.
        "modes": {"type": "object", "minProperties": 1, "additionalProperties": MODE},
        "regressions": {"type": "array", "items": REGRESSION},
        # An object naming the baseline file; older reports recorded its creation time (or true).
        "baseline": {
            "type": ["object", "string", "boolean", "null"],
            "required": ["path", "sha256", "created"],
            "properties": {"path": _TEXT, "sha256": _TEXT, "created": _TEXT},
        },
    },
}


class SchemaError(ValueError):
    """A document does not follow the schema; the message gives the JSON path."""


_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    # bool is an int subclass in Python but not a JSON number
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
    "null": lambda v: v is None,
}


def validate(document, schema: dict, path: str = "$") -> None:
    """Raise SchemaError at the first place `document` breaks `schema`."""
    if "enum" in schema and document not in schema["enum"]:
        raise SchemaError(f"{path}: {document!r} is not one of {schema['enum']}")
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](document) for t in types):
            raise SchemaError(f"{path}: expected {' or '.join(types)}, got {type(document).__name__} {document!r:.60}")
    if document is None:
        return
    if "minimum" in schema and _TYPES["number"](document) and document < schema["minimum"]:
        raise SchemaError(f"{path}: {document!r} is below the minimum {schema['minimum']}")
    if isinstance(document, dict):
        if len(document) < schema.get("minProperties", 0):
            raise SchemaError(f"{path}: has {len(document)} entries, needs at least {schema['minProperties']}")
        for key in schema.get("required", []):
            if key not in document:
                raise SchemaError(f"{path}: missing required key {key!r}")
        properties = schema.get("properties", {})
        for key, value in document.items():
            if key in properties:
                validate(value, properties[key], f"{path}.{key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                validate(value, schema["additionalProperties"], f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                raise SchemaError(f"{path}: unexpected key {key!r}")
    if isinstance(document, list) and "items" in schema:
        for index, item in enumerate(document):
            validate(item, schema["items"], f"{path}[{index}]")


def validate_report(report: dict) -> None:
    """Raise SchemaError unless `report` follows REPORT_SCHEMA."""
    validate(report, REPORT_SCHEMA)
