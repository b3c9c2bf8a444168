// Blocked activations between convolutions (layout in cpu/nchwc.h):
//   Conv / FusedConv with constant float 4-D weights, group 1, depthwise,
//   groups of whole 8-channel blocks, or (block 16 on AVX-512) groups of 2 or
//   4 channels in and out
//     -> NchwcConv, reading the blocked form of its input (a ToNchwc is
//        inserted once per plain value; an input with fewer channels than a
//        block, like an RGB image, is read plain) and writing a blocked output
//        (a depthwise Conv of a plain value stays plain: its own kernel is
//        cheaper than the reorder in front of it);
//   Add / Sub / Mul of two blocked values with the same channel count, and
//   Relu / LeakyRelu / Clip (with min <= 0 <= max) of a blocked value
//     -> the same op on the blocked values (elementwise, and zero stays zero
//        in the padded channels);
//   an Add of an NchwcConv's output (read by nothing else, the convolution
//   without an activation) and another blocked value computed before it
//     -> that NchwcConv with the other value as its `sum` input (oneDNN's sum
//        post-op: the residual connection), and a Relu/LeakyRelu/Clip right
//        after it (only reader) -> that NchwcConv's activation;
//   MaxPool (without Indices) / AveragePool / GlobalMaxPool / GlobalAveragePool
//   of a blocked value, and ReduceMean over its two spatial axes with keepdims
//   -> NchwcPool (the mean as GlobalAveragePool);
//   an inference BatchNormalization of a blocked value with constant float
//   parameters -> NchwcScaleShift (per-channel x * s + t, s and t padded with
//   zeros), and a Relu right after it (only reader) -> its activation; of a
//   blocked Concat read by nothing else -> one NchwcScaleShift of the
//   Concat's pieces;
//   Concat along channels of blocked values, all but the last a whole number
//   of blocks -> Concat of the blocked tensors along their block axis (the
//   blocks line up; the last input's padding ends the result's);
//   any other reader, a graph output or a subgraph capture of a blocked value
//     -> a FromNchwc that restores the original value (name included), once,
//        just before its first plain reader.
// Runs once, after the fusion passes have reached their fixed point.
#include <algorithm>
#include <cmath>
#include <functional>

#include "core/cpu_features.h"
#include "cpu/fused_ops.h"
#include "cpu/nchwc.h"
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

bool is_conv(const Node& n) {
  return (n.op_type == "Conv" && (n.domain.empty() || n.domain == "ai.onnx")) ||
         (n.op_type == kFusedConv && n.domain == kCpuDomain);
}

// Channel counts of a convertible convolution, or nullopt.
struct ConvShape {
  int64_t in_channels = 0, out_channels = 0;
  bool depthwise = false;
};
std::optional<ConvShape> convertible(const Model& m, const Node& n) {
  if (!is_conv(n) || n.inputs.size() < 2 || n.inputs.size() > 3 || n.outputs.size() != 1 || n.outputs[0].empty())
    return std::nullopt;  // (a FusedConv's sum input is the devices')
  const Tensor* w = constant_tensor(m, n.inputs[1]);
  if (!w || w->dtype() != DataType::Float || w->shape().size() != 4) return std::nullopt;
  // X has W's type in a valid model: float, whether or not its type is recorded.
  if (n.inputs.size() > 2 && !n.inputs[2].empty() && !constant_tensor(m, n.inputs[2])) return std::nullopt;
  int64_t group = 1;
  if (const Attribute* a = n.attribute("group")) group = a->i;
  ConvShape s;
  s.out_channels = w->shape()[0];
  if (group < 1 || __builtin_mul_overflow(w->shape()[1], group, &s.in_channels)) return std::nullopt;  // the kernel says why
  s.depthwise = group > 1 && group == s.out_channels && w->shape()[1] == 1;
  // Other groups in whole 8-channel blocks (RegNet's 3x3 convolutions):
  // oneDNN's blocked kernels take those. Groups of 2 or 4 channels in and
  // out (ResNeXt-50's first stage) where the block is 16 on AVX-512:
  // kernels/nn/grouped_conv_nchwc.cpp takes those (and 8 in and out), where
  // only oneDNN's reference kernel would.
  const bool own_grouped = nchwc_block() == 16 && ONNXSCOPE_CPU_AVX512("avx512f") &&
                           (w->shape()[1] == 2 || w->shape()[1] == 4) && s.out_channels == s.in_channels;
  if (group != 1 && !s.depthwise && !own_grouped && (w->shape()[1] % 8 != 0 || s.out_channels % (group * 8) != 0))
    return std::nullopt;
  if (s.out_channels < 1 || s.in_channels < 1) return std::nullopt;
  return s;
}

