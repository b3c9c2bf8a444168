// DepthToSpace and SpaceToDepth of any fixed-width element type as one
// strided copy each (strided_copy.h): the output viewed as six dims whose
// source strides say where DCR or CRD ordering takes each element from.
// Shapes the spec rejects are left to the reference, which names them.
#include <optional>

#include "core/target_clones.h"
#include "cpu/thread_pool.h"

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

// 4-byte elements: for each output row (n, c, h, i), the b input rows j read
// contiguously and written every b-th element (the strided copy's innermost
// dim reads one element per input plane instead).
void depth_to_space4(const Problem& p, const uint32_t* x, uint32_t* y) {
  const int64_t b = p.b, co = p.c / (b * b), hw = p.h * p.w, wb = p.w * b;
  parallel_for(p.n * co * p.h * b, std::max<int64_t>(1, 8192 / std::max<int64_t>(wb, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i = r % b, h = (r / b) % p.h, c = (r / (b * p.h)) % co, n = r / (b * p.h * co);
      uint32_t* out = y + r * wb;
      for (int64_t j = 0; j < b; ++j) {
        const int64_t ic = p.crd ? c * b * b + i * b + j : (i * b + j) * co + c;
        const uint32_t* row = x + (n * p.c + ic) * hw + h * p.w;
        for (int64_t w = 0; w < p.w; ++w) out[w * b + j] = row[w];
      }
    }
  });
}

void DepthToSpace(KernelContext& ctx) {
  const Problem p = *problem_of(ctx, true);
  const Tensor& x = ctx.input(0);
  const int64_t b = p.b, co = p.c / (b * b), hw = p.h * p.w;
  Tensor& y = uninitialized_output(ctx, 0, x.dtype(), {p.n, co, p.h * b, p.w * b});
  if (y.element_count() == 0) return;
  if (*storage_bytes(x.dtype(), 1) == 4) {
    depth_to_space4(p, reinterpret_cast<const uint32_t*>(x.raw()), reinterpret_cast<uint32_t*>(y.mutable_raw()));
    return;
  }
  // y viewed as [N, c, H, i, W, j]; DCR reads channel (i*b + j)*co + c, CRD c*b*b + i*b + j.
  const Shape view = {p.n, co, p.h, b, p.w, b};
  const std::vector<int64_t> src = p.crd ? std::vector<int64_t>{p.c * hw, b * b * hw, p.w, b * hw, 1, hw}
                                         : std::vector<int64_t>{p.c * hw, hw, p.w, b * co * hw, 1, co * hw};
  strided_copy(y.mutable_raw(), contiguous_strides(view), x.raw(), src, view, *storage_bytes(x.dtype(), 1));
}

// 4-byte elements: each input row (n, c, ih) is read once and dealt out to
// its b output rows, element j of every b going to output row j (an output
// row per (n, oc, oh) read every b-th element of an input row, and each input
// line came back from L2 b * b times). b = 2, the common block, as one
// de-interleaving pass the compiler vectorizes (cloned for AVX-512 / AVX2).
ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default") void deal_pairs(const uint32_t* in, uint32_t* o0, uint32_t* o1,
                                                                               int64_t n) {
  for (int64_t w = 0; w < n; ++w) {
    o0[w] = in[2 * w];
    o1[w] = in[2 * w + 1];
  }
}

void space_to_depth4(const Problem& p, const uint32_t* x, uint32_t* y) {
  const int64_t b = p.b, oh_n = p.h / b, ow_n = p.w / b, co = p.c * b * b;
  parallel_for(p.n * p.c * p.h, std::max<int64_t>(1, 8192 / std::max<int64_t>(p.w, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t ih = r % p.h, c = (r / p.h) % p.c, n = r / (p.h * p.c);
      const int64_t i = ih % b, oh = ih / b;
      if (oh >= oh_n) continue;
      const uint32_t* in = x + r * p.w;
      // DCR: oc = (i * b + j) * C + c; CRD: oc = c * b * b + i * b + j.
      auto out_row = [&](int64_t j) {
        const int64_t oc = p.crd ? c * b * b + i * b + j : (i * b + j) * p.c + c;
        return y + ((n * co + oc) * oh_n + oh) * ow_n;
      };
      if (b == 2) {
        deal_pairs(in, out_row(0), out_row(1), ow_n);
        continue;
      }
      for (int64_t j = 0; j < b; ++j) {
        uint32_t* out = out_row(j);
        for (int64_t w = 0; w < ow_n; ++w) out[w] = in[w * b + j];
      }
    }
  });
}

void SpaceToDepth(KernelContext& ctx) {
  const Problem p = *problem_of(ctx, false);
  const Tensor& x = ctx.input(0);
  const int64_t b = p.b, hw = p.h * p.w;
  Tensor& y = uninitialized_output(ctx, 0, x.dtype(), {p.n, p.c * b * b, p.h / b, p.w / b});
  if (y.element_count() == 0) return;
  if (*storage_bytes(x.dtype(), 1) == 4) {
    space_to_depth4(p, reinterpret_cast<const uint32_t*>(x.raw()), reinterpret_cast<uint32_t*>(y.mutable_raw()));
    return;
  }
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
