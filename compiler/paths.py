"""Where Parity keeps things on disk: the cache root (compiled artifacts, models,
reference checkouts and environments), overridable with ``PARITY_CACHE``; and the one
rule for sweeping what writers killed before their final rename left behind."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Iterable

STALE_AFTER_S = 3600  # a writer that has not renamed its temporary into place within this is dead


def remove_stale(leftovers: Iterable[Path], max_age_s: float = STALE_AFTER_S) -> list[Path]:
    """Delete the ``leftovers`` (files or directories of killed writers) last modified more than
    ``max_age_s`` ago; recent ones may belong to a live writer and stay. Returns what was removed."""
    removed = []
    now = time.time()
    for leftover in leftovers:
        try:
            if now - leftover.stat().st_mtime > max_age_s:
                if leftover.is_dir() and not leftover.is_symlink():
                    shutil.rmtree(leftover)
                else:
                    leftover.unlink()
                removed.append(leftover)
        except OSError:
            pass  # another process swept it first
    return removed


def cache_root() -> Path:
    """The cache root: ``$PARITY_CACHE`` or ``~/.cache/parity``."""
    override = os.environ.get("PARITY_CACHE")
    return Path(override).expanduser() if override else Path.home() / ".cache" / "parity"
