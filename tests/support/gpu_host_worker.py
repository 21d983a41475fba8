"""Runs GPU kernel libraries through the production path (``jit(..., target="gpu")`` ->
kernel cache -> ``GpuKernel``) against tests/support/fake_cuda_runtime.c, in a process of its
own so no real CUDA runtime can be loaded before the fake one. Usage:
``python gpu_host_worker.py FAKE_RUNTIME.so WORKDIR``; prints one JSON object per scenario."""

from __future__ import annotations

import ctypes
import hashlib
import json
import sys

import numpy as np

import compiler
import compiler.gpu as gpu
from compiler import get_target, ops
from compiler.jit import JitFunction

P, I64 = ctypes.c_void_p, ctypes.c_int64
_libc = ctypes.CDLL(None)
_libc.malloc.restype, _libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
_libc.free.argtypes = [ctypes.c_void_p]
PATTERN = 0xAB  # fresh device memory holds this byte, so results copied back are recognizable


class FakeCudaRuntime:
    """Records every runtime call the host code makes; device memory is host memory."""

    STREAM = 0x5150

    def __init__(self, library: ctypes.CDLL):
        self.library = library
        self.calls: list[list] = []
        # memcpy/free calls made with no CUDA context current: libmlir_cuda_runtime's mgpuMemcpy and
        # mgpuMemFree push none, so their driver calls would fail on a device
        self.without_context: list[str] = []
        self.device: dict[int, int] = {}   # pointer -> bytes
        self.refuse = 0
        hooks = {
            "mgpuStreamCreate": ctypes.CFUNCTYPE(P)(self.stream_create),
            "mgpuStreamSynchronize": ctypes.CFUNCTYPE(None, P)(lambda s: self.calls.append(["sync", s])),
            "mgpuStreamDestroy": ctypes.CFUNCTYPE(None, P)(lambda s: self.calls.append(["destroy", s])),
            "mgpuMemAlloc": ctypes.CFUNCTYPE(P, ctypes.c_uint64, P, ctypes.c_int8)(self.alloc),
            "mgpuMemFree": ctypes.CFUNCTYPE(None, P, P)(self.free),
            "mgpuMemcpy": ctypes.CFUNCTYPE(None, P, P, I64, P)(self.memcpy),
            "mgpuModuleLoad": ctypes.CFUNCTYPE(P, P, I64)(self.module_load),
            "mgpuModuleGetFunction": ctypes.CFUNCTYPE(P, P, P)(lambda m, name: 0xF00),
            "mgpuLaunchKernel": ctypes.CFUNCTYPE(None, P, I64, I64, I64, I64, I64, I64, ctypes.c_int32, P, P, P, I64)(
                self.launch),
        }
        self._keep = hooks
        for name, callback in hooks.items():
            ctypes.c_void_p.in_dll(library, f"hook_{name}").value = ctypes.cast(callback, ctypes.c_void_p).value

    def stream_create(self):
        self.calls.append(["stream"])
        return self.STREAM

    def alloc(self, size, stream, host_shared):
        if self.refuse:  # out of device memory, for the next `refuse` requests
            self.refuse -= 1
            self.calls.append(["alloc_refused", size])
            return None
        ptr = _libc.malloc(max(size, 1))
        ctypes.memset(ptr, PATTERN, size)
        self.device[ptr] = size
        self.calls.append(["alloc", size, host_shared, stream])
        return ptr

    def _needs_context(self, call: str) -> None:
        if ctypes.c_int64.in_dll(self.library, "fake_cuda_context_depth").value == 0:
            self.without_context.append(call)

    def free(self, ptr, stream):
        self._needs_context("free")
        self.calls.append(["free", self.device.pop(ptr)])
        _libc.free(ptr)

    def memcpy(self, dst, src, size, stream):
        self._needs_context("memcpy")
        kind = {(True, False): "to_device", (False, True): "to_host"}.get((dst in self.device, src in self.device), "other")
        digest = hashlib.sha256(ctypes.string_at(src, size)).hexdigest() if kind == "to_device" else None
        self.calls.append(["memcpy", kind, size, stream, digest])
        ctypes.memmove(dst, src, size)

    def module_load(self, data, size):
        self.calls.append(["load", ctypes.string_at(data, min(size, 4)).hex()])
        return 0xBEEF

    def launch(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra, n_params):
        slots = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        # each kernel parameter's first 8 bytes: memref arguments show their device pointers there
        values = [ctypes.c_uint64.from_address(slots[i]).value for i in range(n_params)]
        # (a 4-byte parameter's 8 bytes end in whatever follows it: only the device pointers are comparable)
        pointers = sorted({v for v in values if v in self.device})
        self.calls.append(["launch", [gx, gy, gz], [bx, by, bz], stream, n_params, values, pointers])


