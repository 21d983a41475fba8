"""The capture runner: a standalone script executed by the reference env's own Python
(never imports Parity). It imports the reference's modules unchanged, adapts a Hugging
Face-layout GPT-2 checkpoint to the reference's dataclasses, greedily decodes, and records
per step the embedding, both residuals of every block (through the reference's own
``layer_norm``, ``mha`` and ``ffn``), the last-row logits, the chosen token and the top-1/
top-2 margin. It checks that decomposition against the reference's complete forward
functions and records any disagreement as a reference inconsistency.

Usage: python capture_runner.py --checkout=DIR --model=DIR --prompt=TEXT --tokens=N --out=FILE.npz
(Parity passes every value as --option=value, so a prompt starting with "-" stays a value.)
Writes FILE.npz and FILE.json (metadata; written last and carrying the npz's sha256)."""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import platform
import sys
import tempfile
import traceback
from pathlib import Path

FORMAT = "parity-capture/1"
# Exit codes: 2 bad input (checkpoint, prompt, reference layout), 3 the reference itself failed.
EXIT_BAD_INPUT = 2
EXIT_REFERENCE_FAILED = 3
# Same formulas in a different arrangement may round differently in float32 (block 0 runs
# its projections in float32), so whole-forward agreement is judged relative to the logits' scale.
CONSISTENCY_RTOL = 1e-9
REFERENCE_MODULES = ("gpt2_tensors", "gpt2_ops", "gpt2_run", "gpt2_minimal", "encoder")


class BadInput(Exception):
    pass


def file_sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def checkpoint_sha256(model_dir) -> str:
    """A checkpoint's identity, as everywhere in Parity: the sha256 of its model.safetensors."""
    return file_sha256(Path(model_dir) / "model.safetensors")


def config_sha256(model_dir) -> str:
    return file_sha256(Path(model_dir) / "config.json")


def locate_reference(checkout: Path) -> tuple[Path, str]:
    """The sys.path entry and module prefix of the reference: ``src/tinygpt2``, ``tinygpt2``
    or flat modules at the top of the checkout."""
    for base in (checkout / "src", checkout):
        if (base / "tinygpt2" / "gpt2_ops.py").is_file():
            return base, "tinygpt2."
    for base in (checkout / "src", checkout):
        if (base / "gpt2_ops.py").is_file():
            return base, ""
    raise BadInput(
        f"{checkout} does not look like tiny-gpt2: no tinygpt2/gpt2_ops.py under src/ or the top level"
    )


def import_reference(checkout: Path) -> tuple[dict, dict]:
    base, prefix = locate_reference(checkout)
    sys.path.insert(0, str(base))
    modules, failures = {}, {}
    for name in REFERENCE_MODULES:
        try:
            modules[name] = importlib.import_module(prefix + name)
        except Exception as exc:  # recorded; only some modules are essential
            failures[name] = f"{type(exc).__name__}: {exc}"
    for essential in ("gpt2_tensors", "gpt2_ops", "encoder"):
        if essential not in modules:
            raise RuntimeError(f"cannot import the reference module {prefix}{essential}: {failures[essential]}")
    return modules, failures


def get_reference_encoder(encoder_module, checkout: Path):
    """The reference's own encoder over the checkout's model/ vocabulary. Upstream's argument
    convention is (model_name, models_dir); try the plausible readings of it."""
    attempts = [
        ("124M", str(checkout / "model")),
        ("gpt2", str(checkout / "model")),
        ("model", str(checkout)),
        ("", str(checkout / "model")),
    ]
    errors = []
    for model_name, models_dir in attempts:
        try:
            return encoder_module.get_encoder(model_name, models_dir), f"get_encoder({model_name!r}, {models_dir!r})"
        except (OSError, KeyError, ValueError) as exc:
            errors.append(f"get_encoder({model_name!r}, {models_dir!r}): {exc}")
    raise BadInput("the reference encoder could not load its vocabulary:\n  " + "\n  ".join(errors))


