"""Python-level semantics of tracing, against NumPy running the same function: in-place
operators (NumPy's ``ufunc(x, y, out=x)`` with 'same_kind' casting, seen by every name bound
to the array and every view of its memory; refused where NumPy would write into an argument or
through a reshape), bitwise and logical
operators, fresh copies, returned structures, objects holding arrays, and re-entrant calls."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from compiler import jit


def check(fn, *args):
    expected = fn(*[np.copy(a) for a in args])
    got = jit(fn)(*args)
    expected, got = np.asarray(expected), np.asarray(got)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def accumulate(x, y):
    out = np.zeros_like(x)
    for i in range(3):
        out += y[i]  # float32 target: the float64 sum is cast back each time
    return out


def chain_on_a_copy(x, y):
    z = x.copy()
    z += y
    z *= 2
    z -= 1
    z /= 3
    z **= 2
    return z


def every_name_sees_it(x):
    z = x * 1
    w = z
    w += 1
    return z


def matmul_in_place(x):
    z = x * 1
    z @= np.eye(3)
    return z


def wraps_into_int8(x, y):
    z = np.copy(x)
    z += y
    z //= 3
    z %= 7
    z &= 6
    z |= 1
    z ^= 2
    return z


def flatten_copies(x):
    z = x.flatten()  # a copy, unlike ravel: it may be updated, and x is untouched
    z += 1
    return z * 10 + x.ravel()


@pytest.mark.parametrize("fn, args", [
    (flatten_copies, (np.arange(6.0).reshape(2, 3),)),
    (accumulate, (np.ones(3, np.float32), np.full(3, 0.1))),
    (chain_on_a_copy, (np.arange(3, dtype=np.float32), np.float64(0.5))),
    (every_name_sees_it, (np.arange(3.0),)),
    (matmul_in_place, (np.ones((2, 3), np.float32),)),
    (wraps_into_int8, (np.full(4, 100, np.int8), np.array([300, -300, 5, 0], np.int16))),
], ids=lambda v: getattr(v, "__name__", ""))
def test_in_place_operators_follow_numpy(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn, error, match", [
    (lambda x: x.__iadd__(1), NotImplementedError, "on the argument x"),
    (lambda x: x[:2].__iadd__(1), NotImplementedError, "on a view of the argument x"),
    (lambda x: x.reshape(3, 1).__imul__(2), NotImplementedError, "on a view of the argument x"),
    (lambda x: x.T.__isub__(1), NotImplementedError, "on a view of the argument x"),
    (lambda x: x.astype(np.int32).__isub__(x.mean()), TypeError, "'same_kind'"),
    (lambda x: x.copy().__iadd__(np.ones((2, 3))), ValueError, "non-broadcastable output operand"),
    (lambda x: x.astype(np.int64).__itruediv__(2), TypeError, "'same_kind'"),
    (lambda x: x.astype(np.int8).__iadd__(np.zeros(4)), TypeError, "'same_kind'"),  # NumPy: the cast before shapes
    (lambda x: (x > 0).__isub__(True), TypeError, "boolean subtract"),
    (lambda x: x.astype(np.int8).__imatmul__(np.ones((3, 3))), TypeError, "'matmul' output"),
    (lambda x: (x > 0).__ipow__(2), TypeError, r"ufunc 'square' output from dtype\('int8'\)"),  # ** 2 is square there
])
def test_in_place_updates_numpy_would_share_or_refuse_are_errors(fn, error, match):
    """NumPy writes into the caller's array, which a compiled function cannot: refused, not silently
    skipped (a view of it too, a reshape's included). Casts and shapes NumPy refuses are refused with NumPy's
    own exception (its class: a UFuncTypeError subclass for a cast back it refuses)."""
    if error is not NotImplementedError:
        with pytest.raises(error) as numpy_error:
            fn(np.arange(3.0))
        error = type(numpy_error.value)
    with pytest.raises(error, match=match) as ours:
        jit(fn)(np.arange(3.0))
    assert type(ours.value) is error


def _use_then_update(f):
    """z = x * 1; r = f(z); z += 1: fine in NumPy unless r shares z's memory."""
    def fn(x):
        z = x * 1
        r = f(z)
        z += 1
        return r, z
    return fn


@pytest.mark.parametrize("f", [
    lambda z: np.median(z, axis=0), lambda z: np.quantile(z, 0.3, axis=1), lambda z: np.percentile(z, 70),
    lambda z: np.diff(z, axis=0), lambda z: np.sort(z, axis=0), lambda z: np.linalg.norm(z, axis=1),
    lambda z: np.kron(z, z), lambda z: np.cross(z, z * z, axis=0), lambda z: np.trapezoid(z, axis=0),
    lambda z: np.average(z, axis=1, weights=[1.0, 2.0, 3.0, 4.0]), lambda z: z.trace(), lambda z: z.argsort(axis=0),
    lambda z: np.cumsum(z, axis=0), lambda z: np.einsum("ij,ij->i", z, z), lambda z: np.ravel(z + 0),
])
def test_views_a_numpy_function_takes_for_its_own_work_do_not_block_later_updates(f):
    """Views np.median or np.diff take of their argument die with the call in NumPy; the caller may go on
    updating the array in place (values and dtypes as NumPy's)."""
    x = np.arange(12.0).reshape(3, 4) ** 1.5
    (want_r, want_z), (got_r, got_z) = _use_then_update(f)(x.copy()), jit(_use_then_update(f))(x)
    for want, got in ((want_r, got_r), (want_z, got_z)):
        want, got = np.asarray(want), np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


def test_a_result_made_from_a_view_of_the_functions_own_temporary_is_fresh():
    """np.argsort's result is a new array in NumPy (the compiler's moveaxis of its own permutation is a
    view only of a temporary the caller cannot reach): it may be updated in place."""
    def fn(x):
        order = np.argsort(x, axis=0)
        order += 1
        temporary = x * 1
        rows = np.moveaxis(temporary, 0, 1)  # a view of the caller's own temporary: still a view
        temporary += 10
        return order, rows
    x = np.array([[3.0, -1.0], [0.5, 2.0], [-4.0, 7.0]])
    want, got = fn(x), jit(fn)(x)
    assert got[0].dtype == want[0].dtype
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    with pytest.raises(NotImplementedError, match="on a view of the argument x"):
        jit(lambda x: np.moveaxis(x, 0, 1).__iadd__(1))(x)
    with pytest.raises(NotImplementedError, match="on a view of the argument x"):  # the view itself
        jit(lambda x: np.astype(x[1:], x.dtype, copy=False).__iadd__(1))(x)


def test_sorting_in_place_leaves_the_array_updatable():
    def fn(x):
        z = x * 1
        z.sort(axis=0)
        z *= 2
        return z
    check(fn, np.array([[3.0, -1.0], [0.5, 2.0], [-4.0, 7.0]]))


@pytest.mark.parametrize("f", [
    np.transpose, np.flip, np.atleast_3d, np.unstack, lambda z: np.diagonal(z), lambda z: z.diagonal(),
    lambda z: np.moveaxis(z, 0, 1), lambda z: z.swapaxes(0, 1), lambda z: np.einsum("ij->ji", z),
    lambda z: np.split(z, 2, axis=1), lambda z: np.squeeze(z[None]), lambda z: np.broadcast_to(z, (2, 3, 4)),
    lambda z: np.linalg.matrix_transpose(z), lambda z: np.expand_dims(z, 0), lambda z: z[::-2, 1:3],
    np.ravel, lambda z: np.reshape(z, (4, 3)), lambda z: z.reshape(-1)[2:], lambda z: z.T.reshape(2, 6),
    lambda z: z.T.ravel(), lambda z: z.T.ravel("K"),
], ids=lambda f: getattr(f, "__name__", ""))
def test_a_view_a_function_returns_sees_its_arguments_later_update(f):
    """NumPy's result shares the argument's memory where it is a view, so the update shows in it (a reshape
    or ravel that copies does not see it, as in NumPy)."""
    x = np.arange(12.0).reshape(3, 4)
    want, got = _use_then_update(f)(x.copy()), jit(_use_then_update(f))(x)
    for w, g in zip(want, got):
        w, g = (list(w), list(g)) if isinstance(w, (list, tuple)) else ([w], [g])
        for wi, gi in zip(w, g):
            assert gi.dtype == wi.dtype and gi.shape == wi.shape
            np.testing.assert_array_equal(gi, wi)


@pytest.mark.parametrize("fn", [
    lambda x: (x * 1).ravel().__isub__(1),
    lambda x: (x * 1).reshape(1, 3).squeeze().__isub__(1),
    lambda x: (lambda z: (z.reshape(3, 1), z.__iadd__(1))[0])(x * 1),
    lambda x: (lambda z: (z.ravel(), z[1:].__iadd__(1))[0])(x * 1),
    lambda x: (lambda z: (z[::2].ravel().__iadd__(1), z)[1])(x * 1),  # not contiguous: ravel copies
    lambda x: (lambda z: (z[::2].reshape(-1).__iadd__(1), z)[1])(x * 1),  # a reshape of it is a view
])
def test_updates_through_a_reshape_or_ravel_follow_numpys_sharing(fn):
    """A reshape or ravel shares memory where NumPy's does, which the layout model decides from the strides
    NumPy's array would have: an update through one, or of the array under one, shows where NumPy's does."""
    check(fn, np.arange(3.0))


@pytest.mark.parametrize("fn", [
    lambda x, y: (x > 0) & (y < 2), lambda x, y: (x > 0) | (y < 2), lambda x, y: (x > 0) ^ (y < 2),
    lambda x, y: ~(x > 1), lambda x, y: x.astype(np.int16) & 5, lambda x, y: 3 | x.astype(np.uint8),
    lambda x, y: ~x.astype(np.int64), lambda x, y: ~x.astype(np.uint32),
    lambda x, y: np.logical_and(x, y), lambda x, y: np.logical_or(x, y > 1), lambda x, y: np.logical_xor(x, y),
    lambda x, y: np.logical_not(x), lambda x, y: np.where((x > 0) & ~(y > 1), x, y),
])
def test_bitwise_and_logical_operators(fn):
    check(fn, np.array([-1.5, 0.0, 2.0, 3.0]), np.array([0.0, 1.0, 2.5, -4.0]))


def test_float_shifts_and_float_bitwise_ops_are_clear_errors():
    with pytest.raises(TypeError, match="ufunc 'left_shift' not supported for the input types"):
        jit(lambda x: x << 1)(np.arange(3.0))  # NumPy's own TypeError: no float loop
    with pytest.raises(TypeError, match="np.bitwise_and"):
        jit(lambda x: x & 1)(np.arange(3.0))


def test_positive_returns_a_fresh_array_and_refuses_bool():
    check(lambda x: (lambda y: (y.__iadd__(1), x * 1)[1])(+x.copy()), np.arange(3.0))
    with pytest.raises(TypeError, match="np.positive"):
        jit(lambda m: +m)(np.array([True, False]))


def test_comparing_with_none_is_numpys_elementwise_answer_not_an_identity_test():
    fn = lambda x: np.sum(x != None) * x + np.sum(x == None)  # noqa: E711
    np.testing.assert_array_equal(jit(fn)(np.ones(3)), fn(np.ones(3)))  # (3.0 each: NumPy's all-True elementwise)


Pair = collections.namedtuple("Pair", "a b")


class Rows(list):
    pass


def test_returned_namedtuples_and_sequence_subclasses():
    got = jit(lambda x: Pair(x, x + 1))(np.arange(3.0))
    assert isinstance(got, Pair)
    np.testing.assert_array_equal(got.b, np.arange(3.0) + 1)
    rows = jit(lambda x: Rows([x, x * 2]))(np.arange(2))
    assert type(rows) is list and len(rows) == 2
    np.testing.assert_array_equal(rows[1], np.arange(2) * 2)


class Holder:
    def __init__(self, w):
        self.w = w

    def forward(self, x):
        return x @ self.w


def test_an_object_holding_arrays_is_not_a_silent_constant():
    """Keyed by identity, its arrays would be baked in and later changes ignored."""
    with pytest.raises(TypeError, match=r"Holder holding arrays \(w\).*dataclass"):
        jit(Holder.forward)(Holder(np.eye(2)), np.ones((1, 2)))


def test_a_jit_function_may_call_itself_on_arrays_while_tracing():
    @jit
    def f(x, n):
        if n == 0:
            return x * 1
        return x + f(np.ones(3), n - 1)

    np.testing.assert_array_equal(f(np.zeros(3), 2), np.full(3, 2.0))


def test_item_assignment_updates_a_fresh_array_and_every_name_bound_to_it():
    def assign(x):
        y = x * 1
        z = y
        y[0] = 5
        return z

    got = jit(assign)(np.ones(3, np.float32))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.array([5, 1, 1], np.float32))


