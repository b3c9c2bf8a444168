#!/usr/bin/env python3
"""Benchmark onnxscope's engines against onnxruntime on the same models, inputs and threads.

For every model, in one run: `onnxscope bench --json` for each engine asked
for, then onnxruntime (CPUExecutionProvider, all graph optimizations) in a
subprocess, with the same input values, thread count, warm-up and timed runs.
Each runtime is timed --rounds times per model (2), taking turns, and keeps
its lowest median, so a burst of the machine's other load during one
side's turn does not decide a row; peak RSS is the highest of the rounds.
Prints a table of median latencies and their ratio, peak RSS, and the largest
absolute difference between the two runtimes' outputs.

    .venv/bin/python scripts/bench_vs_ort.py                 # default models
    .venv/bin/python scripts/bench_vs_ort.py model.onnx@8    # batch 8
    .venv/bin/python scripts/bench_vs_ort.py --engines cpu,reference --threads 2

A model given as PATH@N runs with batch N (--batch N to onnxscope; the first
input dimension, when the model leaves it open, is N for onnxruntime too).
See docs/cpu-engine.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SUITE = Path.home() / ".cache" / "onnxscope" / "onnx-1.23.2"
BENCH_MODELS = Path.home() / ".cache" / "onnxscope" / "bench-models"  # scripts/make_bench_models.py, make_qop_models.py
OFFLIST_MODELS = Path.home() / ".cache" / "onnxscope" / "offlist-models"  # scripts/make_offlist_models.py


def default_models() -> list[str]:
    light = sorted(str(p) for p in (SUITE / "light").glob("*.onnx"))
    return light + [str(REPO / "resources" / "models" / "sample_cnn.onnx") + "@8"]


def made_models(names: list[str], suffix: str, batches: list[str], maker: str, d: Path = BENCH_MODELS) -> list[str]:
    """PATH@BATCH of each <d>/<name><suffix>.onnx (d: ~/.cache/onnxscope/bench-models)
    the maker script has made, at each batch; the missing ones named."""
    missing = [n for n in names if not (d / f"{n}{suffix}.onnx").exists()]
    if missing:
        print(f"not made (scripts/{maker}): " + ", ".join(missing), file=sys.stderr)
    return [f"{d / n}{suffix}.onnx@{b}" for n in names if n not in missing for b in batches]


def default_cli() -> str:
    """$ONNXSCOPE, else the first build of this checkout whose onnxscope has `bench`."""
    if os.environ.get("ONNXSCOPE"):
        return os.environ["ONNXSCOPE"]
    for build in ("build", "build-bench"):
        p = REPO / build / "app" / "onnxscope"
        if p.exists() and subprocess.run([str(p), "bench", "--help"], capture_output=True).returncode == 0:
            return str(p)
    return "onnxscope"


def peak_rss_mib() -> float:
    """VmHWM of this process. Not ru_maxrss: Linux carries that across exec
    from the forked parent, so a worker would inherit this script's peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---------------------------------------------------------------- inputs

def make_inputs(model_path: str, batch: int, seed: int) -> dict[str, np.ndarray]:
    """Float inputs are arange(n)/n (like upstream's light-model runner); an
    integer or bool input named like a mask all ones (as `onnxscope run` makes
    it: OPT's positions are the running sum of its attention mask); other
    types seeded random small values. Open first dimensions take `batch`,
    other open dimensions 1."""
    import onnx
    from onnx import helper

    model = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            raise ValueError(f"input {vi.name} is not a tensor")
        shape = []
        for k, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            else:
                shape.append(batch if k == 0 else 1)
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        n = int(np.prod(shape)) if shape else 1
        if np.issubdtype(dtype, np.floating):
            arr = (np.arange(n, dtype=np.float64) / max(n, 1)).astype(dtype).reshape(shape)
        elif "mask" in vi.name.lower():
            arr = np.ones(shape, dtype=dtype)
        elif dtype == np.bool_:
            arr = rng.integers(0, 2, size=shape).astype(np.bool_)
        elif np.issubdtype(dtype, np.integer):
            arr = rng.integers(0, 10, size=shape).astype(dtype)
        else:
            raise ValueError(f"input {vi.name} of type {dtype} is not handled")
        feeds[vi.name] = arr
    return feeds


