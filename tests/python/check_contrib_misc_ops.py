"""Four more of ONNX Runtime's com.microsoft contrib operators on onnxscope's
reference and cpu engines (the cpu engine runs the reference's kernels for
them):

- EmbedLayerNormalization (BERT's embeddings): against ONNX Runtime's CPU
  kernel, with and without segment ids and embedding, mask, position_ids of
  shape (B, S) and (1, S), every output (output, mask_index, embedding_sum);
  float16 against numpy (ONNX Runtime's CPU kernel is float only).
- BiasSplitGelu (diffusion models' GEGLU): ONNX Runtime has it on CUDA only,
  so against numpy (the sum in X's type, the GELU in double), float32 and
  float16.
- NhwcConv (channels-last Conv): ONNX Runtime has it on CUDA only, so
  against ONNX Runtime's CPU Conv between Transposes (exact moves), 1-D to
  3-D, groups, strides, dilations, pads, auto_pad, bias; float16 against
  that Conv on the same values in float, rounded at the end.
- GatherBlockQuantized: against ONNX Runtime's CPU kernel for uint8 (2, 4
  and 8 bits, packed), int4, uint4, the four float8 types and float4e2m1
  (block_size 0, broadcast scales), zero points or none, float and float16
  scales, int32 and int64 indices with negative and out-of-range ones
  (zeros, as the operator and ONNX Runtime say), axes of either sign.

Every float32 output within 1e-5 absolute plus 1e-5 relative (float16:
1e-3). ONNX Runtime's kernels run with ORT_DISABLE_ALL. Then the error
paths: a bad block_size, bits, scales or zero-point shape, an id out of
range, an odd BiasSplitGelu width and a channel mismatch give exit code 1
and a message naming the problem.

usage: check_contrib_misc_ops.py ONNXSCOPE_CLI WORKDIR
"""
import math
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
rng = np.random.default_rng(29)
F, F16, I32, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32, TensorProto.INT64
NP_TYPE = {np.dtype(np.float32): F, np.dtype(np.float16): F16, np.dtype(np.int32): I32, np.dtype(np.int64): I64,
           np.dtype(np.uint8): TensorProto.UINT8}


