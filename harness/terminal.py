"""What the ``parity`` commands print through: ``plural`` for counts, rich consoles that report a reader who went away
(``parity verify | head``) as a ``BrokenPipeError``, which the CLI turns into exit 141, and a rich
progress display on a terminal with a silent stand-in when output is piped."""

from __future__ import annotations

import contextlib
import sys

from rich.console import Console


class ParityConsole(Console):
    """Rich's own answer to a closed stdout is ``SystemExit(1)``, which reads as a divergence (exit 1)
    and skips whatever the command had left to do; this console raises ``BrokenPipeError`` instead,
    for ``harness.cli`` to end the command with 141."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError("the reader of parity's output went away")


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """"1 kernel", "3 kernels": a printed count with its noun agreeing."""
    return f"{count} {noun if count == 1 else (plural_form or noun + 's')}"


def console(*, stderr: bool = False, **options) -> ParityConsole:
    return ParityConsole(stderr=stderr, **options)


class _Silent:
    def add_task(self, *a, **k):
        return 0

    def update(self, *a, **k):
        pass

    def advance(self, *a, **k):
        pass

    def log(self, *a, **k):
        pass


@contextlib.contextmanager
def progress_display():
    if not sys.stderr.isatty():
        yield _Silent()
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console(stderr=True), transient=True) as progress:
        yield progress
