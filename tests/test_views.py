"""Shared memory, as NumPy has it: an update in place (``+=``, ``x[k] = v``, ``x[k] += v``,
``x.sort()``, a ufunc's ``out=``) shows in every view of the same memory, and an update of the memory shows in
every view; each compiled result is held to NumPy running the same function. A reshape or ravel is a
view or a copy as NumPy's strides make it (the layout model decides); views whose sharing the trace cannot
know (a reshape of a layout the model only guesses, np.broadcast_arrays') and writes into an argument are
refused by name; read-only views raise NumPy's error. The registry's ops are held
to NumPy's sharing: a result is a view of an operand exactly where NumPy's is."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from compiler import jit
from compiler import primitives as P
from compiler.jit import trace
from compiler.tracer import READ_ONLY, Tensor

sys.path.insert(0, str(Path(__file__).parent / "support"))
from registry_cases import leaves, registry_cases  # noqa: E402

X = np.arange(12.0).reshape(3, 4) - 4.5


def assert_same_as_numpy(fn, *args):
    want = fn(*[np.copy(a) for a in args])
    got = jit(fn)(*args)
    want, got = list(leaves(want)), list(leaves(got))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w), (type(g), type(w))
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_array_equal(g, w)


def augmented_item_assignment(x):
    y = x * 1
    y[1:] += x[:-1]       # a view, updated, then assigned back
    y[0] *= 3
    y[[0, 2], 1] -= 100   # a copy (advanced index), updated, then assigned back
    return y


def into_a_row_then_its_array(x):
    y = np.zeros_like(x)
    row = y[1]
    row[:] = x[0]
    y[1, ::-2] = 5.0      # the row sees it
    return y, row


def through_a_transpose(x):
    y = x + 0
    t = y.T
    t[0] -= 100
    return y, t


def in_a_loop(x):
    y = np.zeros_like(x)
    for i in range(x.shape[0]):
        y[i] += x[i] * i
    return y


def split_parts_share_their_array(x):
    y = x * 2
    a, b = np.split(y, 2, axis=1)
    a += b
    return y, a, b


def a_view_of_a_view(x):
    y = x * 1
    v = y[:, 1:]
    w = v.T[::-1]
    w[0] = -1.0
    y[0] += 10
    return y, v, w


def sorting_a_row_in_place(x):
    y = x * -1
    y[1].sort()
    return y


def an_element_is_a_copy(x):
    y = x * 1
    s = y[0, 1]
    y[0, 1] = 99.0
    return s, y


def squeezed_and_expanded(x):
    y = x * 1
    e = np.expand_dims(y, 0)
    q = np.squeeze(e)
    e[0, 0] += 1
    q[1] *= 2
    return y, e, q


def read_only_views_see_updates(x):
    y = x * 1
    d = np.diagonal(y)
    b = np.broadcast_to(y[0], (2, 4))
    e = np.einsum("ij->ji", y)
    y[0] += 100
    e[1] -= 7
    return d, b, e, y


def an_einsum_diagonal_is_writeable(x):
    y = x[:, :3] * 1
    d = np.einsum("ii->i", y)
    d += 1
    return y, d


def a_numpy_scalar_is_rebound(x):
    s = np.sum(x)
    t = s
    s += 1                # NumPy scalars are immutable: s is a new one, t the old
    e = x[0, 0]
    e += 2.5
    i = np.argmax(x)
    i += 0.5              # x = x + y for a scalar: int64 + float is float64, no same_kind cast
    return s, t, e, i


def views_of_a_numpy_scalar_are_of_a_fresh_array(x):
    s = (x * 1)[1, 2]     # an element: a NumPy scalar, a copy
    row = s[None]         # NumPy views a fresh 0-d array of it: writes never reach s
    row[0] = -7.0
    again = row[...]      # a view of that same fresh array sees the write
    flat = s.reshape(1)
    flat += 100.0
    return s, row, again, flat


def copying_a_view_onto_itself_is_nothing_to_do(x):
    y = x * 1
    b = np.broadcast_to(y, (2,) + y.shape)  # read-only
    np.copyto(b, b[::-1])  # the same memory (a zero-stride axis reversed): NumPy skips it, read-only or not
    d = np.diagonal(y)
    np.copyto(d, d)
    y[0] += 1
    return y, b, d


def a_fortran_reshape_of_a_filled_array_copies(x):
    y = x * 1
    y.fill(3.25)          # (its values a constant the trace folds; its layout still C's)
    copied = y.reshape((2, -1), order="F")  # NumPy copies a C array reshaped in Fortran's order here
    copied += 1.5
    viewed = y.reshape(-1, order="C")
    viewed[0] = 0.0
    return y, copied, viewed


def a_view_of_the_same_dtype_is_written_through(x):
    y = x * 1
    same = y.view(np.float64)  # the same elements: NumPy's view, written through both ways
    same[0] += 100.0
    y[1, 1] = -1.0
    plain = y.view()
    plain[2] *= 2
    return y, same, plain


def a_flip_and_a_stride(x):
    y = np.ones_like(x)
    f = np.flip(y, 1)
    f[0, :2] = x[0, :2]
    y[2, ::2] = -3.0
    return y, f, f[::2, 1::2]


def a_computed_row_of_a_fresh_array(x):
    y = x * 1
    y[1:3] += y[0:2]      # NumPy reads the value before it writes: no chain of sums
    return y


def a_reshape_sees_its_array_updated(x):
    y = x * 1
    flat = y.reshape(12)
    y[0] += 1
    return flat


def into_a_reshape(x):
    y = x * 1
    y.reshape(12)[0] = 1.0
    y.reshape(2, 6, order="F")[1] -= 100  # Fortran's index order: still a view of a C array
    return y


def a_reshape_of_a_reshape_and_its_rows(x):
    y = (x * 2).reshape(4, 3)
    z = y.reshape(2, 6)
    z[1] += 100
    y[0] -= 1
    return y, z


def reshapes_that_copy_and_that_do_not(x):
    strided = (x * 1)[:, ::2]          # (3, 2) with strides (4, 2)
    flat = strided.reshape(-1)         # a view: its rows are runs of stride 2
    flat[0] = 50.0
    pairs = strided.T.reshape(-1)      # a copy (no strides walk the transpose's rows): the update stays there
    pairs[1] = -50.0
    return strided, flat, pairs


def ravel_copies_where_reshape_would_not(x):
    y = x * 1
    strided = y[:, ::2]
    copied = strided.ravel()           # not C-contiguous: NumPy's flatten
    copied[0] = 7.0
    viewed = y.T.ravel("K")            # memory order of a transposed C array: a view
    viewed[1] = 8.0
    backwards = y[::-1].ravel("K")     # a negative stride: a copy
    backwards[2] = 9.0
    fortran = y.T.ravel("A")           # Fortran-contiguous: a view, read in Fortran's order
    fortran[3] = 10.0
    return y, strided, copied, viewed, backwards, fortran


def reshapes_told_to_copy_or_not(x):
    y = x * 1
    no_copy = np.reshape(y, (2, 6), copy=False)  # a view, as without copy=
    no_copy[0] += 10
    fresh = y.reshape(12, copy=True)             # a copy: the update stays there
    fresh[1] = -1
    fortran = y.T.reshape(2, 6, order="F", copy=True)
    fortran[0, 1] = -2
    return y, no_copy, fresh, fortran, fortran.sum(axis=0)


WRITE_THROUGH = [augmented_item_assignment, into_a_row_then_its_array, through_a_transpose, in_a_loop,
                 split_parts_share_their_array, a_view_of_a_view, sorting_a_row_in_place, an_element_is_a_copy,
                 squeezed_and_expanded, read_only_views_see_updates, an_einsum_diagonal_is_writeable,
                 a_numpy_scalar_is_rebound, views_of_a_numpy_scalar_are_of_a_fresh_array,
                 a_view_of_the_same_dtype_is_written_through, a_fortran_reshape_of_a_filled_array_copies,
                 copying_a_view_onto_itself_is_nothing_to_do,
                 a_flip_and_a_stride, a_computed_row_of_a_fresh_array,
                 a_reshape_sees_its_array_updated, into_a_reshape, a_reshape_of_a_reshape_and_its_rows,
                 reshapes_that_copy_and_that_do_not, ravel_copies_where_reshape_would_not,
                 reshapes_told_to_copy_or_not]


@pytest.mark.parametrize("fn", WRITE_THROUGH, ids=lambda f: f.__name__)
def test_updates_show_in_every_view_of_the_memory_as_in_numpy(fn):
    assert_same_as_numpy(fn, X)


def test_an_int8_array_updated_through_a_view_wraps_as_numpy():
    def fn(x):
        y = x.astype(np.int8)
        y[:, 1] += np.int8(100)
        y.T[2] *= 3
        return y
    assert_same_as_numpy(fn, np.arange(12).reshape(4, 3) * 20)


def _reshape_of_an_unknown_layout(x):
    """Where the layout model only guesses an array's strides (a value NumPy lays out by rules the model does not
    follow), whether NumPy's reshape is a view is not known."""
    y = Tensor(P.layout_unknown((x * 1).node)) if isinstance(x, Tensor) else x * 1
    y.reshape(12)[0] = 1.0
    return y


