"""``parity generate "PROMPT"``: greedy completion with the compiled GPT-2 in subgraph
or fused mode; prints the completion, or one JSON line with ``--json``."""

from __future__ import annotations

import argparse
import json
import sys

HELP = "greedy GPT-2 completion through the compiler (subgraph or fused mode)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", metavar="PROMPT")
    parser.add_argument("--tokens", type=int, default=10, help="how many tokens to generate (always exactly this many)")
    parser.add_argument("--mode", choices=["subgraph", "fused"], default="subgraph")
    parser.add_argument("--target", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--model", metavar="DIR", default=None, help="checkpoint directory (default: see README)")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the completion")


def run(args: argparse.Namespace) -> int:
    from harness.progress import progress_display

    try:
        from compiler.gpt2 import generate_text, load_model, resolve_model_dir

        with progress_display() as progress:
            task = progress.add_task("loading model", total=None)
            model = load_model(resolve_model_dir(args.model, progress=progress if sys.stderr.isatty() else None))
            progress.update(task, description=f"compiling and decoding ({args.mode}, {args.target})", total=args.tokens, completed=0)
            result = generate_text(model, args.prompt, args.tokens, args.mode, args.target,
                                   progress=lambda: progress.advance(task))
    except (ValueError, TypeError, OSError, RuntimeError) as err:
        print(f"parity generate: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"input_ids": result.input_ids, "output_ids": result.output_ids, "completion": result.completion,
                          "mode": result.mode, "checkpoint": result.checkpoint}))
    else:
        print(args.prompt + result.completion)
        print(f"[{result.mode} on {args.target}; checkpoint {result.checkpoint['name']} sha256={result.checkpoint['sha256'][:16]}…]",
              file=sys.stderr)
    return 0
