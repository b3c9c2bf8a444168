// Elementwise integer math on every integer width, signed and unsigned, in
// one kernel each: arithmetic (wrapping), Div and Mod (a zero divisor is
// reported, never executed), Max/Min, comparisons, bitwise logic, BitShift
// and BitwiseNot; Neg, Abs, Sign, Relu and Clip; Pow of an integer base. Values are loaded into 64 bits (sign- or zero-extended),
// computed there and stored as their low bits: for the wrapping ops the low
// bits of the 64-bit result are the narrow type's wrapped result.
#pragma once

#include "cuda/kernels/elementwise.h"

namespace onnxscope::cuda {

enum class IntOp : int {
  Add, Sub, Mul, Div, Mod, FMod, Max, Min, BitAnd, BitOr, BitXor, ShiftLeft, ShiftRight,
  Equal, Less, Greater, LessOrEqual, GreaterOrEqual  // bool results from here on
};

OS_HD bool int_op_compares(IntOp op) { return op >= IntOp::Equal; }

// An integer type of Cast's codes: its width in bytes and signedness.
struct IntType {
  int bytes;
  bool is_signed;
};

// Element i of an integer array, sign- or zero-extended to 64 bits.
OS_HD uint64_t int_load(IntType t, const void* p, int64_t i) {
  switch (t.bytes) {
    case 1: return t.is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<const int8_t*>(p)[i])) : static_cast<const uint8_t*>(p)[i];
    case 2: return t.is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<const int16_t*>(p)[i])) : static_cast<const uint16_t*>(p)[i];
    case 4: return t.is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<const int32_t*>(p)[i])) : static_cast<const uint32_t*>(p)[i];
    default: return static_cast<const uint64_t*>(p)[i];
  }
}

OS_HD void int_store(IntType t, void* p, int64_t i, uint64_t v) {
  switch (t.bytes) {
    case 1: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case 2: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); break;
    case 4: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    default: static_cast<uint64_t*>(p)[i] = v; break;
  }
}

// a < b, by the type's order.
OS_HD bool int_less(IntType t, uint64_t a, uint64_t b) {
  return t.is_signed ? static_cast<int64_t>(a) < static_cast<int64_t>(b) : a < b;
}

// op(a, b) on sign- or zero-extended values; b is not 0 for Div and Mod.
// Comparisons give 0 or 1.
OS_HD uint64_t int_math(IntOp op, IntType t, uint64_t a, uint64_t b) {
  const int bits = 8 * t.bytes;
  const auto sa = static_cast<int64_t>(a), sb = static_cast<int64_t>(b);
  switch (op) {
    case IntOp::Add: return a + b;
    case IntOp::Sub: return a - b;
    case IntOp::Mul: return a * b;
    case IntOp::Div:
      if (!t.is_signed) return a / b;
      if (sb == -1) return 0 - a;  // INT_MIN / -1 wraps to INT_MIN, as numpy gives; never executed as a division
      return static_cast<uint64_t>(sa / sb);  // truncated toward zero
    case IntOp::Mod: case IntOp::FMod: {
      if (!t.is_signed) return a % b;
      if (sb == -1) return 0;
      int64_t r = sa % sb;  // the sign of the dividend (fmod)
      if (op == IntOp::Mod && r != 0 && ((r < 0) != (sb < 0))) r += sb;  // Python's %: the sign of the divisor
      return static_cast<uint64_t>(r);
    }
    case IntOp::Max: return int_less(t, a, b) ? b : a;
    case IntOp::Min: return int_less(t, b, a) ? b : a;
    case IntOp::BitAnd: return a & b;
    case IntOp::BitOr: return a | b;
    case IntOp::BitXor: return a ^ b;
    case IntOp::ShiftLeft:  // by the width or more (or a negative amount): 0
      return (t.is_signed && sb < 0) || b >= static_cast<uint64_t>(bits) ? 0 : a << b;
    case IntOp::ShiftRight:  // arithmetic on signed types; out of range: what the sign alone gives
      if ((t.is_signed && sb < 0) || b >= static_cast<uint64_t>(bits)) return t.is_signed && sa < 0 ? ~uint64_t{0} : 0;
      return t.is_signed ? static_cast<uint64_t>(sa >> b) : a >> b;
    case IntOp::Equal: return a == b;
    case IntOp::Less: return int_less(t, a, b);
    case IntOp::Greater: return int_less(t, b, a);
    case IntOp::LessOrEqual: return !int_less(t, b, a);
    case IntOp::GreaterOrEqual: return !int_less(t, a, b);
  }
  return 0;
}

