// Random problems for the operators the device runs as views of their
// input's memory. Dropout in inference (a view of x and a mask of ones):
// every era of the operator (is_test before opset 7, a float mask before
// 10, ratio and training_mode inputs from 12), with and without the mask.
// BitCast: every pair of types of one width, packed 4-bit ones included.
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

Case bitcast(Rng& rng, const std::string&) {
  Case c(26);
  const std::vector<std::vector<DataType>> widths = {
      {DataType::Int8, DataType::Uint8, DataType::Bool, DataType::Float8E4M3FN, DataType::Float8E5M2},
      {DataType::Int16, DataType::Uint16, DataType::Float16, DataType::BFloat16},
      {DataType::Int32, DataType::Float},
      {DataType::Int64, DataType::Double},
      {DataType::Int4, DataType::Uint4, DataType::Float4E2M1}};
  const std::vector<DataType>& same = choose(rng, widths);
  const DataType from = choose(rng, same), to = choose(rng, same);
  const bool bits = from == DataType::Bool || dtype_info(from).bits == 4;
  c.add_tensor("x", from, random_shape(rng, 0, 4), rng, bits ? 0 : -50, bits ? 1.9 : 50);
  attr_int(c.node("BitCast", {"x"}), "to", static_cast<int64_t>(to));
  c.what += std::string(" to ") + std::string(dtype_name(to));
  return c;
}

}  // namespace

void add_view_generators(std::map<std::string, Generator>& m) {
  m["Dropout"] = dropout;
  m["BitCast"] = bitcast;
}

}  // namespace onnxscope::test::cuda_cases
