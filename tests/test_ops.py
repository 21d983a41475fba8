"""Every registry op against NumPy on deterministic inputs: values NaN-aware within the
op's registered tolerance, dtypes and shapes exact. The per-op samples come from the
registry itself (so a new op is tested as soon as it is registered); the batched tests
below pin the cases the issue names — several reduction axes and keepdims, broadcast
vectors and size-1 dims, mixed dtypes, and NumPy-scalar vs Python-scalar promotion — and
the edge cases of the math ufuncs, clip, prod and any/all (signed zeros, NaN and infinite
values and bounds, integer wrapping, empty reductions)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from compiler import jit
from compiler import opinfo as oi
from harness.fuzzing.cases import make_values, sample_op_case
from harness.fuzzing.check import Mismatch, check_op_case, compare_values, numpy_eval, op_tolerance

SEEDS_PER_OP = 3


@pytest.mark.parametrize("name", list(oi.REGISTRY))
def test_registry_op_matches_numpy(name):
    info = oi.REGISTRY[name]
    failures = []
    for seed in range(SEEDS_PER_OP):
        case = sample_op_case(oi.RandomChooser(1000 * seed + sum(map(ord, name))), info)
        try:
            check_op_case(case)
        except Mismatch as exc:
            failures.append(f"seed {seed}: {exc}")
    assert not failures, "\n".join(failures)


def _check_all(info, fn, operands, params_list, results):
    """Compare batched compiled ``results`` with NumPy, one per params (each result of an op with several,
    such as np.frexp's, on its own)."""
    for params, got in zip(params_list, results):
        expected = numpy_eval(lambda: info(operands, params))
        if not isinstance(expected, tuple):
            expected, got = (expected,), (got,)
        assert isinstance(got, tuple) and len(got) == len(expected), f"{info.name}: {len(expected)} results expected"
        for e, g in zip(expected, got):
            rtol, atol = op_tolerance(info, operands, params, np.asarray(e).dtype)
            problems = compare_values(e, g, rtol, atol, f"{info.name}{params}")
            assert not problems, problems


AXES_3D = [None, 0, 1, 2, -1, -3, (0, 2), (1, 2), (2, 0), (0, 1, 2)]


REDUCTION_CASES = [(o.name, d) for o in oi.ops("reduction") for d in ("float16", "float32", "float64", "int32", "uint8", "bool")
                   if np.dtype(d) in o.dtypes]


@pytest.mark.parametrize("name,dtype", REDUCTION_CASES)
def test_reductions_over_every_axis_and_keepdims(name, dtype):
    info = oi.REGISTRY[name]
    x = make_values(np.random.default_rng(7), (3, 1, 5), dtype, info.domain(0), "plain")
    params_list = [{"axis": a, "keepdims": k} for a in AXES_3D for k in (False, True)]
    fn = jit(lambda x: [info([x], p) for p in params_list])
    _check_all(info, fn, [x], params_list, fn(x))


def test_reductions_propagate_nan_and_inf():
    x = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, -np.inf], [-np.inf, -1.0, -2.0]], np.float32)
    names = ["sum", "max", "mean", "var"]
    params = [{"axis": a, "keepdims": False} for a in (None, 0, 1)]
    fn = jit(lambda x: [oi.REGISTRY[n]([x], p) for n in names for p in params])
    got = iter(fn(x))
    for n in names:
        _check_all(oi.REGISTRY[n], None, [x], params, [next(got) for _ in params])


# (np.ldexp takes an integer exponent: tests/test_numpy_conformance.py)
BINARY = [o for o in oi.ops("elementwise") if o.arity == 2 and not o.name.startswith("power")
          and o.name not in oi.EXPONENT_OPERAND_OPS]
BROADCAST_PAIRS = [((3, 1, 4), (4,)), ((3, 1, 4), (5, 1)), ((1,), (2, 3)), ((), (4,)), ((2, 1), (1, 1)), ((1, 4), (3, 1))]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int16", "uint32", "bool"])
def test_binary_ops_broadcast_vectors_and_size_one_dims(dtype):
    ops = [o for o in BINARY if np.dtype(dtype) in o.dtypes]
    rng = np.random.default_rng(3)
    for sa, sb in BROADCAST_PAIRS:
        a = make_values(rng, sa, dtype, oi.ANY, "edge")
        b = make_values(rng, sb, dtype, oi.ANY, "plain")
        fn = jit(lambda a, b: [o([a, b]) for o in ops] + [o([b, a]) for o in ops])
        got = fn(a, b)
        for k, o in enumerate(ops):
            _check_all(o, None, [a, b], [{}], [got[k]])
            _check_all(o, None, [b, a], [{}], [got[len(ops) + k]])


