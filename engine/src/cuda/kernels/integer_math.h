// Elementwise integer math on every integer width, signed and unsigned, in
// one kernel each: arithmetic (wrapping), Div and Mod (a zero divisor is
// reported, never executed), Max/Min, comparisons, bitwise logic, BitShift
// and BitwiseNot. Values are loaded into 64 bits (sign- or zero-extended),
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

}  // namespace onnxscope::cuda
