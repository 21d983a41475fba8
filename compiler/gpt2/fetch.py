"""Download the real GPT-2 (``openai-community/gpt2`` at a pinned revision) from the
Hugging Face hub with huggingface_hub, into a checkpoint directory with a manifest of
sha256s, each checked against the sha256 the hub states for a git-lfs file. The download is staged in a temporary directory, validated by ``load_model``
and only then renamed into place, so a failed or invalid download leaves nothing behind
(the staging directory of a fetch killed midway is swept by a later fetch once an hour old).
``HF_ENDPOINT`` (or the ``endpoint`` argument) points it at a mirror or a test server."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import socket
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from compiler.gpt2.checkpoint import (
    CHECKPOINT_FILES,
    CheckpointError,
    CheckpointInfo,
    apply_umask_permissions,
    build_manifest,
    check_destination,
    checkpoint_info,
    is_occupied,
    load_model,
    move_into_place,
    resolve_destination,
    staging_prefix,
    sweep_stale_staging,
    write_manifest,
)

REPO_ID = "openai-community/gpt2"
PINNED_REVISION = "607a30d783dfa663caf39e06633721c8d4cfcd7e"
DEFAULT_ENDPOINT = "https://huggingface.co"
CONNECT_TIMEOUT_S = 10.0


class FetchError(RuntimeError):
    """The hub could not be reached or did not serve the pinned checkpoint."""


def hub_endpoint(endpoint: str | None = None) -> str:
    """The endpoint to use: the argument, else ``$HF_ENDPOINT`` read now (not at import), else the public hub."""
    return (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _offline_message(endpoint: str, detail: object) -> str:
    return (
        f"cannot reach the Hugging Face hub at {endpoint} ({detail}); "
        "use `parity synth-model DIR` for an offline synthetic checkpoint"
    )


def _one_line(err: BaseException) -> str:
    """huggingface_hub's messages span several lines (request ids, hints); CLI errors are one line."""
    return " ".join(str(err).split()) or type(err).__name__