def load_checkpoint(model_dir: Path) -> tuple[dict, dict]:
    config_path, weights_path = model_dir / "config.json", model_dir / "model.safetensors"
    for path in (config_path, weights_path):
        if not path.is_file():
            raise BadInput(f"checkpoint {model_dir} has no {path.name}; expected config.json + model.safetensors")
    try:
        config = json.loads(config_path.read_text())
    except ValueError as exc:
        raise BadInput(f"{config_path} is not valid JSON: {exc}") from exc
    hp = {}
    for key, names in (("n_layer", ("n_layer",)), ("n_head", ("n_head",)), ("n_embd", ("n_embd",)),
                       ("n_ctx", ("n_positions", "n_ctx")), ("vocab_size", ("vocab_size",))):
        value = next((config[n] for n in names if n in config), None)
        if not isinstance(value, int) or value <= 0:
            raise BadInput(f"{config_path}: {' or '.join(names)} must be a positive integer, got {value!r}")
        hp[key] = value
    if hp["n_embd"] % hp["n_head"]:
        raise BadInput(f"{config_path}: n_embd {hp['n_embd']} is not divisible by n_head {hp['n_head']}")
    from safetensors.numpy import load_file

    try:
        tensors = load_file(str(weights_path))
    except Exception as exc:
        raise BadInput(f"{weights_path} is not a readable safetensors file: {exc}") from exc
    # Some exports prefix every name with "transformer."; the reference's names do not.
    tensors = {k.removeprefix("transformer."): v for k, v in tensors.items()}
    return hp, tensors


def expected_shapes(hp: dict) -> dict:
    C, V, P = hp["n_embd"], hp["vocab_size"], hp["n_ctx"]
    shapes = {"wte.weight": (V, C), "wpe.weight": (P, C), "ln_f.weight": (C,), "ln_f.bias": (C,)}
    for i in range(hp["n_layer"]):
        shapes.update({
            f"h.{i}.ln_1.weight": (C,), f"h.{i}.ln_1.bias": (C,),
            f"h.{i}.attn.c_attn.weight": (C, 3 * C), f"h.{i}.attn.c_attn.bias": (3 * C,),
            f"h.{i}.attn.c_proj.weight": (C, C), f"h.{i}.attn.c_proj.bias": (C,),
            f"h.{i}.ln_2.weight": (C,), f"h.{i}.ln_2.bias": (C,),
            f"h.{i}.mlp.c_fc.weight": (C, 4 * C), f"h.{i}.mlp.c_fc.bias": (4 * C,),
            f"h.{i}.mlp.c_proj.weight": (4 * C, C), f"h.{i}.mlp.c_proj.bias": (C,),
        })
    return shapes


def adapt_checkpoint(tensors_module, hp: dict, tensors: dict):
    """Hugging Face GPT-2 names (Conv1D layout, so ``x @ w + b``) -> the reference's ModelParams.
    ``h.{i}.attn.bias`` (HF's stored causal mask) is not a parameter and is ignored."""
    for name, shape in expected_shapes(hp).items():
        if name not in tensors:
            raise BadInput(f"checkpoint has no tensor {name!r} (config says n_layer={hp['n_layer']})")
        if tuple(tensors[name].shape) != shape:
            raise BadInput(f"checkpoint tensor {name!r} has shape {tuple(tensors[name].shape)}, expected {shape}")
    t = tensors_module

    def linear(prefix):
        return t.LinearParams(w=tensors[f"{prefix}.weight"], b=tensors[f"{prefix}.bias"])

    def norm(prefix):
        return t.LayerNormParams(g=tensors[f"{prefix}.weight"], b=tensors[f"{prefix}.bias"])

    blocks = [
        t.TransformerBlockParams(
            ln_1=norm(f"h.{i}.ln_1"),
            ln_2=norm(f"h.{i}.ln_2"),
            mlp=t.MLPParams(c_fc=linear(f"h.{i}.mlp.c_fc"), c_proj=linear(f"h.{i}.mlp.c_proj")),
            attn=t.AttentionParams(c_attn=linear(f"h.{i}.attn.c_attn"), c_proj=linear(f"h.{i}.attn.c_proj")),
        )
        for i in range(hp["n_layer"])
    ]
    return t.ModelParams(wte=tensors["wte.weight"], wpe=tensors["wpe.weight"], blocks=blocks, ln_f=norm("ln_f"))


