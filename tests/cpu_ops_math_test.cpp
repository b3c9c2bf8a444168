// The CPU engine's own math kernels that have a test of their own beside the
// harness's (support/ops_harness.h): Softmax and LogSoftmax over the last
// axis, row lengths around the vector width, NaN and infinities in rows, and
// the opset-11 form (the input coerced to 2-D at `axis`).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model_builder.h"
#include "ops_harness.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::harness;

namespace {

TEST(CpuOpsMath, SoftmaxOnTheLastAxis) {
  Rng rng(61);
  const int64_t lengths[] = {1, 7, 15, 16, 17, 31, 33, 128, 1000, 49};
  for (int i = 0; i < 40; ++i) {
    const bool old = i % 4 == 1;  // opset 11: axis 1 of a 2-D input, or -1
    Case c(old ? 11 : 13);
    const int64_t n = lengths[i % 10];
    Shape s = old ? Shape{pick(rng, 1, 9), n} : Shape{pick(rng, 1, 3), pick(rng, 1, 12), n};
    const char* op = i % 2 ? "LogSoftmax" : "Softmax";
    const int64_t axis = old ? (i % 8 == 1 ? 1 : -1) : (i % 3 ? -1 : 2);
    c.what = std::string(op) + " " + shape_to_string(s) + " axis " + std::to_string(axis);
    c.input("x", random_tensor(rng, DataType::Float, s, -30, 30, i % 5 == 4));
    attr_int(c.mb.node(op, {"x"}, {"y"}, "n"), "axis", axis);
    check(c, 1e-6, 2e-5);
  }
}

}  // namespace
