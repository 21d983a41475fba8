"""Indexing (ints, slices with steps, None, Ellipsis, integer-array gathers) and the
shape functions GPT-2 code uses, compiled and compared with NumPy: values and dtypes."""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest

from compiler import jit

X = np.arange(2 * 5 * 6, dtype=np.float32).reshape(2, 5, 6) * 0.5 - 7


def assert_same(actual, expected):
    # a 0-d result NumPy gives as a scalar must come back as one, and an array as an array
    assert isinstance(actual, np.generic) == isinstance(expected, np.generic), (type(actual), type(expected))
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert isinstance(actual, np.ndarray), type(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(actual, expected)


def check_laid_out(fn, *args):
    """A compiled function's one result: NumPy's value, dtype and strides (a write through a mask keeps the
    array's memory)."""
    expected, actual = fn(*args), jit(fn)(*args)
    assert_same(actual, expected)
    assert actual.strides == expected.strides


def check(fn, *args, **static):
    expected = fn(*args, **static)
    actual = jit(fn)(*args, **static)
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
    else:
        assert_same(actual, expected)
    return actual


KEYS = [
    1, -1, (0, 2), (1, -1, -2), (slice(None), 3),
    slice(1, None), (slice(None), slice(1, 4)), (slice(None), slice(None, None, 2)), (Ellipsis, slice(1, 6, 2)),
    (slice(None), slice(None, None, -1)), (Ellipsis, slice(None, None, -2)), (slice(None), slice(4, 0, -3), slice(None, 2)),
    (slice(None), slice(3, 3)),
    None, (None, 1), (Ellipsis, None), (0, None, Ellipsis, 1), (slice(None), None, slice(None), None),
    Ellipsis, (Ellipsis, 0), (1, Ellipsis), (Ellipsis, -1, slice(None, None, -1)),
    (slice(None, None, -1), 2, slice(None, None, -1)),
    -2, (slice(None), -5, -6), (Ellipsis, -6), (-2, slice(None), -6),  # an index of -n: the first element
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_basic_indexing(key):
    check(lambda x: x[key], X)


GATHERS = [
    np.array([3, 0, 4, 4]), np.array([-1, -5, 2]), np.array([[0, 1], [-1, 2]]), np.array([2], np.int32),
    np.array([1, 0], np.uint8),
]


@pytest.mark.parametrize("ids", GATHERS, ids=lambda a: f"{a.dtype}{a.tolist()}")
def test_gather_runtime_indices(ids):
    wte = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    check(lambda wte, ids: wte[ids], wte, ids)


@pytest.mark.parametrize("ids", GATHERS, ids=lambda a: f"{a.dtype}{a.tolist()}")
def test_gather_constant_indices(ids):
    check(lambda x: x[:, ids], X)


@pytest.mark.parametrize("dtype,size", [(np.uint8, 300), (np.uint16, 70000)])
def test_unsigned_indices_with_the_top_bit_set_count_from_the_start(dtype, size):
    """An unsigned index is a position, whatever its top bit: uint8 200 is element 200 (NumPy reads
    it unsigned), not -56, which would count from the end or fall outside the table."""
    table = np.arange(size, dtype=np.float32) * 0.5 - 3
    top = np.iinfo(dtype).max
    ids = np.array([top // 2 + 1, top, top // 2, 0, top - 7], dtype)
    check(lambda t, i: t[i], table, ids)
    check(lambda t, i: np.take(t, i), table, ids)
    check(lambda t: t[ids], table)
    check(lambda t, i: t.reshape(1, size)[:, i], table, ids)


TAKE_X = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5 - 4


@pytest.mark.parametrize("indices", [-1.5, 2.0, np.float32(1), [1.0, -2.0], True, [[-7, 6], [2, 11]], -13, []],
                         ids=repr)
@pytest.mark.parametrize("mode", ["raise", "wrap", "clip", 0, 1])
@pytest.mark.parametrize("axis", [None, 1])
def test_take_of_indices_known_at_trace_time_converts_and_places_them_as_numpy_does(indices, mode, axis):
    # NumPy reads a Python float or bool as an integer index; 'clip' pins a negative one to 0 (not from the
    # end), 'wrap' takes it modulo the axis; mode 0 is 'clip' and 1 'wrap' to NumPy
    try:
        np.take(TAKE_X, indices, axis=axis, mode=mode)
    except IndexError as error:  # out of range under 'raise': NumPy's own error, at trace time
        with pytest.raises(IndexError, match=str(error)):
            jit(lambda x: np.take(x, indices, axis=axis, mode=mode))(TAKE_X)
    else:
        check(lambda x: np.take(x, indices, axis=axis, mode=mode), TAKE_X)
        check(lambda x: x.take(indices, axis=axis, mode=mode), TAKE_X)


@pytest.mark.parametrize("mode", ["wrap", "clip"])
@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint8, np.bool_])
def test_take_of_computed_indices_wraps_or_clips_them(mode, dtype):
    ids = np.array([[0, 1, 3], [2, 1, 0]]).astype(dtype)
    shift = -9 if np.dtype(dtype).kind == "i" else 5  # some out of range either side, as NumPy's loop sees them
    check(lambda x, i: np.take(x, i + np.asarray(shift, i.dtype) if i.dtype != bool else i, axis=1, mode=mode),
          TAKE_X, ids)


def test_take_of_computed_indices_keeps_numpys_errors():
    floats = np.array([1.0, 2.0])
    with pytest.raises(TypeError, match="Cannot cast array data from dtype\\('float64'\\) to dtype\\('int64'\\) "
                                        "according to the rule 'same_kind'"):
        np.take(TAKE_X, floats)
    with pytest.raises(TypeError, match="Cannot cast array data from dtype\\('float64'\\) to dtype\\('int64'\\) "
                                        "according to the rule 'same_kind'"):
        jit(lambda x, i: np.take(x, i))(TAKE_X, floats)
    with pytest.raises(IndexError, match="cannot do a non-empty take from an empty axes"):
        np.take(TAKE_X[:, :0], np.array([1]), axis=1, mode="clip")
    with pytest.raises(IndexError, match="cannot do a non-empty take from an empty axes"):
        jit(lambda x, i: np.take(x[:, :0], i, axis=1, mode="clip"))(TAKE_X, np.array([1]))
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        jit(lambda x, i: np.take(x, i + 3, axis=1))(TAKE_X, np.array([0, 1]))  # checked as the kernel runs
    with pytest.raises(ValueError, match="clipmode must be one of 'clip', 'raise', or 'wrap' \\(got 'bogus'\\)"):
        jit(lambda x, i: np.take(x, i, mode="bogus"))(TAKE_X, np.array([0]))


@pytest.mark.parametrize("make_key", [
    lambda i: (1, slice(None), i),            # int and array apart: array axes go first
    lambda i: (i, slice(None), 0),
    lambda i: (None, 1, slice(None), i),
    lambda i: (slice(None), 0, i),            # adjacent: array axes stay in place
    lambda i: (0, i),
    lambda i: (slice(None), i, 0),
    lambda i: (slice(None, None, -1), slice(1, None), i),
], ids=["int-slice-arr", "arr-slice-int", "new-int-slice-arr", "slice-int-arr", "int-arr", "slice-arr-int", "neg-step"])
def test_mixed_int_and_array_indices(make_key):
    ids = np.array([[1, -1], [0, 2]]) if make_key(0)[0] is not None else np.array([1, -1, 0])
    ids = np.clip(ids, -2, 1)  # valid for every axis of X
    check(lambda x, i: x[make_key(i)], X, ids)
    check(lambda x: x[make_key(ids)], X)


def test_gather_on_later_axis_and_with_ints():
    ids = np.array([5, -6, 0])
    check(lambda x, i: x[..., i] * 2, X, ids)
    check(lambda x, i: x[i.shape[0] - 2], X, ids)


def test_embedding_pattern():
    """GPT-2's token + position embedding: ``wte[ids] + wpe[range(len(ids))]``."""
    rng = np.random.default_rng(1)
    wte = rng.standard_normal((50, 8)).astype(np.float32)
    wpe = rng.standard_normal((16, 8)).astype(np.float32)
    ids = np.array([49, 0, 7, -1, 3])
    check(lambda wte, wpe, ids: wte[ids] + wpe[range(len(ids))], wte, wpe, ids)
    check(lambda wte, wpe, ids: wte[ids] + wpe[: ids.shape[0]], wte, wpe, ids)


Y = np.arange(4 * 5 * 6 * 7, dtype=np.float64).reshape(4, 5, 6, 7) - 300
I, J, K = np.array([0, 3, -1]), np.array([[1], [4]]), np.array([2, 5, 0])


@pytest.mark.parametrize("key", [
    (I, J), (slice(None), J, K), (I, slice(None), K), (I, 2, K), (0, J, K), (I, slice(1, 4), J, 0),
    (None, I, None, J), (I, None, J), (slice(None, None, -1), I, K), (I, J, 1), (slice(None), slice(None), I, J),
    (np.array(2), I), (I, I, I, I), (I.reshape(3, 1), slice(None), K), (Ellipsis, J, K),
    # an ellipsis standing for no axis still separates them (NumPy puts the broadcast axes first)
    (slice(None), 0, Ellipsis, K, slice(None)), (slice(None), J, Ellipsis, K, slice(None)),
    (I, Ellipsis, J, K, slice(None)), (slice(None), slice(None), J, Ellipsis, K),
], ids=lambda key: "[" + ", ".join(type(k).__name__ if not isinstance(k, np.ndarray) else f"a{k.shape}" for k in key) + "]")
def test_several_integer_arrays_index_like_numpy(key):
    # NumPy's rule: the broadcast index shape goes where the advanced indices (arrays and integers)
    # are when they are adjacent, else first
    arrays = [k for k in key if isinstance(k, np.ndarray) and k.ndim]

    def as_arguments(t, *idx):
        it = iter(idx)
        return t[tuple(next(it) if isinstance(k, np.ndarray) and k.ndim else k for k in key)]

    assert_same(jit(as_arguments)(Y, *arrays), Y[key])
    assert_same(jit(lambda t: t[key])(Y), Y[key])  # as constants


def test_several_index_arrays_are_each_checked_and_must_broadcast():
    f = jit(lambda t, a, b: t[a, :, b])
    with pytest.raises(ValueError, match="argument b: index 7 is out of range for an axis of size 6"):
        f(Y, I, np.array([1, 7, 2]))
    with pytest.raises(ValueError, match="argument a: index -5 is out of range for an axis of size 4"):
        f(Y, np.array([-5]), K)
    with pytest.raises(IndexError, match=r"could not be broadcast together with shapes \(3,\) \(2,\)"):
        f(Y, I, np.array([1, 2]))
    # an index argument reshaped or broadcast is still checked on the host
    g = jit(lambda t, a: t[a.reshape(-1), a.T.reshape(-1)])
    assert_same(g(Y, np.array([[1, 2]])), Y[np.array([1, 2]), np.array([1, 2])])
    with pytest.raises(ValueError, match="argument a: index 4 is out of range for an axis of size 4"):
        g(Y, np.array([[1, 4]]))


def test_split_hstack_concatenate():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 12)).astype(np.float32)

    def heads(x):
        q, k, v = np.split(x, 3, axis=-1)
        parts = np.split(q, 2, axis=-1)
        return np.hstack([p * 2 for p in parts]) + k, np.concatenate([v, q], axis=0), np.concatenate([k, v], axis=-1)

    check(heads, x)
    check(lambda x: np.split(x, [1, 3], axis=0), x)
    check(lambda x: np.hstack([x[0], x[1]]), x)  # 1-d hstack joins along axis 0


