"""Test support: fault injection, so the harness's ability to catch and localize
a miscompiled op can itself be tested."""

from __future__ import annotations

import contextlib

from .jit import FAULTS


@contextlib.contextmanager
def inject_fault(op: str, factor: float = 1.01, offset: float = 0.0):
    """Replace the output ``y`` of every ``op`` (a primitive name such as "exp") by
    ``y * factor + offset`` in every kernel compiled while active. A pure scale can cancel
    downstream (softmax divides it out); an offset does not. The fault is part of the IR,
    so cached kernels built without it are never reused."""
    previous = FAULTS.get(op)
    FAULTS[op] = (float(factor), float(offset))
    try:
        yield
    finally:
        if previous is None:
            FAULTS.pop(op, None)
        else:
            FAULTS[op] = previous
