"""GPT-2 hyperparameters: the ``GPT2Config`` read from a Hugging Face ``config.json``,
the presets the synthetic checkpoints use, and ``CheckpointError``. Only the GPT-2
formula this project computes is accepted (``gelu_new``, layer-norm epsilon 1e-5,
scaled attention, tied embeddings); any config asking for another one is rejected
with an error naming the field, never silently run with the wrong formula."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUPPORTED_ACTIVATION = "gelu_new"
SUPPORTED_LAYER_NORM_EPSILON = 1e-5


class CheckpointError(ValueError):
    """A checkpoint directory, config or weight file that cannot be used as GPT-2."""


@dataclass(frozen=True)
class GPT2Config:
    """GPT-2 hyperparameters; ``n_ctx`` is Hugging Face's ``n_positions`` (the wpe length)."""

    n_layer: int
    n_head: int
    n_embd: int
    n_ctx: int
    vocab_size: int
    layer_norm_epsilon: float = SUPPORTED_LAYER_NORM_EPSILON
    activation_function: str = SUPPORTED_ACTIVATION

    def __post_init__(self) -> None:
        validate_config(self)

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    @property
    def n_inner(self) -> int:
        """Width of the feed-forward hidden layer (GPT-2 always uses 4 * n_embd)."""
        return 4 * self.n_embd

    @classmethod
    def from_hf_dict(cls, raw: dict[str, Any], source: str = "config.json") -> "GPT2Config":
        """Build a config from the keys of a Hugging Face GPT-2 ``config.json``."""
        if not isinstance(raw, dict):
            raise CheckpointError(f"{source}: expected a JSON object, got {type(raw).__name__}")
        _reject_other_formulas(raw, source)
        n_positions = raw.get("n_positions", raw.get("n_ctx"))
        if n_positions is None:
            raise CheckpointError(f"{source}: missing field 'n_positions' (context length)")
        if "n_ctx" in raw and "n_positions" in raw and raw["n_ctx"] != raw["n_positions"]:
            raise CheckpointError(
                f"{source}: field 'n_ctx' ({raw['n_ctx']!r}) differs from 'n_positions' ({raw['n_positions']!r})"
            )
        values: dict[str, Any] = {"n_ctx": n_positions}
        for name in ("n_layer", "n_head", "n_embd", "vocab_size", "layer_norm_epsilon", "activation_function"):
            if name not in raw:
                raise CheckpointError(f"{source}: missing field {name!r}")
            values[name] = raw[name]
        try:
            return cls(**values)
        except CheckpointError as err:
            raise CheckpointError(f"{source}: {err}") from None

    def to_hf_dict(self) -> dict[str, Any]:
        """The Hugging Face ``config.json`` content for this config (GPT-2's own defaults elsewhere)."""
        return {
            "activation_function": self.activation_function,
            "architectures": ["GPT2LMHeadModel"],
            "attn_pdrop": 0.1,
            "bos_token_id": 50256,
            "embd_pdrop": 0.1,
            "eos_token_id": 50256,
            "initializer_range": 0.02,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "model_type": "gpt2",
            "n_ctx": self.n_ctx,
            "n_embd": self.n_embd,
            "n_head": self.n_head,
            "n_inner": None,
            "n_layer": self.n_layer,
            "n_positions": self.n_ctx,
            "resid_pdrop": 0.1,
            "scale_attn_weights": True,
            "tie_word_embeddings": True,
            "vocab_size": self.vocab_size,
        }


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_config(config: GPT2Config) -> None:
    """Raise ``CheckpointError`` naming the first field this project cannot run."""
    for name in ("n_layer", "n_head", "n_embd", "n_ctx", "vocab_size"):
        value = getattr(config, name)
        label = "n_positions" if name == "n_ctx" else name
        if not _is_int(value) or value <= 0:
            raise CheckpointError(f"field {label!r} must be a positive integer, got {value!r}")
    if config.n_embd % config.n_head != 0:
        raise CheckpointError(
            f"field 'n_embd' ({config.n_embd}) must be divisible by field 'n_head' ({config.n_head})"
        )
    if config.activation_function != SUPPORTED_ACTIVATION:
        raise CheckpointError(
            f"field 'activation_function' is {config.activation_function!r}; only {SUPPORTED_ACTIVATION!r} "
            "(GPT-2's tanh-approximated GELU) is supported"
        )
    eps = config.layer_norm_epsilon
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or float(eps) != SUPPORTED_LAYER_NORM_EPSILON:
        raise CheckpointError(
            f"field 'layer_norm_epsilon' is {eps!r}; only {SUPPORTED_LAYER_NORM_EPSILON!r} is supported"
        )


# Hugging Face GPT-2 options that would change the formula: (field, value GPT-2 uses, default when absent).
_FORMULA_FLAGS = (
    ("scale_attn_weights", True),
    ("scale_attn_by_inverse_layer_idx", False),
    ("add_cross_attention", False),
    ("tie_word_embeddings", True),
)


def _reject_other_formulas(raw: dict[str, Any], source: str) -> None:
    model_type = raw.get("model_type", "gpt2")
    if model_type != "gpt2":
        raise CheckpointError(f"{source}: field 'model_type' is {model_type!r}; only 'gpt2' is supported")
    for name, expected in _FORMULA_FLAGS:
        if name in raw and raw[name] != expected:
            raise CheckpointError(f"{source}: field {name!r} is {raw[name]!r}; only {expected!r} is supported")
    n_inner = raw.get("n_inner")
    n_embd = raw.get("n_embd")
    if n_inner is not None and (not _is_int(n_embd) or n_inner != 4 * n_embd):
        raise CheckpointError(f"{source}: field 'n_inner' is {n_inner!r}; only null (4 * n_embd) is supported")


def read_config(path: Path) -> GPT2Config:
    """Read and validate a Hugging Face GPT-2 ``config.json``."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path.parent}: missing {path.name}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{path}: not a readable JSON config ({err})") from None
    return GPT2Config.from_hf_dict(raw, source=str(path))


# Presets for synthetic checkpoints. The vocabulary stays GPT-2's so the real tokenizer applies.
PRESETS: dict[str, GPT2Config] = {
    "gpt2-small": GPT2Config(n_layer=12, n_head=12, n_embd=768, n_ctx=1024, vocab_size=50257),
    # head size 12: never a padded sequence length (a power of two), so an axis mix-up between
    # the sequence and head axes (a concat, a folded transpose) cannot hide behind a square shape
    "tiny": GPT2Config(n_layer=2, n_head=4, n_embd=48, n_ctx=64, vocab_size=50257),
}
