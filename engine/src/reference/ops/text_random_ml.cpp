// Reference kernels: strings, images, random, ai.onnx.ml, ai.onnx.preview.training: StringNormalizer, StringSplit, StringConcat, RegexFullMatch, TfIdfVectorizer, ImageDecoder, RandomNormal(Like), RandomUniform(Like), Bernoulli, Multinomial, ai.onnx.ml ops, Adagrad, Adam, Momentum.
//
// This file holds the string ops, TfIdfVectorizer and the random ops; the
// image decoder and the ai.onnx.ml / training ops live in
// text_random_ml_image.cpp and text_random_ml_ml.cpp.
//
// Random ops are deterministic: the generator is seeded from the node's
// 'seed' attribute when given, else from ctx.seed(), mixed with the node's
// first output name so that two unseeded nodes do not draw the same stream.
// Their values cannot match another implementation's stream.
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
#include "reference/ops/ops.h"
#include "reference/ops/text_random_ml_parts.h"

namespace onnxscope::ref {
namespace {

// --- UTF-8 case mapping ------------------------------------------------------

// A C library locale for case mapping (LC_CTYPE only), freed on scope exit.
class CaseLocale {
 public:
  explicit CaseLocale(const std::string& name) {
    // Try the name as given (with a UTF-8 codeset added when it names none);
    // fall back to C.UTF-8, whose tables cover Unicode's simple case mappings.
    // (glibc caches failed look-ups, so never ask for a malformed name.)
    std::vector<std::string> tries;
    if (!name.empty()) {
      tries.push_back(name);
      if (name.find('.') == std::string::npos) tries.push_back(name + ".UTF-8");
    }
    tries.push_back("C.UTF-8");
    for (const std::string& t : tries) {
      loc_ = newlocale(LC_CTYPE_MASK, t.c_str(), static_cast<locale_t>(nullptr));
      if (loc_ != static_cast<locale_t>(nullptr)) return;
    }
  }
  ~CaseLocale() {
    if (loc_ != static_cast<locale_t>(nullptr)) freelocale(loc_);
  }
  CaseLocale(const CaseLocale&) = delete;
  CaseLocale& operator=(const CaseLocale&) = delete;

  // Upper- or lower-cases each code point; bytes that are not valid UTF-8 pass through.
  std::string convert(const std::string& s, bool upper) const {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
      const auto b0 = static_cast<unsigned char>(s[i]);
      size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
      bool valid = len != 0 && i + len <= s.size();
      uint32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1Fu) : len == 3 ? (b0 & 0x0Fu) : (b0 & 0x07u);
      for (size_t k = 1; valid && k < len; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80) valid = false;
        cp = (cp << 6) | (b & 0x3Fu);
      }
      if (!valid) {
        out.push_back(s[i]);
        ++i;
        continue;
      }
      uint32_t mapped = cp;
      if (loc_ != static_cast<locale_t>(nullptr)) {
        mapped = static_cast<uint32_t>(upper ? towupper_l(static_cast<wint_t>(cp), loc_)
                                             : towlower_l(static_cast<wint_t>(cp), loc_));
      } else if (cp < 0x80) {
        mapped = static_cast<uint32_t>(upper ? std::toupper(static_cast<int>(cp)) : std::tolower(static_cast<int>(cp)));
      }
      append_utf8(out, mapped);
      i += len;
    }
    return out;
  }

 private:
  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  locale_t loc_ = static_cast<locale_t>(nullptr);
};

const Tensor& string_input(KernelContext& ctx, size_t i) {
  const Tensor& t = ctx.input(i);
  if (!t.is_string()) ctx.fail("input " + std::to_string(i) + " must be a string tensor, got " + std::string(dtype_name(t.dtype())));
  return t;
}

