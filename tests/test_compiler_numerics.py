"""Compiled library formulas, reductions and NumPy 2 (NEP 50) promotion checked
against NumPy running the same code: values within tight tolerances, dtypes exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from compiler import jit, ops


def assert_same(actual, expected, rtol=1e-6, atol=1e-6):
    """Compiled result vs NumPy's: identical dtype and shape, values within tolerance (NaN-aware)."""
    # a 0-d result NumPy gives as a scalar must come back as one, and an array as an array
    assert isinstance(actual, np.generic) == isinstance(expected, np.generic), (type(actual), type(expected))
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert isinstance(actual, np.ndarray), type(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)


def check(fn, *args, rtol=1e-6, atol=1e-6, **static):
    """Run ``fn`` compiled and under NumPy on the same arguments and compare."""
    expected = fn(*args, **static)
    actual = jit(fn)(*args, **static)
    assert_same(actual, expected, rtol=rtol, atol=atol)
    return actual


# --------------------------------------------------------------------------- GELU


def gelu_python(x: float) -> float:
    """GELU (tanh approximation) in Python floats, independent of NumPy and the compiler."""
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def test_gelu_mixed_precision_matches_numpy_and_formula():
    x = np.linspace(-5, 5, 31).astype(np.float32)
    y = jit(ops.gelu)(x)
    # np.sqrt(2 / np.pi) is a float64 NumPy scalar (strong), so the result is float64
    assert y.dtype == np.float64
    assert_same(y, ops.gelu(x), rtol=2e-6, atol=2e-6)
    independent = np.array([gelu_python(float(v)) for v in x])
    np.testing.assert_allclose(y, independent, rtol=2e-6, atol=2e-6)
    # the sign-symmetric tail: gelu(-5) is about -1.5e-6, gelu(5) about 5
    assert y[0] < 0 and abs(y[-1] - 5.0) < 1e-5


def test_gelu_float64_input():
    x = np.linspace(-8, 8, 17)
    y = check(ops.gelu, x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y, [gelu_python(float(v)) for v in x], rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- softmax


def test_softmax_extreme_rows():
    x = np.array([[10000, 9999, -10000], [-10000, -9999, -10001], [0, -np.inf, -np.inf]], np.float32)
    y = jit(ops.softmax)(x)
    assert y.dtype == np.float32
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y.sum(axis=-1), 1.0, rtol=0, atol=1e-6)
    assert y[2, 0] == 1.0 and y[2, 1] == 0.0 and y[2, 2] == 0.0
    assert_same(y, ops.softmax(x), rtol=1e-6, atol=1e-7)
    # independent values: softmax([1, 0, -20000]) and softmax([0, 1, -1]) shifted
    e = math.exp(-1.0)
    np.testing.assert_allclose(y[0], [1 / (1 + e), e / (1 + e), 0.0], rtol=1e-6, atol=1e-7)
    z = 1 + math.exp(1.0) + math.exp(-1.0)
    np.testing.assert_allclose(y[1], [1 / z, math.exp(1.0) / z, math.exp(-1.0) / z], rtol=1e-6, atol=1e-7)


