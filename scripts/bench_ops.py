#!/usr/bin/env python3
"""Per-operator benchmark: onnxscope's cpu engine against onnxruntime, one
single-node model per operator and shape class, in one run.

Every case is a one-node model at a shape real exports use (torchvision CNNs
at 224x224, BERT-base at sequence 128, swin_t, efficientnet_b0 and
mobilenet_v3 blocks). Its data inputs are graph inputs (so neither runtime
folds the node away), its parameters (axes, pads, exponents, weights) are
initializers, as exporters write them. For each case, in this order:

  * onnxruntime (CPUExecutionProvider, all graph optimizations, the same
    thread count), in this process, inputs and outputs bound once
    (run_with_iobinding, so Python's per-call overhead stays out of the time);
  * `onnxscope bench --json --engine cpu` on the same inputs (an .npz);
  * `onnxscope run --profile` once, for the kernel that ran the node.

Each side is timed --rounds times (2): a first round over the whole list
(printed as it goes), then another, the two runtimes taking turns on each
case; each side keeps its lowest median, so a burst or a slow spell of the
machine's other load during one side's turn does not decide a row.

Prints one table: the median latency of each, ratio = onnxruntime /
onnxscope (above 1: onnxscope faster), the kernel, and the largest absolute
difference between the two runtimes' outputs. --markdown writes the table
for docs/cpu-engine.md; --json all numbers.

    .venv/bin/python scripts/bench_ops.py --threads 2
    .venv/bin/python scripts/bench_ops.py --filter Reduce --iterations 50
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent

F32, F16, I64, I32, I8, U8, BOOL = "float32", "float16", "int64", "int32", "int8", "uint8", "bool"


class Case:
    """One single-node model: op, graph inputs (name, shape, dtype, values or
    (lo, hi)), initializers (name, numpy array), attributes, opset."""

    def __init__(self, name, op, inputs, inits=(), attrs=None, opset=18, domain="", n_out=1):
        self.name, self.op, self.inputs, self.inits = name, op, list(inputs), list(inits)
        self.attrs, self.opset, self.domain, self.n_out = attrs or {}, opset, domain, n_out

    def feeds(self, rng) -> dict[str, np.ndarray]:
        out = {}
        for name, shape, dtype, spec in self.inputs:
            if isinstance(spec, np.ndarray):
                out[name] = spec.astype(dtype)
            elif dtype == BOOL:
                out[name] = rng.integers(0, 2, size=shape).astype(np.bool_)
            elif np.issubdtype(np.dtype(dtype), np.integer):
                out[name] = rng.integers(spec[0], spec[1] + 1, size=shape).astype(dtype)
            else:
                out[name] = rng.uniform(spec[0], spec[1], size=shape).astype(dtype)
        return out

    def model(self, order: list[str]):
        import onnx
        from onnx import helper, numpy_helper

        ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(d)), s)
               for n, s, d, _ in self.inputs]
        outs = [helper.make_empty_tensor_value_info(f"y{k}") for k in range(self.n_out)]
        node = helper.make_node(self.op, order, [f"y{k}" for k in range(self.n_out)], domain=self.domain, **self.attrs)
        inits = [numpy_helper.from_array(a, n) for n, a in self.inits]
        opsets = [helper.make_opsetid("", self.opset)]
        if self.domain:
            opsets.append(helper.make_opsetid(self.domain, 1))
        g = helper.make_graph([node], self.name, ins, outs, inits)
        m = helper.make_model(g, opset_imports=opsets, ir_version=9 if self.opset < 21 else 10)
        # The outputs' types as onnx infers them (onnxruntime wants typed outputs).
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
        known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
        for o in m.graph.output:
            if o.name in known and known[o.name].type.HasField("tensor_type"):
                o.type.CopyFrom(known[o.name].type)
        return m


def arr(x, dtype=F32):
    return np.asarray(x, dtype=dtype)


def cases() -> list[Case]:
    from onnx import helper

    rng = np.random.default_rng(7)
    c: list[Case] = []
    cnn, seq, wide = [1, 96, 56, 56], [1, 128, 768], [1, 128, 3072]

    def x(shape, lo=-3.0, hi=3.0, name="x", dtype=F32):
        return (name, shape, dtype, (lo, hi))

    # --- elementwise unary (efficientnet / mobilenet_v3 activations, BERT FFN)
    unary = [("Sigmoid", {}, -6, 6, 13), ("HardSigmoid", {"alpha": 1 / 6, "beta": 0.5}, -6, 6, 13),
             ("HardSwish", {}, -6, 6, 14), ("Tanh", {}, -4, 4, 13), ("Exp", {}, -5, 5, 13), ("Log", {}, 0.01, 10, 13),
             ("Sqrt", {}, 0, 10, 13), ("Reciprocal", {}, 0.1, 10, 13), ("Erf", {}, -3, 3, 13), ("Relu", {}, -3, 3, 14),
             ("LeakyRelu", {"alpha": 0.1}, -3, 3, 16), ("Elu", {}, -3, 3, 13), ("Softplus", {}, -5, 5, 13),
             ("Abs", {}, -3, 3, 13), ("Neg", {}, -3, 3, 13), ("Floor", {}, -5, 5, 13), ("Ceil", {}, -5, 5, 13),
             ("Round", {}, -5, 5, 13), ("Sin", {}, -3, 3, 13), ("Cos", {}, -3, 3, 13), ("Sign", {}, -3, 3, 13),
             ("Gelu", {}, -4, 4, 20), ("Mish", {}, -4, 4, 18)]
    for op, attrs, lo, hi, opset in unary:
        for shape in (cnn, wide):
            c.append(Case(f"{op} {shape}", op, [x(shape, lo, hi)], attrs=attrs, opset=opset))
    for shape in (cnn, wide):  # GPT-2's (the tanh approximation)
        c.append(Case(f"Gelu tanh {shape}", "Gelu", [x(shape, -4, 4)], attrs={"approximate": "tanh"}, opset=20))
    for shape in (cnn, wide):
        c.append(Case(f"Clip [0,6] {shape}", "Clip", [x(shape)], [("lo", arr(0.0)), ("hi", arr(6.0))], opset=13))
    c.append(Case("Not [1,1,128,128]", "Not", [("x", [1, 1, 128, 128], BOOL, None)], opset=13))

    # --- elementwise binary with the broadcasts exporters write
    for op in ("Add", "Sub", "Mul", "Div"):
        c.append(Case(f"{op} same {seq}", op, [x(seq, name="a"), x(seq, 0.5, 2, name="b")], opset=14))
        c.append(Case(f"{op} bias {seq}+[768]", op, [x(seq, name="a")], [("b", rng.uniform(0.5, 2, 768).astype(F32))], opset=14))
        c.append(Case(f"{op} channel {cnn}*[96,1,1]", op, [x(cnn, name="a")],
                      [("b", rng.uniform(0.5, 2, (96, 1, 1)).astype(F32))], opset=14))
        c.append(Case(f"{op} scalar {seq}", op, [x(seq, name="a")], [("b", arr(1.5))], opset=14))
        c.append(Case(f"{op} outer [1,128,1]x[1,1,768]", op, [x([1, 128, 1], name="a"), x([1, 1, 768], 0.5, 2, name="b")], opset=14))
    c.append(Case(f"Pow ^2 {seq}", "Pow", [x(seq, name="a")], [("b", arr(2.0))], opset=15))
    c.append(Case(f"Pow ^0.5 {seq}", "Pow", [x(seq, 0, 3, name="a")], [("b", arr(0.5))], opset=15))
    c.append(Case(f"Pow ^3 {seq}", "Pow", [x(seq, name="a")], [("b", arr(3.0))], opset=15))
    c.append(Case(f"Pow same {seq}", "Pow", [x(seq, 0.1, 3, name="a"), x(seq, -2, 2, name="b")], opset=15))
    for op in ("Max", "Min"):
        c.append(Case(f"{op} same {seq}", op, [x(seq, name="a"), x(seq, name="b")], opset=13))
        c.append(Case(f"{op} scalar {seq}", op, [x(seq, name="a")], [("b", arr(0.0))], opset=13))
    # Variadic (scikit-learn converters' Sums of [N, 1] columns; Mean of ensembles)
    c.append(Case(f"Sum 3 same {seq}", "Sum", [x(seq, name="a"), x(seq, name="b"), x(seq, name="d")], opset=13))
    c.append(Case("Sum 2 [1,1]", "Sum", [x([1, 1], name="a"), x([1, 1], name="b")], opset=13))
    c.append(Case(f"Mean 2 same {seq}", "Mean", [x(seq, name="a"), x(seq, name="b")], opset=13))
    mask_shape = [1, 12, 128, 128]
    for op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"):
        c.append(Case(f"{op} f32 {mask_shape}", op, [x(mask_shape, name="a"), x([1, 1, 1, 128], name="b")], opset=16))
    c.append(Case("Equal i64 [1,128,128]", "Equal", [("a", [1, 128, 128], I64, (0, 3))], [("b", arr(0, I64))], opset=13))
    for op in ("And", "Or", "Xor"):
        c.append(Case(f"{op} {mask_shape}", op, [("a", mask_shape, BOOL, None), ("b", [1, 1, 128, 128], BOOL, None)], opset=13))
    c.append(Case("Where mask+scalar [1,12,128,128]", "Where",
                  [("m", [1, 1, 128, 128], BOOL, None), x(mask_shape, name="a")], [("b", arr(-1e9))], opset=16))

    # --- reductions
    for op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceSumSquare",
               "ReduceLogSumExp", "ReduceL1"):
        lo, hi = (0.9, 1.1) if op == "ReduceProd" else (-3, 3)
        c.append(Case(f"{op} last {seq}", op, [x(seq, lo, hi)], [("axes", arr([-1], I64))], {"keepdims": 1}, opset=18))
        c.append(Case(f"{op} HW {cnn}", op, [x(cnn, lo, hi)], [("axes", arr([2, 3], I64))], {"keepdims": 1}, opset=18))
        c.append(Case(f"{op} seq {seq}", op, [x(seq, lo, hi)], [("axes", arr([1], I64))], {"keepdims": 0}, opset=18))
    for op in ("Softmax", "LogSoftmax"):
        c.append(Case(f"{op} last {mask_shape}", op, [x(mask_shape)], attrs={"axis": -1}, opset=13))
        c.append(Case(f"{op} axis1 [1,1000,49]", op, [x([1, 1000, 49])], attrs={"axis": 1}, opset=13))
    for op in ("ArgMax", "ArgMin"):
        c.append(Case(f"{op} last [8,1000]", op, [x([8, 1000])], attrs={"axis": -1, "keepdims": 1}, opset=13))
    c.append(Case("TopK k=5 [8,1000]", "TopK", [x([8, 1000])], [("k", arr([5], I64))], n_out=2, opset=11))
    c.append(Case("CumSum [1,4096]", "CumSum", [x([1, 4096])], [("axis", arr(1, I64))], opset=14))

    # --- data movement
    swin = [1, 56, 56, 96]
    c.append(Case("Slice ::2 swin [1,56,56,96]", "Slice", [x(swin)],
                  [("s", arr([0, 0], I64)), ("e", arr([2**62, 2**62], I64)), ("a", arr([1, 2], I64)), ("st", arr([2, 2], I64))], opset=13))
    c.append(Case("Slice half last [1,12,128,64]", "Slice", [x([1, 12, 128, 64])],
                  [("s", arr([32], I64)), ("e", arr([64], I64)), ("a", arr([-1], I64))], opset=13))
    c.append(Case("Slice rows [1,128,768]", "Slice", [x(seq)],
                  [("s", arr([0], I64)), ("e", arr([64], I64)), ("a", arr([1], I64))], opset=13))
    for mode in ("constant", "reflect", "edge", "wrap"):
        c.append(Case(f"Pad {mode} 1 [1,64,112,112]", "Pad", [x([1, 64, 112, 112])],
                      [("p", arr([0, 0, 1, 1, 0, 0, 1, 1], I64))], {"mode": mode}, opset=19))
    c.append(Case("Pad swin window [1,56,56,96]->[1,63,63,96]", "Pad", [x(swin)],
                  [("p", arr([0, 0, 0, 0, 0, 7, 7, 0], I64))], opset=19))
    c.append(Case("Concat axis1 3x[1,128,56,56]", "Concat", [x([1, 128, 56, 56], name=n) for n in "abc"], attrs={"axis": 1}, opset=13))
    c.append(Case("Concat last 2x[1,12,128,32]", "Concat", [x([1, 12, 128, 32], name=n) for n in "ab"], attrs={"axis": -1}, opset=13))
    c.append(Case("Split 3 [1,128,2304]", "Split", [x([1, 128, 2304])], [("sp", arr([768, 768, 768], I64))],
                  {"axis": -1}, n_out=3, opset=13))
    c.append(Case("Split channels [1,116,28,28]", "Split", [x([1, 116, 28, 28])], [("sp", arr([58, 58], I64))],
                  {"axis": 1}, n_out=2, opset=13))
    c.append(Case("Gather embedding [30522,768] ids[1,128]", "Gather", [("ids", [1, 128], I64, (0, 30521))],
                  [("table", rng.standard_normal((30522, 768)).astype(F32))], opset=13))
    c.append(Case("GatherElements [1,12,128,128]", "GatherElements", [x(mask_shape), ("i", mask_shape, I64, (0, 127))],
                  attrs={"axis": -1}, opset=13))
    c.append(Case("GatherND [8,1000] i[8,1,1]", "GatherND", [x([8, 1000]), ("i", [8, 1, 1], I64, (0, 7))], opset=13))
    c.append(Case("ScatterND [1,128,768] 16 rows", "ScatterND",
                  [x(seq), ("i", [16, 2], I64, np.stack([np.zeros(16), np.arange(16) * 8], 1).astype(I64)), x([16, 768], name="u")], opset=13))
    c.append(Case("ScatterElements [1,12,128,128]", "ScatterElements",
                  [x(mask_shape), ("i", [1, 12, 128, 1], I64, (0, 127)), x([1, 12, 128, 1], name="u")], attrs={"axis": -1}, opset=13))
    c.append(Case("Expand mask [1,1,128,128]->[1,12,128,128]", "Expand", [x([1, 1, 128, 128])],
                  [("s", arr(mask_shape, I64))], opset=13))
    c.append(Case("Tile [1,128,768] x[2,1,1]", "Tile", [x(seq)], [("r", arr([2, 1, 1], I64))], opset=13))
    c.append(Case("Transpose 0213 [1,128,12,64]", "Transpose", [x([1, 128, 12, 64])], attrs={"perm": [0, 2, 1, 3]}, opset=13))
    c.append(Case("Transpose 0231 [1,96,56,56]", "Transpose", [x(cnn)], attrs={"perm": [0, 2, 3, 1]}, opset=13))
    c.append(Case("Transpose 021 [8,128,768]", "Transpose", [x([8, 128, 768])], attrs={"perm": [0, 2, 1]}, opset=13))
    c.append(Case("Reshape [1,128,768]->[1,128,12,64]", "Reshape", [x(seq)], [("s", arr([1, 128, 12, 64], I64))], opset=14))
    c.append(Case("Flatten [1,1280,7,7]", "Flatten", [x([1, 1280, 7, 7])], attrs={"axis": 1}, opset=13))
    c.append(Case("Squeeze [1,1280,1,1]", "Squeeze", [x([1, 1280, 1, 1])], [("a", arr([2, 3], I64))], opset=13))
    c.append(Case("Unsqueeze [1,128,768]", "Unsqueeze", [x(seq)], [("a", arr([1], I64))], opset=13))
    c.append(Case("DepthToSpace [1,256,56,56] b2", "DepthToSpace", [x([1, 256, 56, 56])], attrs={"blocksize": 2}, opset=13))
    c.append(Case("SpaceToDepth [1,64,112,112] b2", "SpaceToDepth", [x([1, 64, 112, 112])], attrs={"blocksize": 2}, opset=13))

    # --- normalizations
    c.append(Case("LayerNormalization [1,128,768]", "LayerNormalization", [x(seq)],
                  [("g", np.ones(768, F32)), ("b", np.zeros(768, F32))], {"axis": -1}, opset=17))
    c.append(Case("RMSNormalization [1,128,768]", "RMSNormalization", [x(seq)], [("g", np.ones(768, F32))], {"axis": -1}, opset=23))
    c.append(Case("GroupNormalization 32 [1,256,56,56]", "GroupNormalization", [x([1, 256, 56, 56])],
                  [("g", np.ones(256, F32)), ("b", np.zeros(256, F32))], {"num_groups": 32}, opset=21))
    c.append(Case("InstanceNormalization [1,64,112,112]", "InstanceNormalization", [x([1, 64, 112, 112])],
                  [("g", np.ones(64, F32)), ("b", np.zeros(64, F32))], opset=6))
    c.append(Case("BatchNormalization [1,96,56,56]", "BatchNormalization", [x(cnn)],
                  [("g", np.ones(96, F32)), ("b", np.zeros(96, F32)), ("m", np.zeros(96, F32)), ("v", np.ones(96, F32))], opset=15))

    # --- pooling and resize
    c.append(Case("MaxPool 3x3 s2 [1,64,112,112]", "MaxPool", [x([1, 64, 112, 112])],
                  attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, opset=12))
    c.append(Case("AveragePool 3x3 s1 [1,64,56,56]", "AveragePool", [x([1, 64, 56, 56])],
                  attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 0}, opset=19))
    c.append(Case("GlobalAveragePool [1,1280,7,7]", "GlobalAveragePool", [x([1, 1280, 7, 7])], opset=1))
    c.append(Case("GlobalAveragePool SE [1,96,56,56]", "GlobalAveragePool", [x(cnn)], opset=1))
    for mode, extra in (("nearest", {}), ("linear", {"coordinate_transformation_mode": "half_pixel"}),
                        ("cubic", {"coordinate_transformation_mode": "half_pixel"})):
        c.append(Case(f"Resize {mode} x2 [1,64,56,56]", "Resize", [x([1, 64, 56, 56])],
                      [("roi", arr([], F32)), ("sc", arr([1, 1, 2, 2]))], {"mode": mode, **extra}, opset=19))
        c[-1].order = ["x", "roi", "sc"]

    # --- convolutions
    def w(*shape):
        return (rng.standard_normal(shape) * 0.1).astype(F32)

    c.append(Case("Conv depthwise 3x3 [1,96,56,56]", "Conv", [x(cnn)], [("w", w(96, 1, 3, 3)), ("bias", w(96))],
                  {"group": 96, "pads": [1, 1, 1, 1]}, opset=11))
    c.append(Case("Conv depthwise 5x5 s2 [1,240,28,28]", "Conv", [x([1, 240, 28, 28])], [("w", w(240, 1, 5, 5))],
                  {"group": 240, "pads": [2, 2, 2, 2], "strides": [2, 2]}, opset=11))
    c.append(Case("Conv grouped g8 [1,64,56,56]", "Conv", [x([1, 64, 56, 56])], [("w", w(64, 8, 3, 3))],
                  {"group": 8, "pads": [1, 1, 1, 1]}, opset=11))
    c.append(Case("Conv 1x1 [1,96,56,56]->144", "Conv", [x(cnn)], [("w", w(144, 96, 1, 1))], opset=11))
    # The dense convolutions a ResNet spends its time in: 3x3 at each stage's
    # width, and a bottleneck's 1x1 reduce and expand.
    for ch, hw in ((64, 56), (128, 28), (256, 14), (512, 7)):
        c.append(Case(f"Conv 3x3 [1,{ch},{hw},{hw}]", "Conv", [x([1, ch, hw, hw])], [("w", w(ch, ch, 3, 3)), ("bias", w(ch))],
                      {"pads": [1, 1, 1, 1]}, opset=11))
    c.append(Case("Conv 1x1 [1,256,56,56]->64", "Conv", [x([1, 256, 56, 56])], [("w", w(64, 256, 1, 1))], opset=11))
    c.append(Case("Conv 1x1 [1,256,14,14]->1024", "Conv", [x([1, 256, 14, 14])], [("w", w(1024, 256, 1, 1))], opset=11))
    c.append(Case("Conv 3x3 s2 [1,3,224,224]->32", "Conv", [x([1, 3, 224, 224])], [("w", w(32, 3, 3, 3))],
                  {"pads": [1, 1, 1, 1], "strides": [2, 2]}, opset=11))
    c.append(Case("Conv dilated 3x3 d2 [1,64,56,56]", "Conv", [x([1, 64, 56, 56])], [("w", w(64, 64, 3, 3))],
                  {"pads": [2, 2, 2, 2], "dilations": [2, 2]}, opset=11))
    c.append(Case("Conv 1-D k3 [1,64,1000]", "Conv", [x([1, 64, 1000])], [("w", w(64, 64, 3))], {"pads": [1, 1]}, opset=11))
    c.append(Case("Conv 3-D k3 [1,16,16,32,32]", "Conv", [x([1, 16, 16, 32, 32])], [("w", w(16, 16, 3, 3, 3))],
                  {"pads": [1] * 6}, opset=11))
    c.append(Case("ConvTranspose k4 s2 [1,64,32,32]", "ConvTranspose", [x([1, 64, 32, 32])], [("w", w(64, 32, 4, 4))],
                  {"strides": [2, 2], "pads": [1, 1, 1, 1]}, opset=11))

    # --- products
    c.append(Case("MatMul [1,128,768]x[768,768]", "MatMul", [x(seq)], [("w", w(768, 768))], opset=13))
    c.append(Case("MatMul batched [12,128,64]x[12,64,128]", "MatMul", [x([12, 128, 64], name="a"), x([12, 64, 128], name="b")], opset=13))
    c.append(Case("MatMul broadcast [1,12,128,64]x[64,64]", "MatMul", [x([1, 12, 128, 64])], [("w", w(64, 64))], opset=13))
    c.append(Case("MatMul skinny [1,768]x[768,768]", "MatMul", [x([1, 768])], [("w", w(768, 768))], opset=13))
    c.append(Case("MatMul small [4,16]x[16,8]", "MatMul", [x([4, 16])], [("w", w(16, 8))], opset=13))
    c.append(Case("Gemm transB [1,1280]x[1000,1280]", "Gemm", [x([1, 1280])], [("w", w(1000, 1280)), ("bias", w(1000))],
                  {"transB": 1}, opset=13))
    c.append(Case("Gemm [8,768]x[768,3072]", "Gemm", [x([8, 768])], [("w", w(768, 3072))], opset=13))
    c.append(Case("Einsum bhqd,bhkd->bhqk", "Einsum", [x([1, 12, 128, 64], name="a"), x([1, 12, 128, 64], name="b")],
                  attrs={"equation": "bhqd,bhkd->bhqk"}, opset=12))

    # --- casts and generators
    for src, dst, lo, hi in ((F32, I64, -100, 100), (I64, F32, -100, 100), (F32, F16, -3, 3), (F16, F32, -3, 3),
                             (F32, BOOL, -1, 1), (BOOL, F32, 0, 1), (I32, I64, -100, 100)):
        to = helper.np_dtype_to_tensor_dtype(np.dtype(dst))
        c.append(Case(f"Cast {src}->{dst} {seq}", "Cast", [("x", seq, src, (lo, hi) if src != BOOL else None)],
                      attrs={"to": to}, opset=13))
    c.append(Case("Range 0..4096", "Range", [("s", [], I64, arr(0, I64))], [("l", arr(4096, I64)), ("d", arr(1, I64))], opset=11))

    # --- quantized (onnxruntime's quantizer output)
    q = [1, 128, 768]
    c.append(Case(f"QuantizeLinear u8 {q}", "QuantizeLinear", [x(q)], [("s", arr(0.02)), ("z", arr(128, U8))], opset=13))
    c.append(Case(f"DequantizeLinear u8 {q}", "DequantizeLinear", [("x", q, U8, (0, 255))], [("s", arr(0.02)), ("z", arr(128, U8))], opset=13))
    c.append(Case(f"DynamicQuantizeLinear {q}", "DynamicQuantizeLinear", [x(q)], n_out=3, opset=11))
    c.append(Case("MatMulInteger u8 [128,768]x[768,768]", "MatMulInteger", [("a", [128, 768], U8, (0, 255))],
                  [("b", rng.integers(0, 255, (768, 768)).astype(U8)), ("az", arr(128, U8)), ("bz", arr(128, U8))], opset=10))
    # onnxruntime's optimizer's forms of quantize_dynamic's linear layers (its saved optimized models)
    c.append(Case("DynamicQuantizeMatMul [1,128,768]x[768,768]", "DynamicQuantizeMatMul", [x(q, name="a")],
                  [("b", rng.integers(-127, 127, (768, 768)).astype(I8)), ("bs", arr(0.01)), ("bz", arr(0, I8)),
                   ("bias", rng.uniform(-1, 1, 768).astype(F32))], opset=14, domain="com.microsoft"))
    c.append(Case("MatMulIntegerToFloat u8 [1,128,768]x[768,768]", "MatMulIntegerToFloat", [("a", q, U8, (0, 255))],
                  [("b", rng.integers(-127, 127, (768, 768)).astype(I8)), ("as", arr(0.02)), ("bs", arr(0.01)),
                   ("az", arr(128, U8)), ("bz", arr(0, I8)), ("bias", rng.uniform(-1, 1, 768).astype(F32))],
                  opset=14, domain="com.microsoft"))
    c.append(Case("QLinearMatMul u8 [128,768]x[768,768]", "QLinearMatMul", [("a", [128, 768], U8, (0, 255))],
                  [("as", arr(0.02)), ("az", arr(128, U8)), ("b", rng.integers(0, 255, (768, 768)).astype(U8)),
                   ("bs", arr(0.01)), ("bz", arr(128, U8)), ("ys", arr(0.5)), ("yz", arr(128, U8))], opset=10))
    c.append(Case("QLinearConv u8 3x3 [1,64,56,56]", "QLinearConv", [("x", [1, 64, 56, 56], U8, (0, 255))],
                  [("xs", arr(0.02)), ("xz", arr(128, U8)), ("w", rng.integers(0, 255, (64, 64, 3, 3)).astype(U8)),
                   ("ws", arr(0.01)), ("wz", arr(128, U8)), ("ys", arr(0.5)), ("yz", arr(128, U8))],
                  {"pads": [1, 1, 1, 1]}, opset=10))
    # A quantized MobileNetV2's depthwise layer as onnxruntime's quantizer
    # writes it (uint8 activations, int8 weights with zero point 0).
    c.append(Case("QLinearConv depthwise u8s8 3x3 [1,144,56,56]", "QLinearConv", [("x", [1, 144, 56, 56], U8, (0, 255))],
                  [("xs", arr(0.02)), ("xz", arr(128, U8)), ("w", rng.integers(-127, 127, (144, 1, 3, 3)).astype(I8)),
                   ("ws", arr(0.01)), ("wz", arr(0, I8)), ("ys", arr(0.5)), ("yz", arr(128, U8))],
                  {"pads": [1, 1, 1, 1], "group": 144}, opset=10))
    c.append(Case("ConvInteger u8 3x3 [1,64,56,56]", "ConvInteger", [("x", [1, 64, 56, 56], U8, (0, 255))],
                  [("w", rng.integers(0, 255, (64, 64, 3, 3)).astype(U8)), ("xz", arr(128, U8)), ("wz", arr(128, U8))],
                  {"pads": [1, 1, 1, 1]}, opset=10))

    # --- float16: models exported in half precision (onnxruntime's CPU
    # provider runs each with float16 kernels or casts around float32 ones;
    # onnxscope's cpu engine computes in float32 between casts too)
    def h(shape, lo=-3.0, hi=3.0, name="x"):
        return x(shape, lo, hi, name, F16)

    def wh(*shape):
        return w(*shape).astype(F16)

    c.append(Case(f"fp16 Add same {seq}", "Add", [h(seq, name="a"), h(seq, name="b")], opset=14))
    c.append(Case(f"fp16 Mul bias {seq}+[768]", "Mul", [h(seq, name="a")], [("b", rng.uniform(0.5, 2, 768).astype(F16))], opset=14))
    for op, lo, hi, opset in (("Sigmoid", -6, 6, 13), ("Relu", -3, 3, 14), ("Tanh", -4, 4, 13), ("Gelu", -4, 4, 20)):
        c.append(Case(f"fp16 {op} {cnn}", op, [h(cnn, lo, hi)], opset=opset))
    c.append(Case("fp16 Softmax last [1,12,128,128]", "Softmax", [h([1, 12, 128, 128])], attrs={"axis": -1}, opset=13))
    c.append(Case(f"fp16 ReduceMean last {seq}", "ReduceMean", [h(seq)], [("axes", arr([-1], I64))], {"keepdims": 1}, opset=18))
    c.append(Case("fp16 LayerNormalization [1,128,768]", "LayerNormalization", [h(seq)],
                  [("g", np.ones(768, F16)), ("b", np.zeros(768, F16))], {"axis": -1}, opset=17))
    c.append(Case("fp16 Transpose 0213 [1,128,12,64]", "Transpose", [h([1, 128, 12, 64])], attrs={"perm": [0, 2, 1, 3]}, opset=13))
    c.append(Case("fp16 MatMul [1,128,768]x[768,768]", "MatMul", [h(seq)], [("w", wh(768, 768))], opset=13))
    c.append(Case("fp16 Conv 3x3 [1,64,56,56]", "Conv", [h([1, 64, 56, 56])], [("w", wh(64, 64, 3, 3))], {"pads": [1, 1, 1, 1]}, opset=11))
    c.append(Case("fp16 Conv depthwise 3x3 [1,96,56,56]", "Conv", [h(cnn)], [("w", wh(96, 1, 3, 3))],
                  {"group": 96, "pads": [1, 1, 1, 1]}, opset=11))
    c.append(Case("fp16 MaxPool 3x3 s2 [1,64,112,112]", "MaxPool", [h([1, 64, 112, 112])],
                  attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, opset=12))
    c.append(Case("fp16 GlobalAveragePool [1,1280,7,7]", "GlobalAveragePool", [h([1, 1280, 7, 7])], opset=11))
    return c


# The order of a node's inputs: graph inputs and initializers in the order
# the operator takes them (as listed: inputs first unless a case says otherwise).
ORDER = {
    "Where": lambda c: ["m", "a", "b"],
    "QuantizeLinear": lambda c: ["x", "s", "z"], "DequantizeLinear": lambda c: ["x", "s", "z"],
    "MatMulInteger": lambda c: ["a", "b", "az", "bz"],
    "DynamicQuantizeMatMul": lambda c: ["a", "b", "bs", "bz", "bias"],
    "MatMulIntegerToFloat": lambda c: ["a", "b", "as", "bs", "az", "bz", "bias"],
    "QLinearMatMul": lambda c: ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
    "QLinearConv": lambda c: ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
    "ConvInteger": lambda c: ["x", "w", "xz", "wz"],
    "Gather": lambda c: ["table", "ids"],
    "Range": lambda c: ["s", "l", "d"],
}


def input_order(c: Case) -> list[str]:
    if hasattr(c, "order"):
        return c.order
    if c.op in ORDER:
        return ORDER[c.op](c)
    return [n for n, *_ in c.inputs] + [n for n, _ in c.inits]


def time_ort(path: str, feeds: dict, threads: int, warmup: int, iterations: int, seconds: float):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    binding = sess.io_binding()
    for k, v in feeds.items():
        binding.bind_cpu_input(k, v)
    for o in sess.get_outputs():
        binding.bind_output(o.name, "cpu")
    for i in range(warmup):
        sess.run_with_iobinding(binding)
    # Operators of tens of microseconds: enough runs to fill `seconds`, so
    # that the median does not rest on 30 samples of a noisy clock. The
    # estimate comes from 10 runs after the warm-up (the warm-up's first runs
    # can be a hundred times slower and gave a case 320 runs).
    s = time.perf_counter()
    for i in range(10):
        sess.run_with_iobinding(binding)
    each = (time.perf_counter() - s) / 10
    iterations = max(iterations, min(20000, int(seconds / max(each, 1e-7))))
    times = []
    for i in range(iterations):
        s = time.perf_counter()
        sess.run_with_iobinding(binding)
        times.append((time.perf_counter() - s) * 1000)
    return float(np.median(times)), [np.asarray(v) for v in binding.copy_outputs_to_cpu()], iterations


LAST_WAIT = [""]
WAITS: set[str] = set()  # how onnxscope's OpenMP threads waited, over the run (passive is slower on small ops)


def run_scope(cli: str, path: str, npz: Path, out_dir: Path, a, iterations: int,
              profile: bool = True) -> tuple[float | None, str, list, str]:
    cmd = [cli, "bench", path, "--engine", "cpu", "--threads", str(a.threads), "--warmup", str(a.warmup),
           "--iterations", str(iterations), "--json", "--inputs", str(npz), "--save-outputs", str(out_dir)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    if p.returncode != 0:
        return None, "", [], (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
    d = json.loads(p.stdout)
    median = d["latency_ms"]["median"]
    WAITS.add(d.get("openmp_wait", "?"))
    LAST_WAIT[0] = d.get("openmp_wait", "?")
    if not profile:
        return median, "", [], ""
    prof = subprocess.run([cli, "run", path, "--engine", "cpu", "--threads", str(a.threads), "--inputs", str(npz),
                           "--profile"], capture_output=True, text=True, timeout=a.timeout)
    kernels = sorted(set(re.findall(r"\d+ x \S+ \[([^\]]+)\]", prof.stdout + prof.stderr)))
    from onnx import numpy_helper, TensorProto
    outs = []
    for f in sorted(out_dir.glob("output_*.pb"), key=lambda q: int(q.stem.split("_")[1])):
        t = TensorProto()
        t.ParseFromString(f.read_bytes())
        outs.append(numpy_helper.to_array(t))
    return median, ",".join(kernels) or "?", outs, ""


def max_diff(a: list, b: list) -> str:
    if len(a) != len(b):
        return "outputs differ in number"
    worst = 0.0
    for x, y in zip(a, b):
        if x.shape != y.shape:
            return f"shape {x.shape} vs {y.shape}"
        if x.size == 0:
            continue
        xd, yd = x.astype(np.float64), y.astype(np.float64)
        both_nan = np.isnan(xd) & np.isnan(yd)
        same = (xd == yd) | both_nan
        d = np.where(same, 0.0, np.abs(xd - yd))
        worst = max(worst, float(np.nanmax(np.where(np.isnan(d), np.inf, d))))
    return f"{worst:.2g}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=30, help="at least this many timed runs per case")
    ap.add_argument("--seconds", type=float, default=0.3,
                    help="more runs for fast cases: as many as fill this time at onnxruntime's speed (20,000 at most)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="time each runtime this many times, taking turns, and keep each one's lowest median")
    ap.add_argument("--filter", default="", help="only cases whose name contains this (a regular expression)")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--markdown", help="write the table as Markdown to this file")
    ap.add_argument("--json", help="write every number as JSON to this file")
    ap.add_argument("--onnxscope", default=os.environ.get("ONNXSCOPE", str(REPO / "build" / "app" / "onnxscope")))
    a = ap.parse_args()
    import onnx
    import onnxruntime

    rows = []
    sel = [c for c in cases() if re.search(a.filter, c.name)]
    print(f"onnxruntime {onnxruntime.__version__}, {a.threads} thread(s), median of at least {a.iterations} "
          f"runs (as many as fill {a.seconds} s) after {a.warmup} warm-ups, the lower of {a.rounds} such medians "
          f"taken in turns; ratio = onnxruntime / onnxscope cpu (above 1: onnxscope faster)", flush=True)
    print(f"{'case':52} {'ort ms':>9} {'scope ms':>9} {'ratio':>6}  kernel / max|diff|", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_ops_") as tmp:
        work_of = {}
        for i, c in enumerate(sel):
            work = Path(tmp) / str(i)
            work.mkdir()
            path = str(work / "model.onnx")
            onnx.save(c.model(input_order(c)), path)
            feeds = c.feeds(np.random.default_rng(i))
            npz = work / "inputs.npz"
            np.savez(npz, **feeds)
            row = {"case": c.name, "op": c.op}
            try:
                row["ort_ms"], ort_out, iterations = time_ort(path, feeds, a.threads, a.warmup, a.iterations, a.seconds)
            except Exception as e:  # an op onnxruntime's CPU provider lacks
                row["ort_ms"], ort_out, row["ort_error"], iterations = None, None, str(e).splitlines()[0][:80], a.iterations
            row["iterations"] = iterations
            out_dir = work / "out"
            out_dir.mkdir()
            row["scope_ms"], row["kernel"], scope_out, err = run_scope(a.onnxscope, path, npz, out_dir, a, iterations)
            if err:
                row["scope_error"] = err
            row["openmp_wait"] = LAST_WAIT[0]
            row["ort_rounds"], row["scope_rounds"] = [row["ort_ms"]], [row["scope_ms"]]
            row["max_abs_diff"] = max_diff(ort_out, scope_out) if ort_out is not None and scope_out else "-"
            rows.append(row)
            work_of[id(row)] = (path, feeds, npz, out_dir)
            ratio = f"{row['ort_ms'] / row['scope_ms']:.2f}" if row["ort_ms"] and row["scope_ms"] else "-"
            note = row.get("scope_error") or row.get("ort_error") or ""
            print(f"{c.name[:52]:52} {fmt(row['ort_ms'])} {fmt(row['scope_ms'])} {ratio:>6}  "
                  f"{row['kernel']} / {row['max_abs_diff']} {note}", flush=True)
        # More rounds over the whole list, the two runtimes taking turns on
        # each case; each side keeps its lowest median. A round is minutes
        # after the one before it: this 2-core VM has slow states of tens of
        # seconds (a 0.13 ms case at 0.18 ms in two back-to-back rounds), which
        # rounds a second apart both fell into.
        for r in range(1, a.rounds):
            print(f"\nround {r + 1} of {a.rounds} ...", flush=True)
            for row in rows:
                path, feeds, npz, out_dir = work_of[id(row)]
                if row["ort_ms"] is not None:
                    row["ort_rounds"].append(time_ort(path, feeds, a.threads, a.warmup, row["iterations"], 0.0)[0])
                if row["scope_ms"] is not None:
                    row["scope_rounds"].append(run_scope(a.onnxscope, path, npz, out_dir, a, row["iterations"], profile=False)[0])
        for row in rows:
            if row["ort_ms"] is not None:
                row["ort_ms"] = min(row["ort_rounds"])
            if row["scope_ms"] is not None and None not in row["scope_rounds"]:
                row["scope_ms"] = min(row["scope_rounds"])
            row["ratio"] = row["ort_ms"] / row["scope_ms"] if row["ort_ms"] and row["scope_ms"] else None
    if a.rounds > 1:
        print(f"\n{'case':52} {'ort ms':>9} {'scope ms':>9} {'ratio':>6}  kernel / max|diff|   (each side's lowest of {a.rounds} rounds)")
        for row in rows:
            ratio = f"{row['ratio']:.2f}" if row["ratio"] else "-"
            note = row.get("scope_error") or row.get("ort_error") or ""
            print(f"{row['case'][:52]:52} {fmt(row['ort_ms'])} {fmt(row['scope_ms'])} {ratio:>6}  "
                  f"{row['kernel']} / {row['max_abs_diff']} {note}", flush=True)
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    if ratios:
        below = [r for r in rows if r["ratio"] and r["ratio"] < 0.8]
        print(f"\n{len(ratios)} cases timed; geometric mean ratio {float(np.exp(np.mean(np.log(ratios)))):.2f}; "
              f"{len(below)} below 0.8x: " + ", ".join(r["case"] for r in below))
    print("onnxscope's OpenMP threads: " + "; ".join(sorted(WAITS)))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("| case | onnxruntime ms | onnxscope ms | ratio | kernel | max abs diff |\n|---|---|---|---|---|---|\n")
            for r in rows:
                ratio = f"{r['ratio']:.2f}" if r["ratio"] else "-"
                f.write(f"| {r['case']} | {fmt(r['ort_ms']).strip()} | {fmt(r['scope_ms']).strip()} | {ratio} | "
                        f"{r['kernel']} | {r['max_abs_diff']} |\n")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


def fmt(v) -> str:
    return f"{v:9.3f}" if isinstance(v, float) else f"{'-':>9}"


if __name__ == "__main__":
    sys.exit(main())
