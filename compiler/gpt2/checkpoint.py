"""GPT-2 checkpoints on disk: a directory in Hugging Face's layout (``config.json``,
``model.safetensors``, ``vocab.json`` + ``merges.txt``) plus Parity's small
``parity-checkpoint.json`` manifest (name, source, sha256 of each file). ``load_model``
reads and validates one into NumPy parameter dataclasses; ``resolve_model_dir`` picks
the default model (``$PARITY_MODEL``, a fetched real GPT-2, else the synthetic GPT-2
small, synthesized on first use)."""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from compiler.gpt2.config import CheckpointError, GPT2Config, read_config
from compiler.gpt2.tokenizer import GPT2Tokenizer, TokenizerError, file_sha256, load_tokenizer
from compiler.paths import STALE_AFTER_S, remove_stale

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.json"
MERGES_FILE = "merges.txt"
MANIFEST_FILE = "parity-checkpoint.json"
CHECKPOINT_FILES = (CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE, MERGES_FILE)

# Buffers that Hugging Face stores next to the weights (the causal mask) and that the model recomputes.
_IGNORED_TENSOR = re.compile(r"h\.\d+\.attn\.(bias|masked_bias)")
_HF_PREFIX = "transformer."


@dataclass
class LayerNormParams:
    g: np.ndarray
    b: np.ndarray


@dataclass
class LinearParams:
    """Conv1D layout as stored by GPT-2: ``y = x @ w + b`` with ``w`` of shape (in, out)."""

    w: np.ndarray
    b: np.ndarray


@dataclass
class BlockParams:
    ln_1: LayerNormParams
    attn_c_attn: LinearParams
    attn_c_proj: LinearParams
    ln_2: LayerNormParams
    mlp_c_fc: LinearParams
    mlp_c_proj: LinearParams


@dataclass
class GPT2Params:
    wte: np.ndarray
    wpe: np.ndarray
    blocks: list[BlockParams]
    ln_f: LayerNormParams


@dataclass(frozen=True)
class CheckpointInfo:
    """What names a checkpoint in every output: its name and the sha256 of its model.safetensors.
    ``path`` is the checkpoint directory."""

    name: str
    sha256: str
    path: Path


@dataclass
class GPT2Model:
    config: GPT2Config
    params: GPT2Params
    tokenizer: GPT2Tokenizer
    checkpoint: CheckpointInfo


def expected_shapes(config: GPT2Config) -> dict[str, tuple[int, ...]]:
    """Every parameter tensor of a GPT-2 checkpoint, by Hugging Face name, with its shape."""
    d, v, t = config.n_embd, config.vocab_size, config.n_ctx
    shapes: dict[str, tuple[int, ...]] = {"wte.weight": (v, d), "wpe.weight": (t, d)}
    for i in range(config.n_layer):
        p = f"h.{i}."
        shapes |= {
            p + "ln_1.weight": (d,), p + "ln_1.bias": (d,),
            p + "attn.c_attn.weight": (d, 3 * d), p + "attn.c_attn.bias": (3 * d,),
            p + "attn.c_proj.weight": (d, d), p + "attn.c_proj.bias": (d,),
            p + "ln_2.weight": (d,), p + "ln_2.bias": (d,),
            p + "mlp.c_fc.weight": (d, 4 * d), p + "mlp.c_fc.bias": (4 * d,),
            p + "mlp.c_proj.weight": (4 * d, d), p + "mlp.c_proj.bias": (d,),
        }  # fmt: skip
    shapes |= {"ln_f.weight": (d,), "ln_f.bias": (d,)}
    return shapes


# --- sha256 with an in-memory cache (GPT-2 small's weights are ~500 MB) -------------------------

_hash_cache: dict[tuple[str, int, int], str] = {}
_hash_lock = threading.Lock()


def checkpoint_sha256(path: Path) -> str:
    """sha256 of a file, cached in memory by (path, size, mtime)."""
    path = Path(path).resolve()
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _hash_lock:
        cached = _hash_cache.get(key)
    if cached is None:
        cached = file_sha256(path)
        with _hash_lock:
            _hash_cache[key] = cached
    return cached


# --- manifest -------------------------------------------------------------------------------------


def read_manifest(model_dir: Path) -> dict[str, Any] | None:
    path = Path(model_dir) / MANIFEST_FILE
    if not path.exists():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{path}: unreadable manifest ({err})") from None
    if not isinstance(manifest, dict):
        raise CheckpointError(f"{path}: manifest must be a JSON object")
    return manifest


