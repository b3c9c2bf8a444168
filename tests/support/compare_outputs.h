// Two runs' float32 outputs compared element by element in a test: the same
// bits (tol 0; NaN matches NaN), or within tol * (1 + |want|).
#pragma once

#include "onnxscope/engine.h"

namespace onnxscope::test {

void expect_float_outputs(const NamedValues& want, const NamedValues& got, double tol);

}  // namespace onnxscope::test
