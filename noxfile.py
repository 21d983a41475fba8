"""Nox sessions: the test suite, the CPU and GPU verification gates, the long
fuzzing profile and the benchmark. Each session builds its own environment with
uv (virtualenv as a fallback) from the pinned project dependencies."""

import os

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["tests"]

PROMPT = "Alan Turing theorized that computers would one day become"
PYTHON = "3.11"


def _install(session, extras=""):
    session.install("-e", f".{extras}")


@nox.session(python=PYTHON)
def tests(session):
    """The pytest suite (includes the quick fuzzing profile and replays the fuzz corpus)."""
    _install(session, "[test]")
    workers = os.environ.get("PARITY_TEST_WORKERS", "2")
    session.run("pytest", "-n", workers, "--dist", "loadgroup", *session.posargs)


@nox.session(name="verify-cpu", python=PYTHON)
def verify_cpu(session):
    """Subgraph and fused modes against the pinned reference on the default checkpoint, with the op
    audit: a CI gate on compiler changes should also fail on a miscompile no tensor tolerance sees
    (6 to 8 minutes on 2 cores after a change to the lowering, under a minute once its kernels are cached)."""
    _install(session)
    session.run(
        "parity", "verify", "--modes", "subgraph,fused", "--target", "cpu",
        "--prompt", PROMPT, "--tokens", "10", "--audit-ops", *session.posargs,
    )


@nox.session(name="verify-gpu", python=PYTHON)
def verify_gpu(session):
    """The GPU mode; every GPU check is reported `skipped` (exit 0) without a device."""
    _install(session)
    session.run(
        "parity", "verify", "--modes", "gpu", "--target", "gpu",
        "--prompt", PROMPT, "--tokens", "10", *session.posargs,
    )


@nox.session(python=PYTHON)
def fuzz(session):
    """The long fuzzing profile."""
    _install(session)
    session.run("parity", "fuzz", "--profile", "long", *session.posargs)


@nox.session(python=PYTHON)
def bench(session):
    """Warm per-token decode latency: NumPy reference vs subgraph vs fused."""
    _install(session)
    session.run("parity", "bench", *session.posargs)