def write_manifest(model_dir: Path, manifest: dict[str, Any]) -> None:
    write_text_atomic(Path(model_dir) / MANIFEST_FILE, json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def build_manifest(model_dir: Path, name: str, source: str, **extra: Any) -> dict[str, Any]:
    """A manifest recording the sha256 of every checkpoint file present in ``model_dir``."""
    hashes = {f: checkpoint_sha256(Path(model_dir) / f) for f in CHECKPOINT_FILES if (Path(model_dir) / f).is_file()}
    return {"name": name, "source": source, **extra, "sha256": hashes}


def write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def checkpoint_info(model_dir: str | Path) -> CheckpointInfo:
    """Name and sha256 of a checkpoint directory; the hash always comes from the actual weights file and
    must equal the manifest's record when there is one."""
    model_dir = Path(model_dir)
    weights = model_dir / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointError(f"{model_dir}: missing {WEIGHTS_FILE}")
    sha = checkpoint_sha256(weights)
    manifest = read_manifest(model_dir) or {}
    recorded = manifest.get("sha256") if isinstance(manifest.get("sha256"), dict) else {}
    # every recorded file, not just the weights: an edited vocab.json reads prompts differently
    # under the same name and weights hash
    for file in CHECKPOINT_FILES:
        if file not in recorded:
            continue
        path = model_dir / file
        if not path.is_file():
            raise CheckpointError(f"{path}: recorded in {MANIFEST_FILE} but missing")
        actual = sha if file == WEIGHTS_FILE else checkpoint_sha256(path)
        if actual != recorded[file]:
            raise CheckpointError(
                f"{path}: sha256 {actual} differs from {recorded[file]} recorded in {MANIFEST_FILE} "
                "(the file was modified or is corrupt)"
            )
    name = manifest.get("name")
    if not isinstance(name, str) or not name:
        name = model_dir.resolve().name
    return CheckpointInfo(name=name, sha256=sha, path=model_dir)


# --- weights --------------------------------------------------------------------------------------


# safetensors dtype codes -> NumPy names, for error messages
_DTYPE_NAMES = {"F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64", "I8": "int8",
                "U8": "uint8", "I16": "int16", "I32": "int32", "I64": "int64", "BOOL": "bool"}  # fmt: skip


@dataclass(frozen=True)
class TensorEntry:
    key: str  # name in the file (maybe with the ``transformer.`` prefix)
    dtype: str  # NumPy name
    shape: tuple[int, ...]


def _open_safetensors(path: Path):
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path.parent}: missing {path.name}")
    size = path.stat().st_size
    if size < 8:
        raise CheckpointError(f"{path}: truncated safetensors file ({size} bytes, no header)")
    return safe_open(str(path), framework="numpy")


@contextlib.contextmanager
def _safetensors_errors(path: Path):
    from safetensors import SafetensorError

    try:
        yield
    except SafetensorError as err:
        raise CheckpointError(f"{path}: corrupt or truncated safetensors file ({err})") from None
    except OSError as err:
        raise CheckpointError(f"{path}: cannot read ({err})") from None


def read_safetensors_index(path: Path) -> dict[str, TensorEntry]:
    """Name (``transformer.`` prefix removed) -> dtype and shape, from the header alone."""
    index: dict[str, TensorEntry] = {}
    with _safetensors_errors(path), _open_safetensors(path) as handle:
        for key in handle.keys():
            info = handle.get_slice(key)
            dtype = _DTYPE_NAMES.get(info.get_dtype(), info.get_dtype())
            name = key[len(_HF_PREFIX):] if key.startswith(_HF_PREFIX) else key
            if name in index:
                raise CheckpointError(f"{path}: tensor {name!r} appears both with and without the {_HF_PREFIX!r} prefix")
            index[name] = TensorEntry(key=key, dtype=dtype, shape=tuple(info.get_shape()))
    return index


def read_tensors(path: Path, index: dict[str, TensorEntry], names) -> dict[str, np.ndarray]:
    tensors = {}
    with _safetensors_errors(path), _open_safetensors(path) as handle:
        for name in names:
            try:
                tensors[name] = handle.get_tensor(index[name].key)
            except (TypeError, ValueError) as err:
                raise CheckpointError(f"{path}: tensor {name!r} cannot be read as a NumPy array ({err})") from None
    return tensors


def check_index(index: dict[str, TensorEntry], config: GPT2Config, source: Path) -> None:
    """Validate tensor names, dtypes and shapes against ``config`` before reading any data."""
    shapes = expected_shapes(config)
    missing = [name for name in shapes if name not in index]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise CheckpointError(f"{source}: missing tensor {missing[0]!r}{more}")
    allowed = set(shapes) | {"lm_head.weight"}
    unexpected = [name for name in index if name not in allowed and not _IGNORED_TENSOR.fullmatch(name)]
    if unexpected:
        raise CheckpointError(f"{source}: unexpected tensor {unexpected[0]!r} for a {config.n_layer}-layer GPT-2")
    if "lm_head.weight" in index:
        shapes = shapes | {"lm_head.weight": shapes["wte.weight"]}
    for name, shape in shapes.items():
        entry = index[name]
        if entry.dtype != "float32":
            raise CheckpointError(f"{source}: tensor {name!r} has dtype {entry.dtype}; float32 is required")
        if entry.shape != shape:
            raise CheckpointError(f"{source}: tensor {name!r} has shape {entry.shape}, expected {shape} from config.json")


