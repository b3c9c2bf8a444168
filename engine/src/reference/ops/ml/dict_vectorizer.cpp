// Reference kernel: ai.onnx.ml DictVectorizer.
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

// A map's values placed at their keys' positions in the vocabulary, as a 1-D
// tensor of the vocabulary's length (the spec's "output 1-D tensor"; onnxruntime
// returns [1, V]). Keys outside the vocabulary are ignored, as in both onnx's
// Python reference and onnxruntime. A sequence of maps gives one row per map.
void DictVectorizer(KernelContext& ctx) {
  const Value* in = ctx.input_value(0);
  if (in == nullptr || (!in->is_map() && !in->is_sequence())) ctx.fail("input must be a map");
  const bool has_int = ctx.has_attr("int64_vocabulary"), has_str = ctx.has_attr("string_vocabulary");
  if (has_int == has_str) ctx.fail("exactly one of int64_vocabulary and string_vocabulary must be given");
  std::map<int64_t, int64_t> int_pos;
  std::map<std::string, int64_t> str_pos;
  int64_t vocab = 0;
  if (has_int) {
    const std::vector<int64_t> v = ctx.attr_ints("int64_vocabulary");
    vocab = static_cast<int64_t>(v.size());
    for (size_t i = v.size(); i-- > 0;) int_pos[v[i]] = static_cast<int64_t>(i);  // first occurrence wins
  } else {
    const std::vector<std::string> v = ctx.attr_strings("string_vocabulary");
    vocab = static_cast<int64_t>(v.size());
    for (size_t i = v.size(); i-- > 0;) str_pos[v[i]] = static_cast<int64_t>(i);
  }

  std::vector<const Value*> maps;
  if (in->is_map()) {
    maps.push_back(in);
  } else {
    for (const Value& item : in->items()) {
      if (!item.is_map()) ctx.fail("input sequence must hold maps");
      maps.push_back(&item);
    }
    if (maps.empty()) ctx.fail("input sequence of maps is empty: the value type is unknown");
  }
  const DataType vt = maps.front()->map_values().dtype();
  if (vt != DataType::Int64 && vt != DataType::Float && vt != DataType::Double && vt != DataType::String)
    ctx.fail("map values must be int64, float, double or string, got " + std::string(dtype_name(vt)));
  const auto rows = static_cast<int64_t>(maps.size());
  Shape out_shape = in->is_map() ? Shape{vocab} : Shape{rows, vocab};
  Tensor& y = vt == DataType::String ? allocate_strings(ctx, 0, out_shape) : ctx.allocate_output(0, vt, out_shape);
  const uint64_t eb = vt == DataType::String ? 0 : storage_bytes(vt, 1).value_or(0);
  StringBudget budget(&ctx);
  for (int64_t r = 0; r < rows; ++r) {
    const Tensor& keys = maps[r]->map_keys();
    const Tensor& vals = maps[r]->map_values();
    if (vals.dtype() != vt) ctx.fail("all maps must have the same value type");
    if (keys.is_string() != has_str)
      ctx.fail(std::string("map keys must be ") + (has_str ? "strings (string_vocabulary)" : "int64 (int64_vocabulary)"));
    for (uint64_t i = 0; i < keys.element_count(); ++i) {
      int64_t col = -1;
      if (has_str) {
        const auto it = str_pos.find(keys.strings()[i]);
        if (it != str_pos.end()) col = it->second;
      } else {
        const auto it = int_pos.find(load<int64_t>(keys, i));
        if (it != int_pos.end()) col = it->second;
      }
      if (col < 0) continue;
      const uint64_t o = static_cast<uint64_t>(r * vocab + col);
      if (vt == DataType::String) {
        budget.add(vals.strings()[i]);
        y.mutable_strings()[o] = vals.strings()[i];
      }
      else std::memcpy(y.mutable_raw() + o * eb, vals.raw() + i * eb, eb);
    }
  }
}

}  // namespace onnxscope::ref
