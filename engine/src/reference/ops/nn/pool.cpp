// Reference kernels: MaxPool, AveragePool and LpPool (one windowed kernel).
//
// Values are widened to double; sums of float16/float inputs are
// accumulated in double and rounded once on store.
#include <cmath>
#include <limits>

#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "cpu/thread_pool.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using nn::Counter;
using nn::Window;
namespace {

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
    const std::byte* const px = x.raw();  // read in its own type (no copy of X in double)
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
    // Every output position's taps, found once (not once per channel), in
    // one table; then the channels are spread over the threads, each result
    // summed over its taps in the same order as before.
    std::vector<std::pair<int64_t, int64_t>> table;
    std::vector<int64_t> tap_start{0};
    std::vector<double> padded_counts;
    // In batches of positions (at most kTableTaps taps): bounded scratch.
    constexpr size_t kTableTaps = size_t{1} << 20;
    int64_t batch_begin = 0;
    auto flush = [&](int64_t o_begin, int64_t o_end) {
      cpu::parallel_for(NC, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t nc = c0; nc < c1; ++nc) {
          poll_deadline();
          const std::byte* const xp = px + nc * IS * static_cast<int64_t>(sizeof(S));
          auto at = [xp](int64_t i) { return static_cast<double>(to_compute(load_at<S>(xp, static_cast<uint64_t>(i)))); };
          for (int64_t o = o_begin; o < o_end; ++o) {
            const auto* t0 = table.data() + tap_start[static_cast<size_t>(o - o_begin)];
            const auto* t1 = table.data() + tap_start[static_cast<size_t>(o - o_begin) + 1];
            double r = 0;
            if (kind == PoolKind::Max) {
              // NaN inputs are skipped; the first maximum wins.
              double best = std::numeric_limits<double>::quiet_NaN();
              int64_t best_row = -1, best_col = -1;
              for (const auto* t = t0; t != t1; ++t) {
                const double v = at(t->first);
                if (std::isnan(v)) continue;
                if (best_row < 0 || v > best) {
                  best = v;
                  best_row = t->first;
                  best_col = t->second;
                }
              }
              r = best;
              if (want_indices) {
                const int64_t spatial = best_row < 0 ? 0 : (storage_order == 0 ? best_row : best_col);
                idx[static_cast<size_t>(nc * OS + o)] = nc * IS + spatial;
              }
            } else if (kind == PoolKind::Average) {
              double sum = 0;
              for (const auto* t = t0; t != t1; ++t) sum += at(t->first);
              r = sum / (include_pad ? padded_counts[static_cast<size_t>(o - o_begin)] : static_cast<double>(t1 - t0));
            } else {
              double sum = 0;
              for (const auto* t = t0; t != t1; ++t) sum += std::pow(std::abs(at(t->first)), p);
              r = std::pow(sum, 1.0 / p);
            }
            y[static_cast<size_t>(nc * OS + o)] = r;
          }
        }
      });
    };
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
      table.insert(table.end(), taps.begin(), taps.end());
      tap_start.push_back(static_cast<int64_t>(table.size()));
      padded_counts.push_back(padded_count);
      if (table.size() >= kTableTaps) {
        flush(batch_begin, op + 1);
        batch_begin = op + 1;
        table.clear();
        tap_start.assign(1, 0);
        padded_counts.clear();
      }
    }
    if (op > batch_begin) flush(batch_begin, op);
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

}  // namespace

void MaxPool(KernelContext& c) { pool(c, PoolKind::Max); }
void AveragePool(KernelContext& c) { pool(c, PoolKind::Average); }
void LpPool(KernelContext& c) { pool(c, PoolKind::Lp); }

}  // namespace onnxscope::ref
