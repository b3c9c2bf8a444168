// Random problems for Sum, Mean, Max and Min over 1 to 9 float32, float16
// or bfloat16 inputs that
// broadcast together (more than 4 go to the device kernel in groups), NaN
// among them for Max and Min.
#include <cmath>

#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

Case variadic(Rng& rng, const std::string& op) {
  Case c(13);
  const Shape s = random_shape(rng, 0, 4);
  const int64_t n = pick(rng, 0, 2) == 0 ? pick(rng, 5, 9) : pick(rng, 1, 4);
  const DataType type = real_type(rng);
  std::vector<std::string> in;
  for (int64_t k = 0; k < n; ++k) {
    const std::string name = "x" + std::to_string(k);
    c.add_tensor(name, type, k == 0 || coin(rng) ? s : broadcastable(rng, s), rng, -3, 3);
    if ((op == "Max" || op == "Min") && pick(rng, 0, 3) == 0) {  // NaN propagates
      Tensor& t = c.inputs.back().second.tensor();
      if (t.element_count() > 0) set_real(t, 0, NAN);
    }
    in.push_back(name);
  }
  if (type != DataType::Float) c.what += std::string(" of ") + std::string(dtype_name(type));
  c.node(op, in);
  c.what += " (" + std::to_string(n) + " inputs)";
  return c;
}

void add_variadic_generators(std::map<std::string, Generator>& m) {
  for (const char* op : {"Sum", "Mean"}) m[op] = variadic;
}

}  // namespace onnxscope::test::cuda_cases
