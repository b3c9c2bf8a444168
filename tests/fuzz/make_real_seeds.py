"""Seeds for the fuzz targets from small real exports (scripts/make_real_models.py),
so the fuzzers start from the patterns real models have (bool masks, Where and
Expand chains, folded constants, ai.onnx.ml trees, quantized operators), not
only from small synthetic files:

  fuzz_model  every real model under 1 MiB (the target's cap)
  fuzz_value  their initializers of at most 64 KiB, each as a TensorProto .pb
  fuzz_npz    the inputs of a run of each (onnxscope run --save-inputs)
  fuzz_dump   a dump of a run of each model under 400 KiB (onnxscope dump)

usage: .venv/bin/python tests/fuzz/make_real_seeds.py ONNXSCOPE_CLI REAL_MODELS_DIR OUT_DIR
Written on demand by scripts/fuzz.sh into ~/.cache/onnxscope/fuzz-seeds; never committed.
"""
import os
import subprocess
import sys
from pathlib import Path

import onnx

cli, models, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
for t in ("fuzz_model", "fuzz_value", "fuzz_npz", "fuzz_dump"):
    (out / t).mkdir(parents=True, exist_ok=True)
counts = dict.fromkeys(("fuzz_model", "fuzz_value", "fuzz_npz", "fuzz_dump"), 0)
for f in sorted(models.glob("*.onnx")):
    size = f.stat().st_size
    if size < (1 << 20):
        (out / "fuzz_model" / f.name).write_bytes(f.read_bytes())
        counts["fuzz_model"] += 1
    m = onnx.load(str(f), load_external_data=False)
    for k, init in enumerate(m.graph.initializer):
        if init.ByteSize() <= (64 << 10):
            (out / "fuzz_value" / f"{f.stem}-{k}.pb").write_bytes(init.SerializeToString())
            counts["fuzz_value"] += 1
    dims = []
    for v in m.graph.input:
        for d in v.type.tensor_type.shape.dim:
            if d.dim_param and f"{d.dim_param}=2" not in dims:
                dims += ["--dim", f"{d.dim_param}=2"]
    npz = out / "fuzz_npz" / f"{f.stem}.npz"
    if subprocess.run([cli, "run", str(f), *dims, "--save-inputs", str(npz)], capture_output=True).returncode == 0:
        counts["fuzz_npz"] += 1
    if size < (400 << 10):
        h5 = out / "fuzz_dump" / f"{f.stem}.h5"
        if subprocess.run([cli, "dump", str(f), *dims, "--out", str(h5)], capture_output=True).returncode == 0:
            if h5.stat().st_size < (1 << 20):
                counts["fuzz_dump"] += 1
            else:
                h5.unlink()
print("real-model seeds: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
