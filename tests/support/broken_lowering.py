"""Deliberately broken lowerings for tests: a compiler bug that makes IR MLIR refuses, made by
editing one line a lowering method emits."""

from __future__ import annotations

import contextlib
import re

from compiler.lowering import Emitter


@contextlib.contextmanager
def edited_lowering(method: str, marker: str, edit):
    """While inside, each call of ``Emitter.<method>`` has the last line it emitted containing
    ``marker`` passed through ``edit``."""
    original = getattr(Emitter, method)

    def broken(self, *args, **kwargs):
        first = len(self.lines)
        result = original(self, *args, **kwargs)
        hits = [i for i in range(first, len(self.lines)) if marker in self.lines[i]]
        if hits:
            self.lines[hits[-1]] = edit(self.lines[hits[-1]])
        return result

    setattr(Emitter, method, broken)
    try:
        yield
    finally:
        setattr(Emitter, method, original)


def offset_past_the_end(text: str) -> str:
    """A 2-D ``tensor.insert_slice`` placed one element further along axis 1: its slice runs out
    of the result, which MLIR's verifier refuses."""
    return re.sub(r"\[(\d+), (\d+)\]", lambda m: f"[{m.group(1)}, {int(m.group(2)) + 1}]", text, count=1)


def concat_past_the_end():
    """Every concat's last part one element too far along axis 1."""
    return edited_lowering("concat", "tensor.insert_slice", offset_past_the_end)


def reversed_permutation():
    """Every ``linalg.transpose`` with its permutation reversed: the result type no longer
    matches (for a permutation that is not its own reverse), which MLIR's verifier refuses."""
    def edit(text):
        return re.sub(r"permutation = \[([\d, ]+)\]",
                      lambda m: "permutation = [" + ", ".join(reversed(m.group(1).split(", "))) + "]", text)
    return edited_lowering("transpose", "linalg.transpose", edit)