// y = op(a, b) with numpy broadcasting; bool y for comparisons. A zero
// divisor (Div, Mod) writes 0 and is reported through `fault` with the
// output position (the host finds it after the run, as the reference
// refuses it).
struct IntegerBinaryKernel {
  IntOp op;
  IntType type;
  BroadcastIndex bc;
  const void* a;
  const void* b;
  void* y;
  int64_t* fault;
  int64_t site;
  OS_HD void operator()(int64_t i) const {
    int64_t off[2];
    bc.offsets(i, 2, off);
    const uint64_t x = int_load(type, a, off[0]), z = int_load(type, b, off[1]);
    if (int_op_compares(op)) {
      static_cast<bool*>(y)[i] = int_math(op, type, x, z) != 0;
      return;
    }
    if ((op == IntOp::Div || op == IntOp::Mod || op == IntOp::FMod) && z == 0) {
      report_fault(fault, site, i, 0, 0);
      int_store(type, y, i, 0);
      return;
    }
    int_store(type, y, i, int_math(op, type, x, z));
  }
};

// BitwiseNot: y = ~x, any integer width.
struct BitwiseNotKernel {
  IntType type;
  const void* x;
  void* y;
  OS_HD void operator()(int64_t i) const { int_store(type, y, i, ~int_load(type, x, i)); }
};

// The integer unary operators. Clip's bounds are the kernel's lo / hi.
enum class IntUnaryOp : int { Neg, Abs, Sign, Relu, Clip };

// y = op(x), any integer width (Neg and Relu: signed types only, as their
// schemas have them). The most negative value has no positive counterpart:
// Neg and Abs leave it as it is (numpy wraps). Clip, as the reference: below
// lo becomes lo, then above hi becomes hi (so lo > hi gives hi everywhere).
struct IntegerUnaryKernel {
  IntUnaryOp op;
  IntType type;
  bool has_lo, has_hi;
  uint64_t lo, hi;  // Clip's bounds, sign- or zero-extended like the values
  const void* x;
  void* y;
  OS_HD void operator()(int64_t i) const {
    uint64_t v = int_load(type, x, i);
    const bool negative = type.is_signed && static_cast<int64_t>(v) < 0;
    switch (op) {
      case IntUnaryOp::Neg: v = 0 - v; break;
      case IntUnaryOp::Abs: v = negative ? 0 - v : v; break;
      case IntUnaryOp::Sign: v = negative ? ~uint64_t{0} : v != 0 ? 1 : 0; break;
      case IntUnaryOp::Relu: v = negative ? 0 : v; break;
      case IntUnaryOp::Clip:
        if (has_lo && int_less(type, v, lo)) v = lo;
        if (has_hi && int_less(type, hi, v)) v = hi;
        break;
    }
    int_store(type, y, i, v);
  }
};

// base ** e for an integer base of the reference's rule (its integer_pow):
// a whole exponent from 0 up is exact by squaring, modulo 2^64 (the low bits
// are the narrow type's wrapped power); any other exponent goes through
// double pow, truncated toward zero, and a power outside the type's range
// (infinity, NaN) gives the type's lowest value.
OS_HD uint64_t int_pow(IntType t, uint64_t base, double e) {
  if (e >= 0 && e == floor(e) && e < 1.8e19) {
    uint64_t r = 1, b = base;
    for (uint64_t n = static_cast<uint64_t>(e); n; n >>= 1) {
      if (n & 1) r *= b;
      b *= b;
    }
    return r;
  }
  const int bits = 8 * t.bytes;
  const double p = pow(t.is_signed ? static_cast<double>(static_cast<int64_t>(base)) : static_cast<double>(base), e);
  const double hi = ldexp(1.0, t.is_signed ? bits - 1 : bits);
  const double lo = t.is_signed ? -hi : 0.0;
  if (!(p >= lo && p < hi)) return t.is_signed ? uint64_t{1} << (bits - 1) : 0;
  return t.is_signed ? static_cast<uint64_t>(static_cast<int64_t>(p)) : static_cast<uint64_t>(p);
}

// Pow with an integer base a (any width) and an exponent b of any numeric
// type (read as the reference reads it, as a double), numpy broadcasting.
struct IntegerPowKernel {
  IntType type;
  ElemType exponent;
  BroadcastIndex bc;
  const void* a;
  const void* b;
  void* y;
  OS_HD void operator()(int64_t i) const {
    int64_t off[2];
    bc.offsets(i, 2, off);
    const CastValue e = cast_load(exponent, b, off[1]);
    const double ed = e.kind == 0 ? e.f : e.kind == 1 ? static_cast<double>(e.i) : static_cast<double>(e.u);
    int_store(type, y, i, int_pow(type, int_load(type, a, off[0]), ed));
  }
};

}  // namespace onnxscope::cuda
