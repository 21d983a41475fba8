"""The ufuncs whose values are their library's (exp, tanh, power, ...: ``primitives.NUMPY_LOOP_UFUNCS``) call
NumPy's own loop on the CPU, so every bit is NumPy's: the C library's functions differ from NumPy's SIMD ones
(its AVX-512 exp, SVML's pow) in up to 40% of float32 elements, so each test here failed when the kernel
called the C library. NumPy itself is the reference, as the compiler promises NumPy's values."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from compiler import jit
from compiler.primitives import NUMPY_LOOP_UFUNCS

SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -1e-39, 1.0, -1.0, 0.5, 2.0, 88.7, -104.0, 710.0, 1e30]


def _values(name: str, dtype, n: int = 3000) -> np.ndarray:
    """Random values in and around the function's domain, with the special ones NumPy's loops branch on."""
    rng = np.random.default_rng(zlib.crc32(f"{name}/{np.dtype(dtype).name}".encode()))  # the same values every run
    scale = {"exp": 30.0, "exp2": 40.0, "expm1": 30.0, "sinh": 30.0, "cosh": 30.0, "tanh": 10.0}.get(name, 4.0)
    x = np.concatenate([rng.standard_normal(n) * scale, rng.uniform(-1, 1, n // 4), SPECIALS])
    with np.errstate(all="ignore"):
        return x.astype(dtype)


def _same_bits(got, expected):
    assert got.dtype == expected.dtype and got.shape == expected.shape
    bits = f"u{expected.dtype.itemsize}"
    mismatched = np.flatnonzero(np.ascontiguousarray(got).view(bits) != np.ascontiguousarray(expected).view(bits))
    assert mismatched.size == 0, (f"{mismatched.size} of {got.size} differ, first at {mismatched[0]}: "
                                  f"{got.flat[mismatched[0]]!r} where NumPy has {expected.flat[mismatched[0]]!r}")


UNARY = [n for n in NUMPY_LOOP_UFUNCS if getattr(np, n).nin == 1]
BINARY = [n for n in NUMPY_LOOP_UFUNCS if getattr(np, n).nin == 2]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("name", UNARY)
def test_unary_library_functions_are_numpys_bit_for_bit(name, dtype):
    ufunc = getattr(np, name)
    x = _values(name, dtype)
    with np.errstate(all="ignore"):
        _same_bits(jit(lambda a: ufunc(a))(x), ufunc(x))
        # a transposed operand, and an int8 one (NumPy picks the float16 loop for it)
        m = x[: 60 * 50].reshape(60, 50)
        _same_bits(jit(lambda a: ufunc(a.T))(m), ufunc(m.T))
    small = np.arange(-128, 128, dtype=np.int8)
    with np.errstate(all="ignore"):
        _same_bits(jit(lambda a: ufunc(a))(small), ufunc(small))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("name", BINARY)
def test_binary_library_functions_are_numpys_bit_for_bit(name, dtype):
    ufunc = getattr(np, name)
    x, y = _values(name, dtype), np.random.default_rng(5).permutation(_values(name, dtype))
    with np.errstate(all="ignore"):
        _same_bits(jit(lambda a, b: ufunc(a, b))(x, y), ufunc(x, y))
        _same_bits(jit(lambda a, b: ufunc(a, b))(np.abs(x), y), ufunc(np.abs(x), y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", UNARY + BINARY)
def test_an_operand_numpys_loop_reads_backwards_is_read_backwards(name, dtype):
    """Where NumPy's call is one inner loop over an operand laid out reversed (x[::-1], a fully reversed array),
    its loop reads that operand at a negative step while it writes the result it allocated forwards, and its
    SIMD loops take another path there (float32 arctan of x[::-1] differs from arctan of its copy in a quarter
    of the elements); the kernel's call reads a reversed copy from its end."""
    ufunc = getattr(np, name)
    x = _values(name, dtype)
    m = x[: 60 * 50].reshape(60, 50)
    if ufunc.nin == 1:
        cases = [(lambda a: ufunc(a[::-2]), (x,)), (lambda a: ufunc(a[::-1, ::-1]), (m,))]
    else:
        y = np.random.default_rng(6).permutation(x)
        cases = [(lambda a, b: ufunc(a, b[::-1]), (x, y)), (lambda a, b: ufunc(a[:1], b[::-1]), (x, y))]
    with np.errstate(all="ignore"):
        for fn, args in cases:
            _same_bits(jit(fn)(*args), fn(*args))


