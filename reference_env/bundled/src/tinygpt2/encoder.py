"""GPT-2's byte-level BPE: text to token ids and back, from encoder.json and vocab.bpe."""

from __future__ import annotations

import json
import os
from functools import lru_cache

import regex as re

# GPT-2's pre-tokenizer: contractions, letter runs, digit runs, other runs, whitespace.
PRETOKEN_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


@lru_cache
def bytes_to_unicode() -> dict[int, str]:
    """A reversible map from every byte to a printable character (BPE works on these characters)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in chars)))


def get_pairs(word: tuple[str, ...]) -> set[tuple[str, str]]:
    return {(a, b) for a, b in zip(word, word[1:])}


class Encoder:
    def __init__(self, encoder: dict[str, int], bpe_merges: list[tuple[str, str]], errors: str = "replace"):
        self.encoder = encoder
        self.decoder = {v: k for k, v in encoder.items()}
        self.errors = errors
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}
        self.bpe_ranks = {pair: rank for rank, pair in enumerate(bpe_merges)}
        self.cache: dict[str, str] = {}
        self.pattern = re.compile(PRETOKEN_PATTERN)

    def bpe(self, token: str) -> str:
        if token in self.cache:
            return self.cache[token]
        word = tuple(token)
        pairs = get_pairs(word)
        while pairs:
            best = min(pairs, key=lambda pair: self.bpe_ranks.get(pair, float("inf")))
            if best not in self.bpe_ranks:
                break
            first, second = best
            merged: list[str] = []
            i = 0
            while i < len(word):
                if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = tuple(merged)
            if len(word) == 1:
                break
            pairs = get_pairs(word)
        result = " ".join(word)
        self.cache[token] = result
        return result

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for token in self.pattern.findall(text):
            chars = "".join(self.byte_encoder[b] for b in token.encode("utf-8"))
            ids.extend(self.encoder[piece] for piece in self.bpe(chars).split(" "))
        return ids

    def decode(self, tokens) -> str:
        chars = "".join(self.decoder[int(t)] for t in tokens)
        return bytearray(self.byte_decoder[c] for c in chars).decode("utf-8", errors=self.errors)


def get_encoder(model_name: str, models_dir: str) -> Encoder:
    """The encoder whose encoder.json and vocab.bpe sit in ``models_dir`` (``model_name`` names the model size)."""
    with open(os.path.join(models_dir, "encoder.json"), encoding="utf-8") as f:
        encoder = json.load(f)
    with open(os.path.join(models_dir, "vocab.bpe"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    merges = [tuple(line.split()) for line in lines[1:] if line.strip()]
    return Encoder(encoder=encoder, bpe_merges=merges)
