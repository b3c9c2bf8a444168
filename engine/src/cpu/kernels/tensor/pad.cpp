// Pad of any fixed-width element type, every mode (constant, reflect, edge,
// wrap), negative pads (crops) included. Each output coordinate maps to an
// input coordinate per dim (or to the constant); an output row (the last dim)
// is then its left border element by element, the part inside the input as
// one memcpy, and its right border. Rows are split across the thread pool.
// Parameters the spec rejects are left to the reference kernel.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "core/pad_plan.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/param_values.h"
#include "cpu/kernels/tensor/strided_copy.h"

namespace onnxscope::cpu {
namespace {

enum class Mode { Constant, Reflect, Edge, Wrap };

struct Problem {
  Mode mode = Mode::Constant;
  std::vector<int64_t> begin;  // pad before each dim (negative: crop)
  std::vector<int64_t> end;    // pad after each dim (negative: crop)
  Shape out;
  std::vector<std::byte> fill;  // the constant's bytes (one element)
};

std::optional<Problem> problem_of(const KernelContext& ctx) {
  const Value* xv = ctx.input_count() >= 1 ? ctx.input_value(0) : nullptr;
  if (!xv || !xv->is_tensor() || !copyable_dtype(xv->tensor())) return std::nullopt;
  const Tensor& x = xv->tensor();
  const int64_t rank = x.rank();
  const int64_t opset = ctx.opset_version();
  const size_t elem = *storage_bytes(x.dtype(), 1);
  Problem p;
  const std::string mode = ctx.attr_string("mode", "constant");
  if (mode == "constant") p.mode = Mode::Constant;
  else if (mode == "reflect") p.mode = Mode::Reflect;
  else if (mode == "edge") p.mode = Mode::Edge;
  else if (mode == "wrap" && opset >= 19) p.mode = Mode::Wrap;
  else return std::nullopt;
  p.fill.assign(elem, std::byte{0});
  std::vector<int64_t> pads, axes;
  if (opset < 11) {
    if (opset < 2) return std::nullopt;  // `paddings`: the reference
    if (ctx.input_count() != 1 || !ctx.has_attr("pads")) return std::nullopt;
    pads = ctx.attr_ints("pads");
    const float value = ctx.attr_float("value", 0.0f);
    if (value != 0.0f || std::signbit(value)) {
      if (x.dtype() != DataType::Float) return std::nullopt;  // the conversion to other types: the reference
      std::memcpy(p.fill.data(), &value, 4);
    }
    axes.resize(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) axes[static_cast<size_t>(d)] = d;
  } else {
    if (ctx.input_count() < 2 || ctx.input_count() > 4) return std::nullopt;
    auto pv = int_list(ctx.input_value(1));
    if (!pv) return std::nullopt;
    pads = *pv;
    if (ctx.input_count() > 2 && ctx.input_value(2)) {
      const Value* cv = ctx.input_value(2);
      if (!cv->is_tensor()) return std::nullopt;
      const Tensor& c = cv->tensor();
      if (c.element_count() > 0) {
        if (c.dtype() != x.dtype() || c.element_count() != 1) return std::nullopt;
        std::memcpy(p.fill.data(), c.raw(), elem);
      }
    }
    if (ctx.input_count() > 3 && ctx.input_value(3)) {
      if (opset < 18) return std::nullopt;
      auto av = int_list(ctx.input_value(3));
      if (!av) return std::nullopt;
      axes = *av;
    } else {
      axes.resize(static_cast<size_t>(rank));
      for (int64_t d = 0; d < rank; ++d) axes[static_cast<size_t>(d)] = d;
    }
  }
  const size_t naxes = axes.size();
  if (pads.size() != 2 * naxes) return std::nullopt;
  p.begin.assign(static_cast<size_t>(rank), 0);
  p.end.assign(static_cast<size_t>(rank), 0);
  std::vector<int64_t>& end = p.end;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < naxes; ++i) {
    if (axes[i] < -rank || axes[i] >= rank) return std::nullopt;
    const size_t a = static_cast<size_t>(axes[i] < 0 ? axes[i] + rank : axes[i]);
    if (seen[a]) return std::nullopt;
    seen[a] = true;
    p.begin[a] = pads[i];
    end[a] = pads[naxes + i];
  }
  p.out.resize(static_cast<size_t>(rank));
  for (size_t d = 0; d < p.out.size(); ++d) {
    int64_t o = 0;
    if (__builtin_add_overflow(x.shape()[d], p.begin[d], &o) || __builtin_add_overflow(o, end[d], &o) || o < 0)
      return std::nullopt;
    if (p.mode != Mode::Constant && o > 0 && pad::kept(x.shape()[d], p.begin[d], end[d]) <= 0) return std::nullopt;
    p.out[d] = o;
  }
  return p;
}

bool accepts(const KernelContext& ctx) { return problem_of(ctx).has_value(); }

// n copies of one element of `elem` bytes.
void fill_elements(std::byte* o, int64_t n, const std::byte* value, size_t elem) {
  if (n <= 0) return;
  switch (elem) {
    case 4: { uint32_t v; std::memcpy(&v, value, 4); std::fill_n(reinterpret_cast<uint32_t*>(o), n, v); return; }
    case 8: { uint64_t v; std::memcpy(&v, value, 8); std::fill_n(reinterpret_cast<uint64_t*>(o), n, v); return; }
    case 2: { uint16_t v; std::memcpy(&v, value, 2); std::fill_n(reinterpret_cast<uint16_t*>(o), n, v); return; }
    case 1: std::memset(o, static_cast<int>(value[0]), static_cast<size_t>(n)); return;
    default: for (int64_t k = 0; k < n; ++k) std::memcpy(o + static_cast<size_t>(k) * elem, value, elem);
  }
}

// Input coordinate of output coordinate k along a dim of `dim` input
// elements, or -1 for the constant. Negative pads crop first and the mode
// pads from what is left (the reference's pad.cpp says why).
int64_t source_of(Mode mode, int64_t k, int64_t begin, int64_t end, int64_t dim) {
  const int64_t n = pad::kept(dim, begin, end), cut = pad::cut_at_start(dim, begin);
  const __int128 c = static_cast<__int128>(k) - std::max<int64_t>(begin, 0);
  if (c >= 0 && c < n) return static_cast<int64_t>(c) + cut;
  switch (mode) {
    case Mode::Constant: return -1;
    case Mode::Edge: return (c < 0 ? 0 : n - 1) + cut;
    case Mode::Wrap: return static_cast<int64_t>(((c % n) + n) % n) + cut;
    case Mode::Reflect: {
      const int64_t period = 2 * (n - 1);
      if (period == 0) return cut;
      int64_t m = static_cast<int64_t>(((c % period) + period) % period);
      return (m >= n ? period - m : m) + cut;
    }
  }
  return -1;
}

void Pad(KernelContext& ctx) {
  const std::optional<Problem> p = problem_of(ctx);
  if (!p) ctx.fail("problem not supported by the CPU pad kernel");
  const Tensor& x = ctx.input(0);
  Tensor& y = uninitialized_output(ctx, 0, x.dtype(), p->out);
  if (y.element_count() == 0) return;
  const size_t elem = *storage_bytes(x.dtype(), 1);
  const size_t rank = p->out.size();
  std::byte* out = y.mutable_raw();
  const std::byte* in = x.raw();
  if (rank == 0) {
    std::memcpy(out, in, elem);
    return;
  }
  const std::vector<int64_t> xs = contiguous_strides(x.shape());
  // Per dim, the source element offset of each output coordinate (-1: the constant).
  std::vector<std::vector<int64_t>> table(rank);
  for (size_t d = 0; d < rank; ++d) {
    table[d].resize(static_cast<size_t>(p->out[d]));
    for (int64_t k = 0; k < p->out[d]; ++k) {
      const int64_t c = source_of(p->mode, k, p->begin[d], p->end[d], x.shape()[d]);
      table[d][static_cast<size_t>(k)] = c < 0 ? -1 : c * xs[d];
    }
  }
  // A row is the last dim, with the dims before it folded in while the last
  // is left alone by the pads and the row stays short: swin's window pad of
  // [1,56,56,96] is then 63 rows of 56 x 96 values to copy and 7 x 96 to fill,
  // not 3969 rows of 96.
  std::vector<int64_t> out_dims(p->out.begin(), p->out.end()), begin = p->begin;
  int64_t nx = x.shape().back();
  for (size_t r = rank; r >= 2;) {
    const size_t a = r - 2, z = r - 1;
    const bool untouched = begin[z] == 0 && out_dims[z] == nx;
    if (!untouched || out_dims[a] * out_dims[z] > 16384) break;
    std::vector<int64_t> merged(static_cast<size_t>(out_dims[a] * out_dims[z]));
    for (int64_t k = 0; k < out_dims[a] * out_dims[z]; ++k) {
      const int64_t t = table[a][static_cast<size_t>(k / out_dims[z])];
      merged[static_cast<size_t>(k)] = t < 0 ? -1 : t + table[z][static_cast<size_t>(k % out_dims[z])];
    }
    nx *= x.shape()[a];
    begin[a] *= out_dims[z];
    out_dims[a] *= out_dims[z];
    table[a] = std::move(merged);
    table.pop_back();
    out_dims.pop_back();
    begin.pop_back();
    r -= 1;
  }
  const size_t dims = out_dims.size();
  const int64_t n = out_dims.back(), b = begin.back();
  // Output coordinates [lo, hi) of the last dim that read the input in order.
  const int64_t lo = std::clamp<int64_t>(b, 0, n), hi = std::clamp<int64_t>(b + nx, lo, n);
  const std::vector<int64_t>& last = table.back();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < dims; ++d) rows *= out_dims[d];
  const std::byte* fill = p->fill.data();
  parallel_for(rows, std::max<int64_t>(1, 65536 / static_cast<int64_t>(static_cast<size_t>(n) * elem + 1)),
               [&](int64_t r0, int64_t r1) {
    // The outer coordinates of row r0, then stepped row by row (no divisions per row).
    std::vector<int64_t> at(dims, 0);
    for (int64_t rest = r0, d = static_cast<int64_t>(dims) - 2; d >= 0; --d) {
      at[static_cast<size_t>(d)] = rest % out_dims[static_cast<size_t>(d)];
      rest /= out_dims[static_cast<size_t>(d)];
    }
    for (int64_t r = r0; r < r1; ++r) {
      std::byte* o = out + static_cast<size_t>(r * n) * elem;
      int64_t src = 0;
      bool outside = false;
      for (size_t d = 0; d + 1 < dims; ++d) {
        const int64_t t = table[d][static_cast<size_t>(at[d])];
        if (t < 0) outside = true;
        else src += t;
      }
      for (size_t d = dims - 1; d-- > 0;) {  // the next row's coordinates
        if (++at[d] < out_dims[d]) break;
        at[d] = 0;
      }
      auto put = [&](int64_t k) {
        const int64_t t = last[static_cast<size_t>(k)];
        std::memcpy(o + static_cast<size_t>(k) * elem, outside || t < 0 ? fill : in + static_cast<size_t>(src + t) * elem, elem);
      };
      if (outside) {
        fill_elements(o, n, fill, elem);
        continue;
      }
      if (p->mode == Mode::Constant) {  // the borders are the constant: no table
        fill_elements(o, lo, fill, elem);
        if (hi > lo) std::memcpy(o + static_cast<size_t>(lo) * elem, in + static_cast<size_t>(src + (lo - b)) * elem,
                                 static_cast<size_t>(hi - lo) * elem);
        fill_elements(o + static_cast<size_t>(hi) * elem, n - hi, fill, elem);
        continue;
      }
      for (int64_t k = 0; k < lo; ++k) put(k);
      if (hi > lo) std::memcpy(o + static_cast<size_t>(lo) * elem, in + static_cast<size_t>(src + (lo - b)) * elem,
                               static_cast<size_t>(hi - lo) * elem);
      for (int64_t k = hi; k < n; ++k) put(k);
    }
  });
}

}  // namespace

void register_pad_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Pad", 2, INT_MAX, "cpu-copy", Pad, accepts});
}

}  // namespace onnxscope::cpu