def read_parameters(path: Path, config: GPT2Config) -> dict[str, np.ndarray]:
    """The validated float32 parameter tensors of a GPT-2 safetensors file (mask buffers are never read)."""
    path = Path(path)
    index = read_safetensors_index(path)
    check_index(index, config, path)
    names = list(expected_shapes(config))
    tensors = read_tensors(path, index, names + (["lm_head.weight"] if "lm_head.weight" in index else []))
    lm_head = tensors.pop("lm_head.weight", None)
    if lm_head is not None and not np.array_equal(lm_head, tensors["wte.weight"]):
        raise CheckpointError(f"{path}: tensor 'lm_head.weight' is not tied to 'wte.weight'; GPT-2 ties them")
    for name, array in tensors.items():  # the header said float32; make sure the data agrees
        if array.dtype != np.float32:
            raise CheckpointError(f"{path}: tensor {name!r} has dtype {array.dtype}; float32 is required")
    return {name: np.ascontiguousarray(array) for name, array in tensors.items()}


def params_from_tensors(tensors: dict[str, np.ndarray], n_layer: int) -> GPT2Params:
    def ln(prefix: str) -> LayerNormParams:
        return LayerNormParams(g=tensors[prefix + ".weight"], b=tensors[prefix + ".bias"])

    def linear(prefix: str) -> LinearParams:
        return LinearParams(w=tensors[prefix + ".weight"], b=tensors[prefix + ".bias"])

    blocks = [
        BlockParams(
            ln_1=ln(f"h.{i}.ln_1"),
            attn_c_attn=linear(f"h.{i}.attn.c_attn"),
            attn_c_proj=linear(f"h.{i}.attn.c_proj"),
            ln_2=ln(f"h.{i}.ln_2"),
            mlp_c_fc=linear(f"h.{i}.mlp.c_fc"),
            mlp_c_proj=linear(f"h.{i}.mlp.c_proj"),
        )
        for i in range(n_layer)
    ]
    return GPT2Params(wte=tensors["wte.weight"], wpe=tensors["wpe.weight"], blocks=blocks, ln_f=ln("ln_f"))


def load_params(model_dir: str | Path, config: GPT2Config) -> GPT2Params:
    return params_from_tensors(read_parameters(Path(model_dir) / WEIGHTS_FILE, config), config.n_layer)


def load_model(model_dir: str | Path) -> GPT2Model:
    """Read and validate a GPT-2 checkpoint directory (config, weights, tokenizer)."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise CheckpointError(f"{model_dir}: not a checkpoint directory (it does not exist)")
    config = read_config(model_dir / CONFIG_FILE)
    info = checkpoint_info(model_dir)
    params = load_params(model_dir, config)
    try:
        tokenizer = load_tokenizer(model_dir)
    except TokenizerError as err:
        raise CheckpointError(f"{model_dir}: {err}") from None
    if tokenizer.vocab_size > config.vocab_size:
        raise CheckpointError(
            f"{model_dir}: the tokenizer has {tokenizer.vocab_size} tokens but field 'vocab_size' is {config.vocab_size}"
        )
    return GPT2Model(config=config, params=params, tokenizer=tokenizer, checkpoint=info)


# --- writing checkpoint directories atomically -------------------------------------------------


def apply_umask_permissions(directory: Path) -> None:
    """Give a staged directory and its files ordinary permissions (temporary directories are created 0700)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(directory, 0o777 & ~umask)
    for path in directory.iterdir():
        if path.is_file():
            os.chmod(path, 0o666 & ~umask)


def is_occupied(path: Path) -> bool:
    return path.exists() and (not path.is_dir() or any(path.iterdir()))


def staging_prefix(dest: Path) -> str:
    """Name prefix of the temporary directory a writer of ``dest`` stages into (a sibling of ``dest``, so the final
    rename stays on one filesystem)."""
    return f".{dest.name}.tmp-"


def sweep_stale_staging(dest: Path, max_age_s: float | None = None) -> list[Path]:
    """Delete staging directories of ``dest`` left by a writer killed before its rename (GPT-2 small's is ~500 MB);
    recent ones may belong to a live writer and stay. Same rule as the kernel cache's temporaries."""
    staged = (p for p in dest.parent.glob(glob.escape(staging_prefix(dest)) + "*") if p.is_dir())
    return remove_stale(staged, STALE_AFTER_S if max_age_s is None else max_age_s)


