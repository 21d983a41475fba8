"""Float sums on the CPU follow NumPy's order (pairwise along a contiguous reduced axis, in order with
rounding after every step along a kept one, in the memory order NumPy lays views and ufunc results
out in), so they are NumPy's bit for bit; NumPy itself is the oracle here, compared byte for byte,
dtype and shape included."""

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


def _same(got, want):
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), np.max(np.abs(got.astype(float) - want))


PERMUTATIONS = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
AXES = [(0,), (1,), (2,), (0, 1), (1, 2), (0, 2), None]


@pytest.mark.parametrize("perm", PERMUTATIONS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sums_of_transposed_views_follow_memory_order_as_numpys_do(perm, dtype):
    # NumPy's iterator visits a transposed view in memory order, so the same axis is summed pairwise
    # or in order depending on where it lies in memory, not on its index
    x = (_sums((5, 40, 30), None, np.float64, False)[0] / 64).astype(dtype)  # float16 squares stay finite
    fns = [lambda a, ax=ax: np.sum(a.transpose(perm), axis=ax) for ax in AXES]
    fns += [lambda a: np.mean(a.transpose(perm), axis=1, keepdims=True), lambda a: np.var(a.transpose(perm), axis=(1, 2))]
    for got, want in zip(jit(lambda a: tuple(f(a) for f in fns))(x), (f(x) for f in fns)):
        _same(got, want)


def test_ufunc_results_of_views_are_laid_out_as_numpy_lays_them_out():
    # a ufunc's result follows its operands' memory order (NumPy's "K" order; a broadcast operand has
    # no say), and so does a reduction's: the sums of such results are NumPy's bit for bit
    x, _ = _sums((200, 230), None, np.float32, False)
    fns = [lambda a: (a.T * 3 + a[:, 0]).sum(axis=1), lambda a: (a[:, 0] + a.T).sum(axis=0),
           lambda a: (a.T - a.T.mean(axis=0, keepdims=True)).sum(axis=0),
           lambda a: np.std(a.T.astype(np.float64), axis=1), lambda a: np.where(a.T > 0, a.T, 0.5).sum(axis=1),
           lambda a: (a.T[:, :150] * 2).sum(axis=1)]
    for fn in fns:
        _same(jit(fn)(x), fn(x))


def test_a_copy_is_laid_out_in_the_order_it_asks_for():
    # 4,096 float16 ones along memory's outer axis are added in order and stop at 2048; along the
    # inner axis they are summed pairwise in float32 to 4096. x.copy() is C-ordered, copy("F") and
    # np.copy (order "K") keep the transpose's memory order
    ones = np.ones((4096, 2), np.float16)
    fns = [lambda o: o.T.sum(axis=1), lambda o: o.T.copy().sum(axis=1), lambda o: o.T.copy(order="F").sum(axis=1),
           lambda o: np.copy(o.T).sum(axis=1)]
    expected = [2048, 4096, 2048, 2048]
    for fn, value in zip(fns, expected):
        got, want = jit(fn)(ones), fn(ones)
        assert want.tolist() == [value, value]  # NumPy
        _same(got, want)


def test_strided_slices_and_broadcasts_sum_as_numpy_buffers_them():
    # a row NumPy cannot step through with one stride is copied into its 8192-element buffer, as many
    # whole evenly spaced runs at a time as fit (at least one), and each bufferful summed pairwise and
    # added to the output in order; a row that is one run (a single strided axis) is summed in place
    square, _ = _sums((300, 300), None, np.float32, False)
    cube, _ = _sums((50, 90, 100), None, np.float64, False)
    long_row, _ = _sums((40000,), None, np.float32, False)
    cases = [(lambda a: a[:, ::2].sum(axis=1), square), (lambda a: a[:20, :150].sum(), square),
             (lambda a: a[1:, 3:250].sum(axis=0), square), (lambda a: np.broadcast_to(a[0], (20, 300)).sum(), square),
             (lambda a: a[::3].sum(), long_row), (lambda a: a[:, 7].sum(), square),
             (lambda a: a[:, :250].sum(), square), (lambda a: a[::2].sum(), square),  # 8000 + 8000 + ... + 3000
             (lambda a: np.broadcast_to(a[0], (100, 300)).sum(), square), (lambda a: a[:, :, :99].sum(axis=(1, 2)), cube),
             (lambda a: a[::2, :, :50].astype(np.float16).sum(axis=(0, 2)), cube), (lambda a: a[:, ::2].sum(), cube)]
    for fn, x in cases:
        _same(jit(fn)(x), fn(x))


def test_reversed_views_and_zeros_like_arrays_sum_in_numpys_layout():
    # a negative-step slice is a view with a negative stride, which NumPy's reduction steps through as it
    # lies (not flipped): a reversed row is summed from its end, and rows reversed within a matrix do not
    # run on, so they go through the buffer; np.zeros_like & co. are laid out like their operand ("K")
    square, _ = _sums((300, 1000), None, np.float32, False)
    cases = [lambda a: a[:, ::-1].sum(), lambda a: a[::-1].sum(), lambda a: a[::-1, ::-2].sum(axis=1),
             lambda a: np.flip(a).sum(axis=0), lambda a: (np.zeros_like(a.T) + a.T).sum(axis=0),
             lambda a: (np.ones_like(a.T, order="A") * a.T).sum(axis=1), lambda a: (np.full_like(a.T, 2) * a.T).sum(),
             lambda a: (np.zeros_like(a.T, order="C") + a.T).sum(axis=0)]
    for fn in cases:
        _same(jit(fn)(square), fn(square))


def _written_in_place(a, how):
    y = np.zeros_like(a.T)  # Fortran-ordered, as a.T lies
    if how == "setitem":
        y[...] = a.T * 3  # a C-ordered value into the Fortran memory
    elif how == "out":
        np.multiply(a.T, 3, out=y)
    elif how == "row":
        y[1] = a[:, 0]
        y += a.T
    else:
        view = y[:, ::2]
        y[...] = np.sqrt(np.abs(a.T))
        return view.sum(axis=1), view.sum(axis=0)
    return y.sum(axis=1), y.sum(axis=0), y.sum()


def test_an_array_written_in_place_keeps_its_layout():
    # NumPy writes into the array's memory, which keeps its layout whatever layout the value was computed
    # in, and a view of it sees it as it lies: its sums follow that layout, not the value's
    square, _ = _sums((300, 1000), None, np.float32, False)
    for how in ("setitem", "out", "row", "view"):
        for got, want in zip(jit(lambda a: _written_in_place(a, how))(square), _written_in_place(square, how)):
            _same(got, want)


def test_arguments_passed_as_views_are_summed_in_their_layout():
    # the caller's array is what NumPy sums: a transposed, sliced, reversed, broadcast or Fortran-ordered
    # argument is its own specialization (the kernel still receives a C-contiguous copy)
    square, _ = _sums((300, 1000), None, np.float32, False)
    fn = lambda a: (a.sum(), a.sum(axis=0), a.sum(axis=1), np.mean(a), (a * 2).sum(axis=0))
    compiled = jit(fn)
    views = [square.T, square[:, :250], square[::-1], np.asfortranarray(square),
             np.broadcast_to(square[0], (40, 1000)), square[::2, ::3]]
    for view in [square] + views:
        for got, want in zip(compiled(view), fn(view)):
            _same(got, want)
    compiled(np.ascontiguousarray(square.T).T.copy())  # C-contiguous again: the first specialization
    assert compiled.compile_count == 1 + len(views)


def test_a_sum_that_casts_goes_through_numpys_buffer_as_numpys_does():
    # np.sum(dtype=) and np.mean of float16 (which sums in float32) cast as they sum, through NumPy's
    # 8192-element buffer, so even a dense row is summed a bufferful at a time; a run longer than the
    # buffer is cut into bufferfuls, each run's last one shorter
    rng = np.random.default_rng(21)
    half = (rng.standard_normal((3, 20000)) * 10).astype(np.float16)
    wide = rng.standard_normal((6, 9000)) * 10.0 ** rng.uniform(-2, 2, (6, 9000))
    cases = [(lambda a: np.sum(a, dtype=np.float32), half), (lambda a: np.mean(a, axis=1), half),
             (lambda a: np.var(a[:, :8500] / 16), half), (lambda a: np.sum(a, dtype=np.float32), wide),
             (lambda a: np.sum(a[:, :250], axis=None, dtype=np.float32), wide), (lambda a: a[:1, :8500].mean(dtype=np.float32), wide),
             (lambda a: np.sum(a[:, :8192], dtype=np.float32), wide)]
    for fn, x in cases:
        _same(jit(fn)(x), fn(x))
    assert pairwise.buffer_chunk(20000, 20000, cast=True) == 8192
    assert pairwise.buffer_chunk(8500 * 6, 8500, cast=True) == pairwise.UNEVEN
    assert pairwise.buffer_chunk(75000, 250, cast=True) == 8000


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_products_multiply_in_numpys_memory_order_and_round_float16_where_numpy_does(dtype):
    # NumPy multiplies in memory order, one step after another; its float16 loop multiplies in float32
    # along its inner loop from the output's float16 value and rounds as the loop ends: once per row of
    # trailing reduced axes, every step where the inner loop runs along a kept axis
    rng = np.random.default_rng(33)
    x = (1 + rng.standard_normal((6, 5, 7)) * 0.3).astype(dtype)
    for perm in [(0, 1, 2), (2, 1, 0), (1, 2, 0), (0, 2, 1)]:
        for axes in [0, 1, 2, (0, 1), (0, 2), (1, 2), None]:
            fn = lambda a, perm=perm, axes=axes: np.prod(np.transpose(a, perm) * dtype(1.5), axis=axes)
            _same(jit(fn)(x), fn(x))


def test_float16_products_round_per_bufferful_where_numpy_buffers_the_row():
    rng = np.random.default_rng(34)
    half = (1 + rng.standard_normal((300, 300)) * 0.003).astype(np.float16)
    wide = 1 + rng.standard_normal((6, 9000)) * 0.001
    cases = [(lambda a: np.prod(a[:, :250]), half), (lambda a: np.prod(a), half),  # 8000 at a time; one loop
             (lambda a: np.prod(np.broadcast_to(a[:, :1], (300, 40)), axis=(0, 1)), half),
             (lambda a: np.prod(a[::2, 1:], axis=1), half), (lambda a: np.prod(a, dtype=np.float16), wide),
             (lambda a: np.prod(a[:, :8500], dtype=np.float16), wide)]  # runs of 8192 + 308
    for fn, x in cases:
        _same(jit(fn)(x), fn(x))


def test_initial_is_where_numpys_output_starts_not_a_value_added_at_the_end():
    # NumPy's output starts at initial= and gains each element (or row sum) in turn: along a kept inner
    # axis (1e20 - 1e20) + 1 is 1 where 1e20 + (-1e20 + 1) would be 0; a product starting at 1e-300 never
    # overflows where 1e300 * 1e300 would; -0.0 + a sum of -0.0 keeps its sign
    cancel = np.array([[-1e20] * 3, [1.0] * 3])
    cases = [(lambda a: np.sum(a, axis=0, initial=1e20), cancel), (lambda a: np.sum(a.T, initial=1e20), cancel),
             (lambda a: np.sum(a.reshape(2, 1, 3), axis=(0, 2), initial=1e20), cancel),
             (lambda a: np.prod(a, initial=1e-300), np.array([1e300, 1e300, 1e-300])),
             (lambda a: np.sum(a, initial=-0.0), np.full((3, 20), -0.0, np.float32)),
             (lambda a: np.sum(a, axis=(), initial=-0.0), np.full(4, -0.0)),
             # an element a mask excludes changes nothing (NumPy skips it), not even a -0.0 sum's sign
             (lambda a: np.sum(a, axis=0, where=a > 1, initial=-0.0), np.array([[-0.0, 5.0], [-0.0, -0.0]]))]
    for fn, x in cases:
        _same(jit(fn)(x), fn(x))
    assert jit(cases[0][0])(cancel).tolist() == [1.0, 1.0, 1.0]
    # initial=None: NumPy starts from each reduction's first element and reduces the rest into it, x[0] +
    # pairwise(x[1:]) along a contiguous axis (1 + (1e20 - 1e20) = 1 where the identity's 0 + ... gives 0)
    assert jit(lambda a: np.sum(a, initial=None))(np.array([1.0, 1e20, -1e20])) == 1.0
    # NumPy's bufferfuls (a sum that casts, a row past 8,192) lie over the whole row, the first skipped inside
    # the first one: refused rather than summed in other bufferfuls
    with pytest.raises(NotImplementedError, match="initial=None of a row NumPy reads through its buffer"):
        jit(lambda a: np.sum(a, dtype=np.float32, initial=None))(np.ones(9000))
    rng = np.random.default_rng(35)
    x = rng.standard_normal((6, 9000)) * 10.0 ** rng.uniform(-3, 3, (6, 9000))
    for dtype in (np.float16, np.float32, np.float64):
        y = (x / 1000).astype(dtype) if dtype == np.float16 else x.astype(dtype)
        for fn in (lambda a: np.sum(a, axis=0, initial=1e4), lambda a: np.sum(a, initial=-1.5),
                   lambda a: np.sum(a[:, ::2], axis=1, initial=3, dtype=np.float32),  # bufferfuls: the first starts there
                   lambda a: np.prod(1 + a[:, :50] / 1e4, axis=0, initial=-1.5), lambda a: a.T.sum(axis=1, initial=7),
                   lambda a: np.sum(a, axis=1, initial=None), lambda a: np.sum(a, axis=0, initial=None),
                   lambda a: np.sum(a.T[::3], axis=0, initial=None, dtype=np.float32),
                   lambda a: np.prod(1 + a[:, :50] / 1e4, axis=1, initial=None),
                   lambda a: np.sum(a, initial=None), lambda a: np.sum(a[:2], initial=None, keepdims=True)):
            _same(jit(fn)(y), fn(y))


def _runs_summed(row, mask, start=0.0):
    """An independent model of NumPy's masked sum of one inner loop: each run of selected elements
    summed pairwise (NumPy's own reduction of that run alone, from -0.0) and added to the output."""
    total, i = start, 0
    while i < len(row):
        if not mask[i]:
            i += 1
            continue
        j = i
        while j < len(row) and mask[j]:
            j += 1
        total = row.dtype.type(total + np.sum(row[i:j], initial=-0.0))
        i = j
    return total


def test_masked_sums_add_each_run_of_selected_elements_as_numpy_does():
    # NumPy's masked inner loop hands its sum loop each run of selected elements, summed pairwise and
    # added to the output in turn; a mask that breaks the inner loop (broadcast along rows) cuts runs at
    # NumPy's bufferfuls of whole rows; float16 runs are summed in float32 and rounded as each is added
    rng = np.random.default_rng(37)
    x = rng.standard_normal((40, 700)) * 10.0 ** rng.uniform(-3, 3, (40, 700))
    dense, sparse, rows = rng.random((40, 700)) < 0.9, rng.random((40, 700)) < 0.2, rng.random((40, 1)) < 0.6
    cols = rng.random(700) < 0.7
    long = rng.standard_normal(70001) * 10.0 ** rng.uniform(-3, 3, 70001)
    for dtype in (np.float16, np.float32, np.float64):
        y = (x / 1000).astype(dtype) if dtype == np.float16 else x.astype(dtype)
        cases = [(lambda a, m: np.sum(a, where=m), dense), (lambda a, m: np.sum(a, axis=1, where=m), sparse),
                 (lambda a, m: np.sum(a, axis=0, where=m), dense), (lambda a, m: np.sum(a.T, axis=0, where=m.T), dense),
                 (lambda a, m: np.sum(a, where=m), cols), (lambda a, m: np.sum(a, axis=1, where=m), rows),
                 (lambda a, m: np.sum(a[:, ::3], where=m[:, ::3], initial=-2.5, keepdims=True), dense),
                 (lambda a, m: np.sum(a.copy(order="F"), axis=(0, 1), where=m), rows),
                 (lambda a, m: np.sum(a, where=m, dtype=np.float32), cols),
                 (lambda a, m: (np.mean(a, axis=1, where=m), np.var(a, where=m), np.std(a, axis=0, where=m)), dense)]
        for fn, m in cases:
            got, want = jit(fn)(y, m), fn(y, m)
            for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
                _same(g, w)
        z = (long / 1000).astype(dtype) if dtype == np.float16 else long.astype(dtype)
        m = rng.random(70001) < 0.999  # runs of hundreds, some past one leaf, and one whole tree
        m[:66000] = True
        got = jit(lambda a, m: np.sum(a, where=m))(z, m)
        _same(got, np.sum(z, where=m))
        if dtype != np.float16:  # (float16 keeps float32 between runs, which the model does not)
            assert got == _runs_summed(z, m)
    assert jit(lambda a, m: np.sum(a, where=m))(np.array([1.0, 1e20, 5.0, -1e20]), np.array([True, True, False, True])) == 0.0


def test_a_run_of_any_length_is_summed_with_numpys_tree_for_that_length():
    # row r of the mask selects one run of lengths[r] elements: every length up to 300 (leaves of 1 to
    # 128, pairs, trees two deep), and long ones whose trees have leaves at two depths
    rng = np.random.default_rng(38)
    for lengths, width in [(np.arange(1, 301), 300), (np.array([1024, 1025, 4099, 8191, 8192, 65537, 69999]), 70000)]:
        x = rng.standard_normal((lengths.size, width)) * 10.0 ** rng.uniform(-3, 3, (lengths.size, width))
        mask = np.arange(width) < lengths[:, None]
        fn = lambda a, m: np.sum(a, axis=1, where=m)  # noqa: E731
        for dtype in (np.float32, np.float64):
            y = x.astype(dtype)
            _same(jit(fn)(y, mask), fn(y, mask))
            # and what NumPy's unmasked sum gives the run alone: the same tree, from the output's 0.0
            assert jit(fn)(y, mask).tolist() == [np.sum(row[:n]) for row, n in zip(y, lengths)]


def test_reduceat_sums_each_segment_from_its_first_element_along_the_axis_as_numpy_does():
    # NumPy copies a segment's first element into the output and adds the rest's pairwise sum, its
    # inner loop running along the axis whatever the memory order (float16: in float32, rounded once);
    # a segment whose next index is not past it is its first element alone; the last runs to the end
    rng = np.random.default_rng(36)
    x = rng.standard_normal((6, 2000)) * 10.0 ** rng.uniform(-3, 3, (6, 2000))
    cases = [(lambda a: np.add.reduceat(a, [0, 3, 140, 141, 1000], axis=1)),
             (lambda a: np.add.reduceat(a.T, [0, 9, 1500, 2], axis=0)),  # a transposed view: still along the axis
             (lambda a: np.add.reduceat(a[:, ::-3], [5, 5, 0, 600], axis=-1)),
             (lambda a: np.add.reduceat(a[:4, :5].T, [0, 2], axis=1)), (lambda a: np.add.reduceat(a[0], [1])),
             (lambda a: np.add.reduceat(a, [3, 0, 1999, 100], axis=1, dtype=np.float32))]
    for dtype in (np.float16, np.float32, np.float64):
        y = (x / 1000).astype(dtype) if dtype == np.float16 else x.astype(dtype)
        for fn in cases:
            got, want = jit(fn)(y), fn(y)
            _same(got, want)
            assert got.strides == want.strides
    # independently of NumPy: the first element plus the rest's sum, 1 + (1e20 - 1e20), where adding in
    # order from the first would give (1 + 1e20) - 1e20 = 0
    assert jit(lambda a: np.add.reduceat(a, [0]))(np.array([1.0, 1e20, -1e20])).tolist() == [1.0]
    assert jit(lambda a: np.add.reduceat(a, [0, 1]))(np.array([1.0, 1e20, -1e20])).tolist() == [1.0, 0.0]


def test_reduceat_at_computed_indices_reads_each_segment_as_the_kernel_runs():
    # the segments' bounds are data: each is summed with NumPy's tree for its length, found as it runs;
    # an index out of range is NumPy's IndexError, naming the first bad one
    rng = np.random.default_rng(39)
    x = rng.standard_normal((5, 3000)) * 10.0 ** rng.uniform(-3, 3, (5, 3000))
    positions = rng.integers(0, 3000, 40)
    fns = [lambda a, p: np.add.reduceat(a, np.sort(p), axis=1), lambda a, p: np.add.reduceat(a.T, p[:7], axis=0),
           lambda a, p: np.multiply.reduceat(1 + a / 1e4, p % 100, axis=-1),
           lambda a, p: np.maximum.reduceat(a[0], np.argsort(a[1, :40])), lambda a, p: np.add.reduceat(a, p[:0], axis=1)]
    for dtype in (np.float16, np.float32, np.float64):
        y = (x / 1000).astype(dtype) if dtype == np.float16 else x.astype(dtype)
        for fn in fns:
            got, want = jit(fn)(y, positions), fn(y, positions)
            _same(got, want)
            assert got.strides == want.strides
    with pytest.raises(IndexError, match=r"index 3000 out-of-bounds in add.reduceat \[0, 3000\)"):
        jit(fns[0])(x, np.append(positions, 3000))


def test_rows_past_the_unrolled_tree_are_numpys_bit_for_bit():
    # a tree of more than UNROLLED_LEAVES leaves is evaluated level by level (NumPy's leaves all lie at two
    # depths, so above them it is a perfect binary tree): np.sum of a million floats is NumPy's
    rng = np.random.default_rng(7)
    cases = [((70001,), np.float32, lambda a: a.sum()), ((3, 200000), np.float32, lambda a: a.sum(axis=1)),
             ((1000, 1000), np.float32, lambda a: np.var(a)), ((131072,), np.float64, lambda a: a.sum()),
             ((700, 300), np.float32, lambda a: a.T.sum())]
    for shape, dtype, fn in cases:
        x = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-2, 2, shape)).astype(dtype)
        _same(jit(fn)(x), fn(x))


