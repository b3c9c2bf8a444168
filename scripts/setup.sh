#!/usr/bin/env bash
# Installs what is missing (Debian packages, the Python venv, the upstream ONNX
# test data) and builds onnxscope into build/. Idempotent: a second run only
# rebuilds what changed.
#
# Environment:
#   ONNXSCOPE_BUILD_DIR   build folder (default: build)
#   ONNXSCOPE_DATA_DIR    where the upstream test data goes (default: ~/.cache/onnxscope)
#   ONNXSCOPE_VENV        the Python venv .venv links to (default: in the data dir)
#   ONNXSCOPE_NO_GUI=1    build without Qt
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=versions.env
source scripts/versions.env
BUILD_DIR=${ONNXSCOPE_BUILD_DIR:-$ROOT/build}
DATA_ROOT=${ONNXSCOPE_DATA_DIR:-$HOME/.cache/onnxscope}
DATA_DIR=$DATA_ROOT/onnx-$ONNX_VERSION
log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

# --- Debian packages ---------------------------------------------------------
APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  python3 python3-venv
  protobuf-compiler libprotobuf-dev
  libeigen3-dev libdnnl-dev libgraphviz-dev libhdf5-dev
  ocl-icd-opencl-dev  # Debian's dnnl-config.cmake looks for OpenCL (its GPU runtime)
  libgtest-dev libgmock-dev
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev libre2-dev
  libjpeg-dev libpng-dev libwebp-dev libtiff-dev libopenjp2-7-dev
  qt6-base-dev qt6-svg-dev libgl-dev xvfb xauth
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  log "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- Python venv (set-up and test helpers only; the tool never needs it) ------
# The venv lives in the cache, keyed by its pinned requirements, and .venv is a
# link to it: a fresh clone reuses it instead of reinstalling torch (3 GB).
PY=${ONNXSCOPE_PYTHON:-python3}
REQ="onnx==$ONNX_VERSION onnxruntime==$ONNXRUNTIME_VERSION numpy==$NUMPY_VERSION h5py==$H5PY_VERSION"
REQ+=" ml_dtypes==$ML_DTYPES_VERSION"
REQ+=" torch==$TORCH_VERSION torchvision==$TORCHVISION_VERSION transformers==$TRANSFORMERS_VERSION"
REQ+=" onnxscript==$ONNXSCRIPT_VERSION skl2onnx==$SKL2ONNX_VERSION scikit-learn==$SCIKIT_LEARN_VERSION"
VENV=${ONNXSCOPE_VENV:-$DATA_ROOT/venv-$(printf '%s' "$REQ" | sha256sum | cut -c1-12)}
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.onnxscope-req" 2>/dev/null)" != "$REQ" ]; then
  log "creating $VENV with $REQ"
  mkdir -p "$(dirname "$VENV")"
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check $REQ
  echo "$REQ" > "$VENV/.onnxscope-req"
fi
# Extras the compatibility sweep needs, added to the same venv (a new venv
# would reinstall torch): installed once, recorded beside the pinned set.
EXTRA="onnxmltools==$ONNXMLTOOLS_VERSION onnxconverter-common==$ONNXCONVERTER_COMMON_VERSION"
EXTRA+=" lightgbm==$LIGHTGBM_VERSION xgboost-cpu==$XGBOOST_CPU_VERSION onnxruntime-genai==$ONNXRUNTIME_GENAI_VERSION"
if [ "$(cat "$VENV/.onnxscope-extra" 2>/dev/null)" != "$EXTRA" ]; then
  log "adding $EXTRA to $VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check $EXTRA
  echo "$EXTRA" > "$VENV/.onnxscope-extra"
fi
if [ "$(readlink .venv 2>/dev/null)" != "$VENV" ]; then
  [ -L .venv ] || [ ! -e .venv ] || mv .venv ".venv.replaced.$$"  # an older in-tree venv
  ln -sfn "$VENV" .venv
fi

# --- Upstream backend test data ----------------------------------------------
# Written again when the generator's ml_dtypes differs from the one it was written with.
if ! grep -qx "ml_dtypes $ML_DTYPES_VERSION" "$DATA_DIR/VERSION" 2>/dev/null; then
  log "writing the onnx $ONNX_VERSION backend test data to $DATA_DIR"
  mkdir -p "$DATA_ROOT"
  .venv/bin/python scripts/gen_backend_data.py "$DATA_DIR" 2>/dev/null
fi

# --- Build -------------------------------------------------------------------
# Paths relative to the checkout, so a fresh clone elsewhere reuses the cache.
export CCACHE_BASEDIR="$ROOT"
GUI=ON
[ "${ONNXSCOPE_NO_GUI:-0}" = 1 ] && GUI=OFF
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  log "configuring $BUILD_DIR"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DONNXSCOPE_BUILD_GUI=$GUI -DONNXSCOPE_TEST_DATA="$DATA_DIR" >/dev/null
fi
log "building"
cmake --build "$BUILD_DIR" -- -j"$(nproc)" | grep -vE '^\[[0-9]+/[0-9]+\] ' || true
test "${PIPESTATUS[0]}" -eq 0
