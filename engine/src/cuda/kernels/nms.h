// NonMaxSuppression in three steps (ops/nms.cpp): each candidate box of a
// (batch, class) line ranked by its score (an item per box), the greedy
// selection of each line in rank order (an item per line), then, once the
// host has read the lines' counts and made the output, the selected
// triples written in the reference's order (an item per line). Scores,
// corners and the IoU are compared in float as the reference does.
#pragma once

#include <cmath>

#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

// The reference's candidate order: higher scores first, NaN after every
// number, equal scores (and NaNs) by box index.
OS_HD bool nms_before(float a, int64_t i, float b, int64_t j) {
  const bool an = a != a, bn = b != b;
  if (an != bn) return bn;
  if (!an && a != b) return a > b;
  return i < j;
}

// std::min and std::max as the reference calls them (with a NaN, which
// argument comes back matters; fminf would drop the NaN).
OS_HD float nms_min(float a, float b) { return b < a ? b : a; }
OS_HD float nms_max(float a, float b) { return a < b ? b : a; }

// Box i of batch b as (ymin, xmin, ymax, xmax): corners sorted per axis, or
// from (x_center, y_center, width, height).
OS_HD void nms_corners(const float* boxes, int64_t nb, int64_t b, int64_t i, bool center, float out[4]) {
  const float* p = boxes + (b * nb + i) * 4;
  if (!center) {
    out[0] = nms_min(p[0], p[2]);
    out[2] = nms_max(p[0], p[2]);
    out[1] = nms_min(p[1], p[3]);
    out[3] = nms_max(p[1], p[3]);
  } else {
    out[1] = p[0] - p[2] / 2;
    out[3] = p[0] + p[2] / 2;
    out[0] = p[1] - p[3] / 2;
    out[2] = p[1] + p[3] / 2;
  }
}

// Step 1, an item per (line, box): order[line * nb + rank] = box + 1 for a
// candidate (a score above the threshold, when there is one), 0 elsewhere
// (the caller zeroes `order` first).
struct NmsRankKernel {
  int64_t nb = 0;
  bool thresholded = false;
  float score_threshold = 0.f;
  const float* scores = nullptr;  // [lines, nb]
  int64_t* order = nullptr;       // [lines, nb]
  OS_HD bool candidate(float s) const { return !thresholded || s > score_threshold; }
  OS_HD void operator()(int64_t item) const {
    const int64_t line = item / nb, i = item % nb;
    const float* sc = scores + line * nb;
    const float s = sc[i];
    if (!candidate(s)) return;
    int64_t rank = 0;
    for (int64_t j = 0; j < nb; ++j)
      if (j != i && candidate(sc[j]) && nms_before(sc[j], j, s, i)) ++rank;
    order[line * nb + rank] = i + 1;
  }
};

// Step 2, an item per line: the candidates in rank order, each kept unless
// its IoU with a box kept before it passes the threshold, at most `cap`.
// kept[line * cap + m] is the m-th box kept, counts[line] how many.
struct NmsSelectKernel {
  int64_t nb = 0, classes = 0, cap = 0;
  bool center = false;
  float iou_threshold = 0.f;
  const float* boxes = nullptr;   // [batches, nb, 4]
  const int64_t* order = nullptr;  // from step 1
  int64_t* kept = nullptr;
  int64_t* counts = nullptr;
  // The reference's test, in its order of float operations.
  OS_HD bool suppresses(int64_t b, int64_t i, int64_t k) const {
    float a[4], c[4];
    nms_corners(boxes, nb, b, i, center, a);
    nms_corners(boxes, nb, b, k, center, c);
    const float ix = nms_min(a[3], c[3]) - nms_max(a[1], c[1]);
    const float iy = nms_min(a[2], c[2]) - nms_max(a[0], c[0]);
    if (ix <= 0 || iy <= 0) return false;
    const float inter = ix * iy;
    const float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_c = (c[2] - c[0]) * (c[3] - c[1]);
    const float uni = area_a + area_c - inter;
    if (area_a <= 0 || area_c <= 0 || uni <= 0) return false;
    return inter / uni > iou_threshold;
  }
  OS_HD void operator()(int64_t line) const {
    const int64_t b = line / classes;
    int64_t m = 0;
    for (int64_t r = 0; r < nb && m < cap; ++r) {
      const int64_t i = order[line * nb + r] - 1;
      if (i < 0) break;  // past the last candidate
      bool keep = true;
      for (int64_t q = 0; q < m && keep; ++q) keep = !suppresses(b, i, kept[line * cap + q]);
      if (keep) kept[line * cap + m++] = i;
    }
    counts[line] = m;
  }
};

// Step 3, an item per line: its kept boxes as (batch, class, box) rows of
// y, after the rows of the lines before it.
struct NmsWriteKernel {
  int64_t classes = 0, cap = 0;
  const int64_t* kept = nullptr;
  const int64_t* counts = nullptr;
  int64_t* y = nullptr;  // [total, 3]
  OS_HD void operator()(int64_t line) const {
    int64_t at = 0;
    for (int64_t l = 0; l < line; ++l) at += counts[l];
    for (int64_t m = 0; m < counts[line]; ++m) {
      y[(at + m) * 3] = line / classes;
      y[(at + m) * 3 + 1] = line % classes;
      y[(at + m) * 3 + 2] = kept[line * cap + m];
    }
  }
};

}  // namespace onnxscope::cuda
