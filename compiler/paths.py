"""Where Parity keeps things on disk: the cache root (compiled artifacts, models,
reference checkouts and environments), overridable with ``PARITY_CACHE``."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The cache root: ``$PARITY_CACHE`` or ``~/.cache/parity``."""
    override = os.environ.get("PARITY_CACHE")
    return Path(override).expanduser() if override else Path.home() / ".cache" / "parity"
