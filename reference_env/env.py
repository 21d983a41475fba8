"""The reference's own Python environment: an isolated venv (separate from Parity's) built
from the reference's ``uv.lock`` with uv (venv + pip as the fallback), cached under the
Parity cache keyed by the lock's content and the exact Python version, built in a
temporary directory and renamed into place so a half-built env is never used."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from compiler.paths import cache_root

from .errors import ReferenceEnvError
from .pin import REFERENCE_PYTHON

ENV_RECORD = "parity-env.json"
Progress = Callable[[str], None] | None


@dataclass(frozen=True)
class ReferenceEnv:
    """A built reference environment and what it holds."""

    path: Path
    python: Path
    python_version: str
    numpy_version: str
    key: str
    installer: str  # "uv" or "pip"


def envs_dir() -> Path:
    return cache_root() / "reference-envs"


def _say(progress: Progress, message: str) -> None:
    if progress is not None:
        progress(message)


def _interpreter_version(candidate: str) -> str | None:
    try:
        out = subprocess.run(
            [candidate, "-c", "import sys; print('.'.join(map(str, sys.version_info[:3])))"],
            capture_output=True, text=True, timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def find_python(version: str = REFERENCE_PYTHON) -> tuple[Path, str]:
    """An interpreter for ``version`` ("3.12"): on PATH, else under pyenv (whose shims fail for
    versions that are installed but not selected). Returns (path, full version)."""
    candidates = []
    if os.environ.get("PARITY_REFERENCE_PYTHON"):
        candidates.append(os.environ["PARITY_REFERENCE_PYTHON"])
    found = shutil.which(f"python{version}")
    if found:
        candidates.append(found)
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(os.path.join(pyenv_root, "versions", f"{version}*", "bin", f"python{version}")), reverse=True)
    candidates += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        candidates.append(sys.executable)
    for candidate in candidates:
        full = _interpreter_version(candidate)
        if full is not None and (full == version or full.startswith(version + ".")):
            return Path(candidate), full
    raise ReferenceEnvError(
        f"the reference needs Python {version}, and none was found (tried python{version} on PATH and "
        f"pyenv versions under {pyenv_root}); install it (pyenv install {version}) or point "
        "PARITY_REFERENCE_PYTHON at one"
    )


def env_key(lock_bytes: bytes, python_version: str) -> str:
    return hashlib.sha256(lock_bytes + b"\0python=" + python_version.encode()).hexdigest()[:20]


def _uv() -> str | None:
    local = Path(sys.executable).parent / "uv"
    if local.exists():
        return str(local)
    return shutil.which("uv")


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("VIRTUAL_ENV", None)  # uv would otherwise act on Parity's own env
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(cmd, 124, exc.stdout or "", f"timed out after {timeout}s")
    except OSError as exc:
        return subprocess.CompletedProcess(cmd, 127, "", str(exc))


def _tail(proc: subprocess.CompletedProcess) -> str:
    text = ((proc.stderr or "") + (proc.stdout or "")).strip()
    return text[-1500:]


def export_requirements(checkout: Path, out: Path) -> None:
    """The reference's locked dependencies (with hashes), exactly as its uv.lock pins them."""
    uv = _uv()
    if uv is None:
        raise ReferenceEnvError("uv is not installed; install Parity's pinned dependencies (it pins uv)")
    proc = _run([uv, "export", "--frozen", "--no-emit-project", "--no-dev", "--no-header",
                 "--format", "requirements-txt", "--output-file", str(out)], cwd=checkout)
    if proc.returncode != 0:
        raise ReferenceEnvError(
            f"could not export the reference's locked requirements from {checkout / 'uv.lock'}:\n{_tail(proc)}\n"
            "The lock file may be from a newer uv or inconsistent with pyproject.toml; check the reference revision"
        )


def _install_with_uv(target: Path, interpreter: Path, requirements: Path) -> tuple[bool, str]:
    uv = _uv()
    if uv is None:
        return False, "uv not found"
    proc = _run([uv, "venv", "--quiet", "--python", str(interpreter), str(target)])
    if proc.returncode != 0:
        return False, "uv venv: " + _tail(proc)
    proc = _run([uv, "pip", "install", "--quiet", "--python", str(target / "bin" / "python"), "-r", str(requirements)])
    if proc.returncode != 0:
        return False, "uv pip install: " + _tail(proc)
    return True, ""


