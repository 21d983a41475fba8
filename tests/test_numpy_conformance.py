"""Corners of NumPy's API that a traced function must reproduce, each checked against NumPy
itself: which 0-d results are NumPy scalars, method signatures with positional ``out``, axis
arguments NumPy accepts or refuses, and a few functions' less common inputs."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from compiler import jit

X = np.arange(6.0).reshape(2, 3) - 2
V = np.arange(3.0)
Z = np.array(-0.0)
B = np.array([[True, False], [True, True]])
BV = np.array([True, False])


def _iadd(a):
    b = a.copy()
    b += 1
    return b


def assert_like_numpy(got, want):
    """The same kind of object (NumPy scalar or array), dtype, shape, values and signs of zeros; a list or
    tuple of them item by item."""
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_like_numpy(g, w)
        return
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.dtype == want_a.dtype and got_a.shape == want_a.shape, (got_a.dtype, got_a.shape, want_a.dtype, want_a.shape)
    np.testing.assert_array_equal(got_a, want_a)
    if want_a.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got_a), np.signbit(want_a))


SCALAR_OR_ARRAY = {
    # NumPy scalars: ufunc and reduction results, elements taken by integers, and what scalars' methods give
    "sum": (lambda a: a.sum(), X), "np.sum": (lambda a: np.sum(a), X), "mean": (lambda a: a.mean(), X),
    "var": (lambda a: np.var(a), X), "max": (lambda a: a.max(), X), "argmax": (lambda a: a.argmax(), X),
    "any": (lambda a: (a > 2).any(), X), "element": (lambda a: a[1, 2], X), "dot of vectors": (lambda a: a @ a, V),
    "ufunc of 0-d": (lambda a: np.sin(a), Z), "operator on 0-d": (lambda a: a + 1, Z), "clip of 0-d": (lambda a: np.clip(a, 0, 1), Z),
    "take one": (lambda a: np.take(a, 1), V), "0-d index array": (lambda a: a[np.array(1)], V), "x[()] of 0-d": (lambda a: a[()], Z),
    "astype of a sum": (lambda a: a.sum().astype(np.float32), X), "reshape of a sum": (lambda a: a.sum().reshape(()), X),
    # 0-d arrays: the argument itself, copies, casts and views of a 0-d array, np.where, an ellipsis
    "identity": (lambda a: a, Z), "copy": (lambda a: a.copy(), Z), "np.copy": (lambda a: np.copy(a), Z),
    "astype": (lambda a: a.astype(np.float32), Z), "where": (lambda a: np.where(a > 1, a, 0.0), Z),
    "reshape": (lambda a: a.reshape(()), Z), "x[...]": (lambda a: a[...], Z), "element with ellipsis": (lambda a: a[1, 2, ...], X),
    "squeeze to 0-d": (lambda a: np.squeeze(a[:1, :1]), X), "broadcast_to ()": (lambda a: np.broadcast_to(a, ()), Z),
    "in-place on a copy": (_iadd, Z), "a tuple of both": (lambda a: (a.sum(), a.max(axis=0)), X),
    # contractions: np.dot, np.inner and np.vdot of vectors give scalars, np.tensordot a 0-d array
    "np.dot of vectors": (lambda a: np.dot(a, a), V), "x.dot of vectors": (lambda a: a.dot(a), V),
    "np.dot of 0-d": (lambda a: np.dot(a, a), Z), "np.inner of vectors": (lambda a: np.inner(a, a), V),
    "np.vdot": (lambda a: np.vdot(a, a), X), "np.tensordot of vectors": (lambda a: np.tensordot(a, a, 1), V),
    "np.einsum to no labels": (lambda a: np.einsum("ij->", a), X), "np.einsum of vectors": (lambda a: np.einsum("i,i", a, a), V),
    "np.einsum keeping a label": (lambda a: np.einsum("ij->i", a), X),
    # NumPy's optimized path ends two or more operands in a matmul: a 0-d array, not a scalar; one operand: c_einsum's
    "np.einsum of vectors, optimized (a 0-d array)": (lambda a: np.einsum("i,i", a, a, optimize=True), V),
    "np.einsum of three vectors, greedy (a 0-d array)": (lambda a: np.einsum("i,i,i", a, a, a, optimize="greedy"), V),
    "np.einsum of one operand to no labels, optimized (a scalar)": (lambda a: np.einsum("ij->", a, optimize=True), X),
    "np.trace": (lambda a: np.trace(a), X), "x.trace of int8 (np.add.reduce: int64)": (lambda a: a.astype(np.int8).trace(), X),
    "np.count_nonzero of everything": (lambda a: np.count_nonzero(a), X),
    "np.count_nonzero by axis": (lambda a: np.count_nonzero(a, axis=0), X),
    "np.ptp of everything": (lambda a: np.ptp(a), X), "np.isclose of 0-d": (lambda a: np.isclose(a, 0.0), Z),
    "np.isclose of a 0-d and a vector": (lambda a: np.isclose(a, V), Z),
    "np.searchsorted of a 0-d": (lambda a: np.searchsorted(V, a), Z), "np.digitize of a 0-d": (lambda a: np.digitize(a, [1, 2]), Z),
    "np.nanargmax of everything": (lambda a: np.nanargmax(a), X), "np.lexsort of 0-d keys": (lambda a: np.lexsort((a, a)), Z), "np.interp of a 0-d": (lambda a: np.interp(a, [0, 1], [2, 3]), Z),
}


@pytest.mark.parametrize("name", list(SCALAR_OR_ARRAY))
def test_zero_d_results_are_scalars_where_numpy_gives_scalars(name):
    fn, arg = SCALAR_OR_ARRAY[name]
    want, got = fn(arg), jit(fn)(arg)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_like_numpy(g, w)
    else:
        assert_like_numpy(got, want)


def _flat_of_a_numpy_scalar(a):
    s = a.sum()
    f = s.copy().flat
    f[0] = 7.0
    return s, f.base, s.flat[...]


AGREES = {
    "sum(axis, dtype, out, keepdims) positionally": (lambda a: a.sum(0, None, None, True), X),
    "var(axis, dtype, out, ddof) positionally": (lambda a: a.var(0, None, None, 1), X),
    "max(axis, out, keepdims) positionally": (lambda a: a.max(0, None, True), X),
    "where=True spelled out": (lambda a: a.sum(axis=1, where=True), X),
    "astype copy=False": (lambda a: a.astype(np.float64, copy=False) * 2, X),
    "astype casting='unsafe'": (lambda a: a.astype(np.int32, casting="unsafe"), X),
    "sum over () adds to +0": (lambda a: np.sum(a, axis=()), np.array([-0.0, 1.0])),
    "float32 sum over ()": (lambda a: a.astype(np.float32).sum(axis=()), np.array([-0.0])),
    "mean over ()": (lambda a: np.mean(a, axis=()), np.array([-0.0])),
    "ufunc.reduce over () (each element folded alone, from the identity where there is one)": (
        lambda a: (np.subtract.reduce(a, axis=()), np.hypot.reduce(a, axis=()), np.logaddexp.reduce(a, axis=()),
                   np.bitwise_xor.reduce(a.astype(np.int8), axis=(), keepdims=True), np.divide.reduce(a, axis=(), initial=2)),
        np.array([-0.0, -3.0])),
    "sum of a 0-d -0.0": (lambda a: np.sum(a), Z),
    "sum of 0-d, axis 0": (lambda a: np.sum(a, axis=0), Z), "prod of 0-d, axis 0": (lambda a: np.prod(a, axis=0), Z),
    "max of 0-d, axis -1": (lambda a: np.max(a, axis=-1), Z), "any of 0-d, axis 0": (lambda a: np.any(a, axis=0), Z),
    "argmax of 0-d, axis 0": (lambda a: np.argmax(a, axis=0), Z),
    "argmin of 0-d, keepdims": (lambda a: np.argmin(a, axis=-1, keepdims=True), Z),
    "squeeze 0-d, axis 0": (lambda a: np.squeeze(a, axis=0), Z),
    "axis as np.int64": (lambda a: np.sum(a, axis=np.int64(1)), X),
    "reshape by np.int64": (lambda a: a.reshape(np.int64(3), 2), X),
    "expand_dims with a list": (lambda a: np.expand_dims(a, [0, 1]), X),
    "bool matmul": (lambda a: a @ a, B), "bool vector dot": (lambda a: a @ a, BV),
    "bool @ int8": (lambda a: a @ np.ones((2, 2), np.int8), B),
    "triu of a vector": (lambda a: np.triu(a), np.arange(3)), "tril of a vector, k=1": (lambda a: np.tril(a, 1), V),
    "split into 2.0 sections": (lambda a: np.split(a, 2.0)[1], np.arange(4)),
    "broadcast_to an np.int64 length": (lambda a: np.broadcast_to(a, np.int64(3)), np.ones(1)),
    "hstack casting='unsafe'": (lambda a: np.hstack([a, a], dtype=np.int8, casting="unsafe"), X),
    "stack casting='unsafe'": (lambda a: np.stack([a, a], dtype=np.int8, casting="unsafe"), X),
    "concatenate casting='unsafe'": (lambda a: np.concatenate([a, a], dtype=np.int8, casting="unsafe"), X),
    "bool == largest int64": (lambda a: a == 2**63 - 1, BV),
    "a nested list @ x (x.__rmatmul__)": (lambda a: [[1.0, 2.0], [3.0, 4.0]] @ a, np.arange(4.0).reshape(2, 2) - 1),
    "a list @ x, vector": (lambda a: [1.0, -2.0] @ a, X),
    "np.dot with a Python float (a strong float64)": (lambda a: np.dot(2.0, a.astype(np.float32)), X),
    "np.dot of a matrix and a stack of matrices": (lambda a: np.dot(a, np.ones((4, 3, 2))), X),
    "np.tensordot over no axes (outer product)": (lambda a: np.tensordot(a, V, 0), X),
    "np.tensordot with a negative count": (lambda a: np.tensordot(a, V, -1), X),
    "np.tensordot over paired axes out of order": (lambda a: np.tensordot(a, a.T, ([1, 0], [0, 1])), X),
    "np.tensordot over a sum of nothing": (lambda a: np.tensordot(a[:, :0], np.ones((0, 2)), 1), X),
    "np.clip and x.clip with the ufunc's dtype=, casting= and order= (NumPy's _clip passes them on)": (
        lambda a: (np.clip(a, -1, 1.5, dtype=np.float32), a.clip(None, 2, dtype=np.int8, casting="unsafe"),
                   np.clip(a.T, 0, None, order="F").ravel(order="K"), np.clip(a, None, None, dtype=np.float16)), X),
    "np.clip into out= with where= (the ufunc's mask)": (
        lambda a: (lambda o: (np.clip(a, -1, 1, out=o, where=a > 0), o))(np.full_like(a, 9.0)), X),
    "x.any and x.all take dtype second (NumPy's _methods._any/_all; np.any takes out)": (
        lambda a: (a.any(0, bool), a.all(None, None, None, True), a.any(1, None, np.zeros_like(a[:, 0], bool))), X),
    "x.choose of several positional choices (all of them choices) and of lists holding traced values": (
        lambda a: ((a > 0).astype(int).choose(a, -a), (a > 0).choose([a[0], a[1] * 2]), np.choose([0, 1, 0], [a[0], [a[1, 0], 5, 6]]),
                   (a > 0).astype(np.int8).choose([a, -a], a[0])), X),
    "== and != of an array with None or a string (elementwise over object dtype: all False, all True)": (
        lambda a: (a == None, None != a, a == "x", "x" != a, a[0] != b"y"), X),  # noqa: E711
    "round() of a NumPy scalar with ndigits (np.round's NumPy scalar)": (
        lambda a: (round(a.sum() / 3, 2), round(a.astype(np.int8).sum(), -1), round(a.astype(np.float16)[0, 1], 1)), X),
    "x.__array_namespace__() is NumPy (array-API code)": (
        lambda a: (lambda xp: (xp.sum(a, axis=0), xp.linalg.vector_norm(a)))(a.__array_namespace__()), X),
    "np.tensordot with a count as a 0-d array, a bool or a NumPy integer (not iterable: a count)": (
        lambda a: (np.tensordot(a, a, np.array(2)), np.tensordot(a, a.T, True), np.tensordot(a, a.T, np.int16(1))), X),
    "np.vecdot and np.matmul with axes as 0-d arrays and NumPy integers": (
        lambda a: (np.vecdot(a, a, axis=np.array(0)), np.matmul(a, a.T, axes=[(np.int8(0), 1), (0, np.array(1)), (0, 1)])),
        X),
    "np.inner with a 0-d operand": (lambda a: np.inner(a, Z), X),
    "np.linalg.cholesky of matrices holding NaN (OpenBLAS's potrf fails only a pivot <= 0)": (
        lambda a: (np.linalg.cholesky(np.array([[np.nan, 1.0], [2.0, 3.0]]) + a[0, 0] * 0),
                   np.linalg.cholesky(np.array([[4.0, np.nan], [np.nan, 3.0]]) + a[0, 0] * 0, upper=True)), X),
    "np.pad of uint8 by NumPy scalars out of range (cast: 300 wraps) and of float16 by NaN": (
        lambda a: (np.pad(a.astype(np.uint8), 1, constant_values=np.int64(300)), np.pad(a.astype(np.float16), (1, 2),
                   constant_values=np.nan)), X),
    # NumPy's BLAS np.dot (float32/float64, at most 2 axes) reads a one-element operand as a scalar s and calls
    # axpy into zeros: s == 0 leaves zeros against inf and NaN, a -0.0 product is +0.0; one element: s * x
    "np.dot by a zero 0-d (axpy: zeros against inf and NaN)": (lambda a: (np.dot(a / 0, a[0, 2]), (a / 0).dot(0.0)), X),
    "np.dot of -0.0 products (+0.0 through axpy, -0.0 for one element)": (
        lambda a: (np.dot(-a, 2.0), np.dot(-a[0, 2], 2.0), np.dot(-a[0, 2:], a[1, :1]), np.inner(-a[0, 2], a[1, 0])), X),
    "np.dot with a one-element matrix or vector operand": (
        lambda a: (np.dot((a / 0).reshape(6, 1), a[:1, 2:]), np.dot(a[0, 2:], (a / 0).reshape(1, 6)),
                   np.dot((a / 0).reshape(6, 1), a[0, 2:]), np.dot(a[:1, 2:], -a[1:, :1])), X),
    "np.inner, np.tensordot and np.linalg.multi_dot with a one-element operand": (
        lambda a: (np.inner((a / 0).reshape(6, 1), a[0, 2:]), np.tensordot(a / 0, a[0, 2], 0),
                   np.tensordot(a / 0, a[0, 2:], 0), np.linalg.multi_dot([(a / 0).reshape(6, 1), a[:1, 2:], a[:1, :2]])), X),
    "np.dot by a 0-d outside BLAS (float16, 3 axes: NumPy's plain multiply)": (
        lambda a: (np.dot(-a.astype(np.float16), np.float16(0)), np.dot(-a[None], 0.0), np.dot((a / 0)[None], 0.0)), X),
    "np.outer of a matrix and a 0-d array": (lambda a: np.outer(a, Z), X),
    "np.einsum, attention's scores": (lambda a: np.einsum("bqd,bkd->bqk", a[None], a[None] * 2), X),
    "np.einsum, implicit output sorted": (lambda a: np.einsum("ji", a), X),
    "np.einsum, three operands": (lambda a: np.einsum("ij,jk,kl->il", a, a.T, a), X),
    "np.einsum, ellipsis broadcast": (lambda a: np.einsum("...i,...i->...", a[:, None], a[None]), X),
    "np.einsum, a length-1 label broadcast": (lambda a: np.einsum("ij,ij->j", a[:1], a), X),
    "np.einsum of bools": (lambda a: np.einsum("ij,jk", a, a), B),
    "np.einsum, a trace": (lambda a: np.einsum("ii", a[:, :2]), X),
    "np.einsum into float32 under same_kind": (lambda a: np.einsum("ij,j->i", a, V, dtype=np.float32, casting="same_kind"), X),
    "np.einsum into bool (unsafe): an OR of ANDs of truth values": (lambda a: np.einsum("ij,j", a - 0.5, V, dtype=bool, casting="unsafe"), X),
    "np.einsum into int8 (unsafe): truncated, wrapping": (lambda a: np.einsum("ij,ij->i", a * 30.7, a, dtype=np.int8, casting="unsafe"), X),
    "np.einsum, a permutation ignores dtype= (NumPy's view)": (lambda a: np.einsum("ij->ji", a, dtype=np.int64), X),
    "np.einsum, a diagonal": (lambda a: np.einsum("ii->i", a[:, 1:]), X),
    "np.einsum, a diagonal of three axes times another operand": (lambda a: np.einsum("iij,j->ij", a[:2, :2, None] * a[0], a[0]), X),
    "np.einsum, a diagonal after the ellipsis": (lambda a: np.einsum("...jj->...j", a[:, None, :2, None] * a[:, :2]), X),
    "np.einsum, a Python float operand": (lambda a: np.einsum(",ij", 2.0, a.astype(np.float32)), X),
    "np.round of integers": (lambda a: np.round(a, 2), np.arange(-3, 3)),
    "np.round of integers to tens (ties to even, in float64)": (lambda a: np.round(a * 5, -1), np.arange(-3, 4)),
    "np.round of int64 past 2**53 (float64's precision)": (lambda a: np.round(a, -1), np.array([2**62 + 12345, -2**62 - 15])),
    "np.round of int8 to tens (wraps: 127 gives -126)": (lambda a: np.round(a, -1), np.array([127, -128, 64], np.int8)),
    "x.round of uint8 to hundreds": (lambda a: a.round(-2), np.array([250, 149, 150, 50], np.uint8)), "x.round of bools": (lambda a: a.round(), B),
    "np.around to tens": (lambda a: np.around(a * 37, -1), X), "np.round of float16": (lambda a: np.round(a, 1), X / 7),
    "np.std of ints, a scalar into an int dtype": (lambda a: np.std(a, dtype=np.int64), np.arange(7)),
    "x.std with ddof": (lambda a: a.std(axis=0, ddof=1), X),
    "np.flip of a 0-d array": (lambda a: np.flip(a), Z), "np.roll of a 0-d array": (lambda a: np.roll(a, 3), Z),
    "np.roll by a whole turn": (lambda a: np.roll(a, 6, axis=None), X), "np.tile by zero": (lambda a: np.tile(a, 0), X),
    "np.flip over a list and an array of axes (NumPy's normalize_axis_tuple)": (
        lambda a: (np.flip(a, [0, 1]), np.flip(a, np.array([1])), np.flip(a, [])), X),
    "np.roll by float and bool shifts (int() of each: truncated)": (
        lambda a: (np.roll(a, -1.5), np.roll(a, (2.7, True), axis=(1, 1)), np.roll(a, np.float32(-3.9), axis=0)), X),
    "np.unravel_index of bools (0 and 1)": (lambda a: np.unravel_index(a > 0, (2, 1), order="F"), X),
    "np.repeat with zero repeats": (lambda a: np.repeat(a, [0, 2], axis=0), X),
    "np.diff of order 0 (the array itself)": (lambda a: np.diff(a, n=0), X),
    "np.diff of bools (not_equal)": (lambda a: np.diff(a, axis=0), B),
    "np.pad of an empty axis": (lambda a: np.pad(a[:, :0], 1, constant_values=3), X),
    "np.pad of ints with a float value (cast)": (lambda a: np.pad(a, (1, 0), constant_values=2.7), np.arange(3)),
    "np.piecewise, the last function where no condition holds": (
        lambda a: np.piecewise(a, [a < -1, a > 1], [lambda v: -v, 10, lambda v: v * 3]), X),
    "np.piecewise of ints, float values truncated, later conditions winning": (
        lambda a: np.piecewise(a, [a > 0, a > 2], [lambda v: v / 2, 9.9]), np.arange(-2, 5)),
    "np.piecewise, one condition of a vector with extra arguments": (
        lambda a: np.piecewise(a, a > 0, [lambda v, k, m=1: v * k + m], 3, m=2), V - 1),
    "np.pad by linear ramps into uint8 (floored)": (lambda a: np.pad(a, 3, mode="linear_ramp", end_values=200),
                                                    np.array([7, 0, 255], np.uint8)),
    "np.pad by the mean of ints (rounded half to even)": (lambda a: np.pad(a, ((1, 1), (2, 2)), mode="mean",
                                                                           stat_length=2), np.array([[1, 2, 4], [3, 6, 5]])),
    "np.pad by the median, corners from the padded rows": (lambda a: np.pad(a, 2, mode="median", stat_length=(1, 2)), X),
    "np.pad by an odd reflection wider than the array": (lambda a: np.pad(a, ((7, 1), (0, 5)), mode="reflect",
                                                                          reflect_type="odd"), X),
    "np.pad by an odd symmetric reflection of int8 (wraps)": (lambda a: np.pad(a, 4, mode="symmetric", reflect_type="odd"),
                                                              np.array([100, -120, 90], np.int8)),
    "np.pad of an empty array by the maximum, along its other axis": (lambda a: np.pad(a[:0], ((0, 0), (1, 2)),
                                                                                       mode="maximum"), X),
    "np.add.reduce of int8 (to int64, like np.sum)": (lambda a: np.add.reduce(a.astype(np.int8)), X),
    "np.maximum.reduce over all axes": (lambda a: np.maximum.reduce(a, axis=None), X),
    # a reduction starts from the ufunc's identity where it has one: hypot(0, x) is |x|, gcd(0, x) too
    "np.hypot.reduce and np.gcd.reduce of one element (the identity first)": (
        lambda a: (np.hypot.reduce(-a[:1]), np.gcd.reduce(-a[:1].astype(np.int16) - 1, axis=0),
                   np.hypot.reduce(a[0, 0]), np.logaddexp.reduce(a[:1, :1] * 0.0, axis=None)), X),
    "np.logical_and.reduce of floats": (lambda a: np.logical_and.reduce(a), X),
    # a fold starts at initial= (initial=None: the first element, not the identity); where= skips elements
    "np.subtract.reduce from initial, and where=": (
        lambda a: (np.subtract.reduce(a, axis=1, initial=10.0), np.subtract.reduce(a, axis=1, where=a > -1, initial=0.5)), X),
    "np.hypot.reduce with initial=None (from the first element) and where=": (
        lambda a: (np.hypot.reduce(a[:, :1], axis=1, initial=None), np.hypot.reduce(a, axis=0, where=a != 0)), X),
    "np.subtract.reduce and np.logaddexp.reduce into out= (the loop of out's dtype and the array's)": (
        lambda a: (lambda o, p: (np.subtract.reduce((a * 50).astype(np.int8), axis=1, out=o),
                                 np.logaddexp.reduce(a, axis=0, out=(p,), where=a > -2), o, p))(
            np.zeros_like(a[:, 0], dtype=np.int16), np.zeros_like(a[0], dtype=np.float32)), X),
    "np.bitwise_xor.reduce of everything where a mask, into int8": (
        lambda a: np.bitwise_xor.reduce((a * 7).astype(np.int8), axis=None, where=a > -2, keepdims=True), X),
    "np.add.outer with a Python int (strong)": (lambda a: np.add.outer(a.astype(np.float32), 2), V),
    "np.multiply.accumulate": (lambda a: np.multiply.accumulate(a, axis=1), X),
    # reduceat: each segment's first element, then the ufunc folding the rest in order (ints in NumPy's
    # reduction type: add of int8 is int64, logical_and is bool)
    "np.add.reduceat of int8 (to int64)": (lambda a: np.add.reduceat((a * 50).astype(np.int8), [0, 2, 1], axis=1), X),
    "np.subtract.reduceat, a repeated index, the last to the end": (lambda a: np.subtract.reduceat(a, [1, 1, 0], axis=1), X),
    "np.multiply.reduceat of float16 (float32 while the loop runs)": (
        lambda a: np.multiply.reduceat(a.astype(np.float16) * np.float16(1.7), [0, 1]), np.arange(1.0, 13.0).reshape(12, 1)),
    "np.maximum.reduceat and np.logical_and.reduceat": (
        lambda a: (np.maximum.reduceat(a, [2, 0], axis=1), np.logical_and.reduceat(a, [0, 1], axis=-1)), X),
    "np.add.reduceat into out= (int8 into int16 adds in int16; floats into int8 cast at the end)": (
        lambda a: (lambda o, p: (np.add.reduceat((a * 50).astype(np.int8), [0, 2], axis=1, out=o),
                                 np.add.reduceat(a * 1.5, [1, 0], axis=1, out=p), o, p))(
            np.zeros_like(a[:, :2], dtype=np.int16), np.zeros_like(a[:, :2], dtype=np.int8)), X),
    "np.add.reduceat with dtype= and no indices": (
        lambda a: (np.add.reduceat(a, [1, 0], dtype=np.float32), np.add.reduceat(a, [], axis=1)), X),
    "np.sum with initial": (lambda a: np.sum(a, axis=0, initial=10), X),
    "np.sum of ints with initial=None (from the first element: the same)": (
        lambda a: (np.sum(a.astype(np.int8), axis=0, initial=None), np.prod(a > 0, initial=None)), X),
    "np.max of an empty axis with initial": (lambda a: np.max(a[:, :0], axis=1, initial=-5), X),
    "np.sum, initial into the result's type (int8 to int64)": (lambda a: np.sum(a.astype(np.int8), initial=300), X),
    "np.max, a float initial into ints": (lambda a: np.max(a.astype(np.int32), initial=1.5), X),
    "np.sum where a mask": (lambda a: np.sum(a, axis=1, where=a > 0), X),
    "np.min where a broadcast mask, with initial": (lambda a: np.min(a, axis=0, where=np.array([True, False, True]), initial=9), X),
    "np.mean where a mask (each mean over its own count)": (lambda a: np.mean(a, axis=1, where=a != 0), X),
    "np.all where a mask": (lambda a: np.all(a > 0, axis=0, where=a > -2), X),
    "np.prod where nothing (the identity)": (lambda a: np.prod(a, axis=0, where=np.zeros((2, 3), bool)), X),
    "np.maximum.reduce where, with initial": (lambda a: np.maximum.reduce(a, axis=1, where=a > 0, initial=-1), X),
    "np.diagonal with an offset past the array (empty)": (lambda a: np.diagonal(a, 5), X),
    "np.diagonal of axes given backwards": (lambda a: np.diagonal(a[None], -1, 2, 1), X),
    "np.trace into float32": (lambda a: np.trace(a, 1, dtype=np.float32), X),
    "np.diag of a vector below the diagonal": (lambda a: np.diag(a, -2), V),
    "np.diag of bools": (lambda a: np.diag(a, 1), BV), "np.diag of a matrix": (lambda a: np.diag(a, 1), X),
    "np.moveaxis of tuples": (lambda a: np.moveaxis(a[None], (0, 2), (2, 0)), X),
    "np.atleast_2d of several (a tuple)": (lambda a: np.atleast_2d(a, a[0, 0], a[0])[2], X),
    "np.atleast_3d of a vector": (lambda a: np.atleast_3d(a), V),
    "np.column_stack of a vector and a matrix": (lambda a: np.column_stack((V[:2], a)), X),
    "np.dstack of vectors": (lambda a: np.dstack((a, a * 2)), V),
    "np.take_along_axis of argsorted indices (constant)": (lambda a: np.take_along_axis(a, np.argsort(X, axis=0), 0), X),
    "np.take_along_axis, axis None": (lambda a: np.take_along_axis(a, np.array([5, -1, 0]), None), X),
    "np.take_along_axis of computed indices": (lambda a: np.take_along_axis(a, np.argmin(a, 1, keepdims=True), 1), X),
    "np.ptp of uint8 (wraps)": (lambda a: np.ptp(a), np.array([1, 200], np.uint8)),
    "np.ptp of int8 (wraps)": (lambda a: np.ptp(a, keepdims=True), np.array([-100, 100], np.int8)),
    "np.count_nonzero keepdims": (lambda a: np.count_nonzero(a, axis=(0, 1), keepdims=True), X),
    "np.isclose with NaNs equal": (lambda a: np.isclose(a / a, np.nan, equal_nan=True), X),
    "np.isclose of ints, an int y": (lambda a: np.isclose(a.astype(np.int8), 1), X),
    "np.isclose with inf": (lambda a: np.isclose(a / 0, np.inf), X),
    "np.sinc of int8 (float64) and its zero": (lambda a: np.sinc(a.astype(np.int8)), X),
    "np.sinc of float16": (lambda a: np.sinc(a.astype(np.float16) / 4), X),
    "np.fabs of int8 (float16)": (lambda a: np.fabs(a.astype(np.int8)), X),
    "np.signbit of -0.0 and -nan": (lambda a: np.signbit(np.array([-0.0, -np.nan, 0.0]) * a), Z),
    "np.var where a mask (each over its own count)": (lambda a: np.var(a, axis=1, where=a != 0), X),
    "np.std where a mask, ddof past a row's count (0 / 0)": (lambda a: np.std(a, axis=1, ddof=2, where=a > -1), X),
    "np.var of ints where a broadcast mask": (lambda a: np.var(a.astype(np.int16), axis=0, where=np.array([True, False, True])), X),
    "np.var with correction": (lambda a: np.var(a, correction=1), X),
    "x.var with a precomputed mean": (lambda a: a.var(axis=0, mean=a.mean(axis=0, keepdims=True)), X),
    "np.std with a mean and a mask": (lambda a: np.std(a, axis=1, mean=a.mean(axis=1, keepdims=True), where=a > -2), X),
    "np.nanmax of an all-NaN row (NaN)": (lambda a: np.nanmax(np.where(a > 0, np.nan, a), axis=1), X),
    "np.nanmax of an all-NaN row with initial (fmax starts there)": (lambda a: np.nanmax(np.where(a < 1, np.nan, a), axis=1, initial=2.5), X),
    "np.nanmax/nanmin where=True (no mask to NumPy: no initial needed)": (
        lambda a: (np.nanmax(np.where(a > 0, np.nan, a), where=True), np.nanmin(a.astype(np.int16), axis=0, where=True)), X),
    "np.nanmin of ints (np.min)": (lambda a: np.nanmin(a.astype(np.int8), axis=0), X),
    "np.nanargmax past NaNs": (lambda a: np.nanargmax(np.where(a == 1, np.nan, a), axis=0), X),
    "np.nanargmin of everything, a NaN first": (lambda a: np.nanargmin(np.where(a == -2, np.nan, a)), X),
    "np.nanargmin of -inf and NaN (the first of either)": (lambda a: np.nanargmin(np.where((a > 1) | (a == -2), np.nan, -np.inf), axis=1, keepdims=True), X),
    "np.nanargmax of ints (np.argmax)": (lambda a: np.nanargmax(a.astype(np.uint8), axis=1), X),
    "np.lexsort of a tuple (the last key first)": (lambda a: np.lexsort((a[0], (a[1] > 1).astype(np.int8))), X),
    "np.lexsort of a 2-d array's rows, ties, NaN and signed zeros": (lambda a: np.lexsort(np.stack([np.sqrt(a[0] + 1), a[1] * 0.0 - (a[0] > -2)])), X),
    "np.lexsort along axis 0": (lambda a: np.lexsort((a, a > 0), axis=0), X),
    "np.searchsorted of a sorted row": (lambda a: np.searchsorted(a[1], a), X),
    "np.searchsorted right, NaNs last": (lambda a: np.searchsorted(np.array([0.0, 1.0, np.nan]), np.log(a + 2), side="right"), X),
    "x.searchsorted with a sorter": (lambda a: a[0, ::-1].searchsorted(a[1] - 2, sorter=[2, 1, 0]), X),
    "np.searchsorted: a Python float against float16 compares in float64": (lambda a: np.searchsorted(a[1].astype(np.float16) + 0.5, 2.5001), X),
    "np.searchsorted: int8 against an int beyond it (compared in int64)": (lambda a: np.searchsorted(a[1].astype(np.int8) * 40, 300), X),
    "np.digitize, decreasing bins": (lambda a: np.digitize(a, [2.0, 0.0, 0.0, -1.0]), X),
    "np.digitize right, of a 0-d": (lambda a: np.digitize(a[0, 0], [-2, 0], right=True), X),
    "np.interp at, between and beyond the sample points": (lambda a: np.interp(a / 2, [-1.0, 0.0, 0.5, 1.5], [5.0, -1.0, 3.0, 0.25]), X),
    "np.interp between infinite values (the retry from the other end)": (lambda a: np.interp(a / 4, [-1.0, 0.0, 0.5], [np.inf, np.inf, -np.inf]), X),
    "np.interp with one sample point (a NaN x gives its value)": (lambda a: np.interp(np.log(a), [0.0], [7.0], left=1, right=2), X),
    "np.interp of int samples, left and right given": (lambda a: np.interp(a, np.array([0, 1, 2], np.int8), [1, 4, 9], left=-1, right=np.float32(99)), X),
    "np.interp with a period": (lambda a: np.interp(a * 1.7, [0.5, 1.0, 3.5], [1.0, 2.0, 0.0], period=-4), X),
    "np.nansum with a mask and initial": (lambda a: np.nansum(np.log(a), axis=1, where=a != 1, initial=0.5), X),
    "np.nanmean of an all-NaN row (0 / 0)": (lambda a: np.nanmean(np.sqrt(a - 0.5), axis=1), X),
    "np.nanvar: NaN where count - ddof <= 0 (np.var gives inf)": (lambda a: np.nanvar(np.sqrt(a - 0.5), axis=1, ddof=2), X),
    "np.nanvar into float64: deviations stored in float32": (lambda a: np.nanvar(np.sqrt(a).astype(np.float32), dtype=np.float64), X),
    "np.nanstd of ints (np.std)": (lambda a: np.nanstd(a.astype(np.int32), axis=0), X),
    "np.nancumsum of everything": (lambda a: np.nancumsum(np.log(a)), X),
    "np.nancumprod of float16": (lambda a: np.nancumprod(np.sqrt(a).astype(np.float16), axis=1), X),
    "np.sort with NaNs last and infinities": (lambda a: np.sort(a), np.array([np.nan, 1.0, -np.inf, np.nan, np.inf, -0.5])),
    "np.sort along axis 0": (lambda a: np.sort(a[::-1], axis=0), X),
    "np.sort of everything": (lambda a: np.sort(a, axis=None), X),
    "np.argsort, ties in index order (stable)": (lambda a: np.argsort(np.array([2, 1, 2, 1, 0]) * a, kind="stable"), np.int8(1)),
    "np.argsort of a 0-d array (flattened)": (lambda a: np.argsort(a), Z),
    "np.argsort of a 0-d array along axis 0 and -1 (of its flattened one dimension)": (
        lambda a: (np.argsort(a, 0), a.argsort(-1)), Z),
    "x.argsort by axis 0 with stable=True": (lambda a: a.argsort(axis=0, stable=True), X),
    "np.argsort of bools": (lambda a: np.argsort(a, axis=None, kind="stable"), B),
    "x.sort() of a copy, in place": (lambda a: (lambda b: (b.sort(axis=0), b)[1])(a[::-1] * 1), X),
    "np.median of an even count (the mean of the middle two)": (lambda a: np.median(a), X),
    "np.median of ints (float64)": (lambda a: np.median(a.astype(np.int8), axis=1), X),
    "np.median over two axes, keepdims": (lambda a: np.median(a[None], axis=(0, 2), keepdims=True), X),
    "np.median of a row with a NaN (NaN)": (lambda a: np.median(np.where(a > -2, a, np.nan), axis=1), X),
    "np.median of a 0-d array": (lambda a: np.median(a), Z),
    "np.concat (np.concatenate itself)": (lambda a: np.concat([a, a], axis=1), X),
    "np.permute_dims": (lambda a: np.permute_dims(a[None], (2, 0, 1)), X),
    "np.matrix_transpose": (lambda a: np.matrix_transpose(a[None]), X),
    "np.astype": (lambda a: np.astype(a, np.int16), X),
    "np.cumulative_sum of int8 with the initial zero": (lambda a: np.cumulative_sum(a.astype(np.int8), axis=1, include_initial=True), X),
    "np.cumulative_prod of a 0-d array (made 1-d)": (lambda a: np.cumulative_prod(a), Z),
    "np.vecdot of a stack and a vector": (lambda a: np.vecdot(a, V), X),
    "np.vecdot of bools": (lambda a: np.vecdot(a, a), B),
    "np.matvec": (lambda a: np.matvec(a, V), X), "np.vecmat": (lambda a: np.vecmat(V[:2], a), X),
    "np.linalg.vecdot along axis 0": (lambda a: np.linalg.vecdot(a, a, axis=0), X),
    "np.linalg.vector_norm over two axes, keepdims": (lambda a: np.linalg.vector_norm(a, axis=(1, 0), keepdims=True), X),
    "np.linalg.vector_norm, order inf": (lambda a: np.linalg.vector_norm(a, ord=np.inf), X),
    "np.linalg.matrix_norm, order 1": (lambda a: np.linalg.matrix_norm(a[None], ord=1), X),
    "np.linalg.trace and diagonal (last two axes)": (lambda a: (np.linalg.trace(a[None], offset=1), np.linalg.diagonal(a[None]) * 1)[0], X),
    "np.linalg.outer": (lambda a: np.linalg.outer(V, a[0]), X),
    "np.convolve, full": (lambda a: np.convolve(a[1], V), X),
    "np.cross of 3-vectors, rows": (lambda a: np.cross(a, V[::-1] + 1), X),
    "np.cross of 3-vectors along axis 0, result along axis 0": (lambda a: np.cross(a.T[:, :1] * np.ones((3, 2)), a.T[:, 1:], axis=0), X),
    "np.cross of uint8 (wraps)": (lambda a: np.cross(a.astype(np.uint8), a[::-1].astype(np.uint8)), X),
    "np.kron of a matrix and a vector": (lambda a: np.kron(a, V), X),
    "np.kron of 0-d operands (a scalar)": (lambda a: np.kron(a, a * 2), Z - 3),
    "np.kron of int8 and float32": (lambda a: np.kron(a.astype(np.int8), np.ones((2, 1), np.float32)), X),
    "np.trapezoid with sample points": (lambda a: np.trapezoid(a, np.array([0.0, 0.5, 2.0])), X),
    "np.trapezoid of ints along axis 0, dx": (lambda a: np.trapezoid(a.astype(np.int16), dx=0.25, axis=0), X),
    "np.convolve, same, the second operand longer": (lambda a: np.convolve(a[0, :2], np.arange(5.0), "same"), X),
    "np.correlate, same, the second operand longer (NumPy's other offset)": (lambda a: np.correlate(a[0, :2], np.arange(5.0), "same"), X),
    "np.correlate of int8 (wraps)": (lambda a: np.correlate(a[1].astype(np.int8) * 60, a[1].astype(np.int8), "full"), X),
    "np.convolve of a 0-d operand": (lambda a: np.convolve(a[0, 2] + 2, V), X),
    "np.average (the mean)": (lambda a: np.average(a, axis=0), X),
    "np.average of int8 with weights (float64)": (lambda a: np.average(a.astype(np.int8), axis=1, weights=[1, 2, 3]), X),
    "np.average over two axes, weights in their order": (lambda a: np.average(a[None], axis=(2, 1), weights=np.ones((3, 2))), X),
    "np.average of float32 with float32 weights, keepdims": (lambda a: np.average(a.astype(np.float32), weights=np.full((2, 3), 0.5, np.float32), keepdims=True), X),
    "np.quantile with a Python float q (the array's float type)": (lambda a: np.quantile(a.astype(np.float32), 0.3), X),
    "np.quantile with a list q (float64) by axis": (lambda a: np.quantile(a.astype(np.float32), [0.1, 0.5, 1.0], axis=1), X),
    "np.quantile with an int q (the element itself)": (lambda a: np.quantile(a, 1, axis=0), X),
    "np.percentile of ints, keepdims": (lambda a: np.percentile(a.astype(np.int16), [25, 75], axis=(0, 1), keepdims=True), X),
    "np.percentile of a row with a NaN": (lambda a: np.percentile(np.where(a > -2, a, np.nan), 40, axis=1), X),
    "np.quantile, method 'lower' (an element)": (lambda a: np.quantile(a, [0.3, 0.7], axis=1, method="lower"), X),
    "np.quantile, method 'nearest' (ties to even)": (lambda a: np.quantile(a, 0.25, axis=None, method="nearest"), X),
    "np.quantile, method 'inverted_cdf' of ints": (lambda a: np.quantile(a.astype(np.int16), 0.5, axis=0, method="inverted_cdf"), X),
    "np.percentile, method 'hazen' of float32": (lambda a: np.percentile(a.astype(np.float32), 12.5, method="hazen"), X),
    "np.percentile, method 'median_unbiased' past the ends": (lambda a: np.percentile(a, [1, 99], axis=1, method="median_unbiased"), X),
    "np.quantile, method 'midpoint' with a NaN": (lambda a: np.quantile(np.sqrt(a), 0.5, axis=1, method="midpoint"), X),
    "np.quantile of infinities (inf - inf in the interpolation)": (lambda a: np.quantile(a / 0, 0.5, axis=1), X),
    "np.rot90, three quarter turns on reversed axes": (lambda a: np.rot90(a, 3, axes=(1, 0)), X),
    "np.rot90 by -2": (lambda a: np.rot90(a, -2), X),
    "np.append flattens both": (lambda a: np.append(a, [[7]]), X),
    "np.append along an axis": (lambda a: np.append(a, a[:1] * 2, axis=0), X),
    "np.array_split: the first sections one longer": (lambda a: np.array_split(np.ravel(a), 4), X),
    "np.array_split at points past the end": (lambda a: np.array_split(a, [2, 7, 1], axis=1), X),
    "np.hsplit of a vector": (lambda a: np.hsplit(a[0], 3), X), "np.vsplit": (lambda a: np.vsplit(a, [1]), X),
    "np.dsplit": (lambda a: np.dsplit(a[:, None], 3), X),
    "np.broadcast_arrays: the argument itself where it fits": (lambda a: np.broadcast_arrays(a, a[0], 2.5), X),
    "np.meshgrid, 'xy'": (lambda a: np.meshgrid(a[0], a[:, 0].astype(np.float32)), X),
    "np.meshgrid of three, 'ij', sparse (views, a list)": (lambda a: np.meshgrid(a[0], a[1], V, indexing="ij", sparse=True, copy=False), X),
    "np.ediff1d with ends cast to the array's dtype": (lambda a: np.ediff1d(a.astype(np.float32), to_end=[1e-40, 3], to_begin=0.1), X),
    "np.ediff1d of ints, an int end": (lambda a: np.ediff1d(a.astype(np.int8), to_begin=300), X),
    "np.polyval, float64 coefficients promote float32": (lambda a: np.polyval([0.5, -1.0, 2.0], a.astype(np.float32)), X),
    "np.polyval of traced coefficients at a 0-d x": (lambda a: np.polyval(a[1], a[0, 0]), X),
    "np.vander of float32 (float64 powers)": (lambda a: np.vander(a[1].astype(np.float32) / 3, 4), X),
    "np.vander of ints, increasing": (lambda a: np.vander(a[0].astype(np.int8), increasing=True), X),
    "np.select, the first condition wins": (lambda a: np.select([a > -1, a > 1], [a, a * 10], default=-7), X),
    "np.select, a Python default wrapping into uint32": (lambda a: np.select([a > 0], [a.astype(np.uint32)], -3), X),
    "np.select of Python-number choices into float32": (lambda a: np.select([a > 0, a < 0], [1.5, a.astype(np.float32)]), X),
    "np.isin, NaN found nowhere and -0.0 at 0.0": (lambda a: np.isin(np.array([np.nan, -0.0, 1.0]) * a[1, :1], [0.0, np.nan, 2.0]), X),
    "np.isin of int8 against floats, inverted": (lambda a: np.isin(a.astype(np.int8), [1.0, -2.5, 3.0], invert=True), X),
    "np.isin of a 0-d element (an array)": (lambda a: np.isin(a[0, 1], a[1]), X),
    "np.isin of uint64 against int64 (exact)": (lambda a: np.isin(np.array([2**63 + 5], np.uint64) + a[0, :1].astype(np.uint64) * 0, np.array([-(2**63) + 5])), X),
    "np.unravel_index of argmaxes": (lambda a: np.unravel_index(np.argmax(a, axis=1), (2, 3)), X),
    "np.unravel_index of a 0-d, order 'F' (scalars)": (lambda a: np.unravel_index(np.argmax(a), (3, 2), order="F"), X),
    "np.maximum.accumulate: NaN carried on, -0.0 kept where NumPy keeps it": (lambda a: np.maximum.accumulate(np.array([[1.5, -0.0, 0.0, np.nan, 2.0]]) * a[1, 2], axis=1), X),
    "np.minimum.accumulate of int8 along axis 0": (lambda a: np.minimum.accumulate(a.astype(np.int8)[::-1], axis=0), X),
    "np.logical_or.accumulate of floats (bool)": (lambda a: np.logical_or.accumulate(a, axis=1), X),
    "np.subtract.accumulate of uint8 (wraps)": (lambda a: np.subtract.accumulate(a.astype(np.uint8), axis=1), X),
    "np.divide.accumulate of int8 (float64)": (lambda a: np.divide.accumulate(a.astype(np.int8) + 3, axis=1), X),
    "np.equal.accumulate of bools": (lambda a: np.equal.accumulate(a > 0, axis=1), X),
    "np.add.accumulate along axis (0,)": (lambda a: np.add.accumulate(a, axis=(0,)), X),
    "np.dot and x.dot into out= (a 0-d out comes back as a NumPy scalar, as NumPy returns it)": (
        lambda a: (lambda o, o0: (np.dot(a, a.T, out=o), a[0].dot(a[1], o0), o))(
            np.zeros_like(a, shape=(2, 2)), np.zeros_like(a, shape=())), X),
    "np.einsum into out= (c_einsum's common dtype takes out's in: float64 products, bool counts)": (
        lambda a: (lambda f32, o64, o8, o, oo: (
            np.einsum("ij,ij->i", f32 / 3, f32 / 7, out=o64), np.einsum("ij,ij->i", a > 0, a > -1, out=o8),
            np.einsum(f32, [0, 1], [1], out=o), np.einsum("ij,kj->ik", a, a, out=oo, optimize=True), o64, o8, o, oo))(
            a.astype(np.float32), np.zeros_like(a[:, 0]), np.zeros_like(a[:, 0], np.int8),
            np.zeros_like(a[0]), np.zeros_like(a, np.float32, shape=(2, 2))), X),
    "np.ptp into out= (the maximum converted into out first, as NumPy's _ptp)": (
        lambda a: (lambda o16, o: (np.ptp(a.astype(np.int8) * 60, axis=1, out=o16), np.ptp(a, 0, o), o16, o))(
            np.zeros_like(a[:, 0], np.int16), np.zeros_like(a[0])), X),
    "np.median into out= (np.mean of the middle values into out, then its NaNs)": (
        lambda a: (lambda o8, of, ok, y: (np.median(y.astype(np.int8) * 40, axis=1, out=o8), np.median(y, 0, of),
                                          np.median(a, 0, np.zeros_like(a[0], np.int16)),  # no NaN: no cast error
                                          np.median(y, axis=(0, 1), out=ok, keepdims=True), o8, of, ok))(
            np.zeros_like(a[:, 0], np.int8), np.zeros_like(a[0], np.float32), np.zeros_like(a, shape=(1, 1)),
            np.where(a == 1, np.nan, a)), X),
    "np.take, np.compress and np.choose into out= (converted unsafely, as NumPy writes back)": (
        lambda a: (lambda o1, o2, o3: (np.take(a, [5, 0], out=o1), np.compress([True, False, True], a, 1, o2),
                                       np.choose([0, 1, 0], [a[0] * 99, a[1]], out=o3), o1, o2, o3))(
            np.zeros_like(a, np.int8, shape=(2,)), np.zeros_like(a, np.int64, shape=(2, 2)),
            np.zeros_like(a, np.int8, shape=(3,))), X),
    "np.outer, np.trace, np.cumulative_sum and np.nanargmax into out=": (
        lambda a: (lambda o1, o2, o3, o4: (np.outer(a[0], a[1], out=o1), np.trace(a, out=o2),
                                           np.cumulative_sum(a, axis=1, include_initial=True, out=o3),
                                           np.nanargmax(a, axis=0, out=o4), o1, o2, o3, o4))(
            np.zeros_like(a, np.float32, shape=(3, 3)), np.zeros_like(a, np.int8, shape=()),
            np.zeros_like(a, np.int16, shape=(2, 4)), np.zeros_like(a, np.intp, shape=(3,))), X),
    "np.linalg.multi_dot into out= (the last product's)": (
        lambda a: (lambda o: (np.linalg.multi_dot([a, a.T, a, a.T], out=o), o))(np.zeros_like(a, shape=(2, 2))), X),
    "np.quantile and np.percentile into out= (NumPy's take or _lerp into out, then its NaNs)": (
        lambda a: (lambda o1, o2, o3, y: (np.quantile(y, 0.3, axis=1, out=o1),
                                          np.percentile(a, [25, 60], axis=0, method="nearest", out=o2),
                                          np.quantile(y.astype(np.float32), 0.7, axis=(0, 1), keepdims=True, out=o3),
                                          o1, o2, o3))(
            np.zeros_like(a[:, 0], np.float32), np.zeros_like(a, np.int16, shape=(2, 3)),
            np.zeros_like(a, shape=(1, 1)), np.where(a == 1, np.nan, a)), X),
    "np.nanmedian, np.nanquantile and np.nanpercentile into out= (the result assigned, broadcast)": (
        lambda a: (lambda o1, o2, o3, o4, y: (np.nanmedian(y, axis=1, out=o1), np.nanquantile(y, [0.2, 0.9], out=o2),
                                              np.nanpercentile(y, 40, axis=0, keepdims=True, out=o3),
                                              np.nanmedian(y, axis=0, out=o4), o1, o2, o3, o4))(
            np.zeros_like(a[:, 0], np.int8), np.zeros_like(a, np.float32, shape=(2,)),
            np.zeros_like(a, shape=(1, 3)), np.zeros_like(a, shape=(2, 3)), np.where(a == 1, np.nan, a)), X),
    "np.nanmedian of an empty array into out= (NumPy's np.nanmean into it)": (
        lambda a: (lambda o: (np.nanmedian(a[:, :0], axis=1, out=o), o))(np.ones_like(a[:, 0], np.float32)), X),
    "a weighted np.quantile into out= (each value assigned, then the NaNs copied)": (
        lambda a: (lambda o1, o2, y: (np.quantile(y, [0.3, 0.8], axis=1, method="inverted_cdf", weights=a + 3, out=o1),
                                      np.percentile(a, 50, axis=0, method="inverted_cdf", weights=[1, 0], out=o2),
                                      o1, o2))(
            np.zeros_like(a, shape=(2, 2)), np.zeros_like(a[0], np.int16), np.where(a == 1, np.nan, a)), X),
    "np.cumsum, np.cumprod, np.nancumsum and np.repeat of a 0-d array along an axis (read as 1-d)": (
        lambda a: (np.cumsum(a[0, 0], axis=0), a.sum().cumprod(axis=-1), np.nancumsum(a[1, 1], 0),
                   np.repeat(a[0, 2], 2, axis=-1)), X),
    "np.stack, np.diff and np.swapaxes take a bool axis (an integer to NumPy's Python code)": (
        lambda a: (np.stack([a, a], axis=True), np.diff(a, axis=True), np.swapaxes(a, True, False)), X),
    "np.take of a 0-d array along an axis (NumPy reads it as 1-d)": (
        lambda a: (np.take(a[0, 0], [0, -1], axis=-1), np.take(a[0, 1], 0, axis=0), a.sum().take([0], axis=0,
                                                                                                 mode="clip")), X),
    "np.round into out= (NumPy's three ufunc calls in out's dtype)": (
        lambda a: (lambda o32, o8, o: (np.round(a * 1.005, 2, out=o32), np.around(a.astype(np.int16), 1, out=o8),
                                       (a[0] * 7.7).round(-1, out=o[0]), np.round(a[1], out=o[1]), o))(
            np.zeros_like(a, np.float32), np.zeros_like(a, np.int8), np.zeros_like(a)), X),
    "np.concatenate and np.stack into out= (each array cast to out's dtype on its own)": (
        lambda a: (lambda o16, o64, o: (np.concatenate([a, a.astype(np.int8)], out=o16, casting="unsafe"),
                                        np.concatenate([(a * 2**61).astype(np.int64), a[:1]], axis=None, out=o64,
                                                       casting="unsafe"),
                                        np.stack([a, a * 2], axis=1, out=o)))(
            np.zeros_like(a, np.int16, shape=(4, 3)), np.zeros_like(a, np.int64, shape=(9,)),
            np.zeros_like(a, shape=(2, 2, 3))), X),
    "ufunc.accumulate into an out array (in the loop for its dtype and the array's, or the bool loop)": (
        lambda a: (lambda i8, o16, of32, ob, oi: (
            np.add.accumulate(i8 * 50, axis=1, out=o16), np.maximum.accumulate(a, 0, None, of32),
            np.subtract.accumulate(i8, axis=1, out=(ob.astype(np.float16),)), np.logical_and.accumulate(a, out=oi),
            np.multiply.accumulate(i8, axis=1, dtype=np.int8, out=o16 * 0)))(
            a.astype(np.int8), np.zeros_like(a, np.int16), np.zeros_like(a, np.float32), np.zeros_like(a),
            np.zeros_like(a, np.int32)), X),
    "np.result_type of a traced array and a Python float": (lambda a: a.astype(np.float16) * np.result_type(a.astype(np.float16), 1.0).itemsize, X),
    "np.can_cast of a traced int8 to uint8 (False)": (lambda a: a + np.can_cast(a.astype(np.int8), np.uint8), X),
    "np.real of an array is the array, np.imag zeros": (lambda a: (np.real(a) + 1, np.imag(a), a.imag, a.real), X),
    "np.imag of a 0-d array (an array)": (lambda a: np.imag(np.sum(a, keepdims=True).reshape(())), X),
    "np.iscomplex and np.isreal of an element (scalars)": (lambda a: (np.iscomplex(a[0, 0]), np.isreal(a[1, 1])), X),
    "np.conjugate of bools (int8, NumPy's loop)": (lambda a: np.conjugate(a > 0), X),
    "bools ** 2 (NumPy's ** takes np.square there: int8), ** 2.0 and np.power (int64)": (
        lambda a: ((a > 0) ** 2, (a > 0) ** 2.0, np.power(a > 0, 2), (a > 0)[0, 0] ** 2), X),
    "x.conj() of bools (the array itself: no ufunc, bool)": (lambda a: ((a > 0).conj(), (a > 0).conjugate()), X),
    "x.conj(out) of int8 into float64": (lambda a: a.astype(np.int8).conj(np.zeros_like(a, np.float64)) + 0.5, X),
    "np.delete of a slice with a negative step": (lambda a: np.delete(a, slice(None, None, -2), axis=1), X),
    "np.delete of a boolean mask, flattened": (lambda a: np.delete(a, np.arange(6) % 2 == 0), X),
    "np.insert of a block of rows": (lambda a: np.insert(a, 1, a[:1] * 10, axis=0), X),
    "np.insert at repeated points, values cast to int16": (lambda a: np.insert(a.astype(np.int16), [1, 1, -1], [2.7, -300.5, 7000.0], axis=1), X),
    "np.resize past the size (the array repeated)": (lambda a: np.resize(a, (4, 4)), X),
    "np.compress by a constant condition along an axis": (lambda a: np.compress([True, False, True], a, axis=1), X),
    "x.compress, flattened": (lambda a: a.compress([False, True, True, False, True]), X),
    "np.choose, clip mode, choices broadcast": (lambda a: np.choose(a.astype(np.int64), [a[0], -1.5, a * 2], mode="clip"), X),
    "np.choose, wrap mode of negative indices": (lambda a: np.choose(a.astype(np.int8), [a, a * 2, a * 3], mode="wrap"), X),
    "np.block of a 2 x 2 layout, int8 beside float32": (lambda a: np.block([[a.astype(np.int8), a], [a[:1].astype(np.float32), a[:1]]]), X),
    "np.block of a row of a vector and a Python number": (lambda a: np.block([a[0], 1]), X),
    "np.block of a lone array (a copy)": (lambda a: np.block(a), X),
    "bool np.dot": (lambda a: np.dot(a, a), B), "int8 np.dot uint8": (lambda a: np.dot(a, np.ones(2, np.uint8)), B.astype(np.int8)),
    # a ufunc's dtype= is its output's type: NumPy picks the loop that gives it and converts the operands to it
    "np.add into float32 (float64 operands rounded first)": (lambda a: np.add(a / 3, a / 7, dtype=np.float32), X),
    "np.add of int8 into float64 (no wrap)": (lambda a: np.add(a.astype(np.int8) * 50, 100, dtype=np.float64), X),
    "np.add of int8 and a large Python int into int64": (lambda a: np.add(a.astype(np.int8), 1000, dtype=np.int64), X),
    "np.exp of int8 in float16": (lambda a: np.exp(a.astype(np.int8), dtype=np.float16), X),
    "np.multiply into int64 under casting='unsafe' (operands truncated)": (
        lambda a: np.multiply(a * 1.7, a - 0.6, dtype=np.int64, casting="unsafe"), X),
    "np.less with dtype=bool": (lambda a: np.less(a, 0.5, dtype=bool), X),
    "np.add with signature=": (lambda a: np.add(a, a / 3, signature=(None, None, np.float32)), X),
    "np.add with a signature string": (lambda a: np.add(a, a / 3, signature="ff->f"), X),
    "np.add of int8 and int16 under casting='safe'": (lambda a: np.add(a.astype(np.int8), a.astype(np.int16), casting="safe"), X),
    "np.divide into float32 with order='C'": (lambda a: np.divide(a, 3.0, dtype=np.float32, order="C", subok=True), X),
    "np.square of int8 under casting='no'": (lambda a: np.square(a.astype(np.int8), casting="no"), X),
    "np.square of int8 into float64 (no wrap)": (lambda a: np.square((a * 40).astype(np.int8), dtype=np.float64), X),
    "np.square of bools with dtype=int16": (lambda a: np.square(a > 0, dtype=np.int16), X),
    "np.divmod of int8 into float32": (lambda a: np.divmod((a * 7).astype(np.int8), 3, dtype=np.float32), X),
    "np.divmod with signature= (float64 operands truncated to int16, unsafe)": (
        lambda a: np.divmod(a * 3.7, 2.5, signature=(np.int16, np.int16, None, None), casting="unsafe"), X),
    "np.gradient of every axis": (lambda a: np.gradient(a * a), X),
    "np.gradient at edge order 2, a scalar step": (lambda a: np.gradient(a ** 3, 0.5, axis=1, edge_order=2), X),
    "np.gradient over uneven coordinates and a NumPy-scalar step": (
        lambda a: np.gradient(a * a, np.float32(2.0), np.array([0.0, 0.5, 2.0])), X),
    "np.gradient of int16 (in float64), axes reversed": (lambda a: np.gradient((a * 7).astype(np.int16), axis=(1, 0)), X),
    "np.gradient of float32 with a Python step (stays float32)": (lambda a: np.gradient(a.astype(np.float32) / 3, 3, axis=-1), X),
    "np.unwrap of a phase": (lambda a: np.unwrap(np.cumsum(a * 2.5, axis=1)), X),
    "np.unwrap along axis 0 with a discont": (lambda a: np.unwrap(a * 3, discont=4.0, axis=0), X),
    "np.unwrap of int64 with an even integer period (integer arithmetic)": (
        lambda a: np.unwrap((a * 13).astype(np.int64), period=6), X),
    "np.unwrap of float32 in degrees": (lambda a: np.unwrap((a * 170).astype(np.float32), period=360), X),
    "np.apply_along_axis of a reduction (its result 1-d)": (lambda a: np.apply_along_axis(np.sum, 1, a), X),
    "np.apply_along_axis of a comparison (bool, from the first result)":
        (lambda a: np.apply_along_axis(lambda v: v[0] > v[-1], 0, a), X),
    "np.apply_along_axis returning matrices (axes put where the axis was)":
        (lambda a: np.apply_along_axis(lambda v: np.outer(v, v[:2]), 0, a), X),
    "np.apply_along_axis with extra arguments, a Python number per slice":
        (lambda a: np.apply_along_axis(lambda v, k: 3 * k, 1, a, 2), X),
    "np.apply_over_axes of np.sum over both axes": (lambda a: np.apply_over_axes(np.sum, a, [0, 1]), X),
    "np.quantile with weights (inverted_cdf: the first value whose share reaches q)": (
        lambda a: np.quantile(a, [0.0, 0.2, 0.5, 1.0], axis=1, method="inverted_cdf", weights=[[0, 1, 3], [2, 0, 0.5]]), X),
    "np.percentile with traced weights along two axes, of ints (the array's dtype kept)": (
        lambda a: np.percentile(a, 40, axis=(0, 1), keepdims=True, method="inverted_cdf",
                                weights=np.abs(a) + 1), np.arange(-6, 6).reshape(2, 3, 2)),
    "np.quantile with weights of the reduced axes, a slice holding NaN": (
        lambda a: np.quantile(a, 0.5, axis=0, method="inverted_cdf", weights=np.array([1.0, 2.0])),
        np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -6.0]])),
    "np.angle of int8 (arctan2 of a Python 0: float16)": (lambda a: np.angle(a.astype(np.int8), deg=True), X),
    "np.real_if_close of a real array (the array itself)": (lambda a: np.real_if_close(a) * 1, X),
    "np.tril_indices_from / triu_indices_from / diag_indices_from as indices": (
        lambda a: (a[np.tril_indices_from(a[:, :2])], a[np.triu_indices_from(a[:, 1:], 1)],
                   a[np.diag_indices_from(a[:, :2])]), X),
    "np.ix_ of traced index vectors": (lambda a: np.ix_(a[0].astype(np.int64), a[1]), X),
    "np.ix_ mixing integers and a constant mask": (lambda a: a[np.ix_([1, -1], [True, False, True])], X),
    "np.poly of no roots, inside a computation": (lambda a: np.poly(a[0, :0]) * a, X),
    "np.poly of float32 and int8 roots (float32 stays, int8 becomes float64)": (
        lambda a: (np.poly(a[0].astype(np.float32)), np.poly(a[1].astype(np.int8))), X),
    "np.polyint with traced integration constants": (lambda a: np.polyint(a[0], 2, k=a[1, :2]), X),
    "np.polyint/polyder of float orders (int() of them, as NumPy reads them)": (
        lambda a: (np.polyint(a[0], 2.9), np.polyder(a[1], np.float32(1.5)), np.polyint(a[0], -0.5)), X),
    "np.polyder of a 2-d array (NumPy's powers broadcast along its last axis)": (
        lambda a: (np.polyder(a.T), np.polyder(a.T, 0), np.polyint(a[0, 0], 0)), X),
    "np.linalg.tensorsolve with axes (a scaled permutation: exact)": (
        lambda a: np.linalg.tensorsolve(np.diag(2.0 ** np.arange(6)).reshape(3, 2, 3, 2) * a[1, 1],
                                        np.arange(6.0).reshape(3, 2), axes=(0,)), X),
    "np.histogram_bin_edges of the data's range (computed in the kernel)": (lambda a: np.histogram_bin_edges(a, 5), X),
    "np.sliding_window_view summed per window": (
        lambda a: np.lib.stride_tricks.sliding_window_view(a, (2, 2)).sum(axis=(-2, -1)), X),
    "np.fix of float16 and of ints (returned in their dtype)": (lambda a: (np.fix(a.astype(np.float16) / 3),
                                                                           np.fix(a.astype(np.int16))), X),
    "np.ravel_multi_index of traced coordinates, Fortran order, per-dimension modes": (
        lambda a: np.ravel_multi_index((a.astype(np.int16), np.array([0, 5, -1])), (3, 4), mode=("wrap", "clip"),
                                       order="F"), X),
    "np.ravel_multi_index of NumPy scalars (a NumPy scalar)": (
        lambda a: np.ravel_multi_index((a[0, 1].astype(np.int8) + 3, np.uint64(2)), (3, 4)), X),
    "np.geomspace from a negative start, arrays of endpoints along axis 1 (powers of ten: exact)": (
        lambda a: np.geomspace(a[0] * 0 - 1, a[1] * 0 - 1000, 4, axis=1), X),
    "x.view(int64) of NaN, -0.0 and inf, and back (the bits themselves)": (
        lambda a: ((a / 0).view(np.int64), ((a / 0).view(np.uint64) + 1).view(np.float64)), X),
    "x.view of float16 as uint16 and of bools as uint8": (
        lambda a: ((a / 3).astype(np.float16).view(np.uint16), (a > 0).view(np.uint8)), X),
    "x.view of a NumPy scalar (a NumPy scalar)": (lambda a: a.sum().view(np.int64), X),
    "np.packbits along an axis, little-endian, of a length not a multiple of 8 (zero-padded)": (
        lambda a: np.packbits(a > 0, axis=0, bitorder="little"), X),
    "np.unpackbits of np.packbits, cut to the original length": (
        lambda a: np.unpackbits(np.packbits(a.astype(np.int64), axis=1), axis=1, count=a.shape[1]), X),
    "np.unpackbits, padded past its bits and dropping from the end": (
        lambda a: (np.unpackbits(a.astype(np.uint8), count=80), np.unpackbits(a.astype(np.uint8), axis=0, count=-5)), X),
    "np.linalg.cond by the 1-norm of an exactly invertible float32 stack (float32, as NumPy's)": (
        lambda a: np.linalg.cond(np.stack([a[:2, :2] * 0 + [[1.0, 2.0], [3.0, 4.0]]] * 2).astype(np.float32), 1), X),
    "np.linalg.cond of a singular matrix (inf), and of one holding NaN (NaN)": (
        lambda a: (np.linalg.cond(a[:2, :2] * 0 + [[1.0, 2.0], [2.0, 4.0]], np.inf),
                   np.linalg.cond(a[:2, :2] * 0 + [[np.nan, 1.0], [1.0, 1.0]], -1)), X),
    "np.linalg.vector_norm, ord=inf over an empty array (0, a NumPy scalar; found by the GPU emulator)": (
        lambda a: np.linalg.vector_norm(a[:0], axis=(1, 0), ord=np.inf), X.astype(np.float32)),
    "np.add into an int8 out= under casting='unsafe'": (
        lambda a: np.add(a, 0.5, out=np.zeros_like(a, dtype=np.int8), casting="unsafe"), X),
    "np.polymul of traced coefficients, and with constants NumPy strips of leading zeros (-0.0 too)": (
        lambda a: (np.polymul(a[0], a[1]), np.polymul(a[0], [0, -0.0, 2.0, 1.0]), np.polymul([0.0], a[1]),
                   np.polymul(a[0, :1] * 0, a[1])), np.array([[2.0, -1.0, 3.0], [0.5, 4.0, -2.0]])),
    "np.polymul of int8 and int16 coefficients (int16, NumPy's convolve type)": (
        lambda a: np.polymul(a[0].astype(np.int8), a[1].astype(np.int16) * 100), np.array([[3, -2], [1, 7]])),
    "x.flat read by an integer, a slice of a transpose, a nested index list and a traced integer": (
        lambda a: (a.flat[-2], a.T.flat[1:6:2], a.flat[[[0, 5], [4, -6]]], a.flat[np.argmin(a)]), X),
    "x.flat of a NumPy scalar: read, and written into its own 0-d copy (the scalar stays; graph fuzzer)": (
        lambda a: _flat_of_a_numpy_scalar(a), X),
    "NumPy functions and ufuncs of x.flat (a 1-d copy, as NumPy converts a flatiter)": (
        lambda a: (np.cumsum(a.T.flat), np.maximum(a.flat, 0), np.stack([a.flat, a.flat]), np.copy(a.flat)), X),
    "np.ravel_multi_index of a coordinate out of range broadcast against an empty one (nothing checked)": (
        lambda a: np.ravel_multi_index((a[0, 0].astype(np.intp) + 9, a[:0, :1].astype(np.intp)), (1, 1),
                                       mode=("raise", "wrap")), X),
    # a gufunc's core axes placed by axes=, axis= and keepdims= (NumPy's "generalized ufunc" keywords)
    "np.vecdot along axis 0": (lambda a: np.vecdot(a, a * 2, axis=0), X),
    "np.vecdot along axis 0, keepdims": (lambda a: np.vecdot(a, a[:, :1], axis=0, keepdims=True), X),
    "np.vecdot with axes, keepdims (the kept axis last)": (lambda a: np.vecdot(a[None], a[:, None], axes=[1, 0], keepdims=True), X),
    "np.vecdot with axes naming the output's": (lambda a: np.vecdot(a, a, axes=[0, 0, ()]), X),
    "np.matmul with axes": (lambda a: np.matmul(a[None], a[None], axes=[(1, 2), (2, 1), (2, 0)]), X),
    "np.matmul of vectors with axes": (lambda a: np.matmul(a[0], a[1], axes=[0, 0, ()]), X),
    "np.matmul of a matrix and a vector with axes": (lambda a: np.matmul(a, V[:2], axes=[(1, 0), 0, 0]), X),
    "np.matvec with axes": (lambda a: np.matvec(a[None] * np.ones((2, 1, 1)), V[:2], axes=[(2, 1), 0, 0]), X),
    "np.vecmat with axes": (lambda a: np.vecmat(V, a[:, None] * np.ones((1, 4, 1)), axes=[0, (2, 0), -1]), X),
    "np.vecdot along an axis into out": (lambda a: (lambda o: (np.vecdot(a, a, axis=0, out=o), o)[1])(np.zeros_like(a[0])), X),
}


@pytest.mark.parametrize("name", list(AGREES))
def test_numpy_forms_give_numpys_result(name):
    fn, arg = AGREES[name]
    assert_like_numpy(jit(fn)(arg), fn(arg))


REFUSED = {
    "axis as a list": (lambda a: np.sum(a, axis=[0, 1]), X),
    "axis as a float": (lambda a: np.sum(a, axis=1.0), X),
    "a float in an axis tuple": (lambda a: a.sum(axis=(0, 1.0)), X),
    "reshape to a float": (lambda a: a.reshape(4.0), np.ones(4)),
    "transpose by floats": (lambda a: np.transpose(a, (1.0, 0)), X),
    "squeeze with a list": (lambda a: np.squeeze(a[:1], axis=[0]), X),
    "mean of 0-d, axis 0": (lambda a: np.mean(a, axis=0), Z),
    "var of 0-d, axis 0": (lambda a: np.var(a, axis=0), Z),
    "sum of 0-d, axis 1": (lambda a: np.sum(a, axis=1), Z),
    "bool == 2**64": (lambda a: a == 2**64, BV),
    "bool < 2**63": (lambda a: a < 2**63, BV),
    "astype same_kind float to int": (lambda a: a.astype(np.int32, casting="same_kind"), X),
    "hstack into int8 under same_kind": (lambda a: np.hstack([a, a], dtype=np.int8), X),
    "reshape an empty array to (-1, 0)": (lambda a: a[:0].reshape(-1, 0), X),
    "reshape an empty array to (0, -1)": (lambda a: a[:0].reshape(0, -1), X),
    "np.dot of unaligned shapes": (lambda a: np.dot(a, a), X),
    "np.dot of unaligned stacks": (lambda a: np.dot(np.ones((2, 2, 3)), a), X),
    "np.tensordot of mismatched axes": (lambda a: np.tensordot(a, a, ([0], [0, 1])), X),
    "np.unwrap along a bool axis (np.diff takes it, its cumsum's C converter does not)": (
        lambda a: np.unwrap(a, axis=True), X),
    "a traced array in a set (arrays are unhashable)": (lambda a: a + len({a}), X),
    "np.typename of an array (its table is keyed by type characters: unhashable)": (lambda a: np.typename(a), X),
    "x.any with a dtype its reduction has no loop for": (lambda a: a.any(0, np.float64), X),
    "round() of an array (ndarray defines no __round__)": (lambda a: round(a, 1), X),
    "round() of a NumPy bool": (lambda a: round((a > 0).any(), 1), X),
    "< of an array and None": (lambda a: a < None, X),
    "x.all with an array where the dtype goes": (lambda a: a.all(0, np.zeros_like(a[0], bool)), X),
    "x.choose with out= positionally (a third choice, which does not broadcast)": (
        lambda a: (a > 0).astype(int).choose(a, -a, np.zeros_like(a, shape=(4,))), X),
    "x.__array_namespace__ of a version NumPy has not": (lambda a: a.__array_namespace__(api_version="1999.12"), X),
    "a ufunc's signature of the wrong length (NumPy's ValueError)": (lambda a: np.add(a, a, signature=(None, "f4")), X),
    "a ufunc's type-string of the wrong counts": (lambda a: np.negative(a, signature="ff->f"), X),
    "a ufunc's signature as a list (a string or a tuple only)": (lambda a: np.add(a, a, signature=["f4", None, None]), X),
    "a ufunc's loop NumPy has not (its UFuncTypeError's class)": (lambda a: np.left_shift(a, 1), X),
    "np.isnat of numbers (NumPy's TypeError before the compiler's refusal)": (lambda a: np.isnat(a), X),
    "np.frexp with a dtype= NumPy has no loop for": (lambda a: np.frexp(a, dtype=np.int16), X),
    "np.clip with a dtype= its bounds cannot be cast to (same_kind)": (lambda a: np.clip(a, -1.5, 2.5, dtype=np.int32), X),
    "np.tensordot with an axis repeated": (lambda a: np.tensordot(a, a, ([1, 1], [0, 0])), X),
    "np.tensordot with a 0-d array in an axes list (NumPy's set of them: unhashable)": (
        lambda a: np.tensordot(a, a.T, ([np.array(1)], [0])), X),
    "np.tensordot of unequal lengths": (lambda a: np.tensordot(a, a, ([0], [1])), X),
    "np.tensordot past the last axis": (lambda a: np.tensordot(a, a, ([2], [0])), X),
    "np.inner of unaligned shapes": (lambda a: np.inner(a, V[:2]), X),
    "np.vdot of unequal sizes": (lambda a: np.vdot(a, V), X),
    "np.std into an int dtype, by axis (sqrt in place)": (lambda a: np.std(a, axis=0, dtype=np.int32), np.arange(6).reshape(2, 3)),
    "np.round of bools to a decimal": (lambda a: np.round(a, 1), B),
    "np.repeat with negative repeats": (lambda a: np.repeat(a, -1), X),
    "np.repeat with a repeat per element of another axis": (lambda a: np.repeat(a, [1, 2, 3], axis=0), X),
    "np.pad by a negative width": (lambda a: np.pad(a, -1), X),
    "np.pad by a float width": (lambda a: np.pad(a, 1.0), X),
    "np.pad, an empty axis extended by edge": (lambda a: np.pad(a[:, :0], 1, mode="edge"), X),
    "np.piecewise of a 2-d condition (NumPy reads its rows as conditions)": (lambda a: np.piecewise(a, a > 0, [1]), X),
    "np.piecewise, a condition of another shape": (lambda a: np.piecewise(a, [a[:1] > 0], [1]), X),
    "np.piecewise with too many functions": (lambda a: np.piecewise(a, [a > 0], [1, 2, 3]), X),
    "np.piecewise, a value out of uint8's range": (lambda a: np.piecewise(a, [a > 0], [300]), np.arange(3, dtype=np.uint8)),
    "np.pad by the maximum of no elements": (lambda a: np.pad(a, 1, mode="maximum", stat_length=((1, 0), (1, 1))), X),
    "np.pad by a negative stat_length": (lambda a: np.pad(a, 1, mode="mean", stat_length=-1), X),
    "np.histogram, weights of another shape": (lambda a: np.histogram(a, bins=2, weights=a[0]), X),
    "np.histogram, bool weights with given edges (NumPy's running sums cannot go back to bool)": (
        lambda a: np.histogram(a, bins=[0, 1, 2], weights=a > 0), X),
    "np.quantile with weights, another method": (
        lambda a: np.quantile(a, 0.5, method="linear", weights=np.ones_like(a)), X),
    "np.quantile with weights of another shape and no axis": (
        lambda a: np.quantile(a, 0.5, method="inverted_cdf", weights=np.ones(3)), X),
    "np.quantile with negative weights": (lambda a: np.quantile(a, 0.5, method="inverted_cdf", weights=-np.ones_like(a)), X),
    "np.quantile with traced weights all zero (checked as the kernel runs)": (
        lambda a: np.quantile(a, 0.5, axis=1, method="inverted_cdf", weights=a * 0), X),
    "np.quantile with traced negative weights (checked as the kernel runs)": (
        lambda a: np.quantile(a, 0.5, method="inverted_cdf", weights=a), X),
    "np.quantile with weights over an empty axis": (
        lambda a: np.quantile(a[:, :0], 0.5, axis=1, method="inverted_cdf", weights=a[:, :0]), X),
    "np.polyder of a negative order": (lambda a: np.polyder(a[0], -1), X),
    "np.polyint with too few constants": (lambda a: np.polyint(a[0], 3, k=[1, 2]), X),
    "np.polyder of a 2-d array whose last product does not broadcast (NumPy forms it at order 0 too)": (
        lambda a: np.polyder(a[:, :2]), X),
    "np.polyder of a 0-d array": (lambda a: np.polyder(a[0, 0]), X),
    "np.tril of a 0-d array": (lambda a: np.tril(a[0, 0]), X),
    "np.reshape(copy=False) of a transpose (NumPy must copy)": (lambda a: np.reshape(a.T, 6, copy=False), X),
    "x.reshape(copy=False) of a strided row pair": (lambda a: a[:, ::2].T.reshape(-1, copy=False), X),
    "np.argsort of a 0-d array along axis 1 (NumPy flattens it first)": (lambda a: np.argsort(a[0, 0], 1), X),
    "np.argsort of a 0-d array along a float axis": (lambda a: a[0, 0].argsort(axis=0.0), X),
    "x.astype of a traced array (not its dtype)": (lambda a: a.astype(a > 0), X),
    "x.view of a traced array": (lambda a: a.view(a), X),
    "np.zeros_like with a traced array as its positional dtype": (lambda a: np.zeros_like(a, a > 0), X),
    "x.sum(dtype=traced array)": (lambda a: a.sum(dtype=a.astype(np.float32)), X),
    "np.cumsum with a traced array as its positional dtype": (lambda a: np.cumsum(a, 0, a.astype(np.int8)), X),
    "np.add(dtype=traced array)": (lambda a: np.add(a, a, dtype=a.astype(np.float32)), X),
    "np.add(signature= holding a traced array)": (lambda a: np.add(a, a, signature=(None, None, a)), X),
    "np.add.reduce(dtype=traced array)": (lambda a: np.add.reduce(a, dtype=a.astype(np.int16)), X),
    "np.can_cast to a traced array": (lambda a: a if np.can_cast(a, a.astype(np.float32)) else a, X),
    "np.triu of a 0-d array": (lambda a: np.triu(a.sum()), X),
    "np.histogramdd of a 3-d array": (lambda a: np.histogramdd(a[None])[0], X),
    "np.histogram2d of 2-d coordinate arrays": (lambda a: np.histogram2d(a, a)[0], X),
    "np.choose of no choices by a float index (NumPy counts the choices first)": (lambda a: np.choose(a, a[:0]), X),
    "np.histogramdd of coordinate arrays of different lengths": (lambda a: np.histogramdd([a[0], a[1, :2]])[0], X),
    "np.polyint of a 0-d array": (lambda a: np.polyint(a[0, 0]), X),
    "np.linalg.cross of 2-vectors": (lambda a: np.linalg.cross(a[:, :2], a[:, 1:]), X),
    "np.linalg.tensorsolve of mismatched shapes": (lambda a: np.linalg.tensorsolve(a, a[0, :2]), X),
    "np.linalg.tensorsolve with a negative axis (NumPy's list.remove)": (
        lambda a: np.linalg.tensorsolve(np.eye(6).reshape(3, 2, 3, 2), np.ones((3, 2)), axes=(-4,)), X),
    "np.linalg.tensorinv of a non-square split": (lambda a: np.linalg.tensorinv(a[:2], 1), X),
    "np.sliding_window_view with a window longer than the axis": (
        lambda a: np.lib.stride_tricks.sliding_window_view(a, 4, axis=1), X),
    "np.ix_ of a 2-d index": (lambda a: np.ix_(a), X),
    "np.poly of a 3-d array": (lambda a: np.poly(a[None]), X),
    "np.ravel_multi_index of a coordinate out of range (checked as the kernel runs)": (
        lambda a: np.ravel_multi_index((a.astype(np.int64), a.astype(np.int64)), (3, 4)), X),
    "np.ravel_multi_index of float coordinates": (lambda a: np.ravel_multi_index((a[0], a[1]), (3, 4)), X),
    "np.ravel_multi_index with one coordinate for two dimensions": (
        lambda a: np.ravel_multi_index((a[0].astype(np.int64),), (3, 4)), X),
    "np.geomspace through zero (checked as the kernel runs)": (lambda a: np.geomspace(a[0, 0] * 0, 100, 6), X),
    "np.packbits of floats": (lambda a: np.packbits(a), X),
    "np.unpackbits of int64": (lambda a: np.unpackbits(a.astype(np.int64)), X),
    "np.unpackbits dropping more bits than it has": (lambda a: np.unpackbits(a.astype(np.uint8), count=-100), X),
    "np.linalg.cond of an empty matrix": (lambda a: np.linalg.cond(a[:0, :0], 1), X),
    "np.linalg.cond of a non-square matrix": (lambda a: np.linalg.cond(a, "fro"), X),
    "np.pad with an unknown mode": (lambda a: np.pad(a, 1, mode="average"), X),
    # a function of one axis reads it with operator.index: a tuple (or None where it means nothing) is a TypeError
    "np.concatenate along a tuple of axes": (lambda a: np.concatenate([a, a], axis=(0, 1)), X),
    "np.stack along no axis (None)": (lambda a: np.stack([a, a], axis=None), X),
    "np.take along a tuple of one axis": (lambda a: np.take(a, [0], axis=(0,)), X),
    "np.repeat along ()": (lambda a: np.repeat(a, 2, axis=()), X),
    "np.cumsum along a tuple of axes": (lambda a: np.cumsum(a, axis=(0, 1)), X),
    "np.diff along None": (lambda a: np.diff(a, axis=None), X),
    "np.swapaxes of a tuple": (lambda a: np.swapaxes(a, (0, 1), 0), X),
    "np.argmax along a tuple of one axis": (lambda a: np.argmax(a, axis=(0,)), X),
    "np.pad of int8 by a constant 300 (NumPy's slice assignment: OverflowError)": (
        lambda a: np.pad(a.astype(np.int8), 1, constant_values=300), X),
    "np.pad of int16 by NaN, on no side's width (ValueError all the same)": (
        lambda a: np.pad(a.astype(np.int16), ((0, 0), (1, 0)), constant_values=((np.nan, 0), (1, 2))), X),
    "np.pad with another mode's keyword": (lambda a: np.pad(a, 1, mode="edge", stat_length=2), X),
    "np.fliplr of a vector": (lambda a: np.fliplr(a), V),
    "np.diff of a negative order": (lambda a: np.diff(a, n=-1), X),
    "np.roll with a 2-d shift": (lambda a: np.roll(a, [[1]], axis=0), X),
    "np.roll by a NaN shift": (lambda a: np.roll(a, np.nan), X),
    "np.maximum.reduce of an empty axis": (lambda a: np.maximum.reduce(a[:0]), X),
    "np.max where a mask, without initial": (lambda a: np.max(a, where=a > 0), X),
    "np.sum where an int mask": (lambda a: np.sum(a, where=np.array([1, 0, 1])), X),
    "np.sum where a mask of another shape": (lambda a: np.sum(a, where=np.ones((3, 2), bool)), X),
    "np.max, an initial out of the result's range": (lambda a: np.max(a.astype(np.uint8), initial=-1.5), X),
    "np.einsum of unequal lengths": (lambda a: np.einsum("ij,jk", a, a), X),
    "np.einsum with too few subscripts": (lambda a: np.einsum("i", a), X),
    "np.einsum with an output label never used": (lambda a: np.einsum("ij->k", a), X),
    "np.einsum, '...' left out of the output": (lambda a: np.einsum("...j->j", a), X),
    "np.einsum, a digit as a label": (lambda a: np.einsum("i1", a), X),
    "np.einsum with more operands than subscripts": (lambda a: np.einsum("ij", a, a), X),
    "np.einsum, a diagonal of unequal lengths": (lambda a: np.einsum("ii->i", a), X),
    "np.einsum into int64 under safe": (lambda a: np.einsum("ij,j->i", a, V, dtype=np.int64), X),
    "np.einsum of mixed dtypes under casting='no'": (lambda a: np.einsum("ij,j->i", a, np.arange(3), casting="no"), X),
    "np.diagonal of a vector": (lambda a: np.diagonal(a), V),
    "np.diagonal of one axis twice": (lambda a: np.diagonal(a, 0, 1, -1), X),
    "np.diagonal past the last axis": (lambda a: np.diagonal(a, 0, 0, 2), X),
    "np.diag of a 3-d array": (lambda a: np.diag(a[None]), X),
    "np.moveaxis of unequal counts": (lambda a: np.moveaxis(a, (0, 1), 0), X),
    "np.moveaxis of a repeated axis": (lambda a: np.moveaxis(a, (0, 0), (0, 1)), X),
    "np.take_along_axis of float indices": (lambda a: np.take_along_axis(a, np.zeros((2, 1)), 1), X),
    "np.take_along_axis of another rank": (lambda a: np.take_along_axis(a, np.zeros(2, np.int64), 1), X),
    "np.take_along_axis out of range": (lambda a: np.take_along_axis(a, np.full((2, 1), 3), 1), X),
    "np.take_along_axis, axis None and 2-d indices": (lambda a: np.take_along_axis(a, np.zeros((1, 1), int), None), X),
    "np.ptp of bools": (lambda a: np.ptp(a), B),
    "np.var with ddof and correction": (lambda a: np.var(a, ddof=1, correction=1), X),
    "np.sort of a 0-d array along the last axis": (lambda a: np.sort(a), Z),
    "np.quantile past 1": (lambda a: np.quantile(a, 1.5), X),
    "np.delete out of bounds": (lambda a: np.delete(a, 4, axis=1), X),
    "np.block of mismatched depths": (lambda a: np.block([[a], a]), X),
    "np.block of a tuple": (lambda a: np.block((a, a)), X),
    "np.block of an empty list": (lambda a: np.block([[], [a]]), X),
    "np.insert out of bounds": (lambda a: np.insert(a, -5, 1.0, axis=1), X),
    "np.resize to a negative shape": (lambda a: np.resize(a, (-1, 2)), X),
    "np.compress by a condition longer than the axis": (lambda a: np.compress([True] * 4, a, axis=0), X),
    "np.choose of an index out of range (checked by the kernel)": (lambda a: np.choose((a > 2).astype(int) * 2, [a, a]), X),
    "np.choose of float indices": (lambda a: np.choose(a, [a, a]), X),
    "np.choose of no choices": (lambda a: np.choose(a.astype(int), []), X),
    "np.choose, an unknown mode": (lambda a: np.choose(a.astype(int), [a], mode="bogus"), X),
    "in place on np.imag's read-only zeros": (lambda a: (lambda i: (i.__iadd__(1), i)[1])(np.imag(a * 1)), X),
    "np.maximum.accumulate of a 0-d array": (lambda a: np.maximum.accumulate(a), Z),
    "np.add.accumulate along no axis": (lambda a: np.add.accumulate(a, axis=None), X),
    "np.maximum.accumulate along two axes": (lambda a: np.maximum.accumulate(a, axis=(0, 1)), X),
    "np.subtract.accumulate of bools": (lambda a: np.subtract.accumulate(a > 0), X),
    "np.bitwise_or.accumulate of floats": (lambda a: np.bitwise_or.accumulate(a), X),
    "np.round of ints to negative decimals into an int out (true_divide's cast)": (
        lambda a: np.round(a.astype(np.int32), -1, out=np.zeros_like(a, np.int32)), X),
    "np.dot into an out of another dtype": (lambda a: np.dot(a, a.T, out=np.zeros_like(a, np.float32, shape=(2, 2))), X),
    "np.dot into an out that is not C-contiguous": (lambda a: np.dot(a, a.T, out=np.zeros_like(a, shape=(2, 2)).T), X),
    "np.dot into an out of another shape": (lambda a: np.dot(a, a.T, out=np.zeros_like(a, shape=(1, 2, 2))), X),
    "np.einsum of float64 into a float32 out (casting='safe')": (
        lambda a: np.einsum("ij->i", a, out=np.zeros_like(a[:, 0], np.float32)), X),
    "np.median with keepdims into an out without the kept axes": (
        lambda a: np.median(a, axis=1, keepdims=True, out=np.zeros_like(a[:, 0])), X),
    "np.take of int8 into a float32 out (out must convert safely to the result's dtype)": (
        lambda a: np.take(a.astype(np.int8), [0, 1], out=np.zeros_like(a, np.float32, shape=(2,))), X),
    "np.compress into an out of the wrong length": (
        lambda a: np.compress([True, False, True], a, axis=1, out=np.zeros_like(a, shape=(2, 3))), X),
    "np.median of a NaN into an int out (NumPy's copyto of it, checked as the kernel runs)": (
        lambda a: np.median(np.where(a == 1, np.nan, a), axis=0, out=np.zeros_like(a[0], np.int16)), X),
    "np.quantile of a NaN into an int out (the same, after a discrete method's take)": (
        lambda a: np.quantile(np.where(a == 1, np.nan, a), 0.5, axis=1, method="lower",
                              out=np.zeros_like(a[:, 0], np.int8)), X),
    "np.quantile of floats into an int out (same_kind)": (
        lambda a: np.quantile(a, 0.3, axis=1, out=np.zeros_like(a[:, 0], np.int32)), X),
    "np.nanquantile into an out its result does not broadcast to": (
        lambda a: np.nanquantile(a, [0.1, 0.5], axis=1, out=np.zeros_like(a, shape=(2, 3))), X),
    "np.nanmedian with keepdims into an out without the kept axes": (
        lambda a: np.nanmedian(a, axis=1, keepdims=True, out=np.zeros_like(a[:, 0])), X),
    "a weighted np.quantile into an out of another shape (NumPy's own shape check)": (
        lambda a: np.quantile(a, 0.5, axis=1, method="inverted_cdf", weights=a + 3, out=np.zeros_like(a, shape=(1, 2))), X),
    "a weighted np.quantile of a NaN into an int out (its copyto, same_kind, checked as the kernel runs)": (
        lambda a: np.quantile(np.where(a == 1, np.nan, a), 0.5, axis=1, method="inverted_cdf", weights=a + 3,
                              out=np.zeros_like(a[:, 0], np.int8)), X),
    "np.take of a 0-d array along axis 1": (lambda a: np.take(a[0, 0], [0], axis=1), X),
    "np.cumsum of a 0-d array along axis 1": (lambda a: np.cumsum(a[0, 0], axis=1), X),
    "np.lexsort of scalar keys along axis 1": (lambda a: np.lexsort(a[0], axis=1), X),
    "np.nanargmax along the axes (0,) of a 0-d array (np.all's AxisError comes first)": (
        lambda a: np.nanargmax(a[0, 0], axis=(0,)), X),
    "np.add.accumulate along the axes (0, 2) (NumPy reads them before it counts them)": (
        lambda a: np.add.accumulate(a, axis=(0, 2)), X),
    "np.lexsort along axis None": (lambda a: np.lexsort(a[0], axis=None), X),
    "np.sum along axis=True (NumPy's C axis converter refuses a bool)": (lambda a: np.sum(a, True), X),
    "np.max along axes (True,)": (lambda a: a.max(axis=(True,)), X),
    "np.cumsum along axis=True": (lambda a: np.cumsum(a, axis=True), X),
    "np.argsort along axis=True": (lambda a: np.argsort(a, axis=True), X),
    "np.concatenate along axis=True": (lambda a: np.concatenate([a, a], axis=True), X),
    "np.mean along axis=True": (lambda a: np.mean(a, axis=True), X),
    "np.mean of a 1-d array along axis=True (its count of axis 1 first: AxisError)": (lambda a: np.mean(a[0], True), X),
    "np.squeeze along axis=False": (lambda a: np.squeeze(a[None], axis=False), X),
    "np.take along axis=True": (lambda a: np.take(a, 0, axis=True), X),
    "np.sum of a 0-d array over the axes (0,) (only the integer 0 is accepted)": (lambda a: a.sum().sum(axis=(0,)), X),
    "np.maximum.reduce of a 0-d array over the axes (-1,)": (lambda a: np.maximum.reduce(a[0, 0], axis=(-1,)), X),
    "np.linalg.norm of a 0-d array along axis 0": (lambda a: np.linalg.norm(a[0, 0], axis=0), X),
    "np.add.accumulate of a 0-d array along axis 1": (lambda a: np.add.accumulate(a[0, 0], axis=1), X),
    "np.split along axis None": (lambda a: np.split(a, 1, axis=None), X),
    "np.round into an out of another shape": (lambda a: np.round(a, 1, out=np.zeros_like(a[0])), X),
    "np.concatenate into an out of the wrong shape": (
        lambda a: np.concatenate([a, a], out=np.zeros_like(a, shape=(4, 2))), X),
    "np.concatenate with out= and dtype=": (
        lambda a: np.concatenate([a, a], out=np.zeros_like(a, shape=(4, 3)), dtype=np.float64), X),
    "np.concatenate of floats into an int out (same_kind)": (
        lambda a: np.concatenate([a, a], out=np.zeros_like(a, np.int64, shape=(4, 3))), X),
    "np.maximum.accumulate into an out of another shape": (
        lambda a: np.maximum.accumulate(a, out=np.zeros_like(a[0])), X),
    "np.add.accumulate into a tuple of two out arrays": (
        lambda a: np.add.accumulate(a, out=(np.zeros_like(a), np.zeros_like(a))), X),
    "np.rot90 on one axis twice": (lambda a: np.rot90(a, axes=(1, -1)), X),
    "np.rot90 of a vector": (lambda a: np.rot90(a[0]), X),
    "np.array_split into 0 sections": (lambda a: np.array_split(a, 0), X),
    "np.dsplit of a 2-d array": (lambda a: np.dsplit(a, 1), X),
    "np.hsplit into unequal sections": (lambda a: np.hsplit(a, 2), X),
    "np.meshgrid, indexing 'yx'": (lambda a: np.meshgrid(a, indexing="yx"), X),
    "np.ediff1d, a float end for ints": (lambda a: np.ediff1d(a.astype(np.int32), to_end=0.5), X),
    "np.ediff1d of bools (NumPy's subtract)": (lambda a: np.ediff1d(a > 0), X),
    "np.polyval of 0-d coefficients": (lambda a: np.polyval(a[0, 0], a), X),
    "np.vander of a matrix": (lambda a: np.vander(a), X),
    "np.vander, negative N": (lambda a: np.vander(a[0], -1), X),
    "np.select of unequal lists": (lambda a: np.select([a > 0], [a, a]), X),
    "np.select of no conditions": (lambda a: np.select([], []), X),
    "np.select with a non-bool condition": (lambda a: np.select([a], [a]), X),
    "np.select of a negative Python int choice into uint8": (lambda a: np.select([a > 0], [-3], a.astype(np.uint8)), X),
    "np.select of shapes that do not broadcast": (lambda a: np.select([a > 0], [a[:, :2]]), X),
    "np.isin, kind='table' of floats": (lambda a: np.isin(a, [1.0], kind="table"), X),
    "np.isin, an unknown kind": (lambda a: np.isin(a, [1.0], kind="hash"), X),
    "np.unravel_index out of bounds (checked as the kernel runs)": (lambda a: np.unravel_index(np.argmax(a, axis=1) + 4, (2, 3)), X),
    "np.unravel_index of float indices": (lambda a: np.unravel_index(a, (2, 3)), X),
    "np.unravel_index, order 'K'": (lambda a: np.unravel_index(np.argmax(a), (2, 3), order="K"), X),
    "np.vecdot of a 0-d operand": (lambda a: np.vecdot(a[0, 0], a), X),
    "np.correlate of a 0-d operand": (lambda a: np.correlate(a[0, 0], V), X),
    "np.cross of 4-vectors": (lambda a: np.cross(a[:, :2] * np.ones((2, 2)), np.ones((2, 4))), X),
    "np.cross of a 0-d operand": (lambda a: np.cross(a[0, 0], a), X),
    "np.cross of bools": (lambda a: np.cross(a > 0, a < 1), X),
    "np.correlate of a matrix": (lambda a: np.correlate(a, V), X),
    "np.convolve with an empty operand": (lambda a: np.convolve(a[0, :0], V), X),
    "np.correlate with an unknown mode": (lambda a: np.correlate(a[0], V, "middle"), X),
    "np.vecdot of unequal lengths": (lambda a: np.vecdot(a, V[:2]), X),
    "np.matrix_transpose of a vector": (lambda a: np.matrix_transpose(a[0]), X),
    "np.unstack of a 0-d array": (lambda a: np.unstack(a[0, 0]), X),
    "np.cumulative_sum of a matrix without an axis": (lambda a: np.cumulative_sum(a), X),
    "np.linalg.outer of matrices": (lambda a: np.linalg.outer(a, a), X),
    "np.average with weights summing to zero": (lambda a: np.average(a, axis=1, weights=[1, -1, 0]), X),
    "np.average with weights of another shape and no axis": (lambda a: np.average(a, weights=[1, 2, 3]), X),
    "np.average with weights not along the axis": (lambda a: np.average(a, axis=0, weights=[1, 2, 3]), X),
    "np.percentile below 0": (lambda a: np.percentile(a, [-1, 50]), X),
    "np.quantile of an empty array": (lambda a: np.quantile(a[:0], 0.5), X),
    "np.quantile of an unknown method": (lambda a: np.quantile(a, 0.5, method="bogus"), X),
    "np.quantile over two axes of an empty array (NumPy's reshape to -1)": (lambda a: np.quantile(a[:0, None], 0.5, axis=(1, 2)), X),
    "np.sort of an unknown kind": (lambda a: np.sort(a, kind="bubble"), X),
    "np.argsort with kind and stable": (lambda a: np.argsort(a, kind="stable", stable=True), X),
    "np.sort by a field": (lambda a: np.sort(a, order="x"), X),
    "np.nanmean into an int dtype": (lambda a: np.nanmean(a, dtype=np.int32), X),
    "np.nanmax where a mask, without initial": (lambda a: np.nanmax(a, where=a > 0), X),
    "np.nanargmax of an all-NaN row (checked by the kernel)": (lambda a: np.nanargmax(np.where(a < 0.5, np.nan, a), axis=1), X),
    "np.nanargmin of an all-NaN array": (lambda a: np.nanargmin(a / 0 * 0), X),
    "np.nanargmin of an empty axis": (lambda a: np.nanargmin(a[:, :0], axis=1), X),
    "np.searchsorted in a 2-d array": (lambda a: np.searchsorted(a, 1.0), X),
    "np.searchsorted side 'middle'": (lambda a: np.searchsorted(a[0], 1.0, side="middle"), X),
    "np.searchsorted with a float sorter": (lambda a: np.searchsorted(a[0], 1.0, sorter=np.array([0.0, 1.0, 2.0])), X),
    "np.searchsorted with a short sorter": (lambda a: np.searchsorted(a[0], 1.0, sorter=[0, 1]), X),
    "np.searchsorted with a sorter out of range": (lambda a: np.searchsorted(a[0], a, sorter=[0, 1, 7]), X),
    "np.digitize of bins neither increasing nor decreasing": (lambda a: np.digitize(a, [0, 2, 1]), X),
    "np.digitize of 2-d bins": (lambda a: np.digitize(a, [[0, 1]]), X),
    "np.cov with fractional fweights": (lambda a: np.cov(a, fweights=[1.5, 1, 1]), X),
    "np.cov with a fractional ddof": (lambda a: np.cov(a, ddof=1.5), X),
    "np.cov of a 3-d array": (lambda a: np.cov(a[None]), X),
    "np.cov with negative aweights": (lambda a: np.cov(a, aweights=[1, -1, 1]), X),
    "np.lexsort of no keys": (lambda a: np.lexsort(a[0, :0]), X),
    "np.lexsort of keys of two shapes": (lambda a: np.lexsort((a[0], a[1, :2])), X),
    "np.histogram with no bins": (lambda a: np.histogram(a, bins=0, range=(0, 1)), X),
    "np.linspace of negative length": (lambda a: np.linspace(a[0, 0], a[1, 1], -1), X),
    "np.linspace on an axis past the result's": (lambda a: np.linspace(a[0], a[1], 3, axis=3), X),
    "np.histogram with a fractional count": (lambda a: np.histogram(a, bins=2.5, range=(0, 1)), X),
    "np.histogram with decreasing edges": (lambda a: np.histogram(a, bins=[2, 1]), X),
    "np.histogram with a reversed range": (lambda a: np.histogram(a, bins=3, range=(2, 1)), X),
    "np.histogram with an infinite range": (lambda a: np.histogram(a, bins=3, range=(0, np.inf)), X),
    "np.histogram with 2-d edges": (lambda a: np.histogram(a, bins=[[0, 1]]), X),
    "np.interp with no sample points": (lambda a: np.interp(a, [], []), X),
    "np.interp of unequal lengths": (lambda a: np.interp(a, [0, 1], [0, 1, 2]), X),
    "np.interp of 2-d sample points": (lambda a: np.interp(a, a, a), X),
    "np.interp with a zero period": (lambda a: np.interp(a, [0, 1], [0, 1], period=0), X),
    "np.interp with a 1-d left": (lambda a: np.interp(a, [0, 1], [0, 1], left=a[0]), X),
    "np.interp with a string right": (lambda a: np.interp(a, [0, 1], [0, 1], right="x"), X),
    "np.var where an int mask": (lambda a: np.var(a, where=np.array([1, 0, 1])), X),
    "np.column_stack of unequal rows": (lambda a: np.column_stack((a, V)), X),
    "np.apply_along_axis over an empty iteration": (lambda a: np.apply_along_axis(np.sum, 1, a[:0]), X),
    "x.flat = v of a NumPy scalar": (lambda a: setattr(a.sum(), "flat", 5.0), X),
    "np.apply_over_axes of a function losing two axes": (lambda a: np.apply_over_axes(lambda v, ax: v.sum(), a, 0), X),
    "np.matvec with axis= (two core axes)": (lambda a: np.matvec(a, V, axis=0), X),
    "np.vecdot with axis= and axes=": (lambda a: np.vecdot(a, a, axis=0, axes=[0, 0]), X),
    "np.vecdot along an axis past the operands'": (lambda a: np.vecdot(a, a, axis=2), X),
    "np.vecdot with axes of unequal lengths": (lambda a: np.vecdot(a, a, axes=[0, 1]), X),
    "np.matmul with keepdims": (lambda a: np.matmul(a, a.T, keepdims=True), X),
    "np.matmul with too few axes entries": (lambda a: np.matmul(a, a.T, axes=[(0, 1)]), X),
    "np.add.reduceat at an index past the axis": (lambda a: np.add.reduceat(a, [0, 3], axis=1), X),
    "np.subtract.reduce where= with no initial (no identity)": (lambda a: np.subtract.reduce(a, axis=1, where=a > 0), X),
    "np.sum over an empty axis with initial=None (no start)": (lambda a: np.sum(a[:, :0], axis=1, initial=None), X),
    "np.add.reduceat at a negative index": (lambda a: np.add.reduceat(a, [-1]), X),
    "np.add.reduceat over two axes": (lambda a: np.add.reduceat(a, [0], axis=(0, 1)), X),
    "np.add.reduceat of a 0-d array": (lambda a: np.add.reduceat(a, [0]), Z),
    "np.add.reduceat at an array of float indices": (lambda a: np.add.reduceat(a, np.array([0.0])), X),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_what_numpy_refuses_is_refused_with_its_exception(name):
    fn, arg = REFUSED[name]
    with pytest.raises(Exception) as numpy_error:
        fn(arg)
    with pytest.raises(type(numpy_error.value)):
        jit(fn)(arg)


def test_polymul_refuses_a_traced_leading_zero_as_the_kernel_runs():
    """NumPy strips a leading zero and returns a shorter result; a compiled function's length is fixed, so it
    refuses the data by name (a poly1d, NumPy's other return type, by name at trace time)."""
    fn = jit(lambda a, b: np.polymul(a, b))
    assert_like_numpy(fn(np.array([1.0, 2.0]), np.array([3.0, 0.0])), np.polymul([1.0, 2.0], [3.0, 0.0]))
    with pytest.raises(NotImplementedError, match="starts with a zero, which NumPy strips, .*checked as the kernel ran"):
        fn(np.array([-0.0, 2.0]), np.array([3.0, 0.0]))
    with pytest.raises(NotImplementedError, match="np.poly1d"):
        jit(lambda a: np.polymul(np.poly1d([1.0, 2.0]), a))(np.ones(2))


def test_ravel_multi_index_out_of_range_is_numpys_error_naming_the_call_as_the_kernel_runs():
    fn = lambda a: np.ravel_multi_index((a.astype(np.int64), np.array([0, 1])), (3, 4), mode=("raise", "wrap"))  # noqa: E731
    assert_like_numpy(jit(fn)(np.array([2.0, 0.0])), fn(np.array([2.0, 0.0])))
    with pytest.raises(ValueError, match="invalid entry in coordinates array"):
        fn(np.array([3.0, 0.0]))
    with pytest.raises(ValueError, match=r"invalid entry in coordinates array \(np.ravel_multi_index at .*, checked as the "
                                         "kernel ran\)"):
        jit(fn)(np.array([3.0, 0.0]))


def test_einsum_path_and_min_scalar_type_are_numpys_answers_from_shapes_and_dtypes():
    seen = {}

    def fn(a, b):
        seen["path"] = np.einsum_path("ij,jk,kl->il", a, b, a, optimize="optimal")
        seen["greedy"] = np.einsum_path("ij,jk,kl->il", a, b, a, optimize="greedy")
        seen["types"] = (np.min_scalar_type(a), np.min_scalar_type(b.astype(np.int16)), np.min_scalar_type(a[0, 0] > 0))
        seen["interleaved"] = np.einsum_path(a, [0, 1], b, [1, 2], a, [2, 3], [0, 3], optimize="optimal")
        return a @ b
    a, b = np.ones((2, 5)), np.ones((5, 2))
    jit(fn)(a, b)
    assert seen["path"] == np.einsum_path("ij,jk,kl->il", a, b, a, optimize="optimal")
    assert seen["greedy"] == np.einsum_path("ij,jk,kl->il", a, b, a, optimize="greedy")
    assert seen["types"] == (np.dtype(np.float64), np.dtype(np.int16), np.dtype(np.bool_))
    assert seen["interleaved"] == np.einsum_path(a, [0, 1], b, [1, 2], a, [2, 3], [0, 3], optimize="optimal")
    with pytest.raises(NotImplementedError, match="min_scalar_type of a traced 0-d array"):
        jit(lambda x: (np.min_scalar_type(x[0, 0]), x)[1])(a)


def _into(fn, dtype, shape, strided=False):
    """fn(x, out=o) for a fresh out array (every other element of a larger one when strided); the result must
    be the out array itself, and the whole array is returned."""
    def call(a):
        whole = np.zeros_like(a, dtype=dtype, shape=tuple(2 * d for d in shape) if strided else shape)
        out = whole[tuple(slice(None, None, 2) for _ in shape)] if strided else whole
        assert fn(a, out) is out
        return whole
    return call


RX = np.array([[3.5, -1.25, 2.0, 0.5], [np.nan, 7.0, -0.0, 1.0], [120.0, 100.0, 30.0, -2.0]])
REDUCTIONS_INTO_OUT = {
    "np.sum over an axis into float64": _into(lambda a, o: np.sum(a, axis=1, out=o), np.float64, (3,)),
    "np.sum of int8 into int16 (the loop is int16: no wrap at 127)":
        _into(lambda a, o: np.sum(a.astype(np.int8), axis=1, out=o), np.int16, (3,)),
    "np.sum of int8 into int8 (wraps: no int64 accumulator with out=)":
        _into(lambda a, o: np.sum(a.astype(np.int8), axis=1, out=o), np.int8, (3,)),
    "np.sum of float32 into float64 (the loop is float64)":
        _into(lambda a, o: np.sum(a.astype(np.float32) / 3, axis=0, out=o), np.float64, (4,)),
    "x.sum into a strided view, keepdims": _into(lambda a, o: a.sum(axis=0, keepdims=True, out=o), np.float64, (1, 4), True),
    "np.prod into float64 with where= and initial=":
        _into(lambda a, o: np.prod(a, axis=1, out=o, where=a > 0, initial=2.0), np.float64, (3,)),
    "np.max of int16 into int64": _into(lambda a, o: np.max(a.astype(np.int16), axis=0, out=o), np.int64, (4,)),
    "np.min into a 0-d array (returned as the array, not a scalar)": _into(lambda a, o: np.min(a, out=o), np.float64, ()),
    "np.any into float64 (truth values converted)": _into(lambda a, o: np.any(a > 50, axis=1, out=o), np.float64, (3,)),
    "np.all into int8, strided": _into(lambda a, o: np.all(a, axis=0, out=o), np.int8, (4,), True),
    "np.argmax into int64": _into(lambda a, o: np.argmax(a, axis=1, out=o), np.int64, (3,)),
    "np.argmin into a strided int64 view, keepdims":
        _into(lambda a, o: np.argmin(a, axis=0, out=o, keepdims=True), np.int64, (1, 4), True),
    "np.nansum into float64": _into(lambda a, o: np.nansum(a, axis=0, out=o), np.float64, (4,)),
    "np.nanmax into float64": _into(lambda a, o: np.nanmax(a, axis=0, out=o), np.float64, (4,)),
    "np.nanmin of int16 into int32": _into(lambda a, o: np.nanmin(a.astype(np.int16), axis=1, out=o), np.int32, (3,)),
    "np.add.reduce into out=(o,)": _into(lambda a, o: np.add.reduce(a, out=(o,)), np.float64, (4,)),
    "np.fmax.reduce into float64": _into(lambda a, o: np.fmax.reduce(a, axis=1, out=o), np.float64, (3,)),
    "np.logical_or.reduce into bool": _into(lambda a, o: np.logical_or.reduce(a, axis=1, out=o), np.bool_, (3,)),
    # np.mean, np.var, np.std in NumPy's order: the sum into out, then true_divide(out, intp count, out=out)
    "np.mean into float32 (divided in float64, rounded again)":
        _into(lambda a, o: np.mean(a[[0, 2]] / 3, axis=1, out=o), np.float32, (2,)),
    "np.mean of int8 into int64 (the quotient truncated)":
        _into(lambda a, o: np.mean(a[[0, 2]].astype(np.int8), axis=1, out=o), np.int64, (2,)),
    "np.mean where a mask, keepdims": _into(lambda a, o: np.mean(a, axis=0, out=o, where=a > 0, keepdims=True),
                                            np.float64, (1, 4)),
    "np.var with ddof into float64 (dyadic values: exact)":
        _into(lambda a, o: np.var(a[[0, 2]], axis=1, ddof=1, out=o), np.float64, (2,)),
    "np.std into a strided float64 view": _into(lambda a, o: np.std(a[[0, 2]] * 4, axis=0, out=o), np.float64, (4,), True),
    # the running value in the loop (out, array) promote to, converted into out element by element
    "np.cumsum of int8 into int16 (no wrap)": _into(lambda a, o: np.cumsum(a[2].astype(np.int8), out=o), np.int16, (4,)),
    "np.cumsum of int8 into int8 (wraps)": _into(lambda a, o: np.cumsum(a[2].astype(np.int8), out=o), np.int8, (4,)),
    "np.cumsum of float64 into float32 (carried in float64)":
        _into(lambda a, o: np.cumsum(a[[0, 2]] / 3, axis=1, out=o), np.float32, (2, 4)),
    "np.cumprod flattened into a strided view": _into(lambda a, o: np.cumprod(a[[0]] / 2, out=o), np.float64, (4,), True),
    "np.nancumsum into float64": _into(lambda a, o: np.nancumsum(a, axis=0, out=o), np.float64, (3, 4)),
    "np.nanmean into float32 (NaNs skipped; divided in place)":
        _into(lambda a, o: np.nanmean(a / 3, axis=0, out=o), np.float32, (4,)),
    "np.nanvar into float64 with ddof (a slice past its degrees of freedom is NaN)":
        _into(lambda a, o: np.nanvar(np.where(a > 50, np.nan, a), axis=0, ddof=2, out=o), np.float64, (4,)),
    "np.nanstd into a strided view": _into(lambda a, o: np.nanstd(a * 4, axis=1, out=o), np.float64, (3,), True),
    "np.nanmean of int16 (np.mean's path) into float32":
        _into(lambda a, o: np.nanmean(a[[0, 2]].astype(np.int16), axis=1, out=o), np.float32, (2,)),
}


@pytest.mark.parametrize("name", list(REDUCTIONS_INTO_OUT))
def test_reductions_write_into_out_as_numpy(name):
    """A reduction's out= computes in the loop NumPy's promotion picks for (out's dtype, the array's), is
    converted into the out array's memory and returns that array (a view's whole base shows the write)."""
    fn = REDUCTIONS_INTO_OUT[name]
    with np.errstate(invalid="ignore"):
        assert_like_numpy(jit(fn)(RX), fn(RX))


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "any", "all", "argmax", "argmin", "mean", "var", "std",
                                  "nansum", "nanmax", "nanmean", "nanvar", "nanstd", "add.reduce", "fmax.reduce"])
