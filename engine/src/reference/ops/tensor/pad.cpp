// Reference kernel: Pad (constant, reflect, edge, wrap).
#include <algorithm>
#include <cmath>

#include "core/pad_plan.h"
#include "core/range_plan.h"
#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

// A one-element tensor of type `t` holding `v` (Pad's attribute `value`).
Tensor scalar_of(const KernelContext& ctx, DataType t, double v) {
  Tensor s = Tensor::zeros(t, {});
  dispatch<kFloats | kInts | kBool>(ctx, t, [&](auto tag) {
    using S = typename decltype(tag)::type;
    put<S>(s, 0, from_double<compute_t<S>>(v));  // a value of 1e30 or NaN for an int tensor: saturated, 0
  });
  return s;
}

}  // namespace

void Pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  const int64_t opset = ctx.opset_version();
  const std::string mode = ctx.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && !(mode == "wrap" && opset >= 19))
    ctx.fail("unsupported mode '" + mode + "'");

  std::vector<int64_t> pads;
  Tensor fill_storage;
  const Tensor* fill = nullptr;  // null: zeros (the default constant)
  std::vector<int64_t> axes;
  bool axes_given = false;
  if (opset < 11) {
    const char* name = opset < 2 ? "paddings" : "pads";
    if (!ctx.has_attr(name)) ctx.fail(std::string("required attribute '") + name + "' is missing");
    pads = ctx.attr_ints(name);
    const float value = ctx.attr_float("value", 0.0f);
    if (value != 0.0f || std::signbit(value)) {
      fill_storage = scalar_of(ctx, x.dtype(), value);
      fill = &fill_storage;
    }
  } else {
    pads = int_values(ctx, ctx.input(1));
    if (const Tensor* cv = ctx.optional_input(2); cv && cv->element_count() > 0) {
      if (cv->dtype() != x.dtype()) ctx.fail("constant_value must have the element type of data");
      if (cv->element_count() != 1) ctx.fail("constant_value must hold one element");
      fill = cv;
    }
    if (opset >= 18 && ctx.has_input(3)) {
      axes = int_values(ctx, ctx.input(3));
      axes_given = true;
    }
  }
  axes = checked_axes(ctx, axes, axes_given, rank);
  const size_t naxes = axes.size();
  if (pads.size() != 2 * naxes)
    ctx.fail("pads has " + std::to_string(pads.size()) + " entries, expected " + std::to_string(2 * naxes));
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < naxes; ++i) {
    begin[static_cast<size_t>(axes[i])] = pads[i];
    end[static_cast<size_t>(axes[i])] = pads[naxes + i];
  }
  Shape out(static_cast<size_t>(rank));
  for (size_t d = 0; d < out.size(); ++d) {
    // Negative pads crop.
    if (__builtin_add_overflow(x.shape()[d], begin[d], &out[d]) || __builtin_add_overflow(out[d], end[d], &out[d]))
      ctx.fail("pads " + shape_to_string(pads) + " overflow");
    if (out[d] < 0) ctx.fail("pads " + shape_to_string(pads) + " remove more than dimension " + std::to_string(d) + " holds");
    if (mode != "constant" && out[d] > 0 && pad::kept(x.shape()[d], begin[d], end[d]) <= 0)
      ctx.fail(x.shape()[d] == 0 ? "cannot " + mode + "-pad dimension " + std::to_string(d) + " of size 0"
                                 : "cannot " + mode + "-pad dimension " + std::to_string(d) + ": its negative pads remove all " +
                                       std::to_string(x.shape()[d]) + " of its elements");
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  if (y.element_count() == 0) return;
  // Negative pads crop first, then the rest is padded by the mode from what
  // is left (as onnxruntime and PyTorch's circular and reflect pads do; the
  // spec does not say, and onnx.reference refuses negative pads): output
  // coordinate k is coordinate c = k - max(begin, 0) of the kept part, mapped
  // into it by the mode, which is input coordinate c + the elements cropped
  // at the start. Wrap and reflect differ from mapping into the whole input
  // where the other end is cropped: [a b c d e] with pads [-1, 2] wraps to
  // [b c d e b c], not [b c d e a b].
  const auto strides = strides_of(x.shape());
  std::vector<std::vector<int64_t>> table(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    const int64_t n = pad::kept(x.shape()[d], begin[d], end[d]), cut = pad::cut_at_start(x.shape()[d], begin[d]);
    // In 128 bits: a pad of -2^63 must not wrap k - begin around.
    auto mod = [](__int128 a, int64_t m) { return static_cast<int64_t>(((a % m) + m) % m); };
    for (int64_t k = 0; k < out[d]; ++k) {
      const __int128 c128 = static_cast<__int128>(k) - std::max<int64_t>(begin[d], 0);
      int64_t c;
      if (mode == "constant") {
        c = c128 < 0 || c128 >= n ? -1 : static_cast<int64_t>(c128);
      } else if (mode == "edge") {
        c = c128 < 0 ? 0 : c128 >= n ? n - 1 : static_cast<int64_t>(c128);
      } else if (mode == "wrap") {
        c = mod(c128, n);
      } else {  // reflect about the edge elements (numpy "reflect"), repeatedly if needed
        const int64_t period = 2 * (n - 1);
        c = period == 0 ? 0 : mod(c128, period);
        if (c >= n) c = period - c;
      }
      table[d].push_back(c < 0 ? -1 : (c + cut) * strides[d]);
    }
  }
  gather_by_tables(ctx, x, y, table, fill);
}

}  // namespace onnxscope::ref
