"""The op registry: every operation the compiler supports, described once, in the
spirit of PyTorch's OpInfo — its name, how to call it (one callable that works on
NumPy arrays and on traced tensors alike, so NumPy itself is the reference), how
many array operands it takes, which dtypes it accepts, the value domain its
operands are drawn from, its tolerance per dtype, and the shapes and parameters
that make a valid call. The expected result dtype is never written down here: it
is whatever NumPy gives for the same inputs. The ordinary op tests, the op-level
fuzzer and the graph fuzzer are all driven from ``REGISTRY``, so adding an op here
adds its tests and its fuzzing.

Shapes and parameters are produced through a ``Chooser`` (``pick`` from a sequence,
``integer`` in a range); the tests drive it with a seeded RNG, the fuzzer with
Hypothesis draws, so both explore the same declared space."""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

from . import dtypes as _dt
from .primitives import NUMPY_LOOP_UFUNCS

# --------------------------------------------------------------------------- dtypes

BOOL = (np.dtype(np.bool_),)
SIGNED = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
UNSIGNED = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
INTS = SIGNED + UNSIGNED
FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
NUMERIC = INTS + FLOATS
ALL = BOOL + NUMERIC


def numpy_result_dtype(fn: Callable, dtypes: Sequence[np.dtype]):
    """The dtype NumPy gives for ``fn`` on one-element arrays of ``dtypes`` (None if NumPy refuses)."""
    try:
        with np.errstate(all="ignore"):
            out = fn(*[np.ones((1,), d) for d in dtypes])
    except Exception:
        return None
    return np.asarray(out).dtype


def _supported_unary(fn, candidates=ALL) -> tuple:
    return tuple(d for d in candidates if numpy_result_dtype(fn, [d]) in _dt.SUPPORTED)


# --------------------------------------------------------------------------- value domains


@dataclass(frozen=True)
class Domain:
    """Where operand values come from. ``lo``/``hi`` bound finite values (None: the whole
    range of the dtype, large magnitudes and subnormals included); ``special``: ±inf and
    NaN are meaningful inputs (NumPy and the compiler must agree on them)."""

    lo: float | None = None
    hi: float | None = None
    special: bool = True

    def bounds(self, dtype) -> tuple[float, float]:
        dtype = np.dtype(dtype)
        if dtype.kind == "b":
            return 0, 1
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            lo = info.min if self.lo is None else max(info.min, math.ceil(self.lo))
            hi = info.max if self.hi is None else min(info.max, math.floor(self.hi))
            return lo, hi
        big = float(np.finfo(dtype).max)
        return (-big if self.lo is None else self.lo), (big if self.hi is None else self.hi)

    def unbounded(self) -> bool:
        return self.lo is None and self.hi is None


ANY = Domain()
NONNEG = Domain(lo=0.0)
MODERATE = Domain(lo=-1e4, hi=1e4)             # reductions: no overflow that depends on summation order
SMALL = Domain(lo=-8.0, hi=8.0, special=False)  # products of several values (matmul)
EXPONENT = Domain(lo=-6.0, hi=6.0)
INT_EXPONENT = Domain(lo=0)                     # integer powers: NumPy rejects negative exponents, and so does the
                                                # compiler (tests/test_compiler_errors.py), so they would only draw errors
SHIFT_COUNT = Domain(lo=-3, hi=70)             # both sides of every integer width, and negative counts
CASTABLE = Domain(lo=-(2.0 ** 31 - 256), hi=2.0 ** 31 - 256, special=False)  # casts: where NumPy's float -> int
                                                # conversion is the same on every x86 loop (truncate, then wrap)


# --------------------------------------------------------------------------- tolerance

EPS = {np.dtype(t): float(np.finfo(t).eps) for t in (np.float16, np.float32, np.float64)}


@dataclass(frozen=True)
class Tolerance:
    """rtol in units of the result dtype's machine epsilon, and atol relative to a scale the
    op computes from its inputs (``scale``; for reductions the sum of magnitudes reduced)."""

    ulps: float = 0.0
    scale_ulps: float = 0.0

    def for_dtype(self, dtype) -> tuple[float, float]:
        eps = EPS.get(np.dtype(dtype), 0.0)
        tiny = float(np.finfo(dtype).tiny) if np.dtype(dtype).kind == "f" else 0.0
        return self.ulps * eps, tiny


EXACT = Tolerance()                  # correctly rounded in IEEE arithmetic: bit-exact expected
TRANSCENDENTAL = Tolerance(ulps=8)   # libm-grade functions: a few ulps
REDUCTION = Tolerance(ulps=8, scale_ulps=4)


# --------------------------------------------------------------------------- choosers


class Chooser(Protocol):
    def pick(self, options: Sequence) -> Any: ...
    def integer(self, lo: int, hi: int) -> int: ...