def scenarios():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 10)).astype(np.float32)
    w = rng.standard_normal((10, 3))
    a, b = np.ones((37, 50), np.float32), np.ones((50, 19), np.float32)
    return {
        "softmax": (ops.softmax, (np.ones((4, 8), np.float32),)),
        "gelu_matmul_and_sum": (lambda p, q: (ops.gelu(p) @ q, p.sum(axis=-1)), (x, w)),
        "matmul": (lambda p, q: p @ q, (a, b)),
    }


def main(fake_runtime: str) -> None:
    global RUNTIME
    global LIBRARY
    library = LIBRARY = ctypes.CDLL(fake_runtime, mode=ctypes.RTLD_GLOBAL)
    runtime = RUNTIME = FakeCudaRuntime(library)
    gpu._cuda_driver = lambda: library  # the driver calls raise_device_errors makes
    gpu.device_available = lambda: (True, "fake CUDA runtime")
    gpu._cuda_runtime_libraries = lambda: (fake_runtime,)
    for name, (fn, args) in scenarios().items():
        runtime.calls.clear()
        f = compiler.jit(fn, target="gpu")
        synchronizes = ctypes.c_int64.in_dll(library, "fake_cuda_synchronizes").value
        out = f(*args)
        synchronizes = ctypes.c_int64.in_dll(library, "fake_cuda_synchronizes").value - synchronizes
        outs = out if isinstance(out, tuple) else (out,)
        kernel = f.specialize(*args).kernel
        lowered = JitFunction(fn, "gpu").lower(*args)
        print(json.dumps({
            "scenario": name,
            "kernel_class": type(kernel).__name__,
            "from_disk_cache": kernel.from_disk_cache,
            "ptx_units": len(gpu.split_ptx(get_target("gpu").stages(lowered)["ptx"])),
            "calls": runtime.calls,
            "live_allocations": len(runtime.device),
            "input_digests": [hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest() for v in args],
            "input_bytes": [v.nbytes for v in args],
            "context_synchronizes": synchronizes,
            "context_depth": ctypes.c_int64.in_dll(library, "fake_cuda_context_depth").value,
            "outputs": [{"shape": list(o.shape), "dtype": str(o.dtype), "all_pattern": bool((o.view(np.uint8) == PATTERN).all())}
                        for o in outs],
        }), flush=True)


def device_error_scenario() -> None:
    """A call after which the device holds a sticky error (as after an illegal address) raises
    CudaError naming the function and the error, instead of returning its outputs."""
    status = ctypes.c_int.in_dll(LIBRARY, "fake_cuda_status")
    fn, args = scenarios()["softmax"]
    f = compiler.jit(fn, target="gpu")
    f(*args)  # built and loaded while the device is fine
    status.value = 700
    try:
        f(*args)
        outcome = "returned"
    except gpu.CudaError as exc:
        outcome = str(exc)
    finally:
        status.value = 0
    print(json.dumps({"scenario": "device_error", "outcome": outcome,
                      "context_depth": ctypes.c_int64.in_dll(LIBRARY, "fake_cuda_context_depth").value}), flush=True)


