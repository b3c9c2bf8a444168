// ONNX Runtime's QOperator operators (com.microsoft QLinearAdd, QLinearMul,
// QLinearSigmoid, QLinearLeakyRelu, QLinearConcat, QLinearAveragePool,
// QLinearSoftmax, QGemm) and batched QLinearMatMul on the CPU engine's
// kernels against the reference, bit for bit, on seeded random problems
// (the harness of cpu_ops_harness_test.cpp, support/ops_harness.h): an
// observer records which implementation ran, so a kernel that silently
// declines fails, and where two kernels can take a problem both are run
// (CpuOptions::disabled_kernels).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/kernels/quantization/vnni_gemm.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/reference.h"
#include "ops_harness.h"

using namespace onnxscope;
using namespace onnxscope::test;
namespace vnni = onnxscope::cpu::vnni;
using namespace onnxscope::test::harness;

namespace {

// com.microsoft QLinearAdd and QLinearMul (kernels/quantization/qlinear_binary.cpp)
// against the reference, bit for bit: uint8 and int8, random broadcasts
// (residual adds, [1, C, 1, 1] gates, scalars: a single value against long
// rows too, the vector loop's) and operands of one shape,
// zero points given or not, scales that saturate the output.
TEST(CpuOpsHarness, QLinearAddAndMulBitForBit) {
  Rng rng(47);
  for (int i = 0; i < 48; ++i) {
    const bool mul = i % 2 == 1;
    const DataType t = i % 4 < 2 ? DataType::Uint8 : DataType::Int8;
    // One in three: operands of one shape, runs long enough for the 16-wide loop and its tail.
    const Shape same = {1, pick(rng, 1, 8), pick(rng, 2, 9), pick(rng, 3, 33)};
    // One in six more: a single value against rows long enough for the 16-wide loop, on either side.
    const Shape rows = {1, pick(rng, 1, 4), pick(rng, 17, 70)};
    const auto [sa, sb] = i % 3 == 2   ? std::pair<Shape, Shape>{same, same}
                          : i % 6 == 1 ? std::pair<Shape, Shape>{Shape{}, rows}
                          : i % 6 == 3 ? std::pair<Shape, Shape>{rows, Shape{1}}
                                       : broadcast_pair(rng);
    Case c(17);
    c.mb.opset("com.microsoft", 1);
    const double lo = t == DataType::Uint8 ? 0 : -128, hi = t == DataType::Uint8 ? 255 : 127;
    c.input("a", random_tensor(rng, t, sa, lo, hi));
    c.input("b", random_tensor(rng, t, sb, lo, hi));
    const double big = i % 8 == 7 ? 0.2 : 0.02;  // some saturate
    c.input("as", scalar(DataType::Float, 0.01 + 0.01 * pick(rng, 0, 5)));
    c.input("bs", scalar(DataType::Float, 0.01 + 0.01 * pick(rng, 0, 5)));
    c.input("cs", scalar(DataType::Float, mul ? big * 0.5 : big));
    const bool zps = i % 3 != 2;
    std::vector<std::string> ins = {"a", "as", zps ? "az" : "", "b", "bs", zps ? "bz" : "", "cs", zps ? "cz" : ""};
    if (zps) {
      c.input("az", scalar(t, t == DataType::Uint8 ? pick(rng, 100, 150) : pick(rng, -20, 20)));
      c.input("bz", scalar(t, t == DataType::Uint8 ? pick(rng, 100, 150) : pick(rng, -20, 20)));
      c.input("cz", scalar(t, t == DataType::Uint8 ? pick(rng, 100, 150) : pick(rng, -20, 20)));
    }
    while (ins.back().empty()) ins.pop_back();
    const char* op = mul ? "QLinearMul" : "QLinearAdd";
    c.mb.node(op, ins, {"y"}, "n", "com.microsoft");
    c.what = std::string(op) + " " + shape_to_string(sa) + " x " + shape_to_string(sb) + (zps ? " zero points" : "");
    check(c, 0, 0);
  }
}

// com.microsoft QLinearSigmoid and QLinearLeakyRelu
// (kernels/quantization/byte_lookup.cpp: the reference's table, looked
// up 64 bytes at a time) bit for bit: uint8 and int8, lengths on and off
// multiples of 64 and past one thread's share, zero points given or not,
// LeakyRelu's alpha given or not.
TEST(CpuOpsHarness, QLinearSigmoidAndLeakyReluBitForBit) {
  Rng rng(59);
  for (int i = 0; i < 24; ++i) {
    const bool leaky = i % 2 == 1;
    const DataType t = i % 4 < 2 ? DataType::Uint8 : DataType::Int8;
    const double lo = t == DataType::Uint8 ? 0 : -128, hi = t == DataType::Uint8 ? 255 : 127;
    const Shape s = i % 3 == 0 ? Shape{1, pick(rng, 1, 9), pick(rng, 1, 70)} : Shape{2, pick(rng, 30, 200), pick(rng, 100, 400)};
    Case c(17);
    c.mb.opset("com.microsoft", 1);
    c.input("x", random_tensor(rng, t, s, lo, hi));
    c.input("xs", scalar(DataType::Float, 0.01 + 0.02 * pick(rng, 0, 5)));
    c.input("ys", scalar(DataType::Float, leaky ? 0.05 : 1.0 / 256));
    const bool zps = i % 3 != 2;
    std::vector<std::string> ins = {"x", "xs", zps ? "xz" : "", "ys"};
    if (zps) {
      c.input("xz", scalar(t, t == DataType::Uint8 ? pick(rng, 100, 150) : pick(rng, -20, 20)));
      c.input("yz", scalar(t, t == DataType::Uint8 ? pick(rng, 0, 20) : pick(rng, -128, -100)));
      ins.push_back("yz");
    }
    const char* op = leaky ? "QLinearLeakyRelu" : "QLinearSigmoid";
    auto& n = c.mb.node(op, ins, {"y"}, "n", "com.microsoft");
    if (leaky && i % 4 == 1) attr_float(n, "alpha", 0.2f);
    c.what = std::string(op) + " " + shape_to_string(s) + (zps ? " zero points" : "");
    check(c, 0, 0);
  }
}

// com.microsoft QLinearConcat (kernels/quantization/qlinear_concat.cpp) bit
// for bit: uint8 and int8, ranks 1 to 4, any axis, two to four inputs, some
// with Y's own parameters (copied), the rest requantized through the table,
// chunks long enough for the 64-byte lookup and its tail.
TEST(CpuOpsHarness, QLinearConcatBitForBit) {
  Rng rng(61);
  for (int i = 0; i < 24; ++i) {
    const DataType t = i % 2 ? DataType::Uint8 : DataType::Int8;
    Case c(17);
    c.mb.opset("com.microsoft", 1);
    const Shape base = random_shape(rng, 1, 4, 9);
    Shape shape = base;
    for (auto& d : shape) d = std::max<int64_t>(d, 1);
    if (i % 3 == 0) shape.back() = pick(rng, 60, 150);  // long rows
    const int64_t rank = static_cast<int64_t>(shape.size()), axis = pick(rng, -rank, rank - 1);
    const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    const int64_t inputs = pick(rng, 2, 4);
    c.input("ys", scalar(DataType::Float, 0.02 + 0.01 * pick(rng, 0, 4)));
    c.input("yz", scalar(t, t == DataType::Uint8 ? pick(rng, 100, 150) : pick(rng, -20, 20)));
    std::vector<std::string> ins = {"ys", "yz"};
    for (int64_t k = 0; k < inputs; ++k) {
      Shape s = shape;
      s[a] = pick(rng, 1, 5);
      const std::string x = "x" + std::to_string(k);
      c.input(x, random_tensor(rng, t, s));
      if (k == 1 && i % 4 == 1) {  // Y's own parameters: copied
        ins.insert(ins.end(), {x, "ys", "yz"});
        continue;
      }
      c.input(x + "s", scalar(DataType::Float, 0.01 + 0.01 * pick(rng, 0, 6)));
      c.input(x + "z", scalar(t, t == DataType::Uint8 ? pick(rng, 90, 160) : pick(rng, -30, 30)));
      ins.insert(ins.end(), {x, x + "s", x + "z"});
    }
    attr_int(c.mb.node("QLinearConcat", ins, {"y"}, "n", "com.microsoft"), "axis", axis);
    c.what = "QLinearConcat of " + std::to_string(inputs) + " along " + std::to_string(axis) + " of " + shape_to_string(shape);
    check(c, 0, 0);
  }
}

// com.microsoft QLinearAveragePool with channels_last = 1
// (kernels/quantization/qlinear_average_pool.cpp) bit for bit: uint8 and
// int8, windows 1x1 to 4x3, strides, pads (counted or not), ceil_mode,
// channel counts on and off multiples of 16.
TEST(CpuOpsHarness, QLinearAveragePoolChannelsLastBitForBit) {
  Rng rng(67);
  for (int i = 0; i < 30; ++i) {
    const DataType t = i % 2 ? DataType::Uint8 : DataType::Int8;
    const int64_t kh = pick(rng, 1, 4), kw = pick(rng, 1, 3);
    const Shape s{pick(rng, 1, 2), pick(rng, kh, 12), pick(rng, kw, 12), pick(rng, 1, 40)};
    Case c(17);
    c.expect_fast = cpu_has_avx512bw();  // else the reference runs it (see ops_harness.h)
    c.mb.opset("com.microsoft", 1);
    c.input("x", random_tensor(rng, t, s));
    c.input("xs", scalar(DataType::Float, 0.01 + 0.01 * pick(rng, 0, 6)));
    c.input("xz", scalar(t, t == DataType::Uint8 ? pick(rng, 90, 160) : pick(rng, -30, 30)));
    c.input("ys", scalar(DataType::Float, 0.01 + 0.01 * pick(rng, 0, 6)));
    c.input("yz", scalar(t, t == DataType::Uint8 ? pick(rng, 90, 160) : pick(rng, -30, 30)));
    auto& n = c.mb.node("QLinearAveragePool", {"x", "xs", "xz", "ys", "yz"}, {"y"}, "n", "com.microsoft");
    attr_int(n, "channels_last", 1);
    attr_ints(n, "kernel_shape", {kh, kw});
    attr_ints(n, "strides", {pick(rng, 1, 2), pick(rng, 1, 3)});
    attr_ints(n, "pads", {pick(rng, 0, kh - 1), pick(rng, 0, kw - 1), pick(rng, 0, kh - 1), pick(rng, 0, kw - 1)});
    attr_int(n, "count_include_pad", i % 3 == 0 ? 1 : 0);
    attr_int(n, "ceil_mode", i % 4 == 1 ? 1 : 0);
    c.what = "QLinearAveragePool " + shape_to_string(s) + " window " + std::to_string(kh) + "x" + std::to_string(kw);
    check(c, 0, 0);
  }
}

// com.microsoft QLinearSoftmax over contiguous rows
// (kernels/quantization/qlinear_softmax.cpp) bit for bit: uint8 and int8,
// the last axis (opset 13) or an earlier one below opset 13 (rows of every
// dim from it on), rows from 1 to 300 values (four side by side and the
// rest), zero points given or not.
TEST(CpuOpsHarness, QLinearSoftmaxBitForBit) {
  Rng rng(71);
  for (int i = 0; i < 24; ++i) {
    const DataType t = i % 2 ? DataType::Uint8 : DataType::Int8;
    const bool old_rule = i % 3 == 2;
    Shape s = random_shape(rng, 1, 4, 7);
    for (auto& d : s) d = std::max<int64_t>(d, 1);
    if (i % 4 == 0) s.back() = pick(rng, 100, 300);
    const int64_t rank = static_cast<int64_t>(s.size());
    Case c(17);
    c.expect_fast = cpu_has_avx512bw();  // else the reference runs it (see ops_harness.h)
    c.mb.opset("com.microsoft", 1);
    c.input("x", random_tensor(rng, t, s));
    c.input("xs", scalar(DataType::Float, 0.02 + 0.05 * pick(rng, 0, 6)));
    c.input("ys", scalar(DataType::Float, 1.0 / 256));
    const bool zps = i % 5 != 3;
    std::vector<std::string> ins = {"x", "xs", zps ? "xz" : "", "ys"};
    if (zps) {
      c.input("xz", scalar(t, t == DataType::Uint8 ? pick(rng, 100, 150) : pick(rng, -20, 20)));
      c.input("yz", scalar(t, t == DataType::Uint8 ? 0 : -128));
      ins.push_back("yz");
    }
    auto& n = c.mb.node("QLinearSoftmax", ins, {"y"}, "n", "com.microsoft");
    attr_int(n, "opset", old_rule ? 11 : 13);
    attr_int(n, "axis", old_rule ? pick(rng, -rank, rank - 1) : -1);
    c.what = "QLinearSoftmax " + shape_to_string(s) + (old_rule ? " opset 11" : "");
    check(c, 0, 0);
  }
}

// com.microsoft QGemm and QLinearMatMul with batch dims
// (kernels/quantization/qgemm.cpp) against the reference, bit for bit:
// transA/transB, C of every broadcast, per-column b_scale and b_zero_point,
// Y quantized or float; QLinearMatMul batches broadcast as numpy's matmul.
// Each QGemm twice: as dispatched (oneDNN's int8 matmul, matmul_integer.cpp,
// where A is not transposed and the CPU has VNNI) and on the Eigen form.
TEST(CpuOpsHarness, QGemmAndBatchedQLinearMatMulBitForBit) {
  Rng rng(53);
  for (int i = 0; i < 40; ++i) {
    Case c(17);
    c.mb.opset("com.microsoft", 1);
    const DataType at = i % 3 == 2 ? DataType::Int8 : DataType::Uint8;
    const DataType bt = i % 3 == 0 ? DataType::Uint8 : DataType::Int8;
    const double alo = at == DataType::Uint8 ? 0 : -128, ahi = at == DataType::Uint8 ? 255 : 127;
    const double blo = bt == DataType::Uint8 ? 0 : -128, bhi = bt == DataType::Uint8 ? 255 : 127;
    // N past 8 in some: the output stage's 8-column vector loop and its tail.
    const int64_t M = pick(rng, 1, 9), K = pick(rng, 1, 40), N = i % 3 == 1 ? pick(rng, 8, 45) : pick(rng, 1, 12);
    // (N past 16 for the batched products too: several panels, a partial last one.)
    if (i % 2 == 0) {  // QGemm
      const bool ta = i % 4 == 2, tb = i % 8 < 4, quant = i % 6 != 4;
      // B and its zero point as initializers in half: the VNNI kernel's (qgemm_vnni.cpp) where A is not
      // transposed, C one value or one per column; else oneDNN's int8 matmul.
      const bool weights = i % 4 == 0;
      auto operand = [&](const std::string& name, Tensor t) {
        if (!weights) return c.input(name, std::move(t));
        c.mb.initializer(make_tensor_raw(name, t.dtype(), t.shape(),
                                         std::string(reinterpret_cast<const char*>(t.raw()), t.byte_size())));
      };
      c.input("a", random_tensor(rng, at, ta ? Shape{K, M} : Shape{M, K}, alo, ahi));
      // As initializers, values whose difference to the zero point fits int8, as quantizers' are
      // (random_tensor draws 8-bit values over the whole range).
      auto bytes_in = [&](const Shape& shape, int lo, int hi) {
        Tensor t = Tensor::zeros(bt, shape);
        for (uint64_t e = 0; e < t.element_count(); ++e)
          reinterpret_cast<uint8_t*>(t.mutable_raw())[e] = static_cast<uint8_t>(pick(rng, lo, hi));
        return t;
      };
      const int wlo = bt == DataType::Uint8 ? 30 : -100, whi = bt == DataType::Uint8 ? 225 : 100;
      operand("b", weights ? bytes_in(tb ? Shape{N, K} : Shape{K, N}, wlo, whi)
                           : random_tensor(rng, bt, tb ? Shape{N, K} : Shape{K, N}, blo, bhi));
      c.input("as", scalar(DataType::Float, 0.01 * pick(rng, 1, 5)));
      c.input("az", scalar(at, at == DataType::Uint8 ? pick(rng, 100, 150) : pick(rng, -10, 10)));
      const bool per_col = i % 5 < 2;
      c.input("bs", random_tensor(rng, DataType::Float, per_col ? Shape{N} : Shape{}, 0.001, 0.02));
      const int zlo = bt == DataType::Uint8 ? 120 : -5, zhi = bt == DataType::Uint8 ? 136 : 5;
      operand("bz", weights ? bytes_in(per_col ? Shape{N} : Shape{}, zlo, zhi)
                            : random_tensor(rng, bt, per_col ? Shape{N} : Shape{}, zlo, zhi));
      std::vector<std::string> ins = {"a", "as", "az", "b", "bs", "bz"};
      const Shape cs = std::vector<Shape>{{}, {N}, {1, N}, {M, 1}, {M, N}}[static_cast<size_t>(i % 5)];
      if (i % 7 != 3) {
        c.input("c", random_tensor(rng, DataType::Int32, cs, -2000, 2000));
        ins.push_back("c");
      } else {
        ins.push_back("");
      }
      if (quant) {
        c.input("ys", scalar(DataType::Float, 0.05 * pick(rng, 1, 4)));
        c.input("yz", scalar(at, at == DataType::Uint8 ? 128 : 0));
        ins.insert(ins.end(), {"ys", "yz"});
      }
      while (ins.back().empty()) ins.pop_back();
      auto& n = c.mb.node("QGemm", ins, {"y"}, "n", "com.microsoft");
      if (ta) attr_int(n, "transA", 1);
      if (tb) attr_int(n, "transB", 1);
      if (i % 9 == 4) attr_float(n, "alpha", 0.5f);
      c.what = "QGemm M" + std::to_string(M) + " K" + std::to_string(K) + " N" + std::to_string(N) + (ta ? " transA" : "") +
               (tb ? " transB" : "") + (quant ? "" : " float Y");
      Case eigen = c;
      eigen.disabled_kernels = {"onednn-int8", "cpu-int8"};
      eigen.what += " (Eigen form)";
      check(eigen, 0, 0);
      if (weights && !ta && (i % 5 < 3 || i % 7 == 3) && vnni::available()) {
        c.expect_kernel = "cpu-int8";
        Case dnn = c;  // and oneDNN's int8 matmul behind it
        dnn.disabled_kernels = {"cpu-int8"};
        dnn.expect_kernel.clear();  // oneDNN's int8 matmul with VNNI, else the Eigen form
        dnn.what += " (oneDNN form)";
        check(dnn, 0, 0);
      }
    } else {  // QLinearMatMul with batches
      const Shape batch_a = i % 3 == 1 ? Shape{2, 1} : Shape{2, 3}, batch_b = i % 3 == 1 ? Shape{1, 3} : Shape{3};
      Shape as = batch_a, bs = batch_b;
      as.insert(as.end(), {M, K});
      bs.insert(bs.end(), {K, N});
      c.input("a", random_tensor(rng, at, as, alo, ahi));
      c.input("as", scalar(DataType::Float, 0.02));
      c.input("az", scalar(at, at == DataType::Uint8 ? 128 : 3));
      c.input("b", random_tensor(rng, bt, bs, blo, bhi));
      c.input("bs", scalar(DataType::Float, 0.01));
      // B's zero point anywhere in its range: the VNNI form packs uint8 B minus 128 and carries the rest.
      c.input("bz", scalar(bt, bt == DataType::Uint8 ? pick(rng, 0, 255) : pick(rng, -128, 127)));
      c.input("ys", scalar(DataType::Float, 0.05 * pick(rng, 1, 8)));
      c.input("yz", scalar(at, at == DataType::Uint8 ? 128 : 0));
      c.mb.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}, "n");
      c.what = "QLinearMatMul " + shape_to_string(as) + " x " + shape_to_string(bs);
      if (vnni::available()) {
        c.expect_kernel = "cpu-int8";  // kernels/quantization/qlinear_matmul_vnni.cpp
        Case eigen = c;
        eigen.disabled_kernels = {"cpu-int8"};
        eigen.expect_kernel = "cpu-eigen";
        eigen.what += " (Eigen form)";
        check(eigen, 0, 0);
      }
    }
    check(c, 0, 0);
  }
}

