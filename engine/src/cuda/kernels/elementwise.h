// Elementwise kernels: unary and binary math with numpy broadcasting on
// float32, float16 and bfloat16 (computed in float), comparisons and logic,
// Where, Clip, Cast between every fixed-width dtype (integer math:
// kernels/integer_math.h).
// A broadcast input is read through per-output-dim strides (0 where it
// repeats); see kernels/portable.h for how a kernel runs.
#pragma once

#include <cmath>
#include <type_traits>

#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

// Output dims and, per input (up to 4), the element stride of each output dim.
struct BroadcastIndex {
  int rank = 0;
  int64_t out[kKernelRank] = {};
  int64_t stride[4][kKernelRank] = {};
  // i < the product of out: what is left for dim 0 is its coordinate, so
  // the divisions (slow 64-bit ones on a GPU) stop at dim 1; merged same-shape
  // operands (rank 1) take none.
  OS_HD void offsets(int64_t i, int inputs, int64_t* off) const {
    for (int k = 0; k < inputs; ++k) off[k] = 0;
    for (int d = rank - 1; d > 0; --d) {
      const int64_t c = i % out[d];
      i /= out[d];
      for (int k = 0; k < inputs; ++k) off[k] += c * stride[k][d];
    }
    if (rank > 0)
      for (int k = 0; k < inputs; ++k) off[k] += i * stride[k][0];
  }
};

// Dtype codes of Cast (onnx TensorProto numbers of the fixed-width types).
enum class ElemType : int { Float = 1, Uint8 = 2, Int8 = 3, Uint16 = 4, Int16 = 5, Int32 = 6, Int64 = 7,
                            Bool = 9, Float16 = 10, Double = 11, Uint32 = 12, Uint64 = 13, BFloat16 = 16,
                            Float8E4M3FN = 17, Float8E4M3FNUZ = 18, Float8E5M2 = 19, Float8E5M2FNUZ = 20 };

