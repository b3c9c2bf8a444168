"""`onnxscope precision` on planted cases (issue 33, part 4).

- An MLP built to overflow float16 in one known node ('mm_big': a MatMul
  whose values reach past 65504) after a node that does not: `precision`
  names it first, keeps it (and what it needs) in float32, and the mixed
  model it writes meets the tolerance, in onnxscope and in onnxruntime.
- The same model converted wholly to float16 by this script: `precision
  --against` names the same node first, and as the first non-finite value.
- A small CNN quantized by onnxruntime's quantize_static (QDQ), then one
  activation's scale made 20 times too small (badly calibrated: most of its
  values saturate): `precision --against` ranks that value first.
Usage: check_precision.py ONNXSCOPE WORKDIR
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnxscope_cli import float16_copy


def fail(msg):
    raise SystemExit("FAIL: " + msg)


def run(cli, *args, expect=(0,)):
    p = subprocess.run([cli, *map(str, args)], capture_output=True, text=True)
    if p.returncode not in expect:
        fail(f"onnxscope {' '.join(map(str, args))} exited {p.returncode}: {p.stderr[-1500:]}")
    return json.loads(p.stdout) if "--json" in args else p.stdout


def w(name, shape, scale, seed):
    return numpy_helper.from_array((np.random.default_rng(seed).uniform(-1, 1, shape) * scale).astype(np.float32), name)


def overflow_mlp(path):
    nodes = [helper.make_node("Add", ["x", "b0"], ["h0"], name="shift"),
             helper.make_node("MatMul", ["h0", "W1"], ["big"], name="mm_big"),
             helper.make_node("Mul", ["big", "tiny"], ["small"], name="scale_down"),
             helper.make_node("Tanh", ["small"], ["t"], name="tanh"),
             helper.make_node("MatMul", ["t", "W2"], ["y"], name="mm_out")]
    g = helper.make_graph(nodes, "overflow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
                          [w("b0", [64], 0.1, 1), w("W1", [64, 64], 12000.0, 2),
                           numpy_helper.from_array(np.array(1e-4, np.float32), "tiny"), w("W2", [64, 16], 0.5, 3)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(m)
    onnx.save(m, str(path))


def small_cnn(path):
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "W2", "B2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "W3", "B3"], ["y"], name="fc", transB=1)]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                          [w("W1", [8, 3, 3, 3], 0.5, 4), w("B1", [8], 0.1, 5), w("W2", [8, 8, 3, 3], 0.3, 6),
                           w("B2", [8], 0.1, 7), w("W3", [10, 8], 0.5, 8), w("B3", [10], 0.1, 9)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(m)
    onnx.save(m, str(path))


def main():
    cli, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    import onnxruntime as ort

    # float16 overflow in a known node.
    mlp, mixed = work / "overflow_mlp.onnx", work / "overflow_mixed.onnx"
    overflow_mlp(mlp)
    j = run(cli, "precision", mlp, "--json", "--out", mixed)
    if j.get("first_out_of_range") != "mm_big":
        fail(f"first out of float16's range: {j.get('first_out_of_range')!r}, wanted 'mm_big'")
    shift = next(r for r in j["ranges"] if r["node"] == "shift")
    if shift["overflow"]:
        fail("the node before mm_big was reported to overflow")
    if not j["keep"] or j["keep"][0] != "mm_big" or not j["met"]:
        fail(f"kept {j['keep']}, met {j['met']}: wanted mm_big kept first and the tolerance met")
    if not j["all_low"]["within"] is False:
        fail("every node in float16 was reported within tolerance: the overflow went unseen")
    x = np.random.default_rng(0).uniform(-1, 1, (4, 64)).astype(np.float32)
    want = ort.InferenceSession(str(mlp), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ort.InferenceSession(str(mixed), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    if not np.all(np.isfinite(got)) or np.max(np.abs(got - want)) > 1e-2 * max(1.0, np.max(np.abs(want))):
        fail(f"the mixed model in onnxruntime: max |diff| {np.max(np.abs(got - want))}")
    mixed_types = {n.name: n.op_type for n in onnx.load(str(mixed)).graph.node}
    print(f"overflow: mm_big named first; kept in float32: {j['keep']}; the mixed model runs in onnxruntime "
          f"({len(mixed_types)} nodes)")

    half = work / "overflow_fp16.onnx"
    float16_copy(mlp, half)
    j = run(cli, "precision", mlp, "--against", half, "--json", expect=(0, 3))
    if j.get("first_out_of_range") != "mm_big" or j.get("first_nonfinite") != "mm_big":
        fail(f"--against the float16 model: first out of range {j.get('first_out_of_range')!r}, "
             f"first non-finite {j.get('first_nonfinite')!r}; wanted mm_big for both")

    # A ConstantOfShape with no value makes float32 zeros: converted, they must be float16 too.
    zeros = work / "zeros.onnx"
    g = helper.make_graph([helper.make_node("Shape", ["x"], ["s"], name="shape"),
                           helper.make_node("ConstantOfShape", ["s"], ["z"], name="zeros"),
                           helper.make_node("Add", ["x", "z"], ["y"], name="add")], "zeros",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(zeros))
    j = run(cli, "precision", zeros, "--json")
    if not j["met"]:
        fail("a ConstantOfShape without a value: the float16 model does not run or does not meet the tolerance")

    # A badly calibrated value in a QDQ model.
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.data = iter([{"x": np.random.default_rng(k).uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)}
                              for k in range(8)])

        def get_next(self):
            return next(self.data, None)

    cnn, qdq, bad = work / "cnn.onnx", work / "cnn_qdq.onnx", work / "cnn_qdq_bad.onnx"
    small_cnn(cnn)
    quantize_static(str(cnn), str(qdq), Reader(), quant_format=QuantFormat.QDQ)
    m = onnx.load(str(qdq))
    inits = {i.name: i for i in m.graph.initializer}
    activations = [n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] not in inits
                   and n.input[0] != "x"]
    if len(activations) < 2:
        fail(f"the QDQ model quantizes {len(activations)} activations")
    victim = activations[0]
    sharing = {n.output[0] for n in activations if n.input[1] == victim.input[1]}  # (Flatten's Q reuses its input's scale)
    scale = inits[victim.input[1]]
    scale.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(scale) / np.float32(20), scale.name))
    onnx.save(m, str(bad))
    j = run(cli, "precision", cnn, "--against", bad, "--json", expect=(0, 3))
    q = j["quantized_values"]
    if not q or q[0]["b_tensor"] not in sharing or {v["b_tensor"] for v in q[:len(sharing)]} != sharing:
        fail(f"quantized values ranked {[v['b_tensor'] for v in q][:4]}, wanted {sorted(sharing)} first")
    rest = q[len(sharing):]
    # (A value of the test's inputs past a well calibrated range clips too, by a few steps.)
    if q[0]["saturated"] == 0 or (rest and rest[0]["max_steps"] * 10 > q[0]["max_steps"]):
        fail(f"the badly calibrated value saturates nothing, or is not ten times worse than the next: {q[:4]}")
    j_ok = run(cli, "precision", cnn, "--against", qdq, "--json", expect=(0, 3))
    if any(v["mean_steps"] > 0.5 for v in j_ok["quantized_values"]):
        fail(f"a well calibrated QDQ model: mean errors {[v['mean_steps'] for v in j_ok['quantized_values']]} steps")
    print(f"quantized: {q[0]['a_tensor']} ranked first ({q[0]['max_steps']:.1f} steps, {q[0]['saturated']} of "
          f"{q[0]['elements']} saturated)")
    print("check_precision: all checks passed")


if __name__ == "__main__":
    main()
