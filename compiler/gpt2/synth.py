"""Deterministic synthetic GPT-2 checkpoints in exactly Hugging Face's on-disk layout, the
offline default when no real weights can be had. Weights are N(0, 0.02) float32 draws
from ``np.random.default_rng(seed)`` in a fixed tensor order, biases 0, layer-norm gains 1
and biases 0 (as GPT-2 initializes); the file also carries the causal-mask buffers the
real file has. The same (config, seed) always gives a byte-identical model.safetensors.
The directory is staged beside its destination and renamed into place; the staging
directories of writers killed midway are swept once an hour old."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from compiler.gpt2.checkpoint import (
    CONFIG_FILE,
    MERGES_FILE,
    VOCAB_FILE,
    WEIGHTS_FILE,
    CheckpointError,
    CheckpointInfo,
    apply_umask_permissions,
    build_manifest,
    check_destination,
    checkpoint_info,
    expected_shapes,
    is_complete_checkpoint,
    is_occupied,
    move_into_place,
    read_manifest,
    resolve_destination,
    staging_prefix,
    sweep_stale_staging,
    write_manifest,
)
from compiler.gpt2.config import PRESETS, GPT2Config
from compiler.gpt2.tokenizer import bundled_tokenizer_files

WEIGHT_STD = 0.02


def synthetic_name(config: str, seed: int) -> str:
    return f"synthetic-{config}-seed{seed}"


def synthetic_tensors(config: GPT2Config, seed: int) -> Iterator[tuple[str, np.ndarray]]:
    """(name, tensor) in file order; weight matrices and embeddings are drawn in this order from one generator."""
    rng = np.random.default_rng(seed)
    std = np.float32(WEIGHT_STD)
    for name, shape in expected_shapes(config).items():
        if len(shape) == 2:  # embeddings and Conv1D weights
            yield name, rng.standard_normal(shape, dtype=np.float32) * std
        elif name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
            yield name, np.ones(shape, dtype=np.float32)
        else:  # every bias
            yield name, np.zeros(shape, dtype=np.float32)
    # The causal-mask buffers Hugging Face's GPT-2 file carries (ignored when loading, kept for fidelity).
    mask = np.tril(np.ones((config.n_ctx, config.n_ctx), dtype=np.float32))[None, None]
    for i in range(config.n_layer):
        yield f"h.{i}.attn.bias", mask


@contextlib.contextmanager
def progress_task(progress: Any, description: str, total: int):
    """Yields ``advance(n=1)``. ``progress``: falsy -> silent; True -> a rich display on stderr;
    a ``rich.progress.Progress`` -> a task on that display."""
    if not progress:
        yield lambda n=1: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    if isinstance(progress, Progress):
        task = progress.add_task(description, total=total)
        yield lambda n=1: progress.advance(task, n)
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=False) as display:
        task = display.add_task(description, total=total)
        yield lambda n=1: display.advance(task, n)


def _matches(dest: Path, config_name: str, seed: int) -> bool:
    manifest = read_manifest(dest) or {}
    return manifest.get("source") == "synthetic" and manifest.get("config") == config_name and manifest.get("seed") == seed


def synthesize_checkpoint(
    dest: str | Path,
    config: str = "gpt2-small",
    seed: int = 0,
    progress: Any = None,
    exist_ok: bool = False,
    overwrite: bool = False,
) -> CheckpointInfo:
    """Write a synthetic checkpoint directory at ``dest`` (atomically: a temporary directory renamed into place).

    An existing non-empty ``dest`` is an error unless ``overwrite`` (replace it) or ``exist_ok`` (keep it when it
    already is the same synthetic checkpoint)."""
    if config not in PRESETS:
        raise CheckpointError(f"unknown synthetic config {config!r}; choose one of {', '.join(PRESETS)}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise CheckpointError(f"seed must be a non-negative integer, got {seed!r}")
    dest = resolve_destination(dest)
    check_destination(dest, overwrite)
    if is_occupied(dest) and not overwrite:
        if exist_ok and is_complete_checkpoint(dest) and _matches(dest, config, seed):
            return checkpoint_info(dest)
        raise CheckpointError(f"{dest} already exists and is not empty (pass --force to replace it)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_staging(dest)
    name = synthetic_name(config, seed)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=staging_prefix(dest)) as tmp:
        staging = Path(tmp) / "checkpoint"
        staging.mkdir()
        _write_checkpoint(staging, PRESETS[config], seed, progress)
        write_manifest(staging, build_manifest(staging, name=name, source="synthetic", config=config, seed=seed))
        apply_umask_permissions(staging)
        move_into_place(staging, dest, overwrite=overwrite, accept_existing=lambda: exist_ok and _matches(dest, config, seed))
    return checkpoint_info(dest)


def _write_checkpoint(staging: Path, config: GPT2Config, seed: int, progress: Any) -> None:
    from safetensors.numpy import save_file

    (staging / CONFIG_FILE).write_text(json.dumps(config.to_hf_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tokenizer_files = bundled_tokenizer_files(verify=True)
    shutil.copyfile(tokenizer_files.vocab, staging / VOCAB_FILE)
    shutil.copyfile(tokenizer_files.merges, staging / MERGES_FILE)
    total = len(expected_shapes(config)) + config.n_layer + 1
    with progress_task(progress, f"synthesizing {config.n_layer}-layer GPT-2 (width {config.n_embd})", total) as advance:
        tensors = {}
        for name, tensor in synthetic_tensors(config, seed):
            tensors[name] = tensor
            advance()
        save_file(tensors, str(staging / WEIGHTS_FILE), metadata={"format": "pt"})
        advance()
