// Random problems for DFT (opsets 17 and 20: real and complex input, any
// axis but the last, forward and inverse, onesided, dft_length shorter and
// longer than the axis, lengths that take the FFT and lengths that take the
// direct sum), STFT (real and complex signals, window or not, frame_length
// given or not, steps that overlap frames or skip samples) and the cosine
// windows (periodic and symmetric, sizes 0 and 1, every kind of output
// type). The device computes these in double with the host's twiddles, so
// on the host runtime they give the reference's bits.
#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

Case dft(Rng& rng, const std::string&) {
  const bool v20 = coin(rng);
  Case c(v20 ? 20 : 17);
  const int64_t comps = pick(rng, 1, 2);
  const int64_t n = choose(rng, std::vector<int64_t>{1, 3, 5, 8, 64, 128});
  const bool three = coin(rng);  // [batch, n, m, comps] or [batch, n, comps]
  Shape s = three ? Shape{pick(rng, 1, 2), n, pick(rng, 1, 3), comps} : Shape{pick(rng, 1, 3), n, comps};
  int64_t axis = 1;
  if (three && coin(rng)) {  // the transform along the other dims
    axis = coin(rng) ? 2 : 0;
    std::swap(s[1], s[static_cast<size_t>(axis)]);
  }
  const DataType t = real_type(rng);
  c.add_tensor("x", t, s, rng, -2, 2);
  c.note_type(t);
  const bool inverse = coin(rng), onesided = pick(rng, 0, 2) == 0;
  const int64_t axis_len = s[static_cast<size_t>(axis)];
  std::vector<std::string> in = {"x"};
  const bool has_length = coin(rng) && !(inverse && onesided && axis_len == 1);
  if (has_length) in.push_back(c.ints("len", {choose(rng, std::vector<int64_t>{1, 4, 7, 64, axis_len + 2})}, true));
  else if (inverse && onesided && axis_len == 1) in.push_back(c.ints("len", {2}, true));  // 2 * (1 - 1) would be 0
  const int64_t rank = static_cast<int64_t>(s.size());
  if (v20 && (axis != rank - 2 || coin(rng))) {
    if (in.size() == 1) in.push_back("");
    in.push_back(c.ints("axis", {coin(rng) ? axis : axis - rank}, true));
  }
  auto& node = c.node("DFT", in);
  if (!v20 && axis != 1) attr_int(node, "axis", axis);
  if (inverse) attr_int(node, "inverse", 1);
  if (onesided) attr_int(node, "onesided", 1);
  c.what += std::string(" axis ") + std::to_string(axis) + (inverse ? " inverse" : "") + (onesided ? " onesided" : "");
  return c;
}

Case stft(Rng& rng, const std::string&) {
  Case c(17);
  const int64_t comps = pick(rng, 1, 2), length = choose(rng, std::vector<int64_t>{1, 6, 11, 70});
  const DataType t = real_type(rng);
  c.add_tensor("signal", t, {pick(rng, 1, 2), length, comps}, rng, -2, 2);
  c.note_type(t);
  const int64_t frame = length >= 64 && coin(rng) ? 64 : pick(rng, 1, std::min<int64_t>(length, 9));
  std::vector<std::string> in = {"signal", c.ints("step", {pick(rng, 1, 4)}, true)};
  const int form = static_cast<int>(pick(rng, 0, 2));  // 0 window, 1 frame_length, 2 both
  if (form != 1) {
    c.add_tensor("window", t, {frame}, rng, 0, 1);
    in.push_back("window");
  } else {
    in.push_back("");
  }
  if (form != 0) in.push_back(c.ints("frame_length", {frame}, true));
  auto& node = c.node("STFT", in);
  if (comps == 2 || coin(rng)) attr_int(node, "onesided", 0);
  return c;
}

Case window(Rng& rng, const std::string& op) {
  Case c(17);
  const int64_t size = choose(rng, std::vector<int64_t>{0, 1, 2, 5, 10, 64});
  auto& node = c.node(op, {c.ints("size", {size}, true)});
  if (coin(rng)) attr_int(node, "periodic", 0);
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Double, DataType::Float16, DataType::BFloat16,
                                                       DataType::Int32, DataType::Uint8});
  if (t != DataType::Float || coin(rng)) attr_int(node, "output_datatype", static_cast<int64_t>(t));
  c.note_type(t);
  return c;
}

// MelWeightMatrix (opset 17): 1 to 12 filters over spectrograms of 8 to 257
// bins, hertz ranges from near 0 to the Nyquist frequency (narrow ranges
// make filters whose edges coincide), every output type the windows take.
Case mel_weight_matrix(Rng& rng, const std::string&) {
  Case c(17);
  const int64_t sample_rate = choose(rng, std::vector<int64_t>{8000, 16000, 22050});
  const int64_t dft_length = choose(rng, std::vector<int64_t>{14, 15, 64, 255, 512});
  const int64_t bins = pick(rng, 1, 12);
  const double nyquist = static_cast<double>(sample_rate) / 2;
  const float lower = static_cast<float>(choose(rng, std::vector<double>{0.0, 20.0, 300.0}));
  const float upper = static_cast<float>(std::min(nyquist, lower + choose(rng, std::vector<double>{200.0, 1000.0, nyquist})));
  auto& node = c.node("MelWeightMatrix", {c.ints("num_mel_bins", {bins}, true), c.ints("dft_length", {dft_length}, true),
                                          c.ints("sample_rate", {sample_rate}, true), c.float_scalar("lower", lower),
                                          c.float_scalar("upper", upper)});
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Double, DataType::Float16, DataType::BFloat16,
                                                       DataType::Int32, DataType::Uint8});
  if (t != DataType::Float || coin(rng)) attr_int(node, "output_datatype", static_cast<int64_t>(t));
  c.note_type(t);
  return c;
}

}  // namespace

void add_signal_generators(std::map<std::string, Generator>& m) {
  m["MelWeightMatrix"] = mel_weight_matrix;
  m["DFT"] = dft;
  m["STFT"] = stft;
  for (const char* w : {"HannWindow", "HammingWindow", "BlackmanWindow"}) m[w] = window;
}

}  // namespace onnxscope::test::cuda_cases