// MatMulInteger with constant B (dynamic quantization's linear layers) on
// the VNNI kernel (matmul_integer_vnni.cpp): uint8 and int8 A with its zero
// point, B int8 or uint8 with no zero point, one (packed as its bytes, the
// zero point carried by the row sums) or one per column (packed minus it);
// A of rank 2 and 3; and oneDNN's int8 matmul behind it. The int32 sums bit for bit.
TEST(CpuOpsHarness, MatMulIntegerConstantWeightsBitForBit) {
  if (!vnni::available()) GTEST_SKIP() << "neither VNNI nor AVX2: oneDNN's kernel or the reference (cpu_ops_harness_test)";
  Rng rng(59);
  for (int i = 0; i < 30; ++i) {
    Case c(10);
    const DataType ta = i % 4 < 2 ? DataType::Uint8 : DataType::Int8, tb = i % 2 ? DataType::Uint8 : DataType::Int8;
    const int64_t K = i % 7 == 6 ? 768 : pick(rng, 1, 90), N = pick(rng, 1, 70);
    const Shape as = i % 3 == 0 ? Shape{pick(rng, 1, 3), pick(rng, 1, 13), K} : Shape{pick(rng, 1, 20), K};
    const int zp = i % 3;  // none, scalars, per column
    auto bytes_in = [&](DataType t, const Shape& shape, int lo, int hi) { return random_bytes(rng, t, shape, lo, hi); };
    auto initializer = [&](const std::string& name, const Tensor& t) { add_initializer(c.mb, name, t); };
    c.input("a", bytes_in(ta, as, 0, 255));
    // Per column, values within 127 of their zero point (what fits the packing); else any byte.
    const bool near = zp == 2;
    const int wlo = near ? (tb == DataType::Uint8 ? 40 : 0) : 0, whi = near ? (tb == DataType::Uint8 ? 215 : 255) : 255;
    initializer("b", bytes_in(tb, {K, N}, wlo, whi));
    std::vector<std::string> ins = {"a", "b"};
    if (zp > 0) {
      c.input("az", bytes_in(ta, {}, 0, 255));
      const int zlo = tb == DataType::Uint8 ? (near ? 120 : 0) : 0, zhi = tb == DataType::Uint8 ? (near ? 136 : 255) : (near ? 0 : 255);
      initializer("bz", bytes_in(tb, zp == 2 ? Shape{N} : Shape{}, zlo, zhi));
      ins.push_back("az");
      ins.push_back("bz");
    }
    c.mb.node("MatMulInteger", ins, {"y"}, "n");
    c.what = "MatMulInteger " + shape_to_string(as) + " x [" + std::to_string(K) + ", " + std::to_string(N) + "] " +
             std::string(dtype_name(ta)) + " x " + std::string(dtype_name(tb)) + (zp ? zp == 2 ? " zero points per column" : " zero points" : "");
    c.expect_kernel = "cpu-int8";
    Case dnn = c;
    dnn.disabled_kernels = {"cpu-int8"};
    dnn.expect_kernel.clear();
    dnn.expect_fast = cpu_has_int8_vnni();  // oneDNN's int8 matmul wants VNNI (else the reference runs it)
    dnn.what += " (oneDNN form)";
    check(dnn, 0, 0);
    check(c, 0, 0);
  }
}

