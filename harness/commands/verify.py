"""`parity verify`: run the differential verification of compiler modes against
the pinned reference and write the reports; exit 0 pass, 1 divergence or
error-budget regression, 2 when verification could not run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.commands import positive_int
from harness.verify import DEFAULT_MODES, DEFAULT_PROMPT, DEFAULT_TOKENS, EXIT_ERROR, VerifyError, VerifyOptions

HELP = "verify compiler modes against the pinned NumPy reference, step by step"


def _modes(text: str) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    if not modes:
        raise argparse.ArgumentTypeError("give at least one mode, e.g. subgraph,fused")
    return modes


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number >= 0")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--modes", type=_modes, default=list(DEFAULT_MODES),
                        help="comma-separated: subgraph, fused, gpu (default subgraph,fused)")
    parser.add_argument("--target", choices=("cpu", "gpu"), default="cpu",
                        help="where subgraph/fused run (gpu mode always runs on the GPU)")
    parser.add_argument("--reference", default="auto", help="auto (pinned upstream, else bundled), PATH or URL")
    parser.add_argument("--reference-rev", default=None, help="revision to check out instead of the pin")
    parser.add_argument("--strict-reference", action="store_true", help="fail instead of using the bundled fallback")
    parser.add_argument("--model", default=None, help="checkpoint directory (default: the project's default model)")
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument("--tokens", type=positive_int, default=DEFAULT_TOKENS)
    parser.add_argument("--rtol", type=_non_negative, default=3e-4)
    parser.add_argument("--atol", type=_non_negative, default=3e-4)
    parser.add_argument("--json", dest="json_path", default=None, help="write the JSON report here")
    parser.add_argument("--junit", dest="junit_path", default=None, help="write a JUnit XML report here")
    parser.add_argument("--html", dest="html_path", default=None, help="write the HTML report here")
    parser.add_argument("--baseline", default=None,
                        help="earlier JSON report: fail when any tensor's max abs error grew more than 10x")
    parser.add_argument("--reports-dir", default="reports",
                        help="where timestamped JSON+HTML reports go when no --json/--junit/--html is given")
    parser.add_argument("--captures-dir", default=None, help="reference capture cache (default captures/)")
    parser.add_argument("--capture", default=None, metavar="FILE.json",
                        help="verify against this capture (made elsewhere, e.g. for an offline GPU machine) "
                             "instead of running the reference")


def options_from_args(args) -> VerifyOptions:
    return VerifyOptions(
        modes=args.modes, target=args.target, reference=args.reference, reference_rev=args.reference_rev,
        strict_reference=args.strict_reference, model=args.model, prompt=args.prompt, tokens=args.tokens,
        rtol=args.rtol, atol=args.atol, baseline=args.baseline, captures_dir=args.captures_dir, capture=args.capture,
    )


def write_reports(report: dict, args) -> list[Path]:
    """Write what was asked for, else the timestamped JSON and HTML under --reports-dir."""
    from harness import report as reports

    written = []
    explicit = {"json": args.json_path, "junit": args.junit_path, "html": args.html_path}
    if not any(explicit.values()):
        explicit.update({k: v for k, v in reports.timestamped_paths(args.reports_dir).items()})
    writers = {"json": reports.write_json, "junit": reports.write_junit, "html": reports.write_html}
    for kind, path in explicit.items():
        if path:
            written.append(writers[kind](report, path))
    return written


def run(args, *, verify_fn=None, console=None) -> int:
    """`verify_fn(options, progress)` is a seam for tests (defaults to harness.verify.verify)."""
    from rich.console import Console

    from harness.report import render_terminal
    from harness.verify import exit_code, verify

    verify_fn = verify_fn or verify
    console = console or Console()
    errors = Console(stderr=True)
    try:
        options = options_from_args(args)
        with _progress(errors) as progress:
            report = verify_fn(options, progress)
    except VerifyError as exc:
        errors.print(f"[bold red]parity verify: error:[/] {exc}", highlight=False)
        return EXIT_ERROR
    render_terminal(report, console)
    try:
        written = write_reports(report, args)
    except OSError as exc:
        errors.print(f"[bold red]parity verify: could not write a report:[/] {exc}; "
                     "check the path or pass --reports-dir", highlight=False)
        return EXIT_ERROR
    for path in written:
        console.print(f"report written: {path}", highlight=False)
    return exit_code(report)


class _progress:
    """A rich progress bar on a terminal; a silent no-op callback when piped."""

    def __init__(self, console):
        self.console = console
        self.bar = None
        self.task = None

    def __enter__(self):
        if not (self.console.is_terminal and sys.stderr.isatty()):
            return None
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                            console=self.console, transient=True)
        self.bar.__enter__()
        self.task = self.bar.add_task("verifying", total=None)
        return self.update

    def update(self, description: str, completed: int | None = None, total: int | None = None) -> None:
        if completed is None:  # a message from the reference set-up: keep it on screen above the bar
            self.bar.console.print(f"[dim]{description}[/]", highlight=False)
            self.bar.update(self.task, description=description.splitlines()[0][:80], total=None)
        else:
            self.bar.update(self.task, description=description, completed=completed, total=total)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)
        return False