def test_numpys_trees_have_their_leaves_at_two_depths():
    for n in (129, 1000, 65537, 70001, 131079, 1000000):
        tree = pairwise.tree(0, n)
        depth = pairwise.min_leaf_depth(tree)
        nodes = pairwise.nodes_at(tree, depth)
        assert len(nodes) == 2 ** depth
        assert all(isinstance(node, pairwise.Leaf) or all(isinstance(c, pairwise.Leaf) for c in node) for node in nodes)


def test_rows_of_millions_pass_their_trees_tables_to_the_kernel():
    # a row past 2**22 elements (32,768 leaves) has tables too long to write into the IR: they are hidden
    # arguments, and its sum is NumPy's
    rng = np.random.default_rng(11)
    long_row = (rng.standard_normal(5_000_003) * 10).astype(np.float32)
    compiled = jit(lambda a: (a.sum(), a[:4_500_000].reshape(2, -1).sum()))
    for got, want in zip(compiled(long_row), (long_row.sum(), long_row[:4_500_000].sum())):
        _same(got, want)
    assert any(table.size > 16384 for table in compiled.specialize(long_row).lowered.hidden)


def test_rows_longer_than_the_emitted_tree_or_the_buffer_keep_the_wider_accumulator(monkeypatch):
    # past MAX_ROW elements at once (lowered here, as a gigabyte row is too long for a test), or where a
    # row's last, shorter bufferful would fall between other rows' (a reduced axis before the row),
    # float32 sums accumulate in float64: within NumPy's own rounding of the exact sum
    monkeypatch.setattr(pairwise, "MAX_ROW", 1 << 16)
    assert not pairwise.emitted(pairwise.numpy_sum_plan((pairwise.MAX_ROW + 1,), (0,)), None)
    assert not pairwise.emitted(pairwise.SumPlan(1, 9900, (0,)), 8118)
    rng = np.random.default_rng(3)
    long_row = rng.uniform(0, 1, pairwise.MAX_ROW + 1).astype(np.float32)
    square = rng.uniform(0, 1, (300, 300)).astype(np.float32)
    block = rng.uniform(0, 1, (2, 3, 100, 100)).astype(np.float32)
    for fn, x in ((lambda a: a.sum(), long_row), (lambda a: a.T.sum(), square),
                  (lambda a: a[..., :99].sum(axis=(0, 2, 3)), block)):
        got, want = jit(fn)(x), fn(x)
        exact = fn(x.astype(np.float64))
        assert got.dtype == want.dtype == np.float32
        assert np.all(np.abs(got - exact) <= np.abs(want - exact) + 1e-6 * exact)


