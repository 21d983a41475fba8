"""Every f32/f64 matmul goes through the OpenBLAS substitution (compiler/backend.py), whose flags
and leading dimensions depend on the operand shapes and on a folded ``.T``. The registry's random
sampling may not meet the degenerate shapes (a unit k, n or m, square operands whose transposition
cannot show in the shape, tall A with m > k), so each is checked here deterministically."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import jit

SHAPES = [  # (m, k, n)
    (4, 8, 1), (4, 1, 5), (1, 8, 3), (1, 1, 1), (7, 7, 7), (16, 3, 5), (3, 16, 2), (9, 4, 12),
]
FORMS = {
    "a@b": (lambda a, b: a @ b, lambda m, k, n: ((m, k), (k, n))),
    "a@b.T": (lambda a, b: a @ b.T, lambda m, k, n: ((m, k), (n, k))),
    "a.T@b": (lambda a, b: a.T @ b, lambda m, k, n: ((k, m), (k, n))),
    "a.T@b.T": (lambda a, b: a.T @ b.T, lambda m, k, n: ((k, m), (n, k))),
    "a@vec": (lambda a, b: a @ b, lambda m, k, n: ((m, k), (k,))),
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
        expected = fn(a, b)
        got = compiled(a, b)
        scale = np.abs(fn(np.abs(a), np.abs(b))) * np.sqrt(k)
        tol = 16 * np.finfo(dtype).eps * (scale + 1)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        assert (np.abs(got - expected) <= tol).all(), f"{form} m,k,n={m},{k},{n}: max err {np.abs(got - expected).max()}"
