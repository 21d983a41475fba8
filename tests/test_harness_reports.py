"""Report rendering on a hand-built report dict: the terminal report (banner,
summary, per-layer table, first-divergence panel with the source text), JSON
schema validation, JUnit failure counts, the HTML heatmap, atomic writes and
`parity report`."""

from __future__ import annotations

import json
import math
import os
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import numpy as np
import pytest
from rich.console import Console

from harness import cli
from harness import report as reports
from harness.commands import report as report_command
from harness.render_html import ratio_color, render_html
from harness.schema import REPORT_SCHEMA, SchemaError, validate, validate_report

TENSORS = ["embedding", "h.0.attention", "h.0.output", "h.1.attention", "h.1.output", "logits"]


def _check(step, tensor, err, passed=True, dtype_match=True):
    return {"step": step, "tensor": tensor, "dtype_match": dtype_match, "max_abs_error": err,
            "max_rel_error": None if err is None else err / 2, "passed": passed}


def make_report(source="compiler/ops.py:41", source_text=None, kind="bundled", banner=None):
    sub_checks = [_check(s, t, 1e-7) for s in range(2) for t in TENSORS]
    # step 0 h.1.attention fails outright; step 1 h.1.attention and logits too
    for check in sub_checks:
        if check["tensor"] == "h.1.attention":
            check.update(max_abs_error=2e-2, passed=False)
        if check["step"] == 1 and check["tensor"] == "logits":
            check.update(max_abs_error=None, max_rel_error=None, passed=False)
    fd = {"step": 0, "tensor": "h.1.attention", "max_abs_error": 2e-2, "op": "exp", "source": source,
          "reason": "3 of 40 values outside rtol=0.0003 atol=0.0003"}
    if source_text is not None:
        fd["source_text"] = source_text
    tokens = {"expected": [7, 8], "actual": [7, 9], "agree": False}
    return {
        "reference": {"kind": kind, "url": "file:///x/tiny-gpt2.git", "revision": "b8bd1dce" * 5, "numpy_version": "2.4.6"},
        "checkpoint": {"name": "synthetic-tiny", "sha256": "cd" * 32},
        "prompt": "Alan Turing", "input_ids": [36235, 39141], "completion": " one two",
        "tolerance": {"rtol": 3e-4, "atol": 3e-4}, "banner": banner, "created": "2026-01-01T00:00:00+00:00",
        "modes": {
            "subgraph": {"status": "diverged", "reason": "first divergence at step 0 in h.1.attention", "kind": "subgraph",
                         "target": "cpu", "tokens": tokens, "forced_tokens": {"expected": [7, 8], "actual": [7, 8], "agree": True},
                         "max_abs_error": 2e-2, "first_divergence": fd, "checks": sub_checks,
                         "near_ties": [{"kind": "tokens", "step": 1, "expected": 8, "actual": 9, "margin": 1e-5}]},
            "fused": {"status": "pass", "reason": None, "kind": "fused", "target": "cpu",
                      "tokens": {"expected": [7, 8], "actual": [7, 8], "agree": True},
                      "forced_tokens": {"expected": [7, 8], "actual": [7, 8], "agree": True},
                      "max_abs_error": 3e-6, "first_divergence": None,
                      "checks": [_check(0, "logits", 3e-6), _check(1, "logits", 1e-6)], "near_ties": []},
            "gpu-subgraph": {"status": "skipped", "reason": "no GPU device: no CUDA driver", "kind": "subgraph",
                             "target": "gpu", "tokens": {"expected": [7, 8], "actual": [], "agree": False},
                             "max_abs_error": None, "first_divergence": None, "checks": []},
        },
        "regressions": [],
    }


def _terminal(report) -> str:
    console = Console(record=True, width=200, force_terminal=False)
    reports.render_terminal(report, console)
    return console.export_text()