def test_numpys_buffer_holds_whole_runs():
    assert pairwise.buffer_chunk(75000, 250) == 8000       # 32 runs of 250
    assert pairwise.buffer_chunk(6000, 20) is None         # fits the buffer: copied whole
    assert pairwise.buffer_chunk(72000, 9000) == 9000      # a run longer than the buffer: one at a time
    assert pairwise.buffer_chunk(40000, 40000) is None     # one run: summed in place


def test_pairwise_tree_is_numpys_split():
    # NumPy (pairwise_sum): up to 128 elements in one leaf; beyond, the first half rounded down to a
    # multiple of 8; every leaf starts at a multiple of 8
    assert pairwise.tree(0, 128) == pairwise.Leaf(0, 128)
    assert pairwise.tree(0, 129) == (pairwise.Leaf(0, 64), pairwise.Leaf(64, 65))
    assert pairwise.tree(0, 300) == ((pairwise.Leaf(0, 72), pairwise.Leaf(72, 72)),
                                     (pairwise.Leaf(144, 72), pairwise.Leaf(216, 84)))
    assert all(leaf.offset % 8 == 0 for leaf in pairwise.leaves(pairwise.tree(0, 50257)))


VIEWS = [lambda a: a, lambda a: a.T, lambda a: a[:, 3:190], lambda a: a[::2], lambda a: a.T * 2]


@pytest.mark.parametrize("name,fn", [
    ("mean", lambda v: np.mean(v, axis=1)), ("var", lambda v: np.var(v, axis=0)), ("std", lambda v: np.std(v)),
    ("average", lambda v: np.average(v, axis=1)), ("nansum", lambda v: np.nansum(v, axis=1)),
    ("nanmean", lambda v: np.nanmean(v, axis=0)), ("trace", lambda v: np.trace(v)),
    ("norm", lambda v: np.linalg.norm(v, axis=1)),
])
def test_numpys_summing_functions_are_numpys_bit_for_bit_on_views(name, fn):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((300, 200)) * 10.0 ** rng.uniform(-2, 2, (300, 200))).astype(np.float32)
    program = lambda a: tuple(fn(view(a)) for view in VIEWS)  # noqa: E731
    for got, want in zip(jit(program)(x), program(x)):
        _same(got, want)