def test_a_reduction_of_a_numpy_scalar_into_out_returns_what_numpy_returns(name):
    """np.sum(s, out=o) of a NumPy scalar s calls s.sum(out=o): o is written and its value returned as a NumPy
    scalar; np.nansum and friends (an array by asanyarray) and ufunc.reduce return o itself."""
    fn = {"add.reduce": lambda v, o: np.add.reduce(v, axis=None, out=o),
          "fmax.reduce": lambda v, o: np.fmax.reduce(v, axis=None, out=o)}.get(name) or \
        (lambda v, o: getattr(np, name)(v, out=o))

    def call(x):
        out = np.zeros_like(x, dtype=np.int64 if name.startswith("arg") else np.float32, shape=())
        result = fn(np.sum(x), out)
        return [result, out]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_like_numpy(jit(call)(X), call(X))


def test_reductions_into_out_refuse_what_numpy_refuses_and_what_cannot_be_written():
    with pytest.raises(ValueError, match="wrong number of dimensions") as numpy_error:
        np.sum(RX, axis=1, out=np.zeros((1, 3)))
    with pytest.raises(ValueError, match=str(numpy_error.value)):
        jit(lambda a: np.sum(a, axis=1, out=np.zeros_like(a, shape=(1, 3))))(RX)
    with pytest.raises(NotImplementedError, match=r"np.sum\(..., out=...\) into a NumPy array"):
        jit(lambda a: np.sum(a, axis=1, out=np.zeros(3)))(RX)
    with pytest.raises(ValueError, match="read-only"):
        jit(lambda a: np.max(a, axis=0, out=np.broadcast_to(np.zeros_like(a, shape=(1,)), (4,))))(RX)
    with pytest.raises(NotImplementedError, match="argument"):
        jit(lambda a, o: np.sum(a, axis=1, out=o))(RX, np.zeros(3))


