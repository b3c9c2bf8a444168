// The 8-bit product's three paths against the reference, bit for bit: its
// AMX tiles (kernels/quantization/amx_gemm.cpp), its AVX-512 VNNI registers
// (vnni_gemm.cpp) and its AVX2 registers (int8_gemm_avx2.cpp, 16-bit
// products: few rows widen B as they go, many widen it first), on the
// operators that run them: MatMulInteger, MatMulIntegerToFloat,
// DynamicQuantizeMatMul, QGemm (quantized and float Y, C small and past
// what int32 sums plus C can hold) and batched QLinearMatMul (requantized in
// float, in double, and multipliers past the fast range). Each problem runs
// on every path the CPU has (vnni::set_amx, vnni::set_vnni), at the sizes
// where the paths differ: rows, k and columns on and off the tiles' 32 x 64
// x 32 blocks, the AVX2 registers' 4 and 6 rows and their two forms.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "cpu/kernels/quantization/vnni_gemm.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "ops_harness.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::harness;
namespace vnni = onnxscope::cpu::vnni;

namespace {

// Rows, k and columns around the blocks' edges (and within the VNNI path's
// reach below them).
int64_t rows_of(Rng& rng) {
  return std::vector<int64_t>{1, 5, 11, 15, 16, 17, 31, 32, 33, 47, 64, 100, 130, 200}[pick(rng, 0, 13)];
}
int64_t k_of(Rng& rng) { return std::vector<int64_t>{63, 64, 65, 100, 128, 191, 256, 300, 768, 1000}[pick(rng, 0, 9)]; }
int64_t n_of(Rng& rng) { return std::vector<int64_t>{1, 15, 16, 17, 31, 32, 33, 48, 70, 100}[pick(rng, 0, 9)]; }

// A problem the tiles take (vnni::amx_shape: 128 columns and more), its
// rows, k and columns off the blocks' edges, for the problems
// on_tiles_pick picks, whatever was drawn for them before.
bool on_tiles_pick(int i) { return i % 4 == 1 || i % 6 == 0; }
void tile_problem(Rng& rng, int64_t& M, int64_t& K, int64_t& N) {
  M = std::vector<int64_t>{64, 100, 130, 200}[pick(rng, 0, 3)];
  K = std::vector<int64_t>{300, 768, 1000}[pick(rng, 0, 2)];
  N = std::vector<int64_t>{129, 144, 161, 200}[pick(rng, 0, 3)];
}

// c on every path the CPU has; where it has AMX, the tiles must have taken
// it when it is theirs (vnni::amx_shape). Returns whether they did.
bool check_both(Case& c, int64_t rows, int64_t K, int64_t N) {
  const int64_t before = vnni::amx_products();
  vnni::set_amx(true);
  check(c, 0, 0);
  const bool tiles = vnni::amx_available() && vnni::amx_shape(rows, K, N);
  if (tiles) {
    EXPECT_GT(vnni::amx_products(), before) << c.what << ": the AMX tiles did not run it";
  }
  if (vnni::vnni_available()) {
    Case registers = c;
    registers.what += " (VNNI registers)";
    vnni::set_amx(false);
    const int64_t held = vnni::amx_products(), avx2 = vnni::avx2_products();
    check(registers, 0, 0);
    vnni::set_amx(true);
    EXPECT_EQ(vnni::amx_products(), held) << registers.what << ": the tiles ran with set_amx(false)";
    EXPECT_EQ(vnni::avx2_products(), avx2) << registers.what << ": the AVX2 registers ran where VNNI is there";
  }
  Case avx2 = c;
  avx2.what += " (AVX2 registers)";
  vnni::set_vnni(false);
  const int64_t held = vnni::avx2_products();
  check(avx2, 0, 0);
  vnni::set_vnni(true);
  EXPECT_GT(vnni::avx2_products(), held) << avx2.what << ": the AVX2 registers did not run it";
  return tiles;
}

// Enough of a test's problems on the tiles to cover them (where AMX is there).
void expect_tiles_ran(int on_tiles) {
  if (vnni::amx_available()) {
    EXPECT_GE(on_tiles, 6) << "too few problems took the AMX tiles";
  }
}

class AmxProduct : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!vnni::available()) GTEST_SKIP() << "neither AVX2 nor VNNI: no path runs (the reference's kernels do)";
    if (!vnni::amx_available()) std::fprintf(stderr, "note: no AMX here (or ONNXSCOPE_CPU_NO_AMX): the registers run both\n");
  }
};