def _update_under_a_reshape_of_an_unknown_layout(x):
    y = Tensor(P.layout_unknown((x * 1).node)) if isinstance(x, Tensor) else x * 1
    flat = y.ravel()
    y[0] += 1
    return flat


def _a_row_of_an_argument(x):
    row = x[0]
    row += 1
    return x


def _into_a_numpy_scalar(x):
    s = np.sum(x)
    s[()] = 1.0
    return s


@pytest.mark.parametrize("fn, error, match", [
    (_reshape_of_an_unknown_layout, NotImplementedError, r"item assignment \(x\[...\] = v\) on a view made by a reshape"),
    (_update_under_a_reshape_of_an_unknown_layout, NotImplementedError,
     "in-place '\\+=' on a view of an array a view was taken of by a reshape"),
    (_a_row_of_an_argument, NotImplementedError, "in-place '\\+=' on a view of the argument x"),
    (lambda x: np.broadcast_to(x[0] * 1, (3, 4)).__iadd__(1), ValueError, "output array is read-only"),
    (lambda x: (lambda d: d.__setitem__(0, 1.0))(np.diagonal(x * 1)), ValueError, "assignment destination is read-only"),
    (_into_a_numpy_scalar, TypeError, "'numpy.float64' object does not support item assignment"),
    (lambda x: np.diagonal(x * 1).sort(), ValueError, "read-only"),
    (lambda x: (lambda b: np.copyto(b, b[:, ::-1]))(np.broadcast_to(x * 1, (2, 3, 4))), ValueError, "read-only"),
    # the same positions, but a unit axis np.expand_dims made (a reshape: its stride nonzero) reversed negates its
    # stride: not NumPy's very same view (x[None]'s axis has stride 0, which the layout model does not follow)
    (lambda x: (lambda d: np.copyto(d, d[::-1]))(np.expand_dims(np.diagonal(x * 1), 0)), ValueError, "read-only"),
    (lambda x: np.broadcast_arrays(x * 1, x[:1])[1].__iadd__(1), NotImplementedError, "on a view"),
])
def test_updates_the_trace_cannot_follow_are_refused_by_name(fn, error, match):
    if error is not NotImplementedError:
        with pytest.raises(error, match=match):
            fn(X.copy())
    with pytest.raises(error, match=match):
        jit(fn)(X)


