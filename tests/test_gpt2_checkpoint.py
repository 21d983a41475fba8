"""load_model: parameters land with the shapes and dtypes the config implies, the Hugging Face
variants (``transformer.`` prefix, mask buffers) are accepted, and every invalid checkpoint is
rejected with an error naming what is wrong. Also resolve_model_dir's default-model order."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from compiler.gpt2 import checkpoint as ckpt
from compiler.gpt2.checkpoint import (
    CheckpointError,
    GPT2Model,
    checkpoint_info,
    load_model,
    resolve_model_dir,
)
from compiler.gpt2.config import GPT2Config
from compiler.gpt2.synth import synthesize_checkpoint

# The tiny preset, written out independently of the code under test.
D, V, T, L = 48, 50257, 64, 2


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ckpt") / "tiny"
    synthesize_checkpoint(path, config="tiny", seed=0)
    return path


def variant(tiny_dir: Path, tmp_path: Path, tensors=None, config=None) -> Path:
    """A copy of the tiny checkpoint with replaced tensors and/or config fields (and no manifest,
    since its hashes would no longer hold)."""
    dest = tmp_path / "variant"
    shutil.copytree(tiny_dir, dest)
    (dest / "parity-checkpoint.json").unlink()
    if tensors is not None:
        save_file(tensors, str(dest / "model.safetensors"), metadata={"format": "pt"})
    if config is not None:
        raw = json.loads((dest / "config.json").read_text())
        raw.update(config)
        (dest / "config.json").write_text(json.dumps(raw))
    return dest


def tiny_tensors(tiny_dir: Path) -> dict[str, np.ndarray]:
    return load_file(str(tiny_dir / "model.safetensors"))


def test_load_shapes_dtypes_and_values(tiny_dir):
    model = load_model(tiny_dir)
    assert isinstance(model, GPT2Model)
    assert model.config == GPT2Config(n_layer=L, n_head=4, n_embd=D, n_ctx=T, vocab_size=V,
                                      layer_norm_epsilon=1e-5, activation_function="gelu_new")  # fmt: skip
    p = model.params
    raw = tiny_tensors(tiny_dir)
    expected = {"wte": (p.wte, (V, D), "wte.weight"), "wpe": (p.wpe, (T, D), "wpe.weight"),
                "ln_f.g": (p.ln_f.g, (D,), "ln_f.weight"), "ln_f.b": (p.ln_f.b, (D,), "ln_f.bias")}  # fmt: skip
    assert len(p.blocks) == L
    for i, block in enumerate(p.blocks):
        h = f"h.{i}."
        expected |= {
            h + "ln_1.g": (block.ln_1.g, (D,), h + "ln_1.weight"),
            h + "ln_1.b": (block.ln_1.b, (D,), h + "ln_1.bias"),
            h + "c_attn.w": (block.attn_c_attn.w, (D, 3 * D), h + "attn.c_attn.weight"),
            h + "c_attn.b": (block.attn_c_attn.b, (3 * D,), h + "attn.c_attn.bias"),
            h + "attn.c_proj.w": (block.attn_c_proj.w, (D, D), h + "attn.c_proj.weight"),
            h + "attn.c_proj.b": (block.attn_c_proj.b, (D,), h + "attn.c_proj.bias"),
            h + "ln_2.g": (block.ln_2.g, (D,), h + "ln_2.weight"),
            h + "ln_2.b": (block.ln_2.b, (D,), h + "ln_2.bias"),
            h + "c_fc.w": (block.mlp_c_fc.w, (D, 4 * D), h + "mlp.c_fc.weight"),
            h + "c_fc.b": (block.mlp_c_fc.b, (4 * D,), h + "mlp.c_fc.bias"),
            h + "mlp.c_proj.w": (block.mlp_c_proj.w, (4 * D, D), h + "mlp.c_proj.weight"),
            h + "mlp.c_proj.b": (block.mlp_c_proj.b, (D,), h + "mlp.c_proj.bias"),
        }
    for label, (array, shape, key) in expected.items():
        assert array.shape == shape, label
        assert array.dtype == np.float32, label
        np.testing.assert_array_equal(array, raw[key], err_msg=label)
    # The same array object is not reused across blocks (each block has its own weights).
    assert not np.array_equal(p.blocks[0].attn_c_attn.w, p.blocks[1].attn_c_attn.w)


def test_checkpoint_name_and_sha256(tiny_dir, tmp_path):
    info = load_model(tiny_dir).checkpoint
    assert info.name == "synthetic-tiny-seed0"
    assert info.sha256 == hashlib.sha256((tiny_dir / "model.safetensors").read_bytes()).hexdigest()
    assert info.path == tiny_dir
    # Without a manifest the directory name is the checkpoint's name.
    assert checkpoint_info(variant(tiny_dir, tmp_path)).name == "variant"


def test_modified_weights_disagree_with_manifest(tiny_dir, tmp_path):
    dest = tmp_path / "tampered"
    shutil.copytree(tiny_dir, dest)
    tensors = tiny_tensors(tiny_dir)
    tensors["ln_f.bias"] = tensors["ln_f.bias"] + np.float32(1)
    save_file(tensors, str(dest / "model.safetensors"))
    with pytest.raises(CheckpointError, match="differs from .* recorded in parity-checkpoint.json"):
        load_model(dest)


@pytest.mark.parametrize("file", ["vocab.json", "merges.txt", "config.json"])
def test_every_file_the_manifest_records_is_checked(tiny_dir, tmp_path, file):
    """An edited vocab.json reads prompts differently under the same name and weights hash."""
    dest = tmp_path / "edited"
    shutil.copytree(tiny_dir, dest)
    assert file in json.loads((dest / "parity-checkpoint.json").read_text())["sha256"]
    with open(dest / file, "a", encoding="utf-8") as handle:
        handle.write("\n")
    with pytest.raises(CheckpointError, match=f"{file}: sha256 .* differs from .* recorded in parity-checkpoint.json"):
        load_model(dest)
    (dest / file).unlink()
    with pytest.raises(CheckpointError, match=rf"(?:{file}: .*missing|: missing {file}$)"):
        load_model(dest)


def test_hugging_face_variants_are_accepted(tiny_dir, tmp_path):
    raw = tiny_tensors(tiny_dir)
    # Keep the first block's mask buffer, drop the second's, add masked_bias scalars: all ignored.
    prefixed = {f"transformer.{k}": v for k, v in raw.items() if k != "h.1.attn.bias"}
    assert raw["h.0.attn.bias"].shape == (1, 1, T, T)
    prefixed |= {f"transformer.h.{i}.attn.masked_bias": np.array(-1e4, np.float32) for i in range(L)}
    prefixed["lm_head.weight"] = raw["wte.weight"]  # tied, as GPT2LMHeadModel saves it
    model = load_model(variant(tiny_dir, tmp_path, tensors=prefixed))
    np.testing.assert_array_equal(model.params.blocks[1].mlp_c_fc.w, raw["h.1.mlp.c_fc.weight"])


def _with(raw, **changes):
    out = dict(raw)
    for key, value in changes.items():
        key = key.replace("__", ".")
        if value is None:
            del out[key]
        else:
            out[key] = value
    return out


TENSOR_CASES = {
    "wrong shape": (lambda r: _with(r, **{"h.1.mlp.c_fc.weight": r["h.1.mlp.c_fc.weight"].T.copy()}),
                    r"tensor 'h\.1\.mlp\.c_fc\.weight' has shape \(192, 48\), expected \(48, 192\)"),
    "float16": (lambda r: _with(r, **{"h.0.attn.c_attn.weight": r["h.0.attn.c_attn.weight"].astype(np.float16)}),
                r"tensor 'h\.0\.attn\.c_attn\.weight' has dtype float16; float32 is required"),
    "float64": (lambda r: _with(r, **{"wpe.weight": r["wpe.weight"].astype(np.float64)}),
                r"tensor 'wpe\.weight' has dtype float64"),
    "missing tensor": (lambda r: _with(r, **{"ln_f.bias": None}), r"missing tensor 'ln_f\.bias'"),
    "unexpected tensor": (lambda r: _with(r, **{"h.2.ln_1.weight": np.ones(D, np.float32)}),
                          r"unexpected tensor 'h\.2\.ln_1\.weight' for a 2-layer GPT-2"),
    "untied lm_head": (lambda r: _with(r, **{"lm_head.weight": np.zeros((V, D), np.float32)}),
                       r"'lm_head\.weight' is not tied"),
    "wrong vocab rows": (lambda r: _with(r, **{"wte.weight": r["wte.weight"][:-1].copy()}),
                         r"tensor 'wte\.weight' has shape \(50256, 48\), expected \(50257, 48\)"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(TENSOR_CASES))
def test_invalid_tensors_are_rejected(tiny_dir, tmp_path, case):
    make, message = TENSOR_CASES[case]
    with pytest.raises(CheckpointError, match=message):
        load_model(variant(tiny_dir, tmp_path, tensors=make(tiny_tensors(tiny_dir))))


CONFIG_CASES = {
    "n_embd not divisible by n_head": ({"n_head": 5}, r"'n_embd' \(48\) must be divisible by field 'n_head' \(5\)"),
    "relu": ({"activation_function": "relu"}, r"field 'activation_function' is 'relu'"),
    "epsilon 1e-6": ({"layer_norm_epsilon": 1e-6}, r"field 'layer_norm_epsilon' is 1e-06"),
    "zero layers": ({"n_layer": 0}, r"field 'n_layer' must be a positive integer"),
    "float width": ({"n_embd": 64.0}, r"field 'n_embd' must be a positive integer"),
    "n_ctx differs": ({"n_ctx": 32}, r"field 'n_ctx' \(32\) differs from 'n_positions' \(64\)"),
    "other model": ({"model_type": "gpt_neo"}, r"field 'model_type' is 'gpt_neo'"),
    "inverse layer scaling": ({"scale_attn_by_inverse_layer_idx": True}, r"field 'scale_attn_by_inverse_layer_idx'"),
    "unscaled attention": ({"scale_attn_weights": False}, r"field 'scale_attn_weights'"),
    "other inner width": ({"n_inner": 100}, r"field 'n_inner' is 100"),
    # A config whose shapes disagree with the file: caught by the per-tensor shape check.
    "wider config": ({"n_embd": 128}, r"tensor 'wte\.weight' has shape \(50257, 48\), expected \(50257, 128\)"),
}


@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_invalid_configs_are_rejected(tiny_dir, tmp_path, case):
    fields, message = CONFIG_CASES[case]
    with pytest.raises(CheckpointError, match=message):
        load_model(variant(tiny_dir, tmp_path, config=fields))


def test_missing_config_field(tiny_dir, tmp_path):
    dest = variant(tiny_dir, tmp_path)
    raw = json.loads((dest / "config.json").read_text())
    del raw["vocab_size"]
    (dest / "config.json").write_text(json.dumps(raw))
    with pytest.raises(CheckpointError, match="missing field 'vocab_size'"):
        load_model(dest)


def test_truncated_safetensors(tiny_dir, tmp_path):
    dest = variant(tiny_dir, tmp_path)
    data = (dest / "model.safetensors").read_bytes()
    (dest / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="corrupt or truncated safetensors file"):
        load_model(dest)


def test_tiny_truncated_safetensors(tiny_dir, tmp_path):
    dest = variant(tiny_dir, tmp_path)
    (dest / "model.safetensors").write_bytes(b"\x01\x02")
    with pytest.raises(CheckpointError, match=r"truncated safetensors file \(2 bytes, no header\)"):
        load_model(dest)


def test_garbage_header(tiny_dir, tmp_path):
    dest = variant(tiny_dir, tmp_path)
    header = b"this is not json"
    (dest / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 64)
    with pytest.raises(CheckpointError, match="corrupt or truncated safetensors file"):
        load_model(dest)


def test_missing_files(tiny_dir, tmp_path):
    dest = variant(tiny_dir, tmp_path)
    (dest / "merges.txt").unlink()
    with pytest.raises(CheckpointError, match="not merges.txt"):
        load_model(dest)
    (dest / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="missing model.safetensors"):
        load_model(dest)
    (dest / "config.json").unlink()
    with pytest.raises(CheckpointError, match="missing config.json"):
        load_model(dest)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_model(tmp_path / "nowhere")


# --- the default model ---------------------------------------------------------------------------


def test_explicit_and_env_model_dir(tiny_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_CACHE", str(tmp_path / "cache"))
    assert resolve_model_dir(str(tiny_dir)) == tiny_dir
    monkeypatch.setenv("PARITY_MODEL", str(tiny_dir))
    assert resolve_model_dir(None) == tiny_dir
    monkeypatch.setenv("PARITY_MODEL", str(tmp_path / "missing"))
    with pytest.raises(CheckpointError, match="PARITY_MODEL"):
        resolve_model_dir(None)
    with pytest.raises(CheckpointError, match="does not exist"):
        resolve_model_dir(str(tmp_path / "missing"))
    assert not (tmp_path / "cache").exists()  # nothing synthesized on the way


def test_fetched_checkpoint_is_preferred(tiny_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("PARITY_MODEL", raising=False)
    monkeypatch.setenv("PARITY_CACHE", str(tmp_path / "cache"))
    fetched = tmp_path / "cache" / "models" / "gpt2"
    shutil.copytree(tiny_dir, fetched)
    assert resolve_model_dir(None) == fetched
    # An incomplete fetched directory is not used.
    (fetched / "parity-checkpoint.json").unlink()
    monkeypatch.setattr(ckpt, "DEFAULT_SYNTHETIC", ("tiny", 5))
    chosen = resolve_model_dir(None)
    assert chosen == tmp_path / "cache" / "models" / "synthetic-tiny-seed5"


def test_default_is_synthetic_gpt2_small_synthesized_once(tmp_path, monkeypatch):
    # The one test that builds GPT-2 small (~550 MB, a few seconds).
    monkeypatch.delenv("PARITY_MODEL", raising=False)
    monkeypatch.setenv("PARITY_CACHE", str(tmp_path))
    path = resolve_model_dir(None)
    assert path == tmp_path / "models" / "synthetic-gpt2-small-seed0"
    model = load_model(path)
    assert model.config == GPT2Config(n_layer=12, n_head=12, n_embd=768, n_ctx=1024, vocab_size=50257)
    assert model.params.wte.shape == (50257, 768) and model.params.wpe.shape == (1024, 768)
    assert model.params.blocks[11].mlp_c_proj.w.shape == (3072, 768)
    assert model.checkpoint.name == "synthetic-gpt2-small-seed0"
    mtime = (path / "model.safetensors").stat().st_mtime_ns
    assert resolve_model_dir(None) == path  # second call reuses it
    assert (path / "model.safetensors").stat().st_mtime_ns == mtime
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["synthetic-gpt2-small-seed0"]


def test_bfloat16_tensor_is_rejected_by_name(tiny_dir, tmp_path):
    # NumPy has no bfloat16, so build the file by hand: header JSON + raw bytes, per the safetensors format.
    dest = variant(tiny_dir, tmp_path)
    raw = tiny_tensors(tiny_dir)
    header, blobs, offset = {}, [], 0
    for name, array in raw.items():
        data = array.astype(np.float16).tobytes() if name == "ln_f.weight" else array.tobytes()
        dtype = "BF16" if name == "ln_f.weight" else "F32"
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    (dest / "model.safetensors").write_bytes(len(encoded).to_bytes(8, "little") + encoded + b"".join(blobs))
    with pytest.raises(CheckpointError, match=r"tensor 'ln_f\.weight' has dtype bfloat16; float32 is required"):
        load_model(dest)
