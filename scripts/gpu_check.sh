#!/usr/bin/env bash
# The one prepared check for a session lent an NVIDIA GPU machine (see the device tool):
# check the carried bundle, record the device and toolchain, run the GPU tests, verify-gpu and
# `parity bench --target gpu --json` (plus the CPU bench for comparison) on synthetic GPT-2
# small. Only 8 files come back from the device, so $OUT gets: summary.txt, the JSON results
# (verify_gpu, bench_gpu, bench_gpu_no_memory_cache, bench_cpu; verify_gpu_no_memory_cache
# only when verify_gpu failed) and logs.tar.gz (every step's log, re-packed after each step so
# a call killed at its limit still returns what ran).
# Every step has its own time limit, so one hung step cannot take the whole call.
# Exit 3: the bundle is incomplete or does not import (nothing else is worth running then).
# Usage (from anywhere): OUT=/some/dir bash scripts/gpu_check.sh
set -uo pipefail
OUT="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"  # absolute before the cd below
LOGS="$(mktemp -d /tmp/parity-gpu-logs.XXXXXX)"
cd "$(dirname "$0")/.."
summary="$OUT/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
pack_logs() { tar -C "$LOGS" -czf "$OUT/logs.tar.gz.tmp" . && mv "$OUT/logs.tar.gz.tmp" "$OUT/logs.tar.gz"; }
step() {  # step NAME LIMIT_S COMMAND...: run, log to $LOGS/NAME.log, record the exit status and seconds
    local name=$1 limit=$2; shift 2
    local start=$SECONDS
    timeout --kill-after=10 "$limit" "$@" > "$LOGS/$name.log" 2>&1
    local rc=$?
    [ "$rc" -eq 124 ] && echo "(stopped at its ${limit}s limit)" >> "$LOGS/$name.log"
    say "$name rc=$rc $((SECONDS - start))s"
    pack_logs
    return $rc
}
finish() {
    # libmlir_cuda_runtime reports a failed driver call on stderr only, then carries on
    local failed
    failed=$(grep -h "failed with '" "$LOGS"/*.log 2>/dev/null | sort | uniq -c | sort -rn | head -n 10)
    [ -n "$failed" ] && { say "CUDA driver calls that failed (count, message):"; say "$failed"; }
    pack_logs
    cat "$summary"
}
trap finish EXIT

# -- the carried bundle (scripts/pack_for_device.sh): complete, and built from this compiler?
root=$PWD
mkdir -p /tmp/parity-parts && cp .device/parts/site.tar.xz.part-* /tmp/parity-parts/ 2>/dev/null
if [ -f .device/manifest.txt ]; then
    if ! (cd /tmp/parity-parts && grep ' site.tar.xz.part-' "$root/.device/manifest.txt" | sha256sum -c --quiet -) \
            > "$LOGS/parts.log" 2>&1; then
        say "PARTS MISSING OR CORRUPT: every part listed in .device/manifest.txt must be in /tmp/parity-parts"
        cat "$LOGS/parts.log" >> "$summary"
        exit 3
    fi
    bundled=$(sed -n 's/^compiler-sources //p' .device/manifest.txt)
    here=$(bash scripts/pack_for_device.sh --print-compiler-hash)
    if [ "$bundled" = "$here" ]; then
        say "kernel bundle: built from these compiler sources"
    else
        say "KERNEL BUNDLE STALE (built from $bundled, sources here $here): kernels compile on the device"
    fi
else
    say "no .device/manifest.txt: parts and kernel bundle unchecked"
fi
step nvidia-smi 30 nvidia-smi
if ls /tmp/parity-parts/site.tar.xz.part-* >/dev/null 2>&1; then
    mkdir -p /tmp/parity-site
    step unpack 120 sh -c "cat /tmp/parity-parts/site.tar.xz.part-* | xz -d | tar -x -C /tmp/parity-site"
    chmod +x /tmp/parity-site/mlir/bin/* /tmp/parity-site/llvm/bin/* 2>/dev/null
    export PYTHONPATH="/tmp/parity-site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
# The device reaches no registry: without the bundle's packages nothing below can run.
if ! step imports 60 python3 -c "import compiler, harness, mlir.ir, numpy; print(numpy.__version__)"; then
    say "IMPORTS FAILED (see logs.tar.gz: imports.log)"; tail -n 5 "$LOGS/imports.log" >> "$summary"
    exit 3
fi
# which ptxas and libdevice the compiler picks, and the CUDA release that keys its kernel cache
step toolchain 60 python3 -c "from compiler.gpu_toolchain import find_toolchain; from compiler.gpu import _ptxas_release
t = find_toolchain(); print(t); print('ptxas release', _ptxas_release(t.ptxas))"
cat "$LOGS/toolchain.log" >> "$summary"
# The default synthetic GPT-2 small is rebuilt on first use (deterministic; too large to carry).
export PARITY_CACHE="${PARITY_CACHE:-/tmp/parity-cache}"
# GPU kernels built ahead of time by scripts/pack_for_device.sh: nothing to compile here on a cache hit.
if [ -f .device/kernels.tar.xz ]; then
    mkdir -p "$PARITY_CACHE" && step kernels 60 tar -xJf .device/kernels.tar.xz -C "$PARITY_CACHE"
fi
capture=$(ls captures/capture-*-10tok-*.json 2>/dev/null | head -n 1)
step device 60 python3 -c "from compiler.gpu import device_available; print(device_available())"
cat "$LOGS/device.log" >> "$summary"
PROMPT="Alan Turing theorized that computers would one day become"
# how many of the check's kernels the bundle held (built 0 means every one was a cache hit)
for mode in subgraph fused; do
    step "build-only-$mode" 240 sh -c "python3 -m harness.cli generate '$PROMPT' --tokens 10 --mode $mode --target gpu \
        --build-only --json > '$LOGS/build-only-$mode.json'"
    python3 -c "import json, sys; r = json.load(open(sys.argv[1])); print('  built', r['built'], 'cached', r['already_cached'])" \
        "$LOGS/build-only-$mode.json" >> "$summary" 2>/dev/null
done
# the results the README records first (verify, then the benches), the GPU tests last
# nox builds a fresh environment from the registries; where the machine is offline, run the
# session's command in the environment at hand instead.
if [ -n "$capture" ]; then  # no reference env can be built offline: verify against the carried capture
    step verify-gpu 200 python3 -m harness.cli verify --modes gpu --target gpu --prompt "$PROMPT" --tokens 10 --capture "$capture" --json "$OUT/verify_gpu.json"
else
    step verify-gpu 200 nox -s verify-gpu -- --json "$OUT/verify_gpu.json"
fi
verified=$?
tail -n 30 "$LOGS/verify-gpu.log" >> "$summary"
if [ "$verified" -ne 0 ] && [ -n "$capture" ]; then  # tells a device-memory cache fault from a kernel fault
    PARITY_GPU_MEMORY_CACHE=0 step verify-gpu-no-memory-cache 150 python3 -m harness.cli verify --modes gpu --target gpu --prompt "$PROMPT" \
        --tokens 10 --capture "$capture" --json "$OUT/verify_gpu_no_memory_cache.json"
    tail -n 30 "$LOGS/verify-gpu-no-memory-cache.log" >> "$summary"
fi
step bench-gpu 120 sh -c "python3 -m harness.cli bench --target gpu --json > '$OUT/bench_gpu.json'"
# the same without compiler/gpu_memory_cache.c: what a cuMemAlloc/cuMemFree per buffer per call costs
PARITY_GPU_MEMORY_CACHE=0 step bench-gpu-no-memory-cache 120 sh -c \
    "python3 -m harness.cli bench --target gpu --json > '$OUT/bench_gpu_no_memory_cache.json'"
step bench-cpu 180 sh -c "python3 -m harness.cli bench --json > '$OUT/bench_cpu.json'"
cat "$OUT/bench_gpu.json" "$OUT/bench_gpu_no_memory_cache.json" "$OUT/bench_cpu.json" >> "$summary" 2>/dev/null
step pytest-gpu 150 python3 -m pytest -q -rs -p no:cacheprovider tests/test_gpu.py tests/test_gpu_toolchain.py
tail -n 4 "$LOGS/pytest-gpu.log" >> "$summary"