def test_terminal_report_shows_summary_layers_divergence_and_banner(tmp_path):
    src = tmp_path / "ops.py"
    src.write_text("def softmax(x):\n    e = np.exp(x - x.max(axis=-1, keepdims=True))\n    return e\n")
    text = _terminal(make_report(source=f"{src}:2"))
    assert "BUNDLED FALLBACK" in text
    for needle in ("Summary per mode", "diverged", "pass", "skipped", "no CUDA driver",
                   "Max abs error per layer", "First divergence — subgraph", "h.1.attention", "exp",
                   f"{src}:2", "e = np.exp(x - x.max(axis=-1, keepdims=True))", "near-tie", "FAIL"):
        assert needle in text, needle
    layer_rows = [line.split()[0] for line in text.splitlines() if line.strip().split(" ")[0] in ("embedding", "h.0", "h.1", "logits")]
    assert layer_rows[:4] == ["embedding", "h.0", "h.1", "logits"]
    h1 = next(line for line in text.splitlines() if line.strip().startswith("h.1 "))
    assert "0.02" in h1 and "✗2" in h1  # two failing steps in layer 1 (both attention checks)


def test_terminal_report_uses_stored_source_text_and_no_banner_for_upstream():
    text = _terminal(make_report(source="gone/file.py:9", source_text="y = np.tanh(x)", kind="upstream"))
    assert "y = np.tanh(x)" in text and "BUNDLED" not in text


def test_explicit_banner_text_is_shown():
    text = _terminal(make_report(kind="bundled", banner="USING THE BUNDLED REFERENCE"))
    assert "USING THE BUNDLED REFERENCE" in text


def test_report_validates_and_round_trips_through_json(tmp_path):
    report = make_report()
    validate_report(report)
    path = reports.write_json(report, tmp_path / "sub" / "r.json")
    assert json.loads(path.read_text()) == report
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]


@pytest.mark.parametrize("mutate, where", [
    (lambda r: r.pop("modes"), "missing required key 'modes'"),
    (lambda r: r["modes"]["fused"].update(status="ok"), "$.modes.fused.status"),
    (lambda r: r["reference"].update(kind="github"), "$.reference.kind"),
    (lambda r: r["modes"]["fused"]["checks"][0].update(passed="yes"), "$.modes.fused.checks[0].passed"),
    (lambda r: r["modes"]["fused"]["checks"][0].update(max_abs_error=-1.0), "below the minimum"),
    (lambda r: r["modes"]["subgraph"]["first_divergence"].pop("op"), "missing required key 'op'"),
    (lambda r: r.update(input_ids=[1.5]), "$.input_ids[0]"),
    (lambda r: r["modes"]["fused"]["tokens"].update(agree=1), "$.modes.fused.tokens.agree"),
    (lambda r: r["modes"]["subgraph"]["near_ties"][0].pop("margin"),
     "$.modes.subgraph.near_ties[0]: missing required key 'margin'"),
    (lambda r: r["modes"]["subgraph"]["near_ties"][0].update(kind="logits"), "$.modes.subgraph.near_ties[0].kind"),
    (lambda r: r["tolerance"].pop("rtol"), "$.tolerance: missing required key 'rtol'"),
    (lambda r: r["tolerance"].update(atol="3e-4"), "$.tolerance.atol: expected number"),
    (lambda r: r["regressions"].append({"mode": "fused", "step": 0}), "$.regressions[0]: missing required key 'tensor'"),
    (lambda r: r["modes"]["fused"]["forced_tokens"].pop("actual"), "$.modes.fused.forced_tokens: missing required key"),
    (lambda r: r.update(modes={}), "$.modes: has 0 entries, needs at least 1"),
    # json.loads reads Infinity and NaN: a baseline holding one would switch off its regression check
    (lambda r: r["modes"]["fused"]["checks"][0].update(max_abs_error=math.inf), "$.modes.fused.checks[0].max_abs_error"),
    (lambda r: r["modes"]["fused"]["checks"][0].update(max_abs_error=math.nan), "$.modes.fused.checks[0].max_abs_error"),
    (lambda r: r["modes"]["fused"]["checks"][1].pop("passed"), "$.modes.fused.checks[1]: missing required key 'passed'"),
    (lambda r: r["modes"]["fused"]["checks"][0].update(step=True), "$.modes.fused.checks[0].step"),
])
def test_schema_rejects_broken_reports(mutate, where):
    report = make_report()
    mutate(report)
    with pytest.raises(SchemaError) as info:
        validate_report(report)
    assert where in str(info.value)


