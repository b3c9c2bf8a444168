// Einsum (float32, 1 to 3 operands): labels, sizes and strides from the
// reference's own plan (core/einsum_plan.h), then one kernel over the output
// elements (kernels/einsum.h). Each output element loops over the summed
// labels, so outer products, transposes, traces and small contractions run
// as one kernel; a large contraction would be faster as a GEMM (not yet).
#include <set>
#include <stdexcept>

#include "core/einsum_plan.h"
#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

std::string equation_of(const Node& n) {
  const Attribute* a = n.attribute("equation");
  std::string eq;
  if (a)
    for (char ch : a->s)
      if (ch != ' ') eq += ch;
  return eq;
}

std::optional<std::string> refuse_einsum(const Graph& g, const Node& n) {
  if (n.inputs.empty() || n.inputs.size() > static_cast<size_t>(EinsumKernel::kOperands))
    return "the CUDA kernel for Einsum takes 1 to " + std::to_string(EinsumKernel::kOperands) + " operands";
  if (auto r = require_types(g, n, {DataType::Float})) return r;
  // Every label is an output or a summed dim: at most kKernelRank of them,
  // counting what each ellipsis stands for (from the declared ranks).
  const std::string eq = equation_of(n);
  const std::string lhs = eq.substr(0, eq.find("->"));
  std::set<char> letters;
  int64_t ellipsis = 0;
  size_t term = 0, in_term = 0;
  bool dots = false;
  auto close = [&]() -> std::optional<std::string> {
    if (!dots) return std::nullopt;
    const TypeInfo* t = term < n.inputs.size() ? g.type_of(n.inputs[term]) : nullptr;
    if (!t || !t->shape) return std::string("an ellipsis over an operand of unknown rank");
    ellipsis = std::max<int64_t>(ellipsis, static_cast<int64_t>(t->shape->size()) - static_cast<int64_t>(in_term));
    return std::nullopt;
  };
  for (size_t i = 0; i < lhs.size(); ++i) {
    const char ch = lhs[i];
    if (ch == ',') {
      if (auto r = close()) return r;
      ++term;
      in_term = 0;
      dots = false;
    } else if (ch == '.') {
      dots = true;
    } else {
      letters.insert(ch);
      ++in_term;
    }
  }
  if (auto r = close()) return r;
  if (static_cast<int64_t>(letters.size()) + ellipsis > kKernelRank)
    return "the CUDA kernel for Einsum takes at most " + std::to_string(kKernelRank) + " labels";
  return std::nullopt;
}

void run_einsum(OpContext& c) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < c.input_count(); ++i) shapes.push_back(c.input(i).shape);
  einsum::Plan p;
  try {
    p = einsum::plan(equation_of(c.node()), shapes);
  } catch (const std::invalid_argument& e) {
    c.fail(e.what());
  }
  if (p.out_shape.size() > static_cast<size_t>(kKernelRank) || p.sum_shape.size() > static_cast<size_t>(kKernelRank))
    c.fail("more than " + std::to_string(kKernelRank) + " output or summed labels");
  c.output(0) = c.allocate(DataType::Float, p.out_shape);
  EinsumKernel k;
  k.operands = static_cast<int>(c.input_count());
  k.out_rank = static_cast<int>(p.out_shape.size());
  k.sum_rank = static_cast<int>(p.sum_shape.size());
  for (int d = 0; d < k.out_rank; ++d) k.out_dims[d] = p.out_shape[static_cast<size_t>(d)];
  for (int d = 0; d < k.sum_rank; ++d) k.sum_dims[d] = p.sum_shape[static_cast<size_t>(d)];
  k.sum_count = static_cast<int64_t>(elements_of(p.sum_shape));
  for (int i = 0; i < k.operands; ++i) {
    const auto oi = static_cast<size_t>(i);
    for (int d = 0; d < k.out_rank; ++d) k.out_stride[i][d] = p.out_stride[oi][static_cast<size_t>(d)];
    for (int d = 0; d < k.sum_rank; ++d) k.sum_stride[i][d] = p.sum_stride[oi][static_cast<size_t>(d)];
    k.x[i] = static_cast<const float*>(c.input(oi).data);
  }
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(p.out_shape)));
}

}  // namespace

void add_einsum_ops(std::vector<OpDef>& t) { t.push_back({"Einsum", refuse_einsum, run_einsum}); }

}  // namespace onnxscope::cuda