# ---------------------------------------------------------------- onnxruntime (subprocess)

def ort_worker(args: argparse.Namespace) -> None:
    """Runs in its own process so that its peak RSS is onnxruntime's alone
    (plus the Python interpreter, reported separately as baseline)."""
    import onnxruntime as ort

    data = np.load(args.inputs)
    feeds = {k: data[k] for k in data.files}
    baseline = peak_rss_mib()
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    t0 = time.perf_counter()
    sess = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    prepare_ms = (time.perf_counter() - t0) * 1000
    times = []
    out = None
    for i in range(args.warmup + args.iterations):
        s = time.perf_counter()
        out = sess.run(None, feeds)
        ms = (time.perf_counter() - s) * 1000
        if i >= args.warmup:
            times.append(ms)
    names = [o.name for o in sess.get_outputs()]
    np.savez(args.outputs, **{f"output_{k}": np.asarray(v) for k, v in enumerate(out)})
    json.dump({
        "version": ort.__version__,
        "prepare_ms": prepare_ms,
        "latency_ms": {"median": float(np.median(times)), "p90": float(np.percentile(times, 90, method="inverted_cdf"))},
        "peak_rss_mib": peak_rss_mib(),
        "baseline_rss_mib": baseline,
        "outputs": names,
    }, sys.stdout)


