"""The ``parity`` console script: a thin dispatcher that lazily imports one
module per subcommand from ``harness.commands`` so that ``parity --help`` stays
fast and a broken subcommand cannot take the others down. An unexpected
exception is a one-line message and exit 2 ("could not run"), never exit 1,
which CI reads as a divergence; ``PARITY_DEBUG=1`` adds the traceback. A reader
that closes stdout early (``| head``) ends the command quietly with status 141."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

# subcommand name -> (module in harness.commands, one-line summary for `parity --help`); the summaries
# live here so that help imports none of the modules
SUBCOMMANDS = {
    "emit": ("emit", "print the IR of a library function (gelu, softmax, layer_norm, ...) at one pipeline stage"),
    "generate": ("generate", "greedy GPT-2 completion through the compiler (subgraph or fused mode)"),
    "synth-model": ("synth_model", "write a deterministic synthetic GPT-2 checkpoint (offline stand-in for the real weights)"),
    "fetch-model": ("fetch_model", "download the real GPT-2 weights at the pinned revision from the Hugging Face hub"),
    "verify": ("verify", "verify compiler modes against the pinned NumPy reference, step by step"),
    "report": ("report", "re-render a saved `parity verify` JSON report (terminal, --html, --junit)"),
    "fuzz": ("fuzz", "fuzz the compiler against NumPy (registry ops and random graphs); failures go to the corpus"),
    "bench": ("bench", "benchmark warm per-token decode latency: NumPy reference vs subgraph vs fused"),
}


def _load(name: str):
    return importlib.import_module(f"harness.commands.{SUBCOMMANDS[name][0]}")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("parity")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="parity", description="Parity: an MLIR tensor compiler and its differential-verification harness.")
    parser.add_argument("--version", action="version", version=f"parity {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # Only the chosen subcommand's module is imported (and declares its arguments).
    chosen = next((a for a in argv if a in SUBCOMMANDS), None)
    for name, (_, summary) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=summary, description=summary)
        if name == chosen:
            module = _load(name)
            module.configure(p)
            p.set_defaults(_run=module.run)
    return parser


# Exit status for "could not run"; 1 is reserved for a divergence.
EXIT_COULD_NOT_RUN = 2
DEBUG_ENV = "PARITY_DEBUG"


def report_unexpected(command: str, exc: BaseException) -> int:
    """Say in one line what went wrong (a Parity bug, not a verdict), with the
    traceback only when asked for, so CI logs stay readable but a bug report
    can carry the full trace."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    message = " ".join(str(exc).split()) or "(no message)"
    print(f"parity {command}: internal error: {type(exc).__name__}{where}: {message} "
          f"(exit {EXIT_COULD_NOT_RUN}: could not run; set {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        traceback.print_exception(exc, file=sys.stderr)
    return EXIT_COULD_NOT_RUN


# Exit status when the reader of stdout went away (`parity generate ... | head`): 128 + SIGPIPE, what a shell
# reports for a program the signal killed, so `set -o pipefail` still sees that the output was cut short.
EXIT_CLOSED_STDOUT = 141


def closed_stdout() -> int:
    """Stop quietly: point stdout at /dev/null so the interpreter's final flush cannot fail again and print
    "Exception ignored ... BrokenPipeError"."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (captured): nothing will flush to the pipe
        pass
    return EXIT_CLOSED_STDOUT


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        status = int(args._run(args) or 0)
        sys.stdout.flush()  # a reader that went away shows here, not as an unraisable error at exit
        return status
    except BrokenPipeError:
        return closed_stdout()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # anything a subcommand did not turn into its own exit status
        return report_unexpected(args.command, exc)


if __name__ == "__main__":
    sys.exit(main())