def test_allclose_array_equal_and_array_equiv_as_numpy_bool_scalars():
    """NumPy's answers; where NumPy returns a Python bool computed from the data the compiled function
    returns a NumPy bool scalar (known only as the kernel runs); a shape mismatch is known when tracing,
    and stays NumPy's Python False there."""
    a = np.array([1.0, np.nan, 3.0, -0.0])
    b = np.array([1.0, np.nan, 3.0000001, 0.0])
    cases = [lambda x, y: np.allclose(x, y), lambda x, y: np.allclose(x, y, equal_nan=True),
             lambda x, y: np.allclose(x, y, rtol=0, atol=0, equal_nan=True), lambda x, y: np.array_equal(x, y),
             lambda x, y: np.array_equal(x, x, equal_nan=True), lambda x, y: np.array_equal(x, x),
             lambda x, y: np.array_equal(np.nan_to_num(x), np.nan_to_num(y.round(3))),
             lambda x, y: np.array_equiv(x, x[None, :]), lambda x, y: np.array_equiv(x[:1], np.ones((2, 1)))]
    for fn in cases:
        want = fn(a, b)
        got = jit(fn)(a, b)
        assert type(want) is bool and type(got) is np.bool_ and bool(got) == want, (got, want)
    assert {bool(jit(fn)(a, b)) for fn in cases} == {True, False}  # both answers drawn
    shapes_differ = []
    jit(lambda x: shapes_differ.append((np.array_equal(x, x[:2]), np.array_equiv(x, x[:2]))) or x)(a)
    assert shapes_differ == [(False, False)] and all(type(v) is bool for v in shapes_differ[0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.bool_])
