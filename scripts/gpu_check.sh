#!/usr/bin/env bash
# Runs on a GPU machine, from the repository root, with .gpu/bundle.tar.xz
# made here by scripts/gpu_bundle.sh: the CUDA engine's tests, the upstream
# conformance suite on the cuda engine, and the benchmark against PyTorch
# eager. Made for a short lease: every step has its own time limit, the
# benchmark models are exported while the suite runs, and each log is written
# as it goes, so a run that is cut off still returns what it did.
#
#   scripts/gpu_check.sh [diag] [tests] [conformance] [bench]   # default: all four
#
# Output, in $OUT (or ./gpu-out), at most eight files (what the device tool
# brings back): diag.log, tests.log, conformance.log, progress.tsv (one line
# per finished test), conformance-cuda.json, cuda.toml (written from the run
# when conformance/expectations/cuda.toml does not exist yet), bench.log,
# bench_cuda.json.
#
# Time limits (seconds): TESTS_S, CONF_S, BENCH_S, EXPORT_S; the suite's
# parallel jobs: JOBS (default: every core, one when the GPU runs one process
# at a time); tests per child process: PER_CHILD (default 64: CUDA's start
# paid once for many tests; one process running sample_cnn took 1.6 s on an
# H100). For a dry run of the script without a GPU: ENGINE=cuda-sim and a
# FILTER regex of the suite's tests. BENCH_ARGS: more arguments for
# bench_cuda.py (--profile: where the cuda engine's time goes, per row).
set -uo pipefail
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
T0=$(date +%s)
stamp() { echo "[gpu_check +$(( $(date +%s) - T0 )) s] $*"; }
diag=$out/diag.log
steps=${*:-diag tests conformance bench}

b=/tmp/onnxscope-bundle
rm -rf "$b" && mkdir -p "$b"
tar xJf .gpu/bundle.tar.xz -C "$b" || { echo "gpu_check: no bundle (.gpu/bundle.tar.xz)" | tee -a "$diag"; exit 2; }

