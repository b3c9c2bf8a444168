#!/usr/bin/env python3
"""The mutation sweep: N mutated copies of each of your models, each run
through `onnxscope inspect` and `onnxscope run` on every engine asked for,
reporting every signal, sanitizer report or hang, with the file kept for
replay. A model file is a program from a stranger; this is how to check that
onnxscope answers a damaged one with an error (exit 1 or 2), never a crash.

    scripts/mutate_models.py MODEL_OR_FOLDER... --copies 100 --out sweep/
    scripts/mutate_models.py ~/.cache/onnxscope/real-models --copies 50 \\
        --cli build-fuzz/app/onnxscope --engines reference,cpu,cuda-sim --jobs 2 --out sweep-asan/

Mutations, chosen per copy from a seeded generator (copy K of a model is the
same file on every machine, so a finding replays from its seed):

  bytes      1 to 8 bit flips; a few bytes inserted or deleted; truncation
  structure  (the model parsed by onnx, changed, written back) a tensor's
             contents poked with interesting values (bool bytes 2..255,
             indices out of range, int64 extremes, NaN and inf); a dim; an
             element type; an attribute; a node's input rewired

A run gets --timeout (default 10 s) and --max-live-bytes (default 2 GB);
a command still going after --hang-seconds (default 120) is a hang. Symbolic
input dims are given as 2. With the ASan + UBSan build (--cli
build-fuzz/app/onnxscope, see scripts/fuzz.sh) a sanitizer report is a
finding even when the exit code is clean.

Findings are kept in OUT/findings/<model>-<copy>-<kind>.onnx with the
command and its stderr beside; OUT/summary.json has the counts. Exit 0 when
there is no finding, 3 when there is one.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import random
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer",
                   "ERROR: MemorySanitizer", "ThreadSanitizer")


# --- mutations ----------------------------------------------------------------

def mutate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    b = bytearray(data)
    kind = rng.choice(["flip", "flip", "flip", "insert", "delete", "truncate"])
    if kind == "flip" or not b:
        n = rng.randint(1, 8)
        for _ in range(n):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        return bytes(b), f"{n} bit flip(s)"
    if kind == "insert":
        i = rng.randrange(len(b) + 1)
        ins = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        return bytes(b[:i] + ins + b[i:]), f"{len(ins)} byte(s) inserted at {i}"
    if kind == "delete":
        i = rng.randrange(len(b))
        n = rng.randint(1, 16)
        return bytes(b[:i] + b[i + n:]), f"{n} byte(s) deleted at {i}"
    cut = rng.randrange(len(b))
    return bytes(b[:cut]), f"truncated to {cut} bytes"


INTERESTING_INTS = [0, 1, -1, 2, -2, 7, 255, 256, 65536, -65536, 2**31 - 1, -2**31, 2**40, 2**62, 2**63 - 1, -2**63]


def mutate_structure(data: bytes, rng: random.Random) -> tuple[bytes, str] | None:
    import numpy as np
    import onnx
    from onnx import numpy_helper

    m = onnx.ModelProto()
    try:
        m.ParseFromString(data)
    except Exception:
        return None
    tensors, attrs, types, nodes, values = [], [], [], [], []

    def walk(g, depth=0):
        if depth > 8:
            return
        for t in g.initializer:
            tensors.append(t)
            values.append(t.name)
        for lst in (g.input, g.output, g.value_info):
            for v in lst:
                values.append(v.name)
                if v.type.HasField("tensor_type"):
                    types.append(v.type.tensor_type)
        for n in g.node:
            nodes.append(n)
            values.extend(n.output)
            for a in n.attribute:
                attrs.append(a)
                if a.HasField("t"):
                    tensors.append(a.t)
                if a.HasField("g"):
                    walk(a.g, depth + 1)
                for sub in a.graphs:
                    walk(sub, depth + 1)

    walk(m.graph)
    what = rng.choice(["tensor", "tensor", "tensor", "attribute", "type", "node"])
    if what == "tensor" and tensors:
        t = rng.choice(tensors)
        if t.raw_data:
            raw = bytearray(t.raw_data)
            arr = None
            try:
                arr = numpy_helper.to_array(t)
            except Exception:
                pass
            n = rng.randint(1, 4)
            if t.data_type == onnx.TensorProto.BOOL or arr is None or arr.dtype.itemsize == 1:
                for _ in range(n):
                    raw[rng.randrange(len(raw))] = rng.randrange(256)
            else:
                w = arr.dtype.itemsize
                for _ in range(n):
                    i = rng.randrange(len(raw) // w) * w
                    if arr.dtype.kind == "f":
                        v = np.array(rng.choice([np.nan, np.inf, -np.inf, 1e30, -0.0, 65504.0]), dtype=arr.dtype)
                    else:
                        v = np.array(rng.choice(INTERESTING_INTS) % (1 << (8 * w)), dtype=np.uint64).astype(
                            f"<u{w}").view(arr.dtype)
                    raw[i:i + w] = v.tobytes()[:w]
            t.raw_data = bytes(raw)
            return m.SerializeToString(), f"tensor '{t.name}' ({onnx.TensorProto.DataType.Name(t.data_type)}) poked {n}x"
        if t.dims:
            k = rng.randrange(len(t.dims))
            t.dims[k] = rng.choice(INTERESTING_INTS[:12])
            return m.SerializeToString(), f"tensor '{t.name}' dim {k} changed"
        return None
    if what == "attribute" and attrs:
        a = rng.choice(attrs)
        if a.type == onnx.AttributeProto.INT:
            a.i = rng.choice(INTERESTING_INTS)
        elif a.type == onnx.AttributeProto.INTS and a.ints:
            a.ints[rng.randrange(len(a.ints))] = rng.choice(INTERESTING_INTS)
        elif a.type == onnx.AttributeProto.FLOAT:
            a.f = rng.choice([float("nan"), float("inf"), -1.0, 0.0, 1e30])
        else:
            return None
        return m.SerializeToString(), f"attribute '{a.name}' changed"
    if what == "type" and types:
        tt = rng.choice(types)
        if tt.HasField("shape") and tt.shape.dim and rng.random() < 0.5:
            d = tt.shape.dim[rng.randrange(len(tt.shape.dim))]
            d.dim_value = rng.choice([0, 1, 3, 1000, 2**31])
            return m.SerializeToString(), "a declared dim changed"
        tt.elem_type = rng.randint(1, 26)
        return m.SerializeToString(), f"a declared element type set to {tt.elem_type}"
    if what == "node" and nodes and values:
        n = rng.choice(nodes)
        if n.input:
            k = rng.randrange(len(n.input))
            n.input[k] = rng.choice(values)
            return m.SerializeToString(), f"node '{n.name}' input {k} rewired"
    return None


def make_mutant(data: bytes, seed: int) -> tuple[bytes, str]:
    rng = random.Random(seed)
    if rng.random() < 0.5:
        got = mutate_structure(data, rng)
        if got:
            return got
    return mutate_bytes(data, rng)


# --- running ------------------------------------------------------------------

def symbolic_dims(path: Path) -> list[str]:
    import onnx

    try:
        m = onnx.load(str(path), load_external_data=False)
    except Exception:
        return []
    names = []
    for v in m.graph.input:
        if v.type.HasField("tensor_type"):
            for d in v.type.tensor_type.shape.dim:
                if d.dim_param and d.dim_param not in names:
                    names.append(d.dim_param)
    return names


def run_one(cmd: list[str], hang_seconds: float, env: dict) -> dict:
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=hang_seconds, env=env)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return {"kind": "hang", "rc": None, "seconds": time.monotonic() - t0, "stderr": err[-4000:]}
    kind = "clean"
    if p.returncode < 0:
        kind = "signal"
    elif any(mark in p.stderr for mark in SANITIZER_MARKS):
        kind = "sanitizer"
    elif p.returncode not in (0, 1, 2, 3):
        kind = "exit"  # an unexpected exit code (an abort turned into 134 by a shell, a sanitizer's exit)
    return {"kind": kind, "rc": p.returncode, "seconds": time.monotonic() - t0, "stderr": p.stderr[-4000:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", type=Path, help=".onnx files or folders of them")
    ap.add_argument("--cli", default=str(Path(__file__).resolve().parent.parent / "build" / "app" / "onnxscope"))
    ap.add_argument("--copies", type=int, default=20, help="mutated copies per model")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--engines", default="reference,cpu,cuda-sim")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=10, help="the tool's --timeout for one run")
    ap.add_argument("--max-live-bytes", default="2000000000")
    ap.add_argument("--hang-seconds", type=float, default=120, help="a command still going after this is a hang")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--keep-mutants", action="store_true", help="keep every mutated file, not only the findings")
    a = ap.parse_args()

    files = []
    for p in a.models:
        files += sorted(p.rglob("*.onnx")) if p.is_dir() else [p]
    if not files:
        print("mutate_models: no .onnx files given", file=sys.stderr)
        return 2
    work = a.out / "mutants"
    findings = a.out / "findings"
    work.mkdir(parents=True, exist_ok=True)
    findings.mkdir(parents=True, exist_ok=True)
    engines = [e for e in a.engines.split(",") if e]
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0:allocator_may_return_null=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")

    jobs = []
    for f in files:
        data = f.read_bytes()
        dims = [arg for d in symbolic_dims(f) for arg in ("--dim", f"{d}=2")]
        stem = f.stem
        for k in range(a.copies):
            seed = zlib.crc32(f"{a.seed}:{stem}:{k}".encode())  # the same mutant on every machine
            mutant, how = make_mutant(data, seed)
            path = work / f"{stem}-{k:05d}.onnx"
            path.write_bytes(mutant)
            cmds = [("inspect", [a.cli, "inspect", str(path)])]
            for e in engines:
                cmds.append((f"run:{e}", [a.cli, "run", str(path), "--engine", e, "--timeout", str(a.timeout),
                                          "--max-live-bytes", a.max_live_bytes, *dims]))
            jobs.append((f, stem, k, seed, how, path, cmds))

    counts: dict[str, dict[str, int]] = {}
    found = []
    t0 = time.monotonic()

    def work_one(job):
        f, stem, k, seed, how, path, cmds = job
        out = []
        for name, cmd in cmds:
            r = run_one(cmd, a.hang_seconds, env)
            # A dim the mutant no longer has is a usage error (2) before anything runs: run it without dims then.
            if name.startswith("run:") and r["kind"] == "clean" and r["rc"] == 2 and "--dim" in cmd:
                cmd = cmd[:cmd.index("--dim")]
                r = run_one(cmd, a.hang_seconds, env)
            out.append((name, cmd, r))
        return job, out

    with cf.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for n, (job, results) in enumerate(pool.map(work_one, jobs), 1):
            f, stem, k, seed, how, path, cmds = job
            bad = False
            for name, cmd, r in results:
                c = counts.setdefault(name, {})
                key = r["kind"] if r["kind"] != "clean" else f"exit {r['rc']}"
                c[key] = c.get(key, 0) + 1
                if r["kind"] != "clean":
                    bad = True
                    tag = f"{stem}-{k:05d}-{name.replace(':', '-')}-{r['kind']}"
                    shutil.copy(path, findings / f"{tag}.onnx")
                    (findings / f"{tag}.txt").write_text(
                        f"model: {f}\ncopy: {k} (seed {seed}): {how}\ncommand: {' '.join(cmd)}\n"
                        f"result: {r['kind']} (exit {r['rc']}, {r['seconds']:.1f} s)\n\n{r['stderr']}\n")
                    found.append({"file": str(findings / f"{tag}.onnx"), "model": str(f), "copy": k, "mutation": how,
                                  "command": name, "kind": r["kind"], "rc": r["rc"]})
                    print(f"FINDING {tag}: {r['kind']} (exit {r['rc']}): {how}", flush=True)
            if not a.keep_mutants and not bad:
                path.unlink(missing_ok=True)
            if n % 100 == 0:
                print(f"[{n}/{len(jobs)}] {time.monotonic() - t0:.0f} s, {len(found)} finding(s)", flush=True)

    summary = {"cli": a.cli, "models": [str(f) for f in files], "copies_per_model": a.copies, "seed": a.seed,
               "mutated_files": len(jobs), "engines": engines, "seconds": round(time.monotonic() - t0, 1),
               "results": counts, "findings": found}
    (a.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"{len(jobs)} mutated files from {len(files)} model(s), {sum(sum(c.values()) for c in counts.values())} "
          f"commands in {summary['seconds']} s")
    for name, c in counts.items():
        print(f"  {name:14s} " + ", ".join(f"{k}: {v}" for k, v in sorted(c.items())))
    print(f"{len(found)} finding(s)" + (f"; kept in {findings}" if found else ""))
    return 3 if found else 0


if __name__ == "__main__":
    sys.exit(main())