TEST_F(AmxProduct, MatMulIntegerBitForBit) {
  Rng rng(71);
  int on_tiles = 0;
  for (int i = 0; i < 24; ++i) {
    Case c(10);
    const DataType ta = i % 4 < 2 ? DataType::Uint8 : DataType::Int8, tb = i % 2 ? DataType::Uint8 : DataType::Int8;
    int64_t M = rows_of(rng), K = k_of(rng), N = n_of(rng);
    if (on_tiles_pick(i)) tile_problem(rng, M, K, N);
    const Shape as = i % 3 == 0 ? Shape{2, M, K} : Shape{M, K};
    const int zp = i % 3;  // none, scalars, per column
    c.input("a", random_bytes(rng, ta, as, 0, 255));
    const bool near = zp == 2;  // per column: values within 127 of their zero point
    const int wlo = near ? (tb == DataType::Uint8 ? 40 : 0) : 0, whi = near ? (tb == DataType::Uint8 ? 215 : 255) : 255;
    add_initializer(c.mb, "b", random_bytes(rng, tb, {K, N}, wlo, whi));
    std::vector<std::string> ins = {"a", "b"};
    if (zp > 0) {
      c.input("az", random_bytes(rng, ta, {}, 0, 255));
      const int zlo = tb == DataType::Uint8 ? (near ? 120 : 0) : 0, zhi = tb == DataType::Uint8 ? (near ? 136 : 255) : (near ? 0 : 255);
      add_initializer(c.mb, "bz", random_bytes(rng, tb, zp == 2 ? Shape{N} : Shape{}, zlo, zhi));
      ins.insert(ins.end(), {"az", "bz"});
    }
    c.mb.node("MatMulInteger", ins, {"y"}, "n");
    c.what = "MatMulInteger " + shape_to_string(as) + " x [" + std::to_string(K) + ", " + std::to_string(N) + "] " +
             std::string(dtype_name(ta)) + " x " + std::string(dtype_name(tb)) + " zero points " + std::to_string(zp);
    c.expect_kernel = "cpu-int8";
    on_tiles += check_both(c, i % 3 == 0 ? 2 * M : M, K, N);
  }
  expect_tiles_ran(on_tiles);
}