// QLinearMatMul with a constant 2-D B (a QOperator transformer's linear
// layers): oneDNN's int8 matmul where the CPU has VNNI, else the 8-bit
// product (qlinear_matmul_vnni.cpp, B packed once for the node); every type,
// zero points anywhere, A of rank 2 and 3, rows on both AVX2 forms (fewer
// and more than 12), multipliers that saturate some outputs. Bit for bit.
TEST(CpuOpsHarness, QLinearMatMulConstantWeightsBitForBit) {
  Rng rng(67);
  for (int i = 0; i < 24; ++i) {
    Case c(10);
    const DataType ta = i % 2 ? DataType::Uint8 : DataType::Int8, tb = (i / 2) % 2 ? DataType::Uint8 : DataType::Int8,
                   ty = (i / 4) % 2 ? DataType::Uint8 : DataType::Int8;
    const int64_t M = i % 3 == 0 ? pick(rng, 12, 40) : pick(rng, 1, 11), K = i % 5 == 4 ? 768 : pick(rng, 1, 70),
                  N = pick(rng, 1, 70);
    const Shape as = i % 4 == 1 ? Shape{2, M, K} : Shape{M, K};
    c.input("a", random_bytes(rng, ta, as, 0, 255));
    add_initializer(c.mb, "b", random_bytes(rng, tb, {K, N}, 0, 255));
    c.input("az", random_bytes(rng, ta, {}, 0, 255));
    add_initializer(c.mb, "bz", random_bytes(rng, tb, {}, 0, 255));
    c.input("yz", random_bytes(rng, ty, {}, 0, 255));
    c.mb.initializer(make_float_tensor("as", {}, {0.02f}));
    c.mb.initializer(make_float_tensor("bs", {}, {0.005f}));
    c.mb.initializer(make_float_tensor("ys", {}, {i % 3 == 1 ? 0.7f : 0.05f}));
    c.mb.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}, "n");
    c.what = "QLinearMatMul " + std::string(dtype_name(ta)) + " x " + std::string(dtype_name(tb)) + " -> " +
             std::string(dtype_name(ty)) + " " + shape_to_string(as) + " x [" + std::to_string(K) + ", " +
             std::to_string(N) + "] constant B";
    if (vnni::available() && !cpu_has_int8_vnni()) c.expect_kernel = "cpu-int8";
    check(c, 0, 0);
  }
}

