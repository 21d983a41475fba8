"""Op-by-op localization: re-run a traced function with every intermediate value
as a compiled output and check each primitive against NumPy evaluating that same
primitive on the *compiled* inputs, so the first op (in the order the function
created them) whose own error exceeds its rounding allowance is named, with the
user source line that created it. The allowance is the op's, not the tensor's: a
few ulps for exact ops, more for transcendental ones, and for sums and matrix
products a bound from the length reduced and the magnitudes summed
(``Primitive.rounding``), so a fault far below a whole tensor's tolerance is still
pinned to the op that made it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .jit import FAULTS, _flatten, _host_checks, _unflatten, checked_inputs, trace
from .backend import TENSOR_PASSES, CpuPipeline, CpuTarget, get_target
from .errors import CompileError, located_compile_errors
from .graph import topological
from .lowering import build_module
from .primitives import NUMPY_LOOP_UFUNCS, PRIMITIVES


@dataclass
class OpDivergence:
    op: str
    source: str
    max_abs_error: float
    max_rel_error: float
    shape: tuple
    dtype: str
    index: int   # position among the function's ops, in creation order
    # the graph node's id (creation order across the whole trace): lets a caller that marked
    # points of the trace (compiler.gpt2.model's fused sublayers) say where the op was made
    node_id: int | None = None
    function: str = ""                  # the function whose line ``source`` is
    called_from: tuple = ()             # "path:LINE (function)" of its callers, innermost first

    def as_dict(self) -> dict:
        return {"op": self.op, "source": self.source, "max_abs_error": self.max_abs_error,
                "max_rel_error": self.max_rel_error, "shape": list(self.shape), "dtype": self.dtype, "index": self.index,
                "function": self.function, "called_from": list(self.called_from)}


def _errors(actual: np.ndarray, expected: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Elementwise absolute errors (NaN against NaN and equal infinities count as 0, any other
    NaN as inf), and the largest absolute and relative error."""
    a, e = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    both_nan = np.isnan(a) & np.isnan(e)
    same_inf = np.isinf(a) & np.isinf(e) & (np.sign(a) == np.sign(e))
    with np.errstate(all="ignore"):
        diff = np.where(both_nan | same_inf, 0.0, np.abs(a - e))
        diff = np.where(np.isnan(diff), np.inf, diff)
        rel = diff / np.maximum(np.abs(e), np.finfo(np.float64).tiny)
        rel = np.where(diff == 0, 0.0, rel)
    return diff, (float(diff.max()) if diff.size else 0.0), (float(rel.max()) if rel.size else 0.0)


# ulps of the result's dtype each kind of op may be off by, relative to the value, and for
# "accumulates" ops also relative to sqrt(length) * the sum of magnitudes (the fuzzer's
# reduction tolerance, compiler.opinfo.REDUCTION, checked over thousands of cases)
ULPS = {"exact": 4, "libm": 16, "accumulates": 8}
SCALE_ULPS = 4


