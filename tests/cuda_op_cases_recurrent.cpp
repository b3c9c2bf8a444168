// Random RNN, GRU and LSTM problems for cuda_kernels_test: every direction
// and layout, sequences cut short by sequence_lens (0 and full length
// included), initial states, biases, peepholes, clip, GRU's
// linear_before_reset, LSTM's input_forget, listed activation functions
// with their alphas and betas, and empty sequences, inputs and batches.
#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

// Activation functions with the alpha/beta each takes (0, 1 or 2 values).
struct Function {
  const char* name;
  int alphas, betas;
};
const std::vector<Function> kFunctions = {{"Relu", 0, 0},        {"Tanh", 0, 0},       {"Sigmoid", 0, 0},
                                          {"Affine", 1, 1},      {"LeakyRelu", 1, 0},  {"ThresholdedRelu", 1, 0},
                                          {"ScaledTanh", 1, 1},  {"HardSigmoid", 1, 1}, {"Elu", 1, 0},
                                          {"Softsign", 0, 0},    {"Softplus", 0, 0}};

Case recurrent(Rng& rng, const std::string& op) {
  Case c(choose(rng, std::vector<int64_t>{7, 14, 22}));
  c.loose = true;  // GEMMs inside
  const int64_t gates = op == "RNN" ? 1 : op == "GRU" ? 3 : 4;
  const int64_t seq = pick(rng, 0, 9) == 0 ? 0 : pick(rng, 1, 5), batch = pick(rng, 0, 9) == 0 ? 0 : pick(rng, 1, 3);
  const int64_t input = pick(rng, 0, 9) == 0 ? 0 : pick(rng, 1, 5), hidden = pick(rng, 1, 6);
  const std::string direction = choose(rng, std::vector<std::string>{"forward", "reverse", "bidirectional"});
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const bool batch_first = c.opset >= 14 && coin(rng);
  const Shape state = batch_first ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  const DataType t = real_type(rng);
  c.note_type(t);
  c.add_tensor("x", t, batch_first ? Shape{batch, seq, input} : Shape{seq, batch, input}, rng, -2, 2);
  c.add_tensor("w", t, {dirs, gates * hidden, input}, rng, -0.7, 0.7);
  // Rows of R summing under 1 in size: with the functions' slopes at most 1
  // the recurrence contracts, so TF32's and fp16's rounding does not grow
  // from step to step past their tolerance.
  const double reach = 0.95 / static_cast<double>(hidden);
  c.add_tensor("r", t, {dirs, gates * hidden, hidden}, rng, -reach, reach);
  std::vector<std::string> in = {"x", "w", "r"};
  auto optional = [&](bool present, const std::function<std::string()>& make) { in.push_back(present ? make() : ""); };
  optional(coin(rng), [&] { return c.add_tensor("b", t, {dirs, 2 * gates * hidden}, rng, -1, 1); });
  optional(coin(rng), [&] {
    std::vector<int64_t> lengths(static_cast<size_t>(batch));
    for (auto& l : lengths) l = pick(rng, 0, 2) == 0 ? seq : pick(rng, 0, seq);
    return c.index_input("lengths", DataType::Int32, {batch}, lengths);
  });
  optional(coin(rng), [&] { return c.add_tensor("initial_h", t, state, rng, -1, 1); });
  if (gates == 4) {
    optional(coin(rng), [&] { return c.add_tensor("initial_c", t, state, rng, -1, 1); });
    optional(coin(rng), [&] { return c.add_tensor("p", t, {dirs, 3 * hidden}, rng, -1, 1); });
  }
  while (!in.empty() && in.back().empty()) in.pop_back();
  auto& n = c.node(op, in, gates == 4 ? 3 : 2);
  if (direction != "forward" || coin(rng)) attr_string(n, "direction", direction);
  if (batch_first) attr_int(n, "layout", 1);
  if (coin(rng)) attr_int(n, "hidden_size", hidden);
  if (pick(rng, 0, 3) == 0) attr_float(n, "clip", static_cast<float>(pick(rng, 1, 6)) * 0.25f);
  if (gates == 3 && coin(rng)) attr_int(n, "linear_before_reset", 1);
  if (gates == 4 && pick(rng, 0, 3) == 0) attr_int(n, "input_forget", 1);
  if (pick(rng, 0, 2) == 0) {  // listed functions: per direction, or the forward ones for both
    const int64_t per_direction = gates == 1 ? 1 : gates == 3 ? 2 : 3;
    const int64_t listed = dirs == 2 && coin(rng) ? per_direction : per_direction * dirs;
    std::vector<std::string> names;
    std::vector<float> alphas, betas;
    for (int64_t i = 0; i < listed; ++i) {
      const Function& f = choose(rng, kFunctions);
      names.push_back(f.name);
      for (int a = 0; a < f.alphas; ++a) alphas.push_back(static_cast<float>(pick(rng, 1, 8)) * 0.125f);
      for (int b = 0; b < f.betas; ++b) betas.push_back(static_cast<float>(pick(rng, -4, 4)) * 0.125f);
    }
    attr_strings(n, "activations", names);
    // Fewer values than the functions take now and then: the rest use their defaults.
    if (!alphas.empty() && coin(rng)) attr_floats(n, "activation_alpha", std::vector<float>(alphas.begin(), alphas.end() - (coin(rng) ? 1 : 0)));
    if (!betas.empty() && coin(rng)) attr_floats(n, "activation_beta", betas);
  }
  return c;
}

}  // namespace

void add_recurrent_generators(std::map<std::string, Generator>& m) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) m[op] = recurrent;
}

}  // namespace onnxscope::test::cuda_cases
