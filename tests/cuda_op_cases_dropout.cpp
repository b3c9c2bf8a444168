// Random problems for Dropout in inference, which the device runs as a view
// of x and a mask of ones: every era of the operator (is_test before opset
// 7, a float mask before 10, ratio and training_mode inputs from 12), with
// and without the mask.
#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

Case dropout(Rng& rng, const std::string&) {
  const int64_t opset = choose(rng, std::vector<int64_t>{6, 7, 10, 12, 13, 22});
  Case c(opset);
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Float16, DataType::Double});
  c.add_tensor("x", t, random_shape(rng, 0, 4), rng, -3, 3);
  std::vector<std::string> in = {"x"};
  if (opset >= 12) {
    const int form = static_cast<int>(pick(rng, 0, 2));  // none, a ratio, a ratio and training_mode false
    if (form >= 1) in.push_back(c.float_scalar("ratio", 0.3f));
    if (form == 2) {
      c.m.initializer(make_tensor_raw("training", DataType::Bool, {}, std::string(1, '\0')));
      in.push_back("training");
      c.what += " training=false";
    }
  }
  auto& n = c.node("Dropout", in, coin(rng) ? 2 : 1);
  if (opset < 7) attr_int(n, "is_test", 1);
  if (opset < 12 && coin(rng)) attr_float(n, "ratio", 0.25f);
  c.what += " opset " + std::to_string(opset);
  return c;
}

}  // namespace

void add_dropout_generators(std::map<std::string, Generator>& m) { m["Dropout"] = dropout; }

}  // namespace onnxscope::test::cuda_cases