TEST_F(AmxProduct, MatMulIntegerToFloatAndDynamicQuantizeMatMulBitForBit) {
  Rng rng(73);
  int on_tiles = 0;
  for (int i = 0; i < 24; ++i) {
    Case c(14);
    c.mb.opset("com.microsoft", 1);
    const bool dynamic = i % 2 == 1;
    const DataType ta = i % 4 < 2 ? DataType::Uint8 : DataType::Int8, tb = i % 8 < 4 ? DataType::Int8 : DataType::Uint8;
    int64_t M = rows_of(rng), K = k_of(rng), N = n_of(rng);
    if (on_tiles_pick(i)) tile_problem(rng, M, K, N);
    const Shape as = i % 3 == 0 ? Shape{1, M, K} : Shape{M, K};
    const int zp = i / 2 % 3;
    const bool near = zp == 2;
    const int wlo = near ? (tb == DataType::Uint8 ? 40 : 0) : 0, whi = near ? (tb == DataType::Uint8 ? 215 : 255) : 255;
    add_initializer(c.mb, "b", random_bytes(rng, tb, {K, N}, wlo, whi));
    if (zp > 0) {
      const int zlo = tb == DataType::Uint8 ? (near ? 120 : 0) : 0, zhi = tb == DataType::Uint8 ? (near ? 136 : 255) : (near ? 0 : 255);
      add_initializer(c.mb, "bz", random_bytes(rng, tb, zp == 2 ? Shape{N} : Shape{}, zlo, zhi));
    }
    c.input("bs", random_tensor(rng, DataType::Float, i % 5 < 2 ? Shape{N} : Shape{}, 0.001, 0.05));
    const bool bias = i % 3 != 1;
    if (bias) c.input("bias", random_tensor(rng, DataType::Float, {N}, -1, 1));
    std::vector<std::string> ins;
    if (dynamic) {
      c.input("a", random_tensor(rng, DataType::Float, as, -3, 3, i % 10 == 9));
      ins = {"a", "b", "bs", zp ? "bz" : "", bias ? "bias" : ""};
    } else {
      c.input("a", random_bytes(rng, ta, as, 0, 255));
      c.input("as", scalar(DataType::Float, 0.01 * static_cast<double>(pick(rng, 1, 9))));
      c.input("az", random_bytes(rng, ta, {}, 0, 255));
      ins = {"a", "b", "as", "bs", "az", zp ? "bz" : "", bias ? "bias" : ""};
    }
    while (ins.back().empty()) ins.pop_back();
    c.mb.node(dynamic ? "DynamicQuantizeMatMul" : "MatMulIntegerToFloat", ins, {"y"}, "n", "com.microsoft");
    c.what = std::string(dynamic ? "DynamicQuantizeMatMul " : "MatMulIntegerToFloat ") + shape_to_string(as) + " x [" +
             std::to_string(K) + ", " + std::to_string(N) + "] B " + std::string(dtype_name(tb)) + " zero points " +
             std::to_string(zp) + (bias ? " bias" : "");
    c.expect_kernel = "cpu-int8";
    on_tiles += check_both(c, M, K, N);
  }
  expect_tiles_ran(on_tiles);
}

// QGemm with constant B (qgemm_vnni.cpp): C is the stage's addend; in some,
// C at an end of int32, where sums plus C leave it and the stage adds in
// double.
TEST_F(AmxProduct, QGemmBitForBit) {
  Rng rng(79);
  int on_tiles = 0;
  for (int i = 0; i < 24; ++i) {
    Case c(17);
    c.mb.opset("com.microsoft", 1);
    const DataType at = i % 3 == 2 ? DataType::Int8 : DataType::Uint8;
    const DataType bt = i % 3 == 0 ? DataType::Uint8 : DataType::Int8;
    int64_t M = rows_of(rng), K = k_of(rng), N = n_of(rng);
    if (on_tiles_pick(i)) tile_problem(rng, M, K, N);
    const bool tb = i % 4 < 2, quant = i % 3 != 1, per_col = i % 5 < 2;
    c.input("a", random_bytes(rng, at, {M, K}, 0, 255));
    const int wlo = bt == DataType::Uint8 ? 30 : 156, whi = bt == DataType::Uint8 ? 225 : 355;  // int8: -100..99 as bytes
    auto bytes = [&](const Shape& s, int lo, int hi) {
      Tensor t = Tensor::zeros(bt, s);
      for (uint64_t e = 0; e < t.element_count(); ++e)
        reinterpret_cast<uint8_t*>(t.mutable_raw())[e] = static_cast<uint8_t>(pick(rng, lo, hi) & 255);
      return t;
    };
    add_initializer(c.mb, "b", bytes(tb ? Shape{N, K} : Shape{K, N}, wlo, whi));
    c.input("as", scalar(DataType::Float, 0.01 * static_cast<double>(pick(rng, 1, 5))));
    c.input("az", scalar(at, at == DataType::Uint8 ? static_cast<double>(pick(rng, 100, 150)) : static_cast<double>(pick(rng, -10, 10))));
    c.input("bs", random_tensor(rng, DataType::Float, per_col ? Shape{N} : Shape{}, 0.001, 0.02));
    add_initializer(c.mb, "bz", bytes(per_col ? Shape{N} : Shape{}, bt == DataType::Uint8 ? 120 : 251, bt == DataType::Uint8 ? 136 : 261));
    // In some, C at int32's ends: sums plus C leave int32 (the stage adds in double).
    const bool edge = i % 4 == 3;
    Tensor cv = Tensor::zeros(DataType::Int32, i % 2 ? Shape{N} : Shape{});
    for (uint64_t e = 0; e < cv.element_count(); ++e)
      cv.mutable_data<int32_t>()[e] = static_cast<int32_t>(!edge ? pick(rng, -2000, 2000)
                                                           : i % 8 == 3 ? INT32_MIN + pick(rng, 0, 2000)
                                                                        : INT32_MAX - pick(rng, 0, 2000));
    c.input("c", cv);
    std::vector<std::string> ins = {"a", "as", "az", "b", "bs", "bz", "c"};
    if (quant) {
      c.input("ys", scalar(DataType::Float, 0.05 * static_cast<double>(pick(rng, 1, 4))));
      c.input("yz", scalar(at, at == DataType::Uint8 ? 128 : 0));
      ins.insert(ins.end(), {"ys", "yz"});
    }
    auto& n = c.mb.node("QGemm", ins, {"y"}, "n", "com.microsoft");
    if (tb) attr_int(n, "transB", 1);
    c.what = "QGemm M" + std::to_string(M) + " K" + std::to_string(K) + " N" + std::to_string(N) + (tb ? " transB" : "") +
             (quant ? "" : " float Y") + (edge ? " C at an end of int32" : "");
    c.expect_kernel = "cpu-int8";
    on_tiles += check_both(c, M, K, N);
  }
  expect_tiles_ran(on_tiles);
}

