// Where(condition, X, Y) with any numpy broadcast, for every fixed-width
// element type (selected by element size): rows from broadcast.h, rows
// split across the thread pool.
#include <cstring>
#include <type_traits>

#include "core/target_clones.h"
#include "cpu/kernels/broadcast.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"

namespace onnxscope::cpu {
namespace {

bool accepts(const KernelContext& ctx) {
  if (ctx.input_count() != 3) return false;
  std::vector<const Shape*> shapes;
  for (size_t i = 0; i < 3; ++i) {
    const Value* v = ctx.input_value(i);
    if (!v || !v->is_tensor()) return false;
    shapes.push_back(&v->tensor().shape());
  }
  const Tensor& x = ctx.input_value(1)->tensor();
  if (ctx.input_value(0)->tensor().dtype() != DataType::Bool || x.is_string() || is_packed_dtype(x.dtype()) ||
      ctx.input_value(2)->tensor().dtype() != x.dtype())
    return false;
  return broadcast_rows(shapes).has_value();
}

// One row with inner steps SC, SX, SY (0 or 1) known at compile time, both
// values loaded and then selected (a load through a chosen pointer is control
// flow to the vectoriser), so the loop vectorises.
template <int SC, int SX, int SY, typename T>
void select_row(const uint8_t* c, const T* x, const T* y, T* o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T a = x[i * SX], b = y[i * SY];
    o[i] = c[i * SC] ? a : b;
  }
}

// The 4-byte rows (float32, int32), the common case, also built for AVX-512 and
// AVX2 (clang cannot clone templates: one function per step pattern).
#define ONNXSCOPE_SELECT4(SC, SX, SY)                                                                        \
  ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default") void select4_##SC##SX##SY(                   \
      const uint8_t* c, const uint32_t* x, const uint32_t* y, uint32_t* o, int64_t n) {                    \
    for (int64_t i = 0; i < n; ++i) {                                                                      \
      const uint32_t a = x[i * SX], b = y[i * SY];                                                         \
      o[i] = c[i * SC] ? a : b;                                                                            \
    }                                                                                                      \
  }
ONNXSCOPE_SELECT4(0, 0, 0)
ONNXSCOPE_SELECT4(0, 0, 1)
ONNXSCOPE_SELECT4(0, 1, 0)
ONNXSCOPE_SELECT4(0, 1, 1)
ONNXSCOPE_SELECT4(1, 0, 0)
ONNXSCOPE_SELECT4(1, 0, 1)
ONNXSCOPE_SELECT4(1, 1, 0)
ONNXSCOPE_SELECT4(1, 1, 1)
#undef ONNXSCOPE_SELECT4

template <typename T>
void select(const BroadcastRows& b, const uint8_t* c, const T* x, const T* y, T* out) {
  using Row = void (*)(const uint8_t*, const T*, const T*, T*, int64_t);
  Row row = nullptr;
  if constexpr (std::is_same_v<T, uint32_t>) {
    static constexpr Row rows4[8] = {select4_000, select4_001, select4_010, select4_011,
                                     select4_100, select4_101, select4_110, select4_111};
    row = rows4[b.step[0] * 4 + b.step[1] * 2 + b.step[2]];
  } else {
    static constexpr Row rows[8] = {select_row<0, 0, 0, T>, select_row<0, 0, 1, T>, select_row<0, 1, 0, T>,
                                    select_row<0, 1, 1, T>, select_row<1, 0, 0, T>, select_row<1, 0, 1, T>,
                                    select_row<1, 1, 0, T>, select_row<1, 1, 1, T>};
    row = rows[b.step[0] * 4 + b.step[1] * 2 + b.step[2]];
  }
  parallel_for(b.rows, std::max<int64_t>(1, 16384 / b.inner), [&](int64_t r0, int64_t r1) {
    b.for_each_row(r0, r1, [&](int64_t r, const auto& off) {
      row(c + off[0], x + off[1], y + off[2], out + r * b.inner, b.inner);
    });
  });
}

void Where(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  const BroadcastRows b = *broadcast_rows({&c.shape(), &x.shape(), &y.shape()});
  Tensor& out = uninitialized_output(ctx, 0, x.dtype(), b.out);
  if (out.element_count() == 0) return;
  const auto* pc = reinterpret_cast<const uint8_t*>(c.raw());
  switch (*storage_bytes(x.dtype(), 1)) {
    case 1: select(b, pc, reinterpret_cast<const uint8_t*>(x.raw()), reinterpret_cast<const uint8_t*>(y.raw()), reinterpret_cast<uint8_t*>(out.mutable_raw())); break;
    case 2: select(b, pc, reinterpret_cast<const uint16_t*>(x.raw()), reinterpret_cast<const uint16_t*>(y.raw()), reinterpret_cast<uint16_t*>(out.mutable_raw())); break;
    case 4: select(b, pc, reinterpret_cast<const uint32_t*>(x.raw()), reinterpret_cast<const uint32_t*>(y.raw()), reinterpret_cast<uint32_t*>(out.mutable_raw())); break;
    case 8: select(b, pc, reinterpret_cast<const uint64_t*>(x.raw()), reinterpret_cast<const uint64_t*>(y.raw()), reinterpret_cast<uint64_t*>(out.mutable_raw())); break;
    default: {
      struct Pair { uint64_t a, b; };
      select(b, pc, reinterpret_cast<const Pair*>(x.raw()), reinterpret_cast<const Pair*>(y.raw()), reinterpret_cast<Pair*>(out.mutable_raw()));
    }
  }
}

}  // namespace

void register_where_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Where", 9, INT_MAX, "cpu-copy", Where, accepts});
}

}  // namespace onnxscope::cpu