class RandomChooser:
    """A seeded chooser for deterministic sample inputs."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def pick(self, options):
        options = list(options)
        return options[int(self.rng.integers(len(options)))]

    def integer(self, lo, hi):
        return int(self.rng.integers(lo, hi + 1))


DIMS = (1, 2, 3, 4, 5, 7, 8, 16)


def random_shape(c: Chooser, min_rank=0, max_rank=4, dims=DIMS, empty=False) -> tuple:
    """A shape of ``dims``; with ``empty``, one time in ten one of its dims is 0 (a size-0 array)."""
    shape = [c.pick(dims) for _ in range(c.integer(min_rank, max_rank))]
    if empty and shape and c.integer(0, 9) == 0:
        shape[c.integer(0, len(shape) - 1)] = 0
    return tuple(shape)


def broadcast_shapes_for(c: Chooser, n: int, min_rank=0, max_rank=4, empty=True) -> list[tuple]:
    """``n`` shapes that broadcast together: suffixes of one shape with some dims set to 1
    (with ``empty``, sometimes a dim of 0: see random_shape)."""
    base = random_shape(c, min_rank, max_rank, empty=empty)
    shapes = []
    for i in range(n):
        if i == 0 or c.pick((0, 1, 2)) == 0:
            shapes.append(base)
            continue
        drop = c.integer(0, len(base))
        tail = list(base[drop:])
        for j in range(len(tail)):
            if c.pick((0, 0, 1)):
                tail[j] = 1
        shapes.append(tuple(tail))
    # sometimes the first operand is the broadcast one
    if n > 1 and c.pick((0, 1)):
        shapes.reverse()
    return shapes


def pick_axis(c: Chooser, ndim: int, allow_none=True, allow_tuple=True):
    options = []
    if allow_none:
        options.append("none")
    if ndim:
        options += ["int", "negative"]
        if allow_tuple and ndim > 1:
            options.append("tuple")
    kind = c.pick(options) if options else "none"
    if kind == "none":
        return None
    if kind == "int":
        return c.integer(0, ndim - 1)
    if kind == "negative":
        return -c.integer(1, ndim)
    count = c.integer(1, ndim)
    axes = list(range(ndim))
    chosen = []
    for _ in range(count):
        a = c.pick(axes)
        axes.remove(a)
        chosen.append(a)
    return tuple(chosen)


# --------------------------------------------------------------------------- OpInfo


@dataclass(frozen=True)
class Call:
    """One concrete invocation: shapes of the array operands and static parameters.
    ``scalars`` maps operand positions to "python" or "numpy" (a scalar instead of an array)."""

    shapes: tuple
    params: dict = field(default_factory=dict)
    scalars: dict = field(default_factory=dict)


@dataclass(frozen=True)
class OpInfo:
    name: str
    call: Callable[[Sequence, Mapping], Any]          # (operands, params) -> result; arrays or tensors
    arity: int                                         # array operands
    dtypes: tuple                                      # dtypes each operand may take
    family: str                                        # elementwise | elementwise_loop | reduction | reduction_out | scan | norm | matmul | contraction | sort | shape | join | split | index | select | creation | polynomial | choice | membership
    sample: Callable[[Chooser], Call]                  # shapes + parameters of one valid call
    domains: tuple = (ANY,)                            # per operand (the last one repeats)
    tolerance: Tolerance = EXACT
    exact: bool = True                                 # results are bit-exact functions of the inputs
    scalar_operands: bool = False                      # operands may be Python / NumPy scalars
    mixed_dtypes: bool = True                          # operands may differ in dtype
    numpy_name: str = ""
    notes: str = ""
    # single-operand ops: parameters for an operand of a given shape (None: not applicable);
    # the graph fuzzer applies the op to nodes it has already built
    params_for: Callable[[Chooser, tuple], dict | None] | None = None
    # reductions and contractions: an array (broadcastable to the result) that scales atol,
    # the magnitude of what was summed (see ``error_scale``)
    scale: Callable[[Sequence, Mapping], Any] | None = None
    # False where the sign of a zero result is the C library's choice (fmax of +0.0 and -0.0), not NumPy's
    zero_sign: bool = True
    # on the CPU the compiler calls NumPy's own loop for it (primitives.NUMPY_LOOP_UFUNCS): bit for bit
    # there, whatever ``tolerance`` and ``exact`` say for other targets (the GPU's libdevice)
    numpy_loop: bool = False
    # on the CPU the compiler makes NumPy's BLAS calls for it, with NumPy's arguments (backend._GEMM_SHIM):
    # bit for bit there too, whatever ``tolerance`` says for other targets
    numpy_blas: bool = False
    # a sum or product the CPU computes in NumPy's order (compiler/layout.py, compiler/pairwise.py: pairwise
    # where NumPy's inner loop runs along the reduced axis, in memory order, by its buffer's bufferfuls): bit
    # for bit there too, the sign of a zero included where ``zero_sign``
    numpy_order: bool = False
    # its array operands may be any views (the fuzzer hands them over transposed, reversed, strided); False where
    # the compiler refuses some layouts by name (``notes`` says which)
    views: bool = True

    @property
    def exact_on_cpu(self) -> bool:
        return self.numpy_loop or self.numpy_blas or self.numpy_order

    def domain(self, i: int) -> Domain:
        return self.domains[min(i, len(self.domains) - 1)]

    def __call__(self, operands, params=None):
        return self.call(list(operands), dict(params or {}))


REGISTRY: dict[str, OpInfo] = {}


def register(info: OpInfo) -> OpInfo:
    if info.name in REGISTRY:
        raise ValueError(f"op {info.name!r} registered twice")
    REGISTRY[info.name] = info
    return info


# --------------------------------------------------------------------------- elementwise


def _elementwise_sample(arity):
    def sample(c: Chooser) -> Call:
        return Call(tuple(broadcast_shapes_for(c, arity)))
    return sample


def _unary_sample(params_for, min_rank=0, max_rank=4):
    def sample(c: Chooser) -> Call:
        while True:
            shape = random_shape(c, min_rank, max_rank, empty=True)
            params = params_for(c, shape)
            if params is not None:
                return Call((shape,), params)
    return sample


def _call_ufunc(fn):
    return lambda xs, p: fn(*xs)


_UNARY = {
    # name: (callable, domain, tolerance, exact)
    "negative": (np.negative, ANY, EXACT, True),
    "positive": (np.positive, ANY, EXACT, True),
    "absolute": (np.absolute, ANY, EXACT, True),
    "square": (np.square, ANY, EXACT, True),
    "exp": (np.exp, ANY, TRANSCENDENTAL, False),
    "tanh": (np.tanh, ANY, TRANSCENDENTAL, False),
    "sqrt": (np.sqrt, NONNEG, EXACT, True),
    "log": (np.log, NONNEG, TRANSCENDENTAL, False),
    "floor": (np.floor, ANY, EXACT, True),
    "ceil": (np.ceil, ANY, EXACT, True),
    "trunc": (np.trunc, ANY, EXACT, True),
    "invert": (np.invert, ANY, EXACT, True),
    "logical_not": (np.logical_not, ANY, EXACT, True),
    "sin": (np.sin, ANY, TRANSCENDENTAL, False),
    "cos": (np.cos, ANY, TRANSCENDENTAL, False),
    "exp2": (np.exp2, ANY, TRANSCENDENTAL, False),
    "expm1": (np.expm1, ANY, TRANSCENDENTAL, False),
    "log2": (np.log2, NONNEG, TRANSCENDENTAL, False),
    "log10": (np.log10, NONNEG, TRANSCENDENTAL, False),
    "log1p": (np.log1p, Domain(lo=-1.0), TRANSCENDENTAL, False),
    "tan": (np.tan, ANY, TRANSCENDENTAL, False),
    "arcsin": (np.arcsin, Domain(lo=-1.0, hi=1.0), TRANSCENDENTAL, False),
    "arccos": (np.arccos, Domain(lo=-1.0, hi=1.0), TRANSCENDENTAL, False),
    "arctan": (np.arctan, ANY, TRANSCENDENTAL, False),
    "sinh": (np.sinh, ANY, TRANSCENDENTAL, False),
    "cosh": (np.cosh, ANY, TRANSCENDENTAL, False),
    "arcsinh": (np.arcsinh, ANY, TRANSCENDENTAL, False),
    "arccosh": (np.arccosh, Domain(lo=1.0), TRANSCENDENTAL, False),
    "arctanh": (np.arctanh, Domain(lo=-1.0, hi=1.0), TRANSCENDENTAL, False),
    "cbrt": (np.cbrt, ANY, TRANSCENDENTAL, False),
    "rint": (np.rint, ANY, EXACT, True),   # ties to even
    "spacing": (np.spacing, ANY, EXACT, True),
    "frexp": (np.frexp, ANY, EXACT, True),   # (mantissa, int32 exponent)
    "modf": (np.modf, ANY, EXACT, True),     # (fraction, integral part)
    # a product with NumPy's own constant for the loop's precision: bit for bit
    "deg2rad": (np.deg2rad, ANY, EXACT, True),
    "rad2deg": (np.rad2deg, ANY, EXACT, True),
    "radians": (np.radians, ANY, EXACT, True),
    "degrees": (np.degrees, ANY, EXACT, True),
    # integers: C's 1.0 / x converted back, so 0 gives what the conversion of inf gives (see astype)
    "reciprocal": (np.reciprocal, ANY, EXACT, True),
    "sign": (np.sign, ANY, EXACT, True),
    "isnan": (np.isnan, ANY, EXACT, True),
    "isinf": (np.isinf, ANY, EXACT, True),
    "isfinite": (np.isfinite, ANY, EXACT, True),
    "fabs": (np.fabs, ANY, EXACT, True),
    "signbit": (np.signbit, ANY, EXACT, True),
    "bitwise_count": (np.bitwise_count, ANY, EXACT, True),  # the one bits of |x|, as uint8
}

for _name, (_fn, _domain, _tol, _exact) in _UNARY.items():
    register(OpInfo(
        _name, _call_ufunc(_fn), 1, _supported_unary(_fn), "elementwise", _elementwise_sample(1),
        domains=(_domain,), tolerance=_tol, exact=_exact, numpy_name=f"np.{_fn.__name__}",
        numpy_loop=_name in NUMPY_LOOP_UFUNCS))

# NumPy functions made of ufuncs (its own code runs on the traced arrays): fix (ceil, then floor where x >= 0),
# isposinf/isneginf (isinf and signbit), angle of a real array (arctan2(0, x): 0 or pi by the sign bit)
for _fn in (np.fix, np.isposinf, np.isneginf, np.angle):
    register(OpInfo(_fn.__name__, _call_ufunc(_fn), 1, _supported_unary(_fn), "elementwise", _elementwise_sample(1),
                    numpy_name=f"np.{_fn.__name__}"))


def _round_params(c: Chooser, shape) -> dict:
    return {"decimals": c.pick((0, 0, 1, 2, 3, -1, -2))}


register(OpInfo("round", lambda xs, p: np.round(xs[0], p.get("decimals", 0)), 1, FLOATS, "elementwise",
                _unary_sample(_round_params), numpy_name="np.round", params_for=_round_params,
                notes="x * 10**d, rint, / 10**d as NumPy computes it (the scale a weak Python float)"))
register(OpInfo("method.round", lambda xs, p: xs[0].round(p.get("decimals", 0)), 1, FLOATS, "elementwise",
                _unary_sample(_round_params), numpy_name="x.round", params_for=_round_params))
# integers to negative decimals: divided, rounded and multiplied in float64, converted back (wrapping, as int8
# 127 to tens gives -126); below uint32's top, where rounding up leaves the range and NumPy's own conversion
# differs between its scalar and SIMD loops (4294967300.0 to uint32: 4 or 0)
register(OpInfo("round_int", lambda xs, p: np.round(xs[0], p["decimals"]), 1, INTS, "elementwise",
                _unary_sample(lambda c, s: {"decimals": c.pick((-1, -2, -3, 0, 2))}),
                params_for=lambda c, s: {"decimals": c.pick((-1, -2, -3, 0, 2))},
                domains=(Domain(lo=-1e18, hi=4e9),), numpy_name="np.round"))

register(OpInfo("operator.neg", lambda xs, p: -xs[0], 1, _supported_unary(np.negative), "elementwise",
                _elementwise_sample(1), numpy_name="-x"))
register(OpInfo("operator.abs", lambda xs, p: abs(xs[0]), 1, ALL, "elementwise", _elementwise_sample(1), numpy_name="abs(x)"))
register(OpInfo("operator.invert", lambda xs, p: ~xs[0], 1, _supported_unary(np.invert), "elementwise",
                _elementwise_sample(1), numpy_name="~x"))


def _binary_sample(c: Chooser) -> Call:
    shapes = broadcast_shapes_for(c, 2)
    kind = c.pick(("array", "array", "array", "python", "numpy"))
    scalars = {} if kind == "array" else {c.pick((0, 1)): kind}
    return Call(tuple(shapes), scalars=scalars)


_BINARY = {
    # name: (ufunc, operator or None, dtypes, domains, tolerance, exact)
    "add": (np.add, operator.add, ALL, (ANY,), EXACT, True),
    "subtract": (np.subtract, operator.sub, NUMERIC, (ANY,), EXACT, True),
    "multiply": (np.multiply, operator.mul, ALL, (ANY,), EXACT, True),
    "divide": (np.divide, operator.truediv, ALL, (ANY,), EXACT, True),
    # zero divisors, MIN // -1, inf and NaN operands are all drawn: NumPy's answers are defined for each
    "floor_divide": (np.floor_divide, operator.floordiv, ALL, (ANY,), EXACT, True),
    "remainder": (np.remainder, operator.mod, ALL, (ANY,), EXACT, True),
    "fmod": (np.fmod, None, ALL, (ANY,), EXACT, True),
    # integer powers are "power_int": NumPy rejects negative integer exponents at run time
    "power": (np.power, operator.pow, FLOATS, (ANY, EXPONENT), TRANSCENDENTAL, False),
    "maximum": (np.maximum, None, ALL, (ANY,), EXACT, True),
    "minimum": (np.minimum, None, ALL, (ANY,), EXACT, True),
    "fmax": (np.fmax, None, ALL, (ANY,), EXACT, True),
    "fmin": (np.fmin, None, ALL, (ANY,), EXACT, True),
    "gcd": (np.gcd, None, INTS, (ANY,), EXACT, True),
    "lcm": (np.lcm, None, INTS, (ANY,), EXACT, True),
    # counts of the type's width or more (negative ones too: NumPy reads them as unsigned) shift every bit out
    "left_shift": (np.left_shift, operator.lshift, INTS + BOOL, (ANY, SHIFT_COUNT), EXACT, True),
    "right_shift": (np.right_shift, operator.rshift, INTS + BOOL, (ANY, SHIFT_COUNT), EXACT, True),
    "greater": (np.greater, operator.gt, ALL, (ANY,), EXACT, True),
    "greater_equal": (np.greater_equal, operator.ge, ALL, (ANY,), EXACT, True),
    "less": (np.less, operator.lt, ALL, (ANY,), EXACT, True),
    "less_equal": (np.less_equal, operator.le, ALL, (ANY,), EXACT, True),
    "equal": (np.equal, operator.eq, ALL, (ANY,), EXACT, True),
    "not_equal": (np.not_equal, operator.ne, ALL, (ANY,), EXACT, True),
    "bitwise_and": (np.bitwise_and, operator.and_, INTS + BOOL, (ANY,), EXACT, True),
    "bitwise_or": (np.bitwise_or, operator.or_, INTS + BOOL, (ANY,), EXACT, True),
    "bitwise_xor": (np.bitwise_xor, operator.xor, INTS + BOOL, (ANY,), EXACT, True),
    "logical_and": (np.logical_and, None, ALL, (ANY,), EXACT, True),
    "logical_or": (np.logical_or, None, ALL, (ANY,), EXACT, True),
    "logical_xor": (np.logical_xor, None, ALL, (ANY,), EXACT, True),
    "arctan2": (np.arctan2, None, ALL, (ANY,), TRANSCENDENTAL, False),
    "copysign": (np.copysign, None, ALL, (ANY,), EXACT, True),
    "logaddexp": (np.logaddexp, None, ALL, (ANY,), TRANSCENDENTAL, False),
    "logaddexp2": (np.logaddexp2, None, ALL, (ANY,), TRANSCENDENTAL, False),
    "heaviside": (np.heaviside, None, ALL, (ANY,), EXACT, True),
    "float_power": (np.float_power, None, ALL, (ANY, EXPONENT), TRANSCENDENTAL, False),
    "nextafter": (np.nextafter, None, ALL, (ANY,), EXACT, True),
    "hypot": (np.hypot, None, ALL, (ANY,), TRANSCENDENTAL, False),
}

_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**", "gt": ">", "ge": ">=", "lt": "<",
            "le": "<=", "eq": "==", "ne": "!=", "and_": "&", "or_": "|", "xor": "^", "lshift": "<<", "rshift": ">>"}

# C's fmax and fmin return either zero of +0.0 and -0.0 (NumPy's float32 loop one, its float64 loop the other)
_C_ZERO_SIGN = ("fmax", "fmin")

for _name, (_fn, _op, _dtypes, _domains, _tol, _exact) in _BINARY.items():
    register(OpInfo(
        _name, _call_ufunc(_fn), 2, _dtypes, "elementwise", _binary_sample, domains=_domains, tolerance=_tol,
        exact=_exact, scalar_operands=True, numpy_name=f"np.{_fn.__name__}", zero_sign=_name not in _C_ZERO_SIGN,
        numpy_loop=_name in NUMPY_LOOP_UFUNCS))
    if _op is not None:
        register(OpInfo(
            f"operator.{_op.__name__}", (lambda o: lambda xs, p: o(xs[0], xs[1]))(_op), 2, _dtypes, "elementwise",
            _binary_sample, domains=_domains, tolerance=_tol, exact=_exact, scalar_operands=True,
            numpy_name=f"x {_SYMBOLS[_op.__name__]} y", numpy_loop=_name in NUMPY_LOOP_UFUNCS))

# operand 1 an integer power of two (EXPONENT_OPERAND_OPS), reaching past both ends of float64's range
register(OpInfo("ldexp", _call_ufunc(np.ldexp), 2, ALL, "elementwise", _binary_sample,
                domains=(ANY, Domain(lo=-1100, hi=1100)), scalar_operands=True, numpy_name="np.ldexp",
                notes="x * 2**n rounded once: overflow to inf, subnormal results ties to even"))


def _isclose_sample(c: Chooser) -> Call:
    call = _binary_sample(c)
    params = {"rtol": c.pick((1e-5, 1e-3, 0.0, 0.5)), "atol": c.pick((1e-8, 0.0, 1e-2, 1)),
              "equal_nan": c.pick((False, True))}
    return Call(call.shapes, params, call.scalars)


# NumPy's formula, each op rounded as NumPy rounds it (y in a float type first): bit for bit
register(OpInfo("isclose", lambda xs, p: np.isclose(xs[0], xs[1], p.get("rtol", 1e-5), p.get("atol", 1e-8),
                                                     p.get("equal_nan", False)), 2, ALL,
                "elementwise", _isclose_sample, scalar_operands=True, numpy_name="np.isclose"))
# NumPy's Python bools, a NumPy bool scalar when traced (the family keeps them out of elementwise graphs)
register(OpInfo("allclose", lambda xs, p: np.allclose(xs[0], xs[1], p.get("rtol", 1e-5), p.get("atol", 1e-8),
                                                       p.get("equal_nan", False)), 2, ALL,
                "all_of", _isclose_sample, numpy_name="np.allclose"))


def _array_equal_sample(c: Chooser) -> Call:
    """Operands of one shape (array_equiv: broadcast together); the second the first itself, half the time,
    so that equal arrays (and with ``equal_nan`` equal NaNs) are drawn."""
    shapes = broadcast_shapes_for(c, 2) if c.pick((0, 1)) else [random_shape(c, 0, 3)] * 2
    return Call(tuple(shapes), {"same": c.pick((False, True)), "equal_nan": c.pick((False, True)),
                                "equiv": shapes[0] != shapes[1] or c.pick((False, True))})


def _array_equal(xs, p):
    y = xs[0] if p["same"] and np.shape(xs[0]) == np.shape(xs[1]) else xs[1]
    return np.array_equiv(xs[0], y) if p["equiv"] else np.array_equal(xs[0], y, equal_nan=p["equal_nan"])


register(OpInfo("array_equal", _array_equal, 2, ALL, "all_of", _array_equal_sample,
                numpy_name="np.array_equal / np.array_equiv"))
register(OpInfo("sinc", lambda xs, p: np.sinc(xs[0]), 1, ALL, "elementwise", _elementwise_sample(1),
                tolerance=TRANSCENDENTAL, exact=False, numpy_name="np.sinc"))

# integer powers: NumPy refuses negative integer exponents, so they get their own domain; exponents
# reach the dtype's maximum (an unsigned one with its top bit set included). uint64 with a signed
# integer computes in float64, where NumPy's SIMD pow may differ from libm's by an ulp (seed 1183:
# 1218492183.0 ** 3 is an ulp below the correctly rounded cube in NumPy's AVX-512 pow): the CPU calls
# that NumPy loop (numpy_loop), other targets are held to the tolerance
register(OpInfo("power_int", _call_ufunc(np.power), 2, INTS, "elementwise", _binary_sample,
                domains=(Domain(lo=-50, hi=50), INT_EXPONENT), tolerance=TRANSCENDENTAL, scalar_operands=True,
                numpy_name="np.power", numpy_loop=True))


def _clip_sample(c: Chooser) -> Call:
    """x with two bounds, each an array (broadcast with x), a Python scalar or a NumPy scalar; and
    which bounds are passed (``None`` for the other, as np.clip allows)."""
    shapes = broadcast_shapes_for(c, 3)
    scalars = {}
    for i in (1, 2):
        kind = c.pick(("array", "array", "python", "numpy"))
        if kind != "array":
            scalars[i] = kind
    return Call(tuple(shapes), {"bounds": c.pick(("both", "both", "both", "lo", "hi"))}, scalars)


def _clip_bounds(xs, p):
    return (xs[1] if p["bounds"] != "hi" else None), (xs[2] if p["bounds"] != "lo" else None)


# NaN bounds, ties of ±0 with a bound and lo > hi are all drawn (ANY): NumPy's answer is defined for each
register(OpInfo("clip", lambda xs, p: np.clip(xs[0], *_clip_bounds(xs, p)), 3, ALL, "elementwise", _clip_sample,
                scalar_operands=True, numpy_name="np.clip",
                notes="operands 1 and 2 are the bounds; params.bounds says which are passed (the other is None)"))
register(OpInfo("method.clip", lambda xs, p: xs[0].clip(*_clip_bounds(xs, p)), 3, ALL, "elementwise", _clip_sample,
                scalar_operands=True, numpy_name="x.clip"))


def _where_sample(c: Chooser) -> Call:
    shapes = broadcast_shapes_for(c, 3)
    kind = c.pick(("array", "array", "python", "numpy"))
    scalars = {} if kind == "array" else {c.pick((1, 2)): kind}
    return Call(tuple(shapes), scalars=scalars)


register(OpInfo("where", lambda xs, p: np.where(xs[0], xs[1], xs[2]), 3, ALL, "select", _where_sample,
                scalar_operands=True, numpy_name="np.where",
                notes="the condition operand is cast to bool by the op itself"))


def _astype_params(c: Chooser, shape) -> dict:
    return {"dtype": str(c.pick(ALL))}


register(OpInfo("astype", lambda xs, p: xs[0].astype(p["dtype"]), 1, ALL, "elementwise", _unary_sample(_astype_params),
                domains=(CASTABLE,), numpy_name="x.astype", params_for=_astype_params,
                notes="float -> int of NaN, inf or values beyond int32 is left to the C compiler and SIMD unit by "
                      "NumPy (the compiler gives fixed values: tests/test_ops.py); not drawn"))

# --------------------------------------------------------------------------- reductions


def _reduction_params(extra=None):
    def params(c: Chooser, shape) -> dict | None:
        if not shape:
            return None
        p = {"axis": pick_axis(c, len(shape)), "keepdims": c.pick((False, True))}
        if extra:
            p.update(extra(c, shape))
        return p
    return params


def _as_float(x):
    return np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)


def _reduced_count(x, p) -> int:
    axes = _axis(p)
    shape = np.shape(x)
    axes = range(len(shape)) if axes is None else ((axes,) if isinstance(axes, int) else axes)
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def _sum_scale(xs, p):
    a = np.abs(_as_float(xs[0]))
    return np.sum(a, axis=_axis(p), keepdims=p["keepdims"]) * math.sqrt(max(_reduced_count(xs[0], p), 1))


def _mean_scale(xs, p):
    a = np.abs(_as_float(xs[0]))
    return np.mean(a, axis=_axis(p), keepdims=p["keepdims"]) * math.sqrt(max(_reduced_count(xs[0], p), 1))


def _var_scale(xs, p):
    a = np.square(_as_float(xs[0]))
    return 4 * np.mean(a, axis=_axis(p), keepdims=p["keepdims"]) * math.sqrt(max(_reduced_count(xs[0], p), 1))


def _prod_scale(xs, p):
    a = np.abs(_as_float(xs[0]))
    return np.prod(a, axis=_axis(p), keepdims=p["keepdims"]) * math.sqrt(max(_reduced_count(xs[0], p), 1))


def _reduction(name, call, dtypes, numpy_name, scale=None, extra=None, domain=None):
    """A reduction along ``axis``; one with an error ``scale`` sums or multiplies (in NumPy's order on the CPU)."""
    params = _reduction_params(extra)
    register(OpInfo(name, call, 1, dtypes, "reduction", _unary_sample(params, 1), numpy_name=numpy_name,
                    domains=(domain or (MODERATE if scale else ANY),), tolerance=REDUCTION if scale else EXACT,
                    exact=scale is None, params_for=params, scale=scale, numpy_order=scale is not None))


def _axis(p):
    a = p.get("axis")
    return tuple(a) if isinstance(a, list) else a


def _acc_dtype(c: Chooser, shape) -> dict:
    """np.sum/mean/var's ``dtype=``: the accumulator and result type (half the time left to NumPy)."""
    return {"dtype": c.pick((None, None, None, None, None, "int8", "uint16", "int32", "int64", "uint64", "float16",
                             "float32", "float64", "bool"))}


def _acc(p):
    return None if p.get("dtype") is None else np.dtype(p["dtype"])


_reduction("sum", lambda xs, p: np.sum(xs[0], axis=_axis(p), keepdims=p["keepdims"], dtype=_acc(p)), ALL, "np.sum",
           _sum_scale, extra=_acc_dtype)
_reduction("method.sum", lambda xs, p: xs[0].sum(axis=_axis(p), keepdims=p["keepdims"], dtype=_acc(p)), ALL, "x.sum",
           _sum_scale, extra=_acc_dtype)
# products: factors near 1 in size, so thousands of them neither overflow nor underflow in one
# order and not another (NumPy multiplies in order, and so does the compiler; ints wrap in both)
PROD_DOMAIN = Domain(lo=-2.0, hi=2.0)
_reduction("prod", lambda xs, p: np.prod(xs[0], axis=_axis(p), keepdims=p["keepdims"], dtype=_acc(p)), ALL, "np.prod",
           _prod_scale, extra=_acc_dtype, domain=PROD_DOMAIN)
_reduction("method.prod", lambda xs, p: xs[0].prod(axis=_axis(p), keepdims=p["keepdims"], dtype=_acc(p)), ALL,
           "x.prod", _prod_scale, extra=_acc_dtype, domain=PROD_DOMAIN)
# truth values (x != 0: NaN is true, -0.0 false), over empty axes too
_reduction("any", lambda xs, p: np.any(xs[0], axis=_axis(p), keepdims=p["keepdims"]), ALL, "np.any")
_reduction("method.any", lambda xs, p: xs[0].any(axis=_axis(p), keepdims=p["keepdims"]), ALL, "x.any")
_reduction("all", lambda xs, p: np.all(xs[0], axis=_axis(p), keepdims=p["keepdims"]), ALL, "np.all")
_reduction("method.all", lambda xs, p: xs[0].all(axis=_axis(p), keepdims=p["keepdims"]), ALL, "x.all")
_reduction("max", lambda xs, p: np.max(xs[0], axis=_axis(p), keepdims=p["keepdims"]), ALL, "np.max")
_reduction("method.max", lambda xs, p: xs[0].max(axis=_axis(p), keepdims=p["keepdims"]), ALL, "x.max")
_reduction("min", lambda xs, p: np.min(xs[0], axis=_axis(p), keepdims=p["keepdims"]), ALL, "np.min")
_reduction("method.min", lambda xs, p: xs[0].min(axis=_axis(p), keepdims=p["keepdims"]), ALL, "x.min")
_reduction("mean", lambda xs, p: np.mean(xs[0], axis=_axis(p), keepdims=p["keepdims"], dtype=_acc(p)), ALL, "np.mean",
           _mean_scale, extra=_acc_dtype)
_reduction("method.mean", lambda xs, p: xs[0].mean(axis=_axis(p), keepdims=p["keepdims"], dtype=_acc(p)), ALL,
           "x.mean", _mean_scale, extra=_acc_dtype)
_reduction("var", lambda xs, p: np.var(xs[0], axis=_axis(p), keepdims=p["keepdims"], ddof=p.get("ddof", 0),
                                       dtype=_acc(p)), NUMERIC,
           "np.var", _var_scale, extra=lambda c, s: {"ddof": c.pick((0, 0, 1)), **_acc_dtype(c, s)})
_reduction("method.var", lambda xs, p: xs[0].var(axis=_axis(p), keepdims=p["keepdims"], dtype=_acc(p)), NUMERIC,
           "x.var", _var_scale, extra=_acc_dtype)


def _std_scale(xs, p):
    """sqrt's error is half the relative error of what it takes: var's scale over the result."""
    with np.errstate(all="ignore"):
        v = np.var(_as_float(xs[0]), axis=_axis(p), keepdims=p["keepdims"])
        return np.nan_to_num(_var_scale(xs, p) / np.maximum(2 * np.sqrt(v), np.finfo(np.float64).tiny), posinf=0.0)


_reduction("std", lambda xs, p: np.std(xs[0], axis=_axis(p), keepdims=p["keepdims"], ddof=p.get("ddof", 0),
                                       dtype=_acc(p)), NUMERIC,
           "np.std", _std_scale, extra=lambda c, s: {"ddof": c.pick((0, 0, 1)), **_acc_dtype(c, s)})
_reduction("method.std", lambda xs, p: xs[0].std(axis=_axis(p), keepdims=p["keepdims"], dtype=_acc(p)), NUMERIC,
           "x.std", _std_scale, extra=_acc_dtype)

def _reduce_where_sample(c: Chooser) -> Call:
    """A reduction with a boolean ``where=`` mask (its second operand, broadcast to the first; ignored
    a third of the time) and an ``initial=`` start (which max and min need with a mask)."""
    shape = random_shape(c, 1, 4, empty=True)
    mask = tuple(1 if c.pick((0, 0, 1)) else d for d in shape[c.integer(0, len(shape)):])
    kind = c.pick(("sum", "prod", "max", "min", "any", "all", "mean", "var", "std"))
    masked = c.pick((True, True, False))
    initial = c.pick((None, 2, -1.5)) if kind in ("sum", "prod") else \
        (c.pick((0, -3, 1.5)) if kind in ("max", "min") and (masked or c.pick((0, 1))) else None)
    params = {"kind": kind, "axis": pick_axis(c, len(shape)), "keepdims": c.pick((False, True)), "masked": masked,
              "initial": initial}
    if kind in ("var", "std"):
        params["ddof"] = c.pick((0, 0, 1, 2))
    return Call((shape, mask), params=params)


def _reduce_where(xs, p):
    axis = tuple(p["axis"]) if isinstance(p["axis"], list) else p["axis"]
    kwargs = {"where": xs[1]} if p["masked"] else {}
    if p["initial"] is not None:
        kwargs["initial"] = p["initial"]
    if "ddof" in p:
        kwargs["ddof"] = p["ddof"]
    return getattr(np, p["kind"])(xs[0], axis=axis, keepdims=p["keepdims"], **kwargs)


def _reduce_where_scale(xs, p):
    a = np.abs(_as_float(xs[0]))
    if p["kind"] in ("var", "std"):  # the largest square bounds the masked mean of squares
        axis = tuple(p["axis"]) if isinstance(p["axis"], list) else p["axis"]
        bound = 4 * np.max(np.square(a), axis=axis, keepdims=p["keepdims"], initial=0) * math.sqrt(max(a.size, 1))
        if p["kind"] == "var":
            return bound
        with np.errstate(all="ignore"):  # sqrt halves the relative error of what it takes
            v = np.var(_as_float(xs[0]), axis=axis, keepdims=p["keepdims"], ddof=p["ddof"],
                       where=xs[1] if p["masked"] else True)
            return np.nan_to_num(bound / np.maximum(2 * np.sqrt(v), np.finfo(np.float64).tiny), posinf=0.0)
    if p["kind"] == "prod":
        return _prod_scale(xs, {"axis": p["axis"], "keepdims": p["keepdims"]}) + abs(p["initial"] or 0)
    axis = tuple(p["axis"]) if isinstance(p["axis"], list) else p["axis"]
    return np.sum(a, axis=axis, keepdims=p["keepdims"]) * math.sqrt(max(a.size, 1)) + abs(p["initial"] or 0)


def _reduce_where_scale_of_selection(xs, p):
    """x[mask]'s reduction is a masked one of x over every axis: reduce_where's scale."""
    mask = np.asarray(xs[1]).astype(bool).reshape(np.shape(xs[1]) + (1,) * (np.ndim(xs[0]) - np.ndim(xs[1])))
    axis = None if p.get("axis") is None else tuple(range(np.ndim(xs[1])))  # (the selection's first: the mask's)
    scale = _reduce_where_scale((xs[0], np.broadcast_to(mask, np.shape(xs[0]))),
                                {"kind": p["kind"], "axis": axis, "keepdims": False, "masked": True,
                                 "initial": p.get("initial"), "ddof": p.get("ddof", 0)})
    if not p["keepdims"]:
        return scale
    return np.reshape(scale, (1,) * (1 + np.ndim(xs[0]) - np.ndim(xs[1])) if axis is None else (1,) + np.shape(scale))


# (max and min among their kinds: the sign of a zero maximum is NumPy's SIMD order's, zero_sign=False)
register(OpInfo("reduce_where", _reduce_where, 2, NUMERIC, "reduction_masked", _reduce_where_sample,
                domains=(PROD_DOMAIN,), tolerance=REDUCTION, exact=False, mixed_dtypes=True, numpy_order=True,
                zero_sign=False,
                numpy_name="np.<reduction>(x, where=mask, initial=v)", scale=_reduce_where_scale,
                notes="operand 1 is the boolean mask"))

def _selection_reduce_sample(c: Chooser) -> Call:
    """A reduction of x[mask] over every axis or its first, the mask (operand 1, computed from the data in the
    traced function: its count is the kernel's) over x's leading axes; max and min without initial= raise where
    it selects nothing."""
    shape = random_shape(c, 1, 3, empty=True)
    kind = c.pick(("sum", "prod", "max", "min", "any", "all", "mean", "var", "std"))
    params = {"kind": kind, "keepdims": c.pick((False, True)), "as_method": c.pick((False, True)),
              "axis": c.pick((None, 0))}
    if kind in ("max", "min"):
        params["initial"] = c.pick((None, None, 1))
    if kind in ("var", "std"):
        params["ddof"] = c.pick((0, 0, 1))
    lead = c.integer(1, len(shape))
    if kind not in ("sum", "prod", "any", "all"):  # (rows of no element: refused by name but for those)
        shape = shape[:lead] + tuple(max(d, 1) for d in shape[lead:])
    return Call((shape, shape[:lead]), params=params)


def _selection_reduce(xs, p):
    x, selects = xs
    kwargs = {k: p[k] for k in ("initial", "ddof") if p.get(k) is not None}
    selection = x[selects != 0]  # (a traced mask: the function's argument, or computed from it)
    if p["as_method"]:
        return getattr(selection, p["kind"])(axis=p.get("axis"), keepdims=p["keepdims"], **kwargs)
    return getattr(np, p["kind"])(selection, axis=p.get("axis"), keepdims=p["keepdims"], **kwargs)


register(OpInfo("selection_reduce", _selection_reduce, 2, NUMERIC, "reduction_masked", _selection_reduce_sample,
                domains=(PROD_DOMAIN,), tolerance=REDUCTION, exact=False, mixed_dtypes=True,
                numpy_name="x[mask].<reduction>()", scale=_reduce_where_scale_of_selection, views=False,
                notes="operand 1 is the mask, over operand 0's leading axes; x laid out otherwise than C-contiguously "
                      "is refused (README, Known limitations)"))

_NAN_KINDS = ("nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nancumsum", "nancumprod")


def _nan_reduction_sample(c: Chooser) -> Call:
    """A NaN-ignoring reduction of an array whose masked elements (operand 1) are NaN when it is a float
    array (whole slices of NaNs included, when the mask broadcasts)."""
    shape = random_shape(c, 1, 4, empty=True)
    mask = tuple(1 if c.pick((0, 0, 1)) else d for d in shape)
    kind = c.pick(_NAN_KINDS)
    if kind.startswith("nancum"):
        return Call((shape, mask), params={"kind": kind, "axis": pick_axis(c, len(shape), allow_tuple=False)})
    params = {"kind": kind, "axis": pick_axis(c, len(shape)), "keepdims": c.pick((False, True))}
    if kind in ("nanvar", "nanstd"):
        params["ddof"] = c.pick((0, 0, 1, 2))
    return Call((shape, mask), params=params)


def _with_nans(xs):
    x = xs[0]
    return np.where(xs[1], np.nan, x) if np.dtype(x.dtype).kind == "f" else x


def _nan_reduction(xs, p):
    kwargs = {k: (tuple(v) if isinstance(v, list) else v) for k, v in p.items() if k != "kind"}
    return getattr(np, p["kind"])(_with_nans(xs), **kwargs)


def _nan_reduction_scale(xs, p):
    """reduce_where's scales, over the elements that are not NaN."""
    x = np.nan_to_num(_as_float(_with_nans(xs)), nan=0.0)
    kind = p["kind"].removeprefix("nan").removeprefix("cum")
    if p["kind"].startswith("nancum"):  # each prefix's own magnitude
        return (np.cumsum if kind == "sum" else np.cumprod)(np.abs(x), axis=p["axis"]) * math.sqrt(max(x.size, 1))
    masked = {"kind": kind, "axis": p["axis"], "keepdims": p["keepdims"], "masked": False, "initial": None,
              "ddof": p.get("ddof", 0)}
    return _reduce_where_scale([x, np.ones(x.shape, bool)], masked)


register(OpInfo("nan_reduction", _nan_reduction, 2, NUMERIC, "reduction_masked", _nan_reduction_sample,
                domains=(PROD_DOMAIN,), tolerance=REDUCTION, exact=False, mixed_dtypes=True, numpy_order=True,
                zero_sign=False,
                numpy_name="np.nansum/nanprod/nanmax/nanmin/nanmean/nanvar/nanstd/nancumsum/nancumprod",
                scale=_nan_reduction_scale, notes="operand 1 marks the elements made NaN (float operands)"))


# --------------------------------------------------------------------------- matmul


def _matmul_sample(c: Chooser) -> Call:
    m, k, n = c.pick(DIMS), c.pick(DIMS), c.pick(DIMS)
    form = c.pick(("vv", "mv", "vm", "mm", "mm", "bmm", "bmm_bcast", "bmm_vec"))
    if form == "vv":
        shapes = ((k,), (k,))
    elif form == "mv":
        shapes = ((m, k), (k,))
    elif form == "vm":
        shapes = ((k,), (k, n))
    elif form == "mm":
        shapes = ((m, k), (k, n))
    elif form == "bmm":
        b = c.pick((1, 2, 3))
        shapes = ((b, m, k), (b, k, n))
    elif form == "bmm_bcast":
        b, d = c.pick((1, 2, 3)), c.pick((1, 2))
        shapes = c.pick((((b, 1, m, k), (d, k, n)), ((b, m, k), (k, n)), ((m, k), (b, k, n))))
    else:
        b = c.pick((1, 2, 3))
        shapes = c.pick((((b, m, k), (k,)), ((k,), (b, k, n))))
    return Call(tuple(shapes))


_MATMUL_TOL = Tolerance(ulps=8, scale_ulps=4)


def _matmul_scale(xs, p):
    a, b = _as_float(xs[0]), _as_float(xs[1])
    k = np.shape(a)[-1]
    return np.abs(np.matmul(np.abs(a), np.abs(b))) * math.sqrt(k)

register(OpInfo("matmul", lambda xs, p: np.matmul(xs[0], xs[1]), 2, ALL, "matmul", _matmul_sample,
                domains=(SMALL,), tolerance=_MATMUL_TOL, exact=False, numpy_blas=True, numpy_name="np.matmul", scale=_matmul_scale))
register(OpInfo("operator.matmul", lambda xs, p: xs[0] @ xs[1], 2, ALL, "matmul", _matmul_sample,
                domains=(SMALL,), tolerance=_MATMUL_TOL, exact=False, numpy_blas=True, numpy_name="x @ y", scale=_matmul_scale))

# np.dot and its relatives: NumPy's own definitions in terms of a 2-d matmul (or a multiply)


def _dot_sample(c: Chooser) -> Call:
    m, k, n = c.pick(DIMS), c.pick(DIMS), c.pick(DIMS)
    form = c.pick(("0d", "vv", "mv", "vm", "mm", "mm", "nd_v", "v_nd", "nd_md"))
    b = c.pick((1, 2, 3))
    shapes = {"0d": c.pick((((), (m, k)), ((m,), ()))), "vv": ((k,), (k,)), "mv": ((m, k), (k,)),
              "vm": ((k,), (k, n)), "mm": ((m, k), (k, n)), "nd_v": ((b, m, k), (k,)), "v_nd": ((k,), (b, k, n)),
              "nd_md": c.pick((((b, m, k), (c.pick((1, 2)), k, n)), ((m, k), (b, k, n)), ((b, m, k), (k, n))))}[form]
    return Call(shapes)


def _dot_scale(xs, p):
    a, b = _as_float(xs[0]), _as_float(xs[1])
    k = np.shape(a)[-1] if np.ndim(a) and np.ndim(b) else 1
    return np.abs(np.dot(np.abs(a), np.abs(b))) * math.sqrt(k)


def _tensordot_axes(p):
    axes = p["axes"]
    return axes if isinstance(axes, int) else (axes[0], axes[1])


def _tensordot_sample(c: Chooser) -> Call:
    """Free axes of a then the summed ones; the summed axes named by a count (NumPy's last of a
    against first of b) or by two lists, b holding them after its free axes in either order and a
    named by negative indices at times."""
    summed = [c.pick(DIMS[:6]) for _ in range(c.integer(0, 2))]
    free_a = [c.pick(DIMS[:6]) for _ in range(c.integer(0, 2))]
    free_b = [c.pick(DIMS[:6]) for _ in range(c.integer(0, 2))]
    a_shape = tuple(free_a + summed)
    if c.pick((0, 1)):
        return Call((a_shape, tuple(summed + free_b)), params={"axes": len(summed)})
    order = list(range(len(summed)))[::c.pick((1, -1))]       # b's j-th summed axis is a's order[j]-th
    a_axes = [len(free_a) + i - (len(a_shape) if c.pick((0, 0, 1)) else 0) for i in order]
    b_axes = [len(free_b) + j for j in range(len(order))]
    return Call((a_shape, tuple(free_b + [summed[i] for i in order])), params={"axes": [a_axes, b_axes]})


def _tensordot_scale(xs, p):
    a, b = _as_float(xs[0]), _as_float(xs[1])
    axes = _tensordot_axes(p)
    summed = list(range(-axes, 0)) if isinstance(axes, int) else axes[0]
    k = int(np.prod([np.shape(a)[i] for i in summed], dtype=np.int64))
    return np.abs(np.tensordot(np.abs(a), np.abs(b), axes)) * math.sqrt(max(k, 1))


def _inner_sample(c: Chooser) -> Call:
    k = c.pick(DIMS)
    lead = lambda: tuple(c.pick(DIMS[:5]) for _ in range(c.integer(0, 2)))  # noqa: E731
    return Call(c.pick((((), lead() + (k,)), (lead() + (k,), lead() + (k,)))))


def _inner_scale(xs, p):
    a, b = _as_float(xs[0]), _as_float(xs[1])
    k = np.shape(a)[-1] if np.ndim(a) and np.ndim(b) else 1
    return np.abs(np.inner(np.abs(a), np.abs(b))) * math.sqrt(k)


def _outer_sample(c: Chooser) -> Call:
    return Call(tuple(tuple(c.pick(DIMS[:5]) for _ in range(c.integer(0, 2))) for _ in range(2)))


def _vdot_sample(c: Chooser) -> Call:
    shape = tuple(c.pick(DIMS[:5]) for _ in range(c.integer(1, 3)))
    return Call((shape, c.pick((shape, shape[::-1], (int(np.prod(shape)),)))))  # only the sizes must agree


def _vdot_scale(xs, p):
    a, b = np.ravel(_as_float(xs[0])), np.ravel(_as_float(xs[1]))
    return np.abs(np.vdot(np.abs(a), np.abs(b))) * math.sqrt(max(a.size, 1))


register(OpInfo("dot", lambda xs, p: np.dot(xs[0], xs[1]), 2, ALL, "matmul", _dot_sample, domains=(SMALL,),
                tolerance=_MATMUL_TOL, exact=False, numpy_blas=True, numpy_name="np.dot", scale=_dot_scale))
register(OpInfo("method.dot", lambda xs, p: xs[0].dot(xs[1]), 2, ALL, "matmul", _dot_sample, domains=(SMALL,),
                tolerance=_MATMUL_TOL, exact=False, numpy_blas=True, numpy_name="x.dot", scale=_dot_scale,
                notes="a 0-d first operand is an array (a NumPy scalar has its own dot)"))
register(OpInfo("tensordot", lambda xs, p: np.tensordot(xs[0], xs[1], _tensordot_axes(p)), 2, ALL, "contraction",
                _tensordot_sample, domains=(SMALL,), tolerance=_MATMUL_TOL, exact=False, numpy_blas=True, numpy_name="np.tensordot",
                scale=_tensordot_scale))
register(OpInfo("inner", lambda xs, p: np.inner(xs[0], xs[1]), 2, ALL, "contraction", _inner_sample, domains=(SMALL,),
                tolerance=_MATMUL_TOL, exact=False, numpy_blas=True, numpy_name="np.inner", scale=_inner_scale))
register(OpInfo("outer", lambda xs, p: np.outer(xs[0], xs[1]), 2, ALL, "contraction", _outer_sample,
                numpy_name="np.outer"))
register(OpInfo("vdot", lambda xs, p: np.vdot(xs[0], xs[1]), 2, ALL, "contraction", _vdot_sample, domains=(SMALL,),
                tolerance=_MATMUL_TOL, exact=False, numpy_blas=True, numpy_name="np.vdot", scale=_vdot_scale))

def _gufunc_sample(name):
    """np.vecdot/matvec/vecmat: core dimensions (n), (m, n) or (n, m) after loop dimensions that broadcast
    (some of them 1)."""
    def sample(c: Chooser) -> Call:
        n, m = c.pick(DIMS), c.pick(DIMS[:5])
        loop = [tuple(c.pick(DIMS[:4]) for _ in range(c.integer(0, 2)))]
        loop.append(tuple(1 if c.pick((0, 0, 1)) else d for d in loop[0][c.integer(0, len(loop[0])):]))
        if c.pick((0, 1)):
            loop.reverse()
        cores = {"vecdot": ((n,), (n,)), "matvec": ((m, n), (n,)), "vecmat": ((n,), (n, m))}[name]
        return Call(tuple(lp + core for lp, core in zip(loop, cores)))
    return sample


def _gufunc_scale(name):
    def scale(xs, p):
        a, b = np.abs(_as_float(xs[0])), np.abs(_as_float(xs[1]))
        return getattr(np, name)(a, b) * math.sqrt(np.shape(xs[0])[-1])
    return scale


for _name in ("vecdot", "matvec", "vecmat"):
    register(OpInfo(_name, (lambda f: lambda xs, p: f(xs[0], xs[1]))(getattr(np, _name)), 2, ALL, "contraction",
                    _gufunc_sample(_name), domains=(SMALL,), tolerance=_MATMUL_TOL, exact=False, numpy_blas=True,
                    numpy_name=f"np.{_name}", scale=_gufunc_scale(_name)))


def _vecdot_axis_sample(c: Chooser) -> Call:
    """np.vecdot along a chosen axis (axis=, keepdims=): the second operand's loop axes 1 here and there."""
    shape = random_shape(c, 1, 3)
    axis = c.integer(-len(shape), len(shape) - 1)
    other = tuple(1 if k != axis % len(shape) and c.pick((0, 0, 1)) else d for k, d in enumerate(shape))
    shapes = (shape, other) if c.pick((0, 1)) else (other, shape)
    return Call(shapes, params={"axis": axis, "keepdims": c.pick((False, True))})


register(OpInfo("vecdot_axis", lambda xs, p: np.vecdot(xs[0], xs[1], **p), 2, ALL, "contraction",
                _vecdot_axis_sample, domains=(SMALL,), tolerance=_MATMUL_TOL, exact=False, numpy_blas=True,
                numpy_name="np.vecdot(axis=)",
                scale=lambda xs, p: np.vecdot(np.abs(_as_float(xs[0])), np.abs(_as_float(xs[1])), **p)
                * math.sqrt(np.shape(xs[0])[p["axis"]])))


def _correlate_sample(c: Chooser) -> Call:
    return Call(((c.pick(DIMS),), (c.pick(DIMS),)), params={"mode": c.pick(("valid", "same", "full"))})


for _name in ("correlate", "convolve"):
    register(OpInfo(_name, (lambda f: lambda xs, p: f(xs[0], xs[1], p["mode"]))(getattr(np, _name)), 2, ALL,
                    "contraction", _correlate_sample, domains=(SMALL,), tolerance=_MATMUL_TOL, exact=False, numpy_blas=True,
                    numpy_name=f"np.{_name}",
                    scale=(lambda f: lambda xs, p: f(np.abs(_as_float(xs[0])), np.abs(_as_float(xs[1])), p["mode"])
                           * math.sqrt(max(np.size(xs[0]), np.size(xs[1]))))(getattr(np, _name))))


def _cross_sample(c: Chooser) -> Call:
    """Vectors of 2 or 3 components (2 is NumPy's deprecated case) along the last axis or another, after
    leading dimensions that broadcast."""
    lead = tuple(c.pick(DIMS[:4]) for _ in range(c.integer(0, 2)))
    shapes, params = [], {}
    for key in ("axisa", "axisb"):
        lead_k = tuple(1 if c.pick((0, 0, 1)) else d for d in lead[c.integer(0, len(lead)):])
        shape = lead_k + (c.pick((2, 3, 3)),)
        if lead_k and c.pick((0, 1)):  # the vectors along another axis
            at = c.integer(0, len(lead_k))
            shape = lead_k[:at] + shape[-1:] + lead_k[at:]
            params[key] = at
        shapes.append(shape)
    return Call(tuple(shapes), params=params)


# NumPy's formula, product for product (a product or a difference of two per component): bit for bit
register(OpInfo("cross", lambda xs, p: np.cross(xs[0], xs[1], **p), 2, NUMERIC, "contraction", _cross_sample,
                numpy_name="np.cross", notes="2-vectors: NumPy's deprecated case, included"))


def _linalg_cross_sample(c: Chooser) -> Call:
    lead = tuple(c.pick(DIMS[:4]) for _ in range(c.integer(0, 2)))
    other = tuple(1 if c.pick((0, 0, 1)) else d for d in lead[c.integer(0, len(lead)):])
    return Call((lead + (3,), other + (3,)) if c.pick((0, 1)) else (other + (3,), lead + (3,)))


register(OpInfo("linalg.cross", lambda xs, p: np.linalg.cross(xs[0], xs[1]), 2, NUMERIC, "contraction",
                _linalg_cross_sample, numpy_name="np.linalg.cross"))


def _kron_sample(c: Chooser) -> Call:
    return Call(tuple(tuple(c.pick(DIMS[:4]) for _ in range(c.integer(0, 3))) for _ in range(2)))


# one product per element (the operands' axes interleaved): bit for bit
register(OpInfo("kron", lambda xs, p: np.kron(xs[0], xs[1]), 2, ALL, "contraction", _kron_sample,
                numpy_name="np.kron"))


def _einsum_sample(c: Chooser) -> Call:
    """One to three operands over labels a-e, lengths shared per label or 1 (broadcast); sometimes a label
    repeated within an operand (its diagonal), a leading ``...`` of broadcast dimensions; the output
    implicit, or explicit: any subset of the labels in any order."""
    pool = "abcde"
    sizes = {label: c.pick(DIMS[1:6]) for label in pool}
    count = c.pick((1, 2, 2, 2, 3))
    ellipsis = tuple(c.pick((1, 2, 3)) for _ in range(c.integer(1, 2))) if c.pick((0, 0, 0, 1)) else None
    subscripts, shapes = [], []
    for _ in range(count):
        free = list(pool)
        labels = [free.pop(c.integer(0, len(free) - 1)) for _ in range(c.integer(0 if count > 1 else 1, 3))]
        if labels and c.pick((0, 0, 0, 1)):
            labels.insert(c.integer(0, len(labels)), c.pick(labels))
        lengths = {label: sizes[label] if c.pick((1, 1, 1, 1, 0)) else 1 for label in sorted(set(labels))}
        shape = tuple(lengths[label] for label in labels)
        if ellipsis:
            dims = ellipsis[len(ellipsis) - c.integer(0, len(ellipsis)):]
            shape = tuple(d if c.pick((1, 1, 0)) else 1 for d in dims) + shape
        subscripts.append(("..." if ellipsis else "") + "".join(labels))
        shapes.append(shape)
    spec = ",".join(subscripts)
    if c.pick((0, 1)):
        used = sorted({ch for sub in subscripts for ch in sub if ch.isalpha()})
        out = [ch for ch in used if c.pick((0, 1))]
        for i in range(len(out) - 1, 0, -1):  # a shuffle, drawn through the chooser
            j = c.integer(0, i)
            out[i], out[j] = out[j], out[i]
        spec += "->" + ("..." if ellipsis else "") + "".join(out)
    params = {"subscripts": spec, "sublists": bool(c.pick((0, 0, 1)))}
    if c.pick((0, 0, 0, 1)):  # computed in another dtype, the operands converted under a casting rule
        params["dtype"] = c.pick(("float16", "float32", "float64", "int8", "int32", "uint16", "bool"))
        params["casting"] = c.pick(("unsafe", "same_kind", "safe"))
    return Call(tuple(shapes), params=params)


def _sublist(subscripts: str) -> list:
    """Subscript letters as einsum's interleaved form writes them (NumPy's mapping: 'A'-'Z' are 0-25, 'a'-'z' 26-51)."""
    head, dots, tail = subscripts.partition("...")
    number = lambda ch: ord(ch) - ord("A") if ch.isupper() else ord(ch) - ord("a") + 26
    return [number(ch) for ch in head] + ([Ellipsis] if dots else []) + [number(ch) for ch in tail]


def _einsum_call(xs, p):
    """np.einsum with the sample's subscripts, as a string or (``sublists``) interleaved with the operands."""
    kwargs = {k: p[k] for k in ("dtype", "casting") if k in p}
    if not p.get("sublists"):
        return np.einsum(p["subscripts"], *xs, **kwargs)
    inputs, arrow, out = p["subscripts"].partition("->")
    args = [a for x, sub in zip(xs, inputs.split(",")) for a in (x, _sublist(sub))]
    return np.einsum(*args, *([_sublist(out)] if arrow else []), **kwargs)


def _einsum_scale(xs, p):
    magnitudes = [np.abs(_as_float(x)) for x in xs]
    return np.abs(np.einsum(p["subscripts"], *magnitudes)) * math.sqrt(max([np.size(x) for x in xs] + [1]))


register(OpInfo("einsum", _einsum_call, 3, ALL, "contraction", _einsum_sample,
                domains=(SMALL,), tolerance=_MATMUL_TOL, exact=False, numpy_name="np.einsum", scale=_einsum_scale,
                notes="arity is the most operands a sample has (one to three); the subscripts as a string or as sublists"))

# --------------------------------------------------------------------------- shape functions


def _factorizations(size: int) -> list[int]:
    return [d for d in range(1, size + 1) if size % d == 0]


def random_reshape(c: Chooser, shape: tuple) -> tuple:
    """A shape with the same number of elements (possibly with one -1)."""
    size = int(np.prod(shape, dtype=np.int64))
    if size == 0:  # any dims holding a 0 (a -1 would be ambiguous, which NumPy refuses)
        return tuple(c.pick((0, 1, 2, 3)) for _ in range(c.integer(0, 2))) + (0,)
    out, rest = [], size
    for _ in range(c.integer(0, 3)):
        d = c.pick(_factorizations(rest))
        out.append(d)
        rest //= d
    out.append(rest)
    if c.pick((0, 1)) and len(out) > 0:
        out[c.integer(0, len(out) - 1)] = -1 if size else out[0]
    if c.pick((0, 0, 1)):
        out.insert(c.integer(0, len(out)), 1)
    return tuple(out)


def random_permutation(c: Chooser, ndim: int) -> tuple:
    axes, perm = list(range(ndim)), []
    while axes:
        a = c.pick(axes)
        axes.remove(a)
        perm.append(a)
    return tuple(perm)


def _single(name, call, params_for, numpy_name, dtypes=ALL, min_rank=0, max_rank=4, family="shape", **kw):
    register(OpInfo(name, call, 1, dtypes, family, _unary_sample(params_for, min_rank, max_rank),
                    numpy_name=numpy_name, params_for=params_for, **kw))


def _scan_params(c: Chooser, shape) -> dict:
    return {"axis": pick_axis(c, len(shape), allow_tuple=False) if shape else None,
            "dtype": c.pick((None, None, None, "bool", "int8", "uint16", "int64", "float16", "float32", "float64"))}


# in order, each step rounded to the result dtype as NumPy's accumulate does: bit for bit (integers wrap)
_single("cumsum", lambda xs, p: np.cumsum(xs[0], axis=p["axis"], dtype=_acc(p)), _scan_params, "np.cumsum",
        family="scan", domains=(MODERATE,))
_single("method.cumsum", lambda xs, p: xs[0].cumsum(axis=p["axis"], dtype=_acc(p)), _scan_params, "x.cumsum",
        family="scan", domains=(MODERATE,))
_single("cumprod", lambda xs, p: np.cumprod(xs[0], axis=p["axis"], dtype=_acc(p)), _scan_params, "np.cumprod",
        family="scan", domains=(PROD_DOMAIN,))
_single("method.cumprod", lambda xs, p: xs[0].cumprod(axis=p["axis"], dtype=_acc(p)), _scan_params, "x.cumprod",
        family="scan", domains=(PROD_DOMAIN,))


_ACCUMULATED = ("maximum", "minimum", "subtract", "divide", "floor_divide", "remainder", "logical_and", "logical_or",
                "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "copysign", "heaviside", "greater",
                "less_equal", "equal")


def _accumulate_params(c: Chooser, shape) -> dict | None:
    if not shape:
        return None  # NumPy: "cannot accumulate on a scalar"
    return {"ufunc": c.pick(_ACCUMULATED), "axis": c.integer(-len(shape), len(shape) - 1)}


# ufunc.accumulate of the other binary ufuncs: the first element, then ufunc(previous, next) in NumPy's
# accumulator type (bool for the logical ones; NumPy's TypeError where its loops have none)
_single("accumulate", lambda xs, p: getattr(np, p["ufunc"]).accumulate(xs[0], axis=p["axis"]), _accumulate_params,
        "np.<ufunc>.accumulate", family="scan", min_rank=1)


def _at_params(c: Chooser, shape) -> dict | None:
    """Up to 12 updates at positions along axis 0 (negative ones and repeats: each repeat combines in turn),
    the values rows of the array itself picked by ``source``."""
    if not shape:
        return None  # (a graph node: the op needs an axis)
    n = shape[0]
    count = c.integer(0, 12) if n else 0
    return {"ufunc": c.pick(("add", "add", "subtract", "multiply", "maximum", "minimum", "negative", "absolute")),
            "indices": [c.integer(-n, n - 1) for _ in range(count)], "source": [c.integer(0, n - 1) for _ in range(count)]}


def _at_traced_params(c: Chooser, shape) -> dict | None:
    p = _at_params(c, shape)
    return p and dict(p, mask=c.pick((False, False, True)))


def _at_call(xs, p, traced_positions: bool = False):
    """``ufunc.at`` into a fresh copy of the operand (NumPy's in-place update), which is the result; with
    ``traced_positions`` the positions are computed from the operand (zeros made like it, plus the positions),
    so a compiled function has them only as the kernel runs, or (``mask``) are the rows where its first column
    is at least its first element, each updated by its first row."""
    x, z, ufunc = xs[0], np.copy(xs[0]), getattr(np, p["ufunc"])
    if p.get("mask"):
        first = (slice(None),) + (0,) * (x.ndim - 1)
        ufunc.at(z, x[first] >= x[(0,) * x.ndim], *([] if ufunc.nin == 1 else [x[0]]))
        return z
    indices = np.asarray(p["indices"], dtype=np.intp)
    if traced_positions:
        indices = np.zeros_like(x, dtype=np.intp, shape=indices.shape) + indices
    ufunc.at(z, indices, *([] if ufunc.nin == 1 else [x[np.asarray(p["source"], dtype=np.intp)]]))
    return z


# unbuffered, so a position indexed twice combines twice, in order: bit for bit
_single("at", _at_call, _at_params, "np.ufunc.at", min_rank=1, family="scan")


_single("at.traced_positions", lambda xs, p: _at_call(xs, p, traced_positions=True), _at_traced_params,
        "np.ufunc.at", min_rank=1, family="scan")


# ufuncs whose values are their library's, through ufunc.at: NumPy calls its loop once per update at stride 0
# (its power takes its fast paths so), and on the CPU the kernel calls that loop so: bit for bit there
_AT_LIBRARY = ("exp", "tanh", "log1p", "sin", "power", "arctan2", "hypot")


def _at_library_params(c: Chooser, shape) -> dict | None:
    p = _at_params(c, shape)
    return p and dict(p, ufunc=c.pick(_AT_LIBRARY), positions=c.pick(("constant", "traced", "mask")))


_single("at.library", lambda xs, p: _at_call(xs, dict(p, mask=p["positions"] == "mask"),
                                             traced_positions=p["positions"] == "traced"),
        _at_library_params, "np.ufunc.at", dtypes=FLOATS, min_rank=1, family="scan", tolerance=TRANSCENDENTAL,
        numpy_loop=True)


def _setitem_traced_params(c: Chooser, shape) -> dict | None:
    if not shape:
        return None  # (the positions index axis 0)
    n, last = shape[0], shape[-1]
    count = c.integer(0, 6) if n and last else 0
    return {"form": c.pick(("rows", "rows", "pair", "put", "put_along_axis", "reread", "inner_mask", "inner_update",
                            "integer_mask")),
            "indices": [c.integer(-n, n - 1) for _ in range(count)],
            "last": [c.integer(-last, last - 1) for _ in range(count)],
            "mode": c.pick(("raise", "wrap", "clip")), "value": c.pick(("element", "rows"))}


def _setitem_traced(xs, p):
    """Item assignment into a fresh copy of the operand at positions computed from it (zeros made like it, plus
    the positions: a compiled function has them only as the kernel runs), repeats and negative ones included:
    z[i] = v, z[i, j] = v, np.put(z, i, v, mode), np.put_along_axis at np.argmax, z[i] = z[i][::-1], and
    z[..., mask] = v, z[:, mask] -= v and z[0, ..., mask] = f(z[0, ..., mask]) through a mask computed from it."""
    x = xs[0]
    z = np.copy(x)

    def traced(values):
        return np.zeros_like(x, dtype=np.intp, shape=(len(values),)) + np.asarray(values, dtype=np.intp)
    i, element = traced(p["indices"]), x[(0,) * x.ndim]
    rows = x[np.asarray(p["indices"], dtype=np.intp)][::-1]  # (the value per assigned row, in another order)
    if p["form"] == "rows":
        z[i] = element if p["value"] == "element" else rows
    elif p["form"] == "pair":
        z[(i,) + (slice(None),) * (x.ndim - 2) + (traced(p["last"]),) if x.ndim > 1 else i] = element
    elif p["form"] == "put":
        np.put(z, i, element if p["value"] == "element" else np.ravel(rows), mode=p["mode"])
    elif p["form"] == "put_along_axis":
        np.put_along_axis(z, np.argmax(z, axis=0, keepdims=True), element, axis=0)
    elif p["form"] == "inner_mask":  # a mask computed from x over the last axis, after an ellipsis
        z[..., x[(0,) * (x.ndim - 1)] >= element] = x[..., :1] * 2 if p["value"] == "rows" else element
    elif p["form"] == "inner_update":  # read, updated and written back through one key
        key = (slice(None), x[(0,) * (x.ndim - 2) + (slice(None), 0)] < element) if x.ndim > 1 else (x < element,)
        z[key] -= element
    elif p["form"] == "integer_mask":  # an integer beside the mask, an ellipsis between (NumPy: the selection first)
        key = (0, Ellipsis, x[(0,) * (x.ndim - 1)] >= element) if x.ndim > 1 else (x >= element,)
        z[key] = z[key] * 2 + element
    else:
        z[i] = z[i][::-1]
    return z


# each element takes the last value assigned to it: bit for bit
_single("setitem.traced_positions", _setitem_traced, _setitem_traced_params,
        "x[i] = v, np.put, np.put_along_axis, x[..., mask] = v, x[0, ..., mask] = v",
        min_rank=1, family="index")


_NORM_ORDERS = {"inf": np.inf, "-inf": -np.inf}


def _norm_params(c: Chooser, shape) -> dict | None:
    """The default norm of everything, a vector norm along one axis (any order NumPy has for
    vectors), or a matrix norm over two axes (the orders that need no singular values)."""
    nd = len(shape)
    if nd == 0:
        return None
    form = c.pick(("all", "vector", "vector", "matrix")) if nd >= 2 else c.pick(("all", "vector"))
    keepdims = c.pick((False, True))
    if form == "all":
        return {"ord": None, "axis": None, "keepdims": keepdims}
    if form == "vector":
        return {"ord": c.pick((None, 2, 1, "inf", "-inf", 0, 3, 0.5, -1.5)), "axis": c.integer(-nd, nd - 1),
                "keepdims": keepdims}
    row = c.integer(0, nd - 1)
    col = c.pick([a for a in range(nd) if a != row])
    return {"ord": c.pick((None, "fro", 1, -1, "inf", "-inf")), "axis": [row, col - nd * c.pick((0, 1))],
            "keepdims": keepdims}


def _norm(xs, p):
    axis = tuple(p["axis"]) if isinstance(p["axis"], list) else p["axis"]
    return np.linalg.norm(xs[0], ord=_NORM_ORDERS.get(p["ord"], p["ord"]), axis=axis, keepdims=p["keepdims"])


def _norm_scale(xs, p):
    return np.abs(_norm([np.abs(_as_float(xs[0]))], p)) * math.sqrt(max(np.size(xs[0]), 1))


_single("linalg.norm", _norm, _norm_params, "np.linalg.norm", min_rank=1, family="norm", domains=(MODERATE,),
        tolerance=REDUCTION, exact=False, scale=_norm_scale)


def _vector_norm_params(c, shape):
    axis = pick_axis(c, len(shape))
    return {"axis": axis, "keepdims": c.pick((False, True)),
            "ord": c.pick((2, 2, 1, "inf", "-inf", 0, 3, -1, -2)) if shape else 2}


def _vector_norm(xs, p):
    order = _NORM_ORDERS.get(p["ord"], p["ord"])
    return np.linalg.vector_norm(xs[0], axis=_axis(p), keepdims=p["keepdims"], ord=order)


def _vector_norm_scale(xs, p):
    return np.abs(_vector_norm([np.abs(_as_float(xs[0]))], p)) * math.sqrt(max(np.size(xs[0]), 1))


_single("linalg.vector_norm", _vector_norm, _vector_norm_params, "np.linalg.vector_norm", family="norm",
        domains=(MODERATE,), tolerance=REDUCTION, exact=False, scale=_vector_norm_scale)
_single("linalg.matrix_norm", lambda xs, p: np.linalg.matrix_norm(xs[0], keepdims=p["keepdims"],
                                                                   ord=_NORM_ORDERS.get(p["ord"], p["ord"])),
        lambda c, s: {"keepdims": c.pick((False, True)), "ord": c.pick(("fro", 1, -1, "inf", "-inf"))} if len(s) >= 2 else None,
        "np.linalg.matrix_norm", min_rank=2, family="norm", domains=(MODERATE,), tolerance=REDUCTION, exact=False,
        scale=lambda xs, p: np.abs(np.linalg.matrix_norm(np.abs(_as_float(xs[0])), ord=_NORM_ORDERS.get(p["ord"], p["ord"]),
                                                         keepdims=p["keepdims"])) * math.sqrt(max(np.size(xs[0]), 1)))


def _cumulative_params(c, shape):
    axis = c.integer(-len(shape), len(shape) - 1) if len(shape) > 1 else c.pick((None, 0, -1))
    return {"axis": axis, "include_initial": c.pick((False, True)), "dtype": _scan_params(c, shape)["dtype"]}


_single("cumulative_sum", lambda xs, p: np.cumulative_sum(xs[0], axis=p["axis"], dtype=_acc(p),
                                                          include_initial=p["include_initial"]),
        _cumulative_params, "np.cumulative_sum", family="scan", domains=(MODERATE,))
_single("cumulative_prod", lambda xs, p: np.cumulative_prod(xs[0], axis=p["axis"], dtype=_acc(p),
                                                            include_initial=p["include_initial"]),
        _cumulative_params, "np.cumulative_prod", family="scan", domains=(PROD_DOMAIN,))
_single("matrix_transpose", lambda xs, p: np.matrix_transpose(xs[0]), lambda c, s: {} if len(s) >= 2 else None,
        "np.matrix_transpose", min_rank=2)
def _unstack_params(c, shape):
    if not shape:
        return None
    axis = c.integer(-len(shape), len(shape) - 1)
    return {"axis": axis} if shape[axis] else None  # nothing to return along an empty axis


_single("unstack", lambda xs, p: np.unstack(xs[0], axis=p["axis"]), _unstack_params, "np.unstack", min_rank=1,
        max_rank=3, family="split")


def _trapezoid_params(c, shape):
    if not shape:
        return None
    axis = c.integer(-len(shape), len(shape) - 1)
    return {"axis": axis, "dx": c.pick((1.0, 0.5, 2)), "x": c.pick((None, "sorted"))}


def _trapezoid(xs, p):
    y = xs[0]
    n = np.shape(y)[p["axis"]]
    x = None if p["x"] is None else np.cumsum(np.linspace(0.25, 1.5, n))  # increasing sample points
    return np.trapezoid(y, x, dx=p["dx"], axis=p["axis"])


def _trapezoid_scale(xs, p):
    a = np.abs(_as_float(xs[0]))
    return np.sum(a, axis=p["axis"]) * 2 * max(p["dx"], 1.5) * math.sqrt(max(np.shape(a)[p["axis"]], 1))


_single("trapezoid", _trapezoid, _trapezoid_params, "np.trapezoid", min_rank=1, max_rank=3, family="norm",
        domains=(MODERATE,), tolerance=REDUCTION, exact=False, scale=_trapezoid_scale)


def _arg_params(c, shape):
    return {"axis": pick_axis(c, len(shape), allow_tuple=False), "keepdims": c.pick((False, True))}


# first occurrence wins, and the first NaN: ANY draws ties, infinities and NaN
_single("argmax", lambda xs, p: np.argmax(xs[0], axis=p["axis"], keepdims=p["keepdims"]), _arg_params, "np.argmax",
        min_rank=1, family="arg")
_single("argmin", lambda xs, p: np.argmin(xs[0], axis=p["axis"], keepdims=p["keepdims"]), _arg_params, "np.argmin",
        min_rank=1, family="arg")
_single("method.argmax", lambda xs, p: xs[0].argmax(axis=p["axis"], keepdims=p["keepdims"]), _arg_params, "x.argmax",
        min_rank=1, family="arg")


def _reshape_params(c, shape):
    return {"shape": random_reshape(c, shape), "order": c.pick(("C", "C", "F", "A"))}


# the order elements are read (and written) in: C's, Fortran's, or Fortran's for a Fortran-contiguous array ("A")
_single("reshape", lambda xs, p: np.reshape(xs[0], tuple(p["shape"]), order=p.get("order", "C")), _reshape_params,
        "np.reshape")
_single("method.reshape", lambda xs, p: xs[0].reshape(*p["shape"], order=p.get("order", "C")), _reshape_params,
        "x.reshape")


def _transpose_params(c, shape):
    if not shape:
        return None
    return {"axes": random_permutation(c, len(shape)) if c.pick((0, 1, 1)) else None}


def _opt_axes(p):
    return None if p["axes"] is None else tuple(p["axes"])


_single("transpose", lambda xs, p: np.transpose(xs[0], _opt_axes(p)), _transpose_params, "np.transpose")
_single("method.T", lambda xs, p: xs[0].T, lambda c, s: {}, "x.T")
_single("method.transpose", lambda xs, p: xs[0].transpose(*(p["axes"] or ())), _transpose_params, "x.transpose")


def _swapaxes_params(c, shape):
    if not shape:
        return None
    return {"a": c.integer(-len(shape), len(shape) - 1), "b": c.integer(-len(shape), len(shape) - 1)}


_single("swapaxes", lambda xs, p: np.swapaxes(xs[0], p["a"], p["b"]), _swapaxes_params, "np.swapaxes")


def _nan_to_num_params(c, shape):
    return c.pick(({}, {}, {"nan": c.pick((-1.0, 2.5)), "posinf": c.pick((None, 1e4, 7)), "neginf": c.pick((None, -3))}))


_single("nan_to_num", lambda xs, p: np.nan_to_num(xs[0], **p), _nan_to_num_params, "np.nan_to_num", family="elementwise")


# rearranging: np.flip and np.roll by slices, np.repeat, np.tile and np.pad by gathers of indices
# NumPy computes, np.diff by NumPy's own code


def _flip_params(c, shape):
    nd = len(shape)
    options = [None] + ([c.integer(-nd, nd - 1), [a for a in range(nd) if c.pick((0, 1))]] if nd else [])
    return {"axis": c.pick(options)}


def _roll_params(c, shape):
    nd = len(shape)
    if not nd or c.pick((0, 1)):
        return {"shift": c.integer(-9, 9), "axis": None}
    axes = [c.integer(-nd, nd - 1) for _ in range(c.integer(1, 2))]
    shifts = [c.integer(-9, 9) for _ in axes] if c.pick((0, 1)) else c.integer(-9, 9)
    return {"shift": shifts, "axis": axes if len(axes) > 1 or c.pick((0, 1)) else axes[0]}


def _repeat_params(c, shape):
    nd = len(shape)
    if not nd or c.pick((0, 0, 1)):
        return {"repeats": c.integer(0, 3), "axis": None}
    axis = c.integer(-nd, nd - 1)
    n = shape[axis]
    return {"repeats": c.pick((c.integer(0, 3), [c.integer(0, 3) for _ in range(n)])), "axis": axis}


def _tile_params(c, shape):
    return {"reps": c.pick((c.integer(0, 3), [c.integer(1, 3) for _ in range(c.integer(1, len(shape) + 1))]))}


def _diff_params(c, shape):
    nd = len(shape)
    if not nd:
        return None
    return {"n": c.pick((1, 1, 2, 0)), "axis": c.integer(-nd, nd - 1), "prepend": c.pick((None, None, 0, 1.5))}


def _pad_width(c: Chooser, nd: int):
    return c.pick((c.integer(0, 3), [c.integer(0, 3), c.integer(0, 3)],
                   [[c.integer(0, 3), c.integer(0, 3)] for _ in range(nd)]))


def _pad_params(c, shape):
    """Any mode but 'mean' (its sum's order is NumPy's): constant values, end values, stat lengths (0 included,
    where NumPy's max/min refuse it), reflections of either type; widths up to three times a short axis."""
    nd = len(shape)
    mode = c.pick(("constant", "constant", "edge", "wrap", "reflect", "symmetric", "linear_ramp", "maximum", "minimum",
                   "median"))
    if mode != "constant" and 0 in shape:
        mode = "constant"  # NumPy refuses to extend an empty axis in the other modes
    p = {"pad_width": _pad_width(c, nd), "mode": mode}
    if mode == "constant" and c.pick((0, 1)):
        p["constant_values"] = c.pick((0, -1, 2.5, 7))
    if mode == "linear_ramp" and c.pick((0, 1)):
        p["end_values"] = c.pick((3, -2.5, [1, 9], [[c.integer(-4, 4), c.integer(-4, 4)] for _ in range(nd)]))
    if mode in ("reflect", "symmetric") and c.pick((0, 1)):
        p["reflect_type"] = c.pick(("even", "odd"))
    if mode in ("maximum", "minimum", "median") and c.pick((0, 1)):
        # 0 only where NumPy refuses it (max/min): the median of nothing is NaN, which an integer array cannot hold
        p["stat_length"] = c.pick((c.integer(1, 3), [c.integer(int(mode == "median"), 2), c.integer(1, 4)]))
    return p


def _pad_mean_params(c, shape):
    if 0 in shape:
        return None
    p = {"pad_width": _pad_width(c, len(shape)), "mode": "mean"}
    if c.pick((0, 1)):
        p["stat_length"] = c.pick((c.integer(1, 3), [c.integer(1, 2), c.integer(1, 4)]))
    return p


def _pad_call(xs, p):
    return np.pad(xs[0], p["pad_width"], p["mode"], **{k: v for k, v in p.items() if k not in ("pad_width", "mode")})


def _fft_shift_params(c, shape):
    """Every axis (None), one axis, or a list of axes (negative ones, repeats: NumPy rolls twice)."""
    nd = len(shape)
    if not nd or c.pick((0, 1)):
        return {"axes": None}
    if c.pick((0, 1)):
        return {"axes": c.integer(-nd, nd - 1)}
    return {"axes": [c.integer(-nd, nd - 1) for _ in range(c.integer(1, 3))]}


def _pad_mean_scale(xs, p):
    """The largest magnitude, times the root of the most elements one band's mean sums."""
    a = np.abs(_as_float(xs[0]))
    return (np.max(a) if a.size else 0.0) * math.sqrt(max(np.shape(xs[0]) + (1,)))


_single("flip", lambda xs, p: np.flip(xs[0], tuple(p["axis"]) if isinstance(p["axis"], list) else p["axis"]),
        _flip_params, "np.flip")
_single("fliplr", lambda xs, p: np.fliplr(xs[0]), lambda c, s: {}, "np.fliplr", min_rank=2)
_single("flipud", lambda xs, p: np.flipud(xs[0]), lambda c, s: {}, "np.flipud", min_rank=1)
_single("roll", lambda xs, p: np.roll(xs[0], p["shift"], p["axis"]), _roll_params, "np.roll")
_single("fftshift", lambda xs, p: np.fft.fftshift(xs[0], p["axes"]), _fft_shift_params, "np.fft.fftshift")
_single("ifftshift", lambda xs, p: np.fft.ifftshift(xs[0], p["axes"]), _fft_shift_params, "np.fft.ifftshift")
_single("repeat", lambda xs, p: np.repeat(xs[0], p["repeats"], p["axis"]), _repeat_params, "np.repeat")
_single("method.repeat", lambda xs, p: xs[0].repeat(p["repeats"], p["axis"]), _repeat_params, "x.repeat")
_single("tile", lambda xs, p: np.tile(xs[0], p["reps"]), _tile_params, "np.tile", max_rank=3)
_single("diff", lambda xs, p: np.diff(xs[0], n=p["n"], axis=p["axis"],
                                      **({} if p["prepend"] is None else {"prepend": p["prepend"]})),
        _diff_params, "np.diff", min_rank=1, exact=True)
_single("pad", _pad_call, _pad_params, "np.pad", max_rank=3)
# a band's mean: np.mean's sum in the memory order of the array NumPy pads into (float16 in float32, as NumPy; an
# integer array's mean rounded): bit for bit on the CPU
_single("pad_mean", _pad_call, _pad_mean_params, "np.pad(mode='mean')", max_rank=3,
        domains=(MODERATE,), tolerance=REDUCTION, exact=False, scale=_pad_mean_scale, numpy_order=True)


def _rollaxis_params(c, shape):
    nd = len(shape)
    return {"axis": c.integer(-nd, nd - 1), "start": c.integer(-nd, nd)} if nd else None


def _sliding_window_params(c, shape):
    """Windows along one or two axes (or every axis, axis None), no longer than the axis."""
    nd = len(shape)
    if not nd or 0 in shape:
        return None
    if c.pick((0, 1)):
        return {"window_shape": [c.integer(1, n) for n in shape], "axis": None}
    axis = c.integer(-nd, nd - 1)
    return {"window_shape": c.integer(1, shape[axis]), "axis": axis}


def _ix_params(c, shape):
    """One index list per axis: integers (negative ones too), or a boolean mask of the axis's length."""
    if not shape or 0 in shape:
        return None
    lists = []
    for n in shape:
        if c.pick((0, 0, 1)):
            lists.append([bool(c.pick((0, 1))) for _ in range(n)])
        else:
            lists.append([c.integer(-n, n - 1) for _ in range(c.integer(1, 3))])
    return {"indices": lists}


def _view_params(c, shape):
    """The kind of the dtype to read the bits as, of the operand's itemsize (chosen at call time, when the
    operand's dtype is known; float for 1-byte operands falls back to uint8); bool is never drawn (bytes read as
    bool are refused by the compiler)."""
    return {"kind": c.pick(("i", "u", "f"))}  # not "dtype": that key is a NumPy dtype in every other op's params


_VIEW_TYPES = {("i", 1): "int8", ("u", 1): "uint8", ("f", 2): "float16", ("i", 2): "int16", ("u", 2): "uint16",
               ("f", 4): "float32", ("i", 4): "int32", ("u", 4): "uint32", ("f", 8): "float64", ("i", 8): "int64",
               ("u", 8): "uint64"}


def _view(xs, p):
    x = xs[0]
    target = _VIEW_TYPES.get((p["kind"], x.dtype.itemsize)) or _VIEW_TYPES[("u", x.dtype.itemsize)]
    return x.view(target)


# the same bits as another type of the itemsize (a bitcast): NaN payloads and signed zeros included, bit for bit
_single("view", _view, _view_params, "x.view(dtype)", domains=(ANY,))
def _packbits_params(c, shape):
    nd = len(shape)
    return {"axis": c.integer(-nd, nd - 1) if nd and c.pick((0, 1)) else None, "bitorder": c.pick(("big", "little"))}


def _unpackbits_params(c, shape):
    p = _packbits_params(c, shape)
    n = (int(np.prod(shape)) if p["axis"] is None else shape[p["axis"]]) * 8
    # padding past the bits of an empty array is uninitialized memory in NumPy (zeros otherwise): not drawn
    return {**p, "count": c.pick((None, c.integer(0, n + 9 if n else 0), -c.integer(0, n)))}


# bits in, bits out: sums of distinct powers of two (packbits), shifts and masks (unpackbits), bit for bit
_single("packbits", lambda xs, p: np.packbits(xs[0], **p), _packbits_params, "np.packbits", dtypes=BOOL + INTS,
        max_rank=3)
_single("unpackbits", lambda xs, p: np.unpackbits(xs[0], **p), _unpackbits_params, "np.unpackbits",
        dtypes=(np.dtype(np.uint8),), max_rank=3)
_single("rollaxis", lambda xs, p: np.rollaxis(xs[0], p["axis"], p["start"]), _rollaxis_params, "np.rollaxis")
_single("diagflat", lambda xs, p: np.diagflat(xs[0], p["k"]), lambda c, s: {"k": c.integer(-2, 2)}, "np.diagflat",
        max_rank=2)
# a read-only view: each window's elements gathered from the array
_single("sliding_window_view", lambda xs, p: np.lib.stride_tricks.sliding_window_view(xs[0], p["window_shape"],
                                                                                      p["axis"]),
        _sliding_window_params, "np.lib.stride_tricks.sliding_window_view", max_rank=3)
_single("ix_", lambda xs, p: xs[0][np.ix_(*p["indices"])], _ix_params, "np.ix_", max_rank=3, family="index")


def _putmask_params(c, shape):
    return {"threshold": c.pick((-1.0, 0.0, 2.0)), "values": c.pick(([], [7], [1.5, -2], [3, 0, 1], 4))}


def _masked_write(write):
    """np.putmask or np.place where the array exceeds a threshold: they write into their argument, so into
    a copy here, which is the result."""
    def call(xs, p):
        copy = np.copy(xs[0])
        write(copy, copy > p["threshold"], p["values"])
        return copy
    return call


_single("putmask", _masked_write(np.putmask), _putmask_params, "np.putmask", dtypes=NUMERIC, family="index",
        notes="values repeat over the flat positions; NumPy converts a list of them into the array's dtype")


# the k-th selected position takes value k (modulo their count): a running count of the traced mask
_single("place", _masked_write(np.place), _putmask_params, "np.place", dtypes=NUMERIC, family="index",
        notes="no values for a mask that selects something is NumPy's ValueError (checked as the kernel runs)")


def _ravel_multi_index_sample(c: Chooser) -> Call:
    dims = tuple(c.integer(1, 5) for _ in range(c.integer(1, 3)))
    shapes = broadcast_shapes_for(c, len(dims), 0, 2)
    mode = c.pick(("raise", "wrap", "clip", "mixed"))
    if mode == "mixed":
        mode = [c.pick(("raise", "wrap", "clip")) for _ in dims]
    return Call(tuple(shapes), {"dims": list(dims), "mode": mode, "order": c.pick(("C", "F"))})


def _ravel_multi_index(xs, p):
    return np.ravel_multi_index(tuple(xs), tuple(p["dims"]), mode=p["mode"] if isinstance(p["mode"], str)
                                else tuple(p["mode"]), order=p["order"])


# coordinates times strides, summed exactly; 'raise' draws out-of-range coordinates too (NumPy's ValueError)
register(OpInfo("ravel_multi_index", _ravel_multi_index, 3, INTS, "index", _ravel_multi_index_sample,
                domains=(Domain(lo=-3, hi=6),), numpy_name="np.ravel_multi_index",
                notes="arity is the most coordinates a sample has (one per dimension)"))


# ufunc methods: the reductions and accumulations NumPy's own functions are, and outer products
_REDUCING_UFUNCS = {"add": ALL, "multiply": ALL, "maximum": ALL, "minimum": ALL, "fmax": ALL, "fmin": ALL,
                    "logical_and": ALL, "logical_or": ALL}


def _ufunc_reduce_params(c, shape):
    return {"axis": pick_axis(c, len(shape)) if c.pick((0, 1)) else 0, "keepdims": c.pick((False, True))} \
        if shape else {"axis": None, "keepdims": False}


# ufunc.reduce of the other binary ufuncs: NumPy's fold in index order along one axis (every axis: in
# its iterator's order), bit for bit for the ufuncs here (the C library's logaddexp/hypot: within their
# ulps, tested apart); float16 left out, whose subtract/divide reductions keep float32 while a loop runs
_FOLDED = ("subtract", "divide", "floor_divide", "remainder", "fmod", "copysign", "heaviside", "nextafter",
           "bitwise_and", "bitwise_or", "bitwise_xor", "logical_xor", "gcd", "lcm", "equal", "greater", "less_equal")


def _fold_params(c, shape):
    # the start: absent (the identity, else the first element), initial=None (the first element), or a value
    start = c.pick(("absent", "absent", "absent", "none", 2, -1.5))
    if not shape:
        return {"ufunc": c.pick(_FOLDED), "axis": None, "keepdims": False, "initial": start}
    axis = c.pick((None, c.integer(-len(shape), len(shape) - 1), c.integer(0, len(shape) - 1)))
    return {"ufunc": c.pick(_FOLDED), "axis": axis, "keepdims": c.pick((False, True)), "initial": start}


def _fold(xs, p):
    start = p.get("initial", "absent")
    given = {} if start == "absent" else {"initial": None if start == "none" else start}
    return getattr(np, p["ufunc"]).reduce(xs[0], axis=p["axis"], keepdims=p["keepdims"], **given)


_single("fold", _fold, _fold_params, "np.<ufunc>.reduce", dtypes=BOOL + INTS + FLOATS[1:], family="ufunc_method")


# ufunc.reduceat: each segment's first element, then NumPy's reduction loop over the rest along the axis
# (a float add pairwise, within REDUCTION of NumPy's; the C library's logaddexp within its ulps)
_REDUCEAT_UFUNCS = ("add", "add", "multiply", "subtract", "maximum", "minimum", "fmax", "logical_and", "bitwise_or",
                    "logaddexp", "equal", "divide")


def _reduceat_params(c, shape):
    if not shape:
        return None
    axis = c.integer(-len(shape), len(shape) - 1)
    n = shape[axis]
    indices = [c.integer(0, n - 1) for _ in range(c.pick((0, 1, 2, 3, 5)) if n else 0)]
    return {"ufunc": c.pick(_REDUCEAT_UFUNCS), "indices": sorted(indices) if c.pick((0, 1, 1)) else indices,
            "axis": axis, "dtype": c.pick((None, None, None, "float32", "int64")), "computed": c.pick((False, True))}


def _reduceat(xs, p):
    indices = p["indices"]
    if p.get("computed") and xs[0].size:  # the same values, computed from the operand (traced in a compiled call)
        indices = np.zeros_like(xs[0].ravel()[:1], dtype=np.int64) + np.asarray(indices, np.int64)
    return getattr(np, p["ufunc"]).reduceat(xs[0], indices, axis=p["axis"], dtype=_acc(p))


def _reduceat_scale(xs, p):
    """The magnitude of what each segment combines, for add and subtract; products' magnitudes for
    multiply and divide (whose float16 loops run in float32)."""
    a = np.abs(_as_float(xs[0]))
    ufunc = np.multiply if p["ufunc"] in ("multiply", "divide") else np.add
    if p["ufunc"] == "divide":
        a = np.maximum(a, 1 / np.maximum(a, np.finfo(np.float64).tiny))
    with np.errstate(all="ignore"):
        return ufunc.reduceat(a, p["indices"], axis=p["axis"]) * math.sqrt(max(a.shape[p["axis"]], 1)) \
            if p["indices"] else 0.0


_single("reduceat", _reduceat, _reduceat_params, "np.<ufunc>.reduceat", min_rank=1, family="ufunc_method",
        domains=(PROD_DOMAIN,), tolerance=REDUCTION, exact=False, scale=_reduceat_scale)


def _ufunc_reduce_call(name):
    def call(xs, p):
        axis = tuple(p["axis"]) if isinstance(p["axis"], list) else p["axis"]
        return getattr(np, name).reduce(xs[0], axis=axis, keepdims=p["keepdims"])
    return call


def _ufunc_reduce_scale(name, xs, p):
    axis = tuple(p["axis"]) if isinstance(p["axis"], list) else p["axis"]
    params = {"axis": axis, "keepdims": p["keepdims"]}
    return (_sum_scale if name == "add" else _prod_scale)(xs, params)


for _name, _dtypes in _REDUCING_UFUNCS.items():
    _summing = _name in ("add", "multiply")
    _single(f"{_name}.reduce", _ufunc_reduce_call(_name), _ufunc_reduce_params, f"np.{_name}.reduce", dtypes=_dtypes,
            family="reduction" if _summing else "ufunc_method",
            domains=((MODERATE if _name == "add" else PROD_DOMAIN),) if _summing else (ANY,),
            # maximum/minimum.reduce are np.max/np.min, whose zero of a +0.0/-0.0 mix NumPy's SIMD split decides
            tolerance=REDUCTION if _summing else EXACT, exact=not _summing,
            zero_sign=_name not in _C_ZERO_SIGN + ("maximum", "minimum"),
            scale=(lambda xs, p, n=_name: _ufunc_reduce_scale(n, xs, p)) if _summing else None, numpy_order=_summing)


def _axis_params(c, shape):
    return {"axis": c.integer(-len(shape), len(shape) - 1)} if shape else None


_single("add.accumulate", lambda xs, p: np.add.accumulate(xs[0], axis=p["axis"]), _axis_params,
        "np.add.accumulate", min_rank=1, family="scan", domains=(MODERATE,))
_single("multiply.accumulate", lambda xs, p: np.multiply.accumulate(xs[0], axis=p["axis"]), _axis_params,
        "np.multiply.accumulate", min_rank=1, family="scan", domains=(PROD_DOMAIN,))


def _outer_ufunc_sample(c: Chooser) -> Call:
    shapes = tuple(tuple(c.pick(DIMS[:5]) for _ in range(c.integer(0, 2))) for _ in range(2))
    return Call(shapes, params={"ufunc": c.pick(("add", "subtract", "multiply", "maximum", "greater", "logaddexp"))})


register(OpInfo("ufunc.outer", lambda xs, p: getattr(np, p["ufunc"]).outer(xs[0], xs[1]), 2, ALL, "elementwise_outer",
                _outer_ufunc_sample, tolerance=TRANSCENDENTAL, exact=False, numpy_name="np.<ufunc>.outer"))
_single("method.swapaxes", lambda xs, p: xs[0].swapaxes(p["a"], p["b"]), _swapaxes_params, "x.swapaxes")
def _ravel_params(c, shape):
    """The order elements are read in ("K": as they lie in memory, a reversed axis still forwards)."""
    return {"order": c.pick(("C", "C", "F", "A", "K"))}


_single("ravel", lambda xs, p: np.ravel(xs[0], p.get("order", "C")), _ravel_params, "np.ravel")
_single("method.ravel", lambda xs, p: xs[0].ravel(p.get("order", "C")), _ravel_params, "x.ravel")
_single("method.flatten", lambda xs, p: xs[0].flatten(p.get("order", "C")), _ravel_params, "x.flatten")


def _expand_dims_params(c, shape):
    if len(shape) > 4:
        return None
    return {"axis": c.integer(-len(shape) - 1, len(shape))}


_single("expand_dims", lambda xs, p: np.expand_dims(xs[0], p["axis"]), _expand_dims_params, "np.expand_dims",
        max_rank=3)


def _squeeze_params(c, shape):
    ones = [i for i, d in enumerate(shape) if d == 1]
    return {"axis": None if not ones or c.pick((0, 1)) else c.pick(ones)}


def _squeeze_sample(c):
    shape = tuple(c.pick((1, 1, 2, 3)) for _ in range(c.integer(1, 4)))
    return Call((shape,), _squeeze_params(c, shape))


register(OpInfo("squeeze", lambda xs, p: np.squeeze(xs[0], axis=p["axis"]), 1, ALL, "shape", _squeeze_sample,
                numpy_name="np.squeeze", params_for=_squeeze_params))
register(OpInfo("method.squeeze", lambda xs, p: xs[0].squeeze(axis=p["axis"]), 1, ALL, "shape", _squeeze_sample,
                numpy_name="x.squeeze", params_for=_squeeze_params))


def _broadcast_to_params(c, shape):
    if len(shape) > 3:
        return None
    target = [d if d != 1 else c.pick((1, 2, 3)) for d in shape]
    target = [c.pick((1, 2, 3)) for _ in range(c.integer(0, 4 - len(shape)))] + target
    return {"shape": tuple(target)}


_single("broadcast_to", lambda xs, p: np.broadcast_to(xs[0], tuple(p["shape"])), _broadcast_to_params,
        "np.broadcast_to", max_rank=3)


def _split_params(c, shape):
    if not shape:
        return None
    axis = c.integer(0, len(shape) - 1)
    n = shape[axis]
    if n == 0:
        sections = c.pick((1, 2, [0], [0, 1], [-1, 2]))
    elif c.pick((0, 1)):
        sections = c.pick(_factorizations(n))
    else:
        sections = sorted(c.integer(-n, n + 1) for _ in range(c.integer(1, 3)))
    return {"sections": sections, "axis": axis}


def _split(xs, p):
    sections = p["sections"] if isinstance(p["sections"], int) else list(p["sections"])
    return tuple(np.split(xs[0], sections, axis=p["axis"]))


_single("split", _split, _split_params, "np.split", min_rank=1, max_rank=3, family="split")


def _tri_params(c, shape):
    return {"k": c.integer(-3, 3)} if len(shape) >= 1 else None


# a vector too: NumPy masks it as the rows of a square
_single("triu", lambda xs, p: np.triu(xs[0], k=p["k"]), _tri_params, "np.triu", min_rank=1)
_single("tril", lambda xs, p: np.tril(xs[0], k=p["k"]), _tri_params, "np.tril", min_rank=1)


def _like_params(c, shape):
    return {"dtype": c.pick((None, None, "float32", "int64"))}


_single("ones_like_plus", lambda xs, p: np.ones_like(xs[0], dtype=p["dtype"]) + xs[0], _like_params, "np.ones_like",
        dtypes=NUMERIC, max_rank=3, family="creation", notes="added to its operand so the result depends on an argument")
_single("zeros_like_plus", lambda xs, p: np.zeros_like(xs[0], dtype=p["dtype"]) + xs[0], _like_params,
        "np.zeros_like", dtypes=NUMERIC, max_rank=3, family="creation")
_single("full_like_plus", lambda xs, p: np.full_like(xs[0], 3, dtype=p["dtype"]) * xs[0], _like_params,
        "np.full_like", dtypes=NUMERIC, max_rank=3, family="creation")


def _join_shapes(c, count, ndim_lo=1, ndim_hi=3):
    shape = random_shape(c, ndim_lo, ndim_hi)
    axis = c.integer(0, len(shape) - 1)
    shapes = []
    for _ in range(count):
        s = list(shape)
        s[axis] = c.pick(DIMS[:5])
        shapes.append(tuple(s))
    return shapes, axis


def _concat_sample(c):
    count = c.integer(1, 3)
    shapes, axis = _join_shapes(c, count)
    return Call(tuple(shapes), {"axis": axis - len(shapes[0]) if c.pick((0, 1)) else axis})


def _make_join(name, fn, sample, numpy_name):
    # arity is the largest count the sampler draws; the call takes however many it gets
    register(OpInfo(name, fn, 3, ALL, "join", sample, numpy_name=numpy_name))


_make_join("concatenate", lambda xs, p: np.concatenate(list(xs), axis=p["axis"]), _concat_sample, "np.concatenate")


def _hstack_sample(c):
    count = c.integer(1, 3)
    if c.pick((0, 1)):
        return Call(tuple((c.pick(DIMS[:5]),) for _ in range(count)))
    rows = c.pick(DIMS[:5])
    rest = random_shape(c, 0, 1)
    return Call(tuple((rows, c.pick(DIMS[:5])) + rest for _ in range(count)))


def _vstack_sample(c):
    count = c.integer(1, 3)
    if c.pick((0, 1)):
        n = c.pick(DIMS[:5])
        return Call(tuple((n,) for _ in range(count)))
    cols = c.pick(DIMS[:5])
    return Call(tuple((c.pick(DIMS[:5]), cols) for _ in range(count)))


def _stack_sample(c):
    count = c.integer(1, 3)
    shape = random_shape(c, 0, 3)
    return Call(tuple(shape for _ in range(count)), {"axis": c.integer(-len(shape) - 1, len(shape))})


_make_join("hstack", lambda xs, p: np.hstack(list(xs)), _hstack_sample, "np.hstack")
_make_join("vstack", lambda xs, p: np.vstack(list(xs)), _vstack_sample, "np.vstack")
_make_join("stack", lambda xs, p: np.stack(list(xs), axis=p["axis"]), _stack_sample, "np.stack")


# NumPy's functions restated on traced arrays (compiler/numpy_api.py): moving axes, at-least-n-d views,
# column and depth stacking, diagonals, trace (a contraction: the sum of a diagonal), diag, take_along_axis,
# ptp, count_nonzero


def _moveaxis_params(c, shape):
    if not shape:
        return None
    count = c.integer(1, len(shape))
    source = [c.integer(0, len(shape) - 1)]
    destination = [c.integer(-len(shape), len(shape) - 1)]
    if count > 1 and c.pick((0, 1)):  # tuples of distinct axes
        source = sorted(set(c.integer(0, len(shape) - 1) for _ in range(count)))
        destination = [c.integer(0, len(shape) - 1) for _ in source]
        if len(set(destination)) != len(destination):
            destination = list(range(len(source)))[::-1]
    return {"source": source, "destination": destination}


def _one_or_tuple(v):
    return v[0] if len(v) == 1 else tuple(v)


_single("moveaxis", lambda xs, p: np.moveaxis(xs[0], _one_or_tuple(p["source"]), _one_or_tuple(p["destination"])),
        _moveaxis_params, "np.moveaxis", min_rank=1)
for _nd in (1, 2, 3):
    _single(f"atleast_{_nd}d", (lambda f: lambda xs, p: f(xs[0]))(getattr(np, f"atleast_{_nd}d")), lambda c, s: {},
            f"np.atleast_{_nd}d")


def _column_stack_sample(c):
    rows = c.pick(DIMS[:5])
    shapes = [c.pick(((rows,), (rows, c.pick(DIMS[:5])), (rows, c.pick(DIMS[:4]), 2))) for _ in range(c.integer(1, 3))]
    if rows == 1 and c.pick((0, 1)):
        shapes[0] = ()  # a 0-d operand is one row of one column
    return Call(tuple(shapes))


def _dstack_sample(c):
    if c.pick((0, 1)):  # 1-d operands are one row each: (1, n, 1)
        n = c.pick(DIMS[:5])
        return Call(tuple((n,) for _ in range(c.integer(1, 3))))
    a, b = c.pick(DIMS[:5]), c.pick(DIMS[:5])
    return Call(tuple(c.pick(((a, b), (a, b, c.pick(DIMS[:4])))) for _ in range(c.integer(1, 3))))


_make_join("column_stack", lambda xs, p: np.column_stack(list(xs)), _column_stack_sample, "np.column_stack")
_make_join("dstack", lambda xs, p: np.dstack(list(xs)), _dstack_sample, "np.dstack")


def _diagonal_params(c, shape):
    if len(shape) < 2:
        return None
    axis1 = c.integer(0, len(shape) - 1)
    axis2 = c.pick([a for a in range(len(shape)) if a != axis1])
    if c.pick((0, 1)):
        axis2 -= len(shape)
    return {"offset": c.integer(-3, 3), "axis1": axis1, "axis2": axis2}


def _trace_params(c, shape):
    diagonal = _diagonal_params(c, shape)
    return None if diagonal is None else {**diagonal, **_acc_dtype(c, shape)}


def _trace_scale(xs, p):
    diagonal = np.abs(_as_float(np.diagonal(xs[0], p["offset"], p["axis1"], p["axis2"])))
    return np.sum(diagonal, axis=-1) * math.sqrt(max(diagonal.shape[-1], 1))


_single("diagonal", lambda xs, p: np.diagonal(xs[0], p["offset"], p["axis1"], p["axis2"]), _diagonal_params,
        "np.diagonal", min_rank=2)
_single("method.diagonal", lambda xs, p: xs[0].diagonal(p["offset"], p["axis1"], p["axis2"]), _diagonal_params,
        "x.diagonal", min_rank=2)
_single("trace", lambda xs, p: np.trace(xs[0], p["offset"], p["axis1"], p["axis2"], dtype=_acc(p)), _trace_params,
        "np.trace", min_rank=2, family="contraction", domains=(MODERATE,), tolerance=REDUCTION, exact=False,
        scale=_trace_scale, numpy_order=True)
_single("method.trace", lambda xs, p: xs[0].trace(p["offset"], p["axis1"], p["axis2"], dtype=_acc(p)), _trace_params,
        "x.trace", min_rank=2, family="contraction", domains=(MODERATE,), tolerance=REDUCTION, exact=False,
        scale=_trace_scale, numpy_order=True)
_single("diag", lambda xs, p: np.diag(xs[0], p["k"]), lambda c, s: {"k": c.integer(-3, 3)} if len(s) in (1, 2) else None,
        "np.diag",
        min_rank=1, max_rank=2)


def _take_along_axis_params(c, shape):
    """A constant index array of the operand's rank: any length along ``axis`` (indices in range,
    negative ones included), 1 or the operand's length along the others (broadcast)."""
    if not shape:
        return None
    axis = c.integer(0, len(shape) - 1)
    n = shape[axis]
    idx_shape = tuple((c.integer(1, 4) if n else 0) if d == axis else c.pick((1, size)) for d, size in enumerate(shape))
    count = int(np.prod(idx_shape, dtype=np.int64))
    indices = np.array([c.integer(-n, n - 1) for _ in range(count)], dtype=np.int64).reshape(idx_shape)
    return {"indices": indices.tolist(), "shape": list(idx_shape), "axis": c.pick((axis, axis - len(shape)))}


def _along_argmax_params(c, shape):
    if not shape or 0 in shape:  # argmax of an empty axis raises
        return None
    return {"axis": c.integer(-len(shape), len(shape) - 1), "arg": c.pick(("argmax", "argmin"))}


_single("take_along_axis", lambda xs, p: np.take_along_axis(
            xs[0], np.asarray(p["indices"], dtype=np.int64).reshape(p["shape"]), axis=p["axis"]),
        _take_along_axis_params, "np.take_along_axis", min_rank=1, max_rank=3, family="index")


def _put_along_axis(xs, p):
    """A fresh array updated by np.put_along_axis with the operand's negated values gathered at the same
    indices (a repeated index: NumPy's last write wins)."""
    indices = np.asarray(p["indices"], dtype=np.int64).reshape(p["shape"])
    y = xs[0] * 1
    np.put_along_axis(y, indices, -np.take_along_axis(xs[0], indices, axis=p["axis"]), axis=p["axis"])
    return y


_single("put_along_axis", _put_along_axis, _take_along_axis_params, "np.put_along_axis", dtypes=NUMERIC,
        min_rank=1, max_rank=3, family="index")
# indices computed in the kernel: each row's own extremum, gathered back (NumPy's usual pairing)
_single("take_along_axis.computed", lambda xs, p: np.take_along_axis(
            xs[0], getattr(np, p["arg"])(xs[0], axis=p["axis"], keepdims=True), axis=p["axis"]),
        _along_argmax_params, "np.take_along_axis(x, np.argmax(x, axis, keepdims=True), axis)", min_rank=1,
        max_rank=3, family="index")


def _sort_params(c, shape):
    axis = c.pick((None, -1, -1, 0, c.integer(-len(shape), len(shape) - 1))) if shape else None
    return {"axis": axis, "kind": c.pick((None, "stable", "quicksort", "heapsort", "mergesort"))}


def _argsort_params(c, shape):
    return {"axis": _sort_params(c, shape)["axis"], "kind": c.pick(("stable", "mergesort"))}


# values: NumPy's result whatever its algorithm, but for the order of +0.0 and -0.0, which it need not keep
# (family "sort": signs of zeros not compared); indices: the stable kinds only (ties in index order)
_single("sort", lambda xs, p: np.sort(xs[0], axis=p["axis"], kind=p["kind"]), _sort_params, "np.sort", min_rank=1,
        max_rank=3, family="sort")
_single("argsort", lambda xs, p: np.argsort(xs[0], axis=p["axis"], kind=p["kind"]), _argsort_params, "np.argsort",
        max_rank=3, family="sort")
_single("method.argsort", lambda xs, p: xs[0].argsort(axis=p["axis"], kind=p["kind"]), _argsort_params, "x.argsort",
        max_rank=3, family="sort")


def _searchsorted_sample(c: Chooser) -> Call:
    return Call(((c.pick(DIMS),), random_shape(c, 0, 3)),
                params={"side": c.pick(("left", "right")), "sorter": c.pick((False, True))})


def _searchsorted(xs, p):
    """The array sorted first (NumPy's result for an unsorted one is its binary search's, undefined): by
    np.sort, or given a stable np.argsort as the sorter."""
    a, v = xs
    if p["sorter"]:
        return np.searchsorted(a, v, side=p["side"], sorter=np.argsort(a, kind="stable"))
    return np.searchsorted(np.sort(a), v, side=p["side"])


register(OpInfo("searchsorted", _searchsorted, 2, ALL, "sort", _searchsorted_sample, numpy_name="np.searchsorted",
                notes="operand 0 sorted first (np.sort, or np.argsort as the sorter); compared in NumPy's common dtype"))


def _interp_sample(c: Chooser) -> Call:
    n = c.pick((1, 2, 3, 5, 8))
    return Call((random_shape(c, 0, 3), (n,), (n,)),
                params={"period": c.pick((None, None, 2.5, -1.0, 360)), "left": c.pick((None, -3.5)),
                        "right": c.pick((None, 7.0))})


def _interp(xs, p):
    """Sample points made strictly increasing from operand 1 (NumPy's search is undefined for ties, and its
    default argsort orders equal points modulo a period its own way); with a period, all inside one."""
    x, w, fp = xs
    points = np.cumsum(np.abs(w.astype(np.float64)) + 0.5)  # (np.sum's pairwise order is NumPy's own)
    xp = points - 2.0
    if p["period"] is not None:
        xp = points * (abs(p["period"]) / (points[-1] + 1.0))
    return np.interp(x, xp, fp, left=p["left"], right=p["right"], period=p["period"])


# NumPy's C code restated on float64 arrays: bit for bit
register(OpInfo("interp", _interp, 3, NUMERIC, "index", _interp_sample, domains=(ANY, SMALL, ANY),
                numpy_name="np.interp", notes="operand 1 gives strictly increasing sample points; operand 2 the values"))


def _histogram_params(c, shape):
    if c.pick((False, False, True)):  # the range from the data: min and max, edges computed in the kernel
        return {"bins": c.integer(1, 12), "range": None, "density": c.pick((False, True))}
    if c.pick((False, True)):
        edges = sorted(c.pick((-100.0, -2.5, -1.0, 0.0, 0.0, 0.5, 1.0, 3.0, 1e4)) for _ in range(c.integer(1, 6)))
        return {"bins": edges, "range": None, "density": c.pick((False, True))}
    lo = c.pick((-3.0, -1.0, 0.0, 0.0, 2.0))
    return {"bins": c.integer(1, 12), "range": [lo, lo + c.pick((0.0, 0.5, 1.0, 7.0, 1e3))],
            "density": c.pick((False, True))}


# edges known at trace time (an array of them, or a count and a range): counts exact
_single("histogram", lambda xs, p: np.histogram(xs[0], bins=p["bins"], range=p["range"], density=p["density"]),
        _histogram_params, "np.histogram", max_rank=3, family="sort", dtypes=NUMERIC)


_single("histogram_bin_edges", lambda xs, p: np.histogram_bin_edges(xs[0], bins=p["bins"], range=p["range"]),
        _histogram_params, "np.histogram_bin_edges", max_rank=3, family="sort", dtypes=NUMERIC)


def _histogram_weights_sample(c: Chooser) -> Call:
    shape = random_shape(c, 0, 3, empty=True)
    return Call((shape, shape), _histogram_params(c, shape))


def _histogram_weights(xs, p):
    # a density divides by the weights' total: non-negative weights, so that total does not cancel
    weights = np.abs(xs[1]) if p["density"] else xs[1]
    return np.histogram(xs[0], bins=p["bins"], range=p["range"], density=p["density"], weights=weights)


# equal bins: np.bincount's float64 sums in order, bit for bit; given edges (and int64/uint64 weights): running
# sums of the weights sorted by value, where NumPy's unstable sort may order ties otherwise
register(OpInfo("histogram_weights", _histogram_weights, 2, NUMERIC, "sort", _histogram_weights_sample,
                domains=(ANY, SMALL), tolerance=REDUCTION, exact=False, numpy_name="np.histogram(weights=)",
                scale=lambda xs, p: np.sum(np.abs(_as_float(xs[1]))) * math.sqrt(max(np.size(xs[1]), 1)),
                notes="operand 1 gives the weights"))


def _logspace_sample(c: Chooser) -> Call:
    call = _linspace_sample(c)
    return Call(call.shapes, {**call.params, "dtype": c.pick((None, None, "float32")), "base": c.pick((10.0, 2.0, 0.5))})


# np.power of the base and NumPy's linspace samples (its own code): pow within a few ulps
register(OpInfo("logspace", lambda xs, p: np.logspace(xs[0], xs[1], p["num"], endpoint=p["endpoint"], base=p["base"],
                                                      dtype=p["dtype"], axis=p["axis"]),
                2, NUMERIC, "creation", _logspace_sample, domains=(Domain(lo=-4.0, hi=4.0, special=False),),
                tolerance=TRANSCENDENTAL, exact=False, scalar_operands=True, numpy_name="np.logspace",
                notes="traced start and stop; no integer dtype (NumPy truncates an inexact power)"))


def _geomspace_sample(c: Chooser) -> Call:
    call = _linspace_sample(c)
    return Call(call.shapes, {**call.params, "dtype": c.pick((None, None, "float32"))})


def _geomspace(xs, p):
    # endpoints away from 0 (NumPy's error there is tested on its own), either sign
    start, stop = (np.where(np.abs(x) < 0.5, 0.5, x) for x in xs)
    return np.geomspace(start, stop, p["num"], endpoint=p["endpoint"], dtype=p["dtype"], axis=p["axis"])


# np.logspace of the endpoints' log10s (pow within a few ulps), the ends set exactly
register(OpInfo("geomspace", _geomspace, 2, NUMERIC, "creation", _geomspace_sample,
                domains=(Domain(lo=-1e4, hi=1e4, special=False),), tolerance=TRANSCENDENTAL, exact=False,
                scalar_operands=True, numpy_name="np.geomspace"))


def _histogramdd_sample(c: Chooser) -> Call:
    """N samples of D <= 3 dimensions; per dimension a count (over a range, or the data's) or edges."""
    n, d = c.pick((0, 1, 5, 9, 20)), c.integer(1, 3)
    bins, ranges = [], []
    for _ in range(d):
        kind = c.pick(("count", "count", "edges"))
        if kind == "edges":
            bins.append(sorted(c.pick((-100.0, -2.5, -1.0, 0.0, 0.0, 0.5, 1.0, 3.0)) for _ in range(c.integer(2, 5))))
            ranges.append(None)
        else:
            bins.append(c.integer(1, 5))
            lo = c.pick((-3.0, 0.0, 1.0))
            ranges.append(None if c.pick((0, 1)) else [lo, lo + c.pick((0.0, 0.5, 4.0))])
    return Call(((n, d), (n,)), {"bins": bins, "range": ranges, "density": c.pick((False, True)),
                                 "weighted": c.pick((False, True))})


def _histogramdd(xs, p):
    # a density divides by the total: non-negative weights, so it does not cancel
    weights = (np.abs(xs[1]) if p["density"] else xs[1]) if p["weighted"] else None
    return np.histogramdd(xs[0], bins=p["bins"], range=p["range"], density=p["density"], weights=weights)


# counts exact (as float64, NumPy's type); weights summed in float64 in the samples' order (np.bincount's);
# a density's total summed in another order than NumPy's
register(OpInfo("histogramdd", _histogramdd, 2, NUMERIC, "sort", _histogramdd_sample, domains=(ANY, SMALL),
                tolerance=REDUCTION, exact=False, numpy_name="np.histogramdd / np.histogram2d",
                scale=lambda xs, p: (np.sum(np.abs(_as_float(xs[1]))) if p["weighted"] else 1.0) *
                math.sqrt(max(np.shape(xs[0])[0], 1)),
                notes="operand 1 gives the weights (used when params.weighted)"))


def _cov_params(c, shape):
    n = shape[-1] if shape else 1
    params = {"kind": c.pick(("cov", "cov", "corrcoef")), "rowvar": c.pick((True, True, False))}
    if params["kind"] == "cov":
        params["ddof"] = c.pick((None, None, 0, 2))
        params["fweights"] = c.pick((None, None, [c.integer(0, 3) for _ in range(n)]))
        params["aweights"] = c.pick((None, None, [c.pick((0.25, 1.0, 3.0)) for _ in range(n)]))
    return params if (params["rowvar"] or len(shape) < 2) else {**params, **(
        {"fweights": None, "aweights": None} if params["kind"] == "cov" else {})}


def _cov(xs, p):
    if p["kind"] == "corrcoef":
        return np.corrcoef(xs[0], rowvar=p["rowvar"])
    return np.cov(xs[0], rowvar=p["rowvar"], ddof=p["ddof"], fweights=p["fweights"], aweights=p["aweights"])


def _cov_scale(xs, p):
    """The magnitude of the products summed, over the normalization (and for corrcoef the deviations)."""
    rows = np.atleast_2d(_as_float(xs[0]))
    rows = rows if p["rowvar"] or rows.shape[0] == 1 else rows.T
    centred = np.abs(rows - rows.mean(axis=1, keepdims=True)) + np.abs(rows)
    products = centred @ centred.T * math.sqrt(max(rows.shape[1], 1))
    if p["kind"] == "corrcoef":
        spread = np.sqrt(np.maximum(np.diag(products), 1e-300))
        return np.squeeze(products / np.outer(spread, spread)) * 4
    return np.squeeze(products) / max(rows.shape[1] - 2, 1) * 4


# NumPy's definitions on traced arrays: the products summed in a matmul (its order, not BLAS's)
_single("cov", _cov, _cov_params, "np.cov/np.corrcoef", min_rank=1, max_rank=2, family="norm", domains=(SMALL,),
        tolerance=_MATMUL_TOL, exact=False, scale=_cov_scale, dtypes=NUMERIC)


def _linspace_sample(c: Chooser) -> Call:
    first = random_shape(c, 0, 2, DIMS[:4]) if c.pick((False, True)) else ()
    other = tuple(1 if c.pick((0, 0, 1)) else d for d in first)[c.integer(0, len(first)):]  # broadcasts to it
    shapes = (first, other) if c.pick((False, True)) else (other, first)
    out_rank = len(first) + 1
    return Call(shapes, params={"num": c.pick((0, 1, 2, 5, 50)), "endpoint": c.pick((True, True, False)),
                                "dtype": c.pick((None, None, "float32", "int16")),
                                "axis": c.integer(-out_rank, out_rank - 1)})


# NumPy's steps on traced endpoints (its type for them, its care for a zero step): bit for bit
register(OpInfo("linspace", lambda xs, p: np.linspace(xs[0], xs[1], p["num"], endpoint=p["endpoint"],
                                                      dtype=p["dtype"], axis=p["axis"]),
                2, NUMERIC, "creation", _linspace_sample, domains=(Domain(lo=-1e4, hi=1e4, special=False),),
                scalar_operands=True, numpy_name="np.linspace",
                notes="traced start and stop; int16 samples floor first (finite endpoints: NumPy's float -> int "
                      "conversion of NaN differs between its loops)"))


def _lexsort_sample(c: Chooser) -> Call:
    shape = random_shape(c, 1, 3)
    return Call((shape, shape), params={"axis": c.integer(-len(shape), len(shape) - 1)})


# stable sorts chained from the first key to the last: NumPy's order (NaNs last, ties by position)
register(OpInfo("lexsort", lambda xs, p: np.lexsort((xs[0], xs[1]), axis=p["axis"]), 2, ALL, "sort", _lexsort_sample,
                numpy_name="np.lexsort", notes="operand 1 is the primary key"))


def _digitize_params(c, shape):
    edges = sorted(c.pick((-2.5, -1.0, 0.0, 0.0, 0.5, 1.0, 3.0, 100.0)) for _ in range(c.integer(0, 5)))
    return {"bins": edges[::-1] if c.pick((False, True)) else edges, "bins_dtype": c.pick(("float64", "int64", "float32")),
            "right": c.pick((False, True))}


# constant bins, increasing or decreasing (repeated edges included)
_single("digitize", lambda xs, p: np.digitize(xs[0], np.array(p["bins"], p["bins_dtype"]), right=p["right"]),
        _digitize_params, "np.digitize", max_rank=3, family="sort", dtypes=NUMERIC)


def _ptp_params(c, shape):
    return {"axis": pick_axis(c, len(shape)), "keepdims": c.pick((False, True))}


# max - min in the array's dtype: integers wrap (uint8 [1, 200] gives 199, int8 [-100, 100] gives -56)
_single("ptp", lambda xs, p: np.ptp(xs[0], axis=_axis(p), keepdims=p["keepdims"]), _ptp_params, "np.ptp",
        dtypes=NUMERIC, min_rank=1, family="reduction")  # bools: NumPy's subtract refuses them
_single("count_nonzero", lambda xs, p: np.count_nonzero(xs[0], axis=_axis(p), keepdims=p["keepdims"]), _ptp_params,
        "np.count_nonzero", family="reduction")
def _quantile_params(c, shape):
    """q a Python number (NumPy's weak q: the array's float type) or a list of them (float64), along no
    axis, one or several; NumPy's own rounding of (n - 1) * q, so bit for bit."""
    one = lambda: c.pick((0.0, 0.25, 0.5, 1.0, 0.1, 0.9, 0.333, 0.999))  # noqa: E731
    q = one() if c.pick((0, 1)) else [one() for _ in range(c.integer(1, 3))]
    methods = list(np.lib._function_base_impl._QuantileMethods)
    return {"q": q, "method": c.pick(["linear"] * len(methods) + methods), **_ptp_params(c, shape)}


def _percentile_params(c, shape):
    p = _quantile_params(c, shape)
    return {**p, "q": [v * 100 for v in p["q"]] if isinstance(p["q"], list) else p["q"] * 100}


_single("quantile", lambda xs, p: np.quantile(xs[0], p["q"], axis=_axis(p), keepdims=p["keepdims"],
                                              method=p.get("method", "linear")), _quantile_params,
        "np.quantile", max_rank=3, family="sort")
_single("percentile", lambda xs, p: np.percentile(xs[0], p["q"], axis=_axis(p), keepdims=p["keepdims"],
                                                  method=p.get("method", "linear")),
        _percentile_params, "np.percentile", max_rank=3, family="sort")
def _weighted_quantile_sample(c: Chooser) -> Call:
    """Weights of the array's shape, or (an axis given) of the reduced axes' in the axis argument's order;
    q a number or a list; NumPy's only weighted method."""
    shape = random_shape(c, 1, 3)
    axis = pick_axis(c, len(shape))
    axes = [] if axis is None else list(axis) if isinstance(axis, (list, tuple)) else [axis]
    w_shape = tuple(shape[a] for a in axes) if axes and c.pick((0, 1)) else shape
    one = lambda: c.pick((0.0, 0.25, 0.5, 1.0, 0.1, 0.9, 0.333))  # noqa: E731
    q = one() if c.pick((0, 1)) else [one() for _ in range(c.integer(1, 3))]
    return Call((shape, w_shape), {"q": q, "axis": axis, "keepdims": c.pick((False, True)),
                                   "percentile": bool(c.pick((0, 1)))})


def _weighted_quantile(xs, p):
    f, q = (np.percentile, np.multiply(p["q"], 100).tolist()) if p["percentile"] else (np.quantile, p["q"])
    return f(xs[0], q, axis=_axis(p), keepdims=p["keepdims"], method="inverted_cdf", weights=xs[1])


# the sorted value whose weights' running share first reaches q: a selection, bit for bit (the array has no NaN:
# NumPy returns a slice's NaN as a NumPy scalar where its other results are 0-d arrays)
register(OpInfo("quantile_weights", _weighted_quantile, 2, NUMERIC, "sort", _weighted_quantile_sample,
                domains=(SMALL, NONNEG), numpy_name="np.quantile/np.percentile(weights=)",
                notes="operand 1 gives the weights (negative ones, and a zero or non-finite total, are NumPy's errors)"))


def _average_params(c, shape):
    """No weights (the mean), weights of the array's shape, or of the reduced axes' (a constant of small
    positive integers or halves, so no sum is zero); the divisor returned or not."""
    axis = pick_axis(c, len(shape))
    params = {"axis": axis, "keepdims": c.pick((False, True)), "returned": c.pick((False, True))}
    kind = c.pick(("none", "full", "axes")) if axis is not None else c.pick(("none", "full"))
    if kind != "none":
        axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        w_shape = shape if kind == "full" else tuple(shape[a] for a in axes)
        count = int(np.prod(w_shape, dtype=np.int64))
        params["weights"] = np.array([c.pick((1, 2, 3, 0.5)) for _ in range(count)]).reshape(w_shape).tolist()
    return params


def _average(xs, p):
    weights = p.get("weights")
    return np.average(xs[0], axis=_axis(p), weights=None if weights is None else np.asarray(weights),
                      returned=p.get("returned", False), keepdims=p["keepdims"])


_single("average", _average, _average_params, "np.average", max_rank=3, family="reduction", domains=(MODERATE,),
        tolerance=REDUCTION, exact=False, scale=lambda xs, p: 3 * _sum_scale(xs, p),  # weights are at most 3
        numpy_order=True)
# the mean of the middle one or two sorted values (signs of equal zeros in NumPy's partition order: not compared)
_single("median", lambda xs, p: np.median(xs[0], axis=_axis(p), keepdims=p["keepdims"]), _ptp_params, "np.median",
        max_rank=3, family="sort")


_NAN_ORDER_KINDS = ("nanmedian", "nanquantile", "nanpercentile")


def _nan_order_statistic_sample(c: Chooser) -> Call:
    """np.nanmedian/nanquantile/nanpercentile of an array whose masked elements (operand 1) are NaN
    (whole slices of them included, when the mask broadcasts). One time in eight a row of 600 or more,
    where np.nanmedian takes its other route."""
    shape = (c.pick((1, 2)), c.integer(600, 640)) if c.integer(0, 7) == 0 else random_shape(c, 0, 3, empty=True)
    mask = tuple(1 if c.pick((0, 0, 1)) else d for d in shape)
    kind = c.pick(_NAN_ORDER_KINDS)
    params = _ptp_params(c, shape) if kind == "nanmedian" else \
        (_quantile_params if kind == "nanquantile" else _percentile_params)(c, shape)
    return Call((shape, mask), params={"kind": kind, **params})


def _nan_order_statistic(xs, p):
    x = _with_nans(xs)
    kwargs = {"axis": _axis(p), "keepdims": p["keepdims"]}
    if p["kind"] != "nanmedian":
        q = p["q"]
        if isinstance(q, list) and np.dtype(x.dtype).kind == "f":
            # q an array of the array's type: with a float64 q NumPy's result type depends on the data
            # (float64, or the array's type when its first slice is all NaN: the README's zone)
            q = np.asarray(q, x.dtype)
        kwargs.update(q=q, method=p["method"])
    return getattr(np, p["kind"])(x, **kwargs)


# NumPy's arithmetic on each slice's count of numbers, so bit for bit (signs of equal zeros: not compared)
register(OpInfo("nan_order_statistic", _nan_order_statistic, 2, NUMERIC, "sort", _nan_order_statistic_sample,
                numpy_name="np.nanmedian/nanquantile/nanpercentile",
                notes="operand 1 marks the elements made NaN (float operands)"))


# NumPy's Python-level array functions


def _rot90_params(c, shape):
    nd = len(shape)
    if nd < 2:
        return None
    first = c.integer(-nd, nd - 1)
    second = c.pick([a for a in range(-nd, nd) if (a - first) % nd])
    return {"k": c.integer(-3, 5), "axes": [first, second]}


# flips and a transpose of the operand: a view in NumPy and here
_single("rot90", lambda xs, p: np.rot90(xs[0], p["k"], tuple(p["axes"])), _rot90_params, "np.rot90", min_rank=2,
        max_rank=3)


def _append_sample(c: Chooser) -> Call:
    if c.pick((0, 1)):  # axis None: both flattened
        return Call((random_shape(c, 0, 3), random_shape(c, 0, 2)), {"axis": None})
    shapes, axis = _join_shapes(c, 2)
    return Call(tuple(shapes), {"axis": axis})


register(OpInfo("append", lambda xs, p: np.append(xs[0], xs[1], axis=p["axis"]), 2, ALL, "join", _append_sample,
                numpy_name="np.append"))


def _array_split_params(c, shape):
    if not shape:
        return None
    axis = c.integer(0, len(shape) - 1)
    n = shape[axis]
    sections = c.integer(1, 5) if c.pick((0, 1)) else sorted(c.integer(-n - 1, n + 1) for _ in range(c.integer(0, 3)))
    return {"sections": sections, "axis": axis, "kind": "array_split"}


def _axis_split_params(c, shape):
    """np.hsplit/vsplit/dsplit: sections dividing the axis they split, or split points."""
    kinds = [k for k, least in (("hsplit", 1), ("vsplit", 2), ("dsplit", 3)) if len(shape) >= least]
    if not kinds:
        return None
    kind = c.pick(kinds)
    n = shape[{"hsplit": 1 if len(shape) > 1 else 0, "vsplit": 0, "dsplit": 2}[kind]]
    sections = c.pick(_factorizations(n)) if n and c.pick((0, 1)) else sorted(c.integer(-n, n + 1) for _ in range(2))
    return {"sections": sections, "kind": kind}


def _sections_split(xs, p):
    sections = p["sections"] if isinstance(p["sections"], int) else list(p["sections"])
    if p["kind"] == "array_split":
        return tuple(np.array_split(xs[0], sections, axis=p["axis"]))
    return tuple(getattr(np, p["kind"])(xs[0], sections))


# views of the operand: NumPy's section lengths (the first total % n one longer)
_single("array_split", _sections_split, _array_split_params, "np.array_split", min_rank=1, max_rank=3, family="split")
_single("axis_split", _sections_split, _axis_split_params, "np.hsplit/vsplit/dsplit", min_rank=1, max_rank=3,
        family="split")


def _broadcast_arrays_sample(c: Chooser) -> Call:
    return Call(tuple(broadcast_shapes_for(c, c.integer(1, 3))))


register(OpInfo("broadcast_arrays", lambda xs, p: np.broadcast_arrays(*xs), 3, ALL, "shape",
                _broadcast_arrays_sample, numpy_name="np.broadcast_arrays"))


def _meshgrid_sample(c: Chooser) -> Call:
    count = c.integer(1, 3)
    return Call(tuple(random_shape(c, 0, 2, dims=DIMS[:5]) for _ in range(count)),
                {"indexing": c.pick(("xy", "ij")), "sparse": c.pick((False, True)), "copy": c.pick((True, False))})


register(OpInfo("meshgrid", lambda xs, p: tuple(np.meshgrid(*xs, indexing=p["indexing"], sparse=p["sparse"],
                                                             copy=p["copy"])), 3, ALL, "shape", _meshgrid_sample,
                numpy_name="np.meshgrid", notes="operands of any shape: NumPy flattens each"))


def _ediff1d_params(c, shape):
    end = lambda: c.pick((None, None, 1, -2.5, [0, 3], [1.5]))  # noqa: E731
    return {"to_begin": end(), "to_end": end()}


# the differences in the array's dtype; the ends cast to it (same_kind, else NumPy's TypeError)
_single("ediff1d", lambda xs, p: np.ediff1d(xs[0], to_end=p["to_end"], to_begin=p["to_begin"]), _ediff1d_params,
        "np.ediff1d", dtypes=NUMERIC, max_rank=3)


def _polyval_sample(c: Chooser) -> Call:
    params = {"constant": None if c.pick((0, 1)) else [c.pick((1, -2, 0.5, 3)) for _ in range(c.integer(1, 4))]}
    return Call(((c.integer(1, 4),), random_shape(c, 0, 3)), params)


def _polyval(xs, p):
    return np.polyval(xs[0] if p.get("constant") is None else np.array(p["constant"]), xs[1])


# Horner's scheme in NumPy's order and types (a coefficient is a NumPy scalar: not weak)
register(OpInfo("polyval", _polyval, 2, NUMERIC, "polynomial", _polyval_sample, domains=(MODERATE,),
                numpy_name="np.polyval",
                notes="operand 0 the coefficients (unused when params.constant gives them)"))


def _two_polynomials_sample(c: Chooser) -> Call:
    return Call(((c.integer(1, 5),), (c.integer(1, 5),)))


# coefficient arrays aligned at the constant term (NumPy's own code): one addition per coefficient, bit for bit
register(OpInfo("polyadd", lambda xs, p: np.polyadd(xs[0], xs[1]), 2, NUMERIC, "polynomial", _two_polynomials_sample,
                numpy_name="np.polyadd"))
register(OpInfo("polysub", lambda xs, p: np.polysub(xs[0], xs[1]), 2, NUMERIC, "polynomial", _two_polynomials_sample,
                numpy_name="np.polysub"))


def _leading_nonzero(c):
    """The coefficients with a leading zero made 1: np.polymul strips leading zeros, which changes its
    result's length by the data (the compiler refuses that as the kernel runs)."""
    first = c[:1]
    return np.concatenate([np.where(first == 0, np.ones_like(first), first), c[1:]])


# np.convolve of the two coefficient arrays: sums of products, in the compiler's order
register(OpInfo("polymul", lambda xs, p: np.polymul(_leading_nonzero(xs[0]), _leading_nonzero(xs[1])), 2, ALL,
                "polynomial", _two_polynomials_sample, domains=(SMALL,), tolerance=_MATMUL_TOL, exact=False,
                numpy_name="np.polymul",
                scale=lambda xs, p: np.convolve(np.abs(_as_float(xs[0])), np.abs(_as_float(xs[1])))
                * math.sqrt(max(np.size(xs[0]), np.size(xs[1]))),
                notes="each operand's leading zero is made 1 (a stripped zero would change the result's length)"))


def _polyder_params(c, shape):
    return {"m": c.pick((0, 1, 1, 2, 4))} if len(shape) == 1 else None


def _polyint_params(c, shape):
    if len(shape) != 1:
        return None
    m = c.pick((0, 1, 1, 2, 3))
    return {"m": m, "k": c.pick((None, 2.5, [1.0, -2.0, 0.5][:max(m, 1)] if m != 2 else [3.0, 4.0]))}


# each step a product (derivative) or quotient (integral) per coefficient, in NumPy's types: bit for bit
_single("polyder", lambda xs, p: np.polyder(xs[0], p["m"]), _polyder_params, "np.polyder", dtypes=NUMERIC,
        family="polynomial", domains=(MODERATE,))
_single("polyint", lambda xs, p: np.polyint(xs[0], p["m"], k=p["k"]), _polyint_params, "np.polyint", dtypes=NUMERIC,
        family="polynomial", domains=(MODERATE,))
# the product of (x - root), one np.convolve per root: sums of products in another order than NumPy's (no empty
# roots: NumPy's answer for them is the Python float 1.0, which a compiled function cannot return)
_single("poly", lambda xs, p: np.poly(xs[0]), lambda c, s: {} if len(s) == 1 and 0 < s[0] <= 6 else None, "np.poly",
        dtypes=NUMERIC, family="polynomial", domains=(SMALL,), tolerance=_MATMUL_TOL, exact=False,
        scale=lambda xs, p: np.abs(np.poly(-np.abs(_as_float(xs[0])))) * math.sqrt(max(np.size(xs[0]), 1)))


def _vander_params(c, shape):
    if len(shape) != 1:
        return None
    return {"N": c.pick((None, 0, 1, 2, 4)), "increasing": c.pick((False, True))}


# running products (NumPy's multiply.accumulate) in x's type promoted with int
_single("vander", lambda xs, p: np.vander(xs[0], p["N"], increasing=p["increasing"]), _vander_params, "np.vander",
        dtypes=NUMERIC, min_rank=1, max_rank=1, domains=(MODERATE,))


def _select_sample(c: Chooser) -> Call:
    shapes = broadcast_shapes_for(c, c.integer(1, 3))
    return Call(tuple(shapes), {"default": c.pick((0, 1.5, -3, None))})


def _select(xs, p):
    conditions = [x > 0 if x.dtype.kind != "b" else x for x in xs]
    choices = [-x if x.dtype.kind not in "bu" else x for x in xs]
    kwargs = {} if p["default"] is None else {"default": p["default"]}
    return np.select(conditions, choices, **kwargs)


register(OpInfo("select", _select, 3, ALL, "choice", _select_sample, numpy_name="np.select",
                notes="operand i gives condition i (x > 0) and choice i (-x)"))


# np.piecewise's functions by name (a sample's parameters stay JSON); each defined for every dtype, exact
_PIECES = {"double": lambda v: v * 2, "increment": lambda v: v + 1, "abs": np.abs, "square": np.square,
           "half": lambda v: v / 2}


def _piecewise_params(c: Chooser, shape) -> dict:
    count = c.integer(1, 3)
    thresholds = [c.integer(-3, 3) for _ in range(count)]
    pieces = [c.pick(tuple(_PIECES) + (0.5, 3, True)) for _ in range(count + c.pick((0, 1)))]
    return {"thresholds": thresholds, "pieces": pieces, "one_condition": count == 1 and bool(c.pick((0, 1)))}


def _piecewise(xs, p):
    x = xs[0]
    conditions = [x > t for t in p["thresholds"]]
    functions = [_PIECES[f] if isinstance(f, str) else f for f in p["pieces"]]
    return np.piecewise(x, conditions[0] if p["one_condition"] else conditions, functions)


# later conditions win; each function computed on every element and selected (NumPy: on the selected ones)
_single("piecewise", _piecewise, _piecewise_params, "np.piecewise", family="choice")


def _isin_sample(c: Chooser) -> Call:
    return Call((random_shape(c, 0, 3), random_shape(c, 0, 2)), {"invert": c.pick((False, True)),
                                                                  "kind": c.pick((None, None, "sort"))})


def _isin(xs, p):
    # the test elements hold some of the elements too, so some are found
    tests = np.concatenate([np.ravel(xs[1]), np.ravel(xs[0])[::3]])
    return np.isin(xs[0], tests, invert=p["invert"], kind=p["kind"])


register(OpInfo("isin", _isin, 2, ALL, "membership", _isin_sample, numpy_name="np.isin",
                notes="the test elements are operand 1 and every third element of operand 0"))


def _unravel_index_params(c, shape):
    dims = [c.pick((1, 2, 3, 5)) for _ in range(c.integer(1, 3))]
    return {"dims": dims, "order": c.pick(("C", "F")), "past": c.pick((False, False, False, True))}


def _unravel_index(xs, p):
    size = int(np.prod(p["dims"]))
    return np.unravel_index(np.abs(xs[0]) % (size + p.get("past", False)), tuple(p["dims"]), order=p["order"])


# with params.past, one index in (size + 1) is out of bounds: NumPy's ValueError, checked by the kernel
_single("unravel_index", _unravel_index, _unravel_index_params, "np.unravel_index", dtypes=INTS, max_rank=2,
        family="index")



def _positions_obj(c: Chooser, n: int):
    """An ``obj`` of np.delete/np.insert for an axis of ``n``: an index, a list of them (negatives and
    repeats included), a slice or a boolean mask."""
    kind = c.pick(("int", "list", "slice", "mask")) if n else "list"
    if kind == "int":
        return c.integer(-n, n - 1)
    if kind == "list":
        return [c.integer(-n, n - 1) for _ in range(c.integer(0, 3))] if n else []
    if kind == "slice":
        return {"slice": [c.pick((None, 0, 1, -2)), c.pick((None, n, -1)), c.pick((None, 1, 2, -1))]}
    return [bool(c.pick((0, 1))) for _ in range(n)]


def _decode_obj(obj):
    return slice(*obj["slice"]) if isinstance(obj, dict) else obj


def _delete_params(c, shape):
    axis = c.pick([None] + list(range(len(shape)))) if shape else None
    n = int(np.prod(shape, dtype=np.int64)) if axis is None else shape[axis]
    return {"obj": _positions_obj(c, n), "axis": axis}


# the positions that remain are NumPy's own (np.delete of the operand's flat positions), the kernel gathers
_single("delete", lambda xs, p: np.delete(xs[0], _decode_obj(p["obj"]), axis=p["axis"]), _delete_params, "np.delete",
        max_rank=3)


def _insert_sample(c: Chooser) -> Call:
    shape = random_shape(c, 1, 3)
    axis = c.pick([None] + list(range(len(shape))))
    n = int(np.prod(shape)) if axis is None else shape[axis]
    kind = c.pick(("int", "list"))
    obj = c.integer(-n, n) if kind == "int" else [c.integer(-n, n) for _ in range(c.integer(1, 3))]
    if kind == "int" and axis is not None:  # one block: the values' first axis becomes the axis
        values = (c.pick((1, 2)),) + tuple(d for i, d in enumerate(shape) if i != axis)
        values = values[c.integer(0, len(values) - 1):] if c.pick((0, 1)) else values
    else:
        values = c.pick(((), (1,), (len(obj) if isinstance(obj, list) else 1,)))
    return Call((shape, values), {"obj": obj, "axis": axis})


# NumPy places the values (converted to the array's dtype): positions past the array's own stand for them
register(OpInfo("insert", lambda xs, p: np.insert(xs[0], p["obj"], xs[1], axis=p["axis"]), 2, ALL, "join",
                _insert_sample, numpy_name="np.insert", notes="operand 1 the values"))


def _block_sample(c: Chooser) -> Call:
    """Four blocks of a 2 x 2 layout (extra leading axes sometimes), or a row of 1-d pieces."""
    if c.pick((0, 1)):
        return Call(tuple((c.pick(DIMS[:5]),) for _ in range(c.integer(1, 3))), {"layout": "row"})
    rows, cols = (c.pick(DIMS[:4]), c.pick(DIMS[:4])), (c.pick(DIMS[:4]), c.pick(DIMS[:4]))
    lead = random_shape(c, 0, 1, dims=(1, 2))
    return Call(tuple(lead + (r, k) for r in rows for k in cols), {"layout": "2x2"})


def _block(xs, p):
    return np.block(list(xs) if p["layout"] == "row" else [[xs[0], xs[1]], [xs[2], xs[3]]])


register(OpInfo("block", _block, 4, ALL, "join", _block_sample, numpy_name="np.block"))

def _resize_params(c, shape):
    return {"new_shape": c.pick((c.integer(0, 9), [c.integer(0, 4), c.integer(1, 4)]))}


_single("resize", lambda xs, p: np.resize(xs[0], p["new_shape"]), _resize_params, "np.resize", max_rank=3)


def _compress_params(c, shape):
    axis = c.pick([None] + list(range(len(shape)))) if shape else None
    n = int(np.prod(shape, dtype=np.int64)) if axis is None else shape[axis]
    return {"condition": [bool(c.pick((0, 1))) for _ in range(c.integer(0, n))], "axis": axis}


# a constant condition (a traced one would decide the shape); NumPy's positions, gathered
_single("compress", lambda xs, p: np.compress(p["condition"], xs[0], axis=p["axis"]), _compress_params, "np.compress",
        max_rank=3)


def _choose_sample(c: Chooser) -> Call:
    shapes = broadcast_shapes_for(c, c.integer(2, 4))
    return Call(tuple(shapes), {"mode": c.pick(("raise", "wrap", "clip"))})


def _choose(xs, p):
    # indices -1 to 2 (NaN gives 0): some out of range. Never a huge one: NumPy's 'wrap' adds n until
    # the index is not negative, so the int64 a NaN converts to would take it 2**63 / n steps
    x = xs[0]
    index = (x > 0.5).astype(np.int64) + (x > 2) - (x < -2)
    return np.choose(index, list(xs[1:]), mode=p["mode"])


register(OpInfo("choose", _choose, 4, NUMERIC, "choice", _choose_sample, numpy_name="np.choose",
                notes="operand 0 gives the indices ((x > 0.5) + (x > 2) - (x < -2)); mode 'raise' is NumPy's "
                      "ValueError for one out of range, checked by the kernel"))
# the real parts of real arrays are the arrays themselves, their imaginary parts zeros, their conjugates copies
# (np.conjugate's loop: bool gives int8) or, by the method, the arrays themselves
_single("real_imag", lambda xs, p: (np.real(xs[0]), np.imag(xs[0]), np.conjugate(xs[0]), xs[0].conj(),
                                     np.iscomplex(xs[0]), np.isreal(xs[0])), lambda c, shape: {},
        "np.real/imag/conjugate/iscomplex/isreal, x.conj()",
        max_rank=3)


# --------------------------------------------------------------------------- indexing


def random_basic_index(c: Chooser, shape: tuple) -> list:
    """A JSON-able basic index: ints, slices [lo, hi, step], None and "..." (see ``decode_index``)."""
    key, dims = [], list(shape)
    ellipsis_used = False
    i = 0
    while i < len(dims):
        n = dims[i]
        kind = c.pick(("int", "slice", "slice", "full", "none", "ellipsis", "stop"))
        if kind == "stop":
            break
        if kind == "ellipsis" and not ellipsis_used:
            ellipsis_used = True
            key.append("...")
            break
        if kind == "none":
            key.append(None)
            continue
        if kind == "int":
            key.append(c.integer(-n, n - 1) if n else c.integer(-1, 0))  # into an empty axis: IndexError
        elif kind == "full":
            key.append(["", "", ""])
        else:
            step = c.pick((1, 1, 2, 3, -1, -2))
            lo = c.pick(("", c.integer(-n - 1, n + 1)))
            hi = c.pick(("", c.integer(-n - 1, n + 1)))
            key.append([lo, hi, step])
        i += 1
    return key


def decode_index(key) -> tuple:
    out = []
    for k in key:
        if isinstance(k, dict):  # a constant integer array: {"array": flat values, "shape": [...]}
            out.append(np.array(k["array"], dtype=np.int64).reshape(k["shape"]))
        elif k == "...":
            out.append(Ellipsis)
        elif isinstance(k, list) and len(k) == 3 and not any(isinstance(v, list) for v in k):
            out.append(slice(*(None if v == "" else v for v in k)))
        else:
            out.append(k)
    return tuple(out)


def _getitem_params(c, shape):
    return {"key": random_basic_index(c, shape)} if shape else None


_single("getitem", lambda xs, p: xs[0][decode_index(p["key"])], _getitem_params, "x[...]", min_rank=1, family="index")


def _flat_key(c: Chooser, size: int):
    """A JSON-able key of x.flat (see ``_decode_flat_key``): an integer (now and then out of range), a
    slice, an integer array of one or two dimensions, a boolean mask of x's size, or an ellipsis."""
    kind = c.pick(("int", "int", "slice", "array", "mask", "..."))
    if kind == "int":
        return {"int": c.integer(-size - 1, size)}
    if kind == "slice":
        return {"slice": [c.pick(("", c.integer(-size - 1, size + 1))), c.pick(("", c.integer(-size - 1, size + 1))),
                          c.pick((1, 1, 2, 3, -1, -2))]}
    if kind == "array" and size:
        shape = [c.integer(0, 4) for _ in range(c.integer(1, 2))]
        return {"array": [c.integer(-size, size - 1) for _ in range(math.prod(shape))], "shape": shape}
    if kind == "mask":
        return {"mask": [bool(c.integer(0, 1)) for _ in range(size)]}
    return "..."


def _decode_flat_key(key):
    if key == "...":
        return Ellipsis
    if "int" in key:
        return key["int"]
    if "slice" in key:
        return slice(*(None if v == "" else v for v in key["slice"]))
    if "mask" in key:
        return np.array(key["mask"], dtype=np.bool_)
    return np.array(key["array"], dtype=np.int64).reshape(key["shape"])


def _flat_assigned_value(xs, p):
    return xs[0].ravel()[::-1] if p["values"] == "reversed" else p["values"]


def _flat_assigned(xs, p):
    """A copy of the operand with x.flat[key] assigned (NumPy's flatiter: a short value repeated, the value
    converted unsafely)."""
    y = xs[0].copy()
    y.flat[_decode_flat_key(p["key"])] = _flat_assigned_value(xs, p)
    return y


# x.flat read (a copy, an element a NumPy scalar) and assigned, by NumPy's flatiter rules: bit for bit
_single("flat", lambda xs, p: xs[0].flat[_decode_flat_key(p["key"])],
        lambda c, shape: {"key": _flat_key(c, math.prod(shape))}, "x.flat[...]", family="index")
_single("flat_assign", _flat_assigned,
        lambda c, shape: {"key": _flat_key(c, math.prod(shape)),
                          "values": c.pick(([], [7], [1.5, -2], [3, 0, 1], 4, True, "reversed"))},
        "x.flat[...] = v", family="index")


def _multi_array_params(c, shape):
    """Two or three constant integer arrays (broadcast together) on distinct axes, the other axes
    full or strided slices, integers or nothing, sometimes a new axis: NumPy's advanced indexing,
    adjacent or not."""
    if len(shape) < 2 or 0 in shape:
        return None
    free = list(range(len(shape)))
    axes = sorted(free.pop(c.integer(0, len(free) - 1)) for _ in range(c.integer(2, min(3, len(shape)))))
    shapes = iter(broadcast_shapes_for(c, len(axes), 0, 2))
    key = []
    for axis, n in enumerate(shape):
        if axis in axes:
            s = next(shapes)
            values = [c.integer(-n, n - 1) for _ in range(int(np.prod(s, dtype=np.int64)))]
            key.append({"array": values, "shape": list(s)})
            continue
        kind = c.pick(("full", "full", "int", "slice", "new"))
        if kind == "new":
            key.append(None)
            kind = "full"
        key.append(c.integer(-n, n - 1) if kind == "int" else
                   ["", "", ""] if kind == "full" else ["", "", c.pick((2, -1, -2))])
    return {"key": key}


_single("getitem_arrays", lambda xs, p: xs[0][decode_index(p["key"])], _multi_array_params, "x[idx, ..., idx]",
        min_rank=2, max_rank=4, family="index",
        notes="several constant integer arrays in one index (broadcast together)")


def _setitem_sample(c: Chooser) -> Call:
    """A basic index or one of several constant integer arrays (repeated positions included), and a
    value of a shape that broadcasts to the indexed one (some of its axes, some of them 1)."""
    shape = random_shape(c, 1, 3)
    params = _multi_array_params(c, shape) if c.pick((0, 1)) else None
    params = params or {"key": random_basic_index(c, shape)}
    indexed = np.empty(shape)[decode_index(params["key"])].shape
    value = indexed[c.integer(0, len(indexed)):] if indexed else ()
    value = tuple(1 if c.pick((0, 0, 1)) else d for d in value)
    return Call((shape, value), params)


def _setitem(xs, p):
    y = xs[0] * 1  # a fresh array (an argument is refused: NumPy would write into the caller's)
    y[decode_index(p["key"])] = xs[1]
    return y


# NumPy's indexing and assignment of the flat positions decide what is written (the last write wins)
register(OpInfo("setitem", _setitem, 2, NUMERIC, "index", _setitem_sample, numpy_name="x[...] = v",
                mixed_dtypes=False, notes="operand 1 the value (one dtype: a float NaN or one out of an integer "
                                          "type's range converts to what the machine gives)"))


def _setitem_mask_sample(c: Chooser) -> Call:
    """``x[mask] = v`` with a traced boolean mask over x's first ``axes`` axes: either a comparison of x's
    values (data-dependent count) with a value that broadcasts to every selected element, or a pattern the
    sample fixes (made traced in the call) with one value row per element it selects."""
    shape = random_shape(c, 1, 3, empty=True)
    axes = c.integer(1, len(shape))
    lead, rest = shape[:axes], shape[axes:]
    ones = lambda dims: tuple(1 if c.pick((0, 0, 1)) else d for d in dims)  # noqa: E731
    update = {"op": c.pick((None, "iadd", "isub", "imul", "add", "mul"))}  # y[mask] = v, y[mask] op= v, y[mask] op v
    if c.pick((0, 1)):
        pattern = [bool(c.pick((0, 1))) for _ in range(math.prod(lead))]
        return Call((shape, (sum(pattern),) + ones(rest)), {"axes": axes, "pattern": pattern, **update})
    return Call((shape, ones(rest[c.integer(0, len(rest)):])), {"axes": axes, **update})


def _setitem_mask(xs, p):
    y = xs[0] * 1
    lead = y[(slice(None),) * p["axes"] + (0,) * (y.ndim - p["axes"])]
    if "pattern" in p:
        mask = np.zeros_like(lead, dtype=np.bool_) | np.array(p["pattern"], np.bool_).reshape(lead.shape)
    else:
        mask = lead > 0
    if p.get("op"):  # y[mask] = y[mask] op v, or as Python runs y[mask] op= v: the read, the operator, the write
        selection = getattr(operator, p["op"])(y[mask], xs[1])
        y[mask] = selection
    else:
        y[mask] = xs[1]
    return y


# x where the mask is false; the value (broadcast, or its rows in C order by a running count) where it holds
register(OpInfo("setitem_mask", _setitem_mask, 2, NUMERIC, "index", _setitem_mask_sample,
                numpy_name="x[mask] = v  /  x[mask] op= v  /  x[mask] = x[mask] op v",
                mixed_dtypes=False, notes="operand 1 the value; the mask computed from operand 0 or a fixed pattern"))


def _update_sample(c: Chooser) -> Call:
    """``setitem``'s index and value, an in-place operator, and whether the update goes through a view
    kept in a name (basic indices only) or is an augmented assignment ``y[key] op= v``."""
    call = _setitem_sample(c)
    basic = not any(isinstance(k, dict) for k in call.params["key"])
    through = c.pick(("view", "augmented")) if basic else "augmented"
    return Call(call.shapes, {**call.params, "op": c.pick(("iadd", "isub", "imul")), "through": through})


def _update_through_views(xs, p):
    """A fresh array updated in place through a view (or by ``y[key] op= v``) while a transposed view of
    it lives: every result must show the update as NumPy's shared memory does."""
    y = xs[0] * 1
    key, update = decode_index(p["key"]), getattr(operator, p["op"])
    seen = y.T
    if p["through"] == "view":
        part = y[key]
        part = update(part, xs[1])  # an element is a NumPy scalar: rebound, y unchanged, as in NumPy
        return y, seen, part
    y[key] = update(y[key], xs[1])
    return y, seen


register(OpInfo("update_through_views", _update_through_views, 2, NUMERIC, "index", _update_sample,
                numpy_name="v = x[...]; v += u  /  x[...] += u", mixed_dtypes=False,
                notes="write-through of views: the array, a transposed view of it and the updated part"))


def _copyto_sample(c: Chooser) -> Call:
    """A destination's shape and a source broadcast to it; the mask none, a constant one or one computed
    from the destination's values; the casting rule NumPy checks."""
    shape = random_shape(c, 0, 3)
    src = shape[c.integer(0, len(shape)):] if shape else ()
    src = tuple(1 if c.pick((0, 0, 1)) else d for d in src)
    mask = c.pick(("none", "constant", "computed"))
    params = {"where": mask, "casting": c.pick(("same_kind", "same_kind", "unsafe", "safe"))}
    if mask == "constant":
        params["mask"] = [bool(c.integer(0, 1)) for _ in range(int(np.prod(shape, dtype=np.int64)))]
    return Call((shape, src), params)


def _copyto(xs, p):
    y = xs[0] * 1
    where = (True if p["where"] == "none" else xs[0] > 0 if p["where"] == "computed"
             else np.asarray(p["mask"], dtype=bool).reshape(np.shape(xs[0])))
    np.copyto(y, xs[1], casting=p["casting"], where=where)
    return y


register(OpInfo("copyto", _copyto, 2, NUMERIC, "index", _copyto_sample, numpy_name="np.copyto(dst, src, casting, where)",
                notes="into a fresh copy of operand 0; NumPy's casting check on the two dtypes"))


def _gradient_params(c: Chooser, shape) -> dict | None:
    """np.gradient along some axes (all of them by default), with no spacing, one scalar, or per axis a
    scalar or coordinates (uneven, even, or integer), at either edge order."""
    if not shape:
        return None
    axes = c.pick((None, c.integer(-len(shape), len(shape) - 1), tuple(range(len(shape)))[::-1]))
    count = len(shape) if axes is None else 1 if isinstance(axes, int) else len(axes)
    chosen = list(range(len(shape))) if axes is None else [axes] if isinstance(axes, int) else list(axes)
    kind = c.pick(("none", "scalar", "each"))
    spacing = [] if kind == "none" else [c.pick((2.0, 0.5, 3))] if kind == "scalar" else [
        c.pick((0.25, 2, "uneven", "even", "integer")) for _ in range(count)]
    spacing = [{"coords": s, "n": shape[chosen[i]]} if isinstance(s, str) else s for i, s in enumerate(spacing)]
    return {"axis": list(axes) if isinstance(axes, tuple) else axes, "edge_order": c.pick((1, 2)), "spacing": spacing}


def _gradient_spacing(s):
    if not isinstance(s, dict):
        return s
    n = s["n"]
    if s["coords"] == "uneven":
        return np.cumsum(np.arange(1.0, n + 1) ** 1.5) / 4
    return np.arange(n) * 3 if s["coords"] == "integer" else np.arange(n) * 0.5


def _gradient(xs, p):
    axis = tuple(p["axis"]) if isinstance(p["axis"], list) else p["axis"]
    return np.gradient(xs[0], *[_gradient_spacing(s) for s in p["spacing"]], axis=axis, edge_order=p["edge_order"])


def _ufunc_dtype_sample(c: Chooser) -> Call:
    """A binary ufunc called with ``dtype=`` (its output's type: NumPy picks the loop that gives it and
    converts the operands to the loop's types) and ``casting=`` (which of those conversions are allowed)."""
    call = _binary_sample(c)
    return Call(call.shapes, {"ufunc": c.pick(("add", "subtract", "multiply", "divide", "maximum", "arctan2", "less",
                                               "floor_divide", "power")),
                              "dtype": str(c.pick(ALL)), "casting": c.pick(("same_kind", "same_kind", "unsafe", "safe"))},
                call.scalars)


def _ufunc_dtype(xs, p):
    return getattr(np, p["ufunc"])(xs[0], xs[1], dtype=p["dtype"], casting=p["casting"])


_OUT_REDUCTIONS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum, "any": None, "all": None,
                   "argmax": None, "argmin": None, "nansum": np.add, "nanmax": np.maximum}