def test_i0_is_numpys_chebyshev_series_within_an_ulp_or_two(dtype):
    """np.i0 on both sides of 8 (where NumPy switches series), at 0, NaN, +-inf and near exp's overflow;
    in the input's float type (float64 for integers and bools), a 0-d input giving a 0-d array."""
    with np.errstate(all="ignore"):
        x = np.array([0.0, 1e-3, 0.5, 2.0, 7.99, 8.0, 8.01, -8.0, 30.0, -85.0, 700.0, np.nan, np.inf, -np.inf])
        a = x.astype(dtype) if dtype != np.int32 else np.nan_to_num(x).astype(dtype)
        want = np.i0(a)
    got = jit(np.i0)(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_max_ulp(got, want, maxulp=4, dtype=want.dtype)
    zero_d = jit(np.i0)(a[3])
    assert type(zero_d) is np.ndarray and zero_d.shape == () and zero_d.dtype == want.dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_linalg_solve_inv_det_slogdet_agree_with_lapack(dtype):
    """LU with partial pivoting (pivots needed: the largest entries sit off the diagonal), against LAPACK's
    through NumPy: the same dtypes and NumPy scalars, values within a few ulps of the answer's magnitude
    (the matrices are well conditioned), stacks and a vector right-hand side included."""
    rng = np.random.default_rng(11)
    base = rng.integers(-4, 5, size=(3, 5, 5)) + 10 * np.eye(5)[[4, 0, 3, 1, 2]]  # dominant off the diagonal
    a = base.astype(dtype)
    b = rng.integers(-3, 4, size=(3, 5, 2)).astype(dtype)
    fns = {"solve": lambda m, r: np.linalg.solve(m, r), "solve a vector": lambda m, r: np.linalg.solve(m[0], r[0, :, 0]),
           "inv": lambda m, r: np.linalg.inv(m), "det": lambda m, r: np.linalg.det(m),
           "det of one": lambda m, r: np.linalg.det(m[1]), "slogdet": lambda m, r: np.linalg.slogdet(m)}
    for name, fn in fns.items():
        want, got = fn(a, b), jit(fn)(a, b)
        assert type(got) is type(want), name
        for g, w in zip(got if name == "slogdet" else [got], want if name == "slogdet" else [want]):
            assert type(g) is type(w) and g.dtype == w.dtype and np.shape(g) == np.shape(w), name
            tol = 64 * np.finfo(w.dtype).eps * max(1.0, float(np.max(np.abs(w))))
            np.testing.assert_allclose(g, w, rtol=0, atol=tol, err_msg=name)


def test_cholesky_matrix_power_and_multi_dot_agree_with_numpy():
    """Cholesky from the triangle it reads (lower, or upper with ``upper=True``), matrix powers by NumPy's own
    sequence of matmuls (exact for integers; the inverse's for a negative power), multi_dot's products in the
    order NumPy picks from the shapes (vectors at either end giving a vector or a scalar)."""
    rng = np.random.default_rng(5)
    m = rng.normal(size=(2, 4, 4))
    spd = m @ np.swapaxes(m, -1, -2) + 4 * np.eye(4)
    lopsided = np.tril(spd) + np.triu(np.full((4, 4), 99.0), 1)  # the upper triangle is never read
    for fn in (np.linalg.cholesky, lambda a: np.linalg.cholesky(np.swapaxes(a, -1, -2), upper=True),
               lambda a: np.linalg.cholesky(a.astype(np.float32))):
        want, got = fn(lopsided), jit(fn)(lopsided)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=32 * np.finfo(want.dtype).eps * np.max(np.abs(want)))
    ints = np.array([[1, 2], [3, 4]], np.int64)
    for n in (0, 1, 2, 3, 5, 13):
        assert_like_numpy(jit(lambda a, n=n: np.linalg.matrix_power(a, n))(ints), np.linalg.matrix_power(ints, n))
    np.testing.assert_allclose(jit(lambda a: np.linalg.matrix_power(a, -3))(ints * 1.0),
                               np.linalg.matrix_power(ints * 1.0, -3), rtol=1e-12)
    chains = [[(3,), (3, 5), (5, 2), (2, 7), (7,)], [(10, 3), (3, 20), (20, 2)], [(4, 5), (5, 6), (6, 2), (2, 8), (8, 3)],
              [(2, 30), (30, 2), (2, 30)], [(6,), (6, 2)]]
    for shapes in chains:
        arrays = [rng.integers(-3, 4, size=s).astype(np.float64) for s in shapes]  # small integers: exact sums
        want = np.linalg.multi_dot(arrays)
        assert_like_numpy(jit(lambda *xs: np.linalg.multi_dot(list(xs)))(*arrays), want)
    with pytest.raises(np.linalg.LinAlgError, match="Matrix is not positive definite"):
        jit(np.linalg.cholesky)(-spd)
    with pytest.raises(TypeError, match="exponent must be an integer"):
        jit(lambda a: np.linalg.matrix_power(a, 2.0))(ints)


