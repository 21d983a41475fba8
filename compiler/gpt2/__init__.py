"""GPT-2 on the compiler: checkpoints and tokenizer (``checkpoint``, ``tokenizer``,
``synth``, ``fetch``) and the compiled forward passes in subgraph and fused modes
(``model``)."""

from compiler.gpt2.checkpoint import (
    BlockParams, CheckpointInfo, GPT2Model, GPT2Params, LayerNormParams, LinearParams, load_model, resolve_model_dir,
)
from compiler.gpt2.config import CheckpointError, GPT2Config
from compiler.gpt2.model import MODES, Completion, compile_model, generate_text, numpy_forward
from compiler.gpt2.tokenizer import GPT2Tokenizer, load_tokenizer

__all__ = [
    "BlockParams", "CheckpointInfo", "GPT2Model", "GPT2Params", "LayerNormParams", "LinearParams", "load_model",
    "resolve_model_dir", "CheckpointError", "GPT2Config", "MODES", "Completion", "compile_model", "generate_text",
    "numpy_forward", "GPT2Tokenizer", "load_tokenizer",
]
