#!/usr/bin/env python3
"""Times onnxscope's cuda engine against PyTorch eager on CUDA and against
onnxscope's cpu engine, on the same model weights and inputs, in one run.

For each model (ResNet-50, MobileNetV2, the BERT-base encoder; definitions
and seeds from make_bench_models.py) the script builds the PyTorch module,
exports it to ONNX (opset 18, open batch dimension), and for each batch size:

- PyTorch eager: module.cuda().eval() under torch.inference_mode(); one timed
  run copies the inputs from host memory to the GPU, runs the module and
  copies the output back, synchronised, as `onnxscope bench` does;
- onnxscope bench --engine cuda (each --precisions entry) and --engine cpu,
  with the same inputs (TensorProto files), --json, --save-outputs;
- the largest absolute difference of each onnxscope output from PyTorch's.

TF32 is off on the PyTorch side for the fp32 rows (torch.backends.cuda.
matmul.allow_tf32 and cudnn.allow_tf32 False) and on for tf32 rows; fp16
rows run PyTorch under torch.autocast(float16), which is what onnxscope's
--precision fp16 mirrors. Needs python3 with torch, torchvision,
transformers, onnx and onnxscript (a GPU machine's image has them).

    python3 scripts/bench_cuda.py --onnxscope build/app/onnxscope
    python3 scripts/bench_cuda.py --models resnet50 --batches 1 --precisions fp32,tf32 --cpu-iterations 2

--rounds R alternates PyTorch's and onnxscope's timings R times per row and
reports the median of the rounds' medians (PyTorch's times moved by up to
2.3x between runs on an H100).

--variant NAME=VALUE (repeatable) times each cuda row again with that
environment setting, a column each: what one of the engine's fast paths
gains, in the same run (ONNXSCOPE_CUDA_LIBRARY_EPILOGUES=0,
ONNXSCOPE_CUDA_PINNED=0, ONNXSCOPE_CUDA_HALF_COPIES=0,
ONNXSCOPE_CUDA_FIND_ROUNDS=1; docs/cuda-engine.md).

Prints a Markdown table; ratio = PyTorch median / onnxscope cuda median
(above 1: onnxscope is faster); "cuda's last run" says whether the timed
runs replayed a captured CUDA graph. See docs/cuda-engine.md.
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

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def export(name: str, out: Path):
    """The module (eval, seed 0 as make_bench_models.py) and its ONNX file.

    An ONNX file already at out/NAME.onnx (an earlier --export-only run, with
    the same seed and definitions) is reused: the module is rebuilt from the
    seed, so its weights are the file's."""
    import torch
    import make_bench_models as mbm

    torch.manual_seed(0)
    make = mbm.MODELS[name][0]  # (make, exporter, opset): this script exports with torch.export itself
    module, example = make()
    module = module.eval()
    path = out / f"{name}.onnx"
    if path.exists():
        return module, list(example), path
    # Traced at batch 2: torch.export specialises a dimension its example
    # gives as 1 (seen with torch 2.11: BERT came out with a fixed batch of 1).
    example = {k: torch.cat([v, v]) for k, v in example.items()}
    batch = torch.export.Dim("batch", min=1, max=64)
    dynamic = tuple({0: batch} for _ in example)
    tmp = path.with_suffix(".tmp.onnx")
    start = time.time()
    try:
        torch.onnx.export(module, tuple(example.values()), str(tmp), dynamo=True, opset_version=18,
                          input_names=list(example), output_names=["output"], dynamic_shapes=dynamic,
                          external_data=False, verbose=False)
        how = "torch.export"
    except Exception as e:  # an exporter that fails on this torch: the TorchScript one
        print(f"{name}: torch.export-based export failed ({type(e).__name__}: {str(e)[:200]}); "
              "trying the TorchScript exporter", file=sys.stderr, flush=True)
        axes = {n: {0: "batch"} for n in example}
        torch.onnx.export(module, tuple(example.values()), str(tmp), dynamo=False, opset_version=18,
                          input_names=list(example), output_names=["output"], dynamic_axes=axes)
        how = "TorchScript"
    import onnx
    fixed = [i.name for i in onnx.load(str(tmp), load_external_data=False).graph.input
             if not i.type.tensor_type.shape.dim[0].dim_param]
    if fixed:
        print(f"{name}: WARNING: the export fixed the batch dimension of {', '.join(fixed)}", file=sys.stderr, flush=True)
    tmp.rename(path)
    print(f"{name}: exported ({how}) in {time.time() - start:.1f} s, {path.stat().st_size / 2**20:.0f} MiB",
          file=sys.stderr, flush=True)
    return module, list(example), path


