"""Finding the CUDA tools the GPU target needs: ``ptxas`` (PTX -> cubin) and
``libdevice.10.bc`` (the math functions linked into kernels). Search order: an
explicit setting (``PARITY_PTXAS``, ``PARITY_LIBDEVICE``), then the PyPI CUDA
compiler wheels (``nvidia-cuda-nvcc-*``), then a system CUDA installation."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

PTXAS_ENV = "PARITY_PTXAS"
LIBDEVICE_ENV = "PARITY_LIBDEVICE"
LIBDEVICE_RELATIVE = Path("nvvm") / "libdevice" / "libdevice.10.bc"


class ToolchainError(RuntimeError):
    """A CUDA tool the GPU target needs is missing or unusable; the message names it and where we looked."""


@dataclass(frozen=True)
class GpuToolchain:
    ptxas: str
    libdevice: str

    def ptxas_version(self) -> str:
        """The version line of ``ptxas --version``, e.g. "Cuda compilation tools, release 13.0, V13.0.88"."""
        out = subprocess.run([self.ptxas, "--version"], capture_output=True, text=True, check=False).stdout
        lines = out.strip().splitlines()
        return next((line for line in lines if "release" in line), lines[-1] if lines else "unknown")

    def assemble(self, ptx: str, chip: str, cubin: Path) -> None:
        """Run ptxas on PTX text; ToolchainError with ptxas's message when it rejects it."""
        src = cubin.with_suffix(".ptx")
        src.write_text(ptx)
        done = subprocess.run([self.ptxas, f"-arch={chip}", str(src), "-o", str(cubin)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ToolchainError(f"ptxas rejected the PTX for {chip}:\n{done.stderr.strip()}")


def _wheel_roots() -> list[Path]:
    """Package folders of the NVIDIA compiler wheels: nvidia/cuda_nvcc (CUDA 12) and nvidia/cu13 (CUDA 13)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    roots = []
    for base in spec.submodule_search_locations:
        base = Path(base)
        roots += [base / "cuda_nvcc"] + sorted(base.glob("cu1*"), reverse=True)
    return [r for r in roots if r.is_dir()]


def _system_roots() -> list[Path]:
    roots = [Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT") if os.environ.get(v)]
    on_path = shutil.which("ptxas")
    if on_path:
        roots.append(Path(on_path).resolve().parent.parent)
    roots.append(Path("/usr/local/cuda"))
    roots += sorted(Path("/usr/local").glob("cuda-*"), reverse=True)
    return roots


def _explicit(env: str, what: str) -> Path | None:
    value = os.environ.get(env)
    if not value:
        return None
    path = Path(value)
    if not path.is_file():
        raise ToolchainError(f"{env}={value}: no such file (it should name {what})")
    return path


def find_ptxas() -> str:
    explicit = _explicit(PTXAS_ENV, "the ptxas executable")
    if explicit is not None:
        if not os.access(explicit, os.X_OK):
            raise ToolchainError(f"{PTXAS_ENV}={explicit}: not executable")
        return str(explicit)
    candidates = [root / "bin" / "ptxas" for root in _wheel_roots() + _system_roots()]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    on_path = shutil.which("ptxas")
    if on_path:
        return on_path
    raise ToolchainError(
        "ptxas not found: set PARITY_PTXAS, install the CUDA compiler wheel (pip install nvidia-cuda-nvcc-cu12) "
        "or a CUDA toolkit; looked in " + ", ".join(str(c) for c in candidates[:6]) + " and PATH")


def find_libdevice() -> str:
    explicit = _explicit(LIBDEVICE_ENV, "libdevice.10.bc")
    if explicit is not None:
        return str(explicit)
    candidates = [root / LIBDEVICE_RELATIVE for root in _wheel_roots() + _system_roots()]
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    raise ToolchainError(
        "libdevice.10.bc not found: set PARITY_LIBDEVICE, install the CUDA compiler wheel (pip install "
        "nvidia-cuda-nvcc-cu12) or a CUDA toolkit; looked in " + ", ".join(str(c) for c in candidates[:6]))


@functools.cache
def _cached(ptxas_env, libdevice_env) -> GpuToolchain:
    return GpuToolchain(find_ptxas(), find_libdevice())


def find_toolchain() -> GpuToolchain:
    """The ptxas and libdevice to use (cached per setting of the two environment variables)."""
    return _cached(os.environ.get(PTXAS_ENV), os.environ.get(LIBDEVICE_ENV))