def make(op, inputs, outputs, attrs, domain="com.microsoft", nodes_before=(), nodes_after=()):
    """inputs: (name, value, is_initializer), value an array, a TensorProto
    (an initializer) or None (omitted); outputs: (name, elem_type), name ""
    for an omitted output."""
    graph_inputs, inits, names = [], [], []
    for name, value, init in inputs:
        names.append(name if value is not None else "")
        if value is None:
            continue
        if isinstance(value, TensorProto):
            inits.append(value)
        elif init:
            inits.append(numpy_helper.from_array(value, name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(name, NP_TYPE[value.dtype], list(value.shape)))
    while names and names[-1] == "":
        names.pop()
    out_names = [o for o, _ in outputs]
    while out_names and out_names[-1] == "":
        out_names.pop()
    node = helper.make_node(op, names, out_names, domain=domain, **attrs)
    nodes = list(nodes_before) + [node] + list(nodes_after)
    final = [helper.make_tensor_value_info(o, t, None) for o, t in outputs if o]
    g = helper.make_graph(nodes, op, graph_inputs, final, inits)
    imports = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(g, opset_imports=imports, ir_version=10)


def ort_run(m, feeds, outputs):
    path = f"{work}/ort_model.onnx"
    onnx.save(m, path)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # its kernel, not a rewrite
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(outputs, feeds)


def check(what, m, inputs, outputs, want=None, tol=1e-5):
    """want: the expected outputs; None runs the model on ONNX Runtime's CPU kernels."""
    path = f"{work}/model.onnx"
    onnx.save(m, path)
    feeds = {name: v for name, v, init in inputs if v is not None and not init and not isinstance(v, TensorProto)}
    if want is None:
        want = ort_run(m, feeds, outputs)
    for engine in ("reference", "cpu"):
        got = run_outputs(cli, path, feeds, engine, outputs, work)
        for name, w in zip(outputs, want):
            g = got[name]
            assert g.shape == w.shape, (what, engine, name, g.shape, w.shape)
            assert g.dtype == w.dtype, (what, engine, name, g.dtype, w.dtype)
            err = np.abs(g.astype(np.float64) - w.astype(np.float64))
            assert np.all(err <= tol + tol * np.abs(w.astype(np.float64))), (what, engine, name, float(err.max()))


def rand(*shape, lo=-3.0, hi=3.0, dtype=np.float32):
    return rng.uniform(lo, hi, shape).astype(dtype)


counts = {}

# --- EmbedLayerNormalization ------------------------------------------------
for i in range(24):
    B, S, H = int(rng.integers(1, 4)), int(rng.integers(1, 9)), int(rng.choice([4, 16, 37, 64]))
    V, G = int(rng.integers(S, 40)), int(rng.integers(1, 4))
    with_seg = i % 3 != 2           # segment_ids and segment_embedding
    seg_table_only = i % 6 == 2      # segment_embedding without segment_ids: its row 0
    with_mask, pos_kind = i % 2 == 0, [None, "batch", "broadcast"][i % 3]
    ids = rng.integers(0, V, (B, S)).astype(np.int32)
    P = S + int(rng.integers(0, 5))
    ins = [("ids", ids, False),
           ("seg", rng.integers(0, G, (B, S)).astype(np.int32) if with_seg else None, False),
           ("word", rand(V, H), True), ("pos", rand(P, H), True),
           ("segemb", rand(G, H) if with_seg or seg_table_only else None, True),
           ("gamma", rand(H), True), ("beta", rand(H), True),
           ("mask", rng.integers(0, 2, (B, S)).astype(np.int32) if with_mask else None, False)]
    if pos_kind:
        ins.append(("pids", rng.integers(0, P, (B if pos_kind == "batch" else 1, S)).astype(np.int32), False))
    attrs = {"epsilon": float(rng.choice([1e-12, 1e-5]))}
    if i % 4 == 3:  # no mask_index output
        attrs["mask_index_type"] = 0
        outputs = [("y", F), ("", I32), ("sum", F)]
    else:
        outputs = [("y", F), ("mi", I32)] + ([("sum", F)] if i % 2 else [])
    names = [o for o, _ in outputs if o]
    check(f"EmbedLayerNormalization case {i} ids {ids.shape} H {H}", make("EmbedLayerNormalization", ins, outputs, attrs),
          ins, names)
    counts["EmbedLayerNormalization"] = counts.get("EmbedLayerNormalization", 0) + 1


# float16 (ONNX Runtime's CPU kernel is float only): against numpy, each add in float16, the norm in double.
def embed_layer_norm(ids, seg, word, pos, segemb, gamma, beta, pids, eps):
    p = pids if pids is not None else np.arange(ids.shape[1])[None, :]
    s = word[ids] + pos[np.broadcast_to(p, ids.shape)]
    if segemb is not None:
        s = s + segemb[seg if seg is not None else np.zeros_like(ids)]
    d = s.astype(np.float64)
    mean = d.mean(-1, keepdims=True)
    var = ((d - mean) ** 2).mean(-1, keepdims=True)
    y = (d - mean) / np.sqrt(var + eps) * gamma.astype(np.float64) + beta.astype(np.float64)
    return y.astype(s.dtype), s


for i in range(4):
    B, S, H, V = 2, int(rng.integers(1, 7)), int(rng.choice([8, 33])), 12
    ids, seg = rng.integers(0, V, (B, S)).astype(np.int32), rng.integers(0, 2, (B, S)).astype(np.int32)
    word, pos, segemb = rand(V, H, dtype=np.float16), rand(S + 2, H, dtype=np.float16), rand(2, H, dtype=np.float16)
    gamma, beta = rand(H, dtype=np.float16), rand(H, dtype=np.float16)
    pids = rng.integers(0, S + 2, (1, S)).astype(np.int32) if i % 2 else None
    mask = rng.integers(0, 2, (B, S)).astype(np.int32)
    ins = [("ids", ids, False), ("seg", seg if i != 2 else None, False), ("word", word, True), ("pos", pos, True),
           ("segemb", segemb, True), ("gamma", gamma, True), ("beta", beta, True), ("mask", mask, False),
           ("pids", pids, False)]
    y, s = embed_layer_norm(ids, seg if i != 2 else None, word, pos, segemb, gamma, beta, pids, 1e-5)
    want = [y, (mask == 1).sum(-1).astype(np.int32), s]
    check(f"EmbedLayerNormalization float16 {ids.shape} H {H}",
          make("EmbedLayerNormalization", ins, [("y", F16), ("mi", I32), ("sum", F16)], {"epsilon": 1e-5}),
          ins, ["y", "mi", "sum"], want, tol=1e-3)
    counts["EmbedLayerNormalization"] += 1


# --- BiasSplitGelu (ONNX Runtime: CUDA only; numpy) -----------------------------
def bias_split_gelu(x, bias):
    s = (x + bias).astype(np.float64)  # the sum in X's type (numpy adds float16 in float16)
    half = s.shape[-1] // 2
    left, right = s[..., :half], s[..., half:]
    erf = np.vectorize(math.erf)
    return (left * (0.5 * right * (1.0 + erf(right / math.sqrt(2.0))))).astype(x.dtype)


for i in range(16):
    dtype = np.float16 if i % 4 == 3 else np.float32
    n, s = int(rng.integers(1, 4)), int(rng.integers(1, 10))
    d = int(rng.choice([2, 8, 32, 66])) if i != 5 else 2560  # 2560: one of ONNX Runtime's CUDA widths
    x, bias = rand(n, s, d, dtype=dtype), rand(d, dtype=dtype)
    ins = [("x", x, False), ("bias", bias, True)]
    out_t = F16 if dtype == np.float16 else F
    check(f"BiasSplitGelu {x.shape} {dtype.__name__}", make("BiasSplitGelu", ins, [("y", out_t)], {}), ins, ["y"],
          [bias_split_gelu(x, bias)], tol=1e-3 if dtype == np.float16 else 1e-5)
    counts["BiasSplitGelu"] = counts.get("BiasSplitGelu", 0) + 1

# --- NhwcConv (ONNX Runtime: CUDA only; its CPU Conv between Transposes) ---------
for i in range(18):
    k = [1, 2, 2, 2, 3][i % 5]  # spatial dims
    group = 1 + (i % 3 == 1)
    n = int(rng.integers(1, 3))
    c, m = group * int(rng.integers(1, 4)), group * int(rng.integers(1, 4))
    kernel = [int(v) for v in rng.integers(1, 4, size=k)]
    dilations = [int(v) for v in rng.integers(1, 3, size=k)] if i % 4 != 1 else [1] * k
    # each spatial dim at least the dilated kernel
    spatial = [max(int(rng.integers(3, 8 if k < 3 else 5)), (kk - 1) * dd + 1) for kk, dd in zip(kernel, dilations)]
    attrs = {"kernel_shape": kernel, "group": group, "strides": [int(v) for v in rng.integers(1, 3, size=k)]}
    if i % 4 == 1:
        attrs["auto_pad"] = "SAME_UPPER"
    else:
        attrs["pads"] = [int(v) for v in rng.integers(0, 2, size=2 * k)]
        attrs["dilations"] = dilations
    x = rand(n, *spatial, c)
    w = rand(m, *kernel, c // group, lo=-0.5, hi=0.5)
    bias = rand(m) if i % 2 == 0 else None
    ins = [("x", x, False), ("w", w, True), ("b", bias, True)]
    # ONNX Runtime: X to channels first, Conv with W moved back to (M, C/group, k...), Y to channels last.
    r = k + 2
    w_first = np.ascontiguousarray(np.moveaxis(w, -1, 1))
    ort_ins = [("xt", x, False), ("wf", w_first, True), ("b", bias, True)]
    to_first = helper.make_node("Transpose", ["x"], ["xt"], perm=[0, r - 1] + list(range(1, r - 1)))
    to_last = helper.make_node("Transpose", ["yt"], ["y"], perm=[0] + list(range(2, r)) + [1])
    conv = make("Conv", ort_ins, [("yt", F)], attrs, domain="", nodes_before=[to_first], nodes_after=[to_last])
    conv.graph.ClearField("input")
    conv.graph.input.extend([helper.make_tensor_value_info("x", F, list(x.shape))])
    conv.graph.ClearField("output")
    conv.graph.output.extend([helper.make_tensor_value_info("y", F, None)])
    want = ort_run(conv, {"x": x}, ["y"])
    check(f"NhwcConv {x.shape} W {w.shape} {attrs}", make("NhwcConv", ins, [("y", F)], attrs), ins, ["y"], want)
    if i % 6 == 5:  # float16: ONNX Runtime's float Conv on the same values, rounded to float16 at the end
        x16, w16 = x.astype(np.float16), w.astype(np.float16)
        b16 = bias.astype(np.float16) if bias is not None else None
        conv.graph.ClearField("initializer")
        conv.graph.initializer.extend([numpy_helper.from_array(np.ascontiguousarray(np.moveaxis(w16, -1, 1)).astype(
            np.float32), "wf")] + ([numpy_helper.from_array(b16.astype(np.float32), "b")] if bias is not None else []))
        want16 = [v.astype(np.float16) for v in ort_run(conv, {"x": x16.astype(np.float32)}, ["y"])]
        ins16 = [("x", x16, False), ("w", w16, True), ("b", b16, True)]
        check(f"NhwcConv float16 {x.shape}", make("NhwcConv", ins16, [("y", F16)], attrs), ins16, ["y"], want16,
              tol=1e-3)
        counts["NhwcConv"] += 1
    counts["NhwcConv"] = counts.get("NhwcConv", 0) + 1


# --- GatherBlockQuantized ----------------------------------------------------------
def pack_rows(q, bits):
    """uint8 rows of `bits`-bit values packed along the last axis, low bits first."""
    per = 8 // bits
    q = q.reshape(-1, q.shape[-1])
    out = np.zeros((q.shape[0], (q.shape[1] + per - 1) // per), np.uint8)
    for j in range(q.shape[1]):
        out[:, j // per] |= (q[:, j].astype(np.uint8) << np.uint8((j % per) * bits)).astype(np.uint8)
    return out


FP8 = [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ,
       TensorProto.FLOAT4E2M1]
for i in range(30):
    kind = ["uint8", "uint8", "int4", "uint4", "fp8"][i % 5]
    bits = [2, 4, 8][(i // 5) % 3] if kind == "uint8" else 4
    block = int(rng.choice([16, 32, 64, 128]))
    rank = 2 if kind == "uint8" or i % 3 else 3
    shape = [int(rng.integers(1, 6)) for _ in range(rank)]
    if kind == "uint8":
        g, q = 0, rank - 1
        shape[-1] = int(rng.integers(1, 5)) * (8 // bits) * 4  # whole bytes
    else:
        g, q = [int(a) for a in rng.choice(rank, 2, replace=i % 4 == 0)]
        shape[q] = int(rng.integers(1, 3 * block))
    attrs = {"gather_axis": g - rank if i % 2 else g, "quantize_axis": q - rank if i % 3 == 0 else q}
    if kind != "fp8" or i % 2:
        attrs["block_size"] = block
    else:
        block = 0
        attrs["block_size"] = 0  # one block over the whole quantize_axis
    if kind != "fp8":
        attrs["bits"] = bits
    sdtype = np.float16 if i % 4 == 1 else np.float32
    blocks = (shape[q] + (block or shape[q]) - 1) // (block or shape[q])
    sshape = list(shape)
    sshape[q] = blocks
    if kind == "fp8" and i % 3 == 1:  # a broadcast scale on the other axes
        sshape = [blocks if d == q else 1 for d in range(rank)]
    scales = rng.uniform(0.01, 0.5, sshape).astype(sdtype)
    with_zp = kind != "fp8" and i % 3 != 2
    if kind == "uint8":
        qv = rng.integers(0, 2 ** bits, shape)
        data = pack_rows(qv, bits).reshape(shape[:-1] + [-1])
        zp = pack_rows(rng.integers(0, 2 ** bits, sshape), bits).reshape(sshape[:-1] + [-1]) if with_zp else None
        data_init = numpy_helper.from_array(data, "data")
        zp_init = numpy_helper.from_array(zp, "zp") if with_zp else None
    elif kind in ("int4", "uint4"):
        t = TensorProto.INT4 if kind == "int4" else TensorProto.UINT4
        lo, hi = (-8, 8) if kind == "int4" else (0, 16)
        data_init = helper.make_tensor("data", t, shape, rng.integers(lo, hi, shape).flatten().tolist())
        zp_init = helper.make_tensor("zp", t, sshape, rng.integers(lo, hi, sshape).flatten().tolist()) if with_zp else None
    else:
        t = FP8[(i // 5) % 5]
        data_init = helper.make_tensor("data", t, shape, rng.uniform(-4, 4, shape).astype(np.float32).flatten().tolist())
        zp_init = None
    gdim = shape[g] * (8 // bits if kind == "uint8" and g == rank - 1 else 1)
    idx_dtype = np.int64 if i % 2 else np.int32
    idx_shape = [int(v) for v in rng.integers(1, 4, size=int(rng.integers(1, 3)))]
    indices = rng.integers(-gdim, gdim, idx_shape).astype(idx_dtype)
    if i % 3 == 0 and indices.size > 1:  # an index out of range gives zeros for its slice
        indices.flat[0] = gdim + 2 if i % 2 else -gdim - 1
    ins = [("data", data_init, True), ("indices", indices, False), ("scales", scales, True), ("zp", zp_init, True)]
    out_t = F16 if sdtype == np.float16 else F
    check(f"GatherBlockQuantized {kind} bits {bits} data {shape} scales {sshape} {attrs} zp {with_zp} "
          f"indices {indices.tolist()}", make("GatherBlockQuantized", ins, [("y", out_t)], attrs), ins, ["y"],
          tol=1e-3 if sdtype == np.float16 else 1e-5)
    counts["GatherBlockQuantized"] = counts.get("GatherBlockQuantized", 0) + 1

print(", ".join(f"{op} {n}" for op, n in counts.items()) +
      " random cases: reference and cpu equal to onnxruntime (or numpy) within 1e-5 (float16: 1e-3)")


# --- error paths -----------------------------------------------------------------
def expect_error(m, inputs, what, fragment):
    path = f"{work}/bad.onnx"
    onnx.save(m, path)
    feeds = {name: v for name, v, init in inputs if v is not None and not init and not isinstance(v, TensorProto)}
    onnxscope_cli.expect_error(cli, path, feeds, work, fragment, what)


def gbq(data, scales, zp, attrs, indices=np.array([0, 1], np.int64)):
    ins = [("data", data, True), ("indices", indices, False), ("scales", scales, True), ("zp", zp, True)]
    return make("GatherBlockQuantized", ins, [("y", F)], attrs), ins


d8 = np.zeros((4, 16), np.uint8)  # 32 4-bit values a row
m, ins = gbq(d8, np.ones((4, 2), np.float32), None, {"block_size": 24, "bits": 4})
expect_error(m, ins, "block_size 24", "block_size must be a power of two of at least 16, got 24")
m, ins = gbq(d8, np.ones((4, 4), np.float32), None, {"block_size": 8, "bits": 4})
expect_error(m, ins, "block_size 8", "block_size must be a power of two of at least 16, got 8")
m, ins = gbq(d8, np.ones((4, 2), np.float32), None, {"block_size": 16, "bits": 3})
expect_error(m, ins, "bits 3", "bits must be 2, 4 or 8 for uint8 data, got 3")
m, ins = gbq(d8, np.ones((4, 2), np.float32), np.zeros((4, 2), np.uint8), {"block_size": 16, "bits": 4})
expect_error(m, ins, "zero points unpacked", "zero_points must have shape [4,1]")
m, ins = gbq(d8, np.ones((4, 3), np.float32), None, {"block_size": 16, "bits": 4})
expect_error(m, ins, "scales", "scales must have shape [4,2]")
i4 = helper.make_tensor("data", TensorProto.INT4, [4, 32], [0] * 128)
m, ins = gbq(i4, np.ones((4, 2), np.float32), helper.make_tensor("zp", TensorProto.INT4, [4, 1], [0] * 4),
             {"block_size": 16})
expect_error(m, ins, "int4 zero points", "zero_points must have shape [4,2]")
m, ins = gbq(d8, np.ones((4, 2), np.float32), None, {"block_size": 16, "bits": 4, "gather_axis": 1})
expect_error(m, ins, "uint8 gather_axis", "gather_axis must be 0 for uint8 data")

ids = np.array([[1, 2, 99]], np.int32)
eln = [("ids", ids, False), ("seg", np.zeros((1, 3), np.int32), False), ("word", rand(10, 8), True),
       ("pos", rand(4, 8), True), ("segemb", rand(2, 8), True), ("gamma", rand(8), True), ("beta", rand(8), True)]
expect_error(make("EmbedLayerNormalization", eln, [("y", F), ("mi", I32)], {}), eln, "input_ids out of range",
             "input_ids[0,2] = 99 is out of range: word_embedding has 10 rows")
eln[0] = ("ids", np.array([[1, 2, 3]], np.int32), False)
eln[1] = ("seg", np.array([[0, -1, 0]], np.int32), False)
expect_error(make("EmbedLayerNormalization", eln, [("y", F), ("mi", I32)], {}), eln, "segment_ids out of range",
             "segment_ids[0,1] = -1 is out of range: segment_embedding has 2 rows")
eln[1] = ("seg", np.zeros((1, 3), np.int32), False)
eln += [("mask", None, False), ("pids", np.array([[0, 4, 1]], np.int32), False)]
expect_error(make("EmbedLayerNormalization", eln, [("y", F), ("mi", I32)], {}), eln, "position_ids out of range",
             "position_ids[0,1] = 4 is out of range: position_embedding has 4 rows")
eln = eln[:7]
eln[0] = ("ids", np.zeros((1, 5), np.int32), False)
eln[1] = ("seg", np.zeros((1, 5), np.int32), False)
expect_error(make("EmbedLayerNormalization", eln, [("y", F), ("mi", I32)], {}), eln, "sequence longer than positions",
             "the sequence length 5 exceeds position_embedding's 4 rows")
eln[5] = ("gamma", rand(7), True)
expect_error(make("EmbedLayerNormalization", eln, [("y", F), ("mi", I32)], {}), eln, "gamma", "gamma must have shape [8]")

bsg = [("x", rand(1, 2, 7), False), ("bias", rand(7), True)]
expect_error(make("BiasSplitGelu", bsg, [("y", F)], {}), bsg, "odd width", "X's last dimension D = 7 must be even")
bsg = [("x", rand(1, 2, 8), False), ("bias", rand(6), True)]
expect_error(make("BiasSplitGelu", bsg, [("y", F)], {}), bsg, "bias", "bias must have shape [8]")

nc = [("x", rand(1, 5, 5, 4), False), ("w", rand(2, 3, 3, 3), True)]
expect_error(make("NhwcConv", nc, [("y", F)], {}), nc, "channels",
             "X has 4 channels (its last dimension) but W expects 3 (its last dimension) x group 1")
print("error paths give exit code 1 and name the problem")
