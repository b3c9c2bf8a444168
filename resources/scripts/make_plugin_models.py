#!/usr/bin/env python3
"""Make the models of the example plugins (plugins/examples/*/).

Each example gets a model that uses its operator and a backend-style test
folder (model.onnx + test_data_set_0) whose expected outputs numpy computes,
so `onnxscope conformance --plugin ...` can run it. Committed; this script is
how they were made (fixed seed).

    .venv/bin/python resources/scripts/make_plugin_models.py
"""
from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "plugins", "examples")
rng = np.random.default_rng(20261121)
OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]


def f32(*shape, scale=0.3):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def rms_norm_model():
    """x -> MatMul -> com.example::RMSNorm(epsilon) -> Relu -> y."""
    w, scale = f32(16, 16), (1.0 + f32(16, scale=0.1)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="proj"),
        helper.make_node("RMSNorm", ["h", "scale"], ["n"], name="rms", domain="com.example", epsilon=1e-6),
        helper.make_node("Relu", ["n"], ["y"], name="act"),
    ]
    g = helper.make_graph(
        nodes, "rms_norm_example",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(scale, "scale")])
    m = helper.make_model(g, opset_imports=OPSETS, producer_name="make_plugin_models")
    m.ir_version = 8

    def reference(x):
        h = x @ w
        n = h / np.sqrt(np.mean(h.astype(np.float64) ** 2, axis=-1, keepdims=True) + 1e-6) * scale
        return np.maximum(n, 0).astype(np.float32)

    return m, reference


def fast_gelu_function():
    """com.example::FastGelu as a model-local function in ai.onnx ops."""
    c = lambda name, v: helper.make_node("Constant", [], [name], value_float=v)
    nodes = [
        c("half", 0.5), c("one", 1.0), c("k", 0.7978845608028654), c("a", 0.044715),
        helper.make_node("Mul", ["X", "X"], ["x2"]),
        helper.make_node("Mul", ["x2", "X"], ["x3"]),
        helper.make_node("Mul", ["a", "x3"], ["ax3"]),
        helper.make_node("Add", ["X", "ax3"], ["inner"]),
        helper.make_node("Mul", ["k", "inner"], ["scaled"]),
        helper.make_node("Tanh", ["scaled"], ["t"]),
        helper.make_node("Add", ["one", "t"], ["onept"]),
        helper.make_node("Mul", ["half", "X"], ["hx"]),
        helper.make_node("Mul", ["hx", "onept"], ["Y"]),
    ]
    return helper.make_function("com.example", "FastGelu", ["X"], ["Y"], nodes, [helper.make_opsetid("", 17)])


def fast_gelu_model():
    """x -> MatMul -> Add -> com.example::FastGelu -> MatMul -> y; FastGelu is
    also a model-local function, so engines without the plugin expand it."""
    w1, b1, w2 = f32(32, 64), f32(64, scale=0.1), f32(64, 32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
        helper.make_node("FastGelu", ["hb"], ["g"], name="gelu", domain="com.example"),
        helper.make_node("MatMul", ["g", "w2"], ["y"], name="fc2"),
    ]
    g = helper.make_graph(
        nodes, "fast_gelu_example",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"), numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(g, opset_imports=OPSETS, functions=[fast_gelu_function()], producer_name="make_plugin_models")
    m.ir_version = 8

    def reference(x):
        h = (x @ w1 + b1).astype(np.float64)
        gelu = 0.5 * h * (1 + np.tanh(0.7978845608028654 * (h + 0.044715 * h ** 3)))
        return (gelu.astype(np.float32) @ w2).astype(np.float32)

    return m, reference


def write(name, model, reference, in_dim):
    folder = os.path.join(EXAMPLES, name)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(folder, name + ".onnx"))
    case = os.path.join(folder, "tests", "test_" + name)
    data = os.path.join(case, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(case, "model.onnx"))
    x = f32(3, in_dim, scale=1.0)
    with open(os.path.join(data, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    with open(os.path.join(data, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(reference(x), "y").SerializeToString())
    print("wrote", os.path.relpath(folder, ROOT))


if __name__ == "__main__":
    write("rms_norm", *rms_norm_model(), 16)
    write("fast_gelu", *fast_gelu_model(), 32)
