"""Test support: tiny random GPT-2 checkpoints in the on-disk format Parity's tools share
(``config.json`` with Hugging Face GPT-2 keys + ``model.safetensors`` with HF tensor names,
float32, Conv1D layout). The vocabulary stays GPT-2's 50257 so the real tokenizer applies."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

GPT2_VOCAB = 50257


def tiny_config(n_layer: int = 2, n_embd: int = 48, n_head: int = 4, n_positions: int = 64,
                vocab_size: int = GPT2_VOCAB) -> dict:
    return {
        "model_type": "gpt2", "n_layer": n_layer, "n_head": n_head, "n_embd": n_embd,
        "n_positions": n_positions, "n_ctx": n_positions, "vocab_size": vocab_size,
        "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
    }


def tiny_tensors(config: dict, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    C, L = config["n_embd"], config["n_layer"]

    def normal(*shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    tensors = {
        "wte.weight": normal(config["vocab_size"], C, scale=0.1),
        "wpe.weight": normal(config["n_positions"], C, scale=0.05),
        "ln_f.weight": (1 + normal(C, scale=0.1)), "ln_f.bias": normal(C),
    }
    for i in range(L):
        tensors.update({
            f"h.{i}.ln_1.weight": 1 + normal(C, scale=0.1), f"h.{i}.ln_1.bias": normal(C),
            f"h.{i}.attn.c_attn.weight": normal(C, 3 * C, scale=0.2), f"h.{i}.attn.c_attn.bias": normal(3 * C),
            f"h.{i}.attn.c_proj.weight": normal(C, C, scale=0.2), f"h.{i}.attn.c_proj.bias": normal(C),
            f"h.{i}.ln_2.weight": 1 + normal(C, scale=0.1), f"h.{i}.ln_2.bias": normal(C),
            f"h.{i}.mlp.c_fc.weight": normal(C, 4 * C, scale=0.2), f"h.{i}.mlp.c_fc.bias": normal(4 * C),
            f"h.{i}.mlp.c_proj.weight": normal(4 * C, C, scale=0.1), f"h.{i}.mlp.c_proj.bias": normal(C),
            # HF stores the causal mask as a buffer; readers must ignore it.
            f"h.{i}.attn.bias": np.tril(np.ones((config["n_positions"],) * 2, dtype=np.float32))[None, None],
        })
    return tensors


def write_tiny_checkpoint(model_dir: Path, seed: int = 0, **config_overrides) -> Path:
    """Write a random tiny GPT-2 to ``model_dir`` (config.json + model.safetensors)."""
    model_dir = Path(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    config = tiny_config(**config_overrides)
    tensors = tiny_tensors(config, seed)
    fd, tmp = tempfile.mkstemp(dir=model_dir, suffix=".safetensors")
    os.close(fd)
    save_file(tensors, tmp)
    os.replace(tmp, model_dir / "model.safetensors")
    (model_dir / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    return model_dir
