// Reference kernel: TfIdfVectorizer.
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
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

// Token type T is int64_t (int32/int64 input, pool_int64s) or std::string.
template <typename T>
void tfidf_count(KernelContext& ctx, const std::vector<T>& tokens, const std::vector<T>& pool, int64_t rows,
                 int64_t cols, std::vector<int64_t>& counts, int64_t output_size) {
  const std::vector<int64_t> ngram_counts = ctx.attr_ints("ngram_counts");
  const std::vector<int64_t> ngram_indexes = ctx.attr_ints("ngram_indexes");
  const int64_t min_n = ctx.attr_int("min_gram_length", 0);
  const int64_t max_n = ctx.attr_int("max_gram_length", 0);
  const int64_t max_skip = ctx.attr_int("max_skip_count", 0);
  if (min_n < 1 || max_n < min_n) ctx.fail("need 1 <= min_gram_length <= max_gram_length");
  if (max_skip < 0) ctx.fail("max_skip_count must be >= 0");

  // The pool's n-grams of the wanted lengths, each to its n-gram number in pool.
  std::map<std::vector<T>, int64_t> grams;
  const auto pool_size = static_cast<int64_t>(pool.size());
  int64_t gram_number = 0;
  for (size_t k = 0; k < ngram_counts.size(); ++k) {
    const auto n = static_cast<int64_t>(k + 1);
    const int64_t begin = ngram_counts[k];
    const int64_t end = k + 1 < ngram_counts.size() ? ngram_counts[k + 1] : pool_size;
    if (begin < 0 || end < begin || end > pool_size) ctx.fail("ngram_counts is not a non-decreasing list of pool offsets");
    if ((end - begin) % n != 0) ctx.fail("the pool's " + std::to_string(n) + "-grams do not fill a whole number of n-grams");
    for (int64_t p = begin; p < end; p += n, ++gram_number) {
      if (n < min_n || n > max_n) continue;
      if (gram_number >= static_cast<int64_t>(ngram_indexes.size())) ctx.fail("ngram_indexes is shorter than the pool");
      grams[std::vector<T>(pool.begin() + p, pool.begin() + p + n)] = gram_number;
    }
  }

  std::vector<T> gram;
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = tokens.data() + r * cols;
    for (int64_t start = 0; start < cols; ++start) {
      for (int64_t n = min_n; n <= max_n; ++n) {
        // Unigrams are not affected by skips: count them once.
        const int64_t skips = n == 1 ? 0 : max_skip;
        for (int64_t s = 0; s <= skips; ++s) {
          const int64_t step = s + 1;
          if (start + (n - 1) * step >= cols) break;
          gram.assign(static_cast<size_t>(n), T{});
          for (int64_t k = 0; k < n; ++k) gram[static_cast<size_t>(k)] = row[start + k * step];
          const auto it = grams.find(gram);
          if (it != grams.end()) ++counts[static_cast<size_t>(r * output_size + ngram_indexes[static_cast<size_t>(it->second)])];
        }
      }
    }
  }
}

}  // namespace

void TfIdfVectorizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::string mode = ctx.attr_string("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") ctx.fail("mode must be TF, IDF or TFIDF, got '" + mode + "'");
  const std::vector<int64_t> ngram_indexes = ctx.attr_ints("ngram_indexes");
  if (ngram_indexes.empty()) ctx.fail("ngram_indexes must not be empty");
  for (int64_t v : ngram_indexes)
    if (v < 0) ctx.fail("ngram_indexes must be >= 0");
  const int64_t output_size = *std::max_element(ngram_indexes.begin(), ngram_indexes.end()) + 1;
  const std::vector<float> weights = ctx.attr_floats("weights");
  if (!weights.empty() && weights.size() != ngram_indexes.size()) ctx.fail("weights must have as many entries as ngram_indexes");

  if (x.rank() > 2) ctx.fail("input must be 1-D or 2-D, got " + shape_to_string(x.shape()));
  const int64_t rows = x.rank() == 2 ? x.shape()[0] : 1;
  const int64_t cols = x.rank() == 0 ? 1 : x.shape().back();
  std::vector<int64_t> counts(static_cast<size_t>(rows * output_size), 0);

  const bool has_ints = ctx.has_attr("pool_int64s"), has_strings = ctx.has_attr("pool_strings");
  if (has_ints == has_strings) ctx.fail("exactly one of pool_int64s and pool_strings must be given");
  if (x.is_string()) {
    if (!has_strings) ctx.fail("a string input needs pool_strings");
    tfidf_count<std::string>(ctx, x.strings(), ctx.attr_strings("pool_strings"), rows, cols, counts, output_size);
  } else {
    if (x.dtype() != DataType::Int32 && x.dtype() != DataType::Int64)
      ctx.fail("input must be string, int32 or int64, got " + std::string(dtype_name(x.dtype())));
    if (!has_ints) ctx.fail("an integer input needs pool_int64s");
    std::vector<int64_t> tokens(x.element_count());
    for (uint64_t i = 0; i < x.element_count(); ++i)
      tokens[i] = x.dtype() == DataType::Int32 ? load<int32_t>(x, i) : load<int64_t>(x, i);
    tfidf_count<int64_t>(ctx, tokens, ctx.attr_ints("pool_int64s"), rows, cols, counts, output_size);
  }

  // Weight of each output coordinate: the spec gives weights per pool n-gram,
  // n-gram i lands at coordinate ngram_indexes[i]. (onnxruntime and onnx's
  // Python reference index weights by output coordinate instead; the two
  // agree whenever ngram_indexes is the identity.)
  std::vector<double> coord_weight(static_cast<size_t>(output_size), 1.0);
  if (!weights.empty())
    for (size_t i = 0; i < ngram_indexes.size(); ++i) coord_weight[static_cast<size_t>(ngram_indexes[i])] = weights[i];

  const bool idf = mode == "IDF", tfidf = mode == "TFIDF";
  Tensor& y = ctx.allocate_output(0, DataType::Float, x.rank() == 2 ? Shape{rows, output_size} : Shape{output_size});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < output_size; ++c) {
      const auto i = static_cast<size_t>(r * output_size + c);
      const double tf = static_cast<double>(counts[i]);
      double v = tf;
      if (idf) v = tf > 0 ? coord_weight[static_cast<size_t>(c)] : 0.0;
      else if (tfidf) v = tf * coord_weight[static_cast<size_t>(c)];
      store<float>(y, i, static_cast<float>(v));
    }
  }
}

}  // namespace onnxscope::ref
