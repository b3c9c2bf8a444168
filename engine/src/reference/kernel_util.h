// Helpers every reference kernel uses: element types as C++ types (narrow
// floats computed in float and rounded on store, like numpy), type dispatch,
// numpy broadcasting, axis normalisation. Kept small and header-only so each
// kernel stays a plain function that reads like the spec.
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "onnxscope/float_formats.h"
#include "onnxscope/kernel.h"
#include "onnxscope/tensor.h"

namespace onnxscope::ref {

// --- narrow floats as storage types ---------------------------------------
// Each stores the bit pattern; arithmetic happens on `float` after load().
struct f16 { uint16_t bits; };
struct bf16 { uint16_t bits; };
struct f8e4m3fn { uint8_t bits; };
struct f8e4m3fnuz { uint8_t bits; };
struct f8e5m2 { uint8_t bits; };
struct f8e5m2fnuz { uint8_t bits; };

inline float to_float(f16 v) { return half_to_float(v.bits); }
inline float to_float(bf16 v) { return bfloat16_to_float(v.bits); }
inline float to_float(f8e4m3fn v) { return float8e4m3fn_to_float(v.bits); }
inline float to_float(f8e4m3fnuz v) { return float8e4m3fnuz_to_float(v.bits); }
inline float to_float(f8e5m2 v) { return float8e5m2_to_float(v.bits); }
inline float to_float(f8e5m2fnuz v) { return float8e5m2fnuz_to_float(v.bits); }

template <typename S> inline constexpr bool is_narrow_float_v =
    std::is_same_v<S, f16> || std::is_same_v<S, bf16> || std::is_same_v<S, f8e4m3fn> ||
    std::is_same_v<S, f8e4m3fnuz> || std::is_same_v<S, f8e5m2> || std::is_same_v<S, f8e5m2fnuz>;

// The type arithmetic is done in for storage type S.
template <typename S> struct compute_type { using type = S; };
template <> struct compute_type<f16> { using type = float; };
template <> struct compute_type<bf16> { using type = float; };
template <> struct compute_type<f8e4m3fn> { using type = float; };
template <> struct compute_type<f8e4m3fnuz> { using type = float; };
template <> struct compute_type<f8e5m2> { using type = float; };
template <> struct compute_type<f8e5m2fnuz> { using type = float; };
template <typename S> using compute_t = typename compute_type<S>::type;

// Converts a compute value back to storage, rounding to nearest even; FP8
// saturates (the default of Cast and of every op that outputs FP8).
template <typename S> inline S from_compute(compute_t<S> v) {
  if constexpr (std::is_same_v<S, f16>) return {float_to_half(v)};
  else if constexpr (std::is_same_v<S, bf16>) return {float_to_bfloat16(v)};
  else if constexpr (std::is_same_v<S, f8e4m3fn>) return {float_to_float8e4m3fn(v)};
  else if constexpr (std::is_same_v<S, f8e4m3fnuz>) return {float_to_float8e4m3fnuz(v)};
  else if constexpr (std::is_same_v<S, f8e5m2>) return {float_to_float8e5m2(v)};
  else if constexpr (std::is_same_v<S, f8e5m2fnuz>) return {float_to_float8e5m2fnuz(v)};
  else return v;
}
template <typename S> inline compute_t<S> to_compute(S v) {
  if constexpr (is_narrow_float_v<S>) return to_float(v);
  else return v;
}

// Bytes of text a kernel's string outputs hold, held to the tensor limit.
// allocate_output counts one std::string per element, not what it holds, so
// a kernel that copies strings (Gather, Expand, Tile, Pad, Resize...) adds
// each copy here: a 1 MB string expanded to [100000] fails at the limit
// instead of asking for 100 GB. Without a context, no limit.
class StringBudget {
 public:
  explicit StringBudget(const KernelContext* ctx = nullptr) : ctx_(ctx) {}
  void add(const std::string& s) {
    if (!ctx_) return;
    used_ += s.size();
    if (used_ > ctx_->max_tensor_bytes())
      ctx_->fail("the string output would hold more than the tensor limit of " + std::to_string(ctx_->max_tensor_bytes()) +
                 " bytes of text");
  }

