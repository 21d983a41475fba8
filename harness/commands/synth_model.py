"""``parity synth-model DIR``: write a deterministic synthetic GPT-2 checkpoint (Hugging Face
layout) for offline use; prints its name and sha256."""

from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    from compiler.gpt2.config import PRESETS

    parser.add_argument("dir", metavar="DIR", help="directory to create (must not exist or be empty)")
    parser.add_argument("--config", choices=list(PRESETS), default="gpt2-small",
                        help="model shape: gpt2-small (12x768, default) or tiny (2 blocks, width 48, 4 heads of 12; for tests)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--force", action="store_true", help="replace DIR if it already holds something")


def run(args: argparse.Namespace) -> int:
    from compiler.gpt2.config import CheckpointError
    from compiler.gpt2.synth import synthesize_checkpoint
    from compiler.gpt2.tokenizer import TokenizerError

    try:
        info = synthesize_checkpoint(args.dir, config=args.config, seed=args.seed,
                                     progress=sys.stderr.isatty(), overwrite=args.force)  # fmt: skip
    except (CheckpointError, TokenizerError, OSError) as err:
        print(f"parity synth-model: error: {err}", file=sys.stderr)
        return 2
    print(f"{info.name} sha256={info.sha256} -> {info.path}")
    return 0
