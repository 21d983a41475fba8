#!/usr/bin/env bash
# The one prepared check for a session lent an NVIDIA GPU machine (see the device tool):
# install the project, record the device and toolchain, run the GPU tests, `nox -s verify-gpu`
# and `parity bench --target gpu --json` (plus the CPU bench for comparison) on synthetic
# GPT-2 small. Every log lands in $OUT; the summary is $OUT/summary.txt.
# Usage (from the repository root): OUT=/some/dir bash scripts/gpu_check.sh
set -uo pipefail
OUT="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
summary="$OUT/summary.txt"
: > "$summary"
step() {  # step NAME COMMAND...: run, log to $OUT/NAME.log, record the exit status
    local name=$1; shift
    local start=$SECONDS
    "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    echo "$name rc=$rc $((SECONDS - start))s" >> "$summary"
    return $rc
}

step nvidia-smi nvidia-smi
step ptxas ptxas --version
if ! python3 -c "import compiler, harness" 2>/dev/null; then
    python3 -m venv .venv-gpu && . .venv-gpu/bin/activate
    step install pip install -e ".[test]" nox || { echo "install failed: see $OUT/install.log" >> "$summary"; }
fi
step device python3 -c "from compiler.gpu import device_available; print(device_available())"
step pytest-gpu python3 -m pytest -q -rs tests/test_gpu.py tests/test_gpu_toolchain.py
PROMPT="Alan Turing theorized that computers would one day become"
# nox builds a fresh environment from the registries; where the machine is offline, run the
# session's command in the environment at hand instead.
step verify-gpu nox -s verify-gpu -- --json "$OUT/verify_gpu.json" ||
    step verify-gpu-direct parity verify --modes gpu --target gpu --prompt "$PROMPT" --tokens 10 --json "$OUT/verify_gpu.json"
step bench-gpu sh -c "parity bench --target gpu --json > '$OUT/bench_gpu.json'"
step bench-cpu sh -c "parity bench --json > '$OUT/bench_cpu.json'"
cat "$OUT/device.log" "$OUT/bench_gpu.json" "$OUT/bench_cpu.json" >> "$summary" 2>/dev/null
tail -n 3 "$OUT/pytest-gpu.log" >> "$summary"
cat "$summary"