 private:
  const KernelContext* ctx_;
  uint64_t used_ = 0;
};

// double -> T: for an integer T, NaN gives 0 and out-of-range values
// saturate (a plain C++ conversion would be undefined there); floats convert.
template <typename T> T saturating_cast(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  }
  return static_cast<T>(v);
}

// A double result stored into compute type C the way a cast would, without
// undefined behaviour: integers truncate toward zero, saturate out of range
// and take 0 for NaN; bool is "nonzero"; floats round.
template <typename C> C from_double(double v) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) return saturating_cast<C>(v);
  else return static_cast<C>(v);
}

// Fails unless a working buffer of `shape` (elements of `elem_bytes` each)
// stays within the tensor limit. Sizes a kernel derives from attributes and
// from several inputs' shapes (a Conv's padded output, attention's L x S
// scores, rows x classes) can be far larger than any input, and the buffer is
// made before the output's own check.
inline void check_work_buffer(const KernelContext& ctx, const Shape& shape, const char* what, uint64_t elem_bytes = 8) {
  const auto n = checked_element_count(shape);
  if (!n || *n > ctx.max_tensor_bytes() / elem_bytes)
    ctx.fail(std::string(what) + " of shape " + shape_to_string(shape) + " would exceed the tensor limit of " +
             std::to_string(ctx.max_tensor_bytes()) + " bytes");
}

// Typed element access on a tensor's bytes (alignment-safe).
template <typename S> inline S load(const Tensor& t, uint64_t i) {
  S v;
  std::memcpy(&v, t.raw() + i * sizeof(S), sizeof(S));
  return v;
}
// A bool byte other than 0 or 1 is true (numpy and ONNX Runtime read it so);
// copying it into a C++ bool would be undefined (a Where once indexed its
// branches with the byte itself).
template <> inline bool load<bool>(const Tensor& t, uint64_t i) { return t.raw()[i] != std::byte{0}; }
template <typename S> inline void store(Tensor& t, uint64_t i, S v) {
  std::memcpy(t.mutable_raw() + i * sizeof(S), &v, sizeof(S));
}
// Element i of a tensor in its compute type.
template <typename S> inline compute_t<S> get(const Tensor& t, uint64_t i) { return to_compute(load<S>(t, i)); }
template <typename S> inline void put(Tensor& t, uint64_t i, compute_t<S> v) { store<S>(t, i, from_compute<S>(v)); }

template <typename S> constexpr DataType dtype_of();
template <> constexpr DataType dtype_of<float>() { return DataType::Float; }
template <> constexpr DataType dtype_of<double>() { return DataType::Double; }
template <> constexpr DataType dtype_of<f16>() { return DataType::Float16; }
template <> constexpr DataType dtype_of<bf16>() { return DataType::BFloat16; }
template <> constexpr DataType dtype_of<f8e4m3fn>() { return DataType::Float8E4M3FN; }
template <> constexpr DataType dtype_of<f8e4m3fnuz>() { return DataType::Float8E4M3FNUZ; }
template <> constexpr DataType dtype_of<f8e5m2>() { return DataType::Float8E5M2; }
template <> constexpr DataType dtype_of<f8e5m2fnuz>() { return DataType::Float8E5M2FNUZ; }
template <> constexpr DataType dtype_of<int8_t>() { return DataType::Int8; }
template <> constexpr DataType dtype_of<int16_t>() { return DataType::Int16; }
template <> constexpr DataType dtype_of<int32_t>() { return DataType::Int32; }
template <> constexpr DataType dtype_of<int64_t>() { return DataType::Int64; }
template <> constexpr DataType dtype_of<uint8_t>() { return DataType::Uint8; }
template <> constexpr DataType dtype_of<uint16_t>() { return DataType::Uint16; }
template <> constexpr DataType dtype_of<uint32_t>() { return DataType::Uint32; }
template <> constexpr DataType dtype_of<uint64_t>() { return DataType::Uint64; }
template <> constexpr DataType dtype_of<bool>() { return DataType::Bool; }
template <> constexpr DataType dtype_of<std::complex<float>>() { return DataType::Complex64; }
template <> constexpr DataType dtype_of<std::complex<double>>() { return DataType::Complex128; }

