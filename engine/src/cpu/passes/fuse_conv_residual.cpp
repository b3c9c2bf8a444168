// Conv(X, W, [B]) + Z [-> Relu] -> FusedConv(X, W, B, Z) with activation
// "Relu" or none (contract in fused_ops.h): a residual connection added by
// the convolution's own epilogue, so the sum is not written and read back by
// a separate Add. Devices only (the CPU engine's blocked layout has its own
// sum input). Float32; the Conv's output and the Add's (when a Relu follows)
// must have no other reader and not be graph outputs. The Add keeps its
// meaning, broadcasting included: the fused node computes Add(Conv, Z). Its
// place is the last replaced node's, where Z is available.
#include "cpu/fused_ops.h"
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {

bool fuse_conv_residual(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0, with_relu = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& add = g.nodes[i];
    if (remove[i] || !is_two_input_add(add) || add.inputs[0] == add.inputs[1] || elem_type(g, add.outputs[0]) != DataType::Float) continue;
    for (int side = 0; side < 2; ++side) {
      const std::string& y = add.inputs[static_cast<size_t>(side)];
      const std::string& z = add.inputs[static_cast<size_t>(1 - side)];
      const int ci = idx.producer_index(y);
      if (ci < 0 || remove[static_cast<size_t>(ci)] || !idx.only_read_by(y, i)) continue;
      const Node& conv = g.nodes[static_cast<size_t>(ci)];
      if (!is_op(conv, "Conv") || conv.inputs.size() < 2 || conv.inputs.size() > 3 || conv.outputs.size() != 1) continue;
      if (elem_type(g, z) != DataType::Float) continue;
      std::vector<const Node*> chain = {&conv, &add};
      std::string out = add.outputs[0];
      const Node* relu = idx.sole_reader(g, out, "Relu");  // nothing else reads the sum
      if (relu) {
        chain.push_back(relu);
        out = relu->outputs[0];
      }
      Node f;
      f.name = unique_node_name(g, (conv.name.empty() ? std::string("Conv") : conv.name) + "_residual");
      f.op_type = kFusedConv;
      f.domain = kCpuDomain;
      f.inputs = conv.inputs;
      f.inputs.resize(3);  // an absent bias stays "" before Z
      f.inputs.push_back(z);
      f.outputs = {out};
      f.attributes = conv.attributes;
      f.attributes.push_back(make_attr_string("activation", relu ? "Relu" : ""));
      if (!replace_chain(ctx, g, remove, chain, std::move(f))) continue;
      ++fused;
      with_relu += relu != nullptr;
      break;
    }
  }
  erase_nodes(g, remove);
  if (fused) {
    add_cpu_opset(model);
    log_pass(ctx, model, "fuse-conv-residual: " + std::to_string(fused) + " Conv + Add (" + std::to_string(with_relu) +
                             " with a Relu) -> FusedConv with a sum input");
  }
  return fused > 0;
}

}  // namespace onnxscope::cpu
