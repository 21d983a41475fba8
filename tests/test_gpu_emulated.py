"""GPU kernel numerics without a GPU: the GPU target's module (host code plus outlined
kernels, exactly as it goes to NVVM) runs on the CPU emulator in tests/support, thread
by thread with real barriers, against NumPy: values with tight tolerances and exact
dtypes. What is below that IR (NVVM codegen, ptxas, the driver) needs a device
(tests/test_gpu.py). The emulator itself is shown to catch a wrong index, a missing
barrier and an unguarded load in the tiled matmul kernel, missing barriers in the
tree reduction, and a use of LLVM's poison from an out-of-range float -> int conversion."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from compiler import ops

pytest.importorskip("compiler.gpu")
sys.path.insert(0, str(Path(__file__).parent / "support"))
from gpu_emulator import EmulationError, ResidentArray, emulate  # noqa: E402

RNG = np.random.default_rng(2024)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def tol(*arrays):
    """float16 tolerances wherever float16 takes part, float32 ones wherever float32 does (a float32
    intermediate rounds like one), float64 ones otherwise; integers exactly."""
    kinds = {a.dtype for a in arrays}
    if np.dtype(np.float16) in kinds:  # a float32 result a hair from a float16 rounding boundary: one ulp
        return dict(rtol=2.0 ** -10, atol=2.0 ** -14)
    if np.dtype(np.float32) in kinds:
        return dict(rtol=2e-6, atol=2e-6)
    if np.dtype(np.float64) in kinds:
        return dict(rtol=1e-13, atol=1e-13)
    return dict(rtol=0, atol=0)


def check(fn, *args, **static):
    expected = fn(*args, **static)
    got, emulator = emulate(fn, *args, **static)
    expected_leaves = expected if isinstance(expected, tuple) else (expected,)
    got_leaves = got if isinstance(got, tuple) else (got,)
    inputs = [a for a in args if isinstance(a, np.ndarray)]
    for g, e in zip(got_leaves, expected_leaves):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, **tol(e, *inputs))
    return emulator


CASES = {
    "matmul, partial edge tiles": (lambda a, b: a @ b, (rand(37, 50), rand(50, 19))),
    "matmul float64": (lambda a, b: a @ b, (rand(20, 33, dtype=np.float64), rand(33, 18, dtype=np.float64))),
    "matmul float32 @ float64": (lambda a, b: a @ b, (rand(9, 12), rand(12, 5, dtype=np.float64))),
    "batched matmul, transposed view": (lambda q, k: q @ k.transpose(0, 2, 1), (rand(3, 17, 8), rand(3, 17, 8))),
    "matmul of a folded .T": (lambda a, w: a @ w.T, (rand(6, 20), rand(11, 20))),
    "gelu": (ops.gelu, (rand(5, 40),)),
    "softmax": (ops.softmax, (rand(6, 33),)),
    "layer_norm": (ops.layer_norm, (rand(6, 48), rand(48), rand(48))),
    "full reduction": (lambda a: a.sum(), (rand(7, 9),)),
    "reduction over the first axis": (lambda a: a.max(axis=0), (rand(7, 9, dtype=np.float64),)),
    # reductions run one block per output element: rows longer than the block, fused producers
    # (split into a parallel op plus the kernel), several axes, integers, nothing to reduce
    "softmax over rows longer than a block": (ops.softmax, (rand(3, 700),)),
    "variance over the first axis": (lambda a: np.var(a, axis=0), (rand(40, 6),)),
    "sum of a computed value over two axes": (lambda a: np.exp(a).sum(axis=(0, 2)), (rand(4, 5, 6),)),
    "integer max and sum": (lambda a: (a.max(axis=1), a.sum(axis=0)), (np.arange(-30, 30).reshape(6, 10),)),
    # rows that hold only the dtype's extreme: the tree's start value must be that extreme itself
    "integer max and min at the dtype's limits": (lambda a, b, c: (a.max(axis=1), b.min(axis=1), c.max(axis=0)), (
        np.full((3, 5), np.iinfo(np.int32).min, np.int32), np.full((3, 5), np.iinfo(np.int64).max, np.int64),
        np.full((4, 2), np.iinfo(np.int8).min, np.int8))),
    # float max/min of rows that lie on one side of zero: a tree started from 0.0 instead of -inf
    # (+inf) gives 0 (softmax's shift cancels that, so no other case sees it)
    "float max and min of rows on one side of zero": (
        lambda a: (np.max(-np.abs(a) - 1, axis=1), np.min(np.abs(a) + 1, axis=0), np.max(-np.abs(a) - 1)),
        (rand(3, 700),)),
    "prod, any and all over rows longer than a block": (
        lambda a: (np.prod(1 + a / 100, axis=1), a.prod(axis=0), np.any(a > 2, axis=1), np.all(a > -3, axis=0),
                   np.any(a[:, :0], axis=1), (a * 1000).astype(np.int64).prod(axis=1)),
        (rand(4, 700),)),
    "libdevice math, clip with scalar and array bounds": (
        lambda a, b: (np.log1p(np.abs(a) * 1e-6), np.expm1(a * 1e-7), np.sin(a), np.cos(b), np.exp2(a), np.log2(np.abs(b)),
                      np.log10(np.abs(a)), np.clip(a, -0.5, 0.5), np.clip(a, b, 1.0), np.sign(b), np.reciprocal(a)),
        (rand(5, 40), rand(5, 40))),
    # initial= is where the tree's output starts: the kernel folds its total into that value
    "sums and products with initial=": (
        lambda a: (np.sum(a, axis=0, initial=5.0), np.sum(a, axis=1, initial=-2.5), np.prod(1 + a / 100, initial=3.0),
                   np.sum((a * 10).astype(np.int32), axis=1, initial=7), np.sum(a, axis=1, initial=None),
                   np.prod(1 + a.T / 100, axis=0, initial=None)),
        (rand(4, 700),)),
    # where= sums: the excluded elements are -0.0 to the tree (the CPU's runs are NumPy's order alone)
    "masked sums and means": (
        lambda a: (np.sum(a, axis=1, where=a > 0), np.mean(a, axis=0, where=a < 1), np.sum(a, where=a > -1, initial=2.0)),
        (rand(4, 700),)),
    # reduceat: each segment's first element is where its reduction starts (row_sum_from on the GPU)
    "reduceat segments": (
        lambda a: (np.add.reduceat(a, [0, 5, 300, 301], axis=1), np.add.reduceat(a.astype(np.float16), [2, 0], axis=0),
                   np.multiply.reduceat(1 + a / 100, [0, 9], axis=1), np.maximum.reduceat(a, [4, 1, 600], axis=1),
                   np.add.reduceat(a, np.argsort(a[0])[:5], axis=1), np.minimum.reduceat(a.T, np.argmax(a, axis=1), axis=0)),
        (rand(4, 700),)),
    "reduction of an empty axis": (lambda a: (a[:, :0].sum(axis=1), a[:, :0].astype(np.int32).sum(axis=1)), (rand(3, 4),)),
    "gather, slice, transpose, concatenate": (
        lambda t, i: np.concatenate([t[i], t[1:3].T[:, :2].T], axis=0) * 2, (rand(10, 6), np.array([3, 0, 9]))),
    # indices and exponents only the kernel knows: checked there, out-of-range ones replaced
    "computed gather indices and integer exponents": (
        lambda t, y, e: (t[np.argmax(y, axis=1)], t[:, (e * 2) % 6 - 6], e ** (e - 1)),
        (rand(10, 6), rand(4, 10), np.array([3, 1, 4, 2]))),
    "where, comparison, cast": (lambda a: np.where(a > 0, a, a * 0.1).astype(np.float64), (rand(4, 5),)),
    "np.dot by a one-element operand (BLAS axpy: a zero s gives zeros against inf and NaN)": (
        lambda a: (np.dot(a, a[0, 1] * 0.0), np.dot(a.reshape(6, 1), a[1:, 2:])),
        (np.array([[0.5, -0.0, np.inf], [np.nan, -3.25, 2.0]]),)),
    "np.take of computed indices, wrapped and clipped; a constant mask's read": (
        lambda a, i: (np.take(a, i - 4, axis=1, mode="wrap"), np.take(a, i + 7, mode="clip"),
                      a[:, np.array([True, False, True, True, False])]),
        (rand(3, 5), np.array([0, 2, 5]))),
    "integer arithmetic": (lambda a, b: (a * 3 + b) * a - np.maximum(a, b), (np.arange(-6, 6).reshape(3, 4), np.arange(12).reshape(3, 4) + 1)),
    "rank-0 result of a mixed expression": (lambda a: np.exp(a).mean() * np.float64(0.5), (rand(3, 3),)),
    # float16: computed in float32, rounded at every op's result; sums and matmuls accumulate in float32
    # (as NumPy does along a contiguous axis: along another it rounds after every addition)
    "float16 softmax, matmul, sums and math": (
        lambda a, b: (ops.softmax(a), a @ b, a.sum(axis=1), np.mean(b), np.exp(a) * 0.5, np.maximum(a, -0.0),
                      np.clip(b, -0.25, a[:7, 0]), np.sin((a[0, :8] * 40).astype(np.int8)), a.astype(np.float64)),
        (rand(9, 40, dtype=np.float16), rand(40, 7, dtype=np.float16))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_kernels_match_numpy(name):
    fn, args = CASES[name]
    check(fn, *args)


def test_a_computed_index_out_of_range_is_reported_by_the_gpu_kernel():
    """The kernel's report travels back like any result: the call raises NumPy's IndexError."""
    with pytest.raises(IndexError, match="index 10 is out of bounds for axis 0 with size 10"):
        emulate(lambda t, i: t[i * 2], rand(10, 6), np.array([4, 5, 0]))
    with pytest.raises(ValueError, match="negative integer powers .* held -3"):
        emulate(lambda b, e: b ** (e - 4), np.array([2, 3]), np.array([5, 1]))


def test_device_resident_indices_and_exponents_are_checked_by_the_kernel():
    """A DeviceArray's values are in GPU memory, where the host cannot check them before a launch."""
    table, ids = rand(10, 6), np.array([9, -10, 3])
    got, _ = emulate(lambda t, i: t[i], table, ResidentArray(ids))
    np.testing.assert_array_equal(got, table[ids])
    with pytest.raises(IndexError, match=r"index -11 is out of bounds for axis 0 with size 10 \(argument i, held in GPU memory"):
        emulate(lambda t, i: t[i], table, ResidentArray(np.array([1, -11])))
    base = np.array([2, -3, 5])
    got, _ = emulate(lambda b, e: b ** e, base, ResidentArray(np.array([3, 3, 0])))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, base ** np.array([3, 3, 0]))
    with pytest.raises(ValueError, match="negative integer powers .* held -1"):
        emulate(lambda b, e: b ** e, base, ResidentArray(np.array([3, -1, 0])))