@pytest.mark.parametrize("shape", [(3, 2), (2, 3), (4, 4), (2, 5, 3), (3, 1)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_has_lapacks_signs_and_shapes(shape, mode):
    """Householder reflectors as LAPACK's dlarfg makes them, so R's diagonal has LAPACK's signs (a column
    already zero below the diagonal keeps its own); Q and R of NumPy's shapes per mode, within rounding."""
    a = np.random.default_rng(4).normal(size=shape)
    a[..., 1:, 0] = 0.0 if shape == (4, 4) else a[..., 1:, 0]  # no reflection needed for the first column
    want = np.linalg.qr(a, mode=mode)
    got = jit(lambda v: np.linalg.qr(v, mode=mode))(a)
    assert type(got) is type(want)
    for g, w in zip(*((got, want) if mode != "r" else ([got], [want]))):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=0, atol=64 * np.finfo(np.float64).eps * max(1.0, np.max(np.abs(a))))


def test_linalg_factorizations_beyond_the_unrolled_size_are_refused_by_name():
    big = np.eye(33)
    for fn in (np.linalg.solve, lambda m, _: np.linalg.inv(m), lambda m, _: np.linalg.qr(m[:, :3]),
               lambda m, _: np.linalg.cholesky(m)):
        with pytest.raises(NotImplementedError, match="33 x 33 matrices: the compiler unrolls the factorization"):
            jit(fn)(big, np.ones(33))


def test_a_singular_matrix_is_numpys_linalg_error_as_the_kernel_runs():
    """A zero pivot is only known from the values: the kernel reports it, and the call raises NumPy's
    LinAlgError; det and slogdet of a singular matrix are 0 and (0, -inf), as NumPy's."""
    singular = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 1.0]]])
    for fn in (np.linalg.inv, lambda m: np.linalg.solve(m, np.ones(2))):
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            fn(singular)
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            jit(fn)(singular)
        np.testing.assert_allclose(jit(fn)(singular[1:]), fn(singular[1:]))  # the same kernel, a regular matrix
    assert_like_numpy(jit(np.linalg.det)(singular[:1]), np.linalg.det(singular[:1]))
    assert_like_numpy(list(jit(np.linalg.slogdet)(singular[0])), list(np.linalg.slogdet(singular[0])))