MIXED = [("int8", "float32"), ("uint8", "int8"), ("int32", "float32"), ("uint64", "int64"), ("bool", "float64"),
         ("uint16", "int16"), ("float32", "float64"), ("int64", "uint8"), ("float16", "int8"), ("int16", "float16"),
         ("float16", "float32"), ("uint8", "float16")]


@pytest.mark.parametrize("da,db", MIXED)
def test_mixed_dtype_operands_promote_like_numpy(da, db):
    rng = np.random.default_rng(5)
    a = make_values(rng, (2, 3), da, oi.Domain(lo=0, hi=50), "plain")
    b = make_values(rng, (3,), db, oi.Domain(lo=1, hi=50), "plain")
    ops = [o for o in BINARY if np.dtype(da) in o.dtypes and np.dtype(db) in o.dtypes]
    expected = {}
    for o in ops:
        try:
            expected[o.name] = numpy_eval(lambda: o([a, b]))
        except TypeError:
            continue
    names = [n for n in expected if np.asarray(expected[n]).dtype in oi._dt.SUPPORTED]
    fn = jit(lambda a, b: [oi.REGISTRY[n]([a, b]) for n in names])
    for n, got in zip(names, fn(a, b)):
        e = expected[n]
        rtol, atol = op_tolerance(oi.REGISTRY[n], [a, b], {}, e.dtype)
        assert not compare_values(e, got, rtol, atol, n)


# (expression, what it checks): NEP 50 — Python scalars are weak, NumPy scalars strong
SCALAR_EXPRESSIONS = [
    lambda x: x * np.sqrt(2 / np.pi),     # float64 NumPy scalar: float32 array -> float64
    lambda x: x * 0.5,                    # Python float: stays float32
    lambda x: x + 1,                      # Python int
    lambda x: 2 - x,                      # reflected
    lambda x: x * np.float32(2.5),
    lambda x: x + np.int64(3),
    lambda x: x / 3,
    lambda x: x ** 2,
    lambda x: np.maximum(x, 0.25),
    lambda x: x > 1,
    lambda x: np.where(x > 1, x, 0.5),
    lambda x: np.where(x > 1, x, np.float64(0.5)),
    lambda x: x - np.uint8(1),
    lambda x: x * True,
]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int32", "uint8", "uint64"])
def test_numpy_scalars_are_strong_python_scalars_weak(dtype):
    x = make_values(np.random.default_rng(11), (2, 3), dtype, oi.Domain(lo=0, hi=20), "plain")
    exprs = []
    for e in SCALAR_EXPRESSIONS:
        try:
            r = numpy_eval(lambda: e(x))
        except (TypeError, OverflowError):
            continue
        if r.dtype in oi._dt.SUPPORTED:
            exprs.append((e, r))
    fn = jit(lambda x: [e(x) for e, _ in exprs])
    for (e, expected), got in zip(exprs, fn(x)):
        assert got.dtype == expected.dtype
        rtol, atol = oi.TRANSCENDENTAL.for_dtype(expected.dtype)
        assert not compare_values(expected, got, rtol, atol, "scalar expression")


def test_named_promotion_examples():
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    a, b = jit(lambda x: (x * np.sqrt(2 / np.pi), x * 0.5))(x)
    assert a.dtype == np.float64 and b.dtype == np.float32
    np.testing.assert_allclose(a, x * np.sqrt(2 / np.pi), rtol=1e-15)
    np.testing.assert_array_equal(b, x * 0.5)


def test_special_float_values_through_unary_ops():
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3e38, -3e38, 1.0, -1.0], np.float32)
    ops = [o for o in oi.ops("elementwise") if o.arity == 1 and o.name != "astype" and np.dtype(np.float32) in o.dtypes]
    fn = jit(lambda x: [o([x]) for o in ops])
    for o, got in zip(ops, fn(specials)):
        _check_all(o, None, [specials], [{}], [got])