def test_softmax_3d_float64():
    x = np.random.default_rng(1).standard_normal((2, 3, 7)) * 30
    check(ops.softmax, x, rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------- layer norm


@pytest.mark.parametrize("value", [3.0, -2.25, 1024.0, 0.0])
def test_layer_norm_constant_rows_equal_bias(value):
    rng = np.random.default_rng(2)
    x = np.full((4, 64), value, np.float32)
    g = rng.standard_normal(64).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    y = jit(ops.layer_norm)(x, g, b)
    assert y.dtype == np.float32
    # the row equals its mean exactly, so x - mean is 0 and the output is the bias
    np.testing.assert_array_equal(y, np.broadcast_to(b, y.shape))


@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-6), (np.float64, 1e-12)])
def test_layer_norm_random_rows(dtype, tol):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((5, 64)) * 4 + 1).astype(dtype)
    g = rng.standard_normal(64).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    y = check(ops.layer_norm, x, g, b, rtol=tol, atol=tol)
    assert y.dtype == dtype
    # independent: normalized rows have mean 0 and (population) variance 1 before the affine map
    z = (y.astype(np.float64) - b) / g
    np.testing.assert_allclose(z.mean(axis=-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(z.var(axis=-1), 1.0, rtol=1e-4)


# --------------------------------------------------------------------------- attention, feedforward


def test_attention_promotes_to_float64():
    rng = np.random.default_rng(4)
    t, d = 6, 16
    q, k, v = (rng.standard_normal((t, d)).astype(np.float32) for _ in range(3))
    mask = ops.causal_mask(t)
    y = check(ops.attention, q, k, v, mask, rtol=1e-6, atol=1e-6)
    assert y.dtype == np.float64  # / np.sqrt(q.shape[-1]) is a float64 NumPy scalar
    # causal: the first row attends only to the first position
    np.testing.assert_allclose(y[0], v[0], rtol=1e-6, atol=1e-6)


def test_attention_with_triu_inf_mask():
    rng = np.random.default_rng(5)
    t, d = 8, 4
    q, k, v = (rng.standard_normal((t, d)).astype(np.float32) for _ in range(3))
    mask = np.triu(np.ones((t, t), np.float32) * -np.inf, k=1)
    check(ops.attention, q, k, v, mask, rtol=1e-6, atol=1e-6)


def test_feedforward_and_linear():
    rng = np.random.default_rng(6)
    n, d, h = 5, 16, 64
    x = rng.standard_normal((n, d)).astype(np.float32)
    w1 = (rng.standard_normal((d, h)) * 0.2).astype(np.float32)
    b1 = (rng.standard_normal(h) * 0.2).astype(np.float32)
    w2 = (rng.standard_normal((h, d)) * 0.2).astype(np.float32)
    b2 = (rng.standard_normal(d) * 0.2).astype(np.float32)
    y = check(ops.feedforward, x, w1, b1, w2, b2, rtol=2e-6, atol=2e-6)
    assert y.dtype == np.float64  # gelu promotes
    assert check(ops.linear, x, w1, b1, rtol=2e-6, atol=2e-6).dtype == np.float32


# --------------------------------------------------------------------------- reductions

X3 = np.random.default_rng(7).standard_normal((3, 4, 5)).astype(np.float32)


@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1, -2, (0, 2), (-1, 0), (0, 1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_max_axes(axis, keepdims):
    def f(x):
        return np.sum(x, axis=axis, keepdims=keepdims), np.max(x, axis=axis, keepdims=keepdims), x.sum(axis=axis, keepdims=keepdims)

    got = jit(f)(X3)
    for a, e in zip(got, f(X3)):
        assert_same(a, e, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("axis", [None, 0, -1, (1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_mean_var_axes(axis, keepdims):
    def f(x):
        return np.mean(x, axis=axis, keepdims=keepdims), np.var(x, axis=axis, keepdims=keepdims), x.mean(axis=axis, keepdims=keepdims), x.var(axis=axis, keepdims=keepdims)

    got = jit(f)(X3)
    for a, e in zip(got, f(X3)):
        assert_same(a, e, rtol=2e-6, atol=1e-6)


def test_integer_reductions_follow_numpy_dtypes():
    x = np.arange(-12, 12, dtype=np.int32).reshape(4, 6)
    u = np.arange(24, dtype=np.uint8).reshape(4, 6)

    def f(x, u):
        return np.sum(x, axis=0), np.max(x, axis=1), np.mean(x, axis=-1), np.var(x), np.sum(u), np.max(u, axis=0)

    got = jit(f)(x, u)
    expected = f(x, u)
    assert [g.dtype for g in got] == [np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.float64), np.dtype(np.float64),
                                      np.dtype(np.uint64), np.dtype(np.uint8)]
    for a, e in zip(got, expected):
        assert_same(a, e, rtol=1e-12, atol=0)


def test_max_of_all_negative_and_inf_rows():
    # an accumulator left uninitialized or started at 0 would give a wrong answer here
    x = np.array([[-5.0, -3.0, -7.0], [-np.inf, -np.inf, -np.inf], [-1e30, -np.inf, -2e30]], np.float32)
    got = check(lambda x: np.max(x, axis=-1), x)
    np.testing.assert_array_equal(got, np.array([-3.0, -np.inf, -1e30], np.float32))


def test_broadcast_vectors():
    rng = np.random.default_rng(8)
    m = rng.standard_normal((4, 5)).astype(np.float32)
    row = rng.standard_normal(5).astype(np.float32)
    col = rng.standard_normal((4, 1)).astype(np.float32)
    r = rng.standard_normal((1, 5)).astype(np.float64)
    s = np.float32(2.5)
    check(lambda m, row, col, r, s: (m + row) * col - r / s, m, row, col, r, s)
    # an outer broadcast (4,1) x (1,5) -> (4,5) and a 3-D broadcast
    check(lambda col, r: col * r, col, r)
    t = rng.standard_normal((2, 1, 5)).astype(np.float32)
    check(lambda t, col: np.maximum(t, col) + t**2, t, col)


# --------------------------------------------------------------------------- NEP 50 promotion


def test_float32_times_numpy_float64_scalar_is_float64():
    x = np.linspace(-1, 1, 9, dtype=np.float32)
    y = check(lambda x: x * np.sqrt(2 / np.pi), x)
    assert y.dtype == np.float64


def test_float32_times_python_float_stays_float32():
    x = np.linspace(-1, 1, 9, dtype=np.float32)
    assert check(lambda x: x * 0.5, x).dtype == np.float32
    assert check(lambda x: 0.5 * x + 1 - 3 / (x + 2), x).dtype == np.float32


def test_int32_plus_python_float_is_float64():
    x = np.arange(-4, 5, dtype=np.int32)
    assert check(lambda x: x + 1.5, x).dtype == np.float64


def test_int8_plus_int_that_does_not_fit_raises_overflow_like_numpy():
    x = np.arange(4, dtype=np.int8)
    with pytest.raises(OverflowError):
        x + 1000  # NumPy's own behaviour, which the compiler must reproduce
    with pytest.raises(OverflowError, match="1000"):
        jit(lambda x: x + 1000)(x)


def test_int8_plus_int_that_fits_stays_int8_and_wraps():
    x = np.array([120, -128, 0, 5], np.int8)
    y = check(lambda x: x + 100, x, rtol=0, atol=0)
    assert y.dtype == np.int8


def test_numpy_float32_scalar_with_float64_array():
    x = np.linspace(0, 1, 5)
    assert check(lambda x: x * np.float32(3), x).dtype == np.float64
    y32 = np.linspace(0, 1, 5, dtype=np.float32)
    assert check(lambda y: y * np.float64(3), y32).dtype == np.float64
    assert check(lambda y: y + np.int64(3), y32).dtype == np.float64  # float32 + int64 -> float64


def test_constants_fold_and_pow_dtypes():
    x = np.linspace(0.5, 2, 7, dtype=np.float32)
    assert check(lambda x: x ** 3 + np.sqrt(2.0) * x, x).dtype == np.float64  # np.sqrt(2.0) is np.float64
    assert check(lambda x: np.power(x, 0.5) - np.exp(-x), x).dtype == np.float32


# --------------------------------------------------------------------------- floor division and remainders

_FLOAT_EDGES = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, -7.0, 7.0, 0.1, 1e30, -1e30, 1e-30]


def _pairs(values, dtype):
    a, b = np.meshgrid(np.array(values, dtype), np.array(values, dtype), indexing="ij")
    return a.ravel(), b.ravel()


def assert_bitwise(actual, expected):
    """Exactly NumPy's answer: dtype, values, NaN positions and the sign of zeros."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    same = (actual == expected) & (np.signbit(actual) == np.signbit(expected))
    if actual.dtype.kind == "f":
        same |= np.isnan(actual) & np.isnan(expected)
    assert same.all(), list(zip(actual[~same], expected[~same]))[:5]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ufunc", [np.floor_divide, np.remainder, np.fmod])
def test_float_division_edges_match_numpy_bitwise(ufunc, dtype):
    # Python's convention: the remainder takes the divisor's sign, -2.5 % inf is inf, x // 0 is ±inf
    a, b = _pairs(_FLOAT_EDGES, dtype)
    with np.errstate(all="ignore"):
        expected = ufunc(a, b)
    assert_bitwise(jit(lambda x, y: ufunc(x, y))(a, b), expected)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint64])
@pytest.mark.parametrize("ufunc", [np.floor_divide, np.remainder, np.fmod])
def test_integer_division_by_zero_and_min_by_minus_one_match_numpy(ufunc, dtype):
    # both trap on x86 if divided naively; NumPy answers 0 for x // 0 and x % 0, and MIN // -1 wraps to MIN
    info = np.iinfo(dtype)
    values = [info.min, info.min + 1, 0, 1, 2, 7, info.max - 1, info.max]
    values += [-1, -2, -7] if info.min < 0 else []
    a, b = _pairs(values, dtype)
    with np.errstate(all="ignore"):
        expected = ufunc(a, b)
    assert_bitwise(jit(lambda x, y: ufunc(x, y))(a, b), expected)
    assert (expected[b == 0] == 0).all()  # the case the guard exists for is in the sample


def test_floordiv_mod_operators_and_divmod_trace_with_numpy_dtypes():
    x = np.array([7, -7, 6, -6], np.int16)
    y = np.array([2, 2, -4, -4], np.int16)
    q, r = jit(lambda a, b: divmod(a, b))(x, y)
    assert_bitwise(q, x // y)
    assert_bitwise(r, x % y)
    q, r = jit(lambda a, b: np.divmod(a, b))(x.astype(np.float32), 2.5)
    assert_bitwise(q, x.astype(np.float32) // 2.5)
    assert_bitwise(r, x.astype(np.float32) % 2.5)
    # a Python or NumPy scalar on the left: divmod(7, x) is 7 // x and 7 % x (Tensor.__rdivmod__)
    for scalar in (7, np.int16(-9), 2.5):
        q, r = jit(lambda b: divmod(scalar, b))(y)
        assert_bitwise(q, np.floor_divide(scalar, y))
        assert_bitwise(r, np.remainder(scalar, y))
    # Python scalars are weak on either side; bool operands compute in int8 as NumPy's loops do
    assert_bitwise(jit(lambda a: 100 // a + a % 3)(x), 100 // x + x % 3)
    flags = np.array([True, False, True])
    with np.errstate(divide="ignore"):
        expected = np.floor_divide(flags, flags[::-1])
    assert_bitwise(jit(lambda a, b: a // b)(flags, flags[::-1].copy()), expected)


@pytest.mark.parametrize("ufunc", [np.floor, np.ceil, np.trunc])
def test_rounding_keeps_integer_dtypes_and_signed_zeros(ufunc):
    x = np.array([-2.5, -0.5, -0.0, 0.5, 2.5, np.inf, np.nan], np.float32)
    assert_bitwise(jit(lambda v: ufunc(v))(x), ufunc(x))
    i = np.array([-3, 0, 5], np.int16)
    assert_bitwise(jit(lambda v: ufunc(v))(i), ufunc(i))


# --------------------------------------------------------------------------- argmax / argmin


@pytest.mark.parametrize("fn", [np.argmax, np.argmin])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (None, True), (0, False), (1, True), (-1, False)])
def test_argmax_argmin_first_occurrence_and_first_nan(fn, axis, keepdims):
    # ties keep the first position, the first NaN wins, -0.0 ties with 0.0, infinities are values
    x = np.array([[1.0, 3.0, 3.0, -np.inf],
                  [np.nan, 2.0, np.nan, 5.0],
                  [-0.0, 0.0, -0.0, 0.0],
                  [np.inf, -np.inf, np.inf, 1.0]], np.float32)
    assert_same(jit(lambda v: fn(v, axis=axis, keepdims=keepdims))(x), fn(x, axis=axis, keepdims=keepdims))
    for ints in (np.array([[3, -7, 3], [-7, -7, 0]], np.int8), np.array([[250, 3, 250]], np.uint8),
                 np.array([[True, False, True], [False, False, False]])):
        assert_same(jit(lambda v: fn(v, axis=axis if axis != -1 else 1, keepdims=keepdims))(ints),
                    fn(ints, axis=axis if axis != -1 else 1, keepdims=keepdims))


def test_argmax_errors_name_the_problem():
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        jit(lambda v: np.argmax(v, axis=1))(np.zeros((2, 0), np.float32))
    with pytest.raises(TypeError, match="axis must be an integer or None"):
        jit(lambda v: np.argmax(v, axis=(0, 1)))(np.zeros((2, 3), np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64])
@pytest.mark.parametrize("shape, axis", [((50257,), 0), ((3, 20000), 1), ((20000, 3), 0), ((4, 1, 5000, 1), 2)])
def test_long_scans_match_numpy_bit_for_bit(dtype, shape, axis):
    """NumPy's cumsum/cumprod add (multiply) in order along the axis, rounding every step; so does the
    compiled scan, however long the axis: every element equal bit for bit (float16 rounds each step too)."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    near_one = (1 + rng.standard_normal(shape) * 1e-3).astype(dtype) if dtype != np.int64 else np.ones(shape, dtype)
    for fn, arg in ((np.cumsum, x), (np.cumprod, near_one)):
        expected, actual = fn(arg, axis=axis), jit(lambda a, fn=fn: fn(a, axis=axis))(arg)
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        assert np.array_equal(actual.view(np.uint8), expected.view(np.uint8)), fn.__name__


def test_scan_is_a_loop_on_the_cpu_and_one_parallel_generic_on_the_gpu():
    """The CPU walks the scanned axis once (linear in its length); the GPU, whose host code may not
    loop over device data, gives every output element a thread that folds its prefix."""
    import compiler
    x = np.ones((4, 6), np.float32)
    cpu = compiler.emit(lambda a: np.cumsum(a, axis=1), x, stage="tensor")
    gpu = compiler.emit(lambda a: np.cumsum(a, axis=1), x, stage="tensor", target="gpu")
    assert "scf.for" in cpu and '"reduction"' not in cpu
    assert "scf.for" not in gpu and '"reduction"' in gpu


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.int32])
@pytest.mark.parametrize("base_shape", [(), (1,)])
def test_integer_power_of_a_broadcast_base_wraps_as_numpy(dtype, base_shape):
    """A 0-d (or length-1) base against 40 exponents, some with the top bits set: NumPy's values modulo
    2**bits. (Square-and-multiply unrolled over 64 bits sent LLVM's optimizer into minutes on this shape,
    seed 1116; it is a loop now.)"""
    rng = np.random.default_rng(3)
    top = np.iinfo(dtype).max
    exponents = np.concatenate([np.arange(20), rng.integers(0, top, 20, dtype=dtype)]).astype(dtype)
    base = np.full(base_shape, 25, dtype)
    fn = lambda b, e: b ** e  # noqa: E731
    got, want = jit(fn)(base, exponents), fn(base, exponents)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def _ties_and_nans(shape, dtype, rng):
    """Keys with many ties (a stable order is then not any order), and for floats NaNs, infinities and
    both zeros (equal keys that NumPy's stable sort keeps in index order)."""
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    x = rng.integers(-6, 7, shape).astype(dtype) if np.dtype(dtype).kind in "iu" else \
        (rng.integers(-6, 7, shape) * 0.5).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[rng.random(shape) < 0.05] = np.nan
        x[rng.random(shape) < 0.05] = -np.inf
        x[x == 0] = np.where(rng.random(np.count_nonzero(x == 0)) < 0.5, -0.0, 0.0).astype(dtype)
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint16, np.int64, np.bool_])
@pytest.mark.parametrize("shape, axis", [((50257,), 0), ((3, 4097), 1), ((1024, 3), 0), ((2, 1, 33, 1), 2), ((5, 1), 1)])
def test_long_sorts_give_numpys_stable_order(dtype, shape, axis):
    """The sorting network (its lengths padded to a power of two: 65,536, 8,192, 1,024, 64, 1) gives
    exactly NumPy's stable argsort, ties and NaNs included, and np.sort's values bit for bit."""
    rng = np.random.default_rng(11)
    x = _ties_and_nans(shape, dtype, rng)
    order = jit(lambda a: np.argsort(a, axis=axis, kind="stable"))(x)
    expected = np.argsort(x, axis=axis, kind="stable")
    assert order.dtype == expected.dtype and np.array_equal(order, expected)
    values = jit(lambda a: np.sort(a, axis=axis))(x)
    assert np.array_equal(values.view(np.uint8), np.take_along_axis(x, expected, axis).view(np.uint8))


@pytest.mark.parametrize("n", [2, 3, 8, 100])
def test_sorts_of_one_shape_in_one_function_keep_their_own_orders(n):
    """Each network starts from its own buffer: CSE merges the identical starting positions of two sorts
    of one shape (and a length-2 network's one-pass loops fold away), which bufferization then could not
    write both orders into (a lexsort of two keys failed to compile)."""
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((3, n)), rng.integers(0, 3, (3, n)).astype(np.float64)
    fn = lambda a, b: (np.argsort(a), np.argsort(b, kind="stable"), np.sort(a + b), np.lexsort((a, b)))  # noqa: E731
    for got, want in zip(jit(fn)(a, b), fn(a, b)):
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_sorting_is_a_network_of_loops_on_the_cpu_and_counting_on_the_gpu():
    """The CPU's passes run in two loops (n log^2 n work, an IR whose size does not grow with n); the
    GPU's host code may not loop over device data, so it counts, a thread per element."""
    import compiler
    x = np.ones((4, 6), np.float32)
    cpu = compiler.emit(lambda a: np.argsort(a, axis=1), x, stage="tensor")
    gpu = compiler.emit(lambda a: np.argsort(a, axis=1), x, stage="tensor", target="gpu")
    assert cpu.count("scf.for") == 2 and '"reduction"' not in cpu
    assert "scf.for" not in gpu and gpu.count('"reduction"') == 2


def test_a_scan_among_many_results_keeps_its_loop_names_apart_from_the_result_arguments():
    """The scan loop's carried values are named apart from the function's result arguments (%out0,
    %out1, ...): with eleven results, a carried %out10 once collided with the eleventh (found by the
    graph fuzzer)."""
    x = np.arange(1, 5, dtype=np.float16)
    fn = jit(lambda a: [np.cumsum(a)] + [a * k for k in range(11)])
    for got, want in zip(fn(x), [np.cumsum(x)] + [x * k for k in range(11)]):
        assert got.dtype == want.dtype and np.array_equal(got, want)
