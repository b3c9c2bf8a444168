// The CPU engine's data-movement kernels (Slice, Pad, Cast, Split, Gather,
// Expand, Tile, Resize, DepthToSpace, ScatterND, GatherElements, Transpose,
// Where) against the reference on seeded random problems, through the
// kernel test harness (support/ops_harness.h): every element type they take,
// bit for bit.
#include <gtest/gtest.h>

#include <tuple>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "model_builder.h"
#include "onnxscope/float_formats.h"
#include "ops_harness.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::harness;

namespace {

// --- data movement -----------------------------------------------------------------

const DataType kMoveTypes[] = {DataType::Float, DataType::Int64, DataType::Uint8, DataType::Bool, DataType::Float16};

// Slice(x, starts, ends, axes, steps) on the cpu engine against the reference.
void check_slice(Case& c, const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                 const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  c.what = "Slice " + std::string(dtype_name(x.dtype())) + " " + shape_to_string(x.shape()) + " starts " +
           shape_to_string(starts) + " ends " + shape_to_string(ends) + " axes " + shape_to_string(axes) + " steps " +
           shape_to_string(steps);
  c.input("x", x);
  c.ints("starts", starts);
  c.ints("ends", ends);
  c.ints("axes", axes);
  c.ints("steps", steps);
  c.mb.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}, "n");
  check(c);
}

TEST(CpuOpsHarness, SliceAnyStepsAndTypes) {
  Rng rng(7);
  for (int i = 0; i < 80; ++i) {
    Case c(13);
    const DataType t = kMoveTypes[i % 5];
    const Shape s = random_shape(rng, 1, 4, 10);
    const int64_t rank = static_cast<int64_t>(s.size());
    std::vector<int64_t> starts, ends, axes, steps;
    for (int64_t d = 0; d < rank; ++d) {
      if (pick(rng, 0, 2) == 0) continue;
      axes.push_back(pick(rng, 0, 1) ? d : d - rank);
      const int64_t step = pick(rng, 0, 3) == 0 ? -pick(rng, 1, 3) : pick(rng, 1, 3);
      steps.push_back(step);
      auto bound = [&] {
        switch (pick(rng, 0, 4)) {
          case 0: return step > 0 ? INT64_MAX : INT64_MIN;  // the exporters' "to the end"
          case 1: return -pick(rng, 1, 12);
          default: return pick(rng, 0, 12);
        }
      };
      starts.push_back(pick(rng, 0, 3) == 0 ? (step > 0 ? 0 : -1) : pick(rng, -12, 12));
      ends.push_back(bound());
    }
    check_slice(c, random_tensor(rng, t, s), starts, ends, axes, steps);
  }
}

// Rows enough for the threads to split them mid-way through the outer dims
// (each chunk works out its first row's index, then steps row to row): the
// same bits as the reference.
TEST(CpuOpsHarness, SliceOfManyRowsSplitAcrossTheThreads) {
  Rng rng(9);
  for (const auto& [shape, axes, steps] :
       {std::tuple<Shape, std::vector<int64_t>, std::vector<int64_t>>{{3, 50, 40, 64}, {3, 1}, {2, 2}},
        {{2, 7, 33, 128}, {3, 2}, {1, -3}},
        {{1, 12, 128, 64}, {3}, {1}}}) {
    Case c(13);
    std::vector<int64_t> starts, ends;
    for (size_t k = 0; k < axes.size(); ++k) {
      starts.push_back(steps[k] > 0 ? 1 : -2);
      ends.push_back(steps[k] > 0 ? shape[static_cast<size_t>(axes[k])] / 2 + 1 : INT64_MIN);
    }
    check_slice(c, random_tensor(rng, DataType::Float, shape), starts, ends, axes, steps);
  }
}

