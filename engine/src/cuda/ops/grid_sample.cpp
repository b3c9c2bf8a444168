// GridSample (opset 16's bilinear / bicubic names on 4-D input, opset 20's
// linear / cubic on 1 to 3 spatial dims; nearest; zeros, border and
// reflection padding; align_corners) and AffineGrid (2-D and 3-D, size read
// on the host), float32 (kernels/grid_sample.h); float16 / bfloat16 through
// float32 (run_on_float32), rounded once to X's (theta's) type.
#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_grid_sample(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2) return std::string("GridSample takes X and grid");
  // X (T1) and grid (T2) may differ in type.
  if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16})) return r;
  const TypeInfo* t = g.type_of(n.inputs[0]);
  if (!t || !t->shape || t->shape->size() < 3 || t->shape->size() > 2 + kGridRank)
    return "the CUDA GridSample takes X of a known rank with 1 to " + std::to_string(kGridRank) + " spatial dims";
  const Attribute* mode = n.attribute("mode");
  if (mode && mode->s != "bilinear" && mode->s != "linear" && mode->s != "nearest" && mode->s != "bicubic" && mode->s != "cubic")
    return "GridSample mode '" + mode->s + "'";
  const Attribute* padding = n.attribute("padding_mode");
  if (padding && padding->s != "zeros" && padding->s != "border" && padding->s != "reflection")
    return "GridSample padding_mode '" + padding->s + "'";
  return std::nullopt;
}

void grid_sample(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const DeviceTensor& grid = c.input(1);
  const Shape& xs = x.shape;
  const Shape& gs = grid.shape;
  if (xs.size() < 3) c.fail("X must be [N, C, spatial...], got shape " + shape_to_string(xs));
  const size_t r = xs.size() - 2;
  if (r > static_cast<size_t>(kGridRank)) c.fail("more than 3 spatial dims");
  if (gs.size() != r + 2 || gs[0] != xs[0] || gs.back() != static_cast<int64_t>(r))
    c.fail("grid must have shape [N, out spatial..., " + std::to_string(r) + "] for X of shape " + shape_to_string(xs) +
           ", got " + shape_to_string(gs));
  // Opset 16 names the modes bilinear / bicubic and takes 4-D input only; opset 20 says linear / cubic, any rank.
  const bool v20 = c.opset() >= 20;
  std::string mode = c.attr_string("mode", v20 ? "linear" : "bilinear");
  if (!v20 && r != 2) c.fail("GridSample before opset 20 takes 4-D input [N, C, H, W] only");
  if (v20 ? (mode != "linear" && mode != "nearest" && mode != "cubic") : (mode != "bilinear" && mode != "nearest" && mode != "bicubic"))
    c.fail("unknown mode '" + mode + "' for opset " + std::to_string(c.opset()));
  const std::string padding = c.attr_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection") c.fail("unknown padding_mode '" + padding + "'");
  Shape out{xs[0], xs[1]};
  out.insert(out.end(), gs.begin() + 1, gs.end() - 1);
  c.output(0) = c.allocate(DataType::Float, out);
  const auto count = static_cast<int64_t>(elements_of(out));
  if (count == 0) return;
  GridSampleKernel k{};
  k.rank = static_cast<int>(r);
  k.mode = mode == "nearest" ? 0 : mode == "linear" || mode == "bilinear" ? 1 : 2;
  k.padding = padding == "zeros" ? 0 : padding == "border" ? 1 : 2;
  k.align = c.attr_int("align_corners", 0) != 0;
  k.channels = xs[1];
  k.in_size = 1;
  for (size_t d = r; d-- > 0;) {
    if (xs[2 + d] == 0) c.fail("cannot sample from an empty spatial dimension");
    k.dims[d] = xs[2 + d];
    k.stride[d] = k.in_size;
    k.in_size *= xs[2 + d];
  }
  k.out_size = count / (xs[0] * xs[1]);
  k.x = static_cast<const float*>(x.data);
  k.grid = static_cast<const float*>(grid.data);
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, count);
}

bool affine_grid_reads_on_host(const Node&, size_t i) { return i == 1; }

std::optional<std::string> refuse_affine_grid(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2) return std::string("AffineGrid takes theta and size");
  return require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16}, 0, 1);
}

void affine_grid(OpContext& c) {
  const DeviceTensor& theta = c.input(0);
  const std::vector<int64_t> size = host_ints(c, 1);
  if (size.size() != 4 && size.size() != 5) c.fail("size must be [N, C, H, W] or [N, C, D, H, W]");
  const size_t r = size.size() - 2;
  const int64_t n = size[0];
  const Shape want{n, static_cast<int64_t>(r), static_cast<int64_t>(r + 1)};
  if (theta.shape != want) c.fail("theta must have shape " + shape_to_string(want) + ", got " + shape_to_string(theta.shape));
  Shape out{n};
  for (size_t d = 0; d < r; ++d) {
    if (size[2 + d] < 0) c.fail("size must be non-negative");
    out.push_back(size[2 + d]);
  }
  out.push_back(static_cast<int64_t>(r));
  c.output(0) = c.allocate(DataType::Float, out);
  const auto count = static_cast<int64_t>(elements_of(out));
  if (count == 0) return;
  AffineGridKernel k{};
  k.rank = static_cast<int>(r);
  k.align = c.attr_int("align_corners", 0) != 0;
  k.points = 1;
  for (size_t d = 0; d < r; ++d) {
    k.dims[d] = size[2 + d];
    k.points *= size[2 + d];
  }
  k.theta = static_cast<const float*>(theta.data);
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, count);
}

void run_grid_sample(OpContext& c) { run_on_float32(c, grid_sample); }
void run_affine_grid(OpContext& c) { run_on_float32(c, affine_grid); }

}  // namespace

void add_grid_sample_ops(std::vector<OpDef>& t) {
  t.push_back({"GridSample", refuse_grid_sample, run_grid_sample});
  t.push_back({"AffineGrid", refuse_affine_grid, run_affine_grid, OpBackend::Kernel, affine_grid_reads_on_host});
}

}  // namespace onnxscope::cuda
