// Pooling: MaxPool (with Indices), AveragePool, LpPool, GlobalAveragePool,
// GlobalMaxPool, GlobalLpPool, MaxUnpool. Values are widened to double; sums
// of float16/float inputs are accumulated in double and rounded once on store.
#include <cmath>
#include <limits>

#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/nn_parts.h"

namespace onnxscope::ref {
namespace {

using nn::Counter;
using nn::Window;

enum class PoolKind { Max, Average, Lp };

// The p of LpPool/GlobalLpPool: a float attribute in opset 1, an int after.
double lp_norm_p(KernelContext& ctx) {
  const Attribute* a = ctx.attr("p");
  double p = 2.0;
  if (a) p = a->type == AttrType::Float ? static_cast<double>(a->f) : static_cast<double>(a->i);
  if (!(p > 0)) ctx.fail("p must be positive");
  return p;
}

// One sliding-window pool over X [N, C, spatial...]. Window positions in the
// padding are skipped; AveragePool with count_include_pad counts the ones
// inside the declared padding (not those past it that ceil_mode adds).
void pool(KernelContext& ctx, PoolKind kind) {
  const Tensor& x = ctx.input(0);
  nn::require_nc_spatial(ctx, x, "X");
  const Shape& xs = x.shape();
  const size_t k = xs.size() - 2;
  if (!ctx.has_attr("kernel_shape")) ctx.fail("kernel_shape is required");
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  if (kernel.size() != k)
    ctx.fail("kernel_shape has " + std::to_string(kernel.size()) + " values but X has " + std::to_string(k) +
             " spatial dimensions");
  const bool ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
  Window win = nn::resolve_window(ctx, std::vector<int64_t>(xs.begin() + 2, xs.end()), kernel, ceil_mode);
  const bool include_pad = kind == PoolKind::Average && ctx.attr_int("count_include_pad", 0) != 0;
  const double p = kind == PoolKind::Lp ? lp_norm_p(ctx) : 1.0;
  const int64_t storage_order = ctx.attr_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) ctx.fail("storage_order must be 0 or 1");
  const bool want_indices = kind == PoolKind::Max && ctx.output_count() > 1 && ctx.output_wanted(1);

