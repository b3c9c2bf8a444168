"""ONNX Runtime's attention operators on onnxscope's reference and cpu
engines against ONNX Runtime's own CPU kernels: com.microsoft Attention
(every mask_index format, unidirectional, past/present, attention_bias,
qkv_hidden_sizes, scale), MultiHeadAttention (separate, packed KV and
packed QKV inputs, keys/values already in heads, bias, past/present,
key_padding_mask, attention_bias, unidirectional, the qk output),
GroupQueryAttention (prompt and token steps with a cache, ragged batches,
packed QKV, rotary, local windows, softcap, smooth softmax, head sinks,
attention_bias, position_ids, the qk output) and RotaryEmbedding (3-D and
4-D input, position offset or ids, interleaved, a partial rotary dim).
Random shapes; every output compared within 2e-5 absolute plus 2e-5
relative (ONNX Runtime computes in float32, onnxscope's reference in
double). Then error paths: a mask of a shape no format has, a position
outside the rotary cache, seqlens_k that do not fit the cache.

usage: check_contrib_attention_ops.py ONNXSCOPE_CLI WORKDIR
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from onnxscope_cli import expect_error, ort_u8s8_saturates, run_outputs, seven_bits

cli, work = sys.argv[1:3]
ENGINES = os.environ.get("ONNXSCOPE_ENGINES", "reference,cpu").split(",")  # cuda-sim or cuda too, by hand
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(23)
TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32,
         np.dtype(np.int64): TensorProto.INT64, np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8}


def make(op, inputs, outputs, attrs):
    """inputs: (name, array or None); outputs: names ('' for an absent one)."""
    names = [n if a is not None else "" for n, a in inputs]
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node(op, names, outputs, domain="com.microsoft", **attrs)
    graph = helper.make_graph([node], op,
                              [helper.make_tensor_value_info(n, TYPES[a.dtype], list(a.shape)) for n, a in inputs
                               if a is not None],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                             ir_version=8)


cases = 0


def check(what, op, inputs, outputs, attrs, ort_inputs=None):
    """ort_inputs: the same values in a form onnxruntime's CPU kernel takes (it has no packed KV or QKV)."""
    global cases
    wanted = [o for o in outputs if o]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort_inputs or inputs
    want = ort.InferenceSession(make(op, ref, outputs, attrs).SerializeToString(), so,
                                providers=["CPUExecutionProvider"]).run(wanted, {n: a for n, a in ref if a is not None})
    path = f"{work}/model.onnx"
    onnx.save(make(op, inputs, outputs, attrs), path)
    feeds = {n: a for n, a in inputs if a is not None}
    for engine in ENGINES:
        got = run_outputs(cli, path, feeds, engine, wanted, work)
        for name, w in zip(wanted, want):
            g = got[name]
            assert g.shape == w.shape, (what, engine, name, g.shape, w.shape)
            err = np.abs(g.astype(np.float64) - w.astype(np.float64))
            tol = 2e-5 + 2e-5 * np.abs(w.astype(np.float64))
            bad = np.argwhere(err > tol)
            assert bad.size == 0, (what, engine, name, float(err.max()), bad[:3].tolist(), g[tuple(bad[0])],
                                   w[tuple(bad[0])])
    cases += 1


def rand(*shape):
    return rng.uniform(-1.5, 1.5, shape).astype(np.float32)