// com.microsoft MatMulIntegerToFloat and DynamicQuantizeMatMul (what
// onnxruntime's optimizer makes of quantize_dynamic's linear layers) on the
// VNNI kernel (matmul_integer_vnni.cpp), bit for bit: A uint8 or int8 with
// its scale and zero point (or float, quantized as DynamicQuantizeLinear
// does, NaN and infinities in some), B int8 or uint8 with no zero point,
// one, or one per column, b_scale one value or per column, a bias or none,
// absent inputs written as empty names (as onnxruntime saves them), A of
// rank 2 and 3.
TEST(CpuOpsHarness, MatMulIntegerToFloatAndDynamicQuantizeMatMulBitForBit) {
  if (!vnni::available()) GTEST_SKIP() << "neither VNNI nor AVX2: the reference runs them";
  Rng rng(61);
  for (int i = 0; i < 40; ++i) {
    Case c(14);
    c.mb.opset("com.microsoft", 1);
    const bool dynamic = i % 2 == 1;
    const DataType ta = i % 4 < 2 ? DataType::Uint8 : DataType::Int8, tb = i % 8 < 4 ? DataType::Int8 : DataType::Uint8;
    const int64_t K = i % 9 == 8 ? 768 : pick(rng, 1, 90), N = pick(rng, 1, 70);
    const Shape as = i % 3 == 0 ? Shape{pick(rng, 1, 3), pick(rng, 1, 13), K} : Shape{pick(rng, 1, 20), K};
    const int zp = i / 2 % 3;  // B's: none, one, per column
    auto bytes_in = [&](DataType t, const Shape& shape, int lo, int hi) { return random_bytes(rng, t, shape, lo, hi); };
    auto initializer = [&](const std::string& name, const Tensor& t) { add_initializer(c.mb, name, t); };
    const bool near = zp == 2;  // per column: values within 127 of their zero point (what the packing takes)
    const int wlo = near ? (tb == DataType::Uint8 ? 40 : 0) : 0, whi = near ? (tb == DataType::Uint8 ? 215 : 255) : 255;
    initializer("b", bytes_in(tb, {K, N}, wlo, whi));
    if (zp > 0) {
      const int zlo = tb == DataType::Uint8 ? (near ? 120 : 0) : 0, zhi = tb == DataType::Uint8 ? (near ? 136 : 255) : (near ? 0 : 255);
      initializer("bz", bytes_in(tb, zp == 2 ? Shape{N} : Shape{}, zlo, zhi));
    }
    Tensor bscale = random_tensor(rng, DataType::Float, i % 5 < 2 ? Shape{N} : Shape{}, 0.001, 0.05);
    c.input("bs", bscale);
    const bool bias = i % 3 != 1;
    if (bias) c.input("bias", random_tensor(rng, DataType::Float, {N}, -1, 1));
    std::vector<std::string> ins;
    if (dynamic) {
      c.input("a", random_tensor(rng, DataType::Float, as, -3, 3, i % 10 == 9));
      ins = {"a", "b", "bs", zp ? "bz" : "", bias ? "bias" : ""};
    } else {
      c.input("a", bytes_in(ta, as, 0, 255));
      c.input("as", scalar(DataType::Float, 0.01 * pick(rng, 1, 9)));
      const bool az = i % 4 != 2;
      if (az) c.input("az", bytes_in(ta, {}, 0, 255));
      ins = {"a", "b", "as", "bs", az ? "az" : "", zp ? "bz" : "", bias ? "bias" : ""};
    }
    while (ins.back().empty()) ins.pop_back();
    c.mb.node(dynamic ? "DynamicQuantizeMatMul" : "MatMulIntegerToFloat", ins, {"y"}, "n", "com.microsoft");
    c.what = std::string(dynamic ? "DynamicQuantizeMatMul " : "MatMulIntegerToFloat ") + shape_to_string(as) + " x [" +
             std::to_string(K) + ", " + std::to_string(N) + "] " + std::string(dtype_name(dynamic ? DataType::Float : ta)) +
             " x " + std::string(dtype_name(tb)) + (zp ? zp == 2 ? " zero points per column" : " zero point" : "") +
             (bias ? " bias" : "") + (bscale.element_count() > 1 ? " scales per column" : "");
    c.expect_kernel = "cpu-int8";
    check(c, 0, 0);
  }
}

