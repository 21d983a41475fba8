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


def test_numpy_zero_d_power_disagrees_with_its_loops_and_the_checker_accepts_the_loops():
    """Fuzzer finding: float32 ``(-inf) ** 0.5`` is nan for NumPy 0-d arrays but inf (C's pow) for arrays,
    which is what the compiler gives; the checker judges 0-d cases against the array loops as well."""
    from harness.fuzzing.cases import encode_operand
    from harness.fuzzing.check import check_op_case

    base, exponent = np.array(-np.inf, np.float32), np.array(0.5, np.float32)
    with np.errstate(invalid="ignore"):
        zero_d = base ** exponent
        looped = np.power(base.reshape(1), exponent.reshape(1))
    assert np.isposinf(looped[0]), "NumPy's array loops follow C's pow"
    assert np.isnan(zero_d) or np.isposinf(zero_d)  # nan on the NumPy the fuzzer ran (2.4)
    got = jit(lambda a, b: a ** b)(base, exponent)
    assert got.dtype == np.float32 and np.isposinf(got)
    check_op_case({"kind": "op", "op": "operator.pow", "params": {},
                   "operands": [encode_operand(base), encode_operand(exponent)]})
