#!/usr/bin/env bash
# Quick start, command 2: set up (install, build) and run the whole test suite
# (GoogleTest through ctest; the GUI tests use Qt's offscreen platform).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$ROOT/scripts/setup.sh"
BUILD_DIR=${ONNXSCOPE_BUILD_DIR:-$ROOT/build}
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
cd "$BUILD_DIR"
ctest --output-on-failure -j"$(nproc)" "$@"