// --- type dispatch -------------------------------------------------------
// Calls f(Tag<S>{}) for the storage type S of `t` if S is in the type set;
// otherwise fails naming the node and the type:
//   dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) { using S = typename decltype(tag)::type; ... });
template <typename S> struct Tag { using type = S; };

enum TypeSet : unsigned {
  kFloats = 1,        // float, double, float16, bfloat16
  kFloat8 = 2,        // the four FP8 formats
  kSignedInts = 4,    // int8..int64
  kUnsignedInts = 8,  // uint8..uint64
  kBool = 16,
  kComplex = 32,
  kInts = kSignedInts | kUnsignedInts,
  kNumeric = kFloats | kInts,
  kAllFixed = kFloats | kFloat8 | kInts | kBool,
};

template <unsigned Set, typename F>
void dispatch(const KernelContext& ctx, DataType t, F&& f) {
  // Families outside Set are never instantiated, so f need not compile for them.
  auto go = [&]<unsigned Family, typename S>() {
    if constexpr ((Set & Family) != 0) f(Tag<S>{});
    else ctx.fail("does not support element type " + std::string(dtype_name(t)));
  };
  switch (t) {
    case DataType::Float: return go.template operator()<kFloats, float>();
    case DataType::Double: return go.template operator()<kFloats, double>();
    case DataType::Float16: return go.template operator()<kFloats, f16>();
    case DataType::BFloat16: return go.template operator()<kFloats, bf16>();
    case DataType::Float8E4M3FN: return go.template operator()<kFloat8, f8e4m3fn>();
    case DataType::Float8E4M3FNUZ: return go.template operator()<kFloat8, f8e4m3fnuz>();
    case DataType::Float8E5M2: return go.template operator()<kFloat8, f8e5m2>();
    case DataType::Float8E5M2FNUZ: return go.template operator()<kFloat8, f8e5m2fnuz>();
    case DataType::Int8: return go.template operator()<kSignedInts, int8_t>();
    case DataType::Int16: return go.template operator()<kSignedInts, int16_t>();
    case DataType::Int32: return go.template operator()<kSignedInts, int32_t>();
    case DataType::Int64: return go.template operator()<kSignedInts, int64_t>();
    case DataType::Uint8: return go.template operator()<kUnsignedInts, uint8_t>();
    case DataType::Uint16: return go.template operator()<kUnsignedInts, uint16_t>();
    case DataType::Uint32: return go.template operator()<kUnsignedInts, uint32_t>();
    case DataType::Uint64: return go.template operator()<kUnsignedInts, uint64_t>();
    case DataType::Bool: return go.template operator()<kBool, bool>();
    case DataType::Complex64: return go.template operator()<kComplex, std::complex<float>>();
    case DataType::Complex128: return go.template operator()<kComplex, std::complex<double>>();
    default: ctx.fail("does not support element type " + std::string(dtype_name(t)));
  }
}

// --- shapes and broadcasting ---------------------------------------------

// Numpy (multidirectional) broadcast of several shapes; fails naming them.
Shape broadcast_shapes(const KernelContext& ctx, std::span<const Shape* const> shapes);
Shape broadcast_shapes(const KernelContext& ctx, const Shape& a, const Shape& b);

// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& s);

// Maps each output element of a broadcast to the element of one input:
// for (uint64_t i = 0; i < n; ++i) a[bi.index(0, i)] ...
class BroadcastIndex {
 public:
  BroadcastIndex(const Shape& out, std::span<const Shape* const> inputs);
  // Offsets of output element `i` in every input, filled by next(); call in order i = 0, 1, ...
  const std::vector<uint64_t>& offsets() const { return offsets_; }
  void next();  // advance to the following output element

