"""Op-by-op localization: re-run a traced function with every intermediate value
as a compiled output and check each primitive against NumPy evaluating that same
primitive on the *compiled* inputs, so the first op whose own error exceeds the
tolerance is named, with the user source line that created it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .jit import FAULTS, _flatten, _host_checks, checked_inputs, trace
from .backend import get_target
from .graph import topological
from .lowering import build_module
from .primitives import PRIMITIVES


@dataclass
class OpDivergence:
    op: str
    source: str
    max_abs_error: float
    max_rel_error: float
    shape: tuple
    dtype: str
    index: int   # position among the function's ops, in execution order

    def as_dict(self) -> dict:
        return {"op": self.op, "source": self.source, "max_abs_error": self.max_abs_error,
                "max_rel_error": self.max_rel_error, "shape": list(self.shape), "dtype": self.dtype, "index": self.index}


def _errors(actual: np.ndarray, expected: np.ndarray) -> tuple[float, float]:
    a, e = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    both_nan = np.isnan(a) & np.isnan(e)
    same_inf = np.isinf(a) & np.isinf(e) & (np.sign(a) == np.sign(e))
    with np.errstate(all="ignore"):
        diff = np.where(both_nan | same_inf, 0.0, np.abs(a - e))
        diff = np.where(np.isnan(diff), np.inf, diff)
        rel = diff / np.maximum(np.abs(e), np.finfo(np.float64).tiny)
        rel = np.where(diff == 0, 0.0, rel)
    return (float(diff.max()) if diff.size else 0.0, float(rel.max()) if rel.size else 0.0)


def per_op_values(fn, args, kwargs=None, target: str = "cpu"):
    """Compile ``fn`` with every primitive's result as an output; returns (ops, compiled values, inputs)."""
    kwargs = kwargs or {}
    inputs, outputs, _, paths = trace(fn, args, kwargs)
    ops = [n for n in topological(outputs) if n.op not in ("input", "const")]
    lowered = build_module(inputs, ops, faults=dict(FAULTS))
    leaves = []
    _flatten(tuple(args), "args", leaves, [])
    arrays = checked_inputs(leaves, _host_checks(inputs, ops, paths))  # before any native code runs
    kernel = get_target(target).compile(lowered)
    results = [np.empty(shape, dtype) for shape, dtype in lowered.out_specs]
    kernel(arrays + list(lowered.hidden) + results)
    return ops, results, arrays


def localize(fn, args, kwargs=None, rtol: float = 3e-4, atol: float = 3e-4, target: str = "cpu") -> OpDivergence | None:
    """The first op of ``fn`` (in execution order) whose compiled result differs from NumPy's."""
    ops, results, arrays = per_op_values(fn, args, kwargs, target)
    values = {n.id: r for n, r in zip(ops, results)}

    def value(node):
        if node.op == "input":
            return arrays[node.index]
        if node.op == "const":
            return node.value
        return values[node.id]

    for i, node in enumerate(ops):
        expected = PRIMITIVES[node.op].evaluate(node, [value(inp) for inp in node.inputs])
        actual = values[node.id]
        if np.asarray(expected).dtype != actual.dtype:
            return OpDivergence(node.op, node.loc.short(), float("inf"), float("inf"), node.shape, str(actual.dtype), i)
        if actual.dtype.kind in "fc":
            ok = np.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = np.array_equal(actual, expected)
        if not ok:
            abs_err, rel_err = _errors(actual, expected)
            return OpDivergence(node.op, node.loc.short(), abs_err, rel_err, node.shape, str(actual.dtype), i)
    return None
