"""The ``parity`` console script: a thin dispatcher that lazily imports one
module per subcommand from ``harness.commands`` so that ``parity --help`` stays
fast and a broken subcommand cannot take the others down."""

from __future__ import annotations

import argparse
import importlib
import sys

# subcommand name -> module in harness.commands
SUBCOMMANDS = {
    "emit": "emit",
    "generate": "generate",
    "synth-model": "synth_model",
    "fetch-model": "fetch_model",
    "verify": "verify",
    "report": "report",
    "fuzz": "fuzz",
    "bench": "bench",
}


def _load(name: str):
    return importlib.import_module(f"harness.commands.{SUBCOMMANDS[name]}")


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="parity", description="Parity: an MLIR tensor compiler and its differential-verification harness.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # Only the chosen subcommand's module is imported; the others get a stub entry for --help.
    chosen = next((a for a in argv if a in SUBCOMMANDS), None)
    for name in SUBCOMMANDS:
        if name == chosen:
            module = _load(name)
            p = sub.add_parser(name, help=module.HELP, description=module.HELP)
            module.configure(p)
            p.set_defaults(_run=module.run)
        else:
            sub.add_parser(name, help=f"see `parity {name} --help`")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