  auto run = [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> xv = real_values(x);
    const int64_t NC = xs[0] * xs[1], IS = nn::product(win.in), OS = nn::product(win.out);
    const auto in_strides = strides_of(win.in);
    // Column-major spatial strides for storage_order = 1.
    std::vector<int64_t> col_strides(k, 1);
    for (size_t d = 1; d < k; ++d) col_strides[d] = col_strides[d - 1] * win.in[d - 1];
    Shape out_shape{xs[0], xs[1]};
    out_shape.insert(out_shape.end(), win.out.begin(), win.out.end());
    check_work_buffer(ctx, out_shape, "the output (in double)", want_indices ? 16 : 8);
    std::vector<double> y(static_cast<size_t>(NC * OS));
    std::vector<int64_t> idx(want_indices ? y.size() : 0);
    std::vector<std::pair<int64_t, int64_t>> taps;  // (row-major, column-major) spatial offsets inside X
    // Per dim, the kernel indices [first, last) whose position lies inside X,
    // and how many lie inside X and its declared padding: found by division,
    // never by walking the kernel, whose attribute may be 2^40 long.
    std::vector<int64_t> first(k), last(k), base(k), kk(k);
    auto ceil_div = [](int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; };
    int64_t op = 0;
    for (Counter oc(win.out); oc.valid(); oc.next(), ++op) {
      if ((op & 63) == 0) poll_deadline();  // a run's time limit holds inside one long node too
      taps.clear();
      double padded_count = 1;  // taps inside input + declared padding (a product that may pass 2^63)
      bool any = true;
      for (size_t d = 0; d < k; ++d) {
        base[d] = oc.index[d] * win.strides[d] - win.pad_begin[d];
        const int64_t dil = win.dilations[d], K = win.kernel[d];
        // kernel index j lands at base + j * dil: inside [lo, hi) for j in [ceil((lo - base) / dil), ceil((hi - base) / dil)).
        auto from = [&](int64_t lo) { return std::min(K, ceil_div(lo - base[d], dil)); };
        first[d] = from(0);
        last[d] = std::max(first[d], from(win.in[d]));
        const int64_t pf = from(-win.pad_begin[d]), pl = std::max(pf, from(win.in[d] + win.pad_end[d]));
        padded_count *= static_cast<double>(pl - pf);
        any = any && last[d] > first[d];
      }
      // The taps inside X in the kernel's row-major order (MaxPool keeps the first maximum).
      if (any) {
        kk = first;
        for (bool more = true; more;) {
          int64_t row = 0, col = 0;
          for (size_t d = 0; d < k; ++d) {
            const int64_t pos = base[d] + kk[d] * win.dilations[d];
            row += pos * in_strides[d];
            col += pos * col_strides[d];
          }
          taps.emplace_back(row, col);
          more = false;
          for (size_t d = k; d-- > 0;) {
            if (++kk[d] < last[d]) {
              more = true;
              break;
            }
            kk[d] = first[d];
          }
        }
      }
      for (int64_t nc = 0; nc < NC; ++nc) {
        const double* xp = xv.data() + nc * IS;
        double r = 0;
        if (kind == PoolKind::Max) {
          // NaN inputs are skipped; the first maximum wins.
          double best = std::numeric_limits<double>::quiet_NaN();
          int64_t best_row = -1, best_col = -1;
          for (const auto& [row, col] : taps) {
            const double v = xp[row];
            if (std::isnan(v)) continue;
            if (best_row < 0 || v > best) {
              best = v;
              best_row = row;
              best_col = col;
            }
          }
          r = best;
          if (want_indices) {
            const int64_t spatial = best_row < 0 ? 0 : (storage_order == 0 ? best_row : best_col);
            idx[nc * OS + op] = nc * IS + spatial;
          }
        } else if (kind == PoolKind::Average) {
          double sum = 0;
          for (const auto& t : taps) sum += xp[t.first];
          r = sum / (include_pad ? padded_count : static_cast<double>(taps.size()));
        } else {
          double sum = 0;
          for (const auto& t : taps) sum += std::pow(std::abs(xp[t.first]), p);
          r = std::pow(sum, 1.0 / p);
        }
        y[nc * OS + op] = r;
      }
    }
    Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
    nn::put_all<S>(out, y);
    if (want_indices) {
      Tensor& ind = ctx.allocate_output(1, DataType::Int64, out_shape);
      for (uint64_t i = 0; i < idx.size(); ++i) store<int64_t>(ind, i, idx[i]);
    }
  };
  if (kind == PoolKind::Max) dispatch<kFloats | kInts>(ctx, x.dtype(), run);
  else dispatch<kFloats>(ctx, x.dtype(), run);
}

void MaxPool(KernelContext& c) { pool(c, PoolKind::Max); }
void AveragePool(KernelContext& c) { pool(c, PoolKind::Average); }
void LpPool(KernelContext& c) { pool(c, PoolKind::Lp); }

// Global pools reduce every spatial dim to 1.
void global_pool(KernelContext& ctx, PoolKind kind) {
  const Tensor& x = ctx.input(0);
  nn::require_nc_spatial(ctx, x, "X");
  const double p = kind == PoolKind::Lp ? lp_norm_p(ctx) : 1.0;
  const Shape& xs = x.shape();
  Shape out_shape(xs.size(), 1);
  out_shape[0] = xs[0];
  out_shape[1] = xs[1];
  const int64_t NC = xs[0] * xs[1], IS = nn::product(xs, 2);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> xv = real_values(x);
    std::vector<double> y(static_cast<size_t>(NC));
    for (int64_t nc = 0; nc < NC; ++nc) {
      const double* xp = xv.data() + nc * IS;
      double r = 0;
      if (kind == PoolKind::Max) {
        // NaN propagates, like numpy.max.
        r = -std::numeric_limits<double>::infinity();
        bool nan = IS == 0;
        for (int64_t i = 0; i < IS; ++i) {
          if (std::isnan(xp[i])) nan = true;
          else r = std::max(r, xp[i]);
        }
        if (nan) r = std::numeric_limits<double>::quiet_NaN();
      } else if (kind == PoolKind::Average) {
        for (int64_t i = 0; i < IS; ++i) r += xp[i];
        r /= static_cast<double>(IS);
      } else {
        for (int64_t i = 0; i < IS; ++i) r += std::pow(std::abs(xp[i]), p);
        r = std::pow(r, 1.0 / p);
      }
      y[nc] = r;
    }
    Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
    nn::put_all<S>(out, y);
  });
}

