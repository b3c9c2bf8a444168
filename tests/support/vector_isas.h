// Runs a check once for every vector form of the reference's loops this CPU
// has (reference/ops/math/vector_isa.h), widest first, so an AVX-512
// machine checks the AVX2 and plain forms too.
#pragma once

#include <string>
#include <vector>

#include "reference/ops/math/vector_isa.h"

namespace onnxscope::test {

inline std::vector<ref::math::VectorIsa> vector_isas() {
  using ref::math::VectorIsa;
  std::vector<VectorIsa> out;
  for (VectorIsa v : {VectorIsa::Avx512, VectorIsa::Avx2, VectorIsa::Plain}) {
    const VectorIsa before = ref::math::limit_vector_isa(v);
    if (ref::math::vector_isa() == v) out.push_back(v);
    ref::math::limit_vector_isa(before);
  }
  return out;
}

inline std::string isa_name(ref::math::VectorIsa v) {
  switch (v) {
    case ref::math::VectorIsa::Avx512: return "AVX-512";
    case ref::math::VectorIsa::Avx2: return "AVX2";
    default: return "plain";
  }
}

// The limit set for a scope, the previous one restored after.
class VectorIsaLimit {
 public:
  explicit VectorIsaLimit(ref::math::VectorIsa most) : before_(ref::math::limit_vector_isa(most)) {}
  ~VectorIsaLimit() { ref::math::limit_vector_isa(before_); }
  VectorIsaLimit(const VectorIsaLimit&) = delete;
  VectorIsaLimit& operator=(const VectorIsaLimit&) = delete;

 private:
  ref::math::VectorIsa before_;
};

}  // namespace onnxscope::test
