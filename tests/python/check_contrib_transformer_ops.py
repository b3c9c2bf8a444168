"""The operators ONNX Runtime's transformers optimizer writes, on onnxscope's
reference and cpu engines against ONNX Runtime's own kernels: com.microsoft
SkipLayerNormalization, SkipSimplifiedLayerNormalization, BiasGelu,
FastGelu, Gelu, QuickGelu, BiasAdd (against numpy: ONNX Runtime has it on
CUDA only), the fused operators its graph optimizer saves (FusedConv with
each activation and a sum input, FusedGemm with each activation,
FusedMatMul with alpha, transA, transB, transBatchA and transBatchB), and ONNX Runtime's onnx-domain
LayerNormalization below opset 17 and SimplifiedLayerNormalization. Random
shapes and optional inputs, every output compared (float32: within 1e-5
absolute plus 1e-5 relative). Then the error paths: a gamma, bias or skip of
the wrong shape gives exit code 1 and a message naming it.

usage: check_contrib_transformer_ops.py ONNXSCOPE_CLI WORKDIR
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
rng = np.random.default_rng(11)
F = TensorProto.FLOAT


def make(op, inputs, outputs, attrs, domain="com.microsoft", opset=17):
    """inputs: (name, array, is_initializer); outputs: names."""
    graph_inputs, inits, names = [], [], []
    for name, arr, init in inputs:
        names.append(name if arr is not None else "")
        if arr is None:
            continue
        if init:
            inits.append(numpy_helper.from_array(arr, name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(name, F, list(arr.shape)))
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node(op, names, outputs, domain=domain, **attrs)
    g = helper.make_graph([node], op, graph_inputs, [helper.make_tensor_value_info(o, F, None) for o in outputs if o],
                          inits)
    imports = [helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(g, opset_imports=imports, ir_version=8)


def run_onnxscope(path, feeds, engine, outputs):
    return run_outputs(cli, path, feeds, engine, outputs, work)


def check(what, m, inputs, outputs, want=None):
    """want: numpy's results where ONNX Runtime has no CPU kernel (BiasAdd)."""
    path = f"{work}/model.onnx"
    onnx.save(m, path)
    feeds = {name: arr for name, arr, init in inputs if arr is not None and not init}
    if want is None:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # its kernel, not a rewrite
        want = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(outputs, feeds)
    for engine in ("reference", "cpu"):
        got = run_onnxscope(path, feeds, engine, outputs)
        for name, w in zip(outputs, want):
            g = got[name]
            assert g.shape == w.shape, (what, engine, name, g.shape, w.shape)
            err = np.abs(g.astype(np.float64) - w.astype(np.float64))
            tol = 1e-5 + 1e-5 * np.abs(w.astype(np.float64))
            assert np.all(err <= tol), (what, engine, name, float(err.max()))


