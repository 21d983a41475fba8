"""Fuzz cases as data: building op-level cases from the registry, encoding them
(and their arrays) as JSON so that a failure is a reproducible file, and value
generation per dtype and domain — ±0, subnormals, large magnitudes, ±inf and NaN
where the op's domain says they are meaningful."""

from __future__ import annotations

import base64
import hashlib
import json
import math

import numpy as np

from compiler import opinfo as oi

# --------------------------------------------------------------------------- values

PROFILES = ("plain", "edge")
# elementwise ops (and random programs) also draw "folded" cases: every array operand one edge value repeated (a
# splat), given to the compiled function as a constant, so that MLIR's folders compute what it feeds at compile
# time (their answers must be NumPy's too: math.atan2 of two zeros folded to NaN, seed 1136)
FOLDED = "folded"
FOLDABLE_FAMILIES = ("elementwise", "elementwise_loop", "elementwise_library", "elementwise_outer")


def _float_specials(dtype, domain: oi.Domain) -> list[float]:
    fi = np.finfo(dtype)
    lo, hi = domain.bounds(dtype)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, float(fi.smallest_subnormal), -float(fi.smallest_subnormal),
              float(fi.smallest_subnormal) * 3, float(fi.tiny), -float(fi.tiny), float(fi.eps)]
    if domain.unbounded():
        values += [float(fi.max), -float(fi.max), float(fi.max) / 4, -float(fi.max) / 3, 1e30 if dtype == np.float64 else 1e19]
    values = [v for v in values if lo <= v <= hi]
    if domain.special:
        values += [math.inf, -math.inf, math.nan]
    return values


def make_values(rng: np.random.Generator, shape, dtype, domain: oi.Domain, profile: str) -> np.ndarray:
    """Deterministic values of ``shape``/``dtype`` drawn from ``domain``."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    lo, hi = domain.bounds(dtype)
    if dtype.kind in "iu":
        if profile == "plain":
            lo, hi = max(lo, -100), min(hi, 100)
        wide = np.uint64 if dtype.kind == "u" else np.int64
        out = rng.integers(int(lo), int(hi), size=shape, endpoint=True, dtype=wide).astype(dtype)
        if profile == "edge" and out.size:
            edges = np.array([v for v in (int(lo), int(hi), 0, 1, -1) if lo <= v <= hi], dtype=dtype)
            mask = rng.random(shape) < 0.3
            out = np.where(mask, edges[rng.integers(0, len(edges), size=shape)], out)
        return np.asarray(out, dtype=dtype)
    flo, fhi = max(lo, -8.0), min(hi, 8.0)
    if flo >= fhi:
        flo, fhi = lo, hi
    base = rng.uniform(flo, fhi, size=shape)
    if profile == "plain" and domain.unbounded():
        base = base * rng.choice([1.0, 1.0, 1.0, 100.0], size=shape)
    out = base.astype(dtype)
    if profile == "edge" and out.size:
        specials = np.array(_float_specials(dtype, domain), dtype=dtype)
        mask = rng.random(shape) < 0.4
        out = np.where(mask, specials[rng.integers(0, len(specials), size=shape)], out).astype(dtype)
    return np.asarray(out, dtype=dtype)


# --------------------------------------------------------------------------- JSON encoding


def encode_array(a) -> dict:
    a = np.array(a, order="C", copy=True)  # (ascontiguousarray would turn 0-d into 1-d)
    return {"dtype": str(a.dtype), "shape": list(a.shape),
            "data": base64.b64encode(a.astype(a.dtype.newbyteorder("<")).tobytes()).decode("ascii")}


def decode_array(d: dict) -> np.ndarray:
    dtype = np.dtype(d["dtype"]).newbyteorder("<")
    raw = base64.b64decode(d["data"])
    return np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="), copy=True).reshape(d["shape"])


def encode_operand(x) -> dict:
    if isinstance(x, np.ndarray):
        return {"array": encode_array(x)}
    if isinstance(x, np.generic):
        return {"numpy_scalar": encode_array(np.asarray(x))}
    if isinstance(x, bool):
        return {"python": "bool", "value": x}
    if isinstance(x, int):
        return {"python": "int", "value": str(x)}
    if isinstance(x, float):
        return {"python": "float", "value": repr(x)}
    raise TypeError(f"cannot encode operand of type {type(x).__name__}")


def decode_operand(d: dict):
    if "array" in d:
        return decode_array(d["array"])
    if "numpy_scalar" in d:
        return decode_array(d["numpy_scalar"])[()]
    kind = d["python"]
    if kind == "bool":
        return bool(d["value"])
    if kind == "int":
        return int(d["value"])
    return float(d["value"])


def describe_operand(x) -> str:
    if isinstance(x, np.ndarray):
        return f"array{tuple(x.shape)}:{x.dtype}"
    if isinstance(x, np.generic):
        return f"np.{x.dtype}({x!r})"
    return f"{type(x).__name__}({x!r})"


def case_id(case: dict) -> str:
    return hashlib.sha256(json.dumps(case, sort_keys=True).encode()).hexdigest()[:12]


# --------------------------------------------------------------------------- op cases


def scalar_value(rng, dtype, domain, profile, kind: str):
    """A Python scalar ("python") or NumPy scalar ("numpy") of ``dtype``'s kind."""
    v = make_values(rng, (), dtype, domain, profile)[()]
    if kind == "numpy":
        return v
    return v.item()