 private:
  Shape out_;
  std::vector<int64_t> counter_;
  std::vector<std::vector<int64_t>> in_strides_;  // per input, per output dim (0 where broadcast)
  std::vector<uint64_t> offsets_;
};

// Any broadcast, a row (the output's last dim) at a time: each input's
// offset at a row's start, and its step along the row (1, or 0 where the
// input's last dim is broadcast), so a row is a plain loop.
class BroadcastRows {
 public:
  BroadcastRows(const Shape& out, std::span<const Shape* const> inputs);
  uint64_t row_length() const { return length_; }
  uint64_t step(size_t input) const { return steps_[input]; }
  // offsets[k] = input k's element at the start of row r (r < element count / row_length).
  void row(uint64_t r, uint64_t* offsets) const;

 private:
  Shape out_;
  uint64_t length_ = 1;
  std::vector<uint64_t> steps_;
  std::vector<std::vector<int64_t>> strides_;  // per input, per output dim (0 where broadcast)
};

// The common broadcasts without an index per element: an input whose dims
// (aligned right) equal the output's over one run of dims and are 1
// elsewhere (the output's shape, a scalar, a bias row, RMSNorm's [S, 1]
// scale of [S, D], a rotary table [1, 1, S, D] of [B, H, S, D]). Its element
// for output i is (i / inner) % period, stepped without a division per
// element. of() is empty for any other broadcast (use BroadcastIndex).
struct BroadcastBlock {
  uint64_t inner = 1, period = 1;
  uint64_t q = 0, r = 0;  // q: the input's element for the current output
  static std::optional<BroadcastBlock> of(const Shape& in, const Shape& out);
  void start(uint64_t i) {
    q = (i / inner) % period;
    r = i % inner;
  }
  void next() {
    if (++r == inner) {
      r = 0;
      if (++q == period) q = 0;
    }
  }
  // The outputs from here on that read the input at a constant step: q + k
  // (step 1) while q runs to the period's end, or q (step 0) to the inner
  // run's end. advance(len) moves past len outputs of such a run.
  uint64_t run(uint64_t& step) const {
    step = inner == 1 ? 1 : 0;
    return inner == 1 ? period - q : inner - r;
  }
  void advance(uint64_t len) {
    if (inner == 1) {
      q += len;
      if (q == period) q = 0;
    } else if ((r += len) == inner) {
      r = 0;
      if (++q == period) q = 0;
    }
  }
};

// Normalises a possibly negative axis into [0, rank); fails if out of range.
int64_t normalize_axis(const KernelContext& ctx, int64_t axis, int64_t rank);

// Values of a 1-D (or scalar) integer tensor as int64.
std::vector<int64_t> int_values(const KernelContext& ctx, const Tensor& t);
// Values of any numeric tensor as double (narrow floats widened).
std::vector<double> real_values(const Tensor& t);

// out[i] = element i of a uint8, int8, int32 or int64 tensor, for all of
// them in one typed loop (element_as_int64 fetches the bytes and switches on
// the type per element); false, nothing written, for any other type.
template <typename T>
bool widen_integers(const Tensor& t, T* out) {
  const uint64_t n = t.element_count();
  const std::byte* p = t.raw();
  auto run = [&](auto tag) {
    using S = decltype(tag);
    for (uint64_t i = 0; i < n; ++i) {
      S v;
      std::memcpy(&v, p + i * sizeof(S), sizeof(S));
      out[i] = static_cast<T>(v);
    }
    return true;
  };
  switch (t.dtype()) {
    case DataType::Uint8: return run(uint8_t{});
    case DataType::Int8: return run(int8_t{});
    case DataType::Int32: return run(int32_t{});
    case DataType::Int64: return run(int64_t{});
    default: return false;
  }
}

}  // namespace onnxscope::ref