# -- ufuncs' out= and where=: a write into the out array's memory

def out_is_returned(x):
    o = np.zeros_like(x)
    r = np.add(x, 1, out=o)
    return r, o


def out_is_the_input(x):
    y = x * 1
    np.exp(y, out=y)
    return y


def inputs_broadcast_to_out(x):
    o = np.zeros_like(x, shape=(4, 3, 4))
    np.multiply(x, 2, out=o)
    return o


def out_masked_by_where(x):
    o = np.full_like(x, -7.0)
    np.sqrt(x, out=o, where=x > 0)
    mask = np.zeros_like(x[0])
    np.add(x[0], 1, out=mask, where=[True, False, True, False])
    return o, mask


def out_converted_same_kind(x):
    o = np.zeros_like(x, dtype=np.int16)
    np.floor_divide(x.astype(np.int64), 2, out=o)
    return o


def out_through_views(x):
    y = np.zeros_like(x)
    np.add(x[0], 1, out=y[0])
    np.negative(x[1], out=y.T[:, 1])
    return y


def out_of_several_results(x):
    q = np.zeros_like(x)
    m, e = np.zeros_like(x), np.zeros_like(x, dtype=np.int32)
    r = np.divmod(x, 1.5, out=(q, None))
    np.frexp(x, out=(m, e))
    return r[0], r[1], q, m, e


