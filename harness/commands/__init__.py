"""One module per ``parity`` subcommand. Each exposes ``HELP`` (one line),
``configure(parser)`` to declare its arguments and ``run(args) -> int`` that
returns the process exit code; ``positive_int`` is the argument type the
commands share for counts."""

import argparse


def positive_int(text: str) -> int:
    """argparse type for counts that must be at least 1 (a count of 0 would
    divide by zero or verify nothing)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value