# --- Attention ------------------------------------------------------------------------------------------
for i in range(16):
    B, S, Din, N = int(rng.integers(1, 4)), int(rng.integers(1, 7)), int(rng.choice([8, 12])), int(rng.choice([1, 2, 4]))
    H = int(rng.choice([2, 4, 8]))
    Hv = H if i % 5 else H + 2
    sizes = [N * H, N * H, N * Hv]
    x, w, b = rand(B, S, Din), rand(Din, sum(sizes)), rand(sum(sizes))
    P = int(rng.integers(1, 4)) if i % 4 == 3 and Hv == H else 0
    past = rand(2, B, N, P, H) if P else None
    T = P + S
    kind = i % 6
    if kind == 0:
        mask = None
    elif kind == 1:
        mask = rng.integers(1, T + 1, size=B).astype(np.int32)
    elif kind == 2:
        ends = rng.integers(1, T + 1, size=B)
        mask = np.concatenate([ends, [int(rng.integers(0, e)) for e in ends]]).astype(np.int32)
    elif kind == 3:
        mask = (rng.random((B, T)) > 0.3).astype(np.int32)
        mask[:, 0] = 1
    elif kind == 4:
        mask = (rng.random((B, S, T)) > 0.3).astype(np.int32)
        mask[:, :, 0] = 1
    else:
        mask = np.ones((B, 1), np.int32)
    attrs = {"num_heads": N}
    if Hv != H:
        attrs["qkv_hidden_sizes"] = sizes
    if i % 3 == 1:
        attrs["unidirectional"] = 1
    if i % 7 == 2:
        attrs["scale"] = 0.3
    if i % 8 == 5:
        attrs["mask_filter_value"] = -500.0
    ab = rand(int(rng.choice([1, B])), int(rng.choice([1, N])), S, T) if i % 4 == 2 else None
    # Always a bias: onnxruntime 1.31's CPU Attention crashes (segfault) without one.
    ins = [("x", x), ("w", w), ("b", b), ("mask", mask), ("past", past), ("ab", ab)]
    check(f"Attention {i} B{B} S{S} N{N} H{H} Hv{Hv} P{P} mask {kind}", "Attention", ins,
          ["y", "present"] if P else ["y"], attrs)

# --- QAttention (quantize_dynamic's Attention) ------------------------------------------------------------
for i in range(8):
    B, S, Din, N, H = int(rng.integers(1, 3)), int(rng.integers(1, 6)), 8, int(rng.choice([1, 2])), 4
    width = 3 * N * H
    x = rng.integers(0, 256, size=(B, S, Din)).astype(np.uint8)
    wt = np.int8 if i % 2 else np.uint8
    w = rng.integers(-128 if i % 2 else 0, 128 if i % 2 else 256, size=(Din, width)).astype(wt)
    if wt == np.int8 and ort_u8s8_saturates():  # x is uint8: see ort_u8s8_saturates
        w = seven_bits(w)
    per_col = i % 4 >= 2
    ws = rng.uniform(0.001, 0.02, size=width if per_col else ()).astype(np.float32)
    wzp = (rng.integers(-5, 5, size=width if per_col else ()) if i % 2 else
           rng.integers(120, 136, size=width if per_col else ())).astype(wt)
    P = 2 if i % 4 == 3 else 0
    mask = (rng.random((B, P + S)) > 0.3).astype(np.int32) if i % 3 == 1 else None
    if mask is not None:
        mask[:, 0] = 1
    ins = [("x", x), ("w", w), ("bias", rand(width)), ("xs", np.array(0.02, np.float32)), ("ws", ws), ("mask", mask),
           ("xzp", np.array(128, np.uint8)), ("wzp", wzp if i % 3 else None), ("past", rand(2, B, N, P, H) if P else None)]
    check(f"QAttention {i} B{B} S{S} N{N} {wt.__name__} per column {per_col} P{P}", "QAttention", ins,
          ["y", "present"] if P else ["y"], {"num_heads": N, "unidirectional": int(i % 5 == 2)})

