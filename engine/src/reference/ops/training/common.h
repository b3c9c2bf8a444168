// Helpers shared by the reference's optimizer kernels (Adagrad, Adam, Momentum).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "reference/kernel_util.h"

namespace onnxscope::ref {

// --- ai.onnx.preview.training ----------------------------------------------------
// Inputs R, T, then `groups` lists of n tensors (X..., G..., ...); outputs are
// `outs` lists of n tensors. Each update is computed in double per element
// with numpy broadcasting of the n-th tensors of the lists, and rounded to X's type.

struct Optimizer {
  double r = 0;
  int64_t t = 0;
  size_t n = 0;
};

inline Optimizer optimizer_inputs(KernelContext& ctx, size_t groups, size_t outs) {
  const size_t count = ctx.input_count();
  if (count < 2 + groups || (count - 2) % groups != 0)
    ctx.fail("expects R, T and " + std::to_string(groups) + " equally long lists of tensors");
  Optimizer o;
  o.n = (count - 2) / groups;
  const Tensor& r = ctx.input(0);
  const Tensor& t = ctx.input(1);
  if (r.element_count() != 1 || (r.dtype() != DataType::Float && r.dtype() != DataType::Double))
    ctx.fail("R must be a float or double scalar");
  if (t.element_count() != 1 || t.dtype() != DataType::Int64) ctx.fail("T must be an int64 scalar");
  o.r = r.element_as_double(0);
  o.t = load<int64_t>(t, 0);
  if (ctx.output_count() > outs * o.n) ctx.fail("too many outputs");
  return o;
}

// Runs update(values_in, values_out) per element over inputs 2 + g*n + i.
template <size_t G, size_t O, typename Update>
void optimizer_apply(KernelContext& ctx, const Optimizer& o, Update update) {
  for (size_t i = 0; i < o.n; ++i) {
    const Tensor* in[G];
    const Shape* shapes[G];
    for (size_t g = 0; g < G; ++g) {
      in[g] = &ctx.input(2 + g * o.n + i);
      shapes[g] = &in[g]->shape();
      if (in[g]->dtype() != in[0]->dtype()) ctx.fail("X, G and the state tensors must have the same type");
    }
    const DataType type = in[0]->dtype();
    if (type != DataType::Float && type != DataType::Double) ctx.fail("tensors must be float or double");
    const Shape out_shape = broadcast_shapes(ctx, shapes);
    Tensor out[O];
    for (size_t k = 0; k < O; ++k) out[k] = Tensor::zeros(type, out_shape);
    BroadcastIndex bi(out_shape, shapes);
    double vin[G], vout[O];
    for (uint64_t e = 0; e < out[0].element_count(); ++e, bi.next()) {
      for (size_t g = 0; g < G; ++g)
        vin[g] = type == DataType::Float ? static_cast<double>(load<float>(*in[g], bi.offsets()[g])) : load<double>(*in[g], bi.offsets()[g]);
      update(vin, vout);
      for (size_t k = 0; k < O; ++k) {
        if (type == DataType::Float) store<float>(out[k], e, static_cast<float>(vout[k]));
        else store<double>(out[k], e, vout[k]);
      }
    }
    for (size_t k = 0; k < O; ++k)
      if (k * o.n + i < ctx.output_count()) ctx.set_output(k * o.n + i, std::move(out[k]));
  }
}

}  // namespace onnxscope::ref