def test_float_to_int_of_unrepresentable_values_never_uses_poison():
    """NaN, infinities and values beyond the range converted through reach fptosi/fptoui only
    under a select that drops the result (the emulator raises if LLVM's poison from such a
    conversion is used). Expected values: truncate and wrap, else the documented fixed values
    (int32's minimum for int8, int64's for uint32 and int64; uint64: 2**63, or 0 from 2**64 up)."""
    x = np.array([-2.5, -129.5, 300.0, np.nan, np.inf, -np.inf, 1e30, 2.0 ** 63], np.float64)
    got, _ = emulate(lambda a: (a.astype(np.int8), a.astype(np.uint32), a.astype(np.int64), a.astype(np.uint64)), x)
    m64 = -(2 ** 63)
    expected = (np.array([-2, 127, 44, 0, 0, 0, 0, 0], np.int8),
                np.array([2 ** 32 - 2, 2 ** 32 - 129, 300, 0, 0, 0, 0, 0], np.uint32),
                np.array([-2, -129, 300, m64, m64, m64, m64, m64], np.int64),
                np.array([2 ** 64 - 2, 2 ** 64 - 129, 300, 2 ** 63, 0, 2 ** 63, 0, 2 ** 63], np.uint64))
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)


def test_emulator_catches_an_unguarded_float_to_int(monkeypatch):
    """The check above can fail: with the bare conversion the compiler once emitted, the NaN's
    poison is stored, and the emulator says so."""
    from compiler import dtypes as dt
    from compiler import primitives

    def bare(rb, x, src, dst):
        op = "arith.fptosi" if dst.kind == "i" else "arith.fptoui"
        return rb.op(f"{op} {x} : {dt.mlir_type(src)} to {dt.mlir_type(dst)}")

    monkeypatch.setattr(primitives, "_float_to_int", bare)
    emulate(lambda a: a.astype(np.int32) + 1, np.array([1.5, 2.5]))  # in range: fine
    with pytest.raises(EmulationError, match="poison"):
        emulate(lambda a: a.astype(np.int32) + 1, np.array([1.5, np.nan]))


