/* Example plugin: com.example::RMSNorm, a custom-domain operator.
 *
 *   Y = X / sqrt(mean(X^2 over the last axis) + epsilon) * scale
 *
 * Inputs: X (float, rank >= 1), scale (float, 1-D, the size of X's last
 * axis). Attribute: epsilon (float, default 1e-5, must be > 0).
 * Written in plain C99 against onnxscope/plugin_abi.h only. */
#include <math.h>
#include <stdio.h>

#include "onnxscope/plugin_abi.h"

static int rms_norm_infer(onnxscope_shape_call* call) {
  const onnxscope_type* x = &call->inputs[0];
  const onnxscope_type* scale = &call->inputs[1];
  onnxscope_type* y = &call->outputs[0];
  int32_t i;
  /* Reject only what is known to be wrong: unknown types and dims pass. */
  if ((x->dtype != ONNXSCOPE_DTYPE_UNDEFINED && x->dtype != ONNXSCOPE_DTYPE_FLOAT) ||
      (scale->dtype != ONNXSCOPE_DTYPE_UNDEFINED && scale->dtype != ONNXSCOPE_DTYPE_FLOAT)) {
    snprintf(call->error, call->error_size, "X and scale must be float tensors (got dtypes %d and %d)",
             (int)x->dtype, (int)scale->dtype);
    return ONNXSCOPE_ERROR;
  }
  if (x->rank == 0) {
    snprintf(call->error, call->error_size, "X must have rank >= 1 (it is a scalar)");
    return ONNXSCOPE_ERROR;
  }
  if (scale->rank >= 0 && scale->rank != 1) {
    snprintf(call->error, call->error_size, "scale must be 1-D, got rank %d", (int)scale->rank);
    return ONNXSCOPE_ERROR;
  }
  if (x->rank > 0 && scale->rank == 1) {
    int64_t last = x->dims[x->rank - 1], n = scale->dims[0];
    if (last >= 0 && n >= 0 && last != n) {
      snprintf(call->error, call->error_size, "scale has %lld elements but X's last axis has %lld",
               (long long)n, (long long)last);
      return ONNXSCOPE_ERROR;
    }
  }
  y->dtype = ONNXSCOPE_DTYPE_FLOAT;
  y->rank = x->rank;
  for (i = 0; i < x->rank; ++i) y->dims[i] = x->dims[i];
  return ONNXSCOPE_OK;
}

static int rms_norm_cpu(onnxscope_kernel_call* call) {
  const onnxscope_tensor* x = &call->inputs[0];
  const onnxscope_tensor* scale = &call->inputs[1];
  onnxscope_tensor* y = &call->outputs[0];
  float epsilon = 1e-5f;
  int64_t n, rows, r, k;
  const float* in = (const float*)x->data;
  const float* s = (const float*)scale->data;
  float* out = (float*)y->data;
  if (call->host->attr_float(call->node, "epsilon", &epsilon) < 0) {
    snprintf(call->error, call->error_size, "attribute epsilon must be a float");
    return ONNXSCOPE_ERROR;
  }
  if (!(epsilon > 0)) {
    snprintf(call->error, call->error_size, "epsilon must be > 0, got %g", (double)epsilon);
    return ONNXSCOPE_ERROR;
  }
  n = x->dims[x->rank - 1];
  if (n == 0) return ONNXSCOPE_OK;
  rows = (int64_t)(x->element_count / (uint64_t)n);
  for (r = 0; r < rows; ++r) {
    const float* row = in + r * n;
    double sum = 0;
    float inv;
    for (k = 0; k < n; ++k) sum += (double)row[k] * row[k];
    inv = (float)(1.0 / sqrt(sum / (double)n + epsilon));
    for (k = 0; k < n; ++k) out[r * n + k] = row[k] * inv * s[k];
  }
  return ONNXSCOPE_OK;
}

static const onnxscope_kernel_desc kKernels[] = {
    {"com.example", "RMSNorm", 1, 0, 2, 2, 1, 1,
     "RMS normalization over the last axis with a learned scale (epsilon attribute)", rms_norm_cpu, NULL,
     rms_norm_infer, NULL},
};

static const onnxscope_plugin_info kInfo = {
    ONNXSCOPE_PLUGIN_ABI_VERSION, "example_rms_norm", "1.0", "com.example::RMSNorm, an example custom-domain operator",
    sizeof kKernels / sizeof kKernels[0], kKernels};

ONNXSCOPE_PLUGIN_EXPORT const onnxscope_plugin_info* onnxscope_plugin_entry(void) { return &kInfo; }