def out_of_python_numbers_and_0d(x):
    o = np.zeros_like(x)
    np.add(1.5, 2, out=o)
    z = np.zeros_like(x, shape=())
    return o, np.sin(x[0, 0], out=z)


OUT = [out_is_returned, out_is_the_input, inputs_broadcast_to_out, out_masked_by_where, out_converted_same_kind,
       out_through_views, out_of_several_results, out_of_python_numbers_and_0d]


@pytest.mark.parametrize("fn", OUT, ids=lambda f: f.__name__)
def test_ufunc_out_and_where_write_as_numpy(fn):
    assert_same_as_numpy(fn, X)


@pytest.mark.parametrize("fn, error, match", [
    (lambda x: np.add(x, 1.5, out=np.zeros_like(x, dtype=np.int64)), TypeError, "rule 'same_kind'"),
    (lambda x: np.add(x, 1, out=np.zeros_like(x, shape=(4,))), ValueError, "broadcast"),
    (lambda x: np.add(x, 1, out=(np.zeros_like(x), np.zeros_like(x))), ValueError, "one entry per ufunc output"),
    (lambda x: np.add(x, 1, out=np.zeros_like(x), where=(x > 0).astype(int)), TypeError, "rule 'safe'"),
    (lambda x: np.add(x[0, 0], 1, out=np.sum(x)), TypeError, "ArrayType"),
    # NumPy checks the loop's types and the cast to out before the shapes
    (lambda x: np.add(x, np.zeros(7), out=np.zeros_like(x, dtype=np.int8)), TypeError, "'add' output from"),
    (lambda x: np.add(x, 1, out=np.zeros_like(x, dtype=np.int8), casting="no"), TypeError, "rule 'no'"),
    (lambda x: np.divide(x.astype(np.int32), 2, out=np.zeros_like(x, dtype=np.int32)), TypeError, "'divide' output"),
])
def test_ufunc_out_errors_are_numpys(fn, error, match):
    with pytest.raises(error) as numpy_error:
        fn(X.copy())
    with pytest.raises(error, match=match) as ours:
        jit(fn)(X)
    assert type(ours.value) is type(numpy_error.value)  # NumPy's own class (UFuncTypeError's subclasses)


@pytest.mark.parametrize("fn, match", [
    (lambda x: np.add(x, 1, out=x), "out=...\) on the argument x"),
    (lambda x: np.add(x, 1, out=np.zeros(x.shape)), "out is a NumPy array"),
    (lambda x: np.add(x, 1, where=x > 0), "where= without out="),
])
def test_ufunc_out_the_trace_cannot_write_is_refused_by_name(fn, match):
    with pytest.raises(NotImplementedError, match=match):
        jit(fn)(X)


# -- NumPy's in-place functions

def copyto_with_a_mask_and_into_a_row(x):
    y = np.zeros_like(x)
    np.copyto(y, x * 2, where=x > 0)
    np.copyto(y[0], -1)
    return y


def copyto_converts_and_a_view_sees_it(x):
    y = np.ones_like(x, dtype=np.int32)
    seen = y.T
    np.copyto(y, x.astype(np.int16))
    return y, seen