def test_a_column_slice_read_by_two_kernels_keeps_its_stride():
    """A matrix column sliced once and read by two kernels is passed to both as a strided view of the
    matrix (a 2x1 subview collapsed to stride 2); the emulator once took the collapsed stride from the
    trailing unit dimension and read the wrong elements (found through np.linalg.qr's Householder step)."""
    a = np.random.default_rng(0).normal(size=(3, 2))
    fn = lambda v: [np.sqrt(np.sum(v[1:, 0] * v[1:, 0])), v[1:, 0] * 2, v[None, 1:, 0] + v[None, :2, 1]]  # noqa: E731
    got, _ = emulate(fn, a)
    for g, w in zip(got, fn(a)):
        np.testing.assert_allclose(g, w, rtol=1e-15)
    q, r = emulate(lambda v: tuple(np.linalg.qr(v)), a)[0]
    np.testing.assert_allclose(q @ r, a, rtol=0, atol=1e-14)


def test_small_constants_are_copied_to_the_device_after_they_exist():
    """Constants small enough to inline become memref.global; their copy to the device used to be
    placed before the global was read (an IR that failed verification on the GPU target only)."""
    check(lambda t: t[np.array([2, 0, 2, 1])] * 2, rand(3, 5))
    check(lambda t: np.tril(t, k=-1) + t[:, ::2].sum(), rand(4, 4, dtype=np.float64))


