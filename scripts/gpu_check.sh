#!/usr/bin/env bash
# Runs on a GPU machine, from the repository root, with .gpu/bundle.tar.xz
# made here by scripts/gpu_bundle.sh: the CUDA engine's tests, the upstream
# conformance suite on the cuda engine (against its expectations file), and
# the benchmark against PyTorch eager. Logs go to $OUT (or ./gpu-out).
#
#   scripts/gpu_check.sh [tests] [conformance] [bench]    # default: all three
set -uo pipefail
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
b=/tmp/onnxscope-bundle
rm -rf "$b" && mkdir -p "$b" && tar xJf .gpu/bundle.tar.xz -C "$b" || { echo "gpu_check: no bundle (.gpu/bundle.tar.xz)"; exit 2; }
# cuBLAS and cuDNN: the toolkit's, or those of the Python packages (nvidia-cublas, nvidia-cudnn-cu13).
libs=$(python3 - <<'PY' 2>/dev/null
import glob, os, site
dirs = []
for s in site.getsitepackages():
    dirs += glob.glob(os.path.join(s, "nvidia", "*", "lib"))
print(":".join(dirs))
PY
)
export LD_LIBRARY_PATH="$b/lib:/usr/local/cuda/lib64:${libs}:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
steps=${*:-tests conformance bench}
rc=0
for step in $steps; do
  case $step in
    tests)
      "$b/bin/cuda_kernels_test" 2>&1 | tee "$out/cuda_kernels_test.log" | tail -15 || rc=1
      "$b/bin/cuda_engine_test" 2>&1 | tee "$out/cuda_engine_test.log" | tail -8 || rc=1
      "$b/bin/cuda_steady_state_test" 2>&1 | tee "$out/cuda_steady_state_test.log" | tail -8 || rc=1 ;;
    conformance)
      # Against conformance/expectations/cuda.toml when it exists; the first
      # time, the run writes $out/cuda.toml (statuses; reasons are written by hand).
      expect=(--expectations conformance/expectations/cuda.toml)
      [ -f conformance/expectations/cuda.toml ] || expect=(--expectations "$out/cuda.toml" --update-expectations)
      "$b/bin/onnxscope" conformance --suite "$b/suite" --engine cuda --jobs 8 --timeout 120 "${expect[@]}" \
        --report "$out/conformance-cuda.md" --junit "$out/conformance-cuda.xml" --json "$out/conformance-cuda.json" -v \
        2>&1 | tee "$out/conformance.log" | tail -25 || rc=1 ;;
    bench)
      PYTHONUNBUFFERED=1 python3 "$b/bench_cuda.py" --onnxscope "$b/bin/onnxscope" --precisions fp32,tf32,fp16 \
        --json "$out/bench_cuda.json" 2>&1 | tee "$out/bench.log" | tail -25 || rc=1 ;;
    *) echo "gpu_check: unknown step $step"; exit 2 ;;
  esac
done
exit $rc
