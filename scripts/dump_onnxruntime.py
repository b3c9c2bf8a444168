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
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import shape_inference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnxscope_dump_writer import DumpWriter, read_inputs  # noqa: E402


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
        feeds = read_inputs(args.inputs_from)
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
    with DumpWriter(args.out, producer="onnxruntime", tool_version=ort.__version__, model_path=args.model,
                    engine="onnxruntime-cpu",
                    engine_settings={"graph_optimization_level": "ORT_DISABLE_ALL", "threads": args.threads},
                    opset_imports={(o.domain or "ai.onnx"): o.version for o in model.opset_import}) as out:
        out.graph_outputs = [o.name for o in onnx.load(args.model).graph.output]
        for name, value in feeds.items():
            out.write_input(name, np.asarray(value))
        for name, value in zip(names, values):
            node, op, idx = producers.get(name, ("", "", -1))
            out.write_tensor(name, np.asarray(value), node=node, op_type=op, topo_index=idx)
    print(f"wrote {len(names)} tensors to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
