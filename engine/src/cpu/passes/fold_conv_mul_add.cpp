// Conv followed by a per-output-channel Mul or Add/Sub of a constant -> one
// Conv: Y * s = Conv(X, W * s, B * s) and Y + d = Conv(X, W, B + d), with s and
// d constant float tensors that vary along the channel axis only ([C,1,1],
// [1,C,1,1], [1], a scalar...). Exporters write batch normalization this way
// (Inception v2, DenseNet), and ONNX Runtime folds it the same way. Needs
// float Conv weights (and bias) that are constants and a Conv output read by
// that one node only. New weights are new initializers (the originals may be
// shared).
#include <cstring>

#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

Tensor float_tensor(Shape shape) { return Tensor::zeros(DataType::Float, std::move(shape)); }

}  // namespace

bool fold_conv_mul_add(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& op = g.nodes[i];
    const bool mul = is_op(op, "Mul"), add = is_op(op, "Add"), sub = is_op(op, "Sub");
    if (!(mul || add || sub) || op.inputs.size() != 2 || op.outputs.size() != 1 || op.outputs[0].empty()) continue;
    for (size_t k = 0; k < 2; ++k) {
      if (sub && k == 1) break;  // d - Y is not Conv + bias
      const int ci = idx.producer_index(op.inputs[k]);
      if (ci < 0 || remove[static_cast<size_t>(ci)] || op.inputs[0] == op.inputs[1]) continue;
      const Node& conv = g.nodes[static_cast<size_t>(ci)];
      if (!is_op(conv, "Conv") || conv.outputs.size() != 1 || conv.inputs.size() < 2 || !idx.only_read_by(conv.outputs[0], i))
        continue;
      const Tensor* w = constant_tensor(model, conv.inputs[1]);
      const bool has_b = conv.inputs.size() > 2 && !conv.inputs[2].empty();
      const Tensor* b = has_b ? constant_tensor(model, conv.inputs[2]) : nullptr;
      if (!w || w->dtype() != DataType::Float || w->rank() < 3 || (has_b && (!b || b->dtype() != DataType::Float))) continue;
      const int64_t channels = w->shape()[0];
      if (b && b->element_count() != static_cast<uint64_t>(channels)) continue;
      auto factor = per_channel(constant_tensor(model, op.inputs[1 - k]), static_cast<size_t>(w->rank()), channels);
      if (!factor || !ctx.allow(op.name)) continue;
      std::vector<float> bias(static_cast<size_t>(channels), 0.f);
      if (b) std::memcpy(bias.data(), b->raw(), bias.size() * sizeof(float));
      const std::string base = conv.name.empty() ? "conv" : conv.name;
      std::string w_name = conv.inputs[1];
      if (mul) {
        const uint64_t per_c = w->element_count() / static_cast<uint64_t>(channels);
        Tensor nw = float_tensor(w->shape());
        const float* src = w->data<float>();
        float* dst = nw.mutable_data<float>();
        for (int64_t c = 0; c < channels; ++c)
          for (uint64_t e = 0; e < per_c; ++e)
            dst[static_cast<uint64_t>(c) * per_c + e] = src[static_cast<uint64_t>(c) * per_c + e] * (*factor)[static_cast<size_t>(c)];
        for (int64_t c = 0; c < channels; ++c) bias[static_cast<size_t>(c)] *= (*factor)[static_cast<size_t>(c)];
        w_name = unique_value_name(g, base + "_W_mul");
        g.initializers.push_back({w_name, std::move(nw), {}});
      } else {
        for (int64_t c = 0; c < channels; ++c)
          bias[static_cast<size_t>(c)] += (sub ? -1.f : 1.f) * (*factor)[static_cast<size_t>(c)];
      }
      std::string b_name;
      if (b || !mul) {  // Mul of a Conv without bias keeps none
        b_name = unique_value_name(g, base + (mul ? "_B_mul" : "_B_add"));
        Tensor nb = float_tensor({channels});
        std::memcpy(nb.mutable_raw(), bias.data(), bias.size() * sizeof(float));
        g.initializers.push_back({b_name, std::move(nb), {}});
      }
      Node& c = g.nodes[static_cast<size_t>(ci)];  // (initializer pushes do not move nodes)
      c.inputs.resize(b_name.empty() ? 2 : 3);
      c.inputs[1] = w_name;
      if (!b_name.empty()) c.inputs[2] = b_name;
      c.outputs[0] = g.nodes[i].outputs[0];
      set_fused_from(c, {&c, &g.nodes[i]});
      remove[i] = true;
      ++folded;
      break;
    }
  }
  erase_nodes(g, remove);
  if (folded) log_pass(ctx, model, "fold-conv-mul-add: folded " + std::to_string(folded) + " Mul/Add/Sub nodes");
  return folded > 0;
}

}  // namespace onnxscope::cpu
