"""The GPU target's host side, run on the CPU against a recording stand-in for
``libmlir_cuda_runtime`` (device memory is host memory, launches are recorded,
not run): kernel modules load when the engine initializes, inputs are copied to
plain device allocations (never host-shared), every kernel launches on one
stream, outputs are copied back and every allocation is freed. Kernel numerics
need a real device (tests/test_gpu.py)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from compiler import get_target, ops
from compiler.backend import NativeKernel, mlir_lib_dir
from compiler.jit import JitFunction

gpu = pytest.importorskip("compiler.gpu")
from compiler.gpu_toolchain import ToolchainError, find_toolchain  # noqa: E402

try:
    find_toolchain()
except ToolchainError as exc:  # pragma: no cover
    pytest.skip(f"no CUDA toolchain: {exc}", allow_module_level=True)

P, I64 = ctypes.c_void_p, ctypes.c_int64
_libc = ctypes.CDLL(None)
_libc.malloc.restype, _libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
_libc.free.argtypes = [ctypes.c_void_p]


class FakeCudaRuntime:
    """Records every runtime call the host code makes."""

    STREAM = 0x5150

    def __init__(self):
        self.calls: list[tuple] = []
        self.device: dict[int, int] = {}   # pointer -> bytes
        self.callbacks = {
            "mgpuStreamCreate": ctypes.CFUNCTYPE(P)(self.stream_create),
            "mgpuStreamSynchronize": ctypes.CFUNCTYPE(None, P)(lambda s: self.calls.append(("sync", s))),
            "mgpuStreamDestroy": ctypes.CFUNCTYPE(None, P)(lambda s: self.calls.append(("destroy", s))),
            "mgpuMemAlloc": ctypes.CFUNCTYPE(P, I64, P, ctypes.c_int8)(self.alloc),
            "mgpuMemFree": ctypes.CFUNCTYPE(None, P, P)(self.free),
            "mgpuMemcpy": ctypes.CFUNCTYPE(None, P, P, I64, P)(self.memcpy),
            "mgpuModuleLoad": ctypes.CFUNCTYPE(P, P, I64)(self.module_load),
            "mgpuModuleUnload": ctypes.CFUNCTYPE(None, P)(lambda m: None),
            "mgpuModuleGetFunction": ctypes.CFUNCTYPE(P, P, P)(lambda m, name: 0xF00),
            "mgpuLaunchKernel": ctypes.CFUNCTYPE(None, P, I64, I64, I64, I64, I64, I64, ctypes.c_int32, P, P, P, I64)(
                self.launch),
        }

    def stream_create(self):
        self.calls.append(("stream",))
        return self.STREAM

    def alloc(self, size, stream, host_shared):
        ptr = _libc.malloc(max(size, 1))
        self.device[ptr] = size
        self.calls.append(("alloc", size, host_shared, stream))
        return ptr

    def free(self, ptr, stream):
        self.calls.append(("free", self.device.pop(ptr)))
        _libc.free(ptr)

    def memcpy(self, dst, src, size, stream):
        kind = {(True, False): "to_device", (False, True): "to_host"}.get((dst in self.device, src in self.device), "other")
        self.calls.append(("memcpy", kind, size, stream))
        ctypes.memmove(dst, src, size)

    def module_load(self, data, size):
        self.calls.append(("load", ctypes.string_at(data, min(size, 4))))
        return 0xBEEF

    def launch(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra, n_params):
        self.calls.append(("launch", (gx, gy, gz), (bx, by, bz), stream))

    def of(self, kind):
        return [c for c in self.calls if c[0] == kind]


def run_on_fake_device(fn, *args):
    from mlir import execution_engine
    lowered = JitFunction(fn, "gpu").lower(*args)
    module = get_target("gpu").native_module(lowered)
    runtime = FakeCudaRuntime()
    with module.context:
        engine = execution_engine.ExecutionEngine(
            module, opt_level=0, shared_libs=[str(mlir_lib_dir() / "libmlir_c_runner_utils.so")])
    for name, callback in runtime.callbacks.items():
        engine.raw_register_runtime(name, ctypes.cast(callback, ctypes.c_void_p))
    engine.initialize()
    loaded = len(runtime.of("load"))
    runtime.calls.clear()
    outputs = [np.zeros(shape, dtype) for shape, dtype in lowered.out_specs]
    NativeKernel(engine.raw_lookup("_mlir_ciface_main"), engine, "main")(
        [np.ascontiguousarray(a) for a in args] + list(lowered.hidden) + outputs)
    return runtime, loaded, lowered


def test_kernel_modules_load_as_cubins_at_initialization():
    x = np.ones((4, 8), np.float32)
    runtime, loaded, lowered = run_on_fake_device(ops.softmax, x)
    n_units = len(gpu.split_ptx(get_target("gpu").stages(lowered)["ptx"]))
    assert loaded == n_units
    launches = runtime.of("launch")
    assert len(launches) >= n_units


def test_explicit_copies_plain_device_memory_one_stream():
    x = np.ones((6, 10), np.float32)
    w = np.ones((10, 3), np.float64)
    runtime, _, _ = run_on_fake_device(lambda a, b: (ops.gelu(a) @ b, a.sum(axis=-1)), x, w)
    calls = runtime.calls
    assert calls[0] == ("stream",)
    assert all(c[2] == 0 for c in runtime.of("alloc")), "device allocations must not be host-shared (managed)"
    to_device = [c[2] for c in runtime.of("memcpy") if c[1] == "to_device"]
    to_host = [c[2] for c in runtime.of("memcpy") if c[1] == "to_host"]
    assert sorted(to_device) == sorted([x.nbytes, w.nbytes])
    assert sorted(to_host) == sorted([6 * 3 * 8, 6 * 4])
    assert not [c for c in runtime.of("memcpy") if c[1] == "other"]
    streams = {c[-1] for c in calls if c[0] in ("launch", "memcpy", "alloc")}
    assert streams == {FakeCudaRuntime.STREAM}, "every copy and launch is ordered on one stream"
    # inputs go over before the first launch, results come back after the last, then the stream is drained
    first_launch = calls.index(runtime.of("launch")[0])
    last_launch = calls.index(runtime.of("launch")[-1])
    assert all(calls.index(c) < first_launch for c in runtime.of("memcpy") if c[1] == "to_device")
    assert all(calls.index(c) > last_launch for c in runtime.of("memcpy") if c[1] == "to_host")
    assert calls[-2:] == [("sync", FakeCudaRuntime.STREAM), ("destroy", FakeCudaRuntime.STREAM)]
    assert not runtime.device, "every device allocation is freed"


def test_matmul_launch_geometry():
    a = np.ones((37, 50), np.float32)
    b = np.ones((50, 19), np.float32)
    runtime, _, _ = run_on_fake_device(lambda p, q: p @ q, a, b)
    from compiler.gpu_matmul import TILE as tile
    grids = [c[1:3] for c in runtime.of("launch")]
    assert (((19 + tile - 1) // tile, (37 + tile - 1) // tile, 1), (tile, tile, 1)) in grids
