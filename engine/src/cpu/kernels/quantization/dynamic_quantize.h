// DynamicQuantizeLinear's arithmetic on the CPU (quantize_linear.cpp), shared
// with DynamicQuantizeMatMul (matmul_integer_vnni.cpp): the range of x
// extended to 0 gives a scale and a zero point in float, as the spec's
// formulas are, and x is quantized to uint8 with them (the reference's bits).
#pragma once

#include <cstdint>

namespace onnxscope::cpu {

struct DynamicQuantParams {
  float scale = 1;
  float zero_point = 0;  // a whole number in [0, 255]
};

// x's n floats quantized into out (split across the thread pool); the scale
// and zero point used.
DynamicQuantParams dynamic_quantize_uint8(const float* x, int64_t n, uint8_t* out);

}  // namespace onnxscope::cpu
