#!/usr/bin/env python3
"""Write the ONNX backend test data of the installed onnx release to a folder.

onnx stopped shipping data/node in its wheel: the node cases live in
onnx.backend.test.case.node and are normally built in memory by the Python
runner. This writes them in the classic on-disk layout (model.onnx +
test_data_set_N/{input,output}_K.pb), the layout every other runtime's test
runner reads, and copies the folders the wheel still ships (light, simple,
pytorch-converted, pytorch-operator).

Set-up helper only: the C++ tool never needs Python.

usage: gen_backend_data.py OUT_DIR
"""
from __future__ import annotations

import os
import shutil
import sys

import ml_dtypes
import onnx
import onnx.backend.test.case.node as node_cases
from onnx import TensorProto, numpy_helper

SHIPPED = ("light", "simple", "pytorch-converted", "pytorch-operator")


def serialize_value(value, type_proto, name: str) -> bytes:
    """Encode one test input/output the way the model's declared type says."""
    if type_proto.HasField("map_type"):
        return numpy_helper.from_dict(value, name).SerializeToString()
    if type_proto.HasField("sequence_type"):
        return numpy_helper.from_list(value, name).SerializeToString()
    if type_proto.HasField("optional_type"):
        return numpy_helper.from_optional(value, name).SerializeToString()
    if isinstance(value, TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(value, name).SerializeToString()


def write_case(out_dir: str, case) -> None:
    case_dir = os.path.join(out_dir, case.name)
    if os.path.exists(case_dir):
        shutil.rmtree(case_dir)
    os.makedirs(case_dir)
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        ds = os.path.join(case_dir, f"test_data_set_{i}")
        os.makedirs(ds)
        for j, value in enumerate(inputs):
            with open(os.path.join(ds, f"input_{j}.pb"), "wb") as f:
                f.write(serialize_value(value, graph.input[j].type, graph.input[j].name))
        for j, value in enumerate(outputs):
            with open(os.path.join(ds, f"output_{j}.pb"), "wb") as f:
                f.write(serialize_value(value, graph.output[j].type, graph.output[j].name))


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    tmp = out + ".partial"
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    os.makedirs(os.path.join(tmp, "node"))

    cases = node_cases.collect_testcases()
    for case in cases:
        write_case(os.path.join(tmp, "node"), case)

    shipped_root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    for kind in SHIPPED:
        src = os.path.join(shipped_root, kind)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(tmp, kind))

    with open(os.path.join(tmp, "VERSION"), "w") as f:
        f.write(f"onnx {onnx.__version__}\nnode {len(os.listdir(os.path.join(tmp, 'node')))}\n")
        # Its expected outputs of out-of-range narrow-integer casts depend on it (scripts/versions.env).
        f.write(f"ml_dtypes {ml_dtypes.__version__}\n")

    # Publish atomically so an interrupted run never leaves a half-written suite.
    if os.path.exists(out):
        shutil.rmtree(out)
    os.rename(tmp, out)
    print(f"wrote {len(cases)} node cases for onnx {onnx.__version__} to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