INT_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@pytest.mark.parametrize("src", [np.float32, np.float64])
@pytest.mark.parametrize("dst", INT_DTYPES)
def test_float_to_int_truncates_and_wraps_like_numpy(src, dst):
    """Within int32's range NumPy truncates toward zero and wraps modulo the target width, for
    every target (negative values into unsigned ones included); int64 and uint64 are exact over
    their own ranges too."""
    x = np.array([-2.75, -2.5, -1.0, -0.5, -0.0, 0.0, 0.9, 1.5, 127.9, 128.0, -129.5, 255.5, 256.0, 300.0,
                  -70000.7, 65535.9, 65536.0, 1e6 + 0.5, -1e9, 2.0e9, -2147483648.0], src)
    if np.dtype(dst) == np.int64:
        x = np.concatenate([x, np.array([3e9, -5e12, 2.0 ** 62, -(2.0 ** 63)], src)])
    if np.dtype(dst) == np.uint64:
        x = np.concatenate([x, np.array([3e9, -5e12, 2.0 ** 63, 2.0 ** 63 + 2.0 ** 40, 1.8e19], src)])
    with np.errstate(invalid="ignore"):
        expected = x.astype(dst)
    got = jit(lambda a: a.astype(dst))(x)
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("src", [np.float32, np.float64])
@pytest.mark.parametrize("dst", INT_DTYPES)
def test_float_to_int_of_unrepresentable_values_is_defined(src, dst):
    """NaN, infinities and values beyond the range converted through give that range's minimum
    (x86's "integer indefinite": int32's for targets up to 16 bits and int32, int64's otherwise),
    and 0 from 2**64 up into uint64 -- fixed values, never LLVM's poison, whatever NumPy's SIMD
    loops happen to give (the compiler's docstring says why they are not matched)."""
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30], src)
    through_int32 = np.dtype(dst).itemsize < 4 or np.dtype(dst) == np.int32
    indefinite = -(2 ** 31) if through_int32 else -(2 ** 63)
    if np.dtype(dst) == np.uint64:
        expected = [2 ** 63, 0, 2 ** 63, 0, 2 ** 63]
    else:
        expected = [indefinite % 2 ** (8 * np.dtype(dst).itemsize)] * len(x)
    expected = np.array(expected, np.uint64).astype(dst)
    got = jit(lambda a: a.astype(dst))(x)
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_unsigned_power_with_the_exponents_top_bit_set(dtype):
    """An unsigned exponent with its top bit set is a large power, not a negative one."""
    top = np.iinfo(dtype).max
    base = np.array([0, 0, 1, 2, 3, 3, 5, 255, 7], dtype)
    exponent = np.array([top // 2 + 1, top, top // 2 + 1, top // 2 + 1, top, top // 2 + 1, top - 2, 0, 3], dtype)
    expected = base ** exponent
    got = jit(lambda b, e: b ** e)(base, exponent)
    assert got.dtype == expected.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, expected)
    constant = jit(lambda b: b ** dtype(top))(base)
    np.testing.assert_array_equal(constant, base ** dtype(top))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_signed_power_with_large_exponents_wraps_like_numpy(dtype):
    """Square-and-multiply over every bit of the exponent: the largest exponents and bases whose
    powers wrap around the dtype, against NumPy's own loop."""
    top = int(np.iinfo(dtype).max)
    base = np.array([-1, -1, 0, 1, 2, 3, -3, 7, -128, 5, -2, 0], dtype)
    exponent = np.array([top, top - 1, top, top, top // 2 + 1, top, top - 2, 3, 1, 0, 7, 0], dtype)
    expected = base ** exponent
    got = jit(lambda b, e: b ** e)(base, exponent)
    assert got.dtype == expected.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(jit(lambda b: b ** dtype(top))(base), base ** dtype(top))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_maximum_minimum_and_clip_break_ties_of_signed_zeros_as_numpy_and_propagate_nan(dtype):
    """NumPy's float maximum/minimum give the second operand when the two are equal (so +0.0
    against -0.0 depends on the order) and NaN from either side; its float16 loops give the first.
    clip, NumPy's min(max(x, lo), hi), follows the same rule."""
    a = np.array([-0.0, 0.0, 0.0, -0.0, np.nan, 1.0, np.nan, 2.0, -3.0], dtype)
    b = np.array([0.0, -0.0, 0.0, -0.0, 1.0, np.nan, np.nan, -2.0, 3.0], dtype)
    hi = np.array([1.0, 1.0, -0.0, 0.0, 1.0, 1.0, 2.0, 1.0, np.nan], dtype)
    for f in (np.maximum, np.minimum, lambda x, y: np.clip(x, y, hi), lambda x, y: np.clip(y, x, hi)):
        expected = f(a, b)
        got = jit(lambda x, y: f(x, y))(a, b)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


ACCUMULATOR_CASES = {
    "sum int8 wraps": (lambda x: np.sum(x, dtype=np.int8), np.array([100, 100, 100], np.int8)),
    "sum int32 wraps": (lambda x: np.sum(x, dtype=np.int32), np.array([2**31 - 1, 1])),
    "x.sum uint8": (lambda x: x.sum(dtype=np.uint8), np.array([200, 100])),
    "sum bool": (lambda x: np.sum(x, dtype=bool), np.array([True, True])),
    "mean int64 truncates": (lambda x: np.mean(x, dtype=np.int64), np.arange(7) * 2 + 1),
    "mean int32 by axis": (lambda x: np.mean(x, axis=0, dtype=np.int32), np.arange(-7, 5).reshape(4, 3)),
    "x.mean float32": (lambda x: x.mean(dtype=np.float32), np.arange(5)),
    "var float32 of ints": (lambda x: np.var(x, dtype=np.float32), np.arange(7)),
    "var int64 ddof": (lambda x: np.var(x, axis=1, dtype=np.int64, ddof=1), np.array([[1, 4, 9, 2], [3, -5, 7, 11]])),
    "x.var float64 keepdims": (lambda x: x.var(dtype=np.float64, keepdims=True), np.arange(6, dtype=np.float32)),
}


@pytest.mark.parametrize("name", list(ACCUMULATOR_CASES))
def test_sum_mean_var_take_their_dtype_as_accumulator_and_result(name):
    """``dtype=`` is the accumulator and the result type: sums wrap in it, and mean and var divide
    into it (an integer one truncates)."""
    fn, x = ACCUMULATOR_CASES[name]
    expected, got = fn(x), jit(fn)(x)
    assert got.dtype == np.asarray(expected).dtype and got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=0)


VAR_BEYOND_ITS_DEGREES_OF_FREEDOM = {
    "np.var, ddof above n": (lambda x: np.var(x, ddof=7), np.array([1.0, 4.0, 2.5, -3.0])),
    "x.var by axis, ddof above n": (lambda x: x.var(axis=1, ddof=5), np.array([[1.0, 4.0, 9.0], [2.0, 2.0, 2.0]])),
    "float32 var, ddof above n": (lambda x: np.var(x, axis=0, ddof=3), np.array([[1.5], [-2.0]], np.float32)),
}


@pytest.mark.parametrize("name", list(VAR_BEYOND_ITS_DEGREES_OF_FREEDOM))
def test_var_with_ddof_beyond_the_count_divides_by_zero(name):
    """NumPy divides by ``max(n - ddof, 0)``: a ddof above the element count gives inf (nan where every
    element equals the mean), never the negative variance of dividing by ``n - ddof``."""
    fn, x = VAR_BEYOND_ITS_DEGREES_OF_FREEDOM[name]
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "Degrees of freedom <= 0"
        expected = fn(x)
    got = jit(fn)(x)
    assert type(got) is type(expected) and got.dtype == expected.dtype and got.shape == np.shape(expected)
    np.testing.assert_array_equal(got, expected)


COMPARISONS = [np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_comparisons_of_equal_values_nan_and_signed_zeros(dtype):
    """Random operands almost never tie: equal values, NaN and ±0 decide between strict and
    non-strict predicates (x < x is False, -0.0 == 0.0, NaN compares unequal to itself)."""
    a = np.array([1.0, 2.0, np.nan, -0.0, np.inf, 5.0], dtype)
    b = np.array([1.0, 3.0, np.nan, 0.0, np.inf, np.nan], dtype)
    for ufunc in COMPARISONS:
        for x, y in ((a, b), (b, a), (a, a)):
            expected = ufunc(x, y)
            got = jit(lambda p, q: ufunc(p, q))(x, y)
            assert got.dtype == np.bool_
            np.testing.assert_array_equal(got, expected, err_msg=ufunc.__name__)


def test_uint64_against_negative_int64_in_both_orders():
    """NumPy's exact mixed-sign loops: a negative int64 is below every uint64, including 2**63."""
    u = np.array([5, 0, 2**63, 2**64 - 1], np.uint64)
    i = np.array([-1, -7, -1, -(2**63)], np.int64)
    for ufunc in COMPARISONS:
        for x, y in ((u, i), (i, u)):
            np.testing.assert_array_equal(jit(lambda p, q: ufunc(p, q))(x, y), ufunc(x, y), err_msg=ufunc.__name__)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int32, np.uint64, np.int64])
def test_comparisons_with_python_ints_at_the_dtypes_limits(dtype):
    """A Python int equal to the dtype's minimum or maximum is in range, so it is compared element by
    element (``uint8_array == 255`` holds where the array is 255), not folded to a constant as one
    just beyond the range is."""
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min + 1, info.max // 2, info.max - 1, info.max], dtype)
    for value in (info.min, info.max):
        fns = ([lambda a, op=op, v=value: op(a, v) for op in COMPARISONS]
               + [lambda a, op=op, v=value: op(v, a) for op in COMPARISONS])
        got = jit(lambda a: [f(a) for f in fns])(x)
        for f, g in zip(fns, got):
            expected = f(x)
            assert type(g) is type(expected) and g.dtype == expected.dtype and g.shape == expected.shape
            np.testing.assert_array_equal(g, expected, err_msg=f"{value}")


def test_small_constants_keep_signed_zeros_and_nan_payloads():
    """Constants are inlined (a splat when every element has the same bits): -0.0 next to 0.0 is
    not a splat of 0.0."""
    c = np.array([0.0, -0.0, 0.0], np.float32)
    got = jit(lambda x: x + c)(np.full(3, -0.0, np.float32))
    np.testing.assert_array_equal(np.signbit(got), [False, True, False])
    payloads = np.array([0x7FC00001, 0x7FC00002], np.uint32).view(np.float32)
    out = jit(lambda x: np.where(x > 0, x, payloads))(np.zeros(2, np.float32))
    np.testing.assert_array_equal(out.view(np.uint32), payloads.view(np.uint32))


def test_a_long_float32_sum_of_mixed_magnitudes_stays_close_to_numpy():
    """A float32 accumulator drifts by about 1% over 2**20 elements here; NumPy sums pairwise,
    which a float64 accumulator stays within NumPy's own rounding of."""
    a = np.full(2**20, 0.1, np.float32)
    a[0] = 1e4
    got = jit(lambda x: np.sum(x))(a)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a.sum(), rtol=1e-6)