// Batched QLinearMatMul (qlinear_matmul_vnni.cpp): requantized in float
// where that is exact, in double where not, and through the reference's
// requantization for multipliers past 2^19 (a tiny y_scale).
TEST_F(AmxProduct, BatchedQLinearMatMulBitForBit) {
  Rng rng(83);
  int on_tiles = 0;
  for (int i = 0; i < 24; ++i) {
    Case c(17);
    const DataType at = i % 3 == 2 ? DataType::Int8 : DataType::Uint8;
    const DataType bt = i % 2 ? DataType::Uint8 : DataType::Int8;
    // (Wider B here: one batch's product is the tiles' unit, so more columns to reach their size.)
    int64_t M = rows_of(rng), K = k_of(rng), N = std::vector<int64_t>{17, 33, 70, 100, 197}[pick(rng, 0, 4)];
    if (on_tiles_pick(i)) tile_problem(rng, M, K, N);
    const Shape as = {2, M, K}, bs = {1, K, N};
    c.input("a", random_bytes(rng, at, as, 0, 255));
    c.input("as", scalar(DataType::Float, i % 3 == 0 ? 0.02 : 0.0173));
    c.input("az", scalar(at, at == DataType::Uint8 ? 128 : 3));
    add_initializer(c.mb, "b", random_bytes(rng, bt, bs, 0, 255));
    c.input("bs", scalar(DataType::Float, 0.01));
    c.input("bz", scalar(bt, bt == DataType::Uint8 ? static_cast<double>(pick(rng, 0, 255)) : static_cast<double>(pick(rng, -128, 127))));
    const double ys = i % 6 == 5 ? 1e-10 : 0.05 * static_cast<double>(pick(rng, 1, 8));
    c.input("ys", scalar(DataType::Float, ys));
    c.input("yz", scalar(at, at == DataType::Uint8 ? 128 : 0));
    c.mb.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}, "n");
    c.what = "QLinearMatMul " + shape_to_string(as) + " x " + shape_to_string(bs) + (ys < 1e-6 ? " multiplier past 2^19" : "");
    c.expect_kernel = "cpu-int8";
    on_tiles += check_both(c, M, K, N);  // (rows per batch: M at least)
  }
  expect_tiles_ran(on_tiles);
}

}  // namespace