def put_in_every_mode(x):
    y, z = x * 1, x * 1
    np.put(y, [0, 5, -1, 30], x[0, :2], mode="wrap")  # a short value repeats
    np.put(z, [1, 100], 7.5, mode="clip")
    return y, z


def place_repeats_its_values(x):
    y = x * 1
    np.place(y, np.arange(12).reshape(3, 4) % 3 == 1, [10.0, 20.0, 30.0])
    return y


def place_by_a_traced_mask(x):
    y = x * 1
    np.place(y, x > 0.3, x[0, :3] * 10)  # the k-th selected position takes value k % 3: a running count
    return y


def putmask_repeats_values_by_position(x):
    y, z = x * 1, np.zeros_like(x, dtype=np.int16)
    np.putmask(y, x > 0, [10.0, 20.0, 30.0])  # position i takes value i % 3, selected or not
    np.putmask(z, (x * 4).astype(np.int64) % 2, x[1].astype(np.int16))
    return y, z


def fill_and_put_methods(x):
    y, z = x * 1, x.astype(np.int8)
    seen = y[1:]  # a view sees the fill
    y.fill(2.5)
    z.fill(x[0, 1])  # a traced 0-d value, converted to int8
    w = x * 1
    w.put([0, -1], [9.0, 8.0])
    return y, seen, z, w


def put_along_an_axis(x):
    y = x * 1
    np.put_along_axis(y, np.array([[1], [0], [3]]), x[:, :1] * 100, axis=1)
    return y


def fill_the_diagonal(x):
    y = x * 1
    np.fill_diagonal(y, [7.0, 8.0])
    z = np.zeros_like(x, shape=(7, 3))
    np.fill_diagonal(z, x[0, 0], wrap=True)
    return y, z


def flat_assignments_through_views(x):
    """x.flat written by slices, integer arrays, a mask and a scalar (short values repeated, converted
    unsafely into int8), through a transposed view, and the whole array by x.flat = v; reads are copies."""
    y, z = x * 1, (x * 10).astype(np.int8)
    row = y[1]  # a view sees the writes
    y.flat[[1, 4, 6]] = [7.0, 8.0]
    y.T.flat[2:9:3] = x[0, :2] * 100  # the transpose's C order: down the columns
    z.flat[x.size - 1] = 3.7
    z.flat[np.arange(x.size) % 5 == 0] = [-1, -2, -3]
    copy = y.flat[:4]
    copy[0] = -5.0  # a copy: y stays
    w = np.zeros_like(x)
    w.flat = x[2, ::-1]
    assert len(w.flat) == x.size
    return y, row, z, copy, w, np.sum(y.flat), list(z.flat)[:3]


def numpy_scalars_assigned_as_numpy_converts_them(x):
    """Where NumPy casts a NumPy scalar rather than taking it through int(): an unsigned or float array, fancy
    indices, a 0-d array value, a value that fits."""
    u, f, i, j, k = x.astype(np.uint8), x.astype(np.float16), x.astype(np.int8), x.astype(np.int16), x.astype(np.int8)
    u[0, 0] = x[0, 0] - 1
    f.fill(x[2, 3] * 1e10)
    i[[0, 1], 0] = x[2, 3] * 100
    j[0] = (x[2, 3] * 1e5).reshape(1).reshape(())
    k[1:, 1] = x[2, 3] * 10.7
    u.fill(np.float64(-1.5) + x[0, 0])
    return u, f, i, j, k


def copyto_drops_a_values_leading_unit_axes(x):
    y = x * 2
    np.copyto(y, x[None, None, :1, :], casting="unsafe")  # NumPy's assignment drops the leading unit axes
    z = x * 1
    np.copyto(z[0], x[None, 1:2, ::-1])
    return y, z


