"""Minimal reproducers of compiler bugs the fuzzer found, each pinned against NumPy
(values and dtypes) so the bug stays fixed."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from compiler import jit

COMPARISONS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize("swap", [False, True])
def test_uint64_against_int64_comparison_is_exact(swap):
    # NumPy compares uint64 with int64 exactly (loops Qq->? / qQ->?); the compiler used a
    # signed comparison, so 2**63 + 5 (uint64) compared below -1 (int64).
    u = np.array([2**63 + 5, 3, 0, 7, 2**64 - 1], np.uint64)
    s = np.array([-1, 4, 0, 7, -(2**63)], np.int64)
    a, b = (s, u) if swap else (u, s)
    f = jit(lambda x, y: [op(x, y) for op in COMPARISONS])
    for op, got in zip(COMPARISONS, f(a, b)):
        expected = op(a, b)
        assert got.dtype == expected.dtype == np.bool_
        np.testing.assert_array_equal(got, expected, err_msg=op.__name__)


def test_where_with_python_bool_scalar_compiles():
    # a Python bool inlined into a region was emitted as `arith.constant true : i1`,
    # which MLIR does not parse
    c = np.array([[True, False], [False, True]])
    got = jit(lambda c: np.where(c, True, c))(c)
    expected = np.where(c, True, c)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("fn", [
    lambda x: x + True, lambda x: x * False, lambda x: np.maximum(x, False), lambda x: x == True,  # noqa: E712
    lambda x: x - True, lambda x: np.where(x > 1, x, False),
], ids=["add", "mul", "maximum", "eq", "sub", "where"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float32])
def test_python_bool_operand_is_a_numpy_bool(fn, dtype):
    # NEP 50: Python bool is not a weak scalar; NumPy treats it as np.bool_. The compiler
    # passed it to promotion as a weak scalar and raised TypeError for bool arrays.
    x = np.array([[1, 0], [2, 3]]).astype(dtype)
    try:
        expected = fn(x)
    except TypeError:
        with pytest.raises(TypeError):
            jit(fn)(x)
        return
    got = jit(fn)(x)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.float32])
def test_square_uses_numpys_loop_dtype(dtype):
    # np.square has no bool loop: NumPy squares bool as int8; the compiler multiplied
    # the bools (logical and) and returned bool
    x = np.array([[True, False], [True, True]]).astype(dtype)
    got = jit(np.square)(x)
    expected = np.square(x)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("x,sections", [
    (np.array([True]), [1]),
    (np.arange(6.0).reshape(2, 3), [0, 3, 5]),
    (np.arange(5, dtype=np.int16), [2, 2, 9]),
])
def test_split_with_empty_parts(x, sections):
    # an empty part at the end of the axis was emitted as extract_slice at offset == size,
    # which MLIR rejects ("offset 0 is out-of-bounds")
    for axis in range(x.ndim):
        expected = np.split(x, sections, axis=axis)
        got = jit(lambda x: np.split(x, sections, axis=axis))(x)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint64, np.int16])
@pytest.mark.parametrize("value", [-1, 300, -300, 2**64])
def test_comparison_with_out_of_range_python_int(dtype, value):
    # NumPy 2 compares uint8_array > -1 exactly (True everywhere); the compiler tried to
    # convert -1 to uint8 and raised OverflowError
    x = np.array([[0, 1], [2, 3]]).astype(dtype)
    fns = [lambda x, op=op: op(x, value) for op in COMPARISONS] + [lambda x, op=op: op(value, x) for op in COMPARISONS]
    got = jit(lambda x: [f(x) for f in fns])(x)
    for f, g in zip(fns, got):
        e = f(x)
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("base_shape, exponent_shape", [
    ((), ()), ((3,), ()), ((3,), (1,)), ((2, 3), (1, 1)), ((3, 1), (1, 1)), ((1,), ()),
    ((1,), (1,)), ((), (1,)), ((1, 1), (1, 1)), ((2, 3), (2, 1)), ((4,), (4,)),
    ((1, 1), (1,)), ((1,), (1, 1)), ((1, 1, 1), (1, 1)),  # one element broadcast to other unit axes: stride 0
])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_power_takes_numpys_sqrt_fast_path_where_numpy_does(base_shape, exponent_shape, dtype):
    """Fuzzer finding: NumPy's float power loop takes fast paths when the exponent is a scalar to it
    (one element, 0-d or broadcast over several); for 0.5 that is sqrt, so (-inf) ** 0.5 is NaN and
    (-0.0) ** 0.5 is -0.0 there, while C's pow (every other layout) gives +inf and +0.0. float16's
    loop has no fast path (seed 1146), but its ``**`` with a Python float does, as every dtype's."""
    base = np.full(base_shape, -np.inf, dtype)
    base.flat[0] = -0.0
    exponent = np.full(exponent_shape, 0.5, dtype)
    with np.errstate(invalid="ignore"):
        expected = np.power(base, exponent)
    got = jit(lambda a, b: np.power(a, b))(base, exponent)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    same = (got == expected) | (np.isnan(got) & np.isnan(expected))
    assert same.all() and (np.signbit(got) == np.signbit(expected)).all(), (got, expected)
    with np.errstate(invalid="ignore"):
        expected = base ** 0.5  # a Python float exponent: always the fast path
    got = jit(lambda a: a ** 0.5)(base)
    assert ((got == expected) | (np.isnan(got) & np.isnan(expected))).all()
    assert (np.signbit(got) == np.signbit(expected)).all()

    def in_place(a):
        a = a.copy()
        a **= 0.5
        return a
    with np.errstate(invalid="ignore"):
        expected = in_place(base)
    got = jit(in_place)(base)
    assert got.dtype == expected.dtype and ((got == expected) | (np.isnan(got) & np.isnan(expected))).all()
    assert (np.signbit(got) == np.signbit(expected)).all()