def _reduction_out_params(c: Chooser, shape) -> dict:
    return {"fn": c.pick(tuple(_OUT_REDUCTIONS)), "axis": c.pick((None, *range(-len(shape), len(shape)))),
            "keepdims": c.pick((False, True)), "out_dtype": str(c.pick(ALL)), "strided": c.pick((False, True))}


def _reduction_out(xs, p):
    """np.<reduction>(x, axis, out=...) into a fresh array or every other element of a larger one; what it
    returns and the whole array are the results. The out dtype is the one asked for where the loop's values convert to it exactly
    ('safe'), else the loop's own: where they do not, NumPy's iterator may round its running value into
    out's dtype at each step, by its buffering, which the compiler does not reproduce (it converts once)."""
    x, fn = xs[0], p["fn"]
    ufunc = _OUT_REDUCTIONS[fn]
    want = np.dtype(p["out_dtype"])
    if fn in ("argmax", "argmin"):
        dtype = np.dtype(np.intp)
    elif ufunc is None:
        dtype = want
    else:
        loop = np.dtype(ufunc.resolve_dtypes((want, x.dtype, None))[2])
        dtype = want if np.can_cast(loop, want, "safe") else loop
    # the result's shape, by NumPy's own reduction of zeros of x's shape
    shape = np.shape(getattr(np, "argmax" if fn.startswith("arg") else "sum")(
        np.zeros(x.shape, np.int8), axis=p["axis"], keepdims=p["keepdims"]))
    whole = np.zeros_like(x, dtype=dtype, shape=tuple(2 * d for d in shape) if p["strided"] else shape)
    out = whole[tuple(slice(None, None, 2) for _ in shape)] if p["strided"] and shape else whole  # x[()]: a scalar
    result = getattr(np, fn)(x, axis=p["axis"], out=out, keepdims=p["keepdims"])
    return result, whole  # out itself, or for a NumPy scalar x its own method's scalar answer


