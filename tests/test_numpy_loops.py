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