# sampled cases per op; a sweep after a GPU-target change can ask for more (PARITY_EMULATOR_CASES=6 found the
# collapse_shape stride bug that two cases missed), each from its own seed
CASES_PER_OP = int(os.environ.get("PARITY_EMULATOR_CASES", "2"))


@pytest.mark.parametrize("name", list(__import__("compiler.opinfo", fromlist=["REGISTRY"]).REGISTRY))
def test_every_registry_op_on_the_gpu_target(name):
    """The op registry (the one the CPU tests and the fuzzer use) drives the GPU kernels too."""
    from compiler import opinfo as oi
    from harness.fuzzing.cases import decode_operand, sample_op_case
    from harness.fuzzing.check import _case_function, _supported, compare_values, flatten, numpy_eval, op_tolerance

    info = oi.REGISTRY[name]
    checked = 0
    for seed in range(4 * CASES_PER_OP):
        if checked == CASES_PER_OP:
            break
        case = sample_op_case(oi.RandomChooser(1000 * seed + sum(map(ord, name))), info)
        params, operands = case["params"], [decode_operand(o) for o in case["operands"]]
        try:
            expected = numpy_eval(lambda: info(operands, params))
        except Exception:
            continue  # NumPy refuses: an error-path case, checked on the CPU target (tests/test_ops.py)
        if not _supported(expected):
            continue
        fn, arguments = _case_function(case, info, operands, params)  # a folded case: its operands as constants
        got, _ = emulate(fn, *arguments)
        problems = []
        for e, g in zip(flatten(expected), flatten(got)):
            assert np.asarray(g).dtype == np.asarray(e).dtype and np.shape(g) == np.shape(e)
            rtol, atol = op_tolerance(info, operands, params, np.asarray(e).dtype, target="gpu")
            problems += compare_values(e, g, rtol, atol, f"{name}{params}")
        assert not problems, problems
        checked += 1
    assert checked, f"no sampled case of {name} was valid for NumPy"


def tiny_params(n_layer=2, width=32, vocab=64, n_ctx=16):
    from compiler.gpt2.checkpoint import BlockParams, GPT2Params, LayerNormParams, LinearParams

    def block():
        return BlockParams(
            ln_1=LayerNormParams(1 + 0.1 * rand(width), 0.1 * rand(width)),
            attn_c_attn=LinearParams(rand(width, 3 * width) * 0.2, 0.1 * rand(3 * width)),
            attn_c_proj=LinearParams(rand(width, width) * 0.2, 0.1 * rand(width)),
            ln_2=LayerNormParams(1 + 0.1 * rand(width), 0.1 * rand(width)),
            mlp_c_fc=LinearParams(rand(width, 4 * width) * 0.2, 0.1 * rand(4 * width)),
            mlp_c_proj=LinearParams(rand(4 * width, width) * 0.2, 0.1 * rand(width)),
        )
    return GPT2Params(rand(vocab, width), rand(n_ctx, width) * 0.1, [block() for _ in range(n_layer)],
                      LayerNormParams(1 + 0.1 * rand(width), 0.1 * rand(width)))


@pytest.fixture(scope="module")
def gpt2():
    from compiler.gpt2.model import prepared_params
    params, wte64 = prepared_params(tiny_params())
    return params, wte64


