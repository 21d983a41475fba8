"""Synthetic checkpoints: Hugging Face's on-disk format, GPT-2's initialization statistics,
byte-identical output for the same seed, atomic writes, and the ``parity synth-model`` command."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file

from compiler.gpt2 import synth
from compiler.gpt2.checkpoint import CheckpointError, load_model
from compiler.gpt2.synth import synthesize_checkpoint
from harness import cli

BUNDLED_VOCAB_SHA = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
BUNDLED_MERGES_SHA = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("synth") / "tiny"
    synthesize_checkpoint(path, config="tiny", seed=0)
    return path


def test_same_seed_is_byte_identical_other_seed_differs(tiny, tmp_path):
    again = synthesize_checkpoint(tmp_path / "again", config="tiny", seed=0)
    assert sha256(tmp_path / "again" / "model.safetensors") == sha256(tiny / "model.safetensors") == again.sha256
    other = synthesize_checkpoint(tmp_path / "other", config="tiny", seed=1)
    assert other.sha256 != again.sha256
    assert other.name == "synthetic-tiny-seed1" and again.name == "synthetic-tiny-seed0"


def test_hugging_face_layout(tiny):
    assert sorted(p.name for p in tiny.iterdir()) == [
        "config.json", "merges.txt", "model.safetensors", "parity-checkpoint.json", "vocab.json"]  # fmt: skip
    config = json.loads((tiny / "config.json").read_text())
    assert {k: config[k] for k in ("model_type", "n_layer", "n_head", "n_embd", "n_positions", "n_ctx",
                                   "vocab_size", "activation_function", "layer_norm_epsilon")} == {
        "model_type": "gpt2", "n_layer": 2, "n_head": 4, "n_embd": 48, "n_positions": 64, "n_ctx": 64,
        "vocab_size": 50257, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5}  # fmt: skip
    assert sha256(tiny / "vocab.json") == BUNDLED_VOCAB_SHA
    assert sha256(tiny / "merges.txt") == BUNDLED_MERGES_SHA
    with safe_open(str(tiny / "model.safetensors"), framework="numpy") as handle:
        assert handle.metadata() == {"format": "pt"}
        keys = set(handle.keys())
    per_block = ["ln_1.weight", "ln_1.bias", "attn.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                 "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight",
                 "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"]  # fmt: skip
    expected = {"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"} | {f"h.{i}.{n}" for i in range(2) for n in per_block}
    assert keys == expected
    manifest = json.loads((tiny / "parity-checkpoint.json").read_text())
    assert manifest["sha256"]["model.safetensors"] == sha256(tiny / "model.safetensors")
    assert manifest["seed"] == 0 and manifest["config"] == "tiny" and manifest["source"] == "synthetic"


def test_initialization_statistics(tiny):
    tensors = load_file(str(tiny / "model.safetensors"))
    for name, array in tensors.items():
        assert array.dtype == np.float32, name
        if re.fullmatch(r"h\.\d+\.attn\.bias", name):  # causal mask buffer, as in the real file
            np.testing.assert_array_equal(array, np.tril(np.ones((64, 64), np.float32))[None, None])
        elif array.ndim == 2:
            # N(0, 0.02): with >= 4096 samples the sample std is within a few percent of 0.02.
            assert abs(float(array.std()) - 0.02) < 0.02 * 0.05, name
            assert abs(float(array.mean())) < 0.02 * 0.1, name
            assert float(np.abs(array).max()) < 0.02 * 7, name
        elif name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
            assert np.all(array == np.float32(1)), name
        else:
            assert np.all(array == np.float32(0)), name
    # The tensors are independent draws, not one repeated block.
    assert not np.array_equal(tensors["h.0.mlp.c_fc.weight"], tensors["h.1.mlp.c_fc.weight"])


def test_loads_with_the_real_tokenizer(tiny):
    model = load_model(tiny)
    assert model.tokenizer.encode("Hello world") == [15496, 995]
    assert model.checkpoint.name == "synthetic-tiny-seed0"


def test_existing_directory_is_kept(tiny, tmp_path):
    dest = tmp_path / "taken"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    with pytest.raises(CheckpointError, match="already exists and is not empty"):
        synthesize_checkpoint(dest, config="tiny")
    assert [p.name for p in dest.iterdir()] == ["notes.txt"]
    # exist_ok keeps an identical synthetic checkpoint without rewriting it...
    before = (tiny / "model.safetensors").stat().st_mtime_ns
    assert synthesize_checkpoint(tiny, config="tiny", seed=0, exist_ok=True).sha256 == sha256(tiny / "model.safetensors")
    assert (tiny / "model.safetensors").stat().st_mtime_ns == before
    # ...but never a different one.
    with pytest.raises(CheckpointError):
        synthesize_checkpoint(tiny, config="tiny", seed=2, exist_ok=True)
    # An empty directory is fine to fill.
    empty = tmp_path / "empty"
    empty.mkdir()
    synthesize_checkpoint(empty, config="tiny")
    assert (empty / "model.safetensors").is_file()


def test_failure_leaves_nothing_behind(tmp_path, monkeypatch):
    def broken_write(*args, **kwargs):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(synth, "_write_checkpoint", broken_write)
    with pytest.raises(OSError, match="disk full"):
        synthesize_checkpoint(tmp_path / "out", config="tiny")
    assert list(tmp_path.iterdir()) == []


def test_bad_arguments():
    with pytest.raises(CheckpointError, match="unknown synthetic config 'huge'"):
        synthesize_checkpoint("/nonexistent/x", config="huge")
    with pytest.raises(CheckpointError, match="seed must be a non-negative integer"):
        synthesize_checkpoint("/nonexistent/x", config="tiny", seed=-1)


def test_cli(tmp_path, capsys):
    dest = tmp_path / "cli"
    assert cli.main(["synth-model", str(dest), "--config", "tiny", "--seed", "3"]) == 0
    captured = capsys.readouterr()
    assert f"synthetic-tiny-seed3 sha256={sha256(dest / 'model.safetensors')}" in captured.out
    assert captured.err == ""  # not a terminal: no progress display
    assert cli.main(["synth-model", str(dest), "--config", "tiny", "--seed", "4"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert cli.main(["synth-model", str(dest), "--config", "tiny", "--seed", "4", "--force"]) == 0
    assert "synthetic-tiny-seed4" in capsys.readouterr().out
    assert json.loads((dest / "parity-checkpoint.json").read_text())["seed"] == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli"]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["synth-model", str(tmp_path / "x"), "--config", "huge"])
    assert exit_info.value.code == 2


# ------------------------------------------------------------------ destination checks and leftovers

def test_current_directory_is_refused_clearly(tmp_path, monkeypatch, capsys):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    for extra in ([], ["--force"]):
        assert cli.main(["synth-model", ".", "--config", "tiny", *extra]) == 2
        assert capsys.readouterr().err == (
            f"parity synth-model: error: cannot write the checkpoint into {here}: the directory is in use "
            f"(it is the current directory); give a path that does not exist yet, e.g. {here / 'model'}\n")
    assert list(tmp_path.iterdir()) == [here] and list(here.iterdir()) == []


def test_relative_destination_lands_beside_the_working_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["synth-model", "model", "--config", "tiny"]) == 0
    assert capsys.readouterr().out.endswith(f" -> {tmp_path / 'model'}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_busy_rename_says_the_directory_is_in_use(tmp_path, monkeypatch):
    import errno
    import os

    real_replace = os.replace

    def busy(src, dst):
        if Path(src).name == "checkpoint":  # the final rename of the staging directory
            raise OSError(errno.EBUSY, "Device or resource busy")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", busy)
    dest = tmp_path / "mnt"
    with pytest.raises(CheckpointError) as info:
        synthesize_checkpoint(dest, config="tiny")
    assert str(info.value) == (f"cannot write the checkpoint into {dest}: the directory is in use (a mount point "
                               f"or a working directory); give a path that does not exist yet, e.g. {dest / 'model'}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content", ["file", "dir"])
def test_force_refuses_to_delete_what_is_not_a_checkpoint(tmp_path, capsys, content):
    dest = tmp_path / "precious"
    if content == "file":
        dest.write_text("mine")
        expected = f"{dest} is not a directory; refusing to replace it with a checkpoint"
    else:
        dest.mkdir()
        (dest / "notes.txt").write_text("mine")
        expected = (f"{dest} holds files but no parity-checkpoint.json or config.json, so it is not a checkpoint; "
                    "refusing to delete it (remove it yourself or choose another DIR)")
    assert cli.main(["synth-model", str(dest), "--config", "tiny", "--force"]) == 2
    assert capsys.readouterr().err == f"parity synth-model: error: {expected}\n"
    assert (dest.read_text() if content == "file" else (dest / "notes.txt").read_text()) == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious"]


def test_stale_staging_directories_are_swept(tmp_path):
    import os
    import time

    stale, fresh, other = tmp_path / ".out.tmp-dead", tmp_path / ".out.tmp-live", tmp_path / ".other.tmp-dead"
    for leftover in (stale, fresh, other):
        (leftover / "checkpoint").mkdir(parents=True)
        (leftover / "checkpoint" / "model.safetensors").write_bytes(b"x" * 100)
    two_hours_ago = time.time() - 7200
    for leftover in (stale, other):
        os.utime(leftover, (two_hours_ago, two_hours_ago))
    synthesize_checkpoint(tmp_path / "out", config="tiny")
    # a killed writer's staging is gone; a recent one may be live, and another DIR's is not ours to judge
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.tmp-dead", ".out.tmp-live", "out"]
