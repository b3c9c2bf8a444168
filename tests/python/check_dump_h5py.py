"""onnxscope's dumps read by h5py: the CLI writes a dump of the sample model;
h5py must see the documented layout, and the values must match onnxruntime's.

usage: check_dump_h5py.py ONNXSCOPE_CLI MODEL WORKDIR
"""
import sys

import h5py
import numpy as np
import onnxruntime as ort
import subprocess

cli, model, work = sys.argv[1:4]
path = f"{work}/sample_dump.h5"
subprocess.run([cli, "dump", model, "--dim", "batch=2", "--out", path], check=True)
with h5py.File(path, "r") as f:
    assert f.attrs["format"] == "onnxscope-dump", f.attrs["format"]
    assert int(f.attrs["format_version"]) == 1
    assert f.attrs["graph_outputs"].split("\n") == ["logits", "probabilities"]
    (name,) = list(f["inputs"].keys())
    x = f["inputs"][name][()]
    assert x.dtype == np.float32 and x.shape == (2, 3, 32, 32), (x.dtype, x.shape)
    conv = f["tensors"]["%2Ffeatures%2Ffeatures.0%2FConv_output_0"]
    assert conv.attrs["op_type"] == "Conv" and int(conv.attrs["topo_index"]) == 0
    assert conv.attrs["name"] == "/features/features.0/Conv_output_0"
    probs = f["tensors"]["probabilities"][()]
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    (ref,) = sess.run(["probabilities"], {"image": x})
    err = float(np.max(np.abs(ref - probs)))
    assert err < 1e-5, err
print("h5py read the dump; max |onnxruntime - onnxscope| =", err)
