#!/usr/bin/env bash
# Quick start, command 1: set up (install, build) and run the main job.
# With no arguments: inspect the bundled sample model. Otherwise the
# arguments go to the onnxscope CLI:  scripts/run.sh inspect my.onnx --json
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$ROOT/scripts/setup.sh"
BUILD_DIR=${ONNXSCOPE_BUILD_DIR:-$ROOT/build}
if [ $# -eq 0 ]; then
  set -- inspect "$ROOT/resources/models/sample_cnn.onnx"
fi
exec "$BUILD_DIR/app/onnxscope" "$@"
