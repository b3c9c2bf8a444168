// Random problems for ReverseSequence (batch and time axes either way,
// lengths from 0 to the whole sequence, int32 and int64 lengths, any
// width) and MaxUnpool (1 to 3 spatial dims, strides, pads, an
// output_shape larger than the inferred one, indices that repeat so that
// the last write must win, as in the reference) and Col2Im (1 to 3
// spatial dims, strides, dilations and pads, blocks that overlap, so that
// the order of the sums shows in float16).
#include <algorithm>

#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

Case reverse_sequence(Rng& rng, const std::string&) {
  Case c(10);
  const bool batch_first = coin(rng);
  const int64_t batch = pick(rng, 1, 3), time = pick(rng, 1, 5);
  Shape s = batch_first ? Shape{batch, time} : Shape{time, batch};
  for (int64_t d = pick(rng, 0, 2); d > 0; --d) s.push_back(pick(rng, 1, 3));
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Float16, DataType::Int64, DataType::Uint8});
  c.add_tensor("x", t, s, rng, 0, 50);
  c.note_type(t);
  std::vector<int64_t> lens;
  for (int64_t b = 0; b < batch; ++b) lens.push_back(pick(rng, 0, time));
  c.index_input("lens", coin(rng) ? DataType::Int64 : DataType::Int32, {batch}, lens);
  auto& n = c.node("ReverseSequence", {"x", "lens"});
  attr_int(n, "batch_axis", batch_first ? 0 : 1);
  attr_int(n, "time_axis", batch_first ? 1 : 0);
  c.what += batch_first ? " batch first" : " time first";
  return c;
}

Case max_unpool(Rng& rng, const std::string&) {
  Case c(11);
  const int64_t k = pick(rng, 1, 3);
  Shape xs = {pick(rng, 1, 2), pick(rng, 1, 2)};
  std::vector<int64_t> kernel, strides, pads(static_cast<size_t>(2 * k), 0);
  for (int64_t d = 0; d < k; ++d) {
    xs.push_back(pick(rng, 1, 3));
    kernel.push_back(pick(rng, 1, 3));
    strides.push_back(pick(rng, 1, 3));
  }
  if (coin(rng))
    for (int64_t d = 0; d < k; ++d) pads[static_cast<size_t>(d)] = std::min<int64_t>(pick(rng, 0, 1), kernel[static_cast<size_t>(d)] - 1);
  Shape inferred = {xs[0], xs[1]};
  for (int64_t d = 0; d < k; ++d) {
    const auto u = static_cast<size_t>(d);
    inferred.push_back((xs[u + 2] - 1) * strides[u] - (pads[u] + pads[u + static_cast<size_t>(k)]) + kernel[u]);
  }
  uint64_t total = 1;
  for (int64_t v : inferred) total *= static_cast<uint64_t>(v);
  const DataType t = real_type(rng);
  c.add_tensor("x", t, xs, rng, -3, 3);
  c.note_type(t);
  uint64_t count = 1;
  for (int64_t v : xs) count *= static_cast<uint64_t>(v);
  std::vector<int64_t> idx;
  const int64_t spread = coin(rng) ? 2 : static_cast<int64_t>(total) - 1;  // few places: repeats
  for (uint64_t i = 0; i < count; ++i) idx.push_back(pick(rng, 0, std::min<int64_t>(spread, static_cast<int64_t>(total) - 1)));
  c.index_input("i", DataType::Int64, xs, idx);
  std::vector<std::string> in = {"x", "i"};
  if (coin(rng)) {
    Shape os = inferred;
    for (size_t d = 2; d < os.size(); ++d) os[d] += pick(rng, 0, 2);
    in.push_back(c.ints("out_shape", std::vector<int64_t>(os.begin(), os.end())));
  }
  auto& n = c.node("MaxUnpool", in);
  attr_ints(n, "kernel_shape", kernel);
  attr_ints(n, "strides", strides);
  attr_ints(n, "pads", pads);
  return c;
}

Case col2im(Rng& rng, const std::string&) {
  Case c(18);
  const int64_t nd = pick(rng, 1, 3);
  std::vector<int64_t> image, block, strides, dil, pads(static_cast<size_t>(2 * nd), 0);
  int64_t kernel = 1, blocks = 1;
  for (int64_t d = 0; d < nd; ++d) {
    image.push_back(pick(rng, 1, nd == 3 ? 4 : 6));
    block.push_back(pick(rng, 1, std::min<int64_t>(image.back(), 3)));
    strides.push_back(pick(rng, 1, 2));
    dil.push_back(block.back() * 2 - 1 <= image.back() ? pick(rng, 1, 2) : 1);
  }
  if (coin(rng))
    for (auto& p : pads) p = pick(rng, 0, 1);
  for (int64_t d = 0; d < nd; ++d) {
    const auto u = static_cast<size_t>(d);
    const int64_t room = image[u] + pads[u] + pads[u + static_cast<size_t>(nd)] - dil[u] * (block[u] - 1) - 1;
    kernel *= block[u];
    blocks *= room / strides[u] + 1;
  }
  const DataType t = real_type(rng);
  c.add_tensor("x", t, {pick(rng, 1, 2), pick(rng, 1, 2) * kernel, blocks}, rng, -2, 2);
  c.note_type(t);
  auto& n = c.node("Col2Im", {"x", c.ints("image", image), c.ints("block", block)});
  attr_ints(n, "strides", strides);
  attr_ints(n, "dilations", dil);
  attr_ints(n, "pads", pads);
  return c;
}

}  // namespace

void add_reorder_generators(std::map<std::string, Generator>& m) {
  m["ReverseSequence"] = reverse_sequence;
  m["MaxUnpool"] = max_unpool;
  m["Col2Im"] = col2im;
}

}  // namespace onnxscope::test::cuda_cases