# --------------------------------------------------------------------------- math ufuncs, clip, prod, any/all
# Edge cases the random samples rarely meet, each against NumPy itself: signed zeros, subnormals,
# infinities and NaN; libm-grade functions within 16 ulps of NumPy, everything else exactly.


def assert_matches_numpy(got, expected, ulps=0):
    """Same dtype and shape; NaN where NumPy has NaN, the same infinities and the sign of every zero;
    other values within ``ulps`` units in the last place of NumPy's (0: bit for bit)."""
    assert isinstance(got, np.generic) == isinstance(expected, np.generic), (type(got), type(expected))
    got, expected = np.asarray(got), np.asarray(expected)
    assert isinstance(got, np.ndarray) and got.dtype == expected.dtype and got.shape == expected.shape, \
        (type(got), getattr(got, "dtype", None), expected.dtype, getattr(got, "shape", None), expected.shape)
    if expected.dtype.kind != "f":
        np.testing.assert_array_equal(got, expected)
        return
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan)
    g, e = got[~nan], expected[~nan]
    np.testing.assert_array_equal(np.isinf(g), np.isinf(e))
    np.testing.assert_array_equal(g[np.isinf(e)], e[np.isinf(e)])
    zero = e == 0
    np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(e[zero]), err_msg="sign of zero")
    finite = np.isfinite(e)
    with np.errstate(over="ignore"):  # the spacing at the largest finite value is inf
        spacing = np.spacing(np.abs(e[finite])).astype(np.float64)
    err = np.abs(g[finite].astype(np.float64) - e[finite].astype(np.float64)) / spacing
    assert err.size == 0 or err.max() <= ulps, f"{err.max()} ulps from NumPy at {e[finite][np.argmax(err)]!r}"