def make_inputs(name: str, names: list[str], batch: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name == "bert_base":
        import make_bench_models as mbm
        ids = rng.integers(0, 1000, size=(batch, mbm.SEQ)).astype(np.int64)
        mask = np.ones((batch, mbm.SEQ), dtype=np.int64)
        mask[:, mbm.SEQ - 16:] = rng.integers(0, 2, size=(batch, 16))  # some padding, so the mask matters
        return dict(zip(names, [ids, mask]))
    return {names[0]: rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)}


def time_torch(module, feeds: dict[str, np.ndarray], precision: str, warmup: int, iterations: int):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    dev = torch.device("cuda")
    module = module.to(dev)
    host = [torch.from_numpy(v) for v in feeds.values()]
    times, out = [], None
    with torch.inference_mode(), torch.autocast("cuda", dtype=torch.float16, enabled=precision == "fp16"):
        for i in range(warmup + iterations):
            torch.cuda.synchronize()
            s = time.perf_counter()
            args = [h.to(dev) for h in host]
            y = module(*args)
            out = y.float().cpu()
            torch.cuda.synchronize()
            if i >= warmup:
                times.append((time.perf_counter() - s) * 1000)
    return float(np.median(times)), out.numpy()


def run_onnxscope(cli: str, model: Path, engine: str, precision: str, batch: int, files: dict[str, Path],
                  out_dir: Path, warmup: int, iterations: int, threads: int, timeout: float,
                  env: dict[str, str] | None = None) -> dict:
    cmd = [cli, "bench", str(model), "--engine", engine, "--warmup", str(warmup), "--iterations", str(iterations),
           "--json", "--save-outputs", str(out_dir), "--batch", str(batch)]
    if engine == "cuda":
        cmd += ["--precision", precision]
    if threads:
        cmd += ["--threads", str(threads)]
    for name, f in files.items():
        cmd += ["--input", f"{name}={f}"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, **env} if env else None)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout} s"}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]}
    return json.loads(p.stdout)


