"""Download the real GPT-2 (``openai-community/gpt2`` at a pinned revision) from the
Hugging Face hub with huggingface_hub, into a checkpoint directory with a manifest of
sha256s. The download is staged in a temporary directory, validated by ``load_model``
and only then renamed into place, so a failed or invalid download leaves nothing behind.
``HF_ENDPOINT`` (or the ``endpoint`` argument) points it at a mirror or a test server."""

from __future__ import annotations

import os
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
    checkpoint_info,
    is_occupied,
    load_model,
    move_into_place,
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


def _download(filename: str, local_dir: Path, cache_dir: Path, revision: str, endpoint: str, progress: Any) -> Path:
    import huggingface_hub
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
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
    except RevisionNotFoundError:
        raise FetchError(f"{endpoint}: revision {revision} of {REPO_ID} not found") from None
    except RepositoryNotFoundError:
        raise FetchError(f"{endpoint}: repository {REPO_ID} not found") from None
    except EntryNotFoundError:
        raise FetchError(f"{endpoint}: {REPO_ID}@{revision} has no file {filename}") from None
    except LocalEntryNotFoundError as err:
        raise FetchError(_offline_message(endpoint, err.__cause__ or err)) from None
    except HfHubHTTPError as err:
        raise FetchError(f"{endpoint}: downloading {filename} failed: {err}") from None
    except OSError as err:  # connection errors surfacing mid-download, disk full, ...
        raise FetchError(f"downloading {filename} from {endpoint} failed: {err}") from None
    return Path(path)


def fetch_model(
    dest: str | Path,
    revision: str = PINNED_REVISION,
    endpoint: str | None = None,
    progress: Any = None,
    overwrite: bool = False,
) -> CheckpointInfo:
    """Download GPT-2 at ``revision`` into ``dest`` and return its validated ``CheckpointInfo``."""
    dest = Path(dest).expanduser()
    endpoint = hub_endpoint(endpoint)
    if is_occupied(dest) and not overwrite:
        raise CheckpointError(f"{dest} already exists and is not empty (pass --force to replace it)")
    check_reachable(endpoint)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{dest.name}.tmp-") as tmp:
        download_dir, staging = Path(tmp) / "download", Path(tmp) / "checkpoint"
        staging.mkdir()
        for filename in CHECKPOINT_FILES:
            path = _download(filename, download_dir, Path(tmp) / "hf-cache", revision, endpoint, progress)
            os.replace(path, staging / filename)
        manifest = build_manifest(staging, name=f"gpt2@{revision[:12]}", source="huggingface",
                                  repo_id=REPO_ID, revision=revision, endpoint=endpoint)  # fmt: skip
        write_manifest(staging, manifest)
        load_model(staging)  # an invalid download never lands at dest
        apply_umask_permissions(staging)
        move_into_place(staging, dest, overwrite=overwrite, accept_existing=lambda: False)
    return checkpoint_info(dest)
