// NonMaxSuppression in three steps (ops/nms.cpp): each candidate box of a
// (batch, class) line ranked by its score (an item per box), the greedy
// selection of each line in rank order (an item per line), then, once the
// host has read the lines' counts and made the output, the selected
// triples written in the reference's order (an item per line). The order
// and the overlap test are the reference's own (core/nms_math.h).
#pragma once

#include <cmath>

#include "core/nms_math.h"
#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

// A box of batch b as corners (core/nms_math.h).
OS_HD void nms_corners(const float* boxes, int64_t nb, int64_t b, int64_t i, bool center, float out[4]) {
  nms::corners(boxes + (b * nb + i) * 4, center, out);
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
      if (j != i && candidate(sc[j]) && nms::before(sc[j], j, s, i)) ++rank;
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
  OS_HD bool suppresses(int64_t b, int64_t i, int64_t k) const {
    float a[4], c[4];
    nms_corners(boxes, nb, b, i, center, a);
    nms_corners(boxes, nb, b, k, center, c);
    return nms::suppresses(a, c, iou_threshold);
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
