"""`parity report FILE.json`: re-render a saved verification report in the
terminal, and optionally as HTML or JUnit XML."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", help="a JSON report written by `parity verify`")
    parser.add_argument("--html", dest="html_path", default=None, help="also write it as HTML here")
    parser.add_argument("--junit", dest="junit_path", default=None, help="also write it as JUnit XML here")
    parser.add_argument("--exit-code", action="store_true",
                        help="exit with the report's verdict (0 pass, 1 divergence/regression, 2 error)")


def run(args, *, console=None) -> int:
    from harness import report as reports
    from harness import terminal
    from harness.verify import EXIT_ERROR, VerifyError, exit_code, load_report

    console = console or terminal.console()
    try:
        report = load_report(args.report)
    except VerifyError as exc:
        terminal.console(stderr=True, soft_wrap=True).print(f"[bold red]parity report: error:[/] {exc}", highlight=False)
        return EXIT_ERROR
    # files first: a reader of the terminal output who goes away early (`| head`) must not cost them
    written = []
    try:
        if args.html_path:
            written.append(reports.write_html(report, args.html_path))
        if args.junit_path:
            written.append(reports.write_junit(report, args.junit_path))
    except OSError as exc:
        terminal.console(stderr=True, soft_wrap=True).print(f"[bold red]parity report: could not write:[/] {exc}", highlight=False)
        return EXIT_ERROR
    reports.render_terminal(report, console, exits=args.exit_code)
    for path in written:
        console.print(f"report written: {path}", highlight=False)
    return exit_code(report) if args.exit_code else 0
