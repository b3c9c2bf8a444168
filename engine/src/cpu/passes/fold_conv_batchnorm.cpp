// Conv + BatchNormalization (inference) -> one Conv: with s = scale / sqrt(var + eps)
// per output channel, W' = W * s and B' = (B - mean) * s + bias. Needs constant
// Conv weights/bias and BN parameters, a Conv output that only the BN reads,
// and a BN in inference mode (no running statistics outputs). The folded
// weights are new initializers (the originals may be shared).
#include <cmath>
#include <cstring>

#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

bool inference_bn(const Model& m, const Node& bn) {
  if (bn.inputs.size() != 5 || bn.outputs.empty() || bn.outputs[0].empty()) return false;
  for (size_t k = 1; k < bn.outputs.size(); ++k)
    if (!bn.outputs[k].empty()) return false;
  if (const Attribute* a = bn.attribute("training_mode"); a && a->i != 0) return false;
  if (m.opset_version("") < 9)
    if (const Attribute* a = bn.attribute("spatial"); a && a->i == 0) return false;
  return true;
}

// A float/double tensor of `dtype` holding `v`.
Tensor make_tensor(DataType dtype, Shape shape, const std::vector<double>& v) {
  Tensor t = Tensor::zeros(dtype, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DataType::Float) t.mutable_data<float>()[i] = static_cast<float>(v[i]);
    else t.mutable_data<double>()[i] = v[i];
  }
  return t;
}

// out[c, ...] = in[c, ...] * s[c], rounded once to T. Byte pointers: model
// data need not be aligned.
template <typename T>
void scale_rows(const std::byte* in, std::byte* out, const std::vector<double>& s, uint64_t per_channel) {
  for (size_t c = 0; c < s.size(); ++c)
    for (uint64_t k = c * per_channel; k < (c + 1) * per_channel; ++k) {
      T v;
      std::memcpy(&v, in + k * sizeof(T), sizeof(T));
      v = static_cast<T>(static_cast<double>(v) * s[c]);
      std::memcpy(out + k * sizeof(T), &v, sizeof(T));
    }
}

}  // namespace

bool fold_conv_batchnorm(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& bn = g.nodes[i];
    if (!is_op(bn, "BatchNormalization") || !inference_bn(model, bn)) continue;
    const int ci = idx.producer_index(bn.inputs[0]);
    if (ci < 0 || remove[static_cast<size_t>(ci)]) continue;
    Node& conv = g.nodes[static_cast<size_t>(ci)];
    if (!is_op(conv, "Conv") || conv.outputs.size() != 1 || conv.inputs.size() < 2 ||
        !idx.only_read_by(conv.outputs[0], i))
      continue;
    const Tensor* w = constant_tensor(model, conv.inputs[1]);
    const bool has_b = conv.inputs.size() > 2 && !conv.inputs[2].empty();
    const Tensor* b = has_b ? constant_tensor(model, conv.inputs[2]) : nullptr;
    if (!w || (has_b && !b) || w->rank() < 3 || (w->dtype() != DataType::Float && w->dtype() != DataType::Double))
      continue;
    const auto channels = static_cast<uint64_t>(w->shape()[0]);
    const Tensor* params[4];
    bool ok = !b || (b->dtype() == w->dtype() && b->element_count() == channels);
    for (int k = 0; k < 4; ++k) {
      params[k] = constant_tensor(model, bn.inputs[static_cast<size_t>(k) + 1]);
      ok = ok && params[k] && params[k]->dtype() == w->dtype() && params[k]->element_count() == channels;
    }
    if (!ok || !ctx.allow(bn.name)) continue;
    const Attribute* eps_attr = bn.attribute("epsilon");
    const double eps = eps_attr ? eps_attr->f : 1e-5f;
    // Per channel: scale factor s and new bias.
    std::vector<double> s(channels), bias(channels);
    for (uint64_t c = 0; c < channels; ++c) {
      const double scale = params[0]->element_as_double(c), beta = params[1]->element_as_double(c);
      const double mean = params[2]->element_as_double(c), var = params[3]->element_as_double(c);
      s[c] = scale / std::sqrt(var + eps);
      bias[c] = ((b ? b->element_as_double(c) : 0.0) - mean) * s[c] + beta;
    }
    const uint64_t per_channel = channels ? w->element_count() / channels : 0;
    Tensor folded_w = Tensor::zeros(w->dtype(), w->shape());
    if (w->dtype() == DataType::Float) scale_rows<float>(w->raw(), folded_w.mutable_raw(), s, per_channel);
    else scale_rows<double>(w->raw(), folded_w.mutable_raw(), s, per_channel);
    const DataType dtype = w->dtype();  // (pointers into g.initializers die on push_back)
    const std::string base = conv.name.empty() ? "conv" : conv.name;
    const std::string w_name = unique_value_name(g, base + "_W_bn");
    g.initializers.push_back({w_name, std::move(folded_w), {}});
    const std::string b_name = unique_value_name(g, base + "_B_bn");
    g.initializers.push_back({b_name, make_tensor(dtype, {static_cast<int64_t>(channels)}, bias), {}});
    Node& c = g.nodes[static_cast<size_t>(ci)];  // (initializer pushes do not move nodes)
    c.inputs.resize(3);
    c.inputs[1] = w_name;
    c.inputs[2] = b_name;
    c.outputs[0] = g.nodes[i].outputs[0];
    set_fused_from(c, {&c, &g.nodes[i]});
    remove[i] = true;
    ++folded;
  }
  erase_nodes(g, remove);
  if (folded) log_pass(ctx, model, "fold-conv-batchnorm: folded " + std::to_string(folded) + " BatchNormalization nodes");
  return folded > 0;
}

}  // namespace onnxscope::cpu
