#!/usr/bin/env bash
# Copy the ONNX wire-format definitions from the pinned onnx release in the venv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$("$root/.venv/bin/python" -c 'import onnx, os; print(os.path.dirname(onnx.__file__))')
cp "$src/onnx-ml.proto" "$root/engine/proto/onnx/onnx-ml.proto"
cp "$src/onnx-data.proto" "$root/engine/proto/onnx/onnx-data.proto"
echo "copied from $src"