UFUNC_LOOPS_REFUSED = {
    "dtype=int64 of floats under same_kind": lambda a: np.add(a, a, dtype=np.int64),
    "dtype=float32 of float64 under safe": lambda a: np.add(a, a, dtype=np.float32, casting="safe"),
    "int8 beside int16 under casting='no'": lambda a: np.add(a.astype(np.int8), a.astype(np.int16), casting="no"),
    "a comparison into float32": lambda a: np.less(a, a, dtype=np.float32),
    "an out= the casting rule forbids": lambda a: np.add(a, a, out=np.zeros_like(a, dtype=np.int8)),
    "np.gcd with dtype=float64": lambda a: np.gcd(a.astype(np.int64), 2, dtype=np.float64),
}


@pytest.mark.parametrize("name", list(UFUNC_LOOPS_REFUSED))
def test_a_ufunc_loop_numpy_refuses_is_a_type_error_with_numpys_reason(name):
    """NumPy's UFuncTypeError (a TypeError) with its message, which the compiler's TypeError repeats."""
    fn = UFUNC_LOOPS_REFUSED[name]
    with pytest.raises(TypeError) as numpy_error:
        fn(X)
    with pytest.raises(TypeError) as compiled_error:
        jit(fn)(X)
    assert str(numpy_error.value) in str(compiled_error.value)


def test_a_ufunc_call_with_bad_loop_arguments_is_refused_as_numpy_refuses_it():
    for fn, error, message in ((lambda a: np.add(a, a, casting="bogus"), ValueError, "casting must be one of"),
                               (lambda a: np.add(a, a, dtype=np.float32, signature=(None, None, np.float32)),
                                TypeError, "cannot specify both 'signature' and 'dtype'")):
        with pytest.raises(error, match=message):
            fn(X)
        with pytest.raises(error, match=message):
            jit(fn)(X)
    with pytest.raises(NotImplementedError, match="np.modf: dtype= and signature= are not supported"):
        jit(lambda a: np.modf(a, dtype=np.float32))(X)  # NumPy computes it; the compiler refuses it by name


@pytest.mark.parametrize("order", ["C", "F", "A", "K", "f", b"C"])
@pytest.mark.parametrize("operands", ["transposed", "fortran", "strided", "broadcast"])
def test_a_ufunc_result_is_laid_out_in_the_order_asked_as_numpy_lays_it_out(order, operands):
    """order= changes no value, only the result's layout -- which decides what a later ravel or reshape
    shares: each returned array has NumPy's strides, and the later ravel of it in memory order NumPy's values."""
    def fn(a):
        x = {"transposed": a.T, "fortran": a.T.copy().T, "strided": a[::2, ::-3],
             "broadcast": np.broadcast_to(a[:1], (3, 4))}[operands]
        results = (np.add(x, 1.5, order=order), np.negative(x, order=order), np.matmul(x, x.T, order=order),
                   *np.divmod(x, x.T.T + 3, order=order), np.positive(x, order=order, dtype=np.float32))
        return results + tuple(r.ravel(order="K") * 1 for r in results)
    a = np.arange(12.0).reshape(3, 4) - 5
    for got, want in zip(jit(fn)(a), fn(a)):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype and got.strides == want.strides


def test_dtype_picks_the_loop_of_positive_conjugate_matmul_and_the_vector_gufuncs():
    """A signature or dtype= picks the loop by its types: the operands converted to them, the result computed in
    that type (a float32 matmul of float64 operands rounds as float32 does)."""
    a = np.linspace(-1, 1, 12).reshape(3, 4) / 3
    fn = lambda a: (np.positive(a, dtype=np.float32), np.conjugate(a.astype(np.int8), dtype=np.float16),
                    np.matmul(a, a.T, dtype=np.float32), np.vecdot(a, a, signature=("f4", "f4", "f4")),
                    np.matvec(a, a[0], dtype=np.float32), np.positive(a.astype(np.int16), dtype=np.int8,
                                                                       casting="unsafe"))
    for got, want in zip(jit(fn)(a), fn(a)):
        np.testing.assert_allclose(got, want, rtol=2e-7 if want.dtype == np.float32 else 0)
        assert got.dtype == want.dtype and got.shape == want.shape
    with pytest.raises(TypeError):
        jit(lambda a: np.matmul(a, a.T, dtype=np.int32))(a)  # float64 -> int32 is no same_kind cast


LIKE_A_TRACED_ARRAY = {
    "np.zeros, np.ones, np.eye, np.tri and np.arange (constants the trace writes into)": lambda a: (
        lambda z, o: (z.__setitem__(0, a[0]), o.__setitem__((slice(None), 1), a[:, 1]), z, o,
                      np.eye(3, 4, k=1, dtype=np.int8, like=a), np.tri(2, 3, -1, like=a) * a,
                      np.arange(1, 7, 2, dtype=np.float32, like=a) + a[0])[2:])(
            np.zeros((2, 3), order="F", like=a), np.ones((2, 3), np.int8, like=a)),
    "np.full of a traced fill value (NumPy's copyto into its empty array)": lambda a: (
        np.full((2, 3), a[0, 0], like=a), np.full((3, 3), a[1], dtype=np.int16, like=a),
        np.full((2, 2), [a[0, 0], 1.5], like=a), np.full((2, 3), a.sum(), order="F", like=a).ravel(order="K")),
    "np.fromfunction of traced values, np.loadtxt": lambda a: (
        np.fromfunction(lambda i, j: i * 10 + j + a[i, j], (2, 3), dtype=int, like=a), np.loadtxt(["1 2"], like=a)),
    "np.array of a list of traced values, with ndmin": lambda a: (
        np.array([[a[0, 0], 2], [3, a[1, 2]]], dtype=np.float32, like=a), np.array(a[0], ndmin=3, like=a)),
}


@pytest.mark.parametrize("name", list(LIKE_A_TRACED_ARRAY))
def test_creation_functions_like_a_traced_array_make_what_numpy_makes(name):
    fn = LIKE_A_TRACED_ARRAY[name]
    assert_like_numpy(jit(fn)(X), fn(X))


@pytest.mark.parametrize("kind", ["fresh", "transposed", "strided", "reversed", "scalar"])
@pytest.mark.parametrize("call", [
    {"fn": np.asarray}, {"fn": np.asarray, "dtype": np.float32}, {"fn": np.asarray, "order": "C"},
    {"fn": np.asarray, "order": "F"}, {"fn": np.asanyarray, "order": "A"}, {"fn": np.array},
    {"fn": np.array, "copy": False}, {"fn": np.array, "copy": None, "ndmin": 3}, {"fn": np.ascontiguousarray},
    {"fn": np.asfortranarray, "dtype": np.int16},
], ids=lambda c: c["fn"].__name__ + "".join(f",{k}={getattr(v, '__name__', v)}" for k, v in c.items() if k != "fn"))
def test_np_asarray_like_a_traced_array_is_a_view_or_a_copy_as_numpys(kind, call):
    """NumPy's own call on a stand-in laid out as the array decides: the array itself (a write through the result
    is seen in it), or a copy in the layout NumPy gives it; copy=False where a copy is needed is NumPy's error."""
    kwargs = {k: v for k, v in call.items() if k != "fn"}

    def fn(x):
        a = {"fresh": x * 1, "transposed": (x * 1).T, "strided": (x * 1)[:, ::2], "reversed": (x * 1)[::-1],
             "scalar": x.sum()}[kind]
        r = call["fn"](a, **kwargs, like=x)
        before = r * 1
        if r.ndim:
            r[(0,) * r.ndim] = 99
        return before, r.ravel(order="K") * 1, a * 1

    try:
        want = fn(X)
    except ValueError as numpy_error:
        with pytest.raises(ValueError, match=re.escape(str(numpy_error))):
            jit(fn)(X)
        return
    assert_like_numpy(jit(fn)(X), want)


def test_einsum_permutations_are_views_as_in_numpy():
    """A one-operand permutation (and the identity) is a view of the operand in NumPy, so updating the
    argument through it is refused like any view's; a contraction is a fresh array."""
    def through_view(a):
        v = np.einsum("ij->ji", a)
        v += 1
        return v

    assert np.shares_memory(np.einsum("ji", X), X)
    with pytest.raises(NotImplementedError, match=r"in-place '\+=' on a view"):
        jit(through_view)(X.copy())
    assert_like_numpy(jit(lambda a: np.einsum("ij,jk", a, a.T) * 1)(X), np.einsum("ij,jk", X, X.T))


def test_einsum_diagonals_are_views_as_in_numpy():
    """A label repeated within one operand takes its diagonal; with nothing summed NumPy returns a
    (writeable) view, so an update through it is refused, as any view's."""
    def through_diagonal(a):
        d = np.einsum("ii->i", a)
        d += 1
        return d

    assert np.shares_memory(np.einsum("ii->i", X[:, :2]), X)
    with pytest.raises(NotImplementedError, match=r"in-place '\+=' on a view"):
        jit(through_diagonal)(np.eye(3))


def test_flips_are_views_as_in_numpy():
    """np.flip/fliplr/flipud return views in NumPy: an update through one is refused, as any view's."""
    def through_flip(a):
        f = np.flip(a, 0)
        f += 1
        return f

    assert np.shares_memory(np.flip(X, 0), X)
    with pytest.raises(NotImplementedError, match=r"in-place '\+=' on a view"):
        jit(through_flip)(X.copy())


def test_diagonals_are_read_only_views_as_in_numpy():
    """NumPy's diagonal is a read-only view of its operand: an update through it raises NumPy's error;
    one to the operand shows in the diagonal."""
    def through_diagonal(a):
        d = np.diagonal(a * 1)
        d += 1
        return d

    with pytest.raises(ValueError, match="output array is read-only"):
        through_diagonal(X)
    with pytest.raises(ValueError, match="output array is read-only"):
        jit(through_diagonal)(X)

    def into_operand(a):
        b = a * 1
        d = b.diagonal()
        b[:, 0] = -5.0
        return d
    assert_like_numpy(jit(into_operand)(X), into_operand(X))


def test_isclose_refuses_traced_and_non_finite_tolerances_by_name():
    with pytest.raises(NotImplementedError, match="np.isclose: a traced rtol"):
        jit(lambda a: np.isclose(a, a, rtol=a.max()))(X)
    with pytest.raises(NotImplementedError, match="np.isclose: a non-finite atol"):
        jit(lambda a: np.isclose(a, a, atol=np.inf))(X)


def test_sorting_a_view_in_place_is_refused_as_numpy_would_write_through_it():
    def sort_rows_of_argument(a):
        a.sort()
        return a

    with pytest.raises(NotImplementedError, match=r"x.sort\(\) on the argument a"):
        jit(sort_rows_of_argument)(X.copy())


def test_an_all_nan_slice_discards_the_results_and_names_the_call():
    """NumPy's ValueError, raised after the kernel ran (it is data-dependent), with the line of the call."""
    def fn(a):
        return np.nanargmax(a, axis=1), a + 1
    with pytest.raises(ValueError, match=r"^All-NaN slice encountered \(np.nanargmax at .*test_numpy_conformance.py:\d+"):
        jit(fn)(np.array([[1.0, np.nan], [np.nan, np.nan]]))
    got, want = jit(fn)(np.array([[1.0, np.nan], [np.nan, 2.0]])), fn(np.array([[1.0, np.nan], [np.nan, 2.0]]))
    assert_like_numpy(got[0], want[0])


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_bisects_a_long_table_as_numpys_binary_search(side):
    """A bisection of bit_length(n) steps over 100,003 sorted values (runs of duplicates, -0.0 and +0.0,
    infinities and NaNs at the end) finds NumPy's places for hits, misses and NaN probes alike; np.interp
    on the same table agrees bit for bit."""
    rng = np.random.default_rng(5)
    table = np.sort(np.concatenate([np.round(rng.standard_normal(100_000), 2), [-0.0, np.inf, np.nan]]))
    probes = np.concatenate([table[rng.integers(0, table.size, 500)], rng.standard_normal(500) * 3,
                             [np.nan, -np.inf, np.inf, 0.0, -0.0]])
    fn = lambda t, v: np.searchsorted(t, v, side=side)  # noqa: E731
    assert_like_numpy(jit(fn)(table, probes), fn(table, probes))
    finite = table[np.isfinite(table)]
    points, values = np.unique(finite), np.cumsum(rng.standard_normal(np.unique(finite).size))
    assert_like_numpy(jit(np.interp)(probes, points, values), np.interp(probes, points, values))


def test_digitize_refuses_traced_bins_by_name():
    """NumPy checks that the bins are monotonic: a data-dependent error for traced bins."""
    with pytest.raises(NotImplementedError, match="np.digitize: traced bins"):
        jit(lambda a: np.digitize(a, a[0]))(X)


COV_DATA = np.array([[0.5, -1.25, 2.0, 3.5, -0.75], [1.0, 1.0, -2.5, 0.25, 4.0], [2.0, -2.5, 4.0, 7.0, -1.5]])


@pytest.mark.parametrize("fn", [
    np.cov, lambda a: np.cov(a, rowvar=False), lambda a: np.cov(a[0], a[1]), lambda a: np.cov(a.astype(np.float32)),
    lambda a: np.cov(a, bias=True), lambda a: np.cov(a, fweights=[1, 2, 0, 3, 1], aweights=[0.5, 2.0, 1.0, 1.0, 0.25]),
    lambda a: np.cov(a, aweights=[0.5, 2.0, 1.0, 1.0, 0.25], ddof=2), lambda a: np.cov(a.astype(np.int8), dtype=np.float32),
    np.corrcoef, lambda a: np.corrcoef(a[0], a[2]), lambda a: np.corrcoef(a[1]),
])
def test_cov_and_corrcoef_as_numpy(fn):
    """Dtypes, shapes and the kind of result (np.cov of one variable is a 0-d array, np.corrcoef's a
    scalar) as NumPy's; values to a few ulps (NumPy's dot sums in BLAS's order; exactly -1..1 correlations
    of proportional rows included)."""
    got, want = jit(fn)(COV_DATA), fn(COV_DATA)
    assert type(got) is type(want)
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(want.dtype).eps, atol=4 * np.finfo(want.dtype).eps)


def test_cov_with_too_few_observations_warns_and_divides_by_zero_as_numpy():
    fn = lambda a: np.cov(a[:, :1])  # noqa: E731
    with pytest.warns(RuntimeWarning, match="Degrees of freedom <= 0"):
        got = jit(fn)(COV_DATA)
    with pytest.warns(RuntimeWarning):
        want = fn(COV_DATA)
    np.testing.assert_array_equal(got, want)


HISTOGRAM_DATA = np.array([[np.nan, np.inf, -np.inf, -2.0, 2.0, 0.0, -0.0, 1.9999999, 0.5],
                           [-1.0, 3.0, 1e300, -7.25, 0.25, 1.0, 1.5, -1.5, 2.5]])


@pytest.mark.parametrize("fn", [
    lambda a: np.histogram(a, bins=4, range=(-2, 2)),
    lambda a: np.histogram(a, bins=[-3, -1, 0, 0, 2.5, 7]),
    lambda a: np.histogram(a.astype(np.float16), bins=5, range=(-1.5, 3.25), density=True),
    lambda a: np.histogram(a.astype(np.float32), bins=np.array([-1, 0, 1], np.int8)),
    lambda a: np.histogram(np.nan_to_num(a).astype(np.int16), bins=3, range=(-3, 3)),
    lambda a: np.histogram(a, bins=[0, 1, 1, 2], density=True),
    lambda a: np.histogram(a, bins=3, range=(1, 1)),
    lambda a: np.histogram(a[:, :0], bins=3),
    lambda a: np.histogram(np.clip(np.nan_to_num(a), -9, 9), bins=10),
    lambda a: np.histogram(np.clip(np.nan_to_num(a), -9, 9).astype(np.float16), bins=7, density=True),
    lambda a: np.histogram(np.clip(np.nan_to_num(a), -9, 9).astype(np.int8), bins=4),
    lambda a: np.histogram(a[0, 3:5] * 0 + 2.5, bins=3),
    lambda a: np.histogram(a[0, 3:6] > 0, bins=2),
])
def test_histogram_counts_as_numpy_does(fn):
    """Counts (int64), densities and edges as NumPy's, including NaN and infinite elements (in no bin),
    elements on the edges (the last bin closed), equal edges and an empty range widened by one half."""
    (got_n, got_edges), (want_n, want_edges) = jit(fn)(HISTOGRAM_DATA), fn(HISTOGRAM_DATA)
    assert_like_numpy(got_n, want_n)
    assert_like_numpy(got_edges, want_edges)


WEIGHTS = np.array([[0.1, 2.0, -3.5, 1e-3, 7.0, 0.2, 0.3, -0.7, 1.1], [4.0, -2.0, 0.25, 9.0, 1.0, -1e-8, 3.0, 5.0, 0.5]])


@pytest.mark.parametrize("fn", [
    lambda a: np.histogram(a, bins=4, range=(-2, 2), weights=WEIGHTS),                # np.bincount's float64 sums
    lambda a: np.histogram(a, bins=4, range=(-2, 2), weights=WEIGHTS.astype(np.float32)),
    lambda a: np.histogram(a, bins=[-3, -1, 0, 0, 2.5, 7], weights=WEIGHTS),         # running sums, differenced
    lambda a: np.histogram(a, bins=[-3, -1, 0, 2.5, 7], weights=WEIGHTS.astype(np.float16)),
    lambda a: np.histogram(a, bins=3, range=(-3, 3), weights=(WEIGHTS * 100).astype(np.int64)),
    lambda a: np.histogram(a, bins=[0, 1, 4], weights=(WEIGHTS * 100).astype(np.int8), density=True),
    lambda a: np.histogram(np.clip(np.nan_to_num(a), -9, 9), bins=5, weights=np.clip(np.nan_to_num(a), -3, 3) / 4),  # traced
])
def test_histogram_sums_weights_as_numpy_does(fn):
    """Each bin's total of its weights, in the weights' dtype, by NumPy's algorithm for the bins and weights
    (the data short enough that NumPy's sort is stable, so even the running sums agree bit for bit)."""
    (got_n, got_edges), (want_n, want_edges) = jit(fn)(HISTOGRAM_DATA), fn(HISTOGRAM_DATA)
    assert_like_numpy(got_n, want_n)
    assert_like_numpy(got_edges, want_edges)


@pytest.mark.parametrize("n", [40, 70_000])
@pytest.mark.parametrize("fn", [
    lambda x, w: np.histogram(x[:, 0], bins=3, weights=w),
    lambda x, w: np.histogram(x[:, 0], bins=1, range=(-1, 1), weights=w.astype(np.float32)),
    lambda x, w: np.histogram(x[:, 0], bins=5, weights=(w / 1e4).astype(np.float16)),
    lambda x, w: np.histogram2d(x[:, 0], x[:, 1], bins=2, weights=w),
    lambda x, w: np.histogramdd(x, bins=(3, 2), weights=w),
])
def test_histogram_weights_are_added_in_turn_as_np_bincount_adds_them(fn, n):
    """Over equal bins NumPy sums each bin's weights with np.bincount: from 0.0, one weight after another in
    the data's order (float64), and np.histogram does so a block of 65,536 elements at a time, each block's
    totals converted to the weights' dtype and added to the running histogram. The compiler summed pairwise
    (np.sum's order): 33 of a sweep's 153 weighted histograms differed, in the last bits."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal((n, 2))
    w = rng.standard_normal(n) * np.exp(rng.uniform(-20, 20, n))  # magnitudes far apart: the order shows
    got, want = jit(fn)(x, w), fn(x, w)
    assert_like_numpy(got[0], want[0])


@pytest.mark.parametrize("fn", [
    lambda a: np.histogramdd(a.reshape(-1, 2), bins=3, range=[(-2, 2), (-3, 3)]),          # NaN and inf: outliers
    lambda a: np.histogramdd(np.nan_to_num(a).reshape(-1, 2), bins=(2, [-5, 0, 0.25, 1e300])),  # the data's range
    lambda a: np.histogramdd(np.clip(np.nan_to_num(a), -9, 9).reshape(-1, 3), bins=2, density=True,
                             weights=WEIGHTS.reshape(-1)[:6] ** 2),
    lambda a: np.histogram2d(np.clip(np.nan_to_num(a[0]), -9, 9), a[1], bins=[-2, 0, 2], weights=WEIGHTS[0]),
    lambda a: np.histogram2d(np.nan_to_num(a[0]).astype(np.int16), np.clip(a[1], -3, 3).astype(np.float16), bins=3),
    # a list of scalars is one dimension's points (NumPy's atleast_2d(sample).T), not one point per dimension
    lambda a: np.histogramdd([np.nan_to_num(a[0, 0]), a[1, 1].astype(np.float32), 0.5], bins=4),
])
def test_histogramdd_bins_as_numpy_does(fn):
    """NumPy's edges per dimension (given, over a range, or the data's, in the common dtype of the columns),
    its searchsorted binning with the last edge closed, outliers dropped, float64 counts or weight sums."""
    got, want = jit(fn)(HISTOGRAM_DATA), fn(HISTOGRAM_DATA)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for g_part, w_part in (zip(g, w) if isinstance(w, list) else [(g, w)]):
            assert_like_numpy(g_part, w_part)


@pytest.mark.parametrize("fn, data, match", [
    (lambda a: np.histogram(a, bins=3), HISTOGRAM_DATA, r"^autodetected range of the data is not finite \(np.histogram at "),
    (lambda a: np.histogram(a * 0 + 1000, bins=3000), HISTOGRAM_DATA[:, 3:].astype(np.float16),
     r"^Too many bins for data range. Cannot create 3000 finite-sized bins."),
])
def test_histogram_data_range_errors_are_checked_as_the_kernel_runs(fn, data, match):
    """NumPy's errors for a range taken from the data depend on its values: the kernel reports them."""
    with pytest.raises(ValueError):
        fn(data)
    with pytest.raises(ValueError, match=match):
        jit(fn)(data)


# a float16 range wider than float16 holds: np.linspace's edges are [nan, inf, .., max] (fuzz seed 1183)
WIDE_HALF = np.array([-65504.0, 1.0, 3.0, 16376.0, 16376.0], dtype=np.float16)


