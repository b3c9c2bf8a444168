"""Running the onnxscope command line from the Python checks of
tests/python: a model on one engine with given inputs (its outputs read
back from the HDF5 dump), and a model that must fail with exit code 1 and
a message naming the problem; a float16 copy of a float32 model."""
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


def float16_copy(src, dst):
    """Weights and compute of `src` in float16, written to `dst`; the graph
    input and output stay float32 (a Cast at each edge)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    m = onnx.load(str(src))
    g = m.graph
    for init in g.initializer:
        if init.data_type == TensorProto.FLOAT:
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name))
    for n in g.node:
        for a in n.attribute:
            if a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
    x, y = g.input[0].name, g.output[0].name
    for n in g.node:
        n.input[:] = [x + "_fp16" if i == x else i for i in n.input]
        n.output[:] = [y + "_fp16" if o == y else o for o in n.output]
    g.node.insert(0, helper.make_node("Cast", [x], [x + "_fp16"], to=TensorProto.FLOAT16, name="cast_in"))
    g.node.append(helper.make_node("Cast", [y + "_fp16"], [y], to=TensorProto.FLOAT, name="cast_out"))
    del g.value_info[:]
    onnx.save(m, str(dst))


def ort_u8s8_saturates():
    """Whether onnxruntime's uint8 x int8 products saturate on this CPU: on
    x86 without VNNI its AVX2 kernels add pairs of products in 16 bits
    (vpmaddubsw), and 255 * 127 * 2 does not fit (onnxruntime's documented
    caveat, why quantize_dynamic has reduce_range). Measured on an AMD EPYC
    with AVX2 only: a [2,23] x [23,11] MatMulInteger off by 19337 from the
    exact sums. Checks against onnxruntime keep int8 operands to 7 bits
    there, so its answer is exact; the kernel harness checks the full range
    against the reference."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    if "avx2" not in flags:
        return False
    return "avx512_vnni" not in flags and "avx_vnni" not in flags


def seven_bits(b):
    """int8 values halved (floor) into [-64, 63]: see ort_u8s8_saturates."""
    return (b.astype(np.int16) // 2).astype(np.int8)