def test_schema_is_a_json_schema_document():
    assert REPORT_SCHEMA["$schema"].startswith("https://json-schema.org/")
    json.dumps(REPORT_SCHEMA)
    validate(None, {"type": ["object", "null"], "required": ["x"]})


def test_json_refuses_non_finite_numbers(tmp_path):
    report = make_report()
    report["modes"]["fused"]["max_abs_error"] = float("inf")
    with pytest.raises(ValueError):
        reports.write_json(report, tmp_path / "r.json")
    assert list(tmp_path.iterdir()) == []


def test_junit_has_one_case_per_tensor_and_the_right_failures():
    root = ET.fromstring(reports.render_junit(make_report()))
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    sub = suites["parity.subgraph"]
    names = [c.get("name") for c in sub.findall("testcase")]
    assert names == TENSORS + ["tokens.forced", "tokens.free_running"]
    failed = [c.get("name") for c in sub.findall("testcase") if c.find("failure") is not None]
    assert failed == ["h.1.attention", "logits", "tokens.free_running"]
    assert sub.get("tests") == "8" and sub.get("failures") == "3"
    assert "2 of 2 steps fail; first at step 0" in sub.find("testcase[@name='h.1.attention']/failure").get("message")
    assert "near-tie at step(s) 1" in sub.find("testcase[@name='tokens.free_running']/failure").get("message")
    assert suites["parity.fused"].get("failures") == "0" and suites["parity.fused"].get("tests") == "3"
    gpu = suites["parity.gpu-subgraph"]
    assert gpu.get("skipped") == "1" and "no CUDA driver" in gpu.find("testcase/skipped").get("message")
    assert root.get("failures") == "3" and root.get("tests") == "12"


def test_junit_reports_regressions_and_errors():
    report = make_report()
    report["baseline"] = "2025-12-31T00:00:00+00:00"
    report["regressions"] = [{"mode": "fused", "step": 0, "tensor": "logits", "baseline_max_abs_error": 1e-7,
                              "max_abs_error": 3e-6, "ratio": 30.0}]
    report["modes"]["fused"]["status"] = "error"
    report["modes"]["fused"]["checks"] = []
    report["modes"]["fused"]["reason"] = "compiling fused for cpu failed: boom"
    root = ET.fromstring(reports.render_junit(report))
    base = root.find("testsuite[@name='parity.baseline']")
    assert base.get("failures") == "1" and "grew from 1e-07 to 3e-06" in base.find("testcase/failure").get("message")
    fused = root.find("testsuite[@name='parity.fused']")
    assert fused.get("errors") == "1" and "boom" in fused.find("testcase/error").get("message")


def test_html_is_self_contained_with_a_heatmap():
    page = render_html(make_report())
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    assert "BUNDLED FALLBACK" in page
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="heatmap"') == 2  # subgraph and fused
    sub_svg = page[page.index('data-mode="subgraph"'):page.index("</svg>")]
    assert sub_svg.count('class="cell') == 2 * len(TENSORS)
    assert sub_svg.count('class="cell fail"') == 3
    assert 'fill="#000000"' in sub_svg  # the undefined (non-finite) logits cell
    assert "First divergence" in page and "compiler/ops.py:41" in page


def test_heatmap_colours_are_anchored_at_the_allowance():
    assert ratio_color(0.0) == ratio_color(1e-8) == "#1a9850"
    assert ratio_color(1.0) == "#fee08b"
    assert ratio_color(10.0) == ratio_color(1e6) == ratio_color(float("inf")) == "#d73027"
    assert ratio_color(None) == "#000000"


def _cell_fills(page: str, mode: str) -> list[str]:
    svg = page[page.index(f'data-mode="{mode}"'):]
    svg = svg[:svg.index("</svg>")]
    return [part.split('fill="')[1].split('"')[0] for part in svg.split('<rect class="cell')[1:]]


def test_heatmap_colours_by_the_allowance_the_comparison_uses_with_rtol():
    from harness.compare import Tolerance, compare_tensor

    tol = Tolerance(rtol=3e-4, atol=3e-4)
    passing = compare_tensor(0, "logits", np.array([100.0]), np.array([100.02]), tol).to_json()  # 66x atol
    failing = compare_tensor(1, "logits", np.array([100.0]), np.array([100.4]), tol).to_json()
    report = make_report()
    report["modes"]["fused"]["checks"] = [passing, failing]
    fills = _cell_fills(render_html(report), "fused")
    assert fills == [ratio_color(0.02 / 0.0303), ratio_color(0.4 / 0.0303)]
    assert fills[0] != "#d73027" and fills[1] == "#d73027"
    assert "1 = the tolerance (yellow)" in render_html(report)