def float_edges(dtype):
    fi = np.finfo(dtype)
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, fi.smallest_subnormal, -fi.smallest_subnormal, fi.tiny, -fi.tiny,
              fi.eps, 1e-10, -1e-10, 1e-5, -1e-5, 0.5, -0.5, 1.0, -1.0, -0.999, 2.0, 3.0, 10.0, 100.0, 88.5, -103.0,
              127.5, -149.5, 700.0, -745.0, 1e5, 1e10, -1e10, 1e30, float(fi.max), -float(fi.max)]
    with np.errstate(over="ignore"):
        return np.array(values, dtype)


LIBM_UFUNCS = [np.sin, np.cos, np.log1p, np.expm1, np.exp2, np.log2, np.log10]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_libm_ufuncs_at_edge_values_within_16_ulps(dtype):
    x = np.concatenate([float_edges(dtype), np.random.default_rng(9).uniform(-20, 20, 500).astype(dtype)])
    got = jit(lambda a: [f(a) for f in LIBM_UFUNCS])(x)
    for f, g in zip(LIBM_UFUNCS, got):
        assert_matches_numpy(g, numpy_eval(lambda: f(x)), ulps=16)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log1p_and_expm1_keep_their_precision_near_zero(dtype):
    """What they exist for: log(1 + x) and exp(x) - 1 lose every digit here (MLIR's own lowering
    of math.log1p/expm1 on the CPU), the C library's functions do not."""
    x = np.array([1e-20, -1e-20, 3e-12, -7e-9, 1e-6, -2e-4, 0.01], dtype)
    lp, em = jit(lambda a: (np.log1p(a), np.expm1(a)))(x)
    assert_matches_numpy(lp, np.log1p(x), ulps=2)
    assert_matches_numpy(em, np.expm1(x), ulps=2)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64, np.bool_])