bool zero_preserving_unary(const Model& m, const Node& n) {
  if (n.inputs.size() < 1 || n.outputs.size() != 1) return false;
  if (is_op(n, "Relu") || is_op(n, "LeakyRelu")) return n.inputs.size() == 1;
  if (!is_op(n, "Clip")) return false;
  // Opset 11+: bounds as inputs; they must be constants around 0.
  auto bound = [&](size_t i, double none) -> std::optional<double> {
    if (i >= n.inputs.size() || n.inputs[i].empty()) return none;
    return scalar_constant(m, n.inputs[i]);
  };
  if (const Attribute* a = n.attribute("min")) return a->f <= 0 && (!n.attribute("max") || n.attribute("max")->f >= 0);
  auto lo = bound(1, -1), hi = bound(2, 1);
  return lo && hi && *lo <= 0 && *hi >= 0;
}

// The pooling NchwcPool would compute for `n`, or "" (input: a blocked 4-D value).
std::string pooling_of(const Model& m, const Node& n) {
  if (n.inputs.size() != 1 && !is_op(n, "ReduceMean")) return {};
  if (n.inputs.empty() || n.outputs.empty() || n.outputs[0].empty()) return {};
  for (const char* op : {"AveragePool", "GlobalMaxPool", "GlobalAveragePool"})
    if (is_op(n, op) && n.outputs.size() == 1) return op;
  if (is_op(n, "MaxPool") && (n.outputs.size() == 1 || n.outputs[1].empty())) return "MaxPool";
  if (!is_op(n, "ReduceMean") || n.outputs.size() != 1) return {};
  if (const Attribute* k = n.attribute("keepdims"); k && k->i == 0) return {};
  std::vector<int64_t> axes;
  if (const Attribute* a = n.attribute("axes")) {
    axes = a->ints;
  } else {
    if (n.inputs.size() != 2) return {};
    const Tensor* t = constant_tensor(m, n.inputs[1]);
    if (!t || t->dtype() != DataType::Int64) return {};
    axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->element_count());
  }
  for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
  std::sort(axes.begin(), axes.end());
  return axes == std::vector<int64_t>{2, 3} ? "GlobalAveragePool" : "";
}

// An inference BatchNormalization as per-channel scale and shift; nullopt
// when it is not one (training mode, running statistics wanted, non-constant
// or non-float parameters).
std::optional<std::pair<std::vector<float>, std::vector<float>>> bn_scale_shift(const Model& m, const Node& bn,
                                                                               int64_t channels) {
  if (bn.inputs.size() != 5 || bn.outputs.empty() || bn.outputs[0].empty()) return std::nullopt;
  for (size_t k = 1; k < bn.outputs.size(); ++k)
    if (!bn.outputs[k].empty()) return std::nullopt;
  if (const Attribute* a = bn.attribute("training_mode"); a && a->i != 0) return std::nullopt;
  if (m.opset_version("") < 9)
    if (const Attribute* a = bn.attribute("spatial"); a && a->i == 0) return std::nullopt;
  const Tensor* p[4];
  for (size_t k = 0; k < 4; ++k) {
    p[k] = constant_tensor(m, bn.inputs[k + 1]);
    if (!p[k] || p[k]->dtype() != DataType::Float || p[k]->element_count() != static_cast<uint64_t>(channels))
      return std::nullopt;
  }
  const Attribute* eps_attr = bn.attribute("epsilon");
  const double eps = eps_attr ? eps_attr->f : 1e-5f;
  std::vector<float> s(static_cast<size_t>(channels)), t(static_cast<size_t>(channels));
  for (size_t c = 0; c < s.size(); ++c) {
    const double k = p[0]->data<float>()[c] / std::sqrt(static_cast<double>(p[3]->data<float>()[c]) + eps);
    s[c] = static_cast<float>(k);
    t[c] = static_cast<float>(p[1]->data<float>()[c] - p[2]->data<float>()[c] * k);
  }
  return std::make_pair(std::move(s), std::move(t));
}

