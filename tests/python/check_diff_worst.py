"""The worst element `diff` and `compare` report is numpy's: the element with
the largest violation of the tolerance, |a-b| - (atol + rtol*|a|) with A the
baseline, on random tensors of float32, float64 and float16 with planted
violations of random size; the out-of-tolerance count is numpy's too, the
values are printed with all the digits of their type, and a planted
non-finite mismatch is the worst whatever else is off.

usage: check_diff_worst.py ONNXSCOPE_CLI WORKDIR
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from onnxscope_dump_writer import DumpWriter  # noqa: E402

cli, work = sys.argv[1:3]
rng = np.random.default_rng(20261127)
onnx_type = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.float16: TensorProto.FLOAT16}
digits = {np.float32: 9, np.float64: 17, np.float16: 5}


def identity_model(path, dtype, n):
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="copy")], "g",
                          [helper.make_tensor_value_info("x", onnx_type[dtype], [n])],
                          [helper.make_tensor_value_info("y", onnx_type[dtype], [n])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def dump(path, a, b):
    with DumpWriter(path, producer="test", tool_version="0") as w:
        w.write_input("x", a)
        w.write_tensor("y", b, node="copy", op_type="Identity", topo_index=0)
        w.graph_outputs = ["y"]


checked = 0
for dtype in (np.float32, np.float64, np.float16):
    for trial in range(8):
        n = int(rng.integers(50, 4000))
        rtol, atol = (1e-3, 1e-3) if dtype == np.float16 else (1e-4, 1e-5)
        # Magnitudes across several decades, so |a-b| and the violation disagree on the worst.
        a = (rng.standard_normal(n) * 10.0 ** rng.uniform(-4, 3 if dtype != np.float16 else 2, n)).astype(dtype)
        b = (a.astype(np.float64) * (1 + rng.normal(0, rtol / 20, n))).astype(dtype)
        planted = rng.choice(n, size=int(rng.integers(1, 6)), replace=False)
        limit = atol + rtol * np.abs(a[planted].astype(np.float64))
        b[planted] = (a[planted] + np.sign(rng.standard_normal(planted.size)) * limit * rng.uniform(1.5, 6, planted.size)).astype(dtype)
        nonfinite = trial == 7
        if nonfinite:  # an inf in B where A is finite outranks every finite violation
            j = int(rng.integers(0, n))
            b[j] = np.inf
        x, y = a.astype(np.float64), b.astype(np.float64)
        with np.errstate(invalid="ignore"):
            viol = np.where(np.isfinite(y), np.abs(x - y) - (atol + rtol * np.abs(x)), np.inf)
        worst = int(np.argmax(viol))
        bad = int((viol > 0).sum())
        model, h5 = f"{work}/worst_{trial}.onnx", f"{work}/worst_{trial}.h5"
        identity_model(model, dtype, n)
        dump(h5, a, b)
        r = subprocess.run([cli, "diff", model, "--engines", f"reference,dump:{h5}", "--rtol", str(rtol), "--atol",
                            str(atol), "--json", "--no-blame"], capture_output=True, text=True)
        assert r.returncode == 3, (r.returncode, r.stderr)
        out = json.loads(r.stdout)["nodes"][0]["outputs"][0]
        assert out["worst_index"] == worst, (dtype.__name__, trial, out["worst_index"], worst)
        assert out["out_of_tolerance"] == bad, (dtype.__name__, trial, out["out_of_tolerance"], bad)
        assert float(out["worst_a"]) == x[worst] and float(out["worst_b"]) == y[worst], (out, x[worst], y[worst])
        if nonfinite:
            assert worst == j and out["nonfinite_mismatch"]["inf_only_b"]["count"] == 1, out
        # The text shows the values with their type's digits, so A and B never print alike.
        text = subprocess.run([cli, "diff", model, "--engines", f"reference,dump:{h5}", "--rtol", str(rtol), "--atol",
                               str(atol), "--no-blame"], capture_output=True, text=True).stdout
        d = digits[dtype]
        want = f"worst at flat index {worst}: A={x[worst]:.{d}g} B={'inf' if np.isinf(y[worst]) else format(y[worst], f'.{d}g')}"
        assert want in text, (want, text[-600:])
        checked += 1
print(f"worst element and out-of-tolerance count match numpy on {checked} random tensors "
      f"(float32, float64, float16; planted violations and a planted inf)")