TEST(CpuOpsHarness, PadEveryModeAndCrop) {
  Rng rng(8);
  const char* modes[] = {"constant", "reflect", "edge", "wrap"};
  for (int i = 0; i < 80; ++i) {
    const char* mode = modes[i % 4];
    const int64_t opset = i % 3 == 0 ? 11 : 19;
    Case c(opset);
    const DataType t = kMoveTypes[(i / 4) % 5];
    Shape s = random_shape(rng, 1, 4, 8);
    if (std::string(mode) != "constant")
      for (auto& d : s) d = std::max<int64_t>(d, 1);
    const int64_t rank = static_cast<int64_t>(s.size());
    std::vector<int64_t> axes;
    for (int64_t d = 0; d < rank; ++d)
      if (opset < 18 || pick(rng, 0, 2)) axes.push_back(opset < 18 || pick(rng, 0, 1) ? d : d - rank);
    std::vector<int64_t> pads(2 * axes.size());
    for (size_t k = 0; k < pads.size(); ++k) {
      const int64_t dim = s[static_cast<size_t>(axes[k % axes.size()] < 0 ? axes[k % axes.size()] + rank : axes[k % axes.size()])];
      // Crops stay within the dim, so the output is never negative.
      pads[k] = pick(rng, 0, 3) == 0 ? -pick(rng, 0, dim / 2) : pick(rng, 0, std::string(mode) == "reflect" ? 2 * dim : 5);
    }
    c.what = "Pad-" + std::to_string(opset) + " " + mode + " " + std::string(dtype_name(t)) + " " + shape_to_string(s) + " pads " +
             shape_to_string(pads) + " axes " + shape_to_string(axes);
    if (opset == 11 && std::string(mode) == "wrap") c.expect_fast = false;  // wrap is opset 19's; the reference refuses it
    if (!c.expect_fast) continue;
    c.input("x", random_tensor(rng, t, s));
    c.ints("pads", pads);
    std::vector<std::string> ins = {"x", "pads"};
    if (std::string(mode) == "constant" && pick(rng, 0, 1)) {
      c.input("v", random_tensor(rng, t, {}));
      ins.push_back("v");
    }
    if (opset >= 18) {
      if (ins.size() == 2) ins.push_back("");
      c.ints("axes", axes);
      ins.push_back("axes");
    }
    auto& n = c.mb.node("Pad", ins, {"y"}, "n");
    attr_string(n, "mode", mode);
    check(c);
  }
}

// Dims the pads leave alone at the end (swin's window pad): rows folded together.
TEST(CpuOpsHarness, PadWithTheTrailingDimsUntouched) {
  Rng rng(18);
  const char* modes[] = {"constant", "reflect", "edge", "wrap"};
  const std::vector<std::vector<int64_t>> pad_sets = {
      {0, 0, 0, 0, 0, 7, 7, 0}, {0, 2, 1, 0, 0, 3, 0, 0}, {1, 0, -2, 0, 0, 0, 3, 0}, {0, 0, -1, 0, 0, 0, -2, 0}};
  for (const char* mode : modes)
    for (const auto& pads : pad_sets)
      for (const Shape& s : {Shape{1, 9, 9, 96}, Shape{2, 5, 6, 3}}) {
        Case c(19);
        c.what = std::string("Pad ") + mode + " " + shape_to_string(s) + " pads " + shape_to_string(pads);
        c.input("x", random_tensor(rng, DataType::Float, s));
        c.ints("pads", pads);
        attr_string(c.mb.node("Pad", {"x", "pads"}, {"y"}, "n"), "mode", mode);
        check(c, 0, 0);
      }
}

// --- casts ---------------------------------------------------------------------

