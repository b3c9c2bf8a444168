// Reference kernel: PRelu, its slope broadcast to the input.
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
#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void PRelu(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor slope = c.input(1);
  if (x.dtype() != slope.dtype()) c.fail("X and slope must have the same element type");
  // Opsets 1 and 6 define no broadcasting; exporters of that era (PyTorch)
  // write one slope per channel, shape [C], meaning axis 1. Read it so.
  if (c.opset_version() < 7 && slope.rank() == 1 && x.rank() >= 2 && slope.shape()[0] == x.shape()[1] &&
      slope.shape()[0] != 1) {
    Shape per_channel(static_cast<size_t>(x.rank() - 1), 1);
    per_channel[0] = slope.shape()[0];
    slope = Tensor::from_buffer(slope.dtype(), per_channel, slope.buffer());
  }
  const Shape* shapes[] = {&x.shape(), &slope.shape()};
  // Unidirectional: the slope broadcasts to X, never the other way.
  if (broadcast_shapes(c, shapes) != x.shape())
    c.fail("slope of shape " + shape_to_string(slope.shape()) + " does not broadcast to X of shape " +
           shape_to_string(x.shape()));
  Tensor& y = c.allocate_output(0, x.dtype(), x.shape());
  dispatch<kFloats | kInts>(c, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    BroadcastIndex bi(x.shape(), shapes);
    for (uint64_t i = 0; i < y.element_count(); ++i, bi.next()) {
      const C v = get<S>(x, i);
      put<S>(y, i, v < C(0) ? static_cast<C>(v * get<S>(slope, bi.offsets()[1])) : v);
    }
  });
}

}  // namespace onnxscope::ref