// --- StringNormalizer (10) ------------------------------------------------------
// Drops elements equal to a stop word (compared case-insensitively unless
// is_case_sensitive), then changes the case of what is left.
void StringNormalizer(KernelContext& ctx) {
  const Tensor& x = string_input(ctx, 0);
  const bool two_dim = x.rank() == 2;
  if (!(x.rank() == 1 || (two_dim && x.shape()[0] == 1)))
    ctx.fail("input must have shape [C] or [1, C], got " + shape_to_string(x.shape()));
  const std::string action = ctx.attr_string("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    ctx.fail("case_change_action must be NONE, LOWER or UPPER, got '" + action + "'");
  const bool keep_case = action == "NONE", upper = action == "UPPER";
  const bool case_sensitive = ctx.attr_int("is_case_sensitive", 0) != 0;
  const CaseLocale loc(ctx.attr_string("locale", "en_US"));

  std::vector<std::string> stops = ctx.attr_strings("stopwords");
  if (!case_sensitive)
    for (std::string& w : stops) w = loc.convert(w, false);
  std::sort(stops.begin(), stops.end());

  std::vector<std::string> kept;
  for (const std::string& s : x.strings()) {
    const std::string key = case_sensitive ? s : loc.convert(s, false);
    if (std::binary_search(stops.begin(), stops.end(), key)) continue;
    if (keep_case) kept.push_back(s);
    else kept.push_back(loc.convert(s, upper));
  }
  if (kept.empty()) kept.emplace_back();  // all dropped: one empty string
  const auto c = static_cast<int64_t>(kept.size());
  ctx.set_output(0, Tensor::from_strings(two_dim ? Shape{1, c} : Shape{c}, std::move(kept)));
}

// --- StringSplit (20) ------------------------------------------------------------

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

// --- StringConcat (20) -----------------------------------------------------------
void StringConcat(KernelContext& ctx) {
  const Tensor& a = string_input(ctx, 0);
  const Tensor& b = string_input(ctx, 1);
  Shape out_shape = broadcast_shapes(ctx, a.shape(), b.shape());
  const Shape* shapes[] = {&a.shape(), &b.shape()};
  BroadcastIndex bi(out_shape, shapes);
  const uint64_t n = checked_element_count(out_shape).value_or(0);
  if (n > ctx.max_tensor_bytes() / sizeof(std::string))
    ctx.fail("the output of shape " + shape_to_string(out_shape) + " is larger than the tensor limit");
  std::vector<std::string> out(n);
  StringBudget budget(&ctx);
  for (uint64_t i = 0; i < n; ++i, bi.next()) {
    out[i] = a.strings()[bi.offsets()[0]] + b.strings()[bi.offsets()[1]];
    budget.add(out[i]);
  }
  ctx.set_output(0, Tensor::from_strings(std::move(out_shape), std::move(out)));
}

// --- RegexFullMatch (20) ---------------------------------------------------------
void RegexFullMatch(KernelContext& ctx) {
  const Tensor& x = string_input(ctx, 0);
  const std::string pattern = ctx.attr_string("pattern", "");
  const RE2 re(pattern, RE2::Quiet);
  if (!re.ok()) ctx.fail("invalid RE2 pattern '" + pattern + "': " + re.error());
  Tensor& y = ctx.allocate_output(0, DataType::Bool, x.shape());
  for (uint64_t i = 0; i < x.element_count(); ++i) store<bool>(y, i, RE2::FullMatch(x.strings()[i], re));
}

// --- TfIdfVectorizer (9) ---------------------------------------------------------
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

// --- random ----------------------------------------------------------------------

// A deterministic generator with portable uniform and normal draws (the
// standard library's distributions differ between implementations).
class Rng {
 public:
  explicit Rng(const KernelContext& ctx) {
    uint64_t seed = ctx.seed();
    if (ctx.has_attr("seed")) {
      seed = std::bit_cast<uint32_t>(ctx.attr_float("seed", 0.0f)) ^ 0x5EEDF00Dull;
    } else {
      // Mix in the node's first output name: unseeded nodes get distinct streams.
      const std::string& name = ctx.node().outputs.empty() ? ctx.node().op_type : ctx.node().outputs[0];
      for (char c : name) seed = (seed ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
    }
    gen_.seed(seed);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::mt19937_64 gen_;
};

// The float output type named by the 'dtype' attribute, or `fallback` when absent.
DataType float_dtype_attr(KernelContext& ctx, DataType fallback) {
  DataType t = fallback;
  if (ctx.has_attr("dtype")) {
    const int64_t v = ctx.attr_int("dtype", 0);
    if (v < 0 || v > kMaxDataType || !is_known_dtype(static_cast<int32_t>(v))) ctx.fail("unknown dtype " + std::to_string(v));
    t = static_cast<DataType>(v);
  }
  if (t != DataType::Float && t != DataType::Double && t != DataType::Float16 && t != DataType::BFloat16)
    ctx.fail("output type must be float16, bfloat16, float or double, got " + std::string(dtype_name(t)));
  if (t == DataType::BFloat16 && ctx.opset_version() < 22) ctx.fail("bfloat16 output needs opset 22");
  return t;
}

Shape shape_attr(KernelContext& ctx) {
  if (!ctx.has_attr("shape")) ctx.fail("missing required attribute 'shape'");
  Shape s = ctx.attr_ints("shape");
  for (int64_t d : s)
    if (d < 0) ctx.fail("shape must not have negative dims, got " + shape_to_string(s));
  return s;
}

// Fills output 0 of type `t` and shape `s` with draw() values.
template <typename Draw>
void fill_random(KernelContext& ctx, DataType t, Shape s, Draw draw) {
  Tensor& y = ctx.allocate_output(0, t, std::move(s));
  dispatch<kFloats>(ctx, t, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < y.element_count(); ++i) put<S>(y, i, static_cast<compute_t<S>>(draw()));
  });
}

void random_normal(KernelContext& ctx, DataType t, Shape s) {
  Rng rng(ctx);
  const double mean = ctx.attr_float("mean", 0.0f), scale = ctx.attr_float("scale", 1.0f);
  fill_random(ctx, t, std::move(s), [&] { return mean + scale * rng.normal(); });
}
void random_uniform(KernelContext& ctx, DataType t, Shape s) {
  Rng rng(ctx);
  const double low = ctx.attr_float("low", 0.0f), high = ctx.attr_float("high", 1.0f);
  fill_random(ctx, t, std::move(s), [&] { return low + (high - low) * rng.uniform(); });
}

void RandomNormal(KernelContext& ctx) { random_normal(ctx, float_dtype_attr(ctx, DataType::Float), shape_attr(ctx)); }
void RandomUniform(KernelContext& ctx) { random_uniform(ctx, float_dtype_attr(ctx, DataType::Float), shape_attr(ctx)); }
void RandomNormalLike(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  random_normal(ctx, float_dtype_attr(ctx, x.dtype()), x.shape());
}
void RandomUniformLike(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  random_uniform(ctx, float_dtype_attr(ctx, x.dtype()), x.shape());
}

// Bernoulli (15): 1 with probability p, else 0; output type from 'dtype' or the input.
void Bernoulli(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DataType out_type = x.dtype();
  if (ctx.has_attr("dtype")) {
    const int64_t v = ctx.attr_int("dtype", 0);
    if (v < 0 || v > kMaxDataType || !is_known_dtype(static_cast<int32_t>(v))) ctx.fail("unknown dtype " + std::to_string(v));
    out_type = static_cast<DataType>(v);
  }
  std::vector<double> p(x.element_count());
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < x.element_count(); ++i) p[i] = static_cast<double>(get<S>(x, i));
  });
  for (double v : p)
    if (!(v >= 0.0 && v <= 1.0)) ctx.fail("probabilities must lie in [0, 1], got " + std::to_string(v));
  Rng rng(ctx);
  Tensor& y = ctx.allocate_output(0, out_type, x.shape());
  dispatch<kFloats | kInts | kBool>(ctx, out_type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < y.element_count(); ++i)
      put<S>(y, i, static_cast<compute_t<S>>(rng.uniform() < p[i] ? 1 : 0));
  });
}

