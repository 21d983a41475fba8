"""The layout model (``compiler.layout``) against NumPy itself: for random chains of views, copies,
ufuncs and reductions, the strides the model gives a traced value are those NumPy's own array has
(unit axes aside, which stride nowhere)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from compiler import layout
from compiler import primitives as P
from compiler.graph import const_node, topological
from compiler.jit import jit, trace
from compiler.tracer import Tensor
from harness.fuzzing.check import compare_layout

sys.path.insert(0, str(Path(__file__).parent / "support"))
from registry_cases import leaves, registry_cases  # noqa: E402


def _step(x, kind: str, rng):
    if kind == "transpose":
        return np.transpose(x, tuple(rng.permutation(x.ndim)))
    if kind == "slice":
        return x[tuple(slice(int(rng.integers(0, 2)) if n > 1 else 0, None, int(rng.integers(1, 3))) for n in x.shape)]
    if kind == "ufunc":
        return np.negative(x)
    if kind == "binary":  # against an operand broadcast along some axes, on either side
        keep = rng.random(x.ndim) < 0.5
        other = np.full(tuple(n if k else 1 for n, k in zip(x.shape, keep))[int(rng.integers(0, x.ndim)):], 0.5, x.dtype)
        return x + other if rng.random() < 0.5 else other * x
    if kind in ("sum", "sum keepdims") and x.ndim > 1:
        axes = tuple(sorted(rng.choice(x.ndim, int(rng.integers(1, x.ndim)), replace=False).tolist()))
        return np.sum(x, axis=axes, keepdims=kind == "sum keepdims")
    if kind == "reshape" and x.ndim > 1:
        return x.reshape(x.shape[:1] + (-1,))
    if kind == "copy":
        return x.copy(order=[None, "C", "F", "A", "K", "f"][int(rng.integers(0, 6))])
    if kind == "copy K":
        return np.copy(x, order=[None, "K", "A"][int(rng.integers(0, 3))])
    if kind == "broadcast":
        return np.broadcast_to(x, (2,) + x.shape)
    if kind == "reverse":  # a view with negative strides
        return x[tuple(slice(None, None, int(rng.choice([-1, -2]))) if rng.random() < 0.5 else slice(None) for _ in x.shape)]
    if kind == "like":
        maker = [np.zeros_like, np.ones_like, np.empty_like, lambda a, **kw: np.full_like(a, 2.0, **kw)][int(rng.integers(0, 4))]
        shape = None if rng.random() < 0.6 else tuple(int(n) for n in rng.choice([1, 2, 3], int(rng.integers(1, 4))))
        return maker(x, order=[None, "K", "C", "F", "A"][int(rng.integers(0, 5))], shape=shape)
    if kind == "write":  # into a fresh array's memory, or through a view of it: the memory keeps its layout
        y = np.zeros_like(x, order=["C", "F", "K"][int(rng.integers(0, 3))])
        how = int(rng.integers(0, 5))
        if how == 0:
            y[...] = x
        elif how == 1:
            np.negative(x, out=y)
        elif how == 2:
            y += x
        elif how == 3:
            y[:1] = x[:1]
        else:
            view = y.T
            np.copyto(y, x)
            return view
        return y
    if kind == "diagonal" and x.ndim > 1:  # a view by NumPy's own rules: asked of NumPy on a stand-in
        axis1, axis2 = (int(a) for a in rng.choice(x.ndim, 2, replace=False))
        return np.diagonal(x, int(rng.integers(-1, 2)), axis1, axis2)
    if kind == "einsum" and x.ndim > 1:  # einsum's iterator lays its result out by its operands
        letters = "abcdefgh"[:x.ndim]
        return np.einsum(f"{letters}->{letters[1:]}", x)
    if kind == "fancy":  # advanced indexing: the index axes first in memory, then the kept ones as they lay
        axis = int(rng.integers(0, x.ndim))
        if not x.shape[axis]:  # (no position to take)
            return x
        index = rng.integers(0, x.shape[axis], tuple(int(n) for n in rng.choice([1, 2, 3], int(rng.integers(1, 3)))))
        return x[(slice(None),) * axis + (index,)]
    if kind == "widening":  # a ufunc whose loop converts its operand as it reads: no array of its own
        return np.multiply(x, 0.5, dtype=np.float64) if rng.random() < 0.5 else np.modf(x)[0]
    if kind == "astype":
        return x.astype(np.float64, order=[None, "K", "C", "F", "A"][int(rng.integers(0, 5))], copy=bool(rng.random() < 0.8))
    return x


KINDS = ["transpose", "slice", "ufunc", "binary", "sum", "sum keepdims", "reshape", "copy", "copy K", "broadcast", "astype", "widening",
         "reverse", "like", "write", "fancy", "diagonal", "einsum"]


def _sized_strides(shape, strides):
    return tuple(s for s, n in zip(strides, shape) if n != 1)


@pytest.mark.parametrize("seed", range(24))
def test_the_model_gives_numpys_strides(seed):
    rng = np.random.default_rng(seed)
    laid_out = guessed = 0
    for _ in range(150):
        shape = tuple(int(n) for n in rng.choice([1, 2, 3, 5], int(rng.integers(2, 5))))
        steps = [(str(rng.choice(KINDS)), int(rng.integers(0, 1 << 30))) for _ in range(int(rng.integers(1, 5)))]

        def program(x):
            for kind, s in steps:
                x = _step(x, kind, np.random.default_rng(s))
            return x

        x = np.ones(shape, np.float32)
        _, outputs, _, _ = trace(program, (x,), {})
        model = layout.numpy_strides(topological(outputs))[outputs[0].id]
        real = program(x)
        numpy_strides = tuple(s // real.itemsize for s in real.strides)
        if not real.size:  # (an empty diagonal: no element to lay out)
            continue
        if not layout.known(outputs[0]):  # a guess, and said to be one
            guessed += 1
            continue
        assert _sized_strides(real.shape, model) == _sized_strides(real.shape, numpy_strides), (shape, steps)
        laid_out += not real.flags.c_contiguous
    assert laid_out > 20  # the programs do reach layouts other than C's
    assert guessed < 10


@pytest.mark.parametrize("seed", range(3))
def test_an_argument_passed_as_a_view_starts_the_model_from_its_strides(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(80):
        base = np.ones(tuple(int(n) for n in rng.choice([2, 3, 5], int(rng.integers(2, 4)))), np.float32)
        x = _step(base, str(rng.choice(["transpose", "slice", "reverse", "broadcast", "copy"])), rng)
        steps = [(str(rng.choice(KINDS)), int(rng.integers(0, 1 << 30))) for _ in range(int(rng.integers(0, 3)))]

        def program(a):
            for kind, s in steps:
                a = _step(a, kind, np.random.default_rng(s))
            return a + 0  # a ufunc result: laid out as NumPy's iterator orders its operand

        _, outputs, _, _ = trace(program, (x,), {})
        model = layout.numpy_strides(topological(outputs))[outputs[0].id]
        real = program(x)
        if layout.known(outputs[0]) and real.size:
            assert _sized_strides(real.shape, model) == _sized_strides(real.shape, tuple(s // real.itemsize for s in real.strides)), steps


def test_iteration_order_follows_strides_and_keeps_c_order_on_ties():
    assert layout.iteration_order((4, 5), [(1, 4)]) == (1, 0)          # a transpose's view
    assert layout.iteration_order((4, 5), [(1, 4), (5, 1)]) == (0, 1)  # operands disagree: C order
    assert layout.iteration_order((4, 5), [(0, 1), (1, 4)]) == (1, 0)  # a broadcast operand has no say
    assert [d for d in layout.iteration_order((4, 1, 5), [(1, 7, 4)]) if d != 1] == [2, 0]  # a unit axis: anywhere


def test_a_run_is_what_one_stride_steps_through():
    assert layout.inner_run((3, 4, 5), (20, 5, 1), 0) == 60
    assert layout.inner_run((3, 4, 5), (40, 10, 2), 0) == 60     # evenly spaced: one stride of 2
    assert layout.inner_run((3, 4, 5), (24, 6, 1), 1) == 5       # rows of a slice
    assert layout.inner_run((3, 4, 5), (48, 6, 1), 0) == 5
    assert layout.inner_run((3, 4, 5), (30, 5, 1), 0) == 20      # a slice of the outer axis: inner two run on
    assert layout.inner_run((2, 3), (0, 0), 0) == 6              # a broadcast of one element
    assert layout.inner_run((2, 1, 3), (3, 9, 1), 0) == 6        # unit axes stride nowhere


def test_a_copy_order_numpy_does_not_know_is_refused_as_numpy_refuses_it():
    from compiler import jit
    cases = [(lambda a: a.copy(order="X"), ValueError, "order must be one of 'C', 'F', 'A', or 'K'"),
             (lambda a: np.copy(a, order="rows"), ValueError, "order must be one of 'C', 'F', 'A', or 'K'"),
             (lambda a: a.astype(np.float32, order=3), TypeError, "order must be str, not int")]
    for fn, error, message in cases:
        with pytest.raises(error, match=message):
            fn(np.ones((2, 2)))  # NumPy
        with pytest.raises(error, match=message):
            jit(fn)(np.ones((2, 2)))


def test_np_copy_of_a_numpy_scalar_is_an_array_as_numpys_is():
    # -x of a 0-d array is a NumPy scalar, which np.putmask refuses; np.copy makes it a 0-d array again
    from compiler import jit

    def fn(x):
        copied = np.copy(-x)
        np.putmask(copied, copied > 0, [7])
        return copied

    x = np.array(-1.5, np.float16)
    got, want = jit(fn)(x), fn(x)
    assert type(want) is np.ndarray and want.shape == () and want == 7
    assert got.dtype == want.dtype and got.shape == () and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("program", [lambda b: np.modf(b)[1], lambda b: np.sin(b), lambda b: b / 3,
                                     lambda b: np.where(b > 0, b, 0.5), lambda b: np.sin(b.astype(np.float64)),
                                     lambda b: np.sin(b.astype(np.int8)), lambda b: np.cumsum(b.astype(np.float32), axis=0)],
                         ids=["modf", "sin", "divide", "where", "sin-of-astype", "sin-of-int8-astype", "cumsum-of-astype"])
def test_a_loop_converting_a_broadcast_reads_it_where_astype_allocates_it(program):
    # a ufunc whose loop converts an int32 broadcast (zero strides along axis 0) reads it as it lies, so its
    # iterator keeps C order; astype allocates an array of its own, the broadcast axis innermost, and a ufunc
    # over that follows it (fuzz seed 1175: modf of a broadcast came back Fortran-ordered)
    b = np.broadcast_to(np.arange(3, dtype=np.int32) - 1, (4, 3))
    real, got = program(b), jit(program)(b)
    assert got.dtype == real.dtype and np.array_equal(got, real)
    assert got.strides == real.strides


def _numpy_and_compiled(program, *args, exact=True):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        real, got = program(*args), jit(program)(*args)
    assert got.dtype == real.dtype
    if exact:
        assert np.array_equal(got, real, equal_nan=True)
    else:  # (LU's rounding is not LAPACK's)
        np.testing.assert_allclose(got, real, rtol=1e-12, atol=1e-12)
    return real, got


@pytest.mark.parametrize("argument", [np.asfortranarray(np.arange(12.0).reshape(3, 1, 4)),
                                      np.lib.stride_tricks.as_strided(  # (a unit axis' stride is never stepped)
                                          np.asfortranarray(np.arange(12.0).reshape(3, 1, 4)), strides=(8, 400, 24))],
                         ids=["fortran", "fortran-other-unit-stride"])
def test_zeros_like_growing_a_unit_axis_keeps_a_contiguous_prototypes_order(argument):
    # NumPy's new array "like" a C- or Fortran-contiguous prototype is C- or Fortran-ordered whatever strides
    # its unit axes have (they sorted the grown axis outermost: the model said (1, 12, 3), NumPy's (1, 3, 15))
    assert argument.flags.f_contiguous and not argument.flags.c_contiguous
    real, got = _numpy_and_compiled(lambda x: np.zeros_like(x, shape=(3, 5, 4)) + x, argument)
    assert got.strides == real.strides == (8, 24, 120)


def test_broadcast_to_strides_unit_axes_nowhere_as_numpy():
    # np.broadcast_to gives a unit axis stride 0, so an array "like" the broadcast keeps C order when it grows
    def program(v):
        return np.zeros_like(np.broadcast_to(v[::2][:1], (2, 1)), shape=(2, 2)) + v[0]
    real, got = _numpy_and_compiled(program, np.arange(4.0))
    assert got.strides == real.strides == (16, 8)


@pytest.mark.parametrize("order, copies", [("C", True), ("F", False), ("A", False), ("K", False)])
def test_astype_without_copy_returns_the_array_only_where_it_is_laid_out_as_asked(order, copies):
    # a Fortran-ordered array: astype(copy=False) of its own dtype is the array itself unless the order asks
    # for another layout, so a write into the result reaches the array's memory or not, as in NumPy
    def program(v):
        z = np.zeros_like(v, shape=(4, 3)).T
        y = z.astype(z.dtype, order=order, copy=False)
        y[0] = v[:4]
        return z + 0
    real, got = _numpy_and_compiled(program, np.arange(1.0, 5.0))
    assert (not real.any()) is copies


def test_astype_of_a_reversed_view_in_order_a_is_c_ordered():
    # 'A' is Fortran's only for a Fortran-contiguous array; a reversed view of one is neither (folded too)
    def program(v):
        return v.reshape(3, 4).copy(order="F")[::-1].astype(np.float32, order="A")
    real, got = _numpy_and_compiled(program, np.arange(12.0))
    assert got.strides == real.strides == (16, 4)


def test_masked_mean_and_var_divide_into_their_sums_memory():
    # NumPy's _mean/_var divide the masked sum by its count with true_divide(out=the sum): the quotient keeps
    # the sum's layout (Fortran's here), not the layout of a new array from both operands
    x = np.asfortranarray(np.arange(16.0).reshape(4, 2, 2))
    for program in (lambda a: np.var(a, axis=1, keepdims=True, where=a > 3, ddof=1),
                    lambda a: np.mean(a, axis=1, keepdims=True, where=a > 3),
                    lambda a: np.std(a, axis=1, keepdims=True, where=np.True_)):
        real, got = _numpy_and_compiled(program, x)
        assert got.strides == real.strides == (8, 32, 32)


def test_weighted_average_converts_as_it_multiplies_as_numpy_does():
    # np.average multiplies with dtype=: the loop reads a broadcast where it lies, so the product (and the
    # average) is C-ordered; a converted copy first put the broadcast's zero-stride axis innermost
    x = np.arange(14, dtype=np.float16).reshape(2, 7)
    real, got = _numpy_and_compiled(
        lambda a: np.average(np.broadcast_to(a, (3, 2, 7)), axis=1, weights=[1, 1]), x)
    assert got.dtype == np.float64
    assert got.strides == real.strides == (56, 8)


def test_ravel_multi_index_of_broadcast_coordinates_is_laid_out_as_numpys_iterator():
    # NumPy's iterator over coordinates broadcast along their first axis allocates a C-ordered result; the
    # model's sum of converted copies put the zero-stride axis innermost
    def program(x, y):
        spread = (np.broadcast_to(x[:1], x.shape), np.broadcast_to(y[:1], y.shape))
        return np.ravel_multi_index(spread, (3, 2), mode="wrap", order="F")
    rows = np.tile(np.arange(8), (3, 1))
    real, got = _numpy_and_compiled(program, rows, 1 - rows)
    assert got.dtype == np.intp
    assert got.strides == real.strides == (64, 8)

def test_linalg_solve_lays_its_loop_axes_out_as_numpys_gufunc():
    # the solution's batch axes follow b's Fortran order, as NumPy's gufunc iterator lays them out
    a = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    b = np.asfortranarray(np.arange(54.0).reshape(3, 2, 3, 3))
    real, got = _numpy_and_compiled(np.linalg.solve, a, b, exact=False)
    assert got.strides == real.strides


def test_a_folded_constant_keeps_a_guessed_layout_guessed():
    # a value the model only guesses the layout of (marked so, as where NumPy's own call on stand-ins fails)
    # stays marked when it is folded from constants, and what follows it comes back C-ordered rather than
    # with a wrong claim
    def program(v):
        guessed = Tensor(P.layout_unknown(const_node(np.arange(6.0).reshape(2, 3))))
        return np.negative(guessed).T + v[0]
    _, outputs, _, _ = trace(program, (np.ones(2),), {})
    assert not layout.known(outputs[0])
    real = np.negative(np.arange(6.0).reshape(2, 3)).T + 1.0
    got = jit(program)(np.ones(2))
    assert got.dtype == real.dtype and np.array_equal(got, real)
    assert got.flags.c_contiguous


def test_results_come_back_laid_out_as_numpys():
    # a result NumPy lays out as a fresh array in another order than C's (a transpose's view, a ufunc of
    # one, a Fortran copy) comes back with NumPy's strides, so NumPy code that goes on with it sums it in
    # the same order; a view that is no fresh array (a slice's gaps, a broadcast) comes back C-ordered
    rng = np.random.default_rng(40)
    permuted = 0
    for _ in range(50):
        shape = tuple(int(n) for n in rng.choice([1, 2, 3, 5], int(rng.integers(2, 4)), p=[0.1, 0.3, 0.3, 0.3]))
        kinds = [k for k in KINDS if k != "like"]  # (np.empty_like's values are whatever memory held)
        steps = [(str(rng.choice(kinds)), int(rng.integers(0, 1 << 30))) for _ in range(int(rng.integers(1, 4)))]
        steps = [("transpose", int(rng.integers(0, 1 << 30)))] * int(rng.random() < 0.7) + steps

        def program(x):
            for kind, s in steps:
                x = _step(x, kind, np.random.default_rng(s))
            return x

        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        real, got = program(x), jit(program)(x)
        assert got.dtype == real.dtype and np.array_equal(got, real), steps
        real_strides = tuple(s // real.itemsize for s in real.strides)
        _, outputs, _, _ = trace(program, (x,), {})
        if not layout.known(outputs[0]) or real.flags.c_contiguous or layout.memory_axes(real.shape, real_strides) is None:
            assert got.flags.c_contiguous, steps
        else:
            assert _sized_strides(real.shape, got.strides) == _sized_strides(real.shape, real.strides), steps
            permuted += 1
    assert permuted > 10


def _registry_results(seeds):
    for name, info, params, operands in registry_cases(seeds):
        try:
            with np.errstate(all="ignore"):
                want = list(leaves(info([o.copy() for o in operands], params)))
        except Exception:  # noqa: BLE001 (a case NumPy refuses: the fuzzer checks the compiler refuses it too)
            continue
        got = []

        def fn(*xs, info=info, params=params, got=got):
            out = info([x.copy() for x in xs], params)
            got.extend(leaves(out))
            return out

        with np.errstate(all="ignore"):
            trace(fn, tuple(operands), {})
        yield name, want, got


def test_every_registered_op_lays_its_result_out_as_numpy_does():
    # the op registry drives it: a NumPy function the compiler composes of primitives (an axis moved to
    # the end and back, say) must still give the layout NumPy's own result has, which the result's
    # strides and later sums follow (a result with one axis longer than 1 has no layout to speak of)
    unknown, checked = set(), 0
    for name, want, got in _registry_results(range(6)):
        for w, g in zip(want, got):
            if not isinstance(w, np.ndarray) or not isinstance(g, Tensor) or sum(n > 1 for n in w.shape) < 2 \
                    or not w.size:
                continue
            if not layout.known(g.node):
                unknown.add(name)
                continue
            checked += 1
            model, real = layout.strides_of(g.node), tuple(s // w.itemsize for s in w.strides)
            assert _sized_strides(w.shape, model) == _sized_strides(w.shape, real), (name, w.shape, model, real)
    assert checked > 500
    # the model knows every registered op's layout over C-ordered operands
    assert not unknown, unknown


def _compiled_layout_problems(label: str, program, numpy_arguments, compiled_arguments) -> list | None:
    """compare_layout's problems of each compiled result of ``program`` against NumPy's; None where either
    raises (refusals and NumPy's errors are the fuzzer's to compare)."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = list(leaves(program(*numpy_arguments)))
            got = list(leaves(jit(program)(*compiled_arguments)))
    except Exception:  # noqa: BLE001
        return None
    return [problem for w, g in zip(want, got) for problem in compare_layout(w, g, label)]