def test_concatenate_promotes_like_numpy():
    a = np.ones((2, 3), np.float32)
    b = np.full((1, 3), 2, np.float64)
    c = np.full((2, 3), 3, np.int32)
    check(lambda a, b, c: np.concatenate([a, b, c]), a, b, c)


def test_reshape_and_transpose():
    x = np.arange(24, dtype=np.float64).reshape(4, 6)

    def f(x):
        h = x.reshape(4, 2, 3).transpose(1, 0, 2)           # split heads
        merged = np.transpose(h, (1, 0, 2)).reshape(4, -1)   # merge them back
        return h, merged, x.T, np.reshape(x, (3, 8)), x.reshape(-1), np.swapaxes(h, 0, 2)

    check(f, x)
    # the axes as an integer array, which NumPy reads as the sequence of its elements
    check(lambda x: (x.reshape(4, 2, 3).transpose(np.array([2, 0, 1])),
                     np.transpose(x.reshape(2, 3, 4), np.array([1, 2, 0], np.int32))), x)


def test_multihead_reshape_matmul():
    rng = np.random.default_rng(3)
    t, n_head, d = 5, 3, 12
    q, k = (rng.standard_normal((t, d)).astype(np.float32) for _ in range(2))

    def f(q, k):
        qh = q.reshape(t, n_head, d // n_head).transpose(1, 0, 2)
        kh = k.reshape(t, n_head, d // n_head).transpose(1, 0, 2)
        return qh @ kh.transpose(0, 2, 1)

    expected = f(q, k)
    got = jit(f)(q, k)
    assert got.dtype == expected.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_where_and_comparisons():
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    check(lambda x: np.where(x > 0, x, 0.0), x)
    check(lambda x: np.where(x > 0, x, np.float64(-1)), x)
    check(lambda x: np.where(x <= 0.5, 1, x * 3), x)
    check(lambda x, y: np.where(x == y, x, -y), x, x[::-1].copy())


def test_triu_mask_with_inf():
    rng = np.random.default_rng(4)
    t = 6
    scores = rng.standard_normal((t, t)).astype(np.float32)

    def f(s):
        mask = np.triu(np.ones((t, t), dtype=np.float32) * -np.inf, k=1)
        return s + mask

    got = check(f, scores)
    assert np.isneginf(got[np.triu_indices(t, 1)]).all() and np.isfinite(got[np.tril_indices(t)]).all()
    check(lambda s: np.triu(s), scores)
    check(lambda s: np.triu(s, k=-1) + np.tril(s, k=2), scores)
    # float64 mask from np.ones's default dtype, as in plain NumPy code: promotes the scores
    assert check(lambda s: s + np.triu(np.ones((t, t)) * -np.inf, k=1), scores).dtype == np.float64


@pytest.mark.parametrize("k", [0.5, -0.5, 1.5, -1.5, 2.7, np.float32(-2.5), True, np.int8(-2)])
@pytest.mark.parametrize("shape", [(3, 4), (5,), (2, 3, 3)])
def test_tril_triu_of_a_k_that_is_no_python_int_keep_what_numpy_keeps(shape, k):
    # np.tri counts columns with an integer-dtype arange from -k, so a fractional k is NumPy's own quirk
    # (np.triu(m, 1.5) keeps nothing, np.tril(m, 0.5) everything); the compiler's mask must be NumPy's
    x = np.random.default_rng(6).integers(1, 9, shape).astype(np.int32)
    check(lambda m: np.tril(m, k), x)
    check(lambda m: np.triu(m, k), x)


def test_tri_causal_mask_constant():
    scores = np.random.default_rng(5).standard_normal((4, 4)).astype(np.float32)
    check(lambda s: s + (1 - np.tri(4, dtype=s.dtype)) * -1e10, scores)


def test_zeros_ones_constants():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(lambda x: x + np.zeros((2, 3)) + np.ones(3, dtype=np.float32), x)
    check(lambda x: np.ones_like(x) * x + np.zeros_like(x), x)


# bool tensors are stored as bytes; MLIR's LLVM lowering aborted the process on i1 buffers,
# so these run in one subprocess: a regression must fail the test, not kill the worker.
BOOL_CASES = r'''
import numpy as np
from compiler import jit

x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
m = x > 0.2
big = np.random.default_rng(0).random((5, 7)) > 0.5   # non-splat, > 16 elements: a hidden constant
cases = {
    "bool input": (lambda m, x: np.where(m, x, 0), (m, x)),
    "bool output": (lambda x: x > 0, (x,)),
    "bool concat": (lambda x: np.where(np.concatenate([x > 0, x < 0]), 1.0, 2.0), (x,)),
    "bool max": (lambda m: np.max(m, axis=0), (m,)),
    "bool sum": (lambda m: np.sum(m, axis=1), (m,)),
    "bool gather": (lambda m, i: m[i], (m, np.array([2, 0, -1]))),
    "bool transpose": (lambda m: m.T, (m,)),
    "bool constant": (lambda y: np.where(big, y, -y), (np.ones((5, 7)),)),
    "bool cast": (lambda m, x: m * x + m.astype(np.float64), (m, x)),
}
for name, (fn, args) in cases.items():
    got, want = jit(fn)(*args), fn(*args)
    assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, want.dtype)
    assert np.array_equal(got, want), name
    print("ok", name)
'''


def test_bool_tensors_in_a_subprocess():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", BOOL_CASES], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("ok ") == 9


EMPTY_CASES = {
    "concatenate, empty part last": (lambda x, y: np.concatenate([x, y]), (np.arange(3.0), np.zeros(0))),
    "concatenate, empty parts around": (lambda x, y: np.concatenate([y, x, y]), (np.arange(3.0), np.zeros(0))),
    "split then concatenate, empty middle part": (lambda x: np.concatenate(np.split(x, [2, 2, 4])), (np.arange(4.0),)),
    "hstack with an empty column block": (lambda x, y: np.hstack([x, y]), (np.ones((2, 3)), np.ones((2, 0)))),
    "stack of empties": (lambda x, y: np.stack([x, y]), (np.ones(0), np.ones(0))),
    "slice of an empty axis": (lambda x: x[1:], (np.zeros((3, 0)),)),
    "integer index into an array with an empty axis": (lambda x: x[1] + 1, (np.zeros((3, 0)),)),
    "slice past the end": (lambda x: x[3:] * 2, (np.arange(3.0),)),
    "reversal of an empty array": (lambda x: x[::-1], (np.zeros(0, np.float32),)),
    "negative step over a non-empty axis of an empty array": (lambda x: x[::-2, 1:], (np.zeros((0, 3)),)),
    "empty list index": (lambda x: x[[]], (np.arange(4.0),)),
    "empty list index on a later axis": (lambda x: x[:, []] + 1, (np.arange(4.0).reshape(2, 2),)),
    "empty runtime index into an empty axis": (lambda x, i: x[i], (np.zeros(0), np.zeros(0, np.int64))),
}


@pytest.mark.parametrize("name", list(EMPTY_CASES))
def test_empty_results_and_empty_parts(name):
    """Slices and concatenations touching zero-size dimensions (MLIR refuses an offset equal to an
    empty dimension's size, so these once failed to parse) and empty integer indices, as NumPy."""
    fn, args = EMPTY_CASES[name]
    expected, got = fn(*args), jit(fn)(*args)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_indexing_an_empty_axis_with_indices_is_an_index_error():
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
        jit(lambda x: x[[0]])(np.zeros(0))
    with pytest.raises(IndexError, match="integer type"):  # an empty float *array* is refused, as NumPy does
        jit(lambda x: x[np.array([])])(np.arange(4.0))


def test_big_endian_inputs_compute_as_native():
    x = np.arange(6, dtype=">f4").reshape(2, 3)
    i = np.array([1, 0], ">i8")
    fn = lambda a, b: a[b] * 2 + a.sum()  # noqa: E731
    expected, got = fn(x, i), jit(fn)(x, i)
    assert got.dtype == expected.dtype == np.float32
    np.testing.assert_array_equal(got, expected)


# --------------------------------------------------------------------------- indices computed in the kernel
# Only the kernel knows them: it replaces an out-of-range one by 0 and reports it, and the call raises
# NumPy's IndexError after the kernel returned (tests/test_compiler_errors.py has the same for exponents).


@pytest.mark.parametrize("fn,args", [
    (lambda x, y: x[np.argmax(y)], (X[0], np.array([1.0, 5.0, 2.0, 5.0, -1.0]))),
    (lambda x, y: x[:, np.argmin(y, axis=0)], (X, np.array([[3, 1, 2], [0, 7, 1]], np.int16))),
    (lambda x, i: x[i + 1, i * 2 - 5], (Y, np.array([[0], [2]]))),  # negative, counted from the end
    (lambda x, i: np.take(x, (i % 5).astype(np.uint8), axis=1), (X, np.arange(-6, 6, dtype=np.int32))),
    (lambda x, i: x[..., i.astype(np.int8) - 3], (X, np.array([0, 5, 8], np.uint16))),
    (lambda x, i: x[1][i[::-1]], (X, np.array([4, 0, 3]))),  # a view of an argument is not its elements
    (lambda x, i: x[i[:0] + 1], (X, np.array([4, 0, 3]))),  # no index at all: nothing to check
], ids=["argmax", "argmin-axis", "two-arrays-negative", "take-uint8", "int8-negative", "reversed", "empty"])
def test_computed_indices_gather_like_numpy(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("ids,bad", [(np.array([0, 2, 1]), 3), (np.array([0, -5, 1]), -4)])
def test_an_out_of_range_computed_index_raises_numpys_index_error_naming_the_line(ids, bad):
    f = jit(lambda x, i: x[i + 1])
    table = np.arange(3.0)
    with pytest.raises(IndexError, match=f"index {bad} is out of bounds for axis 0 with size 3"):
        table[ids + 1]  # the independent source of the behaviour
    with pytest.raises(IndexError, match=rf"index {bad} is out of bounds for axis 0 with size 3 \(an index computed "
                       r"in the kernel, used at .*test_compiler_indexing.py:\d+; checked as the kernel ran\)"):
        f(table, ids)
    assert_same(f(table, np.array([1, -4, 0])), table[np.array([1, -4, 0]) + 1])  # the same kernel, in range


def test_an_index_out_of_range_for_its_dtype_is_checked_without_overflow():
    """int8 indices against an axis of 300: ``-300`` does not fit int8, so only the upper bound can fail."""
    table = np.arange(300, dtype=np.int64)
    f = jit(lambda t, i: t[(i * 3).astype(np.int8)])
    ids = np.array([-42, 40, 9], np.int8)
    assert_same(f(table, ids), table[(ids * 3).astype(np.int8)])
    assert len(f.lower(table, ids).out_specs) == 1  # nothing to check: no report comes back
    g = jit(lambda t, i: t[(i * 2).astype(np.uint16)])
    with pytest.raises(IndexError, match="index 400 is out of bounds for axis 0 with size 300"):
        g(table, np.array([7, 200], np.uint16))


def test_computed_indices_in_build_only_and_the_per_op_diagnosis():
    from compiler import build_only
    from compiler.diagnose import localize
    f = jit(lambda x, y: x[np.argmax(y, axis=1)] * 2)
    y = np.array([[0.0, 9.0, 1.0], [4.0, 1.0, 2.0]])
    with build_only():  # nothing ran: the check reads as passed and the result is zeros
        assert_same(f(X[0], y), np.zeros((2, 6), np.float32))
    assert localize(lambda x, y: x[np.argmax(y, axis=1)] * 2, (X[0], y)) is None


def test_a_computed_index_outside_a_traced_function_is_refused():
    """Graph building without a trace (no kernel result is read back) keeps the old refusal."""
    from compiler import primitives as P
    from compiler.graph import input_node
    table, ids = input_node(0, "t", (3,), np.float32), input_node(1, "i", (2,), np.int64)
    with pytest.raises(NotImplementedError, match="computed outside a traced function"):
        P.gather(table, [P.elementwise("add", [ids, ids])], 0)


EMPTY = np.zeros((0, 1), np.int64)  # broadcast with any index array, no index at all


@pytest.mark.parametrize("fn,args", [
    (lambda x, e, i: x[e, :, i], (X, EMPTY, np.array([5, 0, 9]))),  # argument indices
    (lambda x, e, i: x[e, :, i * 2], (X, EMPTY, np.array([5, 0, 9]))),  # computed
    (lambda x, e, i: x[e, :, i + 1], (X, EMPTY, np.array([-9, 0, 9], np.int8))),
    (lambda x, e: x[e, :, np.array([5, 0, 9])], (X, EMPTY)),  # constant
    (lambda x, i: x[np.zeros((0, 1), np.int64), 1, i * 3], (X, np.array([7, 1]))),
], ids=["argument", "computed", "computed-int8", "constant", "constant-empty"])
def test_indices_broadcast_to_no_index_are_never_out_of_range(fn, args):
    """NumPy bounds-checks the broadcast index arrays: when they hold no element, nothing is out of range."""
    check(fn, *args)


def test_a_zero_d_index_broadcast_with_an_empty_one_is_still_checked():
    """A 0-d index array is an integer index to NumPy, checked whatever the other index arrays."""
    table = X[0]
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 1 with size 6"):
        table[EMPTY, np.argmax(np.arange(4)) + 6]  # the independent source of the behaviour
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 1 with size 6"):
        jit(lambda t, e, y: t[e, np.argmax(y) + 6])(table, EMPTY, np.arange(4))
    check(lambda t, e, y: t[e, np.argmax(y) + 2], table, EMPTY, np.arange(4))


@pytest.mark.parametrize("fn", [
    lambda t, y: t[[np.argmax(y), np.argmin(y)]],
    lambda t, y: t[[np.argmax(y), 0, -1]],
    lambda t, y: t[:, [[np.argmax(y), 1], [2, np.argmin(y)]]],
    lambda t, y: t[[np.argmax(y)], [np.argmin(y)]],
], ids=["two", "with-ints", "nested", "one-per-axis"])
def test_a_list_of_traced_indices_is_an_index_array_as_in_numpy(fn):
    check(fn, np.arange(30.0).reshape(5, 6), np.array([3.0, 9.0, 1.0, 4.0]))


def test_integer_array_indexing_is_laid_out_as_numpys_from_fortran_ordered_indices():
    """With no axis of the operand kept, NumPy's result follows its iterator over the index arrays (an F-ordered
    index gives an F-ordered result); with kept axes, the index axes are C-ordered. A constant index array is
    modelled as it lies, as an argument is."""
    x = np.arange(20.0).reshape(4, 5)
    index = np.asfortranarray(np.array([[0, 1, 2], [3, 2, 1], [1, 1, 0]]))
    for fn in [lambda a, i: a.ravel()[i], lambda a, i: a[i, i], lambda a, i: a[i], lambda a, i: a[:, i],
               lambda a, i: a[i.T], lambda a, i: a.ravel()[index] + 0 * i[0, 0]]:
        want, got = fn(x, index), jit(fn)(x, index)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype and got.strides == want.strides


@pytest.mark.parametrize("key", [
    True, False, np.True_, np.array(False), (True, 0), (False, 0), (0, True, 1), (True, Ellipsis, True),
    (True, [0, 1]), ([0, 1], True), (True, slice(None), [1, 0]), (None, True, slice(1, None)),
    (True, np.array([[True, False], [False, True], [True, True]])),
    (slice(None, None, -1), True, np.array([[0], [1]])),
], ids=lambda key: " ".join(repr(key).split()))
def test_a_boolean_scalar_index_is_an_index_of_one_or_no_position_on_a_new_axis(key):
    """NumPy reads x[True] as x[None][[0]] and x[False] as x[None][[]]: a copy (an advanced index), which
    combines with the other indices as an index array does -- and is laid out as NumPy lays it out."""
    x = np.arange(24.0).reshape(3, 2, 4).transpose(1, 0, 2)

    def indexed_then_written(a):
        y = a.transpose(1, 0, 2)[key]
        copy = y * 1
        y[...] = -1  # a copy: the array is unchanged
        return copy, a * 1

    want, got = indexed_then_written(x), jit(indexed_then_written)(x)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype and g.strides == w.strides
    with pytest.raises(IndexError, match="array is 3-dimensional, but 4 were indexed"):
        jit(lambda a: a[True, 0, 0, 0, 0])(x)


TRACED_POSITIONS = {
    "one-hot rows: out[np.arange(n), labels] = 1": (
        lambda x, i: (lambda o: (o.__setitem__((np.arange(3), i[:3] % 4), 1), o)[1])(np.zeros_like(x))),
    "a repeated position takes the last value (NumPy's order)": (
        lambda x, i: (lambda y: (y.__setitem__(i % 3, np.arange(i.size)[:, None] * 10.0), y)[1])(x * 1)),
    "negative positions count from the end, beside a slice and a new axis": (
        lambda x, i: (lambda y: (y.__setitem__((slice(1, None), None, -1 - i[:2] % 4), -x[0, :1]), y)[1])(x * 1)),
    "np.argmax's NumPy integer, a float value into an int array (setitem's conversion)": (
        lambda x, i: (lambda y: (y.__setitem__((np.argmax(x[:, 0]), np.argmin(x[0])), x[0, 1] * 2.75), y)[1])(
            x.astype(np.int16))),
    "a list holding traced positions, and += (a gather, then the assignment)": (
        lambda x, i: (lambda y: (y.__setitem__([i[0] % 3, 2], 7.5), y.__setitem__(i[1:3] % 3, y[i[1:3] % 3] + 1),
                                 y)[2])(x * 1)),
    "x.flat[i] = v: flat positions, the value repeated cyclically, into a transposed copy": (
        lambda x, i: (lambda y: (y.flat.__setitem__(i, [7.0, -1.5]), y.flat.__setitem__(np.argmax(x), 0.25), y)[2])(
            x.T * 1)),
    "x.flat[mask] = v, a traced mask: the selected elements take the values cyclically, in C order": (
        lambda x, i: (lambda y: (y.flat.__setitem__(np.ravel(x > 0), [7.0, -1.5, 2.0]),
                                 y.T.flat.__setitem__(np.ravel(x.T < -3), 9), y)[2])(x * 1)),
    "a constant mask beside traced positions (NumPy's nonzero of it; its shape checked as NumPy checks it)": (
        lambda x, i: (lambda y: (y.__setitem__((i[:2] % 3, np.array([True, False, True, False])), -1.0),
                                 y[i[:1] % 3, np.array([False, True, True, True])] * 2, y)[1:])(x * 1)),
    "through a view: the array sees it": (
        lambda x, i: (lambda y: (y[1].__setitem__(i[:2] % 4, -5.0), y)[1])(x * 1)),
    "np.put_along_axis at np.argmax(..., keepdims=True), and along axis=None": (
        lambda x, i: (lambda y, z: (np.put_along_axis(y, np.argmax(y, axis=1, keepdims=True), -9.0, axis=1),
                                    np.put_along_axis(z, i[:2] % 12, x[0, :2], axis=None), y, z)[2:])(x * 1, x * 1)),
}


@pytest.mark.parametrize("name", list(TRACED_POSITIONS))
def test_assignment_at_traced_positions_is_numpys(name):
    """Each element takes the last value NumPy's key assigns to it (C order of the indexing), else keeps its own."""
    fn = TRACED_POSITIONS[name]
    x, i = np.arange(12.0).reshape(3, 4) * 1.5 - 4, np.array([5, -2, 7, 5, 0])
    want, got = fn(x, i), jit(fn)(x, i)
    for w, g in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_np_put_at_traced_positions_is_numpys(mode):
    """The flat positions take the values repeated cyclically, the last write winning; out of range: NumPy's
    IndexError as the kernel runs ('raise'), modulo the size ('wrap'), into the array ('clip')."""
    def fn(x, i):
        y, z = x * 1, x.T.astype(np.int16)
        np.put(y, i, [1.5, -2.5], mode=mode)
        np.put(z, i[::-1], x[0, :3] * 2.5, mode=mode)
        return y, z
    x = np.arange(12.0).reshape(3, 4) * 1.5 - 4
    for i in (np.array([5, -2, 7, 5, 0]), np.array([[11], [3]])):
        for got, want in zip(jit(fn)(x, i), fn(x, i)):
            np.testing.assert_array_equal(got, want)
            assert got.dtype == want.dtype
    i = np.array([3, 12, -13])
    if mode == "raise":
        with pytest.raises(IndexError, match="index 12 is out of bounds for axis 0 with size 12"):
            jit(fn)(x, i)
    else:
        for got, want in zip(jit(fn)(x, i), fn(x, i)):
            np.testing.assert_array_equal(got, want)


def test_assignment_at_a_traced_position_out_of_range_is_numpys_index_error_as_the_kernel_runs():
    def fn(x, i):
        y = x * 1
        y[i] = 0.0
        return y
    with pytest.raises(IndexError):
        fn(np.zeros(4), np.array([1, 4]))
    with pytest.raises(IndexError, match="argument i: index 4 is out of range for an axis of size 4"):
        jit(fn)(np.zeros(4), np.array([1, 4]))
    np.testing.assert_array_equal(jit(fn)(np.ones(4), np.array([1, -1])), [1.0, 0.0, 1.0, 0.0])


def _masked(x, mask_of, value, dtype=None):
    y = x.astype(dtype) if dtype else x * 1
    y[mask_of(y)] = value(y) if callable(value) else value
    return y


_PICKED = np.array([[1, 0, 0, 1, 1], [0, 1, 0, 0, 1]], bool)  # 5 of X's 10 rows, fixed: a known count
MASKED_ASSIGNMENTS = {
    "every element, a scalar": lambda a: _masked(a, lambda y: y > 3, -1.5),
    "every element, one value per selected element": lambda a: _masked(
        a, lambda y: (y % 2 == 0) & (y > 0), lambda y: np.arange(11.0) * -1),
    "every element, a one-element value": lambda a: _masked(a, lambda y: y < 0, np.array([9.0])),
    "rows, a traced row broadcast to each": lambda a: _masked(a, lambda y: y[:, :, 0] > 3, lambda y: y[0, 0] * 10),
    "rows, a column broadcast along them": lambda a: _masked(a, lambda y: y[:, 0, 0] > 0, np.ones((5, 1)) * 4),
    "rows, leading unit axes dropped": lambda a: _masked(a, lambda y: y[:, :, 1] < 8, np.full((1, 1, 1, 6), 2.0)),
    "rows, one row per selected row in C order": lambda a: _masked(
        a, lambda y: np.zeros_like(y[:, :, 0], dtype=bool) | _PICKED, lambda y: y[1, :, ::-1] * 100),
    "an int16 array, float values truncated": lambda a: _masked(
        a, lambda y: y[:, :, 2] > 5, lambda y: y[0, 3].astype(np.float32) * 1.7, np.int16),
    "a uint8 array, a Python int in range": lambda a: _masked(a, lambda y: y % 3 == 1, 255, np.uint8),
    "a 0-d mask": lambda a: _masked(a, lambda y: y.sum() > 0, np.arange(6.0)),
    "a one-element key tuple": lambda a: _masked(a, lambda y: (y > 3,), 0.0),
    "the mask and an ellipsis (no longer NumPy's path for a lone mask: rows broadcast)": lambda a: _masked(
        a, lambda y: (y > 3, ...), np.ones((1, 1)) * 8),
    "the mask and whole slices": lambda a: _masked(a, lambda y: (y[:, :, 0] > 0, slice(None)), np.arange(6.0)),
    "nothing selected, no value rows": lambda a: _masked(a, lambda y: y > 100, np.zeros(0)),
}


@pytest.mark.parametrize("name", list(MASKED_ASSIGNMENTS))
def test_assignment_through_a_traced_boolean_mask_is_numpys(name):
    # NumPy's x[mask] = v: the value broadcast to each selected element, or its rows taken by them in C order
    fn = MASKED_ASSIGNMENTS[name]
    check_laid_out(fn, X)


def test_a_masked_assignment_through_a_view_is_seen_in_the_array():
    def fn(a):
        y = a.T * 1
        view = y[1:]
        view[view > 0] = -3.0
        return y, view
    check(fn, X[0])


def test_a_masked_assignment_of_the_wrong_number_of_values_is_numpys_error_as_the_kernel_runs():
    every = lambda a: _masked(a, lambda y: y > 3, np.arange(5.0))  # noqa: E731
    rows = lambda a: _masked(a, lambda y: y[:, :, 0] > 0, np.ones((3, 6)))  # noqa: E731
    fits = X.copy()
    fits[fits <= 20] = 0  # five elements left above 3
    assert_same(jit(every)(fits), every(fits))
    with pytest.raises(ValueError, match=r"cannot assign 5 input values to the 39 output values where the mask is true \("
                                         r"x\[mask\] = v at .*test_compiler_indexing.py:\d+, checked as the kernel ran\)"):
        jit(every)(X)
    with pytest.raises(ValueError, match=r"cannot assign 5 input values to the 39 output values"):
        every(X)
    with pytest.raises(ValueError, match=r"value array of shape \(3,6\) could not be broadcast to indexing result of shape "
                                         r"\(7,6\) \(x\[mask\] = v at"):
        jit(rows)(X)
    with pytest.raises(ValueError, match=r"value array of shape \(3,6\) could not be broadcast to indexing result of shape \(7,6\)"):
        rows(X)


@pytest.mark.parametrize("fn,error", [
    (lambda a: _masked(a, lambda y: y > 3, -1, np.uint8), OverflowError),  # NumPy's conversion of a Python int
    (lambda a: _masked(a, lambda y: y > 3, np.nan, np.int32), ValueError),
    (lambda a: _masked(a, lambda y: y[0, :, 0] > 3, 0.0), IndexError),  # the mask's shape is not x's leading axes'
    (lambda a: _masked(a, lambda y: y > 3, np.ones((1, 4))), TypeError),  # a value of 2 dimensions for every axis
    (lambda a: _masked(a, lambda y: y[:, :, 0] > 3, np.ones(4)), ValueError),  # fits no selected row
    (lambda a: _masked(a, lambda y: (y > 3, ...), np.ones(5)), ValueError),  # a value row per element, 5 for 39
    (lambda a: _masked(a, lambda y: (y > 3, slice(None)), 0.0), IndexError),  # too many indices
], ids=["uint8-negative", "int-nan", "mask-shape", "value-dimensions", "value-row-shape", "ellipsis-rows",
        "too-many-indices"])
def test_a_masked_assignment_numpy_refuses_is_refused_with_its_exception(fn, error):
    with pytest.raises(error):
        fn(X)
    with pytest.raises(error):
        jit(fn)(X)


MASKED_UPDATES = {
    "+= a scalar": lambda a: _masked_update(a, "iadd", lambda y: y > 3, 1.5),
    "-= a row broadcast to each selected row": lambda a: _masked_update(a, "isub", lambda y: y[:, :, 0] > 0, np.arange(6.0)),
    "*= one row per selected row": lambda a: _masked_update(a, "imul", lambda y: np.zeros_like(y[:, :, 0], dtype=bool)
                                                            | _PICKED, np.arange(5.0)[:, None] - 2),
    "//= into int16": lambda a: _masked_update(a, "ifloordiv", lambda y: y > 2, 3, np.int16),
    "**= of negative elements": lambda a: _masked_update(a, "ipow", lambda y: y < 0, 2),
    "&= into uint8, another array's mask": lambda a: _masked_update(a, "iand", lambda y: y % 3 == 0, np.uint8(6), np.uint8),
    "<<= through the mask and an ellipsis": lambda a: _masked_update(a, "ilshift", lambda y: (y > 5, ...), 2, np.int32),
    "+= a traced scalar, every element one value": lambda a: _masked_update(a, "iadd", lambda y: y > 0, lambda y: y[0, 0, 0]),
    "+= one value per selected element": lambda a: _masked_update(a, "iadd", lambda y: (y % 2 == 0) & (y > 0),
                                                                  np.arange(11.0) * 10),
}


def _masked_update(a, op, mask_of, v, dtype=None):
    y = a.astype(dtype) if dtype else a * 1
    key = mask_of(y)
    y[key] = getattr(operator, op)(y[key], v(y) if callable(v) else v)  # what Python runs for y[key] op= v
    return y


@pytest.mark.parametrize("name", list(MASKED_UPDATES))
def test_augmented_assignment_through_a_traced_boolean_mask_is_numpys(name):
    # Python runs y[mask] op= v as a read of y[mask], the operator in place, and a write of the same key back
    fn = MASKED_UPDATES[name]
    check_laid_out(fn, X)


def test_a_read_through_a_traced_mask_is_refused_where_it_is_used_naming_its_line():
    def total(a):
        picked = a[a[:, 0, 0] > -8]
        return picked.sum(axis=1)  # (a selection of three axes: reduced over its first axis and others only)

    def written_elsewhere(a):
        y, z = a * 1, a * 2
        picked = y[y > 0]
        picked += 1
        z[y > 0] = picked
        return z

    for fn in (total, lambda a: a[a > 0], lambda a: np.median(a[a > 0])):
        with pytest.raises(NotImplementedError, match=r"boolean mask indexing \(x\[mask\] at .*test_compiler_indexing.py:"
                                                      r"\d+\) has a data-dependent shape"):
            jit(fn)(X)
    with pytest.raises(NotImplementedError, match=r"\(y\[mask\] read at .*test_compiler_indexing.py:\d+\) through two "
                                                  "masks"):
        jit(written_elsewhere)(X)


def _copied(a, mask_of, source_of, dtype=None):
    z = (a * 0).astype(dtype) if dtype else a * 0
    m = mask_of(a)
    z[m] = source_of(a)[m]  # NumPy copies one selection into the other: a row per selected element
    return z


@pytest.mark.parametrize("fn", [
    lambda a: _copied(a, lambda x: x > 3, lambda x: x * 2),
    lambda a: _copied(a, lambda x: x[:, :, 0] > -4, lambda x: x * 1.5, np.int8),  # cast as assignment casts
    lambda a: _copied(a, lambda x: x[:, :, 0] > -4, lambda x: x[:, :, :1]),  # broadcast along the kept axis
    lambda a: _copied(a[0], lambda x: x[:, 0] > -4, lambda x: x[::-1] + 1),
], ids=["every-element", "int8", "broadcast-axis", "reversed"])
def test_a_selection_assigned_through_the_same_mask_is_numpys(fn):
    check_laid_out(fn, X)


def test_selections_through_other_masks_are_refused_and_a_mask_of_the_wrong_shape_at_the_read():
    def two_masks(a):
        z = a * 1
        z[a > 0] = a[a > 0]
        return z

    two_masks(X)
    with pytest.raises(NotImplementedError, match="through two masks .* the same mask object"):
        jit(two_masks)(X)
    with pytest.raises(ValueError, match=r"value array of shape \(2,2\) could not be broadcast"):  # the stand-in's count
        jit(lambda a: _copied(a, lambda x: x[:, :, 0] > -4, lambda x: x[:, :, :2]))(X)
    with pytest.raises(IndexError, match="boolean index did not match indexed array along axis 0"):
        X[X[0] > 0]
    with pytest.raises(IndexError, match="boolean index did not match indexed array along axis 0"):
        jit(lambda a: a[a[0] > 0])(X)


@pytest.mark.parametrize("key", [
    [True, False], np.array([True, False]), (slice(None), np.array([True, False, True])),
    (np.array([[True, False, True], [False, True, False]]),), (slice(None), slice(None), [True, False, True, True]),
    ([0, 1], np.array([False, True, True])), (Ellipsis, np.array([True, True, False, True]), None),
    (np.array([[True, False, True], [False, False, False]]), [1, 3]),
], ids=repr)
def test_a_mask_known_at_trace_time_reads_as_numpy_reads_it(key):
    # NumPy reads a mask as the integer arrays of its nonzero positions (x[m] is x[m.nonzero()], strides too)
    x = np.arange(24.0).reshape(2, 3, 4) - 7
    check_laid_out(lambda a: a[key], x)
    check(lambda a: (lambda y: (y.__setitem__(key, y[key] * 10), y)[1])(a * 1), x)  # read, then written back


def test_a_constant_mask_of_the_wrong_shape_is_numpys_index_error():
    with pytest.raises(IndexError, match="boolean index did not match indexed array along axis 1"):
        jit(lambda a: a[:, np.array([True, False])])(np.zeros((2, 3)))


def _set_through(key_of, value_of):
    def fn(a):
        y = a * 1
        y[key_of(a)] = value_of(a)
        return y
    return fn


def _counted(a, pattern):
    """A traced mask whose count the test knows: ``pattern`` made a kernel value."""
    return (np.zeros_like(a, shape=np.shape(pattern)) + np.asarray(pattern)) > 0


INNER_MASKS = {
    "x[:, m] = scalar": _set_through(lambda a: (slice(None), a[0, :, 0] > 0), lambda a: -1.0),
    "x[..., m] = a row of the trailing axes": _set_through(lambda a: (Ellipsis, a[0, 0] > -7), lambda a: a[1, 2, :1]),
    "x[1:, m, ::-1] = broadcast over the selected": _set_through(lambda a: (slice(1, None), a[0, :, 0] > 0, slice(None, None, -1)),
                                                                 lambda a: a[0, :1, :] * 10),
    "x[:, m] of two axes": _set_through(lambda a: (slice(None), a[0] > 0), lambda a: 7.0),
    "x[:, m] = one row per selected element (the value's middle axis)": _set_through(
        lambda a: (slice(None), _counted(a, [1, 0, 1, 0, 0])), lambda a: np.arange(24.0).reshape(1, 2, 2, 6) - a[0, :2]),
    "x[..., m] = one value per selected element, into int16": _set_through(
        lambda a: (Ellipsis, _counted(a, [0, 1, 1, 1, 0, 0])), lambda a: np.array([1.5, -2.5, 300.25])),
}


def _updated_through(key_of, update):
    def fn(a):
        y, key = a * 1, key_of(a)  # one key, so one mask object for the read and the write
        update(y, key, a)
        return y
    return fn


INNER_MASKS.update({
    "x[:, m] *= 2 (a read, the operator in place, a write of the same key)": _updated_through(
        lambda a: (slice(None), a[0, :, 0] > -6), lambda y, k, a: y.__setitem__(k, y[k].__imul__(2))),
    "x[..., m] = f(x[..., m]) + a row of the axes after the mask (none)": _updated_through(
        lambda a: (Ellipsis, a[1, 0] > -2), lambda y, k, a: y.__setitem__(k, np.abs(y[k]) // 2 - a[0, 0, 0])),
    "x[::-1, m, 1:] = z[::-1, m, 1:] - x[::-1, m, 1:]": _updated_through(
        lambda a: (slice(None, None, -1), a[0, :, 0] > -6, slice(1, None)),
        lambda y, k, a: y.__setitem__(k, (a * 3)[k] - y[k])),
    "x[:, m] = f(x[:, m]) * an array reaching the selected elements": _updated_through(
        lambda a: (slice(None), _counted(a, [0, 1, 1, 0, 1])), lambda y, k, a: y.__setitem__(k, y[k] * a[:, :3, :])),
    # an integer beside a mask is an index array to NumPy: next to the mask the selection stands where they do, apart
    # from it (a slice between) it comes first
    "x[0, m] = scalar": _set_through(lambda a: (0, a[0, :, 0] > 0), lambda a: -1.0),
    "x[:, m, -1] = one value per selected element": _set_through(
        lambda a: (slice(None), _counted(a, [1, 1, 0, 0, 1]), -1), lambda a: np.array([[10.0, 20.0, 30.0]])),
    "x[1, :, m] = one row per selected element (the selection first)": _set_through(
        lambda a: (1, slice(None), _counted(a, [0, 1, 0, 0, 1, 0])), lambda a: np.array([[100.0], [200.0]]) + a[0, :, 0]),
    "x[0, ..., m] *= 2 (an ellipsis apart: the selection first)": _updated_through(
        lambda a: (0, Ellipsis, a[1, 1] > -2), lambda y, k, a: y.__setitem__(k, y[k].__imul__(2))),
    "x[:, 2, m] = x[:, 2, m] - an array reaching the selected elements": _updated_through(
        lambda a: (slice(None), 2, _counted(a, [1, 0, 0, 1, 1, 0])), lambda y, k, a: y.__setitem__(k, y[k] - a[:, 0, :3])),
})


@pytest.mark.parametrize("name", list(INNER_MASKS))
def test_a_traced_mask_beside_slices_and_an_ellipsis_assigns_as_numpy(name):
    """x[:, mask] = v: the mask's axes moved to the front of the sliced view, the value's row axis alike."""
    fn = INNER_MASKS[name]
    x = X.astype(np.int16) if "int16" in name else X
    check(fn, x)


def test_an_update_through_an_inner_mask_of_one_element_checks_one_selected_element():
    # (found by parity fuzz: NumPy's check on stand-ins took two selected elements where the mask has one)
    def fn(a):
        y, key = a * 1, (slice(None), a[0] < 2)
        y[key] -= a[0, 0]
        return y

    check(fn, np.full((1, 1), 70, dtype=np.int8))


def test_a_traced_mask_beside_other_indices_raises_numpys_errors_or_is_refused_by_name():
    too_many = _set_through(lambda a: (slice(None), _counted(a, [1, 0, 1, 0, 0])), lambda a: np.ones((3, 6)))
    for fn, error, match in (
            (too_many, ValueError, r"value array of shape \(3,6\) could not be broadcast to indexing result of shape "
                                   r"\(2,2,6\) \(x\[mask\] = v .*checked as the kernel ran"),
            (_set_through(lambda a: (slice(None), a[0, :2, 0] > 0), lambda a: 0), IndexError,
             "boolean index did not match indexed array along axis 1"),
            (_set_through(lambda a: (np.array([0, 1]), a[0, :, 0] > 0), lambda a: 0), NotImplementedError,
             r"traced boolean mask beside index arrays or new axes \(x\[i, mask\] = v\)")):
        if error is not NotImplementedError:
            with pytest.raises(error):
                fn(X)
        with pytest.raises(error, match=match):
            jit(fn)(X)
    with pytest.raises(NotImplementedError, match="boolean mask indexing .* has a data-dependent shape"):
        jit(lambda a: a[:, a[0, :, 0] > 0])(X)
    def other_lead(a):
        y, m = a.transpose(1, 0, 2) * 1, a[0, :, 0] > 0
        y[m] = a[:, m]  # (NumPy: (2, count, 6) into (count, 2, 6))
        return y

    with pytest.raises(NotImplementedError, match="with 0 axes before the mask in the assignment and 1 in the read"):
        jit(other_lead)(X)


SELECTION_REDUCTIONS = {
    "sum": lambda s: s.sum(), "np.sum": lambda s: np.sum(s), "prod": lambda s: s.prod(),
    "max": lambda s: s.max(), "np.min": lambda s: np.min(s), "any": lambda s: s.any(), "np.all": lambda s: np.all(s),
    "mean": lambda s: s.mean(), "np.var ddof=1": lambda s: np.var(s, ddof=1), "std": lambda s: s.std(),
    "sum initial= keepdims": lambda s: s.sum(initial=2, keepdims=True), "mean float64": lambda s: s.mean(dtype=np.float64),
    "max initial= over axis 0 of a vector": lambda s: np.max(s, axis=0, initial=1) if s.ndim == 1 else np.max(s, initial=1),
    "sum of a ufunc of it": lambda s: np.sum(s * 2),
    "sum over the first axis": lambda s: s.sum(axis=0), "np.var over the first and last axes ddof=1 keepdims":
        lambda s: np.var(s, axis=(0, -1) if s.ndim > 1 else 0, ddof=1, keepdims=True), "np.max over the first axis": lambda s: np.max(s, axis=0),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint32, np.bool_], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(SELECTION_REDUCTIONS))
def test_a_reduction_of_a_traced_selection_over_its_first_axis_is_numpys(name, dtype):
    """x[m].sum(): NumPy reduces the selection, a fresh C array whose length the data decide; the compiler reduces
    the selection gathered to the front of a fresh array, the rest masked out (a prefix, which NumPy's masked loop
    takes as one run: the same pairwise tree). 9,000 selected float32 elements, a mask over the leading axes, and
    none selected."""
    reduce = SELECTION_REDUCTIONS[name]
    big = np.random.default_rng(4).normal(size=(150, 100)).astype(np.float32) * 3
    for x, mask in ((big.ravel()[:12000], lambda a: a > -0.3), (big[:6], lambda a: a[:, 0] > 0),
                    (X, lambda a: a > 1e9)):
        x = x.astype(dtype)
        fn = lambda a: reduce(a[mask(a.astype(np.float32))])  # noqa: E731
        if name in ("max", "np.min", "np.max over the first axis") and not mask(x.astype(np.float32)).any():
            with pytest.raises(ValueError, match="zero-size array to reduction operation"):
                fn(x)
            with pytest.raises(ValueError, match=r"zero-size array to reduction operation .*checked as the kernel ran"):
                jit(fn)(x)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # (the mean of no element)
            check(fn, x)


def test_a_ufunc_of_a_selection_and_a_value_of_no_rows_is_numpys():
    # (found by the GPU emulator's registry sweep: a value of zero rows was broadcast to one row)
    def times_nothing(a, threshold):
        y = a * 1
        m = a[:, 0, 0] > threshold
        y[m] = y[m] + np.ones((0, 1, 1), np.float32)
        return y

    check(lambda a: times_nothing(a, 100), X)  # nothing selected: NumPy's empty selection takes it
    with pytest.raises(ValueError, match="operands could not be broadcast together"):
        times_nothing(X, -100)
    with pytest.raises(ValueError, match=r"operands could not be broadcast together .*checked as the kernel ran"):
        jit(lambda a: times_nothing(a, -100))(X)


def test_other_reductions_of_a_traced_selection_are_refused_by_name():
    refusals = (lambda a: a[a[:, 0, 0] > -7].sum(axis=1), lambda a: a[:, a[0, :, 0] > 0].sum(),
                lambda a: a[:, :0][a[:, 0, 0] > -7].max(axis=0),
                lambda a: a.T[a.T[:, 0, 0] > -7].sum(),  # (NumPy lays x.T[m] out after x.T: its sum follows that)
                lambda a: a[a > 0].sum(out=np.zeros((), np.float32)), lambda a: np.median(a[a > 0]))
    check(lambda a: a[:, :0][a[:, 0, 0] > -7].sum(axis=0), X)  # rows of no element: a sum is the identity's
    for fn in refusals:
        with pytest.raises(NotImplementedError, match=r"reducing a selection over its first axis \(x\[m\].sum\(\)|"
                                                      r"whose rows have no element|lays out otherwise than C"):
            jit(fn)(X)


def test_an_augmented_assignment_through_a_mask_refuses_what_numpy_refuses():
    into_int = lambda a: _masked_update(a, "iadd", lambda y: y > 0, 1.5, np.int16)  # noqa: E731 - 'same_kind'
    rows = lambda a: _masked_update(a, "imul", lambda y: y[:, :, 0] > 0, np.ones((2, 1)))  # noqa: E731 - 7 rows selected
    for fn, error in ((into_int, TypeError), (rows, ValueError)):
        with pytest.raises(error):
            fn(X)
        with pytest.raises(error):
            jit(fn)(X)


def _through(a, mask_of, expression, dtype=None):
    z = (a * 0).astype(dtype) if dtype else a * 0
    m = mask_of(a)
    z[m] = expression(a, m)
    return z


SELECTION_EXPRESSIONS = {
    "ufuncs and operators of selections": lambda a: _through(a, lambda x: x > 0, lambda x, m: np.sqrt(x[m] * 0.1) * 2 + x[m]),
    "divmod's two selections": lambda a: _through(a, lambda x: x > 0, lambda x, m: (lambda q, r: q * 10 + r)(*divmod(x[m], 3))),
    "frexp's exponents": lambda a: _through(a, lambda x: x > 0, lambda x, m: np.frexp(x[m])[1]),
    "a row broadcast to each selected row": lambda a: _through(a, lambda x: x[:, :, 0] > 0, lambda x, m: x[0, 0] * x[m]),
    "a NumPy scalar, reflected": lambda a: _through(a, lambda x: x > 0, lambda x, m: np.float32(2) * x[m]),
    "integer powers, unselected exponents negative": lambda a: _through(
        a, lambda x: x > 0, lambda x, m: 2 ** x.astype(np.int64)[m], np.int64),
    "one row per selected row": lambda a: _through(
        a, lambda x: x[:, :, 0] > -4, lambda x, m: x[m] + np.arange(6.0).reshape(1, 6) * np.arange(8.0)[:, None]),
    "a unary operator": lambda a: _through(a, lambda x: x > 0, lambda x, m: -x[m]),
    "in place, twice": lambda a: _through(a, lambda x: x > 0, lambda x, m: (lambda s: (s.__imul__(3), s)[1])(x[m]) + 1),
    "a ufunc's dtype=": lambda a: _through(a, lambda x: x > 0, lambda x, m: np.add(x[m], 1, dtype=np.float32)),
    "into float32, divided": lambda a: _through(a, lambda x: x > 0, lambda x, m: x[m] / 3, np.float32),
    "a comparison into a bool array": lambda a: _through(a > 100, lambda x: x > -3, lambda x, m: x[m] > 2),
    "astype, by the selection's dtype and ndim": lambda a: _through(
        a, lambda x: x[:, :, 0] > 0, lambda x, m: x[m].astype(np.int16) * x[m].ndim + (x[m].dtype == np.float32)),
}


@pytest.mark.parametrize("name", list(SELECTION_EXPRESSIONS))
def test_elementwise_functions_of_selections_assigned_through_their_mask_are_numpys(name):
    # NumPy computes on the selected elements; the kernel on the arrays they came from, written back where the mask holds
    fn = SELECTION_EXPRESSIONS[name]
    check_laid_out(fn, X)


def test_what_a_selection_cannot_do_is_refused():
    for fn in (lambda a: np.concatenate([a.ravel(), a[a > 0]]),
               lambda a: _through(a, lambda x: x > 0, lambda x, m: x[m] @ x[m]),
               lambda a: _through(a, lambda x: x > 0, lambda x, m: np.add(x[m], 1, out=x[m]))):
        with pytest.raises(NotImplementedError, match="boolean mask indexing .* has a data-dependent shape"):
            jit(fn)(X)
    with pytest.raises(NotImplementedError, match="a ufunc of selections through two masks"):
        jit(lambda a: _through(a, lambda x: x > 0, lambda x, m: x[m] + x[x > 0]))(X)
    whole = lambda a: _through(a, lambda x: x > 0, lambda x, m: x + x[m])  # noqa: E731 - (2,3,4) with (count,)
    with pytest.raises(ValueError, match="operands could not be broadcast together"):
        whole(X)
    with pytest.raises(ValueError, match="operands could not be broadcast together"):
        jit(whole)(X)


def test_a_selection_keeps_the_values_it_read_and_refuses_a_mask_written_to_since():
    def updated_after(a):  # NumPy's selection is a copy: y's later update does not reach it
        y = a * 1
        m = y > 3
        s = y[m]
        y += 100
        y[m] = s * 2
        return y

    def mask_changed(a):
        y = a * 1
        m = y > 3
        s = y[m]
        m |= y < -3
        y[m] = s
        return y

    check(updated_after, X)
    with pytest.raises(NotImplementedError, match=r"or a mask written to since the read"):
        jit(mask_changed)(X)
