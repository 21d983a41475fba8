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