// The float-computed kernels' storage: float32, float16 or bfloat16, read
// as float and written rounded to nearest even, as the reference computes
// narrow floats (in float, rounded on store).
OS_HD float load_real(ElemType t, const void* p, int64_t i) {
  switch (t) {
    case ElemType::Float16: return half_to_float(static_cast<const uint16_t*>(p)[i]);
    case ElemType::BFloat16: return bfloat16_to_float(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}
OS_HD void store_real(ElemType t, void* p, int64_t i, float v) {
  switch (t) {
    case ElemType::Float16: static_cast<uint16_t*>(p)[i] = float_to_half(v); break;
    case ElemType::BFloat16: static_cast<uint16_t*>(p)[i] = float_to_bfloat16(v); break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

enum class UnaryOp : int {
  Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Neg, Abs, Erf, Reciprocal, Floor, Ceil, Round, Sin, Cos, Sign,
  Softplus, Softsign, IsNaN, IsInf, Not, LeakyRelu, Elu, Selu, HardSigmoid, HardSwish, Gelu, GeluTanh,
  Celu, ThresholdedRelu, Mish, Clip, Identity, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Swish, Shrink
};

// alpha/beta/gamma: the op's attributes (LeakyRelu's alpha, ...).
OS_HD float unary_math(UnaryOp op, float x, float alpha, float beta, float gamma) {
  switch (op) {
    case UnaryOp::Relu: return x < 0.f ? 0.f : x;  // NaN stays NaN, like max(x, 0) in the reference
    case UnaryOp::Sigmoid: return x >= 0.f ? 1.f / (1.f + expf(-x)) : expf(x) / (1.f + expf(x));
    case UnaryOp::Tanh: return tanhf(x);
    case UnaryOp::Exp: return expf(x);
    case UnaryOp::Log: return logf(x);
    case UnaryOp::Sqrt: return sqrtf(x);
    case UnaryOp::Neg: return -x;
    case UnaryOp::Abs: return fabsf(x);
    case UnaryOp::Erf: return erff(x);
    case UnaryOp::Reciprocal: return 1.f / x;
    case UnaryOp::Floor: return floorf(x);
    case UnaryOp::Ceil: return ceilf(x);
    case UnaryOp::Round: return rintf(x);  // halves to even, as the spec says
    case UnaryOp::Sin: return sinf(x);
    case UnaryOp::Cos: return cosf(x);
    case UnaryOp::Sign: return x > 0.f ? 1.f : x < 0.f ? -1.f : x;  // 0 and NaN kept
    case UnaryOp::Softplus: return x > 20.f ? x : log1pf(expf(x));
    case UnaryOp::Softsign: return x / (1.f + fabsf(x));
    case UnaryOp::LeakyRelu: return x < 0.f ? alpha * x : x;
    case UnaryOp::Elu: return x < 0.f ? alpha * (expf(x) - 1.f) : x;
    case UnaryOp::Selu: return x <= 0.f ? gamma * (alpha * expf(x) - alpha) : gamma * x;
    case UnaryOp::HardSigmoid: return x != x ? x : fmaxf(0.f, fminf(1.f, alpha * x + beta));  // NaN kept, as numpy
    case UnaryOp::HardSwish: return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
    case UnaryOp::Gelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case UnaryOp::GeluTanh:
      return 0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case UnaryOp::Celu: return x != x ? x : fmaxf(0.f, x) + fminf(0.f, alpha * (expf(x / alpha) - 1.f));
    case UnaryOp::ThresholdedRelu: return x > alpha ? x : 0.f;
    case UnaryOp::Mish: return x * tanhf(x > 20.f ? x : log1pf(expf(x)));
    case UnaryOp::Clip: {  // [alpha, beta]; NaN stays NaN
      const float v = x < alpha ? alpha : x;
      return v > beta ? beta : v;
    }
    case UnaryOp::Identity: return x;
    case UnaryOp::Tan: return tanf(x);
    case UnaryOp::Asin: return asinf(x);
    case UnaryOp::Acos: return acosf(x);
    case UnaryOp::Atan: return atanf(x);
    case UnaryOp::Sinh: return sinhf(x);
    case UnaryOp::Cosh: return coshf(x);
    case UnaryOp::Asinh: return asinhf(x);
    case UnaryOp::Acosh: return acoshf(x);
    case UnaryOp::Atanh: return atanhf(x);
    case UnaryOp::Swish: {  // x * sigmoid(alpha * x), the sigmoid as Sigmoid computes it
      const float t = alpha * x;
      return x * (t >= 0.f ? 1.f / (1.f + expf(-t)) : expf(t) / (1.f + expf(t)));
    }
    case UnaryOp::Shrink: return x < -alpha ? x + beta : x > alpha ? x - beta : 0.f;  // alpha: lambd, beta: bias
    case UnaryOp::IsNaN: case UnaryOp::IsInf: case UnaryOp::Not: break;  // bool results: UnaryPredicate
  }
  return x;
}

struct UnaryKernel {
  UnaryOp op;
  ElemType type;  // float32, float16 or bfloat16 (load_real)
  float alpha, beta, gamma;
  const void* x;
  void* y;
  OS_HD void operator()(int64_t i) const { store_real(type, y, i, unary_math(op, load_real(type, x, i), alpha, beta, gamma)); }
};

// IsNaN, IsInf (detect_negative / detect_positive in alpha / beta), Not.
struct UnaryPredicateKernel {
  UnaryOp op;
  ElemType type;  // of x: a real type (load_real), or bool for Not
  bool negative, positive;
  const void* x;
  bool* y;
  OS_HD void operator()(int64_t i) const {
    if (op == UnaryOp::Not) {
      y[i] = static_cast<const uint8_t*>(x)[i] == 0;  // a byte other than 0/1 is true
      return;
    }
    const float v = load_real(type, x, i);
    y[i] = op == UnaryOp::IsNaN ? v != v : ((v == INFINITY && positive) || (v == -INFINITY && negative));
  }
};

enum class BinaryOp : int { Add, Sub, Mul, Div, Pow, Max, Min, Mod, FMod, PRelu,
                            Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor };

OS_HD bool is_comparison(BinaryOp op) { return op >= BinaryOp::Equal; }

OS_HD float binary_float(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return a / b;
    case BinaryOp::Max: return a != a ? a : (b != b ? b : (a < b ? b : a));  // NaN propagates
    case BinaryOp::Min: return a != a ? a : (b != b ? b : (b < a ? b : a));
    case BinaryOp::PRelu: return a < 0.f ? a * b : a;
    case BinaryOp::Pow: return powf(a, b);
    case BinaryOp::FMod: return fmodf(a, b);
    case BinaryOp::Mod: {  // Python's %, the sign of the divisor (fmod = 0)
      const float r = fmodf(a, b);
      return (r != 0.f && ((r < 0.f) != (b < 0.f))) ? r + b : r;
    }
    default: break;
  }
  return a;
}

OS_HD bool compare(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::Equal: return a == b;
    case BinaryOp::Less: return a < b;
    case BinaryOp::Greater: return a > b;
    case BinaryOp::LessOrEqual: return a <= b;
    case BinaryOp::GreaterOrEqual: return a >= b;
    default: return false;
  }
}

// Arithmetic on float32, float16 or bfloat16 (computed in float), every op
// (integers: kernels/integer_math.h).
struct BinaryKernel {
  BinaryOp op;
  ElemType type;
  BroadcastIndex bc;
  const void* a;
  const void* b;
  void* y;
  OS_HD void operator()(int64_t i) const {
    int64_t off[2];
    bc.offsets(i, 2, off);
    store_real(type, y, i, binary_float(op, load_real(type, a, off[0]), load_real(type, b, off[1])));
  }
};

// Sum, Mean, Max and Min of 1 to 4 real inputs broadcast together,
// combined in order (((x0 op x1) op x2) op x3), as the reference folds
// them. More inputs go in groups, each after the first led by the previous
// group's result; Mean divides the last group's result by `count`.
struct VariadicKernel {
  BinaryOp op;
  ElemType type;  // the inputs': float32, float16 or bfloat16, computed in float
  ElemType lead, out;  // x[0]'s and y's: float32 for a group's result passed on (kept unrounded, as the reference's)
  int inputs;
  bool divide;
  float count;
  BroadcastIndex bc;
  const void* x[4];
  void* y;
  OS_HD void operator()(int64_t i) const {
    int64_t off[4] = {};
    bc.offsets(i, inputs, off);
    float v = load_real(lead, x[0], off[0]);
    for (int k = 1; k < inputs; ++k) v = binary_float(op, v, load_real(type, x[k], off[k]));
    store_real(out, y, i, divide ? v / count : v);
  }
};

// Comparisons of float32, float16, bfloat16 and bool, and logic on bool:
// bool results.
struct CompareKernel {
  BinaryOp op;
  ElemType type;
  BroadcastIndex bc;
  const void* a;
  const void* b;
  bool* y;
  OS_HD void operator()(int64_t i) const {
    int64_t off[2];
    bc.offsets(i, 2, off);
    if (type == ElemType::Bool) {
      const bool p = static_cast<const uint8_t*>(a)[off[0]] != 0, q = static_cast<const uint8_t*>(b)[off[1]] != 0;
      y[i] = op == BinaryOp::And ? (p && q) : op == BinaryOp::Or ? (p || q) : op == BinaryOp::Xor ? (p != q) : compare(op, p, q);
    } else {
      y[i] = compare(op, load_real(type, a, off[0]), load_real(type, b, off[1]));
    }
  }
};

// y = cond ? a : b with three-way broadcasting, on elements of any width.
template <class T>
struct WhereKernel {
  BroadcastIndex bc;
  const uint8_t* cond;  // bytes: one other than 0/1 is true, never an index
  const T* a;
  const T* b;
  T* y;
  OS_HD void operator()(int64_t i) const {
    int64_t off[3];
    bc.offsets(i, 3, off);
    y[i] = cond[off[0]] != 0 ? a[off[1]] : b[off[2]];
  }
};

// Clip to [lo, hi] (float32, float16, bfloat16); NaN stays NaN.
struct ClipKernel {
  ElemType type;
  float lo, hi;
  const void* x;
  void* y;
  OS_HD void operator()(int64_t i) const {
    const float u = load_real(type, x, i);
    const float v = u < lo ? lo : u;  // max first, then min: lo > hi gives hi, as numpy.clip
    store_real(type, y, i, v > hi ? hi : v);
  }
};

// The epilogue of a fused GEMM or convolution, in place: y = act(y + bias),
// the bias indexed by (i / inner) % channels (a convolution's channel, or a
// MatMul's last dim with inner 1); no bias when it is nullptr.
// A fused GEMM's or convolution's epilogue (cuda/runtime.h Epilogue):
// y[i] = act(v + bias[(i / inner) % channels] + residual[i]) (each sum
// rounded to float, as the unfused Adds), where v is y[i] (source 0),
// y[i] rounded to float16 (1: an fp16 GEMM's float32 result, as the half
// tensor it stands for holds it), or half element i of `half` (2: an fp16
// convolution's float16 output): one pass instead of a conversion and then
// the epilogue.
struct EpilogueKernel {
  UnaryOp act = UnaryOp::Identity;
  float alpha = 0.f, beta = 0.f;
  const float* bias = nullptr;
  int64_t inner = 1, channels = 1;
  const float* residual = nullptr;
  int source = 0;
  const uint16_t* half = nullptr;
  uint16_t* half_out = nullptr;  // the result rounded to float16 too (the output's half copy), or nullptr
  float* y = nullptr;
  OS_HD void operator()(int64_t i) const {
    float v = source == 2 ? half_to_float(half[i]) : y[i];
    if (source == 1) v = half_to_float(float_to_half(v));
    if (bias) v += bias[inner == 1 ? i % channels : (i / inner) % channels];
    if (residual) v += residual[i];
    const float r = unary_math(act, v, alpha, beta, 0.f);
    y[i] = r;
    if (half_out) half_out[i] = float_to_half(r);
  }
};

// A chain of float32 elementwise ops in one pass (cpu/fused_ops.h
// FusedElementwise): up to 4 broadcast inputs read once per item, up to 8
// ops each taking its operands from the inputs or earlier results, the last
// result stored. Every step rounds to float32, as the unfused ops would.
constexpr int kChainInputs = 4, kChainOps = 8;
struct ChainStep {
  bool binary;
  int op;        // UnaryOp or BinaryOp
  int a, b;      // places in [inputs..., results...]
  float alpha, beta, gamma;
};
struct ElementwiseChainKernel {
  int inputs, steps;
  BroadcastIndex bc;
  ChainStep step[kChainOps];
  const float* x[kChainInputs];
  float* y;
  OS_HD void operator()(int64_t i) const {
    float v[kChainInputs + kChainOps];
    int64_t off[kChainInputs];
    bc.offsets(i, inputs, off);
    for (int k = 0; k < inputs; ++k) v[k] = x[k][off[k]];
    for (int s = 0; s < steps; ++s) {
      const ChainStep& t = step[s];
      v[inputs + s] = t.binary ? binary_float(static_cast<BinaryOp>(t.op), v[t.a], v[t.b])
                               : unary_math(static_cast<UnaryOp>(t.op), v[t.a], t.alpha, t.beta, t.gamma);
    }
    y[i] = v[inputs + steps - 1];
  }
};

// x rounded to the nearest float16 and back (fp16 mode's results).
struct RoundToHalfKernel {
  const float* x;
  float* y;
  OS_HD void operator()(int64_t i) const { y[i] = half_to_float(float_to_half(x[i])); }
};

// Codes by their DataType numbers (QuantizeLinear's packed ones too).
enum : int { kE4M3FN = 17, kE4M3FNUZ = 18, kE5M2 = 19, kE5M2FNUZ = 20, kUint4 = 21, kInt4 = 22, kE2M1 = 23, kUint2 = 25, kInt2 = 26 };

// The packed codes: int4, uint4 and float4e2m1 two to a byte, int2 and
// uint2 four; element i in byte i / per at bit (i % per) * width, the first
// in the low bits (onnx's packing). 0: not packed.
OS_HD int packed_bits(ElemType t) {
  const int v = static_cast<int>(t);
  return v == kUint4 || v == kInt4 || v == kE2M1 ? 4 : v == kUint2 || v == kInt2 ? 2 : 0;
}

// A float8 or float4 code.
OS_HD bool float_code(ElemType t) {
  const int v = static_cast<int>(t);
  return (v >= kE4M3FN && v <= kE5M2FNUZ) || v == kE2M1;
}

OS_HD float decode_float_code(ElemType t, uint32_t bits) {
  const auto b = static_cast<uint8_t>(bits);
  switch (static_cast<int>(t)) {
    case kE4M3FN: return narrow::decode_e4m3fn(b);
    case kE4M3FNUZ: return narrow::decode_e4m3fnuz(b);
    case kE5M2: return narrow::decode_e5m2(b);
    case kE5M2FNUZ: return narrow::decode_e5m2fnuz(b);
    default: return narrow::decode_mx(b, narrow::e2m1_fmt(), 0x08);
  }
}

// FP4 always saturates (as the host's encoder, and onnx).
OS_HD uint32_t encode_float_code(ElemType t, float f, bool saturate) {
  switch (static_cast<int>(t)) {
    case kE4M3FN: return narrow::encode_e4m3fn(f, saturate);
    case kE4M3FNUZ: return narrow::encode_e4m3fnuz(f, saturate);
    case kE5M2: return narrow::encode_e5m2(f, saturate);
    case kE5M2FNUZ: return narrow::encode_e5m2fnuz(f, saturate);
    default: return narrow::encode_mx(f, narrow::e2m1_fmt(), 0x08);
  }
}

// A value on its way through Cast: floats as double, integers exactly.
struct CastValue {
  double f;
  int64_t i;
  uint64_t u;
  int kind;  // 0 float, 1 signed, 2 unsigned
};

// Element i of a Cast type (not a packed one).
OS_HD CastValue cast_load(ElemType t, const void* p, int64_t i) {
  switch (t) {
    case ElemType::Float: return {static_cast<const float*>(p)[i], 0, 0, 0};
    case ElemType::Double: return {static_cast<const double*>(p)[i], 0, 0, 0};
    case ElemType::Float16: return {half_to_float(static_cast<const uint16_t*>(p)[i]), 0, 0, 0};
    case ElemType::BFloat16: return {bfloat16_to_float(static_cast<const uint16_t*>(p)[i]), 0, 0, 0};
    case ElemType::Float8E4M3FN: case ElemType::Float8E4M3FNUZ: case ElemType::Float8E5M2: case ElemType::Float8E5M2FNUZ:
      return {decode_float_code(t, static_cast<const uint8_t*>(p)[i]), 0, 0, 0};
    case ElemType::Int8: return {0, static_cast<const int8_t*>(p)[i], 0, 1};
    case ElemType::Int16: return {0, static_cast<const int16_t*>(p)[i], 0, 1};
    case ElemType::Int32: return {0, static_cast<const int32_t*>(p)[i], 0, 1};
    case ElemType::Int64: return {0, static_cast<const int64_t*>(p)[i], 0, 1};
    case ElemType::Uint8: return {0, 0, static_cast<const uint8_t*>(p)[i], 2};
    case ElemType::Uint16: return {0, 0, static_cast<const uint16_t*>(p)[i], 2};
    case ElemType::Uint32: return {0, 0, static_cast<const uint32_t*>(p)[i], 2};
    case ElemType::Uint64: return {0, 0, static_cast<const uint64_t*>(p)[i], 2};
    case ElemType::Bool: return {0, 0, static_cast<const uint8_t*>(p)[i] != 0 ? 1u : 0u, 2};
  }
  return {0, 0, 0, 0};
}

// The float nearest d toward zero, its last bit set when inexact (rounding
// to odd): rounded again to a format of at most 22 fraction bits it gives
// what rounding d directly would, as the reference's casts do (a double to
// float16 rounded through float32 could round twice).
OS_HD float round_to_odd_float(double d) {
  float f = static_cast<float>(d);
  if (d != d || static_cast<double>(f) == d) return f;
  uint32_t b = float_to_bits(f);
  if (fabs(static_cast<double>(f)) > fabs(d)) --b;  // one step toward zero (f is not 0 here)
  return bits_to_float(b | 1u);
}

// A value's integer bit pattern, as the reference takes it: floats truncated
// (NaN to 0) into int64, or uint64 above it, out of both 2^63; the target
// keeps the low bits (numpy's casts on x86; the spec leaves it undefined).
OS_HD uint64_t cast_int_bits(CastValue v) {
  if (v.kind == 1) return static_cast<uint64_t>(v.i);
  if (v.kind == 2) return v.u;
  if (v.f != v.f) return 0;
  const double t = trunc(v.f);
  if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) return static_cast<uint64_t>(static_cast<int64_t>(t));
  if (t >= 0 && t < 18446744073709551616.0) return static_cast<uint64_t>(t);
  return uint64_t{1} << 63;
}

// saturate: float8 targets only (out of range to +-max, else inf or NaN).
OS_HD void cast_store(ElemType t, void* p, int64_t i, CastValue v, bool saturate = true) {
  const double f = v.kind == 0 ? v.f : v.kind == 1 ? static_cast<double>(v.i) : static_cast<double>(v.u);
  const uint64_t bits = cast_int_bits(v);
  switch (t) {
    case ElemType::Float: static_cast<float*>(p)[i] = v.kind == 1 ? static_cast<float>(v.i) : v.kind == 2 ? static_cast<float>(v.u) : static_cast<float>(v.f); return;
    case ElemType::Double: static_cast<double*>(p)[i] = f; return;
    case ElemType::Float16: static_cast<uint16_t*>(p)[i] = float_to_half(round_to_odd_float(f)); return;
    case ElemType::BFloat16: static_cast<uint16_t*>(p)[i] = float_to_bfloat16(round_to_odd_float(f)); return;
    case ElemType::Float8E4M3FN: case ElemType::Float8E4M3FNUZ: case ElemType::Float8E5M2: case ElemType::Float8E5M2FNUZ:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(encode_float_code(t, round_to_odd_float(f), saturate));
      return;
    case ElemType::Bool: static_cast<uint8_t*>(p)[i] = v.kind == 0 ? (v.f != 0 ? 1 : 0) : (bits != 0 ? 1 : 0); return;
    case ElemType::Int8: case ElemType::Uint8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(bits); return;
    case ElemType::Int16: case ElemType::Uint16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(bits); return;
    case ElemType::Int32: case ElemType::Uint32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(bits); return;
    case ElemType::Int64: case ElemType::Uint64: static_cast<uint64_t*>(p)[i] = bits; return;
  }
}

struct CastKernel {
  ElemType from, to;
  const void* x;
  void* y;
  bool saturate;
  OS_HD void operator()(int64_t i) const { cast_store(to, y, i, cast_load(from, x, i), saturate); }
};

// Cast where either side is a packed type (int4, uint4, int2, uint2,
// float4e2m1): one item per output byte when the output is packed (its
// codes written together, the unused bits of the last byte 0), else one per
// element. Packed integers read sign- or zero-extended and written as the
// value's low bits (wrapping, as the reference's casts); float4e2m1 through
// the float8 codes' coder, always saturating, rounded once (to odd first).
struct PackedCastKernel {
  ElemType from, to;
  int64_t n;  // elements
  const void* x;
  void* y;
  bool saturate;
  OS_HD CastValue load(int64_t i) const {
    const int w = packed_bits(from);
    if (!w) return cast_load(from, x, i);
    const int per = 8 / w;
    const uint32_t bits = (static_cast<const uint8_t*>(x)[i / per] >> ((i % per) * w)) & ((1u << w) - 1u);
    const int v = static_cast<int>(from);
    if (v == kE2M1) return {decode_float_code(from, bits), 0, 0, 0};
    if (v == kInt4 || v == kInt2) return {0, static_cast<int64_t>(bits) - ((bits >> (w - 1)) ? (int64_t{1} << w) : 0), 0, 1};
    return {0, 0, bits, 2};
  }
  OS_HD uint32_t code(CastValue v) const {
    if (static_cast<int>(to) == kE2M1) {
      const double f = v.kind == 0 ? v.f : v.kind == 1 ? static_cast<double>(v.i) : static_cast<double>(v.u);
      return encode_float_code(to, round_to_odd_float(f), true);
    }
    return static_cast<uint32_t>(cast_int_bits(v));
  }
  OS_HD void operator()(int64_t i) const {
    const int w = packed_bits(to);
    if (!w) {
      cast_store(to, y, i, load(i), saturate);
      return;
    }
    const int per = 8 / w;
    uint32_t byte = 0;
    for (int j = 0; j < per && i * per + j < n; ++j) byte |= (code(load(i * per + j)) & ((1u << w) - 1u)) << (j * w);
    static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(byte);
  }
};

// Range (core/range_plan.h): integers start + i * delta, wrapping; reals as
// numpy.arange in double (first, second, then first + i * step), cast to
// float32 or stored as double. The product is rounded on its own (no fused
// multiply-add on the GPU), as the host computes it.
struct RangeKernel {
  ElemType type;
  bool integer;
  int64_t start, delta;
  double first, second, step;
  // float16 / bfloat16 ranges: computed in float32 (opset 27's stash_type 1,
  // first, second and step rounded to it) or in double, and either way
  // stored through float32, as the reference stores a narrow value.
  bool narrow, in_float;
  void* y;
  OS_HD void operator()(int64_t i) const {
    if (integer) {
      cast_store(type, y, i, CastValue{0, 0, static_cast<uint64_t>(start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(delta), 2});
      return;
    }
    if (in_float) {
      const float f0 = static_cast<float>(first), f1 = static_cast<float>(second), fs = static_cast<float>(step);
#ifdef __CUDA_ARCH__
      const float v = i == 0 ? f0 : i == 1 ? f1 : __fadd_rn(f0, __fmul_rn(static_cast<float>(i), fs));
#else
      const float v = i == 0 ? f0 : i == 1 ? f1 : f0 + static_cast<float>(i) * fs;
#endif
      cast_store(type, y, i, CastValue{static_cast<double>(v), 0, 0, 0});
      return;
    }
#ifdef __CUDA_ARCH__
    const double v = i == 0 ? first : i == 1 ? second : __dadd_rn(first, __dmul_rn(static_cast<double>(i), step));
#else
    const double v = i == 0 ? first : i == 1 ? second : first + static_cast<double>(i) * step;
#endif
    cast_store(type, y, i, CastValue{narrow ? static_cast<double>(static_cast<float>(v)) : v, 0, 0, 0});
  }
};

// ConstantOfShape: every element the same `width` bytes (1, 2, 4 or 8: the
// value's low bytes in `bits`, little-endian as the host stores them).
struct FillKernel {
  int width;
  uint64_t bits;
  void* y;
  OS_HD void operator()(int64_t i) const {
    switch (width) {
      case 1: static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(bits); break;
      case 2: static_cast<uint16_t*>(y)[i] = static_cast<uint16_t>(bits); break;
      case 4: static_cast<uint32_t*>(y)[i] = static_cast<uint32_t>(bits); break;
      default: static_cast<uint64_t*>(y)[i] = bits; break;
    }
  }
};

// EyeLike: a [rows, cols] matrix of `type`, 1 where col - row == k, else 0
// (col - row cannot overflow, whatever k is).
struct EyeKernel {
  ElemType type;
  int64_t cols, k;
  void* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t row = i / cols, col = i % cols;
    cast_store(type, y, i, CastValue{0, 0, col - row == k ? 1u : 0u, 2});
  }
};

// BatchNormalization in inference: y = (x - mean[c]) * scale[c] / sqrt(var[c] + eps) + bias[c],
// with the per-channel factor and offset computed on the device first (BatchNormFold).
struct BatchNormFoldKernel {
  float epsilon;
  const float *scale, *bias, *mean, *var;
  float *factor, *offset;
  OS_HD void operator()(int64_t c) const {
    const float f = scale[c] / sqrtf(var[c] + epsilon);
    factor[c] = f;
    offset[c] = bias[c] - mean[c] * f;
  }
};
struct ChannelAffineKernel {  // y = x * factor[c] + offset[c], c = (i / inner) % channels
  int64_t inner, channels;
  const float *x, *factor, *offset;
  float* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t c = (i / inner) % channels;
    y[i] = x[i] * factor[c] + offset[c];
  }
};

}  // namespace onnxscope::cuda