def test_math_ufuncs_of_integers_promote_like_numpy(dtype):
    """NumPy picks the smallest float that holds every value: float16 for int8, uint8 and bool,
    float32 for int16, float64 for wider integers."""
    x = np.array([0, 1, 2, 5, 100], dtype) if dtype != np.bool_ else np.array([True, False])
    for f in LIBM_UFUNCS:
        expected = numpy_eval(lambda: f(x))
        assert expected.dtype == {1: np.float16, 2: np.float32}.get(np.dtype(dtype).itemsize, np.float64)
        assert_matches_numpy(jit(lambda a: f(a))(x), expected, ulps=1 if expected.dtype == np.float16 else 16)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_reciprocal_sign_and_float_classes_of_special_values(dtype):
    x = float_edges(dtype)
    fns = [np.reciprocal, np.sign, np.isnan, np.isinf, np.isfinite, np.square, np.abs]
    for f, g in zip(fns, jit(lambda a: [f(a) for f in fns])(x)):
        assert_matches_numpy(g, numpy_eval(lambda: f(x)))  # sign(-0.0) is +0.0, sign(nan) nan


INTEGER_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@pytest.mark.parametrize("dtype", INTEGER_DTYPES)
def test_reciprocal_sign_and_float_classes_of_integers(dtype):
    """NumPy's integer reciprocal is C's 1.0 / x converted back: 0 for |x| > 1, and for x = 0 what the
    conversion of inf gives on x86 (the minimum of int32 and int64, 0 for the others). Integers are
    never NaN or infinite; bool has no sign loop."""
    info = np.iinfo(dtype) if dtype != np.bool_ else None
    values = [0, 1, 2, 3, 100] + ([] if info is None else [int(info.max), int(info.max) - 1, int(info.min)])
    if info is not None and info.min < 0:
        values += [-1, -2, -100, int(info.min) + 1]
    x = np.array(values, dtype)
    for f in (np.reciprocal, np.isnan, np.isinf, np.isfinite, np.sign):
        try:
            expected = numpy_eval(lambda: f(x))
        except TypeError:
            with pytest.raises(TypeError, match=f"np.{f.__name__}"):
                jit(lambda a: f(a))(x)
            continue
        assert_matches_numpy(jit(lambda a: f(a))(x), expected)


def test_float_classes_of_integers_are_constants():
    """np.isnan of an integer array is all False whatever it holds: nothing is computed at run time."""
    from compiler.jit import trace

    _, outputs, _, _ = trace(lambda a: (np.isnan(a), np.isinf(a), np.isfinite(a)), (np.arange(4),), {})
    assert [o.op for o in outputs] == ["const"] * 3
    assert [bool(o.value.all()) for o in outputs] == [False, False, True]


