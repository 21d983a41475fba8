"""The HTML report: one self-contained file (no scripts, no external assets) with
the verdict (the terminal's, from ``harness.report.verdict``) at the top, the
reference banner, per-mode summary with the error-budget regressions under it,
first-divergence details and, per mode, a
step × layer heatmap drawn as inline SVG, coloured by the share of the allowed
error (atol + rtol·|reference|, as the comparison judges it) each cell uses."""

from __future__ import annotations

import html
import math

from harness.compare import model_order_key
from harness.report import (
    banner_text,
    divergence_title_suffix,
    fmt_error,
    near_tie_text,
    plural,
    read_source_line,
    regressions_by_mode,
    source_with_function,
    sublayer_text,
    token_summary,
    verdict,
    worst_element,
)

CELL_W, CELL_H = 26, 20
LABEL_W, HEADER_H = 70, 110
# Colour stops by the share of the allowed error used: green far below, yellow at the
# allowance (the pass/fail line), red at 10x it.
GREEN, YELLOW, RED = (26, 152, 80), (254, 224, 139), (215, 48, 39)
DECADES_BELOW = 8

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
.pass{color:#1a7f37;font-weight:bold}.diverged,.compile_error{color:#c62828;font-weight:bold}
.error{color:#8e24aa;font-weight:bold}.skipped{color:#b8860b;font-weight:bold}
.banner{background:#c62828;color:#fff;font-size:1.4em;font-weight:bold;padding:1em;border:6px double #fff;
outline:4px solid #c62828;white-space:pre-wrap}
.source{font-family:monospace;background:#fff8dc;padding:.4em;border-left:4px solid #c62828}
code{background:#f3f3f3;padding:0 3px}
.verdict{font-size:1.3em;font-weight:bold;padding:.6em 1em;border-left:10px solid;margin:1em 0}
.verdict-pass{background:#e6f4ea;border-color:#1a7f37}.verdict-skipped{background:#fff8dc;border-color:#b8860b}
.verdict-fail{background:#fdecea;border-color:#c62828}.verdict-error{background:#f3e5f5;border-color:#8e24aa}
.regressed{color:#c62828;font-weight:bold}
"""


def _mix(a, b, t):
    return tuple(round(x + (y - x) * t) for x, y in zip(a, b))


def ratio_color(ratio: float | None) -> str:
    """Heatmap colour of one cell on a log scale of error / allowed error: green at
    10**-DECADES_BELOW and below, yellow at 1 (the tolerance), red at 10 and above;
    black when undefined."""
    if ratio is None:
        return "#000000"
    if ratio <= 0:
        rgb = GREEN
    else:
        position = math.log10(ratio)  # 0 at the allowance, 1 at 10x
        if position <= 0:
            rgb = _mix(GREEN, YELLOW, max(0.0, 1 + position / DECADES_BELOW))
        else:
            rgb = _mix(YELLOW, RED, min(1.0, position))
    return "#%02x%02x%02x" % rgb


def cell_ratio(check: dict, atol: float) -> float | None:
    """The share of its allowed error a check uses. Reports from before tolerance_ratio was
    recorded (or with zero tolerance) only have the max abs error: measured against atol,
    and never past the allowance for a check that passed."""
    error = check["max_abs_error"]
    if error is None:
        return None
    if check.get("tolerance_ratio") is not None:
        return check["tolerance_ratio"]
    estimate = error / atol if atol > 0 else (0.0 if error == 0 else math.inf)
    return min(estimate, 1.0) if check["passed"] else estimate


def heatmap_svg(mode_name: str, mode: dict, atol: float) -> str:
    """Rows: decoding steps; columns: tensors in model order (grouped by layer)."""
    checks = mode.get("checks", [])
    tensors = sorted({c["tensor"] for c in checks}, key=model_order_key)
    steps = sorted({c["step"] for c in checks})
    by_key = {(c["step"], c["tensor"]): c for c in checks}
    width = max(LABEL_W + CELL_W * len(tensors) + 10, LABEL_W + 11 * 18 + 460)  # room for the legend
    height = HEADER_H + CELL_H * len(steps) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" data-mode="{html.escape(mode_name)}" '
           f'width="{width}" height="{height}" font-family="monospace" font-size="10">',
           f'<title>max error / allowed error per step and tensor — {html.escape(mode_name)}</title>']
    for col, tensor in enumerate(tensors):
        x = LABEL_W + col * CELL_W + CELL_W / 2
        out.append(f'<text transform="translate({x:.1f},{HEADER_H - 6}) rotate(-60)">{html.escape(tensor)}</text>')
    for row, step in enumerate(steps):
        y = HEADER_H + row * CELL_H
        out.append(f'<text x="4" y="{y + CELL_H * 0.7:.1f}">step {step}</text>')
        for col, tensor in enumerate(tensors):
            x = LABEL_W + col * CELL_W
            check = by_key.get((step, tensor))
            if check is None:
                continue
            err = check["max_abs_error"]
            ratio = cell_ratio(check, atol)
            tip = (f"step {step} {tensor}: max abs error {fmt_error(err)}, rel {fmt_error(check['max_rel_error'])}"
                   f", {fmt_error(ratio)} of the allowed error"
                   f", dtype {'ok' if check['dtype_match'] else 'MISMATCH'}, {'pass' if check['passed'] else 'FAIL'}")
            stroke = ' stroke="#000" stroke-width="2"' if not check["passed"] else ' stroke="#fff"'
            out.append(f'<rect class="cell{"" if check["passed"] else " fail"}" x="{x}" y="{y}" width="{CELL_W}" '
                       f'height="{CELL_H}" fill="{ratio_color(ratio)}"{stroke}><title>{html.escape(tip)}</title></rect>')
            if not check["passed"]:
                out.append(f'<text x="{x + CELL_W / 2 - 3}" y="{y + CELL_H * 0.7:.1f}" fill="#000" font-weight="bold">✗</text>')
    # legend
    legend_y = HEADER_H + CELL_H * len(steps) + 12
    for i in range(11):
        ratio = 10 ** (-DECADES_BELOW + i * (DECADES_BELOW + 1) / 10)
        out.append(f'<rect x="{LABEL_W + i * 18}" y="{legend_y}" width="18" height="10" fill="{ratio_color(ratio)}"/>')
    out.append(f'<text x="{LABEL_W + 11 * 18 + 6}" y="{legend_y + 9}">error / allowed (atol + rtol·|reference|): '
               f'≤1e-{DECADES_BELOW} … 1 = the tolerance (yellow) … ≥10 (red); black = undefined; ✗ = fails</text>')
    out.append("</svg>")
    return "\n".join(out)


def verdict_html(report: dict) -> str:
    """The run's verdict, worded as the terminal's last line, for the top of the page."""
    found = verdict(report)
    css = found.kind if found.kind in ("pass", "skipped", "error") else "fail"
    return (f'<div class="verdict verdict-{css}" data-exit-code="{found.code}" data-verdict="{html.escape(found.kind)}">'
            f"{html.escape(found.line())}</div>")


def summary_html(report: dict) -> list[str]:
    e = html.escape
    parts = ['<h2>Summary</h2><table class="summary"><tr><th>mode</th><th>target</th><th>status</th>'
             "<th>max abs error</th><th>forced tokens</th><th>free-running tokens</th><th>reason</th></tr>"]
    regressed = regressions_by_mode(report)
    for name, mode in report["modes"].items():
        status = f'<span class="{e(mode["status"])}">{e(mode["status"])}</span>'
        if regressed.get(name):  # within tolerance, yet failing the run on its error budget
            status += f' <span class="regressed">✗ {plural(regressed[name], "regression")}</span>'
        parts.append(
            f"<tr><td>{e(name)}</td><td>{e(str(mode.get('target', '')))}</td>"
            f"<td>{status}</td><td>{fmt_error(mode.get('max_abs_error'))}</td>"
            f"<td>{token_summary(mode.get('forced_tokens', {}))}</td><td>{token_summary(mode.get('tokens', {}))}</td>"
            f"<td>{e(mode.get('reason') or '')}</td></tr>")
    parts.append("</table>")
    return parts


def regressions_html(regressions: list[dict]) -> list[str]:
    e = html.escape
    parts = ['<h2 id="regressions">Error-budget regressions (max abs error grew &gt; 10× since the baseline)</h2>'
             '<table class="regressions"><tr><th>mode</th><th>step</th><th>tensor</th><th>baseline</th><th>now</th>'
             "<th>ratio</th></tr>"]
    for r in regressions:
        ratio = "undefined" if r.get("ratio") is None else f"{r['ratio']:.3g}×"
        parts.append(f"<tr><td>{e(r['mode'])}</td><td>{r['step']}</td><td>{e(r['tensor'])}</td>"
                     f"<td>{fmt_error(r['baseline_max_abs_error'])}</td><td>{fmt_error(r['max_abs_error'])}</td>"
                     f'<td class="regressed">{ratio}</td></tr>')
    parts.append("</table>")
    return parts


def divergence_html(mode: dict) -> list[str]:
    """The first divergence's fields, in the terminal panel's order and wording."""
    e = html.escape
    fd = mode["first_divergence"]
    rows = (("step", fd["step"]), ("tensor", fd["tensor"]), ("max abs error", fmt_error(fd.get("max_abs_error"))),
            ("op's own error", None if fd.get("op_max_abs_error") is None else fmt_error(fd["op_max_abs_error"])),
            ("why", fd.get("reason")),
            ("worst element", None if fd.get("worst_index") is None else worst_element(fd)),
            ("op", fd.get("op") or "— (not localized)"),
            ("MLIR op", fd.get("mlir_op")),
            ("introduced by", fd.get("introduced_by")),
            ("op's sublayer", sublayer_text(fd) if fd.get("sublayer") else None),
            ("source", source_with_function(fd)),
            ("called from", " ← ".join(fd["called_from"]) if fd.get("called_from") else None),
            ("localization", fd.get("localization")),
            ("pass bisection", fd.get("pass_bisection")))
    parts = [f'<h3>First divergence{e(divergence_title_suffix(mode))}</h3><table class="first-divergence">']
    parts += [f"<tr><th>{e(label)}</th><td>{e(str(value))}</td></tr>" for label, value in rows if value is not None]
    parts.append("</table>")
    line = read_source_line(fd)
    if line:
        parts.append(f'<div class="source">{e(line)}</div>')
    if fd.get("mlir_diagnostic"):
        parts.append(f'<details><summary>MLIR diagnostic</summary><pre>{e(fd["mlir_diagnostic"])}</pre></details>')
    return parts


def render_html(report: dict) -> str:
    e = html.escape
    tol = report.get("tolerance") or {"rtol": 3e-4, "atol": 3e-4}
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>parity verify report</title>", f"<style>{CSS}</style></head><body>",
             "<h1>parity verify report</h1>", verdict_html(report)]
    banner = banner_text(report)
    if banner:
        parts.append(f'<div class="banner">⚠ {e(banner)}</div>')
    ref, ckpt = report["reference"], report["checkpoint"]
    parts.append("<table>")
    for label, value in (
        ("reference", f"{ref.get('kind')} {ref.get('url')} @ {ref.get('revision')}"
                      + (f" (numpy {ref['numpy_version']})" if ref.get("numpy_version") else "")),
        ("checkpoint", f"{ckpt.get('name')} sha256 {ckpt.get('sha256')}"),
        ("prompt", repr(report.get("prompt"))),
        ("input ids", str(report.get("input_ids"))),
        ("reference completion", repr(report.get("completion"))),
        ("tolerance", f"rtol={tol['rtol']:g} atol={tol['atol']:g}"),
        ("created", str(report.get("created"))),
    ):
        parts.append(f"<tr><th>{e(label)}</th><td>{e(value)}</td></tr>")
    parts.append("</table>")
    parts += summary_html(report)
    if report.get("regressions"):  # next to the summary whose statuses they overrule
        parts += regressions_html(report["regressions"])
    for name, mode in report["modes"].items():
        parts.append(f"<h2>{e(name)}</h2>")
        if mode.get("first_divergence"):
            parts += divergence_html(mode)
        tokens = mode.get("tokens", {})
        if tokens.get("actual"):
            parts.append(f"<p>tokens expected <code>{e(str(tokens['expected']))}</code>, "
                         f"free-running <code>{e(str(tokens['actual']))}</code>, forced "
                         f"<code>{e(str(mode.get('forced_tokens', {}).get('actual')))}</code></p>")
        for tie in mode.get("near_ties", []):
            parts.append(f"<p>near-tie ({e(tie['kind'])}) at step {tie['step']}: {e(near_tie_text(tie))} "
                         "— still a failure</p>")
        if mode.get("checks"):
            parts.append("<h3>Error heatmap: max error / allowed error (rows: steps, columns: tensors by layer)</h3>")
            parts.append(heatmap_svg(name, mode, tol["atol"]))
        elif mode.get("reason"):
            parts.append(f"<p>{e(mode['reason'])}</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
