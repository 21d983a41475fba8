"""Lockstep differential verification: drives every requested compiler mode over
the reference capture one decoding step at a time (always feeding the
reference's own sequence, so one divergence cannot cascade), compares each
step's tensors and tokens, localizes the first divergence to an op, the
sublayer it is in and its source line, checks the error budget against a baseline report of the same prompt,
checkpoint and length (refusing any other), and assembles the report dict (the JSON schema in ``harness.schema``). ``run_verification`` is the pure
core with injectable capture/runner seams; ``verify`` wires it to the real
reference environment and compiler."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import hashlib
import json
import linecache
import math
import os
import re
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from compiler import CompileError
from harness.terminal import plural
from harness.compare import (
    Tolerance,
    compare_tensor,
    compare_tokens,
    find_regressions,
    first_divergence,
    max_error,
    model_order_key,
    top_two,
    upstream_tensor_name,
)

MODE_NAMES = ("subgraph", "fused", "gpu")
TARGETS = ("cpu", "gpu")
DEFAULT_MODES = ("subgraph", "fused")
DEFAULT_PROMPT = "Alan Turing theorized that computers would one day become"
DEFAULT_TOKENS = 10
PROJECT_ROOT = Path(__file__).resolve().parent.parent

EXIT_PASS, EXIT_DIVERGED, EXIT_ERROR = 0, 1, 2


class VerifyError(Exception):
    """Verification could not run (bad arguments, environment, reference set-up).
    The message says what is wrong and what to do; the CLI exits 2."""


class ReferenceInconsistency(VerifyError):
    """The reference disagrees with itself (its decomposition vs its own full
    forward). Not a compiler divergence: the capture cannot be trusted."""


@dataclass(frozen=True)
class ModePlan:
    """One compiler configuration to verify: report key, compile mode, target."""

    name: str
    kind: str  # "subgraph" | "fused"
    target: str  # "cpu" | "gpu"


def plan_modes(modes: Iterable[str], target: str = "cpu") -> list[ModePlan]:
    """Expand user modes into plans. On the CPU target the report keys are
    "subgraph" and "fused"; anything on the GPU is keyed "gpu-subgraph" /
    "gpu-fused", and mode "gpu" means both of those."""
    if target not in TARGETS:
        raise VerifyError(f"unknown target {target!r}; choose one of {', '.join(TARGETS)}")
    plans: list[ModePlan] = []
    modes = list(modes)
    if not modes:
        raise VerifyError(f"no modes given; choose from {', '.join(MODE_NAMES)}")
    for mode in modes:
        if mode not in MODE_NAMES:
            raise VerifyError(f"unknown mode {mode!r}; choose from {', '.join(MODE_NAMES)} (comma-separated)")
        kinds, on = (("subgraph", "fused"), "gpu") if mode == "gpu" else ((mode,), target)
        for kind in kinds:
            plan = ModePlan(name=kind if on == "cpu" else f"gpu-{kind}", kind=kind, target=on)
            if plan not in plans:
                plans.append(plan)
    return plans


def stable_path(path: str | os.PathLike) -> str:
    """A path that reads the same from any working directory: relative to the
    project root when inside it, else absolute."""
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(PROJECT_ROOT).as_posix()
    except ValueError:
        return str(resolved)


def stable_source(source: str | None) -> str | None:
    """A "path:LINE" location made stable_path, so reports from runs in different
    directories compare equal; anything else is returned as it is."""
    path, _, line = (source or "").rpartition(":")
    if not path or not line.isdigit():
        return source
    return f"{stable_path(path)}:{line}"


def source_text(source: str | None) -> str | None:
    """The text of a "path/to/file.py:LINE" location, or None when unreadable."""
    if not source or ":" not in source:
        return None
    path, _, line = source.rpartition(":")
    if not line.isdigit():
        return None
    for candidate in (Path(path), PROJECT_ROOT / path):
        if candidate.is_file():
            text = linecache.getline(str(candidate), int(line)).rstrip("\n")
            return text.strip() or None
    return None


def _error_entry(plan: ModePlan, status: str, reason: str, expected: list[int]) -> dict:
    return {
        "status": status, "reason": reason, "kind": plan.kind, "target": plan.target,
        "tokens": {"expected": list(expected), "actual": [], "agree": False},
        "forced_tokens": {"expected": list(expected), "actual": [], "agree": False},
        "max_abs_error": None, "first_divergence": None, "checks": [], "near_ties": [],
    }


def _divergence_record(first) -> dict:
    return {"step": first.step, "tensor": first.tensor, "max_abs_error": first.max_abs_error,
            "op": None, "source": None, "reason": first.reason, "worst_index": first.worst_index}


def _keep_partial_results(entry: dict, checks: list, forced: list[int], started: float) -> dict:
    """A mode that failed midway keeps what it computed before failing (checks, lockstep
    tokens, their max error and first divergence), so the error does not hide a divergence
    or wipe the evidence. Not localized: the runner that would re-run the op just failed."""
    entry["checks"] = [c.to_json() for c in checks]
    entry["forced_tokens"]["actual"] = list(forced)
    entry["max_abs_error"] = max_error(checks)
    first = first_divergence(checks)
    if first is not None:
        entry["first_divergence"] = {**_divergence_record(first), "source_text": None,
                                     "localization": "not localized: the mode failed before finishing"}
    entry["duration_s"] = round(time.perf_counter() - started, 3)
    return entry


# MLIR's whole diagnostic can print a large op (a region, a constant): the report keeps its start
MLIR_DIAGNOSTIC_CHARS = 4000


def _compile_failure(plan: ModePlan, exc: CompileError, runner, step: int, tensor: str, partial: tuple,
                     started: float, tol: Tolerance) -> dict:
    """A mode whose kernel MLIR refused: a compiler bug, reported as a finding (status
    "compile_error", exit 1) whose first divergence is the graph op and source line MLIR's
    diagnostic names, at the first step and tensor the mode could not compute. A numerical
    divergence at an earlier step stays the first divergence (status "diverged")."""
    checks, forced, expected = partial
    where = f"step {step}, {tensor}" if step is not None else "the free-running decode"
    entry = _error_entry(plan, "compile_error", f"{where} does not compile: {exc}", expected)
    entry = _keep_partial_results(entry, checks, forced, started)
    if entry["first_divergence"] is not None:
        entry["status"] = "diverged"
        # the tokens after the failing step were never computed: only the tensor divergence is a finding
        numbers = {**entry, "tokens": {"agree": True}, "forced_tokens": {"agree": True}}
        entry["reason"] = f"{_mode_reason(numbers, tol)}; then {where} does not compile: {exc}"
        return entry
    sublayer = tensor
    if exc.origin is not None and hasattr(runner, "sublayer_of_node"):
        sublayer = runner.sublayer_of_node(exc.origin.node_id) or tensor  # fused: one kernel for all sublayers
    entry["first_divergence"] = compile_error_record(
        exc, step if step is not None else len(expected) - 1, tensor, sublayer,
        f"the compiler's code for {tensor}" if step is not None else "the free-running decode's code")
    return entry


def compile_error_record(exc: CompileError, step: int, tensor: str, sublayer: str | None, subject: str) -> dict:
    """A first-divergence record for a kernel MLIR refused: ``subject`` (what did not compile) in
    its reason, the graph op, source line, function, callers and ``sublayer`` MLIR's diagnostic
    leads to, the MLIR op, and the diagnostic itself with its paths made stable."""
    origin = exc.origin
    record = {
        "step": step, "tensor": tensor, "max_abs_error": None, "worst_index": None, "op_max_abs_error": None,
        "reason": f"{subject} does not compile: {exc.detail}",
        "op": None, "source": None, "function": None, "called_from": None, "sublayer": None,
        "mlir_op": exc.mlir_op, "mlir_diagnostic": _stable_diagnostic(str(exc.__cause__ or exc)),
    }
    if origin is None:
        record["localization"] = (f"MLIR refused the module ({exc.stage}); its diagnostic points at no graph op "
                                  "(the diagnostic is below)")
    else:
        loc = origin.loc
        record.update({
            "op": origin.op, "source": stable_source(f"{loc.file}:{loc.line}"), "function": loc.function or None,
            "called_from": [_stable_caller(c) for c in loc.call_chain()], "sublayer": sublayer,
            "localization": (f"MLIR refused the module ({exc.stage}); the failing "
                             f"{exc.mlir_op or 'MLIR op'} carries the location of graph op {origin.op}, "
                             "whose lowering emitted it"),
        })
    record["source_text"] = source_text(record["source"])
    return record


def _stable_diagnostic(text: str) -> str:
    """MLIR's diagnostic, its quoted source paths made stable_path (reports from two checkouts
    compare equal) and cut at MLIR_DIAGNOSTIC_CHARS."""
    text = re.sub(r'"(/[^"]+\.py)"', lambda m: '"' + stable_path(m.group(1)) + '"', text)
    return text[:MLIR_DIAGNOSTIC_CHARS]


def _describe_exception(exc: BaseException) -> str:
    if isinstance(exc, CompileError):  # its message says where, in the user's source
        return f"{type(exc).__name__}: {exc}"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _localize(runner, capture, step: int, tensor: str, n_layer: int, tol: Tolerance) -> dict:
    """Re-run the sublayer that produced `tensor` op by op on the reference's own upstream value,
    each op held to its own rounding. When every op there is within it, the error was born
    upstream, below the tensor tolerance, and grew: the sublayers before it at the same step are
    re-run in model order, and the first op off its rounding there is named. Returns
    op/source/op_max_abs_error (None when unknown) and a sentence about how it went."""
    ids = _step_ids(capture, step)
    upstream_name = upstream_tensor_name(tensor, n_layer)
    try:
        found = _localize_sublayer(runner, capture, step, tensor, ids, n_layer)
        if found:
            return _localized(found, f"re-ran the sublayer on the reference's {upstream_name or 'token ids'}: "
                                     f"first diverging op is {found.get('op')}", sublayer=tensor)
        for earlier in _sublayers_before(tensor, n_layer):
            found = _localize_sublayer(runner, capture, step, earlier, ids, n_layer)
            if found:
                return _localized(found, (
                    f"every op producing {tensor} is within its rounding; the error starts upstream: re-running "
                    f"the sublayers of step {step} in order, the first op off its rounding is {found.get('op')} "
                    f"in {earlier}, whose error stayed within the tensor tolerance until {tensor}"), sublayer=earlier)
        own_kernel_diverges = _own_kernel_diverges(runner, capture, step, tensor, ids, n_layer, tol)
    except Exception as exc:  # localization is a diagnosis aid; its failure must not hide the divergence
        return _not_localized(f"localization failed: {_describe_exception(exc)}")
    every_op = (f"re-run on the reference's inputs, every op of step {step} up to {tensor} agrees with NumPy within "
                "its own rounding (a few ulps; sums and matrix products by their length)")
    if own_kernel_diverges:
        return _not_localized(
            f"{every_op}, yet the sublayer's own kernel diverges on the same input: the miscompile depends on how "
            "the kernel is fused (the op-by-op re-run makes every intermediate an output, which fuses it "
            "differently); compare its `optimized` IR (parity emit, or compiler.emit on the sublayer) with the "
            "op-by-op one")
    own = "" if own_kernel_diverges is None else (
        ", and so does the sublayer's own kernel on the reference's input (the error comes from the compiler's "
        "upstream values, each within the tolerance)")
    return _not_localized(f"{every_op}{own}: no single op causes the error, which builds up across ops")


def _own_kernel_diverges(runner, capture, step: int, tensor: str, ids, n_layer: int, tol: Tolerance) -> bool | None:
    """Whether the sublayer producing ``tensor``, run as the forward pass runs it (not instrumented),
    diverges from the reference on the reference's own input; None when the runner cannot re-run it."""
    if not hasattr(runner, "rerun"):
        return None
    own = runner.rerun(tensor, ids, _reference_upstream(capture, step, tensor, n_layer))
    return _diverges(capture, step, tensor, tol)(own)


