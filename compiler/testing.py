"""Test support: fault injection, so the harness's ability to catch and localize
a miscompiled op can itself be tested."""

from __future__ import annotations

import contextlib
import difflib

from .jit import FAULTS
from .primitives import PRIMITIVES


# Primitives whose result is never floating point (bool or integer by their dtype rule): a fault only
# changes floating-point results, so one of these would change nothing.
NEVER_FLOAT = frozenset({
    "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isfinite",
    "signbit", "iota", "sort_permutation",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "argmax", "argmin", "reduce_any", "reduce_all",
    "left_shift", "right_shift", "bitwise_count", "gcd", "lcm",
})


def check_fault(op: str) -> None:
    """A fault that would change nothing (no primitive of that name, or one whose results are never
    floating point) makes a run meant to show that the harness catches it pass silently: both are
    ``ValueError``s. (A non-finite factor or offset is allowed: it models a miscompile that yields
    inf or NaN.)"""
    if op not in PRIMITIVES:
        close = difflib.get_close_matches(op, PRIMITIVES, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else f"one of: {', '.join(sorted(PRIMITIVES))}"
        raise ValueError(f"cannot inject a fault into {op!r}: no primitive of that name ({hint})")
    if op in NEVER_FLOAT:
        raise ValueError(f"cannot inject a fault into {op!r}: its results are never floating point, and a fault "
                         "scales and offsets floating-point results only, so it would change nothing")


@contextlib.contextmanager
def inject_fault(op: str, factor: float = 1.01, offset: float = 0.0):
    """Replace the output ``y`` of every ``op`` (a primitive name such as "exp") by
    ``y * factor + offset`` in every kernel compiled while active. A pure scale can cancel
    downstream (softmax divides it out); an offset does not. The fault is part of the IR,
    so cached kernels built without it are never reused. Only floating-point results change; an
    unknown primitive name is a ``ValueError`` (see ``check_fault``)."""
    check_fault(op)
    previous = FAULTS.get(op)
    FAULTS[op] = (float(factor), float(offset))
    try:
        yield
    finally:
        if previous is None:
            FAULTS.pop(op, None)
        else:
            FAULTS[op] = previous
