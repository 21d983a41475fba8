"""``parity fetch-model DIR``: download the real GPT-2 (openai-community/gpt2 at the pinned
revision) from the Hugging Face hub (or ``$HF_ENDPOINT``), verify it loads, record sha256s."""

from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    from compiler.gpt2.fetch import PINNED_REVISION

    parser.add_argument("dir", metavar="DIR", nargs="?", default=None,
                        help="directory to create (default: the model cache, where it becomes the default model)")  # fmt: skip
    parser.add_argument("--revision", default=PINNED_REVISION, help=f"hub revision (default: pinned {PINNED_REVISION})")
    parser.add_argument("--endpoint", default=None, help="hub URL (default: $HF_ENDPOINT or https://huggingface.co)")
    parser.add_argument("--force", action="store_true", help="replace DIR if it already holds something")


def run(args: argparse.Namespace) -> int:
    from compiler.gpt2.checkpoint import FETCHED_DIR_NAME, models_root
    from compiler.gpt2.config import CheckpointError
    from compiler.gpt2.fetch import FetchError, fetch_model
    from compiler.gpt2.tokenizer import TokenizerError

    dest = args.dir if args.dir is not None else models_root() / FETCHED_DIR_NAME
    try:
        info = fetch_model(dest, revision=args.revision, endpoint=args.endpoint,
                           progress=sys.stderr.isatty(), overwrite=args.force)  # fmt: skip
    except (FetchError, CheckpointError, TokenizerError, OSError) as err:
        print(f"parity fetch-model: error: {err}", file=sys.stderr)
        return 2
    print(f"{info.name} sha256={info.sha256} -> {info.path}")
    return 0
