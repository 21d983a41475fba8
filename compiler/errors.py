"""Compile errors named by the user's source. MLIR refusing a module the compiler lowered (the
verifier rejects an op, a pass or the translation to LLVM IR cannot handle one) is a compiler bug; the raw diagnostic names an
MLIR op and an IR location. The lowering tags every op's location with the graph op that made it
(``loc("concat#7"("model.py":43:0))``, see ``lowering.Emitter.located``); this module turns the
diagnostic back into a ``CompileError`` naming that graph op, its source line, function and
callers — what a divergence report names for a numerical miscompile."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

from .graph import SourceLoc

# the name of an MLIR NameLoc: ``"concat#7"(`` before its child location, or ``"parity_matmul_0")`` with
# none (a file location's quoted path is followed by ``:``)
_NAME_LOC = re.compile(r'"((?:[^"\\]|\\.)*)"[()]')
# a location in the module text itself (a syntax or type error): ``loc("-":12:5)``
_TEXT_LOC = re.compile(r'^loc\("-":(\d+):\d+\)$')
_CURRENT_OP = re.compile(r'see current operation: (?:%\S+ = )?"([\w.]+)"')
# a verifier's message names its op ("'linalg.transpose' op ..."), a translation error at its end ("op: math.erf")
_VERIFIER_OP = re.compile(r"(?:^'([\w.]+)' op |for op: ([\w.]+)$)")


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

    def __reduce__(self):  # picklable (a fuzz worker process sends its failures back)
        return type(self), (self.stage, self.detail, self.origin, self.mlir_op)

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
    """Tag names a diagnostic's location carries. For a location in the module text itself, those of
    the first located line from there on: an op's first line (a ``linalg.generic`` header) carries no
    location, its region's lines and its closing line do, all with the op's tag."""
    found = _TEXT_LOC.match(location_text)
    if not found:
        return _NAME_LOC.findall(location_text)
    lines = lowered_text.splitlines()
    for text in lines[max(int(found.group(1)) - 1, 0):]:
        if "loc(" in text:
            return _NAME_LOC.findall(text)
    return []


def _is_mlir_error(exc: BaseException) -> bool:
    # the bindings define the class inside a function: its module, not an importable name, tells it
    kind = type(exc)
    return kind.__name__ == "MLIRError" and kind.__module__.startswith("mlir") and \
        isinstance(getattr(exc, "error_diagnostics", None), list)


def from_mlir_error(exc: BaseException, lowered) -> CompileError | None:
    """The ``CompileError`` an error while compiling ``lowered`` (a ``LoweredModule``) amounts to:
    an MLIR diagnostic error, or any other error whose message names a tagged op (a failed LLVM
    translation, the GPU target's host-code check); None for anything else. The first error
    diagnostic is the one named: MLIR stops at the first op the verifier refuses, and later ones
    are often its consequences."""
    origins = getattr(lowered, "origins", {}) or {}
    if not _is_mlir_error(exc):
        text = str(exc)
        origin = next((origins[tag] for tag in _NAME_LOC.findall(text) if tag in origins), None)
        if origin is None:
            return None
        from .backend import strip_locations  # (backend imports the lowering, which imports this)
        detail = re.sub(r":\s*:", ":", strip_locations(text)).strip()
        return CompileError("lowering to native code", detail, origin, _mlir_op_named(text))
    diagnostics = exc.error_diagnostics
    stage = (getattr(exc, "message", None) or str(exc).split(":\n")[0]).strip().rstrip(":")
    if not diagnostics:
        return CompileError(stage, "MLIR gave no diagnostic")
    first = diagnostics[0]
    message, notes = str(getattr(first, "message", first)), list(getattr(first, "notes", []))
    places = [str(getattr(first, "location", ""))] + [str(getattr(note, "location", "")) for note in notes]
    origin = next((origins[tag] for place in places for tag in _tags_in(place, lowered.text) if tag in origins), None)
    mlir_op = next((m.group(1) for note in notes if (m := _CURRENT_OP.search(str(getattr(note, "message", ""))))),
                   None)
    return CompileError(stage, message, origin, mlir_op or _mlir_op_named(message))


def _mlir_op_named(message: str) -> str | None:
    found = _VERIFIER_OP.search(message.strip())
    return (found.group(1) or found.group(2)) if found else None


@contextlib.contextmanager
def located_compile_errors(lowered):
    """Inside: an error while compiling ``lowered`` that ``from_mlir_error`` reads as MLIR refusing
    it becomes a ``CompileError`` (the original as its cause); every other exception passes unchanged."""
    try:
        yield
    except Exception as exc:
        error = from_mlir_error(exc, lowered)
        if error is None:
            raise
        raise error from exc
