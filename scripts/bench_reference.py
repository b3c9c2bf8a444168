#!/usr/bin/env python3
"""Time onnxscope's reference interpreter against onnx's (onnx.reference) on the same models and inputs.

For every model, in one run: `onnxscope run --engine reference` makes the
inputs (its usual seeded ones, written to an .npz) and runs the model once;
then onnx.reference.ReferenceEvaluator runs it once on those inputs in a
subprocess with numpy's BLAS held to the same thread count. Prints one
table: both wall times of one inference (the model already loaded; the
median of --repeat such runs in fresh processes, the two sides taking
turns), their
ratio (above 1: onnxscope's reference is faster), onnxscope's peak RSS, and
whether the outputs agree (the largest difference, relative to the output's
largest magnitude).

    .venv/bin/python scripts/bench_reference.py                # the list below
    .venv/bin/python scripts/bench_reference.py --threads 1 model.onnx

The list: the public benchmark list at batch 1 (scripts/make_bench_models.py,
~/.cache/onnxscope/bench-models; llama_200m too where it was made), then control-flow, recurrent and classical
ML models this script makes (Loop, Scan, If, LSTM, GRU: made here with
onnx.helper into ~/.cache/onnxscope/reference-bench) and the scikit-learn
exports of scripts/make_real_models.py. See docs/reference-speed.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
CACHE = Path.home() / ".cache" / "onnxscope"
BENCH = CACHE / "bench-models"
REAL = CACHE / "real-models"
OWN = CACHE / "reference-bench"

PUBLIC = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "efficientnet_b0",
          "regnet_y_400mf", "densenet121", "convnext_tiny", "swin_t", "vit_b_16", "shufflenet_v2", "ssdlite320",
          "bert_base", "bert_base_ts14", "gpt2", "llama_gqa", "vit_hf"]
# Made only when named (make_bench_models.py llama_200m: 853 MB of external
# data): timed when it is there, for the peak RSS of a large model.
LARGE = ["llama_200m"]
SKLEARN = ["skl_gradient_boosting", "skl_random_forest", "skl_svc", "skl_kmeans", "skl_scaler_logreg"]


def default_cli() -> str:
    if os.environ.get("ONNXSCOPE"):
        return os.environ["ONNXSCOPE"]
    return str(REPO / "build" / "app" / "onnxscope")


# --- the control-flow and recurrent models ------------------------------------------------

def make_own_models() -> list[Path]:
    """Loop, Scan and If bodies of small dense steps, an LSTM and a GRU, with seeded weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    OWN.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    made = []

    def save(name, graph, opset=17):
        path = OWN / f"{name}.onnx"
        if not path.exists():
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
            onnx.checker.check_model(model)
            onnx.save(model, str(path))
        made.append(path)

    def w(name, *shape, scale=0.1):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    # Loop: 200 steps of h = tanh(h W + b), h [4, 64].
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "W"], ["hw"]), helper.make_node("Add", ["hw", "b"], ["hwb"]),
         helper.make_node("Tanh", ["hwb"], ["h_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [4, 64])])
    save("loop_dense", helper.make_graph(
        [helper.make_node("Loop", ["trip", "cond", "h0"], ["h"], body=body)], "loop",
        [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [4, 64])], [helper.make_tensor_value_info("h", TensorProto.FLOAT, [4, 64])],
        [numpy_helper.from_array(np.array(200, np.int64), "trip"), numpy_helper.from_array(np.array(True), "cond"),
         w("W", 64, 64), w("b", 64)]))

    # Scan: a running state over 256 steps of x [256, 32]: s = tanh(s U + x_t V).
    sbody = helper.make_graph(
        [helper.make_node("MatMul", ["s_in", "U"], ["su"]), helper.make_node("MatMul", ["x_t", "V"], ["xv"]),
         helper.make_node("Add", ["su", "xv"], ["pre"]), helper.make_node("Tanh", ["pre"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["y_t"])],
        "sbody",
        [helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [1, 64]), helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [1, 32])],
        [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [1, 64]), helper.make_tensor_value_info("y_t", TensorProto.FLOAT, [1, 64])],
        [w("U", 64, 64), w("V", 32, 64)])
    save("scan_rnn", helper.make_graph(
        [helper.make_node("Scan", ["s0", "x"], ["s", "ys"], body=sbody, num_scan_inputs=1)], "scan",
        [helper.make_tensor_value_info("s0", TensorProto.FLOAT, [1, 64]), helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 1, 32])],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 64]), helper.make_tensor_value_info("ys", TensorProto.FLOAT, [256, 1, 64])]))

    # If: a branch on the sign of sum(x), each a small MLP on x [8, 128].
    def branch(name, act):
        return helper.make_graph(
            [helper.make_node("MatMul", ["x", f"W{name}"], ["a"]), helper.make_node(act, ["a"], [f"y{name}"])], name, [],
            [helper.make_tensor_value_info(f"y{name}", TensorProto.FLOAT, [8, 128])], [w(f"W{name}", 128, 128)])
    save("if_branches", helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0), helper.make_node("Greater", ["s", "zero"], ["c"]),
         helper.make_node("If", ["c"], ["y"], then_branch=branch("t", "Relu"), else_branch=branch("e", "Tanh"))], "if",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 128])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 128])],
        [numpy_helper.from_array(np.array(0, np.float32), "zero")]))

    # LSTM and GRU: 128 steps, batch 4, input 64, hidden 128.
    for op, gates in (("LSTM", 4), ("GRU", 3)):
        save(op.lower(), helper.make_graph(
            [helper.make_node(op, ["X", "W", "R", "B"], ["Y", "Yh"], hidden_size=128)], op.lower(),
            [helper.make_tensor_value_info("X", TensorProto.FLOAT, [128, 4, 64])],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [128, 1, 4, 128]),
             helper.make_tensor_value_info("Yh", TensorProto.FLOAT, [1, 4, 128])],
            [w("W", 1, gates * 128, 64), w("R", 1, gates * 128, 128), w("B", 1, 2 * gates * 128)]))
    return made


