#include "onnxscope/finite_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

namespace onnxscope {
namespace {

std::string number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

void add(FiniteCounts& c, const Value& v) {
  if (v.is_sequence()) {
    for (const auto& item : v.items()) add(c, item);
    return;
  }
  if (v.is_map()) return add(c, Value(v.map_values()));
  if (!v.is_tensor() || v.tensor().is_string() || !dtype_info(v.tensor().dtype()).is_float) return;
  const Tensor& t = v.tensor();
  c.floating = true;
  const uint64_t n = t.element_count();
  double chunk[2048];
  for (uint64_t i = 0; i < n; i += std::size(chunk)) {
    const uint64_t m = std::min<uint64_t>(std::size(chunk), n - i);
    t.elements_as_double(i, m, chunk);
    for (uint64_t k = 0; k < m; ++k) {
      const double x = chunk[k];
      if (std::isnan(x)) {
        ++c.nan;
      } else if (std::isinf(x)) {
        ++(x > 0 ? c.pos_inf : c.neg_inf);
      } else {
        const bool first = c.elements == c.nan + c.pos_inf + c.neg_inf;  // no finite element yet
        c.min = first ? x : std::min(c.min, x);
        c.max = first ? x : std::max(c.max, x);
      }
      ++c.elements;
    }
  }
}

}  // namespace

FiniteCounts count_finite(const Value& v) {
  FiniteCounts c;
  add(c, v);
  return c;
}

std::string FiniteCounts::text() const {
  if (!floating) return "not floating point (never NaN or Inf)";
  if (elements == 0) return "empty";
  const uint64_t finite_elements = elements - nan - pos_inf - neg_inf;
  std::string range = finite_elements ? "in [" + number(min) + ", " + number(max) + "]" : "";
  if (finite()) return "finite, " + range;
  std::string s;
  auto part = [&](uint64_t n, const char* what) {
    if (n) s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  part(nan, "NaN");
  part(pos_inf, "+Inf");
  part(neg_inf, "-Inf");
  s += " of " + std::to_string(elements);
  if (finite_elements) s += "; the finite ones " + range;
  return s;
}

std::string NonFiniteNode::text() const {
  std::string s = "node '" + node + "' (" + op_type + ", graph " + graph_path;
  if (iteration >= 0) s += ", iteration " + std::to_string(iteration);
  s += ", node " + std::to_string(node_index);
  if (!kernel.empty()) s += ", kernel " + kernel;
  s += ") made output '" + output + "' hold " + counts.text() + "\n";
  s += inputs.empty() ? "  it has no inputs\n" : "  its inputs:\n";
  for (const Input& in : inputs) {
    s += "    " + std::to_string(in.index) + " ";
    if (in.name.empty()) {
      s += "(omitted)\n";
      continue;
    }
    s += "'" + in.name + "' " + in.type + ": " + in.counts.text() + (in.counts.finite() ? "" : "  <- not finite") + "\n";
  }
  return s;
}

void FiniteCheck::on_node(const NodeEvent& e) {
  if (found_) return;
  for (size_t k = 0; k < e.outputs.size() && k < e.node->outputs.size(); ++k) {
    if (e.node->outputs[k].empty()) continue;
    FiniteCounts c = count_finite(e.outputs[k]);
    if (c.finite()) continue;
    NonFiniteNode f;
    f.graph_path = std::string(e.graph_path);
    f.iteration = e.iteration;
    f.node_index = e.node_index;
    f.node = e.node->label(e.node_index);
    f.op_type = e.node->op_type;
    f.kernel = std::string(e.kernel);
    f.output = e.node->outputs[k];
    f.counts = c;
    for (size_t i = 0; i < e.node->inputs.size(); ++i) {
      NonFiniteNode::Input in;
      in.index = i;
      const Value* v = i < e.inputs.size() ? e.inputs[i] : nullptr;
      if (!e.node->inputs[i].empty() && v) {
        in.name = e.node->inputs[i];
        in.type = v->describe();
        in.counts = count_finite(*v);
      }
      f.inputs.push_back(std::move(in));
    }
    found_ = std::move(f);
    return;
  }
}

}  // namespace onnxscope