def resolve_destination(dest: str | Path) -> Path:
    """``dest`` as an absolute path: ``Path(".").name`` is empty, so a relative "." would stage into ``..tmp-*``
    beside the wrong parent and try to rename over the current directory under a name that says nothing."""
    return Path(os.path.abspath(Path(dest).expanduser()))


def check_destination(dest: Path, overwrite: bool) -> None:
    """Refuse, before any work, a ``dest`` the final rename would fail on or that ``overwrite`` must not delete."""
    if dest.is_dir() and dest.samefile(Path.cwd()):
        # Linux would let us swap the directory out from under the shell that started us (which then sits in a
        # deleted directory and sees nothing), or refuse it with EBUSY; neither is what was meant.
        raise CheckpointError(_in_use_message(dest, "it is the current directory"))
    if overwrite:
        check_replaceable(dest)


def _in_use_message(dest: Path, why: str) -> str:
    return (f"cannot write the checkpoint into {dest}: the directory is in use ({why}); "
            f"give a path that does not exist yet, e.g. {dest / 'model'}")


def check_replaceable(dest: Path) -> None:
    """Refuse to replace (``--force``) a non-empty ``dest`` that is not a checkpoint: replacing deletes it."""
    if not is_occupied(dest):
        return
    if not dest.is_dir():
        raise CheckpointError(f"{dest} is not a directory; refusing to replace it with a checkpoint")
    if not ((dest / MANIFEST_FILE).is_file() or (dest / CONFIG_FILE).is_file()):
        raise CheckpointError(
            f"{dest} holds files but no {MANIFEST_FILE} or {CONFIG_FILE}, so it is not a checkpoint; "
            "refusing to delete it (remove it yourself or choose another DIR)"
        )


def move_into_place(staging: Path, dest: Path, overwrite: bool, accept_existing) -> None:
    """Rename ``staging`` to ``dest``; with ``overwrite``, the old ``dest`` is swapped out first and then removed."""
    trash = staging.parent / "replaced"
    try:
        if overwrite and dest.exists():
            os.replace(dest, trash)
        os.replace(staging, dest)  # replaces an empty directory; fails on a non-empty one
    except OSError as err:
        if trash.exists():
            os.replace(trash, dest)  # put the checkpoint being replaced back
        if err.errno == errno.EBUSY:  # a mount point or some process's working directory (Linux refuses the rename)
            raise CheckpointError(_in_use_message(dest, "a mount point or a working directory")) from None
        # Another process may have finished the same checkpoint first; keep theirs when it is the same one.
        if is_complete_checkpoint(dest) and accept_existing():
            return
        if is_occupied(dest):
            raise CheckpointError(f"cannot move the new checkpoint into {dest}: it appeared meanwhile") from None
        raise CheckpointError(f"cannot move the new checkpoint into {dest}: {err.strerror or err}") from None


# --- the default model ----------------------------------------------------------------------------

MODEL_ENV = "PARITY_MODEL"
FETCHED_DIR_NAME = "gpt2"
DEFAULT_SYNTHETIC = ("gpt2-small", 0)


def models_root() -> Path:
    from compiler.paths import cache_root

    return cache_root() / "models"


def is_complete_checkpoint(model_dir: Path) -> bool:
    """All files present, manifest included (written last, and directories land by atomic rename)."""
    model_dir = Path(model_dir)
    return all((model_dir / f).is_file() for f in (*CHECKPOINT_FILES, MANIFEST_FILE))


def _why_not_a_directory(path: Path) -> str:
    return "is not a directory (a checkpoint is a directory)" if path.exists() else "does not exist"


def resolve_model_dir(arg: str | Path | None, progress=None) -> Path:
    """The checkpoint directory to use: ``arg`` if given; else ``$PARITY_MODEL``; else a fetched real GPT-2
    under the cache; else the synthetic GPT-2 small (seed 0), synthesized there on first use."""
    if arg is not None:
        path = Path(arg).expanduser()
        if not path.is_dir():
            raise CheckpointError(f"model directory {path} {_why_not_a_directory(path)}")
        return path
    env = os.environ.get(MODEL_ENV)
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise CheckpointError(f"${MODEL_ENV} points at {path}, which {_why_not_a_directory(path)}")
        return path
    fetched = models_root() / FETCHED_DIR_NAME
    if is_complete_checkpoint(fetched):
        return fetched
    from compiler.gpt2.synth import synthetic_name, synthesize_checkpoint

    config_name, seed = DEFAULT_SYNTHETIC
    synthetic = models_root() / synthetic_name(config_name, seed)
    if not is_complete_checkpoint(synthetic):
        synthesize_checkpoint(synthetic, config=config_name, seed=seed, progress=progress, exist_ok=True)
    return synthetic