def _reduced_length(node, inputs) -> int:
    if node.op == "matmul":
        return int(np.shape(inputs[0])[-1])
    return int(np.size(inputs[0]) // max(int(np.prod(node.shape, dtype=np.int64)), 1))


def allowed_error(node, inputs: list, expected: np.ndarray, numpy_loops: bool = False) -> np.ndarray:
    """How far a correct compiled result of ``node`` may lie from NumPy's ``expected`` (floats); with
    ``numpy_loops`` (the target calls NumPy's own loop for the library-valued ufuncs) those are exact ops."""
    finfo = np.finfo(expected.dtype)
    kind = PRIMITIVES[node.op].rounding
    if numpy_loops and node.op in NUMPY_LOOP_UFUNCS:
        kind = "exact"
    with np.errstate(all="ignore"):
        allowed = ULPS[kind] * float(finfo.eps) * np.abs(expected.astype(np.float64)) + float(finfo.tiny)
        if kind == "accumulates":
            magnitudes = PRIMITIVES[node.op].evaluate(node, [np.abs(np.asarray(v)) for v in inputs])
            length = _reduced_length(node, inputs)
            allowed = allowed + SCALE_ULPS * float(finfo.eps) * np.sqrt(max(length, 1)) * np.abs(
                np.asarray(magnitudes, np.float64))
    return np.where(np.isnan(allowed), np.inf, allowed)


def per_op_values(fn, args, kwargs=None, target: str = "cpu"):
    """Compile ``fn`` with every primitive's result as an output; returns (ops, compiled values, inputs)."""
    kwargs = kwargs or {}
    inputs, outputs, _, paths = trace(fn, args, kwargs)
    ops = [n for n in topological(outputs) if n.op not in ("input", "const")]
    lowered, arrays = _lowered_with_arrays(inputs, ops, paths, args, target)
    return ops, _run(get_target(target), lowered, arrays), arrays


def _lowered_with_arrays(inputs, outputs, paths, args, target: str = "cpu"):
    """The module computing ``outputs`` (any injected fault included), lowered in ``target``'s form, and
    the arrays its kernel runs on, checked before any native code runs."""
    lowered = build_module(inputs, outputs, faults=dict(FAULTS), **get_target(target).lowering_form())
    leaves = []
    _flatten(tuple(args), "args", leaves, [])
    return lowered, checked_inputs(leaves, _host_checks(inputs, outputs, paths))


def _run(target, lowered, arrays) -> list[np.ndarray]:
    """``lowered`` compiled for ``target`` and run on ``arrays``: its outputs."""
    with located_compile_errors(lowered):
        kernel = target.compile(lowered)
    results = [np.empty(shape, dtype) for shape, dtype in lowered.out_specs]
    kernel(arrays + list(lowered.hidden) + results)
    return results


def _op_name(node) -> str:
    """The primitive's name; a cast says its dtypes, since many are implicit (a promotion inside
    concatenate, matmul or a reduction) and its source line shows no ``astype``."""
    if node.op == "cast":
        return f"cast {node.inputs[0].dtype}->{node.dtype}"
    return node.op


def localize(fn, args, kwargs=None, target: str = "cpu") -> OpDivergence | None:
    """The first op of ``fn`` (in creation order, which is the order of its source) whose compiled
    result differs from NumPy's on the same inputs by more than the op's own rounding allows."""
    ops, results, arrays = per_op_values(fn, args, kwargs, target)
    values = {n.id: r for n, r in zip(ops, results)}
    numpy_loops = get_target(target).numpy_loops

    def value(node):
        if node.op == "input":
            return arrays[node.index]
        if node.op == "const":
            return node.value
        return values[node.id]

    for i, node in enumerate(sorted(ops, key=lambda n: n.id)):
        inputs = [value(inp) for inp in node.inputs]
        expected = np.asarray(PRIMITIVES[node.op].evaluate(node, inputs))
        actual = values[node.id]
        if expected.dtype != actual.dtype:
            return _divergence(node, i, actual, float("inf"), float("inf"))
        if actual.dtype.kind == "f":
            diff, abs_err, rel_err = _errors(actual, expected)
            ok = bool((diff <= allowed_error(node, inputs, expected, numpy_loops)).all())
        else:
            ok = np.array_equal(actual, expected)
            abs_err, rel_err = (0.0, 0.0) if ok else _errors(actual, expected)[1:]
        if not ok:
            return _divergence(node, i, actual, abs_err, rel_err)
    return None


def _divergence(node, index: int, actual: np.ndarray, abs_err: float, rel_err: float) -> OpDivergence:
    return OpDivergence(_op_name(node), node.loc.short(), abs_err, rel_err, node.shape, str(actual.dtype), index,
                        node.id, node.loc.function, tuple(node.loc.call_chain()))


# --------------------------------------------------------------------------- pass bisection
# Which step of the CPU pipeline makes a wrong result wrong: the function is compiled with the
# pipeline's optional steps switched on one at a time, in pipeline order, and the first
# configuration whose result the caller judges wrong (or that does not compile) names the step
# that introduced the error.

NO_OPTIONAL_STEP = "the lowering (no optional pipeline step)"
BLAS_STEP = "BLAS substitution"
RIGHT, WRONG, NO_COMPILE = "right", "wrong", "does not compile"


def pipeline_steps() -> list[tuple[str, CpuPipeline]]:
    """(step, the pipeline up to and including it), in pipeline order; the last is production's."""
    steps = [(NO_OPTIONAL_STEP, CpuPipeline((), blas=False))]
    steps += [(f"{name} (tensor pass {k} of {len(TENSOR_PASSES)})", CpuPipeline(TENSOR_PASSES[:k], blas=False))
              for k, name in enumerate(TENSOR_PASSES, 1)]
    return steps + [(BLAS_STEP, CpuPipeline())]


@dataclass
class PassBisection:
    """(step, outcome: RIGHT, WRONG or NO_COMPILE) of each configuration tried, in pipeline order.
    ``introduced_by``: the first step whose outcome is not RIGHT; None when production's own
    configuration is right on this input (then it is the only one tried)."""

    steps: list

    @property
    def introduced_by(self) -> str | None:
        return next((step for step, outcome in self.steps if outcome != RIGHT), None)

    @property
    def outcome(self) -> str | None:
        """The introducing configuration's outcome (WRONG or NO_COMPILE)."""
        return next((outcome for _, outcome in self.steps if outcome != RIGHT), None)


def bisect_passes(fn, args, kwargs=None, *, is_wrong) -> PassBisection:
    """Compile ``fn`` on ``args`` for the CPU once per ``pipeline_steps`` configuration and run it;
    ``is_wrong(result)`` (the function's result, as a call returns it) judges each. Production's
    configuration goes first: when it is right on these inputs, no step is to blame (and nothing
    else is compiled). Otherwise the configurations run in pipeline order up to the first that is
    wrong or does not compile. Wrong already without any optional step: the lowering or a step
    every kernel gets (bufferization, the libm substitution, lowering to LLVM and LLVM's own
    optimization) made it so; otherwise the first step whose addition makes it wrong did."""
    kwargs = kwargs or {}
    inputs, outputs, out_tree, paths = trace(fn, args, kwargs)
    lowered, arrays = _lowered_with_arrays(inputs, outputs, paths, args)

    def outcome(pipeline) -> str:
        try:
            results = _run(CpuTarget(pipeline), lowered, arrays)
        except CompileError:
            return NO_COMPILE
        return WRONG if is_wrong(_unflatten(out_tree, iter(results))) else RIGHT

    *optional, (production_step, production) = pipeline_steps()
    last = outcome(production)
    if last == RIGHT:
        return PassBisection([(production_step, RIGHT)])
    tried = []
    for step, pipeline in optional:
        tried.append((step, outcome(pipeline)))
        if tried[-1][1] != RIGHT:
            break
    return PassBisection(tried + [(production_step, last)])