def _diverges(capture, step: int, tensor: str, tol: Tolerance):
    """A test of a value of ``tensor`` at ``step``: whether it fails the check against the reference's."""
    reference = capture.tensor(step, tensor)
    return lambda value: not compare_tensor(step, tensor, reference, value, tol).passed


def _audit_ops(runner, capture, kind: str, names: list[str], n_layer: int, checks: list) -> dict | None:
    """``--audit-ops``, when every tensor passed: a tensor tolerance cannot see a miscompile that an
    invariance cancels (a max-reduction's initial value under softmax's shift) or that stays below
    it (a float64 exp computed in float32), but each op held to its own rounding can. Re-run step
    0 op by op on the reference's inputs (every sublayer in model order; fused mode: the whole pass)
    and return a first-divergence record for the first op off its rounding, or None."""
    ids = _step_ids(capture, 0)
    step0 = {c.tensor: c for c in checks if c.step == 0}
    audit = "op audit (--audit-ops): every tensor is within tolerance, but "
    for tensor in (names if kind == "subgraph" else ["logits"]):
        try:
            if kind == "subgraph":
                found = _localize_sublayer(runner, capture, 0, tensor, ids, n_layer)
                fields = found and _localized(found, f"{audit}re-run op by op on the reference's inputs of step 0, "
                                                     f"{found.get('op')} in {tensor} is off its own rounding", tensor)
            else:
                fields = _fused_localization(runner.localize("logits", ids), 0)
                if fields.get("op"):
                    fields["localization"] = audit + fields["localization"]
        except CompileError as exc:  # the op-by-op kernel (every intermediate an output) is compiled code too
            # (its node ids are the audit's own trace, which the runner's sublayer marks do not cover)
            return compile_error_record(exc, 0, tensor, tensor if kind == "subgraph" else None,
                                        f"the op-by-op kernel of {tensor} (--audit-ops)")
        if fields and fields.get("op"):
            return {**_divergence_record(step0[tensor]), **fields,
                    "reason": "within the tensor tolerance; found by the op audit"}
        if fields is not None and fields.get("localization", "").startswith("localization failed"):
            raise RuntimeError(fields["localization"])  # an audit asked for and not done must not read as a pass
    return None