@pytest.mark.parametrize("fn", [
    lambda a: np.concatenate([a[0], [a[1, 0]]]),
    lambda a: a[0] + [a[1, 0], 1.5, 2],  # Python numbers in the list are NumPy's int64/float64, not weak
    lambda a: np.where(a > 2, [[a[0, 0]], [a[1, 1]]], 0),
    lambda a: a * ((a[0, 0], a[0, 1], a[0, 2]),),
    lambda a: np.maximum(a, [a[1], a[0]]),
    lambda a: a.astype(np.int8)[0] + [a.astype(np.int8)[1, 0], 3, 300],
    lambda a: np.clip(a, [a[0, 0], 0, 0], 4),
    lambda a: np.dot([a[0, 0], a[0, 1]], a),
    lambda a: a[0] + [True, a[1, 0] > 1, False],
    lambda a: np.subtract((a.T[0], a.T[1]), a[0, :2]),  # np.array's layout: C, whatever its elements'
])
def test_lists_holding_traced_values_are_the_arrays_numpy_makes_of_them(fn):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    want, got = fn(a), jit(fn)(a)
    assert got.dtype == want.dtype and got.strides == want.strides
    np.testing.assert_array_equal(got, want)


def test_a_ragged_list_of_traced_values_is_a_value_error():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises(ValueError):
        (lambda a: a[0] + [a[1, 0], a[1]])(a)  # NumPy's own
    with pytest.raises(ValueError):
        jit(lambda a: a[0] + [a[1, 0], a[1]])(a)
