"""Arrays that stay in GPU memory between calls. ``to_device`` copies a NumPy array
into a plain device allocation once (never managed memory); a ``DeviceArray`` passed
to a function compiled for the GPU target goes to its kernels as it is, with no copy,
so weights are uploaded once rather than on every call; ``empty`` allocates the results
of functions compiled with ``device_outputs``. Allocation and copies go through the same
runtime functions the kernels call (the device-memory cache's where it is loaded). Inside ``build_only``
``to_device`` gives a placeholder with a shape and dtype but no memory: kernels are
built for it, never run."""

from __future__ import annotations

import ctypes
import functools
import threading

import numpy as np


class DeviceArray:
    """A dense row-major array in device memory, freed when the object is."""

    def __init__(self, pointer: int | None, shape: tuple, dtype: np.dtype):
        self.pointer = pointer            # None: a build-only placeholder with no memory
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self._freed = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def is_placeholder(self) -> bool:
        return self.pointer is None

    def __repr__(self) -> str:
        where = "placeholder" if self.is_placeholder else f"device 0x{self.pointer or 0:x}"
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, {where})"

    def to_host(self) -> np.ndarray:
        """A NumPy copy of the contents."""
        if self.is_placeholder:
            raise ValueError("a build-only placeholder DeviceArray holds no data")
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            _copy(out.ctypes.data, self.pointer, self.nbytes)
        return out

    def __array__(self, *args, **kwargs):
        raise TypeError("a DeviceArray lives in GPU memory: call .to_host() for a NumPy copy")

    def __del__(self):
        if self.pointer and not self._freed:
            self._freed = True
            try:
                from .gpu import primary_context_current
                with primary_context_current("freeing a DeviceArray"):  # mgpuMemFree pushes no context
                    _runtime().mgpuMemFree(self.pointer, None)
            except Exception:  # interpreter shutdown: the runtime may already be gone
                pass


_lock = threading.Lock()


@functools.cache
def _runtime():
    """The CUDA runtime wrappers as the kernels see them (global symbols: the device-memory cache's
    allocation functions where it is loaded, libmlir_cuda_runtime's otherwise), with C signatures."""
    from . import gpu
    gpu._cuda_runtime_libraries()
    lib = ctypes.CDLL(None)
    p = ctypes.c_void_p
    lib.mgpuMemAlloc.restype, lib.mgpuMemAlloc.argtypes = p, [ctypes.c_uint64, p, ctypes.c_bool]
    lib.mgpuMemFree.restype, lib.mgpuMemFree.argtypes = None, [p, p]
    lib.mgpuMemcpy.restype, lib.mgpuMemcpy.argtypes = None, [p, p, ctypes.c_size_t, p]
    lib.mgpuStreamCreate.restype, lib.mgpuStreamCreate.argtypes = p, []
    lib.mgpuStreamSynchronize.restype, lib.mgpuStreamSynchronize.argtypes = None, [p]
    lib.mgpuStreamDestroy.restype, lib.mgpuStreamDestroy.argtypes = None, [p]
    return lib


def _copy(dst: int, src: int, nbytes: int) -> None:
    """A copy that has finished when this returns (the kernels run on streams of their own)."""
    from .gpu import primary_context_current
    rt = _runtime()
    with _lock, primary_context_current("copying a DeviceArray"):  # mgpuMemcpy pushes no context
        stream = rt.mgpuStreamCreate()
        rt.mgpuMemcpy(dst, src, nbytes, stream)
        rt.mgpuStreamSynchronize(stream)
        rt.mgpuStreamDestroy(stream)


def to_device(array) -> DeviceArray:
    """Copy ``array`` into a new device allocation (a placeholder inside ``build_only``)."""
    host = np.ascontiguousarray(array)
    out = empty(host.shape, host.dtype)
    if not out.is_placeholder and host.nbytes:
        storage = host.view(np.int8) if host.dtype == np.bool_ else host  # bools are stored as i8, one byte each
        _copy(out.pointer, storage.ctypes.data, host.nbytes)
    return out


def empty(shape, dtype) -> DeviceArray:
    """A new device allocation, contents undefined (a placeholder inside ``build_only``)."""
    from . import dtypes as dt
    from .jit import building

    shape, dtype = tuple(int(d) for d in shape), np.dtype(dtype)
    if dtype not in dt.SUPPORTED:
        raise TypeError(f"dtype {dtype} is not supported on the device")
    if building():
        return DeviceArray(None, shape, dtype)
    from .gpu import DeviceUnavailableError, device_available
    ok, reason = device_available()
    if not ok:
        raise DeviceUnavailableError(f"cannot allocate GPU memory: {reason}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if not nbytes:
        return DeviceArray(0, shape, dtype)
    pointer = _runtime().mgpuMemAlloc(nbytes, None, False)
    if not pointer:
        raise MemoryError(f"the GPU could not allocate {nbytes} bytes for an array of shape {shape}")
    return DeviceArray(pointer, shape, dtype)


def tree_to_device(tree):
    """``to_device`` on every array of a nest of dataclasses, tuples, lists and dicts."""
    from .jit import map_arrays
    return map_arrays(to_device, tree)
