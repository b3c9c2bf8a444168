// QuantizeLinear's and DequantizeLinear's parameter layout (core/quant_plan.h).
#include "core/quant_plan.h"

#include <stdexcept>
#include <string>

namespace onnxscope::quant {

namespace {
[[noreturn]] void fail(const std::string& why) { throw std::invalid_argument(why); }
uint64_t count(const Shape& s) {
  uint64_t n = 1;
  for (int64_t d : s) n *= static_cast<uint64_t>(d);
  return n;
}
}  // namespace

ParamIndex param_index(const Shape& x, const Shape& scale, const Shape* zero_point, int64_t axis_attr, int64_t block_size) {
  // Shapes must match; a one-element [1] and a scalar are the same per-tensor parameter.
  if (zero_point && *zero_point != scale &&
      !(count(*zero_point) == 1 && count(scale) == 1 && zero_point->size() <= 1 && scale.size() <= 1))
    fail("zero point shape " + shape_to_string(*zero_point) + " differs from scale shape " + shape_to_string(scale));
  ParamIndex q;
  // Per-tensor: a scalar scale, or a one-element 1-D one outside blocked mode.
  if (scale.empty() || (count(scale) == 1 && scale.size() == 1 && block_size == 0)) return q;
  const auto rank = static_cast<int64_t>(x.size());
  if (rank == 0) fail("a scalar input needs a scalar scale, got " + shape_to_string(scale));
  if (axis_attr < -rank || axis_attr >= rank)
    fail("axis " + std::to_string(axis_attr) + " is out of range for rank " + std::to_string(rank));
  const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  q.axis_dim = x[size_t(axis)];
  q.inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) q.inner *= x[size_t(d)];
  if (block_size == 0) {
    if (scale.size() != 1 || scale[0] != q.axis_dim)
      fail("per-axis scale must be 1-D of length " + std::to_string(q.axis_dim) + " (axis " + std::to_string(axis) +
           "), got " + shape_to_string(scale));
    q.mode = ParamIndex::PerAxis;
    return q;
  }
  if (block_size < 0) fail("block_size must be positive, got " + std::to_string(block_size));
  if (static_cast<int64_t>(scale.size()) != rank)
    fail("blocked scale must have the rank of the input, got " + shape_to_string(scale));
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis) continue;
    if (scale[size_t(d)] != x[size_t(d)])
      fail("blocked scale shape " + shape_to_string(scale) + " must match input shape " + shape_to_string(x) +
           " except on axis " + std::to_string(axis));
  }
  q.scale_axis_dim = scale[size_t(axis)];
  const int64_t needed = (q.axis_dim + block_size - 1) / block_size;
  if (q.scale_axis_dim != needed)
    fail("blocked scale has " + std::to_string(q.scale_axis_dim) + " blocks on axis " + std::to_string(axis) +
         ", block_size " + std::to_string(block_size) + " needs " + std::to_string(needed));
  q.mode = ParamIndex::Blocked;
  q.block = block_size;
  return q;
}

}  // namespace onnxscope::quant