# --- MultiHeadAttention ---------------------------------------------------------------------------------
for i in range(18):
    B, S, N, H = int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.choice([1, 2, 3])), int(rng.choice([2, 4, 8]))
    form = ["qkv", "qkv", "cross", "bnsh", "packed_kv", "packed_qkv"][i % 6]
    L = S if form in ("qkv", "packed_qkv") else int(rng.integers(1, 7))
    Hv = H + 2 if form == "cross" and i % 2 else H  # onnxruntime wants equal K and V head sizes in BNSH
    D, Dv = N * H, N * Hv
    q = rand(B, S, D)
    k = v = None
    if form in ("qkv", "cross"):
        k, v = rand(B, L, D), rand(B, L, Dv)
    elif form == "bnsh":
        k, v = rand(B, N, L, H), rand(B, N, L, Hv)
    elif form == "packed_kv":
        k = rand(B, L, N, 2, H)
    else:
        q = rand(B, S, N, 3, H)
    bias = rand(2 * D + Dv) if i % 3 != 2 and form not in ("packed_kv", "packed_qkv") else None
    P = int(rng.integers(1, 4)) if form == "qkv" and i % 4 == 0 else 0
    pk, pv = (rand(B, N, P, H), rand(B, N, P, Hv)) if P else (None, None)
    T = P + L
    mask = None
    if i % 4 == 1:
        mask = rng.integers(1, T + 1, size=B).astype(np.int32)
    elif i % 4 == 3:
        mask = (rng.random((B, T)) > 0.3).astype(np.int32)
        mask[:, 0] = 1
    ab = rand(int(rng.choice([1, B])), int(rng.choice([1, N])), S, T) if i % 5 == 2 else None
    attrs = {"num_heads": N}
    if form == "qkv" and i % 6 == 0:
        attrs["unidirectional"] = 1
    if i % 7 == 3:
        attrs["scale"] = 0.7
    outputs = ["y", "present_key", "present_value"] if P else ["y"]
    ins = [("q", q), ("k", k), ("v", v), ("bias", bias), ("mask", mask), ("ab", ab), ("pk", pk), ("pv", pv)]
    ort_ins = None
    if form == "packed_kv":
        ort_ins = [("q", q), ("k", k[:, :, :, 0].reshape(B, L, D)), ("v", k[:, :, :, 1].reshape(B, L, D))] + ins[3:]
    elif form == "packed_qkv":
        ort_ins = [(n, np.ascontiguousarray(q[:, :, :, j].reshape(B, S, D))) for j, n in enumerate("qkv")] + ins[3:]
    check(f"MultiHeadAttention {i} {form} B{B} S{S} L{L} N{N} H{H} Hv{Hv} P{P}", "MultiHeadAttention", ins, outputs,
          attrs, ort_ins)