def full_like_of_traced_values(x):
    """np.full_like is np.copyto(np.empty_like(...), fill, casting='unsafe'): an element, a row broadcast, a list
    holding traced values, wrapped into int8 and laid out in Fortran order."""
    return (np.full_like(x, x[1, 2]), np.full_like(x, x[2], dtype=np.int8), np.full_like(x, [[x[0, 0] * 100]]),
            np.full_like(x, [x[0, 1], 5, x[1, 1], -1], dtype=np.float32, order="F", shape=(2, 4)))


def real_part_assigned(x):
    """x.real = v of a real array is x[...] = v (its real part is the array itself); a view sees it."""
    y = x * 1
    row = y[1]
    y.real = x[0] * 10
    return y, row


IN_PLACE_FUNCTIONS = [real_part_assigned, copyto_with_a_mask_and_into_a_row, copyto_converts_and_a_view_sees_it, put_in_every_mode,
                      place_repeats_its_values, place_by_a_traced_mask, putmask_repeats_values_by_position,
                      fill_and_put_methods, put_along_an_axis, fill_the_diagonal, flat_assignments_through_views,
                      copyto_drops_a_values_leading_unit_axes, full_like_of_traced_values,
                      numpy_scalars_assigned_as_numpy_converts_them]


@pytest.mark.parametrize("fn", IN_PLACE_FUNCTIONS, ids=lambda f: f.__name__)
def test_numpys_in_place_functions_write_as_numpy(fn):
    assert_same_as_numpy(fn, X)


@pytest.mark.parametrize("fn, error, match", [
    (lambda x: np.copyto(np.zeros_like(x, dtype=np.int8), 300), OverflowError, "300 out of bounds for int8"),
    (lambda x: np.copyto(np.zeros_like(x, dtype=np.int8), 1.5), TypeError, "Cannot cast scalar"),
    (lambda x: np.copyto(np.zeros_like(x, dtype=np.int8), x), TypeError, "Cannot cast array data"),
    (lambda x: np.put(x * 1, [100], 1.0), IndexError, "index 100 is out of bounds"),
    (lambda x: np.put(np.zeros_like(x, dtype=np.int8), [0], 300), OverflowError, "300 out of bounds for int8"),
    (lambda x: np.copyto(np.sum(x), 1.0), TypeError, "numpy.float64"),  # a NumPy scalar is no array
    (lambda x: (y := x.astype(np.int8), y.fill(300))[0], OverflowError, "300 out of bounds for int8"),
    (lambda x: (y := x.astype(np.int8), y.fill(np.nan))[0], ValueError, "cannot convert float NaN to integer"),
    (lambda x: (y := x * 1, y.fill(x[0]))[0], ValueError, "setting an array element with a sequence"),
    # a NumPy scalar into a signed integer array goes through Python's int(), checked as the kernel runs
    (lambda x: (y := x.astype(np.int8), y.fill(x[2, 3] * 100))[0], OverflowError,
     r"Python integer 650 out of bounds for int8 \(x.fill\(\) at \S*test_views.py:\d+, checked as the kernel ran\)"),
    (lambda x: (y := x.astype(np.int16), y.__setitem__(slice(0, 0), x[0, 0] * 0 / 0))[0], ValueError,
     "cannot convert float NaN to integer"),
    (lambda x: (y := x.astype(np.int64), y.__setitem__(1, x[1, 1] / 0))[0], OverflowError,
     "cannot convert float infinity to integer"),
    (lambda x: (y := x.astype(np.int64), y.__setitem__(Ellipsis, x[1, 1] * 1e20))[0], OverflowError,
     "Python int too large to convert to C long"),
    (lambda x: (y := x.astype(np.int16), y.__setitem__((0, slice(None)), x.astype(np.uint16)[1, 2] * 0 + 65535))[0],
     OverflowError, "Python integer 65535 out of bounds for int16"),
    (lambda x: np.place(x.astype(np.int64), x > 0, np.array([1.5])), TypeError, "according to the rule 'safe'"),
    (lambda x: (np.place(y := x * 1, x > 0, []), y)[1], ValueError,
     "Cannot insert from an empty array! .*checked as the kernel ran"),
    (lambda x: np.putmask(x.astype(np.int64), x > 0, x), TypeError, "according to the rule 'safe'"),
    (lambda x: np.putmask(x * 1, x[0] > 0, 1.0), ValueError, "mask and data must be the same size"),
    (lambda x: x.flat[x.size], IndexError, "index 12 is out of bounds for size 12"),
    (lambda x: (y := x * 1, y.flat.__setitem__([0, -13], 1.0))[0], IndexError, "index -13 is out of bounds"),
    (lambda x: (y := x * 1, y.flat.__setitem__(0, [1.0, 2.0]))[0], ValueError, "Error setting single item"),
    (lambda x: (y := x * 1, y.flat.__setitem__(np.ravel(x > 0)[:5], 1.0))[0], IndexError,
     "boolean index did not match indexed flat iterator"),
    (lambda x: (y := x * 1, y.flat.__setitem__(x > 0, 1.0))[0], IndexError, "too many indices for flat iterator"),
])
def test_numpys_in_place_functions_raise_numpys_errors(fn, error, match):
    with pytest.raises(error):
        fn(X.copy())
    with pytest.raises(error, match=match):
        jit(fn)(X)


