"""Every f32/f64 matmul goes through the OpenBLAS substitution (compiler/backend.py), which picks the
routine NumPy's matmul picks (dot, gemv, syrk, gemm, or its own loops) with NumPy's flags and leading
dimensions, from the operand shapes and a folded ``.T``; so the products are NumPy's bit for bit. The
registry's random sampling may not meet the degenerate shapes (a unit k, n or m, square operands whose
transposition cannot show in the shape, tall A with m > k), so each is checked here deterministically."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import jit

SHAPES = [  # (m, k, n); the last ones long enough that the routines' summing orders differ
    (4, 8, 1), (4, 1, 5), (1, 8, 3), (1, 1, 1), (7, 7, 7), (16, 3, 5), (3, 16, 2), (9, 4, 12),
    (1, 300, 40), (40, 300, 1), (1, 300, 1), (9, 300, 40),
]
FORMS = {
    "a@b": (lambda a, b: a @ b, lambda m, k, n: ((m, k), (k, n))),
    "a@b.T": (lambda a, b: a @ b.T, lambda m, k, n: ((m, k), (n, k))),
    "a.T@b": (lambda a, b: a.T @ b, lambda m, k, n: ((k, m), (k, n))),
    "a.T@b.T": (lambda a, b: a.T @ b.T, lambda m, k, n: ((k, m), (n, k))),
    "a@vec": (lambda a, b: a @ b, lambda m, k, n: ((m, k), (k,))),
    "vec@b": (lambda a, b: a @ b, lambda m, k, n: ((k,), (k, n))),
    "a@a.T": (lambda a, b: a @ a.T + b[0, 0], lambda m, k, n: ((m, k), (1, 1))),  # NumPy: syrk
    "a.T@a": (lambda a, b: a.T @ a + b[0, 0], lambda m, k, n: ((k, m), (1, 1))),
    "batched": (lambda a, b: a @ b, lambda m, k, n: ((3, m, k), (3, k, n))),
    "batched.T": (lambda a, b: a @ np.swapaxes(b, -1, -2), lambda m, k, n: ((3, m, k), (3, n, k))),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("form", list(FORMS))
def test_blas_matmul_shapes(form, dtype):
    fn, shapes = FORMS[form]
    compiled = jit(fn)
    rng = np.random.default_rng(0)
    for m, k, n in SHAPES:
        a, b = (rng.standard_normal(s).astype(dtype) for s in shapes(m, k, n))
        expected = np.asarray(fn(a, b))
        got = compiled(a, b)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        assert got.tobytes() == expected.tobytes(), f"{form} m,k,n={m},{k},{n}: max err {np.abs(got - expected).max()}"


def test_float16_matmuls_add_each_product_in_turn_as_numpys_half_loop_does():
    # NumPy has no BLAS for float16: it widens each pair to float32, adds the products in order and
    # rounds once; a float32 gemm (blocked, vectorized) rounds its sums otherwise
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((43, 1120)) * 10.0 ** rng.uniform(-2, 2, (43, 1120))).astype(np.float16)
    b = (rng.standard_normal((1120, 53)) * 10.0 ** rng.uniform(-2, 2, (1120, 53))).astype(np.float16)
    for fn in (lambda x, y: x @ y, lambda x, y: x[:1] @ y, lambda x, y: np.dot(x, y[:, 0]), lambda x, y: x @ x.T):
        got, want = jit(fn)(a, b), fn(a, b)
        assert got.dtype == want.dtype == np.float16 and got.tobytes() == want.tobytes()
    wide = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    assert not np.array_equal(wide, a @ b)  # the order shows


_A3, _B3 = np.random.default_rng(6).standard_normal((2, 3, 40)), np.random.default_rng(7).standard_normal((4, 40, 5))
ND_DOTS = {  # (function, a, b): NumPy calls ?dot per output element, at the operands' strides along k
    "3-d . 3-d (a unit, b strided)": (np.dot, _A3, _B3),
    "2-d . 3-d": (np.dot, _A3[0], _B3),
    "3-d . vector (both unit)": (np.dot, _A3, _B3[0, :, 0].copy()),
    "vector . 3-d": (lambda a, b: a.dot(b), _A3[0, 0].copy(), _B3),
    "3-d . 3-d, b's k axis last (both unit)": (lambda a, b: np.dot(a, np.swapaxes(b, 1, 2).copy().swapaxes(1, 2)), _A3, _B3),
    "a transposed (strided)": (lambda a, b: np.dot(a.T, b), np.random.default_rng(8).standard_normal((40, 3, 2)), _B3),
    "a reversed (NumPy's own loop)": (lambda a, b: np.dot(a[..., ::-1], b), _A3, _B3),
    "b broadcast (NumPy's own loop)": (lambda a, b: np.dot(a, np.broadcast_to(b[:1], (4, 40, 5))), _A3, _B3),
    "int32 a converted (a C copy)": (lambda a, b: np.dot((a * 10).astype(np.int32), b), _A3, _B3),
    "np.inner of 3-d": (np.inner, _A3, _B3[:, :, 0][:, None, :]),
    "k past OpenBLAS's threading bound": (np.dot, np.random.default_rng(9).standard_normal((2, 1, 30000)),
                                          np.random.default_rng(10).standard_normal((2, 30000, 3))),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(ND_DOTS))
def test_dots_of_more_than_two_axes_are_numpys_dot_per_element(name, dtype):
    """np.dot/np.inner with an operand of more than two axes: NumPy's MatrixProduct2 calls BLAS's ?dot for each
    output element at the operands' strides (OpenBLAS: one kernel for unit increments, another for others), or
    adds the products itself where a stride is not BLAS's; a gemm of the same operands rounds otherwise."""
    fn, a, b = ND_DOTS[name]
    a, b = a.astype(dtype) if a.dtype.kind == "f" else a, b.astype(dtype)
    got, want = jit(fn)(a, b), fn(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), f"max err {np.abs(got - want).max()}"


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("mode", ["valid", "same", "full"])
@pytest.mark.parametrize("fn", [np.correlate, np.convolve], ids=["correlate", "convolve"])
def test_correlations_are_numpys_dot_per_output(fn, mode, dtype):
    """NumPy's _pyarray_correlate computes each output with its type's dot of the overlapping elements: BLAS's
    ?dot for float32/64 (OpenBLAS: a vector kernel past 16 elements), but the full windows of a kernel of at most
    11 elements, which its small_correlate adds in turn; float16's dot adds in turn in float32. The longer
    operand goes first (np.correlate reverses the result then). Windows of 3, 11, 12, 37 and 100 elements."""
    rng = np.random.default_rng(12)
    compiled = jit(lambda a, v: fn(a, v, mode))
    for n1, n2 in ((60, 3), (60, 11), (60, 12), (5000, 37), (200, 100), (7, 30)):
        a = (rng.standard_normal(n1) * 10.0 ** rng.uniform(-1, 1, n1)).astype(dtype)
        v = (rng.standard_normal(n2) * 10.0 ** rng.uniform(-1, 1, n2)).astype(dtype)
        got, want = compiled(a, v), fn(a, v, mode)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes(), f"{n1},{n2}: max err {np.abs(got.astype(float) - want).max()}"


