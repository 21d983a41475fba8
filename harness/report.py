"""Renders a verification report dict (see ``harness.schema``) for people and
tools: the rich terminal report (banner, per-mode summary, error-budget
regressions, per-layer max-error table, first-divergence panel with the source
line, and the verdict, worded by ``verdict`` for the HTML too), JSON, JUnit XML and HTML
(``harness.render_html``), and writes each atomically, by default into a
timestamped file under ``reports/``; ``unwritable_reason`` checks an output
place before any work is done."""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from harness import terminal
from harness.terminal import plural
from harness.compare import model_order_key, tensor_layer

STATUS_STYLE = {"pass": "bold green", "diverged": "bold red", "compile_error": "bold red", "error": "bold magenta",
                "skipped": "yellow"}
# statuses that are findings against the compiler (exit 1), each with a first divergence or token mismatch
FAILING = ("diverged", "compile_error")

BUNDLED_BANNER = (
    "THE REFERENCE IS THE BUNDLED FALLBACK, NOT THE PINNED UPSTREAM tiny-gpt2.\n"
    "The pinned upstream could not be fetched, so this run compared against Parity's own re-implementation. "
    "Agreement here does not prove agreement with upstream. Use --strict-reference to make this an error."
)


# ---------------------------------------------------------------- atomic files

def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write `text` to `path` via a temporary file in the same folder and
    os.replace, so a reader never sees a half-written report."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a report is an ordinary file
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def unwritable_reason(path: str | os.PathLike, *, directory: bool = False) -> str | None:
    """Why a file could not be written at `path` (or into the directory `path`),
    or None. Creates the missing folders and writes and removes a probe file
    there, because that is what the atomic writer will need, and a permission
    check alone misjudges root and read-only mounts."""
    path = Path(path)
    folder = path if directory else path.parent
    if not directory and path.is_dir():
        return f"{path} is a directory"
    if folder.exists() and not folder.is_dir():
        return f"{folder} is not a directory"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".parity-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"cannot write into {folder}: {exc.strerror or exc}"
    return None


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def report_to_json(report: dict) -> str:
    # allow_nan=False: the schema only admits finite numbers (undefined errors are null)
    return json.dumps(report, indent=2, allow_nan=False) + "\n"


def write_json(report: dict, path) -> Path:
    return atomic_write_text(path, report_to_json(report))


def timestamped_paths(reports_dir, now: _dt.datetime | None = None) -> dict[str, Path]:
    """Default report paths: reports/verify-YYYYmmdd-HHMMSS-ffffff.{json,html}."""
    now = now or _dt.datetime.now()
    stem = Path(reports_dir) / f"verify-{now.strftime('%Y%m%d-%H%M%S-%f')}"
    return {"json": stem.with_suffix(".json"), "html": stem.with_suffix(".html")}


# ---------------------------------------------------------------- shared helpers

def fmt_error(value) -> str:
    return "—" if value is None else f"{value:.3g}"


def banner_text(report: dict) -> str | None:
    """The loud banner every report carries when the reference is the bundled fallback."""
    if report.get("banner"):
        return report["banner"]
    if report.get("reference", {}).get("kind") == "bundled":
        return BUNDLED_BANNER
    return None


def banner_title(report: dict) -> str:
    kind = report.get("reference", {}).get("kind")
    return "BUNDLED REFERENCE" if kind == "bundled" else "REFERENCE IS NOT THE PIN"


def layer_names(report: dict) -> list[str]:
    """Layers in model order across every mode's checks: embedding, h.0, ..., logits."""
    tensors = {c["tensor"] for m in report["modes"].values() for c in m.get("checks", [])}
    seen: list[str] = []
    for tensor in sorted(tensors, key=model_order_key):
        if tensor_layer(tensor) not in seen:
            seen.append(tensor_layer(tensor))
    return seen


def layer_errors(mode: dict) -> dict[str, dict]:
    """Per layer: max abs error over steps and tensors, and how many checks failed."""
    out: dict[str, dict] = {}
    for c in mode.get("checks", []):
        layer = out.setdefault(tensor_layer(c["tensor"]), {"max": None, "failed": 0, "undefined": False})
        if c["max_abs_error"] is None:
            layer["undefined"] = True
        elif layer["max"] is None or c["max_abs_error"] > layer["max"]:
            layer["max"] = c["max_abs_error"]
        layer["failed"] += 0 if c["passed"] else 1
    return out