@pytest.mark.parametrize("fn, error, match", [
    (lambda a: np.histogramdd(a[:, None], bins=3), ValueError, r"^invalid entry in coordinates array \(np.histogramdd"),
    (lambda a: np.histogramdd(np.stack([a, a * 0], axis=1), bins=[2, 1]), ValueError, r"^invalid entry in coordinates"),
    (lambda a: np.histogram(a, bins=1), IndexError, r"^index -9223372036854775808 is out of bounds for axis 0 with size 2"),
    (lambda a: np.histogram(a, bins=2), ValueError, r"^Too many bins for data range. Cannot create 2 finite-sized bins."),
])
def test_histograms_of_a_range_wider_than_the_dtype_fail_as_numpys(fn, error, match):
    """NumPy bins by searchsorted on edges that are no longer sorted: the maximum lands before the first
    bin, and ravel_multi_index refuses it; np.histogram's one bin indexes its edges with NaN as np.intp."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(error):
            fn(WIDE_HALF)
        with pytest.raises(error, match=match):
            jit(fn)(WIDE_HALF)


def test_histogramdd_of_one_bin_over_a_range_wider_than_the_dtype_counts_the_maximum_as_numpy():
    # edges [nan, max]: NumPy's binary search puts only the maximum past the NaN, into the one bin
    fn = lambda a: np.histogramdd(a[:, None], bins=1)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want, got = fn(WIDE_HALF), jit(fn)(WIDE_HALF)
    assert_like_numpy(got[0], want[0])
    np.testing.assert_array_equal(want[0], [2.0])
    assert_like_numpy(got[1][0], want[1][0])
    np.testing.assert_array_equal(np.histogram_bin_edges(WIDE_HALF, 1), jit(lambda a: np.histogram_bin_edges(a, 1))(WIDE_HALF))


LINSPACE_ENDS = np.array([[-1.5, 2.0, 1e-320], [0.0, 3.0, 7.25]])


@pytest.mark.parametrize("fn", [
    lambda a: np.linspace(a[0, 0], a[0, 1], 7), lambda a: np.linspace(a[0], a[1], 5, axis=1),
    lambda a: np.linspace(a[0], a[1], 5, axis=-1, endpoint=False), lambda a: np.linspace(a.min(), a.max(), 50),
    lambda a: np.linspace(0, a[1, 2], 4, dtype=np.int16), lambda a: np.linspace(a[0, 0], 1, 1),
    lambda a: np.linspace(a[0, 0], 1, 0), lambda a: np.linspace(a[0, 0].astype(np.float16), np.float16(3), 6),
    lambda a: np.linspace(a[0, 0].astype(np.float32), 3, 6), lambda a: np.linspace(0, a[0, 2], 3),
    lambda a: np.linspace(a[0, 0], a[1, 1], 4, retstep=True)[1], lambda a: np.linspace(a.astype(np.int8)[0, 0], 5, 4),
])
def test_linspace_of_traced_endpoints_is_numpys_bit_for_bit(fn):
    """NumPy's steps, its type for the endpoints (a Python number weak beside float32), its care for a
    step that is 0 (subnormal endpoints), the last sample set to stop, floor before an integer dtype."""
    got, want = jit(fn)(LINSPACE_ENDS), fn(LINSPACE_ENDS)
    assert_like_numpy(got, want)
    raw = lambda v: np.ascontiguousarray(v).reshape(-1).view(np.uint8)  # noqa: E731
    assert np.array_equal(raw(got), raw(want))


ALL_NAN_ROW = np.array([[1.0, np.nan, 2.5], [np.nan, np.nan, np.nan]])
NO_NAN = np.array([[1.0, 4.0, 2.5], [0.5, -1.0, 3.0]])


def _warned(fn, arg):
    """The result and NumPy's warnings (category, text) but its floating-point error ones (errstate's)."""
    import warnings
    with warnings.catch_warnings(record=True) as met:
        warnings.simplefilter("always")
        result = fn(arg)
    return result, sorted((w.category.__name__, str(w.message)) for w in met if "encountered in" not in str(w.message))


@pytest.mark.parametrize("fn", [
    lambda a: np.nanmax(a, axis=1), lambda a: np.nanmin(a, axis=0), lambda a: np.nanmax(a, axis=1, initial=np.nan),
    lambda a: np.nanmean(a, axis=1), lambda a: np.nanvar(a, axis=1), lambda a: np.nanstd(a, axis=1, ddof=2),
    lambda a: np.mean(a[:0]), lambda a: np.mean(a, axis=1, where=a > 1.5), lambda a: np.var(a, ddof=6),
    lambda a: np.std(a, axis=0, ddof=2), lambda a: np.var(a, axis=1, where=a > 1.5, ddof=1), lambda a: np.cov(a[:, :1]),
    lambda a: np.cross(a[:, :2], a[:, 1:]),
    lambda a: np.nanmedian(a, axis=1), lambda a: np.nanmedian(a.T, axis=0), lambda a: np.nanmedian(a),
    lambda a: np.nanquantile(a, [0.2, 0.9], axis=1), lambda a: np.nanpercentile(a, 50, axis=(0, 1)),
    lambda a: np.nanmedian(a[:, :0], axis=0),
])
@pytest.mark.parametrize("data", [ALL_NAN_ROW, NO_NAN], ids=["all-NaN row", "no NaN"])
def test_numpy_warnings_are_given_at_every_call(fn, data):
    """NumPy's warnings (not its floating-point error ones) at the first call and at the next: those fixed
    by shapes and constants are replayed, those that depend on the data come from the kernel, and only
    when the data calls for them."""
    compiled = jit(fn)
    want, want_warnings = _warned(fn, data)
    for _ in range(2):
        got, got_warnings = _warned(compiled, data)
        assert got_warnings == want_warnings
        np.testing.assert_array_equal(got, want)


def test_histogram_of_bools_warns_as_numpy_does():
    fn = lambda a: np.histogram(a > 0, bins=2, range=(0, 1))  # noqa: E731
    with pytest.warns(RuntimeWarning, match="Converting input from bool"):
        got = jit(fn)(HISTOGRAM_DATA)
    with pytest.warns(RuntimeWarning):
        want = fn(HISTOGRAM_DATA)
    assert_like_numpy(got[0], want[0])


@pytest.mark.parametrize("fn, match", [
    (lambda a: np.histogram(a, bins="auto", range=(0, 1)), "estimates the bins from the data"),
    (lambda a: np.histogram(a, bins=a[0, :3]), "traced bins or range"),
])
def test_histogram_refuses_edges_that_depend_on_the_data_by_name(fn, match):
    with pytest.raises(NotImplementedError, match=match):
        jit(fn)(X)


def test_interp_refuses_a_traced_period_by_name():
    with pytest.raises(NotImplementedError, match="np.interp: a traced period"):
        jit(lambda a: np.interp(a, [0.0, 1.0], [0.0, 1.0], period=a[0, 2]))(X)


def test_average_returns_the_divisor_too():
    for kwargs in ({"axis": 1, "returned": True}, {"weights": np.arange(1.0, 7.0).reshape(2, 3), "returned": True}):
        got, want = jit(lambda a, kw=kwargs: np.average(a, **kw))(X), np.average(X, **kwargs)
        for g, w in zip(got, want):
            assert_like_numpy(g, w)


def test_average_refuses_traced_weights_by_name():
    with pytest.raises(NotImplementedError, match="np.average: traced weights"):
        jit(lambda a: np.average(a, weights=a))(X)


def test_unstack_gives_numpys_tuple_of_views():
    got, want = jit(lambda a: np.unstack(a, axis=1))(X), np.unstack(X, axis=1)
    assert isinstance(got, tuple) and len(got) == len(want) == 3
    for g, w in zip(got, want):
        assert_like_numpy(g, w)


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
def test_cross_of_2_vectors_is_a_0d_array_and_warns_as_numpy_does():
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors are deprecated"):
        got = jit(lambda a, b: np.cross(a, b))(X[0, :2], V[:2])
    assert_like_numpy(got, np.cross(X[0, :2], V[:2]))


# NaN-ignoring order statistics: NumPy's positions depend on each slice's count of numbers (traced)

def _nan_data(shape, dtype, seed, nan_share=0.4):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    x[rng.random(shape) < nan_share] = np.nan
    return x


NAN_ROWS = _nan_data((5, 7), np.float64, 1)
NAN_ROWS[1] = np.nan  # one slice of NaNs only
NAN_ORDER = {
    # np.nanmedian's routes: np.median of the numbers (whole array, 1-d, rows of 600 or more) ...
    "np.nanmedian of everything": (lambda a: np.nanmedian(a), NAN_ROWS),
    "np.nanmedian of a 1-d float16 array, two middle values summed in float32": (
        lambda a: np.nanmedian(a), np.array([np.nan, 40000, 30000, np.nan], np.float16)),
    "np.nanmedian along rows of 601 (np.median of each row's numbers)": (
        lambda a: np.nanmedian(a, axis=1, keepdims=True), _nan_data((3, 601), np.float32, 2, 0.6)),
    "np.nanmedian of a 0-d NaN": (lambda a: np.nanmedian(a), np.array(np.nan)),
    # ... and a masked array's median (shorter rows): an odd count's middle value doubled and halved
    "np.nanmedian by axis, float16 doubled past its range (inf)": (
        lambda a: np.nanmedian(a, axis=1), np.array([[np.nan, 40000], [30000, 40000]], np.float16)),
    "np.nanmedian by axis 0 of float32": (lambda a: np.nanmedian(a.astype(np.float32), axis=0), NAN_ROWS),
    "np.nanmedian over two of three axes, keepdims": (
        lambda a: np.nanmedian(a.reshape(5, 7, 1), axis=(0, 2), keepdims=True), NAN_ROWS),
    "np.nanmedian of ints (np.median)": (lambda a: np.nanmedian(a, axis=1), np.arange(12).reshape(3, 4)),
    "np.nanmedian of an empty array (np.nanmean's NaN)": (lambda a: np.nanmedian(a[:0], axis=0), NAN_ROWS),
    "np.nanquantile, a Python float q (weak: the array's type)": (
        lambda a: np.nanquantile(a.astype(np.float16), 0.3, axis=1), NAN_ROWS),
    "np.nanquantile, a float64 list q of a float64 array": (
        lambda a: np.nanquantile(a, [0.0, 0.25, 0.5, 1.0], axis=0, keepdims=True), NAN_ROWS),
    "np.nanquantile, a float32 q of float16 (NumPy's float32 positions)": (
        lambda a: np.nanquantile(a.astype(np.float16), np.array([0.1, 0.7], np.float32), axis=1, method="hazen"),
        NAN_ROWS),
    "np.nanquantile, an int q (the element itself)": (lambda a: np.nanquantile(a, 1, axis=1), NAN_ROWS),
    "np.nanpercentile of everything, an integer percent": (lambda a: np.nanpercentile(a, 37), NAN_ROWS),
    "np.nanquantile of infinities (inf - inf in the interpolation)": (
        lambda a: np.nanquantile(a, [0.5, 1.0], axis=1), np.array([[1, np.inf, np.nan], [np.inf, np.inf, -np.inf]])),
    "np.nanquantile of ints (np.quantile)": (
        lambda a: np.nanquantile(a, 0.3, axis=1, method="weibull"), np.arange(12).reshape(3, 4)),
    "np.nanquantile of an empty array (np.nanmean's, q aside)": (lambda a: np.nanquantile(a[:, :0], [0.1, 0.2], axis=0), NAN_ROWS),
    **{f"np.nanquantile, method {m!r}": ((lambda m: lambda a: np.nanquantile(a, [0.0, 0.3, 0.5, 0.999], axis=1,
                                                                                method=m))(m), NAN_ROWS)
       for m in np.lib._function_base_impl._QuantileMethods},
}


@pytest.mark.parametrize("name", list(NAN_ORDER))
def test_nan_order_statistics_are_numpys(name):
    """Values bit for bit, dtypes, scalar or array, and NumPy's warnings (one per all-NaN slice)."""
    fn, arg = NAN_ORDER[name]
    want, want_warnings = _warned(fn, arg)
    got, got_warnings = _warned(jit(fn), arg)
    assert type(got) is type(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype and np.shape(got) == np.shape(want)
    np.testing.assert_array_equal(got, want)
    assert got_warnings == want_warnings


@pytest.mark.parametrize("q", [np.float64(0.3), np.array([0.0, 0.1, 0.5, 0.999, 1.0]),
                               np.array([0.05, 1 / 3, 0.7], np.float32), np.array([0.2, 0.9], np.float16),
                               np.array([0, 1])], ids=["0-d", "float64", "float32", "float16", "int64"])
@pytest.mark.parametrize("method", list(np.lib._function_base_impl._QuantileMethods))
def test_quantile_positions_of_a_traced_count_are_numpys_table(method, q):
    """The positions np.nanquantile reads for a slice of ``count`` numbers, held to NumPy's own method
    table (run with the count a Python int, as NumPy runs it) for every count up to 300 and some past
    float16's integers."""
    from compiler.numpy_api import _quantile_positions
    fb = np.lib._function_base_impl
    props = fb._QuantileMethods[method]
    counts = list(range(1, 301)) + [2047, 2049, 4097, 65519, 70001]
    with np.errstate(all="ignore"):
        got = _quantile_positions(np.array(counts), q.reshape(q.shape + (1,)), method)
    for k, count in enumerate(counts):
        with np.errstate(all="ignore"):  # float16's count past its range: NumPy's own overflow
            virtual = np.asanyarray(props["get_virtual_index"](count, q))
            discrete = props["fix_gamma"] is None or (method == "linear" and virtual.dtype.kind in "iu")
            if not discrete:
                previous, following = fb._get_indexes(np.empty(0), virtual, count)
                gamma = fb._get_gamma(virtual, previous, props)
        if discrete:
            np.testing.assert_array_equal(got[..., k], virtual, err_msg=f"count {count}")
            continue
        where = lambda i: np.where(i < 0, count - 1, i)  # noqa: E731  (NumPy's -1: the last number)
        for mine, numpys in zip(got, (where(previous), where(following), gamma)):
            assert mine.dtype == numpys.dtype
            np.testing.assert_array_equal(mine[..., k], numpys, err_msg=f"count {count}")


def _assigned(update):
    """A function that updates a fresh array (a product of its argument) with ``update`` and returns it."""
    def fn(a):
        b = a * 1
        update(b, a)
        return b
    return fn


ASSIGNMENTS = {
    "an element, a float into int8 (truncated)": (lambda b, a: b.__setitem__((0, 1), 7.9), X.astype(np.int8)),
    "a row from a traced row": (lambda b, a: b.__setitem__(1, a[0] * 2), X),
    "a block of columns to a Python number": (lambda b, a: b.__setitem__((slice(None), slice(1, 3)), -1), X),
    "every other row backwards": (lambda b, a: b.__setitem__(slice(None, None, -2), a[:1] + 100), X),
    "by a constant mask": (lambda b, a: b.__setitem__(np.array([[True, False, True], [False, True, False]]), 5.5), X),
    "repeated positions (the last write wins)": (lambda b, a: b.__setitem__(([0, 0, 1], [1, 1, 2]), a[1]), X),
    "after an ellipsis, from int8": (lambda b, a: b.__setitem__((Ellipsis, 0), a[:, 1].astype(np.int8)), X),
    "a value with a leading unit axis": (lambda b, a: b.__setitem__(0, a[None, :1, :]), X),
    "two columns in turn": (lambda b, a: [b.__setitem__((slice(None), i), a[:, i] ** 2) for i in range(2)], X),
}


@pytest.mark.parametrize("name", list(ASSIGNMENTS))
def test_item_assignment_into_a_fresh_array_is_numpys(name):
    update, arg = ASSIGNMENTS[name]
    fn = _assigned(update)
    assert_like_numpy(jit(fn)(arg), fn(arg))


def test_item_assignment_errors_are_numpys_or_name_what_cannot_be_traced():
    def overflow(a):
        b = np.zeros_like(a, dtype=np.int8)
        b[1] = 300
        return b
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        jit(overflow)(X)

    def misfit(a):
        b = np.zeros_like(a, shape=(2, 3))
        b[0] = a[:2]
        return b
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(2,3\) into shape \(3,\)"):
        jit(misfit)(X)

    def into_argument(a):
        a[0] = 1.0
        return a
    with pytest.raises(NotImplementedError, match="item assignment .* on the argument a"):
        jit(into_argument)(X)

    def into_reshaped(a):  # a reshape's view sees the assignment, as NumPy's does
        b = a * 1
        flat = b.reshape(-1)
        b[1] = 2.0
        return b, flat
    for got, want in zip(jit(into_reshaped)(X), into_reshaped(X)):
        assert_like_numpy(got, want)

    def at_traced_position(a):  # (np.argmax's NumPy integer: row 1 of X)
        b = a * 1
        b[np.argmax(a) // 3] = 0.0
        return b
    assert_like_numpy(jit(at_traced_position)(X), at_traced_position(X))

    def into_numpy_array(a):
        out = np.zeros(3)
        out[0] = a[0, 0]
        return out
    line = into_numpy_array.__code__.co_firstlineno + 2
    with pytest.raises(ValueError, match=rf"^setting an array element with a sequence\. \(at test_numpy_conformance\.py:"
                                         rf"{line}: out\[0\] = a\[0, 0\]\); .*np\.zeros_like\(x, shape=n\)"):
        jit(into_numpy_array)(X)  # NumPy's own error (its C code cannot tell a traced value), with the line and a hint


EDGES = np.array([0.0, -0.0, 1.0, -1.0, 3.0, -3.0, np.inf, -np.inf, np.nan, 0.1, 1e-300, 5e-324, -5e-324,
                  1.7976931348623157e308, -1.7976931348623157e308, 2.0**-1022, -(2.0**-1022), 65504.0, -65504.0,
                  6e-8, -6e-8, 2.0**-14, -(2.0**-14), 1e-45, 3.4028235e38, 2.0**-24, 1e10])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_nextafter_spacing_and_hypot_at_every_edge_of_the_type(dtype):
    """Every pair of the type's edge values (zeros of both signs, subnormals, the largest finite, inf,
    NaN, powers of two of both signs): np.nextafter and np.spacing bit for bit (float16's are NumPy's
    own npy_half_* rules: x where x == y; a positive spacing, the gap toward zero for a negative power
    of two), np.hypot within an ulp of the C library's."""
    with np.errstate(all="ignore"):
        a = EDGES.astype(dtype)
        x, y = (v.ravel().copy() for v in np.meshgrid(a, a))
        want = [np.nextafter(x, y), np.spacing(x), np.hypot(x, y)]
    got = jit(lambda p, q: [np.nextafter(p, q), np.spacing(p), np.hypot(p, q)])(x, y)
    for g, w in zip(got[:2], want[:2]):
        assert_like_numpy(g, w)
    assert got[2].dtype == want[2].dtype
    np.testing.assert_array_max_ulp(got[2], want[2], maxulp=1)


def test_nextafter_spacing_and_hypot_of_integers_compute_in_numpys_float_types():
    for dtype in (np.bool_, np.int8, np.uint16, np.int64):
        a = np.array([0, 1, 3, 100], dtype) if dtype != np.bool_ else np.array([False, True, True, False])
        b = a[::-1].copy()
        got = jit(lambda p, q: [np.nextafter(p, q), np.spacing(p), np.hypot(p, q)])(a, b)
        for g, w in zip(got, [np.nextafter(a, b), np.spacing(a), np.hypot(a, b)]):
            assert_like_numpy(g, w)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_fmax_and_fmin_skip_nans_at_every_edge_of_the_type(dtype):
    """np.fmax and np.fmin of every pair of edge values, bit for bit but for which zero of +0.0 and
    -0.0 they pick (C's fmax leaves that open: NumPy's float32 and float64 loops differ); a NaN only
    where both are NaN. Their reduce skips NaNs too (a slice of nothing but NaNs is NaN, with no
    warning: that is np.nanmax's), over each axis and over everything."""
    with np.errstate(over="ignore"):
        a = EDGES.astype(dtype)
    x, y = (v.ravel().copy() for v in np.meshgrid(a, a))
    got = jit(lambda p, q: [np.fmax(p, q), np.fmin(p, q)])(x, y)
    for g, w in zip(got, [np.fmax(x, y), np.fmin(x, y)]):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)  # NaN where NaN, -0.0 == +0.0
    assert not np.isnan(got[0][~(np.isnan(x) & np.isnan(y))]).any()
    grid = np.where(np.eye(len(a), dtype=bool), np.asarray(np.nan, dtype), np.add.outer(a, np.zeros_like(a)))
    grid[3] = np.nan  # a row of nothing but NaNs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = jit(lambda g: [np.fmax.reduce(g), np.fmin.reduce(g, axis=1), np.fmax.reduce(g, axis=None),
                             np.fmin.reduce(g, axis=1, keepdims=True, initial=np.nan)])(grid)
    want = [np.fmax.reduce(grid), np.fmin.reduce(grid, axis=1), np.fmax.reduce(grid, axis=None),
            np.fmin.reduce(grid, axis=1, keepdims=True, initial=np.nan)]
    for g, w in zip(got, want):
        assert type(g) is type(w) and g.dtype == w.dtype and g.shape == np.shape(w)
        np.testing.assert_array_equal(g, w)
    assert np.isnan(got[1][3]) and not np.isnan(got[1][:3]).any()


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int64, np.uint64])
def test_fmax_and_fmin_of_integers_are_maximum_and_minimum(dtype):
    info = np.iinfo(dtype) if dtype != np.bool_ else None
    values = [False, True] if info is None else [info.min, info.min + 1, 0, 1, info.max - 1, info.max]
    a = np.array(values, dtype)
    x, y = (v.ravel().copy() for v in np.meshgrid(a, a))
    got = jit(lambda p, q: [np.fmax(p, q), np.fmin(p, q), np.fmax.reduce(p), np.fmin.reduce(q)])(x, y)
    assert_like_numpy(got, [np.fmax(x, y), np.fmin(x, y), np.fmax.reduce(x), np.fmin.reduce(y)])


def test_fmax_reduce_of_nothing_and_with_a_mask_refuse_as_numpy():
    f32 = np.ones(3, np.float32)
    for fn, message in ((lambda v: np.fmax.reduce(v[:0]), "zero-size array to reduction operation fmax"),
                        (lambda v: np.fmin.reduce(v, where=v > 0), "'fmin' does not have an identity")):
        with pytest.raises(ValueError, match=message):
            fn(f32)  # NumPy's own refusal, which the compiler's repeats
        with pytest.raises(ValueError, match=message):
            jit(fn)(f32)


def _fibonacci_up_to(limit: int) -> list[int]:
    out = [1, 2]
    while out[-1] + out[-2] <= limit:
        out.append(out[-1] + out[-2])
    return out


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_gcd_and_lcm_at_every_edge_of_the_type(dtype):
    """np.gcd and np.lcm of every pair of edge values, bit for bit: the type's extremes (|INT_MIN| wraps
    back to INT_MIN, as in NumPy: gcd(INT_MIN, 0) is INT_MIN), zeros, and the largest consecutive
    Fibonacci numbers of the type, which take Euclid's algorithm the most steps (Lame's theorem)."""
    info = np.iinfo(dtype)
    fib = _fibonacci_up_to(info.max)[-3:]
    values = {info.min, info.min + 1, -1 if info.min else 5, 0, 1, 6, 12, 18, info.max - 1, info.max, *fib}
    values |= {-f for f in fib} if info.min else set()
    a = np.array(sorted(values), dtype)
    x, y = (v.ravel().copy() for v in np.meshgrid(a, a))
    got = jit(lambda p, q: [np.gcd(p, q), np.lcm(p, q)])(x, y)
    assert_like_numpy(got, [np.gcd(x, y), np.lcm(x, y)])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint32, np.int64, np.uint64])
def test_shifts_and_bitwise_count_at_every_edge_of_the_type(dtype):
    """np.left_shift/np.right_shift (and << >>, <<= >>=) bit for bit for counts on both sides of the width:
    NumPy reads a count as unsigned, so a negative one or one of the width or more shifts every bit out (a
    signed right shift fills with the sign). np.bitwise_count counts the one bits of |x| (uint8)."""
    info = np.iinfo(dtype)
    values = np.array(sorted({info.min, info.min + 1, 0, 1, 5, info.max - 1, info.max}
                             | ({-1, -5} if info.min else set())), dtype)
    counts = np.array(sorted({0, 1, info.bits - 1, info.bits, info.bits + 1, info.max}
                             | ({-1, info.min} if info.min else set())), dtype)
    x, n = (v.ravel().copy() for v in np.meshgrid(values, counts))

    def shifts(p, q):
        left, right = p.copy(), p.copy()
        left <<= q
        right >>= q
        return [np.left_shift(p, q), np.right_shift(p, q), p << 3, 1 << q[:4], left, right, np.bitwise_count(p)]
    assert_like_numpy(jit(shifts)(x, n), shifts(x, n))


def test_gcd_and_lcm_take_numpys_integer_loops_and_refuse_the_others():
    small = np.array([4, 6, -9], np.int8)
    got = jit(lambda p: [np.gcd(p, 12), np.lcm(p, np.uint8(10)), np.gcd(p > 0, 6), np.gcd.outer(p, p),
                         np.lcm.accumulate(p)])(small)
    assert_like_numpy(got, [np.gcd(small, 12), np.lcm(small, np.uint8(10)), np.gcd(small > 0, 6),
                            np.gcd.outer(small, small), np.lcm.accumulate(small)])
    for operands in ((np.ones(3, np.float32), np.ones(3, np.float32)), (np.ones(3, bool), np.ones(3, bool))):
        with pytest.raises(TypeError, match="did not contain a loop") as numpy_error:
            np.gcd(*operands)
        with pytest.raises(type(numpy_error.value), match="did not contain a loop") as compiler_error:
            jit(np.gcd)(*operands)  # NumPy's refusal, of its class, with a note naming the operand types
        assert any("np.gcd is not defined for operand types" in note for note in compiler_error.value.__notes__)


