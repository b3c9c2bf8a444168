// The kernel test harness (ggml's test-backend-ops discipline): seeded random
// tensors and shapes, a one-node model around them, and check(), which runs it
// on the reference and on the CPU engine, requires the CPU kernel (not the
// reference fallback) to have run it, and compares every output.
//
// Tolerance for float32 results: |cpu - ref| <= atol + rtol * |ref|. NaN
// must meet NaN and an infinity the same infinity; every other type must
// match bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model_builder.h"
#include "onnxscope/engine.h"
#include "onnxscope/tensor.h"

namespace onnxscope::test::harness {

using Rng = std::mt19937;

int64_t pick(Rng& rng, int64_t lo, int64_t hi);
std::vector<DimSpec> dims_of(const Shape& s);
uint64_t count(const Shape& s);

// Random values of a type; floats in [lo, hi], with NaN, +-inf and +-0 mixed in when `specials`.
Tensor random_tensor(Rng& rng, DataType t, const Shape& s, double lo = -2, double hi = 2, bool specials = false);
// Rank in [min_rank, max_rank], dims in [1, max_dim] (one in 13 is 0).
Shape random_shape(Rng& rng, int64_t min_rank, int64_t max_rank, int64_t max_dim = 9);

// The 8-bit operators' parameters: a scalar of float, uint8 or int8; 8-bit
// values with each byte drawn from [lo, hi] (int8: the same bits read
// signed); `t` as an initializer of the model.
Tensor scalar(DataType t, double v);
Tensor random_bytes(Rng& rng, DataType t, const Shape& shape, int lo, int hi);
void add_initializer(ModelBuilder& mb, const std::string& name, const Tensor& t);

// Two shapes that broadcast to a random output shape (numpy's rules: either
// side may be shorter, any dim 1).
std::pair<Shape, Shape> broadcast_pair(Rng& rng);

struct Case {
  std::string what;
  ModelBuilder mb;
  NamedValues inputs;
  bool expect_fast = true;  // false: the reference kernel must run it
  std::string expect_kernel;  // when set: the implementation that must run it (e.g. "cpu-int8")
  std::vector<std::string> outputs = {"y"};
  std::set<std::string> disabled_kernels;  // CpuOptions::disabled_kernels: check the kernels behind these
  explicit Case(int64_t opset) : mb(opset) {}
  void input(const std::string& name, Tensor t);
  void ints(const std::string& name, const std::vector<int64_t>& v);
};

// The CPU features some of the cpu engine's kernels need; where they are
// absent those kernels decline and the reference kernel runs, which a case
// then expects (expect_fast = false). The 8-bit products and convolutions
// need VNNI (AVX512-VNNI or AVX-VNNI): without it oneDNN's u8 x s8 sums
// saturate in 16 bits, and the engine stays exact by leaving them to the
// reference. QLinearSoftmax and QLinearAveragePool are AVX-512 (F, BW, VL, DQ).
bool cpu_has_int8_vnni();
bool cpu_has_avx512bw();

// Runs the case on both engines and compares (gtest failures, not exceptions).
void check(Case& c, double atol = 2e-5, double rtol = 2e-5);

// A model whose nodes the CPU engine's passes fuse: its seeded inputs run on
// the reference (the answer) and on the CPU engine (2 threads, every pass),
// which reports each node as it ran ("op kernel", fused nodes under their
// own names).
struct FusedRun {
  NamedValues want, got;
  std::vector<std::string> ran;
};
FusedRun run_fused(const std::shared_ptr<const Model>& m, uint64_t seed);

}  // namespace onnxscope::test::harness