# --- running -------------------------------------------------------------------------------

ONNX_REFERENCE = r"""
import json, sys, time
import numpy as np, onnx
from onnx.reference import ReferenceEvaluator
model, inputs = sys.argv[1], sys.argv[2]
feeds = dict(np.load(inputs, allow_pickle=False))
sess = ReferenceEvaluator(onnx.load(model))
t0 = time.perf_counter()
outs = sess.run(None, feeds)
dt = time.perf_counter() - t0
np.savez(sys.argv[3], *[np.asarray(o) for o in outs])
print(json.dumps({"seconds": dt}))
"""


def onnxscope_run(cli: str, model: Path, threads: int, workdir: Path, dims: list[str]) -> dict:
    inputs, out = workdir / "inputs.npz", workdir / "out.h5"
    cmd = ["/usr/bin/time", "-f", "RSS_KB %M", cli, "run", str(model), "--engine", "reference", "--threads", str(threads),
           "--save-inputs", str(inputs), "--out", str(out)]
    for d in dims:
        cmd += ["--dim", d]
    p = subprocess.run(cmd, capture_output=True, text=True)
    text = p.stdout + p.stderr
    if p.returncode != 0:
        errors = [line for line in text.splitlines() if "error" in line]
        raise RuntimeError(errors[0] if errors else f"exit {p.returncode}")
    run = re.search(r"engine reference: prepare [0-9.]+ ms, run ([0-9.]+) ms", text)
    rss = re.search(r"RSS_KB (\d+)", text)
    return {"seconds": float(run.group(1)) / 1000.0, "rss_mib": int(rss.group(1)) / 1024.0, "inputs": inputs, "out": out}


def onnx_reference_run(model: Path, inputs: Path, threads: int, workdir: Path, timeout: float) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    out = workdir / "onnx_ref.npz"
    p = subprocess.run([sys.executable, "-c", ONNX_REFERENCE, str(model), str(inputs), str(out)], capture_output=True, text=True,
                       env=env, timeout=timeout)
    if p.returncode != 0:
        errors = [line for line in p.stderr.splitlines() if "Error" in line]
        raise RuntimeError(errors[-1] if errors else "failed")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["out"] = out
    return r