@pytest.mark.parametrize("fn, match", [
    (lambda x: np.copyto(x, 1.0), "np.copyto on the argument x"),
    (lambda x: np.putmask(x, x > 0, 1.0), "np.putmask on the argument x"),
    (lambda x: np.copyto(np.zeros((3, 4)), x), "np.copyto into a NumPy array"),
    (lambda x: np.full((2, 2), x[0, 0], dtype=np.float32), r"traced fill value for np.full .*np\.full_like\(x, value"),
    (lambda x: x.flat.__setitem__(0, 1.0), r"x.flat\[...\] = on the argument x"),
])
def test_numpys_in_place_functions_the_trace_cannot_follow_are_refused(fn, match):
    with pytest.raises(NotImplementedError, match=match):
        jit(fn)(X)


# -- the registry's ops against NumPy's sharing

def _relation(result, operands) -> str:
    """How a result stands to the fresh operands it was computed from: the operand itself, a view of
    one (NumPy: shares memory; the compiler: a Tensor whose bases include it), or fresh."""
    for k, operand in enumerate(operands):
        if result is operand:
            return f"operand {k} itself"
    for k, operand in enumerate(operands):
        shares = (any(b is operand for b in result.bases) if isinstance(result, Tensor)
                  else isinstance(result, np.ndarray) and np.shares_memory(result, operand))
        if shares:
            return f"a view of operand {k}"
    return "fresh"


def _cases(seeds):
    return registry_cases(seeds, arrays_only=True)


def _numpy_relations(info, params, operands):
    fresh = [o.copy() for o in operands]
    with np.errstate(all="ignore"):
        results = list(leaves(info(fresh, params)))
    return [_relation(r, fresh) if np.size(r) else None for r in results]  # an empty result shares nothing


def _traced_relations(info, params, operands):
    relations = []

    def fn(*xs):
        fresh = [x.copy() for x in xs]
        out = info(fresh, params)
        relations.extend(_relation(r, fresh) for r in leaves(out))
        return out
    trace(fn, tuple(operands), {})
    return relations


def test_every_registry_op_shares_memory_exactly_where_numpy_does():
    """Tracing only (no kernel is built), three sampled calls of every op."""
    checked, disagreements = 0, []
    for name, info, params, operands in _cases(range(3)):
        try:
            want = _numpy_relations(info, params, operands)
        except Exception:  # noqa: BLE001  NumPy refuses the call: nothing to compare
            continue
        got = _traced_relations(info, params, operands)
        checked += 1
        for w, g in zip(want, got):
            if w is not None and w != g:
                disagreements.append(f"{name}{params} on {[o.shape for o in operands]}: NumPy {w}, compiler {g}")
    assert checked > 400
    assert not disagreements, "\n".join(disagreements)


