// Random problems for NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (kernels/losses.h): (N, C) and (N, C, D1, D2) inputs, int32 and int64
// targets, class weights or none, ignore_index (a class, a negative value,
// every target ignored so that 'mean' is 0 / 0), each reduction, and
// SoftmaxCrossEntropyLoss's log_prob output wanted or not, its scores at
// times far past exp's range.
#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

Case loss(Rng& rng, const std::string& op) {
  const bool softmax = op == "SoftmaxCrossEntropyLoss";
  Case c(choose(rng, std::vector<int>{12, 13, 22}));
  const int64_t n = pick(rng, 1, 3), classes = pick(rng, 1, 5);
  Shape s = {n, classes};
  for (int64_t d = pick(rng, 0, 2); d > 0; --d) s.push_back(pick(rng, 1, 3));
  const DataType t = c.opset >= 22 ? real_type(rng) : choose(rng, std::vector<DataType>{DataType::Float, DataType::Float16});
  c.add_tensor("x", t, s, rng, softmax ? -3 : -4, softmax ? 3 : 0);
  c.note_type(t);
  if (softmax && pick(rng, 0, 2) == 0) {  // scores whose exp overflows unless the line's maximum is taken off first
    Tensor& x = c.inputs.back().second.tensor();
    for (uint64_t i = 0; i < x.element_count(); i += 2) set_real(x, i, i % 4 == 0 ? 800.f : -800.f);
    c.what += " (scores of +-800)";
  }
  Shape ts = {n};
  ts.insert(ts.end(), s.begin() + 2, s.end());
  uint64_t count = 1;
  for (int64_t d : ts) count *= static_cast<uint64_t>(d);
  const int form = static_cast<int>(pick(rng, 0, 3));  // 0 no ignore_index, 1 a class, 2 a negative, 3 all ignored
  const int64_t ignore = form == 1 ? pick(rng, 0, classes - 1) : -pick(rng, 1, 100);
  std::vector<int64_t> targets;
  for (uint64_t i = 0; i < count; ++i)
    targets.push_back(form == 3 || (form == 2 && pick(rng, 0, 3) == 0) ? ignore : pick(rng, 0, classes - 1));
  c.index_input("target", coin(rng) ? DataType::Int64 : DataType::Int32, ts, targets);
  std::vector<std::string> in = {"x", "target"};
  if (coin(rng)) {
    c.add_tensor("w", t, {classes}, rng, 0.2, 2);
    in.push_back("w");
  }
  auto& node = c.node(op, in, softmax && coin(rng) ? 2 : 1);
  if (form != 0) {
    attr_int(node, "ignore_index", ignore);
    c.what += " ignore_index " + std::to_string(ignore) + (form == 3 ? " (every target)" : "");
  }
  const int reduction = static_cast<int>(pick(rng, 0, 3));  // 3: the default, mean
  if (reduction < 3) {
    const char* r = reduction == 0 ? "none" : reduction == 1 ? "sum" : "mean";
    attr_string(node, "reduction", r);
    c.what += std::string(" ") + r;
  }
  return c;
}

}  // namespace

void add_loss_generators(std::map<std::string, Generator>& m) {
  m["NegativeLogLikelihoodLoss"] = loss;
  m["SoftmaxCrossEntropyLoss"] = loss;
}

}  // namespace onnxscope::test::cuda_cases