def check_reachable(endpoint: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Fail fast with a clear message when nothing listens at the endpoint (huggingface_hub would retry
    for tens of seconds before giving a generic error)."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(f"hub endpoint {endpoint!r} is not an http(s) URL")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except OSError as err:
        raise FetchError(_offline_message(endpoint, err)) from None


def _quiet_tqdm():
    from tqdm.auto import tqdm

    class QuietTqdm(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    return QuietTqdm


@contextlib.contextmanager
def _hub_warnings_silenced():
    """huggingface_hub logs a warning for every retried request; the one failure that matters is
    reported by FetchError, in one line, so its retries stay quiet."""
    logger = logging.getLogger("huggingface_hub")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _download(filename: str, local_dir: Path, cache_dir: Path, revision: str, endpoint: str, progress: Any) -> Path:
    import huggingface_hub
    from huggingface_hub.errors import (
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )
    from huggingface_hub.errors import HTTPError as HubNetworkError  # the base of the httpx errors the hub client raises

    try:
        with _hub_warnings_silenced():
            path = huggingface_hub.hf_hub_download(
                REPO_ID,
                filename,
                revision=revision,
                local_dir=local_dir,
                cache_dir=cache_dir,  # a throwaway cache: never the user's ~/.cache/huggingface
                endpoint=endpoint,
                token=False,  # public model: never send stored credentials
                tqdm_class=None if progress else _quiet_tqdm(),
            )
    # Most specific first: in huggingface_hub 2.x LocalEntryNotFoundError (nothing reachable, nothing cached)
    # and RemoteEntryNotFoundError (the hub answered 404) are both EntryNotFoundErrors, and every
    # HfHubHTTPError is also an httpx HTTPError and an OSError.
    except RevisionNotFoundError:
        raise FetchError(f"{endpoint}: revision {revision} of {REPO_ID} not found") from None
    except RepositoryNotFoundError:
        raise FetchError(f"{endpoint}: repository {REPO_ID} not found") from None
    except RemoteEntryNotFoundError:
        raise FetchError(f"{endpoint}: {REPO_ID}@{revision} has no file {filename}") from None
    except LocalEntryNotFoundError as err:  # the hub failed (5xx after retries, connection lost) before any byte came
        raise FetchError(_offline_message(endpoint, _one_line(err.__cause__ or err))) from None
    except HfHubHTTPError as err:
        raise FetchError(f"{endpoint}: downloading {filename} failed: {_one_line(err)}") from None
    except (HubNetworkError, OSError) as err:  # a transfer cut short (httpx RemoteProtocolError), disk full, ...
        raise FetchError(f"downloading {filename} from {endpoint} failed: {type(err).__name__}: {_one_line(err)}") from None
    return Path(path)


def _hub_sha256(filename: str, revision: str, endpoint: str) -> str | None:
    """The sha256 the hub states for a file (its ETag for a file kept in git-lfs, as the weights are),
    or None where the ETag is not one (a small file's git blob id, which hashes differently)."""
    import huggingface_hub

    url = huggingface_hub.hf_hub_url(REPO_ID, filename, revision=revision, endpoint=endpoint)
    try:
        with _hub_warnings_silenced():
            etag = huggingface_hub.get_hf_file_metadata(url, token=False).etag
    except Exception as err:  # noqa: BLE001 -- any failure here is the hub's, reported in one line
        raise FetchError(f"{endpoint}: asking the hub for {filename}'s hash failed: {_one_line(err)}") from None
    etag = (etag or "").strip('"').lower()
    return etag if re.fullmatch(r"[0-9a-f]{64}", etag) else None


def _verify_download(path: Path, filename: str, revision: str, endpoint: str) -> None:
    """A download whose bytes do not hash to what the hub states is refused: huggingface_hub checks only the
    length, so a mirror serving other bytes of the same size, or a transfer corrupted on the way, would
    otherwise land as the pinned checkpoint."""
    stated = _hub_sha256(filename, revision, endpoint)
    if stated is None:
        return
    with path.open("rb") as f:
        got = hashlib.file_digest(f, "sha256").hexdigest()
    if got != stated:
        raise FetchError(f"{endpoint}: {filename} of {REPO_ID}@{revision} downloaded with sha256 {got}, but the hub "
                         f"states {stated}: the download is corrupt or the mirror serves other bytes")


def _validate_download(staging: Path, dest: Path) -> None:
    """``load_model`` on the staged download, its errors naming the files as they would be in ``dest``: the staging
    directory is deleted by the time the user reads the message."""
    try:
        load_model(staging)
    except CheckpointError as err:
        raise CheckpointError(f"the download is not a valid checkpoint: {str(err).replace(str(staging), str(dest))}") from None


def fetch_model(
    dest: str | Path,
    revision: str = PINNED_REVISION,
    endpoint: str | None = None,
    progress: Any = None,
    overwrite: bool = False,
) -> CheckpointInfo:
    """Download GPT-2 at ``revision`` into ``dest`` and return its validated ``CheckpointInfo``."""
    dest = resolve_destination(dest)
    endpoint = hub_endpoint(endpoint)
    check_destination(dest, overwrite)
    if is_occupied(dest) and not overwrite:
        raise CheckpointError(f"{dest} already exists and is not empty (pass --force to replace it)")
    check_reachable(endpoint)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_staging(dest)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=staging_prefix(dest)) as tmp:
        download_dir, staging = Path(tmp) / "download", Path(tmp) / "checkpoint"
        staging.mkdir()
        for filename in CHECKPOINT_FILES:
            path = _download(filename, download_dir, Path(tmp) / "hf-cache", revision, endpoint, progress)
            _verify_download(path, filename, revision, endpoint)
            os.replace(path, staging / filename)
        manifest = build_manifest(staging, name=f"gpt2@{revision[:12]}", source="huggingface",
                                  repo_id=REPO_ID, revision=revision, endpoint=endpoint)  # fmt: skip
        write_manifest(staging, manifest)
        _validate_download(staging, dest)  # an invalid download never lands at dest
        apply_umask_permissions(staging)
        move_into_place(staging, dest, overwrite=overwrite, accept_existing=lambda: False)
    return checkpoint_info(dest)
