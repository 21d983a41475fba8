"""Library formulas, written as plain NumPy-style formulas: the compiler never
needs to know their names. They run under NumPy on arrays and trace under
``compiler.jit`` on tensors, with the same dtypes either way."""

from __future__ import annotations

import numpy as np


def gelu(x):
    """GELU, tanh approximation (GPT-2's ``gelu_new``)."""
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    """Numerically stable softmax over the last axis."""
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def layer_norm(x, g, b, eps: float = 1e-5):
    """Layer norm over the last axis with the centred population variance."""
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    return g * (x - mean) / np.sqrt(variance + eps) + b


def linear(x, w, b):
    """Affine map in GPT-2's Conv1D layout: ``x @ w + b``."""
    return x @ w + b


def attention(q, k, v, mask):
    """Scaled dot-product attention with an additive mask."""
    return softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v


def causal_mask(n: int, dtype=np.float32):
    """Additive causal mask: 0 on and below the diagonal, a large negative number above."""
    return (1 - np.tri(n, dtype=dtype)) * -1e10


def feedforward(x, c_fc_w, c_fc_b, c_proj_w, c_proj_b):
    """GPT-2's position-wise MLP: project up, GELU, project down."""
    return linear(gelu(linear(x, c_fc_w, c_fc_b)), c_proj_w, c_proj_b)
