#!/usr/bin/env bash
# Packs what a GPU machine needs to run onnxscope's CUDA checks into one
# archive under .gpu/ (in .gitignore): the onnxscope CLI and the CUDA tests as
# built here, the shared libraries they load that a stock CUDA image lacks
# (oneDNN, protobuf, HDF5, ...; not glibc, libstdc++ or the CUDA libraries,
# which the GPU machine has), the upstream test suite, and the benchmark
# scripts. The GPU machine (docs/cuda-engine.md, "On a GPU machine") has no
# package registry and none of this project's Debian packages.
#
#   scripts/gpu_bundle.sh [BUILD_DIR]     # default: build
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
suite=${ONNXSCOPE_TEST_DATA:-$HOME/.cache/onnxscope/onnx-1.23.2}
for f in "$build/app/onnxscope" "$build/tests/cuda_kernels_test" "$build/tests/cuda_engine_test" "$build/tests/cuda_steady_state_test" "$build/tests/cuda_fast_paths_test"; do
  [ -x "$f" ] || { echo "gpu_bundle: $f is missing: build it first (ninja -C $build onnxscope cuda_kernels_test cuda_engine_test cuda_steady_state_test cuda_fast_paths_test)" >&2; exit 1; }
done
[ -d "$suite/node" ] || { echo "gpu_bundle: no test suite at $suite (scripts/setup.sh makes it)" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/suite"
cp "$build/app/onnxscope" "$build/tests/cuda_kernels_test" "$build/tests/cuda_engine_test" "$build/tests/cuda_steady_state_test" "$build/tests/cuda_fast_paths_test" "$stage/bin/"
# Symbols stripped: the tree and the bundle travel under 64 MiB together.
strip "$stage"/bin/*
# Every library the binaries load, less the C/C++ runtime and CUDA's own.
skip='^(libc|libm|libdl|librt|libpthread|libresolv|libnsl|libutil|libanl|libgcc_s|libstdc\+\+|ld-linux-x86-64|libcuda|libcudart|libcublas|libcublasLt|libcudnn)\.so'
for f in "$stage"/bin/*; do
  ldd "$f" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  base=$(basename "$lib")
  [[ $base =~ $skip ]] || cp -L "$lib" "$stage/lib/$base"
done
cp -r "$suite/." "$stage/suite/"
mkdir -p .gpu
tar cf - -C "$stage" . | xz -T0 -6 > .gpu/bundle.tar.xz
echo "gpu_bundle: .gpu/bundle.tar.xz, $(du -m .gpu/bundle.tar.xz | cut -f1) MiB ($(ls "$stage/lib" | wc -l) libraries)"
