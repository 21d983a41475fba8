"""``parity generate "PROMPT"``: greedy completion with the compiled GPT-2 in subgraph
or fused mode; prints the completion, or one JSON line with ``--json``. ``--build-only``
builds the kernels into the cache instead (ahead of time, for another machine)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

from harness.commands import check_prompt_text, non_negative_int


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", metavar="PROMPT", help="text to complete (valid UTF-8, not empty)")
    parser.add_argument("--tokens", type=non_negative_int, default=10,
                        help="how many tokens to generate (always exactly this many; default 10)")
    parser.add_argument("--mode", choices=["subgraph", "fused"], default="subgraph",
                        help="one compiled function per sublayer, or the whole forward pass as one (default subgraph)")
    parser.add_argument("--target", choices=["cpu", "gpu"], default="cpu", help="where the kernels run (default cpu)")
    parser.add_argument("--model", metavar="DIR", default=None, help="checkpoint directory (default: see README)")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the completion")
    parser.add_argument("--build-only", action="store_true",
                        help="build every kernel this generation would run into the kernel cache and run none "
                             "(with --target gpu no GPU is needed, only ptxas and libdevice); the cache can then "
                             "be copied to a machine that runs them")


def run(args: argparse.Namespace) -> int:
    from harness.terminal import progress_display

    try:
        from compiler import build_only
        from compiler.gpt2 import generate_text, load_model, resolve_model_dir

        check_prompt_text(args.prompt)
        with progress_display() as progress:
            task = progress.add_task("loading model", total=None)
            model = load_model(resolve_model_dir(args.model, progress=progress if sys.stderr.isatty() else None))
            verb = "building kernels" if args.build_only else "compiling and decoding"
            progress.update(task, description=f"{verb} ({args.mode}, {args.target})", total=args.tokens, completed=0)
            with build_only() if args.build_only else contextlib.nullcontext() as log:
                result = generate_text(model, args.prompt, args.tokens, args.mode, args.target,
                                       progress=lambda: progress.advance(task))
    except (ValueError, TypeError, OSError, RuntimeError) as err:
        print(f"parity generate: error: {err}", file=sys.stderr)
        return 2
    if args.build_only:
        return report_build(log, args)
    if args.json:
        print(json.dumps({"input_ids": result.input_ids, "output_ids": result.output_ids, "completion": result.completion,
                          "mode": result.mode, "checkpoint": result.checkpoint}))
    else:
        print(args.prompt + result.completion)
        print(f"[{result.mode} on {args.target}; checkpoint {result.checkpoint['name']} sha256={result.checkpoint['sha256'][:16]}…]",
              file=sys.stderr)
    return 0


def report_build(log, args: argparse.Namespace) -> int:
    from compiler import kernel_cache_dir
    from harness.terminal import plural

    built = sum(k.built for k in log.kernels)
    summary = {"build_only": True, "mode": args.mode, "target": args.target, "kernel_cache": str(kernel_cache_dir()),
               "built": built, "already_cached": len(log.kernels) - built,
               "kernels": [{"function": k.function, "built": k.built, "seconds": round(k.seconds, 2)} for k in log.kernels]}
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{plural(len(log.kernels), 'kernel')} for {args.mode} mode on {args.target}: {built} built, "
              f"{summary['already_cached']} already cached, in {summary['kernel_cache']}")
    return 0