// A Mul / Add / Sub of a value and a per-channel float constant, as scale and
// shift of that value (its name first); nullopt otherwise.
std::optional<std::pair<std::string, std::pair<std::vector<float>, std::vector<float>>>> affine_of(
    const Model& m, const Node& n, const std::function<int64_t(const std::string&)>& channels_of) {
  const bool mul = is_op(n, "Mul"), add = is_op(n, "Add"), sub = is_op(n, "Sub");
  if (!(mul || add || sub) || n.inputs.size() != 2 || n.outputs.size() != 1 || n.outputs[0].empty()) return std::nullopt;
  for (size_t k = 0; k < 2; ++k) {
    if (sub && k == 1) break;  // c - x is not x * s + t with s = 1
    const int64_t channels = channels_of(n.inputs[k]);
    if (channels <= 0 || n.inputs[0] == n.inputs[1]) continue;
    auto c = per_channel(constant_tensor(m, n.inputs[1 - k]), 4, channels);
    if (!c) continue;
    std::vector<float> s(c->size(), 1.f), t(c->size(), 0.f);
    if (mul) s = *c;
    else
      for (size_t i = 0; i < c->size(); ++i) t[i] = sub ? -(*c)[i] : (*c)[i];
    return std::make_pair(n.inputs[k], std::make_pair(std::move(s), std::move(t)));
  }
  return std::nullopt;
}

bool binary_elementwise(const Node& n) {
  return (is_op(n, "Add") || is_op(n, "Sum") || is_op(n, "Sub") || is_op(n, "Mul")) && n.inputs.size() == 2 &&
         n.outputs.size() == 1;
}

}  // namespace

