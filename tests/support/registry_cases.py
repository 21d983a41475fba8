"""The op registry's sampled calls, shared by the tests that sweep every registered op (views, layouts)."""

from __future__ import annotations

import numpy as np

from compiler import opinfo as oi
from harness.fuzzing.cases import decode_operand, sample_op_case


def leaves(value):
    """The items of a result, through nested tuples and lists."""
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from leaves(v)
    else:
        yield value


def registry_cases(seeds, arrays_only: bool = False):
    """(name, OpInfo, params, operands) of one sampled call of every registered op per seed; with
    ``arrays_only``, only calls whose operands are all arrays."""
    for name, info in oi.REGISTRY.items():
        for seed in seeds:
            case = sample_op_case(oi.RandomChooser(31 * seed + 7 + sum(map(ord, name))), info)
            operands = [decode_operand(o) for o in case["operands"]]
            if not arrays_only or all(isinstance(o, np.ndarray) for o in operands):
                yield name, info, case["params"], operands
