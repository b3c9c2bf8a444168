// Helpers shared by the reference's random generators: the seeded stream.
#pragma once

#include <algorithm>
#include <bit>
#include <cctype>
#include <clocale>
#include <cmath>
#include <cwctype>
#include <limits>
#include <locale.h>
#include <map>
#include <numbers>
#include <random>
#include <re2/re2.h>
#include <string>
#include <vector>

#include "reference/kernel_util.h"

namespace onnxscope::ref {

// --- random ----------------------------------------------------------------------

// A deterministic generator with portable uniform and normal draws (the
// standard library's distributions differ between implementations).
class Rng {
 public:
  explicit Rng(const KernelContext& ctx) {
    uint64_t seed = ctx.seed();
    if (ctx.has_attr("seed")) {
      seed = std::bit_cast<uint32_t>(ctx.attr_float("seed", 0.0f)) ^ 0x5EEDF00Dull;
    } else {
      // Mix in the node's first output name: unseeded nodes get distinct streams.
      const std::string& name = ctx.node().outputs.empty() ? ctx.node().op_type : ctx.node().outputs[0];
      for (char c : name) seed = (seed ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
    }
    gen_.seed(seed);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::mt19937_64 gen_;
};

}  // namespace onnxscope::ref
