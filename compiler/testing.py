"""Test support: fault injection, so the harness's ability to catch and localize
a miscompiled op can itself be tested."""

from __future__ import annotations

import contextlib

from .jit import FAULTS


@contextlib.contextmanager
def inject_fault(op: str, factor: float = 1.01):
    """Multiply the output of every ``op`` (a primitive name such as "exp") by ``factor``
    in every kernel compiled while active. The fault is part of the IR, so cached
    kernels built without it are never reused."""
    previous = FAULTS.get(op)
    FAULTS[op] = float(factor)
    try:
        yield
    finally:
        if previous is None:
            FAULTS.pop(op, None)
        else:
            FAULTS[op] = previous
