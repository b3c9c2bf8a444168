#include "core/rnn_plan.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace onnxscope::rnn {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

std::vector<Activation> parse_activations(const Attributes& a, const std::vector<std::string>& defaults, int64_t dirs) {
  std::vector<std::string> names = a.activations;
  const size_t per_direction = defaults.size();
  if (names.empty()) {
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() == per_direction && dirs == 2) {
    // Only the forward functions were listed: the backward direction reuses them.
    const std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  } else if (names.size() != per_direction * static_cast<size_t>(dirs)) {
    fail("activations has " + std::to_string(names.size()) + " entries, expected " + std::to_string(per_direction * static_cast<size_t>(dirs)));
  }
  size_t ai = 0, bi = 0;
  auto next_alpha = [&](double fallback) { return ai < a.alphas.size() ? double(a.alphas[ai++]) : fallback; };
  auto next_beta = [&](double fallback) { return bi < a.betas.size() ? double(a.betas[bi++]) : fallback; };
  std::vector<Activation> out;
  for (const std::string& raw : names) {
    std::string n = raw;
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    Activation f;
    if (n == "relu") f.kind = Activation::Relu;
    else if (n == "tanh") f.kind = Activation::Tanh;
    else if (n == "sigmoid") f.kind = Activation::Sigmoid;
    else if (n == "softsign") f.kind = Activation::Softsign;
    else if (n == "softplus") f.kind = Activation::Softplus;
    else if (n == "affine") { f.kind = Activation::Affine; f.alpha = next_alpha(1.0); f.beta = next_beta(0.0); }
    else if (n == "leakyrelu") { f.kind = Activation::LeakyRelu; f.alpha = next_alpha(0.01); }
    else if (n == "thresholdedrelu") { f.kind = Activation::ThresholdedRelu; f.alpha = next_alpha(1.0); }
    else if (n == "scaledtanh") { f.kind = Activation::ScaledTanh; f.alpha = next_alpha(1.0); f.beta = next_beta(1.0); }
    else if (n == "hardsigmoid") { f.kind = Activation::HardSigmoid; f.alpha = next_alpha(0.2); f.beta = next_beta(0.5); }
    else if (n == "elu") { f.kind = Activation::Elu; f.alpha = next_alpha(1.0); }
    else fail("unknown activation function '" + raw + "'");
    out.push_back(f);
  }
  return out;
}

void expect_shape(const Shape* s, const Shape& want, const char* name) {
  if (s && *s != want) fail(std::string(name) + " has shape " + shape_to_string(*s) + ", expected " + shape_to_string(want));
}

}  // namespace

Plan plan(const Attributes& a, int64_t gates, const std::vector<std::string>& default_acts, const Shape& x, const Shape& w,
          const Shape& r, const OptionalShapes& more) {
  Plan p;
  p.gates = gates;
  if (x.size() != 3 || w.size() != 3 || r.size() != 3)
    fail("X, W and R must be rank 3, got " + shape_to_string(x) + ", " + shape_to_string(w) + ", " + shape_to_string(r));
  if (a.layout != 0 && a.layout != 1) fail("layout must be 0 or 1, got " + std::to_string(a.layout));
  p.batch_first = a.layout == 1;
  p.seq = p.batch_first ? x[1] : x[0];
  p.batch = p.batch_first ? x[0] : x[1];
  p.input = x[2];
  std::string direction = a.direction;
  if (direction == "foward") direction = "forward";  // opset 1 GRU's documented default is spelled so
  if (direction == "forward") p.dirs = 1;
  else if (direction == "reverse") { p.dirs = 1; p.reverse_only = true; }
  else if (direction == "bidirectional") p.dirs = 2;
  else fail("unknown direction '" + direction + "'");
  p.hidden = r[2];
  if (a.hidden_size && *a.hidden_size != p.hidden)
    fail("hidden_size " + std::to_string(*a.hidden_size) + " does not match R's shape " + shape_to_string(r));
  expect_shape(&w, {p.dirs, gates * p.hidden, p.input}, "W");
  expect_shape(&r, {p.dirs, gates * p.hidden, p.hidden}, "R");
  expect_shape(more.b, {p.dirs, 2 * gates * p.hidden}, "B");
  expect_shape(more.sequence_lens, {p.batch}, "sequence_lens");
  expect_shape(more.initial_h, p.state_shape(), "initial_h");
  expect_shape(more.initial_c, p.state_shape(), "initial_c");
  expect_shape(more.p, {p.dirs, 3 * p.hidden}, "P");
  if (a.clip && !(*a.clip > 0)) fail("clip must be positive");
  p.clip = a.clip.value_or(0.f);
  p.acts = parse_activations(a, default_acts, p.dirs);
  return p;
}

}  // namespace onnxscope::rnn