def rand(*shape, lo=-3.0, hi=3.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


cases = 0
for i in range(24):
    simplified = i % 3 == 2
    b, s, h = int(rng.integers(1, 3)), int(rng.integers(1, 9)), int(rng.choice([4, 16, 37, 64]))
    x = rand(b, s, h) if i % 4 else rand(b * s, h)
    skip_shape = [x.shape, (1,) + x.shape[1:] if x.ndim == 3 else x.shape, x.shape[-2:]][i % 3]
    skip = rand(*skip_shape)
    gamma, beta, bias = rand(h), (rand(h) if i % 2 and not simplified else None), (rand(h) if i % 5 < 3 else None)
    want_sum = i % 2 == 0
    outputs = ["y", "", "", "sum"] if want_sum else ["y"]
    if simplified:
        ins = [("x", x, False), ("skip", skip, False), ("gamma", gamma, True), ("bias", bias, True)]
        op = "SkipSimplifiedLayerNormalization"
    else:
        ins = [("x", x, False), ("skip", skip, False), ("gamma", gamma, True), ("beta", beta, True), ("bias", bias, True)]
        op = "SkipLayerNormalization"
    m = make(op, ins, outputs, {"epsilon": float(rng.choice([1e-12, 1e-5]))})
    check(f"{op} {x.shape} skip {skip.shape}", m, ins, [o for o in outputs if o])
    cases += 1

for i in range(16):
    shape = [int(v) for v in rng.integers(1, 7, size=int(rng.integers(2, 4)))]
    shape[-1] = int(rng.choice([3, 16, 33]))
    x = rand(*shape)
    bias = rand(shape[-1])
    which = ["BiasGelu", "FastGelu", "FastGelu", "Gelu", "QuickGelu", "BiasAdd"][i % 6]
    if which == "BiasGelu":
        ins = [("x", x, False), ("b", bias, True)]
        attrs = {}
    elif which == "FastGelu":
        ins = [("x", x, False)] + ([("b", bias, True)] if i % 4 == 1 else [])
        attrs = {}
    elif which == "Gelu":
        ins, attrs = [("x", x, False)], {}
    elif which == "QuickGelu":
        ins, attrs = [("x", x, False)], ({"alpha": 1.5} if i % 2 else {})
    else:  # ONNX Runtime has BiasAdd on CUDA only: numpy's sum, in X's float32, left to right
        x, skip = rand(2, 3, shape[-1]), rand(2, 3, shape[-1])
        ins, attrs = [("x", x, False), ("b", bias, True), ("skip", skip, False)], {}
        check(f"BiasAdd {x.shape}", make(which, ins, ["y"], attrs), ins, ["y"], [(x + bias) + skip])
        cases += 1
        continue
    check(f"{which} {x.shape}", make(which, ins, ["y"], attrs), ins, ["y"])
    cases += 1

# ONNX Runtime's onnx-domain LayerNormalization at opset 14 and
# SimplifiedLayerNormalization (with its inverse RMS output).
for i in range(8):
    x = rand(2, int(rng.integers(1, 6)), 24)
    if i % 2 == 0:
        ins = [("x", x, False), ("scale", rand(24), True), ("bias", rand(24), True)]
        check("LayerNormalization opset 14", make("LayerNormalization", ins, ["y"], {"epsilon": 1e-5}, domain="", opset=14),
              ins, ["y"])
    else:
        ins = [("x", x, False), ("scale", rand(24), True)]
        check("SimplifiedLayerNormalization", make("SimplifiedLayerNormalization", ins, ["y", "inv"], {"epsilon": 1e-6},
                                                   domain="", opset=14), ins, ["y", "inv"])
    cases += 1
# The optimizer's FusedConv (every activation it writes, with and without Z) and FusedMatMul.
acts = [("", []), ("Relu", []), ("Tanh", []), ("Sigmoid", []), ("LeakyRelu", [0.1]), ("Clip", [-0.5, 0.5]),
        ("HardSigmoid", [0.2, 0.5])]
for i in range(14):
    act, params = acts[i % len(acts)]
    n, c, m, h, w = 1 + i % 2, int(rng.integers(1, 5)), int(rng.integers(1, 6)), int(rng.integers(3, 9)), int(rng.integers(3, 9))
    x = rand(n, c, h, w)
    wt = rand(m, c, 3, 3, lo=-0.5, hi=0.5)
    with_z = i % 3 == 2
    ins = [("x", x, False), ("w", wt, True), ("b", rand(m), True)]
    attrs = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1 + i % 2] * 2}
    if with_z:
        ins.append(("z", rand(n, m, (h - 1) // attrs["strides"][0] + 1, (w - 1) // attrs["strides"][0] + 1), False))
    if act:
        attrs["activation"] = act
    if params:
        attrs["activation_params"] = params
    check(f"FusedConv {act or 'none'} {x.shape}{' Z' if with_z else ''}", make("FusedConv", ins, ["y"], attrs), ins, ["y"])
    cases += 1
for i in range(16):
    ta, tb, tba, tbb = i % 2, (i // 2) % 2, (i // 4) % 2, (i // 8) % 2
    batch, m, k, nn_ = int(rng.integers(1, 4)), int(rng.integers(1, 7)), int(rng.integers(1, 9)), int(rng.integers(1, 7))
    heads = int(rng.integers(1, 3))
    # Shapes as the operator reads them: transBatch moves dim 0 before the last.
    def shaped(rows, cols, trans, trans_batch):
        s = [batch, heads, cols, rows] if trans else [batch, heads, rows, cols]
        if trans_batch:
            s = [s[2], s[0], s[1], s[3]]
        return s
    a = rand(*shaped(m, k, ta, tba))
    b = rand(*shaped(k, nn_, tb, tbb))
    attrs = {"transA": ta, "transB": tb, "transBatchA": tba, "transBatchB": tbb, "alpha": float(rng.choice([1.0, 0.125]))}
    ins = [("a", a, False), ("b", b, i % 3 == 0)]
    check(f"FusedMatMul {attrs} {a.shape} {b.shape}", make("FusedMatMul", ins, ["y"], attrs), ins, ["y"])
    cases += 1
# (onnxruntime's kernel wants the activation and its parameters written out, as its optimizer writes them)
gemm_acts = [("Relu", {}), ("LeakyRelu", {"activation_alpha": 0.2}), ("Tanh", {}), ("Sigmoid", {}),
             ("HardSigmoid", {"activation_alpha": 0.3, "activation_beta": 0.4}), ("Elu", {"activation_alpha": 0.7}),
             ("Selu", {"activation_alpha": 1.6732632, "activation_gamma": 1.050701}),
             ("ThresholdedRelu", {"activation_alpha": 0.5}), ("Softplus", {}), ("Softsign", {}),
             ("LeakyRelu", {"activation_alpha": 0.01}), ("Relu", {})]
for i, (act, params) in enumerate(gemm_acts):
    m_, k_, n_ = int(rng.integers(1, 9)), int(rng.integers(1, 17)), int(rng.integers(1, 9))
    ta, tb = i % 2, (i // 2) % 2
    a = rand(*([k_, m_] if ta else [m_, k_]))
    b = rand(*([n_, k_] if tb else [k_, n_]))
    ins = [("a", a, False), ("b", b, True)] + ([("c", rand(n_), True)] if i % 3 else [])
    attrs = {"transA": ta, "transB": tb, "alpha": float(rng.choice([1.0, 0.5])), "beta": float(rng.choice([1.0, 2.0]))}
    if act:
        attrs["activation"] = act
    attrs.update(params)
    check(f"FusedGemm {act or 'none'} {attrs}", make("FusedGemm", ins, ["y"], attrs), ins, ["y"])
    cases += 1
print(f"{cases} cases: reference and cpu equal to onnxruntime's kernels within 1e-5")


def expect_error(m, inputs, what, fragment):
    path = f"{work}/bad.onnx"
    onnx.save(m, path)
    feeds = {name: arr for name, arr, init in inputs if arr is not None and not init}
    onnxscope_cli.expect_error(cli, path, feeds, work, fragment, what)


x = rand(2, 3, 8)
bad = [("x", x, False), ("skip", rand(2, 3, 8), False), ("gamma", rand(7), True)]
expect_error(make("SkipLayerNormalization", bad, ["y"], {}), bad, "gamma", "gamma must have shape [8]")
bad = [("x", x, False), ("skip", rand(3, 3, 8), False), ("gamma", rand(8), True)]
expect_error(make("SkipLayerNormalization", bad, ["y"], {}), bad, "skip", "skip of shape [3,3,8]")
bad = [("x", x, False), ("b", rand(3), True)]
expect_error(make("BiasGelu", bad, ["y"], {}), bad, "bias", "bias must have shape [8]")
print("error paths give exit code 1 and name the problem")