def headline(mode: dict) -> str:
    """A short reason for the summary table; the panels below carry the details."""
    fd = mode.get("first_divergence")
    if mode["status"] in FAILING and fd:
        text = f"step {fd['step']} {fd['tensor']}"
        text = ("does not compile: " if mode["status"] == "compile_error" else "") + text
        return text + (f" · op {fd['op']}" if fd.get("op") else "")
    if mode["status"] == "diverged":
        for key, label in (("forced_tokens", "forced"), ("tokens", "free-running")):
            tokens = mode.get(key, {})
            if not tokens.get("agree", True):
                step = next((i for i, (a, b) in enumerate(zip(tokens["expected"], tokens["actual"])) if a != b),
                            min(len(tokens["expected"]), len(tokens["actual"])))
                tie = any(t["kind"] == key and t["step"] == step for t in mode.get("near_ties", []))
                return f"{label} tokens differ at step {step}" + (" (near-tie)" if tie else "")
    return mode.get("reason") or ""


def near_tie_text(tie: dict) -> str:
    """Why a token mismatch is a near-tie; reports made before the bound was recorded used atol."""
    if tie.get("bound") is None:
        return f"reference margin {tie['margin']:.3g} is below atol"
    return (f"reference margin {tie['margin']:.3g} is within {tie['bound']:.3g}, what in-tolerance errors "
            "on the top two logits can close")


def token_summary(tokens: dict) -> str:
    expected, actual = tokens.get("expected", []), tokens.get("actual", [])
    if not actual:
        return "—"
    same = sum(1 for a, b in zip(expected, actual) if a == b)
    return f"{same}/{len(expected)}"


def worst_element(fd: dict) -> str:
    """The diverging tensor's worst element, indexed as NumPy would: ``h.1.attention[3, 17]``."""
    return f"{fd['tensor']}[{', '.join(str(i) for i in fd['worst_index'])}]"


def source_with_function(fd: dict) -> str:
    """``compiler/ops.py:30 in linear``: the op's line and the function it is in."""
    source = fd.get("source") or "—"
    return f"{source} in {fd['function']}" if fd.get("function") and fd.get("source") else source


def sublayer_text(fd: dict) -> str:
    """The sublayer holding the named op, and whether it is upstream of the diverging tensor."""
    if fd.get("mlir_diagnostic") is not None:  # a kernel that did not compile: nothing diverged
        if fd["sublayer"] == fd["tensor"]:
            return f"{fd['sublayer']} (its kernel does not compile)"
        return f"{fd['sublayer']} (computed in the kernel for {fd['tensor']}, which does not compile)"
    if fd["sublayer"] == fd["tensor"]:
        return f"{fd['sublayer']} (the diverging tensor's own)"
    return f"{fd['sublayer']} (upstream of {fd['tensor']}: the error was born there)"


def read_source_line(fd: dict) -> str | None:
    if fd.get("source_text"):
        return fd["source_text"]
    from harness.verify import source_text

    return source_text(fd.get("source"))


# ---------------------------------------------------------------- terminal

