"""Fixtures shared across test modules."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def reference_cache(tmp_path_factory) -> Path:
    """One PARITY_CACHE per test session for the reference tests, so the reference env is built once."""
    return tmp_path_factory.getbasetemp() / "parity-reference-cache"