def _localize_fused(runner, capture, step: int) -> dict:
    """Fused mode computes the whole pass in one kernel, so the pass is re-run op by op from the
    step's token ids (every op within its own rounding), naming the first op off it."""
    ids = _step_ids(capture, step)
    try:
        found = runner.localize("logits", ids)
    except Exception as exc:  # a diagnosis aid: its failure must not hide the divergence
        return _not_localized(f"localization failed: {_describe_exception(exc)}")
    return _fused_localization(found, step)


def _pass_bisection(runner, capture, step: int, tensor: str, n_layer: int, tol: Tolerance) -> dict:
    """Which step of the CPU pipeline makes the sublayer producing ``tensor``, run on the reference's
    own input, diverge: it is compiled with the pipeline's optional steps added one at a time
    (compiler.diagnose.bisect_passes). {} where the runner cannot tell (the GPU target)."""
    try:
        found = runner.bisect_passes(tensor, _step_ids(capture, step), _reference_upstream(capture, step, tensor, n_layer),
                                     _diverges(capture, step, tensor, tol))
    except Exception as exc:  # a diagnosis aid: its failure must not hide the divergence
        return {"introduced_by": None, "pass_bisection": f"pass bisection failed: {_describe_exception(exc)}"}
    if found is None:
        return {}
    steps, introduced, outcome = found["steps"], found["introduced_by"], found.get("outcome") or "wrong"
    if introduced is None:
        sentence = (f"pass bisection of {tensor}: on the reference's input its kernel is within the tensor tolerance, "
                    "so the divergence needs the upstream sublayers' errors; no pipeline step can be named")
    elif steps[0]["outcome"] != "right":
        sentence = (f"pass bisection of {tensor}: {outcome} already with no optional pipeline step: the lowering, or a "
                    "step every kernel gets (bufferization, the libm substitution, lowering to LLVM, LLVM's own "
                    "optimization), makes the error")
    else:
        right = [s["step"] for s in steps if s["outcome"] == "right"]
        sentence = (f"pass bisection of {tensor}: right up to and including {right[-1]}, {outcome} once {introduced} "
                    "runs: that step makes the error")
    return {"introduced_by": introduced, "pass_bisection": sentence}


def _fused_localization(found: dict | None, step: int) -> dict:
    """The first-divergence fields of a fused re-run's result."""
    if found:
        # the runner says which sublayer of the one fused graph made the op, when it can tell
        where = f" in {found['sublayer']}" if found.get("sublayer") else ""
        return _localized(found, f"re-ran the fused forward pass op by op from the token ids of step {step}: "
                                 f"first op off its rounding is {found.get('op')}{where}",
                          sublayer=found.get("sublayer"))
    return _not_localized(
        f"re-run op by op from the token ids of step {step}, every op of the fused pass agrees with NumPy within its "
        "own rounding: no single op causes the error, which builds up across ops")


def _reference_upstream(capture, step: int, tensor: str, n_layer: int):
    """The reference's value of what the sublayer producing ``tensor`` reads (None: the token ids)."""
    upstream_name = upstream_tensor_name(tensor, n_layer)
    return None if upstream_name is None else capture.tensor(step, upstream_name)


def _localize_sublayer(runner, capture, step: int, tensor: str, ids, n_layer: int) -> dict | None:
    return runner.localize(tensor, ids, _reference_upstream(capture, step, tensor, n_layer))


def _sublayers_before(tensor: str, n_layer: int) -> list[str]:
    """The tensors produced before ``tensor`` in one forward pass, in model order."""
    order = ["embedding"] + [f"h.{i}.{part}" for i in range(n_layer) for part in ("attention", "output")] + ["logits"]
    return order[:order.index(tensor)]


def _step_ids(capture, step: int) -> list[int]:
    """The token ids the reference fed its forward pass at ``step``: the prompt, then its own outputs."""
    return list(capture.input_ids) + list(capture.output_ids[:step])


