"""The pin: which reference GPT-2 Parity verifies against (upstream URL, exact
revision, required Python) and the names used for it in reports."""

from __future__ import annotations

from dataclasses import dataclass

UPSTREAM_URL = "https://github.com/sdiehl/tiny-gpt2.git"
UPSTREAM_REVISION = "b8bd1dce2f03bc2ae27f157e073b3e27fd734910"
REFERENCE_PYTHON = "3.12"

# Report vocabulary for where a reference came from (the JSON's reference.kind).
KIND_UPSTREAM = "upstream"
KIND_BUNDLED = "bundled"
KIND_PATH = "path"
KINDS = (KIND_UPSTREAM, KIND_BUNDLED, KIND_PATH)


@dataclass(frozen=True)
class ReferencePin:
    """A reference repository at one exact commit, run under one Python version."""

    url: str = UPSTREAM_URL
    revision: str = UPSTREAM_REVISION
    python: str = REFERENCE_PYTHON

    def short(self) -> str:
        return f"{self.url}@{self.revision[:12]}"


UPSTREAM_PIN = ReferencePin()
