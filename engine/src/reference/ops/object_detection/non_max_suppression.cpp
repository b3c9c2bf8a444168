// Reference kernel: NonMaxSuppression.
//
// Interpolation weights and sums are computed in double (float16/float
// inputs included) and rounded once on store.
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "core/nms_math.h"
#include "core/roi_align_math.h"
#include "reference/kernel_util.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void NonMaxSuppression(KernelContext& ctx) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (boxes.rank() != 3 || boxes.shape()[2] != 4) ctx.fail("boxes must have shape [batches, boxes, 4], got " + shape_to_string(boxes.shape()));
  if (scores.rank() != 3 || scores.shape()[0] != boxes.shape()[0] || scores.shape()[2] != boxes.shape()[1])
    ctx.fail("scores must have shape [batches, classes, boxes] matching boxes, got " + shape_to_string(scores.shape()));
  int64_t max_out = 0;
  if (const Tensor* t = ctx.optional_input(2); t && t->element_count() > 0) max_out = t->element_as_int64(0);
  float iou_threshold = 0;
  if (const Tensor* t = ctx.optional_input(3); t && t->element_count() > 0) iou_threshold = static_cast<float>(t->element_as_double(0));
  std::optional<float> score_threshold;
  if (const Tensor* t = ctx.optional_input(4); t && t->element_count() > 0) score_threshold = static_cast<float>(t->element_as_double(0));
  const int64_t center = ctx.attr_int("center_point_box", 0);
  if (center != 0 && center != 1) ctx.fail("center_point_box must be 0 or 1");
  if (iou_threshold < 0 || iou_threshold > 1) ctx.fail("iou_threshold must be in [0, 1]");
  const int64_t B = boxes.shape()[0], NB = boxes.shape()[1], NC = scores.shape()[1];
  // Coordinates and scores are compared in float, as onnxruntime does.
  const std::vector<double> bv = real_values(boxes), sv = real_values(scores);
  // Corners and the overlap test are core/nms_math.h's, shared with the CUDA kernels.
  auto suppress = [&](int64_t b, int64_t i, int64_t j) {
    float pi[4], pj[4], a[4], c[4];
    for (int k = 0; k < 4; ++k) {
      pi[k] = static_cast<float>(bv[static_cast<size_t>((b * NB + i) * 4 + k)]);
      pj[k] = static_cast<float>(bv[static_cast<size_t>((b * NB + j) * 4 + k)]);
    }
    nms::corners(pi, center == 1, a);
    nms::corners(pj, center == 1, c);
    return nms::suppresses(a, c, iou_threshold);
  };
  std::vector<int64_t> selected;  // triples
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < NC; ++c) {
      const double* sc = sv.data() + (b * NC + c) * NB;
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < NB; ++i)
        if (!score_threshold || static_cast<float>(sc[i]) > *score_threshold) cand.push_back(i);
      // Highest score first, NaN after every number (the spec leaves NaN
      // open; a comparator that is not a strict weak order would leave the
      // order to the sort's implementation), then the lower box index.
      std::sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) {
        return nms::before(static_cast<float>(sc[p]), p, static_cast<float>(sc[q]), q);
      });
      std::vector<int64_t> kept;
      for (int64_t i : cand) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        bool ok = true;
        for (int64_t k : kept)
          if (suppress(b, i, k)) {
            ok = false;
            break;
          }
        if (ok) {
          kept.push_back(i);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
  Tensor& y = ctx.allocate_output(0, DataType::Int64, Shape{static_cast<int64_t>(selected.size() / 3), 3});
  for (uint64_t i = 0; i < selected.size(); ++i) store<int64_t>(y, i, selected[i]);
}

}  // namespace onnxscope::ref