def test_registered_ops_on_views_come_back_laid_out_as_numpys():
    # every op of the registry on operands passed Fortran-ordered or transposed (so the model starts from
    # the caller's strides): a result that comes back laid out otherwise than C-contiguously has NumPy's
    # strides (the fuzzer's check, over C-ordered operands, is the same)
    problems, ran = [], 0
    for seed in range(2):
        for name, info, params, operands in registry_cases([seed]):
            views = [(np.asfortranarray(o) if seed else o.T.copy().T) if isinstance(o, np.ndarray) and o.ndim > 1 else o
                     for o in operands]
            if not any(isinstance(o, np.ndarray) and o.ndim > 1 for o in operands):
                continue

            def fn(*xs, info=info, params=params):
                return info(list(xs), params)

            found = _compiled_layout_problems(f"{name} {params}", fn,
                                              [o.copy(order="K") if isinstance(o, np.ndarray) else o for o in views], views)
            if found is not None:
                ran += 1
                problems += found
    assert ran > 250
    assert not problems, problems


@pytest.mark.parametrize("spread", [lambda a: np.broadcast_to(a[:1], a.shape),
                                    lambda a: np.broadcast_to(a[..., :1], a.shape)], ids=["first-axis", "last-axis"])
def test_registered_ops_on_broadcasts_lay_their_results_out_as_numpy_does(spread):
    # every op of the registry on operands broadcast inside the program (zero strides, which decide nothing
    # in NumPy's iterator: np.average and np.ravel_multi_index went wrong over them, fuzz seed 1190; the
    # cases of seed 3 hold the ravel_multi_index that did)
    problems, ran = [], 0
    for name, info, params, operands in registry_cases([3]):
        if not any(isinstance(o, np.ndarray) and o.ndim > 1 for o in operands):
            continue

        def fn(*xs, info=info, params=params):
            return info([spread(x) if getattr(x, "ndim", 0) > 1 else x for x in xs], params)

        found = _compiled_layout_problems(f"{name} {params}", fn, operands, operands)
        if found is not None:
            ran += 1
            problems += found
    assert ran > 150
    assert not problems, problems