def test_heatmap_of_an_older_report_never_shows_a_passing_cell_past_the_allowance():
    report = make_report()
    report["modes"]["fused"]["checks"] = [_check(0, "logits", 3e-2), _check(1, "logits", 3e-2, passed=False)]
    assert _cell_fills(render_html(report), "fused") == ["#fee08b", "#d73027"]


def test_atomic_write_leaves_the_old_file_when_interrupted(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    path.write_text("old")

    def broken_replace(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(KeyboardInterrupt):
        reports.write_json(make_report(), path)
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_timestamped_paths_are_distinct_and_under_the_reports_dir(tmp_path):
    paths = reports.timestamped_paths(tmp_path)
    assert paths["json"].parent == tmp_path and paths["json"].suffix == ".json"
    assert paths["html"].with_suffix(".json") == paths["json"]


def _report_args(*argv):
    return cli.build_parser(["report", *argv]).parse_args(["report", *argv])


def test_parity_report_re_renders_and_writes_html_and_junit(tmp_path):
    report_path = reports.write_json(make_report(), tmp_path / "r.json")
    console = Console(record=True, width=200)
    args = _report_args(str(report_path), "--html", str(tmp_path / "r.html"), "--junit", str(tmp_path / "r.xml"))
    assert report_command.run(args, console=console) == 0
    text = console.export_text()
    assert "First divergence — subgraph" in text
    # it exits 0, so its verdict line must not claim exit 1: it names verify's code as verify's
    assert "(verify's exit 1; --exit-code exits with it)\nreport written:" in text and "(exit 1)" not in text
    assert 'class="heatmap"' in (tmp_path / "r.html").read_text()
    ET.parse(tmp_path / "r.xml")
    console = Console(record=True, width=200)
    assert report_command.run(_report_args(str(report_path), "--exit-code"), console=console) == 1
    assert console.export_text().rstrip().endswith("(exit 1)")


@pytest.mark.parametrize("content", ["{not json", json.dumps({"modes": {}})])
def test_parity_report_rejects_bad_files_with_exit_two(tmp_path, content, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert report_command.run(_report_args(str(bad)), console=Console(record=True)) == 2
    assert report_command.run(_report_args(str(tmp_path / "missing.json")), console=Console(record=True)) == 2



def test_reports_are_written_with_ordinary_permissions(tmp_path):
    previous = os.umask(0o022)
    try:
        path = reports.write_json(make_report(), tmp_path / "r.json")
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o777 == 0o644


def test_all_skipped_is_not_called_a_pass():
    report = make_report()
    report["modes"] = {"gpu-subgraph": report["modes"]["gpu-subgraph"]}
    text = _terminal(report)
    assert "SKIPPED: nothing was verified" in text and "PASS" not in text


@pytest.mark.parametrize("mutate, where", [
    (lambda r: r["modes"]["subgraph"]["near_ties"][0].pop("margin"), "near_ties[0]: missing required key 'margin'"),
    (lambda r: r["tolerance"].pop("atol"), "$.tolerance: missing required key 'atol'"),
    (lambda r: r["regressions"].append({"mode": "fused", "step": "0"}), "$.regressions[0]: missing required key"),
    (lambda r: r.update(modes={}), "$.modes: has 0 entries, needs at least 1"),
])
def test_parity_report_exit_code_on_a_malformed_report_is_two_with_the_place(tmp_path, mutate, where, capsys):
    report = make_report()
    mutate(report)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(report))
    assert cli.main(["report", str(bad), "--exit-code"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"report {bad} does not follow the report schema: " in err and where in err


def test_a_report_without_modes_is_an_error_not_a_pass():
    report = make_report()
    report["modes"] = {}
    from harness.verify import exit_code

    assert exit_code(report) == 2
    text = _terminal(report)
    assert "ERROR: the report has no modes — nothing was verified (exit 2)" in text and "PASS" not in text


def test_junit_is_valid_xml_whatever_the_reasons_contain():
    report = make_report()
    report["modes"]["fused"].update(status="error", checks=[],
                                    reason="\x1b[1;31merror:\x1b[0m kernel \x00 died\x07 \x1b]8;;http://x\x07link\x1b]8;;\x07 \ufffe ok é")
    report["modes"]["subgraph"]["checks"][0].update(passed=False, reason="bad\x1b[0m\x0bvalue")
    root = ET.fromstring(reports.render_junit(report).encode("utf-8"))
    error = root.find("testsuite[@name='parity.fused']/testcase/error")
    assert error.get("message") == "error: kernel \\x00 died\\x07 link \\ufffe ok é"
    failure = root.find("testsuite[@name='parity.subgraph']/testcase[@name='embedding']/failure")
    assert "bad\\x0bvalue" in failure.get("message") and "bad\\x0bvalue" in failure.text
    assert reports.xml_safe("tab\tnew\nline\r") == "tab\tnew\nline\r"


# ------------------------------------------------------------------ the verdict, the same on every surface

class _Page(HTMLParser):
    """The parts of an HTML report a reader sees: text by element class, tables as rows of cell
    texts (keyed by the table's class, or its heading), and the order of headings."""

    def __init__(self, page: str):
        super().__init__()
        self.classes: dict[str, list[str]] = {}
        self.attrs: dict[str, dict] = {}
        self.tables: list[list[list[str]]] = []
        self.order: list[str] = []  # headings and classed tables, as they appear
        self._open: list[tuple[str, str | None]] = []
        self._cell: list[str] | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in (attrs.get("class") or "").split():
            self.attrs.setdefault(name, attrs)
            self.classes.setdefault(name, []).append("")
        self._open.append((tag, attrs.get("class")))
        if tag == "table":
            self.tables.append([])
            self.order.append(f"table.{attrs.get('class')}")
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("h2", "h3"):
            self.order.append("")

    def handle_endtag(self, tag):
        while self._open and self._open.pop()[0] != tag:
            pass
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        for _, cls in self._open:
            for name in (cls or "").split():
                self.classes[name][-1] += data
        if self._cell is not None:
            self._cell.append(data)
        if self._open and self._open[-1][0] in ("h2", "h3"):
            self.order[-1] += data


def _terminal_verdict(report) -> str:
    console = Console(record=True, width=1000, force_terminal=False)
    reports.render_terminal(report, console)
    return console.export_text().rstrip().splitlines()[-1]


def _with_regression(report):
    report["baseline"] = {"path": "reports/base.json", "sha256": "ef" * 32, "created": "2025-12-31T00:00:00+00:00"}
    report["regressions"] = [{"mode": "fused", "step": 0, "tensor": "logits", "baseline_max_abs_error": 1e-7,
                              "max_abs_error": 3e-6, "ratio": 30.0},
                             {"mode": "fused", "step": 1, "tensor": "logits", "baseline_max_abs_error": 1e-8,
                              "max_abs_error": 1e-6, "ratio": 100.0}]
    return report


def _passing(report):
    report["modes"] = {"fused": report["modes"]["fused"], "gpu-subgraph": report["modes"]["gpu-subgraph"]}
    return report


def _erroring(report):
    report["modes"]["fused"].update(status="error", reason="compiling fused for cpu failed: boom", checks=[])
    return report


@pytest.mark.parametrize("shape, code, label, needle", [
    (_passing, 0, "PASS", "every mode agrees with the reference (gpu-subgraph skipped)"),
    (lambda r: _passing(r) | {"injected_fault": {"op": "tanh", "factor": 1.0, "offset": 0.001}}, 0, "PASS",
     "; the injected fault (tanh: y*1+0.001) was NOT detected: it stays within the tensor tolerance"),
    (lambda r: r, 1, "FAIL", "divergence in subgraph (step 0 h.1.attention · op exp)"),
    (lambda r: _with_regression(_passing(r)), 1, "FAIL", "error-budget regression: the max abs error of 2 checks grew"),
    (_with_regression, 1, "FAIL", "; error-budget regression"),
    (_erroring, 2, "ERROR", "could not run — fused: compiling fused for cpu failed: boom"),
    (lambda r: r.update(modes={"gpu-subgraph": r["modes"]["gpu-subgraph"]}) or r, 0, "SKIPPED", "nothing was verified"),
])
def test_the_html_opens_with_the_terminal_verdict(shape, code, label, needle):
    from harness.verify import exit_code

    report = shape(make_report())
    assert exit_code(report) == code  # the verdict every surface must state
    page = _Page(render_html(report))
    (html_verdict,) = page.classes["verdict"]
    assert html_verdict == _terminal_verdict(report)
    assert html_verdict.startswith(f"{label}: ") and html_verdict.endswith(f"(exit {code})") and needle in html_verdict
    assert page.attrs["verdict"]["data-exit-code"] == str(code)
    assert render_html(report).index('class="verdict') < render_html(report).index("<table")


def test_regressions_mark_their_mode_and_sit_under_the_summary():
    report = _with_regression(_passing(make_report()))
    page = _Page(render_html(report))
    summary = page.tables[1]
    fused = next(row for row in summary if row[0] == "fused")
    assert fused[2] == "pass ✗ 2 regressions"
    assert next(row for row in summary if row[0] == "gpu-subgraph")[2] == "skipped"
    order = page.order
    summary_at = order.index("table.summary")
    assert order[summary_at + 1].startswith("Error-budget regressions") and order[summary_at + 2] == "table.regressions"
    assert order.index("table.regressions") < order.index("fused")
    rows = page.tables[2]
    assert rows[1] == ["fused", "0", "logits", "1e-07", "3e-06", "30×"]
    text = _terminal(report)
    fused_line = next(line for line in text.splitlines() if line.strip().startswith("fused "))
    assert "pass ✗ 2 regressions" in fused_line
    assert text.index("Error-budget regressions") < text.index("Max abs error per")


def _divergence_rows(report) -> dict[str, str]:
    page = _Page(render_html(report))
    table = page.tables[[t for t in page.order if t.startswith("table")].index("table.first-divergence")]
    return {row[0]: row[1] for row in table}


def test_html_first_divergence_shows_the_ops_own_error_its_sublayer_and_the_worst_element():
    report = make_report()
    report["modes"]["subgraph"]["first_divergence"].update(
        op_max_abs_error=1.5e-6, sublayer="h.0.output", worst_index=[1, 17])
    rows = _divergence_rows(report)
    assert rows["op's own error"] == "1.5e-06"
    assert rows["op's sublayer"] == "h.0.output (upstream of h.1.attention: the error was born there)"
    assert rows["worst element"] == "h.1.attention[1, 17]"
    text = _terminal(report)
    for needle in ("op's own error       1.5e-06", "op's sublayer        h.0.output (upstream of h.1.attention",
                   "worst element        h.1.attention[1, 17]"):
        assert needle in text, needle
    validate_report(report)


def test_first_divergence_names_the_ops_function_and_its_callers():
    report = make_report()
    report["modes"]["subgraph"]["first_divergence"].update(
        function="linear", called_from=["compiler/ops.py:45 (feedforward)", "compiler/gpt2/model.py:53 (feedforward_sublayer)"])
    rows = _divergence_rows(report)
    assert rows["source"] == "compiler/ops.py:41 in linear"
    assert rows["called from"] == "compiler/ops.py:45 (feedforward) ← compiler/gpt2/model.py:53 (feedforward_sublayer)"
    text = _terminal(report)
    assert "source               compiler/ops.py:41 in linear" in text
    assert "called from          compiler/ops.py:45 (feedforward) ← compiler/gpt2/model.py:53 (feedforward_sublayer)" in text
    validate_report(report)
    report["modes"]["subgraph"]["first_divergence"]["called_from"] = "compiler/ops.py:45"
    with pytest.raises(SchemaError, match="first_divergence.called_from"):
        validate_report(report)


def test_a_divergence_without_the_new_fields_renders_as_before():
    rows = _divergence_rows(make_report())  # an older report: no sublayer, worst_index, op error
    assert "op's sublayer" not in rows and "worst element" not in rows and "op's own error" not in rows
    assert rows["op"] == "exp"


@pytest.mark.parametrize("bad, first", [("sublayer", 3), ("worst_index", [-1]), ("worst_index", "1,2")])
def test_schema_checks_the_new_first_divergence_fields(bad, first):
    report = make_report()
    report["modes"]["subgraph"]["first_divergence"][bad] = first
    with pytest.raises(SchemaError, match=f"first_divergence.{bad}"):
        validate_report(report)


def test_junit_counts_agree_with_their_nouns():
    report = make_report()
    report["modes"]["fused"]["checks"] = [_check(0, "logits", 1.0, passed=False)]
    root = ET.fromstring(reports.render_junit(report))
    message = root.find("testsuite[@name='parity.fused']/testcase[@name='logits']/failure").get("message")
    assert message.startswith("1 of 1 step fails;")
    assert reports.render_junit(make_report()).count("2 of 2 steps fail;") == 1


# ------------------------------------------------------------------ `parity report` on files that are not reports

def _report_error(path, capsys) -> str:
    assert report_command.run(_report_args(str(path)), console=Console(record=True)) == 2
    return " ".join(capsys.readouterr().err.split())


def _safetensors(path):
    header = json.dumps({"wte": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + np.array([np.nan, -1.5], np.float32).tobytes()
                     + bytes([0xff, 0xfe, 0x80]))
    return path


@pytest.mark.parametrize("make, says", [
    (lambda d: _safetensors(d / "model.safetensors"), "is not a parity JSON report (it is not text"),
    (lambda d: (d / "r.xml").write_text(reports.render_junit(make_report())) and d / "r.xml", "is XML (a JUnit report?)"),
    (lambda d: (d / "config.json").write_text(json.dumps({"n_layer": 2})) and d / "config.json",
     'is JSON but not a parity report (no "modes")'),
    (lambda d: (d / "notes.txt").write_text("hello") and d / "notes.txt", "is not a parity JSON report (not JSON"),
    (lambda d: d, "is a directory, not a parity JSON report"),
])
def test_parity_report_never_suggests_overwriting_a_file_that_is_not_a_report(tmp_path, capsys, make, says):
    path = make(tmp_path)
    before = None if path.is_dir() else path.read_bytes()
    err = _report_error(path, capsys)
    assert says in err and "parity verify --json NEW.json" in err
    assert f"--json {path}" not in err  # following the advice would have overwritten it
    assert before is None or path.read_bytes() == before


@pytest.mark.parametrize("damage", [
    lambda text: text[: len(text) // 2],  # cut short
    lambda text: json.dumps({**json.loads(text), "modes": {"fused": {"status": "ok"}}}),  # an older schema
])
def test_parity_report_suggests_regenerating_a_damaged_or_older_report_in_place(tmp_path, capsys, damage):
    path = tmp_path / "old.json"
    path.write_text(damage(reports.report_to_json(make_report())))
    err = _report_error(path, capsys)
    assert f"regenerate it with `parity verify --json {path}`" in err and "NEW.json" not in err


def test_a_baseline_holding_infinity_is_refused(tmp_path):
    text = json.dumps(make_report()).replace('"max_abs_error": 3e-06', '"max_abs_error": Infinity', 1)
    assert "Infinity" in text
    (tmp_path / "b.json").write_text(text)
    from harness.verify import VerifyError, load_report
    with pytest.raises(VerifyError, match="schema"):
        load_report(tmp_path / "b.json")


def test_a_token_only_headline_says_near_tie():
    mode = make_report()["modes"]["subgraph"]
    mode["first_divergence"] = None
    assert reports.headline(mode) == "free-running tokens differ at step 1 (near-tie)"


def compile_error_report() -> dict:
    """make_report with fused mode stopped by a kernel MLIR refused at step 1."""
    report = make_report()
    fused = report["modes"]["fused"]
    fused.update(status="compile_error", reason="step 1, logits does not compile: MLIR rejected the compiled module",
                 checks=fused["checks"][:1], tokens={"expected": [7, 8], "actual": [], "agree": False},
                 forced_tokens={"expected": [7, 8], "actual": [7], "agree": False})
    fused["first_divergence"] = {
        "step": 1, "tensor": "logits", "max_abs_error": None, "op": "transpose", "source": "compiler/gpt2/model.py:74",
        "function": "gpt2_fused", "called_from": [], "sublayer": "h.0.attention", "mlir_op": "linalg.transpose",
        "reason": "the compiler's code for logits does not compile: 'linalg.transpose' op dim(result, 0) = 12",
        "mlir_diagnostic": "Unable to parse module assembly:\nerror: ... 'linalg.transpose' op dim(result, 0) = 12",
        "localization": "MLIR refused the module"}
    return report


def test_a_compile_error_is_a_junit_failure_with_mlirs_words():
    report = compile_error_report()
    validate_report(report)
    suite = ET.fromstring(reports.render_junit(report)).find("testsuite[@name='parity.fused']")
    failure = suite.find("testcase[@name='compile']/failure")
    assert failure is not None and failure.get("message").startswith("step 1, logits does not compile")
    assert "'linalg.transpose' op dim(result, 0) = 12" in failure.text
    assert suite.find("testcase[@name='compile']/error") is None  # a finding (exit 1), not "could not run"
    assert suite.find("testcase[@name='logits']/failure") is None  # step 0's logits passed


def test_a_compile_error_renders_as_a_finding_in_the_terminal_and_html():
    report = compile_error_report()
    assert reports.verdict(report).code == 1 and reports.verdict(report).kind == "compile error and divergence"
    text = _terminal(report)
    assert "First divergence — fused (does not compile)" in text
    assert "h.0.attention (computed in the kernel for logits, which does not compile)" in text
    assert "MLIR said:" in text and "forced tokens" not in text.split("First divergence — fused")[1]
    page = render_html(report)
    assert "First divergence (does not compile)" in page and "<summary>MLIR diagnostic</summary>" in page


def test_token_summary_counts_the_steps_that_agree():
    assert reports.token_summary({"expected": [7, 8, 9], "actual": [7, 5, 9]}) == "2/3"
    assert reports.token_summary({"expected": [7, 8], "actual": [1, 2]}) == "0/2"
    assert reports.token_summary({"expected": [7, 8], "actual": []}) == "—"  # nothing decoded
    text = _terminal(make_report())
    subgraph = next(line for line in text.splitlines() if line.strip().startswith("subgraph "))
    assert "2/2" in subgraph and "1/2" in subgraph  # forced [7, 8] agrees fully, free-running [7, 9] at one step


def test_junit_tensor_failure_states_the_largest_error_over_its_steps():
    report = make_report()
    for check in report["modes"]["subgraph"]["checks"]:
        if check["tensor"] == "h.1.attention" and check["step"] == 1:
            check["max_abs_error"] = 5e-2  # step 0 stays at 2e-2
    root = ET.fromstring(reports.render_junit(report))
    message = root.find("testsuite[@name='parity.subgraph']/testcase[@name='h.1.attention']/failure").get("message")
    assert message.endswith("max abs error 0.05")


def test_a_token_headline_places_a_decode_cut_short_at_its_first_missing_step():
    """A free-running decode that stopped after agreeing on two of three tokens differs at step 2,
    the first token it did not give."""
    mode = make_report()["modes"]["subgraph"]
    mode.update(first_divergence=None, near_ties=[],
                tokens={"expected": [7, 8, 9], "actual": [7, 8], "agree": False})
    assert reports.headline(mode) == "free-running tokens differ at step 2"


def test_junit_has_a_passing_error_budget_case_when_a_baseline_found_no_regression():
    report = _passing(make_report())
    report["baseline"] = {"path": "reports/base.json", "sha256": "ef" * 32, "created": "2025-12-31T00:00:00+00:00"}
    root = ET.fromstring(reports.render_junit(report))
    base = root.find("testsuite[@name='parity.baseline']")
    assert base is not None and base.get("tests") == "1" and base.get("failures") == "0"
    assert [c.get("name") for c in base.findall("testcase")] == ["error-budget"]
    assert root.find("testsuite[@name='parity.baseline']/testcase/failure") is None
    # without a baseline there is no budget to report on
    assert ET.fromstring(reports.render_junit(_passing(make_report()))).find("testsuite[@name='parity.baseline']") is None


def test_a_compile_error_alone_is_not_called_a_divergence():
    report = compile_error_report()
    report["modes"] = {"fused": report["modes"]["fused"]}
    found = reports.verdict(report)
    assert (found.code, found.kind) == (1, "compile error")
    assert found.why == "MLIR refused the compiler's code in fused (does not compile: step 1 logits · op transpose)"
