#!/usr/bin/env python3
"""What the debugging commands of issue 33 cost on the public benchmark list, against one run.

For every model (batch 1, ~/.cache/onnxscope/bench-models, made by
scripts/make_bench_models.py), in one process each, wall time of:
- `run --engine cpu` (the cost of running the model: load, prepare, one run;
  the median of three processes);
- `bisect-passes` (the reference once, the cpu engine with every rewrite and
  with none, more runs only when a rewrite moves an output);
- `precision --engine cpu --out mixed.onnx` (float16 ranges, conversion, the
  keep-in-float32 search; float16 nodes run on the cpu engine's float32
  kernels between Casts);
- `diff MODEL --against mixed.onnx --engines cpu` (two models paired and
  compared, with blame);
- `diff bert_base.onnx --against bert_base_ts14.onnx` where both exist (two
  exporters of one module).
Prints one table: seconds and the ratio to `run`, what each found, exit codes.

    .venv/bin/python scripts/bench_debug_commands.py                   # the whole list
    .venv/bin/python scripts/bench_debug_commands.py resnet18 gpt2     # some of it
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = Path.home() / ".cache" / "onnxscope" / "bench-models"
PUBLIC = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "efficientnet_b0",
          "regnet_y_400mf", "densenet121", "convnext_tiny", "swin_t", "vit_b_16", "shufflenet_v2", "ssdlite320",
          "bert_base", "bert_base_ts14", "gpt2", "llama_gqa", "vit_hf"]


def timed(cmd: list[str], timeout: float) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return time.perf_counter() - t0, p.returncode, p.stdout
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t0, -1, ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help="names from the public list (default: all)")
    ap.add_argument("--onnxscope", default=os.environ.get("ONNXSCOPE", str(REPO / "build" / "app" / "onnxscope")))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=900)
    args = ap.parse_args()
    cli, dims = args.onnxscope, ["--dim", "batch=1"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models or PUBLIC:
            model = BENCH / f"{name}.onnx"
            if not model.exists():
                print(f"{name}: not in {BENCH} (scripts/make_bench_models.py makes it)", file=sys.stderr)
                continue
            th = ["--threads", str(args.threads)]
            # The denominator: the median of three runs (one process each), so one
            # slow start on this noisy machine does not flatter every ratio of the row.
            runs = [timed([cli, "run", str(model), "--engine", "cpu", *th, *dims], args.timeout) for _ in range(3)]
            run_s, run_rc = sorted(r[0] for r in runs)[1], max(r[1] for r in runs)
            bis_s, bis_rc, bis_out = timed([cli, "bisect-passes", str(model), *th, *dims, "--json"], args.timeout)
            mixed = Path(tmp) / f"{name}_mixed.onnx"
            pre_s, pre_rc, pre_out = timed([cli, "precision", str(model), "--engine", "cpu", *th, *dims, "--json",
                                            "--out", str(mixed)], args.timeout)
            row = {"model": name, "run": run_s, "run_rc": run_rc, "bisect": bis_s, "bisect_rc": bis_rc,
                   "precision": pre_s, "precision_rc": pre_rc}
            try:
                b = json.loads(bis_out)
                row["bisect_found"] = (f"{b['rewrites']} rewrites, all within" if b["all"]["within"] else
                                       f"rewrite {b['culprit']['index'] + 1}: {b['culprit']['pass']}" if "culprit" in b
                                       else "a kernel, not a rewrite")
            except (ValueError, KeyError):
                row["bisect_found"] = "-"
            try:
                p = json.loads(pre_out)
                row["precision_found"] = f"{len(p['keep'])} of {len(p['ranges'])} kept, met {p['met']}"
            except (ValueError, KeyError):
                row["precision_found"] = "-"
            if mixed.exists():
                d_s, d_rc, d_out = timed([cli, "diff", str(model), "--against", str(mixed), "--engines", "cpu", *th, *dims,
                                          "--json"], args.timeout)
                row.update({"against": d_s, "against_rc": d_rc})
                try:
                    j = json.loads(d_out)
                    row["against_found"] = (f"{j['match']['coverage_a']:.0%}/{j['match']['coverage_b']:.0%} covered, "
                                            f"{j['diverging']} diverge")
                except (ValueError, KeyError):
                    row["against_found"] = "-"
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
        pair = (BENCH / "bert_base.onnx", BENCH / "bert_base_ts14.onnx")
        if all(p.exists() for p in pair) and (not args.models or "bert_base" in args.models):
            s, rc, out = timed([cli, "diff", str(pair[0]), "--against", str(pair[1]), "--engines", "cpu",
                                "--threads", str(args.threads), *dims, "--json"], args.timeout)
            j = json.loads(out) if out else {}
            print(f"bert_base --against bert_base_ts14 (cpu): {s:.1f} s, exit {rc}, "
                  f"{j.get('match', {}).get('summary', '-')}, {j.get('diverging', '-')} diverge")
    print("| model | run s | bisect-passes s (x run) | found | precision s (x run) | found | diff --against mixed s (x run) | found |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        x = lambda k: f"{r[k]:.1f} ({r[k] / r['run']:.0f}x)" if k in r else "-"  # noqa: E731
        print(f"| {r['model']} | {r['run']:.2f} | {x('bisect')} | {r['bisect_found']} | {x('precision')} | "
              f"{r['precision_found']} | {x('against')} | {r.get('against_found', '-')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
