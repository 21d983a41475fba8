"""The typed tensor graph: a node is an input, a constant, or one application of
a primitive (see ``primitives``) with static attributes, a static shape, a NumPy
dtype and the user source location that created it."""

from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass, field

import numpy as np

_ids = itertools.count()

_COMPILER_DIR = os.path.dirname(os.path.abspath(__file__))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))
# Frames in these compiler modules are machinery, not user code; compiler/ops.py and
# compiler/gpt2/ are formulas written like user code, so their lines are reported.
_INTERNAL = {
    os.path.join(_COMPILER_DIR, name)
    for name in ("graph.py", "tracer.py", "primitives.py", "numpy_api.py", "jit.py", "lowering.py", "dtypes.py", "diagnose.py")
}
# single functions of user-like files that are machinery too (a wrapper that only re-passes its
# arguments): their frames are never named as a caller
_MACHINERY_CODE: set = set()


def machinery(fn):
    """Mark ``fn`` (a wrapper around traced code that makes no op itself) as compiler machinery:
    source locations skip its frame, so reports name the code it wraps and that code's callers."""
    _MACHINERY_CODE.add(fn.__code__)
    return fn


@dataclass(frozen=True)
class SourceLoc:
    file: str
    line: int
    function: str = ""
    # the user frames that called ``function``, innermost first, as (file, line, function), up to the
    # traced function: one line of a formula (``linear``'s matmul) serves many calls, and these say which
    callers: tuple = ()

    def short(self) -> str:
        return _short(self.file, self.line)

    def call_chain(self) -> list[str]:
        """``path:LINE (function)`` of each caller, innermost first."""
        return [f"{_short(file, line)} ({function})" for file, line, function in self.callers]

    def __str__(self) -> str:
        return self.short()


def _short(file: str, line: int) -> str:
    try:
        rel = os.path.relpath(file)
    except ValueError:
        rel = file
    if rel.startswith(".."):
        rel = file
    return f"{rel}:{line}"


UNKNOWN_LOC = SourceLoc("<unknown>", 0)
MAX_CALLERS = 8


def _is_user_frame(fname: str) -> bool:
    return fname not in _INTERNAL and not fname.startswith(_NUMPY_DIR) and not fname.startswith("<frozen")


def user_location() -> SourceLoc:
    """The innermost stack frame that belongs to user code (not compiler machinery, not NumPy), with
    the user frames that called it up to the first compiler frame (the tracer calling the function)."""
    frame = sys._getframe(1)
    while frame is not None:
        fname = os.path.abspath(frame.f_code.co_filename)
        if _is_user_frame(fname):
            return SourceLoc(fname, frame.f_lineno, frame.f_code.co_name, _callers(frame.f_back))
        frame = frame.f_back
    return UNKNOWN_LOC


def _callers(frame) -> tuple:
    callers = []
    while frame is not None and len(callers) < MAX_CALLERS:
        fname = os.path.abspath(frame.f_code.co_filename)
        if fname in _INTERNAL:
            break  # the tracer: above it is whoever called jit, not the traced function
        if _is_user_frame(fname) and frame.f_code not in _MACHINERY_CODE:
            callers.append((fname, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    return tuple(callers)


@dataclass(eq=False)
class Node:
    op: str                      # "input", "const", or a primitive name
    inputs: tuple                # of Node
    attrs: dict                  # static attributes (hashable values)
    shape: tuple
    dtype: np.dtype
    loc: SourceLoc = UNKNOWN_LOC
    value: np.ndarray | None = None   # constants only
    index: int | None = None          # inputs only: position in the flattened argument list
    name: str | None = None           # inputs only: the argument's name, for error messages
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def is_const(self) -> bool:
        return self.op == "const"

    def describe(self) -> str:
        return f"{self.op}{self.shape}:{self.dtype} at {self.loc}"


def const_node(value, loc: SourceLoc | None = None) -> Node:
    arr = np.asarray(value)
    return Node("const", (), {}, tuple(arr.shape), arr.dtype, loc or user_location(), value=arr)


def input_node(index: int, name: str, shape, dtype, device_resident: bool = False, strides: tuple | None = None) -> Node:
    """An argument; ``device_resident``: it arrives in GPU memory (a ``DeviceArray``), not to be copied in;
    ``strides``: the caller's array is laid out so (in elements; None: C-contiguous), which NumPy's sums
    follow (the kernel itself receives a C-contiguous copy)."""
    attrs = {"device_resident": True} if device_resident else {}
    if strides is not None:
        attrs["strides"] = strides
    return Node("input", (), attrs, tuple(shape), np.dtype(dtype), UNKNOWN_LOC, index=index, name=name)


def topological(outputs: list[Node]) -> list[Node]:
    """Nodes reachable from ``outputs``, every node after its inputs."""
    order, seen = [], set()
    stack = [(n, False) for n in reversed(outputs)]
    while stack:
        node, expanded = stack.pop()
        if node.id in seen:
            continue
        if expanded:
            seen.add(node.id)
            order.append(node)
            continue
        stack.append((node, True))
        for inp in reversed(node.inputs):
            if inp.id not in seen:
                stack.append((inp, False))
    return order
