"""The com.microsoft operators ONNX Runtime's QOperator quantizer writes
beyond convolutions (QLinearAdd, QLinearMul, QLinearSigmoid,
QLinearLeakyRelu, QLinearGlobalAveragePool, QLinearAveragePool,
QLinearSoftmax, QGemm) and
what its optimizer makes of quantize_dynamic's graphs (MatMulIntegerToFloat,
DynamicQuantizeMatMul), on
onnxscope's reference and cpu engines against ONNX Runtime's own kernels:
random shapes and
broadcasts, uint8 and int8, zero points given or not, per-column QGemm
scales, float and quantized QGemm outputs (every zero point given: ONNX
Runtime's type inference wants them). Quantized outputs must be within
one quantization step of ONNX Runtime's (the two fold scales in float in
their own order, so a value on a half can round either way), float outputs
within 1e-5 relative; the count of one-step differences is printed. Then
the error paths: a scale that is not a positive scalar, a zero point of
another type, a QGemm b_scale of the wrong length give exit code 1 and a
message naming the problem.

usage: check_qoperator_ops.py ONNXSCOPE_CLI WORKDIR
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import onnxscope_cli
from onnxscope_cli import ort_u8s8_saturates, run_outputs, seven_bits

cli, work = sys.argv[1:3]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(5)
U8S8_7BITS = ort_u8s8_saturates()  # uint8 x int8: int8 operands in 7 bits (see there)
ELEM = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.float32: TensorProto.FLOAT, np.int32: TensorProto.INT32}


def make(op, inputs, out_type, attrs):
    """inputs: (name, array or None, is_initializer)."""
    graph_inputs, inits, names = [], [], []
    for name, arr, init in inputs:
        names.append(name if arr is not None else "")
        if arr is None:
            continue
        if init:
            inits.append(numpy_helper.from_array(arr, name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(name, ELEM[arr.dtype.type], list(arr.shape)))
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node(op, names, ["y"], domain="com.microsoft", **attrs)
    g = helper.make_graph([node], op, graph_inputs, [helper.make_tensor_value_info("y", ELEM[out_type], None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                             ir_version=8)


def run_onnxscope(path, feeds, engine):
    return run_outputs(cli, path, feeds, engine, ["y"], work)["y"]


one_step = 0
elements = 0


def check(what, m, inputs):
    global one_step, elements
    path = f"{work}/model.onnx"
    onnx.save(m, path)
    feeds = {name: arr for name, arr, init in inputs if arr is not None and not init}
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    for engine in ("reference", "cpu"):
        got = run_onnxscope(path, feeds, engine)
        assert got.shape == want.shape and got.dtype == want.dtype, (what, engine, got.shape, want.shape, got.dtype)
        if want.dtype == np.float32:
            assert np.allclose(got, want, rtol=1e-5, atol=1e-6), (what, engine, float(np.abs(got - want).max()))
            continue
        d = np.abs(got.astype(np.int32) - want.astype(np.int32))
        assert d.max(initial=0) <= 1, (what, engine, int(d.max()))
        one_step += int((d == 1).sum())
        elements += d.size


def q(shape, t):
    info = np.iinfo(t)
    return rng.integers(info.min, info.max + 1, size=shape).astype(t)


def scale():
    return np.array(rng.uniform(0.005, 0.1), np.float32)


def zp(t, present=True):
    return np.array(rng.integers(np.iinfo(t).min // 2, np.iinfo(t).max // 2 + 1), t) if present else None


cases = 0
for i in range(24):
    t = np.uint8 if i % 2 == 0 else np.int8
    op = "QLinearAdd" if i % 4 < 2 else "QLinearMul"
    shape = [int(v) for v in rng.integers(1, 6, size=int(rng.integers(1, 5)))]
    other = list(shape)
    if i % 3 == 1:
        other = [1] * len(shape)
        other[-1] = shape[-1]
    elif i % 3 == 2:
        other = [1]
    a, b = q(shape, t), q(other, t)
    if i % 2:
        a, b = b, a
    ins = [("a", a, False), ("sa", scale(), True), ("za", zp(t), True),
           ("b", b, False), ("sb", scale(), True), ("zb", zp(t), True),
           ("sc", np.array(rng.uniform(0.01, 0.2), np.float32), True), ("zc", zp(t), True)]
    check(f"{op} {t.__name__} {a.shape} {b.shape}", make(op, ins, t, {}), ins)
    cases += 1

for i in range(12):
    t = np.uint8 if i % 2 == 0 else np.int8
    op = "QLinearSigmoid" if i % 3 else "QLinearLeakyRelu"
    x = q([int(v) for v in rng.integers(1, 7, size=3)], t)
    ins = [("x", x, False), ("sx", scale(), True), ("zx", zp(t), True),
           ("sy", np.array(rng.uniform(0.002, 0.02), np.float32), True), ("zy", zp(t), True)]
    attrs = {"alpha": 0.2} if op == "QLinearLeakyRelu" and i % 2 else {}
    check(f"{op} {t.__name__}", make(op, ins, t, attrs), ins)
    cases += 1

for i in range(12):
    t = np.uint8 if i % 2 == 0 else np.int8
    cl = i % 3 == 2
    n, c, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 20)), int(rng.integers(1, 9)), int(rng.integers(1, 9))
    x = q([n, h, w, c] if cl else [n, c, h, w], t)
    ins = [("x", x, False), ("sx", scale(), True), ("zx", zp(t), True), ("sy", scale(), True), ("zy", zp(t), True)]
    check(f"QLinearGlobalAveragePool {t.__name__} {x.shape} channels_last {int(cl)}",
          make("QLinearGlobalAveragePool", ins, t, {"channels_last": int(cl)}), ins)
    cases += 1

for i in range(12):
    t = np.uint8 if i % 2 == 0 else np.int8
    shape = [int(v) for v in rng.integers(1, 6, size=int(rng.integers(1, 4)))]
    shape[-1] = int(rng.integers(2, 40))
    axis = int(rng.integers(-len(shape), len(shape)))
    opset = 12 if i % 3 == 0 else 13
    # A softmax over one value is 1 (255 at 1/256, saturated); onnxruntime 1.31 gives 0 there:
    # such rows are checked against numpy below, not against it.
    shape[axis] = max(shape[axis], 2)
    x = q(shape, t)
    # The quantizer's output parameters: 1/256 and the type's lowest value as zero.
    zy = np.array(0 if t == np.uint8 else -128, t)
    ins = [("x", x, False), ("sx", scale(), True), ("zx", zp(t), True),
           ("sy", np.array(1.0 / 256, np.float32), True), ("zy", zy, True)]
    check(f"QLinearSoftmax {t.__name__} {x.shape} axis {axis} opset {opset}",
          make("QLinearSoftmax", ins, t, {"axis": axis, "opset": opset}), ins)
    cases += 1

x1 = q([3, 1, 4], np.uint8)
ins = [("x", x1, False), ("sx", scale(), True), ("zx", zp(np.uint8), True),
       ("sy", np.array(1.0 / 256, np.float32), True), ("zy", np.array(0, np.uint8), True)]
path = f"{work}/softmax_one.onnx"
onnx.save(make("QLinearSoftmax", ins, np.uint8, {"axis": 1, "opset": 13}), path)
for engine in ("reference", "cpu"):
    assert np.all(run_onnxscope(path, {"x": x1}, engine) == 255), (engine, "softmax over one value")
cases += 1

for i in range(24):
    ta, tb = [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)][i % 3]
    M, K, N = int(rng.integers(1, 9)), int(rng.integers(1, 40)), int(rng.integers(1, 17))
    trans_a, trans_b = i % 2, (i // 2) % 2
    a = q([K, M] if trans_a else [M, K], ta)
    b = q([N, K] if trans_b else [K, N], tb)
    if U8S8_7BITS and (ta, tb) == (np.uint8, np.int8):
        b = seven_bits(b)
    per_col = i % 4 >= 2
    sb = rng.uniform(0.001, 0.05, size=[N]).astype(np.float32) if per_col else scale()
    zb = (np.zeros([N], tb) if tb == np.int8 else rng.integers(100, 150, size=[N]).astype(tb)) if per_col else zp(tb)
    c_shape = [None, [N], [1, N], [M, N], [M, 1], []][i % 6]
    c = rng.integers(-5000, 5000, size=c_shape).astype(np.int32) if c_shape is not None else None
    quant_out = i % 5 != 4
    ins = [("a", a, False), ("sa", scale(), True), ("za", zp(ta), True), ("b", b, True), ("sb", sb, True),
           ("zb", zb, True), ("c", c, True)]
    if quant_out:
        ins += [("sy", np.array(rng.uniform(0.05, 2.0), np.float32), True), ("zy", zp(ta), True)]
    attrs = {"transA": trans_a, "transB": trans_b, "alpha": float(rng.choice([1.0, 0.5]))}
    check(f"QGemm {ta.__name__}x{tb.__name__} M{M} K{K} N{N} C {c_shape} {'quantized' if quant_out else 'float'}",
          make("QGemm", ins, ta if quant_out else np.float32, attrs), ins)
    cases += 1

for i in range(18):
    t = np.uint8 if i % 2 == 0 else np.int8
    dims = [1, 2, 2, 2, 3, 2][i % 6]
    cl = i % 3 == 1
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 9))
    spatial = [int(v) for v in rng.integers(3, 10, size=dims)]
    x = q([n, *spatial, c] if cl else [n, c, *spatial], t)
    kernel = [int(rng.integers(1, 4)) for _ in range(dims)]
    attrs = {"kernel_shape": kernel, "strides": [int(rng.integers(1, 3)) for _ in range(dims)],
             "pads": [int(rng.integers(0, kk)) for kk in kernel] * 2, "ceil_mode": int(i % 4 == 3),
             "count_include_pad": int(i % 5 < 2), "channels_last": int(cl)}
    ins = [("x", x, False), ("sx", scale(), True), ("zx", zp(t), True), ("sy", scale(), True), ("zy", zp(t), True)]
    check(f"QLinearAveragePool {t.__name__} {x.shape} {attrs}", make("QLinearAveragePool", ins, t, attrs), ins)
    cases += 1

# What the optimizer makes of quantize_dynamic's graphs: MatMulIntegerToFloat and DynamicQuantizeMatMul.
for i in range(16):
    ta, tb = [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)][i % 3]
    M, K, N = int(rng.integers(1, 9)), int(rng.integers(1, 40)), int(rng.integers(1, 17))
    a_shape = [2, M, K] if i % 2 else [M, K]
    b = q([K, N], tb)
    if U8S8_7BITS and (ta, tb) == (np.uint8, np.int8):
        b = seven_bits(b)
    per_col = i % 4 >= 2
    sb = rng.uniform(0.001, 0.05, size=[N]).astype(np.float32) if per_col else scale()
    zb = (rng.integers(-3, 4, size=[N]).astype(tb) if tb == np.int8 else rng.integers(120, 136, size=[N]).astype(tb)) \
        if per_col else zp(tb)
    bias = rng.standard_normal(N).astype(np.float32) if i % 3 != 1 else None
    if i % 2 == 0 or ta == np.int8:
        a = q(a_shape, ta)
        ins = [("a", a, False), ("b", b, True), ("sa", scale(), True), ("sb", sb, True), ("za", zp(ta), True),
               ("zb", zb, True), ("bias", bias, True)]
        check(f"MatMulIntegerToFloat {ta.__name__}x{tb.__name__} A {a_shape} N {N} bias {bias is not None}",
              make("MatMulIntegerToFloat", ins, np.float32, {}), ins)
    else:
        a = rng.standard_normal(a_shape).astype(np.float32)
        ins = [("a", a, False), ("b", b, True), ("sb", sb, True), ("zb", zb, True), ("bias", bias, True)]
        check(f"DynamicQuantizeMatMul x{tb.__name__} A {a_shape} N {N} bias {bias is not None}",
              make("DynamicQuantizeMatMul", ins, np.float32, {}), ins)
    cases += 1

print(f"{cases} cases: reference and cpu within one quantization step of onnxruntime's kernels "
      f"({one_step} of {elements} quantized values one step apart, none more)")


def expect_error(m, inputs, what, fragment):
    path = f"{work}/bad.onnx"
    onnx.save(m, path)
    feeds = {name: arr for name, arr, init in inputs if arr is not None and not init}
    onnxscope_cli.expect_error(cli, path, feeds, work, fragment, what)


a = q([2, 3], np.uint8)
bad = [("a", a, False), ("sa", np.array(-0.1, np.float32), True), ("za", zp(np.uint8), True), ("b", a.copy(), False),
       ("sb", scale(), True), ("zb", zp(np.uint8), True), ("sc", scale(), True), ("zc", zp(np.uint8), True)]
expect_error(make("QLinearAdd", bad, np.uint8, {}), bad, "scale", "A_scale must be a positive finite number")
bad = [("x", a, False), ("sx", scale(), True), ("zx", np.array(3, np.int8), True), ("sy", scale(), True),
       ("zy", zp(np.uint8), True)]
expect_error(make("QLinearSigmoid", bad, np.uint8, {}), bad, "zero point", "X_zero_point must be uint8")
bad = [("a", a, False), ("sa", scale(), True), ("za", zp(np.uint8), True), ("b", q([3, 4], np.uint8), True),
       ("sb", np.full([3], 0.1, np.float32), True), ("zb", np.zeros([3], np.uint8), True)]
expect_error(make("QGemm", bad, np.float32, {}), bad, "b_scale", "b_scale must be a scalar or have 4 values")
print("error paths give exit code 1 and name the problem")
