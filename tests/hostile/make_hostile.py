"""Hand-made hostile models: each one is a way a model file has broken a
loader or a kernel before (see docs/hardening.md). Written to the folder
given (default: tests/hostile/models); tests/hostile/check_hostile.py then
runs `onnxscope inspect` and `onnxscope run` on each and expects a clear
error (exit 1 or 2), no signal, within the time limit.

usage: make_hostile.py [OUT_DIR]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
os.makedirs(out, exist_ok=True)
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def model(name, nodes, inputs, outputs, inits=(), opset=18, functions=(), check=False, domains=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    m = helper.make_model(g, opset_imports=imports, functions=list(functions))
    m.ir_version = 9
    if check:
        onnx.checker.check_model(m)
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())
    return m


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def const_i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


y = vi("y", F, None)
# Outputs that ask for too much memory.
model("constantofshape_287mb", [helper.make_node("ConstantOfShape", ["s"], ["y"])], [], [y], [const_i64("s", [287, 1024, 1024])])
model("constantofshape_petabytes", [helper.make_node("ConstantOfShape", ["s"], ["y"])], [], [y], [const_i64("s", [1 << 25, 1 << 25])])
model("constantofshape_overflow", [helper.make_node("ConstantOfShape", ["s"], ["y"])], [], [y],
      [const_i64("s", [1 << 62, 1 << 62, 16])])
model("expand_huge", [helper.make_node("Expand", ["x", "s"], ["y"])], [vi("x", F, [1])], [y], [const_i64("s", [1 << 40])])
model("tile_huge", [helper.make_node("Tile", ["x", "r"], ["y"])], [vi("x", F, [2, 2])], [y], [const_i64("r", [1 << 30, 1 << 30])])
model("range_huge", [helper.make_node("Range", ["a", "b", "d"], ["y"])], [], [y],
      [numpy_helper.from_array(np.array(0, np.float32), "a"), numpy_helper.from_array(np.array(1e18, np.float32), "b"),
       numpy_helper.from_array(np.array(1, np.float32), "d")])
model("resize_huge", [helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest")], [vi("x", F, [1, 1, 4, 4])], [y],
      [numpy_helper.from_array(np.array([1, 1, 1e6, 1e6], np.float32), "sc")])
# A loop that never ends on its own (trip count 2^62, condition always true).
body = helper.make_graph([helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Add", ["v", "one"], ["v_out"])],
                         "body", [vi("i", I64, []), vi("c", TensorProto.BOOL, []), vi("v", F, [1])],
                         [vi("c_out", TensorProto.BOOL, []), vi("v_out", F, [1])],
                         [numpy_helper.from_array(np.array([1], np.float32), "one")])
model("loop_forever", [helper.make_node("Loop", ["n", "t", "v0"], ["y"], body=body)], [], [y],
      [const_i64("n", 1 << 62), numpy_helper.from_array(np.array(True), "t"), numpy_helper.from_array(np.array([0], np.float32), "v0")])
# Subgraphs nested 40 deep (If inside If ...). Protobuf's Python runtime
# refuses to build that depth, so the wire bytes are written by hand.
def varint(n):
    b = bytearray()
    while True:
        b.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(b)


def field(num, payload):  # a length-delimited field
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def if_graph(name, inner_graph_bytes):
    attr = field(1, b"then_branch") + varint(20 << 3) + varint(5) + field(6, inner_graph_bytes)
    attr2 = field(1, b"else_branch") + varint(20 << 3) + varint(5) + field(6, leaf.SerializeToString())
    node = field(1, b"cond") + field(2, b"z") + field(4, b"If") + field(5, attr) + field(5, attr2)
    out = vi("z", F, None).SerializeToString()
    return field(1, node) + field(2, name.encode()) + field(12, out)


leaf = helper.make_graph([helper.make_node("Identity", ["x"], ["z"])], "leaf", [], [vi("z", F, None)])
g_bytes = leaf.SerializeToString()
for k in range(40):
    g_bytes = if_graph(f"lvl{k}", g_bytes)
top = helper.make_model(helper.make_graph([], "if_nested_40", [vi("cond", TensorProto.BOOL, []), vi("x", F, [1])], []),
                        opset_imports=[helper.make_opsetid("", 18)])
top.ir_version = 9
# The main graph's own node list: one If whose then_branch is the 40-deep chain, output y.
main = if_graph("if_nested_40", g_bytes).replace(field(2, b"z"), field(2, b"y"), 1)
main += field(11, vi("cond", TensorProto.BOOL, []).SerializeToString()) + field(11, vi("x", F, [1]).SerializeToString())
main = main.replace(field(12, vi("z", F, None).SerializeToString()), field(12, y.SerializeToString()))
model_bytes = varint(1 << 3) + varint(9) + field(8, helper.make_opsetid("", 18).SerializeToString()) + field(7, main)
open(os.path.join(out, "if_nested_40.onnx"), "wb").write(model_bytes)
# A model-local function that calls itself.
rec = helper.make_function("local", "Rec", ["a"], ["b"], [helper.make_node("Rec", ["a"], ["b"], domain="local")],
                           [helper.make_opsetid("", 18), helper.make_opsetid("local", 1)])
g = helper.make_graph([helper.make_node("Rec", ["x"], ["y"], domain="local")], "recursive_function", [vi("x", F, [2])], [y])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)], functions=[rec])
m.ir_version = 9
open(os.path.join(out, "recursive_function.onnx"), "wb").write(m.SerializeToString())
# Indices out of range.
model("gather_oob", [helper.make_node("Gather", ["x", "i"], ["y"])], [vi("x", F, [3, 2])], [y], [const_i64("i", [0, 7])])
model("gather_elements_oob", [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)], [vi("x", F, [2, 2])], [y],
      [const_i64("i", [[0, 5], [1, -9]])])
model("gathernd_oob", [helper.make_node("GatherND", ["x", "i"], ["y"])], [vi("x", F, [2, 2])], [y], [const_i64("i", [[0, 9]])])
model("scatternd_oob", [helper.make_node("ScatterND", ["x", "i", "u"], ["y"])], [vi("x", F, [4])], [y],
      [const_i64("i", [[12]]), numpy_helper.from_array(np.array([1], np.float32), "u")])
model("scatter_elements_oob", [helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=0)], [vi("x", F, [3])], [y],
      [const_i64("i", [4]), numpy_helper.from_array(np.array([1], np.float32), "u")])
model("onehot_huge_depth", [helper.make_node("OneHot", ["i", "d", "v"], ["y"])], [], [y],
      [const_i64("i", [1, 2]), const_i64("d", [1 << 40]), numpy_helper.from_array(np.array([0, 1], np.float32), "v")])
# ai.onnx.ml ArrayFeatureExtractor with a column past the end.
m = model("array_feature_extractor_oob", [helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], domain="ai.onnx.ml")],
          [vi("x", F, [2, 3])], [y], [const_i64("i", [1, 7])])
m.opset_import.append(helper.make_opsetid("ai.onnx.ml", 3))
open(os.path.join(out, "array_feature_extractor_oob.onnx"), "wb").write(m.SerializeToString())
# Shapes that cannot broadcast (only known once the inputs arrive: the declared dims are symbolic).
model("add_not_broadcastable", [helper.make_node("Add", ["a", "b"], ["y"])], [vi("a", F, ["n"]), vi("b", F, ["m"])], [y],
      [numpy_helper.from_array(np.ones(3, np.float32), "a"), numpy_helper.from_array(np.ones(4, np.float32), "b")])
# Sub-byte packing: an int4 tensor of 5 elements needs 3 bytes of raw_data, not 7.
w4 = TensorProto()
w4.name, w4.data_type = "w", TensorProto.INT4
w4.dims.extend([5])
w4.raw_data = bytes(7)
model("int4_raw_data_size", [helper.make_node("Cast", ["w"], ["y"], to=F)], [], [y], [w4], opset=21)
# Attributes that disagree with tensors.
model("conv_strides_wrong_length", [helper.make_node("Conv", ["x", "w"], ["y"], strides=[1, 1, 1])],
      [vi("x", F, [1, 1, 4, 4])], [y], [numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "w")])
model("conv_kernel_shape_mismatch", [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[5, 5])],
      [vi("x", F, [1, 1, 4, 4])], [y], [numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "w")])
model("conv_pads_wrong_length", [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1])],
      [vi("x", F, [1, 1, 4, 4])], [y], [numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "w")])
model("conv_dilations_huge", [helper.make_node("Conv", ["x", "w"], ["y"], dilations=[1 << 50, 1])],
      [vi("x", F, [1, 1, 4, 4])], [y], [numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "w")])
model("split_num_outputs_mismatch", [helper.make_node("Split", ["x"], ["y", "z"], axis=0, num_outputs=5)],
      [vi("x", F, [4])], [y, vi("z", F, None)])
model("reshape_negative_twice", [helper.make_node("Reshape", ["x", "s"], ["y"])], [vi("x", F, [4])], [y], [const_i64("s", [-1, -1])])
model("transpose_bad_perm", [helper.make_node("Transpose", ["x"], ["y"], perm=[0, 0])], [vi("x", F, [2, 3])], [y])
model("axis_out_of_range", [helper.make_node("Softmax", ["x"], ["y"], axis=9)], [vi("x", F, [2, 3])], [y])
# External data outside the model folder.
for name, location in [("external_dotdot", "../../etc/passwd"), ("external_absolute", "/etc/passwd"),
                       ("external_sneaky", "sub/../../x.bin")]:
    w = TensorProto()
    w.name = "w"
    w.data_type = F
    w.dims.extend([4])
    w.data_location = TensorProto.EXTERNAL
    e = w.external_data.add()
    e.key, e.value = "location", location
    model(name, [helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", F, [4])], [y], [w])
# Truncated and corrupt files.
whole = open(os.path.join(out, "gather_oob.onnx"), "rb").read()
open(os.path.join(out, "truncated.onnx"), "wb").write(whole[: len(whole) // 2])
open(os.path.join(out, "not_a_model.onnx"), "wb").write(b"\x89PNG\r\n\x1a\n" + bytes(200))
open(os.path.join(out, "empty.onnx"), "wb").write(b"")
# The CPU engine's own operators (domain onnxscope.cpu) written into a model,
# with a channel count whose ceil(channels / block) overflowed int64.
for name, op, extra in [("internal_from_nchwc_channels_huge", "FromNchwc", {}),
                        ("internal_nchwc_pool_channels_huge", "NchwcPool", {"block": 16, "op": "GlobalAveragePool"})]:
    model(name, [helper.make_node(op, ["x"], ["y"], domain="onnxscope.cpu", channels=(1 << 63) - 1, **extra)],
          [vi("x", F, [1, 1, 2, 2, 16])], [y], domains=["onnxscope.cpu"])
# A grouped NchwcConv (groups of 2 channels, kernels/nn/grouped_conv_nchwc.cpp)
# whose group count overflows the channel count, and one whose dilation puts
# the window far past the input.
wg = helper.make_tensor("w", F, [16, 2, 3, 3], [0.5] * 288)
for name, attrs in [("internal_nchwc_conv_group_huge", {"group": 1 << 62}),
                    ("internal_nchwc_conv_dilation_huge", {"group": 8, "dilations": [1 << 40, 1 << 40]})]:
    model(name, [helper.make_node("NchwcConv", ["x", "w"], ["y"], domain="onnxscope.cpu", block=16, **attrs)],
          [vi("x", F, [1, 1, 4, 4, 16])], [y], [wg], domains=["onnxscope.cpu"])
# A declared dim product that overflows 64 bits.
model("input_dims_overflow", [helper.make_node("Identity", ["x"], ["y"])], [vi("x", F, [1 << 40, 1 << 40, 1 << 40])], [y])
print(f"wrote hostile models to {out}")
