"""GPT-2 as one self-contained function: heads by reshape/transpose, a -inf causal mask."""

from __future__ import annotations

import numpy as np


def gpt2(inputs, params, n_head):
    def norm(x, p, eps=1e-5):
        mean = np.mean(x, axis=-1, keepdims=True)
        return p.g * (x - mean) / np.sqrt(np.var(x, axis=-1, keepdims=True) + eps) + p.b

    x = params.wte[inputs] + params.wpe[range(len(inputs))]
    T, C = x.shape
    hd = C // n_head
    for block in params.blocks:
        h = norm(x, block.ln_1) @ block.attn.c_attn.w + block.attn.c_attn.b
        q, k, v = (part.reshape(T, n_head, hd).transpose(1, 0, 2) for part in np.split(h, 3, axis=-1))
        mask = np.triu(np.ones((T, T), dtype=h.dtype) * -np.inf, k=1)
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + mask
        scores = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        weights = scores / np.sum(scores, axis=-1, keepdims=True)
        merged = (weights @ v).transpose(1, 0, 2).reshape(T, C)
        x = x + (merged @ block.attn.c_proj.w + block.attn.c_proj.b)
        h = norm(x, block.ln_2) @ block.mlp.c_fc.w + block.mlp.c_fc.b
        h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))
        x = x + (h @ block.mlp.c_proj.w + block.mlp.c_proj.b)
    return norm(x, params.ln_f) @ params.wte.T
