// The CPU engine's own math kernels that have a test of their own beside the
// harness's (support/ops_harness.h): Softmax and LogSoftmax over the last
// axis, row lengths around the vector width, NaN and infinities in rows, and
// the opset-11 form (the input coerced to 2-D at `axis`); ArgMax and ArgMin
// over rows long enough for their vector path; com.microsoft MatMulNBits
// (int4 and int8 weights, with and without zero points and bias, one row
// of A and many, K not a multiple of the block); Sum, Mean, Max and Min of
// one to four same-shape inputs (kernels/math/variadic.cpp).
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

// Variadic Sum / Mean / Max / Min of same-shape float32 inputs, bit for bit
// (the reference's order): one to four inputs, NaN and infinities in some,
// sizes from one element past the 4096-float chunks and the thread split,
// opsets 6 and 13.
TEST(CpuOpsMath, VariadicSumMeanMaxMinBitForBit) {
  Rng rng(67);
  const char* ops[] = {"Sum", "Mean", "Max", "Min"};
  for (int i = 0; i < 48; ++i) {
    Case c(i % 3 == 0 ? 6 : 13);
    const char* op = ops[i % 4];
    const Shape s = i % 6 == 5 ? Shape{pick(rng, 1, 3), pick(rng, 100, 300), 129} : random_shape(rng, 0, 4, 9);
    const int inputs = static_cast<int>(pick(rng, 1, 4));
    std::vector<std::string> names;
    for (int k = 0; k < inputs; ++k) {
      names.push_back("x" + std::to_string(k));
      c.input(names.back(), random_tensor(rng, DataType::Float, s, -3, 3, i % 4 == 2 || i % 7 == 3));
    }
    c.mb.node(op, names, {"y"}, "n");
    c.what = std::string(op) + " of " + std::to_string(inputs) + " x " + shape_to_string(s);
    c.expect_kernel = "cpu-loop";
    check(c, 0, 0);
  }
}

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

// com.microsoft MatMulNBits (kernels/quantization/matmul_nbits.cpp) against
// the reference: bits 4 and 8, block sizes 16 to 128, K with a partial last
// block, zero points packed or absent, bias or not, A of 1 row (a decoding
// step) to many, of rank 1 to 3; g_idx and 2-bit weights go to the reference.
TEST(CpuOpsMath, MatMulNBitsAgainstTheReference) {
  Rng rng(91);
  for (int i = 0; i < 40; ++i) {
    const int64_t bits = i % 10 == 9 ? 2 : (i % 3 == 2 ? 8 : 4);
    const int64_t block = int64_t{16} << pick(rng, 0, 3);
    const int64_t K = pick(rng, 1, 300), N = pick(rng, 1, 150);
    const int64_t k_blocks = (K + block - 1) / block, blob = block * bits / 8;
    Case c(17);
    c.mb.opset("com.microsoft", 1);
    const Shape a = i % 4 == 0 ? Shape{K} : i % 4 == 1 ? Shape{1, K} : Shape{pick(rng, 1, 3), pick(rng, 1, 40), K};
    c.input("a", random_tensor(rng, DataType::Float, a, -2, 2));
    c.input("b", random_tensor(rng, DataType::Uint8, {N, k_blocks, blob}, 0, 255));
    // Weights of magnitude up to about 1.5, as a quantizer's scales give them.
    const double smax = bits == 8 ? 0.012 : bits == 4 ? 0.2 : 1.0;
    c.input("scales", random_tensor(rng, DataType::Float, {N * k_blocks}, smax / 10, smax));
    std::vector<std::string> ins = {"a", "b", "scales"};
    const bool zp = i % 2 == 1, bias = i % 5 < 2;
    if (zp) c.input("zp", random_tensor(rng, DataType::Uint8, {N * ((k_blocks * bits + 7) / 8)}, 0, 255));
    ins.push_back(zp ? "zp" : "");
    if (bias) {
      c.input("bias", random_tensor(rng, DataType::Float, {N}, -1, 1));
      ins.push_back("");
      ins.push_back("bias");
    }
    while (ins.back().empty()) ins.pop_back();
    auto& n = c.mb.node("MatMulNBits", ins, {"y"}, "n", "com.microsoft");
    attr_int(n, "K", K);
    attr_int(n, "N", N);
    attr_int(n, "bits", bits);
    attr_int(n, "block_size", block);
    c.what = "MatMulNBits A " + shape_to_string(a) + " N " + std::to_string(N) + " bits " + std::to_string(bits) +
             " block " + std::to_string(block) + (zp ? " zp" : "") + (bias ? " bias" : "");
    c.expect_fast = bits != 2;
    // float sums of up to 300 products of magnitude up to 3, against the reference's double sums
    check(c, 2e-4, 2e-5);
  }
}

}  // namespace
