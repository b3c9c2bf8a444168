"""com.microsoft QLinearConcat on onnxscope's reference and cpu engines
against ONNX Runtime's own kernel: random shapes, axes, uint8 and int8,
inputs whose scale and zero point are the output's (copied) or not
(requantized), two to four inputs; outputs must be equal. Then the error
paths: a wrong input count, a zero point of another type, a missing axis
give exit code 1 and a message naming the problem.

usage: check_qlinear_concat.py ONNXSCOPE_CLI WORKDIR
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import onnxscope_cli
from onnxscope_cli import run_outputs

cli, work = sys.argv[1:3]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(7)


def model(n_inputs, shapes, axis, ttype, params, y_params, with_axis=True, zp_type=None):
    inits = [numpy_helper.from_array(np.array(y_params[0], np.float32), "ys"),
             numpy_helper.from_array(np.array(y_params[1], dtype=ttype), "yzp")]
    names = ["ys", "yzp"]
    graph_inputs = []
    for k in range(n_inputs):
        s, z = params[k]
        inits.append(numpy_helper.from_array(np.array(s, np.float32), f"s{k}"))
        inits.append(numpy_helper.from_array(np.array(z, dtype=zp_type or ttype), f"z{k}"))
        names += [f"x{k}", f"s{k}", f"z{k}"]
        elem = TensorProto.UINT8 if ttype == np.uint8 else TensorProto.INT8
        graph_inputs.append(helper.make_tensor_value_info(f"x{k}", elem, shapes[k]))
    attrs = {"axis": axis} if with_axis else {}
    node = helper.make_node("QLinearConcat", names, ["y"], domain="com.microsoft", **attrs)
    elem = TensorProto.UINT8 if ttype == np.uint8 else TensorProto.INT8
    g = helper.make_graph([node], "qlc", graph_inputs, [helper.make_tensor_value_info("y", elem, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                             ir_version=8)


def run_onnxscope(path, feeds, engine):
    return run_outputs(cli, path, feeds, engine, ["y"], work)["y"]


cases = 0
for trial in range(24):
    ttype = np.uint8 if trial % 2 == 0 else np.int8
    info = np.iinfo(ttype)
    rank = int(rng.integers(1, 5))
    base = [int(v) for v in rng.integers(1, 6, size=rank)]
    axis = int(rng.integers(-rank, rank))
    n_inputs = int(rng.integers(2, 5))
    shapes = []
    for _ in range(n_inputs):
        s = list(base)
        s[axis] = int(rng.integers(1, 5))
        shapes.append(s)
    y_params = (float(rng.uniform(0.01, 0.2)), int(rng.integers(info.min, info.max + 1)))
    params = []
    for k in range(n_inputs):
        if rng.random() < 0.3:
            params.append(y_params)  # the copy path
        else:
            params.append((float(rng.uniform(0.005, 0.3)), int(rng.integers(info.min, info.max + 1))))
    m = model(n_inputs, shapes, axis, ttype, params, y_params)
    path = f"{work}/qlc_{trial}.onnx"
    onnx.save(m, path)
    feeds = {f"x{k}": rng.integers(info.min, info.max + 1, size=shapes[k]).astype(ttype) for k in range(n_inputs)}
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for engine in ("reference", "cpu"):
        got = run_onnxscope(path, feeds, engine)
        assert got.dtype == want.dtype and got.shape == want.shape, (engine, got.dtype, got.shape, want.dtype, want.shape)
        diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
        assert diff.max(initial=0) == 0, f"{engine} {path}: {int((diff > 0).sum())} of {diff.size} differ, at most {diff.max()}"
        cases += 1
print(f"QLinearConcat: {cases} runs equal to onnxruntime's")


def expect_error(m, what, fragment):
    path = f"{work}/qlc_bad_{what}.onnx"
    onnx.save(m, path)
    feeds = {"x0": np.zeros([2, 3], np.uint8), "x1": np.zeros([2, 3], np.uint8)}
    onnxscope_cli.expect_error(cli, path, feeds, work, fragment, what)


good = ((0.1, 3), (0.1, 3))
expect_error(model(2, [[2, 3], [2, 3]], 0, np.uint8, good, (0.1, 3), with_axis=False), "axis", "'axis'")
expect_error(model(2, [[2, 3], [2, 3]], 0, np.uint8, good, (0.1, 3), zp_type=np.int8), "zp", "zero point")
m = model(2, [[2, 3], [2, 3]], 0, np.uint8, good, (0.1, 3))
del m.graph.node[0].input[-1]  # a triple cut short
expect_error(m, "count", "got 7 inputs")
print("QLinearConcat: error paths give exit code 1 and name the problem")
