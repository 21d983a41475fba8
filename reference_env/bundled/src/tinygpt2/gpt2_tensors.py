"""GPT-2 parameters as dataclasses, and a loader for the published GPT-2 weights."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import requests
from safetensors.numpy import load_file

WEIGHTS_URL = "https://huggingface.co/openai-community/gpt2/resolve/main/model.safetensors"


@dataclass
class LayerNormParams:
    g: np.ndarray
    b: np.ndarray


@dataclass
class LinearParams:
    w: np.ndarray
    b: np.ndarray


@dataclass
class MLPParams:
    c_fc: LinearParams
    c_proj: LinearParams


@dataclass
class AttentionParams:
    c_attn: LinearParams
    c_proj: LinearParams


@dataclass
class TransformerBlockParams:
    ln_1: LayerNormParams
    ln_2: LayerNormParams
    mlp: MLPParams
    attn: AttentionParams


@dataclass
class ModelParams:
    wte: np.ndarray
    wpe: np.ndarray
    blocks: list[TransformerBlockParams]
    ln_f: LayerNormParams


@dataclass
class HParams:
    n_layer: int
    n_head: int
    n_ctx: int


GPT2_SMALL = HParams(n_layer=12, n_head=12, n_ctx=1024)


def _download(url: str, path: str) -> None:
    response = requests.get(url, stream=True, timeout=60)
    response.raise_for_status()
    partial = path + ".part"
    with open(partial, "wb") as f:
        for chunk in response.iter_content(chunk_size=1 << 20):
            f.write(chunk)
    os.replace(partial, path)


def _linear(tensors: dict, prefix: str) -> LinearParams:
    return LinearParams(w=tensors[f"{prefix}.weight"], b=tensors[f"{prefix}.bias"])


def _layer_norm(tensors: dict, prefix: str) -> LayerNormParams:
    return LayerNormParams(g=tensors[f"{prefix}.weight"], b=tensors[f"{prefix}.bias"])


def params_from_tensors(tensors: dict, n_layer: int) -> ModelParams:
    """Hugging Face GPT-2 tensor names to ModelParams (Conv1D weights are already (in, out))."""
    blocks = [
        TransformerBlockParams(
            ln_1=_layer_norm(tensors, f"h.{i}.ln_1"),
            ln_2=_layer_norm(tensors, f"h.{i}.ln_2"),
            mlp=MLPParams(c_fc=_linear(tensors, f"h.{i}.mlp.c_fc"), c_proj=_linear(tensors, f"h.{i}.mlp.c_proj")),
            attn=AttentionParams(
                c_attn=_linear(tensors, f"h.{i}.attn.c_attn"), c_proj=_linear(tensors, f"h.{i}.attn.c_proj")
            ),
        )
        for i in range(n_layer)
    ]
    return ModelParams(
        wte=tensors["wte.weight"], wpe=tensors["wpe.weight"], blocks=blocks, ln_f=_layer_norm(tensors, "ln_f")
    )


def load_gpt2_weights(models_dir: str = "model") -> tuple[HParams, ModelParams]:
    """Download (once) and load the 124M GPT-2 weights. Needs the network."""
    os.makedirs(models_dir, exist_ok=True)
    path = os.path.join(models_dir, "model.safetensors")
    if not os.path.exists(path):
        _download(WEIGHTS_URL, path)
    tensors = load_file(path)
    return GPT2_SMALL, params_from_tensors(tensors, GPT2_SMALL.n_layer)
