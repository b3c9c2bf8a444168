// Split of any fixed-width element type as block copies (one memcpy per
// outer index and output), split across the thread pool. Sizes from the
// `split` attribute (before opset 13), the `split` input (13 on),
// `num_outputs` (18 on) or equal parts, checked as the reference checks
// them; anything it would reject is left to it, which names the problem.
#include <cstring>
#include <optional>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/tensor/strided_copy.h"

namespace onnxscope::cpu {
namespace {

struct Problem {
  size_t axis = 0;
  std::vector<int64_t> sizes;
};

std::optional<Problem> problem_of(const KernelContext& ctx) {
  const Value* xv = ctx.input_count() >= 1 ? ctx.input_value(0) : nullptr;
  if (!xv || !xv->is_tensor() || !copyable_dtype(xv->tensor()) || xv->tensor().rank() == 0) return std::nullopt;
  const Tensor& x = xv->tensor();
  const int64_t rank = x.rank(), axis = ctx.attr_int("axis", 0);
  if (axis < -rank || axis >= rank) return std::nullopt;
  Problem p;
  p.axis = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  const int64_t dim = x.shape()[p.axis];
  const size_t nout = ctx.output_count();
  const int64_t opset = ctx.opset_version();
  if (opset < 2) return std::nullopt;
  const bool sizes_input = opset >= 13 && ctx.input_count() > 1 && ctx.input_value(1);
  if (opset < 13 && ctx.has_attr("split")) {
    p.sizes = ctx.attr_ints("split");
  } else if (sizes_input) {
    if (ctx.has_attr("num_outputs")) return std::nullopt;
    const Value* s = ctx.input_value(1);
    if (!s->is_tensor() || s->tensor().dtype() != DataType::Int64 || s->tensor().rank() != 1) return std::nullopt;
    p.sizes.assign(s->tensor().data<int64_t>(), s->tensor().data<int64_t>() + s->tensor().element_count());
  } else if (opset >= 18 && ctx.has_attr("num_outputs")) {
    const int64_t parts = ctx.attr_int("num_outputs", 0);
    if (parts < 1 || static_cast<size_t>(parts) != nout) return std::nullopt;
    const int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t k = 0; k < parts; ++k) p.sizes.push_back(std::clamp<int64_t>(dim - k * chunk, 0, chunk));
  } else {
    if (nout == 0 || dim % static_cast<int64_t>(nout) != 0) return std::nullopt;
    p.sizes.assign(nout, dim / static_cast<int64_t>(nout));
  }
  if (p.sizes.size() != nout) return std::nullopt;
  int64_t total = 0;
  for (int64_t s : p.sizes) {
    if (s < 0 || s > dim - total) return std::nullopt;
    total += s;
  }
  if (total != dim) return std::nullopt;
  return p;
}

bool accepts(const KernelContext& ctx) { return problem_of(ctx).has_value(); }

void Split(KernelContext& ctx) {
  const std::optional<Problem> p = problem_of(ctx);
  if (!p) ctx.fail("problem not supported by the CPU split kernel");
  const Tensor& x = ctx.input(0);
  const size_t elem = *storage_bytes(x.dtype(), 1);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < p->axis; ++d) outer *= x.shape()[d];
  for (size_t d = p->axis + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  const size_t row = static_cast<size_t>(x.shape()[p->axis] * inner) * elem;  // bytes of x per outer index
  std::vector<std::byte*> out(p->sizes.size(), nullptr);
  std::vector<size_t> chunk(p->sizes.size()), offset(p->sizes.size());
  size_t at = 0;
  for (size_t k = 0; k < p->sizes.size(); ++k) {
    Shape s = x.shape();
    s[p->axis] = p->sizes[k];
    // Every output is made, even one that is not wanted, as the reference does.
    out[k] = uninitialized_output(ctx, k, x.dtype(), s).mutable_raw();
    chunk[k] = static_cast<size_t>(p->sizes[k] * inner) * elem;
    offset[k] = at;
    at += chunk[k];
  }
  if (row == 0 || outer == 0) return;
  const std::byte* in = x.raw();
  parallel_for(outer, std::max<int64_t>(1, static_cast<int64_t>(65536 / row)), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (size_t k = 0; k < chunk.size(); ++k)
        if (chunk[k]) std::memcpy(out[k] + static_cast<size_t>(o) * chunk[k], in + static_cast<size_t>(o) * row + offset[k], chunk[k]);
  });
}

}  // namespace

void register_split_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Split", 2, INT_MAX, "cpu-copy", Split, accepts});
}

}  // namespace onnxscope::cpu
