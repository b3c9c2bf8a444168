// oneDNN pooling: MaxPool (Y only, not Indices), AveragePool, and the blocked
// (NCHWc) forms of every pool, global ones included. Float32 only, 1-D to 3-D,
// ceil_mode and dilations.
//
// ceil_mode is expressed as extra right padding (oneDNN sizes the output with
// floor). Declined: windows lying wholly in the padding (the reference gives
// NaN there) and count_include_pad with ceil_mode's extra padding (the
// reference does not count it).
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/nchwc.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu::onednn {
namespace {

using md = dnnl::memory::desc;

enum class Kind { Max, Avg, GlobalMax, GlobalAvg };

struct PoolProblem {
  Shape x, y;         // logical NCHW... shapes
  int64_t block = 0;  // 0: plain tensors; 8 or 16: nChw8c / nChw16c
  std::vector<int64_t> kernel, strides, dilations, pad_l, pad_r;
  dnnl::algorithm alg = dnnl::algorithm::pooling_max;
  std::string key;
};

// True when some window position along one dim has every tap outside the input.
bool window_in_padding(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t pad) {
  for (int64_t o = 0; o < out; ++o) {
    bool inside = false;
    for (int64_t t = 0; t < k && !inside; ++t) {
      const int64_t pos = o * s - pad + t * d;
      inside = pos >= 0 && pos < in;
    }
    if (!inside) return true;
  }
  return false;
}

// `x`: the input's logical shape.
bool pool_problem(const KernelContext& ctx, const Shape& x, PoolProblem& p, Kind kind) {
  if (x.size() < 3 || x.size() > 5) return false;
  for (int64_t d : x)
    if (d <= 0) return false;
  p.x = x;
  const size_t k = p.x.size() - 2;
  const std::vector<int64_t> in(p.x.begin() + 2, p.x.end());
  p.y = {p.x[0], p.x[1]};
  if (kind == Kind::GlobalMax || kind == Kind::GlobalAvg) {
    p.kernel = in;
    p.strides.assign(k, 1);
    p.dilations.assign(k, 0);
    p.pad_l.assign(k, 0);
    p.pad_r.assign(k, 0);
    p.y.insert(p.y.end(), k, 1);
    p.alg = kind == Kind::GlobalMax ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
  } else {
    if (kind == Kind::Max && ctx.output_count() > 1 && ctx.output_wanted(1)) return false;  // Indices
    if (!ctx.has_attr("kernel_shape")) return false;
    p.kernel = ctx.attr_ints("kernel_shape");
    if (p.kernel.size() != k) return false;
    // A window wider than X covers padding mostly; oneDNN walks all of it
    // (seconds for a mutated kernel_shape of 2^31), the reference only the taps inside X.
    for (size_t i = 0; i < k; ++i)
      if (p.kernel[i] > in[i]) return false;
    const bool ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
    const ref::nn::Window w = ref::nn::resolve_window(ctx, in, p.kernel, ceil_mode);
    const bool include_pad = kind == Kind::Avg && ctx.attr_int("count_include_pad", 0) != 0;
    p.strides = w.strides;
    p.pad_l = w.pad_begin;
    p.pad_r.resize(k);
    p.dilations.resize(k);
    for (size_t i = 0; i < k; ++i) {
      const int64_t span = (p.kernel[i] - 1) * w.dilations[i] + 1;
      // Right padding oneDNN needs for w.out windows (with floor sizing).
      const int64_t need = (w.out[i] - 1) * w.strides[i] + span - in[i] - w.pad_begin[i];
      if (need > w.pad_end[i] && include_pad) return false;
      p.pad_r[i] = std::max(need, w.pad_end[i]);
      if ((in[i] + p.pad_l[i] + p.pad_r[i] - span) / w.strides[i] + 1 != w.out[i]) {
        p.pad_r[i] = need;  // declared padding beyond the last window: trim it
        if ((in[i] + p.pad_l[i] + p.pad_r[i] - span) / w.strides[i] + 1 != w.out[i]) return false;
      }
      if (window_in_padding(in[i], w.out[i], p.kernel[i], w.strides[i], w.dilations[i], w.pad_begin[i])) return false;
      // oneDNN counts the gaps; it rejects gaps around a 1-wide window, where they mean nothing.
      p.dilations[i] = p.kernel[i] == 1 ? 0 : w.dilations[i] - 1;
    }
    p.y.insert(p.y.end(), w.out.begin(), w.out.end());
    p.alg = kind == Kind::Max ? dnnl::algorithm::pooling_max
            : include_pad     ? dnnl::algorithm::pooling_avg_include_padding
                              : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  p.key = "pool" + std::to_string(static_cast<int>(p.alg)) + "|b" + std::to_string(p.block) + dims_key(p.x) + dims_key(p.y) + dims_key(p.kernel) +
          dims_key(p.strides) + dims_key(p.dilations) + dims_key(p.pad_l) + dims_key(p.pad_r) + "|t" +
          std::to_string(sync_threads());
  return true;
}

md layout_md(const Shape& s, int64_t block) {
  if (block == 0) return plain_md(s);
  return md(s, dnnl::memory::data_type::f32,
            block == 16 ? dnnl::memory::format_tag::nChw16c : dnnl::memory::format_tag::nChw8c);
}

// The plain problem of a MaxPool/AveragePool/Global*Pool node.
bool plain_problem(const KernelContext& ctx, PoolProblem& p, Kind kind) {
  if (ctx.input_count() != 1 || !is_float(ctx.input_value(0))) return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  return nonempty(x) && pool_problem(ctx, x.shape(), p, kind);
}

std::shared_ptr<const Prim> pool_prim(const PoolProblem& p) {
  return get_prim(p.key, [&] {
    using F = dnnl::pooling_v2_forward;
    F::desc d(dnnl::prop_kind::forward_inference, p.alg, layout_md(p.x, p.block), layout_md(p.y, p.block), p.strides,
              p.kernel, p.dilations, p.pad_l, p.pad_r);
    F::primitive_desc pd(d, base_attr(), engine());
    return make_prim<F>(pd);
  });
}

template <Kind K>
bool accepts_pool(const KernelContext& ctx) {
  return safely([&] {
    PoolProblem p;
    return plain_problem(ctx, p, K) && pool_prim(p)->ok;
  });
}

template <Kind K>
void Pool(KernelContext& ctx) {
  guarded(ctx, [&] {
    PoolProblem p;
    if (!plain_problem(ctx, p, K)) ctx.fail("problem not supported by the oneDNN pooling");
    auto prim = pool_prim(p);
    if (!prim->ok) ctx.fail("oneDNN could not create this pooling");
    Tensor& y = new_output(ctx, p.y);
    execute(*prim, {{DNNL_ARG_SRC, user_mem(plain_md(p.x), ctx.input(0).raw())},
                    {DNNL_ARG_DST, user_mem(plain_md(p.y), y.mutable_raw())}});
  });
}

// NchwcPool (cpu/nchwc.h): the same pooling on a blocked 2-D value.
std::optional<Kind> kind_of(const std::string& op) {
  if (op == "MaxPool") return Kind::Max;
  if (op == "AveragePool") return Kind::Avg;
  if (op == "GlobalMaxPool") return Kind::GlobalMax;
  if (op == "GlobalAveragePool") return Kind::GlobalAvg;
  return std::nullopt;
}

bool blocked_problem(const KernelContext& ctx, PoolProblem& p) {
  if (ctx.input_count() != 1 || !is_float(ctx.input_value(0))) return false;
  const Tensor& xb = ctx.input_value(0)->tensor();
  const int64_t block = ctx.attr_int("block", 0), channels = ctx.attr_int("channels", 0);
  const auto kind = kind_of(ctx.attr_string("op", ""));
  if (!kind || (block != 8 && block != 16) || xb.rank() != 5 || xb.shape()[4] != block || channels <= 0 ||
      !blocks_hold(channels, xb.shape()[1], block) || !nonempty(xb))
    return false;
  p.block = block;
  return pool_problem(ctx, {xb.shape()[0], channels, xb.shape()[2], xb.shape()[3]}, p, *kind);
}

bool accepts_nchwc_pool(const KernelContext& ctx) {
  return safely([&] {
    PoolProblem p;
    return blocked_problem(ctx, p) && pool_prim(p)->ok;
  });
}

void NchwcPool(KernelContext& ctx) {
  guarded(ctx, [&] {
    PoolProblem p;
    if (!blocked_problem(ctx, p)) ctx.fail("problem not supported by the blocked oneDNN pooling");
    auto prim = pool_prim(p);
    if (!prim->ok) ctx.fail("oneDNN could not create this blocked pooling");
    // Padding channels must read as zeros downstream: zero-filled unless there are none.
    const Shape yb = nchwc_shape(p.y, p.block);
    Tensor& y = p.x[1] % p.block == 0 ? uninitialized_output(ctx, 0, DataType::Float, yb)
                                      : ctx.allocate_output(0, DataType::Float, yb);
    execute(*prim, {{DNNL_ARG_SRC, user_mem(layout_md(p.x, p.block), ctx.input(0).raw())},
                    {DNNL_ARG_DST, user_mem(layout_md(p.y, p.block), y.mutable_raw())}});
  });
}

}  // namespace

void register_onednn_pool(KernelRegistry& r) {
  r.add(KernelDef{"onnxscope.cpu", kNchwcPool, 1, INT_MAX, "onednn", NchwcPool, accepts_nchwc_pool});
  r.add(KernelDef{"", "MaxPool", 1, INT_MAX, "onednn", Pool<Kind::Max>, accepts_pool<Kind::Max>});
  r.add(KernelDef{"", "AveragePool", 1, INT_MAX, "onednn", Pool<Kind::Avg>, accepts_pool<Kind::Avg>});
  // Plain GlobalMaxPool / GlobalAveragePool: reduction/reduce.cpp's row kernels (faster on plain layouts);
  // the blocked (NCHWc) ones stay here.
}

}  // namespace onnxscope::cpu::onednn
