// Reference kernel: ai.onnx.ml ZipMap.
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

// One map per row of [N, C] (a 1-D input is one row), keys = the class labels.
// Map entries are in ascending key order and a repeated label keeps the last
// column, as in onnxruntime (maps are unordered; this fixes one order).
void ZipMap(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::Float) ctx.fail("input must be float, got " + std::string(dtype_name(x.dtype())));
  const bool has_int = ctx.has_attr("classlabels_int64s"), has_str = ctx.has_attr("classlabels_strings");
  if (has_int == has_str) ctx.fail("exactly one of classlabels_int64s and classlabels_strings must be given");
  const MlRows rc = ml_rows(ctx, x);
  const std::vector<int64_t> ilabels = ctx.attr_ints("classlabels_int64s");
  const std::vector<std::string> slabels = ctx.attr_strings("classlabels_strings");
  const auto n_labels = static_cast<int64_t>(has_int ? ilabels.size() : slabels.size());
  if (n_labels != rc.cols)
    ctx.fail("input has " + std::to_string(rc.cols) + " columns but there are " + std::to_string(n_labels) + " class labels");
  // Column of each map entry, in key order.
  std::vector<int64_t> cols;
  if (has_int) {
    std::map<int64_t, int64_t> m;
    for (int64_t c = 0; c < n_labels; ++c) m[ilabels[c]] = c;
    for (const auto& [k, c] : m) cols.push_back(c);
  } else {
    std::map<std::string, int64_t> m;
    for (int64_t c = 0; c < n_labels; ++c) m[slabels[c]] = c;
    for (const auto& [k, c] : m) cols.push_back(c);
  }
  const auto n = static_cast<int64_t>(cols.size());
  Tensor keys;
  if (has_int) {
    keys = Tensor::zeros(DataType::Int64, {n});
    for (int64_t i = 0; i < n; ++i) store<int64_t>(keys, i, ilabels[cols[i]]);
  } else {
    std::vector<std::string> k;
    for (int64_t c : cols) k.push_back(slabels[c]);
    keys = Tensor::from_strings({n}, std::move(k));
  }
  std::vector<Value> items;
  for (int64_t r = 0; r < rc.rows; ++r) {
    Tensor vals = Tensor::zeros(DataType::Float, {n});
    for (int64_t i = 0; i < n; ++i) store<float>(vals, i, load<float>(x, r * rc.cols + cols[i]));
    items.push_back(Value::map(keys, std::move(vals)));
  }
  TypeInfo elem;
  elem.kind = TypeInfo::Kind::Map;
  elem.map_key = has_int ? DataType::Int64 : DataType::String;
  elem.inner = std::make_shared<TypeInfo>(TypeInfo::tensor(DataType::Float));
  ctx.set_output(0, Value::sequence(std::move(items), std::move(elem)));
}

}  // namespace onnxscope::ref
