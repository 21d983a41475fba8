"""Float sums on the CPU follow NumPy's order (pairwise along a contiguous reduced axis, in order with
rounding after every step along a kept one), so they are NumPy's bit for bit; NumPy itself is the
oracle here, compared byte for byte, dtype and shape included."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import jit
from compiler import pairwise

CASES = [  # (shape, axis): rows shorter than 8, one leaf, split trees, odd remainders, unit axes
    ((5,), None), ((7, 3), -1), ((3, 127), 1), ((2, 129), -1), ((4, 768), -1), ((2, 1000), 1),
    ((1, 8193), None), ((50257,), 0), ((300, 7), 0), ((5, 6, 7), (0, 2)), ((2, 40, 9), (1, 2)),
    ((3, 1, 5, 30), (1, 3)), ((4, 1, 37), (0, 1)), ((300, 1), 0), ((2, 3, 1), (0, 2)), ((6, 70, 5), None),
]


def _sums(shape, axis, dtype, keepdims):
    x = np.random.default_rng(sum(shape)).standard_normal(shape) * 10.0 ** np.random.default_rng(7).uniform(-2, 2, shape)
    return x.astype(dtype), (lambda a: np.sum(a, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("shape,axis", CASES)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sums_are_numpys_bit_for_bit(shape, axis, dtype):
    x, fn = _sums(shape, axis, dtype, keepdims=axis is not None and len(shape) > 2)
    got, want = jit(fn)(x), np.asarray(fn(x))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), np.max(np.abs(got.astype(float) - want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_statistics_at_gpt2_width_are_numpys(dtype):
    # what the reference GPT-2's layer norm computes on every row (its softmax denominator sums np.exp,
    # whose C library differs from MLIR's by an ulp here and there: not a question of order)
    x = np.random.default_rng(11).standard_normal((10, 768)).astype(dtype)
    fn = lambda a: (np.mean(a, axis=-1, keepdims=True), np.var(a, axis=-1, keepdims=True), np.std(a),
                    np.sum(a - a.max(axis=-1, keepdims=True), axis=-1, keepdims=True))
    for got, want in zip(jit(fn)(x), fn(x)):
        assert got.dtype == want.dtype and got.shape == np.shape(want)
        assert got.tobytes() == np.asarray(want).tobytes()


def test_a_float16_sum_along_a_kept_inner_axis_rounds_every_step_as_numpy_does():
    ones = np.ones((4096, 2), np.float16)
    got = jit(lambda a: a.sum(axis=0))(ones)
    assert got.dtype == np.float16 and got.tolist() == [2048.0, 2048.0]  # 2048 + 1 rounds back to 2048
    assert np.sum(ones, axis=0).tolist() == [2048.0, 2048.0]


def test_signed_zeros_sum_as_numpy_adds_them():
    # NumPy's output starts at +0.0, so a row of -0.0 sums to +0.0; the lanes start at -0.0
    x = np.full((3, 20), -0.0, np.float32)
    for fn in (lambda a: a.sum(axis=1), lambda a: a.sum(axis=0), lambda a: a[:, :3].sum(axis=1)):
        got, want = jit(fn)(x), fn(x)
        assert got.tobytes() == want.tobytes()


def test_rows_longer_than_the_emitted_tree_and_transposes_keep_the_wider_accumulator():
    # past MAX_ROW elements, or summed through a transpose's view (whose memory order NumPy follows and
    # a trace does not model), float32 sums accumulate in float64: within NumPy's own rounding
    assert pairwise.numpy_sum_plan((pairwise.MAX_ROW + 1,), (0,)) is None
    rng = np.random.default_rng(3)
    long_row = rng.uniform(0, 1, pairwise.MAX_ROW + 1).astype(np.float32)
    square = rng.uniform(0, 1, (300, 300)).astype(np.float32)
    for fn, x in ((lambda a: a.sum(), long_row), (lambda a: a.T.sum(axis=0), square)):
        got, want = jit(fn)(x), fn(x)
        exact = fn(x.astype(np.float64))
        assert got.dtype == want.dtype == np.float32
        assert abs(float(got.sum()) - float(exact.sum())) <= abs(float(want.sum()) - float(exact.sum())) + 1e-6 * float(exact.sum())


def test_pairwise_tree_is_numpys_split():
    # NumPy (pairwise_sum): up to 128 elements in one leaf; beyond, the first half rounded down to a
    # multiple of 8; every leaf starts at a multiple of 8
    assert pairwise.tree(0, 128) == pairwise.Leaf(0, 128)
    assert pairwise.tree(0, 129) == (pairwise.Leaf(0, 64), pairwise.Leaf(64, 65))
    assert pairwise.tree(0, 300) == ((pairwise.Leaf(0, 72), pairwise.Leaf(72, 72)),
                                     (pairwise.Leaf(144, 72), pairwise.Leaf(216, 84)))
    assert all(leaf.offset % 8 == 0 for leaf in pairwise.leaves(pairwise.tree(0, 50257)))