def build_op_case(info: oi.OpInfo, call: oi.Call, dtypes: list, profile: str, seed: int) -> dict:
    """The JSON-able case for one call of ``info``: operands materialized from ``seed``."""
    if profile == FOLDED:
        case = build_op_case(info, call, dtypes, "edge", seed)
        case["operands"] = [encode_operand(_splat(decode_operand(o))) for o in case["operands"]]
        case["folded"] = True
        return case
    rng = np.random.default_rng(seed)
    operands = []
    for i, (shape, dtype) in enumerate(zip(call.shapes, dtypes)):
        if info.name in oi.INDEX_OPERAND_OPS and i == 1:
            size = call.shapes[0][call.params["axis"]]
            operands.append(oi.index_operand_values(rng, shape, dtype, size))
            continue
        kind = call.scalars.get(i)
        if kind:
            operands.append(scalar_value(rng, dtype, info.domain(i), profile, kind))
        else:
            operands.append(make_values(rng, shape, dtype, info.domain(i), profile))
    return {"kind": "op", "op": info.name, "params": json.loads(json.dumps(call.params)),
            "operands": [encode_operand(x) for x in operands]}


def _splat(x):
    """An array operand's first element repeated over its shape (a scalar as it is)."""
    if not isinstance(x, np.ndarray) or x.size == 0:
        return x
    return np.full(x.shape, x.flat[0], x.dtype)


def weighted_dtypes(allowed) -> list:
    """Floats are where most numerical trouble lives: they are drawn three times as often."""
    allowed = list(allowed)
    return allowed + [d for d in allowed if d.kind == "f"] * 3


def choose_dtypes(c: oi.Chooser, info: oi.OpInfo, count: int) -> list:
    first = c.pick(weighted_dtypes(oi.operand_dtypes(info, 0)))
    if info.mixed_dtypes and c.pick((0, 0, 1)):
        return [first] + [c.pick(weighted_dtypes(oi.operand_dtypes(info, i))) for i in range(1, count)]
    return [first if first in oi.operand_dtypes(info, i) else c.pick(oi.operand_dtypes(info, i)) for i in range(count)]


def sample_op_case(c: oi.Chooser, info: oi.OpInfo) -> dict:
    call = info.sample(c)
    dtypes = choose_dtypes(c, info, len(call.shapes))
    profile = c.pick(PROFILES + ((FOLDED,) if info.family in FOLDABLE_FAMILIES else ()))
    seed = c.integer(0, 2**31 - 1)
    return build_op_case(info, call, dtypes, profile, seed)


def describe_case(case: dict) -> str:
    if case["kind"] == "op":
        ops = ", ".join(describe_operand(decode_operand(o)) for o in case["operands"])
        folded = ", operands folded to constants" if case.get("folded") else ""
        return f"{case['op']}({ops}; {json.dumps(case['params'])}{folded})"
    folded = ", inputs folded to constants" if case.get("folded") else ""
    return f"graph of {len(case['nodes'])} nodes ({', '.join(n['op'] for n in case['nodes'])}{folded})"
