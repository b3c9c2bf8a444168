// Random problems for the integer elementwise kernels (kernels/integer_math.h):
// Add, Sub, Mul, Div, Mod (both forms), Max, Min and the comparisons on
// every integer width, BitwiseAnd / Or / Xor / Not and BitShift, Neg / Abs /
// Sign / Relu, Clip, and Pow of an integer base. Values
// mix small numbers, the type's extremes (so sums and products wrap, and
// INT_MIN / -1 comes up) and random bit patterns; divisors are never 0 (a
// zero divisor is cuda_engine_test's).
#include <cstring>

#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

const std::vector<DataType>& integer_types() {
  static const std::vector<DataType> t = {DataType::Int8,  DataType::Int16,  DataType::Int32,  DataType::Int64,
                                          DataType::Uint8, DataType::Uint16, DataType::Uint32, DataType::Uint64};
  return t;
}

// A graph input of type t: small values, extremes, and random bits.
// nonzero: no element is 0. shift: amounts around the width.
std::string integer_input(Case& c, const std::string& name, DataType t, const Shape& s, Rng& rng, bool nonzero,
                          bool shift = false) {
  const uint32_t bits = dtype_info(t).bits;
  const bool is_signed = dtype_info(t).is_signed;
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const uint64_t min_bits = is_signed ? uint64_t{1} << (bits - 1) : 0;  // the lowest value's bits
  Tensor v = Tensor::zeros(t, s);
  for (uint64_t i = 0; i < v.element_count(); ++i) {
    uint64_t x = 0;
    do {
      switch (shift ? 9 : pick(rng, 0, 7)) {
        case 0: case 1: case 2: x = static_cast<uint64_t>(pick(rng, is_signed ? -6 : 0, 6)); break;
        case 3: x = min_bits + static_cast<uint64_t>(pick(rng, 0, 1)); break;              // lowest, lowest + 1
        case 4: x = min_bits - 1 - static_cast<uint64_t>(pick(rng, 0, 1)); break;          // highest, highest - 1
        case 5: x = is_signed ? ~uint64_t{0} : static_cast<uint64_t>(pick(rng, 1, 3)); break;  // -1
        case 9: x = static_cast<uint64_t>(pick(rng, is_signed ? -2 : 0, static_cast<int64_t>(bits) + 2)); break;
        default: x = (static_cast<uint64_t>(rng()) << 32) ^ rng(); break;
      }
      x &= mask;
    } while (nonzero && x == 0);
    std::memcpy(v.mutable_raw() + i * (bits / 8), &x, bits / 8);  // little-endian low bytes
  }
  c.m.input(name, t, std::vector<DimSpec>(s.begin(), s.end()));
  c.inputs.emplace_back(name, Value(std::move(v)));
  c.what += " " + name + shape_to_string(s);
  return name;
}

Case bitwise(Rng& rng, const std::string& op) {
  Case c(op == "BitShift" ? 11 : 18);
  const DataType t = op == "BitShift" ? choose(rng, std::vector<DataType>{DataType::Uint8, DataType::Uint16, DataType::Uint32, DataType::Uint64})
                                      : choose(rng, integer_types());
  const Shape s = random_shape(rng, 0, 4);
  Shape sa = s, sb = broadcastable(rng, s);
  if (coin(rng)) std::swap(sa, sb);
  integer_input(c, "a", t, sa, rng, false);
  if (op == "BitwiseNot") {
    c.node(op, {"a"});
  } else {
    integer_input(c, "b", t, sb, rng, false, op == "BitShift");
    auto& n = c.node(op, {"a", "b"});
    if (op == "BitShift") {
      const bool left = coin(rng);
      attr_string(n, "direction", left ? "LEFT" : "RIGHT");
      c.what += left ? " LEFT" : " RIGHT";
    }
  }
  c.what += std::string(" of ") + std::string(dtype_name(t));
  return c;
}

}  // namespace

