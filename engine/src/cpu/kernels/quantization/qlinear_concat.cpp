// com.microsoft QLinearConcat (onnxruntime's quantizer writes it for Concat:
// a QOperator DenseNet-121's 62, ShuffleNetV2's 16) with per-tensor
// parameters: each input copied, or requantized to Y's parameters through
// the reference's own 256-entry table (reference/ops/quantization/common.h,
// requantize_table) with the byte lookup, rows split across the thread pool.
// The bytes are the reference's by construction.
#include <algorithm>
#include <climits>  // INT_MAX
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/kernels/quantization/int8_values.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/quantization/byte_lookup.h"
#include "cpu/thread_pool.h"
#include "reference/ops/quantization/common.h"

namespace onnxscope::cpu {
namespace {

bool positive_scale(const Tensor* t) {
  if (!t || t->dtype() != DataType::Float || t->element_count() != 1) return false;
  const float s = t->data<float>()[0];
  return s > 0 && std::isfinite(s);
}

// A zero point of `type` with one value, or absent.
bool zero_point_ok(const KernelContext& ctx, size_t i, DataType type) {
  const Value* v = ctx.input_count() > i ? ctx.input_value(i) : nullptr;
  return !v || (v->is_tensor() && v->tensor().dtype() == type && v->tensor().element_count() == 1);
}

int zero_point(const KernelContext& ctx, size_t i) {
  const Tensor* t = input_at(ctx, i);
  if (!t) return 0;
  return t->dtype() == DataType::Int8 ? t->data<int8_t>()[0] : t->data<uint8_t>()[0];
}

// The output shape, or nullopt where the reference should name what is wrong.
std::optional<std::pair<Shape, size_t>> problem_of(const KernelContext& ctx) {
  const size_t n = ctx.input_count();
  if (n < 5 || (n - 2) % 3 != 0 || !positive_scale(input_at(ctx, 0))) return std::nullopt;
  const Tensor* first = input_at(ctx, 2);
  if (!first || (first->dtype() != DataType::Uint8 && first->dtype() != DataType::Int8) || first->rank() == 0)
    return std::nullopt;
  const DataType type = first->dtype();
  const Tensor* yz = input_at(ctx, 1);
  if (!yz || yz->dtype() != type || yz->element_count() != 1) return std::nullopt;
  if (!ctx.has_attr("axis")) return std::nullopt;  // required: the reference says so
  const int64_t rank = first->rank(), axis_attr = ctx.attr_int("axis", 0);
  if (axis_attr < -rank || axis_attr >= rank) return std::nullopt;
  const size_t axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + rank : axis_attr);
  Shape out = first->shape();
  out[axis] = 0;
  for (size_t k = 2; k < n; k += 3) {
    const Tensor* x = input_at(ctx, k);
    if (!x || x->dtype() != type || x->rank() != rank || !positive_scale(input_at(ctx, k + 1)) ||
        !zero_point_ok(ctx, k + 2, type))
      return std::nullopt;
    for (size_t d = 0; d < out.size(); ++d)
      if (d != axis && x->shape()[d] != first->shape()[d]) return std::nullopt;
    if (__builtin_add_overflow(out[axis], x->shape()[axis], &out[axis])) return std::nullopt;
  }
  return std::make_pair(out, axis);
}

bool accepts(const KernelContext& ctx) { return problem_of(ctx).has_value(); }

void QLinearConcat(KernelContext& ctx) {
  const auto p = problem_of(ctx);
  if (!p) ctx.fail("problem not supported by the CPU QLinearConcat");
  const Shape out = p->first;  // (not a structured binding: the lambda below reads them, clang < 16 refuses that)
  const size_t axis = p->second;
  const DataType type = ctx.input(2).dtype();
  Tensor& y = uninitialized_output(ctx, 0, type, out);
  if (y.element_count() == 0) return;
  const size_t inputs = (ctx.input_count() - 2) / 3;
  const float y_scale = ctx.input(0).data<float>()[0];
  const int y_zp = zero_point(ctx, 1);
  // Per input: copied, or its table.
  std::vector<std::vector<uint8_t>> tables(inputs);
  for (size_t k = 0; k < inputs; ++k) {
    const float x_scale = ctx.input(3 + 3 * k).data<float>()[0];
    const int x_zp = zero_point(ctx, 4 + 3 * k);
    if (x_scale == y_scale && x_zp == y_zp) continue;
    tables[k].resize(256);
    if (type == DataType::Uint8)
      ref::requantize_table<uint8_t>(x_scale, static_cast<uint8_t>(x_zp), y_scale, static_cast<uint8_t>(y_zp), tables[k].data());
    else
      ref::requantize_table<int8_t>(x_scale, static_cast<int8_t>(x_zp), y_scale, static_cast<int8_t>(y_zp),
                                    reinterpret_cast<int8_t*>(tables[k].data()));
  }
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= out[d];
  for (size_t d = axis + 1; d < out.size(); ++d) inner *= out[d];
  const int64_t row = out[axis] * inner;
  auto* dst = reinterpret_cast<uint8_t*>(y.mutable_raw());
  parallel_for(outer, std::max<int64_t>(1, 65536 / std::max<int64_t>(row, 1)), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      int64_t at = 0;
      for (size_t k = 0; k < inputs; ++k) {
        const Tensor& x = ctx.input(2 + 3 * k);
        const int64_t chunk = x.shape()[axis] * inner;
        const auto* src = reinterpret_cast<const uint8_t*>(x.raw()) + o * chunk;
        if (tables[k].empty()) std::memcpy(dst + o * row + at, src, static_cast<size_t>(chunk));
        else lookup_bytes(src, dst + o * row + at, chunk, tables[k].data());
        at += chunk;
      }
    }
  });
}

}  // namespace

void register_qlinear_concat_kernels(KernelRegistry& r) {
  r.add(KernelDef{"com.microsoft", "QLinearConcat", 1, INT_MAX, "cpu-simd", QLinearConcat, accepts});
}

}  // namespace onnxscope::cpu
