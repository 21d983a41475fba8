"""GPT-2 small's forward pass written out block by block, greedy generation and a prompt loop."""

from __future__ import annotations

import readline  # noqa: F401  (line editing for the interactive prompt)

import numpy as np

from .gpt2_ops import layer_norm, transformer_block


def gpt2(inputs, params, n_head):
    x = params.wte[inputs] + params.wpe[range(len(inputs))]
    b = params.blocks
    x = transformer_block(x, b[0].mlp, b[0].attn, b[0].ln_1, b[0].ln_2, n_head)
    x = transformer_block(x, b[1].mlp, b[1].attn, b[1].ln_1, b[1].ln_2, n_head)
    x = transformer_block(x, b[2].mlp, b[2].attn, b[2].ln_1, b[2].ln_2, n_head)
    x = transformer_block(x, b[3].mlp, b[3].attn, b[3].ln_1, b[3].ln_2, n_head)
    x = transformer_block(x, b[4].mlp, b[4].attn, b[4].ln_1, b[4].ln_2, n_head)
    x = transformer_block(x, b[5].mlp, b[5].attn, b[5].ln_1, b[5].ln_2, n_head)
    x = transformer_block(x, b[6].mlp, b[6].attn, b[6].ln_1, b[6].ln_2, n_head)
    x = transformer_block(x, b[7].mlp, b[7].attn, b[7].ln_1, b[7].ln_2, n_head)
    x = transformer_block(x, b[8].mlp, b[8].attn, b[8].ln_1, b[8].ln_2, n_head)
    x = transformer_block(x, b[9].mlp, b[9].attn, b[9].ln_1, b[9].ln_2, n_head)
    x = transformer_block(x, b[10].mlp, b[10].attn, b[10].ln_1, b[10].ln_2, n_head)
    x = transformer_block(x, b[11].mlp, b[11].attn, b[11].ln_1, b[11].ln_2, n_head)
    x = layer_norm(x, params.ln_f.g, params.ln_f.b)
    return x @ params.wte.T


def generate_tokens(inputs, params, n_head, n_tokens_to_generate, encoder=None):
    inputs = list(inputs)
    start = len(inputs)
    for _ in range(n_tokens_to_generate):
        logits = gpt2(inputs, params, n_head)
        next_id = int(np.argmax(logits[-1]))
        inputs.append(next_id)
        if encoder is not None:
            print(encoder.decode([next_id]), end="", flush=True)
    if encoder is not None:
        print()
    return inputs[start:]


def main(n_tokens_to_generate: int = 40, models_dir: str = "model"):
    from .encoder import get_encoder
    from .gpt2_tensors import load_gpt2_weights

    encoder = get_encoder("124M", models_dir)
    hparams, params = load_gpt2_weights(models_dir)
    while True:
        try:
            prompt = input("> ")
        except EOFError:
            break
        generate_tokens(encoder.encode(prompt), params, hparams.n_head, n_tokens_to_generate, encoder)


if __name__ == "__main__":
    main()
