"""The GPU target's host side, run on the CPU: kernel libraries built the production way
(``jit(..., target="gpu")`` -> kernel cache -> ``GpuKernel``) run against a recording
stand-in for ``libmlir_cuda_runtime`` (tests/support: device memory is host memory,
launches are recorded, not run). Kernel modules load as cubins when the library loads,
inputs are copied to plain device allocations (never host-shared), every kernel launches
on one stream, outputs are copied back into the caller's arrays, every allocation is
freed, and a second process loads the library from the disk cache. Kernel numerics need a
real device (tests/test_gpu.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("compiler.gpu")
from compiler.gpu_toolchain import ToolchainError, find_toolchain  # noqa: E402

try:
    find_toolchain()
except ToolchainError as exc:  # pragma: no cover
    pytest.skip(f"no CUDA toolchain: {exc}", allow_module_level=True)

SUPPORT = Path(__file__).parent / "support"
STREAM = 0x5150  # the fake runtime's stream handle


def run_worker(fake_runtime: Path, cache: Path) -> dict[str, dict]:
    env = {**os.environ, "PARITY_CACHE": str(cache), "PYTHONPATH": str(Path(__file__).parent.parent)}
    env.pop("PARITY_NO_DISK_CACHE", None)
    done = subprocess.run([sys.executable, str(SUPPORT / "gpu_host_worker.py"), str(fake_runtime)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {r["scenario"]: r for r in results}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two processes over one kernel cache: the first builds every library, the second loads them."""
    compiler_driver = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    assert compiler_driver, "a C compiler is needed (the CPU kernel cache links with it too)"
    base = tmp_path_factory.mktemp("gpu-host")
    fake = base / "fake_cuda_runtime.so"
    subprocess.run([compiler_driver, "-shared", "-fPIC", "-o", str(fake), str(SUPPORT / "fake_cuda_runtime.c")], check=True)
    return run_worker(fake, base / "cache"), run_worker(fake, base / "cache")


def of(result, kind):
    return [c for c in result["calls"] if c[0] == kind]


def test_kernel_modules_load_as_cubins_when_the_library_loads(runs):
    first, _ = runs
    result = first["softmax"]
    assert result["kernel_class"] == "GpuKernel"
    loads = of(result, "load")
    assert len(loads) == result["ptx_units"]
    assert all(magic == "7f454c46" for _, magic in loads), "every embedded kernel module is a cubin (ELF)"
    assert result["calls"].index(loads[-1]) < result["calls"].index(["stream"]), "modules load before the first call"
    assert len(of(result, "launch")) >= result["ptx_units"]


def test_explicit_copies_plain_device_memory_one_stream(runs):
    first, _ = runs
    result = first["gelu_matmul_and_sum"]
    calls = result["calls"]
    body = calls[calls.index(["stream"]):]
    assert all(c[2] == 0 for c in of(result, "alloc")), "device allocations must not be host-shared (managed)"
    to_device = [c for c in of(result, "memcpy") if c[1] == "to_device"]
    to_host = [c for c in of(result, "memcpy") if c[1] == "to_host"]
    # the caller's bytes go over, in argument order: the memref descriptors point at the right arrays
    assert [c[4] for c in to_device] == result["input_digests"]
    assert [c[2] for c in to_device] == result["input_bytes"]
    assert sorted(c[2] for c in to_host) == sorted([6 * 3 * 8, 6 * 4])
    assert not [c for c in of(result, "memcpy") if c[1] == "other"]
    stream_position = {"launch": 3, "memcpy": 3, "alloc": 3}
    streams = {c[stream_position[c[0]]] for c in body if c[0] in stream_position}
    assert streams == {STREAM}, "every copy and launch is ordered on one stream"
    first_launch = body.index(of(result, "launch")[0])
    last_launch = body.index(of(result, "launch")[-1])
    assert all(body.index(c) < first_launch for c in to_device), "inputs go over before the first launch"
    assert all(body.index(c) > last_launch for c in to_host), "results come back after the last launch"
    assert body[-2:] == [["sync", STREAM], ["destroy", STREAM]]
    assert result["live_allocations"] == 0, "every device allocation is freed"
    # no kernel ran, so the results hold fresh device memory: proof they were copied into the caller's arrays
    assert result["outputs"] == [{"shape": [6, 3], "dtype": "float64", "all_pattern": True},
                                 {"shape": [6], "dtype": "float32", "all_pattern": True}]


def test_matmul_launch_geometry(runs):
    from compiler.gpu_matmul import TILE as tile
    first, _ = runs
    grids = [(tuple(c[1]), tuple(c[2])) for c in of(first["matmul"], "launch")]
    assert (((19 + tile - 1) // tile, (37 + tile - 1) // tile, 1), (tile, tile, 1)) in grids
    assert all(b[0] * b[1] * b[2] <= 1024 for _, b in grids)


def test_second_process_loads_kernel_libraries_from_the_disk_cache(runs):
    first, second = runs
    assert all(not r["from_disk_cache"] for r in first.values())
    assert all(r["from_disk_cache"] for r in second.values())
    for name in first:
        assert second[name]["calls"] == first[name]["calls"], f"{name}: the cached library behaves as the fresh one"