def profile_onnxscope(cli: str, model: Path, precision: str, files: dict[str, Path], timeout: float, top: int = 12) -> str:
    """`onnxscope run --profile` on the cuda engine: time by operator and
    kernel, each node synchronised (so each time is the node's own)."""
    cmd = [cli, "run", str(model), "--engine", "cuda", "--precision", precision, "--profile"]
    for name, f in files.items():
        cmd += ["--input", f"{name}={f}"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"profile: timeout after {timeout} s"
    lines = p.stdout.splitlines()
    at = next((i for i, l in enumerate(lines) if l.startswith("time by operator")), None)
    if p.returncode != 0 or at is None:
        return "profile failed: " + ((p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1])
    section = lines[at:]
    end = next((i for i, l in enumerate(section) if not l.strip()), len(section))  # the slowest nodes follow a blank line
    return "\n".join(section[:min(end, 1 + top)])


def output_of(res: dict) -> np.ndarray | None:
    from onnx import TensorProto, numpy_helper

    outs = res.get("outputs") or []
    if not outs:
        return None
    t = TensorProto()
    t.ParseFromString(Path(outs[0]["file"]).read_bytes())
    return numpy_helper.to_array(t)


def diff(a: np.ndarray | None, b: np.ndarray | None) -> str:
    if a is None or b is None:
        return "-"
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    return f"{float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))):.1e}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50,mobilenet_v2,bert_base")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--precisions", default="fp32", help="cuda precisions, comma-separated: fp32, tf32, fp16")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--cpu-iterations", type=int, default=5, help="timed runs of the cpu engine (slower)")
    ap.add_argument("--cpu-threads", type=int, default=0, help="cpu engine threads (0: every core)")
    ap.add_argument("--no-cpu", action="store_true", help="leave the cpu engine out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--onnxscope", default=os.environ.get("ONNXSCOPE", str(HERE.parent / "build" / "app" / "onnxscope")))
    ap.add_argument("--json", help="also write every measurement here")
    ap.add_argument("--models-dir", help="where the exported models are kept (and reused when there); default: a temporary folder")
    ap.add_argument("--export-only", action="store_true", help="export the models into --models-dir and stop (no GPU needed)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time PyTorch and onnxscope's cuda engine this many times each, alternating, per row; the "
                         "table shows the median of the rounds' medians (PyTorch's times moved up to 2.3x between "
                         "runs on an H100: alternating rounds expose that, and the spread goes to stderr and --json)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=VALUE[,NAME=VALUE]",
                    help="also time each cuda row with these environment settings (a column each), e.g. "
                         "ONNXSCOPE_CUDA_LIBRARY_EPILOGUES=0 (bias and activation as a kernel after cuDNN's and "
                         "cuBLAS's calls), ONNXSCOPE_CUDA_PINNED=0 (pageable transfers), ONNXSCOPE_CUDA_HALF_COPIES=0, "
                         "ONNXSCOPE_CUDA_FIND_ROUNDS=1 (one cuDNN Find per convolution); --kernel-epilogues is the first")
    ap.add_argument("--kernel-epilogues", action="store_true", help="--variant ONNXSCOPE_CUDA_LIBRARY_EPILOGUES=0")
    ap.add_argument("--profile", action="store_true",
                    help="after each cuda row, `onnxscope run --profile` on the same inputs: where its time goes (to stderr)")
    a = ap.parse_args()

    import torch
    from onnx import numpy_helper

    # Each variant: its label and the environment settings it runs with.
    variant_specs = (["ONNXSCOPE_CUDA_LIBRARY_EPILOGUES=0"] if a.kernel_epilogues else []) + a.variant
    variants = []
    for spec in variant_specs:
        env = dict(kv.split("=", 1) for kv in spec.split(",") if "=" in kv)
        if not env:
            ap.error(f"--variant {spec!r}: expected NAME=VALUE")
        variants.append((spec, env))

    models = [m for m in a.models.split(",") if m]
    if a.export_only:
        if not a.models_dir:
            ap.error("--export-only needs --models-dir")
        Path(a.models_dir).mkdir(parents=True, exist_ok=True)
        for name in models:
            export(name, Path(a.models_dir))
        return 0
    if not torch.cuda.is_available():
        print("bench_cuda: PyTorch sees no CUDA device", file=sys.stderr)
        return 2
    gpu = torch.cuda.get_device_name(0)
    precisions = [p for p in a.precisions.split(",") if p]
    rows, records = [], []
    with tempfile.TemporaryDirectory(prefix="bench_cuda_") as tmp:
        tmp = Path(tmp)
        model_dir = Path(a.models_dir) if a.models_dir else tmp
        model_dir.mkdir(parents=True, exist_ok=True)
        for name in models:
            print(f"{name}: export ...", file=sys.stderr, flush=True)
            module, names, path = export(name, model_dir)
            for batch in [int(b) for b in a.batches.split(",") if b]:
                feeds = make_inputs(name, names, batch, a.seed)
                work = tmp / f"{name}_b{batch}"
                work.mkdir()
                files = {}
                for k, (n, arr) in enumerate(feeds.items()):
                    files[n] = work / f"input_{k}.pb"
                    files[n].write_bytes(numpy_helper.from_array(arr, n).SerializeToString())
                cpu_res, cpu_ms = None, None
                if not a.no_cpu:
                    print(f"{name} b{batch}: onnxscope cpu ...", file=sys.stderr, flush=True)
                    cpu_res = run_onnxscope(a.onnxscope, path, "cpu", "fp32", batch, files, work / "out_cpu",
                                            1, a.cpu_iterations, a.cpu_threads, a.timeout)
                    cpu_ms = cpu_res.get("latency_ms", {}).get("median")
                for precision in precisions:
                    torch_rounds, cuda_rounds = [], []
                    for r in range(max(1, a.rounds)):  # alternating, so drift hits both alike
                        print(f"{name} b{batch} {precision}: PyTorch eager ...", file=sys.stderr, flush=True)
                        t_ms, torch_out = time_torch(module, feeds, precision, a.warmup, a.iterations)
                        torch_rounds.append(t_ms)
                        print(f"{name} b{batch} {precision}: onnxscope cuda ...", file=sys.stderr, flush=True)
                        res = run_onnxscope(a.onnxscope, path, "cuda", precision, batch, files,
                                            work / f"out_cuda_{precision}", a.warmup, a.iterations, 0, a.timeout)
                        if res.get("latency_ms", {}).get("median"):
                            cuda_rounds.append(res["latency_ms"]["median"])
                    torch_ms = float(np.median(torch_rounds))
                    ms = float(np.median(cuda_rounds)) if cuda_rounds else None
                    if a.rounds > 1:
                        print(f"{name} b{batch} {precision}: rounds PyTorch {['%.2f' % t for t in torch_rounds]}, "
                              f"onnxscope cuda {['%.2f' % t for t in cuda_rounds]}", file=sys.stderr, flush=True)
                    variant_ms = {}
                    for vname, env in variants:
                        print(f"{name} b{batch} {precision}: onnxscope cuda with {vname} ...", file=sys.stderr, flush=True)
                        v = run_onnxscope(a.onnxscope, path, "cuda", precision, batch, files,
                                          work / f"out_cuda_{precision}_{len(variant_ms)}", a.warmup, a.iterations, 0,
                                          a.timeout, env)
                        variant_ms[vname] = v.get("latency_ms", {}).get("median")
                        print(f"{name} b{batch} {precision}: {ms} ms as built, {variant_ms[vname]} ms with {vname} "
                              f"{v.get('error', '')}", file=sys.stderr, flush=True)
                    records.append({"model": name, "batch": batch, "precision": precision, "torch_ms": torch_ms,
                                    "torch_rounds_ms": torch_rounds, "cuda_rounds_ms": cuda_rounds,
                                    "cuda": res, "cpu": cpu_res, "variants_ms": variant_ms})
                    rows.append([name, str(batch), precision, f"{torch_ms:.2f}", f"{ms:.2f}" if ms else "-",
                                 res.get("last_run", "-"),
                                 f"{torch_ms / ms:.2f}" if ms else "-", f"{cpu_ms:.1f}" if cpu_ms else "-",
                                 f"{cpu_ms / ms:.1f}" if ms and cpu_ms else "-",
                                 diff(output_of(res), torch_out), diff(output_of(cpu_res) if cpu_res else None, torch_out),
                                 res.get("error", "") or (cpu_res or {}).get("error", "")])
                    for k, (vname, _) in enumerate(variants):
                        rows[-1].insert(5 + k, f"{variant_ms[vname]:.2f}" if variant_ms.get(vname) else "-")
                    # Each row as it is measured, so a run cut off still leaves its rows.
                    print("row: | " + " | ".join(rows[-1]) + " |", file=sys.stderr, flush=True)
                    if a.profile:
                        print(f"{name} b{batch} {precision}: " + profile_onnxscope(a.onnxscope, path, precision, files, a.timeout),
                              file=sys.stderr, flush=True)
                    if a.json:
                        Path(a.json).write_text(json.dumps(records, indent=1))
            del module
            torch.cuda.empty_cache()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {gpu}, torch {torch.__version__}, "
          f"warm-up {a.warmup}, {a.iterations} timed runs (cpu engine: {a.cpu_iterations})"
          f"{f', {a.rounds} alternating rounds (median of their medians)' if a.rounds > 1 else ''}; times are medians in ms, "
          f"host inputs to host outputs; PyTorch/cuda above 1: onnxscope is faster")
    head = ["model", "batch", "precision", "PyTorch eager ms", "onnxscope cuda ms"]
    head += [f"cuda with {vname} ms" for vname, _ in variants]
    head += ["cuda's last run", "PyTorch/cuda",
            "onnxscope cpu ms", "cpu/cuda", "max abs diff cuda vs PyTorch", "max abs diff cpu vs PyTorch", "error"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if a.json:
        Path(a.json).write_text(json.dumps(records, indent=1))
    return 1 if any(r[-1] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
