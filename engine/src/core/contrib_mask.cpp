#include "core/contrib_mask.h"

#include <stdexcept>
#include <string>

namespace onnxscope::contrib_mask {

std::vector<double> key_mask_bias(const Shape& ms, const std::vector<int64_t>& m, int64_t B, int64_t S, int64_t T,
                                  double filter, const char* what) {
  std::vector<double> bias(size_t(B * S * T), 0.0);
  auto fill_keys = [&](int64_t b, auto masked) {
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < T; ++j)
        if (masked(j)) bias[size_t((b * S + i) * T + j)] = filter;
  };
  if (ms.size() == 1 && (ms[0] == B || ms[0] == 2 * B)) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t end = m[size_t(b)], start = ms[0] == 2 * B ? m[size_t(B + b)] : 0;
      fill_keys(b, [&](int64_t j) { return j >= end || j < start; });
    }
  } else if (ms.size() == 2 && (ms[0] == B || ms[0] == 1) && ms[1] == 1 && T > 1) {
    // dummy
  } else if (ms.size() == 2 && ms[0] == B && ms[1] == T) {
    for (int64_t b = 0; b < B; ++b) fill_keys(b, [&](int64_t j) { return m[size_t(b * T + j)] <= 0; });
  } else if (ms.size() == 3 && ms[0] == B && ms[1] == S && ms[2] == T) {
    for (size_t i = 0; i < bias.size(); ++i)
      if (m[i] <= 0) bias[i] = filter;
  } else {
    throw std::invalid_argument(
        std::string(what) + " of shape " + shape_to_string(ms) + " is none of (batch " + std::to_string(B) +
        "), (2 * batch), (batch, total_sequence_length " + std::to_string(T) +
        "), (batch, sequence_length, total_sequence_length)" +
        (ms.size() == 4 ? "; 4-D (Megatron) masks are not supported (ONNX Runtime's CPU kernel refuses them too)" : ""));
  }
  return bias;
}

}  // namespace onnxscope::contrib_mask
