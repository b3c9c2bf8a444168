// Comparing an engine's outputs with a test's expected outputs, the way the
// upstream runner does (onnx/backend/test/runner: assert_similar_outputs):
// same kind and shape, strings exact, otherwise same dtype and
// |actual - expected| <= atol + rtol * |expected| with NaN equal to NaN,
// sequences element by element, empty optionals equal.
#pragma once

#include <optional>
#include <string>

#include "onnxscope/value.h"

namespace onnxscope::conformance {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

// nullopt when they match; otherwise what differs, with the worst element.
std::optional<std::string> compare_values(const Value& expected, const Value& actual, const Tolerance& tol);

}  // namespace onnxscope::conformance