// Multinomial (7): sample_size class indices per batch row, drawn with
// probabilities softmax(row) (the input holds unnormalised log-probabilities).
void Multinomial(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) ctx.fail("input must be 2-D [batch_size, class_size], got " + shape_to_string(x.shape()));
  const int64_t batch = x.shape()[0], classes = x.shape()[1];
  const int64_t samples = ctx.attr_int("sample_size", 1);
  if (samples < 0) ctx.fail("sample_size must be >= 0");
  const auto out_type = static_cast<DataType>(ctx.attr_int("dtype", 6));
  if (out_type != DataType::Int32 && out_type != DataType::Int64) ctx.fail("dtype must be int32 or int64");
  if (classes == 0 && batch > 0 && samples > 0) ctx.fail("class_size must be > 0");
  std::vector<double> logits(x.element_count());
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < x.element_count(); ++i) logits[i] = static_cast<double>(get<S>(x, i));
  });
  Rng rng(ctx);
  Tensor& y = ctx.allocate_output(0, out_type, {batch, samples});
  std::vector<double> cumulative(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    const double* row = logits.data() + b * classes;
    const double top = *std::max_element(row, row + classes);
    if (std::isnan(top) || std::isinf(top)) ctx.fail("log-probabilities must be finite");
    double total = 0;
    for (int64_t c = 0; c < classes; ++c) cumulative[static_cast<size_t>(c)] = total += std::exp(row[c] - top);
    for (int64_t s = 0; s < samples; ++s) {
      const double target = rng.uniform() * total;
      auto it = std::upper_bound(cumulative.begin(), cumulative.end(), target);
      const int64_t k = std::min<int64_t>(it - cumulative.begin(), classes - 1);
      const auto i = static_cast<uint64_t>(b * samples + s);
      if (out_type == DataType::Int32) store<int32_t>(y, i, static_cast<int32_t>(k));
      else store<int64_t>(y, i, k);
    }
  }
}

}  // namespace

void register_text_random_ml_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since) { r.add(KernelDef{"", op, since, INT_MAX, "reference", fn, nullptr}); };
  add("StringNormalizer", StringNormalizer, 10);
  add("StringSplit", StringSplit, 20);
  add("StringConcat", StringConcat, 20);
  add("RegexFullMatch", RegexFullMatch, 20);
  add("TfIdfVectorizer", TfIdfVectorizer, 9);
  add("RandomNormal", RandomNormal, 1);
  add("RandomUniform", RandomUniform, 1);
  add("RandomNormalLike", RandomNormalLike, 1);
  add("RandomUniformLike", RandomUniformLike, 1);
  add("Bernoulli", Bernoulli, 15);
  add("Multinomial", Multinomial, 7);
  register_text_random_ml_image_ops(r);
  register_text_random_ml_ml_ops(r);
}

}  // namespace onnxscope::ref