CLIP_CASES = {
    # NaN in x or in either bound wins; a tie of ±0 with a bound gives the bound; lo > hi gives hi
    "nan and signed zeros against array bounds": (
        lambda x, lo, hi: np.clip(x, lo, hi),
        (np.array([np.nan, 1.0, 1.0, -0.0, 0.0, -0.0, 0.0, 5.0, -5.0, 0.5, 2.0], np.float32),
         np.array([0.0, np.nan, 0.0, 0.0, -0.0, -0.0, 0.0, 3.0, -1.0, -np.inf, np.nan], np.float32),
         np.array([1.0, 2.0, np.nan, 1.0, 1.0, 0.0, -0.0, 1.0, -2.0, np.inf, np.nan], np.float32))),
    "scalar bounds, both zeros": (lambda x: (np.clip(x, 0.0, 1.0), np.clip(x, -0.0, -0.0), np.clip(x, -1.0, 0.0)),
                                  (np.array([-0.0, 0.0, np.nan, -np.inf, np.inf, 0.25, -3.0]),)),
    # NumPy's loop takes another path when both bounds are scalars to it (one element, and 0-d or
    # broadcast over more than one; the compiler models that much): there a tie of -0.0 with +0.0
    # keeps x, and a NaN bound is the result. NumPy's iterator also gives stride 0 to some
    # multi-element bounds ((2, 1) bounds over (2, 3)), which is not modelled: README, known limitations
    "one-element bounds": (lambda x, lo, hi: (np.clip(x, lo, hi), np.clip(x[:1], lo, hi), np.clip(x, lo[0], hi),
                                              np.clip(x[:1], lo[0], hi[0]), np.clip(x.reshape(2, 2), lo, hi[None])),
                           (np.array([-0.0, 0.0, -0.0, np.nan], np.float32), np.array([0.0], np.float32),
                            np.array([-0.0], np.float32))),
    "a one-element bound with an array bound": (lambda x, lo, hi: (np.clip(x, lo, hi), np.clip(x, hi, lo[0])),
                                                (np.array([-0.0, 0.0, -0.0]), np.array([0.0]), np.array([-0.0, 1.0, 0.0]))),
    "nan scalar bounds": (lambda x: (np.clip(x, np.nan, 1.0), np.clip(x, 0.0, np.float32(np.nan)), x.clip(None, np.nan)),
                          (np.array([-1.0, 0.5, 2.0, np.nan], np.float32),)),
    "bounds broadcast with x": (lambda x, lo: np.clip(x, lo, lo + 1), (np.arange(12.0).reshape(3, 4) - 6,
                                                                      np.array([[-2.0], [0.0], [3.0]]))),
    "float32 with a Python float stays float32": (lambda x: np.clip(x, 0.1, 0.9), (np.linspace(-1, 2, 7, dtype=np.float32),)),
    "float32 with a NumPy float64 becomes float64": (lambda x: np.clip(x, np.float64(0.1), 0.9),
                                                     (np.linspace(-1, 2, 7, dtype=np.float32),)),
    "int8 with a Python float becomes float64": (lambda x: np.clip(x, 0.5, 10), (np.arange(-5, 15, dtype=np.int8),)),
    "int8 with int16 bounds becomes int16": (lambda x, lo: np.clip(x, lo, 5), (np.arange(-5, 15, dtype=np.int8),
                                                                               np.array(-3, np.int16))),
    "uint8 with Python ints beyond its range": (lambda x: (np.clip(x, -1, 300), np.clip(x, -5, 7), np.clip(x, 3, 2**70)),
                                                (np.array([0, 3, 200, 255], np.uint8),)),
    "one bound, keywords, method": (lambda x: (np.clip(x, None, 2), np.clip(x, -1, None), np.clip(x, min=0),
                                               np.clip(x, max=1, min=-1), x.clip(max=0), x.clip(-2, 2)),
                                    (np.arange(-4, 5, dtype=np.int64),)),
    "bools": (lambda x, y: (np.clip(x, False, True), np.clip(x, y, True), np.clip(x, 0, 1)),
              (np.array([True, False, True]), np.array([True, True, False]))),
}


@pytest.mark.parametrize("name", list(CLIP_CASES))
def test_clip_matches_numpy(name):
    fn, args = CLIP_CASES[name]
    expected = numpy_eval(lambda: fn(*args))
    got = jit(fn)(*args)
    for g, e in zip(oi_flatten(got), oi_flatten(expected)):
        assert_matches_numpy(g, e)