def test_gpt2_sublayers(gpt2):
    from compiler.gpt2.model import attention_sublayer, embedding, feedforward_sublayer, final_projection
    params, wte64 = gpt2
    b0, b1 = params.blocks
    ids = np.array([5, 9, 1, 7, 63, 0, 0, 0])
    x32 = embedding(params.wte, params.wpe, ids)
    check(embedding, params.wte, params.wpe, ids)
    x64 = attention_sublayer(x32, b0.ln_1.g, b0.ln_1.b, b0.attn_c_attn.w, b0.attn_c_attn.b, b0.attn_c_proj.w,
                             b0.attn_c_proj.b, n_head=4)
    assert x64.dtype == np.float64  # the first attention scores are scaled by a float64 scalar
    check(attention_sublayer, x32, b0.ln_1.g, b0.ln_1.b, b0.attn_c_attn.w, b0.attn_c_attn.b, b0.attn_c_proj.w,
          b0.attn_c_proj.b, n_head=4)
    check(attention_sublayer, x64, b1.ln_1.g, b1.ln_1.b, b1.attn_c_attn.w, b1.attn_c_attn.b, b1.attn_c_proj.w,
          b1.attn_c_proj.b, n_head=4)
    check(feedforward_sublayer, x64, b0.ln_2.g, b0.ln_2.b, b0.mlp_c_fc.w, b0.mlp_c_fc.b, b0.mlp_c_proj.w, b0.mlp_c_proj.b)
    check(final_projection, x64, np.array([4]), params.ln_f.g, params.ln_f.b, wte64)


def test_gpt2_fused_forward_with_device_resident_weights(gpt2):
    """The fused forward as GPT-2 runs it on the GPU: weights resident, token ids from the host."""
    from compiler.gpt2.model import gpt2_fused
    from compiler.jit import map_arrays
    params, wte64 = gpt2
    ids, last = np.array([5, 9, 1, 7, 0, 0, 0, 0]), np.array([3])
    expected = gpt2_fused(ids, last, params, wte64, n_head=4)

    got, emulator = emulate(gpt2_fused, ids, last, map_arrays(ResidentArray, params), ResidentArray(wte64), n_head=4)
    assert emulator.launches > 50
    assert got.dtype == expected.dtype == np.float64 and got.shape == (1, 64)
    # float32 until the first scaled scores, float64 after: float32 rounding bounds the difference
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert np.argmax(got) == np.argmax(expected)


# --------------------------------------------------------------------------- the emulator catches kernel bugs


@pytest.fixture
def broken_matmul_kernel(monkeypatch):
    import compiler.gpu_matmul as gm

    def apply(old: str, new: str, count: int = 1):
        assert gm._KERNEL.count(old) >= count, old
        monkeypatch.setattr(gm, "_KERNEL", gm._KERNEL.replace(old, new, count))
    return apply


def test_emulator_catches_a_wrong_tile_index(broken_matmul_kernel):
    broken_matmul_kernel("%kb = arith.addi %kbase, %ty", "%kb = arith.addi %kbase, %tx")
    a, b = rand(20, 20), rand(20, 20)
    got, _ = emulate(lambda p, q: p @ q, a, b)
    assert not np.allclose(got, a @ b, rtol=1e-3, atol=1e-3)


def test_emulator_catches_a_missing_barrier(broken_matmul_kernel):
    """Without the barrier after staging, threads read tiles other threads have not written yet."""
    broken_matmul_kernel("gpu.barrier\n", "")
    a, b = rand(20, 20), rand(20, 20)
    got, _ = emulate(lambda p, q: p @ q, a, b)
    assert np.isnan(got).any(), "fresh workgroup memory holds NaN, so reading it early shows"


def test_emulator_catches_an_unguarded_load(broken_matmul_kernel):
    broken_matmul_kernel("%a_ok = arith.andi %row_ok, %ka_ok : i1", "%a_ok = arith.ori %row_ok, %ka_ok : i1")
    with pytest.raises(EmulationError, match="out of bounds"):
        emulate(lambda p, q: p @ q, rand(20, 20), rand(20, 7))


@pytest.fixture
def broken_reduction_kernel(monkeypatch):
    import compiler.gpu_reduce as gr

    def apply(edit):
        original = gr.kernel_text
        monkeypatch.setattr(gr, "kernel_text", lambda *a, **k: edit(original(*a, **k)))
    return apply


def test_emulator_catches_a_tree_step_without_a_barrier(broken_reduction_kernel):
    """Every barrier but the first gone: a step reads partial results the last step has not written."""
    broken_reduction_kernel(lambda text: text.replace("gpu.barrier", "GPU_BARRIER", 1).replace("gpu.barrier\n", "")
                            .replace("GPU_BARRIER", "gpu.barrier"))
    x = rand(3, 600)
    got, _ = emulate(lambda a: a.sum(axis=1), x)
    assert not np.allclose(got, x.sum(axis=1), rtol=1e-3, atol=1e-3)


def test_emulator_catches_partials_read_before_they_are_stored(broken_reduction_kernel):
    broken_reduction_kernel(lambda text: text.replace("gpu.barrier\n", "", 1))
    got, _ = emulate(lambda a: a.max(axis=1), rand(3, 600))
    assert np.isnan(got).any(), "fresh workgroup memory holds NaN, so reading it early shows"
