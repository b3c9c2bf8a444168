"""Every hand-made hostile model (tests/hostile/models, written by
make_hostile.py) gets a clear answer from `onnxscope inspect` and `onnxscope
run` on both engines: the expected exit code, an `error[...]` line naming the
file when it fails, never a signal, and within the time limit.

usage: check_hostile.py ONNXSCOPE_CLI MODELS_DIR
"""
import os
import subprocess
import sys
import time

cli, folder = sys.argv[1:3]
# Invalid files and models: inspect finds them (exit 1). The rest are valid
# models that fail only when run (inspect exits 0 and says they are valid).
INVALID_FILE = {"empty", "not_a_model", "truncated", "if_nested_40", "recursive_function",
                "external_dotdot", "external_absolute", "external_sneaky", "int4_raw_data_size"}
# Valid and within the default limits: runs (287 MB is below the default
# largest-tensor limit of half the machine's memory).
RUNS_OK = {"constantofshape_287mb"}
LIMIT_S = 60  # every run has --timeout 10

failures = []
names = sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".onnx"))
assert len(names) >= 30, names
for name in names:
    path = os.path.join(folder, name + ".onnx")
    checks = [("inspect", [cli, "inspect", path], 1 if name in INVALID_FILE else 0)]
    for engine in ("reference", "cpu"):
        checks.append((f"run {engine}", [cli, "run", path, "--engine", engine, "--timeout", "10"],
                       0 if name in RUNS_OK else 1))
    if name in RUNS_OK:  # within the defaults, but not within tighter limits
        checks.append(("run --max-tensor-bytes 64MB", [cli, "run", path, "--max-tensor-bytes", "64MB"], 1))
        checks.append(("run --max-live-bytes 64MB", [cli, "run", path, "--max-live-bytes", "64MB",
                                                     "--max-tensor-bytes", "1GB"], 1))
    for what, cmd, want in checks:
        start = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            failures.append(f"{name}: {what} did not finish in {LIMIT_S} s")
            continue
        took = time.time() - start
        if p.returncode < 0:
            failures.append(f"{name}: {what} killed by signal {-p.returncode}")
        elif p.returncode != want:
            failures.append(f"{name}: {what} exited {p.returncode}, expected {want}: {p.stderr.strip()[:300]}")
        elif want == 1 and ("error[" not in p.stderr or name not in p.stderr):
            failures.append(f"{name}: {what} failed without a located error: {p.stderr.strip()[:300]}")
        print(f"{name:32s} {what:14s} exit {p.returncode} in {took:5.1f} s")
# Dumps that once crashed a reader (kept by the fuzzer): compare refuses them
# with a located error; a crash inside libhdf5 is contained in a child process.
dumps = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "regressions", "fuzz_dump")
seed = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "seeds", "fuzz_dump", "small.h5")
for f in sorted(os.listdir(dumps)):
    if not f.startswith(("crash-", "timeout-", "oom-")):
        continue
    p = subprocess.run([cli, "compare", os.path.join(dumps, f), seed, "--timeout", "5"], capture_output=True, text=True,
                       timeout=LIMIT_S)
    if p.returncode != 1 or "error[bad-dump]" not in p.stderr:
        failures.append(f"dump {f}: compare exited {p.returncode}: {p.stderr.strip()[:300]}")
    print(f"dump {f[:20]:24s} compare        exit {p.returncode}")
if failures:
    print("\n".join(["FAILED:"] + failures))
    sys.exit(1)
print(f"{len(names)} hostile models: every answer as expected")
