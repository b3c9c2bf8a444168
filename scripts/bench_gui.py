#!/usr/bin/env python3
"""Times onnxscope-gui opening big graphs (load + layout), headless.

Generates two models into ~/.cache/onnxscope/gui-bench/ (once):
  bert_base_like.onnx  BERT-base's decomposed-op structure (12 layers, LayerNorm
                       and GELU written out, exporter-style scoped names), with
                       small random weights (hidden 64) so the file stays small;
  synthetic_20k.onnx   24 layers x ~830 nodes, scoped names.
Also times ~/.cache/onnxscope/bench-models/bert_base.onnx (the real BERT-base
export of scripts/make_bench_models.py) when it is there. Each model is opened
as the GUI opens it (scope groups collapsed above 300 nodes) and, but for the
20,000-node one, fully expanded (--group-above 1000000: every node laid out).
Runs `onnxscope-gui --screenshot ... --timings MODEL` under
QT_QPA_PLATFORM=offscreen a few times and prints the median times.

  .venv/bin/python scripts/bench_gui.py [--gui build/app/onnxscope-gui] [--runs 3]
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CACHE = pathlib.Path.home() / ".cache" / "onnxscope" / "gui-bench"
ROOT = pathlib.Path(__file__).resolve().parent.parent


class Graph:
    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def node(self, op, inputs, name, **attrs):
        out = name + "_output_0"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(array, name))
        return name


def bert_base_like(path, layers=12, hidden=64, heads=4, seq=16, vocab=512):
    rng = np.random.default_rng(0)
    g = Graph()
    w = lambda *shape: (rng.standard_normal(shape) * 0.02).astype(np.float32)
    i64 = lambda v: np.array(v, dtype=np.int64)
    g.init("word_embeddings.weight", w(vocab, hidden))
    g.init("position_embeddings.weight", w(seq, hidden))
    g.init("position_ids", i64([list(range(seq))]))
    g.init("sqrt_head", np.array(np.sqrt(hidden // heads), dtype=np.float32))
    g.init("one", np.array(1.0, dtype=np.float32))
    g.init("half", np.array(0.5, dtype=np.float32))
    g.init("two", np.array(2.0, dtype=np.float32))
    g.init("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    g.init("eps", np.array(1e-12, dtype=np.float32))
    g.init("neg_big", np.array(-10000.0, dtype=np.float32))

    def layer_norm(x, scope, pname):
        gamma = g.init(pname + ".weight", np.ones(hidden, np.float32))
        beta = g.init(pname + ".bias", np.zeros(hidden, np.float32))
        mean = g.node("ReduceMean", [x], scope + "/ReduceMean", axes=[-1])
        d = g.node("Sub", [x, mean], scope + "/Sub")
        sq = g.node("Pow", [d, "two"], scope + "/Pow")
        var = g.node("ReduceMean", [sq], scope + "/ReduceMean_1", axes=[-1])
        ve = g.node("Add", [var, "eps"], scope + "/Add")
        sd = g.node("Sqrt", [ve], scope + "/Sqrt")
        n = g.node("Div", [d, sd], scope + "/Div")
        m = g.node("Mul", [n, gamma], scope + "/Mul")
        return g.node("Add", [m, beta], scope + "/Add_1")

    def reshape(y, scope, tail):
        """Reshape to [batch, seq] + tail with the shape computed from y, the
        way exporters write it (Constant, Shape, Gather, Unsqueeze, Concat)."""
        dims = []
        for k in range(2):
            idx = scope + f"/Constant_{k}_output_0"
            g.nodes.append(helper.make_node("Constant", [], [idx], name=scope + f"/Constant_{k}",
                                            value=numpy_helper.from_array(i64(k))))
            shp = g.node("Shape", [y], scope + f"/Shape_{k}")
            d = g.node("Gather", [shp, idx], scope + f"/Gather_{k}", axis=0)
            dims.append(g.node("Unsqueeze", [d, g.init(scope + f"/axes_{k}", i64([0]))], scope + f"/Unsqueeze_{k}"))
        cat = g.node("Concat", dims + [g.init(scope + "/tail", i64(tail))], scope + "/Concat", axis=0)
        return g.node("Reshape", [y, cat], scope + "/Reshape")

    def linear(x, scope, pname, n_in, n_out):
        wt = g.init(pname + ".weight", w(n_in, n_out))
        b = g.init(pname + ".bias", np.zeros(n_out, np.float32))
        mm = g.node("MatMul", [x, wt], scope + "/MatMul")
        return g.node("Add", [b, mm], scope + "/Add")

    emb = g.node("Gather", ["word_embeddings.weight", "input_ids"], "/bert/embeddings/word_embeddings/Gather")
    pos = g.node("Gather", ["position_embeddings.weight", "position_ids"], "/bert/embeddings/position_embeddings/Gather")
    x = g.node("Add", [emb, pos], "/bert/embeddings/Add")
    x = layer_norm(x, "/bert/embeddings/LayerNorm", "bert.embeddings.LayerNorm")
    mask_f = g.node("Cast", ["attention_mask"], "/bert/Cast", to=TensorProto.FLOAT)
    mask_u = g.node("Unsqueeze", [mask_f, g.init("mask_axes", i64([1, 2]))], "/bert/Unsqueeze")
    inv = g.node("Sub", ["one", mask_u], "/bert/Sub")
    mask = g.node("Mul", [inv, "neg_big"], "/bert/Mul")
    for l in range(layers):
        s = f"/bert/encoder/layer.{l}"
        p = f"bert.encoder.layer.{l}"
        heads_of = []
        for part in ("query", "key", "value"):
            y = linear(x, f"{s}/attention/self/{part}", f"{p}.attention.self.{part}", hidden, hidden)
            r = reshape(y, f"{s}/attention/self/{part}", [heads, hidden // heads])
            perm = [0, 2, 3, 1] if part == "key" else [0, 2, 1, 3]
            heads_of.append(g.node("Transpose", [r], f"{s}/attention/self/{part}/Transpose", perm=perm))
        q, k, v = heads_of
        sc = g.node("MatMul", [q, k], f"{s}/attention/self/MatMul")
        sc = g.node("Div", [sc, "sqrt_head"], f"{s}/attention/self/Div")
        sc = g.node("Add", [sc, mask], f"{s}/attention/self/Add")
        pr = g.node("Softmax", [sc], f"{s}/attention/self/Softmax", axis=-1)
        ctx = g.node("MatMul", [pr, v], f"{s}/attention/self/MatMul_1")
        ctx = g.node("Transpose", [ctx], f"{s}/attention/self/Transpose", perm=[0, 2, 1, 3])
        ctx = reshape(ctx, f"{s}/attention/self", [hidden])
        o = linear(ctx, f"{s}/attention/output/dense", f"{p}.attention.output.dense", hidden, hidden)
        o = g.node("Add", [o, x], f"{s}/attention/output/Add")
        x = layer_norm(o, f"{s}/attention/output/LayerNorm", f"{p}.attention.output.LayerNorm")
        h = linear(x, f"{s}/intermediate/dense", f"{p}.intermediate.dense", hidden, 4 * hidden)
        e = g.node("Div", [h, "sqrt2"], f"{s}/intermediate/intermediate_act_fn/Div")
        e = g.node("Erf", [e], f"{s}/intermediate/intermediate_act_fn/Erf")
        e = g.node("Add", [e, "one"], f"{s}/intermediate/intermediate_act_fn/Add")
        e = g.node("Mul", [h, e], f"{s}/intermediate/intermediate_act_fn/Mul")
        e = g.node("Mul", [e, "half"], f"{s}/intermediate/intermediate_act_fn/Mul_1")
        o = linear(e, f"{s}/output/dense", f"{p}.output.dense", 4 * hidden, hidden)
        o = g.node("Add", [o, x], f"{s}/output/Add")
        x = layer_norm(o, f"{s}/output/LayerNorm", f"{p}.output.LayerNorm")
    first = g.node("Gather", [x, g.init("zero", i64(0))], "/bert/pooler/Gather", axis=1)
    pooled = linear(first, "/bert/pooler/dense", "bert.pooler.dense", hidden, hidden)
    pooled = g.node("Tanh", [pooled], "/bert/pooler/activation/Tanh")
    graph = helper.make_graph(
        g.nodes, "bert_base_like",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, seq])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, seq, hidden]),
         helper.make_tensor_value_info(pooled, TensorProto.FLOAT, [1, hidden])],
        g.inits)
    save(graph, path)


def synthetic(path, layers=24, blocks=10, per_block=83):
    """layers x blocks x per_block nodes: chains of MatMul/Add/Relu/Mul with
    residual Adds, named /encoder/layer.L/block.B/Op_j."""
    g = Graph()
    g.init("w", np.full((16, 16), 0.01, np.float32))
    g.init("b", np.zeros(16, np.float32))
    x = "x"
    ops = ["MatMul", "Add", "Relu", "Mul"]
    for l in range(layers):
        for b in range(blocks):
            scope = f"/encoder/layer.{l}/block.{b}"
            start = x
            for j in range(per_block - 1):
                op = ops[j % 4]
                ins = {"MatMul": [x, "w"], "Add": [x, "b"], "Relu": [x], "Mul": [x, x]}[op]
                x = g.node(op, ins, f"{scope}/{op}_{j}")
            x = g.node("Add", [x, start], f"{scope}/residual/Add")
    graph = helper.make_graph(
        g.nodes, "synthetic_20k",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 16])], g.inits)
    save(graph, path)


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="bench_gui")
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def time_gui(gui, model, runs, size, extra):
    results = []
    for _ in range(runs):
        shot = CACHE / (model.stem + ".png")
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
        t0 = time.perf_counter()
        p = subprocess.run([str(gui), "--screenshot", str(shot), "--size", size, "--timings", *extra, str(model)],
                           capture_output=True, text=True, env=env, timeout=600)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit(f"{model.name}: onnxscope-gui failed ({p.returncode}): {p.stderr.strip()}")
        # "load 0.123 s, layout 0.456 s, total 0.600 s, pan_frame 3.1 ms, fit_frame 9.0 ms"
        parts = dict((k, float(v)) for k, v in (f.split()[:2] for f in p.stdout.strip().split(", ")))
        parts["process"] = wall
        results.append(parts)
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gui", default=str(ROOT / "build" / "app" / "onnxscope-gui"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size", default="1600x1000")
    args = ap.parse_args()
    models = [(CACHE / "bert_base_like.onnx", bert_base_like, True),
              (CACHE / "synthetic_20k.onnx", synthetic, False),
              (pathlib.Path.home() / ".cache" / "onnxscope" / "bench-models" / "bert_base.onnx", None, True)]
    print(f"{'model':<20} {'nodes':>6} {'groups':<9} {'load s':>7} {'layout s':>8} {'total s':>8} {'process s':>9}"
          f" {'pan ms':>7} {'fit ms':>7}")
    for path, make, also_full in models:
        if not path.exists():
            if make is None:
                continue
            make(path)
        n = len(onnx.load(str(path), load_external_data=False).graph.node)
        for label, extra in [("collapsed", [])] + ([("expanded", ["--group-above", "1000000"])] if also_full else []):
            t = time_gui(args.gui, path, args.runs, args.size, extra)
            print(f"{path.name:<20} {n:>6} {label:<9} {t['load']:>7.2f} {t['layout']:>8.2f} {t['total']:>8.2f} "
                  f"{t['process']:>9.2f} {t['pan_frame']:>7.1f} {t['fit_frame']:>7.1f}", flush=True)


if __name__ == "__main__":
    main()
