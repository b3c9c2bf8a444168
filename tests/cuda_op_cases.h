// Random one-node problems for the CUDA engine's operators, by family
// (cuda_op_cases.cpp): what cuda_kernels_test runs on the device engines
// and the reference and compares. Each generator draws a model of one node
// named "node" and its inputs, with odd sizes, broadcasting, negative axes,
// zero-sized dims and the opset variants.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model_builder.h"
#include "onnxscope/float_formats.h"
#include "onnxscope/inputs.h"

namespace onnxscope::test::cuda_cases {

using Rng = std::mt19937;

inline int64_t pick(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
inline bool coin(Rng& rng) { return pick(rng, 0, 1) == 1; }
// float32 half the time, else float16 or bfloat16: the types the
// float-computed elementwise kernels store.
inline DataType real_type(Rng& rng) {
  return coin(rng) ? DataType::Float : coin(rng) ? DataType::Float16 : DataType::BFloat16;
}
inline bool is_real(DataType t) { return t == DataType::Float || t == DataType::Float16 || t == DataType::BFloat16; }
// Element i of a float32, float16 or bfloat16 tensor set to v (rounded).
inline void set_real(Tensor& t, uint64_t i, float v) {
  if (t.dtype() == DataType::Float) t.mutable_data<float>()[i] = v;
  else t.mutable_data<uint16_t>()[i] = t.dtype() == DataType::Float16 ? float_to_half(v) : float_to_bfloat16(v);
}

// About a quarter of a float32, float16 or bfloat16 tensor's elements made NaN.
inline void nan_some(Tensor& t, Rng& rng) {
  for (uint64_t i = 0; i < t.element_count(); ++i)
    if (pick(rng, 0, 3) == 0) set_real(t, i, std::numeric_limits<float>::quiet_NaN());
}
template <typename T>
T choose(Rng& rng, const std::vector<T>& v) { return v[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(v.size()) - 1))]; }

inline uint64_t count(const Shape& s) {
  uint64_t n = 1;
  for (int64_t d : s) n *= static_cast<uint64_t>(d);
  return n;
}

inline Shape random_shape(Rng& rng, int64_t rank_lo, int64_t rank_hi, int64_t dim_hi = 6) {
  Shape s(static_cast<size_t>(pick(rng, rank_lo, rank_hi)));
  for (auto& d : s) d = pick(rng, 1, dim_hi);
  return s;
}

// s with some dims made 1 and some leading dims dropped: broadcasts against s.
inline Shape broadcastable(Rng& rng, const Shape& s) {
  Shape b(s.begin() + pick(rng, 0, static_cast<int64_t>(s.size())), s.end());
  for (auto& d : b)
    if (pick(rng, 0, 2) == 0) d = 1;
  return b;
}

// One random problem: a one-node model and its inputs.
struct Case {
  explicit Case(int64_t opset) : m(opset), opset(opset) {}
  ModelBuilder m;
  int64_t opset;
  NamedValues inputs;
  std::string what;
  bool loose = false;  // a GEMM/convolution output: TF32's tolerance applies
  // A loose output's sum of products: how many terms, when more than the 9
  // the TF32/fp16 tolerance is set for (its rounding error grows with them).
  int64_t loose_terms = 0;
  // A float16/bfloat16 result rounded from a value computed from float32
  // statistics the reference takes in double: one unit in the last place
  // apart where the two fall either side of a tie (LayerNormalization).
  bool rounds_apart = false;

