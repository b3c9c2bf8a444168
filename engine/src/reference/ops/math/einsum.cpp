// Reference kernel: Einsum.
//
// Float inputs (float16, bfloat16, float, double) are widened to double and
// products are accumulated in double, then rounded once on store. Integer
// products are accumulated in 64-bit two's complement arithmetic, so results
// wrap like numpy's fixed-width integer matmul.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/einsum_plan.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using math::acc_t;
using math::values_as;

// Labels, sizes and strides from core/einsum_plan.h (shared with the CUDA
// engine); every output element sums the products over the summed labels.
void Einsum(KernelContext& ctx) {
  std::string eq;
  for (char ch : ctx.attr_string("equation")) if (ch != ' ') eq += ch;
  const size_t n_in = ctx.input_count();
  const DataType dt = ctx.input(0).dtype();
  std::vector<Shape> shapes;
  for (size_t i = 0; i < n_in; ++i) {
    if (ctx.input(i).dtype() != dt) ctx.fail("all inputs must have the same element type");
    shapes.push_back(ctx.input(i).shape());
  }
  einsum::Plan p;
  try {
    p = einsum::plan(eq, shapes);
  } catch (const std::invalid_argument& e) {
    ctx.fail(e.what());
  }
  dispatch<kFloats | kInts>(ctx, dt, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = acc_t<S>;
    std::vector<std::vector<T>> vals(n_in);
    for (size_t i = 0; i < n_in; ++i) vals[i] = values_as<T>(ctx.input(i));
    Tensor& out = ctx.allocate_output(0, dt, p.out_shape);
    std::vector<int64_t> base(n_in);
    uint64_t o = 0;
    for (nn::Counter oc(p.out_shape); oc.valid(); oc.next(), ++o) {  // an empty shape iterates once
      if ((o & 255) == 0) poll_deadline();
      for (size_t i = 0; i < n_in; ++i) {
        base[i] = 0;
        for (size_t d = 0; d < p.out_shape.size(); ++d) base[i] += oc.index[d] * p.out_stride[i][d];
      }
      T acc = T(0);
      for (nn::Counter sc(p.sum_shape); sc.valid(); sc.next()) {
        T prod = T(1);
        for (size_t i = 0; i < n_in; ++i) {
          int64_t off = base[i];
          for (size_t d = 0; d < p.sum_shape.size(); ++d) off += sc.index[d] * p.sum_stride[i][d];
          prod *= vals[i][static_cast<size_t>(off)];
        }
        acc += prod;
      }
      put<S>(out, o, static_cast<compute_t<S>>(acc));
    }
  });
}

}  // namespace onnxscope::ref