def _views_of_operands():
    """The registry's calls whose NumPy result is a writeable view of an operand (one sampled call an op)."""
    found = {}
    for name, info, params, operands in _cases(range(2)):
        try:
            fresh = [o.copy() for o in operands]
            results = list(leaves(info(fresh, params)))
        except Exception:  # noqa: BLE001
            continue
        if name not in found and any(isinstance(r, np.ndarray) and r.size and r.flags.writeable
                                     and any(np.shares_memory(r, f) for f in fresh) for r in results):
            found[name] = (info, params, operands)
    return found


VIEW_OPS = _views_of_operands()


def test_the_view_ops_are_found():
    assert {"transpose", "getitem", "split", "squeeze", "flip", "moveaxis", "unstack"} <= set(VIEW_OPS)


def _bump(a):
    if a.dtype == np.bool_:
        a ^= True
    else:
        a += 1


@pytest.mark.parametrize("name", sorted(VIEW_OPS))
def test_a_view_op_writes_through_as_numpy(name):
    """Each result that NumPy lets one write is updated, then each operand: the compiled function's
    results and operands afterwards are NumPy's, or the update is refused by name (a reshape's view)."""
    info, params, operands = VIEW_OPS[name]

    def fn(*xs):
        fresh = [x.copy() for x in xs]
        out = info(fresh, params)
        for r in leaves(out):
            if isinstance(r, np.ndarray) and r.flags.writeable or isinstance(r, Tensor) and r.aliases != READ_ONLY:
                _bump(r)
        for f in fresh:
            _bump(f)
        return out, fresh

    try:
        got = jit(fn)(*operands)
    except NotImplementedError as refused:
        assert "a reshape, ravel, np.broadcast_arrays or x.view(dtype)" in str(refused)
        assert name in ("meshgrid", "broadcast_arrays", "view")
        return
    want = fn(*operands)
    for g, w in zip(leaves(got), leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)



# -- reshapes and ravels of random views: view or copy as NumPy's strides decide

def _random_view(y, rng):
    """A chain of views NumPy makes whatever the layout: transposes, strided and reversed slices, new axes."""
    for _ in range(rng.integers(0, 4)):
        kind = rng.integers(0, 4)
        if kind == 0:
            y = y.T
        elif kind == 1:
            axis = int(rng.integers(0, y.ndim))
            y = y[(slice(None),) * axis + (slice(None, None, int(rng.choice([2, -1, -2]))),)]
        elif kind == 2 and y.ndim >= 2:
            y = y.swapaxes(0, -1)
        else:
            y = y[None]
    return y


def _reshape_or_ravel(v, rng):
    if rng.integers(0, 2):
        return v.ravel(str(rng.choice(list("CFAK"))))
    sizes = [d for d in range(1, v.size + 1) if v.size % d == 0]
    middle = sizes[len(sizes) // 2]
    return v.reshape((middle, v.size // middle), order=str(rng.choice(list("CFA"))))


@pytest.mark.parametrize("seed", range(8))
def test_updates_through_reshapes_and_ravels_of_random_views_are_numpys(seed):
    """Six chains a call: an array copied in a random order from a caller's transposed array, a random view of
    it, then a reshape or ravel in a random order, written through and then under; NumPy's values are the
    judge of which of them shared memory (the layout model decides from the strides NumPy's would have)."""
    rng = np.random.default_rng(seed)
    plans = [(str(rng.choice(list("CFAK"))), int(rng.integers(0, 2**31))) for _ in range(6)]

    def fn(x):
        results = []
        for order, chain_seed in plans:
            chain = np.random.default_rng(chain_seed)
            y = x.copy(order=order)
            v = _random_view(y, chain)
            r = _reshape_or_ravel(v, chain)
            r[(0,) * r.ndim] = 100.0
            r.reshape(-1)[-1] = -100.0
            y[(0,) * y.ndim] += 0.5
            results += [y, v, r]
        return results
    shape = [(4, 6), (2, 3, 4), (3, 1, 4), (1, 6, 1)][seed % 4]
    assert_same_as_numpy(fn, np.arange(np.prod(shape), dtype=np.float64).reshape(shape[::-1]).T)
