"""A reference checkout at one exact revision: cloned or fetched with gitpython into
Parity's cache (or a local repository used in place), checked out detached, and
verified (HEAD equals the requested revision, the tree is clean) before use."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import git

from compiler.paths import cache_root

from .errors import (
    ReferenceCheckoutMissingError,
    ReferenceDirtyError,
    ReferenceRevisionError,
    ReferenceUnreachableError,
)

_FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
# A firewall that drops packets would otherwise stall git for minutes before `auto` falls back.
NETWORK_TIMEOUT_S = 180

# Never wait on a credential prompt or a stalled connection: fail and fall back instead.
_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "true",
    "GIT_HTTP_LOW_SPEED_LIMIT": "1000",
    "GIT_HTTP_LOW_SPEED_TIME": "30",
}


@dataclass(frozen=True)
class Checkout:
    """A verified working tree: ``path`` has ``revision`` checked out and nothing changed."""

    path: Path
    url: str
    revision: str


def checkouts_dir() -> Path:
    return cache_root() / "reference" / "checkouts"


def checkout_dir_for(url: str, base: Path | None = None) -> Path:
    """The cache directory for clones of ``url`` (one per URL; revisions share it)."""
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    tail = re.sub(r"[^A-Za-z0-9_.-]+", "-", url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"))[:40]
    return (base or checkouts_dir()) / f"{tail or 'repo'}-{digest}"


def is_local_path(spec: str) -> bool:
    """True for a filesystem path, False for a URL (``scheme://`` or scp-like ``host:path``)."""
    if "://" in spec:
        return False
    if re.match(r"^[\w.-]+@[\w.-]+:", spec):
        return False
    return True


def _check_revision_syntax(revision: str) -> str:
    revision = revision.strip().lower()
    if not _FULL_SHA.match(revision):
        raise ReferenceRevisionError(
            f"reference revision {revision!r} is not a full 40-character commit id; "
            "pin the reference to an exact commit (git rev-parse <ref>)"
        )
    return revision


def _dirty_files(repo: git.Repo) -> list[str]:
    changed = [d.a_path for d in repo.index.diff(None)] + [d.a_path for d in repo.index.diff("HEAD")]
    return sorted(set(changed) | set(repo.untracked_files))


def verify_checkout(path: Path, revision: str, url: str | None = None) -> Checkout:
    """Require ``path`` to be a git working tree with HEAD at ``revision`` and no changes."""
    path = Path(path)
    if not path.exists():
        raise ReferenceCheckoutMissingError(
            f"reference checkout {path} does not exist; pass --reference PATH to an existing clone "
            "or a URL Parity can clone"
        )
    try:
        repo = git.Repo(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise ReferenceCheckoutMissingError(
            f"reference checkout {path} is not a git repository; Parity pins the reference by commit, "
            f"so it needs a git clone (git clone <url> {path})"
        ) from exc
    if Path(repo.working_tree_dir or "").resolve() != path.resolve():
        raise ReferenceCheckoutMissingError(
            f"reference checkout {path} is inside another repository ({repo.working_tree_dir}), "
            "not a clone of its own"
        )
    try:
        head = repo.head.commit.hexsha
    except ValueError as exc:
        raise ReferenceRevisionError(f"reference checkout {path} has no commits") from exc
    if head != revision:
        raise ReferenceRevisionError(
            f"reference checkout {path} is at {head}, not the requested revision {revision}; "
            f"check out {revision} there or pass --reference-rev {head}"
        )
    dirty = _dirty_files(repo)
    if dirty:
        shown = ", ".join(dirty[:8]) + (f" and {len(dirty) - 8} more" if len(dirty) > 8 else "")
        raise ReferenceDirtyError(
            f"reference checkout {path} has uncommitted or untracked changes ({shown}); the capture "
            "would not be the pinned revision. Commit or discard them, or delete the directory so "
            "Parity clones it again"
        )
    origin = url
    if origin is None:
        origin = next((r.url for r in repo.remotes if r.name == "origin"), None) or path.resolve().as_uri()
    return Checkout(path=path, url=origin, revision=head)


def _has_commit(repo: git.Repo, revision: str) -> bool:
    try:
        repo.git.cat_file("-e", f"{revision}^{{commit}}")
        return True
    except git.GitCommandError:
        return False


def _unreachable(url: str, exc: git.GitCommandError) -> ReferenceUnreachableError:
    text = (exc.stderr or str(exc)).replace("stderr:", "").strip(" '\n")
    detail = " ".join(line.strip() for line in text.splitlines() if not line.strip().startswith("Cloning into"))
    return ReferenceUnreachableError(
        f"cannot fetch the reference from {url}: {detail[-400:]}. Check the URL and the network, "
        "or pass --reference PATH to a local clone"
    )


def _clone(url: str, dest: Path) -> None:
    """Clone into a temporary sibling and rename it into place, so no half clone is ever used."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        try:
            git.Git(staging).execute(["git", "clone", "--quiet", "--", url, str(staging / "repo")],
                                     env={**os.environ, **_GIT_ENV}, kill_after_timeout=NETWORK_TIMEOUT_S)
        except git.GitCommandError as exc:
            raise _unreachable(url, exc) from exc
        try:
            os.replace(staging / "repo", dest)
        except OSError:
            if not dest.exists():
                raise  # otherwise another process cloned it first; use theirs
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def ensure_checkout(url: str, revision: str, base: Path | None = None) -> Checkout:
    """A verified clone of ``url`` at ``revision`` in the cache: cloned if absent, fetched if the
    revision is not there yet, checked out detached. Local changes are an error, not discarded."""
    revision = _check_revision_syntax(revision)
    dest = checkout_dir_for(url, base)
    if dest.exists() and not (dest / ".git").exists():
        raise ReferenceCheckoutMissingError(
            f"cached reference checkout {dest} is not a git repository (an interrupted or foreign "
            "directory); delete it and run again"
        )
    if not dest.exists():
        _clone(url, dest)
    repo = git.Repo(dest)
    if _dirty_files(repo) if repo.head.is_valid() else False:
        # Checked before switching revisions: git would carry the edits along.
        verify_checkout(dest, repo.head.commit.hexsha, url)
    if not _has_commit(repo, revision):
        try:
            repo.git.fetch("origin", env={**os.environ, **_GIT_ENV}, kill_after_timeout=NETWORK_TIMEOUT_S)
        except git.GitCommandError as exc:
            raise _unreachable(url, exc) from exc
        if not _has_commit(repo, revision):
            try:  # servers that allow fetching a commit id directly
                repo.git.fetch("origin", revision, env={**os.environ, **_GIT_ENV},
                               kill_after_timeout=NETWORK_TIMEOUT_S)
            except git.GitCommandError:
                pass
        if not _has_commit(repo, revision):
            raise ReferenceRevisionError(
                f"revision {revision} does not exist in {url}; check --reference-rev (the pin) "
                "against the repository's history"
            )
    if not repo.head.is_valid() or repo.head.commit.hexsha != revision or not repo.head.is_detached:
        repo.git.checkout("--detach", "--quiet", revision)
    return verify_checkout(dest, revision, url)


def remote_head(url: str) -> str:
    """The commit the remote's HEAD points at (for a URL given without a revision)."""
    try:
        out = git.cmd.Git().ls_remote(url, "HEAD", env={**os.environ, **_GIT_ENV},
                                      kill_after_timeout=NETWORK_TIMEOUT_S)
    except git.GitCommandError as exc:
        raise _unreachable(url, exc) from exc
    sha = out.split()[0] if out.strip() else ""
    if not _FULL_SHA.match(sha):
        raise ReferenceRevisionError(f"{url} has no HEAD to pin; pass --reference-rev SHA")
    return sha
