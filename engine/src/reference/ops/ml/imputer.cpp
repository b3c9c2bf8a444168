// Reference kernel: ai.onnx.ml Imputer.
//
// Where the spec leaves a detail open this kernel follows onnxruntime, the
// implementation these operators were written for (each such place says so).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/ml/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// Elements equal to the replaced value (NaN matches NaN) become the imputed
// value of their column (the last axis); one imputed value applies to all columns.
void Imputer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!ml_numeric_input(x.dtype()))
    ctx.fail("input must be float, double, int64 or int32, got " + std::string(dtype_name(x.dtype())));
  const bool is_float = x.dtype() == DataType::Float || x.dtype() == DataType::Double;
  if (x.rank() < 1) ctx.fail("input must have rank >= 1");
  const int64_t f = x.shape().back();
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  if (is_float) {
    const std::vector<float> imputed = ctx.attr_floats("imputed_value_floats");
    if (imputed.empty()) ctx.fail("imputed_value_floats must be given for a float input");
    if (imputed.size() != 1 && static_cast<int64_t>(imputed.size()) != f)
      ctx.fail("imputed_value_floats must have 1 or " + std::to_string(f) + " values, has " + std::to_string(imputed.size()));
    const double replaced = ctx.attr_float("replaced_value_float", 0.0f);
    dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      for (uint64_t i = 0; i < x.element_count(); ++i) {
        const double v = static_cast<double>(get<S>(x, i));
        const bool hit = std::isnan(replaced) ? std::isnan(v) : v == replaced;
        const double r = imputed.size() == 1 ? imputed[0] : imputed[static_cast<size_t>(static_cast<int64_t>(i) % f)];
        put<S>(y, i, static_cast<compute_t<S>>(hit ? r : v));
      }
    });
  } else {
    const std::vector<int64_t> imputed = ctx.attr_ints("imputed_value_int64s");
    if (imputed.empty()) ctx.fail("imputed_value_int64s must be given for an integer input");
    if (imputed.size() != 1 && static_cast<int64_t>(imputed.size()) != f)
      ctx.fail("imputed_value_int64s must have 1 or " + std::to_string(f) + " values, has " + std::to_string(imputed.size()));
    const int64_t replaced = ctx.attr_int("replaced_value_int64", 0);
    dispatch<kSignedInts>(ctx, x.dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      for (uint64_t i = 0; i < x.element_count(); ++i) {
        const int64_t v = load<S>(x, i);
        const int64_t r = imputed.size() == 1 ? imputed[0] : imputed[static_cast<size_t>(static_cast<int64_t>(i) % f)];
        store<S>(y, i, static_cast<S>(v == replaced ? r : v));  // imputed values must fit the type (spec)
      }
    });
  }
}

}  // namespace onnxscope::ref