def _not_localized(sentence: str) -> dict:
    return {"op": None, "source": None, "localization": sentence}


def _localized(found: dict, sentence: str, sublayer: str | None) -> dict:
    """The first divergence's op fields; `sublayer` is the tensor whose sublayer holds the op
    (upstream of the diverging tensor when the error was born there)."""
    # an op whose output is NaN/inf where NumPy's is finite (or of another dtype) has an undefined
    # error: null, as for tensors -- inf is not a schema number, and the report would not be written
    err = found.get("max_abs_error")
    if err is not None and not math.isfinite(err):
        err = None
        sentence += " (the op's own error is undefined: a non-finite value where NumPy's is finite, or another dtype)"
    return {"op": found.get("op"), "source": stable_source(found.get("source")),
            "function": found.get("function") or None,
            "called_from": [_stable_caller(c) for c in found.get("called_from") or []],
            "op_max_abs_error": err, "sublayer": sublayer, "localization": sentence}


def _stable_caller(caller: str) -> str:
    """A "path:LINE (function)" caller with its path made stable, as ``source`` is."""
    where, paren, function = caller.rpartition(" (")  # the path itself may hold spaces
    if not paren:
        return stable_source(caller)
    return f"{stable_source(where)} ({function}"


def _mode_reason(entry: dict, tol: Tolerance) -> str | None:
    fd = entry["first_divergence"]
    parts = []
    if fd is not None:
        err = fd.get("max_abs_error")
        err_text = "undefined (non-finite mismatch or shape)" if err is None else f"{err:.3g}"
        text = f"first divergence at step {fd['step']} in {fd['tensor']} (max abs error {err_text})"
        if fd.get("reason"):
            text += f": {fd['reason']}"
        if fd.get("op"):
            text += f"; op {fd['op']}"
            if fd.get("sublayer") and fd["sublayer"] != fd["tensor"]:
                text += f" in {fd['sublayer']}"
            text += f" at {fd.get('source') or 'unknown source'}"
            if fd.get("function"):
                text += f" ({fd['function']})"
        parts.append(text)
    for label, key in (("forced", "forced_tokens"), ("free-running", "tokens")):
        tokens = entry[key]
        if not tokens["agree"]:
            first = next((i for i, (a, b) in enumerate(zip(tokens["expected"], tokens["actual"])) if a != b),
                         min(len(tokens["expected"]), len(tokens["actual"])))
            tie = next((t for t in entry["near_ties"] if t["kind"] == key and t["step"] == first), None)
            text = f"{label} tokens differ from step {first}"
            if tie is not None:
                text += (f" (near-tie: the reference's top-1/top-2 margin {tie['margin']:.3g} is within "
                         f"{tie['bound']:.3g}, what errors inside rtol={tol.rtol:g} atol={tol.atol:g} on those two "
                         "logits can close, so the pick can flip)")
            parts.append(text)
    return "; ".join(parts) or None


def _step_checks(capture, step: int, names: list[str], trace: dict, tol: Tolerance) -> list:
    """Each of ``names`` the compiler traced at ``step`` against the reference's; one it did not
    produce fails, saying so."""
    checks = []
    for name in names:
        reference = capture.tensor(step, name)
        if name not in trace:
            check = compare_tensor(step, name, reference, np.zeros((0,)), tol)
            check.reason = f"the compiler produced no {name!r} tensor"
        else:
            check = compare_tensor(step, name, reference, trace[name], tol)
        checks.append(check)
    return checks