bool nchwc_layout(Model& model, PassContext& ctx) {
  const int64_t block = nchwc_block();
  if (block == 0) return false;
  Graph& g = model.graph;
  const Node* first = nullptr;
  for (const Node& n : g.nodes)
    if (!first && convertible(model, n)) first = &n;
  // One rewrite for bisect-passes: the layout of every convolution at once.
  if (!first || !ctx.allow(first->name)) return false;

  struct Blocked {
    std::string name;  // the blocked value
    int64_t channels = 0;
  };
  std::unordered_map<std::string, Blocked> blocked;  // plain name -> its blocked form
  std::set<std::string> plain_missing;                // produced only blocked so far
  std::vector<Node> out;
  out.reserve(g.nodes.size() + 16);
  const GraphIndex idx(g);  // readers of the original values
  auto private_value = [&](const std::string& v) {
    return idx.reader_count(v) == 1 && !idx.graph_outputs.count(v) && !idx.subgraph_reads.count(v);
  };
  std::unordered_map<std::string, size_t> made_at;  // blocked value -> index in `out` of its producer
  std::set<size_t> with_sum;                         // NchwcConv nodes (in `out`) that took a residual
  size_t convs = 0, reorders = 0;

  FreshNames fresh(g);  // taken up front: nodes move out of g.nodes as the new list grows
  auto blocked_name = [&](const std::string& plain) { return fresh(plain + "_nchwc"); };
  auto materialize = [&](const std::string& plain) {  // FromNchwc before the first plain reader
    if (!plain_missing.count(plain)) return;
    Node f;
    f.name = fresh(plain + "_FromNchwc");
    f.domain = kCpuDomain;
    f.op_type = kFromNchwc;
    f.inputs = {blocked[plain].name};
    f.outputs = {plain};
    f.attributes.push_back(make_attr_int("channels", blocked[plain].channels));
    out.push_back(std::move(f));
    plain_missing.erase(plain);
    ++reorders;
  };

  auto conv_without_activation = [&](const Node& c) {
    const Attribute* a = c.attribute("activation");
    return c.op_type == kNchwcConv && (!a || a->s.empty());
  };
  // Add(conv_out, r) -> the convolution adds r itself (sum post-op).
  auto fold_residual = [&](const Node& add) {
    for (int k = 0; k < 2; ++k) {
      const std::string& y = add.inputs[static_cast<size_t>(k)];
      const std::string& r = add.inputs[static_cast<size_t>(1 - k)];
      auto at = made_at.find(blocked[y].name);
      if (at == made_at.end() || !private_value(y) || !plain_missing.count(y)) continue;
      size_t ci = at->second;
      if (!conv_without_activation(out[ci]) || with_sum.count(ci)) continue;
      if (const Attribute* s = out[ci].attribute("strides"))  // the oneDNN kernel adds a residual only at stride 1
        if (std::any_of(s->ints.begin(), s->ints.end(), [](int64_t v) { return v != 1; })) continue;
      auto r_at = made_at.find(blocked[r].name);
      if (r_at == made_at.end() || r_at->second == ci) continue;
      if (r_at->second > ci) {
        // r is made after the convolution (a downsampling shortcut computed
        // second): run the convolution right after r instead. Its only
        // reader is this Add, which comes later still.
        const size_t from = ci, to = r_at->second;
        Node moved = std::move(out[from]);
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(from));
        out.insert(out.begin() + static_cast<std::ptrdiff_t>(to), std::move(moved));
        for (auto& [name, index] : made_at)
          if (index > from && index <= to) --index;
        std::set<size_t> shifted;
        for (size_t w : with_sum) shifted.insert(w > from && w <= to ? w - 1 : w);
        with_sum = std::move(shifted);
        made_at[out[to].outputs[0]] = to;
        ci = to;
      }
      Node& c = out[ci];
      if (c.inputs.size() < 3) c.inputs.resize(3);
      c.inputs.push_back(blocked[r].name);
      set_fused_from(c, {&c, &add});
      with_sum.insert(ci);
      plain_missing.erase(y);
      blocked.erase(y);
      blocked[add.outputs[0]] = {c.outputs[0], blocked[r].channels};
      plain_missing.insert(add.outputs[0]);
      return true;
    }
    return false;
  };
  // The blocked value of x, whose producer now computes y instead, is y's.
  auto take_over = [&](const std::string& x, const std::string& y) {
    blocked[y] = blocked[x];
    blocked.erase(x);
    plain_missing.erase(x);
    plain_missing.insert(y);
  };
  // Relu(conv_with_sum) -> the convolution's activation (applied after the sum).
  // Relu(scale_shift) -> the scale-shift's activation (DenseNet's batch norm + Relu before each conv).
  auto fold_activation = [&](const Node& act) {
    const std::string& y = act.inputs[0];
    auto at = made_at.find(blocked[y].name);
    if (at == made_at.end() || !private_value(y) || !plain_missing.count(y)) return false;
    Node& c = out[at->second];
    const bool scale_shift_relu = c.op_type == kNchwcScaleShift && !c.attribute("activation") && is_op(act, "Relu");
    const bool conv_act = with_sum.count(at->second) && conv_without_activation(c) &&
                          (is_op(act, "Relu") || is_op(act, "LeakyRelu"));
    if (!scale_shift_relu && !conv_act) return false;
    c.attributes.push_back(make_attr_string("activation", act.op_type));
    if (is_op(act, "LeakyRelu")) {
      const Attribute* alpha = act.attribute("alpha");
      c.attributes.push_back(make_attr_floats("activation_params", {alpha ? alpha->f : 0.01f}));
    }
    set_fused_from(c, {&c, &act});
    take_over(y, act.outputs[0]);
    return true;
  };

  // Appends `node`, which replaces `original` and whose output 0 is the
  // blocked form of original's value y (made plain again only if read so).
  auto emit_blocked = [&](Node node, const Node& original, const std::string& y, int64_t channels) {
    set_fused_from(node, {&original});
    blocked[y] = {node.outputs[0], channels};
    plain_missing.insert(y);
    made_at[node.outputs[0]] = out.size();
    out.push_back(std::move(node));
  };
  // y = x * s + t per channel on x's blocked form (s, t unpadded here).
  auto scale_shift = [&](const Node& n, const std::string& x, std::vector<float> s, std::vector<float> t) {
    const int64_t channels = blocked[x].channels;
    const size_t padded = static_cast<size_t>((channels + block - 1) / block * block);
    auto at = made_at.find(blocked[x].name);
    if (at != made_at.end() && out[at->second].op_type == kNchwcScaleShift && !out[at->second].attribute("activation") &&
        private_value(x) && plain_missing.count(x)) {
      // s2 * (s1 * x + t1) + t2
      Node& prev = out[at->second];
      Tensor* s1 = nullptr;
      Tensor* t1 = nullptr;
      for (auto& init : g.initializers) {
        if (init.name == prev.inputs[1]) s1 = &init.value;
        if (init.name == prev.inputs[2]) t1 = &init.value;
      }
      if (s1 && t1) {
        for (size_t c = 0; c < s.size(); ++c) {
          s1->mutable_data<float>()[c] *= s[c];
          t1->mutable_data<float>()[c] = t1->data<float>()[c] * s[c] + t[c];
        }
        set_fused_from(prev, {&prev, &n});
        take_over(x, n.outputs[0]);
        return true;
      }
    }
    Tensor st = Tensor::zeros(DataType::Float, {static_cast<int64_t>(padded)});
    Tensor tt = Tensor::zeros(DataType::Float, {static_cast<int64_t>(padded)});
    std::copy(s.begin(), s.end(), st.mutable_data<float>());
    std::copy(t.begin(), t.end(), tt.mutable_data<float>());
    const std::string base = n.name.empty() ? n.outputs[0] : n.name;
    const std::string s_name = fresh(base + "_scale"), t_name = fresh(base + "_shift");
    g.initializers.push_back({s_name, std::move(st), {}});
    g.initializers.push_back({t_name, std::move(tt), {}});
    // A blocked Concat read only here (DenseNet's torch.cat before every
    // layer's batch norm): the scale-shift reads its pieces, one pass over
    // them instead of the concatenation's write and its read.
    if (at != made_at.end() && out[at->second].op_type == "Concat" && out[at->second].inputs.size() > 1 &&
        private_value(x) && plain_missing.count(x)) {
      Node& c = out[at->second];
      std::vector<std::string> pieces = c.inputs;
      c.domain = kCpuDomain;
      c.op_type = kNchwcScaleShift;
      c.attributes.clear();
      c.inputs = {pieces[0], s_name, t_name};
      c.inputs.insert(c.inputs.end(), pieces.begin() + 1, pieces.end());
      set_fused_from(c, {&c, &n});
      take_over(x, n.outputs[0]);
      return true;
    }
    Node q;
    q.name = n.name;
    q.domain = kCpuDomain;
    q.op_type = kNchwcScaleShift;
    q.inputs = {blocked[x].name, s_name, t_name};
    const std::string y = n.outputs[0];
    q.outputs = {blocked_name(y)};
    emit_blocked(std::move(q), n, y, channels);
    return true;
  };

  for (Node& n : g.nodes) {
    auto cs = convertible(model, n);
    // A depthwise convolution of a plain value stays plain
    // (kernels/nn/depthwise_conv.cpp): a blocked chain starting there pays a
    // reorder of its input for a convolution that costs less than the reorder
    // (at stride 2, the reorder after it is of a quarter of the data).
    if (cs && cs->depthwise && !blocked.count(n.inputs[0]) && is_op(n, "Conv")) cs.reset();
    if (cs) {
      const std::string& x = n.inputs[0];
      std::string xin = x;
      bool plain_input = false;
      if (blocked.count(x)) {
        xin = blocked[x].name;
      } else if (cs->in_channels < block && !cs->depthwise) {
        plain_input = true;  // e.g. the RGB input of a first layer: read plain, write blocked
      } else {
        Node t;
        t.name = fresh(x + "_ToNchwc");
        t.domain = kCpuDomain;
        t.op_type = kToNchwc;
        t.inputs = {x};
        t.outputs = {blocked_name(x)};
        t.attributes.push_back(make_attr_int("block", block));
        blocked[x] = {t.outputs[0], cs->in_channels};
        xin = t.outputs[0];
        made_at[t.outputs[0]] = out.size();
        out.push_back(std::move(t));
        ++reorders;
      }
      Node c = n;
      c.domain = kCpuDomain;
      c.op_type = kNchwcConv;
      c.inputs[0] = xin;
      const std::string y = n.outputs[0];
      c.outputs[0] = blocked_name(y);
      c.attributes.push_back(make_attr_int("block", block));
      c.attributes.push_back(make_attr_int("plain_input", plain_input ? 1 : 0));
      emit_blocked(std::move(c), n, y, cs->out_channels);
      ++convs;
      continue;
    }
    {
      // Per-channel affine maps of a blocked value: a batch norm, or a Mul /
      // Add / Sub by a per-channel constant -> NchwcScaleShift, merged into
      // the one before it when that one's output is read only here.
      std::string x;
      std::optional<std::pair<std::vector<float>, std::vector<float>>> st;
      if (is_op(n, "BatchNormalization") && !n.inputs.empty() && blocked.count(n.inputs[0])) {
        x = n.inputs[0];
        st = bn_scale_shift(model, n, blocked[x].channels);
      } else if (auto a = affine_of(model, n, [&](const std::string& v) {
                   auto it = blocked.find(v);
                   return it == blocked.end() ? int64_t{0} : it->second.channels;
                 })) {
        x = a->first;
        st = std::move(a->second);
      }
      if (st && scale_shift(n, x, std::move(st->first), std::move(st->second))) continue;
    }
    if (is_op(n, "Concat") && n.outputs.size() == 1 && !n.outputs[0].empty() && !n.inputs.empty()) {
      const Attribute* ax = n.attribute("axis");
      const int64_t axis = ax ? ax->i : 1;
      bool ok = axis == 1 || axis == -3;
      int64_t channels = 0;
      for (size_t k = 0; ok && k < n.inputs.size(); ++k) {
        auto it = n.inputs[k].empty() ? blocked.end() : blocked.find(n.inputs[k]);
        ok = it != blocked.end() && (k + 1 == n.inputs.size() || it->second.channels % block == 0);
        if (ok) channels += it->second.channels;
      }
      if (ok) {
        Node c = n;
        for (size_t k = 0; k < n.inputs.size(); ++k) c.inputs[k] = blocked[n.inputs[k]].name;
        std::erase_if(c.attributes, [](const Attribute& a) { return a.name == "axis"; });
        c.attributes.push_back(make_attr_int("axis", 1));
        const std::string y = n.outputs[0];
        c.outputs[0] = blocked_name(y);
        emit_blocked(std::move(c), n, y, channels);
        continue;
      }
    }
    if (!n.inputs.empty() && blocked.count(n.inputs[0])) {
      if (const std::string pool = pooling_of(model, n); !pool.empty()) {
        Node q;
        q.name = n.name;
        q.domain = kCpuDomain;
        q.op_type = kNchwcPool;
        q.inputs = {blocked[n.inputs[0]].name};
        const std::string y = n.outputs[0];
        q.outputs = {blocked_name(y)};
        if (!is_op(n, "ReduceMean")) q.attributes = n.attributes;
        q.attributes.push_back(make_attr_string("op", pool));
        q.attributes.push_back(make_attr_int("channels", blocked[n.inputs[0]].channels));
        q.attributes.push_back(make_attr_int("block", block));
        emit_blocked(std::move(q), n, y, blocked[n.inputs[0]].channels);
        continue;
      }
    }
    const bool unary = zero_preserving_unary(model, n) && blocked.count(n.inputs[0]) && plain_missing.count(n.inputs[0]);
    const bool binary = binary_elementwise(n) && n.inputs[0] != n.inputs[1] && blocked.count(n.inputs[0]) &&
                        blocked.count(n.inputs[1]) && blocked[n.inputs[0]].channels == blocked[n.inputs[1]].channels;
    if (binary && is_two_input_add(n) && fold_residual(n)) continue;
    if (unary && !n.outputs[0].empty() && fold_activation(n)) continue;
    if ((unary || binary) && !n.outputs[0].empty()) {
      Node e = n;
      for (size_t i = 0; i < (binary ? 2u : 1u); ++i) e.inputs[i] = blocked[n.inputs[i]].name;
      const std::string y = n.outputs[0];
      e.outputs[0] = blocked_name(y);
      emit_blocked(std::move(e), n, y, blocked[n.inputs[0]].channels);
      continue;
    }
    for (const auto& in : n.inputs) materialize(in);
    for (const auto& in : names_read_by_subgraphs(n)) materialize(in);
    out.push_back(std::move(n));
  }
  for (const auto& o : g.outputs) materialize(o.name);
  g.nodes = std::move(out);
  add_cpu_opset(model);
  log_pass(ctx, model, "nchwc-layout: " + std::to_string(convs) + " convolutions blocked by " + std::to_string(block) +
                           ", " + std::to_string(reorders) + " reorders");
  return true;
}

}  // namespace onnxscope::cpu
