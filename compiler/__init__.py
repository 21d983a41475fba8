"""Parity's tensor compiler: Python tensor expressions (operator overloads and
plain NumPy code traced through the array protocols) become a typed tensor graph
with NumPy 2 dtype rules, then MLIR ``linalg`` on tensors, which MLIR fuses,
bufferizes and lowers to native code. Public API: ``jit``, ``build_only``, ``emit``,
``CompileError`` (MLIR rejected what the compiler lowered, named by the user's source), the math
helpers ``tanh``/``exp``/``sqrt``, ``Tensor``, the library formulas in ``ops`` and the submodules
``gpu`` (``device_available``), ``gpt2``, ``testing`` and ``diagnose``, imported on first use."""

from __future__ import annotations

import numpy as np

from .backend import get_target, kernel_cache_dir, toolchain_version
from .errors import CompileError, located_compile_errors
from .jit import JitFunction, build_only, jit
from .tracer import Tensor


def tanh(x):
    return np.tanh(x)


def exp(x):
    return np.exp(x)


def sqrt(x):
    return np.sqrt(x)


STAGES = ("tensor", "optimized", "lowered")


def emit(fn, *args, stage: str = "optimized", target: str = "cpu", **static) -> str:
    """The IR of ``fn`` specialized on ``args`` at one pipeline stage."""
    lowered = JitFunction(fn, target).lower(*args, **static)
    with located_compile_errors(lowered):
        stages = get_target(target).stages(lowered)
    if stage not in stages:
        raise ValueError(f"unknown stage {stage!r} for target {target}; choose from {', '.join(stages)}")
    return stages[stage]


# submodules of the public API, imported on first use (the GPU target and GPT-2 load toolchains and
# tokenizers a CPU-only user of ``jit`` never needs): ``compiler.gpu.device_available()`` works
# after a plain ``import compiler``
_LAZY_SUBMODULES = ("gpu", "gpt2", "testing", "diagnose", "ops")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["jit", "build_only", "CompileError", "located_compile_errors", "kernel_cache_dir", "emit", "tanh", "exp", "sqrt", "Tensor", "JitFunction", "toolchain_version"]
