// Reference kernel: ai.onnx.ml CastMap.
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

namespace {

// map(int64 -> string | float) to a [1, K] tensor of the values in ascending key
// order (DENSE: K = map size; SPARSE: K = max_map, the key is the column).
// The output is [1, K] as in onnxruntime (the spec gives no rank).

// The numbers a string value stands for (the whole string must parse).
double parse_number(const KernelContext& ctx, const std::string& s) {
  const char* begin = s.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  if (end == begin || *end != '\0') ctx.fail("map value '" + s + "' is not a number");
  return v;
}

}  // namespace

void CastMap(KernelContext& ctx) {
  const Value* in = ctx.input_value(0);
  if (in == nullptr || !in->is_map()) ctx.fail("input must be a map(int64, string|float)");
  const Tensor& keys = in->map_keys();
  const Tensor& vals = in->map_values();
  if (keys.dtype() != DataType::Int64) ctx.fail("map keys must be int64");
  if (vals.dtype() != DataType::String && vals.dtype() != DataType::Float)
    ctx.fail("map values must be string or float, got " + std::string(dtype_name(vals.dtype())));
  const std::string cast_to = ctx.attr_string("cast_to", "TO_FLOAT");
  const std::string form = ctx.attr_string("map_form", "DENSE");
  if (cast_to != "TO_FLOAT" && cast_to != "TO_STRING" && cast_to != "TO_INT64")
    ctx.fail("cast_to must be TO_FLOAT, TO_STRING or TO_INT64, got '" + cast_to + "'");
  if (form != "DENSE" && form != "SPARSE") ctx.fail("map_form must be DENSE or SPARSE, got '" + form + "'");

  // Entry order by ascending key (a later duplicate key replaces an earlier one).
  std::map<int64_t, uint64_t> order;
  for (uint64_t i = 0; i < keys.element_count(); ++i) order[load<int64_t>(keys, i)] = i;

  const bool sparse = form == "SPARSE";
  int64_t width = static_cast<int64_t>(order.size());
  if (sparse) {
    width = ctx.attr_int("max_map", 1);
    if (width < 0) ctx.fail("max_map must be >= 0");
    for (const auto& [k, i] : order)
      if (k < 0 || k >= width)
        ctx.fail("map key " + std::to_string(k) + " is outside [0, max_map) = [0, " + std::to_string(width) + ")");
  }
  // Output column of each entry, in key order.
  std::vector<std::pair<int64_t, uint64_t>> cols;
  int64_t c = 0;
  for (const auto& [k, i] : order) cols.emplace_back(sparse ? k : c++, i);

  const bool from_string = vals.is_string();
  if (cast_to == "TO_STRING") {
    // Floats print like C's "%f"; columns no key fills hold "0.f" (onnxruntime's pad value).
    Tensor& y = allocate_strings(ctx, 0, {1, width});
    std::fill(y.mutable_strings().begin(), y.mutable_strings().end(), std::string("0.f"));
    StringBudget budget(&ctx);
    for (const auto& [col, i] : cols) {
      if (from_string) {
        budget.add(vals.strings()[i]);
        y.mutable_strings()[col] = vals.strings()[i];
      } else {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%f", static_cast<double>(load<float>(vals, i)));
        y.mutable_strings()[col] = buf;
      }
    }
  } else {
    const bool to_float = cast_to == "TO_FLOAT";
    Tensor& y = ctx.allocate_output(0, to_float ? DataType::Float : DataType::Int64, {1, width});
    for (const auto& [col, i] : cols) {
      const double v = from_string ? parse_number(ctx, vals.strings()[i]) : static_cast<double>(load<float>(vals, i));
      if (to_float) {
        store<float>(y, col, static_cast<float>(v));
      } else {
        if (!(v > -9.3e18 && v < 9.3e18)) ctx.fail("map value does not fit in int64");
        store<int64_t>(y, col, static_cast<int64_t>(v));  // truncates toward zero
      }
    }
  }
}

}  // namespace onnxscope::ref