TEST(CpuOpsHarness, CastBetweenTheCommonTypes) {
  Rng rng(9);
  const DataType types[] = {DataType::Float, DataType::Double, DataType::Float16, DataType::Int8, DataType::Int32,
                            DataType::Int64,  DataType::Uint8,  DataType::Uint64,  DataType::Bool};
  for (DataType from : types)
    for (DataType to : types) {
      Case c(19);
      const Shape s = random_shape(rng, 0, 3, 30);
      c.what = "Cast " + std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)) + " " + shape_to_string(s);
      c.input("x", random_tensor(rng, from, s, -300, 300, true));
      attr_int(c.mb.node("Cast", {"x"}, {"y"}, "n"), "to", static_cast<int64_t>(to));
      const bool half = from == DataType::Float16 || to == DataType::Float16;
      c.expect_fast = !half || (from == DataType::Float && to == DataType::Float16) ||
                      (from == DataType::Float16 && to == DataType::Float);
      check(c, 0, 0);  // exact, bit for bit in every type
    }
  // Long enough for the vector paths, with NaN, infinities and values past 2^63 among them.
  for (DataType to : {DataType::Int64, DataType::Int32, DataType::Uint8, DataType::Bool}) {
    Case c(19);
    c.what = "Cast float -> " + std::string(dtype_name(to)) + " [1000] with specials";
    c.input("x", random_tensor(rng, DataType::Float, {1000}, -300, 300, true));
    attr_int(c.mb.node("Cast", {"x"}, {"y"}, "n"), "to", static_cast<int64_t>(to));
    check(c, 0, 0);
  }
  // int64 -> float where the value does not fit in float's 24 bits: each
  // rounds to nearest even (the vector path's conversion against the scalar one).
  {
    Case c(19);
    c.what = "Cast int64 -> float [1000] past 2^24";
    Tensor x = Tensor::zeros(DataType::Int64, Shape{1000});
    int64_t* v = x.mutable_data<int64_t>();
    std::uniform_int_distribution<int> shift(0, 62);
    for (int64_t i = 0; i < 1000; ++i) {
      const int64_t big = (int64_t{1} << shift(rng)) + static_cast<int64_t>(rng() % 1000);
      v[i] = i % 3 == 0 ? -big : big;
    }
    v[0] = INT64_MIN;
    v[1] = INT64_MAX;
    v[2] = (int64_t{1} << 24) + 1;  // a tie: rounds to even
    v[3] = (int64_t{1} << 24) + 3;
    c.input("x", x);
    attr_int(c.mb.node("Cast", {"x"}, {"y"}, "n"), "to", static_cast<int64_t>(DataType::Float));
    check(c, 0, 0);
  }
  // Mostly in int32's range (AVX2's blocks of 8 through vcvtdq2ps), some
  // past 2^24 inside it (rounded), and single values just outside it in
  // some blocks (those blocks one at a time).
  {
    Case c(19);
    c.what = "Cast int64 -> float [4099] in and just out of int32's range";
    Tensor x = Tensor::zeros(DataType::Int64, Shape{4099});
    int64_t* v = x.mutable_data<int64_t>();
    std::uniform_int_distribution<int64_t> in32(INT32_MIN, INT32_MAX), small(-70000, 70000);
    for (int64_t i = 0; i < 4099; ++i) v[i] = i % 5 == 0 ? in32(rng) : small(rng);
    const int64_t edges[] = {INT32_MIN, INT32_MAX, int64_t{INT32_MAX} + 1, int64_t{INT32_MIN} - 1, int64_t{1} << 40, -(int64_t{1} << 33)};
    for (int k = 0; k < 6; ++k) v[100 + 64 * k + k] = edges[k];
    v[4098] = int64_t{1} << 35;  // in the scalar tail
    c.input("x", x);
    attr_int(c.mb.node("Cast", {"x"}, {"y"}, "n"), "to", static_cast<int64_t>(DataType::Float));
    check(c, 0, 0);
  }
}

// --- Split, Gather, Where --------------------------------------------------------