# Operands NumPy's matmul cannot hand BLAS as they lie: it copies a gemm's operand (transposed where the step
# along its rows is the smaller), and runs its own loop for a dot or gemv of one (matmul.c.src); an operand laid
# out Fortran's way it hands BLAS transposed. The kernel does the same from NumPy's strides (``layout``).
VIEWS = {
    "C": lambda a: a,
    "broadcast-rows": lambda a: np.broadcast_to(a[:1], a.shape),
    "broadcast-columns": lambda a: np.broadcast_to(a[..., :1], a.shape),
    "reversed-rows": lambda a: a[::-1],
    "reversed-columns": lambda a: a[..., ::-1],
    "fortran-copy": lambda a: a.copy(order="F"),
}
PAIRS = [(v, "C") for v in VIEWS if v != "C"] + [("C", v) for v in VIEWS if v != "C"] + [
    ("broadcast-rows", "reversed-columns"), ("reversed-rows", "broadcast-columns"), ("fortran-copy", "reversed-rows")]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pair", PAIRS, ids="@".join)
def test_matmul_of_views_is_numpys_by_its_blas_rule(pair, dtype):
    view_a, view_b = (VIEWS[v] for v in pair)
    compiled = jit(lambda a, b: view_a(a) @ view_b(b))
    rng = np.random.default_rng(1)
    for m, k, n in SHAPES:
        a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
        expected = view_a(a) @ view_b(b)
        got = compiled(a, b)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        assert got.tobytes() == expected.tobytes(), f"{pair} m,k,n={m},{k},{n}: max err {np.abs(got - expected).max()}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_of_fortran_arguments_and_their_transposes_is_numpys(dtype):
    # an argument laid out Fortran's way is read transposed by BLAS (its memory is its transpose's, C-ordered),
    # and x @ x.T of one is NumPy's syrk
    rng = np.random.default_rng(2)
    forms = [lambda a, b: a @ b, lambda a, b: a @ a.T + b[0, 0], lambda a, b: a.T @ a + b[0, 0],
             lambda a, b: np.stack([a, a[::-1]]) @ b]
    for m, k, n in [(9, 300, 40), (40, 300, 9), (16, 3, 5)]:
        a = np.asfortranarray(rng.standard_normal((m, k)).astype(dtype))
        b = np.asfortranarray(rng.standard_normal((k, n)).astype(dtype))
        for form in forms:
            expected, got = form(a, b), jit(form)(a, b)
            assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes(), (m, k, n)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_dot_of_vectors_at_other_steps_takes_openblas_kernel_for_them(dtype):
    # NumPy's dot hands BLAS its vectors at their steps; OpenBLAS sums with another kernel unless both are one
    rng = np.random.default_rng(3)
    forms = [lambda a, b: a[::2] @ b[:len(b) // 2], lambda a, b: a[:len(a) // 2] @ b[::2],
             lambda a, b: np.dot(a[::2], b[1::2]), lambda a, b: a[None, ::2] @ b[::2, None],
             lambda a, b: a[::-2] @ b[::2]]  # (the last: NumPy's loop)
    for n in (4, 40, 300):
        a, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
        for form in forms:
            expected, got = np.asarray(form(a, b)), np.asarray(jit(form)(a, b))
            assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes(), (n, np.abs(got - expected).max())


def _agree_with_numpy(forms: dict, args: tuple, where: str) -> None:
    """Each of ``forms``, compiled, gives NumPy's result on ``args``: its shape, dtype and every bit."""
    for name, form in forms.items():
        expected, got = form(*args), jit(form)(*args)
        assert got.shape == expected.shape and got.dtype == expected.dtype, name
        assert got.tobytes() == expected.tobytes(), f"{name} {where}: max err {np.abs(got - expected).max()}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blas_reads_operands_at_numpys_leading_dimensions_and_increments(dtype):
    # NumPy hands BLAS a vector at its step and a matrix with gaps between its rows at its own leading dimension;
    # OpenBLAS's gemv and dot kernels sum otherwise for these than for a contiguous copy
    rng = np.random.default_rng(4)
    forms = {
        "fortran matrix @ vector at step 2": lambda a, b, v: a.copy(order="F") @ v[:2 * a.shape[1]:2],
        "vector at step 2 @ matrix": lambda a, b, v: v[:2 * b.shape[0]:2] @ b,
        "vector at step 3 @ fortran matrix": lambda a, b, v: v[1::3][:b.shape[0]] @ b.copy(order="F"),
        "gapped rows @ vector": lambda a, b, v: a[:, :-3] @ v[:a.shape[1] - 3],
        "vector @ gapped rows": lambda a, b, v: v[:b.shape[0]] @ b[:, 1:],
        "gapped rows @ gapped rows": lambda a, b, v: a[:, :-3] @ b[:-3, 2:],
        "batch of dots at step 2": lambda a, b, v: (np.stack([v[:2 * a.shape[1]:2], v[1:2 * a.shape[1]:2]])[:, None, :] @ a[:2, :, None])[:, 0],
    }
    for m, k, n in [(3, 64, 33), (40, 300, 9), (9, 5, 4)]:
        a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
        v = rng.standard_normal(3 * k + 1).astype(dtype)
        _agree_with_numpy(forms, (a, b, v), f"m,k,n={m},{k},{n}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_syrk_exactly_where_numpy_multiplies_an_array_by_its_own_transpose(dtype):
    # NumPy calls ?syrk where both operands start at one pointer with mirrored strides, ?gemm for two arrays,
    # however equal: values the kernel would compute once (or a copy it would not make) must still be a gemm
    rng = np.random.default_rng(5)
    forms = {
        "x @ x.T (syrk)": lambda x: x @ x.T,
        "x.T @ x (syrk)": lambda x: x.T @ x,
        "two slices of one array (syrk)": lambda x: x[:, :-2] @ x[:, :-2].T,
        "one sum, used twice (syrk)": lambda x: (lambda s: s @ s.T)(x + 1),
        "two equal sums (gemm)": lambda x: (x + 1) @ (x + 1).T,
        "x times its copy's transpose (gemm)": lambda x: x @ x.copy().T,
        "two Fortran copies (gemm)": lambda x: x.copy(order="F").T @ x.copy(order="F"),
        "reversed views NumPy copies apart (gemm)": lambda x: x[::-1] @ x[::-1].T,
        "a view reversed twice is the array (syrk)": lambda x: x.T[:, ::-1][:, ::-1] @ x,
        "broadcast NumPy copies apart (gemm)": lambda x: np.broadcast_to(x[:1], x.shape) @ np.broadcast_to(x[:1], x.shape).T,
    }
    for shape in [(9, 300), (40, 300), (16, 5)]:
        _agree_with_numpy(forms, (rng.standard_normal(shape).astype(dtype),), str(shape))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batches_keep_each_matrix_strides_through_the_loop_axes(dtype):
    # NumPy's matmul loop (vecdot's, matvec's) steps through the batch axes one by one and hands BLAS each
    # matrix at its own strides: a vecdot along an axis other than the last is a ?dot at that axis' step
    rng = np.random.default_rng(6)
    forms = {f"vecdot axis={axis}": (lambda x, y, axis=axis: np.vecdot(x, y, axis=axis)) for axis in range(3)}
    forms["matvec of moved axes"] = lambda x, y: np.matvec(np.moveaxis(x, 0, -1), np.moveaxis(y, 0, -1)[..., 0, :])
    forms["batch of a view times its transpose"] = lambda x, y: np.swapaxes(x, 0, 1) @ np.swapaxes(x, 0, 1).swapaxes(-1, -2)
    for shape in [(3, 4, 64), (2, 5, 40, 3)]:
        x, y = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
        _agree_with_numpy(forms, (x, y), str(shape))


def test_an_operand_numpy_converts_is_read_as_its_c_ordered_copy():
    # NumPy's matmul converts an operand of another dtype into a fresh C-ordered array (core axes last), which
    # its BLAS call reads as a C array, whatever the layout of the operand it converted (fuzz seed 2004)
    rng = np.random.default_rng(7)
    x = np.asfortranarray(rng.standard_normal((40, 300)).astype(np.float32))
    y = rng.standard_normal((300, 9))
    h, i = rng.standard_normal((16, 1)).astype(np.float16), rng.integers(-9, 9, (16, 4)).astype(np.int16)
    cases = [(lambda a, b: a @ b, (x, y)), (lambda a, b: a[:, ::-1] @ b, (x, y)), (lambda a, b: b.T @ a.T, (x, y)),
             (lambda a, b: np.vecdot(a, b, axis=0), (h, i)), (lambda a, b: np.vecdot(a, b, axis=0), (y[:16, :1], i))]
    for form, args in cases:
        expected, got = form(*args), jit(form)(*args)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        assert got.tobytes() == expected.tobytes(), f"max err {np.abs(got - expected).max()}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matvec_and_vecmat_take_a_dot_per_output_where_numpy_cannot_call_gemv(dtype):
    """np.matvec's and np.vecmat's loops (matmul.c.src) call gemv only for a matrix BLAS reads as it lies and a
    vector at a positive step; otherwise they take their type's dot for each output element: BLAS's ?dot at the
    two increments where both are positive (OpenBLAS's strided kernel sums otherwise than matmul's own loop), a
    running sum where one is not. The compiler ran matmul's loop for these (a fuzz sweep with view arguments:
    7 of 500 matvec/vecmat cases differed)."""
    rng = np.random.default_rng(8)
    forms = {
        "matvec, rows at step 3": lambda a, v: np.matvec(a[:, ::3], v[: a[:, ::3].shape[1]]),
        "matvec, batched": lambda a, v: np.matvec(np.stack([a, a[::-1]])[:, :, ::3], v[: a[:, ::3].shape[1]]),
        "matvec, a reversed vector (a running sum: guard)": lambda a, v: np.matvec(a[:, ::3], v[: a[:, ::3].shape[1]][::-1]),
        "matvec, a transposed gapped matrix (gemv: guard)": lambda a, v: np.matvec(a[::2].T[:, :5], v[:5]),
        "vecmat, columns at step 2": lambda a, v: np.vecmat(v[: a.shape[0] // 2], a[::2, ::2]),
        "vecmat, a vector at step 3": lambda a, v: np.vecmat(v[::3][: a.shape[0] // 2], a[::2, ::-1]),
        "vecmat (gemv: guard)": lambda a, v: np.vecmat(v[: a.shape[0]], a),
        "matvec (gemv: guard)": lambda a, v: np.matvec(a, v[: a.shape[1]]),
    }
    for m, k in [(64, 33), (300, 9), (10, 16)]:
        a, v = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal(3 * m + 1).astype(dtype)
        _agree_with_numpy(forms, (a, v), f"{m},{k}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_np_dot_of_views_follows_its_own_blas_rule_not_matmuls(dtype):
    """np.dot (and np.inner, np.tensordot) multiply by cblasfuncs.c's rule, not matmul's: an operand with a
    negative or zero step is first copied C-contiguously, a matrix neither C- nor Fortran-contiguous (gaps
    between its rows) is copied too rather than read at a leading dimension, and a vector times a matrix it
    cannot read is still a gemv (matmul runs its own loop there), so x[:, :-2] @ x[:, :-2].T is a gemm of two
    copies, no syrk. An operand of another type is converted in its memory order (np.dot of a 3-d int8 view
    reads the copy at the view's order's steps). The compiler used matmul's rule for these (a fuzz sweep with
    view arguments: 3 of 500 np.dot cases differed)."""
    rng = np.random.default_rng(9)
    forms = {
        "vector @ reversed columns (gemv of a copy)": lambda a, b, v: np.dot(v[: b.shape[0]], b[:, ::-1]),
        "reversed rows @ matrix (gemm of a copy)": lambda a, b, v: np.dot(a[::-1], b),
        "gapped rows @ vector (gemv of a copy)": lambda a, b, v: np.dot(a[:, :-3], v[: a.shape[1] - 3]),
        "vector @ gapped rows": lambda a, b, v: np.dot(v[: b.shape[0]], b[:, 1:]),
        "gapped rows @ gapped rows": lambda a, b, v: np.dot(a[:, :-3], b[:-3, 2:]),
        "gapped x @ its transpose (gemm, no syrk)": lambda a, b, v: np.dot(a[:, :-2], a[:, :-2].T),
        "inner of gapped rows": lambda a, b, v: np.inner(a[:, 1:], a[:, :-1]),
        "tensordot of a reversed view": lambda a, b, v: np.tensordot(a[::-1], b, axes=1),
        "3-d int8 view @ vector (K-order conversion)": lambda a, b, v: np.dot(
            (a[: a.shape[0] // 2 * 2] * 9).astype(np.int8).reshape(2, -1, a.shape[1]).transpose(0, 2, 1)[:, ::-1],
            v[: a.shape[0] // 2]),
        "x @ x.T (syrk: guard)": lambda a, b, v: np.dot(a, a.T),
        "fortran @ vector at step 2 (guard)": lambda a, b, v: np.dot(a.T.copy().T, v[: 2 * a.shape[1]: 2]),
    }
    for m, k, n in [(3, 64, 33), (40, 300, 9), (9, 5, 4)]:
        a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
        v = rng.standard_normal(3 * k + 1).astype(dtype)
        _agree_with_numpy(forms, (a, b, v), f"m,k,n={m},{k},{n}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_dot_with_one_element_keeps_the_zero_signs_of_openblas_axpy(dtype):
    """np.dot with a one-element operand is BLAS's axpy into zeros (cblasfuncs.c). OpenBLAS's axpy adds with a
    fused multiply-add at unit increments, and in each call's last (length mod 4) elements at others, so a
    product that underflows keeps its sign there (-0.0) and elsewhere is +0.0 (multiplied, then added to 0).
    The compiler gave +0.0 everywhere (a fuzz case: np.dot(-0.146, x) of a view holding 4e-45)."""
    rng = np.random.default_rng(10)
    tiny = np.finfo(dtype).smallest_subnormal
    forms = {
        "vector": lambda s, x: np.dot(s, x),
        "vector at step 2": lambda s, x: np.dot(s, x[::2]),
        "reversed (a copy)": lambda s, x: np.dot(s, x[::-1]),
        "row at step 3": lambda s, x: np.dot(s[None, None], x[None, ::3]),
        "column at step 2": lambda s, x: np.dot(x[::2, None], s[None]),
        "matrix, rows longer": lambda s, x: np.dot(s, x[: x.size // 3 * 3].reshape(3, -1)),
        "matrix, columns longer": lambda s, x: np.dot(s, x[: x.size // 3 * 3].reshape(-1, 3)),
        "matrix of a step-2 view": lambda s, x: np.dot(s, x[: x.size // 4 * 4].reshape(4, -1)[:, ::2]),
    }
    for n in (6, 13, 40, 101):
        x = (rng.choice([-3.0, -1.0, 0.0, 1.0, 2.0], n) * tiny).astype(dtype)
        x[rng.integers(0, n, 3)] = rng.standard_normal(3)
        s = np.asarray(rng.choice([-0.3, 0.45]), dtype)
        for name, form in forms.items():
            expected, got = form(s, x), jit(form)(s, x)
            assert got.shape == expected.shape and got.dtype == expected.dtype, name
            assert got.tobytes() == expected.tobytes(), f"{name}, n={n}: signs {np.signbit(got)} where NumPy has {np.signbit(expected)}"


def _underflowing(rng, shape, dtype) -> np.ndarray:
    """Values whose products underflow to zeros of either sign (and some that do not), so that a sum of
    products is -0.0 or +0.0 by how BLAS starts and stores it."""
    t = np.sqrt(np.finfo(dtype).smallest_subnormal) / 8
    return rng.choice(np.array([t, -t, 0.0, -0.0, 1e3 * t, -1e3 * t, 1.0, -2.0], dtype), size=shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blas_products_store_their_sums_as_numpys_beta_zero_call_does(dtype):
    """NumPy calls gemm and syrk with beta = 0: OpenBLAS's small-matrix kernels then store each sum as it is, so a
    sum of underflowed negative products stays -0.0. The compiler called them with beta = 1 on zeros (-0.0 + 0.0
    is +0.0): a fuzz case (seed 1257, matmul of 3x2 and 2x4 float32) and 221 of 700 small float32 products
    differed in a zero's sign."""
    rng = np.random.default_rng(11)
    forms = {
        "matmul": lambda a, b: a @ b,
        "matmul, fortran operands": lambda a, b: a.copy(order="F") @ b.copy(order="F"),
        "np.dot": np.dot,
        "np.dot, a fortran copy": lambda a, b: np.dot(a.copy(order="F"), b),
        "a @ a.T (syrk)": lambda a, b: a @ a.T,
        "np.dot(b.T, b) (syrk)": lambda a, b: np.dot(b.T, b),
    }
    for m, k, n in [(2, 2, 2), (3, 2, 4), (5, 7, 9), (17, 3, 2), (9, 33, 5)]:
        args = _underflowing(rng, (m, k), dtype), _underflowing(rng, (k, n), dtype)
        _agree_with_numpy(forms, args, f"m,k,n={m},{k},{n}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_np_dot_of_a_column_and_a_row_is_a_gemm_where_matmul_runs_its_own_loop(dtype):
    """A product over one element, (m, 1) @ (1, n): NumPy's matmul adds each product to 0.0 in its own loop, but
    np.dot (cblasfuncs.c) calls gemm, reading both operands transposed (each is Fortran-contiguous too, which
    it asks last) -- OpenBLAS then stores an underflowed negative product as -0.0 (dgemm's small kernel), where
    the loop gives +0.0. The compiler ran matmul's loop for both."""
    rng = np.random.default_rng(12)
    forms = {
        "matmul": lambda a, b: a @ b,
        "np.dot": np.dot,
        "np.dot of views": lambda a, b: np.dot(a[::2], b[:, ::-1]),
        "np.inner": lambda a, b: np.inner(a, b.T),
        "np.tensordot": lambda a, b: np.tensordot(a, b, 1),
        "np.outer-like np.dot of reshaped vectors": lambda a, b: np.dot(a.ravel()[:, None], b.ravel()[None, :]),
    }
    for m, n in [(2, 2), (4, 9), (13, 3), (40, 17)]:
        args = _underflowing(rng, (m, 1), dtype), _underflowing(rng, (1, n), dtype)
        _agree_with_numpy(forms, args, f"m,n={m},{n}")
