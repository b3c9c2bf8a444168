#include "core/range_plan.h"

#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace onnxscope::range {

Plan integer_plan(int64_t start, int64_t limit, int64_t delta) {
  if (delta == 0) throw std::invalid_argument("delta must not be 0");
  const __int128 span = static_cast<__int128>(limit) - start;
  __int128 n = span / delta + ((span % delta != 0 && ((span < 0) == (delta < 0))) ? 1 : 0);
  if (n < 0) n = 0;
  if (n > INT64_MAX) throw std::invalid_argument("Range would have too many elements");
  Plan p;
  p.count = static_cast<int64_t>(n);
  p.start = start;
  p.delta = delta;
  return p;
}

Plan real_plan(double start, double limit, double delta) {
  if (delta == 0) throw std::invalid_argument("delta must not be 0");
  if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
    throw std::invalid_argument("start, limit and delta must be finite");
  const double len = std::ceil((limit - start) / delta);
  if (len > 9.0e18) throw std::invalid_argument("Range would have too many elements");
  Plan p;
  p.count = len > 0 ? static_cast<int64_t>(len) : 0;
  p.first = start;
  p.second = start + delta;
  p.step = p.second - p.first;
  p.real_delta = delta;
  return p;
}

}  // namespace onnxscope::range
