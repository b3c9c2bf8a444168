// Einsum (float32, and float16 / bfloat16 through it rounded once; 1 to 3 operands): labels, sizes and strides from the
// reference's own plan (core/einsum_plan.h). A contraction of two operands
// (16 summed elements or more, every summed label in both) runs as a
// strided-batched GEMM between two gathers and a scatter; the rest (outer
// products, transposes, traces, small or one-sided sums, three operands) as
// one kernel over the output elements (kernels/einsum.h).
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
  if (auto r = require_one_real_type(g, n)) return r;
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

// Two operands whose summed labels (those of more than one element) are in
// both, with a sum of kGemmSum or more: A gathered as [batch, m, k] and B as
// [batch, k, n] by strided copies (which also read repeated labels and
// broadcast dims, through the plan's strides), one strided-batched GEMM, and
// its [batch, m, n] result copied into the output's order. An output label
// is a batch dim when both operands move along it, m or n when one does.
// False when the problem is not of that shape (the kernel then takes it).
constexpr int64_t kGemmSum = 16;

bool einsum_as_gemm(OpContext& c, const einsum::Plan& p) {
  if (c.input_count() != 2) return false;
  std::vector<size_t> batch, m, n, k;
  for (size_t d = 0; d < p.out_shape.size(); ++d) {
    if (p.out_shape[d] == 1) continue;
    const bool a = p.out_stride[0][d] != 0, b = p.out_stride[1][d] != 0;
    (a && b ? batch : b && !a ? n : m).push_back(d);
  }
  for (size_t d = 0; d < p.sum_shape.size(); ++d) {
    if (p.sum_shape[d] == 1) continue;
    if (p.sum_stride[0][d] == 0 || p.sum_stride[1][d] == 0) return false;  // summed in one operand only
    k.push_back(d);
  }
  auto size = [](const Shape& s, const std::vector<size_t>& dims) {
    int64_t v = 1;
    for (size_t d : dims) v *= s[d];
    return v;
  };
  const int64_t B = size(p.out_shape, batch), M = size(p.out_shape, m), N = size(p.out_shape, n), K = size(p.sum_shape, k);
  if (K < kGemmSum || B * M * N == 0) return false;
  // One operand's [batch, rows, cols] gathered contiguously.
  auto gather = [&](size_t operand, const std::vector<size_t>& rows, bool rows_summed, const std::vector<size_t>& cols,
                    bool cols_summed) {
    StridedCopy g;
    auto add = [&](const std::vector<size_t>& dims, bool summed) {
      for (size_t d : dims) {
        g.dims.push_back(summed ? p.sum_shape[d] : p.out_shape[d]);
        g.in_stride.push_back(summed ? p.sum_stride[operand][d] : p.out_stride[operand][d]);
      }
    };
    add(batch, false);
    add(rows, rows_summed);
    add(cols, cols_summed);
    g.out_stride = contiguous_strides(Shape(g.dims.begin(), g.dims.end()));
    DeviceTensor t = c.allocate(DataType::Float, {static_cast<int64_t>(elements_of(Shape(g.dims.begin(), g.dims.end())))});
    strided_copy(c, DataType::Float, g, c.input(operand).data, t.data);
    return t;
  };
  const DeviceTensor a = gather(0, m, false, k, true);
  const DeviceTensor b = gather(1, k, true, n, false);
  DeviceTensor r = c.allocate(DataType::Float, {B * M * N});
  row_major_gemm(c, static_cast<const float*>(a.data), static_cast<const float*>(b.data), static_cast<float*>(r.data), M, K, N,
                 false, false, 1.f, 0.f, B, M * K, K * N);
  StridedCopy out;
  const std::vector<int64_t> ys = contiguous_strides(p.out_shape);
  for (const auto* dims : {&batch, &m, &n})
    for (size_t d : *dims) {
      out.dims.push_back(p.out_shape[d]);
      out.out_stride.push_back(ys[d]);
    }
  out.in_stride = contiguous_strides(Shape(out.dims.begin(), out.dims.end()));
  strided_copy(c, DataType::Float, out, r.data, c.output(0).data);
  return true;
}

void einsum_f32(OpContext& c) {
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
  if (einsum_as_gemm(c, p)) return;
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

void run_einsum(OpContext& c) { run_on_float32(c, einsum_f32); }

}  // namespace

void add_einsum_ops(std::vector<OpDef>& t) { t.push_back({"Einsum", refuse_einsum, run_einsum}); }

}  // namespace onnxscope::cuda
