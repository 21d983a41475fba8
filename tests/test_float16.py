"""float16 against NumPy over every one of its 65,536 bit patterns where that is cheap: NumPy's
half-precision loops convert to float32, compute and round back, so arithmetic and sqrt must agree
bit for bit, the math functions too (the CPU calls NumPy's own float16 loops for them), and every
conversion exactly. Reductions and matmul accumulate in float32 and round once; the tests say where
NumPy itself does otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import jit

EVERY_HALF = np.arange(2 ** 16, dtype=np.uint16).view(np.float16)
FINITE_HALF = EVERY_HALF[np.isfinite(EVERY_HALF)]


def _same_bits_or_both_nan(got, expected):
    assert got.dtype == expected.dtype and got.shape == expected.shape
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan)
    bits = f"u{expected.dtype.itemsize}"
    np.testing.assert_array_equal(got[~nan].view(bits), expected[~nan].view(bits))


def _ulps_apart(got, expected) -> np.ndarray:
    """Distance in float16 ulps, by the ordered integer image of the bit patterns (NaNs matched apart)."""
    def ordered(x):
        b = x.view(np.uint16).astype(np.int32)
        return np.where(b & 0x8000, 0x8000 - b, b)  # -0.0 and +0.0 both map to 0
    return np.abs(ordered(got) - ordered(expected))


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod", "power"])
def test_arithmetic_on_every_float16_is_bit_exact(op):
    """Each pattern against a shuffled partner: normal, subnormal, zero, inf and NaN operands meet,
    and the results overflow, underflow and round to even as NumPy's do."""
    partner = np.random.default_rng(16).permutation(EVERY_HALF)
    ufunc = getattr(np, op)
    with np.errstate(all="ignore"):
        expected = ufunc(EVERY_HALF, partner)
    _same_bits_or_both_nan(jit(lambda a, b: ufunc(a, b))(EVERY_HALF, partner), expected)


def test_sqrt_and_python_scalar_operands_stay_float16_and_exact():
    """A Python float is weak (NEP 50): rounded to float16 first, then combined in float16."""
    with np.errstate(all="ignore"):
        expected = (np.sqrt(EVERY_HALF), EVERY_HALF * 3.3, 0.1 - EVERY_HALF, EVERY_HALF ** 2)
    got = jit(lambda x: (np.sqrt(x), x * 3.3, 0.1 - x, x ** 2))(EVERY_HALF)
    for g, e in zip(got, expected):
        assert e.dtype == np.float16
        _same_bits_or_both_nan(g, e)


@pytest.mark.parametrize("ufunc", [np.exp, np.log, np.sin, np.cos, np.tanh, np.exp2, np.log2, np.log10, np.log1p, np.expm1])
def test_math_functions_of_every_float16_are_numpys(ufunc):
    """The CPU calls NumPy's own float16 loop (its SIMD code): every value NumPy's, bit for bit."""
    with np.errstate(all="ignore"):
        expected = ufunc(EVERY_HALF)
    _same_bits_or_both_nan(jit(lambda x: ufunc(x))(EVERY_HALF), expected)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.bool_])
@pytest.mark.parametrize("ufunc", [np.sin, np.sqrt, np.exp])
def test_math_of_small_integers_is_computed_in_float16_as_numpy_chooses(ufunc, dtype):
    x = np.arange(-128, 128).astype(dtype)
    with np.errstate(all="ignore"):
        expected = ufunc(x)
    _same_bits_or_both_nan(jit(lambda a: ufunc(a))(x), expected)


def test_conversions_to_and_from_float16_are_exact():
    """Widening is exact; narrowing rounds once, straight from float64 (no double rounding through
    float32: the float64 values sit just off float16 ties)."""
    ties = FINITE_HALF.astype(np.float64)
    ties = (ties[:-1] + ties[1:]) / 2
    ties = ties[np.isfinite(ties)]
    narrow64 = np.concatenate([ties, ties + np.abs(ties) * 2.0 ** -40, ties - np.abs(ties) * 2.0 ** -40,
                               [65519.99, 65520.0, -65520.0, 1e-8, 2.0 ** -25, 2.0 ** -25 * (1 + 2.0 ** -30), 1e300]])
    ints = np.array([0, 1, -1, 2047, 2049, 2051, 4097, 65503, 65504, 65519, 65520, -70000, 2 ** 40], np.int64)
    with np.errstate(all="ignore"):
        expected = (EVERY_HALF.astype(np.float32), EVERY_HALF.astype(np.float64), narrow64.astype(np.float16),
                    narrow64.astype(np.float32).astype(np.float16), ints.astype(np.float16),
                    ints.astype(np.uint32).astype(np.float16), EVERY_HALF.astype(bool))
        got = jit(lambda h, d, i: (h.astype(np.float32), h.astype(np.float64), d.astype(np.float16),
                                   d.astype(np.float32).astype(np.float16), i.astype(np.float16),
                                   i.astype(np.uint32).astype(np.float16), h.astype(bool)))(EVERY_HALF, narrow64, ints)
    for g, e in zip(got, expected):
        _same_bits_or_both_nan(g, e)


@pytest.mark.parametrize("dst", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_float16_to_integers_truncates_and_wraps_like_numpy(dst):
    x = FINITE_HALF[np.abs(FINITE_HALF) < 65504]
    if np.dtype(dst).kind == "u" and np.dtype(dst).itemsize == 8:
        x = x[x > -1]  # NumPy's negative float -> uint64 is not the same on every loop
    with np.errstate(invalid="ignore"):
        expected = x.astype(dst)
    got = jit(lambda a: a.astype(dst))(x)
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got, expected)