# --- GroupQueryAttention --------------------------------------------------------------------------------
for i in range(30):
    Nkv = int(rng.choice([1, 2]))
    N = Nkv * int(rng.choice([1, 2, 3]))
    H = int(rng.choice([16, 32]))  # onnxruntime wants a multiple of 16 with rotary
    B = int(rng.integers(1, 4))
    step = i % 3  # 0: first prompt; 1: one token with a cache; 2: a prompt continued (batch 1)
    if step == 2:
        B = 1
    if step == 0:
        S = int(rng.integers(1, 7))
        lens = rng.integers(max(1, S - 2), S + 1, size=B) if i % 2 else np.full(B, S)
        lens[0] = S
        P, total = 0, S
        past_lens = np.zeros(B, int)
    else:
        S = 1 if step == 1 else int(rng.integers(2, 4))
        past_lens = rng.integers(0, 6, size=B)
        lens = past_lens + S
        total = int(lens.max())
        # onnxruntime: a dynamic cache holds exactly the longest past, a static one at least the total
        P = int(past_lens.max()) if i % 2 else total + int(rng.integers(0, 3))
    seqlens = (lens - 1).astype(np.int32)
    total_t = np.array(total, np.int32)
    packed = i % 4 == 3
    q = rand(B, S, (N + 2 * Nkv) * H) if packed else rand(B, S, N * H)
    k = None if packed else rand(B, S, Nkv * H)
    v = None if packed else rand(B, S, Nkv * H)
    pk = pv = None
    if step:
        pk, pv = rand(B, Nkv, P, H), rand(B, Nkv, P, H)
    attrs = {"num_heads": N, "kv_num_heads": Nkv}
    cos = sin = None
    if i % 2 == 0:
        attrs["do_rotary"] = 1
        rot = H if i % 4 == 0 else 16  # onnxruntime: the caches' width a multiple of 8
        angles = rng.uniform(0, 6.3, size=(16, rot // 2))
        cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
        if i % 3 == 1:
            attrs["rotary_interleaved"] = 1
    if i % 5 == 1:
        attrs["local_window_size"] = int(rng.integers(1, 4))
    if i % 5 == 2:
        attrs["softcap"] = 2.5
    if i % 7 == 3:
        attrs["smooth_softmax"] = 1
    if i % 6 == 4:
        attrs["scale"] = 0.4
    present = max(P, total)
    pos = rng.integers(0, 16, size=(B, S)).astype(np.int64) if cos is not None and i % 6 == 2 else None
    ab = rand(B, N, S, present) if i % 8 == 5 and not np.any(lens < lens.max()) else None
    sink = rand(N) if i % 9 == 4 else None
    outputs = ["y", "present_key", "present_value"]
    if i % 10 in (7, 8) and not np.any(lens < lens.max()):  # onnxruntime leaves a ragged batch's padding scores unset
        attrs["qk_output"] = 1 + (i // 10) % 2
        outputs.append("qk")
    ins = [("q", q), ("k", k), ("v", v), ("pk", pk), ("pv", pv), ("seqlens_k", seqlens), ("total_len", total_t),
           ("cos", cos), ("sin", sin), ("pos", pos), ("ab", ab), ("sink", sink)]
    check(f"GroupQueryAttention {i} step {step} B{B} S{S} N{N}/{Nkv} H{H} P{P} lens {lens.tolist()}", "GroupQueryAttention",
          ins, outputs, attrs)

# --- RotaryEmbedding ------------------------------------------------------------------------------------
for i in range(10):
    B, S, N, H = int(rng.integers(1, 3)), int(rng.integers(1, 6)), int(rng.choice([1, 2, 3])), int(rng.choice([4, 8, 16]))
    rot = H if i % 3 else H // 2
    angles = rng.uniform(0, 6.3, size=(12, rot // 2))
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    x = rand(B, N, S, H) if i % 4 == 3 else rand(B, S, N * H)
    pos = np.array([int(rng.integers(0, 12 - S + 1))], np.int64) if i % 2 else rng.integers(0, 12, size=(B, S))
    attrs = {"interleaved": i % 3 == 1}
    if x.ndim == 3:
        attrs["num_heads"] = N
    if rot != H:
        attrs["rotary_embedding_dim"] = rot
        attrs["num_heads"] = N
    check(f"RotaryEmbedding {i} {x.shape} rot {rot}", "RotaryEmbedding",
          [("x", x), ("pos", pos.astype(np.int64)), ("cos", cos), ("sin", sin)], ["y"], attrs)

# --- error paths ----------------------------------------------------------------------------------------
x, w = rand(2, 3, 8), rand(8, 24)
path = f"{work}/bad.onnx"
onnx.save(make("Attention", [("x", x), ("w", w), ("b", None), ("mask", np.ones((2, 3, 3, 1), np.int32))], ["y"],
               {"num_heads": 2}), path)
expect_error(cli, path, {"x": x, "w": w, "mask": np.ones((2, 3, 3, 1), np.int32)}, work, "mask_index of shape [2,3,3,1]",
             "a 4-D mask_index")
cos = sin = np.ones((4, 2), np.float32)
xr = rand(1, 3, 8)
onnx.save(make("RotaryEmbedding", [("x", xr), ("pos", np.array([[0, 1, 9]], np.int64)), ("cos", cos), ("sin", sin)],
               ["y"], {"num_heads": 2}), path)
expect_error(cli, path, {"x": xr, "pos": np.array([[0, 1, 9]], np.int64), "cos": cos, "sin": sin}, work,
             "position 9 is outside", "a position outside the cache")
q, kk = rand(1, 1, 8), rand(1, 1, 8)
feeds = {"q": q, "k": kk, "v": kk, "pk": rand(1, 2, 2, 4), "pv": rand(1, 2, 2, 4), "seqlens_k": np.array([5], np.int32),
         "total_len": np.array(6, np.int32)}
onnx.save(make("GroupQueryAttention", [(n, a) for n, a in feeds.items()], ["y"], {"num_heads": 2, "kv_num_heads": 2}), path)
expect_error(cli, path, feeds, work, "seqlens_k[0] = 5 does not fit", "seqlens_k beyond the cache")
print(f"{cases} cases against onnxruntime, 3 error paths: ok")