def decompose(ops, params, ids: list[int], n_head: int):
    """One forward pass through the reference's own ops, keeping every named intermediate.
    Returns (named tensors, logits for all positions)."""
    import numpy as np

    named = {}
    x = params.wte[ids] + params.wpe[range(len(ids))]
    named["embedding"] = x
    for i, block in enumerate(params.blocks):
        x = x + ops.mha(ops.layer_norm(x, block.ln_1.g, block.ln_1.b), block.attn.c_attn, block.attn.c_proj, n_head)
        named[f"h.{i}.attention"] = x
        x = x + ops.ffn(ops.layer_norm(x, block.ln_2.g, block.ln_2.b),
                        block.mlp.c_fc.w, block.mlp.c_fc.b, block.mlp.c_proj.w, block.mlp.c_proj.b)
        named[f"h.{i}.output"] = x
    logits = ops.layer_norm(x, params.ln_f.g, params.ln_f.b) @ params.wte.T
    named["logits"] = np.asarray(logits[-1])
    return named, logits


def compare(ours, theirs) -> dict:
    import numpy as np

    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if ours.shape != theirs.shape:
        return {"max_abs_diff": None, "max_rel_diff": None, "shape": [list(ours.shape), list(theirs.shape)]}
    diff = float(np.max(np.abs(ours.astype(np.float64) - theirs.astype(np.float64)))) if ours.size else 0.0
    scale = float(np.max(np.abs(theirs))) if theirs.size else 0.0
    return {"max_abs_diff": diff, "max_rel_diff": diff / scale if scale else diff}


class Checks:
    """Whole-forward and per-block agreement, accumulated over steps (worst case kept)."""

    def __init__(self):
        self.results: dict[str, dict] = {}

    def skip(self, function: str, reason: str) -> None:
        self.results[function] = {"function": function, "status": "skipped", "reason": reason}

    def error(self, function: str, reason: str) -> None:
        self.results[function] = {"function": function, "status": "error", "reason": reason}

    def add(self, function: str, step: int, result: dict) -> None:
        entry = self.results.setdefault(function, {
            "function": function, "status": "checked", "reason": None, "max_abs_diff": 0.0,
            "max_rel_diff": 0.0, "rtol": CONSISTENCY_RTOL, "worst_step": 0, "steps_checked": 0})
        if entry["status"] != "checked":
            return
        entry["steps_checked"] += 1
        if result.get("max_abs_diff") is None:
            entry.update(status="inconsistent", reason=f"shape mismatch at step {step}: {result['shape']}")
            return
        if result["max_rel_diff"] >= entry["max_rel_diff"]:
            entry.update(max_abs_diff=result["max_abs_diff"], max_rel_diff=result["max_rel_diff"], worst_step=step)
        if not result["max_rel_diff"] <= CONSISTENCY_RTOL:  # NaN counts as a disagreement
            entry["status"] = "inconsistent"
            entry["reason"] = (f"step {step}: max abs diff {result['max_abs_diff']:.3e} "
                               f"(relative {result['max_rel_diff']:.3e} > {CONSISTENCY_RTOL:g})")

    def inconsistencies(self) -> list[dict]:
        return [r for r in self.results.values() if r["status"] == "inconsistent"]


def steps_to_check(n_tokens: int, checks: str) -> set[int]:
    """Decoding steps whose decomposition is compared with the whole forward functions. Every
    step runs the same code on a longer sequence, so the first and last steps (shortest and
    longest) catch adapter drift at a third of the cost of checking all (GPT-2 small takes
    seconds per NumPy forward); "all" checks every step and the reference's generate_tokens."""
    if checks == "all":
        return set(range(n_tokens))
    return {0, n_tokens - 1}