  std::string add_tensor(const std::string& name, DataType t, const Shape& s, Rng& rng, double lo, double hi) {
    Tensor v = Tensor::zeros(t, s);
    std::uniform_real_distribution<double> d(lo, hi);
    for (uint64_t i = 0; i < v.element_count(); ++i) {
      const double x = d(rng);
      switch (t) {
        case DataType::Float: v.mutable_data<float>()[i] = static_cast<float>(x); break;
        case DataType::Int32: v.mutable_data<int32_t>()[i] = static_cast<int32_t>(std::floor(x)); break;
        case DataType::Int64: v.mutable_data<int64_t>()[i] = static_cast<int64_t>(std::floor(x)); break;
        case DataType::Uint64:  // negative draws wrap to the top of the range: large and small values both
          v.mutable_data<uint64_t>()[i] = static_cast<uint64_t>(static_cast<int64_t>(std::floor(x)));
          break;
        case DataType::Bool: v.mutable_data<uint8_t>()[i] = x > 0 ? 1 : 0; break;
        case DataType::Uint8: v.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(std::fabs(x)); break;
        case DataType::Int8: v.mutable_data<int8_t>()[i] = static_cast<int8_t>(std::floor(x)); break;
        case DataType::Int16: v.mutable_data<int16_t>()[i] = static_cast<int16_t>(std::floor(x)); break;
        case DataType::Uint16: v.mutable_data<uint16_t>()[i] = static_cast<uint16_t>(std::fabs(x)); break;
        case DataType::Double: v.mutable_data<double>()[i] = x; break;
        case DataType::Int4: case DataType::Int2: case DataType::Uint4: case DataType::Uint2:  // packed; x in range
          set_packed_element_bits(t, v.mutable_raw(), i, static_cast<uint8_t>(static_cast<int8_t>(std::floor(x))));
          break;
        case DataType::Float8E4M3FN: v.mutable_data<uint8_t>()[i] = float_to_float8e4m3fn(static_cast<float>(x)); break;
        case DataType::Float8E4M3FNUZ: v.mutable_data<uint8_t>()[i] = float_to_float8e4m3fnuz(static_cast<float>(x)); break;
        case DataType::Float8E5M2: v.mutable_data<uint8_t>()[i] = float_to_float8e5m2(static_cast<float>(x)); break;
        case DataType::Float8E5M2FNUZ: v.mutable_data<uint8_t>()[i] = float_to_float8e5m2fnuz(static_cast<float>(x)); break;
        case DataType::Float4E2M1: set_packed_element_bits(t, v.mutable_raw(), i, float_to_float4e2m1(static_cast<float>(x))); break;
        case DataType::Float16: v.mutable_data<uint16_t>()[i] = float_to_half(static_cast<float>(x)); break;
        case DataType::BFloat16: v.mutable_data<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(x)); break;
        default: ADD_FAILURE() << "no random values for " << dtype_name(t);
      }
    }
    m.input(name, t, std::vector<DimSpec>(s.begin(), s.end()));
    inputs.emplace_back(name, Value(std::move(v)));
    what += " " + name + shape_to_string(s);
    return name;
  }
  // " of float16" in `what` for a narrow case (float32 goes unsaid).
  void note_type(DataType t) {
    if (t != DataType::Float) what += std::string(" of ") + std::string(dtype_name(t));
  }
  std::string floats(const std::string& name, const Shape& s, Rng& rng, double lo = -2, double hi = 2) {
    return add_tensor(name, DataType::Float, s, rng, lo, hi);
  }
  // A constant (initializer) of int64 values: shape arguments, axes, indices.
  std::string ints(const std::string& name, const std::vector<int64_t>& v, bool scalar = false) {
    m.initializer(make_int64_tensor(name, scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(v.size())}, v));
    what += " " + name;
    describe_values(v);
    return name;
  }
  // A graph input of indices (int64 or int32), given values: what the
  // device reads and checks itself.
  std::string index_input(const std::string& name, DataType t, const Shape& s, const std::vector<int64_t>& v) {
    Tensor x = Tensor::zeros(t, s);
    for (size_t i = 0; i < v.size(); ++i) {
      if (t == DataType::Int32) x.mutable_data<int32_t>()[i] = static_cast<int32_t>(v[i]);
      else x.mutable_data<int64_t>()[i] = v[i];
    }
    m.input(name, t, std::vector<DimSpec>(s.begin(), s.end()));
    inputs.emplace_back(name, Value(std::move(x)));
    what += " " + name + shape_to_string(s);
    describe_values(v);
    return name;
  }
  // A constant (initializer) of float values: roi, scales.
  std::string float_list(const std::string& name, const std::vector<float>& v) {
    m.initializer(make_float_tensor(name, {static_cast<int64_t>(v.size())}, v));
    what += " " + name;
    describe_values(v);
    return name;
  }
  // "=[v0,v1,...]" after an input's name in `what`.
  template <class T>
  void describe_values(const std::vector<T>& v) {
    what += "=[";
    for (size_t i = 0; i < v.size(); ++i) {  // two appends: GCC 12 warns (-Wrestrict) at "," + to_string
      if (i) what += ",";
      what += std::to_string(v[i]);
    }
    what += "]";
  }
  std::string float_scalar(const std::string& name, float v) {
    m.initializer(make_float_tensor(name, {}, {v}));
    what += " " + name + "=" + std::to_string(v);
    return name;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in, int outputs = 1) {
    std::vector<std::string> out;
    for (int i = 0; i < outputs; ++i) {
      out.push_back(std::string("y").append(std::to_string(i)));
      m.output_untyped(out.back());
    }
    return m.node(op, in, out, "node");
  }
};