# --------------------------------------------------------------------------- orders that read memory

_LAID_OUT = {
    "C": lambda a: a, "transposed": lambda a: a.T, "permuted": lambda a: a.transpose(1, 2, 0),
    "reversed": lambda a: a[:, ::-1], "permuted-reversed": lambda a: a.transpose(2, 0, 1)[::-1],
    "sliced": lambda a: a[:, ::2, 1:], "Fortran": lambda a: a.T.copy().T, "broadcast": lambda a: np.broadcast_to(a[:, :1], a.shape),
    "broadcast-element": lambda a: np.broadcast_to(a[0, 0], a.shape), "unit-axis": lambda a: a[:, :1].transpose(2, 1, 0),
    "Fortran-2d": lambda a: a[0].T.copy().T, "sliced-copy": lambda a: a.T.copy()[::2],
}


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("laid_out", list(_LAID_OUT))
def test_ravel_flatten_and_reshape_read_in_numpys_order(laid_out, order):
    """"K" reads as NumPy's iterator visits memory (a reversed axis forwards, a broadcast's zero strides deciding
    nothing), "A" Fortran's order only for a Fortran- and not C-contiguous array: both follow the layout model."""
    v = _LAID_OUT[laid_out]
    fns = [lambda a: np.ravel(v(a), order), lambda a: v(a).ravel(order), lambda a: v(a).flatten(order)]
    if order != "K":
        fns += [lambda a: v(a).reshape(2, -1, order=order) * 1, lambda a: np.reshape(v(a), (-1, 2), order=order) * 1]
    a = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    for fn in fns:
        want, got = fn(a), jit(fn)(a)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert got.strides == want.strides or 1 in want.shape