def resident_scenario() -> None:
    """A weight uploaded once with to_device, then used by two calls."""
    from compiler.gpu_memory import to_device

    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 12)).astype(np.float32)
    w = rng.standard_normal((12, 7)).astype(np.float32)
    f = compiler.jit(lambda a, b: ops.gelu(a @ b), target="gpu")
    runtime = RUNTIME
    runtime.calls.clear()
    w_dev = to_device(w)
    upload = list(runtime.calls)
    f(x, w_dev)
    runtime.calls.clear()
    f(x, w_dev)
    second_call = list(runtime.calls)
    back = w_dev.to_host()
    print(json.dumps({
        "scenario": "resident",
        "upload": upload,
        "second_call": second_call,
        "device_pointer": w_dev.pointer,
        "input_digests": [hashlib.sha256(v.tobytes()).hexdigest() for v in (x, w)],
        "round_trip_equal": bool(np.array_equal(back, w) and back.dtype == w.dtype),
        "live_allocations_before_free": len(runtime.device),
    }), flush=True)
    del w_dev
    print(json.dumps({"scenario": "resident_freed", "live_allocations": len(runtime.device)}), flush=True)


def gpt2_scenario(workdir: str) -> None:
    """Fused GPT-2 (tiny) on the GPU target: the weights go over at the first forward only."""
    from pathlib import Path

    from compiler.gpt2 import compile_model, load_model
    from compiler.gpt2.synth import synthesize_checkpoint

    model_dir = Path(workdir) / "tiny-model"
    synthesize_checkpoint(model_dir, config="tiny", seed=3)
    runner = compile_model(load_model(model_dir), "fused", "gpu")
    RUNTIME.calls.clear()
    runner.forward([5, 9, 1])
    first = list(RUNTIME.calls)
    RUNTIME.calls.clear()
    runner.forward([5, 9, 1, 7])
    second = list(RUNTIME.calls)
    params, wte_out = runner.params, runner.wte_out
    leaves = [wte_out, params.wte, params.wpe, params.ln_f.g, params.ln_f.b]
    for b in params.blocks:
        for part in (b.ln_1, b.ln_2):
            leaves += [part.g, part.b]
        for part in (b.attn_c_attn, b.attn_c_proj, b.mlp_c_fc, b.mlp_c_proj):
            leaves += [part.w, part.b]

    def copied(calls):
        return [c[2] for c in calls if c[0] == "memcpy" and c[1] == "to_device"]

    print(json.dumps({"scenario": "gpt2_fused", "weight_arrays": len(leaves), "weight_bytes": sum(a.nbytes for a in leaves),
                      "first_copies": copied(first), "second_copies": copied(second)}), flush=True)

    # subgraph mode: the residual stream stays on the device between sublayers
    runner = compile_model(load_model(model_dir), "subgraph", "gpu")
    runner.forward([5, 9, 1])
    RUNTIME.calls.clear()
    logits = runner.forward([5, 9, 1, 7])
    calls = list(RUNTIME.calls)
    trace = {}
    runner.forward([5, 9, 1, 7], trace=trace)
    config = runner.config
    print(json.dumps({
        "scenario": "gpt2_subgraph", "n_layer": config.n_layer, "n_embd": config.n_embd, "vocab": config.vocab_size,
        "sublayer_calls": sum(1 for c in calls if c[0] == "stream"),
        "to_device": [c[2] for c in calls if c[0] == "memcpy" and c[1] == "to_device"],
        "to_host": [c[2] for c in calls if c[0] == "memcpy" and c[1] == "to_host"],
        "logits": [list(logits.shape), str(logits.dtype)],
        "trace": {k: [list(v.shape), str(v.dtype), type(v).__name__] for k, v in trace.items()},
    }), flush=True)