def _reduction_out_scale(xs, p):
    """One bound for every element (the out array may be larger than the result): the magnitude summed or
    multiplied over the whole array."""
    a = np.abs(_as_float(xs[0]))
    scale = {"sum": np.nansum, "nansum": np.nansum, "prod": lambda v: np.nanprod(np.maximum(v, 1))}.get(p["fn"])
    return 0.0 if scale is None else float(scale(a)) * math.sqrt(max(a.size, 1))


def _ufunc_out_sample(c: Chooser) -> Call:
    """Two operands broadcast together, and how the out array relates to a fresh array of their shape:
    the array itself, a transposed view of it, or every other element of a larger one."""
    shapes = broadcast_shapes_for(c, 2, max_rank=3, empty=False)
    return Call(tuple(shapes), {"ufunc": c.pick(("add", "multiply", "maximum", "arctan2", "hypot", "subtract")),
                                "out": c.pick(("fresh", "transposed", "strided")), "masked": c.pick((False, True))})


def _ufunc_out(xs, p):
    """np.<ufunc>(a, b, out=..., where=a > 0?) into a float64 array's memory; the whole array returned."""
    shape = np.broadcast_shapes(np.shape(xs[0]), np.shape(xs[1]))
    if p["out"] == "fresh":
        whole = np.zeros_like(xs[0], dtype=np.float64, shape=shape)
        out = whole
    elif p["out"] == "transposed":
        whole = np.zeros_like(xs[0], dtype=np.float64, shape=shape[::-1])
        out = whole.T
    else:
        whole = np.zeros_like(xs[0], dtype=np.float64, shape=tuple(2 * d for d in shape))
        out = whole[tuple(slice(None, None, 2) for _ in shape)]
    where = np.broadcast_to(xs[0] > 0, shape) if p["masked"] else True
    getattr(np, p["ufunc"])(xs[0], xs[1], out=out, where=where)
    return whole