def check_context(n_prompt: int, n_tokens: int, n_ctx: int) -> None:
    """The longest forward pass is over the prompt and every generated token but the last,
    which is only picked, never fed back; the message shows that arithmetic."""
    longest = n_prompt + n_tokens - 1
    if longest > n_ctx:
        raise BadInput(f"{n_prompt} prompt tokens + {n_tokens} generated - 1 (the last generated token is never "
                       f"fed back) = {longest} positions, but the checkpoint has n_positions={n_ctx}")


def run_capture(checkout: Path, model_dir: Path, prompt: str, n_tokens: int,
                checks_mode: str = "edges") -> tuple[dict, dict]:
    import numpy as np

    modules, import_failures = import_reference(checkout)
    ops, tensors_module = modules["gpt2_ops"], modules["gpt2_tensors"]
    encoder, encoder_call = get_reference_encoder(modules["encoder"], checkout)
    hp, tensors = load_checkpoint(model_dir)
    params = adapt_checkpoint(tensors_module, hp, tensors)
    if not prompt:
        raise BadInput("the prompt is empty; the reference needs at least one token")
    input_ids = [int(t) for t in encoder.encode(prompt)]
    if not input_ids:
        raise BadInput(f"the prompt {prompt!r} encodes to no tokens")
    if max(input_ids) >= hp["vocab_size"]:
        raise BadInput(f"prompt token id {max(input_ids)} is outside the checkpoint's vocab ({hp['vocab_size']})")
    known = len(getattr(encoder, "encoder", ()))  # OpenAI's Encoder keeps its token -> id table there
    if known and hp["vocab_size"] > known:
        raise BadInput(f"the checkpoint's vocabulary ({hp['vocab_size']} ids) is larger than the reference tokenizer's "
                       f"({known}): an id it generates beyond that could not be decoded (a padded vocabulary is "
                       "not GPT-2's)")
    check_context(len(input_ids), n_tokens, hp["n_ctx"])
    n_head = hp["n_head"]

    checks = Checks()
    whole = {}
    if "gpt2_run" not in modules:
        checks.error("gpt2_run.gpt2", f"import failed: {import_failures['gpt2_run']}")
    elif hp["n_layer"] != 12:
        checks.skip("gpt2_run.gpt2", f"it unrolls exactly 12 blocks; this checkpoint has {hp['n_layer']}")
    else:
        whole["gpt2_run.gpt2"] = modules["gpt2_run"].gpt2
    if "gpt2_minimal" not in modules:
        checks.error("gpt2_minimal.gpt2", f"import failed: {import_failures['gpt2_minimal']}")
    else:
        whole["gpt2_minimal.gpt2"] = modules["gpt2_minimal"].gpt2

    check_steps = steps_to_check(n_tokens, checks_mode)
    arrays, tensor_names, dtypes, shapes = {}, None, {}, {}
    ids = list(input_ids)
    output_ids, margins = [], []
    for step in range(n_tokens):
        named, all_logits = decompose(ops, params, ids, n_head)
        if tensor_names is None:
            tensor_names = list(named)
        for name, value in named.items():
            arrays[f"step{step:03d}/{name}"] = value
            dtypes.setdefault(name, str(value.dtype))
            shapes.setdefault(name, []).append(list(value.shape))
        for function, forward in whole.items() if step in check_steps else ():
            checks.add(function, step, compare(all_logits, forward(list(ids), params, n_head)))
        # The residuals must also be what the reference's own transformer_block computes.
        x = named["embedding"]
        for i, block in enumerate(params.blocks if step in check_steps else ()):
            ref = ops.transformer_block(x, block.mlp, block.attn, block.ln_1, block.ln_2, n_head)
            checks.add("gpt2_ops.transformer_block", step, compare(named[f"h.{i}.output"], ref))
            x = named[f"h.{i}.output"]
        logits = named["logits"]
        chosen = int(np.argmax(logits))
        top2 = np.sort(logits)[-2:] if logits.size > 1 else np.array([logits[0], logits[0]])
        margins.append(float(top2[1] - top2[0]))
        output_ids.append(chosen)
        ids.append(chosen)

    generate_check = None
    if "gpt2_run.gpt2" in whole and checks_mode == "all":
        generated = [int(t) for t in modules["gpt2_run"].generate_tokens(list(input_ids), params, n_head, n_tokens)]
        generate_check = {"function": "gpt2_run.generate_tokens", "tokens": generated, "agree": generated == output_ids}

    arrays["input_ids"] = np.asarray(input_ids, dtype=np.int64)
    arrays["output_ids"] = np.asarray(output_ids, dtype=np.int64)
    arrays["margins"] = np.asarray(margins, dtype=np.float64)
    inconsistencies = checks.inconsistencies()
    if generate_check is not None and not generate_check["agree"]:
        inconsistencies.append({"function": "gpt2_run.generate_tokens", "status": "inconsistent",
                                "reason": f"generated {generate_check['tokens']}, decomposition chose {output_ids}"})
    meta = {
        "format": FORMAT,
        "prompt": prompt,
        "tokens": n_tokens,
        "input_ids": input_ids,
        "output_ids": output_ids,
        "completion": encoder.decode(output_ids),
        "margins": margins,
        "steps": n_tokens,
        "tensor_names": tensor_names,
        "dtypes": dtypes,
        "shapes": shapes,
        "config": hp,
        "checkpoint_sha256": checkpoint_sha256(model_dir),
        "config_sha256": config_sha256(model_dir),
        "checkpoint_dtypes": sorted({str(v.dtype) for v in tensors.values()}),
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "encoder_call": encoder_call,
        "reference_import_failures": import_failures,
        "whole_forward_checks": list(checks.results.values()),
        "checked_functions": [r["function"] for r in checks.results.values() if r["status"] != "skipped"],
        "generate_tokens_check": generate_check,
        "checks_mode": checks_mode,
        "checked_steps": sorted(check_steps),
        "reference_inconsistency": inconsistencies or None,
    }
    return meta, arrays


