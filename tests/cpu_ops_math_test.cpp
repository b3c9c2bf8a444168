// The CPU engine's own math kernels that have a test of their own beside the
// harness's (support/ops_harness.h): Softmax and LogSoftmax over the last
// axis, row lengths around the vector width, NaN and infinities in rows, and
// the opset-11 form (the input coerced to 2-D at `axis`); ArgMax and ArgMin
// over rows long enough for their vector path.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "ops_harness.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::harness;

namespace {

TEST(CpuOpsMath, SoftmaxOnTheLastAxis) {
  Rng rng(61);
  // Softmax rows shorter than 128 are oneDNN's (cpu_kernels_test); LogSoftmax's are all this kernel's.
  const int64_t lengths[] = {1, 7, 15, 16, 17, 31, 33, 128, 1000, 49, 129, 143, 1000, 4096};
  for (int i = 0; i < 56; ++i) {
    const bool old = i % 4 == 1;  // opset 11: axis 1 of a 2-D input, or -1
    Case c(old ? 11 : 13);
    const int64_t n = lengths[i % 14];
    Shape s = old ? Shape{pick(rng, 1, 9), n} : Shape{pick(rng, 1, 3), pick(rng, 1, 12), n};
    const char* op = i % 2 || n < 128 ? "LogSoftmax" : "Softmax";
    const int64_t axis = old ? (i % 8 == 1 ? 1 : -1) : (i % 3 ? -1 : 2);
    c.what = std::string(op) + " " + shape_to_string(s) + " axis " + std::to_string(axis);
    c.input("x", random_tensor(rng, DataType::Float, s, -30, 30, i % 5 == 4));
    attr_int(c.mb.node(op, {"x"}, {"y"}, "n"), "axis", axis);
    check(c, 1e-6, 2e-5);
  }
}

// Masked attention scores (-1e4 where masked) make exponentials below
// FLT_MIN: the kernels write 0 there, not subnormals, which would slow every
// product that meets them a hundredfold (swin_t's attention MatMuls ran 6x
// slower). Checked on the CPU engine's output directly.
TEST(CpuOpsMath, SoftmaxAndExpWriteNoSubnormals) {
  for (const char* op : {"Softmax", "LogSoftmax", "Exp", "Sigmoid", "Erf", "Tanh"}) {
    Case c(13);
    c.what = op;
    const Shape s = {4, 256};
    Tensor x = Tensor::zeros(DataType::Float, s);
    for (uint64_t e = 0; e < x.element_count(); ++e) x.mutable_data<float>()[e] = e % 3 ? -1e4f : -90.0f - static_cast<float>(e % 7);
    // A last row whose e^(x - max) is just above FLT_MIN where the sum is 200:
    // quotients below FLT_MIN.
    for (int64_t e = 0; e < 256; ++e) x.mutable_data<float>()[3 * 256 + e] = e < 200 ? 0.0f : -87.0f;
    c.input("x", std::move(x));
    c.mb.node(op, {"x"}, {"y"}, "n");
    c.mb.output_untyped("y");
    auto loaded = c.mb.load();
    ASSERT_TRUE(loaded.ok());
    std::shared_ptr<const Model> m = std::move(loaded.model);
    auto out = make_cpu_engine()->prepare(m)->run(c.inputs);
    const Tensor& y = out[0].second.tensor();
    for (uint64_t e = 0; e < y.element_count(); ++e)
      ASSERT_NE(std::fpclassify(y.data<float>()[e]), FP_SUBNORMAL) << op << " at " << e << ": " << y.data<float>()[e];
  }
}

// ArgMax / ArgMin over long last-axis rows (the vector path: two passes,
// the extreme then its first or last index): ties (few distinct values), +0
// against -0, NaN (the first wins, or the last with select_last_index) and
// infinities.
TEST(CpuOpsMath, ArgMaxAndArgMinOverLongRows) {
  Rng rng(62);
  const int64_t lengths[] = {16, 17, 32, 33, 100, 1000};
  for (int i = 0; i < 48; ++i) {
    const bool max = i % 2 == 0, last = i % 4 >= 2;
    const int64_t n = lengths[(i / 4) % 6];
    Case c(13);
    const Shape s = {pick(rng, 1, 9), n};
    Tensor x = Tensor::zeros(DataType::Float, s);
    const float values[] = {-1.0f, 0.0f, -0.0f, 2.0f, 2.0f, -3.0f, INFINITY, -INFINITY};
    for (uint64_t e = 0; e < x.element_count(); ++e) x.mutable_data<float>()[e] = values[pick(rng, 0, i % 3 ? 5 : 7)];
    if (i % 5 == 4)
      for (int k = 0; k < 3; ++k) x.mutable_data<float>()[pick(rng, 0, static_cast<int64_t>(x.element_count()) - 1)] = NAN;
    c.what = std::string(max ? "ArgMax " : "ArgMin ") + shape_to_string(s) + (last ? " last" : "");
    c.input("x", std::move(x));
    auto& nd = c.mb.node(max ? "ArgMax" : "ArgMin", {"x"}, {"y"}, "n");
    attr_int(nd, "axis", -1);
    attr_int(nd, "select_last_index", last);
    check(c);
  }
}

}  // namespace