using Generator = std::function<Case(Rng&, const std::string& op)>;

// Every operator of the CUDA table that has cases, with its generator
// (cuda_op_cases.cpp).
const std::map<std::string, Generator>& generators();
// QuantizeLinear and DequantizeLinear (cuda_op_cases_quantize.cpp).
void add_quantize_generators(std::map<std::string, Generator>& m);
// Einsum (cuda_op_cases_einsum.cpp).
void add_einsum_generators(std::map<std::string, Generator>& m);
// MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv, DynamicQuantizeLinear (cuda_op_cases_integer.cpp).
void add_integer_generators(std::map<std::string, Generator>& m);
// RNN, GRU, LSTM (cuda_op_cases_recurrent.cpp).
void add_recurrent_generators(std::map<std::string, Generator>& m);
// Range, NonZero, ConstantOfShape, EyeLike, OneHot, CenterCropPad, NonMaxSuppression and Compress (cuda_op_cases_value_shaped.cpp).
void add_value_shaped_generators(std::map<std::string, Generator>& m);
// BitwiseAnd / Or / Xor / Not and BitShift (cuda_op_cases_integer_math.cpp).
void add_integer_math_generators(std::map<std::string, Generator>& m);
// Add, Sub, Mul, Div, Mod, Max, Min or a comparison on a random integer
// type, with wrapping and extreme values (cuda_op_cases_integer_math.cpp).
Case integer_binary(Rng& rng, const std::string& op);
// Neg, Abs, Sign or Relu; Clip (opset 13); Pow of an integer base, its
// exponent of an integer or float type (cuda_op_cases_integer_math.cpp).
Case integer_unary(Rng& rng, const std::string& op);
Case integer_clip(Rng& rng, const std::string& op);
Case integer_pow(Rng& rng, const std::string& op);
// Sum and Mean; Max and Min of other than two inputs (cuda_op_cases_variadic.cpp).
void add_variadic_generators(std::map<std::string, Generator>& m);
Case variadic(Rng& rng, const std::string& op);
// Dropout in inference and BitCast (cuda_op_cases_views.cpp).
void add_view_generators(std::map<std::string, Generator>& m);
// Hardmax, LpNormalization, LRN (cuda_op_cases_norms.cpp).
void add_norm_generators(std::map<std::string, Generator>& m);
// GridSample, AffineGrid, RoiAlign (cuda_op_cases_grid.cpp).
void add_grid_generators(std::map<std::string, Generator>& m);
// ReverseSequence, MaxUnpool, Col2Im (cuda_op_cases_reorder.cpp).
void add_reorder_generators(std::map<std::string, Generator>& m);
// DFT, STFT, HannWindow, HammingWindow, BlackmanWindow (cuda_op_cases_signal.cpp).
void add_signal_generators(std::map<std::string, Generator>& m);
// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (cuda_op_cases_losses.cpp).
void add_loss_generators(std::map<std::string, Generator>& m);
// SwiGLU, CausalConvWithState, LinearAttention, TensorScatter (cuda_op_cases_llm_blocks.cpp).
void add_llm_block_generators(std::map<std::string, Generator>& m);
// How many times the usual number of cases an operator gets: more for one
// whose attributes combine into many paths (Resize, Attention).
int case_weight(const std::string& op);

}  // namespace onnxscope::test::cuda_cases