def run_mode(plan: ModePlan, capture, runner_factory: Callable[[str, str], Any], tol: Tolerance,
             device_check: Callable[[], tuple[bool, str]] | None = None,
             progress: Callable[[str, int | None, int | None], None] | None = None, audit_ops: bool = False) -> dict:
    """Verify one mode against the capture; never raises for compiler failures: MLIR refusing
    a kernel becomes status "compile_error" (a finding, like a divergence), anything else "error"."""
    input_ids = [int(t) for t in capture.input_ids]
    expected = [int(t) for t in capture.output_ids]
    steps = len(expected)
    if plan.target == "gpu":
        available, why = device_check() if device_check else (False, "no GPU device check available")
        if not available:
            return _error_entry(plan, "skipped", f"no GPU device: {why}", expected)
    started = time.perf_counter()
    if progress:
        progress(f"{plan.name}: compiling for {plan.target}", 0, steps + 1)
    try:
        runner = runner_factory(plan.kind, plan.target)
    except Exception as exc:
        return _error_entry(plan, "error", f"compiling {plan.kind} for {plan.target} failed: {_describe_exception(exc)}", expected)

    names = sorted(capture.tensor_names, key=model_order_key) if plan.kind == "subgraph" else ["logits"]
    n_layer = sum(1 for n in capture.tensor_names if n.endswith(".attention"))
    checks, forced = [], []
    step, trace = 0, {}  # step: None once the free-running decode runs
    try:
        for step in range(steps):
            if progress:
                progress(f"{plan.name}: step {step + 1}/{steps}", step, steps + 1)
            ids = input_ids + expected[:step]
            trace: dict = {}
            logits = runner.forward(ids, trace=trace)
            if "logits" not in trace:
                trace["logits"] = logits
            checks += _step_checks(capture, step, names, trace, tol)
            forced.append(int(np.argmax(np.asarray(logits))))
        if progress:
            progress(f"{plan.name}: free-running decode", steps, steps + 1)
        step = None
        free = [int(t) for t in runner.generate(input_ids, steps)]
    except CompileError as exc:
        if step is not None and len(forced) == step:  # the step's forward stopped midway: check what it made
            checks += _step_checks(capture, step, [name for name in names if name in trace], trace, tol)
        tensor = next((name for name in names if name not in trace), names[-1]) if step is not None else "logits"
        return _compile_failure(plan, exc, runner, step, tensor, (checks, forced, expected), started, tol)
    except Exception as exc:
        entry = _error_entry(plan, "error", f"running {plan.kind} on {plan.target} failed: {_describe_exception(exc)}", expected)
        return _keep_partial_results(entry, checks, forced, started)

    margins = list(capture.margins) if capture.margins is not None else None
    tops = [top_two(capture.tensor(step, "logits")) for step in range(steps)]
    forced_checks = compare_tokens(expected, forced, margins, tol, tops=tops)
    free_checks = compare_tokens(expected, free, margins, tol, cascade=True, tops=tops)
    near_ties = [{"kind": kind, "step": t.step, "expected": t.expected, "actual": t.actual, "margin": t.margin,
                  "bound": t.bound}
                 for kind, token_checks in (("forced_tokens", forced_checks), ("tokens", free_checks))
                 for t in token_checks if t.near_tie]

    entry = {
        "status": "pass", "reason": None, "kind": plan.kind, "target": plan.target,
        "tokens": {"expected": expected, "actual": free, "agree": free == expected},
        "forced_tokens": {"expected": expected, "actual": forced, "agree": forced == expected},
        "max_abs_error": max_error(checks),
        "first_divergence": None,
        "checks": [c.to_json() for c in checks],
        "near_ties": near_ties,
    }
    first = first_divergence(checks)
    if first is not None:
        fd = _divergence_record(first)
        if plan.kind == "subgraph" and hasattr(runner, "localize"):
            fd.update(_localize(runner, capture, first.step, first.tensor, n_layer, tol))
            if hasattr(runner, "bisect_passes"):
                fd.update(_pass_bisection(runner, capture, first.step, first.tensor, n_layer, tol))
        elif plan.kind == "fused" and hasattr(runner, "localize"):
            fd.update(_localize_fused(runner, capture, first.step))
        fd["source_text"] = source_text(fd.get("source"))
        entry["first_divergence"] = fd
    if first is None and audit_ops and hasattr(runner, "localize"):
        try:
            entry["first_divergence"] = _audit_ops(runner, capture, plan.kind, names, n_layer, checks)
        except Exception as exc:
            entry = _error_entry(plan, "error", f"the op audit (--audit-ops) failed: {_describe_exception(exc)}", expected)
            return _keep_partial_results(entry, checks, forced, started)
        if entry["first_divergence"] is not None:
            entry["first_divergence"]["source_text"] = source_text(entry["first_divergence"].get("source"))
    if entry["first_divergence"] is not None and entry["first_divergence"].get("mlir_diagnostic") is not None:
        entry["status"] = "compile_error"  # the audit's op-by-op kernel; every tensor passed
        tokens = _mode_reason({**entry, "first_divergence": None}, tol)  # a near-tie may still have flipped
        entry["reason"] = f"every tensor passed, but {entry['first_divergence']['reason']}" + \
            (f"; also {tokens}" if tokens else "")
    elif entry["first_divergence"] is not None or not entry["tokens"]["agree"] or not entry["forced_tokens"]["agree"]:
        entry["status"] = "diverged"
        entry["reason"] = _mode_reason(entry, tol)
    entry["duration_s"] = round(time.perf_counter() - started, 3)
    return entry


def describe_inconsistency(found) -> str:
    """One line per self-check the reference failed (the capture meta's list of dicts)."""
    if isinstance(found, list):
        return "; ".join(f"{item.get('function', '?')}: {item.get('reason') or item.get('status')}"
                         if isinstance(item, dict) else str(item) for item in found)
    return str(found)


def _reference_record(captured: dict, resolved: dict | None) -> dict:
    record = {key: captured.get(key) for key in ("kind", "url", "revision", "numpy_version")}
    if resolved:
        # A capture is reused by content (revision), so its stored URL/kind may be another run's.
        record.update({key: resolved[key] for key in ("kind", "url", "revision") if resolved.get(key)})
    return record


def _baseline_token_count(baseline: dict) -> int | None:
    """How many tokens the baseline decoded (None when it does not say: every mode skipped)."""
    if isinstance(baseline.get("output_ids"), list):
        return len(baseline["output_ids"])
    counts = [len(mode["tokens"]["expected"]) for mode in baseline["modes"].values() if mode["tokens"]["expected"]]
    return max(counts) if counts else None


def baseline_differences(baseline: dict, *, prompt: str, input_ids: list[int], checkpoint_sha256: str | None,
                         tokens: int) -> list[str]:
    """What makes `baseline` a report of another run than this one. Errors are only comparable
    for the same model, input and length; find_regressions matches by (mode, step, tensor) alone."""
    differences = []
    if baseline["prompt"] != prompt:
        differences.append(f"prompt {baseline['prompt']!r} (this run: {prompt!r})")
    elif list(baseline["input_ids"]) != list(input_ids):
        differences.append(f"input ids {baseline['input_ids']} (this run: {list(input_ids)})")
    theirs = baseline["checkpoint"].get("sha256")
    if theirs != checkpoint_sha256:
        differences.append(f"checkpoint sha256 {str(theirs)[:12]}… (this run: {str(checkpoint_sha256)[:12]}…)")
    count = _baseline_token_count(baseline)
    if count is not None and count != tokens:
        differences.append(f"{plural(count, 'token')} (this run: {tokens})")
    fault = baseline.get("injected_fault")
    if fault:  # its errors are the fault's: a budget measured on them would hide real regressions
        differences.append(f"an injected fault ({fault_text(fault)}; a harness self-test, not the compiler's errors)")
    return differences


def fault_text(fault: dict) -> str:
    """A report's ``injected_fault`` as every message names it: ``exp: y*1.01+0``."""
    return f"{fault['op']}: y*{fault['factor']:g}{fault['offset']:+g}"