// MatMulIntegerToFloat with any a_scale (0, negative, infinite, NaN) gives
// what the graph it stands for gives (MatMulInteger, Cast, Mul by a_scale *
// b_scale: infinities and NaN, as onnxruntime), on both engines: a
// DynamicQuantizeLinear of an input holding an infinity makes such a scale,
// and the fused form must not fail where the unfused one runs (a mutated
// quantize_dynamic BERT did, after fuse-matmul-integer-to-float).
TEST(CpuOpsHarness, MatMulIntegerToFloatTakesAnyScale) {
  if (!vnni::available()) GTEST_SKIP() << "neither VNNI nor AVX2: the reference runs it";
  Rng rng(63);
  for (float odd : {0.0f, -0.5f, INFINITY, NAN}) {
    Case c(14);
    c.mb.opset("com.microsoft", 1);
    c.input("a", random_bytes(rng, DataType::Uint8, {3, 8}, 0, 255));
    c.input("as", scalar(DataType::Float, odd));
    add_initializer(c.mb, "b", random_bytes(rng, DataType::Int8, {8, 5}, 0, 255));
    c.input("bs", scalar(DataType::Float, 0.01));
    c.mb.node("MatMulIntegerToFloat", {"a", "b", "as", "bs"}, {"y"}, "n", "com.microsoft");
    c.what = "MatMulIntegerToFloat a_scale " + std::to_string(odd);
    c.expect_kernel = "cpu-int8";
    check(c, 0, 0);
  }
}

