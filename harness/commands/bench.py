"""``parity bench``: warm per-token decode latency at GPT-2-small shapes for the NumPy
reference forward, subgraph mode and fused mode, plus compile seconds per mode. The prompt
(as ``generate`` checks it) and, for ``--target gpu``, the device are checked before any
timing: exit 2 when the benchmark could not run."""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from harness.commands import check_prompt_text, positive_int

PROMPT = "Alan Turing theorized that computers would one day become"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tokens", type=positive_int, default=10,
                        help="tokens decoded per measurement, at least 1 (default 10)")
    parser.add_argument("--prompt", default=PROMPT, help=f"prompt to decode from (default {PROMPT!r})")
    parser.add_argument("--model", metavar="DIR", default=None, help="checkpoint (default: GPT-2 small, synthetic offline)")
    parser.add_argument("--target", choices=["cpu", "gpu"], default="cpu",
                        help="where subgraph and fused mode run (default cpu; the reference is NumPy on the CPU)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")


def reference_decode(model, ids, n_tokens):
    """Greedy decoding with the NumPy forward as the reference computes it: float32 weights
    promoted per op, logits for every position."""
    from compiler.gpt2.model import gpt2_fused

    seq = list(ids)
    for _ in range(n_tokens):
        arr = np.asarray(seq, dtype=np.int64)
        logits = gpt2_fused(arr, np.arange(arr.size), model.params, model.params.wte, model.config.n_head)
        seq.append(int(np.argmax(logits[-1])))
    return seq[len(ids):]


def check_device(target: str) -> None:
    """No GPU is an error before the model loads, not after minutes of reference timing."""
    if target != "gpu":
        return
    from compiler.gpu import device_available

    ok, why = device_available()
    if not ok:
        raise ValueError(f"no GPU device: {why}")


def checked_prompt(model, prompt: str, n_tokens: int, target: str):
    """(token ids, subgraph runner) once the prompt passes the checks generate makes (not empty, ids in the
    vocabulary, prompt + tokens - 1 positions within the context), before any timing."""
    from compiler.gpt2 import compile_model

    ids = model.tokenizer.encode(check_prompt_text(prompt))
    runner = compile_model(model, "subgraph", target)
    return list(runner.check_ids(ids, n_tokens)), runner


def measure(model, ids, n_tokens, target, progress, runners=None):
    """``runners``: compiled runners already made, by mode (the rest are made here)."""
    from compiler.gpt2 import compile_model
    from compiler.gpt2.model import padded_length

    runners = runners or {}
    results = {"ms_per_token": {}, "compile_s": {}, "tokens_agree": {}}
    task = progress.add_task("reference (NumPy)", total=None)
    reference_decode(model, ids, 1)  # warm caches and allocator
    start = time.perf_counter()
    expected = reference_decode(model, ids, n_tokens)
    results["ms_per_token"]["reference"] = (time.perf_counter() - start) * 1e3 / n_tokens
    for mode in ("subgraph", "fused"):
        progress.update(task, description=f"{mode}: compiling")
        runner = runners.get(mode) or compile_model(model, mode, target)
        start = time.perf_counter()
        # compile every padded length the timed run will meet
        for length in sorted({padded_length(len(ids) + i, model.config.n_ctx) for i in range(n_tokens)}):
            runner.forward(list(ids) + [0] * (min(length, len(ids) + n_tokens - 1) - len(ids)))
        results["compile_s"][mode] = time.perf_counter() - start
        progress.update(task, description=f"{mode}: decoding")
        start = time.perf_counter()
        got = runner.generate(ids, n_tokens)
        results["ms_per_token"][mode] = (time.perf_counter() - start) * 1e3 / n_tokens
        results["tokens_agree"][mode] = got == expected
    return results


def run(args: argparse.Namespace) -> int:
    from harness.terminal import progress_display

    try:
        from compiler.gpt2 import load_model, resolve_model_dir

        check_device(args.target)
        check_prompt_text(args.prompt)
        with progress_display() as progress:
            model = load_model(resolve_model_dir(args.model, progress=progress if sys.stderr.isatty() else None))
            ids, runner = checked_prompt(model, args.prompt, args.tokens, args.target)
            results = measure(model, ids, args.tokens, args.target, progress, runners={"subgraph": runner})
    except (ValueError, TypeError, OSError, RuntimeError) as err:
        print(f"parity bench: error: {err}", file=sys.stderr)
        return 2
    c = model.config
    out = {"shape": {"n_layer": c.n_layer, "n_embd": c.n_embd, "n_head": c.n_head, "vocab": c.vocab_size, "prompt_tokens": len(ids)},
           "tokens": args.tokens, "target": args.target,
           "ms_per_token": {k: round(v, 2) for k, v in results["ms_per_token"].items()},
           "compile_s": {k: round(v, 2) for k, v in results["compile_s"].items()},
           "tokens_agree": results["tokens_agree"],
           "checkpoint": {"name": model.checkpoint.name, "sha256": model.checkpoint.sha256}}
    if args.target == "gpu":
        from compiler.gpu import memory_cache_stats

        out["gpu_memory_cache"] = memory_cache_stats()  # None: PARITY_GPU_MEMORY_CACHE=0
    if args.json:
        print(json.dumps(out))
        return 0
    from rich.table import Table

    from harness import terminal

    ref = results["ms_per_token"]["reference"]
    table = Table(title=f"GPT-2 {c.n_layer}x{c.n_embd}, {terminal.plural(args.tokens, 'token')}, target {args.target} ({model.checkpoint.name})")
    for col in ("mode", "ms/token (warm)", "speed-up vs reference", "compile s", "tokens agree"):
        table.add_column(col)
    for mode in ("reference", "subgraph", "fused"):
        ms = results["ms_per_token"][mode]
        table.add_row(mode, f"{ms:.1f}", f"{ref / ms:.2f}x", f"{results['compile_s'].get(mode, 0):.1f}" if mode != "reference" else "-",
                      str(results["tokens_agree"].get(mode, "-")))
    terminal.console().print(table)
    return 0