def run_verification(capture, runner_factory: Callable[[str, str], Any], plans: list[ModePlan],
                     tol: Tolerance = Tolerance(), *, checkpoint: dict, prompt: str,
                     device_check: Callable[[], tuple[bool, str]] | None = None,
                     banner: str | None = None, baseline: dict | None = None,
                     reference: dict | None = None, baseline_source: dict | None = None,
                     progress: Callable[[str, int | None, int | None], None] | None = None,
                     audit_ops: bool = False) -> dict:
    """Verify every plan against one reference capture and return the report
    dict. `capture` needs input_ids, output_ids, margins, tensor_names,
    tensor(step, name), reference (dict) and completion; `runner_factory(kind,
    target)` returns an object with forward(ids, trace), generate(ids, n) and,
    for subgraph mode, localize(...). `reference` (kind/url/revision of this
    run's resolved reference) overrides the capture's own record, whose
    numpy_version is kept. `baseline_source` ({"path", "sha256"} of the
    baseline file) is recorded in the report with the baseline's creation
    time. Raises ReferenceInconsistency when the capture records one, and
    VerifyError when the baseline is of another prompt, checkpoint or length."""
    meta = getattr(capture, "meta", None) or {}
    if meta.get("reference_inconsistency"):
        raise ReferenceInconsistency(
            "the reference disagrees with itself — its step-by-step decomposition does not match its own full "
            f"forward: {describe_inconsistency(meta['reference_inconsistency'])}. This is not a compiler divergence; "
            "fix or re-pin the reference (--reference / --reference-rev) and delete the stale capture in captures/.")
    if baseline is not None:
        differences = baseline_differences(
            baseline, prompt=prompt, input_ids=[int(t) for t in capture.input_ids],
            checkpoint_sha256=checkpoint.get("sha256"), tokens=len(capture.output_ids))
        if differences:
            where = (baseline_source or {}).get("path") or "given"
            raise VerifyError(f"the baseline {where} is of another run — {'; '.join(differences)}; its errors are not "
                              "comparable. Pass a baseline made with the same --prompt, --tokens and model, without --inject-fault")
    report = {
        "reference": _reference_record(capture.reference, reference),
        "checkpoint": {"name": checkpoint.get("name"), "sha256": checkpoint.get("sha256")},
        "prompt": prompt,
        "input_ids": [int(t) for t in capture.input_ids],
        "output_ids": [int(t) for t in capture.output_ids],
        "completion": getattr(capture, "completion", None),
        "margins": None if capture.margins is None else [float(m) for m in capture.margins],
        "tolerance": {"rtol": tol.rtol, "atol": tol.atol},
        "banner": banner,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "modes": {},
        "regressions": [],
    }
    if meta.get("whole_forward_checks") is not None:
        report["reference_checks"] = meta["whole_forward_checks"]
    for plan in plans:
        report["modes"][plan.name] = run_mode(plan, capture, runner_factory, tol, device_check, progress, audit_ops)
    if baseline is not None:
        report["baseline"] = {"path": None, "sha256": None, **(baseline_source or {}),
                              "created": baseline.get("created")}
        report["regressions"] = find_regressions(baseline, report)
    return report


def skipped_report(plans: list[ModePlan], reason: str, *, checkpoint: dict, resolved, prompt: str,
                   tol: Tolerance, input_ids=(), numpy_version: str | None = None) -> dict:
    """A report in which every mode is skipped, made without capturing the reference (the prompt's
    ids from the model's tokenizer; a given capture's NumPy version, if any)."""
    reference = {"kind": getattr(resolved, "kind", None), "url": getattr(resolved, "url", None),
                 "revision": getattr(resolved, "revision", None), "numpy_version": numpy_version}
    return {
        "reference": reference, "checkpoint": checkpoint, "prompt": prompt, "input_ids": [int(t) for t in input_ids],
        "tolerance": {"rtol": tol.rtol, "atol": tol.atol}, "banner": getattr(resolved, "banner", None),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "modes": {plan.name: _error_entry(plan, "skipped", reason, []) for plan in plans},
        "regressions": [],
    }


def exit_code(report: dict) -> int:
    """0 when every mode passed or was skipped and nothing regressed; 2 when a
    mode could not run (error) or there is no mode at all (nothing was
    verified); otherwise 1 (a divergence, a kernel MLIR refused, a regression)."""
    statuses = [m["status"] for m in report["modes"].values()]
    if not statuses or "error" in statuses:
        return EXIT_ERROR
    if "diverged" in statuses or "compile_error" in statuses or report.get("regressions"):
        return EXIT_DIVERGED
    return EXIT_PASS


_WRITE_ONE = "`parity report` reads the JSON report that `parity verify --json NEW.json` writes"