_single("reduction_out", _reduction_out, _reduction_out_params, "np.<reduction>(x, axis, out=...)",
        family="reduction_out", max_rank=3, domains=(PROD_DOMAIN,), tolerance=REDUCTION, exact=False,
        scale=_reduction_out_scale, numpy_order=True, zero_sign=False)


# NumPy functions that write their result into out= by code of their own (not a ufunc's or a reduction's loop);
# each called with out=None first for its result's shape and dtype
_FUNCTIONS_INTO_OUT = {
    "round": lambda x, out: np.round(x, 1, out=out),
    "round.negative": lambda x, out: np.round(x, -1, out=out),
    "concatenate": lambda x, out: np.concatenate([x, x[..., :1]], axis=-1, out=out),
    "stack": lambda x, out: np.stack([x, x], axis=0, out=out),
    "dot": lambda x, out: np.dot(x, np.swapaxes(x, -1, -2) if x.ndim > 1 else x, out=out),
    "einsum": lambda x, out: np.einsum("...i->...", x, out=out),
    "ptp": lambda x, out: np.ptp(x, axis=-1, out=out),
    "median": lambda x, out: np.median(x, axis=-1, out=out),
    "accumulate": lambda x, out: np.maximum.accumulate(x, axis=-1, out=out),
    "cumsum": lambda x, out: np.add.accumulate(x, axis=-1, out=out),
    "take": lambda x, out: np.take(x, [0, -1], axis=-1, out=out),
    "outer": lambda x, out: np.outer(x[..., :3], x[..., -2:], out=out),
    "trace": lambda x, out: np.trace(x[..., None] * x[..., None, :], axis1=-2, axis2=-1, out=out),
    "quantile": lambda x, out: np.quantile(x, 0.3, axis=-1, out=out),
    "percentile": lambda x, out: np.percentile(x, [25, 50], axis=-1, method="nearest", out=out),
    "quantile.weighted": lambda x, out: np.quantile(x, [0.5, 0.9], axis=-1, method="inverted_cdf", out=out,
                                                    weights=np.arange(x.shape[-1]) % 3 + 1),
    # (computed as without out, then assigned: out[...] = result)
    "nanmedian": lambda x, out: np.nanmedian(x, axis=-1, out=out),
    "nanquantile": lambda x, out: np.nanquantile(x, 0.7, axis=-1, out=out),
    # (q of the array's float type: with a float64 q NumPy's result type depends on the data, float16 where the
    # first slice is all NaN, as nan_order_statistic notes; a graph's sum can overflow into such a slice: seed 2516)
    "nanpercentile": lambda x, out: np.nanpercentile(
        x, np.asarray([10, 60], x.dtype) if np.dtype(x.dtype).kind == "f" else [10, 60], axis=-1, method="midpoint",
        out=out),
}
# those whose out must be of the result's own dtype (np.dot's exactly; np.take's converting safely to it)
_OWN_DTYPE_OUT = ("dot", "take")


