"""Running one case both ways and judging it: NumPy evaluates the registry's call on
the operands, the compiler compiles the same call with ``compiler.jit``; results must
agree in structure, shape and dtype exactly, and in value NaN-aware within the op's
tolerance. Where NumPy raises, the compiler must raise too; where NumPy's result dtype
is one the compiler does not support, the compiler must raise ``TypeError``."""

from __future__ import annotations

import warnings

import numpy as np

from compiler import dtypes as cdt
from compiler import jit
from compiler import opinfo as oi

from .cases import decode_operand


class Mismatch(AssertionError):
    """The compiled result disagrees with NumPy."""


def flatten(result) -> list:
    if isinstance(result, (tuple, list)):
        out = []
        for r in result:
            out += flatten(r)
        return out
    return [result]


def numpy_eval(fn):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


VALUES_DIFFER = "elements differ"  # in every problem compare_values finds with the values, none with dtype or shape


def _kind_of(value) -> str:
    return f"NumPy scalar ({type(value).__name__})" if isinstance(value, np.generic) else f"{value.ndim}-d array"


def compare_values(expected, got, rtol: float, atol, label: str, zero_sign: bool = False) -> list[str]:
    """Problems with ``got`` against ``expected`` (empty when they agree). With ``zero_sign`` a zero
    must also carry NumPy's sign (for ops whose result NumPy defines bit for bit). A NumPy scalar
    where NumPy gives a 0-d array, or the other way round, is a problem too."""
    e = np.asarray(expected)
    if isinstance(expected, (np.ndarray, np.generic)) and isinstance(got, (np.ndarray, np.generic)) \
            and isinstance(got, np.generic) != isinstance(expected, np.generic):
        return [f"{label}: compiled result is a {_kind_of(got)}, NumPy gives a {_kind_of(expected)}"]
    got = np.asarray(got) if isinstance(got, np.generic) else got
    if not isinstance(got, np.ndarray):
        return [f"{label}: compiled result is a {type(got).__name__}, expected an array"]
    if got.dtype != e.dtype:
        return [f"{label}: dtype {got.dtype}, NumPy gives {e.dtype}"]
    if got.shape != e.shape:
        return [f"{label}: shape {got.shape}, NumPy gives {e.shape}"]
    if e.dtype.kind != "f":
        bad = got != e
        if bad.any():
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            return [f"{label}: {int(bad.sum())} of {e.size} elements differ; first at {i}: compiled {got[i]!r}, NumPy {e[i]!r}"]
        return []
    atol = np.broadcast_to(np.asarray(atol, dtype=np.float64), e.shape)
    enan, gnan = np.isnan(e), np.isnan(got)
    einf, ginf = np.isinf(e), np.isinf(got)
    with np.errstate(all="ignore"):
        diff = np.abs(got.astype(np.float64) - e.astype(np.float64))
        allowed = atol + rtol * np.abs(e.astype(np.float64))
    finite = ~(enan | einf)
    bad = (enan != gnan) | (einf & (got != e)) | (finite & ginf) | (finite & ~gnan & ~ginf & ~(diff <= allowed))
    if zero_sign:
        bad |= (e == 0) & (got == 0) & (np.signbit(e) != np.signbit(got))
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        return [f"{label}: {int(bad.sum())} of {e.size} elements differ beyond rtol={rtol:.3g}, atol={float(atol[i]):.3g}; "
                f"first at {i}: compiled {got[i]!r}, NumPy {e[i]!r}"]
    return []


