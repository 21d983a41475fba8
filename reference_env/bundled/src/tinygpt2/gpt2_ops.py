"""The GPT-2 building blocks as plain NumPy functions."""

from __future__ import annotations

import numpy as np


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    shifted = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return shifted / np.sum(shifted, axis=-1, keepdims=True)


def layer_norm(x, g, b, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    return g * (x - mean) / np.sqrt(variance + eps) + b


def linear(x, w, b):
    return x @ w + b


def ffn(x, c_fc_w, c_fc_b, c_proj_w, c_proj_b):
    return linear(gelu(linear(x, c_fc_w, c_fc_b)), c_proj_w, c_proj_b)


def attention(q, k, v, mask):
    return softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v


def mha(x, c_attn, c_proj, n_head):
    x = linear(x, c_attn.w, c_attn.b)
    qkv = np.split(x, 3, axis=-1)
    heads = [np.split(part, n_head, axis=-1) for part in qkv]
    causal_mask = (1 - np.tri(x.shape[0], dtype=x.dtype)) * -1e10
    outputs = [attention(q, k, v, causal_mask) for q, k, v in zip(*heads)]
    return linear(np.hstack(outputs), c_proj.w, c_proj.b)


def transformer_block(x, mlp, attn, ln_1, ln_2, n_head):
    x = x + mha(layer_norm(x, ln_1.g, ln_1.b), attn.c_attn, attn.c_proj, n_head)
    x = x + ffn(layer_norm(x, ln_2.g, ln_2.b), mlp.c_fc.w, mlp.c_fc.b, mlp.c_proj.w, mlp.c_proj.b)
    return x