def render_terminal(report: dict, console: Console | None = None, unwritten: list[str] = (),
                    exits: bool = True) -> None:
    """The report on a terminal; ``unwritten``: why report files could not be written, which the
    verdict line then counts (see ``verdict``); ``exits``: see ``Verdict.line``."""
    console = console or terminal.console()
    banner = banner_text(report)
    if banner:
        console.print(Panel(Text(banner, style="bold white on red", justify="center"),
                            title=f"!! {banner_title(report)} !!", border_style="bold red", box=box.DOUBLE))

    ref, ckpt = report["reference"], report["checkpoint"]
    header = Table.grid(padding=(0, 2))
    header.add_column(style="bold")
    header.add_column()
    numpy_version = f"  (numpy {ref['numpy_version']})" if ref.get("numpy_version") else ""  # None: not run
    header.add_row("reference", f"{ref.get('kind')}  {ref.get('url')} @ {ref.get('revision')}{numpy_version}")
    header.add_row("checkpoint", f"{ckpt.get('name')}  sha256 {ckpt.get('sha256')}")
    header.add_row("prompt", repr(report.get("prompt")))
    header.add_row("input ids", str(report.get("input_ids")))
    if report.get("completion") is not None:
        header.add_row("reference completion", repr(report["completion"]))
    tol = report.get("tolerance")
    if tol:
        header.add_row("tolerance", f"rtol={tol['rtol']:g} atol={tol['atol']:g}")
    baseline = report.get("baseline")
    if isinstance(baseline, dict):
        header.add_row("baseline", f"{baseline.get('path')}  sha256 {str(baseline.get('sha256'))[:12]}…"
                                   f"  (created {baseline.get('created')})")
    console.print(Panel(header, title="parity verify", border_style="cyan"))

    console.print(summary_table(report))
    if report.get("regressions"):  # next to the summary whose status it overrules
        console.print(regression_table(report["regressions"]))
    layers = layer_table(report)
    if layers is not None:
        console.print(layers)
    for name, mode in report["modes"].items():
        if mode.get("first_divergence"):
            console.print(divergence_panel(name, mode))
        elif mode["status"] == "diverged" and mode.get("reason"):
            console.print(Panel(mode["reason"], title=f"{name}: token divergence", border_style="red"))
        for tie in mode.get("near_ties", []):
            label = "forced" if tie["kind"] == "forced_tokens" else "free-running"
            console.print(f"[yellow]near-tie[/] {name} {label} step {tie['step']}: reference picked "
                          f"{tie['expected']}, compiler {tie['actual']}; {near_tie_text(tie)} — still a failure, "
                          "but within-tolerance logit errors explain it")
    console.print(verdict_text(report, unwritten, exits))


def summary_table(report: dict) -> Table:
    table = Table(title="Summary per mode (forced = lockstep argmax, free = free-running decode)",
                  box=box.SIMPLE_HEAVY)
    for column in ("mode", "status", "max err", "forced", "free", "failed"):
        table.add_column(column, no_wrap=True)
    table.add_column("reason", overflow="fold", ratio=1)
    regressed = regressions_by_mode(report)
    for name, mode in report["modes"].items():
        failed = sum(1 for c in mode.get("checks", []) if not c["passed"])
        status = Text(mode["status"], style=STATUS_STYLE.get(mode["status"], ""))
        if regressed.get(name):  # a mode can pass its tolerance and still fail the run on its error budget
            status.append(f" ✗ {plural(regressed[name], 'regression')}", style="bold red")
        table.add_row(
            name, status,
            fmt_error(mode.get("max_abs_error")), token_summary(mode.get("forced_tokens", {})),
            token_summary(mode.get("tokens", {})), f"{failed}/{len(mode.get('checks', []))}",
            headline(mode),
        )
    return table


def layer_table(report: dict) -> Table | None:
    layers = layer_names(report)
    if not layers:
        return None
    modes = [(n, m) for n, m in report["modes"].items() if m.get("checks")]
    table = Table(title="Max abs error per layer, all steps", box=box.SIMPLE)
    table.add_column("layer")
    per_mode = {}
    for name, mode in modes:
        table.add_column(name, justify="right")
        per_mode[name] = layer_errors(mode)
    for layer in layers:
        cells = []
        for name, _ in modes:
            entry = per_mode[name].get(layer)
            if entry is None:
                cells.append(Text("·", style="dim"))
                continue
            text = "undefined" if entry["undefined"] else fmt_error(entry["max"])
            if entry["failed"]:
                cells.append(Text(f"{text} ✗{entry['failed']}", style="bold red"))
            else:
                cells.append(Text(text, style="green"))
        table.add_row(layer, *cells)
    return table