EXPONENTS = np.array([0, 1, -1, 24, -24, 25, -25, 60, -60, 126, -126, 127, -149, -150, 1023, -1022, -1074, -1075,
                      -1076, 1024, 2000, -2000, 2**31 - 1, -2**31], np.int64)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_frexp_modf_and_ldexp_at_every_edge_of_the_type(dtype):
    """Bit for bit, both results of np.frexp and np.modf (zeros keep their sign, inf gives (+-0, inf),
    subnormals normalized) and np.ldexp by int32 and int64 exponents past both ends of the range (one
    rounding into the subnormals, ties to even; float16's loop computes in float32, as NumPy's)."""
    with np.errstate(all="ignore"):
        a = EDGES.astype(dtype)
        x, n = (v.ravel().copy() for v in np.meshgrid(a, EXPONENTS))
        n32 = np.clip(n, -2**31, 2**31 - 1).astype(np.int32)
        want = [*np.frexp(a), *np.modf(a), np.ldexp(x, n), np.ldexp(x, n32)]
    got = jit(lambda p, q, e, e32: [*np.frexp(p), *np.modf(p), np.ldexp(q, e), np.ldexp(q, e32)])(a, x, n, n32)
    for g, w in zip(got, want):
        assert_like_numpy(g, w)


def test_frexp_modf_and_ldexp_of_integers_and_scalars_are_numpys():
    for dtype in (np.bool_, np.int8, np.uint16, np.int64):
        a = np.array([0, 1, 3, 100], dtype) if dtype != np.bool_ else np.array([False, True, True, False])
        got = jit(lambda p: [*np.frexp(p), *np.modf(p), np.ldexp(p, 3)])(a)
        for g, w in zip(got, [*np.frexp(a), *np.modf(a), np.ldexp(a, 3)]):
            assert_like_numpy(g, w)
    assert_like_numpy(jit(lambda e: np.ldexp(np.float32(3), e))(np.array([1, 2])), np.ldexp(np.float32(3), np.array([1, 2])))
    assert_like_numpy(jit(lambda p: np.frexp(p[0]))(np.array([12.0])), np.frexp(np.array([12.0])[0]))


# --------------------------------------------------------------------------- ufunc.at (unbuffered, in order)

# a repeated position combines each of its updates in turn: these magnitudes make every order's float32
# sum differ (1e8 + 1 - 1e8 is 0 in one order, 1 in another)
AT_VALUES = np.array([1e8, 1.0, -1e8, 3.0, 0.5, -0.0, 2.5e-3, 7.0], dtype=np.float32)
AT_INDEX = np.array([2, 2, 2, 0, -1, 0, 2, 4])


def _at(ufunc, dtype, indices, values=None, shape=(5,), start=None):
    def fn(v):
        z = (np.zeros_like(v, shape=shape, dtype=dtype) if start is None
             else np.zeros_like(v, shape=shape, dtype=dtype) + start)
        ufunc.at(z, indices, *([] if values is None else [values(v)]))
        return z
    return fn


@pytest.mark.parametrize("fn", [
    _at(np.add, np.float32, AT_INDEX, lambda v: v),
    _at(np.subtract, np.float32, AT_INDEX, lambda v: v),
    _at(np.multiply, np.float32, AT_INDEX, lambda v: v / 3 + 1, start=1),
    _at(np.maximum, np.float32, AT_INDEX, lambda v: v),
    _at(np.add, np.float16, AT_INDEX, lambda v: v.astype(np.float16) / 1e4),
    _at(np.add, np.float16, AT_INDEX, lambda v: v / 1e4),  # float32 loop, rounded to float16 after each update
    _at(np.add, np.float64, AT_INDEX, lambda v: v),
    _at(np.add, np.int8, AT_INDEX, lambda v: (v % 100).astype(np.int8) * 3),  # wraps as it goes
    _at(np.add, np.int8, [0, 0, 1], lambda v: 300),  # a Python int is int64 here (NumPy converts it first)
    _at(np.add, np.int32, [0, 0, 1], lambda v: 1.5),  # float64 loop, truncated after each update
    _at(np.add, np.float16, [0, 0, 0, 1], lambda v: 0.1),  # float64 loop: 0.3, not float16's 0.2998
    _at(np.add, np.bool_, [0, 0, 1], lambda v: v[:3] > 1),  # bool add is OR
    _at(np.negative, np.float32, [0, 0, 1, 2, 2, 2], start=np.float32(1.5)),
    _at(np.add, np.float32, (slice(None), [0, 0, 2]), lambda v: v[:3], shape=(2, 3)),
    _at(np.add, np.float32, ([0, 1, 1, 0], [2, 2, 2, 2]), lambda v: v[:4], shape=(2, 3)),
    _at(np.add, np.float32, np.array([], dtype=np.intp), lambda v: v[:0]),
    # a position updated more often than the traced steps go (64): the kernel updates in turn
    _at(np.add, np.float16, np.zeros(65, dtype=np.intp), lambda v: np.resize(v, 65) / 1e4),
], ids=["add", "subtract", "multiply", "maximum", "float16", "float16-of-float32", "float64-of-float32", "int8",
        "int8-python-int", "int32-python-float", "float16-python-float", "bool", "negative", "slice-and-list",
        "two-lists", "empty", "float16-65-repeats"])
def test_ufunc_at_updates_each_repeat_in_order_as_numpy(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = fn(AT_VALUES)
    assert_like_numpy(jit(fn)(AT_VALUES), want)


def _at_traced(ufunc, dtype, values=lambda v: v, start=0, columns=None):
    def fn(v, i):
        shape = (5,) if columns is None else (5, columns)
        z = np.zeros_like(v, shape=shape, dtype=dtype) + np.asarray(start, dtype)
        if values is None:  # a unary ufunc
            ufunc.at(z, i)
        else:
            ufunc.at(z, i, values(v) if columns is None else np.stack([values(v)] * columns, axis=1))
        return z
    return fn


@pytest.mark.parametrize("fn", [
    _at_traced(np.add, np.float32), _at_traced(np.subtract, np.float32),
    _at_traced(np.multiply, np.float32, lambda v: v / 3 + 1, start=1), _at_traced(np.maximum, np.float32),
    _at_traced(np.minimum, np.float32, lambda v: np.where(v > 5, np.nan, v)), _at_traced(np.add, np.float32, columns=3),
    _at_traced(np.add, np.float16, lambda v: (v / 1e4).astype(np.float16)),
    _at_traced(np.add, np.float64),  # float32 values: float64's loop, the array's own
    _at_traced(np.add, np.int8, lambda v: (v % 100).astype(np.int8) * 3), _at_traced(np.bitwise_or, np.int16, lambda v: (v % 100).astype(np.int16)),
    _at_traced(np.add, np.bool_, lambda v: v > 1),
    _at_traced(np.add, np.float16),  # float32 values: float32's loop, rounded to float16 after each update
    _at_traced(np.add, np.int32, lambda v: 1.5),  # float64's loop, truncated after each update
    _at_traced(np.copysign, np.float32, lambda v: -v, start=2),  # no right identity
    _at_traced(np.remainder, np.int16, lambda v: np.int16(7), start=100),
    _at_traced(np.negative, np.float32, None, start=1.5),
], ids=["add", "subtract", "multiply", "maximum", "minimum-nan", "rows", "float16", "float64-of-float32", "int8", "bitwise_or",
        "bool", "float16-of-float32", "int32-python-float", "copysign", "remainder", "negative"])
def test_ufunc_at_at_traced_positions_updates_each_repeat_in_order_as_numpy(fn):
    """Positions the kernel computes (np.argmax's, say): the kernel updates the rows in turn, each step in
    the ufunc's loop for the array's and the values' dtypes, cast back to the array's."""
    positions = AT_INDEX[np.argsort(AT_VALUES, kind="stable")]  # repeats, a negative one
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = fn(AT_VALUES, positions)
    assert_like_numpy(jit(fn)(AT_VALUES, positions), want)


def _at_key(ufunc, key, values=None):
    def fn(x):
        y = x.copy()
        ufunc.at(y, key(x), *([] if values is None else [values(x)]))
        return y
    return fn


@pytest.mark.parametrize("fn", [
    _at_key(np.add, lambda x: (np.argmax(x, axis=0), np.arange(5)), lambda x: 1.0),
    _at_key(np.add, lambda x: (np.argmax(x, axis=0) - 4, [0, 0, 1, 1, 4]), lambda x: x[0]),  # repeats, negatives
    _at_key(np.multiply, lambda x: [np.argmax(x[0]) % 4, 0, np.argmin(x[1])], lambda x: 2),
    _at_key(np.add, lambda x: (slice(None), np.argmax(x, axis=1)), lambda x: 1),
    _at_key(np.add, lambda x: (np.argmax(x, axis=0), np.arange(5)[:, None]), lambda x: 1.0),  # broadcast keys
    _at_key(np.negative, lambda x: (np.argmax(x, axis=0), [1, 1, 1, 1, 1])),
    _at_key(np.add, lambda x: ([np.argmax(x[0]) % 4], ...), lambda x: x[1]),
], ids=["pair", "repeats", "list", "slice", "broadcast", "unary", "ellipsis"])
def test_ufunc_at_with_traced_integers_inside_the_key_updates_each_element_in_turn(fn):
    """A tuple or list holding traced positions: a's flat positions indexed with the key, each element there
    updated in C order, a position reached twice updated twice."""
    x = np.random.default_rng(7).normal(size=(4, 5)).astype(np.float32)
    assert_like_numpy(jit(fn)(x), fn(x))


def _at_mask(ufunc, key, values=None, dtype=np.float32):
    def fn(x):
        y = x.astype(dtype)
        ufunc.at(y, key(x), *([] if values is None else [values(x)]))
        return y
    return fn


def _pattern(x, pattern):
    """A traced mask whose count the test knows: ``pattern`` made a kernel value."""
    return (x.reshape(-1)[:len(pattern)] * 0 + np.asarray(pattern)) > 0


@pytest.mark.parametrize("fn", [
    _at_mask(np.add, lambda x: x > 0, lambda x: 1.5),
    _at_mask(np.add, lambda x: (x > 0,), lambda x: 1.5, dtype=np.int16),  # float64's loop, truncated
    _at_mask(np.add, lambda x: x > 0.5, lambda x: 300, dtype=np.int8),  # int64's loop, wrapped
    _at_mask(np.negative, lambda x: x < 0),
    _at_mask(np.maximum, lambda x: (slice(None), x[0] > 0), lambda x: np.float32(np.nan)),
    _at_mask(np.multiply, lambda x: (slice(None), _pattern(x, [1, 0, 1, 1, 0])), lambda x: np.arange(3.0) - 1),
    _at_mask(np.subtract, lambda x: (_pattern(x, [0, 1, 0, 1]), ...), lambda x: x[:2] * 3),  # a row per element
    _at_mask(np.add, lambda x: (2, x[0] > 0), lambda x: 10),
    _at_mask(np.add, lambda x: (Ellipsis, _pattern(x, [1, 1, 0, 0, 1]), ), lambda x: np.ones((4, 1)) * 7),
    _at_mask(np.power, lambda x: x[:, 0] > 0, lambda x: np.int16(3), dtype=np.int16),
], ids=["add", "tuple-int16", "int8-wraps", "unary", "maximum-nan", "inner-rows", "leading-rows", "integer-beside",
        "inner-broadcast", "power"])
def test_ufunc_at_through_a_traced_mask_updates_each_selected_element_as_numpy(fn):
    """A mask selects each element at most once: the selection updated in at's loop for (a's dtype, b's) and cast
    back, written where the mask holds; values with a row per selected element take them in C order."""
    x = np.random.default_rng(11).normal(size=(4, 5)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = fn(x)
    assert_like_numpy(jit(fn)(x), want)


def test_ufunc_at_with_values_of_more_axes_than_the_selection_is_numpys_value_error():
    # NumPy 2's own ufunc.at reads past its shape arrays here (index arrays after a slice) and crashes or names a
    # garbage shape; the compiler gives the message NumPy gives such values elsewhere, and never calls NumPy's
    def fn(x):
        y = x * 1
        np.add.at(y, (slice(None), x[0] > 0), np.ones((2, 2, 3, 4)))
        return y

    with pytest.raises(ValueError, match="array is not broadcastable to correct shape"):
        jit(fn)(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match="array is not broadcastable to correct shape"):
        np.add.at(np.zeros(5), np.zeros(5, bool), np.ones((1, 1)))  # (NumPy's message where the array comes first)


def test_ufunc_at_and_assignment_at_traced_positions_scale_linearly():
    """A million labels into 1000 bins and 300,000 assignments into 200,000 elements (a billion and sixty billion
    element x update pairs: refused while every element was compared with every update)."""
    rng = np.random.default_rng(3)

    def histogram(labels, weights):
        counts = np.zeros_like(weights, shape=1000)
        np.add.at(counts, labels, weights)
        return counts

    def assign(x, i, v):
        y = x.copy()
        y[i] = v
        return y

    labels, weights = rng.integers(-1000, 1000, size=1_000_000), rng.random(1_000_000)
    assert_like_numpy(jit(histogram)(labels, weights), histogram(labels, weights))
    x, i, v = rng.random(200_000), rng.integers(-200_000, 200_000, size=300_000), rng.random(300_000)
    assert_like_numpy(jit(assign)(x, i, v), assign(x, i, v))


def test_ufunc_at_into_a_view_updates_its_base():
    def fn(v):
        z = np.zeros_like(v, shape=6)
        np.add.at(z[1::2], [0, 0, 2], v[:3])
        return z

    assert_like_numpy(jit(fn)(AT_VALUES), fn(AT_VALUES))


@pytest.mark.parametrize("fn, error, match", [
    (_at(np.add, np.float32, [5], lambda v: v[:1]), IndexError, "index 5 is out of bounds"),
    (_at(np.add, np.float32, [0, 1], lambda v: v[:3]), ValueError, "not broadcastable"),
    (_at(np.subtract, np.bool_, [0], lambda v: v[:1] > 0), TypeError, "subtract"),
    (lambda v: np.add.at(v, [0], 1.0), NotImplementedError, "np.add.at on the argument v"),
    (lambda v, i: np.subtract.at(np.zeros_like(v, shape=5, dtype=bool), i, v > 0), TypeError, "subtract"),
    (lambda v, i: np.add.at(np.zeros_like(v, shape=5), i), ValueError, "second operand needed"),
    (lambda v, i: np.add.at(np.zeros_like(v, shape=5), i, v[:3]), ValueError, "not broadcastable"),
    (lambda v, i: np.add.at(np.zeros_like(v, shape=(5, 2)), (i, [0, 1, 0]), 1.0), IndexError, "shape mismatch"),
    (lambda v, i: np.add.at(np.zeros_like(v, shape=(5, 2)), (i, [2] * 8), 1.0), IndexError,
     "index 2 is out of bounds for axis 1 with size 2"),
    (lambda v, i: np.add.at(np.zeros_like(v, shape=8), [v > 0], 1.0), NotImplementedError,
     "np.add.at through a traced boolean mask inside a list"),
    (lambda v, i: np.add.at(np.zeros_like(v, shape=(8, 2)), (v > 0, [0, 1]), 1.0), NotImplementedError,
     "np.add.at through a traced boolean mask beside index arrays"),
    (lambda v, i: (lambda z: (np.add.at(z, v > 0, np.arange(8.0)), z)[1])(np.zeros_like(v, shape=8)), ValueError,
     r"array is not broadcastable to correct shape \(np.add.at at .*checked as the kernel ran"),
    (lambda v, i: (lambda z: (np.power.at(z, i, (v * 0).astype(np.int8) - 1), z)[1])(
        np.ones_like(v, shape=5, dtype=np.int16)), ValueError,
     "integers to negative integer powers are not allowed .*np.power.at .*checked as the kernel ran"),
    (lambda v, i: np.power.at(np.ones_like(v, shape=5, dtype=np.int16), i, -1), ValueError,
     "integers to negative integer powers are not allowed"),
    (lambda v, i: (lambda z: (np.add.at(z, i + 1, v), z)[1])(np.zeros_like(v, shape=5)), IndexError,
     "index out of bounds for axis 0 with size 5 .*checked as the kernel ran"),
])
def test_ufunc_at_errors_are_numpys_or_name_the_limit(fn, error, match):
    args = (AT_VALUES, AT_INDEX % 5) if fn.__code__.co_argcount == 2 else (AT_VALUES,)
    with pytest.raises(error, match=match):
        jit(fn)(*args)


def _clip_into_itself(a):
    z = a.copy()
    returned = np.clip(z, -0.5, 0.5, out=z)
    return z, returned


def _clip_into_wider(a):
    z = np.zeros_like(a, dtype=np.float64)
    np.clip(a, None, 0.5, z)  # out= positionally; one bound: NumPy's np.minimum into z
    return z


def _clip_into_a_view(a):
    z = np.zeros_like(a)
    np.clip(a[:, :2], 0, 1, out=z[:, 1:3])
    return z


def _clip_method_into(a):
    z = np.ones_like(a, dtype=np.float64)
    a.clip(-1, 1, z)
    return z


@pytest.mark.parametrize("fn", [_clip_into_itself, _clip_into_wider, _clip_into_a_view, _clip_method_into])
def test_clip_writes_into_out_as_numpy(fn):
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    assert_like_numpy(jit(fn)(a), fn(a))


def test_clip_into_a_narrower_out_is_numpys_casting_error():
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    with pytest.raises(TypeError, match="Cannot cast ufunc 'clip' output from dtype\\('float32'\\) to dtype\\('int8'\\)"):
        jit(lambda x: x.clip(-1, 1, out=np.zeros_like(x, dtype=np.int8)))(a)


# --------------------------------------------------------------------------- ufunc.reduce of the other ufuncs

FOLD_X = (np.random.default_rng(11).standard_normal((5, 4)) * 10).astype(np.float32)
FOLD_I = np.random.default_rng(12).integers(-50, 50, (5, 4)).astype(np.int16)


def _fold_by_hand(ufunc, rows):
    """The first element, then ufunc(previous, next): the definition NumPy's reduce follows."""
    acc = rows[0]
    for row in rows[1:]:
        acc = ufunc(acc, row)
    return acc


def _as_numpy_or_its_error(fn, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            want = fn(x)
        except (ValueError, TypeError) as error:  # (an axis tuple of a ufunc NumPy cannot reorder, no loop)
            with pytest.raises(type(error)):
                jit(fn)(x)
            return
    assert_like_numpy(jit(fn)(x), want)


@pytest.mark.parametrize("ufunc", [np.subtract, np.divide, np.copysign, np.fmod, np.nextafter, np.heaviside])
def test_ufunc_reduce_folds_in_index_order_as_numpy(ufunc):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(ufunc.reduce(FOLD_X[::-1], axis=0), _fold_by_hand(ufunc, FOLD_X[::-1]))
    for fn in [lambda a: ufunc.reduce(a, axis=0), lambda a: ufunc.reduce(a, axis=1, keepdims=True),
               lambda a: ufunc.reduce(a[::-1], axis=0),  # a reversed view still folds forwards
               lambda a: ufunc.reduce(a.T, axis=None), lambda a: ufunc.reduce(a[0])]:
        _as_numpy_or_its_error(fn, FOLD_X)


@pytest.mark.parametrize("ufunc", [np.bitwise_or, np.bitwise_xor, np.subtract, np.gcd, np.floor_divide, np.equal])
def test_ufunc_reduce_of_integers_as_numpy(ufunc):
    for fn in [lambda a: ufunc.reduce(a, axis=0), lambda a: ufunc.reduce(a, axis=-1),
               lambda a: ufunc.reduce(a, axis=None), lambda a: ufunc.reduce(a.T[:, ::-1], axis=(0, 1))]:
        _as_numpy_or_its_error(fn, FOLD_I)


@pytest.mark.parametrize("ufunc", [np.logaddexp, np.logaddexp2, np.hypot])
def test_ufunc_reduce_of_math_functions_within_their_ulps(ufunc):
    """The C library's functions, folded in NumPy's order: within the rounding the op tests allow them."""
    for fn in [lambda a: ufunc.reduce(a, axis=0), lambda a: ufunc.reduce(a.T, axis=None)]:
        want, got = fn(FOLD_X), jit(fn)(FOLD_X)
        assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=16 * np.finfo(np.float32).eps)


def test_ufunc_reduce_of_nothing_is_the_identity_or_numpys_error():
    assert_like_numpy(jit(lambda a: np.logaddexp.reduce(a[:0], axis=0))(FOLD_X), np.logaddexp.reduce(FOLD_X[:0], axis=0))
    assert_like_numpy(jit(lambda a: np.subtract.reduce(a[0, 0]))(FOLD_X), np.subtract.reduce(FOLD_X[0, 0]))
    with pytest.raises(ValueError, match="zero-size array to reduction operation subtract which has no identity"):
        jit(lambda a: np.subtract.reduce(a[:0], axis=0))(FOLD_X)
    with pytest.raises(ValueError, match="reduction operation 'subtract' is not reorderable"):
        jit(lambda a: np.subtract.reduce(a, axis=None))(FOLD_X)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "F", "transposed"])
def test_np_pad_takes_a_mean_in_the_padded_array_numpy_pads_into(dtype, layout):
    """np.pad(mode="mean") computes each axis's mean in the array it pads into (np.empty of the padded shape, in
    Fortran order only for a Fortran-only argument), so its sums run in that memory order. The compiler took the
    mean of the padded-so-far concatenation, whose layout differed for unit axes: a fuzz case (pad of a
    (1, 1, 16) float32 array by (1, 2)) came out in another rounding."""
    rng = np.random.default_rng(14)
    forms = {
        "(1, 2) on every axis": lambda x: np.pad(x, [1, 2], mode="mean"),
        "stat_length 5": lambda x: np.pad(x, 3, mode="mean", stat_length=5),
        "before only": lambda x: np.pad(x, [(2, 0)] * x.ndim, mode="mean"),
    }
    for shape in [(1, 1, 16), (1, 19), (3, 4, 9)]:
        x = (rng.standard_normal(shape) * np.exp(rng.uniform(-5, 5, shape))).astype(dtype)
        x = {"C": x, "F": np.asfortranarray(x), "transposed": np.ascontiguousarray(x.T).T}[layout]
        for form in forms.values():
            assert_like_numpy(jit(form)(x), form(x))


@pytest.mark.parametrize("name", ["solve", "inv", "det", "slogdet", "cholesky", "qr"])
def test_float32_linalg_is_computed_in_float64_and_converted_as_numpy_does(name):
    """NumPy's linalg computes float32 matrices in double (_commonType) and converts the results to float32, so
    the float64 rounding almost never shows: the compiler computed float32 in float32, some ulps away (a
    sweep of 30 random matrices per function: 26 of 180 results agreed bit for bit, now all do)."""
    rng = np.random.default_rng(15)
    forms = {
        "solve": lambda a, b: np.linalg.solve(a, b),
        "inv": lambda a, b: np.linalg.inv(a),
        "det": lambda a, b: np.linalg.det(a),
        "slogdet": lambda a, b: np.linalg.slogdet(a),
        "cholesky": lambda a, b: np.linalg.cholesky(a @ np.swapaxes(a, -1, -2) + np.eye(a.shape[-1], dtype=a.dtype)),
        "qr": lambda a, b: np.linalg.qr(a),
    }
    form = forms[name]
    for n in (2, 3, 5):
        a = rng.standard_normal((2, n, n)).astype(np.float32)
        b = rng.standard_normal((2, n, 1)).astype(np.float32)
        assert_like_numpy(tuple(jit(form)(a, b)) if name in ("slogdet", "qr") else jit(form)(a, b),
                          tuple(form(a, b)) if name in ("slogdet", "qr") else form(a, b))


def test_a_householder_reflection_of_a_column_of_tiny_values_is_lapacks():
    """dlarfg reflects whenever the column below the diagonal is not all zero; its norm must not underflow to 0
    (the squares of 1e-300 or of a subnormal are 0.0), or R's and Q's signs flip. LAPACK's dlarfg also scales a
    column whose reflected value is below its safe minimum up first. A fuzz case (qr of a column [-2.2e-308,
    4.9e-324]) gave R[0, 1] = -1.2268 where NumPy has +1.2268."""
    forms = [lambda a: np.linalg.qr(a), lambda a: np.linalg.qr(a, mode="complete")]
    for a in ([[-2.2250738585072014e-308, -1.2267768164387896], [4.9406564584124654e-324, -1.4528138180934196]],
              [[1e-300, 1.0], [1e-300, 2.0]], [[0.0, 1.0], [1e-320, 2.0]], [[3.0, 1.0], [1e200, 2.0], [1e200, 5.0]]):
        a = np.array(a)
        for form in forms:
            (got_q, got_r), (want_q, want_r) = jit(form)(a), form(a)
            assert got_q.dtype == want_q.dtype and got_r.dtype == want_r.dtype
            np.testing.assert_array_equal(np.sign(got_r), np.sign(want_r))  # the reflections LAPACK takes
            np.testing.assert_allclose(got_q, want_q, rtol=1e-14, atol=1e-15)
            np.testing.assert_allclose(got_r, want_r, rtol=1e-14, atol=1e-300)