TEST(CpuOpsHarness, SplitEveryWayOfGivingSizes) {
  Rng rng(10);
  for (int i = 0; i < 40; ++i) {
    const int64_t opset = i % 3 == 0 ? 11 : i % 3 == 1 ? 13 : 18;
    Case c(opset);
    const DataType t = kMoveTypes[i % 5];
    Shape s = random_shape(rng, 1, 4, 9);
    const int64_t rank = static_cast<int64_t>(s.size());
    const int64_t axis = pick(rng, -rank, rank - 1);
    const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    const int64_t nout = pick(rng, 1, 3);
    std::vector<int64_t> sizes;
    int64_t left = s[a];
    for (int64_t k = 0; k + 1 < nout; ++k) {
      sizes.push_back(pick(rng, 0, left));
      left -= sizes.back();
    }
    sizes.push_back(left);
    const int mode = static_cast<int>(pick(rng, 0, 2));  // 0: sizes given, 1: equal parts, 2: num_outputs (18)
    std::vector<std::string> outs;
    for (int64_t k = 0; k < nout; ++k) outs.push_back(k == 0 ? "y" : "y" + std::to_string(k));
    if (mode == 1) s[a] = s[a] / nout * nout;
    c.what = "Split-" + std::to_string(opset) + " " + std::string(dtype_name(t)) + " " + shape_to_string(s) + " axis " +
             std::to_string(axis) + (mode == 0 ? " sizes " + shape_to_string(sizes) : mode == 1 ? " equal" : " num_outputs");
    c.input("x", random_tensor(rng, t, s));
    std::vector<std::string> ins = {"x"};
    if (mode == 0 && opset >= 13) {
      c.ints("sizes", sizes);
      ins.push_back("sizes");
    }
    auto& n = c.mb.node("Split", ins, outs, "n");
    attr_int(n, "axis", axis);
    if (mode == 0 && opset < 13) attr_ints(n, "split", sizes);
    if (mode == 2 && opset >= 18) attr_int(n, "num_outputs", nout);
    if (mode == 2 && opset < 18) c.what += " (equal parts below 18)";
    if (mode == 2 && opset < 18 && s[a] % nout != 0) continue;  // the reference rejects it, rightly
    for (size_t k = 1; k < outs.size(); ++k) c.mb.output_untyped(outs[k]);
    check(c);
  }
}