def divergence_panel(name: str, mode: dict) -> Panel:
    fd = mode["first_divergence"]
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    grid.add_row("step", str(fd["step"]))
    grid.add_row("tensor", fd["tensor"])
    grid.add_row("max abs error", fmt_error(fd.get("max_abs_error")))
    if fd.get("op_max_abs_error") is not None:
        grid.add_row("op's own error", fmt_error(fd["op_max_abs_error"]))
    if fd.get("reason"):
        grid.add_row("why", fd["reason"])
    if fd.get("worst_index") is not None:
        grid.add_row("worst element", worst_element(fd))
    grid.add_row("op", fd.get("op") or "— (not localized)")
    if fd.get("mlir_op"):
        grid.add_row("MLIR op", fd["mlir_op"])
    if fd.get("introduced_by"):
        grid.add_row("introduced by", fd["introduced_by"])
    if fd.get("sublayer"):
        grid.add_row("op's sublayer", sublayer_text(fd))
    grid.add_row("source", source_with_function(fd))
    if fd.get("called_from"):
        grid.add_row("called from", " ← ".join(fd["called_from"]))
    # after a refused kernel no token was computed: a mismatch row would only say so
    token_rows = () if mode["status"] == "compile_error" else (("forced_tokens", "forced tokens"),
                                                               ("tokens", "free-running tokens"))
    for key, label in token_rows:
        tokens = mode.get(key)
        if tokens and not tokens.get("agree", True):
            grid.add_row(label, f"expected {tokens['expected']}, got {tokens['actual']}")
    line = read_source_line(fd)
    parts = [grid]
    if line:
        parts.append(Text("  " + line, style="bold yellow"))
    for key in ("localization", "pass_bisection"):
        if fd.get(key):
            parts.append(Text(fd[key], style="dim"))
    if fd.get("mlir_diagnostic"):
        parts.append(Text(diagnostic_excerpt(fd["mlir_diagnostic"]), style="dim"))
    return Panel(Group(*parts), title=f"First divergence — {name}{divergence_title_suffix(mode)}", border_style="red")


DIAGNOSTIC_LINES = 6


def diagnostic_excerpt(text: str) -> str:
    """MLIR's diagnostic for a terminal: its first lines, each cut to a screen's width (a "see
    current operation" note prints the whole op); the JSON and HTML reports keep all of it."""
    lines = text.splitlines()
    shown = [line if len(line) <= 160 else line[:159] + "…" for line in lines[:DIAGNOSTIC_LINES]]
    if len(lines) > DIAGNOSTIC_LINES:
        shown.append(f"… {plural(len(lines) - DIAGNOSTIC_LINES, 'more line')} in the JSON and HTML reports")
    return "MLIR said:\n" + "\n".join(shown)


def divergence_title_suffix(mode: dict) -> str:
    return " (does not compile)" if mode["status"] == "compile_error" else ""


def regression_table(regressions: list[dict]) -> Table:
    table = Table(title="Error-budget regressions (max abs error grew > 10× since baseline)", box=box.SIMPLE)
    for column in ("mode", "step", "tensor", "baseline", "now", "ratio"):
        table.add_column(column)
    for r in regressions:
        ratio = "undefined" if r.get("ratio") is None else f"{r['ratio']:.3g}×"
        table.add_row(r["mode"], str(r["step"]), r["tensor"], fmt_error(r["baseline_max_abs_error"]),
                      fmt_error(r["max_abs_error"]), Text(ratio, style="bold red"))
    return table


def regressions_by_mode(report: dict) -> dict[str, int]:
    """How many error-budget regressions each mode has."""
    counts: dict[str, int] = {}
    for r in report.get("regressions") or []:
        counts[r["mode"]] = counts.get(r["mode"], 0) + 1
    return counts


@dataclass(frozen=True)
class Verdict:
    """The run's verdict as every renderer states it: ``harness.verify.exit_code``'s code, a
    kind (pass, skipped, divergence, regression, divergence and regression, error) and one
    line saying why."""

    code: int
    kind: str
    why: str

    @property
    def label(self) -> str:
        return {"pass": "PASS", "skipped": "SKIPPED"}.get(self.kind, "ERROR" if self.code == 2 else "FAIL")

    def line(self, exits: bool = True) -> str:
        """``exits``: the printing command exits with this code (``parity verify``); else it is
        the code verify exited with, named as such (``parity report`` without ``--exit-code``)."""
        code = f"exit {self.code}" if exits else f"verify's exit {self.code}; --exit-code exits with it"
        return f"{self.label}: {self.why} ({code})"


def verdict(report: dict, unwritten: list[str] = ()) -> Verdict:
    """The verdict; ``unwritten`` (why report files could not be written) makes a pass "could not
    run" (exit 2) and is added to a failure's why, which keeps its exit code: CI still sees it."""
    found = _report_verdict(report)
    if not unwritten:
        return found
    missing = f"{plural(len(unwritten), 'report')} could not be written ({'; '.join(unwritten)})"
    if found.code == 0:
        return Verdict(2, "error", f"{found.why}, but {missing}")
    return Verdict(found.code, found.kind, f"{found.why}; also {missing}")


