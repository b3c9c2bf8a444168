#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, build-fuzz/) and runs each
# for SECONDS (default 300) on one core, starting from the committed seeds,
# the upstream suite and seeds made from small real exports
# (scripts/make_real_models.py, tests/fuzz/make_real_seeds.py), keeping the
# growing corpus in ~/.cache/onnxscope/fuzz. fuzz_model mutates models as
# messages too (tests/fuzz/model_mutator.cpp).
# A crash or hang input is copied to tests/fuzz/regressions/<target>/ so CI
# replays it from then on (commit it together with the fix).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     targets: fuzz_model fuzz_value fuzz_dump fuzz_expectations fuzz_npz
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
source scripts/versions.env
SECONDS_EACH=${1:-300}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(fuzz_model fuzz_value fuzz_dump fuzz_expectations fuzz_npz)
BUILD=${ONNXSCOPE_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
DATA=${ONNXSCOPE_DATA_DIR:-$HOME/.cache/onnxscope}
SUITE=$DATA/onnx-$ONNX_VERSION
export CCACHE_BASEDIR="$ROOT"
if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONNXSCOPE_FUZZ=ON \
    -DONNXSCOPE_BUILD_GUI=OFF -DONNXSCOPE_BUILD_PLUGINS=OFF -DONNXSCOPE_TEST_DATA="$SUITE" >/dev/null
fi
ninja -C "$BUILD" "${TARGETS[@]}"
# Seeds from small real exports (scripts/make_real_models.py), made once.
REAL=$DATA/real-models
REAL_SEEDS=$DATA/fuzz-seeds
if [ ! -f "$REAL/manifest.json" ]; then .venv/bin/python scripts/make_real_models.py --out "$REAL" >/dev/null 2>&1 || true; fi
if [ -f "$REAL/manifest.json" ] && [ ! -d "$REAL_SEEDS/fuzz_model" ] && [ -x build/app/onnxscope ]; then
  .venv/bin/python tests/fuzz/make_real_seeds.py build/app/onnxscope "$REAL" "$REAL_SEEDS"
fi
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=0
for t in "${TARGETS[@]}"; do
  corpus=$DATA/fuzz/$t
  mkdir -p "$corpus" "tests/fuzz/regressions/$t" "$BUILD/artifacts/$t"
  seeds=("tests/fuzz/regressions/$t")
  case $t in
    fuzz_model) seeds+=(resources/models tests/hostile/models "$SUITE/simple" "$SUITE/pytorch-operator") ;;
    fuzz_value) seeds+=("$SUITE/simple") ;;
    fuzz_dump | fuzz_npz) seeds+=("tests/fuzz/seeds/$t") ;;
  esac
  case $t in
    fuzz_model | fuzz_value | fuzz_dump | fuzz_npz) [ -d "$REAL_SEEDS/$t" ] && seeds+=("$REAL_SEEDS/$t") ;;
    fuzz_expectations) seeds+=(conformance/expectations) ;;
  esac
  echo "== $t: $SECONDS_EACH s"
  set +e
  "$BUILD/tests/fuzz/$t" "$corpus" "${seeds[@]}" -max_total_time="$SECONDS_EACH" -timeout=25 -rss_limit_mb=4096 \
    -max_len=1048576 -artifact_prefix="$BUILD/artifacts/$t/" -print_final_stats=1 2>&1 | tail -n 12
  rc=${PIPESTATUS[0]}
  set -e
  for a in "$BUILD/artifacts/$t"/*; do
    [ -e "$a" ] || continue
    cp "$a" "tests/fuzz/regressions/$t/" && echo "kept $(basename "$a") in tests/fuzz/regressions/$t"
  done
  [ "$rc" -eq 0 ] || echo "$t stopped with exit $rc (see the input kept above)"
done
