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
//   MaxPool (without Indices) of a channels-last 2-D image
//     -> NhwcMaxPool;
//   any other reader, a graph output or a subgraph capture of a channels-last
//   value -> a FromNhwc that restores the original value (name included),
//   once, just before its first plain reader.
// Only where oneDNN's int8 convolution runs (VNNI): elsewhere QLinearConv is
// the reference's, which reads NCHW. Runs once, after the fusion passes.
#include <algorithm>

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

// A scale or zero point the channels-last form leaves meaning the same: a
// constant with one element, or absent (an optional zero point).
bool scalar_parameter(const Model& m, const Node& n, size_t i, bool optional) {
  if (i >= n.inputs.size() || n.inputs[i].empty()) return optional;
  const Tensor* t = constant_tensor(m, n.inputs[i]);
  return t && t->element_count() == 1;
}

bool qlinear_binary(const Model& m, const Node& n) {
  if (n.domain != "com.microsoft" || (n.op_type != "QLinearAdd" && n.op_type != "QLinearMul")) return false;
  if (n.inputs.size() < 7 || n.inputs.size() > 8 || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  return scalar_parameter(m, n, 1, false) && scalar_parameter(m, n, 2, true) && scalar_parameter(m, n, 4, false) &&
         scalar_parameter(m, n, 5, true) && scalar_parameter(m, n, 6, false) && scalar_parameter(m, n, 7, true);
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
    if (qlinear_binary(model, n) && last.count(n.inputs[0]) && last.count(n.inputs[3]) &&
        last[n.inputs[0]].rank == last[n.inputs[3]].rank) {
      Node e = n;
      e.inputs[0] = last[n.inputs[0]].name;
      e.inputs[3] = last[n.inputs[3]].name;
      emit(std::move(e), n, last[n.inputs[0]].rank);
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
