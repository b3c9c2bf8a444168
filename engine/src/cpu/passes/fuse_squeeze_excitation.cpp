// The squeeze-excitation block of MobileNetV3, EfficientNet and RegNetY, on
// the blocked layout nchwc-layout made (it runs right after that pass):
//   P = NchwcPool(Xb, op=GlobalAveragePool)
//   H = NchwcConv(P, W1, [B1])   1x1, activation a (Relu, Swish, ...)
//   S = NchwcConv(H, W2, [B2])   1x1, activation g (Sigmoid, HardSigmoid, ...)
//   Y = Mul(Xb, S)               (either operand order)
// -> NchwcSqueezeExcite(Xb, W1, B1, W2, B2) (contract in cpu/nchwc.h). At
// batch 1 the two convolutions are matrix-vector products of a few thousand
// multiply-adds each, which oneDNN spends microseconds per call setting up;
// one kernel does the pooling, both products and the scaling. P, H and S must
// have no other reader, the convolutions be 1x1 without padding, groups, a
// sum input or a plain input, and the channel counts agree.
#include "cpu/fused_ops.h"
#include "cpu/nchwc.h"
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

bool one_by_one(const Model& m, const Node& c, int64_t in_channels, int64_t* out_channels) {
  if (c.op_type != kNchwcConv || c.domain != kCpuDomain || c.inputs.size() < 2 || c.inputs.size() > 3 ||
      c.outputs.size() != 1)
    return false;
  const Tensor* w = constant_tensor(m, c.inputs[1]);
  if (!w || w->dtype() != DataType::Float || w->rank() != 4 || w->shape()[1] != in_channels || w->shape()[2] != 1 ||
      w->shape()[3] != 1)
    return false;
  if (c.inputs.size() == 3 && !c.inputs[2].empty()) {
    const Tensor* b = constant_tensor(m, c.inputs[2]);
    if (!b || b->dtype() != DataType::Float || b->rank() != 1 || b->shape()[0] != w->shape()[0]) return false;
  }
  for (const Attribute& a : c.attributes) {
    const bool ones = a.name == "strides" || a.name == "dilations";
    if ((ones || a.name == "pads") && a.type == AttrType::Ints)
      for (int64_t v : a.ints)
        if (v != (ones ? 1 : 0)) return false;
    if (a.name == "group" && a.i != 1) return false;
    if (a.name == "plain_input" && a.i != 0) return false;
    if (a.name == "auto_pad" && !a.s.empty() && a.s != "NOTSET" && a.s != "VALID") return false;
    if (a.name == "kernel_shape" && a.ints != std::vector<int64_t>{1, 1}) return false;
  }
  *out_channels = w->shape()[0];
  return true;
}

// The activation attributes a convolution carries, renamed for the fused node.
void copy_activation(const Node& conv, const char* name, Node& to) {
  for (const Attribute& a : conv.attributes) {
    if (a.name == "activation" && !a.s.empty()) to.attributes.push_back(make_attr_string(name, a.s));
    if (a.name == "activation_params") to.attributes.push_back(make_attr_floats(std::string(name) + "_params", a.floats));
  }
}

}  // namespace

bool fuse_squeeze_excitation(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  const GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mul = g.nodes[i];
    if (!is_op(mul, "Mul") || mul.inputs.size() != 2 || mul.outputs.size() != 1 || mul.outputs[0].empty() ||
        mul.inputs[0] == mul.inputs[1])
      continue;
    for (int side = 0; side < 2; ++side) {
      const std::string& s = mul.inputs[static_cast<size_t>(side)];
      const std::string& x = mul.inputs[static_cast<size_t>(1 - side)];
      const Node* gate = idx.producer_of(g, s);
      if (!gate || !idx.only_read_by(s, i) || gate->inputs.empty()) continue;
      const int hi = idx.producer_index(gate->inputs[0]);
      if (hi < 0 || !idx.only_read_by(gate->inputs[0], static_cast<size_t>(idx.producer_index(s)))) continue;
      const Node& squeeze = g.nodes[static_cast<size_t>(hi)];
      if (squeeze.inputs.empty()) continue;
      const int pi = idx.producer_index(squeeze.inputs[0]);
      if (pi < 0 || !idx.only_read_by(squeeze.inputs[0], static_cast<size_t>(hi))) continue;
      const Node& pool = g.nodes[static_cast<size_t>(pi)];
      const Attribute* op = pool.attribute("op");
      const Attribute* channels = pool.attribute("channels");
      const Attribute* block = pool.attribute("block");
      if (pool.op_type != kNchwcPool || pool.domain != kCpuDomain || pool.inputs.size() != 1 || pool.inputs[0] != x ||
          !op || op->s != "GlobalAveragePool" || !channels || !block)
        continue;
      int64_t reduced = 0, back = 0;
      if (!one_by_one(model, squeeze, channels->i, &reduced) || !one_by_one(model, *gate, reduced, &back) ||
          back != channels->i)
        continue;
      Node f;
      f.name = unique_node_name(g, (pool.name.empty() ? std::string("SqueezeExcite") : pool.name) + "_se");
      f.op_type = kNchwcSqueezeExcite;
      f.domain = kCpuDomain;
      f.inputs = {x, squeeze.inputs[1], squeeze.inputs.size() > 2 ? squeeze.inputs[2] : "", gate->inputs[1],
                  gate->inputs.size() > 2 ? gate->inputs[2] : ""};
      f.outputs = {mul.outputs[0]};
      f.attributes.push_back(make_attr_int("channels", channels->i));
      f.attributes.push_back(make_attr_int("block", block->i));
      copy_activation(squeeze, "activation", f);
      copy_activation(*gate, "gate", f);
      if (!replace_chain(ctx, g, remove, {&pool, &squeeze, gate, &mul}, std::move(f))) continue;
      ++fused;
      break;
    }
  }
  erase_nodes(g, remove);
  if (fused) log_pass(ctx, model, "fuse-squeeze-excitation: " + std::to_string(fused) + " squeeze-excitation blocks -> NchwcSqueezeExcite");
  return fused > 0;
}

}  // namespace onnxscope::cpu
