// The CPU engine's kernels for what transformer exports are made of
// (Transpose, Where, LayerNormalization, Erf, Gelu, IsNaN) against the
// reference engine on seeded random problems: odd sizes, every permutation
// of small ranks, broadcasts, zero-sized dims, several element types. Each
// case also checks which implementation ran, so a kernel that silently
// declines fails.
#include <gtest/gtest.h>

#include <set>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "core/cpu_features.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

using Rng = std::mt19937;
int64_t pick(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

std::vector<DimSpec> dims(const Shape& s) { return std::vector<DimSpec>(s.begin(), s.end()); }

struct KernelOf : Observer {
  std::string kernel;
  void on_node(const NodeEvent& e) override { kernel = std::string(e.kernel); }
};

// Runs the one-node model on both engines; outputs must agree within tol
// (exactly for tol 0) and the CPU engine must have used `want_kernel`.
// disabled: kernel implementations to leave out (CpuOptions::disabled_kernels).
void check(const ModelBuilder& mb, const std::string& want_kernel, double tol, const std::string& what, uint64_t seed = 3,
           const std::set<std::string>& disabled = {}) {
  SCOPED_TRACE(what);
  auto r = mb.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m = std::move(r.model);
  InputSpec spec;
  spec.seed = seed;
  NamedValues in = make_inputs(*m, spec);
  auto want = make_reference_engine()->prepare(m)->run(in);
  KernelOf k;
  RunOptions ro;
  ro.observer = &k;
  CpuOptions co;
  co.opt_level = 0;
  co.disabled_kernels = disabled;
  auto got = make_cpu_engine(co)->prepare(m)->run(in, ro);
  EXPECT_EQ(k.kernel, want_kernel);
  ASSERT_EQ(want.size(), got.size());
  for (size_t o = 0; o < want.size(); ++o) {
    const Tensor& a = want[o].second.tensor();
    const Tensor& b = got[o].second.tensor();
    ASSERT_EQ(a.shape(), b.shape());
    ASSERT_EQ(a.dtype(), b.dtype());
    if (tol == 0) {
      if (a.byte_size()) {
        EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.byte_size()), 0);
      }
      continue;
    }
    int bad = 0;
    for (uint64_t i = 0; i < a.element_count(); ++i) {
      const double x = a.element_as_double(i), y = b.element_as_double(i);
      if (!(std::abs(x - y) <= tol * (1 + std::abs(x))) && ++bad <= 3)
        ADD_FAILURE() << "element " << i << ": reference " << x << ", cpu " << y;
    }
  }
}

Shape random_shape(Rng& rng, int64_t rank, int64_t hi = 7) {
  Shape s;
  for (int64_t d = 0; d < rank; ++d) s.push_back(pick(rng, 1, hi));
  return s;
}

}  // namespace

