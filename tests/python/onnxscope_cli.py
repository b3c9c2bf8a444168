"""Running the onnxscope command line from the Python checks of
tests/python: a model on one engine with given inputs (its outputs read
back from the HDF5 dump), and a model that must fail with exit code 1 and
a message naming the problem."""
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from onnxscope_dump_writer import read_tensors  # noqa: E402


def _input_args(feeds, work):
    args = []
    for name, value in feeds.items():
        np.save(f"{work}/{name}.npy", value)
        args += ["--input", f"{name}={work}/{name}.npy"]
    return args


def run_outputs(cli, path, feeds, engine, names, work):
    """{name: array} of the tensors `names` after running `path` on `engine`."""
    out = Path(work) / f"out_{engine}.h5"
    p = subprocess.run([cli, "run", str(path), "--engine", engine, "--out", str(out), *_input_args(feeds, work)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"onnxscope {engine} failed on {path}: {p.stderr}")
    got = read_tensors(str(out), set(names))
    missing = [n for n in names if n not in got]
    if missing:
        raise SystemExit(f"{path}: no output {missing} in the dump")
    return got


def expect_error(cli, path, feeds, work, fragment, what):
    """Both engines refuse `path` with exit code 1 and `fragment` in the message."""
    for engine in ("reference", "cpu"):
        p = subprocess.run([cli, "run", str(path), "--engine", engine, *_input_args(feeds, work)],
                           capture_output=True, text=True)
        assert p.returncode == 1, (what, engine, p.returncode, p.stderr)
        assert fragment in p.stderr, (what, engine, p.stderr)
