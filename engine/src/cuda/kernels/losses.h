// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, in double in the
// reference's order (ops/reduce_norm_normalization.cpp nll_output):
// SoftmaxCrossEntropyLoss's log-softmax one thread per (n, d) line along
// the class axis; the loss one thread per (n, d) element, its target read
// and checked on the device; the 'sum' and 'mean' reductions one thread
// summing the elements in order, as the reference's running sums.
#pragma once

#include "cuda/kernels/elementwise.h"

namespace onnxscope::cuda {

// log_softmax along the class axis of scores viewed as [N, C, D], line
// (n, d) = item i: the maximum (NaN skipped, as std::max from -inf keeps
// its first), the sum of exp(x - max) in class order, then x - max - log(sum)
// into logp (double) and, when log_prob is given, rounded into it.
struct LogSoftmaxLineKernel {
  ElemType type;  // scores' and log_prob's
  int64_t classes, inner;
  const void* scores;
  double* logp;
  void* log_prob;  // nullptr: not wanted
  OS_HD void operator()(int64_t i) const {
    const int64_t base = (i / inner) * classes * inner + i % inner;
    double mx = -INFINITY;
    for (int64_t j = 0; j < classes; ++j) {
      const double v = static_cast<double>(load_real(type, scores, base + j * inner));
      mx = mx < v ? v : mx;
    }
    double sum = 0;
    for (int64_t j = 0; j < classes; ++j) sum += exp(static_cast<double>(load_real(type, scores, base + j * inner)) - mx);
    const double log_sum = log(sum);
    for (int64_t j = 0; j < classes; ++j) {
      const int64_t at = base + j * inner;
      const double v = static_cast<double>(load_real(type, scores, at)) - mx - log_sum;
      logp[at] = v;
      if (log_prob) store_real(type, log_prob, at, static_cast<float>(v));
    }
  }
};

// The target of element `at` (int32 or int64).
OS_HD int64_t loss_target(const void* target, bool wide, int64_t at) {
  return wide ? static_cast<const int64_t*>(target)[at] : static_cast<const int32_t*>(target)[at];
}

// loss[n, d] = -logp[n, t, d] * w[t], t = target[n, d], item i = n * D + d.
// A target equal to ignore_index counts for nothing (loss 0, weight 0); any
// other outside [0, C) is reported and counts for nothing either.
struct NllLossKernel {
  ElemType type;         // the input's (and the output's) float type
  int64_t classes, inner;
  const void* input;     // log-probabilities [N, C, D] of `type`, or nullptr to read logp
  const double* logp;    // SoftmaxCrossEntropyLoss's log-softmax
  const void* target;    // [N, D]
  bool target_wide;      // int64 (else int32)
  bool has_ignore;
  int64_t ignore;
  const void* weight;    // [C] of `type`, or nullptr: 1 each
  double* loss;          // [N, D]
  double* weights;       // [N, D]: the weight each element counted with
  void* y;               // reduction 'none': [N, D] of `type`; else nullptr
  int64_t* fault;
  int64_t site;
  OS_HD void operator()(int64_t i) const {
    const int64_t t = loss_target(target, target_wide, i);
    double l = 0, wt = 0;
    if (!(has_ignore && t == ignore)) {
      if (t < 0 || t >= classes) {
        report_fault(fault, site, i, t, classes);
      } else {
        wt = weight ? static_cast<double>(load_real(type, weight, t)) : 1.0;
        const int64_t at = ((i / inner) * classes + t) * inner + i % inner;
        const double lp = logp ? logp[at] : static_cast<double>(load_real(type, input, at));
        l = -lp * wt;
      }
    }
    loss[i] = l;
    weights[i] = wt;
    if (y) store_real(type, y, i, static_cast<float>(l));
  }
};

// 'sum' or 'mean' (one item): the counted elements' losses and weights
// summed in element order; mean divides by the weights' sum (0 / 0 = NaN
// when every element is ignored, as the reference and PyTorch give).
struct NllReduceKernel {
  ElemType type;
  bool mean;
  int64_t count;
  const void* target;
  bool target_wide;
  bool has_ignore;
  int64_t ignore;
  const double* loss;
  const double* weights;
  void* y;  // a scalar of `type`
  OS_HD void operator()(int64_t) const {
    double loss_sum = 0, weight_sum = 0;
    for (int64_t i = 0; i < count; ++i) {
      if (has_ignore && loss_target(target, target_wide, i) == ignore) continue;
      loss_sum += loss[i];
      weight_sum += weights[i];
    }
    store_real(type, y, 0, static_cast<float>(mean ? loss_sum / weight_sum : loss_sum));
  }
};

}  // namespace onnxscope::cuda
