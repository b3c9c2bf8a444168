#include "compare_outputs.h"

#include <gtest/gtest.h>

#include <cmath>

namespace onnxscope::test {

void expect_float_outputs(const NamedValues& want, const NamedValues& got, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const Tensor& a = want[k].second.tensor();
    const Tensor& b = got[k].second.tensor();
    ASSERT_EQ(a.shape(), b.shape()) << want[k].first;
    ASSERT_EQ(a.dtype(), DataType::Float) << want[k].first;
    ASSERT_EQ(b.dtype(), DataType::Float) << want[k].first;
    for (uint64_t i = 0; i < a.element_count(); ++i) {
      const float x = a.data<float>()[i], y = b.data<float>()[i];
      if (tol == 0)
        ASSERT_TRUE(x == y || (std::isnan(x) && std::isnan(y))) << want[k].first << "[" << i << "]: " << x << " vs " << y;
      else
        ASSERT_NEAR(x, y, tol * (1 + std::abs(x))) << want[k].first << "[" << i << "]";
    }
  }
}

}  // namespace onnxscope::test
