"""Compile errors named by the user's source. MLIR refusing a module the compiler lowered (the
verifier rejects an op, a pass cannot handle one) is a compiler bug; the raw diagnostic names an
MLIR op and an IR location. The lowering tags every op's location with the graph op that made it
(``loc("concat#7"("model.py":43:0))``, see ``lowering.Emitter.located``); this module turns the
diagnostic back into a ``CompileError`` naming that graph op, its source line, function and
callers — what a divergence report names for a numerical miscompile."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

from .graph import SourceLoc

# the name of an MLIR NameLoc: ``"concat#7"(`` (a quoted name right before its child location)
_NAME_LOC = re.compile(r'"((?:[^"\\]|\\.)*)"\(')
# a location in the module text itself (a syntax or type error): ``loc("-":12:5)``
_TEXT_LOC = re.compile(r'^loc\("-":(\d+):\d+\)$')
_CURRENT_OP = re.compile(r'see current operation: (?:%\S+ = )?"([\w.]+)"')
_VERIFIER_OP = re.compile(r"^'([\w.]+)' op ")  # a verifier's message names its op: "'linalg.transpose' op ..."


@dataclass(frozen=True)
class OpOrigin:
    """What a location tag in the lowered module stands for: the graph op that emitted the MLIR ops
    carrying it. ``node_id`` is the graph node's id (in the trace that made this module)."""

    op: str
    loc: SourceLoc
    node_id: int


class CompileError(RuntimeError):
    """MLIR rejected the module the compiler lowered: a compiler bug, located in user terms when the
    failing MLIR op carries a tag. ``detail`` is MLIR's own message, ``stage`` what MLIR was doing
    (its error's headline), ``mlir_op`` the failing MLIR op's name when MLIR names it, ``origin``
    the graph op (None when the diagnostic points at no tagged op)."""

    def __init__(self, stage: str, detail: str, origin: OpOrigin | None = None, mlir_op: str | None = None):
        self.stage, self.detail, self.origin, self.mlir_op = stage, detail, origin, mlir_op
        super().__init__(self._message())

    def _message(self) -> str:
        text = f"MLIR rejected the compiled module ({self.stage}): {self.detail}"
        if self.origin is None:
            return text + (f" (in {self.mlir_op}; no graph op is named by its location)" if self.mlir_op else "")
        where = self.origin.loc.short()
        if self.origin.loc.function:
            where += f" in {self.origin.loc.function}"
        via = f"{self.mlir_op} lowered from " if self.mlir_op else ""
        return f"{text} — {via}op {self.origin.op} at {where}"


def _tags_in(location_text: str, lowered_text: str) -> list[str]:
    """Tag names a diagnostic's location carries; for a location in the module text itself, those on
    that line of it."""
    found = _TEXT_LOC.match(location_text)
    if found:
        lines = lowered_text.splitlines()
        line = int(found.group(1))
        location_text = lines[line - 1] if 0 < line <= len(lines) else ""
    return [m.group(1) for m in _NAME_LOC.finditer(location_text)]


def from_mlir_error(exc: BaseException, lowered) -> CompileError | None:
    """The ``CompileError`` an MLIR diagnostic error on ``lowered`` (a ``LoweredModule``) amounts to;
    None when ``exc`` is no MLIR diagnostic error. The first error diagnostic is the one named: MLIR
    stops at the first op the verifier refuses, and later ones are often its consequences."""
    diagnostics = getattr(exc, "error_diagnostics", None)
    if type(exc).__name__ != "MLIRError" or diagnostics is None:
        return None
    origins = getattr(lowered, "origins", {}) or {}
    stage = (getattr(exc, "message", None) or str(exc).split(":\n")[0]).strip().rstrip(":")
    if not diagnostics:
        return CompileError(stage, "MLIR gave no diagnostic")
    first = diagnostics[0]
    places = [str(first.location)] + [str(note.location) for note in first.notes]
    origin = next((origins[tag] for place in places for tag in _tags_in(place, lowered.text) if tag in origins), None)
    mlir_op = next((m.group(1) for note in first.notes if (m := _CURRENT_OP.search(note.message))), None)
    if mlir_op is None and (m := _VERIFIER_OP.match(first.message)):
        mlir_op = m.group(1)
    return CompileError(stage, first.message, origin, mlir_op)


@contextlib.contextmanager
def located_compile_errors(lowered):
    """Inside: an MLIR diagnostic error while compiling ``lowered`` becomes a ``CompileError`` (the
    original as its cause); every other exception passes unchanged."""
    try:
        yield
    except Exception as exc:
        error = from_mlir_error(exc, lowered)
        if error is None:
            raise
        raise error from exc
