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
from typing import NamedTuple

import pytest

pytest.importorskip("compiler.gpu")
from compiler.gpu_toolchain import ToolchainError, find_toolchain  # noqa: E402

try:
    find_toolchain()
except ToolchainError as exc:  # pragma: no cover
    pytest.skip(f"no CUDA toolchain: {exc}", allow_module_level=True)

SUPPORT = Path(__file__).parent / "support"
STREAM = 0x5150  # the fake runtime's stream handle


def run_worker(fake_runtime: Path, cache: Path, workdir: Path, *extra: str) -> dict[str, dict]:
    root = str(Path(__file__).parent.parent)
    env = {**os.environ, "PARITY_CACHE": str(cache),
           "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    env.pop("PARITY_NO_DISK_CACHE", None)
    done = subprocess.run([sys.executable, str(SUPPORT / "gpu_host_worker.py"), str(fake_runtime), str(workdir), *extra],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert results, done.stdout[-2000:]
    return {r["scenario"]: r for r in results}


class Runs(NamedTuple):
    first: dict      # scenario -> result, from a process that built every library
    second: dict     # the same from a process that loaded them from the cache
    fake_runtime: Path
    base: Path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two processes over one kernel cache: the first builds every library, the second loads them."""
    compiler_driver = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    assert compiler_driver, "a C compiler is needed (the CPU kernel cache links with it too)"
    base = tmp_path_factory.mktemp("gpu-host")
    fake = base / "fake_cuda_runtime.so"
    subprocess.run([compiler_driver, "-shared", "-fPIC", "-o", str(fake), str(SUPPORT / "fake_cuda_runtime.c")], check=True)
    (base / "one").mkdir()
    (base / "two").mkdir()
    return Runs(run_worker(fake, base / "cache", base / "one"), run_worker(fake, base / "cache", base / "two"), fake, base)


def of(result, kind):
    return [c for c in result["calls"] if c[0] == kind]


def test_kernel_modules_load_as_cubins_when_the_library_loads(runs):
    first = runs.first
    result = first["softmax"]
    assert result["kernel_class"] == "GpuKernel"
    loads = of(result, "load")
    assert len(loads) == result["ptx_units"]
    assert all(magic == "7f454c46" for _, magic in loads), "every embedded kernel module is a cubin (ELF)"
    assert result["calls"].index(loads[-1]) < result["calls"].index(["stream"]), "modules load before the first call"
    assert len(of(result, "launch")) >= result["ptx_units"]


def test_explicit_copies_plain_device_memory_one_stream(runs):
    first = runs.first
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
    streams = {c[3] for c in body if c[0] in ("launch", "memcpy", "alloc")}  # each records its stream 4th
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


def test_every_call_checks_the_device_for_errors(runs):
    """libmlir_cuda_runtime only prints a failed driver call; the context is synchronized once after
    each call (every push popped), and a sticky error raises CudaError instead of returning outputs."""
    for name, result in runs.first.items():
        if "calls" in result:
            assert (result["context_synchronizes"], result["context_depth"]) == (1, 0), name
    error = runs.first["device_error"]
    assert error["outcome"].startswith("@") and "CUDA_ERROR_ILLEGAL_ADDRESS (700)" in error["outcome"]
    assert error["context_depth"] == 0


def test_matmul_launch_geometry(runs):
    from compiler.gpu_matmul import TILE as tile
    first = runs.first
    grids = [(tuple(c[1]), tuple(c[2])) for c in of(first["matmul"], "launch")]
    assert (((19 + tile - 1) // tile, (37 + tile - 1) // tile, 1), (tile, tile, 1)) in grids
    assert all(b[0] * b[1] * b[2] <= 1024 for _, b in grids)


def test_second_process_loads_kernel_libraries_from_the_disk_cache(runs):
    first, second = runs.first, runs.second
    compiled = [name for name in first if "calls" in first[name]]
    assert all(not first[name]["from_disk_cache"] for name in compiled)
    assert all(second[name]["from_disk_cache"] for name in compiled)
    for name in compiled:
        assert without_values(second[name]["calls"]) == without_values(first[name]["calls"]), \
            f"{name}: the cached library behaves as the fresh one"


def without_values(calls):
    """Calls without the kernels' parameter values (pointers differ from process to process)."""
    return [c[:5] if c[0] == "launch" else c for c in calls]


def test_device_resident_weight_is_uploaded_once_and_passed_to_kernels_as_is(runs):
    first = runs.first
    result = first["resident"]
    x_digest, w_digest = result["input_digests"]
    pointer = result["device_pointer"]
    # to_device: one plain allocation, one copy of the weight's bytes, finished before it returns
    upload = result["upload"]
    assert upload[0][:3] == ["alloc", 12 * 7 * 4, 0]
    assert [c[4] for c in upload if c[0] == "memcpy"] == [w_digest]
    assert upload[-2][0] == "sync"
    # a later call copies only the host input; the kernels get the weight's device pointer itself
    call = result["second_call"]
    assert [c[4] for c in call if c[0] == "memcpy" and c[1] == "to_device"] == [x_digest]
    assert 12 * 7 * 4 not in [c[1] for c in call if c[0] == "alloc"], "no device copy of the resident weight"
    assert any(pointer in c[5] for c in call if c[0] == "launch")
    assert not [c for c in call if c[0] == "free" and c[1] == 12 * 7 * 4], "the call never frees the caller's weight"
    assert result["round_trip_equal"]
    assert result["live_allocations_before_free"] == 1
    assert first["resident_freed"]["live_allocations"] == 0, "dropping the DeviceArray frees its memory"


def test_gpt2_on_the_gpu_uploads_its_weights_once(runs):
    first = runs.first
    result = first["gpt2_fused"]
    weights = result["weight_bytes"]
    # first forward: every weight array once, plus the small per-call inputs
    assert sum(result["first_copies"]) >= weights
    assert len(result["first_copies"]) >= result["weight_arrays"]
    # second forward: only token ids, the last-row index and small constants
    assert sum(result["second_copies"]) < weights / 100
    assert len(result["second_copies"]) <= len(result["first_copies"]) - result["weight_arrays"]


def test_gpt2_subgraph_keeps_the_residual_stream_on_the_device(runs):
    result = runs.first["gpt2_subgraph"]
    n_layer, width, vocab = result["n_layer"], result["n_embd"], result["vocab"]
    assert result["sublayer_calls"] == 1 + 2 * n_layer + 1
    # in: the padded ids (8 int64), the last row's index and small constants (the causal mask);
    # no activation (8 rows of the width, float32 at least) ever crosses to the device
    assert 64 in result["to_device"] and 8 in result["to_device"]
    assert max(result["to_device"]) < 8 * width * 4
    # out: the logits only (float64), never an activation
    assert result["to_host"] == [vocab * 8]
    assert result["logits"] == [[vocab], "float64"]
    # a trace still holds host arrays of every tensor, the real rows only
    trace = result["trace"]
    assert len(trace) == 1 + 2 * n_layer + 1
    assert trace["embedding"] == [[4, width], "float32", "ndarray"]
    assert trace[f"h.{n_layer - 1}.output"] == [[4, width], "float64", "ndarray"]


def test_a_cached_library_that_does_not_load_is_rebuilt(runs):
    import hashlib

    fake, base = runs.fake_runtime, runs.base
    cache = base / "corrupt-cache"
    shutil.copytree(base / "cache", cache)
    entries = [e for e in (cache / "kernels").iterdir() if not e.name.startswith(".")]
    for entry in entries:  # intact checksums over bytes that are no shared library
        junk = b"\x7fELF" + os.urandom(512)
        (entry / "kernel.so").write_bytes(junk)
        meta = json.loads((entry / "meta.json").read_text())
        meta["sha256"] = hashlib.sha256(junk).hexdigest()
        (entry / "meta.json").write_text(json.dumps(meta))
    (base / "three").mkdir()
    third = run_worker(fake, cache, base / "three")
    compiled = [name for name in third if "calls" in third[name]]
    assert compiled and all(not third[name]["from_disk_cache"] for name in compiled)
    assert without_values(third["softmax"]["calls"]) == without_values(runs.first["softmax"]["calls"])


# --------------------------------------------------------------------------- device-memory cache


@pytest.fixture(scope="module")
def memory_cache_run(runs):
    """compiler/gpu_memory_cache.c between the kernel libraries and the fake runtime."""
    (runs.base / "mc").mkdir()
    return run_worker(runs.fake_runtime, runs.base / "mc-cache", runs.base / "mc", "--memory-cache")


def test_repeated_calls_reuse_device_blocks_instead_of_allocating(memory_cache_run):
    calls, stats = memory_cache_run["memory_cache_calls"]["calls"], memory_cache_run["memory_cache_calls"]["stats"]
    first, second, other_shapes = calls

    def count(c, kind):
        return sum(1 for x in c if x[0] == kind)

    n = count(first, "alloc")
    assert n > 0 and count(first, "free") == 0, "freed blocks are kept, not given back"
    assert stats[0] == {"hits": 0, "misses": n, "cached_blocks": n, "cached_bytes": stats[0]["cached_bytes"],
                        "blocks_in_use": 0}
    assert count(second, "alloc") == 0 and count(second, "free") == 0
    assert stats[1]["hits"] == n and stats[1]["misses"] == n
    # the same blocks (same-sized ones may trade places), so the kernels see the same device pointers
    def values(c):
        return {v for x in c if x[0] == "launch" for v in x[6]}

    assert values(first) and values(second) == values(first)
    assert [c[:3] for c in second if c[0] == "launch"] == [c[:3] for c in first if c[0] == "launch"]
    assert [c[:3] for c in second if c[0] == "memcpy"] == [c[:3] for c in first if c[0] == "memcpy"]
    # other shapes: the sizes seen before are served from the cache, only the new ones allocated
    new = count(other_shapes, "alloc")
    assert 0 < new < n and stats[2]["hits"] - stats[1]["hits"] == n - new


@pytest.mark.parametrize("probe", [
    "other_stream_before_sync_is_new",         # a queued kernel on the first stream may still read it
    "same_stream_reuses_at_once",              # the queue orders the new user after the old ones
    "any_stream_after_sync_reuses",
    "destroyed_unsynchronized_is_released",    # given back (cuMemFree waits for its kernels), never reused
    "released_is_not_reused",
    "out_of_memory_releases_the_cache_and_retries",
    "limit_releases_what_exceeds_it",
])
def test_memory_cache_stream_rule_and_limits(memory_cache_run, probe):
    assert memory_cache_run["memory_cache_probes"]["probes"][probe] is True


def test_every_copy_and_free_runs_with_the_cuda_context_current(runs):
    """libmlir_cuda_runtime's mgpuMemcpy and mgpuMemFree make no context current themselves; the
    kernels' own copies and frees, DeviceArray uploads, downloads and frees all run inside one."""
    for run in (runs.first, runs.second):
        assert run["context"]["without_context"] == []
    assert of(runs.first["softmax"], "memcpy") and runs.first["resident_freed"]["live_allocations"] == 0
