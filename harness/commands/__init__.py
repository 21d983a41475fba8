"""One module per ``parity`` subcommand (its one-line summary is in ``harness.cli``). Each exposes
``configure(parser)`` to declare its arguments and ``run(args) -> int`` that
returns the process exit code; ``positive_int`` and ``non_negative_int`` are the argument types the
commands share for counts, ``check_prompt_text`` the check of a prompt's text."""

import argparse


def _count_at_least(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least {minimum}")
    return value


def positive_int(text: str) -> int:
    """argparse type for counts that must be at least 1 (a count of 0 would
    divide by zero or verify nothing)."""
    return _count_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """argparse type for counts where 0 means "none" (``generate --tokens 0`` prints the prompt)."""
    return _count_at_least(text, 0)


def check_prompt_text(text: str) -> str:
    """``text`` when it is valid Unicode. Python decodes command-line bytes that are not UTF-8 as lone surrogates
    (``\\udcff`` for byte 0xff), which the tokenizer rejects with a message about its own internals."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        char = text[err.start]
        what = f"byte 0x{ord(char) - 0xDC00:02x}" if 0xDC80 <= ord(char) <= 0xDCFF else f"character U+{ord(char):04X}"
        raise ValueError(f"the prompt is not valid UTF-8 ({what} at character {err.start})") from None
    return text
