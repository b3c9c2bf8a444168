// Reference kernel: Where, three inputs broadcast together.
//
// Narrow floats are computed in float and rounded on store (numpy does the
// same for float16); float32 math is done in float, like numpy.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Where(KernelContext& ctx) {
  const Tensor& cond = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (cond.dtype() != DataType::Bool) ctx.fail("condition must be bool");
  if (x.dtype() != y.dtype()) ctx.fail("X and Y must have the same element type");
  const Shape* shapes[] = {&cond.shape(), &x.shape(), &y.shape()};
  Shape shape = broadcast_shapes(ctx, shapes);
  Tensor& out = ctx.allocate_output(0, x.dtype(), shape);
  if (x.is_string()) {
    BroadcastIndex bi(shape, shapes);
    StringBudget budget(&ctx);
    for (uint64_t i = 0; i < out.element_count(); ++i, bi.next()) {
      const std::string& s = load<bool>(cond, bi.offsets()[0]) ? x.strings()[bi.offsets()[1]] : y.strings()[bi.offsets()[2]];
      budget.add(s);
      out.mutable_strings()[i] = s;
    }
    return;
  }
  // Copy raw elements: works for every fixed-width type without conversion.
  const uint64_t elem = *storage_bytes(x.dtype(), 1);
  if (is_packed_dtype(x.dtype())) ctx.fail("does not support element type " + std::string(dtype_name(x.dtype())));
  const uint64_t n = out.element_count();
  const std::byte* pc = cond.raw();
  const std::byte* px = x.raw();
  const std::byte* py = y.raw();
  std::byte* po = out.mutable_raw();
  const auto bc = BroadcastBlock::of(cond.shape(), shape), bx = BroadcastBlock::of(x.shape(), shape),
             by = BroadcastBlock::of(y.shape(), shape);
  if (n > 0 && bc && bx && by) {
    // Elements moved as integers of their width (a memcpy of a run-time size per element costs more).
    auto walk = [&]<typename E>() {
      for_chunks(n, [&](uint64_t lo, uint64_t hi) {
        // Local copies: a store through a std::byte pointer may alias what is reached by reference.
        const std::byte *const c = pc, *const a = px, *const b = py;
        std::byte* const o = po;
        BroadcastBlock wc = *bc, wx = *bx, wy = *by;
        wc.start(lo);
        wx.start(lo);
        wy.start(lo);
        for (uint64_t i = lo; i < hi; ++i, wc.next(), wx.next(), wy.next())
          store_at<E>(o, i, c[wc.q] != std::byte{0} ? load_at<E>(a, wx.q) : load_at<E>(b, wy.q));
      });
    };
    switch (elem) {
      case 1: return walk.template operator()<uint8_t>();
      case 2: return walk.template operator()<uint16_t>();
      case 4: return walk.template operator()<uint32_t>();
      case 8: return walk.template operator()<uint64_t>();
      default: break;
    }
  }
  BroadcastIndex bi(shape, shapes);
  for (uint64_t i = 0; i < n; ++i, bi.next()) {
    if ((i & 65535) == 0) poll_deadline();
    const bool pick_x = load<bool>(cond, bi.offsets()[0]);
    std::memcpy(po + i * elem, (pick_x ? px : py) + bi.offsets()[pick_x ? 1 : 2] * elem, elem);
  }
}

}  // namespace onnxscope::ref
