"""Errors raised while setting up the reference: each names the problem and what
to do about it, so the CLI can print it as is and exit 2."""

from __future__ import annotations


class ReferenceSetupError(RuntimeError):
    """Anything that stops Parity from obtaining, installing or running the reference."""


class ReferenceCheckoutMissingError(ReferenceSetupError):
    """The reference checkout (or local path) does not exist or is not a git repository."""


class ReferenceDirtyError(ReferenceSetupError):
    """The reference checkout has uncommitted or untracked changes."""


class ReferenceRevisionError(ReferenceSetupError):
    """The requested revision is absent, or HEAD is not the requested revision."""


class ReferenceUnreachableError(ReferenceSetupError):
    """The reference URL could not be cloned or fetched."""


class ReferenceFallbackError(ReferenceSetupError):
    """Strict mode: the pinned upstream is unavailable and falling back was refused."""


class ReferenceEnvError(ReferenceSetupError):
    """The reference's own environment could not be built."""


class CaptureError(ReferenceSetupError):
    """A capture could not be produced or loaded."""


class CaptureCorruptError(CaptureError):
    """A capture file on disk is unreadable, incomplete or fails its checksum."""


class CaptureMismatchError(CaptureError):
    """A capture on disk belongs to another checkpoint, prompt, revision or NumPy."""


class ReferenceRunError(CaptureError):
    """The capture runner failed inside the reference environment."""