def _function_out_params(c: Chooser, shape) -> dict:
    return {"fn": c.pick(tuple(_FUNCTIONS_INTO_OUT)), "out": c.pick(("fresh", "transposed", "strided")),
            "float64": c.pick((False, True))}


def _function_out(xs, p):
    """np.<function>(x, ..., out=...) into an array of the result's own dtype (np.dot accepts no other) or float64
    (where NumPy converts), fresh, a transposed view or every other element of a larger array; the whole array
    is the result."""
    fn = _FUNCTIONS_INTO_OUT[p["fn"]]
    plain = fn(xs[0], None)  # (traced too: its shape and dtype only)
    # (np.dot takes only its result's dtype, C-contiguous; integers rounded to tens only a float out)
    dtype = np.float64 if (p["float64"] or p["fn"] == "round.negative") and p["fn"] not in _OWN_DTYPE_OUT \
        else plain.dtype
    shape = np.shape(plain)
    if p["out"] == "transposed" and len(shape) > 1 and p["fn"] != "dot":
        whole = np.zeros_like(xs[0], dtype=dtype, shape=shape[::-1])
        out = whole.T
    elif p["out"] == "strided" and shape and p["fn"] != "dot":
        whole = np.zeros_like(xs[0], dtype=dtype, shape=tuple(2 * d for d in shape))
        out = whole[tuple(slice(None, None, 2) for _ in shape)]
    else:
        whole = out = np.zeros_like(xs[0], dtype=dtype, shape=shape)
    fn(xs[0], out)
    return whole