def oi_flatten(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


CLIP_ERRORS = {
    "both bounds and keywords": (lambda x: np.clip(x, 0, 1, min=0), ValueError),
    "one positional bound": (lambda x: np.clip(x, 0), TypeError),
    "no bound of bool": (lambda x: np.clip(x.astype(bool), None, None), TypeError),
    "a Python int beyond int8 on the near side": (lambda x: np.clip(x.astype(np.int8), 200, 300), OverflowError),
    "bounds that do not broadcast": (lambda x: np.clip(x, np.zeros(3), 1), ValueError),
}


@pytest.mark.parametrize("name", list(CLIP_ERRORS))
def test_clip_refuses_what_numpy_refuses(name):
    fn, error = CLIP_ERRORS[name]
    x = np.arange(4.0)
    with pytest.raises(error):
        numpy_eval(lambda: fn(x))
    with pytest.raises(error):
        jit(fn)(x)


def test_clip_into_an_argument_is_refused_by_name_and_its_casting_is_the_ufuncs():
    with pytest.raises(NotImplementedError, match=r"np\.clip\(\.\.\., out=\.\.\.\) on the argument x"):
        jit(lambda x: np.clip(x, 0, 1, out=x))(np.arange(3.0))
    fn = lambda x: np.clip(x, 0.5, 1.5, dtype=np.int16, casting="unsafe")  # the loop in int16: bounds 0 and 1
    x = np.arange(-1.0, 3.0)
    got, want = jit(fn)(x), fn(x)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype == np.int16


PROD_CASES = {
    # NumPy multiplies in order, in the result's dtype: an early underflow to 0 or overflow to inf stays
    "float32 in order: underflow first": (lambda x: np.prod(x), np.array([1e-30, 1e-30, 1e30, 1e30], np.float32)),
    "float32 in order: overflow first": (lambda x: np.prod(x), np.array([1e30, 1e30, 1e-30, 1e-30], np.float32)),
    "float32 rows and columns": (lambda x: (x.prod(axis=0), x.prod(axis=1), np.prod(x, keepdims=True)),
                                 np.random.default_rng(4).uniform(0.7, 1.4, (40, 64)).astype(np.float32)),
    "nan, inf times zero, signed zeros": (lambda x: np.prod(x, axis=1),
                                          np.array([[1.0, np.nan, 0.0], [np.inf, 0.0, 2.0], [-0.0, 3.0, 1.0],
                                                    [-np.inf, -1.0, 2.0], [-0.0, -0.0, -1.0]])),
    "int8 accumulates in int64": (lambda x: np.prod(x), np.array([100, 100, 100, -7], np.int8)),
    "int64 wraps": (lambda x: (np.prod(x), np.prod(x[:2])), np.array([2**62, 4, 3], np.int64)),
    "uint64 wraps": (lambda x: np.prod(x), np.array([2**63 + 1, 3, 2**40], np.uint64)),
    "int32 wraps in its dtype": (lambda x: np.prod(x, dtype=np.int32), np.full(12, 7, np.int32)),
    "dtype=int8 wraps": (lambda x: x.prod(dtype=np.int8), np.array([3, 5, 7, 11], np.int64)),
    "bool becomes int64": (lambda x: (np.prod(x), np.prod(x, axis=0), np.prod(x, dtype=bool)),
                           np.array([[True, True], [True, False]])),
    "float32 dtype of ints": (lambda x: np.prod(x, dtype=np.float32), np.arange(1, 30, dtype=np.int64)),
    "empty is 1": (lambda x: (np.prod(x[:0]), np.prod(x[:, :0], axis=1), x[:0].prod(axis=0, keepdims=True)),
                   np.ones((3, 4), np.float32)),
    "empty int is 1": (lambda x: (np.prod(x[:0]), np.prod(x[:, :0], axis=1)), np.ones((3, 4), np.uint8)),
}


@pytest.mark.parametrize("name", list(PROD_CASES))
def test_prod_matches_numpy(name):
    fn, x = PROD_CASES[name]
    expected = numpy_eval(lambda: fn(x))
    for g, e in zip(oi_flatten(jit(fn)(x)), oi_flatten(expected)):
        assert_matches_numpy(g, e)  # in NumPy's order: bit for bit


ANY_ALL_CASES = {
    "empty: any False, all True": (lambda x: (np.any(x[:0]), np.all(x[:0]), x[:, :0].any(axis=1), x[:, :0].all(axis=1),
                                              np.any(x[:0], axis=0, keepdims=True), np.all(x[:0], axis=(0, 1)))),
    "nan is true, -0.0 false": (lambda x: (np.any(x, axis=1), np.all(x, axis=1), x.any(), x.all(axis=0, keepdims=True))),
    "axis () gives truth values": (lambda x: (np.any(x, axis=()), np.all(x, axis=()))),
    "of integers and comparisons": (lambda x: (np.any(x.astype(np.int32), axis=0), np.all(x > -1, axis=(0, 1)),
                                               np.all(x.astype(np.uint8)))),
}


@pytest.mark.parametrize("name", list(ANY_ALL_CASES))
def test_any_all_match_numpy(name):
    fn = ANY_ALL_CASES[name]
    x = np.array([[0.0, -0.0, 0.0], [np.nan, 0.0, -0.0], [1.0, 2.0, -1.0], [0.0, 5.0, np.inf]])
    expected = numpy_eval(lambda: fn(x))
    for g, e in zip(oi_flatten(jit(fn)(x)), oi_flatten(expected)):
        assert_matches_numpy(g, e)


def test_reductions_refuse_unsupported_arguments_by_name():
    x = np.arange(6.0).reshape(2, 3)
    for fn, word in ((lambda a: np.var(a, out=np.zeros(())), "out"), (lambda a: np.all(a, out=np.zeros(3, bool)), "out"),
                     (lambda a: np.logical_or.reduce(a, initial=True), "initial")):
        with pytest.raises(NotImplementedError, match=word):
            jit(fn)(x)
    with pytest.raises(np.exceptions.AxisError):
        jit(lambda a: np.any(a, axis=2))(x)
