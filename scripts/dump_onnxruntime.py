#!/usr/bin/env python3
"""Dump every intermediate tensor of a model run in ONNX Runtime, in onnxscope's
HDF5 dump layout (docs/dump-format.md), so `onnxscope compare` can diff it
against an onnxscope dump.

Every node output of the main graph is exposed as a graph output (types from
ONNX shape inference), the model runs once on ONNX Runtime's CPU provider with
graph optimizations off (so fused-away tensors still exist), and each tensor is
written under its name.

Inputs: the /inputs of an existing dump (--inputs-from dump.h5, the usual way:
same inputs as the onnxscope run), or arange(n)/n for float inputs as upstream's
light runner does.

usage: dump_onnxruntime.py MODEL --out ort.h5 [--inputs-from onnxscope.h5] [--dim NAME=V ...]
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import sys

import h5py
import numpy as np
import onnx
import onnxruntime as ort
from onnx import shape_inference

NP_TO_ONNX = {
    np.dtype("float32"): "float", np.dtype("float64"): "double", np.dtype("float16"): "float16",
    np.dtype("int8"): "int8", np.dtype("int16"): "int16", np.dtype("int32"): "int32", np.dtype("int64"): "int64",
    np.dtype("uint8"): "uint8", np.dtype("uint16"): "uint16", np.dtype("uint32"): "uint32",
    np.dtype("uint64"): "uint64", np.dtype("bool"): "bool",
    np.dtype("complex64"): "complex64", np.dtype("complex128"): "complex128",
}


def escape(name: str) -> str:
    if name == ".":
        return "%2E"
    return name.replace("%", "%25").replace("/", "%2F") or "%00"


def write(group, name: str, value: np.ndarray, node: str, op_type: str, topo: int) -> None:
    if value.dtype.kind in ("U", "S", "O"):
        data = np.array([str(v) for v in value.ravel()], dtype=h5py.string_dtype("utf-8")).reshape(value.shape)
        dtype = "string"
    else:
        data = value.astype(np.uint8) if value.dtype == np.bool_ else value
        dtype = NP_TO_ONNX.get(value.dtype)
        if dtype is None:
            raise SystemExit(f"{name}: numpy dtype {value.dtype} has no ONNX name")
    ds = group.create_dataset(escape(name), data=data)
    ds.attrs["name"] = name
    ds.attrs["dtype"] = dtype
    ds.attrs["node"] = node
    ds.attrs["op_type"] = op_type
    ds.attrs["topo_index"] = np.int64(topo)
    ds.attrs["shape"] = np.array(value.shape, dtype=np.int64)
    if dtype != "string" and value.size:
        v = value.astype(np.float64).real if value.dtype.kind == "c" else value.astype(np.float64)
        finite = v[np.isfinite(v)]
        notnan = v[~np.isnan(v)]
        ds.attrs["min"] = float(notnan.min()) if notnan.size else float("nan")
        ds.attrs["max"] = float(notnan.max()) if notnan.size else float("nan")
        ds.attrs["mean"] = float(finite.mean()) if finite.size else 0.0
        ds.attrs["std"] = float(finite.std()) if finite.size else 0.0
        ds.attrs["nan_count"] = np.int64(np.isnan(v).sum())
        ds.attrs["inf_count"] = np.int64(np.isinf(v).sum())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--out", required=True)
    ap.add_argument("--inputs-from", help="take the inputs from this dump's /inputs group")
    ap.add_argument("--dim", action="append", default=[], help="NAME=VALUE for symbolic dims")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()

    model = onnx.load(args.model)
    inferred = shape_inference.infer_shapes(model)
    types = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    existing = {o.name for o in model.graph.output}
    producers = {}
    for i, node in enumerate(model.graph.node):
        for out in node.output:
            if not out:
                continue
            producers[out] = (node.name, node.op_type, i)
            if out not in existing and out in types and types[out].type.HasField("tensor_type"):
                model.graph.output.append(types[out])
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if args.threads:
        opts.intra_op_num_threads = args.threads
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])

    dims = dict(d.split("=", 1) for d in args.dim)
    feeds = {}
    if args.inputs_from:
        with h5py.File(args.inputs_from, "r") as src:
            for key in src["inputs"]:
                ds = src["inputs"][key]
                arr = ds[()]
                if ds.attrs["dtype"] == "bool":
                    arr = arr.astype(np.bool_)
                feeds[ds.attrs["name"]] = np.asarray(arr)
    else:
        initializers = {i.name for i in model.graph.initializer}
        for inp in sess.get_inputs():
            if inp.name in initializers:
                continue
            shape = [d if isinstance(d, int) else int(dims.get(d, 1)) for d in inp.shape]
            n = int(np.prod(shape)) if shape else 1
            if inp.type != "tensor(float)":
                raise SystemExit(f"input {inp.name} is {inp.type}: give --inputs-from a dump")
            feeds[inp.name] = (np.arange(n, dtype=np.float64) / max(n, 1)).astype(np.float32).reshape(shape)

    names = [o.name for o in sess.get_outputs()]
    values = sess.run(names, feeds)
    with open(args.model, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    with h5py.File(args.out, "w") as out:
        a = out.attrs
        a["format"] = "onnxscope-dump"
        a["format_version"] = np.int64(1)
        a["producer"] = "onnxruntime"
        a["tool_version"] = ort.__version__
        a["model_path"] = args.model
        a["model_sha256"] = sha
        a["engine"] = "onnxruntime-cpu"
        a["engine_settings"] = json.dumps({"graph_optimization_level": "ORT_DISABLE_ALL", "threads": args.threads})
        a["opset_imports"] = json.dumps({(o.domain or "ai.onnx"): o.version for o in model.opset_import})
        a["created"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        a["stats_only"] = np.int64(0)
        a["graph_outputs"] = "\n".join(o.name for o in onnx.load(args.model).graph.output)
        gi = out.create_group("inputs")
        for name, value in feeds.items():
            write(gi, name, np.asarray(value), "", "", -1)
        gt = out.create_group("tensors")
        for name, value in zip(names, values):
            node, op, idx = producers.get(name, ("", "", -1))
            write(gt, name, np.asarray(value), node, op, idx)
    print(f"wrote {len(names)} tensors to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