def _array_like_params(c: Chooser, shape) -> dict:
    return {"fn": c.pick(("array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "full")),
            "source": c.pick(("fresh", "transposed", "reversed")), "dtype": c.pick((None, None, "float64", "float32")),
            "order": c.pick(("K", "C", "F", "A")), "copy": c.pick((None, True)), "ndmin": c.integer(0, 3)}


def _array_like(xs, p):
    """A NumPy creation function called with like= the operand (np.asarray(y, like=x): the way code written for
    any array type makes arrays), of a copy of the operand laid out three ways; then 1 written at the result's
    first element, which NumPy's view of the copy sees and its copy does not. Both are the result."""
    y = np.copy(xs[0])
    y = {"fresh": y, "transposed": y.T, "reversed": y[::-1] if y.ndim else y}[p["source"]]
    fn, keywords = getattr(np, p["fn"]), {"dtype": p["dtype"]}
    if p["fn"] in ("array", "asarray", "asanyarray"):
        keywords.update(order=p["order"], copy=p["copy"])
    if p["fn"] == "array":
        keywords["ndmin"] = p["ndmin"]
    # (like= the copy: the operand may be a NumPy scalar, which has no __array_function__)
    r = np.full((2,) + y.shape, y, dtype=p["dtype"], like=y) if p["fn"] == "full" else fn(y, **keywords, like=y)
    if r.ndim and r.size:
        r[(0,) * r.ndim] = 1
    return r, y


# NumPy's own call on a stand-in laid out as the array decides view or copy, and the copy's layout: bit for bit
_single("array_like", _array_like, _array_like_params, "np.asarray/np.array/np.full(..., like=x)",
        domains=(MODERATE,))
_single("function_out", _function_out, _function_out_params, "np.<function>(x, ..., out=...)",
        dtypes=NUMERIC, min_rank=1, max_rank=3, family="reduction_out", domains=(MODERATE,), tolerance=REDUCTION,
        exact=False, scale=lambda xs, p: float(np.sum(np.abs(_as_float(xs[0])))) * math.sqrt(max(xs[0].size, 1)))
def _unwrap_params(c: Chooser, shape) -> dict | None:
    if not shape:
        return None  # NumPy's diff needs an axis
    return {"axis": c.integer(-len(shape), len(shape) - 1), "discont": c.pick((None, 1.0, 4.0)),
            "period": c.pick((2 * math.pi, 2 * math.pi, 360.0, 1.0, 6, 7))}


# exp's few ulps, then Clenshaw's recurrence over NumPy's own Chebyshev coefficients
_single("i0", lambda xs, p: np.i0(xs[0]), lambda c, s: {}, "np.i0", family="elementwise_library",
        domains=(Domain(lo=-700.0, hi=700.0),), tolerance=Tolerance(ulps=32), exact=False)
# integer steps and periods stay integers (NumPy's result_type); the corrections summed in order: bit for bit
_single("unwrap", lambda xs, p: np.unwrap(xs[0], p["discont"], p["axis"], period=p["period"]), _unwrap_params,
        "np.unwrap", dtypes=NUMERIC, min_rank=1, max_rank=3, family="difference", domains=(MODERATE,))
_SLICE_FUNCTIONS = {"sum": np.sum, "cumsum": np.cumsum, "sort": np.sort, "outer": lambda v: np.outer(v, v),
                    "first_above_last": lambda v: v[0] > v[-1] if len(v) else np.False_,
                    "max_plus_half": lambda v: np.max(v) + 0.5 if len(v) else 0.5}


def _apply_along_axis_params(c: Chooser, shape) -> dict | None:
    if not shape:
        return None
    return {"func": c.pick(tuple(_SLICE_FUNCTIONS)), "axis": c.integer(-len(shape), len(shape) - 1),
            "over": c.pick((False, True))}


def _apply_along_axis(xs, p):
    """np.apply_along_axis of one of a few slice functions, or np.apply_over_axes of np.sum over that axis."""
    if p["over"]:
        return np.apply_over_axes(np.sum, xs[0], [p["axis"]])
    return np.apply_along_axis(_SLICE_FUNCTIONS[p["func"]], p["axis"], xs[0])


# each slice's function traced in turn: sums and cumulative sums in NumPy's order of each slice
_single("apply_along_axis", _apply_along_axis, _apply_along_axis_params, "np.apply_along_axis / np.apply_over_axes",
        dtypes=NUMERIC, min_rank=1, max_rank=3, family="per_slice", domains=(MODERATE,), tolerance=REDUCTION,
        exact=False, scale=lambda xs, p: float(np.nansum(np.abs(_as_float(xs[0])))) * math.sqrt(max(np.size(xs[0]), 1)))
def _linalg_sample(c: Chooser) -> Call:
    """A stack of n x n matrices (made diagonally dominant in the call, so far from singular) and a right-hand
    side: a vector, or a stack of n x k matrices broadcast against the first stack."""
    n, batch = c.pick((1, 2, 3, 4, 6)), c.pick(((), (2,), (3, 1)))
    rhs = (n,) if c.pick((False, True)) else c.pick(((), (1,), (3, 2))) + (n, c.pick((1, 3)))
    return Call((batch + (n, n), rhs), {"fn": c.pick(("solve", "inv", "det", "slogdet", "cholesky", "cholesky_upper",
                                                      "matrix_power", "qr", "tensorsolve", "tensorinv", "cond")),
                                        "p": c.pick((1, -1, "inf", "-inf", "fro")), "power": c.pick((0, 1, 2, 3, 5, 6, -1, -2)),
                                        "mode": c.pick(("reduced", "complete", "r")), "rows": c.pick((0, 0, 1, 3))})


def _linalg_of(a, b, p):
    fn = p["fn"]
    if fn == "solve":
        return np.linalg.solve(a, b)
    if fn.startswith("cholesky"):  # the triangle read: strictly diagonally dominant, so positive definite
        return np.linalg.cholesky(a, upper=fn == "cholesky_upper")
    if fn == "matrix_power":
        return np.linalg.matrix_power(a, p.get("power", 2))
    if fn == "cond":
        return np.linalg.cond(a, {"inf": np.inf, "-inf": -np.inf}.get(p.get("p", 1), p.get("p", 1)))
    if fn in ("tensorsolve", "tensorinv"):  # the stack's first matrix, as a tensor of another shape
        first = np.reshape(a, (-1,) + np.shape(a)[-2:])[0]
        n = first.shape[0]
        if fn == "tensorinv":
            return np.linalg.tensorinv(np.reshape(first, (n, 1, n)), ind=2)
        return np.linalg.tensorsolve(np.reshape(first, (n, 1, n)), np.reshape(b, (-1,))[:n].reshape(n, 1))
    if fn == "qr":  # square, tall (rows of ones appended) or wide (the last column cut)
        rows = p.get("rows", 0)
        tall = np.concatenate([a, np.broadcast_to(np.ones_like(a[..., :1, :]), a.shape[:-2] + (rows, a.shape[-1]))],
                              axis=-2) if rows < 3 else a[..., :, :max(1, a.shape[-1] - 1)]
        result = np.linalg.qr(tall, mode=p.get("mode", "reduced"))
        return result if p.get("mode") == "r" else tuple(result)
    return getattr(np.linalg, fn)(a)


def _dominant(a):
    """``a`` (entries within SMALL) made strictly diagonally dominant: far from singular, positive definite
    in either triangle."""
    n = np.shape(a)[-1]
    return a + 8.0 * (n + 1) * np.eye(n)


def _linalg_call(xs, p):
    return _linalg_of(_dominant(xs[0]), xs[1], p)


def _linalg_scale(xs, p):
    """The largest magnitude of the float64 answer: LU's rounding errors are relative to it, not to each element."""
    got = _linalg_of(_dominant(np.asarray(xs[0], np.float64)), np.asarray(xs[1], np.float64), p)
    return max(1.0, max(float(np.max(np.abs(v), initial=0.0)) for v in (got if isinstance(got, tuple) else (got,))))


def _multi_dot_sample(c: Chooser) -> Call:
    """A chain of four matrices of assorted sizes (so NumPy's cost-based order varies), the first and last
    possibly vectors."""
    dims = [c.pick((1, 2, 3, 5, 8)) for _ in range(5)]
    shapes = [(dims[i], dims[i + 1]) for i in range(4)]
    if c.pick((False, True)):
        shapes[0] = (dims[1],)
    if c.pick((False, True)):
        shapes[3] = (dims[3],)
    return Call(tuple(shapes), {"count": c.pick((2, 3, 4))})


def _multi_dot(xs, p):
    return np.linalg.multi_dot(list(xs[:p["count"]]))  # a prefix of the chain ends in a matrix, or is all of it


def _multi_dot_scale(xs, p):
    """Each product's magnitudes: the chain of absolute values, times the summed lengths -- in units of the
    coarsest float among the operands, since an intermediate product may be rounded there (a float32 one
    feeding a float64 result)."""
    arrays = [np.abs(_as_float(v)) for v in xs[:p["count"]]]
    result = np.result_type(*xs[:p["count"]])
    coarsest = max((EPS[np.dtype(np.asarray(v).dtype)] for v in xs[:p["count"]] if np.asarray(v).dtype.kind == "f"),
                   default=EPS.get(result, 0.0))
    widening = coarsest / EPS[result] if result in EPS else 1.0
    return widening * float(np.max(np.linalg.multi_dot(arrays), initial=0.0)) * \
        math.sqrt(sum(np.shape(v)[-1] for v in arrays))


# LU with partial pivoting in its own order of operations (LAPACK's is blocked): within a few hundred ulps
# of the answer's largest magnitude, for the diagonally dominant matrices drawn
register(OpInfo("linalg", _linalg_call, 2, NUMERIC, "linalg", _linalg_sample, domains=(SMALL,),
                tolerance=Tolerance(ulps=64, scale_ulps=256), exact=False, scale=_linalg_scale,
                numpy_name="np.linalg.solve / inv / det / slogdet / cholesky / matrix_power / qr / tensorsolve / tensorinv / cond"))
# matmuls in the order NumPy's multi_dot picks from the shapes
register(OpInfo("multi_dot", _multi_dot, 4, ALL, "linalg", _multi_dot_sample, domains=(SMALL,),
                tolerance=_MATMUL_TOL, exact=False, scale=_multi_dot_scale, numpy_name="np.linalg.multi_dot"))
# NumPy's formulas with NumPy's scalars and coefficient arrays (computed by NumPy), so its dtypes: bit for bit
_single("gradient", _gradient, _gradient_params, "np.gradient", dtypes=NUMERIC, min_rank=1, max_rank=3,
        family="difference")
# the operands within CASTABLE: an unsafe float -> int conversion of them is the same on every x86 loop
register(OpInfo("ufunc_dtype", _ufunc_dtype, 2, ALL, "elementwise_loop", _ufunc_dtype_sample, domains=(CASTABLE,),
                tolerance=TRANSCENDENTAL, exact=False, scalar_operands=True,
                numpy_name="np.<ufunc>(a, b, dtype=, casting=)",
                notes="NumPy's refusals (a conversion the casting rule forbids, no loop for the dtype) are compared too"))
def _ufunc_out_scale(xs, p):
    """The written values in units of the loop's own precision: a float32 arctan2 of uint16 operands, a few
    float32 ulps off, lands in the float64 array unchanged."""
    ufunc = getattr(np, p["ufunc"])
    loop = np.dtype(ufunc.resolve_dtypes(tuple(np.asarray(x).dtype for x in xs) + (None,))[-1])
    coarser = EPS[loop] / EPS[np.dtype(np.float64)] if loop in EPS else 0.0
    with np.errstate(all="ignore"):
        return np.nan_to_num(np.abs(_ufunc_out(xs, p)) * coarser, posinf=0.0)


register(OpInfo("ufunc_out", _ufunc_out, 2, NUMERIC, "index", _ufunc_out_sample,
                tolerance=Tolerance(ulps=8, scale_ulps=8), scale=_ufunc_out_scale,
                exact=False, numpy_name="np.<ufunc>(a, b, out=view, where=mask)",
                notes="written through a view of a float64 array; the whole array is the result"))


def _gather_params(c, shape):
    if not shape:
        return None
    axis = c.integer(0, len(shape) - 1)
    n = shape[axis]
    idx_shape = random_shape(c, 0, 2, (1, 2, 3)) if n else (0,)  # an empty axis takes only empty indices
    count = int(np.prod(idx_shape, dtype=np.int64))
    indices = np.array([c.integer(-n, n - 1) for _ in range(count)], dtype=np.int64).reshape(idx_shape)
    return {"indices": indices.tolist(), "axis": axis}


def _gather_const(xs, p):
    key = (slice(None),) * p["axis"] + (np.asarray(p["indices"], dtype=np.int64),)
    return xs[0][key]


_single("getitem_array", _gather_const, _gather_params, "x[..., idx]", min_rank=1, max_rank=3, family="index",
        notes="a constant integer array index")
def _take_params(c, shape):
    """_gather_params and a mode: 'wrap' and 'clip' take indices up to twice the axis out of range."""
    params = _gather_params(c, shape)
    if params is None:
        return None
    mode = c.pick(("raise", "wrap", "clip"))
    n = shape[params["axis"]]
    if mode != "raise" and n:
        params["indices"] = (np.asarray(params["indices"], dtype=np.int64) * 2 + c.integer(-1, 1)).tolist()
    return {**params, "mode": mode}


_single("take", lambda xs, p: np.take(xs[0], np.asarray(p["indices"], dtype=np.int64), axis=p["axis"], mode=p["mode"]),
        _take_params, "np.take", min_rank=1, max_rank=3, family="index")
_single("method.take", lambda xs, p: xs[0].take(np.asarray(p["indices"], dtype=np.int64), axis=p["axis"], mode=p["mode"]),
        _take_params, "x.take", min_rank=1, max_rank=3, family="index")


def _gather_arg_sample(c):
    shape = random_shape(c, 1, 3)
    axis = c.integer(0, len(shape) - 1)
    idx_shape = random_shape(c, 0, 2, (1, 2, 3))
    return Call((shape, idx_shape), {"axis": axis})


def _gather_arg(xs, p):
    return xs[0][(slice(None),) * p["axis"] + (xs[1],)]


register(OpInfo("getitem_index_arg", _gather_arg, 2, ALL, "index", _gather_arg_sample,
                domains=(ANY, Domain(lo=0, hi=1, special=False)), mixed_dtypes=True, numpy_name="x[idx_argument]",
                notes="the index array is a runtime argument: operand 1 is drawn as in-range integers "
                      "(see index_operand_values); out-of-range values must raise ValueError"))


def _computed_index_sample(c):
    call = _gather_arg_sample(c)
    n = call.shapes[0][call.params["axis"]]
    return Call(call.shapes, {**call.params, "shift": c.integer(-n, n)})  # |shift| up to n: some land outside


def _computed_index(xs, p):
    return xs[0][(slice(None),) * p["axis"] + (xs[1] + p["shift"],)]


register(OpInfo("getitem_computed_index", _computed_index, 2, ALL, "index", _computed_index_sample,
                domains=(ANY, Domain(lo=0, hi=1, special=False)), mixed_dtypes=True, numpy_name="x[idx + shift]",
                notes="an index computed in the kernel (an in-range argument shifted): checked as the kernel "
                      "runs; out-of-range values must raise IndexError"))


def _take_computed_sample(c):
    call = _computed_index_sample(c)
    return Call(call.shapes, {**call.params, "mode": c.pick(("raise", "wrap", "clip"))})


register(OpInfo("take.computed", lambda xs, p: np.take(xs[0], xs[1] + p["shift"], axis=p["axis"], mode=p["mode"]), 2,
                ALL, "index", _take_computed_sample, domains=(ANY, Domain(lo=0, hi=1, special=False)),
                mixed_dtypes=True, numpy_name="np.take(x, idx + shift, mode=...)",
                notes="indices computed in the kernel, some out of range: 'raise' is NumPy's IndexError (checked "
                      "as the kernel runs), 'wrap' takes them modulo the axis, 'clip' pins them to it"))

def _nan_arg_sample(c: Chooser) -> Call:
    """np.nanargmax/nanargmin of an array whose masked elements (operand 1) are NaN; a mask that
    broadcasts along the axis can make a whole slice NaN, NumPy's ValueError (checked by the kernel)."""
    shape = random_shape(c, 1, 4)
    mask = tuple(1 if c.pick((0, 0, 0, 1)) else d for d in shape)
    return Call((shape, mask), params={"kind": c.pick(("nanargmax", "nanargmin")),
                                       "axis": pick_axis(c, len(shape), allow_tuple=False),
                                       "keepdims": c.pick((False, True))})


register(OpInfo("nan_arg_reduction",
                lambda xs, p: getattr(np, p["kind"])(_with_nans(xs), axis=p["axis"], keepdims=p["keepdims"]), 2,
                NUMERIC, "arg", _nan_arg_sample, numpy_name="np.nanargmax/nanargmin", mixed_dtypes=True,
                notes="operand 1 marks the elements made NaN (float operands); an all-NaN slice must raise ValueError"))

# --------------------------------------------------------------------------- helpers for drivers

INDEX_OPERAND_OPS = ("getitem_index_arg", "getitem_computed_index", "take.computed")  # operand 1: in-range indices of an axis

INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.int8))