def _report_verdict(report: dict) -> Verdict:
    from harness.verify import exit_code

    code, modes = exit_code(report), report["modes"]
    if not modes:
        return Verdict(code, "error", "the report has no modes — nothing was verified")
    if code == 2:
        failed = [f"{name}: {mode.get('reason') or 'no reason recorded'}"
                  for name, mode in modes.items() if mode["status"] == "error"]
        return Verdict(code, "error", "could not run — " + "; ".join(failed))
    if code == 0:
        return _passing_verdict(report)
    diverged = [f"{name} ({headline(mode) or 'diverged'})" for name, mode in modes.items()
                if mode["status"] == "diverged"]
    uncompiled = [f"{name} ({headline(mode)})" for name, mode in modes.items() if mode["status"] == "compile_error"]
    regressed = regressions_by_mode(report)
    parts = []
    if uncompiled:
        parts.append("MLIR refused the compiler's code in " + "; ".join(uncompiled))
    if diverged:
        parts.append("divergence in " + "; ".join(diverged))
    if regressed:
        parts.append(f"error-budget regression: the max abs error of {plural(sum(regressed.values()), 'check')} grew "
                     "> 10× since the baseline (" + ", ".join(f"{m}: {n}" for m, n in regressed.items()) + ")")
    kind = " and ".join(k for k, on in (("compile error", uncompiled), ("divergence", diverged),
                                        ("regression", regressed)) if on)
    return Verdict(code, kind, "; ".join(parts))


def _passing_verdict(report: dict) -> Verdict:
    skipped = [name for name, mode in report["modes"].items() if mode["status"] == "skipped"]
    if len(skipped) == len(report["modes"]):
        return Verdict(0, "skipped", "nothing was verified — every mode was skipped; see the reasons")
    why = "every mode agrees with the reference"
    if skipped:
        why += f" ({', '.join(skipped)} skipped)"
    if report.get("baseline") is not None:
        why += "; no tensor's error grew > 10× since the baseline"
    fault = report.get("injected_fault")
    if fault:
        # a harness self-test that passes has found a blind spot, which must not read as success
        from harness.verify import fault_text

        why += (f"; the injected fault ({fault_text(fault)}) was NOT detected: "
                "it stays within the tensor tolerance (--audit-ops checks each op against its own rounding allowance)")
    return Verdict(0, "pass", why)


VERDICT_STYLE = {"pass": "bold green", "skipped": "bold yellow", "error": "bold magenta"}


def verdict_text(report: dict, unwritten: list[str] = (), exits: bool = True) -> Text:
    found = verdict(report, unwritten)
    return Text(found.line(exits), style=VERDICT_STYLE.get(found.kind, "bold red"))


# ---------------------------------------------------------------- JUnit

