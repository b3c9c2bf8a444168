// The kernel test harness (ops_harness.h).
#include "core/cpu_features.h"
#include "ops_harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "onnxscope/cpu.h"
#include "onnxscope/float_formats.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

namespace onnxscope::test::harness {

int64_t pick(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

namespace {
struct Kernels : Observer {
  std::vector<std::string> ran;
  void on_node(const NodeEvent& e) override { ran.emplace_back(e.kernel); }
};
}  // namespace

std::vector<DimSpec> dims_of(const Shape& s) { return std::vector<DimSpec>(s.begin(), s.end()); }

uint64_t count(const Shape& s) {
  uint64_t n = 1;
  for (int64_t d : s) n *= static_cast<uint64_t>(d);
  return n;
}

// Random values of a type; floats in [lo, hi], with NaN, +-inf and +-0 mixed in when `specials`.
Tensor random_tensor(Rng& rng, DataType t, const Shape& s, double lo, double hi, bool specials) {
  Tensor x = Tensor::zeros(t, s);
  const uint64_t n = x.element_count();
  std::uniform_real_distribution<double> u(lo, hi);
  for (uint64_t i = 0; i < n; ++i) {
    double v = u(rng);
    if (specials && pick(rng, 0, 7) == 0) {
      // Non-finite, signed zeros, past int32 / int64 / uint64, past float16, float16 subnormals, halves.
      const double sp[] = {NAN,   INFINITY, -INFINITY, 0.0,    -0.0,  1e30, -1e30, 3e9,  -3e9,
                           9.3e18, 1.9e19,  65504,     70000,  1e-6,  1e-8, 0.5,   -0.5, 2.5};
      v = sp[pick(rng, 0, 17)];
    }
    switch (t) {
      case DataType::Float: x.mutable_data<float>()[i] = static_cast<float>(v); break;
      case DataType::Float16: x.mutable_data<uint16_t>()[i] = float_to_half(static_cast<float>(v)); break;
      case DataType::Double: x.mutable_data<double>()[i] = v; break;
      // Integers: the value's floor when it fits, else wrapped bits (an arbitrary pattern).
      case DataType::Int64: {
        const bool small = specials ? pick(rng, 0, 1) : true;
        const double f = std::isfinite(v) ? std::fmod(std::floor(v), 9e18) : 0.0;
        x.mutable_data<int64_t>()[i] = small ? static_cast<int64_t>(f) : pick(rng, INT64_MIN / 2, INT64_MAX / 2);
        break;
      }
      case DataType::Int32: x.mutable_data<int32_t>()[i] = static_cast<int32_t>(std::isfinite(v) ? std::fmod(std::floor(v), 2e9) : 0.0); break;
      case DataType::Int8: x.mutable_data<int8_t>()[i] = static_cast<int8_t>(pick(rng, -128, 127)); break;
      case DataType::Uint64: x.mutable_data<uint64_t>()[i] = static_cast<uint64_t>(pick(rng, 0, INT64_MAX)) * 2 + static_cast<uint64_t>(pick(rng, 0, 1)); break;
      case DataType::Uint8: x.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(pick(rng, 0, 255)); break;
      case DataType::Bool: reinterpret_cast<uint8_t*>(x.mutable_raw())[i] = static_cast<uint8_t>(pick(rng, 0, 1)); break;
      default: ADD_FAILURE() << "no generator for " << dtype_name(t);
    }
  }
  return x;
}

Shape random_shape(Rng& rng, int64_t min_rank, int64_t max_rank, int64_t max_dim) {
  Shape s(static_cast<size_t>(pick(rng, min_rank, max_rank)));
  for (auto& d : s) d = pick(rng, 0, 12) == 0 ? 0 : pick(rng, 1, max_dim);
  return s;
}

std::pair<Shape, Shape> broadcast_pair(Rng& rng) {
  const Shape out = random_shape(rng, 0, 4, 7);
  auto operand = [&] {
    Shape s = out;
    s.erase(s.begin(), s.begin() + pick(rng, 0, static_cast<int64_t>(s.size())));
    for (auto& d : s)
      if (pick(rng, 0, 2) == 0) d = 1;
    return s;
  };
  Shape a = operand(), b = operand();
  if (pick(rng, 0, 1)) a = out;
  return {a, b};
}

void Case::input(const std::string& name, Tensor t) {
  mb.input(name, t.dtype(), dims_of(t.shape()));
  inputs.emplace_back(name, Value(std::move(t)));
}
void Case::ints(const std::string& name, const std::vector<int64_t>& v) {
  mb.initializer(make_int64_tensor(name, {static_cast<int64_t>(v.size())}, v));
}

namespace {
std::string values_text(const Tensor& t) {
  std::string s;
  for (uint64_t i = 0; i < std::min<uint64_t>(t.element_count(), 8); ++i) s += std::to_string(t.element_as_double(i)) + " ";
  return s;
}
}  // namespace

bool cpu_has_int8_vnni() {
  return ONNXSCOPE_CPU_AVX512("avx512vnni") || (__builtin_cpu_supports("avxvnni") && !::onnxscope::cpu_isa_capped_to_avx2());
}

bool cpu_has_avx512bw() {
  return ONNXSCOPE_CPU_AVX512("avx512f") && ONNXSCOPE_CPU_AVX512("avx512bw") && ONNXSCOPE_CPU_AVX512("avx512vl") &&
         ONNXSCOPE_CPU_AVX512("avx512dq");
}

void check(Case& c, double atol, double rtol) {
  SCOPED_TRACE(c.what);
  for (const auto& o : c.outputs) c.mb.output_untyped(o);
  auto loaded = c.mb.load();
  ASSERT_TRUE(loaded.ok()) << dump(loaded);
  std::shared_ptr<const Model> m = std::move(loaded.model);
  std::vector<std::pair<std::string, Value>> ref;
  try {
    ref = make_reference_engine()->prepare(m)->run(c.inputs);
  } catch (const std::exception& e) {
    FAIL() << "reference refused the problem: " << e.what();
  }
  Kernels k;
  RunOptions ro;
  ro.observer = &k;
  CpuOptions co;
  co.opt_level = 0;
  co.disabled_kernels = c.disabled_kernels;
  auto cpu = make_cpu_engine(co)->prepare(m)->run(c.inputs, ro);
  ASSERT_EQ(k.ran.size(), 1u);
  if (c.expect_fast) EXPECT_NE(k.ran[0], "reference") << "the cpu kernel declined";
  else EXPECT_EQ(k.ran[0], "reference") << "the cpu kernel took a problem it should leave";
  if (!c.expect_kernel.empty()) EXPECT_EQ(k.ran[0], c.expect_kernel);
  ASSERT_EQ(ref.size(), cpu.size());
  for (size_t o = 0; o < ref.size(); ++o) {
    SCOPED_TRACE("output " + ref[o].first);
    const Tensor& x = ref[o].second.tensor();
    const Tensor& y = cpu[o].second.tensor();
    ASSERT_EQ(x.dtype(), y.dtype());
    ASSERT_EQ(x.shape(), y.shape());
    const uint64_t n = x.element_count();
    if (x.is_string()) {
      ASSERT_EQ(x.strings(), y.strings());
      continue;
    }
    if (x.dtype() != DataType::Float) {
      const size_t bytes = *storage_bytes(x.dtype(), n);
      ASSERT_EQ(std::memcmp(x.raw(), y.raw(), bytes), 0) << "ref " << values_text(x) << "\ncpu " << values_text(y);
      continue;
    }
    for (uint64_t i = 0; i < n; ++i) {
      const float a = x.data<float>()[i], b = y.data<float>()[i];
      if (std::isnan(a) || std::isnan(b)) {
        ASSERT_TRUE(std::isnan(a) && std::isnan(b)) << "at " << i << ": ref " << a << " cpu " << b;
      } else if (std::isinf(a) || std::isinf(b)) {
        ASSERT_EQ(a, b) << "at " << i;
      } else {
        ASSERT_LE(std::abs(a - b), atol + rtol * std::abs(a)) << "at " << i << ": ref " << a << " cpu " << b;
      }
    }
  }
}

Tensor scalar(DataType t, double v) {
  Tensor s = Tensor::zeros(t, {});
  if (t == DataType::Float) s.mutable_data<float>()[0] = static_cast<float>(v);
  else if (t == DataType::Uint8) s.mutable_data<uint8_t>()[0] = static_cast<uint8_t>(v);
  else s.mutable_data<int8_t>()[0] = static_cast<int8_t>(v);
  return s;
}

Tensor random_bytes(Rng& rng, DataType t, const Shape& shape, int lo, int hi) {
  Tensor x = Tensor::zeros(t, shape);
  for (uint64_t e = 0; e < x.element_count(); ++e)
    reinterpret_cast<uint8_t*>(x.mutable_raw())[e] = static_cast<uint8_t>(pick(rng, lo, hi));
  return x;
}

void add_initializer(ModelBuilder& mb, const std::string& name, const Tensor& t) {
  mb.initializer(make_tensor_raw(name, t.dtype(), t.shape(), std::string(reinterpret_cast<const char*>(t.raw()), t.byte_size())));
}

FusedRun run_fused(const std::shared_ptr<const Model>& m, uint64_t seed) {
  InputSpec spec;
  spec.seed = seed;
  const NamedValues in = make_inputs(*m, spec);
  struct Ran : Observer {
    std::vector<std::string> nodes;
    void on_node(const NodeEvent& e) override { nodes.push_back(e.node->op_type + " " + std::string(e.kernel)); }
    bool reads_values() const override { return false; }
  } ran;
  RunOptions ro;
  ro.observer = &ran;
  ro.capture_original = false;
  FusedRun r;
  r.want = make_reference_engine()->prepare(m)->run(in);
  r.got = make_cpu_engine(CpuOptions{.threads = 2})->prepare(m)->run(in, ro);
  r.ran = std::move(ran.nodes);
  return r;
}

}  // namespace onnxscope::test::harness
