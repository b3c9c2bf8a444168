// Channels-last 8-bit activations between QOperator convolutions (layout in
// cpu/nhwc.h):
//   QLinearConv with constant 8-bit weights of rank 3 to 5
//     -> NhwcQLinearConv, reading the channels-last form of its input (a
//        ToNhwc is inserted once per plain value) and writing a channels-last
//        output;
//   com.microsoft QLinearAdd / QLinearMul of two channels-last values of one
//   rank, with scalar constant scales and zero points
//     -> the same op on the channels-last values (elementwise; numpy
//        broadcasting of two same-rank operands commutes with one shared
//        permutation of their axes);
//   ... and of a channels-last value and a plain one of the same known rank
//     (a squeeze-excitation gate [N, C, 1, 1]): a ToNhwc of the plain one first;
//   com.microsoft QLinearSigmoid / QLinearLeakyRelu, QuantizeLinear, and a
//   DequantizeLinear read only by such ReduceMeans (below) or by float
//   activations only quantized again (MobileNetV3's HardSwish: DQ,
//   HardSigmoid, Q; elsewhere the 8-bit value is the cheaper one to
//   reorder), of a channels-last value with constant scalar scales and zero
//   points -> the same op on it (elementwise); a float activation
//   (HardSigmoid, Sigmoid, Relu, ...) of a channels-last value likewise;
//   ReduceMean with keepdims over the two spatial axes of a channels-last
//   2-D image (a squeeze-excitation's pooling, in float between a
//   DequantizeLinear and a QuantizeLinear) -> ReduceMean over axes 1 and 2;
//   com.microsoft QLinearConcat along the channels of channels-last 2-D images
//   (plain ones of known rank 4 reordered first), constant scalar parameters
//     -> QLinearConcat along axis 3;
//   a per-channel QuantizedLookup (axis 1) of a channels-last 2-D image
//     -> the same with axis 3;
//   com.microsoft QLinearAveragePool of a channels-last 2-D image, constant
//   scalar parameters -> the same with channels_last = 1;
//   MaxPool (without Indices) of a channels-last 2-D image
//     -> NhwcMaxPool;
//   any other reader, a graph output or a subgraph capture of a channels-last
//   value -> a FromNhwc that restores the original value (name included),
//   once, just before its first plain reader.
// Only where oneDNN's int8 convolution runs (VNNI): elsewhere QLinearConv is
// the reference's, which reads NCHW. Runs once, after the fusion passes.
#include <algorithm>
#include <functional>

#include "cpu/nhwc.h"
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

bool int8_type(DataType t) { return t == DataType::Uint8 || t == DataType::Int8; }

// The rank of X for a convertible QLinearConv, or 0.
size_t conv_rank(const Model& m, const Node& n) {
  if (!is_op(n, "QLinearConv") || n.inputs.size() < 8 || n.inputs.size() > 9 || n.outputs.size() != 1 ||
      n.outputs[0].empty() || n.inputs[0].empty())
    return 0;
  const Tensor* w = constant_tensor(m, n.inputs[3]);
  if (!w || !int8_type(w->dtype()) || w->rank() < 3 || w->rank() > 5) return 0;
  return w->rank();
}

