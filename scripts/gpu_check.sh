#!/usr/bin/env bash
# The one prepared check for a session lent an NVIDIA GPU machine (see the device tool):
# install the project, record the device and toolchain, run the GPU tests, verify-gpu and
# `parity bench --target gpu --json` (plus the CPU bench for comparison) on synthetic GPT-2
# small. Only 8 files come back from the device, so $OUT gets: summary.txt, the JSON results
# (verify_gpu, bench_gpu, bench_gpu_no_memory_cache, bench_cpu; verify_gpu_no_memory_cache
# only when verify_gpu failed) and logs.tar.gz (every step's log).
# Usage (from the repository root): OUT=/some/dir bash scripts/gpu_check.sh
set -uo pipefail
OUT="${OUT:-$PWD/gpu-check-out}"
LOGS="$(mktemp -d /tmp/parity-gpu-logs.XXXXXX)"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
summary="$OUT/summary.txt"
: > "$summary"
step() {  # step NAME COMMAND...: run, log to $LOGS/NAME.log, record the exit status and seconds
    local name=$1; shift
    local start=$SECONDS
    "$@" > "$LOGS/$name.log" 2>&1
    local rc=$?
    echo "$name rc=$rc $((SECONDS - start))s" | tee -a "$summary"
    return $rc
}
finish() {
    tar -C "$LOGS" -czf "$OUT/logs.tar.gz" .
    cat "$summary"
}
trap finish EXIT

step nvidia-smi nvidia-smi
step ptxas ptxas --version
# The device machine reaches no registry: unpack what scripts/pack_for_device.sh packed, when present.
mkdir -p /tmp/parity-parts && cp .device/parts/site.tar.xz.part-* /tmp/parity-parts/ 2>/dev/null
if ls /tmp/parity-parts/site.tar.xz.part-* >/dev/null 2>&1; then
    mkdir -p /tmp/parity-site
    step unpack sh -c "cat /tmp/parity-parts/site.tar.xz.part-* | xz -d | tar -x -C /tmp/parity-site"
    chmod +x /tmp/parity-site/mlir/bin/* /tmp/parity-site/llvm/bin/* 2>/dev/null
    export PYTHONPATH="/tmp/parity-site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
parity() { python3 -m harness.cli "$@"; }
if ! python3 -c "import compiler, harness, mlir.ir" 2>/dev/null; then
    python3 -m venv .venv-gpu && . .venv-gpu/bin/activate
    step install pip install -e ".[test]" nox || echo "install failed: see install.log" >> "$summary"
fi
# The default synthetic GPT-2 small is rebuilt on first use (deterministic; too large to carry).
export PARITY_CACHE="${PARITY_CACHE:-/tmp/parity-cache}"
# GPU kernels built ahead of time by scripts/pack_for_device.sh: nothing to compile here on a cache hit.
if [ -f .device/kernels.tar.xz ]; then
    mkdir -p "$PARITY_CACHE" && step kernels tar -xJf .device/kernels.tar.xz -C "$PARITY_CACHE"
fi
capture=$(ls captures/capture-*-10tok-*.json 2>/dev/null | head -n 1)
step device python3 -c "from compiler.gpu import device_available; print(device_available())"
cat "$LOGS/device.log" >> "$summary"
step pytest-gpu python3 -m pytest -q -rs tests/test_gpu.py tests/test_gpu_toolchain.py
tail -n 4 "$LOGS/pytest-gpu.log" >> "$summary"
PROMPT="Alan Turing theorized that computers would one day become"
# nox builds a fresh environment from the registries; where the machine is offline, run the
# session's command in the environment at hand instead.
if [ -n "$capture" ]; then  # no reference env can be built offline: verify against the carried capture
    step verify-gpu parity verify --modes gpu --target gpu --prompt "$PROMPT" --tokens 10 --capture "$capture" --json "$OUT/verify_gpu.json"
else
    step verify-gpu nox -s verify-gpu -- --json "$OUT/verify_gpu.json"
fi
verified=$?
tail -n 30 "$LOGS/verify-gpu.log" >> "$summary"
if [ "$verified" -ne 0 ] && [ -n "$capture" ]; then  # tells a device-memory cache fault from a kernel fault
    PARITY_GPU_MEMORY_CACHE=0 step verify-gpu-no-memory-cache parity verify --modes gpu --target gpu --prompt "$PROMPT" \
        --tokens 10 --capture "$capture" --json "$OUT/verify_gpu_no_memory_cache.json"
    tail -n 30 "$LOGS/verify-gpu-no-memory-cache.log" >> "$summary"
fi
step bench-gpu sh -c "python3 -m harness.cli bench --target gpu --json > '$OUT/bench_gpu.json'"
# the same without compiler/gpu_memory_cache.c: what a cuMemAlloc/cuMemFree per buffer per call costs
PARITY_GPU_MEMORY_CACHE=0 step bench-gpu-no-memory-cache sh -c \
    "python3 -m harness.cli bench --target gpu --json > '$OUT/bench_gpu_no_memory_cache.json'"
step bench-cpu sh -c "python3 -m harness.cli bench --json > '$OUT/bench_cpu.json'"
cat "$OUT/bench_gpu.json" "$OUT/bench_gpu_no_memory_cache.json" "$OUT/bench_cpu.json" >> "$summary" 2>/dev/null