TEST(CpuOpsHarness, GatherAnyAxisAndIndexType) {
  Rng rng(11);
  for (int i = 0; i < 40; ++i) {
    Case c(13);
    const DataType t = kMoveTypes[i % 5];
    Shape s = random_shape(rng, 1, 4, 9);
    const int64_t rank = static_cast<int64_t>(s.size());
    const int64_t axis = pick(rng, -rank, rank - 1);
    const int64_t dim = s[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
    const Shape is = random_shape(rng, 0, 2, 5);
    const DataType it = i % 2 ? DataType::Int64 : DataType::Int32;
    Tensor ind = Tensor::zeros(it, is);
    const bool bad = i % 10 == 9 && ind.element_count() > 0;  // one index out of range: the reference names it
    if (dim == 0 && ind.element_count() > 0) continue;  // nothing to index
    for (uint64_t k = 0; k < ind.element_count(); ++k) {
      const int64_t v = bad && k == 0 ? dim : pick(rng, -dim, dim - 1);
      if (it == DataType::Int64) ind.mutable_data<int64_t>()[k] = v;
      else ind.mutable_data<int32_t>()[k] = static_cast<int32_t>(v);
    }
    c.what = "Gather " + std::string(dtype_name(t)) + " " + shape_to_string(s) + " axis " + std::to_string(axis) +
             " indices " + shape_to_string(is) + (bad ? " one out of range" : "");
    c.input("x", random_tensor(rng, t, s));
    c.input("i", std::move(ind));
    attr_int(c.mb.node("Gather", {"x", "i"}, {"y"}, "n"), "axis", axis);
    if (bad) continue;  // both engines refuse it; cli and interpreter tests cover the message
    check(c);
  }
}

TEST(CpuOpsHarness, ExpandAndTile) {
  Rng rng(13);
  for (int i = 0; i < 40; ++i) {
    Case c(13);
    const DataType t = kMoveTypes[i % 5];
    auto [a, b] = broadcast_pair(rng);  // x of shape a expanded to b (both directions broadcast)
    c.what = "Expand " + std::string(dtype_name(t)) + " " + shape_to_string(a) + " to " + shape_to_string(b);
    c.input("x", random_tensor(rng, t, a));
    c.ints("shape", b);
    c.mb.node("Expand", {"x", "shape"}, {"y"}, "n");
    bool ok = true;
    const size_t r = std::max(a.size(), b.size());
    for (size_t d = 0; d < r; ++d) {
      const int64_t u = d < r - a.size() ? 1 : a[d - (r - a.size())], v = d < r - b.size() ? 1 : b[d - (r - b.size())];
      ok = ok && (u == v || u == 1 || v == 1);
    }
    if (ok) check(c);
  }
  for (int i = 0; i < 30; ++i) {
    Case c(13);
    const DataType t = kMoveTypes[i % 5];
    const Shape s = random_shape(rng, 1, 4, 6);
    std::vector<int64_t> reps;
    for (size_t d = 0; d < s.size(); ++d) reps.push_back(pick(rng, 0, 6) == 0 ? 0 : pick(rng, 1, 3));
    c.what = "Tile " + std::string(dtype_name(t)) + " " + shape_to_string(s) + " x " + shape_to_string(reps);
    c.input("x", random_tensor(rng, t, s));
    c.ints("reps", reps);
    c.mb.node("Tile", {"x", "reps"}, {"y"}, "n");
    check(c);
  }
}

TEST(CpuOpsHarness, ResizeEveryModeAndCoordinateTransformation) {
  Rng rng(15);
  const char* modes[] = {"nearest", "linear", "cubic"};
  const char* coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"};
  const char* nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  for (int i = 0; i < 60; ++i) {
    Case c(19);
    const char* mode = modes[i % 3];
    const char* coord = coords[(i / 3) % 5];
    Shape s = {pick(rng, 1, 2), pick(rng, 1, 5), pick(rng, 1, 9), pick(rng, 1, 9)};
    if (i % 7 == 6) s = {pick(rng, 2, 9), pick(rng, 2, 9)};  // 2-D, every axis resized
    const bool by_sizes = i % 2;
    std::vector<int64_t> sizes = s;
    std::vector<float> scales(s.size(), 1.0f);
    for (size_t d = s.size() >= 4 ? 2 : 0; d < s.size(); ++d) {
      const float f = std::vector<float>{0.5f, 2.0f, 1.5f, 3.0f, 0.75f}[static_cast<size_t>(pick(rng, 0, 4))];
      scales[d] = f;
      sizes[d] = std::max<int64_t>(1, pick(rng, 1, 12));
    }
    const bool antialias = std::string(mode) != "nearest" && i % 5 == 4;
    c.what = "Resize " + std::string(mode) + " " + coord + " " + shape_to_string(s) +
             (by_sizes ? " sizes " + shape_to_string(sizes) : " scales") + (antialias ? " antialias" : "");
    c.input("x", random_tensor(rng, DataType::Float, s, -3, 3));
    c.mb.initializer(make_float_tensor("roi", {0}, {}));
    if (by_sizes) {
      c.ints("sizes", sizes);
      c.mb.node("Resize", {"x", "roi", "", "sizes"}, {"y"}, "n");
    } else {
      c.mb.initializer(make_float_tensor("scales", {static_cast<int64_t>(scales.size())}, scales));
      c.mb.node("Resize", {"x", "roi", "scales"}, {"y"}, "n");
    }
    auto& n = *c.mb.graph().mutable_node(0);
    attr_string(n, "mode", mode);
    attr_string(n, "coordinate_transformation_mode", coord);
    if (std::string(mode) == "nearest") attr_string(n, "nearest_mode", nearests[i % 4]);
    if (antialias) attr_int(n, "antialias", 1);
    if (std::string(mode) == "cubic" && i % 4 == 1) attr_int(n, "exclude_outside", 1);
    check(c);
  }
}

TEST(CpuOpsHarness, DepthToSpaceAndBack) {
  Rng rng(16);
  for (int i = 0; i < 40; ++i) {
    const bool to_space = i % 2 == 0;
    const bool crd = (i / 2) % 2 == 1;
    Case c(crd && !to_space ? 28 : 13);  // SpaceToDepth has a mode from opset 28
    const DataType t = kMoveTypes[(i / 4) % 5];
    const int64_t b = pick(rng, 1, 3);
    Shape s = {pick(rng, 1, 2), pick(rng, 1, 3), pick(rng, 1, 5), pick(rng, 1, 5)};
    if (to_space) s[1] *= b * b;
    else {
      s[2] *= b;
      s[3] *= b;
    }
    const char* op = to_space ? "DepthToSpace" : "SpaceToDepth";
    c.what = std::string(op) + " " + (crd ? "CRD " : "DCR ") + std::string(dtype_name(t)) + " " + shape_to_string(s) +
             " block " + std::to_string(b);
    c.input("x", random_tensor(rng, t, s));
    auto& n = c.mb.node(op, {"x"}, {"y"}, "n");
    attr_int(n, "blocksize", b);
    if (crd) attr_string(n, "mode", "CRD");
    check(c);
  }
}

TEST(CpuOpsHarness, ScatterNDAndGatherElements) {
  Rng rng(23);
  auto indices = [&](DataType t, const Shape& s, int64_t dim_of(const std::vector<int64_t>&, uint64_t), const std::vector<int64_t>& dims) {
    Tensor x = Tensor::zeros(t, s);
    for (uint64_t e = 0; e < x.element_count(); ++e) {
      const int64_t d = dim_of(dims, e);
      const int64_t v = d == 0 ? 0 : pick(rng, -d, d - 1);
      if (t == DataType::Int64) x.mutable_data<int64_t>()[e] = v;
      else x.mutable_data<int32_t>()[e] = static_cast<int32_t>(v);
    }
    return x;
  };
  for (int i = 0; i < 40; ++i) {
    Case c(13);
    const DataType t = kMoveTypes[i % 5];
    const DataType it = i % 2 ? DataType::Int64 : DataType::Int32;
    Shape s = random_shape(rng, 1, 4, 6);
    for (auto& d : s) d = std::max<int64_t>(d, 1);
    const int64_t r = static_cast<int64_t>(s.size()), k = pick(rng, 1, r);
    Shape is = random_shape(rng, 0, 2, 4);
    is.push_back(k);
    Shape us(is.begin(), is.end() - 1);
    us.insert(us.end(), s.begin() + k, s.end());
    c.what = "ScatterND " + std::string(dtype_name(t)) + " " + shape_to_string(s) + " indices " + shape_to_string(is);
    c.input("x", random_tensor(rng, t, s));
    c.input("i", indices(it, is, [](const std::vector<int64_t>& dims, uint64_t e) { return dims[e % dims.size()]; },
                         std::vector<int64_t>(s.begin(), s.begin() + k)));
    c.input("u", random_tensor(rng, t, us));
    c.mb.node("ScatterND", {"x", "i", "u"}, {"y"}, "n");
    check(c);
  }
  for (int i = 0; i < 40; ++i) {
    Case c(13);
    const DataType t = kMoveTypes[i % 5];
    const DataType it = i % 2 ? DataType::Int64 : DataType::Int32;
    Shape s = random_shape(rng, 1, 4, 6);
    for (auto& d : s) d = std::max<int64_t>(d, 1);
    const int64_t r = static_cast<int64_t>(s.size()), axis = pick(rng, -r, r - 1);
    const size_t a = static_cast<size_t>(axis < 0 ? axis + r : axis);
    Shape is = s;
    for (size_t d = 0; d < is.size(); ++d) is[d] = d == a ? pick(rng, 0, 7) : pick(rng, 0, s[d]);
    c.what = "GatherElements " + std::string(dtype_name(t)) + " " + shape_to_string(s) + " axis " + std::to_string(axis) +
             " indices " + shape_to_string(is);
    c.input("x", random_tensor(rng, t, s));
    c.input("i", indices(it, is, [](const std::vector<int64_t>& dims, uint64_t) { return dims[0]; }, {s[a]}));
    attr_int(c.mb.node("GatherElements", {"x", "i"}, {"y"}, "n"), "axis", axis);
    check(c);
  }
  // Rows as long as attention masks' (torch.gather on the last axis): the
  // cpu engine's 8-wide gathers for 4-byte elements and int64 indices, and
  // their scalar tail.
  for (int i = 0; i < 12; ++i) {
    Case c(13);
    const DataType t = i % 3 == 2 ? DataType::Int32 : DataType::Float;
    const DataType it = i % 4 == 3 ? DataType::Int32 : DataType::Int64;
    const Shape s = {pick(rng, 1, 3), pick(rng, 1, 40)};
    const Shape is = {pick(rng, 1, s[0]), pick(rng, 8, 70)};
    c.what = "GatherElements " + std::string(dtype_name(t)) + " " + shape_to_string(s) + " last axis, indices " +
             shape_to_string(is);
    c.input("x", random_tensor(rng, t, s));
    c.input("i", indices(it, is, [](const std::vector<int64_t>& dims, uint64_t) { return dims[0]; }, {s[1]}));
    attr_int(c.mb.node("GatherElements", {"x", "i"}, {"y"}, "n"), "axis", -1);
    check(c);
  }
}

TEST(CpuOpsHarness, TransposeAnyPermutation) {
  Rng rng(25);
  for (int i = 0; i < 40; ++i) {
    Case c(13);
    const DataType t = kMoveTypes[i % 5];
    Shape s = random_shape(rng, 1, 4, 40);
    if (i % 4 == 0) s = {pick(rng, 1, 70), pick(rng, 1, 70)};  // 2-D: 8 x 8 blocks and their edges
    std::vector<int64_t> perm(s.size());
    for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int64_t>(d);
    std::shuffle(perm.begin(), perm.end(), rng);
    c.what = "Transpose " + std::string(dtype_name(t)) + " " + shape_to_string(s) + " perm " + shape_to_string(perm);
    c.input("x", random_tensor(rng, t, s));
    attr_ints(c.mb.node("Transpose", {"x"}, {"y"}, "n"), "perm", perm);
    check(c);
  }
}

TEST(CpuOpsHarness, WhereOnEveryBroadcast) {
  Rng rng(12);
  for (int i = 0; i < 40; ++i) {
    Case c(16);
    const DataType t = kMoveTypes[i % 5];
    const auto [a, b] = broadcast_pair(rng);
    const auto [m, unused] = broadcast_pair(rng);
    (void)unused;
    c.what = "Where " + std::string(dtype_name(t)) + " " + shape_to_string(m) + " " + shape_to_string(a) + " " + shape_to_string(b);
    c.input("m", random_tensor(rng, DataType::Bool, m));
    c.input("a", random_tensor(rng, t, a));
    c.input("b", random_tensor(rng, t, b));
    c.mb.node("Where", {"m", "a", "b"}, {"y"}, "n");
    // The three must broadcast together: skip pairs that do not.
    bool ok = true;
    const size_t r = std::max({m.size(), a.size(), b.size()});
    for (size_t d = 0; d < r; ++d) {
      int64_t want = 1;
      for (const Shape* sh : {&m, &a, &b}) {
        const int64_t v = d < r - sh->size() ? 1 : (*sh)[d - (r - sh->size())];
        if (v != 1 && want != 1 && v != want) ok = false;
        if (v != 1) want = v;
      }
    }
    if (ok) check(c);
  }
}

}  // namespace
