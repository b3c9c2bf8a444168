"""The loader accepts what onnx.checker accepts (issue 32): every model that
onnx.checker.check_model(full_check=True) passes must load with no error in
`onnxscope inspect --json` (warnings allowed, and expected for oddities).

The models: oddities that exporters and converters write and the checker
passes (each built here, each named), every fifth model of the upstream
backend suite, and the real exports and compatibility-sweep models when
they are on this machine (scripts/make_real_models.py,
scripts/compat_sweep.py). A model the checker rejects is not held to
anything here; the ones onnxscope loads anyway (ONNX Runtime's onnx-domain
operators) are counted.

usage: check_loader_vs_checker.py ONNXSCOPE_CLI WORKDIR SUITE_DIR
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

cli, work, suite = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
work.mkdir(parents=True, exist_ok=True)
F = TensorProto.FLOAT


def relu_graph(**extra):
    x = helper.make_tensor_value_info("x", F, [2, 3])
    y = helper.make_tensor_value_info("y", F, [2, 3])
    return helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y], **extra)


def model(graph, imports=(("", 17),), **kw):
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in imports], **kw)


oddities = {}
# skl2onnx: the default domain imported twice at one version.
oddities["duplicate_opset_import"] = model(relu_graph(), imports=(("", 17), ("ai.onnx", 17)))
# An initializer nothing reads.
oddities["unused_initializer"] = model(relu_graph(initializer=[numpy_helper.from_array(np.ones(4, np.float32), "unused")]))
# value_info for a name no node makes.
oddities["value_info_for_missing_value"] = model(
    relu_graph(value_info=[helper.make_tensor_value_info("ghost", F, [1])]))
# An initializer that is also a graph input (IR 3 style: a default value).
g = relu_graph()
g.node[0].input[0] = "x"
g.input.append(helper.make_tensor_value_info("w", F, [3]))
g.initializer.append(numpy_helper.from_array(np.ones(3, np.float32), "w"))
oddities["initializer_also_an_input"] = model(g)
# An opset imported that no node uses.
oddities["unused_opset_import"] = model(relu_graph(), imports=(("", 17), ("ai.onnx.ml", 3), ("com.microsoft", 1)))
# Symbolic and unknown dims, and a doc string on everything.
x = helper.make_tensor_value_info("x", F, ["batch", None])
y = helper.make_tensor_value_info("y", F, ["batch", None])
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu", doc_string="d")], "g", [x], [y], doc_string="d")
oddities["symbolic_and_unknown_dims"] = model(g, doc_string="m")
# Metadata props, a model version, a producer.
oddities["metadata"] = model(relu_graph(), producer_name="p", producer_version="1", model_version=3)
oddities["metadata"].metadata_props.add(key="k", value="v")
# An older IR version with its opset.
oddities["ir_version_4_opset_9"] = model(relu_graph(), imports=(("", 9),), ir_version=4)
# Empty node names, and a Constant with a value_float.
c = helper.make_node("Constant", [], ["c"], value_float=2.0)
m = helper.make_node("Mul", ["x", "c"], ["y"])
oddities["empty_names_and_value_float"] = model(helper.make_graph(
    [c, m], "g", [helper.make_tensor_value_info("x", F, [2])], [helper.make_tensor_value_info("y", F, [2])]))


def checker_ok(path):
    try:
        onnx.checker.check_model(str(path), full_check=True)
        return True, ""
    except Exception as e:  # the checker's own verdict
        return False, str(e).splitlines()[0][:100]


def loads(path):
    p = subprocess.run([cli, "inspect", "--json", str(path)], capture_output=True, text=True, timeout=120)
    try:
        doc = json.loads(p.stdout)
        return p.returncode == 0 and doc["validation"]["errors"] == 0, doc["validation"]
    except Exception:
        return False, (p.stderr or p.stdout)[-300:]


failures, checked, rejected_but_loaded = [], 0, []
for name, m in oddities.items():
    path = work / f"{name}.onnx"
    onnx.save(m, str(path))
    ok, why = checker_ok(path)
    assert ok, f"{name}: built to pass onnx.checker, which says: {why}"
    good, detail = loads(path)
    checked += 1
    if not good:
        failures.append((name, detail))

paths = sorted(suite.glob("*/*/model.onnx"))[::5]
for extra in (Path.home() / ".cache" / "onnxscope" / "real-models", Path.home() / ".cache" / "onnxscope" / "compat-sweep"):
    if extra.is_dir():
        paths += sorted(extra.glob("*.onnx"))
for path in paths:
    ok, _ = checker_ok(path)
    good, detail = loads(path)
    if not ok:
        if good:
            rejected_but_loaded.append(path.name)
        continue
    checked += 1
    if not good:
        failures.append((str(path), detail))

for name, detail in failures:
    print(f"FAILS TO LOAD: {name}: {detail}")
print(f"{checked} models onnx.checker accepts ({len(oddities)} built oddities, {len(paths)} files): "
      f"{checked - len(failures)} load without error; {len(rejected_but_loaded)} the checker rejects load too "
      f"(ONNX Runtime's own operators): {', '.join(rejected_but_loaded)}")
sys.exit(1 if failures else 0)