def memory_cache_main(fake_runtime: str) -> None:
    """compiler/gpu_memory_cache.c loaded ahead of the fake runtime, as ahead of the real one:
    repeated calls reuse device blocks, and the stream rule holds."""
    shim = gpu.load_memory_cache()
    library = ctypes.CDLL(fake_runtime, mode=ctypes.RTLD_GLOBAL)
    runtime = FakeCudaRuntime(library)
    gpu._cuda_driver = lambda: library
    gpu.attach_memory_cache(shim, fake_runtime)
    gpu.device_available = lambda: (True, "fake CUDA runtime")
    gpu._cuda_runtime_libraries = lambda: (fake_runtime,)
    fn, args = scenarios()["gelu_matmul_and_sum"]
    f = compiler.jit(fn, target="gpu")
    calls, stats = [], []
    for call_args in (args, args, (args[0][:3], args[1])):  # the third: other shapes, other sizes
        runtime.calls.clear()
        f(*call_args)
        calls.append(list(runtime.calls))
        stats.append(gpu.memory_cache_stats())
    print(json.dumps({"scenario": "memory_cache_calls", "calls": calls, "stats": stats}), flush=True)

    alloc, free = shim.mgpuMemAlloc, shim.mgpuMemFree
    alloc.restype, alloc.argtypes = P, [ctypes.c_uint64, P, ctypes.c_bool]
    free.restype, free.argtypes = None, [P, P]
    sync, destroy = shim.mgpuStreamSynchronize, shim.mgpuStreamDestroy
    sync.argtypes = destroy.argtypes = [P]
    s1, s2, s3, s4, s5 = 0x51, 0x52, 0x53, 0x54, 0x55
    probes = {}
    shim.parity_gpu_memory_cache_trim()  # the calls' blocks go back: the probes start from an empty cache
    runtime.calls.clear()
    p = alloc(96, s1, False)
    free(p, s1)
    probes["other_stream_before_sync_is_new"] = alloc(96, s2, False) != p
    q = p
    probes["same_stream_reuses_at_once"] = alloc(96, s1, False) == q
    free(q, s1)
    sync(s1)
    probes["any_stream_after_sync_reuses"] = alloc(96, s3, False) == q
    u = alloc(200, s4, False)
    free(u, s4)
    runtime.calls.clear()
    destroy(s4)
    probes["destroyed_unsynchronized_is_released"] = runtime.calls == [["free", 200], ["destroy", s4]]
    alloc(200, s5, False)
    probes["released_is_not_reused"] = ["alloc", 200, 0, s5] in runtime.calls
    for size in (64, 64, 128):
        free(alloc(size, None, False), None)  # no stream (a DeviceArray from Python): settled at once
    runtime.refuse = 1
    runtime.calls.clear()
    big = alloc(4096, s1, False)
    probes["out_of_memory_releases_the_cache_and_retries"] = bool(big) and runtime.calls[0] == ["alloc_refused", 4096] \
        and sorted(c[1] for c in runtime.calls if c[0] == "free") == [64, 128] and runtime.calls[-1][:2] == ["alloc", 4096]
    free(big, s1)
    sync(s1)
    runtime.calls.clear()
    shim.parity_gpu_memory_cache_set_limit(ctypes.c_uint64(0))
    probes["limit_releases_what_exceeds_it"] = runtime.calls == [["free", 4096]]
    shim.parity_gpu_memory_cache_set_limit(ctypes.c_uint64(2**64 - 1))
    print(json.dumps({"scenario": "memory_cache_probes", "probes": probes, "stats": gpu.memory_cache_stats()}), flush=True)


RUNTIME = None
LIBRARY = None

if __name__ == "__main__":
    if sys.argv[3:] == ["--memory-cache"]:
        memory_cache_main(sys.argv[1])
        sys.exit(0)
    main(sys.argv[1])
    device_error_scenario()
    resident_scenario()
    gpt2_scenario(sys.argv[2])
    print(json.dumps({"scenario": "context", "without_context": RUNTIME.without_context}), flush=True)