def _install_with_pip(target: Path, interpreter: Path, requirements: Path) -> tuple[bool, str]:
    shutil.rmtree(target, ignore_errors=True)
    proc = _run([str(interpreter), "-m", "venv", str(target)])
    if proc.returncode != 0:
        return False, "python -m venv: " + _tail(proc)
    proc = _run([str(target / "bin" / "python"), "-m", "pip", "install", "--quiet", "-r", str(requirements)])
    if proc.returncode != 0:
        return False, "pip install: " + _tail(proc)
    return True, ""


def _numpy_version(python: Path) -> str:
    proc = _run([str(python), "-I", "-c", "import numpy; print(numpy.__version__)"], timeout=120)
    if proc.returncode != 0:
        raise ReferenceEnvError(f"the reference env at {python.parent.parent} cannot import numpy:\n{_tail(proc)}")
    return proc.stdout.strip()


def _load_existing(path: Path, key: str) -> ReferenceEnv | None:
    try:
        record = json.loads((path / ENV_RECORD).read_text())
    except (OSError, ValueError):
        return None
    python = path / "bin" / "python"
    if record.get("key") != key or not python.exists():
        return None
    return ReferenceEnv(path=path, python=python, python_version=record["python_version"],
                        numpy_version=record["numpy_version"], key=key, installer=record.get("installer", "?"))


def ensure_env(checkout: Path, python_version: str = REFERENCE_PYTHON, base: Path | None = None,
               progress: Progress = None, installer: str = "auto") -> ReferenceEnv:
    """The reference env for ``checkout``'s uv.lock: reused when its key matches, otherwise
    built from scratch. ``installer``: "auto" (uv, then venv+pip), "uv" or "pip"."""
    checkout = Path(checkout)
    lock = checkout / "uv.lock"
    if not lock.is_file():
        raise ReferenceEnvError(
            f"the reference checkout {checkout} has no uv.lock; Parity installs the reference only "
            "from its own lock file. Check that --reference points at tiny-gpt2 (or a fork with its lock)"
        )
    interpreter, full_version = find_python(python_version)
    key = env_key(lock.read_bytes(), full_version)
    base = Path(base) if base is not None else envs_dir()
    dest = base / key
    existing = _load_existing(dest, key)
    if existing is not None:
        return existing
    base.mkdir(parents=True, exist_ok=True)
    _say(progress, f"building the reference env (Python {full_version}) from {lock} -> {dest}")
    staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=base))
    try:
        requirements = staging / "requirements.txt"
        export_requirements(checkout, requirements)
        target = staging / "env"
        errors = []
        order = {"auto": ("uv", "pip"), "uv": ("uv",), "pip": ("pip",)}[installer]
        used = None
        for name in order:
            ok, why = (_install_with_uv if name == "uv" else _install_with_pip)(target, interpreter, requirements)
            if ok:
                used = name
                break
            errors.append(why)
            _say(progress, f"reference env install with {name} failed; " + ("trying venv+pip" if name == "uv" else "giving up"))
        if used is None:
            raise ReferenceEnvError(
                "could not install the reference's locked dependencies into its own env:\n"
                + "\n".join(errors)
                + "\nThe lock pins packages from PyPI: check that PyPI is reachable (or a uv/pip cache holds "
                "them) and that Python " + full_version + " has wheels for them."
            )
        shutil.copyfile(requirements, target / "requirements.txt")
        numpy_version = _numpy_version(target / "bin" / "python")
        record = {"key": key, "python_version": full_version, "interpreter": str(interpreter),
                  "numpy_version": numpy_version, "installer": used,
                  "lock_sha256": hashlib.sha256(lock.read_bytes()).hexdigest()}
        (target / ENV_RECORD).write_text(json.dumps(record, indent=2) + "\n")
        finished_meanwhile = _load_existing(dest, key)
        if finished_meanwhile is not None:  # another process built the same env first and may be running it
            return finished_meanwhile
        if dest.exists():  # a stale or half-removed env under this key
            shutil.rmtree(dest, ignore_errors=True)
        try:
            os.replace(target, dest)
        except OSError:
            pass  # another process finished first; its env has the same key
        env = _load_existing(dest, key)
        if env is None:
            raise ReferenceEnvError(f"the reference env at {dest} is unusable after building; delete it and retry")
        return env
    finally:
        shutil.rmtree(staging, ignore_errors=True)