// The VNNI product's float requantization (vnni_gemm.cpp, RequantizeFloat)
// near a half: with the multiplier 5810859 * 2^-18 (22.1666...), a sum of 3
// is 66.5000038 exactly, which float rounds to the tie 66.5 (half an ulp
// away, to even): the exact result is 67, the float path's alone 66. Sums of
// 1 to 6 (a row per tile row), every column.
TEST(CpuOpsHarness, QLinearMatMulRequantizesNearAHalfExactly) {
  if (!vnni::available()) GTEST_SKIP() << "neither VNNI nor AVX2: the reference runs it";
  Case c(17);
  Tensor a = Tensor::zeros(DataType::Uint8, {1, 6, 4});  // batched: the VNNI form's (2-D goes to oneDNN)
  for (int64_t r = 0; r < 6; ++r) a.mutable_data<uint8_t>()[r * 4] = static_cast<uint8_t>(r + 1);
  Tensor b = Tensor::zeros(DataType::Int8, {1, 4, 32});
  for (int64_t n = 0; n < 32; ++n) b.mutable_data<int8_t>()[n] = 1;
  c.input("a", a);
  c.input("as", scalar(DataType::Float, 5810859.0 / 262144.0));  // a float exactly
  c.input("az", scalar(DataType::Uint8, 0));
  c.input("b", b);
  c.input("bs", scalar(DataType::Float, 1.0));
  c.input("bz", scalar(DataType::Int8, 0));
  c.input("ys", scalar(DataType::Float, 1.0));
  c.input("yz", scalar(DataType::Uint8, 0));
  c.mb.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}, "n");
  c.what = "QLinearMatMul near a half";
  c.expect_kernel = "cpu-int8";
  check(c, 0, 0);
  auto got = make_cpu_engine()->prepare(load_model(c.mb))->run(c.inputs);
  EXPECT_EQ(got[0].second.tensor().data<uint8_t>()[2 * 32], 67);  // row 2: the sum 3
}

}  // namespace