# cuBLAS and cuDNN are opened at run time by soname: the toolkit's, or those
# of the Python packages (nvidia-cublas, nvidia-cudnn-cu13). The bundle's
# libraries go on the path of onnxscope's binaries only (through wrappers), so
# that python3 and PyTorch keep the machine's own.
pylibs=$(python3 - <<'PY' 2>/dev/null
import glob, os, site
dirs = []
for s in site.getsitepackages():
    dirs += sorted(glob.glob(os.path.join(s, "nvidia", "*", "lib")))
print(":".join(dirs))
PY
)
ld="$b/lib:/usr/local/cuda/lib64:${pylibs}"
mkdir -p "$b/wrap"
for f in "$b"/bin/*; do
  n=$(basename "$f")
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' "$ld" "$f" > "$b/wrap/$n"
  chmod +x "$b/wrap/$n"
done
OS=$b/wrap/onnxscope
mode=$(nvidia-smi --query-gpu=compute_mode --format=csv,noheader 2>/dev/null | head -1)
cores=$(nproc)
JOBS=${JOBS:-$cores}
[ "$mode" = "Default" ] || JOBS=1

export_pid=
start_export() {  # the benchmark's models, on the CPU, while the suite runs on the GPU
  [[ " $steps " == *" bench "* ]] || return 0
  mkdir -p /tmp/bench-models
  ( OMP_NUM_THREADS=4 PYTHONUNBUFFERED=1 timeout -k 5 "${EXPORT_S:-400}" python3 scripts/bench_cuda.py --export-only --models-dir /tmp/bench-models \
      >> "$out/bench.log" 2>&1; echo "export exit $?" >> "$out/bench.log" ) &
  export_pid=$!
}

run_diag() {
  {
    stamp "diag"
    date -u; uname -r; grep -E '^(PRETTY_NAME)=' /etc/os-release; ldd --version | head -1
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,compute_mode,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
    echo "cores: $cores, jobs: $JOBS"
    echo "library path: $ld"
    for so in libcublas.so.13 libcublasLt.so.13 libcudnn.so.9; do
      found=$(IFS=:; for d in $ld; do [ -e "$d/$so" ] && echo "$d/$so"; done | head -1)
      echo "$so: ${found:-NOT FOUND}"
    done
    echo "unresolved libraries of the bundle's binaries:"
    for f in "$b"/bin/*; do LD_LIBRARY_PATH=$ld ldd "$f" | grep 'not found' | sed "s|^|  $(basename "$f"): |"; done
    python3 -c 'import torch, torchvision, transformers, onnx, onnxscript, numpy; print("torch", torch.__version__, "cuda", torch.version.cuda, "torchvision", torchvision.__version__, "transformers", transformers.__version__, "onnx", onnx.__version__, "onnxscript", onnxscript.__version__, "numpy", numpy.__version__)'
    for e in cuda cpu; do
      s=$(date +%s%N)
      timeout 60 "$OS" run resources/models/sample_cnn.onnx --engine "$e" --dim batch=2 --explain > /tmp/sample_$e.log 2>&1
      rc=$?
      tail -12 /tmp/sample_$e.log
      echo "sample_cnn on $e: exit $rc, $(( ($(date +%s%N) - s) / 1000000 )) ms"
      [ "$e" = cuda ] && [ $rc -ne 0 ] && cuda_ok=0
    done
    # The fast paths one at a time off (a run without an observer: the
    # fused graph, captured and replayed), so a failure names its path.
    for v in "" ONNXSCOPE_CUDA_LIBRARY_EPILOGUES=0 ONNXSCOPE_CUDA_PINNED=0 ONNXSCOPE_CUDA_HALF_COPIES=0; do
      for p in fp32 fp16; do
        env ${v:+$v} timeout 60 "$OS" bench resources/models/sample_cnn.onnx --engine cuda --precision "$p" --dim batch=2 \
          --warmup 1 --iterations 3 > /tmp/sample_bench.log 2>&1
        echo "sample_cnn bench on cuda $p ${v:-(as built)}: exit $? $(grep -m1 -iE 'median|error' /tmp/sample_bench.log)"
      done
    done
    stamp "diag done"
  } >> "$diag" 2>&1
}
cuda_ok=1

tests_pid=
start_tests() {
  ( for t in cuda_fast_paths_test cuda_kernels_test cuda_engine_test cuda_steady_state_test; do
      stamp "$t"
      s=$(date +%s)
      timeout -k 5 "${TESTS_S:-240}" "$b/wrap/$t" --gtest_brief=1 2>&1
      echo "$t: exit $? in $(( $(date +%s) - s )) s"
    done ) >> "$out/tests.log" 2>&1 &
  tests_pid=$!
}

run_conformance() {
  stamp "conformance on ${ENGINE:-cuda}, $JOBS jobs" >> "$out/conformance.log"
  expect=(--expectations conformance/expectations/cuda.toml)
  [ -f conformance/expectations/cuda.toml ] || expect=(--expectations "$out/cuda.toml" --update-expectations)
  filter=(); [ -n "${FILTER:-}" ] && filter=(--filter "$FILTER")
  timeout -k 10 "${CONF_S:-300}" "$OS" conformance --suite "$b/suite" --engine "${ENGINE:-cuda}" --jobs "$JOBS" --tests-per-child "${PER_CHILD:-64}" --timeout 60 "${expect[@]}" "${filter[@]}" \
    --json "$out/conformance-cuda.json" --progress-log "$out/progress.tsv" -v >> "$out/conformance.log" 2>&1
  echo "conformance exit $?" >> "$out/conformance.log"
  stamp "conformance done" >> "$out/conformance.log"
}

run_bench() {
  [ -n "$export_pid" ] && wait "$export_pid"
  stamp "bench" >> "$out/bench.log"
  PYTHONUNBUFFERED=1 timeout -k 10 "${BENCH_S:-300}" python3 scripts/bench_cuda.py --onnxscope "$OS" --models-dir /tmp/bench-models \
    --precisions "${PRECISIONS:-fp32,tf32,fp16}" --json "$out/bench_cuda.json" ${BENCH_ARGS:-} >> "$out/bench.log" 2>&1
  echo "bench exit $?" >> "$out/bench.log"
  stamp "bench done" >> "$out/bench.log"
}

[[ " $steps " == *" diag "* ]] && run_diag
if [ "$cuda_ok" = 0 ]; then  # the engine does not start: the unit tests say more, the rest would only repeat it
  echo "gpu_check: the cuda engine failed on sample_cnn: only the unit tests run" | tee -a "$diag"
  steps="tests"; TESTS_S=60
fi
start_export
# TESTS_LAST=1: the unit tests after the rest, alone (a slow or stuck test
# binary then holds back neither the suite nor the timings).
[[ " $steps " == *" tests "* ]] && [ "${TESTS_LAST:-0}" != 1 ] && start_tests
[[ " $steps " == *" conformance "* ]] && run_conformance
[ -n "$tests_pid" ] && wait "$tests_pid"
[[ " $steps " == *" bench "* ]] && run_bench
[[ " $steps " == *" tests "* ]] && [ "${TESTS_LAST:-0}" = 1 ] && start_tests && wait "$tests_pid"

# The end of the output is what the device tool shows: the summaries.
echo "===== diag";        [ -f "$diag" ] && tail -40 "$diag"
echo "===== tests";       [ -f "$out/tests.log" ] && grep -E '^\[  (FAILED|PASSED|SKIPPED) |^\[==========\]|exit [0-9]+ in|Failure|error' "$out/tests.log" | head -60
echo "===== conformance"; [ -f "$out/conformance.log" ] && tail -30 "$out/conformance.log"
echo "===== bench";       [ -f "$out/bench.log" ] && grep -vE ': (export|PyTorch eager|onnxscope (cuda|cpu)( with [^ ]+)?) \.\.\.$' "$out/bench.log" | tail -40
stamp "end"