void GlobalMaxPool(KernelContext& c) { global_pool(c, PoolKind::Max); }
void GlobalAveragePool(KernelContext& c) { global_pool(c, PoolKind::Average); }
void GlobalLpPool(KernelContext& c) { global_pool(c, PoolKind::Lp); }

// MaxUnpool: scatters X into zeros at the flat positions I (as MaxPool's
// Indices output gives them, over the unpooled shape inferred from the
// attributes); with output_shape, that tensor is placed at the origin of a
// zero tensor of the requested shape.
void MaxUnpool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  nn::require_nc_spatial(ctx, x, "X");
  if (ind.shape() != x.shape())
    ctx.fail("I must have the shape of X " + shape_to_string(x.shape()) + ", got " + shape_to_string(ind.shape()));
  if (ind.dtype() != DataType::Int64) ctx.fail("I must be int64");
  const Shape& xs = x.shape();
  const size_t k = xs.size() - 2;
  if (!ctx.has_attr("kernel_shape")) ctx.fail("kernel_shape is required");
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  if (kernel.size() != k) ctx.fail("kernel_shape must have one value per spatial dimension");
  for (int64_t v : kernel)
    if (v < 1 || v > nn::kMaxWindowValue) ctx.fail("kernel_shape values must be in [1, 2^40]");
  std::vector<int64_t> strides = nn::spatial_attr(ctx, "strides", k, 1, 1);
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  if (pads.empty()) pads.assign(2 * k, 0);
  if (pads.size() != 2 * k) ctx.fail("pads must have 2 values per spatial dimension");
  for (int64_t v : pads)
    if (v < 0 || v > nn::kMaxWindowValue) ctx.fail("pads must be in [0, 2^40]");
  Shape inferred{xs[0], xs[1]};
  for (size_t d = 0; d < k; ++d) {
    inferred.push_back((xs[d + 2] - 1) * strides[d] - (pads[d] + pads[k + d]) + kernel[d]);
    if (inferred.back() < 0) ctx.fail("the inferred output shape is negative");
  }
  Shape out_shape = inferred;
  if (const Tensor* os = ctx.optional_input(2)) {
    out_shape = int_values(ctx, *os);
    if (out_shape.size() != xs.size()) ctx.fail("output_shape must have the rank of X");
    for (size_t d = 0; d < out_shape.size(); ++d)
      if (out_shape[d] < inferred[d])
        ctx.fail("output_shape " + shape_to_string(out_shape) + " is smaller than the inferred shape " + shape_to_string(inferred));
  }
  const uint64_t total = *checked_element_count(inferred);
  Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
  const auto in_strides = strides_of(inferred), out_strides = strides_of(out_shape);
  const uint64_t elem = *storage_bytes(x.dtype(), 1);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto) {});  // type check
  for (uint64_t i = 0; i < x.element_count(); ++i) {
    const int64_t flat = ind.element_as_int64(i);
    if (flat < 0 || static_cast<uint64_t>(flat) >= total)
      ctx.fail("index " + std::to_string(flat) + " in I is out of range for the unpooled shape " + shape_to_string(inferred));
    // Map the flat index of the inferred shape into the (possibly larger) output.
    int64_t rem = flat, o = 0;
    for (size_t d = 0; d < inferred.size(); ++d) {
      o += (rem / in_strides[d]) * out_strides[d];
      rem %= in_strides[d];
    }
    std::memcpy(out.mutable_raw() + static_cast<uint64_t>(o) * elem, x.raw() + i * elem, elem);
  }
}

}  // namespace

void register_nn_pool_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since) { r.add(KernelDef{"", op, since, INT_MAX, "reference", fn, nullptr}); };
  add("MaxPool", MaxPool, 1);
  add("AveragePool", AveragePool, 1);
  add("LpPool", LpPool, 1);
  add("GlobalMaxPool", GlobalMaxPool, 1);
  add("GlobalAveragePool", GlobalAveragePool, 1);
  add("GlobalLpPool", GlobalLpPool, 1);
  add("MaxUnpool", MaxUnpool, 9);
}

}  // namespace onnxscope::ref