@pytest.mark.parametrize("value", [-5, 300, 2**64 - 1, -1])
def test_where_wraps_python_ints_into_an_integer_result_like_numpy(value):
    """Fuzzer finding: np.where converts a Python int through a C integer and wraps it into the result
    dtype (ufuncs would raise OverflowError); the compiler raised."""
    cond, other = np.array([True, False]), np.array([7, 8], np.uint8)
    expected = np.where(cond, value, other)
    got = jit(lambda c, o: np.where(c, value, o))(cond, other)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


@pytest.mark.parametrize("value", [300, -1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, -(2**63) - 1])
@pytest.mark.parametrize("ufunc", [np.logical_and, np.logical_or, np.logical_xor])
def test_logical_ops_take_python_ints_through_a_c_long(ufunc, value):
    """Fuzzer finding: the logical ufuncs run their bool loop on a Python int converted to a C long,
    so one beyond int64 is an OverflowError where the compiler had returned a result."""
    x = np.array([0, 3], np.uint64)
    try:
        expected = ufunc(x, value)
    except OverflowError:
        with pytest.raises(OverflowError):
            jit(lambda a: ufunc(a, value))(x)
        return
    got = jit(lambda a: ufunc(a, value))(x)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


@pytest.mark.parametrize("fn", [
    lambda x: np.broadcast_to(np.cumprod(x, axis=-1), (3, 2, 2)),
    lambda x: np.broadcast_to(np.cumsum(x, axis=-1), (3, 2, 2)),
    lambda x: np.cumsum(x + 1, axis=1) + np.zeros((3, 2, 2), np.float32),
    lambda x: np.broadcast_to(np.nancumsum(x, axis=1), (3, 2, 2)),
    lambda x: np.broadcast_to(np.cumprod(x.T * 1.25, axis=-1), (3, 1, 2)),  # a loop of two steps
])
def test_scan_of_one_step_fused_into_a_broadcast_does_not_accumulate_across_it(fn):
    # seed 1118: a cumprod along an axis of length 1 is one pass of the scan loop, which MLIR folds to a
    # single generic reading its running value through its result's block argument; elementwise fusion
    # into a broadcast mapped that argument onto the broadcast's result, so the product ran on across
    # the copies (1.5, 2.25, 3.375, ...)
    x = np.array([[1.5], [2.0]], np.float32)
    got, expected = jit(fn)(x), fn(x)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("base", [2.0**-23, 2.0**-149, 2.0**3, 2.0**-6, 10.0, 0.1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_constant_power_of_two_base_keeps_the_c_librarys_pow(base, dtype):
    """Fuzzer finding (seed 1123): LLVM rewrote pow(2**n, y) with a constant base as exp2(n * y), whose
    rounded product put float_power(2**-23, 3.94) 31 ulps from NumPy's (the C library's pow). Both
    a Python float base and a NumPy array base compiled to a constant, checked to within 2 ulps."""
    y = np.array([3.9402017211914062, -1.2345678901234567, 0.3333333333333333, 5.9], dtype)
    with np.errstate(all="ignore"):
        want = [np.float_power(base, y), np.power(dtype(base), y)]
    got = jit(lambda e: [np.float_power(base, e), np.power(np.full(4, base, dtype), e)])(y)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_max_ulp(g, w, maxulp=2)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("signs", [(1, 1), (-1, 1), (1, -1), (-1, -1)])
def test_arctan2_of_two_zeros_that_fold_to_constants_is_c_librarys(dtype, signs):
    # np.angle of an integer array that folds to zeros (x ^ x, x * 0) returned NaN: once fused into one
    # kernel, MLIR's constant folder makes math.atan2 of two zeros NaN, where C's atan2 gives +-0
    # (x = +0.0) or +-pi (x = -0.0). One result per function, so that the zeros fuse into the atan2.
    y_sign, x_sign = signs
    i = np.array([3, -7], np.int64)
    for fn in (lambda i: np.arctan2(y_sign * (i ^ i).astype(dtype), x_sign * (i * 0).astype(dtype)),
               lambda i: np.angle(x_sign * (i ^ i))):
        got, want = jit(fn)(i), fn(i)
        assert got.dtype == want.dtype
        assert got.tobytes() == want.tobytes(), (got, want)  # the zeros' signs and pi's rounding too


@pytest.mark.parametrize("value", [-3.68359375, 300.5, 1e20, float("nan"), 2.5])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint64])
def test_a_python_float_under_an_unsafe_integer_dtype_is_cast_as_numpy_casts_it(value, dtype):
    # Fuzzer finding (seed 1142): np.add(x, -3.68, dtype=np.uint8, casting="unsafe") raised
    # OverflowError at trace time, where NumPy casts the float as a float64 (to 253: wrapped).
    # Python ints out of range still raise, as in NumPy.
    x = np.array([1.0, 2.5, -7.0], np.float16)
    fn = lambda a: np.add(a, value, dtype=dtype, casting="unsafe")
    with np.errstate(invalid="ignore"):
        want = fn(x)
    got = jit(fn)(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    with pytest.raises(OverflowError, match="out of bounds"):
        jit(lambda a: np.add(a, -3, dtype=np.uint8, casting="unsafe"))(x)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_convolution_adds_only_overlapping_products_as_numpy_does(dtype):
    # Fuzzer finding (seed 1160): np.poly of NaN roots gave NaN where NumPy gives its leading 1.0. The
    # convolution multiplied its zero padding by the other operand, and 0 * NaN (or inf) is NaN, where
    # NumPy's correlate adds only the products of elements that overlap.
    a = np.array([0.5, -1.5, 2.0, 3.0, -0.25, 1.0, 4.0], dtype)
    v = np.array([1.0, np.nan, np.inf, 2.0], dtype)
    for fn in (lambda x, y: np.convolve(x, y), lambda x, y: np.convolve(x, y, "same"), lambda x, y: np.correlate(x, y),
               lambda x, y: np.correlate(y, x, "full")):
        with np.errstate(invalid="ignore"):
            want = fn(a, v)
        got = jit(fn)(a, v)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-3 if dtype == np.float16 else 1e-6)
    roots = np.array([np.nan, 2.0, np.nan], dtype)
    want, got = np.poly(roots), jit(np.poly)(roots)
    assert got.dtype == want.dtype and got[0] == want[0] == 1.0 and np.isnan(got[1:]).all() == np.isnan(want[1:]).all()