Case integer_binary(Rng& rng, const std::string& op) {
  Case c(14);
  const bool lowest_by_minus_one = (op == "Div" || op == "Mod") && coin(rng);
  const DataType t = lowest_by_minus_one ? choose(rng, std::vector<DataType>{DataType::Int8, DataType::Int16, DataType::Int32, DataType::Int64})
                                         : choose(rng, integer_types());
  const Shape s = random_shape(rng, 0, 4);
  Shape sa = s, sb = broadcastable(rng, s);
  if (coin(rng)) std::swap(sa, sb);
  integer_input(c, "a", t, sa, rng, false);
  integer_input(c, "b", t, sb, rng, op == "Div" || op == "Mod");
  if (lowest_by_minus_one) {
    // The first output divides the lowest value by -1 (it wraps; a plain int64 division would trap).
    const size_t width = dtype_info(t).bits / 8;
    Tensor& a = c.inputs[c.inputs.size() - 2].second.tensor();
    Tensor& b = c.inputs.back().second.tensor();
    if (a.element_count() > 0 && b.element_count() > 0) {
      const uint64_t lowest = uint64_t{1} << (8 * width - 1), minus_one = ~uint64_t{0};
      std::memcpy(a.mutable_raw(), &lowest, width);
      std::memcpy(b.mutable_raw(), &minus_one, width);
      c.what += " (lowest / -1 first)";
    }
  }
  auto& n = c.node(op, {"a", "b"});
  if (op == "Mod" && coin(rng)) {
    attr_int(n, "fmod", 1);
    c.what += " fmod";
  }
  c.what += std::string(" of ") + std::string(dtype_name(t));
  return c;
}

Case integer_unary(Rng& rng, const std::string& op) {
  Case c(14);
  const bool signed_only = op == "Neg" || op == "Relu";
  const DataType t = choose(rng, signed_only ? std::vector<DataType>{DataType::Int8, DataType::Int16, DataType::Int32, DataType::Int64}
                                             : integer_types());
  integer_input(c, "x", t, random_shape(rng, 0, 4), rng, false);
  c.node(op, {"x"});
  c.what += std::string(" of ") + std::string(dtype_name(t));
  return c;
}

// Clip (opset 13) of an integer type: no bound, either or both, lo > hi too.
Case integer_clip(Rng& rng, const std::string&) {
  Case c(13);
  const DataType t = choose(rng, integer_types());
  integer_input(c, "x", t, random_shape(rng, 0, 4), rng, false);
  auto bound = [&](const std::string& name) {
    const uint32_t bits = dtype_info(t).bits;
    const int64_t v = coin(rng) ? pick(rng, dtype_info(t).is_signed ? -5 : 0, 5) : static_cast<int64_t>(rng());
    std::string raw(bits / 8, '\0');
    std::memcpy(raw.data(), &v, bits / 8);  // little-endian low bytes
    c.m.initializer(make_tensor_raw(name, t, {}, raw));
    c.what += " " + name;
    return name;
  };
  std::vector<std::string> in = {"x"};
  const int form = static_cast<int>(pick(rng, 0, 3));
  if (form != 0) in.push_back(form == 2 ? std::string() : bound("lo"));
  if (form >= 2) in.push_back(bound("hi"));
  c.node("Clip", in);
  c.what += std::string(" of ") + std::string(dtype_name(t));
  return c;
}

// Pow of an integer base: the exponent an integer (small, past the width,
// negative) or a float (fractions, negatives, NaN, infinities), so both
// of the reference's paths and its out-of-range rule come up.
Case integer_pow(Rng& rng, const std::string&) {
  Case c(15);
  const DataType t = choose(rng, integer_types());
  const DataType te = choose(rng, std::vector<DataType>{t, DataType::Int64, DataType::Int32, DataType::Int8, DataType::Uint8,
                                                        DataType::Float, DataType::Float16, DataType::Double});
  const Shape s = random_shape(rng, 0, 4);
  Shape sa = s, sb = broadcastable(rng, s);
  if (coin(rng)) std::swap(sa, sb);
  integer_input(c, "a", t, sa, rng, false);
  if (dtype_info(te).is_integer) {
    integer_input(c, "b", te, sb, rng, false, true);  // amounts around the width: 0 up to bits + 2, negatives
  } else {
    c.add_tensor("b", te, sb, rng, -3, 3);
    Tensor& b = c.inputs.back().second.tensor();
    const double specials[] = {0.5, 2.0, -1.0, 3.0, NAN, INFINITY, -INFINITY, 70.0};
    for (uint64_t i = 0; i < b.element_count(); i += 2) {
      const double v = specials[pick(rng, 0, 7)];
      if (te == DataType::Double) b.mutable_data<double>()[i] = v;
      else set_real(b, i, static_cast<float>(v));
    }
  }
  c.node("Pow", {"a", "b"});
  c.what += std::string(" of ") + std::string(dtype_name(t)) + " exponent of " + std::string(dtype_name(te));
  return c;
}

void add_integer_math_generators(std::map<std::string, Generator>& m) {
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "BitShift"}) m[op] = bitwise;
}

}  // namespace onnxscope::test::cuda_cases
