// DepthToSpace and SpaceToDepth of any fixed-width element type as one
// strided copy each (strided_copy.h): the output viewed as six dims whose
// source strides say where DCR or CRD ordering takes each element from.
// Shapes the spec rejects are left to the reference, which names them.
#include <optional>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/tensor/strided_copy.h"

namespace onnxscope::cpu {
namespace {

struct Problem {
  int64_t n = 0, c = 0, h = 0, w = 0, b = 0;
  bool crd = false;
};

std::optional<Problem> problem_of(const KernelContext& ctx, bool to_space) {
  if (ctx.input_count() != 1 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor()) return std::nullopt;
  const Tensor& x = ctx.input_value(0)->tensor();
  if (!copyable_dtype(x) || x.rank() != 4) return std::nullopt;
  const Attribute* bs = ctx.attr("blocksize");
  if (!bs || bs->type != AttrType::Int || bs->i <= 0 || bs->i > (int64_t{1} << 20)) return std::nullopt;
  const std::string mode = ctx.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return std::nullopt;
  Problem p{x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3], bs->i, mode == "CRD"};
  int64_t out = 0;
  if (to_space) {
    if (p.c % (p.b * p.b) != 0 || __builtin_mul_overflow(p.h, p.b, &out) || __builtin_mul_overflow(p.w, p.b, &out))
      return std::nullopt;
  } else {
    if (p.h % p.b != 0 || p.w % p.b != 0 || __builtin_mul_overflow(p.c, p.b * p.b, &out)) return std::nullopt;
  }
  return p;
}

bool d2s_accepts(const KernelContext& ctx) { return problem_of(ctx, true).has_value(); }
bool s2d_accepts(const KernelContext& ctx) { return problem_of(ctx, false).has_value(); }

void DepthToSpace(KernelContext& ctx) {
  const Problem p = *problem_of(ctx, true);
  const Tensor& x = ctx.input(0);
  const int64_t b = p.b, co = p.c / (b * b), hw = p.h * p.w;
  Tensor& y = uninitialized_output(ctx, 0, x.dtype(), {p.n, co, p.h * b, p.w * b});
  if (y.element_count() == 0) return;
  // y viewed as [N, c, H, i, W, j]; DCR reads channel (i*b + j)*co + c, CRD c*b*b + i*b + j.
  const Shape view = {p.n, co, p.h, b, p.w, b};
  const std::vector<int64_t> src = p.crd ? std::vector<int64_t>{p.c * hw, b * b * hw, p.w, b * hw, 1, hw}
                                         : std::vector<int64_t>{p.c * hw, hw, p.w, b * co * hw, 1, co * hw};
  strided_copy(y.mutable_raw(), contiguous_strides(view), x.raw(), src, view, *storage_bytes(x.dtype(), 1));
}

void SpaceToDepth(KernelContext& ctx) {
  const Problem p = *problem_of(ctx, false);
  const Tensor& x = ctx.input(0);
  const int64_t b = p.b, hw = p.h * p.w;
  Tensor& y = uninitialized_output(ctx, 0, x.dtype(), {p.n, p.c * b * b, p.h / b, p.w / b});
  if (y.element_count() == 0) return;
  // y viewed as [N, i, j, c, oh, ow] (DCR: channel (i*b + j)*C + c) or [N, c, i, j, oh, ow] (CRD).
  const Shape view = p.crd ? Shape{p.n, p.c, b, b, p.h / b, p.w / b} : Shape{p.n, b, b, p.c, p.h / b, p.w / b};
  const std::vector<int64_t> src = p.crd ? std::vector<int64_t>{p.c * hw, hw, p.w, 1, b * p.w, b}
                                         : std::vector<int64_t>{p.c * hw, p.w, 1, hw, b * p.w, b};
  strided_copy(y.mutable_raw(), contiguous_strides(view), x.raw(), src, view, *storage_bytes(x.dtype(), 1));
}

}  // namespace

void register_depth_space_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "DepthToSpace", 1, INT_MAX, "cpu-copy", DepthToSpace, d2s_accepts});
  r.add(KernelDef{"", "SpaceToDepth", 1, INT_MAX, "cpu-copy", SpaceToDepth, s2d_accepts});
}

}  // namespace onnxscope::cpu
