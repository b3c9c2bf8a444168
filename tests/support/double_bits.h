// A double's bit pattern, for tests that compare results bit for bit.
#pragma once

#include <cstdint>
#include <cstring>

namespace onnxscope::test {

inline uint64_t double_bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

}  // namespace onnxscope::test