def run_ort(model: str, inputs_npz: Path, outputs_npz: Path, a: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--_ort-worker", "--model", model, "--inputs", str(inputs_npz),
           "--outputs", str(outputs_npz), "--threads", str(a.threads), "--warmup", str(a.warmup),
           "--iterations", str(a.iterations)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"onnxruntime: timeout after {a.timeout} s"}
    if p.returncode != 0:
        return {"error": "onnxruntime: " + (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    return json.loads(p.stdout)


# ---------------------------------------------------------------- onnxscope

def run_onnxscope(model: str, engine: str, batch: int, input_files: dict[str, Path], out_dir: Path,
                  a: argparse.Namespace) -> dict:
    cmd = [a.onnxscope, "bench", model, "--engine", engine, "--threads", str(a.threads), "--warmup", str(a.warmup),
           "--iterations", str(a.iterations), "--json", "--save-outputs", str(out_dir)]
    if batch > 1:
        cmd += ["--batch", str(batch)]
    for name, f in input_files.items():
        cmd += ["--input", f"{name}={f}"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {a.timeout} s"}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    return json.loads(p.stdout)


def max_abs_diff(scope: dict, ort_outputs: Path) -> float | None:
    from onnx import TensorProto, numpy_helper

    ref = np.load(ort_outputs)
    worst = 0.0
    saved = scope.get("outputs", [])
    if not saved:
        return None
    for k, o in enumerate(saved):
        t = TensorProto()
        t.ParseFromString(Path(o["file"]).read_bytes())
        mine = numpy_helper.to_array(t)
        key = Path(o["file"]).stem  # output_K, K = position among the graph outputs
        if key not in ref.files:
            return None
        theirs = ref[key]
        if mine.shape != theirs.shape or mine.dtype != theirs.dtype:
            return float("inf")
        if mine.size == 0:
            continue
        if np.issubdtype(mine.dtype, np.number) or mine.dtype == np.bool_:
            d = np.abs(mine.astype(np.float64) - theirs.astype(np.float64))
            worst = max(worst, float(np.nanmax(d)) if d.size else 0.0)
        elif not np.array_equal(mine, theirs):
            return float("inf")
    return worst


# ---------------------------------------------------------------- table

def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def best_round(rounds: list[dict]) -> dict:
    """Of one runtime's rounds on a model, the one with the lowest median
    latency (the least disturbed by the machine's other load), with the
    highest peak RSS above baseline of all of them (memory is not luck)."""
    ok = [r for r in rounds if "latency_ms" in r]
    if not ok:
        return rounds[0]
    best = dict(min(ok, key=lambda r: r["latency_ms"]["median"]))
    best["rounds_median_ms"] = [r["latency_ms"]["median"] for r in ok]
    with_rss = [r for r in ok if "peak_rss_mib" in r]
    if with_rss:
        worst = max(with_rss, key=lambda r: r["peak_rss_mib"] - r.get("baseline_rss_mib", 0.0))
        best["peak_rss_mib"], best["baseline_rss_mib"] = worst["peak_rss_mib"], worst.get("baseline_rss_mib", 0.0)
    return best


def fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help="MODEL.onnx or MODEL.onnx@BATCH (default: light models + sample_cnn@8)")
    ap.add_argument("--engines", default="cpu", help="onnxscope engines, comma-separated: cpu, reference (default: cpu)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="intra-op threads for both runtimes")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0, help="seed of non-float inputs")
    ap.add_argument("--rounds", type=int, default=2,
                    help="time each runtime this many times per model, taking turns; each keeps its lowest median")
    ap.add_argument("--onnxscope", default=None, help="onnxscope binary (default: $ONNXSCOPE, build/, build-bench/)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per model and runtime")
    ap.add_argument("--json", help="also write every measurement to this JSON file")
    ap.add_argument("--list", action="store_true",
                    help="the public benchmark list (scripts/make_bench_models.py, in ~/.cache/onnxscope/bench-models) "
                         "at each of --batches")
    ap.add_argument("--offlist", action="store_true",
                    help="the held-out list (scripts/make_offlist_models.py, in ~/.cache/onnxscope/offlist-models) "
                         "at each of --batches")
    ap.add_argument("--batches", default="1,8", help="batches of --list and --offlist (default 1,8)")
    ap.add_argument("--qop-list", action="store_true",
                    help="the QOperator models scripts/make_qop_models.py makes from the public list (onnxruntime's "
                         "quantize_static output, <name>_qop.onnx in ~/.cache/onnxscope/bench-models), at batch 1")
    ap.add_argument("--qdyn-list", action="store_true",
                    help="the dynamically quantized transformers scripts/make_qop_models.py --formats qdyn,qdyn_ortsaved "
                         "makes (quantize_dynamic's output and onnxruntime's optimized save of it), at batch 1")
    # Internal: the onnxruntime subprocess.
    ap.add_argument("--_ort-worker", dest="ort_worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--inputs", help=argparse.SUPPRESS)
    ap.add_argument("--outputs", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.ort_worker:
        ort_worker(a)
        return 0

    from onnx import numpy_helper

    a.onnxscope = a.onnxscope or default_cli()

    engines = [e for e in a.engines.split(",") if e]
    load_before = os.getloadavg()
    models = a.models or default_models()
    if a.list or a.offlist or a.qop_list or a.qdyn_list:
        sys.path.insert(0, str(REPO / "scripts"))
        models = []
    if a.list:
        from make_bench_models import MODELS
        models += made_models(MODELS, "", a.batches.split(","), "make_bench_models.py")
    if a.offlist:
        from make_offlist_models import MODELS as OFFLIST
        models += made_models(OFFLIST, "", a.batches.split(","), "make_offlist_models.py", OFFLIST_MODELS)
    if a.qop_list:
        from make_qop_models import QOP_MODELS
        models += made_models(QOP_MODELS, "_qop", ["1"], "make_qop_models.py")
    if a.qdyn_list:
        from make_qop_models import DYNAMIC_MODELS
        for suffix in ("_qdyn", "_qdyn_ortsaved"):
            models += made_models(DYNAMIC_MODELS, suffix, ["1"], "make_qop_models.py --formats qdyn,qdyn_ortsaved")
    rows, records = [], []
    with tempfile.TemporaryDirectory(prefix="bench_vs_ort_") as tmp:
        for index, spec in enumerate(models):
            path, _, b = spec.partition("@")
            batch = int(b) if b else 1
            name = Path(path).stem
            work = Path(tmp) / f"{index}_{name}_b{batch}"  # two models of one name (from two folders) each get theirs
            work.mkdir()
            try:
                feeds = make_inputs(path, batch, a.seed)
            except Exception as e:  # unreadable model, input type not handled here
                rows.append([name, str(batch), ",".join(engines)] + ["-"] * 9 + [f"inputs: {e}"])
                continue
            files = {}
            for k, (inp, arr) in enumerate(feeds.items()):
                f = work / f"input_{k}.pb"
                f.write_bytes(numpy_helper.from_array(arr, inp).SerializeToString())
                files[inp] = f
            np.savez(work / "inputs.npz", **feeds)
            print(f"{name} (batch {batch}): onnxruntime ...", file=sys.stderr, flush=True)
            ort_rounds = [run_ort(path, work / "inputs.npz", work / "ort_out.npz", a)]
            scope_rounds = {}
            for r in range(a.rounds):
                if r > 0:
                    print(f"{name} (batch {batch}): onnxruntime, round {r + 1} ...", file=sys.stderr, flush=True)
                    ort_rounds.append(run_ort(path, work / "inputs.npz", work / f"ort_out_{r}.npz", a))
                for engine in engines:
                    print(f"{name} (batch {batch}): onnxscope {engine}" + (f", round {r + 1}" if r else "") + " ...",
                          file=sys.stderr, flush=True)
                    scope_rounds.setdefault(engine, []).append(
                        run_onnxscope(path, engine, batch, files, work / f"out_{engine}" / str(r), a))
            ort_res = best_round(ort_rounds)
            for engine in engines:
                out_dir = work / f"out_{engine}" / "0"
                res = best_round(scope_rounds[engine])
                res["outputs"] = scope_rounds[engine][0].get("outputs", res.get("outputs"))
                diff = None
                if "error" not in res and "error" not in ort_res:
                    diff = max_abs_diff(res, work / "ort_out.npz")
                records.append({"model": name, "batch": batch, "engine": engine, "onnxscope": res, "onnxruntime": ort_res,
                                "max_abs_diff": diff})
                med = res.get("latency_ms", {}).get("median")
                ort_med = ort_res.get("latency_ms", {}).get("median")
                # Both sides: peak RSS minus what the process held before the
                # model (onnxscope: before loading it; onnxruntime: before the
                # session, with Python, numpy, onnxruntime and the inputs loaded).
                rss = (res["peak_rss_mib"] - res.get("baseline_rss_mib", 0.0)) if "peak_rss_mib" in res else None
                ort_net = (ort_res["peak_rss_mib"] - ort_res["baseline_rss_mib"]) if "peak_rss_mib" in ort_res else None
                rows.append([
                    name, str(batch), engine,
                    fmt(res.get("prepare_ms"), ".1f"), fmt(med), fmt(res.get("latency_ms", {}).get("p90")),
                    fmt(ort_med), fmt(ort_med / med if med and ort_med else None),
                    fmt(rss, ".0f"), fmt(ort_net, ".0f"), fmt(rss / ort_net if rss and ort_net else None),
                    fmt(diff, ".1e"),
                    res.get("error") or ort_res.get("error") or "",
                ])
    head = ["model", "batch", "engine", "prepare ms", "median ms", "p90 ms", "ORT median ms", "ORT/onnxscope",
            "RSS MiB", "ORT RSS MiB", "RSS ratio", "max abs diff", "error"]
    failed = any(r[-1] for r in rows)
    if not failed:
        head, rows = head[:-1], [r[:-1] for r in rows]
    import onnxruntime
    load_after = os.getloadavg()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu_model()}, {os.cpu_count()} cores, "
          f"onnxruntime {onnxruntime.__version__}; load average (1 min) {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after")
    waits = sorted({r["onnxscope"].get("openmp_wait") for r in records if r["onnxscope"].get("openmp_wait")})
    print(f"threads {a.threads}, warm-up {a.warmup}, {a.iterations} timed runs, the lower median of {a.rounds} rounds "
          f"taken in turns (peak RSS: the highest); onnxscope OpenMP wait: "
          f"{', '.join(waits) or 'unknown'}; "
          f"ORT/onnxscope = onnxruntime latency / onnxscope latency (above 1: onnxscope is faster); "
          f"RSS MiB = peak RSS above what the process held before the model (onnxscope: before loading it; "
          f"onnxruntime: before creating the session); RSS ratio = onnxscope / onnxruntime (below 1: onnxscope uses less)")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    ratios = [r["onnxruntime"]["latency_ms"]["median"] / r["onnxscope"]["latency_ms"]["median"] for r in records
              if "latency_ms" in r["onnxscope"] and "latency_ms" in r["onnxruntime"]]
    if ratios:
        worst = min(ratios)
        print(f"\n{len(ratios)} rows: geometric mean ORT/onnxscope {float(np.exp(np.mean(np.log(ratios)))):.2f}, "
              f"lowest {worst:.2f}, {sum(1 for x in ratios if x < 1.0)} below 1.0")
    if a.json:
        Path(a.json).write_text(json.dumps(records, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