def load_report(path: str | os.PathLike) -> dict:
    """Read and schema-check a report JSON; VerifyError names what is wrong. Regenerating at
    the same path is suggested only for what is a parity report, damaged or of an older schema:
    for any other file (weights, a JUnit XML, a config) it would overwrite the user's file."""
    path = Path(path)
    if path.is_dir():
        raise VerifyError(f"{path} is a directory, not a parity JSON report; pass one of the .json files "
                          f"in it, or write one with `parity verify --json NEW.json`")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise VerifyError(f"report {path} does not exist; pass the path of a JSON report written by `parity verify`") from None
    except UnicodeDecodeError:
        raise VerifyError(f"{path} is not a parity JSON report (it is not text; model weights?); {_WRITE_ONE}") from None
    except OSError as exc:
        raise VerifyError(f"report {path} cannot be read ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise VerifyError(_not_json_reason(path, text, exc)) from None
    return _checked_report(path, data)


def _looks_like_report(text: str) -> bool:
    """Whether unparsable JSON text still reads as a parity report (one cut short or hand-edited)."""
    return text.lstrip().startswith("{") and '"modes"' in text and '"checkpoint"' in text


def _not_json_reason(path: Path, text: str, exc: json.JSONDecodeError) -> str:
    if _looks_like_report(text):
        return f"report {path} is a damaged parity report, not valid JSON ({exc}); regenerate it with `parity verify --json {path}`"
    if text.lstrip().startswith("<"):
        return (f"{path} is XML (a JUnit report?), not a parity JSON report; JUnit cannot be read back: "
                f"{_WRITE_ONE}")
    return f"{path} is not a parity JSON report (not JSON: {exc}); {_WRITE_ONE}"


def _checked_report(path: Path, data) -> dict:
    from harness.schema import SchemaError, validate_report

    if not isinstance(data, dict) or "modes" not in data:
        raise VerifyError(f"{path} is JSON but not a parity report (no \"modes\"); {_WRITE_ONE}")
    try:
        validate_report(data)
    except SchemaError as exc:
        raise VerifyError(f"report {path} does not follow the report schema: {exc}; if it is a report of an "
                          f"older parity, regenerate it with `parity verify --json {path}`") from None
    return data


def baseline_identity(path: str | os.PathLike) -> dict:
    """Which baseline file a report was compared with: its path and content hash."""
    return {"path": stable_path(path), "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()}


@dataclass
class VerifyOptions:
    """Everything `parity verify` takes (the CLI's parsed arguments)."""

    modes: list[str] = field(default_factory=lambda: list(DEFAULT_MODES))
    target: str = "cpu"
    reference: str = "auto"
    reference_rev: str | None = None
    strict_reference: bool = False
    model: str | None = None
    prompt: str | None = None    # None: the --capture's prompt, else DEFAULT_PROMPT
    tokens: int | None = None    # None: the --capture's step count, else DEFAULT_TOKENS
    rtol: float = 3e-4
    atol: float = 3e-4
    baseline: str | None = None
    captures_dir: str | None = None
    capture: str | None = None   # verify against this capture file instead of running the reference
    # (primitive, factor, offset): compile every mode with compiler.testing.inject_fault active, to
    # check that the harness catches and localizes a miscompiled op; the report says so loudly
    inject_fault: tuple[str, float, float] | None = None
    audit_ops: bool = False      # when every tensor passes, still re-run step 0 op by op (see _audit_ops)


def _checkpoint_of(model) -> dict:
    ckpt = getattr(model, "checkpoint", None)
    return {"name": getattr(ckpt, "name", None), "sha256": getattr(ckpt, "sha256", None)}


def _capture_checkpoint_sha(meta: dict) -> str | None:
    for key in ("checkpoint_sha256",):
        if meta.get(key):
            return meta[key]
    ckpt = meta.get("checkpoint")
    return ckpt.get("sha256") if isinstance(ckpt, dict) else None


def _check_captures_dir(given: str | None) -> None:
    """The captures directory must be writable before the reference is set up: the capture
    runner writes there last, and its failure would otherwise read as the reference failing."""
    from harness.report import unwritable_reason
    from reference_env.captures import default_captures_dir

    folder = Path(given) if given else default_captures_dir()
    why = unwritable_reason(folder, directory=True)
    if why:
        raise VerifyError(f"cannot use the captures directory {folder} ({why}); pass --captures-dir DIR "
                          "in a place you can write")


@dataclass
class _CapturedReference:
    """The reference as a capture file records it (for ``--capture``)."""

    kind: str
    url: str
    revision: str
    banner: str | None


def _given_capture(options: VerifyOptions):
    """Load ``--capture FILE`` (checksummed, metadata checked) and check it is of the prompt and
    token count asked for."""
    from reference_env.captures import load_capture
    from reference_env.errors import CaptureCorruptError, ReferenceSetupError

    try:
        cap = load_capture(options.capture)
    except CaptureCorruptError as exc:
        # verify never rewrites a capture it was given: it has to be remade where the reference runs.
        raise VerifyError(f"cannot use --capture {options.capture}: {exc}; make it again with `parity verify` "
                          "on a machine that runs the reference (it writes captures/capture-*.json and .npz) "
                          "and copy both files") from None
    except ReferenceSetupError as exc:
        raise VerifyError(f"cannot use --capture {options.capture}: {exc}") from None
    differing = []  # what was asked for explicitly and the capture cannot answer, all named at once
    if options.prompt is not None and cap.key.prompt != options.prompt:
        differing.append(f"it was taken for the prompt {cap.key.prompt!r}, not {options.prompt!r} "
                         "(leave --prompt out to use the capture's)")
    if options.tokens is not None and cap.steps != options.tokens:
        differing.append(f"it has {plural(cap.steps, 'decoding step')}, not {options.tokens} (leave --tokens out to use "
                         "the capture's)")
    if differing:
        raise VerifyError(f"cannot use --capture {options.capture}: {'; '.join(differing)}")
    ref = cap.reference
    banner = None
    if ref["kind"] != "upstream":
        banner = (f"The capture {options.capture} was taken against a {ref['kind']} reference "
                  f"({ref['url']} @ {ref['revision']}), not the pinned upstream.")
    return cap, _CapturedReference(ref["kind"], ref["url"], ref["revision"], banner)


def _check_capture_model(cap, capture_file: str, model_dir, checkpoint: dict) -> None:
    """A given capture must be of the model being verified: the same weights *and* the same
    config.json (another n_head with the same weights is another model). Otherwise every
    difference would read as a compiler divergence."""
    from reference_env.capture_runner import config_sha256

    differing = []
    if checkpoint.get("sha256") and cap.key.checkpoint_sha256 != checkpoint["sha256"]:
        differing.append(f"model.safetensors sha256 {cap.key.checkpoint_sha256[:12]}… in the capture, "
                         f"{checkpoint['sha256'][:12]}… here")
    recorded = cap.key.config_sha256 or cap.meta.get("config_sha256")
    here = config_sha256(model_dir)
    if recorded and recorded != here:
        differing.append(f"config.json sha256 {recorded[:12]}… in the capture, {here[:12]}… here")
    if differing:
        origin = cap.meta.get("model_dir")
        made_with = f" (it was made from {origin})" if isinstance(origin, str) else ""
        raise VerifyError(f"the capture {capture_file} is of another model than {model_dir} — {'; '.join(differing)}; "
                          f"pass the matching --model{made_with}, or make a capture of this model")


def _check_same_token_ids(model, prompt: str, reference_ids) -> None:
    """The compiler is fed the reference's token ids, so a model whose vocabulary reads the prompt
    differently (another vocab.json or merges.txt) would pass on an input no user of it would ever
    give; the two tokenizers must agree on the prompt first."""
    try:
        ours = [int(t) for t in model.tokenizer.encode(prompt)]
    except Exception as exc:  # a tokenizer that cannot read the prompt is a bad model, not a divergence
        raise VerifyError(f"the model's tokenizer cannot encode the prompt: {exc}") from None
    theirs = [int(t) for t in reference_ids]
    if ours != theirs:
        raise VerifyError(
            f"the model's tokenizer ({model.checkpoint.path}: vocab.json, merges.txt) reads the prompt as {ours}, "
            f"the reference as {theirs}: its vocabulary is not the reference's GPT-2 one, so the compiler would be "
            "verified on input its users never give it")


def _json_number(value: float) -> float | str:
    """``value``, or its name when JSON has no number for it (inf, -inf, nan)."""
    value = float(value)
    return value if math.isfinite(value) else repr(value)


def verify(options: VerifyOptions, progress: Callable[[str, int | None, int | None], None] | None = None) -> dict:
    """Resolve the reference, load the model, capture, verify every mode and
    return the report. Raises VerifyError (exit 2) for anything that stops
    verification from running."""
    cap = resolved = None
    if options.capture:  # first: its prompt and step count are the defaults
        cap, resolved = _given_capture(options)
    default_prompt, default_tokens = (cap.key.prompt, cap.steps) if cap else (DEFAULT_PROMPT, DEFAULT_TOKENS)
    options = dataclasses.replace(options, prompt=default_prompt if options.prompt is None else options.prompt,
                                  tokens=default_tokens if options.tokens is None else options.tokens)
    if options.tokens < 1:
        raise VerifyError(f"--tokens must be at least 1, got {options.tokens}")
    if not options.prompt:
        raise VerifyError("--prompt must not be empty")
    try:
        tol = Tolerance(options.rtol, options.atol)
    except ValueError as exc:
        raise VerifyError(str(exc)) from None
    plans = plan_modes(options.modes, options.target)
    if options.inject_fault:
        from compiler.testing import check_fault
        try:
            check_fault(options.inject_fault[0])
        except ValueError as exc:
            raise VerifyError(f"--inject-fault: {exc}") from None
    baseline = load_report(options.baseline) if options.baseline else None
    baseline_source = baseline_identity(options.baseline) if options.baseline else None

    try:
        from compiler.gpt2 import compile_model, load_model, resolve_model_dir
        from reference_env.captures import capture as take_capture
        from reference_env.captures import resolve_reference
        from reference_env.errors import ReferenceSetupError as setup_error
    except ImportError as exc:
        raise VerifyError(f"Parity's installation is incomplete ({exc}); reinstall it with `pip install -e .`") from None

    if not options.capture:
        _check_captures_dir(options.captures_dir)

    def say(message: str) -> None:
        if progress is not None:
            progress(message, None, None)

    try:
        model_dir = resolve_model_dir(options.model)
        model = load_model(model_dir)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise VerifyError(f"could not load the model ({exc}); pass --model DIR with a checkpoint, "
                          "or create one with `parity synth-model DIR`") from None
    if options.capture:
        _check_capture_model(cap, options.capture, model_dir, _checkpoint_of(model))
    else:
        try:
            # Its one message is the banner, which the report records and opens with in full; passed
            # on here too, a terminal showed it twice (and the spinner took its title as its label).
            resolved = resolve_reference(spec=options.reference, revision=options.reference_rev,
                                         strict=options.strict_reference, progress=None)
        except setup_error as exc:
            raise VerifyError(f"reference set-up failed: {exc}") from None
        if getattr(resolved, "banner", None):
            # one line now, so a run that stops during set-up still says what it was against
            say(f"reference: {resolved.kind}, not the pinned upstream (the report opens with why)")

    def device_check():
        try:
            from compiler.gpu import device_available
        except ImportError as exc:
            return False, f"the GPU target is not available in this build ({exc})"
        return device_available()

    # Without a device, GPU-only runs need no reference capture: report every mode skipped at once.
    if all(plan.target == "gpu" for plan in plans):
        available, why = device_check()
        if not available:
            given = cap if options.capture else None
            return skipped_report(plans, f"no GPU device: {why}", checkpoint=_checkpoint_of(model),
                                  resolved=resolved, prompt=options.prompt, tol=tol,
                                  input_ids=given.input_ids if given else model.tokenizer.encode(options.prompt),
                                  numpy_version=given.key.numpy_version if given else None)
    if not options.capture:
        try:
            cap = take_capture(resolved, model_dir, options.prompt, options.tokens,
                               captures_dir=options.captures_dir, progress=say)
        except setup_error as exc:
            raise VerifyError(f"reference set-up failed: {exc}") from None

    _check_same_token_ids(model, options.prompt, cap.input_ids)
    checkpoint = _checkpoint_of(model)
    captured_sha = _capture_checkpoint_sha(cap.meta or {})
    if captured_sha and checkpoint["sha256"] and captured_sha != checkpoint["sha256"]:
        raise VerifyError(f"the reference capture is of checkpoint {captured_sha[:12]}… but the model is "
                          f"{checkpoint['sha256'][:12]}…; delete the stale capture under captures/ and rerun")

    def runner_factory(kind: str, target: str):
        return compile_model(model, mode=kind, target=target)

    banner = getattr(resolved, "banner", None)
    fault = contextlib.nullcontext()
    if options.inject_fault:
        from compiler.testing import inject_fault
        op, factor, offset = options.inject_fault
        fault = inject_fault(op, factor, offset)
        banner = " ".join(filter(None, [
            f"A fault was injected: every {op} result y became y*{factor:g}{offset:+g} (--inject-fault). This report "
            "tests the harness, not the compiler.", banner]))
    with fault:
        report = run_verification(cap, runner_factory, plans, tol, checkpoint=checkpoint, prompt=options.prompt,
                                  device_check=device_check, banner=banner,
                                  baseline=baseline, baseline_source=baseline_source, progress=progress,
                                  audit_ops=options.audit_ops,
                                  reference={"kind": resolved.kind, "url": resolved.url, "revision": resolved.revision})
    if options.inject_fault:
        op, factor, offset = options.inject_fault
        report["injected_fault"] = {"op": op, "factor": _json_number(factor), "offset": _json_number(offset)}
    return report