TEST(CpuTransformerKernels, TransposeEveryPermutationAndType) {
  Rng rng(1);
  for (int64_t rank = 1; rank <= 4; ++rank) {
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    do {
      for (DataType t : {DataType::Float, DataType::Int64, DataType::Uint8, DataType::Float16}) {
        Shape x = random_shape(rng, rank);
        if (pick(rng, 0, 7) == 0) x[static_cast<size_t>(pick(rng, 0, rank - 1))] = 1;
        ModelBuilder mb(17);
        mb.input("x", t, dims(x));
        attr_ints(mb.node("Transpose", {"x"}, {"y"}), "perm", perm);
        mb.output_untyped("y");
        std::string p;
        for (int64_t v : perm) p += std::to_string(v);
        check(mb, "cpu-copy", 0, "Transpose x" + shape_to_string(x) + " perm " + p + " " + std::string(dtype_name(t)));
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // Big enough to use tiles and threads; no perm attribute (reverse); zero-sized.
  for (Shape x : {Shape{2, 12, 129, 64}, Shape{67, 45}, Shape{3, 0, 5}}) {
    ModelBuilder mb(17);
    mb.input("x", DataType::Float, dims(x));
    if (x.size() == 4) attr_ints(mb.node("Transpose", {"x"}, {"y"}), "perm", {0, 2, 3, 1});
    else mb.node("Transpose", {"x"}, {"y"});
    mb.output_untyped("y");
    check(mb, "cpu-copy", 0, "Transpose x" + shape_to_string(x));
  }
  ModelBuilder strings(17);
  strings.input("x", DataType::String, dims({2, 3}));
  strings.node("Transpose", {"x"}, {"y"});
  strings.output_untyped("y");
  check(strings, "reference", 0, "Transpose of strings");
}

TEST(CpuTransformerKernels, WhereWithBroadcasts) {
  const std::vector<std::array<Shape, 3>> cases = {
      {Shape{2, 3, 4}, Shape{2, 3, 4}, Shape{2, 3, 4}}, {Shape{1, 1, 4, 4}, Shape{}, Shape{2, 3, 4, 4}},
      {Shape{2, 1, 1, 5}, Shape{2, 3, 5, 5}, Shape{}},   {Shape{5, 1}, Shape{1, 6}, Shape{5, 6}},
      {Shape{3, 0}, Shape{3, 1}, Shape{1}},
  };
  for (DataType t : {DataType::Float, DataType::Int32, DataType::Double, DataType::Bool}) {
    for (const auto& c : cases) {
      ModelBuilder mb(17);
      mb.input("c", DataType::Bool, dims(c[0]));
      mb.input("x", t, dims(c[1]));
      mb.input("y", t, dims(c[2]));
      mb.node("Where", {"c", "x", "y"}, {"z"});
      mb.output_untyped("z");
      check(mb, "cpu-copy", 0, "Where " + shape_to_string(c[0]) + shape_to_string(c[1]) + shape_to_string(c[2]) + " " + std::string(dtype_name(t)));
    }
  }
}

TEST(CpuTransformerKernels, LayerNormalizationOnRandomShapes) {
  Rng rng(5);
  for (int i = 0; i < 24; ++i) {
    const int64_t rank = pick(rng, 1, 4);
    Shape x = random_shape(rng, rank, 40);
    const int64_t axis = pick(rng, -rank, rank - 1);
    const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    Shape norm(x.begin() + static_cast<std::ptrdiff_t>(a), x.end());
    ModelBuilder mb(17);
    mb.input("x", DataType::Float, dims(x));
    mb.input("scale", DataType::Float, dims(norm));
    const bool bias = i % 3 != 0;
    if (bias) mb.input("bias", DataType::Float, dims(norm));
    std::vector<std::string> in = {"x", "scale"};
    if (bias) in.push_back("bias");
    auto& n = mb.node("LayerNormalization", in, {"y"});
    attr_int(n, "axis", axis);
    attr_float(n, "epsilon", i % 2 ? 1e-5f : 1e-2f);
    mb.output_untyped("y");
    // oneDNN's primitive first; the Eigen kernel takes what it declines (zero-sized tensors).
    const bool empty = std::find(x.begin(), x.end(), 0) != x.end();
    check(mb, empty ? "cpu-eigen" : "onednn", 2e-5, "LayerNormalization x" + shape_to_string(x) + " axis " + std::to_string(axis), 100 + i);
  }
  // Asking for Mean / InvStdDev, or double data: the reference.
  ModelBuilder mb(17);
  mb.input("x", DataType::Float, dims({3, 8}));
  mb.input("scale", DataType::Float, dims({8}));
  mb.node("LayerNormalization", {"x", "scale"}, {"y", "mean"});
  mb.output_untyped("y");
  mb.output_untyped("mean");
  check(mb, "reference", 0, "LayerNormalization with Mean");
}

TEST(CpuTransformerKernels, ErfGeluIsNaN) {
  for (Shape x : {Shape{3, 17}, Shape{2, 64, 129}, Shape{0, 4}, Shape{}}) {
    ModelBuilder erf(17);
    erf.input("x", DataType::Float, dims(x));
    erf.node("Erf", {"x"}, {"y"});
    erf.output_untyped("y");
    // AVX-512's Erf where the CPU has it, else the AVX2 loop (unary_avx2.cpp)
    // where it has AVX2 and FMA; the Eigen kernel behind them either way.
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    check(erf, ONNXSCOPE_CPU_AVX512("avx512f") ? "cpu-avx512" : avx2 ? "cpu-simd" : "cpu-eigen", 1e-6,
          "Erf x" + shape_to_string(x));
    check(erf, "cpu-eigen", 1e-6, "Erf x" + shape_to_string(x) + " (Eigen)", 3, {"cpu-avx512", "cpu-simd"});
    for (const char* approx : {"none", "tanh"}) {
      ModelBuilder gelu(20);
      gelu.input("x", DataType::Float, dims(x));
      attr_string(gelu.node("Gelu", {"x"}, {"y"}), "approximate", approx);
      gelu.output_untyped("y");
      // Gelu without approximation: erf's kernels (AVX-512, else the AVX2
      // loop); the tanh form: the AVX2 loop on CPUs with AVX2 and no AVX-512,
      // oneDNN's eltwise otherwise. Behind them oneDNN's, which leaves a
      // zero-sized tensor to the Eigen kernel.
      const bool empty = std::find(x.begin(), x.end(), 0) != x.end();
      const bool exact = std::string(approx) == "none";
      const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
      const char* own = exact && avx512 ? "cpu-avx512" : avx2 && !avx512 ? "cpu-simd" : nullptr;
      const std::string what = std::string("Gelu ") + approx + " x" + shape_to_string(x);
      const char* onednn = empty ? "cpu-eigen" : "onednn-eltwise";
      check(gelu, own ? own : onednn, 1e-6, what);
      if (own) check(gelu, onednn, 1e-6, what + " (oneDNN)", 3, {"cpu-avx512", "cpu-simd"});
    }
    ModelBuilder isnan(17);
    isnan.input("x", DataType::Float, dims(x));
    isnan.node("Sqrt", {"x"}, {"s"});  // random inputs in [-1, 1]: NaN for the negative half
    isnan.node("IsNaN", {"s"}, {"y"});
    isnan.output_untyped("y");
    check(isnan, "cpu-eigen", 0, "IsNaN x" + shape_to_string(x));
  }
}
