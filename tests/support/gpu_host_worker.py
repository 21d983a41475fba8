"""Runs GPU kernel libraries through the production path (``jit(..., target="gpu")`` ->
kernel cache -> ``GpuKernel``) against tests/support/fake_cuda_runtime.c, in a process of its
own so no real CUDA runtime can be loaded before the fake one. Usage:
``python gpu_host_worker.py FAKE_RUNTIME.so``; prints one JSON object per scenario."""

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
        self.calls: list[list] = []
        self.device: dict[int, int] = {}   # pointer -> bytes
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
        ptr = _libc.malloc(max(size, 1))
        ctypes.memset(ptr, PATTERN, size)
        self.device[ptr] = size
        self.calls.append(["alloc", size, host_shared, stream])
        return ptr

    def free(self, ptr, stream):
        self.calls.append(["free", self.device.pop(ptr)])
        _libc.free(ptr)

    def memcpy(self, dst, src, size, stream):
        kind = {(True, False): "to_device", (False, True): "to_host"}.get((dst in self.device, src in self.device), "other")
        digest = hashlib.sha256(ctypes.string_at(src, size)).hexdigest() if kind == "to_device" else None
        self.calls.append(["memcpy", kind, size, stream, digest])
        ctypes.memmove(dst, src, size)

    def module_load(self, data, size):
        self.calls.append(["load", ctypes.string_at(data, min(size, 4)).hex()])
        return 0xBEEF

    def launch(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra, n_params):
        self.calls.append(["launch", [gx, gy, gz], [bx, by, bz], stream, n_params])


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
    library = ctypes.CDLL(fake_runtime, mode=ctypes.RTLD_GLOBAL)
    runtime = FakeCudaRuntime(library)
    gpu.device_available = lambda: (True, "fake CUDA runtime")
    gpu._cuda_runtime_libraries = lambda: (fake_runtime,)
    for name, (fn, args) in scenarios().items():
        runtime.calls.clear()
        f = compiler.jit(fn, target="gpu")
        out = f(*args)
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
            "outputs": [{"shape": list(o.shape), "dtype": str(o.dtype), "all_pattern": bool((o.view(np.uint8) == PATTERN).all())}
                        for o in outs],
        }), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