def _one_element_views(memory: np.ndarray, step: int) -> np.ndarray:
    """The one-element view of ``memory`` (of length ``abs(step)``) at ``step``: C-contiguous to NumPy's flags."""
    view = memory[::step]
    assert view.shape == (1,) and view.flags.c_contiguous
    return view


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_one_element_operand_is_read_at_the_stride_numpys_trivial_loop_passes(dtype):
    """NumPy calls a ufunc of one element without its iterator where the operands allow
    (``try_trivial_single_output_loop``), passing an operand of one axis at its own stride, though its flags
    call it C-contiguous: float32's and float64's loops leave their SIMD path at a negative one (``np.sinh``
    of ``x[::-2]`` holding one element differs from that of ``[x]`` in a quarter of the values) and float16's at
    any but 1 (a 0-d operand's is 0). Where the trivial loop is not taken (operands of other shapes, an out=
    stepping backwards) every operand is read at stride 0. The compiler read every one-element operand
    forwards at step 1, and each dtype's test failed."""
    names = ("cbrt",) if dtype == np.float16 else ("sinh", "cbrt", "arctan", "exp")
    values = np.random.default_rng(14).uniform(0.1, 3.0, 3000 if dtype == np.float16 else 300).astype(dtype)
    steps = (3, -2) if dtype == np.float16 else (-1, -2, 2)
    for name in names:
        ufunc = getattr(np, name)
        into_reversed = lambda a: (o := np.zeros_like(a, shape=2), ufunc(a[::-1], out=o[::-2]), o)[2]  # noqa: E731
        programs = [(ufunc, step) for step in steps] + [
            (lambda a: ufunc(a[::-1]), 1),                                  # reversed in the trace
            (lambda a: ufunc(np.concatenate([a, a])[1:0:-1]), 1),           # a slice of a longer array
            (lambda a: ufunc(a[::-1, None][:, ::-1]), 1),                   # two axes: contiguous
            (lambda a: ufunc(a[0]), 1),                                     # no axis: at stride 0
            (lambda a: np.arctan2(a[::-1], a[None, ::-1]), 1),             # shapes differ: the iterator
            (into_reversed, 1),                                             # out= backwards: the iterator
        ]
        for program, step in programs:
            memory = np.zeros(abs(step), dtype)
            x, compiled = _one_element_views(memory, step), jit(program)
            with np.errstate(all="ignore"):
                for v in values:
                    memory[...] = v
                    _same_bits(compiled(x), program(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("exponent", [-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, -2.0])
def test_power_takes_numpys_fast_paths_exactly_where_numpy_does(exponent, dtype):
    """NumPy's power loop computes x**2.0 as x*x, x**0.5 as sqrt(x), x**-1.0 as 1/x, x**1.0 as x when its
    inner loop sees the exponent at stride 0 (one element, 0-d or broadcast over more than one), and its
    SIMD pow otherwise, which differs from those by an ulp in a tenth of the elements."""
    x = np.abs(_values("power", dtype))
    m = x[:3000].reshape(60, 50)
    cases = [
        (lambda a: a ** exponent, (x,)),                                           # a Python scalar
        (lambda a: np.power(a, dtype(exponent)), (x,)),                            # a NumPy scalar
        (lambda a, e: np.power(a, e), (m, np.array(exponent, dtype))),             # 0-d: stride 0
        (lambda a, e: np.power(a, e), (m, np.array([[exponent]], dtype))),         # (1, 1) broadcast: stride 0
        (lambda a, e: np.power(a, e), (m[:1, :1], np.array([exponent], dtype))),   # (1,) over (1, 1): its own stride
        (lambda a, e: np.power(a, e), (m, np.full((60, 1), exponent, dtype))),     # a column: its own stride
        (lambda a, e: np.power(a, e), (m, np.full(m.shape, exponent, dtype))),     # an array
        (lambda a, e: np.power.outer(a, e), (x[:40], np.array([exponent, 3.0], dtype))),
    ]
    with np.errstate(all="ignore"):
        for fn, args in cases:
            _same_bits(np.asarray(jit(fn)(*args)), np.asarray(fn(*args)))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_ufunc_at_calls_the_loop_per_update_as_numpy_does(dtype):
    """NumPy's ufunc.at calls its loop once per update, at stride 0 (so np.power.at(y, i, 2.0) squares), in
    order where a position repeats; constant and traced positions alike."""
    rng = np.random.default_rng(3)
    y = np.abs(_values("power", dtype))[:500]
    positions = rng.integers(0, 500, 700)
    values = rng.standard_normal(700).astype(dtype)

    def updated(a, how, *operand):
        a = a.copy()
        how.at(a, positions, *operand)
        return a

    with np.errstate(all="ignore"):
        for how, operand in [(np.power, (dtype(2.0),)), (np.power, (dtype(3.0),)), (np.power, (values,)),
                             (np.arctan2, (values,)), (np.hypot, (values,)), (np.exp, ()), (np.tanh, ())]:
            _same_bits(jit(lambda a, *o: updated(a, how, *o))(y, *operand), updated(y, how, *operand))
        traced = jit(lambda a, p, v: (a := a.copy(), np.power.at(a, p, v), a)[2])
        expected = y.copy()
        np.power.at(expected, positions, dtype(0.5))
        _same_bits(traced(y, positions, dtype(0.5)), expected)
        for exponent in (2.0, -1.0, 0.5):  # through a traced mask: the selection at once, each at stride 0
            masked = jit(lambda a: (a := a.copy(), np.power.at(a, a > 1.0, exponent), a)[2])
            expected = y.copy()
            np.power.at(expected, y > 1.0, exponent)
            _same_bits(masked(y), expected)
        # hypot's element is a composition of several ops in the compiler's own lowering, the loop's here
        masked = jit(lambda a, v: (a := a.copy(), np.hypot.at(a, a > 1.0, v), a)[2])
        expected = y.copy()
        np.hypot.at(expected, y > 1.0, values[0])
        _same_bits(masked(y, values[0]), expected)


def test_accumulate_keeps_the_c_library_as_numpys_overlapping_loop_does():
    """ufunc.accumulate hands NumPy's loop overlapping operands, which sends it to its scalar C-library
    loop: the kernel's accumulate calls the C library too (NumPy's SIMD pow differs from it here)."""
    x = np.abs(np.random.default_rng(8).standard_normal(400)) * 0.3 + 0.85
    for dtype in (np.float32, np.float64):
        v = x.astype(dtype)
        with np.errstate(all="ignore"):
            _same_bits(jit(lambda a: np.power.accumulate(a))(v), np.power.accumulate(v))
            _same_bits(jit(lambda a: np.arctan2.accumulate(a))(v), np.arctan2.accumulate(v))


def test_a_kernel_loaded_from_the_disk_cache_binds_numpys_loops(tmp_path, monkeypatch):
    """The kernel's table of NumPy's loops holds this process's addresses, so it is filled as the kernel is
    loaded: compiled here (the ExecutionEngine) and loaded from the cache (dlopen) alike."""
    monkeypatch.setenv("PARITY_CACHE", str(tmp_path))
    x = _values("exp", np.float32)

    def f(a):
        return np.exp(a) + np.tanh(a) * a ** 3.0

    with np.errstate(all="ignore"):
        expected = f(x)
        first = jit(f)
        _same_bits(first(x), expected)
        assert not first.specialize(x).kernel.from_disk_cache
        again = jit(f)
        _same_bits(again(x), expected)
        assert again.specialize(x).kernel.from_disk_cache


def test_the_gpu_lowering_keeps_its_math_functions():
    """Only the CPU calls NumPy's loops (the GPU's are libdevice's): the GPU target's IR has no such call."""
    from compiler.jit import JitFunction

    x = np.ones((4, 8), np.float32)

    def f(a):
        return np.exp(a) * np.power(a, 3.0)

    gpu, cpu = JitFunction(f, "gpu").lower(x).text, JitFunction(f, "cpu").lower(x).text
    assert "parity_numpy_ufunc_" not in gpu and "math.exp %" in gpu and "math.powf" in gpu
    assert cpu.count("func.call @parity_numpy_ufunc_") == 2


def test_without_numpys_loop_interface_the_c_library_computes_them(monkeypatch):
    """``ufunc._get_strided_loop`` is NumPy's private interface for JIT compilers: where a NumPy lacks it (or its
    loop does not give NumPy's values when called so) the CPU target falls back to the C library's functions."""
    from compiler import backend
    from compiler.jit import JitFunction

    monkeypatch.setattr(backend, "numpy_loops_available", lambda: False)
    x = _values("tanh", np.float32)
    assert "parity_numpy_ufunc_" not in JitFunction(lambda a: np.tanh(a), "cpu").lower(x).text
    got = jit(lambda a: np.tanh(a))(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.tanh(x), rtol=4 * np.finfo(np.float32).eps, atol=0)
    monkeypatch.undo()
    assert backend.numpy_loops_available()  # this NumPy has it, and its exp called so is np.exp


def test_parity_numpy_loops_0_computes_them_with_the_c_library(monkeypatch):
    """NumPy's values cost what NumPy's code costs (its SVML pow of a negative base takes a slow path):
    ``PARITY_NUMPY_LOOPS=0`` trades them for the C library's functions, within a few ulps."""
    from compiler import backend
    from compiler.jit import JitFunction

    x = _values("power", np.float32)
    monkeypatch.setenv(backend.NUMPY_LOOPS_ENV, "0")
    backend.numpy_loops_available.cache_clear()
    try:
        assert not backend.get_target("cpu").numpy_loops
        assert "parity_numpy_ufunc_" not in JitFunction(lambda a: a ** 3, "cpu").lower(x).text
        with np.errstate(all="ignore"):
            got, expected = jit(lambda a: a ** 3)(x), x ** 3
        finite = np.isfinite(expected)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got[finite], expected[finite], rtol=4 * np.finfo(np.float32).eps, atol=0)
    finally:
        monkeypatch.undo()
        backend.numpy_loops_available.cache_clear()
    assert backend.get_target("cpu").numpy_loops


def _view_recipe(rng, shape: tuple) -> tuple:
    """A random way to lay out an array of ``shape`` as a view (axes reversed, strided, transposed): the
    shape of the array to make, and how to view it (``_viewed``)."""
    steps = [int(rng.choice([1, 1, -1, 2, -2])) for _ in shape]
    perm = rng.permutation(len(shape)) if rng.random() < 0.3 else np.arange(len(shape))
    return [shape[p] * abs(steps[p]) for p in perm], (perm, steps)


def _viewed(base, how):
    perm, steps = how
    return base.transpose(np.argsort(perm))[tuple(slice(None, None, s) for s in steps)]


def _operand_view(rng, shape: tuple, dtype) -> np.ndarray:
    """A random view of about ``shape`` (leading axes dropped, unit axes to broadcast, laid out by
    ``_view_recipe``), as NumPy's iterator meets operands."""
    shape = list(shape[int(rng.integers(0, len(shape))):] if rng.random() < 0.3 else shape)
    base_shape, how = _view_recipe(rng, [1 if rng.random() < 0.2 else n for n in shape])
    return _viewed(rng.uniform(0.2, 3.0, base_shape).astype(dtype), how)


def _converted_as_the_ufunc_does(arrays: list, loop) -> list:
    """The operands an unmasked ufunc call hands its iterator: before it builds one, NumPy's
    ``check_for_trivial_loop`` (ufunc_object.c) converts each input of another dtype that has no axis or one of
    at most a buffer's elements into a fresh array of the loop's dtype, and stops at the first it cannot."""
    handed = list(arrays)
    for i, a in enumerate(arrays):
        if a.dtype == loop:
            continue
        if a.ndim > 1 or a.ndim == 1 and a.shape[0] > np.getbufsize():
            break
        handed[i] = a.astype(loop)
    return handed


def _numpys_inner_steps(inputs: list, out, mask, loop: np.dtype) -> list[int]:
    """The steps, in elements, of the inputs and the result in the first call of NumPy's loop, from an
    ``np.nditer`` built with the flags a ufunc builds its iterator with (ufunc_object.c's execute_ufunc_loop:
    buffered, growing the inner loop, copying an out= that overlaps an input; ``out`` None: allocated)."""
    masked = [] if mask is None else [mask]
    written = ["writeonly", "allocate", "no_subtype"] if mask is None else ["readwrite", "writemasked"]
    with np.nditer(inputs + [out] + masked, flags=["external_loop", "buffered", "growinner", "delay_bufalloc",
                                                   "zerosize_ok", "refs_ok", "copy_if_overlap"],
                   op_flags=[["readonly", "aligned", "overlap_assume_elementwise"]] * len(inputs) +
                   [written + ["aligned", "no_broadcast", "overlap_assume_elementwise"]] +
                   [["readonly", "arraymask"]] * len(masked),
                   op_dtypes=[loop] * (len(inputs) + 1) + [np.bool_] * len(masked), casting="unsafe") as it:
        it.reset()
        views = it.value if isinstance(it.value, tuple) else (it.value,)
        return [v.strides[0] // loop.itemsize for v in views[:len(inputs) + 1]]


def test_loop_steps_are_the_steps_numpys_iterator_gives_the_loop():
    """``layout.loop_steps`` (the model of NumPy's ufunc iterator: axis order, flips, coalescing, and which
    operands it buffers for calls over several axes) against ``np.nditer`` under the flags a ufunc builds its
    iterator with: every operand's inner step and the result's, on random layouts, broadcasts and
    converted operands, the result allocated or written into an out= view (where= a mask, or not)."""
    from compiler import layout
    from compiler.graph import topological
    from compiler.jit import trace

    rng = np.random.default_rng(11)
    checked = 0
    while checked < 500:
        shape = tuple(int(rng.choice([1, 2, 3, 7, 64, 400, 1500, 5000, 9000])) for _ in range(int(rng.integers(1, 4))))
        if not 2 <= int(np.prod(shape)) <= 400_000:
            continue
        loop, nin = np.dtype(rng.choice(["float32", "float64"])), int(rng.integers(1, 3))
        arrays = [_operand_view(rng, shape, rng.choice([loop, loop, loop, np.int32, np.float16])) for _ in range(nin)]
        result_shape = np.broadcast_shapes(*[a.shape for a in arrays])
        if int(np.prod(result_shape)) < 2:
            continue
        ufunc = np.arctan2 if nin == 2 else np.arctan
        loop = ufunc(*arrays).dtype  # the loop NumPy picks
        out = mask = None
        if rng.random() < 0.5:  # into a view of an array the function makes
            out_base, out_how = _view_recipe(rng, result_shape)
            out_dtype = rng.choice([loop, loop, np.float64])
            out = _viewed(np.zeros_like(arrays[0], shape=out_base, dtype=out_dtype), out_how)  # as traced below
            if rng.random() < 0.5:
                mask = _operand_view(rng, result_shape, np.bool_)

        def program(*a):
            if out is None:
                return ufunc(*a)
            target = _viewed(np.zeros_like(a[0], shape=out_base, dtype=out.dtype), out_how)
            return ufunc(*a, out=target, **({} if mask is None else {"where": mask}))

        _, outputs, _, _ = trace(program, tuple(arrays), {})
        node, = [n for n in topological(outputs) if n.op == ufunc.__name__]
        masked = [] if mask is None else [mask]
        iterated = arrays if mask is not None else _converted_as_the_ufunc_does(arrays, loop)
        steps = layout.loop_steps(node, loop)
        assert list(steps.steps) + [steps.result] == _numpys_inner_steps(iterated, out, mask, loop), \
            (shape, [(a.shape, a.strides, a.dtype.name) for a in arrays + [out] + masked if a is not None])
        checked += 1


def test_loop_steps_where_out_overlaps_an_operand():
    """An out= view sharing memory with an operand, other than as the very same array, makes NumPy's iterator
    write into a temporary laid out in its order (COPY_IF_OVERLAP): ``layout.loop_steps`` against ``np.nditer``
    on operands and out arrays that are reversed and transposed views of one array."""
    from compiler import layout
    from compiler.graph import topological
    from compiler.jit import trace

    rng = np.random.default_rng(14)
    views = [lambda t: t, lambda t: t[::-1], lambda t: t[:, ::-1], lambda t: t[::-1, ::-1], lambda t: t.T,
             lambda t: t.T[::-1], lambda t: t[:, 1:], lambda t: t[:, :-1][:, ::-1]]
    for _ in range(200):
        square = (int(rng.choice([2, 3, 64, 100, 400])),) * 2  # (rows of 400 are too short to buffer two views)
        read, written = (views[int(rng.integers(0, len(views)))] for _ in range(2))
        other = rng.uniform(0.2, 3.0, square).astype(np.float32)[:, ::int(rng.choice([1, -1]))]
        a = rng.uniform(0.2, 3.0, square).astype(np.float32)
        if read(a).shape != written(a).shape:
            continue
        binary = rng.random() < 0.5
        ufunc = np.arctan2 if binary else np.arctan

        def program(a, b):
            t = a.copy()
            ufunc(*((read(t), b[:read(t).shape[0], :read(t).shape[1]]) if binary else (read(t),)), out=written(t))
            return t

        _, outputs, _, _ = trace(program, (a, other), {})
        node, = [x for x in topological(outputs) if x.op == ufunc.__name__]
        t = a.copy()
        arrays = [read(t)] + ([other[:read(t).shape[0], :read(t).shape[1]]] if binary else [])
        steps = layout.loop_steps(node, np.dtype(np.float32))
        assert list(steps.steps) + [steps.result] == _numpys_inner_steps(arrays, written(t), None, np.dtype(np.float32)), \
            (square, [(x.shape, x.strides) for x in arrays + [written(t)]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_operands_are_read_at_the_steps_numpys_iterator_calls_the_loop_with(dtype):
    """Where NumPy's iterator runs several axes, each call of its loop reads an operand at the step its
    layout and the buffering decide (``layout.loop_steps``): a reversed axis backwards in rows too long to
    buffer together, forwards through the buffer in short ones; an exponent broadcast along long rows at
    step 0, so x ** e[:, None] squares where e is 2 (in C order, and with the rows along a Fortran array's
    first axis). The kernel read every such operand forwards before, and seven of these cases differed (in up
    to 40% of the elements); the two buffered ones guard the other side."""
    rng = np.random.default_rng(12)
    x = rng.uniform(0.2, 3.0, (3, 9000)).astype(dtype)
    y = rng.uniform(-3.0, 3.0, (3, 9000)).astype(dtype)
    e = np.array([2.0, 0.5, 3.0], dtype)
    cases = [
        (lambda a: np.arctan(a[:, ::-1]), (x,)),                           # rows of 9,000: backwards
        (lambda a: np.arctan(a[:, :2000][:, ::-1]), (x,)),                 # 6,000 buffered: forwards
        (lambda a, b: np.arctan2(a[:2, :400][:, ::-1], b[:2, :400][:, ::-1]), (x, y)),  # two to buffer: rows
        (lambda a, b: np.arctan2(a[0, ::-1], b[:, ::-1]), (x, y)),        # a reversed row broadcast
        (lambda a: np.exp(a.T[::-1]), (x,)),
        (lambda a, b: a ** b[:, None], (x, e)),                           # step 0 along each row
        (lambda a, b: a[:, ::-1] ** b[:, None], (x, e)),
        (lambda a, b: a ** b, (np.asfortranarray(x.T), e)),               # rows along axis 0
        (lambda a, b: a[:, :400] ** b[:, None], (x, e)),                   # buffered: the exponent forwards
    ]
    with np.errstate(all="ignore"):
        for fn, args in cases:
            _same_bits(jit(fn)(*args), fn(*args))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_result_written_into_out_is_written_at_the_step_numpys_loop_writes_it(dtype):
    """With out=, NumPy's iterator allocates nothing, so it walks an axis every operand steps backwards along
    from its other end (np.arctan(x[::-1], out=o[::-1]) reads and writes forwards) and otherwise writes the
    result at the out view's step, backwards into o[::-1] or o[:, ::-1]; where='s mask counts as an operand.
    An out= array over an operand's memory, other than that very array, is a fresh one NumPy copies back.
    The kernel wrote every result forwards before, and all but two cases differed (the in-place ones differed
    when it wrote them as the out= view lies)."""
    rng = np.random.default_rng(13)
    x = rng.uniform(0.2, 3.0, (3, 9000)).astype(dtype)
    y = rng.uniform(-3.0, 3.0, (3, 9000)).astype(dtype)
    e = np.array([2.0, 0.5, 3.0], dtype)

    def into(view, ufunc, *operands, **where):
        def program(a, *b):
            o = np.zeros_like(a, dtype=view[1])
            ufunc(*(f(a, *b) for f in operands), out=view[0](o), **{k: f(a) for k, f in where.items()})
            return o
        return program

    backwards, columns_backwards = (lambda o: o[::-1], dtype), (lambda o: o[:, ::-1], dtype)
    cases = [
        (into(backwards, np.arctan, lambda a: a[::-1]), (x[0],)),                    # flipped: forwards
        (into(backwards, np.arctan, lambda a: a), (x[0],)),                          # written backwards
        (into(columns_backwards, np.arctan, lambda a: a), (x,)),
        (into(columns_backwards, np.arctan2, lambda a, b: a, lambda a, b: b), (x, y)),
        (into(columns_backwards, np.power, lambda a, b: a, lambda a, b: b[:, None]), (x, e)),  # and row by row
        (into(columns_backwards, np.arctan, lambda a: a, where=lambda a: a > 1.0), (x,)),
        (into((lambda o: o, np.float64), np.arctan, lambda a: a[:, ::-1]), (x,)),  # converted as written
        (into(columns_backwards, np.arctan, lambda a: a[:, ::-1]), (x,)),            # flipped
        (into((lambda o: o[:, 500:0:-1], dtype), np.arctan, lambda a: a[:, :500]), (x,)),  # short rows: buffered
    ]
    # out= over the operand's own memory, reversed: NumPy writes into a fresh array (forwards) and copies it back
    in_place = [
        (lambda a: (t := a.copy(), np.arctan(t, out=t[::-1]), t)[2], (x[0],)),
        (lambda a: (t := a.copy(), np.arctan(t, out=t[:, ::-1]), t)[2], (x,)),
        (lambda a, b: (t := a.copy(), np.power(t, b[:, None], out=t[:, ::-1]), t)[2], (x, e)),
        (lambda a: (t := a.copy(), np.arctan(t[:, ::-1], out=t), t)[2], (x,)),  # (read backwards)
    ]
    # a short 1-d operand of another dtype NumPy converts into a fresh array before it iterates, so it flips no
    # axis: into o[::-2] the result is written backwards
    converted = (x[0, :3000] * 100).astype(np.int32)
    in_place.append((lambda a: (o := np.zeros_like(a, dtype=np.float64), np.cbrt(a[::-2], out=o[::-2]), o)[2],
                     (converted,)))
    with np.errstate(all="ignore"):
        for fn, args in cases + in_place:
            _same_bits(jit(fn)(*args), fn(*args))


@pytest.mark.parametrize("name", UNARY)
def test_float16_loops_take_their_simd_path_only_at_unit_steps(name):
    """NumPy's float16 loops (loops_half.dispatch.c.src) convert a contiguous run to float32 through SVML and
    compute element by element at any other step, which rounds otherwise (cbrt of 2.658 is 1.3848 one way and
    1.3857 the other): a strided operand (x[::2], a column step of 3) or result (out=o[::2]) takes the element
    path, as NumPy's does."""
    ufunc = getattr(np, name)
    x = _values(name, np.float16, 8000)

    def into_every_other(a):
        o = np.zeros_like(a)
        ufunc(a[: (a.size + 1) // 2], out=o[::2])
        return o

    cases = [lambda a: ufunc(a[::2]), into_every_other, lambda a: ufunc(a[: a.size // 2 * 2].reshape(2, -1)[:, ::3])]
    with np.errstate(all="ignore"):
        for fn in cases:
            _same_bits(jit(fn)(x), fn(x))