def compare_layout(expected, got, label: str) -> list[str]:
    """A problem where ``got`` comes back laid out otherwise than C-contiguously (the compiler gives a
    result NumPy's layout where NumPy's is a fresh array in another order) and NumPy's result is not
    laid out so (strides in elements; unit axes, which stride nowhere, aside)."""
    if not isinstance(got, np.ndarray) or got.size <= 1 or got.flags.c_contiguous:
        return []
    def strides(a):
        return tuple(s // a.itemsize for s, n in zip(a.strides, a.shape) if n != 1)
    if isinstance(expected, np.ndarray) and expected.shape == got.shape and strides(expected) == strides(got):
        return []
    theirs = strides(expected) if isinstance(expected, np.ndarray) else "none (not an array)"
    return [f"{label}: compiled result laid out with strides {strides(got)} (elements, unit axes aside), NumPy's {theirs}"]


def op_tolerance(info: oi.OpInfo, operands, params, result_dtype, target: str = "cpu") -> tuple[float, object]:
    """(rtol, atol) of the op's result on ``target``: exact where the CPU calls NumPy's own loop or BLAS routine,
    or sums in NumPy's order."""
    if info.exact_on_cpu and target == "cpu":
        return oi.EXACT.for_dtype(result_dtype)
    rtol, atol = info.tolerance.for_dtype(result_dtype)
    if info.scale is not None and np.dtype(result_dtype).kind == "f":
        scale = numpy_eval(lambda: info.scale(operands, params))
        atol = atol + info.tolerance.scale_ulps * oi.EPS[np.dtype(result_dtype)] * np.asarray(scale, dtype=np.float64)
    return rtol, atol


def _supported(result) -> bool:
    return all(np.asarray(r).dtype in cdt.SUPPORTED for r in flatten(result))


def check_op_case(case: dict) -> None:
    """Raise ``Mismatch`` when the compiler disagrees with NumPy on ``case``."""
    info = oi.REGISTRY[case["op"]]
    params = case["params"]
    operands = [decode_operand(o) for o in case["operands"]]
    try:
        expected = numpy_eval(lambda: info(operands, params))
        numpy_error = None
    except Exception as exc:  # NumPy refusing is a valid outcome to compare against
        expected, numpy_error = None, exc
    fn, arguments = _case_function(case, info, operands, params)
    compiled = jit(fn)
    try:
        got = numpy_eval(lambda: compiled(*arguments))
    except Exception as exc:
        if numpy_error is not None:
            return
        if not _supported(expected) and isinstance(exc, TypeError):
            return
        raise Mismatch(f"compiler raised {type(exc).__name__}: {exc} — NumPy returns "
                       + ", ".join(f"{np.asarray(r).dtype}{np.shape(r)}" for r in flatten(expected))) from None
    if numpy_error is not None:
        raise Mismatch(f"NumPy raises {type(numpy_error).__name__}: {numpy_error} — the compiler returned a result")
    if not _supported(expected):
        raise Mismatch("NumPy's result dtype is unsupported, yet the compiler returned a result instead of TypeError")
    problems = _problems(info, operands, params, expected, got)
    if problems:
        raise Mismatch("; ".join(problems))


def _case_function(case: dict, info, operands, params):
    """(the function to compile for the case, its arguments): the operands as arguments, or for a folded
    case as constants of the trace (``with_constants``)."""
    fn = lambda xs: info(xs, params)  # noqa: E731
    return with_constants(fn, operands) if case.get("folded") else ((lambda *xs: fn(xs)), operands)


def with_constants(fn, arrays):
    """(a function of one dummy argument that calls ``fn`` with ``arrays`` as constants of the trace, that
    argument): each array is selected by a condition on the dummy that MLIR folds away, so what the
    arrays feed is computed by MLIR's folders where it can be. Scalars stay as they are."""
    def folded(anchor):
        return fn([np.where(anchor == 0, x, x) if isinstance(x, np.ndarray) else x for x in arrays])
    return folded, [np.zeros((), np.int64)]


def op_case_parts(case: dict):
    """(function, its arguments, problems of a compiled result) of an op case whose NumPy result
    the compiler should reproduce; None when NumPy raises or gives an unsupported dtype."""
    info = oi.REGISTRY[case["op"]]
    params = case["params"]
    operands = [decode_operand(o) for o in case["operands"]]
    try:
        expected = numpy_eval(lambda: info(operands, params))
    except Exception:
        return None
    if not _supported(expected):
        return None
    fn, arguments = _case_function(case, info, operands, params)
    return fn, arguments, (lambda got: _problems(info, operands, params, expected, got))


def explain_case(case: dict) -> str | None:
    """For a case whose compiled values disagree with NumPy: the CPU pipeline step that makes them
    disagree (``compiler.diagnose.bisect_passes``: compiled with the optional steps added one at a
    time). Only values are judged: a wrong dtype or shape comes from tracing, before any pipeline.
    None when production's values agree (the mismatch is of another kind: an exception, a dtype)
    or the case is not an op or graph case."""
    from compiler.diagnose import bisect_passes
    if case.get("kind") == "op":
        parts = op_case_parts(case)
    elif case.get("kind") == "graph":
        from .graphs import graph_case_parts
        parts = graph_case_parts(case)
    else:
        return None
    if parts is None:
        return None
    fn, inputs, problems_of = parts

    def values_wrong(got) -> bool:
        return any(VALUES_DIFFER in problem for problem in numpy_eval(lambda: problems_of(got)))

    found = bisect_passes(fn, tuple(inputs), is_wrong=values_wrong)
    if found.introduced_by is None:
        return None
    return found.introduced_by + ("" if found.outcome == "wrong" else f" ({found.outcome})")


def _problems(info, operands, params, expected, got) -> list[str]:
    problems = _problems_against(info, operands, params, expected, got)
    if problems and (reference := _float32_accumulation(info, operands, params, expected)) is not None:
        if not _problems_against(info, operands, params, reference, got):
            return []
    return problems


def _float32_accumulation(info, operands, params, expected):
    """For a float16 result of an op that sums (one with an error ``scale``: reductions, matmuls,
    contractions, norms): NumPy's result computed in float32 and rounded once to
    float16, which is what the compiler promises (see ``compiler.dtypes.arithmetic_type``). NumPy's
    own float16 reduction does that along a contiguous axis but rounds after every step along any
    other, where an intermediate can underflow or overflow that the float32 sum never meets; either
    answer is accepted. None for other ops."""
    half = np.dtype(np.float16)
    if info.scale is None or all(np.asarray(e).dtype != half for e in flatten(expected)):
        return None
    wide = [np.asarray(x, np.float32) if np.asarray(x).dtype == half else x for x in operands]
    wide_params = {k: ("float32" if k == "dtype" and v == "float16" else v) for k, v in params.items()}
    try:
        result = numpy_eval(lambda: info(wide, wide_params))
    except Exception:
        return None
    results = [numpy_eval(lambda: r.astype(half)) if np.asarray(e).dtype == half else r  # NumPy scalars stay scalars
               for r, e in zip(flatten(result), flatten(expected))]
    return results[0] if len(results) == 1 and not isinstance(expected, (tuple, list)) else results


def _problems_against(info, operands, params, expected, got) -> list[str]:
    exp_list, got_list = flatten(expected), flatten(got)
    if len(exp_list) != len(got_list):
        return [f"compiled function returned {len(got_list)} arrays, NumPy {len(exp_list)}"]
    problems = []
    for k, (e, g) in enumerate(zip(exp_list, got_list)):
        rtol, atol = op_tolerance(info, operands, params, np.asarray(e).dtype)
        label = f"result[{k}]" if len(exp_list) > 1 else "result"
        problems += compare_values(e, g, rtol, atol, label, zero_sign=_defines_zero_sign(info))
        problems += compare_layout(e, g, label)
    return problems


# families whose exact ops still leave the sign of a zero result to NumPy's implementation: a reduction's
# max/min of +0.0 and -0.0 depends on the order of its SIMD lanes; a sort need not keep +0.0 and -0.0
# (equal keys) in order
ZERO_SIGN_UNDEFINED = ("reduction", "sort")


def _defines_zero_sign(info: oi.OpInfo) -> bool:
    """Whether NumPy's result is defined bit for bit, the sign of a zero included (a sum's is: NumPy's order
    decides it, as it decides the sum, where a maximum's depends on its SIMD lanes; so is a BLAS call's)."""
    return ((info.tolerance == oi.EXACT or info.exact_on_cpu) and info.zero_sign
            and (info.family not in ZERO_SIGN_UNDEFINED or info.numpy_order))


SELF_TEST_CRASH = "self-test-crash"


def check_case(case: dict) -> None:
    if case["kind"] == SELF_TEST_CRASH:
        # lets the tests prove that a native crash in a case is isolated and reported
        import ctypes
        ctypes.string_at(0)
    if case["kind"] == "op":
        return check_op_case(case)
    from .graphs import check_graph_case
    return check_graph_case(case)
