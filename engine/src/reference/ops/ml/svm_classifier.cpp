// Reference kernel: ai.onnx.ml SVMClassifier.
//
// Scores are computed in double and rounded to float on store (the outputs
// are float tensors). Where the spec is silent the kernel follows
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
#include "reference/ops/math/common.h"
#include "reference/ops/ml/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

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

}  // namespace

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
    // Rows split across the threads (each row alone: the same bits at any count).
    for_rows(static_cast<uint64_t>(rc.rows), vectors * static_cast<uint64_t>(f + 1), [&](uint64_t r0, uint64_t r1) {
    std::vector<double> kern(vectors), decision(pairs), votes(classes), r(classes * classes);
    for (auto n = static_cast<int64_t>(r0); n < static_cast<int64_t>(r1); ++n) {
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
    });
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
    for_rows(static_cast<uint64_t>(rc.rows), rows_c * static_cast<uint64_t>(f), [&](uint64_t r0, uint64_t r1) {
    std::vector<double> raw(rows_c);
    for (auto n = static_cast<int64_t>(r0); n < static_cast<int64_t>(r1); ++n) {
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
    });
  }
  write_classifier_outputs(ctx, labels, picked, scores, rc.rows, static_cast<int64_t>(k));
}

}  // namespace onnxscope::ref