def render_junit(report: dict) -> str:
    """JUnit XML: one testsuite per mode, one testcase per tensor (failing when
    any step fails) plus one per token comparison; error-budget regressions in
    their own suite. Always well-formed XML 1.0 (see xml_safe)."""
    root = ET.Element("testsuites", name="parity verify")
    for name, mode in report["modes"].items():
        suite = ET.SubElement(root, "testsuite", name=f"parity.{name}")
        cases = []
        if mode["status"] in ("skipped", "error") and not mode.get("checks"):
            case = ET.Element("testcase", classname=f"parity.{name}", name=name)
            ET.SubElement(case, "skipped" if mode["status"] == "skipped" else "error",
                          message=mode.get("reason") or mode["status"])
            cases.append(case)
        else:
            by_tensor: dict[str, list[dict]] = {}
            for check in mode.get("checks", []):
                by_tensor.setdefault(check["tensor"], []).append(check)
            for tensor in sorted(by_tensor, key=model_order_key):
                cases.append(_tensor_case(name, tensor, by_tensor[tensor]))
            if mode["status"] == "error":
                case = ET.Element("testcase", classname=f"parity.{name}", name="run")
                ET.SubElement(case, "error", message=mode.get("reason") or "error")
                cases.append(case)
            elif mode["status"] == "compile_error":
                case = ET.Element("testcase", classname=f"parity.{name}", name="compile")
                failure = ET.SubElement(case, "failure", message=mode.get("reason") or "does not compile")
                failure.text = (mode.get("first_divergence") or {}).get("mlir_diagnostic")
                cases.append(case)
            else:
                for key, label in (("forced_tokens", "tokens.forced"), ("tokens", "tokens.free_running")):
                    if key in mode:
                        cases.append(_token_case(name, label, mode[key], mode.get("near_ties", []), key))
        for case in cases:
            suite.append(case)
        _count(suite)
    if "regressions" in report and report.get("baseline") is not None:
        suite = ET.SubElement(root, "testsuite", name="parity.baseline")
        if not report["regressions"]:
            ET.SubElement(suite, "testcase", classname="parity.baseline", name="error-budget")
        for r in report["regressions"]:
            case = ET.SubElement(suite, "testcase", classname=f"parity.baseline.{r['mode']}",
                                 name=f"{r['tensor']}@step{r['step']}")
            ET.SubElement(case, "failure", message=(
                f"max abs error grew from {fmt_error(r['baseline_max_abs_error'])} to {fmt_error(r['max_abs_error'])}"))
        _count(suite)
    _count(root)
    _make_xml_safe(root)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _tensor_case(mode: str, tensor: str, checks: list[dict]) -> ET.Element:
    case = ET.Element("testcase", classname=f"parity.{mode}", name=tensor)
    failing = [c for c in checks if not c["passed"]]
    if failing:
        worst = max((c["max_abs_error"] for c in checks if c["max_abs_error"] is not None), default=None)
        first = failing[0]
        message = (f"{len(failing)} of {plural(len(checks), 'step')} fail{'s' if len(failing) == 1 else ''}; "
                   f"first at step {first['step']}"
                   f" ({first.get('reason') or 'outside tolerance'}); max abs error {fmt_error(worst)}")
        failure = ET.SubElement(case, "failure", message=message)
        failure.text = "\n".join(
            f"step {c['step']}: dtype_match={c['dtype_match']} max_abs_error={fmt_error(c['max_abs_error'])} "
            f"max_rel_error={fmt_error(c['max_rel_error'])} {c.get('reason') or ''}".rstrip() for c in failing)
    return case


def _token_case(mode: str, label: str, tokens: dict, near_ties: list[dict], key: str) -> ET.Element:
    case = ET.Element("testcase", classname=f"parity.{mode}", name=label)
    if not tokens.get("agree"):
        ties = [t for t in near_ties if t["kind"] == key]
        message = f"expected {tokens.get('expected')}, got {tokens.get('actual')}"
        if ties:
            message += "; near-tie at step(s) " + ", ".join(f"{t['step']} (margin {t['margin']:.3g})" for t in ties)
        ET.SubElement(case, "failure", message=message)
    return case


# ANSI escape sequences: CSI (colours, cursor), OSC (titles, links) and two-character escapes.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# Everything XML 1.0 cannot carry, even escaped (C0 controls but tab/newline/CR, lone surrogates, U+FFFE/F).
_XML_FORBIDDEN = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """`text` as XML 1.0 can hold it: ANSI sequences (a compiler's coloured message) removed,
    any other forbidden character shown as a visible \\xNN / \\uNNNN escape."""
    def escape(match: re.Match) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _XML_FORBIDDEN.sub(escape, _ANSI.sub("", text))


def _make_xml_safe(root: ET.Element) -> None:
    """Reasons and names come from compilers, tracebacks and hand-made reports; an invalid
    character anywhere would make the whole JUnit file unreadable to CI."""
    for element in root.iter():
        element.attrib.update({key: xml_safe(value) for key, value in element.attrib.items()})
        if element.text:
            element.text = xml_safe(element.text)
        if element.tail:
            element.tail = xml_safe(element.tail)


def _count(element: ET.Element) -> None:
    cases = list(element.iter("testcase"))
    element.set("tests", str(len(cases)))
    element.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    element.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    element.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))


def write_junit(report: dict, path) -> Path:
    return atomic_write_text(path, render_junit(report))


def write_html(report: dict, path) -> Path:
    from harness.render_html import render_html

    return atomic_write_text(path, render_html(report))
