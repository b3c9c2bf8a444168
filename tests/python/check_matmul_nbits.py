"""com.microsoft MatMulNBits (weight-only quantized MatMul, as ONNX Runtime's
MatMul4BitsQuantizer and onnxruntime-genai write it) on onnxscope's
reference and cpu engines: random K, N, block sizes, A of rank 2 and 3,
zero points packed, in A's type or absent (2^(bits-1)), g_idx, bias. Against
ONNX Runtime's own kernel for the widths it runs (2, 4 and 8 bits), and
against numpy's dequantize-then-matmul in double for every width (3 and 5
bits too, which ONNX Runtime refuses): within 1e-5 relative of the output's
scale. Then the error paths: a block size that is not a power of two, B of
the wrong shape, a zero point tensor of the wrong length, g_idx past the
blocks give exit code 1 and name the problem.

usage: check_matmul_nbits.py ONNXSCOPE_CLI WORKDIR
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
rng = np.random.default_rng(3)


def pack(values, bits):
    """A little-endian bit stream of `bits`-bit fields."""
    out = np.zeros((len(values) * bits + 7) // 8, np.uint8)
    for i, v in enumerate(values):
        for b in range(bits):
            if (int(v) >> b) & 1:
                at = i * bits + b
                out[at // 8] |= np.uint8(1 << (at % 8))
    return out


def case(bits, K, N, block, a_shape, zp_kind, with_g_idx, with_bias):
    blocks = (K + block - 1) // block
    q = rng.integers(0, 2 ** bits, size=(N, blocks * block))
    B = np.stack([np.stack([pack(q[n, j * block:(j + 1) * block], bits) for j in range(blocks)]) for n in range(N)])
    scales = rng.uniform(0.01, 0.1, (N, blocks)).astype(np.float32)
    zq = rng.integers(0, 2 ** bits, size=(N, blocks))
    inits = [numpy_helper.from_array(B, "b"), numpy_helper.from_array(scales.reshape(-1), "s")]
    names = ["a", "b", "s"]
    if zp_kind == "packed":
        inits.append(numpy_helper.from_array(np.stack([pack(zq[n], bits) for n in range(N)]), "z"))
        zeros = zq.astype(np.float64)
    elif zp_kind == "float":
        zf = rng.uniform(0, 2 ** bits - 1, (N, blocks)).astype(np.float32)
        inits.append(numpy_helper.from_array(zf.reshape(-1), "z"))
        zeros = zf.astype(np.float64)
    else:
        zeros = np.full((N, blocks), 2 ** (bits - 1), np.float64)
    names.append("z" if zp_kind != "none" else "")
    group = np.arange(K) // block
    if with_g_idx:
        group = rng.integers(0, blocks, size=K).astype(np.int32)
        inits.append(numpy_helper.from_array(group, "g"))
    names.append("g" if with_g_idx else "")
    bias = rng.standard_normal(N).astype(np.float32) if with_bias else None
    if with_bias:
        inits.append(numpy_helper.from_array(bias, "bias"))
    names.append("bias" if with_bias else "")
    while names[-1] == "":
        names.pop()
    node = helper.make_node("MatMulNBits", names, ["y"], domain="com.microsoft", K=K, N=N, bits=bits, block_size=block)
    g = helper.make_graph([node], "mnb", [helper.make_tensor_value_info("a", TensorProto.FLOAT, list(a_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                          ir_version=8)
    # numpy: the weights dequantized in float32 (as both runtimes), the product in double.
    W = ((q[:, :K].astype(np.float32) - zeros[:, group].astype(np.float32)) * scales[:, group]).astype(np.float32)
    a = rng.standard_normal(a_shape).astype(np.float32)
    want = a.astype(np.float64) @ W.T.astype(np.float64)
    if with_bias:
        want = want + bias
    return m, a, want


def run_onnxscope(path, a, engine):
    return run_outputs(cli, path, {"a": a}, engine, ["y"], work)["y"]


against_ort = 0
cases = 0
refused = []
for i in range(30):
    bits = [4, 4, 8, 2, 3, 5][i % 6]
    block = int(rng.choice([16, 32, 64, 128]))
    K, N = int(rng.integers(1, 200)), int(rng.integers(1, 24))
    a_shape = (int(rng.integers(1, 5)), K) if i % 2 else (2, int(rng.integers(1, 4)), K)
    zp_kind = ["packed", "none", "float"][i % 3]
    with_g = i % 7 == 3
    m, a, want = case(bits, K, N, block, a_shape, zp_kind, with_g, i % 4 == 1)
    path = f"{work}/mnb.onnx"
    onnx.save(m, path)
    scale = max(1.0, float(np.abs(want).max()))
    what = f"MatMulNBits bits {bits} K {K} N {N} block {block} A {a_shape} zero points {zp_kind} g_idx {i % 7 == 3}"
    for engine in ("reference", "cpu"):
        got = run_onnxscope(path, a, engine)
        assert got.shape == want.shape, (what, engine, got.shape, want.shape)
        err = float(np.abs(got - want).max())
        assert err <= 1e-5 * scale, (what, engine, "against numpy", err)
    if with_g and zp_kind == "packed":
        # ONNX Runtime 1.31 does not apply packed zero points with g_idx (at 4 bits its output is the
        # default zero point's; at 2 bits neither): the documented formula is checked against numpy above.
        refused.append(what + " (onnxruntime drops packed zero points with g_idx)")
        cases += 1
        continue
    if bits in (2, 4, 8):
        try:
            theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"a": a})[0]
        except Exception as e:  # 8 bits with zero points in A's type or g_idx: ONNX Runtime has no CPU path
            assert "is supported" in str(e), (what, str(e))
            refused.append(what)
            cases += 1
            continue
        err = float(np.abs(got - theirs).max())
        assert err <= 1e-5 * scale, (what, "against onnxruntime", err)
        against_ort += 1
    cases += 1
print(f"{cases} cases: reference and cpu equal to numpy within 1e-5 of the output scale, "
      f"{against_ort} of them (2, 4 and 8 bits) to onnxruntime's kernel too; not compared with onnxruntime {len(refused)}: " +
      "; ".join(refused))


def expect_error(m, fragment, what):
    path = f"{work}/bad.onnx"
    onnx.save(m, path)
    onnxscope_cli.expect_error(cli, path, {"a": rng.standard_normal((2, 32)).astype(np.float32)}, work, fragment, what)


def with_attr(m, name, value):
    for a in m.graph.node[0].attribute:
        if a.name == name:
            a.i = value
    return m


m, _, _ = case(4, 32, 4, 32, (2, 32), "packed", False, False)
expect_error(with_attr(m, "block_size", 24), "block_size must be a power of two", "block size")
m, _, _ = case(4, 32, 4, 32, (2, 32), "packed", False, False)
expect_error(with_attr(m, "N", 5), "B must have shape [5,1,16]", "B shape")
m, _, _ = case(4, 32, 4, 16, (2, 32), "float", False, False)
m.graph.initializer[2].CopyFrom(numpy_helper.from_array(np.zeros(3, np.float32), "z"))
expect_error(m, "zero_points must have 8 values", "zero points")
m, _, _ = case(4, 32, 4, 16, (2, 32), "none", True, False)
m.graph.initializer[2].CopyFrom(numpy_helper.from_array(np.full(32, 7, np.int32), "g"))
expect_error(m, "g_idx[0] = 7 is not a block", "g_idx")
print("error paths give exit code 1 and name the problem")
