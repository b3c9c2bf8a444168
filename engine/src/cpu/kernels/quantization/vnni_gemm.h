// An 8-bit product with its output stage in registers, in AVX-512 VNNI
// (vnni_gemm.cpp; AVX2 without VNNI: int8_gemm_avx2.cpp), shared by the 1x1 channels-last QLinearConv
// (qlinear_conv_1x1.cpp) and QGemm (qgemm_vnni.cpp):
//   sum[r, n] = sum_k (a[r, k] - za) * (b[k, n] - zb[n])
// exact in int32 (K at most 33,000: no term past 255 * 128), then each sum
// requantized or scaled by the epilogue while in registers, so no int32
// matrix goes to memory and back. Rows of A are any byte rows of K values
// (pixels of an image, rows of a matrix); B is packed once (weights).
// Signed A bytes are read as a + 128 and the column sums of B take the 128
// and za away: sum (a - za) b = sum a' b - (za [+ 128]) * sum b.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <vector>

namespace onnxscope::cpu::vnni {

// Storage on 64-byte lines: a tile's or a register's 64 bytes in one line.
template <typename T>
struct LineAllocator {
  using value_type = T;
  LineAllocator() = default;
  template <typename U>
  LineAllocator(const LineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t{64}); }
  template <typename U>
  bool operator==(const LineAllocator<U>&) const { return true; }
};
template <typename T>
using LineVector = std::vector<T, LineAllocator<T>>;

inline constexpr int64_t kMaxK = 33000;

// Whether run() can run here: AVX-512 VNNI (with BW, VL and DQ), or AVX2
// (int8_gemm_avx2.cpp: 16-bit products, the same exact sums).
bool available();
// AVX-512 VNNI is there (the register tiles below, and AMX's stages).
bool vnni_available();
// set_vnni(false) keeps run() on the AVX2 registers where VNNI is there too,
// and lets the 8-bit convolutions take the product where oneDNN's would
// (conv_integer_product.cpp), so tests can compare them; true restores it.
void set_vnni(bool enabled);
bool vnni_allowed();  // set_vnni's state
// How many products run() has done on the AVX2 registers in this process.
int64_t avx2_products();

// B minus its zero points, packed for vpdpbusd: panel p (columns 16p..16p+15)
// holds, for each group of four k, 16 lanes of four int8 (zeros past K and N);
// and each column's sum.
struct PackedB {
  int64_t K = 0, N = 0, K4 = 0;
  // [ceil(N/16)][K4][16][4], then kTail zero bytes: an AMX tile reads 16
  // rows of four k at a time, past K4 into the next panel or the tail (A's
  // bytes there are zero, so what it reads adds nothing).
  static constexpr size_t kTail = 1024;
  LineVector<int8_t> panels;
  std::vector<int64_t> column_sums;
  // Where B's element (k, n) lies in `panels`, and the packed value.
  size_t offset(int64_t k, int64_t n) const { return static_cast<size_t>(((n / 16 * K4 + k / 4) * 16 + n % 16) * 4 + k % 4); }
  int8_t at(int64_t k, int64_t n) const { return panels[offset(k, n)]; }
  // Sized for a K x N B, every value and sum zero.
  void reset(int64_t k, int64_t n) {
    K = k;
    N = n;
    K4 = (k + 3) / 4;
    panels.assign(static_cast<size_t>((n + 15) / 16 * K4 * 64) + kTail, 0);
    column_sums.assign(static_cast<size_t>(n), 0);
  }
};

// Packs B, element (k, n) minus its zero point given by `at`; false (and
// `out` unusable) when one leaves int8.
bool pack(int64_t K, int64_t N, const std::function<int64_t(int64_t k, int64_t n)>& at, PackedB& out);
// Packs a row-major [K, N] block of bytes (rows `ldb` apart) as they are for
// int8, or minus 128 for uint8 (always int8): B's values minus a zero point
// zb are then the packed ones plus Product::b_offset = (128 for uint8) - zb.
void pack_bytes(const uint8_t* b, int64_t K, int64_t N, int64_t ldb, bool b_signed, PackedB& out);

// What becomes of the sums, per column n (arrays of N values):
enum class Stage {
  // QLinearConv / QLinearMatMul (requantize.h): round_half_even((sum + bias[n])
  // * mult[n]) + zero_point in double, saturated to Y's type. Multipliers
  // past 2^19 or not finite go through requantize_channels_last.
  requantize,
  // QGemm (qgemm.h): float(sum + addend[n]) * scale[n] in float, then Y
  // float (+ bias_float[n]: MatMulIntegerToFloat), or rounded half to even +
  // zero_point and saturated. Scales not finite: the caller's own stage for
  // 8-bit Y (this one declines them).
  scale_float,
};

struct Product {
  const PackedB* b = nullptr;
  int64_t rows = 0;                               // rows of Y
  std::function<const uint8_t*(int64_t)> row;      // A's row for Y's row r (K bytes)
  bool a_signed = false;
  int64_t a_zero_point = 0;
  // One value added to every packed B value to make B minus its zero point
  // (pack_bytes); each row's sum of A minus its zero point carries it.
  int64_t b_offset = 0;
  Stage stage = Stage::requantize;
  const int32_t* bias = nullptr;     // requantize: int32 per column, or none
  const double* mult = nullptr;      // requantize: per column
  const int32_t* addend = nullptr;   // scale_float: int32 per column, or none
  int64_t addend_step = 0;           // 1: per column, 0: one value
  const float* scale = nullptr;      // scale_float: per column
  const float* bias_float = nullptr; // scale_float with Y float: per column, added after the scale, or none
  double zero_point = 0;             // Y's
  // s32: the sums themselves (MatMulInteger), whatever the stage.
  enum class Type { u8, s8, f32, s32 } type = Type::u8;
  std::byte* y = nullptr;            // rows x N, row-major
};

// Y for every row, split across the thread pool: on AMX tiles where the
// machine has AMX-INT8 and the problem is large enough, else on AVX-512 VNNI
// registers, else on AVX2 registers (the same sums, so the same Y).
void run(const Product& p);

// Whether run() may take AMX tiles (the CPU has AMX-INT8 and Linux granted
// its tile state). set_amx(false) keeps run() on the VNNI path, so tests
// can compare the two; true restores it where AMX is there.
bool amx_available();
void set_amx(bool enabled);
// Whether a product of `rows` x K by K x N is the tiles' (where AMX is
// there and allowed): 16 rows, 64 k, 128 columns and half a million
// multiply-adds or more.
bool amx_shape(int64_t rows, int64_t K, int64_t N);
// How many products run() has done on AMX tiles in this process (tests
// check that the path they mean to cover ran).
int64_t amx_products();

}  // namespace onnxscope::cpu::vnni