MASK_OPERAND_OPS = ("reduce_where", "nan_reduction", "nan_arg_reduction")  # operand 1: a boolean mask


EXPONENT_OPERAND_OPS = ("ldexp",)  # operand 1: an integer exponent (NumPy's loops take int32 and int64)
EXPONENT_DTYPES = SIGNED + tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32))


def operand_dtypes(info: OpInfo, i: int) -> tuple:
    if info.name in EXPONENT_OPERAND_OPS and i == 1:
        return EXPONENT_DTYPES
    if info.name in INDEX_OPERAND_OPS and i == 1:
        return INDEX_DTYPES
    if info.name in MASK_OPERAND_OPS and i == 1:
        return BOOL
    return info.dtypes


def index_operand_values(rng: np.random.Generator, shape, dtype, size: int) -> np.ndarray:
    """In-range indices (negative ones included where the dtype is signed) for an axis of ``size``."""
    lo = -size if np.dtype(dtype).kind == "i" else 0
    lo = max(lo, int(np.iinfo(dtype).min))
    hi = min(size - 1, int(np.iinfo(dtype).max))
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def describe_dtypes(dtypes) -> str:
    """A short name for a dtype set (for listings)."""
    named = {ALL: "all", NUMERIC: "numeric", FLOATS: "float", INTS: "int", ALL[1:]: "numeric"}
    key = tuple(dtypes)
    if key in named:
        return named[key]
    return ",".join(str(d) for d in dtypes)


def ops(family: str | None = None) -> list[OpInfo]:
    return [o for o in REGISTRY.values() if family is None or o.family == family]