bool qlinear_binary(const Model& m, const Node& n) {
  if (n.domain != "com.microsoft" || (n.op_type != "QLinearAdd" && n.op_type != "QLinearMul")) return false;
  if (n.inputs.size() < 7 || n.inputs.size() > 8 || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  return scalar_parameter(m, n, 1, false) && scalar_parameter(m, n, 2, true) && scalar_parameter(m, n, 4, false) &&
         scalar_parameter(m, n, 5, true) && scalar_parameter(m, n, 6, false) && scalar_parameter(m, n, 7, true);
}

// QLinearSigmoid / QLinearLeakyRelu (X, X_scale, X_zp, Y_scale, Y_zp),
// DequantizeLinear / QuantizeLinear (X, scale, zp) with one value each for
// their scales and zero points, and the lookups fuse-quantized-lookup makes:
// elementwise.
bool elementwise_per_tensor(const Model& m, const Node& n) {
  if (n.outputs.size() != 1 || n.outputs[0].empty() || n.inputs.empty()) return false;
  if (n.domain == "com.microsoft" && (n.op_type == "QLinearSigmoid" || n.op_type == "QLinearLeakyRelu"))
    return n.inputs.size() >= 4 && n.inputs.size() <= 5 && scalar_parameter(m, n, 1, false) &&
           scalar_parameter(m, n, 2, true) && scalar_parameter(m, n, 3, false) && scalar_parameter(m, n, 4, true);
  if (n.domain == kCpuDomain && n.op_type == kQuantizedLookup) return n.inputs.size() == 2 && !n.attribute("axis");
  return per_tensor_quantization(m, n);
}

// A ReduceMean with keepdims over exactly axes 2 and 3 of a rank-4 value.
bool spatial_mean(const Model& m, const Node& n) {
  if (!is_op(n, "ReduceMean") || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  if (const Attribute* a = n.attribute("noop_with_empty_axes"); a && a->i != 0) return false;
  auto axes = reduce_mean_axes(m, n);
  if (!axes) return false;
  for (int64_t& a : *axes) a = a < 0 ? a + 4 : a;
  std::sort(axes->begin(), axes->end());
  return *axes == std::vector<int64_t>{2, 3};
}

// QLinearConcat (Y_scale, Y_zp, then X, X_scale, X_zp per input) along
// the channels of rank-4 inputs, every scale and zero point a constant scalar.
bool channel_qlinear_concat(const Model& m, const Node& n) {
  if (n.domain != "com.microsoft" || n.op_type != "QLinearConcat" || n.outputs.size() != 1 || n.outputs[0].empty())
    return false;
  if (n.inputs.size() < 5 || (n.inputs.size() - 2) % 3 != 0) return false;
  const Attribute* a = n.attribute("axis");
  if (!a || (a->i != 1 && a->i != -3)) return false;
  if (!scalar_parameter(m, n, 0, false) || !scalar_parameter(m, n, 1, false)) return false;
  for (size_t k = 2; k < n.inputs.size(); k += 3)
    if (n.inputs[k].empty() || !scalar_parameter(m, n, k + 1, false) || !scalar_parameter(m, n, k + 2, true)) return false;
  return true;
}

bool qlinear_average_pool(const Model& m, const Node& n) {
  if (n.domain != "com.microsoft" || n.op_type != "QLinearAveragePool" || n.outputs.size() != 1 || n.outputs[0].empty())
    return false;
  if (const Attribute* a = n.attribute("channels_last"); a && a->i != 0) return false;
  return n.inputs.size() >= 4 && n.inputs.size() <= 5 && scalar_parameter(m, n, 1, false) &&
         scalar_parameter(m, n, 2, true) && scalar_parameter(m, n, 3, false) && scalar_parameter(m, n, 4, true);
}

bool max_pool_y_only(const Node& n) {
  return is_op(n, "MaxPool") && n.inputs.size() == 1 && !n.outputs.empty() && !n.outputs[0].empty() &&
         (n.outputs.size() == 1 || n.outputs[1].empty());
}

}  // namespace

bool nhwc_int8_layout(Model& model, PassContext& ctx) {
  if (!int8_convolutions_channels_last()) return false;
  Graph& g = model.graph;
  const Node* first = nullptr;
  for (const Node& n : g.nodes)
    if (!first && conv_rank(model, n)) first = &n;
  // One rewrite for bisect-passes: the layout of every int8 convolution at once.
  if (!first || !ctx.allow(first->name)) return false;

  struct Last {
    std::string name;  // the channels-last value
    size_t rank = 0;
  };
  std::unordered_map<std::string, Last> last;  // plain name -> its channels-last form
  std::set<std::string> plain_missing;         // produced only channels last so far
  // DequantizeLinears whose every reader pools the spatial axes (a
  // squeeze-excitation's) or is a float activation quantized again and
  // read by nothing else: those stay channels last.
  std::set<std::string> pooled;
  {
    const GraphIndex idx(g);
    auto only_read_by = [&](const std::string& v, const std::function<bool(const Node&)>& ok) {
      if (idx.graph_outputs.count(v) || idx.subgraph_reads.count(v)) return false;
      auto it = idx.readers.find(v);
      return it != idx.readers.end() && !it->second.empty() &&
             std::all_of(it->second.begin(), it->second.end(), [&](size_t r) { return ok(g.nodes[r]); });
    };
    auto requantized_activation = [&](const Node& r) {
      return is_float_activation(model, r) && only_read_by(r.outputs[0], [&](const Node& q) {
               return is_op(q, "QuantizeLinear") && elementwise_per_tensor(model, q);
             });
    };
    for (const Node& n : g.nodes)
      if (is_op(n, "DequantizeLinear") && !n.outputs.empty() && only_read_by(n.outputs[0], [&](const Node& r) {
            return spatial_mean(model, r) || requantized_activation(r);
          }))
        pooled.insert(n.outputs[0]);
  }
  std::vector<Node> out;
  out.reserve(g.nodes.size() + 8);
  FreshNames fresh(g);
  size_t convs = 0, reorders = 0;

  auto reorder = [&](const char* op, const std::string& from, const std::string& to, const std::string& base) {
    Node r;
    r.name = fresh(base + "_" + op);
    r.domain = kCpuDomain;
    r.op_type = op;
    r.inputs = {from};
    r.outputs = {to};
    out.push_back(std::move(r));
    ++reorders;
  };
  auto materialize = [&](const std::string& plain) {  // FromNhwc before the first plain reader
    if (!plain_missing.count(plain)) return;
    reorder(kFromNhwc, last[plain].name, plain, plain);
    plain_missing.erase(plain);
  };
  // Appends `node` (replacing `original`), whose output 0 is the
  // channels-last form of original's output 0.
  auto emit = [&](Node node, const Node& original, size_t rank) {
    const std::string y = original.outputs[0];
    node.outputs[0] = fresh(y + "_nhwc");
    set_fused_from(node, {&original});
    last[y] = {node.outputs[0], rank};
    plain_missing.insert(y);
    out.push_back(std::move(node));
  };

  for (Node& n : g.nodes) {
    if (const size_t rank = conv_rank(model, n)) {
      const std::string& x = n.inputs[0];
      if (!last.count(x)) {
        const std::string xl = fresh(x + "_nhwc");
        reorder(kToNhwc, x, xl, x);
        last[x] = {xl, rank};
      }
      Node c = n;
      c.domain = kCpuDomain;
      c.op_type = kNhwcQLinearConv;
      c.inputs[0] = last[x].name;
      emit(std::move(c), n, rank);
      ++convs;
      continue;
    }
    if (qlinear_binary(model, n) && (last.count(n.inputs[0]) || last.count(n.inputs[3]))) {
      // One side plain: reorder it too where its rank is known to be the other's.
      for (const size_t k : {size_t{0}, size_t{3}}) {
        const size_t other = k == 0 ? 3 : 0;
        const std::string& v = n.inputs[k];
        if (last.count(v) || !last.count(n.inputs[other])) continue;
        const size_t rank = last[n.inputs[other]].rank;
        if (known_rank(g, v) != rank) break;
        const std::string vl = fresh(v + "_nhwc");
        reorder(kToNhwc, v, vl, v);
        last[v] = {vl, rank};
      }
    }
    if (qlinear_binary(model, n) && last.count(n.inputs[0]) && last.count(n.inputs[3]) &&
        last[n.inputs[0]].rank == last[n.inputs[3]].rank) {
      Node e = n;
      e.inputs[0] = last[n.inputs[0]].name;
      e.inputs[3] = last[n.inputs[3]].name;
      emit(std::move(e), n, last[n.inputs[0]].rank);
      continue;
    }
    if (elementwise_per_tensor(model, n) && last.count(n.inputs[0]) &&
        (!is_op(n, "DequantizeLinear") || pooled.count(n.outputs[0]))) {
      Node e = n;
      e.inputs[0] = last[n.inputs[0]].name;
      emit(std::move(e), n, last[n.inputs[0]].rank);
      continue;
    }
    if (n.domain == kCpuDomain && n.op_type == kQuantizedLookup && n.inputs.size() == 2 && n.attribute("axis") &&
        n.attribute("axis")->i == 1 && last.count(n.inputs[0]) && last[n.inputs[0]].rank == 4) {
      Node e = n;  // a table per channel: the channels are now axis 3
      e.inputs[0] = last[n.inputs[0]].name;
      std::erase_if(e.attributes, [](const Attribute& a) { return a.name == "axis"; });
      e.attributes.push_back(make_attr_int("axis", 3));
      emit(std::move(e), n, 4);
      continue;
    }
    if (is_float_activation(model, n) && last.count(n.inputs[0])) {
      Node e = n;
      e.inputs[0] = last[n.inputs[0]].name;
      emit(std::move(e), n, last[n.inputs[0]].rank);
      continue;
    }
    if (spatial_mean(model, n) && last.count(n.inputs[0]) && last[n.inputs[0]].rank == 4) {
      Node r = n;
      r.inputs[0] = last[n.inputs[0]].name;
      if (r.inputs.size() >= 2 && !r.inputs[1].empty()) {  // axes as an input (opset 18)
        Tensor axes = Tensor::zeros(DataType::Int64, {2});
        axes.mutable_data<int64_t>()[0] = 1;
        axes.mutable_data<int64_t>()[1] = 2;
        r.inputs[1] = fresh(n.outputs[0] + "_nhwc_axes");
        g.initializers.push_back({r.inputs[1], std::move(axes), {}});
      } else {
        std::erase_if(r.attributes, [](const Attribute& a) { return a.name == "axes"; });
        r.attributes.push_back(make_attr_ints("axes", {1, 2}));
      }
      emit(std::move(r), n, 4);
      continue;
    }
    if (channel_qlinear_concat(model, n)) {
      // Channels last where any input is; the plain ones of rank 4 reordered too.
      bool any = false, all = true;
      for (size_t k = 2; k < n.inputs.size(); k += 3) {
        const auto it = last.find(n.inputs[k]);
        any = any || (it != last.end() && it->second.rank == 4);
        all = all && ((it != last.end() && it->second.rank == 4) || (it == last.end() && known_rank(g, n.inputs[k]) == 4));
      }
      if (any && all) {
        Node c = n;
        for (size_t k = 2; k < n.inputs.size(); k += 3) {
          const std::string& v = n.inputs[k];
          if (!last.count(v)) {
            const std::string vl = fresh(v + "_nhwc");
            reorder(kToNhwc, v, vl, v);
            last[v] = {vl, 4};
          }
          c.inputs[k] = last[v].name;
        }
        std::erase_if(c.attributes, [](const Attribute& a) { return a.name == "axis"; });
        c.attributes.push_back(make_attr_int("axis", 3));
        emit(std::move(c), n, 4);
        continue;
      }
    }
    if (qlinear_average_pool(model, n) && last.count(n.inputs[0]) && last[n.inputs[0]].rank == 4) {
      Node q = n;
      q.inputs[0] = last[n.inputs[0]].name;
      std::erase_if(q.attributes, [](const Attribute& a) { return a.name == "channels_last"; });
      q.attributes.push_back(make_attr_int("channels_last", 1));
      emit(std::move(q), n, 4);
      continue;
    }
    if (max_pool_y_only(n) && last.count(n.inputs[0]) && last[n.inputs[0]].rank == 4) {
      Node p = n;
      p.domain = kCpuDomain;
      p.op_type = kNhwcMaxPool;
      p.inputs[0] = last[n.inputs[0]].name;
      p.outputs.resize(1);
      emit(std::move(p), n, 4);
      continue;
    }
    for (const auto& in : n.inputs) materialize(in);
    for (const auto& in : names_read_by_subgraphs(n)) materialize(in);
    out.push_back(std::move(n));
  }
  for (const auto& o : g.outputs) materialize(o.name);
  g.nodes = std::move(out);
  add_cpu_opset(model);
  log_pass(ctx, model,
           "nhwc-int8-layout: " + std::to_string(convs) + " int8 convolutions channels last, " + std::to_string(reorders) +
               " reorders");
  return true;
}

}  // namespace onnxscope::cpu
