"""Interop: the ONNX Runtime dump helper writes onnxscope's dump layout, and
`onnxscope compare` finds a dump of the same model from onnxscope and from
ONNX Runtime clean within tolerance; and it names the tensor where a dump
with one edited tensor first diverges.

usage: check_ort_dump.py ONNXSCOPE_CLI MODEL WORKDIR [--dim NAME=V]
"""
import json
import subprocess
import sys

import h5py

cli, model, work = sys.argv[1:4]
dims = sys.argv[4:]
here = __file__.rsplit("/", 2)[0] + "/.."
ours, theirs = f"{work}/interop_onnxscope.h5", f"{work}/interop_ort.h5"
subprocess.run([cli, "dump", model, "--out", ours, *dims], check=True)
subprocess.run([sys.executable, f"{here}/scripts/dump_onnxruntime.py", model, "--inputs-from", ours, "--out", theirs],
               check=True)
out = subprocess.run([cli, "compare", ours, theirs, "--model", model, "--json"], check=True, capture_output=True,
                     text=True).stdout
report = json.loads(out)
assert report["only_in_one"] == 0, report["only_in_one"]
assert "first_divergence" not in report, report.get("first_divergence")
print(f"{report['compared']} tensors agree between onnxscope and onnxruntime")

# Plant a fault in the ORT dump: the third tensor in topological order.
with h5py.File(theirs, "r+") as f:
    names = sorted(f["tensors"], key=lambda k: int(f["tensors"][k].attrs["topo_index"]))
    victim = f["tensors"][names[2]]
    victim[...] = victim[()] + 1.0
    planted = victim.attrs["name"]
r = subprocess.run([cli, "compare", ours, theirs, "--model", model, "--json"], capture_output=True, text=True)
assert r.returncode == 3, (r.returncode, r.stderr)  # a divergence fails the step, as drift does
report = json.loads(r.stdout)
assert report.get("first_divergence") == planted, (report.get("first_divergence"), planted)
print("planted fault found at", planted)
