// Reference kernels of the classic ai.onnx.ml model operators: LinearClassifier,
// LinearRegressor, SVMClassifier, SVMRegressor, TreeEnsembleClassifier and
// TreeEnsembleRegressor. Part of the ml_classic family.
//
// Scores are computed in double and rounded to float on store (the outputs
// are float tensors). Where the spec is silent the kernels follow
// onnxruntime, the implementation these operators were defined by; places
// where onnx's Python reference and onnxruntime disagree say which was chosen.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/ml_classic_parts.h"
#include "reference/ops/ops.h"

namespace onnxscope::ref {
namespace {

// --- post transforms ----------------------------------------------------------------

enum class Post { None, Logistic, Softmax, SoftmaxZero, Probit };

Post post_transform(const KernelContext& ctx) {
  const std::string s = ctx.attr_string("post_transform", "NONE");
  if (s == "NONE") return Post::None;
  if (s == "LOGISTIC") return Post::Logistic;
  if (s == "SOFTMAX") return Post::Softmax;
  if (s == "SOFTMAX_ZERO") return Post::SoftmaxZero;
  if (s == "PROBIT") return Post::Probit;
  ctx.fail("post_transform must be NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO or PROBIT, got '" + s + "'");
}

double logistic(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// Inverse error function: a closed-form start refined by Newton steps on std::erf.
double erf_inverse(double y) {
  if (std::isnan(y) || y < -1.0 || y > 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (y == -1.0) return -std::numeric_limits<double>::infinity();
  if (y == 1.0) return std::numeric_limits<double>::infinity();
  const double w = -std::log((1.0 - y) * (1.0 + y));
  double x = w < 5.0 ? y * (1.0 + 0.3 * w) * 0.886 : y * std::sqrt(w) * 0.8;
  for (int k = 0; k < 60; ++k) {
    const double step = (std::erf(x) - y) / (2.0 / std::sqrt(3.14159265358979323846) * std::exp(-x * x));
    x -= step;
    if (std::abs(step) <= 1e-16 * std::max(1.0, std::abs(x))) break;
  }
  return x;
}

// The probit function (inverse CDF of the standard normal), exact; onnxruntime
// and onnx's Python reference use an approximation of erfinv good to ~1e-3.
double probit(double p) { return std::sqrt(2.0) * erf_inverse(2.0 * p - 1.0); }

// Applies the transform to one row of scores in place.
void apply_post(Post post, double* v, size_t n) {
  switch (post) {
    case Post::None: return;
    case Post::Logistic:
      for (size_t i = 0; i < n; ++i) v[i] = logistic(v[i]);
      return;
    case Post::Probit:
      for (size_t i = 0; i < n; ++i) v[i] = probit(v[i]);
      return;
    case Post::Softmax: {
      if (n == 0) return;
      const double top = *std::max_element(v, v + n);
      double sum = 0;
      for (size_t i = 0; i < n; ++i) sum += v[i] = std::exp(v[i] - top);
      for (size_t i = 0; i < n; ++i) v[i] /= sum;
      return;
    }
    case Post::SoftmaxZero: {
      // Softmax over the non-zero scores (|v| > 1e-7); the zero ones stay (about) zero.
      // An all-zero row gives 0.5 everywhere, as in onnx's Python reference.
      if (n == 0) return;
      const double top = *std::max_element(v, v + n);
      double sum = 0;
      for (size_t i = 0; i < n; ++i) {
        v[i] = std::abs(v[i]) > 1e-7 ? std::exp(v[i] - top) : v[i] * std::exp(-top);
        sum += v[i];
      }
      for (size_t i = 0; i < n; ++i) v[i] = sum == 0 ? 0.5 : v[i] / sum;
      return;
    }
  }
}

// Index of the largest value once rounded to float, as the scores are output
// (the first of equal ones, so ties are decided as in float implementations;
// NaN never wins).
size_t arg_max(const double* v, size_t n) {
  size_t best = 0;
  float top = static_cast<float>(v[0]);
  for (size_t i = 1; i < n; ++i) {
    const float x = static_cast<float>(v[i]);
    if (x > top || (std::isnan(top) && !std::isnan(x))) best = i, top = x;
  }
  return best;
}

// Class labels of a classifier: int64 or string, exactly one of the two attributes.
struct Labels {
  bool strings = false;
  std::vector<int64_t> ints;
  std::vector<std::string> strs;
  size_t size() const { return strings ? strs.size() : ints.size(); }
};

Labels class_labels(const KernelContext& ctx, const char* ints_name, const char* strings_name) {
  Labels l;
  const bool has_i = ctx.has_attr(ints_name), has_s = ctx.has_attr(strings_name);
  if (has_i == has_s) ctx.fail(std::string("exactly one of ") + ints_name + " and " + strings_name + " must be given");
  l.strings = has_s;
  if (has_s) l.strs = ctx.attr_strings(strings_name);
  else l.ints = ctx.attr_ints(ints_name);
  if (l.size() == 0) ctx.fail("the class labels are empty");
  return l;
}

// Writes the label outputs (Y: [N]) and the scores (Z: [N, K], float).
void write_classifier_outputs(KernelContext& ctx, const Labels& labels, const std::vector<size_t>& picked,
                              const std::vector<double>& scores, int64_t rows, int64_t k) {
  if (labels.strings) {
    std::vector<std::string> y(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) y[r] = labels.strs[picked[r]];
    ctx.set_output(0, Tensor::from_strings({rows}, std::move(y)));
  } else {
    Tensor& y = ctx.allocate_output(0, DataType::Int64, {rows});
    for (int64_t r = 0; r < rows; ++r) store<int64_t>(y, r, labels.ints[picked[r]]);
  }
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) {
    Tensor& z = ctx.allocate_output(1, DataType::Float, {rows, k});
    for (size_t i = 0; i < scores.size(); ++i) store<float>(z, i, static_cast<float>(scores[i]));
  }
}

// --- LinearClassifier (1) -----------------------------------------------------------------
// scores = X coefficients^T + intercepts, one row of coefficients per class.
// The label is the class of the largest raw score (before the transform, as
// onnxruntime; onnx's Python reference takes it after). With one row of
// coefficients and two labels the classifier is binary: the raw score s gives
// scores [-s, s] before the transform (as onnx's Python reference; onnxruntime
// writes [1 - s, s] and skips SOFTMAX), and the label is labels[1] when s > 0.
void LinearClassifier(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<double> xs = ml_input_values(ctx, x);
  const MlRows rc = ml_rows(ctx, x);
  const std::vector<float> coef = ctx.attr_floats("coefficients");
  const std::vector<float> icpt = ctx.attr_floats("intercepts");
  const Labels labels = class_labels(ctx, "classlabels_ints", "classlabels_strings");
  const Post post = post_transform(ctx);
  if (coef.empty()) ctx.fail("coefficients must be given");
  if (rc.cols == 0 || coef.size() % static_cast<size_t>(rc.cols) != 0)
    ctx.fail("coefficients (" + std::to_string(coef.size()) + ") are not a multiple of the feature count " + std::to_string(rc.cols));
  const size_t classes = coef.size() / static_cast<size_t>(rc.cols);
  if (!icpt.empty() && icpt.size() != classes)
    ctx.fail("intercepts must have one value per class (" + std::to_string(classes) + "), has " + std::to_string(icpt.size()));
  const bool binary = classes == 1;
  if (binary && labels.size() != 2) ctx.fail("one row of coefficients needs exactly 2 class labels");
  if (!binary && labels.size() != classes)
    ctx.fail(std::to_string(classes) + " rows of coefficients but " + std::to_string(labels.size()) + " class labels");

  const size_t k = binary ? 2 : classes;
  check_work_buffer(ctx, {rc.rows, static_cast<int64_t>(k)}, "the scores");
  std::vector<double> scores(static_cast<size_t>(rc.rows) * k);
  std::vector<size_t> picked(static_cast<size_t>(rc.rows));
  std::vector<double> raw(classes);
  for (int64_t r = 0; r < rc.rows; ++r) {
    const double* row = xs.data() + r * rc.cols;
    for (size_t c = 0; c < classes; ++c) {
      double s = icpt.empty() ? 0.0 : icpt[c];
      for (int64_t f = 0; f < rc.cols; ++f) s += row[f] * coef[c * rc.cols + f];
      raw[c] = s;
    }
    double* out = scores.data() + r * k;
    if (binary) {
      picked[r] = raw[0] > 0 ? 1 : 0;
      out[0] = -raw[0];
      out[1] = raw[0];
    } else {
      picked[r] = arg_max(raw.data(), classes);
      std::copy(raw.begin(), raw.end(), out);
    }
    apply_post(post, out, k);
  }
  write_classifier_outputs(ctx, labels, picked, scores, rc.rows, static_cast<int64_t>(k));
}

// --- LinearRegressor (1) ---------------------------------------------------------------------
// Y[N, targets] = X coefficients^T + intercepts, then the post transform per row.
void LinearRegressor(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<double> xs = ml_input_values(ctx, x);
  const MlRows rc = ml_rows(ctx, x);
  const std::vector<float> coef = ctx.attr_floats("coefficients");
  const std::vector<float> icpt = ctx.attr_floats("intercepts");
  const int64_t targets = ctx.attr_int("targets", 1);
  const Post post = post_transform(ctx);
  if (targets < 1) ctx.fail("targets must be >= 1");
  if (targets > static_cast<int64_t>(coef.size()) + 1)
    ctx.fail("targets (" + std::to_string(targets) + ") exceeds the coefficients' count " + std::to_string(coef.size()));
  if (coef.size() != static_cast<size_t>(targets * rc.cols))
    ctx.fail("coefficients must have targets x features = " + std::to_string(targets * rc.cols) + " values, has " +
             std::to_string(coef.size()));
  if (!icpt.empty() && icpt.size() != static_cast<size_t>(targets))
    ctx.fail("intercepts must have one value per target (" + std::to_string(targets) + "), has " + std::to_string(icpt.size()));
  check_work_buffer(ctx, {rc.rows, static_cast<int64_t>(targets)}, "the output");
  std::vector<double> out(static_cast<size_t>(rc.rows * targets));
  for (int64_t r = 0; r < rc.rows; ++r) {
    const double* row = xs.data() + r * rc.cols;
    double* o = out.data() + r * targets;
    for (int64_t t = 0; t < targets; ++t) {
      double s = icpt.empty() ? 0.0 : icpt[t];
      for (int64_t f = 0; f < rc.cols; ++f) s += row[f] * coef[t * rc.cols + f];
      o[t] = s;
    }
    apply_post(post, o, static_cast<size_t>(targets));
  }
  Tensor& y = ctx.allocate_output(0, DataType::Float, {rc.rows, targets});
  for (size_t i = 0; i < out.size(); ++i) store<float>(y, i, static_cast<float>(out[i]));
}

// --- SVM kernels ------------------------------------------------------------------------------

enum class SvmKernel { Linear, Poly, Rbf, Sigmoid };

struct SvmParams {
  SvmKernel kernel = SvmKernel::Linear;
  double gamma = 0, coef0 = 0;
  int64_t degree = 0;
};

SvmParams svm_params(const KernelContext& ctx) {
  SvmParams p;
  const std::string k = ctx.attr_string("kernel_type", "LINEAR");
  if (k == "LINEAR") p.kernel = SvmKernel::Linear;
  else if (k == "POLY") p.kernel = SvmKernel::Poly;
  else if (k == "RBF") p.kernel = SvmKernel::Rbf;
  else if (k == "SIGMOID") p.kernel = SvmKernel::Sigmoid;
  else ctx.fail("kernel_type must be LINEAR, POLY, RBF or SIGMOID, got '" + k + "'");
  const std::vector<float> kp = ctx.attr_floats("kernel_params");
  if (!kp.empty()) {
    if (kp.size() != 3) ctx.fail("kernel_params must hold gamma, coef0 and degree");
    p.gamma = kp[0];
    p.coef0 = kp[1];
    // A whole number of modest size (the model's own float; -inf or 1e30 would be an
    // undefined conversion, found by fuzz_model).
    if (!(std::abs(kp[2]) <= 1e6f)) ctx.fail("kernel_params' degree " + std::to_string(kp[2]) + " is not a usable exponent");
    p.degree = static_cast<int64_t>(kp[2]);
  }
  return p;
}

double svm_kernel(const SvmParams& p, SvmKernel kernel, const double* a, const float* b, int64_t n) {
  double s = 0;
  if (kernel == SvmKernel::Rbf) {
    for (int64_t i = 0; i < n; ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
    return std::exp(-p.gamma * s);
  }
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  switch (kernel) {
    case SvmKernel::Poly: return std::pow(p.gamma * s + p.coef0, static_cast<double>(p.degree));
    case SvmKernel::Sigmoid: return std::tanh(p.gamma * s + p.coef0);
    default: return s;
  }
}

// Pairwise coupling of binary probabilities into class probabilities
// (libsvm's multiclass_probability; r[i][j] = P(class i | i or j)).
void multiclass_probability(size_t k, const std::vector<double>& r, double* p) {
  std::vector<double> q(k * k, 0.0), qp(k);
  const size_t max_iter = std::max<size_t>(100, k);
  const double eps = 0.005 / static_cast<double>(k);
  for (size_t t = 0; t < k; ++t) {
    p[t] = 1.0 / static_cast<double>(k);
    for (size_t j = 0; j < t; ++j) {
      q[t * k + t] += r[j * k + t] * r[j * k + t];
      q[t * k + j] = q[j * k + t];
    }
    for (size_t j = t + 1; j < k; ++j) {
      q[t * k + t] += r[j * k + t] * r[j * k + t];
      q[t * k + j] = -r[j * k + t] * r[t * k + j];
    }
  }
  for (size_t iter = 0; iter < max_iter; ++iter) {
    double pqp = 0;
    for (size_t t = 0; t < k; ++t) {
      qp[t] = 0;
      for (size_t j = 0; j < k; ++j) qp[t] += q[t * k + j] * p[j];
      pqp += p[t] * qp[t];
    }
    double max_error = 0;
    for (size_t t = 0; t < k; ++t) max_error = std::max(max_error, std::abs(qp[t] - pqp));
    if (max_error < eps) break;
    for (size_t t = 0; t < k; ++t) {
      const double diff = (-qp[t] + pqp) / q[t * k + t];
      p[t] += diff;
      pqp = (pqp + diff * (diff * q[t * k + t] + 2 * qp[t])) / (1 + diff) / (1 + diff);
      for (size_t j = 0; j < k; ++j) {
        qp[j] = (qp[j] + diff * q[t * k + j]) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
}

// --- SVMClassifier (1) -------------------------------------------------------------------------
// Support-vector mode (vectors_per_class given): one-vs-one classifiers vote;
// the scores are the K(K-1)/2 decision values, or with prob_a/prob_b the K
// class probabilities (Platt scaling and libsvm's pairwise coupling); the
// label is the class with the most votes (first on ties).
// Linear mode (no support vectors): one row of coefficients per class, score
// = x . coef + rho[0]; the label is the class of the largest score.
// Binary results (one decision value) give scores [-s, s] before the transform,
// as onnx's Python reference (onnxruntime skips SOFTMAX here and writes [1 - s, s]).
void SVMClassifier(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<double> xs = ml_input_values(ctx, x);
  const MlRows rc = ml_rows(ctx, x);
  const Labels labels = class_labels(ctx, "classlabels_ints", "classlabels_strings");
  const Post post = post_transform(ctx);
  SvmParams params = svm_params(ctx);
  const std::vector<float> coef = ctx.attr_floats("coefficients");
  const std::vector<float> sv = ctx.attr_floats("support_vectors");
  const std::vector<float> rho = ctx.attr_floats("rho");
  const std::vector<float> prob_a = ctx.attr_floats("prob_a");
  const std::vector<float> prob_b = ctx.attr_floats("prob_b");
  const std::vector<int64_t> per_class = ctx.attr_ints("vectors_per_class");
  const size_t classes = labels.size();
  const int64_t f = rc.cols;
  if (coef.empty()) ctx.fail("coefficients must be given");
  if (rho.empty()) ctx.fail("rho must be given");
  if (prob_a.size() != prob_b.size()) ctx.fail("prob_a and prob_b must have the same length");

  size_t vectors = 0;
  std::vector<size_t> start;
  for (int64_t v : per_class) {
    if (v < 0) ctx.fail("vectors_per_class must be >= 0");
    start.push_back(vectors);
    vectors += static_cast<size_t>(v);
  }
  const bool svc = vectors > 0;
  std::vector<size_t> picked(static_cast<size_t>(rc.rows));
  std::vector<double> scores;
  size_t k = 0;

  if (svc) {
    if (per_class.size() != classes) ctx.fail("vectors_per_class must have one entry per class label");
    if (sv.size() != vectors * static_cast<size_t>(f))
      ctx.fail("support_vectors must hold " + std::to_string(vectors) + " vectors of " + std::to_string(f) + " features");
    if (classes < 2) ctx.fail("support-vector mode needs at least 2 classes");
    const size_t pairs = classes * (classes - 1) / 2;
    if (coef.size() != (classes - 1) * vectors)
      ctx.fail("coefficients must hold (classes - 1) x vectors = " + std::to_string((classes - 1) * vectors) + " values");
    if (rho.size() != pairs) ctx.fail("rho must have one value per pair of classes (" + std::to_string(pairs) + ")");
    const bool proba = !prob_a.empty();
    if (proba && prob_a.size() != pairs) ctx.fail("prob_a must have one value per pair of classes");
    k = proba ? classes : (pairs == 1 ? 2 : pairs);
    scores.assign(static_cast<size_t>(rc.rows) * k, 0.0);
    std::vector<double> kern(vectors), decision(pairs), votes(classes), r(classes * classes);
    for (int64_t n = 0; n < rc.rows; ++n) {
      const double* row = xs.data() + n * f;
      for (size_t j = 0; j < vectors; ++j) kern[j] = svm_kernel(params, params.kernel, row, sv.data() + j * f, f);
      std::fill(votes.begin(), votes.end(), 0.0);
      size_t e = 0;
      for (size_t i = 0; i < classes; ++i) {
        for (size_t j = i + 1; j < classes; ++j, ++e) {
          double s = rho[e];
          for (size_t v = 0; v < static_cast<size_t>(per_class[i]); ++v) s += coef[(j - 1) * vectors + start[i] + v] * kern[start[i] + v];
          for (size_t v = 0; v < static_cast<size_t>(per_class[j]); ++v) s += coef[i * vectors + start[j] + v] * kern[start[j] + v];
          decision[e] = s;
          votes[s > 0 ? i : j] += 1;
        }
      }
      picked[n] = arg_max(votes.data(), classes);
      double* out = scores.data() + n * k;
      if (proba) {
        e = 0;
        for (size_t i = 0; i < classes; ++i) {
          for (size_t j = i + 1; j < classes; ++j, ++e) {
            // Platt: P(i | i or j) = 1 / (1 + exp(s * A + B)), kept inside [1e-7, 1 - 1e-7].
            const double p = std::clamp(1.0 - logistic(decision[e] * prob_a[e] + prob_b[e]), 1e-7, 1 - 1e-7);
            r[i * classes + j] = p;
            r[j * classes + i] = 1 - p;
          }
        }
        multiclass_probability(classes, r, out);
      } else if (pairs == 1) {
        out[0] = -decision[0];
        out[1] = decision[0];
      } else {
        std::copy(decision.begin(), decision.end(), out);
      }
      apply_post(post, out, k);
    }
  } else {
    // Linear mode: coefficients hold one row per class (one row for a binary classifier).
    if (f == 0 || coef.size() % static_cast<size_t>(f) != 0)
      ctx.fail("coefficients (" + std::to_string(coef.size()) + ") are not a multiple of the feature count " + std::to_string(f));
    const size_t rows_c = coef.size() / static_cast<size_t>(f);
    const bool binary = rows_c == 1 && classes == 2;
    if (!binary && rows_c != classes)
      ctx.fail(std::to_string(rows_c) + " rows of coefficients but " + std::to_string(classes) + " class labels");
    k = binary ? 2 : classes;
    scores.assign(static_cast<size_t>(rc.rows) * k, 0.0);
    std::vector<double> raw(rows_c);
    for (int64_t n = 0; n < rc.rows; ++n) {
      const double* row = xs.data() + n * f;
      for (size_t c = 0; c < rows_c; ++c) raw[c] = rho[0] + svm_kernel(params, SvmKernel::Linear, row, coef.data() + c * f, f);
      double* out = scores.data() + n * k;
      if (binary) {
        picked[n] = raw[0] > 0 ? 1 : 0;
        out[0] = -raw[0];
        out[1] = raw[0];
      } else {
        picked[n] = arg_max(raw.data(), rows_c);
        std::copy(raw.begin(), raw.end(), out);
      }
      apply_post(post, out, k);
    }
  }
  write_classifier_outputs(ctx, labels, picked, scores, rc.rows, static_cast<int64_t>(k));
}

// --- SVMRegressor (1) ------------------------------------------------------------------------------
// n_supports > 0: sum_j coef[j] K(x, sv_j) + rho[0]; otherwise the linear
// x . coefficients + rho[0]. one_class maps the score to +1 (> 0) or -1.
void SVMRegressor(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<double> xs = ml_input_values(ctx, x);
  const MlRows rc = ml_rows(ctx, x);
  const Post post = post_transform(ctx);
  const SvmParams params = svm_params(ctx);
  const std::vector<float> coef = ctx.attr_floats("coefficients");
  const std::vector<float> sv = ctx.attr_floats("support_vectors");
  const std::vector<float> rho = ctx.attr_floats("rho");
  const int64_t n_supports = ctx.attr_int("n_supports", 0);
  const bool one_class = ctx.attr_int("one_class", 0) != 0;
  const int64_t f = rc.cols;
  if (rho.empty()) ctx.fail("rho must be given");
  if (n_supports < 0) ctx.fail("n_supports must be >= 0");
  if (n_supports > 0) {
    if (sv.size() != static_cast<size_t>(n_supports * f))
      ctx.fail("support_vectors must hold n_supports x features = " + std::to_string(n_supports * f) + " values");
    if (coef.size() != static_cast<size_t>(n_supports)) ctx.fail("coefficients must have one value per support vector");
  } else if (coef.size() != static_cast<size_t>(f)) {
    ctx.fail("coefficients must have one value per feature (" + std::to_string(f) + ") without support vectors");
  }
  Tensor& y = ctx.allocate_output(0, DataType::Float, {rc.rows, 1});
  for (int64_t n = 0; n < rc.rows; ++n) {
    const double* row = xs.data() + n * f;
    double s = rho[0];
    if (n_supports > 0) {
      for (int64_t j = 0; j < n_supports; ++j) s += coef[j] * svm_kernel(params, params.kernel, row, sv.data() + j * f, f);
    } else {
      s += svm_kernel(params, SvmKernel::Linear, row, coef.data(), f);
    }
    if (one_class) s = s > 0 ? 1.0 : -1.0;
    apply_post(post, &s, 1);
    store<float>(y, n, static_cast<float>(s));
  }
}

// --- tree ensembles ---------------------------------------------------------------------------------

enum class Mode : uint8_t { Leq, Lt, Gte, Gt, Eq, Neq, Leaf };

// The nodes of a TreeEnsembleClassifier / TreeEnsembleRegressor, with each
// branch resolved to a node index and each tree to its root.
struct Forest {
  std::vector<int64_t> tree_ids, node_ids, features;
  std::vector<Mode> modes;
  std::vector<double> values;
  std::vector<size_t> true_next, false_next;
  std::vector<bool> missing_true;
  std::vector<size_t> roots;  // one per tree, in ascending tree id
  std::map<std::pair<int64_t, int64_t>, size_t> index;  // (tree id, node id) -> node
};

// The values of a float list attribute or (opset >= 3) of its *_as_tensor form.
std::vector<double> float_or_tensor(const KernelContext& ctx, const std::string& name) {
  const Tensor* t = ctx.opset_version() >= 3 ? ctx.attr_tensor(name + "_as_tensor") : nullptr;
  if (t != nullptr) {
    if (ctx.has_attr(name)) ctx.fail("only one of " + name + " and " + name + "_as_tensor may be given");
    if (t->dtype() != DataType::Float && t->dtype() != DataType::Double) ctx.fail(name + "_as_tensor must be float or double");
    return real_values(*t);
  }
  const std::vector<float> v = ctx.attr_floats(name);
  return {v.begin(), v.end()};
}

Forest read_forest(const KernelContext& ctx, int64_t n_features) {
  Forest fo;
  fo.tree_ids = ctx.attr_ints("nodes_treeids");
  fo.node_ids = ctx.attr_ints("nodes_nodeids");
  fo.features = ctx.attr_ints("nodes_featureids");
  fo.values = float_or_tensor(ctx, "nodes_values");
  const std::vector<int64_t> t_ids = ctx.attr_ints("nodes_truenodeids");
  const std::vector<int64_t> f_ids = ctx.attr_ints("nodes_falsenodeids");
  const std::vector<int64_t> missing = ctx.attr_ints("nodes_missing_value_tracks_true");
  const std::vector<std::string> modes = ctx.attr_strings("nodes_modes");
  const size_t n = fo.tree_ids.size();
  if (n == 0) ctx.fail("the ensemble has no nodes");
  for (size_t len : {fo.node_ids.size(), fo.features.size(), t_ids.size(), f_ids.size(), modes.size()})
    if (len != n) ctx.fail("nodes_treeids, nodes_nodeids, nodes_featureids, nodes_modes, nodes_truenodeids and nodes_falsenodeids must have the same length");
  if (!fo.values.empty() && fo.values.size() != n) ctx.fail("nodes_values must have one value per node");
  if (fo.values.empty()) fo.values.assign(n, 0.0);
  if (!missing.empty() && missing.size() != n) ctx.fail("nodes_missing_value_tracks_true must have one value per node");

  fo.modes.resize(n);
  fo.missing_true.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    const std::string& m = modes[i];
    if (m == "BRANCH_LEQ") fo.modes[i] = Mode::Leq;
    else if (m == "BRANCH_LT") fo.modes[i] = Mode::Lt;
    else if (m == "BRANCH_GTE") fo.modes[i] = Mode::Gte;
    else if (m == "BRANCH_GT") fo.modes[i] = Mode::Gt;
    else if (m == "BRANCH_EQ") fo.modes[i] = Mode::Eq;
    else if (m == "BRANCH_NEQ") fo.modes[i] = Mode::Neq;
    else if (m == "LEAF") fo.modes[i] = Mode::Leaf;
    else ctx.fail("node " + std::to_string(i) + " has an unknown mode '" + m + "'");
    if (!missing.empty()) fo.missing_true[i] = missing[i] != 0;
    if (!fo.index.emplace(std::make_pair(fo.tree_ids[i], fo.node_ids[i]), i).second)
      ctx.fail("node id " + std::to_string(fo.node_ids[i]) + " appears twice in tree " + std::to_string(fo.tree_ids[i]));
  }
  fo.true_next.assign(n, 0);
  fo.false_next.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (fo.modes[i] == Mode::Leaf) continue;
    if (fo.features[i] < 0 || fo.features[i] >= n_features)
      ctx.fail("node " + std::to_string(i) + " tests feature " + std::to_string(fo.features[i]) + " of " + std::to_string(n_features));
    const auto t = fo.index.find({fo.tree_ids[i], t_ids[i]});
    const auto f = fo.index.find({fo.tree_ids[i], f_ids[i]});
    if (t == fo.index.end() || f == fo.index.end())
      ctx.fail("node " + std::to_string(i) + " of tree " + std::to_string(fo.tree_ids[i]) + " branches to a missing node");
    fo.true_next[i] = t->second;
    fo.false_next[i] = f->second;
  }
  // The root of a tree is its first node in attribute order.
  std::map<int64_t, size_t> first;
  for (size_t i = 0; i < n; ++i) first.emplace(fo.tree_ids[i], i);
  for (const auto& [tree, i] : first) fo.roots.push_back(i);
  return fo;
}

// The leaf a row reaches from `root`. A NaN feature takes the true branch when
// the node's nodes_missing_value_tracks_true is set and the false branch
// otherwise (the spec; onnxruntime compares NaN, so BRANCH_NEQ goes true).
size_t find_leaf(const KernelContext& ctx, const Forest& fo, size_t root, const double* row) {
  size_t node = root;
  for (size_t steps = 0; fo.modes[node] != Mode::Leaf; ++steps) {
    if (steps > fo.modes.size()) ctx.fail("tree " + std::to_string(fo.tree_ids[root]) + " has a cycle");
    const double v = row[fo.features[node]];
    const double s = fo.values[node];
    bool go_true = false;
    if (std::isnan(v)) {
      go_true = fo.missing_true[node];
    } else {
      switch (fo.modes[node]) {
        case Mode::Leq: go_true = v <= s; break;
        case Mode::Lt: go_true = v < s; break;
        case Mode::Gte: go_true = v >= s; break;
        case Mode::Gt: go_true = v > s; break;
        case Mode::Eq: go_true = v == s; break;
        case Mode::Neq: go_true = v != s; break;
        case Mode::Leaf: break;
      }
    }
    node = go_true ? fo.true_next[node] : fo.false_next[node];
  }
  return node;
}

// The weights attached to leaves: for each node, the (target, weight) pairs.
std::vector<std::vector<std::pair<size_t, double>>> leaf_weights(const KernelContext& ctx, const Forest& fo,
                                                                 const char* prefix, size_t n_targets) {
  const std::string p = prefix;
  const std::vector<int64_t> trees = ctx.attr_ints(p + "_treeids");
  const std::vector<int64_t> nodes = ctx.attr_ints(p + "_nodeids");
  const std::vector<int64_t> ids = ctx.attr_ints(p + "_ids");
  const std::vector<double> w = float_or_tensor(ctx, p + "_weights");
  const size_t n = trees.size();
  if (nodes.size() != n || ids.size() != n || w.size() != n)
    ctx.fail(p + "_treeids, " + p + "_nodeids, " + p + "_ids and " + p + "_weights must have the same length");
  std::vector<std::vector<std::pair<size_t, double>>> at(fo.modes.size());
  for (size_t i = 0; i < n; ++i) {
    const auto it = fo.index.find({trees[i], nodes[i]});
    if (it == fo.index.end())
      ctx.fail(p + " weight " + std::to_string(i) + " names node " + std::to_string(nodes[i]) + " of tree " + std::to_string(trees[i]) + ", which does not exist");
    if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= n_targets)
      ctx.fail(p + "_ids[" + std::to_string(i) + "] = " + std::to_string(ids[i]) + " is out of range [0, " + std::to_string(n_targets) + ")");
    at[it->second].emplace_back(static_cast<size_t>(ids[i]), w[i]);
  }
  return at;
}

std::vector<double> tree_input(const KernelContext& ctx, const Tensor& x, MlRows& rc) {
  std::vector<double> xs = ml_input_values(ctx, x);
  rc = ml_rows(ctx, x);
  return xs;
}

// --- TreeEnsembleRegressor (1, 3, 5) ------------------------------------------------------------------
// Sums (or averages, min, max) the weights of the leaves every tree reaches,
// per target; adds base_values after aggregating, then the post transform.
// A target no leaf reached aggregates to 0 under MIN / MAX too (onnxruntime;
// onnx's Python reference leaves the float type's max / lowest there).
void TreeEnsembleRegressor(KernelContext& ctx) {
  MlRows rc;
  const std::vector<double> xs = tree_input(ctx, ctx.input(0), rc);
  const int64_t n_targets = ctx.attr_int("n_targets", 1);
  if (n_targets < 1) ctx.fail("n_targets must be >= 1");
  const std::string agg = ctx.attr_string("aggregate_function", "SUM");
  if (agg != "SUM" && agg != "AVERAGE" && agg != "MIN" && agg != "MAX")
    ctx.fail("aggregate_function must be SUM, AVERAGE, MIN or MAX, got '" + agg + "'");
  const Post post = post_transform(ctx);
  const Forest fo = read_forest(ctx, rc.cols);
  const auto weights = leaf_weights(ctx, fo, "target", static_cast<size_t>(n_targets));
  const std::vector<double> base = float_or_tensor(ctx, "base_values");
  if (!base.empty() && base.size() != static_cast<size_t>(n_targets)) ctx.fail("base_values must have one value per target");

  const auto t = static_cast<size_t>(n_targets);
  check_work_buffer(ctx, {rc.rows, static_cast<int64_t>(n_targets)}, "the output");
  std::vector<double> out(static_cast<size_t>(rc.rows) * t);
  std::vector<bool> hit(t);
  for (int64_t r = 0; r < rc.rows; ++r) {
    const double* row = xs.data() + r * rc.cols;
    double* o = out.data() + r * t;
    std::fill(hit.begin(), hit.end(), false);
    for (size_t root : fo.roots) {
      for (const auto& [target, w] : weights[find_leaf(ctx, fo, root, row)]) {
        if (agg == "MIN") o[target] = hit[target] ? std::min(o[target], w) : w;
        else if (agg == "MAX") o[target] = hit[target] ? std::max(o[target], w) : w;
        else o[target] += w;
        hit[target] = true;
      }
    }
    for (size_t k = 0; k < t; ++k) {
      if (agg == "AVERAGE") o[k] /= static_cast<double>(fo.roots.size());
      if (!base.empty()) o[k] += base[k];
    }
    apply_post(post, o, t);
  }
  Tensor& y = ctx.allocate_output(0, DataType::Float, {rc.rows, n_targets});
  for (size_t i = 0; i < out.size(); ++i) store<float>(y, i, static_cast<float>(out[i]));
}

// --- TreeEnsembleClassifier (1, 3, 5) ------------------------------------------------------------------
// Per class, base_values plus the sum of the class weights of the leaves every
// tree reaches. Binary case (two labels and no weight for class 1): the
// score s of class 0 becomes [1 - s, s] for NONE and PROBIT and [-s, s]
// otherwise, then the transform (onnx's Python reference). The label is the
// class of the largest transformed score (first on ties).
void TreeEnsembleClassifier(KernelContext& ctx) {
  MlRows rc;
  const std::vector<double> xs = tree_input(ctx, ctx.input(0), rc);
  const Labels labels = class_labels(ctx, "classlabels_int64s", "classlabels_strings");
  const Post post = post_transform(ctx);
  const size_t classes = labels.size();
  const Forest fo = read_forest(ctx, rc.cols);
  const auto weights = leaf_weights(ctx, fo, "class", classes);
  const std::vector<double> base = float_or_tensor(ctx, "base_values");
  if (!base.empty() && base.size() != classes) ctx.fail("base_values must have one value per class");

  bool class1_weighted = false;
  for (const auto& at : weights)
    for (const auto& [c, w] : at) class1_weighted |= c == 1;
  const bool binary = classes == 2 && !class1_weighted;
  if (classes == 1) ctx.fail("a classifier needs at least 2 class labels");

  check_work_buffer(ctx, {rc.rows, static_cast<int64_t>(classes)}, "the scores");
  std::vector<double> scores(static_cast<size_t>(rc.rows) * classes);
  std::vector<size_t> picked(static_cast<size_t>(rc.rows));
  for (int64_t r = 0; r < rc.rows; ++r) {
    const double* row = xs.data() + r * rc.cols;
    double* o = scores.data() + r * classes;
    for (size_t c = 0; c < classes; ++c) o[c] = base.empty() ? 0.0 : base[c];
    for (size_t root : fo.roots)
      for (const auto& [c, w] : weights[find_leaf(ctx, fo, root, row)]) o[c] += w;
    if (binary) {
      const double s = o[0];
      o[1] = s;
      o[0] = post == Post::None || post == Post::Probit ? 1.0 - s : -s;
    }
    apply_post(post, o, classes);
    picked[r] = arg_max(o, classes);
  }
  write_classifier_outputs(ctx, labels, picked, scores, rc.rows, static_cast<int64_t>(classes));
}

}  // namespace

void register_ml_classic_models_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since, int until = INT_MAX) {
    r.add(KernelDef{"ai.onnx.ml", op, since, until, "reference", fn, nullptr});
  };
  add("LinearClassifier", LinearClassifier, 1);
  add("LinearRegressor", LinearRegressor, 1);
  add("SVMClassifier", SVMClassifier, 1);
  add("SVMRegressor", SVMRegressor, 1);
  // Versions 1, 3 and 5 (5 only deprecates the operator); the *_as_tensor
  // attributes are read from opset 3 on.
  add("TreeEnsembleClassifier", TreeEnsembleClassifier, 1, 2);
  add("TreeEnsembleClassifier", TreeEnsembleClassifier, 3, 4);
  add("TreeEnsembleClassifier", TreeEnsembleClassifier, 5);
  add("TreeEnsembleRegressor", TreeEnsembleRegressor, 1, 2);
  add("TreeEnsembleRegressor", TreeEnsembleRegressor, 3, 4);
  add("TreeEnsembleRegressor", TreeEnsembleRegressor, 5);
}

}  // namespace onnxscope::ref
