"""`parity verify`: run the differential verification of compiler modes against
the pinned reference and write the reports; exit 0 pass, 1 divergence, kernel
MLIR refused or error-budget regression, 2 when verification could not run. Every report path
is checked writable before the run, the report is checked against the schema
before it is written, and a report that still fails to write turns a pass
into 2 but leaves a divergence at 1."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.commands import check_prompt_text, positive_int
from harness.verify import DEFAULT_MODES, DEFAULT_PROMPT, DEFAULT_TOKENS, EXIT_ERROR, VerifyError, VerifyOptions


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


def _fault(text: str) -> tuple[str, float, float]:
    op, *numbers = text.split(":")
    if not op or len(numbers) > 2:
        raise argparse.ArgumentTypeError(f"{text!r} is not OP[:FACTOR[:OFFSET]], e.g. exp:1.001 or tanh:1:1e-3")
    try:
        values = [float(n) for n in numbers]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: FACTOR and OFFSET must be numbers") from None
    factor = values[0] if values else 1.01
    offset = values[1] if len(values) > 1 else 0.0
    return op, factor, offset


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--modes", type=_modes, default=list(DEFAULT_MODES),
                        help="comma-separated: subgraph, fused, gpu (default subgraph,fused)")
    parser.add_argument("--target", choices=("cpu", "gpu"), default="cpu",
                        help="where subgraph/fused run (gpu mode always runs on the GPU)")
    parser.add_argument("--reference", default="auto", help="auto (pinned upstream, else bundled), PATH or URL")
    parser.add_argument("--reference-rev", default=None, help="revision to check out instead of the pin")
    parser.add_argument("--strict-reference", action="store_true", help="fail instead of using the bundled fallback")
    parser.add_argument("--model", default=None, help="checkpoint directory (default: the project's default model)")
    parser.add_argument("--prompt", default=None,
                        help=f"prompt text (default: the --capture's, else {DEFAULT_PROMPT!r})")
    parser.add_argument("--tokens", type=positive_int, default=None,
                        help=f"decoding steps to verify (default: the --capture's, else {DEFAULT_TOKENS})")
    parser.add_argument("--rtol", type=_non_negative, default=3e-4,
                        help="relative tolerance per element: |actual-expected| <= atol + rtol*|expected| (default 3e-4)")
    parser.add_argument("--atol", type=_non_negative, default=3e-4, help="absolute tolerance per element (default 3e-4)")
    parser.add_argument("--json", dest="json_path", default=None, help="write the JSON report here")
    parser.add_argument("--junit", dest="junit_path", default=None, help="write a JUnit XML report here")
    parser.add_argument("--html", dest="html_path", default=None, help="write the HTML report here")
    parser.add_argument("--baseline", default=None,
                        help="earlier JSON report: fail when any tensor's max abs error grew more than 10x")
    parser.add_argument("--reports-dir", default="reports",
                        help="where timestamped JSON+HTML reports go when no --json/--junit/--html is given "
                             "(default reports/ under the current directory)")
    parser.add_argument("--captures-dir", default=None,
                        help="reference capture cache (default: the checkout's captures/ when parity runs from a "
                             "checkout, else captures/ in the cache root, ~/.cache/parity or $PARITY_CACHE)")
    parser.add_argument("--inject-fault", type=_fault, default=None, metavar="OP[:FACTOR[:OFFSET]]",
                        help="compile with a deliberate fault (every OP result y becomes y*FACTOR+OFFSET; default "
                             "factor 1.01, offset 0), to check that the harness catches and localizes it; the "
                             "report says so in its banner")
    parser.add_argument("--audit-ops", action="store_true",
                        help="when every tensor passes, still re-run step 0 op by op and fail on any op off its own "
                             "rounding (a miscompile a tolerance cannot see); costs a localization per sublayer")
    parser.add_argument("--capture", default=None, metavar="FILE.json",
                        help="verify against this capture (made elsewhere, e.g. for an offline GPU machine) "
                             "instead of running the reference")


def options_from_args(args) -> VerifyOptions:
    try:
        if args.prompt is not None:
            check_prompt_text(args.prompt)  # before the reference sees it and fails on it as its own error
    except ValueError as exc:
        raise VerifyError(str(exc)) from None
    return VerifyOptions(
        modes=args.modes, target=args.target, reference=args.reference, reference_rev=args.reference_rev,
        strict_reference=args.strict_reference, model=args.model, prompt=args.prompt, tokens=args.tokens,
        rtol=args.rtol, atol=args.atol, baseline=args.baseline, captures_dir=args.captures_dir, capture=args.capture,
        inject_fault=args.inject_fault, audit_ops=args.audit_ops,
    )


def report_paths(args) -> dict[str, Path]:
    """What to write: the paths asked for, else the timestamped JSON and HTML under --reports-dir."""
    from harness import report as reports

    explicit = {kind: Path(path) for kind, path in
                (("json", args.json_path), ("junit", args.junit_path), ("html", args.html_path)) if path}
    return explicit or reports.timestamped_paths(args.reports_dir)


def check_report_paths(paths: dict[str, Path]) -> None:
    """Refuse to start when a report could not be written: a verdict without its report
    is of little use to CI, and finding out after a long run wastes it."""
    from harness.report import unwritable_reason

    for kind, path in paths.items():
        why = unwritable_reason(path)
        if why:
            raise VerifyError(f"cannot write the {kind} report to {path} ({why}); pass another path"
                              + (" or --reports-dir" if kind != "junit" else ""))


def write_reports(report: dict, paths: dict[str, Path]) -> tuple[list[Path], list[str]]:
    """Write every report, each atomically; one failing does not stop the others.
    Returns (written paths, one message per failure)."""
    from harness import report as reports

    writers = {"json": reports.write_json, "junit": reports.write_junit, "html": reports.write_html}
    written, failures = [], []
    for kind, path in paths.items():
        try:
            written.append(writers[kind](report, path))
        except OSError as exc:
            failures.append(f"could not write the {kind} report {path}: {exc}")
    return written, failures


def run(args, *, verify_fn=None, console=None) -> int:
    """`verify_fn(options, progress)` is a seam for tests (defaults to harness.verify.verify)."""
    from harness import terminal

    from harness.report import render_terminal, verdict
    from harness.schema import SchemaError, validate_report
    from harness.verify import verify

    verify_fn = verify_fn or verify
    console = console or terminal.console()
    errors = terminal.console(stderr=True, soft_wrap=True)  # long paths stay whole in CI logs
    try:
        options = options_from_args(args)
        paths = report_paths(args)
        check_report_paths(paths)
        with _progress(errors) as progress:
            report = verify_fn(options, progress)
    except VerifyError as exc:
        errors.print(f"[bold red]parity verify: error:[/] {exc}", highlight=False)
        return EXIT_ERROR
    try:
        validate_report(report)  # never write a report `parity report` would reject
    except SchemaError as exc:
        errors.print(f"[bold red]parity verify: internal error:[/] the report does not follow the report schema "
                     f"({exc}); nothing was written (exit 2)", highlight=False)
        return EXIT_ERROR
    written, failures = write_reports(report, paths)  # before the terminal, which a `| head` may close
    for failure in failures:  # on stderr too, which CI logs keep when stdout is a pipe someone closed
        errors.print(f"[bold red]parity verify: {failure}[/]", highlight=False)
    render_terminal(report, console, unwritten=failures)  # its last line: the verdict, failed writes counted
    for path in written:
        console.print(f"report written: {path}", highlight=False)
    return verdict(report, unwritten=failures).code


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