def test_one_bool_item_set_through_flat_from_a_one_element_array():
    # Fuzzer finding (seed 1172): NumPy's bool item takes a one-element array (its element's truth), where the
    # compiler's array of positions (intp) refused it with NumPy's "Error setting single item of array."
    def fn(a):
        y = np.zeros_like(a, dtype=bool, shape=3)
        y.flat[1] = a > 0
        z = np.all(a).copy()
        z.flat[0] = np.all(a).ravel()[::-1]
        return y, z

    for x in (np.array([1.5], np.float16), np.array([-1.5], np.float16)):
        for got, want in zip(jit(fn)(x), fn(x)):
            assert type(got) is type(want) and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="Error setting single item of array"):  # NumPy's own, for a float item
        jit(lambda a: (lambda y: (y.flat.__setitem__(0, a), y)[1])(np.zeros_like(a, shape=2)))(np.ones(1))


ONE_ELEMENT_SHAPES = [(), (1,), (1, 1), (1, 1, 1)]


@pytest.mark.parametrize("x_shape", ONE_ELEMENT_SHAPES)
@pytest.mark.parametrize("bound_shapes", [(lo, hi) for lo in ONE_ELEMENT_SHAPES for hi in ONE_ELEMENT_SHAPES])
def test_clip_of_one_element_takes_numpys_scalar_bounds_path_where_numpy_does(x_shape, bound_shapes):
    """NumPy's clip keeps x where it ties a bound of the other zero when both bounds reach its loop at stride 0
    (the general loop gives the bound): with one element in all, that is where a bound is 0-d or NumPy's
    iterator broadcasts (shapes that differ, 0-d ones aside), as for power's fast paths; clip(x of (1,), bounds
    of (1, 1)) gave +0.0 where NumPy keeps -0.0."""
    x = np.full(x_shape, -0.0)
    lo, hi = np.full(bound_shapes[0], 0.0), np.full(bound_shapes[1], 1.0)
    expected = np.clip(x, lo, hi)
    got = jit(lambda a, b, c: np.clip(a, b, c))(x, lo, hi)
    assert np.shape(got) == np.shape(expected) and np.asarray(got).dtype == expected.dtype
    assert np.signbit(got).tolist() == np.signbit(expected).tolist(), (got, expected)
