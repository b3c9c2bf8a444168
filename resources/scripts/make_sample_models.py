#!/usr/bin/env python3
"""Make the sample models shipped in resources/models/.

They are committed (the tool and its quick start must not need Python), and
this script is how they were made: deterministic weights from a fixed seed,
names and patterns the way PyTorch's exporter writes them.

    .venv/bin/python resources/scripts/make_sample_models.py
"""
from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")
rng = np.random.default_rng(20261121)


def w(name, *shape, scale=0.2):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def sample_cnn() -> onnx.ModelProto:
    """A small image classifier: conv/bn/relu/pool blocks, an exporter-style
    flatten via Shape->Gather->Concat->Reshape, Gemm and Softmax."""
    inits = [
        w("features.0.weight", 8, 3, 3, 3), w("features.0.bias", 8),
        numpy_helper.from_array(np.abs(rng.standard_normal(8)).astype(np.float32) + 0.5, "features.1.weight"),
        w("features.1.bias", 8), w("features.1.running_mean", 8, scale=0.1),
        numpy_helper.from_array(np.abs(rng.standard_normal(8)).astype(np.float32) + 0.5, "features.1.running_var"),
        w("features.4.weight", 16, 8, 3, 3), w("features.4.bias", 16),
        w("classifier.weight", 10, 16), w("classifier.bias", 10),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "/Constant_output_0"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "/Constant_1_output_0"),
    ]
    n = helper.make_node
    nodes = [
        n("Conv", ["image", "features.0.weight", "features.0.bias"], ["/features/features.0/Conv_output_0"],
          name="/features/features.0/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        n("BatchNormalization", ["/features/features.0/Conv_output_0", "features.1.weight", "features.1.bias",
                                 "features.1.running_mean", "features.1.running_var"],
          ["/features/features.1/BatchNormalization_output_0"], name="/features/features.1/BatchNormalization",
          epsilon=1e-5),
        n("Relu", ["/features/features.1/BatchNormalization_output_0"], ["/features/features.2/Relu_output_0"],
          name="/features/features.2/Relu"),
        n("MaxPool", ["/features/features.2/Relu_output_0"], ["/features/features.3/MaxPool_output_0"],
          name="/features/features.3/MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
        n("Conv", ["/features/features.3/MaxPool_output_0", "features.4.weight", "features.4.bias"],
          ["/features/features.4/Conv_output_0"], name="/features/features.4/Conv",
          kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("Relu", ["/features/features.4/Conv_output_0"], ["/features/features.5/Relu_output_0"],
          name="/features/features.5/Relu"),
        n("GlobalAveragePool", ["/features/features.5/Relu_output_0"], ["/avgpool/GlobalAveragePool_output_0"],
          name="/avgpool/GlobalAveragePool"),
        n("Shape", ["/avgpool/GlobalAveragePool_output_0"], ["/Shape_output_0"], name="/Shape"),
        n("Gather", ["/Shape_output_0", "/Constant_output_0"], ["/Gather_output_0"], name="/Gather", axis=0),
        n("Concat", ["/Gather_output_0", "/Constant_1_output_0"], ["/Concat_output_0"], name="/Concat", axis=0),
        n("Reshape", ["/avgpool/GlobalAveragePool_output_0", "/Concat_output_0"], ["/Reshape_output_0"],
          name="/Reshape"),
        n("Gemm", ["/Reshape_output_0", "classifier.weight", "classifier.bias"], ["logits"],
          name="/classifier/Gemm", transB=1),
        n("Softmax", ["logits"], ["probabilities"], name="/Softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "sample_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10]),
         helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", 10])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="onnxscope-samples", producer_version="1")
    model.ir_version = 8
    model.doc_string = "Small CNN classifier made by resources/scripts/make_sample_models.py"
    helper.set_model_props(model, {"purpose": "onnxscope quick start"})
    onnx.checker.check_model(model, full_check=True)
    return model


def control_flow() -> onnx.ModelProto:
    """If with outer-scope reads, a Loop accumulating a sum, and a model-local function."""
    n = helper.make_node
    then_g = helper.make_graph([n("Mul", ["x", "two"], ["t_out"], name="then/Mul")], "then_branch", [],
                               [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, [4])])
    else_g = helper.make_graph([n("Neg", ["x"], ["e_out"], name="else/Neg")], "else_branch", [],
                               [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, [4])])
    body = helper.make_graph(
        [n("Identity", ["cond_in"], ["cond_out"], name="body/cond"),
         n("Add", ["acc_in", "x"], ["acc_out"], name="body/Add")],
        "loop_body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [4])])
    square_plus = onnx.helper.make_function(
        "onnxscope.samples", "SquarePlus", ["a", "b"], ["c"],
        [n("Mul", ["a", "a"], ["sq"]), n("Add", ["sq", "b"], ["c"])],
        [helper.make_opsetid("", 17)])
    nodes = [
        n("If", ["flag"], ["branch"], name="/choose/If", then_branch=then_g, else_branch=else_g),
        n("Loop", ["trip", "", "branch"], ["summed"], name="/accumulate/Loop", body=body),
        n("SquarePlus", ["summed", "x"], ["y"], name="/square_plus", domain="onnxscope.samples"),
    ]
    graph = helper.make_graph(
        nodes, "control_flow",
        [helper.make_tensor_value_info("flag", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("trip", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("onnxscope.samples", 1)],
                              functions=[square_plus], producer_name="onnxscope-samples")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    for name, make in (("sample_cnn.onnx", sample_cnn), ("control_flow.onnx", control_flow)):
        path = os.path.join(OUT, name)
        onnx.save(make(), path)
        print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
