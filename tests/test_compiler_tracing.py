"""Python-level semantics of tracing, against NumPy running the same function: in-place
operators (NumPy's ``ufunc(x, y, out=x)`` with 'same_kind' casting, seen by every name bound
to the array; refused where NumPy would write through shared memory), bitwise and logical
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
    (lambda x: x[:2].__iadd__(1), NotImplementedError, "on a view"),
    (lambda x: x.reshape(3, 1).__imul__(2), NotImplementedError, "on a view"),
    (lambda x: x.T.__isub__(1), NotImplementedError, "on a view"),
    (lambda x: (x * 1).ravel().__isub__(1), NotImplementedError, "on a view"),
    (lambda x: (x * 1).reshape(1, 3).squeeze().__isub__(1), NotImplementedError, "on a view"),
    (lambda x: (lambda z: (z[1:], z.__iadd__(1)))(x * 1), NotImplementedError, "a view was taken of"),
    (lambda x: (lambda z: (np.split(z, 3), z.__iadd__(1)))(x * 1), NotImplementedError, "a view was taken of"),
    (lambda x: x.astype(np.int32).__isub__(x.mean()), TypeError, "'same_kind'"),
    (lambda x: x.copy().__iadd__(np.ones((2, 3))), ValueError, "non-broadcastable output operand"),
    (lambda x: x.astype(np.int64).__itruediv__(2), TypeError, "'same_kind'"),
])
def test_in_place_updates_numpy_would_share_or_refuse_are_errors(fn, error, match):
    """NumPy writes into the caller's array or the array a view looks at, which a compiled function
    cannot: refused, not silently skipped. Casts and shapes NumPy refuses are refused alike."""
    if error is not NotImplementedError:
        with pytest.raises(error):
            fn(np.arange(3.0))
    with pytest.raises(error, match=match):
        jit(fn)(np.arange(3.0))


@pytest.mark.parametrize("fn", [
    lambda x, y: (x > 0) & (y < 2), lambda x, y: (x > 0) | (y < 2), lambda x, y: (x > 0) ^ (y < 2),
    lambda x, y: ~(x > 1), lambda x, y: x.astype(np.int16) & 5, lambda x, y: 3 | x.astype(np.uint8),
    lambda x, y: ~x.astype(np.int64), lambda x, y: ~x.astype(np.uint32),
    lambda x, y: np.logical_and(x, y), lambda x, y: np.logical_or(x, y > 1), lambda x, y: np.logical_xor(x, y),
    lambda x, y: np.logical_not(x), lambda x, y: np.where((x > 0) & ~(y > 1), x, y),
])
def test_bitwise_and_logical_operators(fn):
    check(fn, np.array([-1.5, 0.0, 2.0, 3.0]), np.array([0.0, 1.0, 2.5, -4.0]))


def test_shifts_and_float_bitwise_ops_are_clear_errors():
    with pytest.raises(NotImplementedError, match="left_shift"):
        jit(lambda x: x << 1)(np.arange(3))
    with pytest.raises(TypeError, match="np.bitwise_and"):
        jit(lambda x: x & 1)(np.arange(3.0))


def test_positive_returns_a_fresh_array_and_refuses_bool():
    check(lambda x: (lambda y: (y.__iadd__(1), x * 1)[1])(+x.copy()), np.arange(3.0))
    with pytest.raises(TypeError, match="np.positive"):
        jit(lambda m: +m)(np.array([True, False]))


def test_comparing_with_none_is_refused_not_an_identity_test():
    with pytest.raises(NotImplementedError, match="None"):
        jit(lambda x: np.sum(x != None) * x)(np.ones(3))  # noqa: E711


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


def test_item_assignment_is_named_as_unsupported():
    def assign(x):
        y = x * 1
        y[0] = 5
        return y

    with pytest.raises(NotImplementedError, match=r"item assignment \(x\[...\] = v\)"):
        jit(assign)(np.ones(3))