def test_reshape_in_order_k_and_unknown_orders_are_numpys_errors():
    a = np.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match="order 'K' is not permitted for reshaping"):
        jit(lambda x: x.reshape(3, 2, order="K"))(a)
    with pytest.raises(ValueError, match=r"order must be one of 'C', 'F', 'A', or 'K' \(got 'X'\)"):
        jit(lambda x: np.ravel(x, "X"))(a)


def test_every_registered_op_on_fortran_and_transposed_operands_lays_its_result_out_as_numpy_does():
    """The model against NumPy from operands laid out otherwise than C (passed so, the model starts from the
    caller's strides): every fresh, dense result has NumPy's strides (unit axes aside, which stride nowhere),
    which later sums, ravel(order='K') and the returned array follow."""
    mismatches, checked = [], 0
    for seed in range(8):
        for name, info, params, operands in registry_cases([seed]):
            views = [(np.asfortranarray(o) if seed % 2 else o.T.copy().T) if isinstance(o, np.ndarray) and o.ndim > 1
                     else o for o in operands]
            if not any(isinstance(o, np.ndarray) and o.ndim > 1 for o in views):
                continue
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    want = list(leaves(info([o.copy(order="K") if isinstance(o, np.ndarray) else o for o in views],
                                            params)))
                    got = []

                    def fn(*xs, info=info, params=params, got=got):
                        out = info(list(xs), params)
                        got.extend(leaves(out))
                        return out

                    trace(fn, tuple(views), {})
            except Exception:  # noqa: BLE001 (refusals and NumPy's errors are the fuzzer's to compare)
                continue
            for w, g in zip(want, got):
                if not isinstance(w, np.ndarray) or not isinstance(g, Tensor) or w.ndim < 2 or not w.size \
                        or not layout.known(g.node):
                    continue
                real = tuple(s // w.itemsize for s in w.strides)
                if not (w.flags.c_contiguous or layout.memory_axes(w.shape, real) is not None):
                    continue  # a view with gaps, a broadcast, a reversal: NumPy's strides, not a layout
                checked += 1
                if _sized_strides(w.shape, layout.strides_of(g.node)) != _sized_strides(w.shape, real):
                    mismatches.append((name, params, w.shape, layout.strides_of(g.node), real))
    assert checked > 1000
    assert not mismatches, mismatches


_BROADCAST_INDEXED = {
    "scalar-spread": lambda x: np.broadcast_to(x.mean(), (1, 1, 2, 1))[[-1, -1, -1]],
    "kept-broadcast-axis": lambda x: np.broadcast_to(x[:, None, :], (4, 3, 5))[[0, 2, 1, 2]],
    "fortran-index": lambda x: np.broadcast_to(x[:, :1], (4, 5))[np.asfortranarray([[0, 1, 2], [3, 2, 1]]), 1:],
    "apart": lambda x: np.broadcast_to(x[:, None, :], (4, 3, 5))[[1, 0], :, [4, 4]],
    "integer-and-array": lambda x: np.broadcast_to(x[None], (3, 4, 5))[:, 2, [[1, 1], [0, 3]]],
}


@pytest.mark.parametrize("index", _BROADCAST_INDEXED, ids=list(_BROADCAST_INDEXED))
def test_advanced_indexing_of_a_broadcast_is_laid_out_as_numpys(index):
    # NumPy's iterator orders a broadcast operand's kept axes by rules of its own: the model asks NumPy
    # (its indexing of stand-ins laid out alike), so a 'K' ravel of the result reads in NumPy's order
    # (fuzz seed 1192: it was refused, the layout only guessed)
    x = np.arange(20.0).reshape(4, 5)
    _, outputs, _, _ = trace(lambda a: _BROADCAST_INDEXED[index](a), (x,), {})
    assert layout.known(outputs[0])
    real, got = _numpy_and_compiled(lambda a: _BROADCAST_INDEXED[index](a) * 2, x)
    assert got.strides == real.strides
    real, got = _numpy_and_compiled(lambda a: np.ravel(_BROADCAST_INDEXED[index](a), order="K"), x)


@pytest.mark.parametrize("function", [np.nansum, np.nanprod, np.nanmean, np.nanvar, np.nanstd, np.nancumsum],
                         ids=lambda f: f.__name__)
def test_nan_functions_of_a_broadcast_reduce_numpys_copy_of_it(function):
    # NumPy's nan functions write 0 (1) into a 'K' copy of the array where it is NaN (its layout: a broadcast's
    # zero-stride axis innermost), sum that copy, and divide (nanvar: subtract, square, put NaN) in place:
    # the result is laid out after the copy, not as a fresh array of the broadcast
    x = np.arange(20.0, dtype=np.float32).reshape(4, 5) / 7
    x[1, 2] = np.nan
    real, got = _numpy_and_compiled(lambda a: function(np.broadcast_to(a[:, None, :], (4, 3, 5)), axis=0), x)
    assert got.dtype == np.float32
    assert got.strides == real.strides and not real.flags.c_contiguous


_SPREAD = {  # operands NumPy lays out neither C- nor Fortran-contiguous, and one Fortran-contiguous
    "broadcast-middle": lambda a: np.broadcast_to(a[:, None, :], (4, 3, 5)),
    "broadcast-transposed": lambda a: np.broadcast_to(a.T[:, None, :], (5, 3, 4)),
    "fortran-3d": lambda a: np.stack([a, a + 1, a * 2], axis=1).copy(order="F"),
}


@pytest.mark.parametrize("spread", _SPREAD, ids=str)
@pytest.mark.parametrize("program", [
    pytest.param(lambda v: np.nan_to_num(v), id="nan_to_num"),  # np.array(x, copy=True): a 'K' copy
    pytest.param(lambda v: np.nan_to_num(v, nan=1.5, posinf=2.0), id="nan_to_num-values"),
    pytest.param(lambda v: np.gradient(np.nan_to_num(v), axis=0), id="gradient-of-nan_to_num"),
    pytest.param(lambda v: np.round(v, 2), id="round-decimals"),  # PyArray_Round's own allocation: C or Fortran
    pytest.param(lambda v: np.round(v, -1), id="round-negative-decimals"),
    pytest.param(lambda v: np.round((v * 7).astype(np.int16), -1), id="round-integers-to-tens"),
    # integers to decimals >= 0: NumPy's 'K' copy (of a broadcast: not laid out as the broadcast is)
    pytest.param(lambda v: np.round(np.broadcast_to((v * 7).astype(np.int16)[:, :1], v.shape)), id="round-integers"),
    pytest.param(lambda v: np.broadcast_to(v.astype(np.int64)[:1], v.shape).round(2), id="round-integers-decimals"),
    pytest.param(lambda v: np.round(v), id="round-rint"),  # decimals=0: the rint ufunc, laid out as ufuncs are
])
def test_nan_to_num_and_round_lay_their_results_out_as_numpy_does(program, spread):
    x = np.arange(20.0, dtype=np.float32).reshape(4, 5) / 7
    x[1, 2], x[0, 1], x[3, 4] = np.nan, np.inf, -np.inf
    real, got = _numpy_and_compiled(lambda a: program(_SPREAD[spread](a)), x)
    assert got.strides == real.strides
    _numpy_and_compiled(lambda a: np.ravel(program(_SPREAD[spread](a)), order="K"), x)


@pytest.mark.parametrize("spread", list(_SPREAD) + ["sliced"], ids=str)
@pytest.mark.parametrize("program", [
    pytest.param(np.positive, id="positive"), pytest.param(np.conjugate, id="conjugate"),
    pytest.param(lambda v: v.conj(), id="method-conj"), pytest.param(lambda v: np.conjugate(v > 1), id="conjugate-bool"),
    pytest.param(lambda v: np.clip(v, None, None), id="clip-without-bounds"),  # (NumPy's positive)
])
def test_positive_and_conjugate_make_a_fresh_array_laid_out_as_a_unary_ufuncs(program, spread):
    # their values are the operand's, but NumPy's result is a fresh array in its iterator's order, not laid
    # out as a broadcast or a slice with gaps is (fuzz seed 1242: np.column_stack of np.positive of a broadcast)
    spread_out = _SPREAD.get(spread, lambda a: np.stack([a, a], axis=1)[:, :, ::2])
    x = np.arange(20.0, dtype=np.float32).reshape(4, 5) / 7
    real, got = _numpy_and_compiled(lambda a: np.concatenate([program(spread_out(a))], axis=1), x)
    assert got.strides == real.strides
    _numpy_and_compiled(lambda a: np.ravel(program(spread_out(a)), order="K"), x)


@pytest.mark.parametrize("program", [np.positive, np.conjugate], ids=["positive", "conjugate"])
def test_a_sum_of_positive_of_a_broadcast_adds_in_numpys_order(program):
    # NumPy sums the fresh C array pairwise along its rows; the broadcast itself it would sum otherwise
    x = np.random.default_rng(0).standard_normal((2, 40000)).astype(np.float32)
    _numpy_and_compiled(lambda a: program(np.broadcast_to(a[0], (3, a.shape[1]))).sum(), x)


@pytest.mark.parametrize("spread", _SPREAD, ids=str)
@pytest.mark.parametrize("program", [
    # linspace's np.subtract(stop, start, dtype=...) runs over the endpoints as they lie (a broadcast's zero
    # strides ignored), not over a converted 'K' copy; start is added and the last sample set in place
    pytest.param(lambda v: np.linspace(v.astype(np.uint64), 9, num=3), id="linspace-uint64"),
    pytest.param(lambda v: np.linspace(v, v * 2 + 1, num=4, endpoint=False, axis=-1), id="linspace-axis"),
    pytest.param(lambda v: np.logspace(v.astype(np.int16), 2, num=2, axis=1), id="logspace-int16"),
    # geomspace sets its ends and puts the sign back in place, in the memory logspace gave it
    pytest.param(lambda v: np.geomspace(v + 1, 50, num=1), id="geomspace-one-sample"),
    pytest.param(lambda v: np.geomspace(-v - 1, -50, num=3, axis=2), id="geomspace-negative"),
])
def test_spaced_samples_are_laid_out_as_numpys(program, spread):
    x = np.arange(20.0, dtype=np.float32).reshape(4, 5) / 3
    real, got = _numpy_and_compiled(lambda a: program(_SPREAD[spread](a)), x, exact=False)
    assert [s for s, n in zip(got.strides, got.shape) if n != 1] == \
        [s for s, n in zip(real.strides, real.shape) if n != 1]


@pytest.mark.parametrize("spread", _SPREAD, ids=str)
@pytest.mark.parametrize("program", [
    pytest.param(lambda v: np.vecdot(v, v * 2, axis=1), id="vecdot-axis"),
    pytest.param(lambda v: np.vecdot(v, v, axis=0, keepdims=True), id="vecdot-axis-keepdims"),
    pytest.param(lambda v: np.linalg.vecdot(v, v[:1], axis=2), id="linalg-vecdot"),
    pytest.param(lambda v: np.matmul(v, v, axes=[(0, 2), (2, 0), (1, 2)]), id="matmul-axes"),
])
def test_gufuncs_with_placed_core_axes_lay_their_results_out_as_numpy_does(program, spread):
    # the loop axes of a gufunc's result follow NumPy's iterator over its operands' loop axes, wherever
    # axes= put the core ones
    x = np.arange(20.0, dtype=np.float32).reshape(4, 5) / 8
    real, got = _numpy_and_compiled(lambda a: program(_SPREAD[spread](a)), x, exact=False)
    assert [s for s, n in zip(got.strides, got.shape) if n != 1] == \
        [s for s, n in zip(real.strides, real.shape) if n != 1]