def compare(model: Path, h5_path: Path, npz_path: Path) -> tuple[float, bool]:
    """Largest difference between the graph outputs (by name from the dump, in
    order from onnx.reference), relative to each output's largest magnitude;
    whether every output agrees (same shape, NaN and infinities in the same
    places, the rest within 1e-3 of the largest magnitude; non-floats equal)."""
    import onnx
    from onnxscope_dump_writer import read_tensors  # scripts/, this script's folder, is on sys.path
    names = [o.name for o in onnx.load(str(model), load_external_data=False).graph.output]
    theirs = list(np.load(npz_path, allow_pickle=True).values())
    worst, ok = 0.0, len(names) == len(theirs)
    by_name = read_tensors(str(h5_path), set(names))
    for name, b in zip(names, theirs):
        if name not in by_name:
            ok = False
            continue
        a = np.asarray(by_name[name])
        if a.shape != b.shape:
            ok = False
            continue
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            finite = np.isfinite(a64) & np.isfinite(b64)
            if not np.array_equal(a64[~finite], b64[~finite], equal_nan=True):
                ok = False
            if finite.any():
                scale = max(1.0, float(np.max(np.abs(b64[finite]))))
                d = float(np.max(np.abs(a64[finite] - b64[finite]))) / scale
                worst = max(worst, d)
                ok = ok and d <= 1e-3
        else:
            ok = ok and np.array_equal(a, b)
    return worst, ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", help="MODEL.onnx (default: the list)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--onnxscope", default=None)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--dim", action="append", default=["batch=1"], help="NAME=VALUE for onnxscope's inputs (repeatable)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--repeat", type=int, default=3, help="cold runs of each side (fresh processes, taking turns); medians")
    args = ap.parse_args()
    cli = args.onnxscope or default_cli()
    if args.models:
        models = [Path(m) for m in args.models]
    else:
        models = [BENCH / f"{m}.onnx" for m in PUBLIC] + [p for m in LARGE if (p := BENCH / f"{m}.onnx").exists()]
        models += make_own_models() + [REAL / f"{m}.onnx" for m in SKLEARN]
    rows = []
    for model in models:
        if not model.exists():
            print(f"{model.name}: missing (scripts/make_bench_models.py / make_real_models.py make it)", file=sys.stderr)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            row = {"model": model.stem}
            # --repeat fresh processes a side, taking turns: each side's
            # median (one cold inference of a small model moves by 30% and
            # more between processes on a shared machine), the highest RSS.
            ours_s, theirs_s, rss = [], [], []
            for rep in range(args.repeat):
                try:
                    print(f"{model.stem}: onnxscope reference ({rep + 1}) ...", file=sys.stderr, flush=True)
                    dims = [d for d in args.dim if d.split("=")[0] in model_dims(model)]
                    ours = onnxscope_run(cli, model, args.threads, work, dims)
                    ours_s.append(ours["seconds"])
                    rss.append(ours["rss_mib"])
                except Exception as e:  # noqa: BLE001 - one model's failure is a row, not the end of the run
                    row["error"] = "onnxscope: " + str(e)[:150]
                    break
                if "peer_error" in row:
                    continue
                try:
                    print(f"{model.stem}: onnx.reference ({rep + 1}) ...", file=sys.stderr, flush=True)
                    theirs = onnx_reference_run(model, ours["inputs"], args.threads, work, args.timeout)
                    theirs_s.append(theirs["seconds"])
                    if rep == 0:
                        diff, ok = compare(model, ours["out"], theirs["out"])
                        row.update(diff=diff, ok=ok)
                except Exception as e:  # noqa: BLE001
                    row["peer_error"] = "onnx.reference: " + str(e)[:150]
            if "error" not in row:
                row.update(ours=float(np.median(ours_s)), rss=max(rss), ours_runs=ours_s)
                if theirs_s and "peer_error" not in row:
                    row.update(theirs=float(np.median(theirs_s)), theirs_runs=theirs_s)
            rows.append(row)
    print(f"\n{args.threads} threads, onnxscope {cli}; each time the median of {args.repeat} cold runs (fresh processes)\n")
    print("| model | onnx.reference ms | onnxscope reference ms | ratio | onnxscope peak RSS MiB | max diff (relative) | agree |")
    print("|---|---|---|---|---|---|---|")
    ratios = []
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | | | | | | {r['error']} |")
            continue
        if "peer_error" in r:  # onnx.reference cannot run it: onnxscope's time alone
            print(f"| {r['model']} | | {1e3 * r['ours']:.2f} | | {r['rss']:.0f} | | {r['peer_error']} |")
            continue
        ratio = r["theirs"] / r["ours"] if r["ours"] > 0 else float("inf")
        ratios.append(ratio)
        print(f"| {r['model']} | {1e3 * r['theirs']:.2f} | {1e3 * r['ours']:.2f} | {ratio:.2f} | {r['rss']:.0f} | {r['diff']:.1e} | "
              f"{'yes' if r['ok'] else 'NO'} |")
    if ratios:
        print(f"\n{len(ratios)} models: geometric mean onnx.reference/onnxscope {float(np.exp(np.mean(np.log(ratios)))):.2f}, "
              f"lowest {min(ratios):.2f}, {sum(1 for x in ratios if x < 1.0)} below 1.0")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    # Outputs that differ fail the run; a model onnx.reference cannot run does not.
    return 0 if all("error" not in r and (r.get("ok") or "peer_error" in r) for r in rows) else 1


def model_dims(model: Path) -> set[str]:
    """Symbolic dim names of the model's inputs."""
    import onnx
    m = onnx.load(str(model), load_external_data=False)
    names = set()
    inits = {i.name for i in m.graph.initializer}
    for i in m.graph.input:
        if i.name in inits:
            continue
        for d in i.type.tensor_type.shape.dim:
            if d.dim_param:
                names.add(d.dim_param)
    return names


if __name__ == "__main__":
    sys.exit(main())
