// Reference kernel: StringSplit.
#include <algorithm>
#include <bit>
#include <cctype>
#include <clocale>
#include <cmath>
#include <cwctype>
#include <limits>
#include <locale.h>
#include <map>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include <re2/re2.h>

#include "reference/kernel_util.h"
#include "reference/ops/text/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// Python's str.split(None, maxsplit): runs of whitespace separate, no empty parts.
std::vector<std::string> split_on_whitespace(const std::string& s, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (true) {
    while (i < s.size() && is_ascii_space(s[i])) ++i;
    if (i == s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.push_back(s.substr(i));  // the unsplit rest keeps its trailing whitespace
      break;
    }
    size_t j = i;
    while (j < s.size() && !is_ascii_space(s[j])) ++j;
    parts.push_back(s.substr(i, j - i));
    i = j;
  }
  return parts;
}

// Python's str.split(delimiter, maxsplit): every delimiter separates.
std::vector<std::string> split_on(const std::string& s, const std::string& delim, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    const size_t at = s.find(delim, start);
    if (at == std::string::npos) break;
    parts.push_back(s.substr(start, at - start));
    start = at + delim.size();
  }
  parts.push_back(s.substr(start));
  return parts;
}

}  // namespace

void StringSplit(KernelContext& ctx) {
  const Tensor& x = string_input(ctx, 0);
  const std::string delim = ctx.attr_string("delimiter", "");
  // Unset means unlimited; a negative value is treated the same (as Python does).
  const int64_t maxsplit = ctx.attr_int("maxsplit", -1);
  std::vector<std::vector<std::string>> split(x.element_count());
  size_t widest = 0;
  for (uint64_t i = 0; i < x.element_count(); ++i) {
    split[i] = delim.empty() ? split_on_whitespace(x.strings()[i], maxsplit) : split_on(x.strings()[i], delim, maxsplit);
    widest = std::max(widest, split[i].size());
  }
  Shape y_shape = x.shape();
  y_shape.push_back(static_cast<int64_t>(widest));
  // Parts x widest slots: one string of a million delimiters in a large tensor would ask for billions.
  const auto slots = checked_element_count(y_shape);
  if (!slots || *slots > ctx.max_tensor_bytes() / sizeof(std::string))
    ctx.fail("the split output of shape " + shape_to_string(y_shape) + " is larger than the tensor limit");
  std::vector<std::string> y(x.element_count() * widest);
  Tensor& z = ctx.allocate_output(1, DataType::Int64, x.shape());
  for (uint64_t i = 0; i < x.element_count(); ++i) {
    for (size_t k = 0; k < split[i].size(); ++k) y[i * widest + k] = std::move(split[i][k]);
    store<int64_t>(z, i, static_cast<int64_t>(split[i].size()));
  }
  ctx.set_output(0, Tensor::from_strings(std::move(y_shape), std::move(y)));
}

}  // namespace onnxscope::ref
