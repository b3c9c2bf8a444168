// Random problems for the normalizations computed a line (or a channel
// window) at a time in double, as the reference does (kernels/lines.h):
// Hardmax (both opset conventions, ties, NaN), LpNormalization (p 1 and 2,
// any axis, zero lines) and LRN (even and odd sizes, windows wider than the
// channels, every attribute).
#include <cmath>

#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

Case hardmax(Rng& rng, const std::string&) {
  Case c(coin(rng) ? 11 : 13);
  const Shape s = random_shape(rng, c.opset < 13 ? 2 : 1, 4);  // before 13 the default axis is 1
  const DataType t = real_type(rng);
  c.add_tensor("x", t, s, rng, -2, 2);
  Tensor& x = c.inputs.back().second.tensor();
  for (uint64_t i = 0; i < x.element_count(); ++i) {  // ties and NaN where the first one wins
    const int64_t what = pick(rng, 0, 9);
    if (what == 0) set_real(x, i, 1.5f);
    if (what == 1 && pick(rng, 0, 3) == 0) set_real(x, i, NAN);
  }
  auto& n = c.node("Hardmax", {"x"});
  if (coin(rng)) attr_int(n, "axis", pick(rng, -static_cast<int64_t>(s.size()), static_cast<int64_t>(s.size()) - 1));
  c.what += " opset " + std::to_string(c.opset);
  return c;
}

Case lp_norm(Rng& rng, const std::string&) {
  Case c(22);
  const Shape s = random_shape(rng, 1, 4);
  const DataType t = real_type(rng);
  c.add_tensor("x", t, s, rng, -2, 2);
  c.note_type(t);
  Tensor& x = c.inputs.back().second.tensor();
  if (coin(rng) && x.element_count() > 0)  // a leading run of zeros: some lines have a zero norm
    for (uint64_t i = 0; i < x.element_count() / 2; ++i) set_real(x, i, 0.f);
  auto& n = c.node("LpNormalization", {"x"});
  if (coin(rng)) attr_int(n, "p", pick(rng, 1, 2));
  if (coin(rng)) attr_int(n, "axis", pick(rng, -static_cast<int64_t>(s.size()), static_cast<int64_t>(s.size()) - 1));
  return c;
}

Case lrn(Rng& rng, const std::string&) {
  Case c(13);
  Shape s = random_shape(rng, 2, 4);
  const DataType t = real_type(rng);
  c.add_tensor("x", t, s, rng, -3, 3);
  c.note_type(t);
  auto& n = c.node("LRN", {"x"});
  attr_int(n, "size", pick(rng, 1, 2 * s[1] + 1));
  if (coin(rng)) attr_float(n, "alpha", 0.05f);
  if (coin(rng)) attr_float(n, "beta", 0.4f);
  if (coin(rng)) attr_float(n, "bias", 2.f);
  return c;
}

}  // namespace

void add_norm_generators(std::map<std::string, Generator>& m) {
  m["Hardmax"] = hardmax;
  m["LpNormalization"] = lp_norm;
  m["LRN"] = lrn;
}

}  // namespace onnxscope::test::cuda_cases
