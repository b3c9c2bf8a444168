// Random problems for GridSample and AffineGrid: every mode, padding and
// align_corners, opset 16 (4-D, bilinear / bicubic) and 20 (1 to 3 spatial
// dims), grid points inside, on the border and far outside the image, NaN
// coordinates; AffineGrid in 2-D and 3-D, sizes of 1 included. RoiAlign:
// both modes and coordinate conventions, rois inside, across the border,
// far outside and inverted, fixed and adaptive sampling, an infinity at
// pixel 0 (which an off-image sample multiplies by 0).
#include <algorithm>
#include <cmath>

#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

Case grid_sample(Rng& rng, const std::string&) {
  const bool v20 = coin(rng);
  Case c(v20 ? 20 : 16);
  const int64_t r = v20 ? pick(rng, 1, 3) : 2;
  Shape xs = {pick(rng, 1, 2), pick(rng, 1, 3)};
  Shape gs = {xs[0]};
  for (int64_t d = 0; d < r; ++d) {
    xs.push_back(pick(rng, 1, r == 3 ? 4 : 6));
    gs.push_back(pick(rng, 1, r == 3 ? 3 : 5));
  }
  gs.push_back(r);
  const DataType tx = real_type(rng), tg = coin(rng) ? tx : real_type(rng);  // X (T1) and grid (T2)
  c.add_tensor("x", tx, xs, rng, -2, 2);
  c.add_tensor("grid", tg, gs, rng, -1.6, 1.6);
  c.note_type(tx);
  if (tg != tx) c.what += " grid of " + std::string(dtype_name(tg));
  c.rounds_apart = tx != DataType::Float;  // float32 weights, the reference's in double
  Tensor& g = c.inputs.back().second.tensor();
  for (uint64_t i = 0; i < g.element_count(); ++i) {  // corners, far outside, NaN
    const int64_t what = pick(rng, 0, 19);
    if (what == 0) set_real(g, i, coin(rng) ? 1.f : -1.f);
    if (what == 1) set_real(g, i, coin(rng) ? 7.5f : -9.25f);
    if (what == 2 && pick(rng, 0, 2) == 0) set_real(g, i, NAN);
  }
  auto& n = c.node("GridSample", {"x", "grid"});
  const std::vector<std::string> modes = v20 ? std::vector<std::string>{"linear", "nearest", "cubic"}
                                             : std::vector<std::string>{"bilinear", "nearest", "bicubic"};
  const std::string mode = choose(rng, modes);
  const std::string padding = choose(rng, std::vector<std::string>{"zeros", "border", "reflection"});
  attr_string(n, "mode", mode);
  attr_string(n, "padding_mode", padding);
  const bool align = coin(rng);
  if (align) attr_int(n, "align_corners", 1);
  c.what += " " + mode + " " + padding + (align ? " align_corners" : "") + " opset " + std::to_string(c.opset);
  return c;
}

Case affine_grid(Rng& rng, const std::string&) {
  Case c(20);
  const int64_t r = pick(rng, 2, 3), n = pick(rng, 1, 2);
  std::vector<int64_t> size = {n, pick(rng, 1, 3)};
  for (int64_t d = 0; d < r; ++d) size.push_back(pick(rng, 1, 5));
  const DataType t = real_type(rng);
  c.add_tensor("theta", t, {n, r, r + 1}, rng, -2, 2);
  c.note_type(t);
  c.rounds_apart = t != DataType::Float;
  c.index_input("size", DataType::Int64, {static_cast<int64_t>(size.size())}, size);
  auto& node = c.node("AffineGrid", {"theta", "size"});
  if (coin(rng)) {
    attr_int(node, "align_corners", 1);
    c.what += " align_corners";
  }
  return c;
}

Case roi_align(Rng& rng, const std::string&) {
  const int opset = choose(rng, std::vector<int>{10, 16, 22});
  Case c(opset);
  const int64_t n = pick(rng, 1, 2), h = pick(rng, 1, 7), w = pick(rng, 1, 7), rois = pick(rng, 0, 4);
  const DataType t = opset == 22 ? real_type(rng) : choose(rng, std::vector<DataType>{DataType::Float, DataType::Float16});
  c.add_tensor("x", t, {n, pick(rng, 1, 3), h, w}, rng, -2, 2);
  c.note_type(t);
  if (pick(rng, 0, 3) == 0) {
    set_real(c.inputs.back().second.tensor(), 0, INFINITY);
    c.what += " (inf at pixel 0)";
  }
  c.add_tensor("rois", t, {rois, 4}, rng, -2, static_cast<double>(std::max(h, w)) + 2);
  Tensor& r = c.inputs.back().second.tensor();
  for (int64_t i = 0; i < rois; ++i) {
    const int64_t what = pick(rng, 0, 5);
    if (what == 0) {  // far outside
      set_real(r, static_cast<uint64_t>(i * 4), -40.f);
      set_real(r, static_cast<uint64_t>(i * 4 + 2), -30.f);
    }
    if (what == 1) {  // the whole image, exactly
      const float box[4] = {0.f, 0.f, static_cast<float>(w), static_cast<float>(h)};
      for (int q = 0; q < 4; ++q) set_real(r, static_cast<uint64_t>(i * 4 + q), box[q]);
    }
  }
  std::vector<int64_t> batch;
  for (int64_t i = 0; i < rois; ++i) batch.push_back(pick(rng, 0, n - 1));
  c.index_input("batch", DataType::Int64, {rois}, batch);
  auto& node = c.node("RoiAlign", {"x", "rois", "batch"});
  const bool max_mode = coin(rng);
  if (max_mode) attr_string(node, "mode", "max");
  const int64_t oh = pick(rng, 1, 4), ow = pick(rng, 1, 4), sampling = pick(rng, 0, 3);
  attr_int(node, "output_height", oh);
  attr_int(node, "output_width", ow);
  if (sampling || coin(rng)) attr_int(node, "sampling_ratio", sampling);
  const float scale = choose(rng, std::vector<float>{1.f, 0.5f, 1.25f});
  if (scale != 1.f) attr_float(node, "spatial_scale", scale);
  std::string ctm = opset >= 16 ? "half_pixel" : "output_half_pixel";
  if (opset >= 16 && coin(rng)) {
    ctm = "output_half_pixel";
    attr_string(node, "coordinate_transformation_mode", ctm);
  }
  c.what += std::string(max_mode ? " max" : " avg") + " " + ctm + " out " + std::to_string(oh) + "x" + std::to_string(ow) +
            " sampling " + std::to_string(sampling) + " scale " + std::to_string(scale);
  return c;
}

}  // namespace

void add_grid_generators(std::map<std::string, Generator>& m) {
  m["RoiAlign"] = roi_align;
  m["GridSample"] = grid_sample;
  m["AffineGrid"] = affine_grid;
}

}  // namespace onnxscope::test::cuda_cases