def test_comparisons_maximum_and_argmax_on_every_float16():
    partner = np.random.default_rng(3).permutation(EVERY_HALF)
    fn = jit(lambda a, b: (a < b, a == b, np.maximum(a, b), np.minimum(a, b), np.argmax(a[:1000]), np.max(b[5:900])))
    got = fn(EVERY_HALF, partner)
    expected = (EVERY_HALF < partner, EVERY_HALF == partner, np.maximum(EVERY_HALF, partner),
                np.minimum(EVERY_HALF, partner), np.argmax(EVERY_HALF[:1000]), np.max(partner[5:900]))
    for g, e in zip(got, expected):
        e = np.asarray(e)
        _same_bits_or_both_nan(np.asarray(g), e)


def test_sums_and_products_follow_numpys_order_and_rounding():
    """4,096 ones: NumPy sums them to 4096 along the contiguous axis, in float32 pairwise, but along
    axis 0 rounds to float16 after every addition and stops at 2048 (2048 + 1 rounds back to 2048).
    The compiler's sums follow NumPy's order, so both are NumPy's, bit for bit; so are products, which
    NumPy multiplies in float32 along a contiguous axis and rounds after every step along any other."""
    ones = np.ones((4096, 2), np.float16)
    assert np.sum(ones, axis=0)[0] == 2048 and np.sum(np.ascontiguousarray(ones.T), axis=1)[0] == 4096  # NumPy
    x = np.random.default_rng(5).uniform(-4, 4, size=(300, 7)).astype(np.float16)
    factors = np.random.default_rng(6).uniform(0.9, 1.1, size=(40, 3)).astype(np.float16)
    fn = lambda o, a, f: (np.sum(o, axis=0), np.sum(o.T.copy(), axis=1), a.sum(axis=1), np.sum(a),
                          np.sum(a, axis=0))
    for got, expected in zip(jit(fn)(ones, x, factors), fn(ones, x, factors)):
        assert np.asarray(got).dtype == np.float16 and np.asarray(got).shape == np.shape(expected)
        assert np.asarray(got).tobytes() == np.asarray(expected).tobytes(), (got, expected)
    product = lambda f: (np.prod(f, axis=0), np.prod(f, axis=1), np.prod(f))
    for got, expected in zip(jit(product)(factors), product(factors)):
        assert got.dtype == np.float16 and got.tobytes() == np.asarray(expected).tobytes(), (got, expected)
    rounded_per_step = np.prod(factors, axis=0)  # NumPy
    assert not np.array_equal(rounded_per_step, np.prod(factors.astype(np.float32), axis=0).astype(np.float16))


def test_mean_and_var_follow_numpys_float16_recipes():
    """np.mean of float16 sums and divides in float32 and rounds the mean; np.var stays in float16
    throughout (mean, deviations, squares, their sum in NumPy's order): both are NumPy's bit for bit."""
    x = np.random.default_rng(8).uniform(-3, 3, size=(6, 50)).astype(np.float16)
    means, var = jit(lambda a: (np.mean(a, axis=1), np.var(a, axis=0)))(x)
    expected_means = np.mean(x, axis=1)
    assert means.dtype == expected_means.dtype == np.float16
    assert means.tobytes() == expected_means.tobytes()
    expected_var = np.var(x, axis=0)
    assert var.dtype == expected_var.dtype == np.float16
    assert var.tobytes() == expected_var.tobytes()


def test_matmul_accumulates_in_float32_as_numpy_does():
    rng = np.random.default_rng(12)
    a = rng.uniform(-2, 2, size=(2, 33, 300)).astype(np.float16)
    b = rng.uniform(-2, 2, size=(300, 17)).astype(np.float16)
    long = np.ones((1, 4096), np.float16)
    got, ones = jit(lambda a, b, o: (a @ b, o @ o.T))(a, b, long)
    expected = a @ b
    assert got.dtype == expected.dtype == np.float16
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float16)
    assert int(_ulps_apart(got.reshape(-1), exact.reshape(-1)).max()) <= 1
    assert int(_ulps_apart(got.reshape(-1), expected.reshape(-1)).max()) <= 2
    assert ones.dtype == np.float16 and ones[0, 0] == 4096 == (long @ long.T)[0, 0]


def test_a_float16_mean_divides_by_the_count_as_numpy_does():
    # NumPy divides by an np.intp count, in float64: 15300 is not a float16 (it would be 15296)
    x = np.random.default_rng(8).uniform(-1, 1, (3, 5100)).astype(np.float32)
    ones = np.full(15300, 0.5, np.float16)
    fns = [lambda a: np.mean(a, dtype=np.float16), lambda a: np.mean(a, axis=None, keepdims=True, dtype=np.float16),
           lambda a: np.var(a, dtype=np.float16)]
    for fn in fns:
        got, want = jit(fn)(x), np.asarray(fn(x))
        assert got.dtype == want.dtype == np.float16 and got.tobytes() == want.tobytes(), (got, want)
    got = jit(lambda o: np.mean(o, dtype=np.float16))(ones)
    assert got.dtype == np.float16 and float(got) == float(np.mean(ones, dtype=np.float16)) == float(np.float16(0.4998))
