// Float32 samples across the whole range, for unary math checked against
// double: 20011 steps through the positive bit patterns below inf (every
// binade, subnormals included), each with its negation.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace onnxscope::test {

inline std::vector<float> every_binade_both_signs() {
  std::vector<float> v;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 0x7f800000u / 20011) {
    float f;
    std::memcpy(&f, &bits, 4);
    v.push_back(f);
    v.push_back(-f);
  }
  return v;
}

}  // namespace onnxscope::test
