// Shared declarations of the ml_classic family (ml_classic.cpp, ml_classic_models.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "onnxscope/kernel.h"

namespace onnxscope::ref {

// Registers LinearClassifier, LinearRegressor, SVMClassifier, SVMRegressor,
// TreeEnsembleClassifier, TreeEnsembleRegressor (ml_classic_models.cpp).
void register_ml_classic_models_ops(KernelRegistry& r);

// float, double, int64 or int32: the numeric inputs of the classic ml operators.
bool ml_numeric_input(DataType t);
// The elements of such an input as double; fails for any other type.
std::vector<double> ml_input_values(const KernelContext& ctx, const Tensor& x);

// A 1-D [C] input is one row; a 2-D input is [N, C]; other ranks fail.
struct MlRows {
  int64_t rows = 0, cols = 0;
};
MlRows ml_rows(const KernelContext& ctx, const Tensor& x);

}  // namespace onnxscope::ref