def write_atomically(out: Path, meta: dict, arrays: dict) -> None:
    """npz first, then the JSON that names the npz's sha256: a reader that finds the JSON
    and a matching npz has a complete capture; anything else is detectably incomplete."""
    import numpy as np

    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_npz = tempfile.mkstemp(prefix=f".{out.name}-", suffix=".npz", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        digest = file_sha256(tmp_npz)
        os.chmod(tmp_npz, 0o644)
        os.replace(tmp_npz, out)
    finally:
        if os.path.exists(tmp_npz):
            os.unlink(tmp_npz)
    meta = {**meta, "npz": out.name, "npz_sha256": digest}
    json_path = out.with_suffix(".json")
    fd, tmp_json = tempfile.mkstemp(prefix=f".{json_path.name}-", dir=out.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp_json, 0o644)
        os.replace(tmp_json, json_path)
    finally:
        if os.path.exists(tmp_json):
            os.unlink(tmp_json)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", required=True, type=Path)
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--tokens", required=True, type=int)
    parser.add_argument("--out", required=True, type=Path, help="FILE.npz (FILE.json is written beside it)")
    parser.add_argument("--extra-meta", default="{}", help="JSON object merged into the metadata")
    parser.add_argument("--checks", choices=("edges", "all"), default="edges",
                        help="steps compared with the whole forward functions: first and last (default) or all")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.tokens < 1:
        print("capture_runner: --tokens must be at least 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.out.suffix != ".npz":
        print("capture_runner: --out must name a .npz file", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        meta, arrays = run_capture(args.checkout.resolve(), args.model.resolve(), args.prompt, args.tokens,
                                   args.checks)
    except BadInput as exc:
        print(f"capture_runner: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception:
        print("capture_runner: the reference failed:\n" + traceback.format_exc(), file=sys.stderr)
        return EXIT_REFERENCE_FAILED
    meta.update(json.loads(args.extra_meta))
    write_atomically(args.out, meta, arrays)
    return 0


if __name__ == "__main__":
    sys.dont_write_bytecode = True  # keep the reference checkout clean
    sys.exit(main())
