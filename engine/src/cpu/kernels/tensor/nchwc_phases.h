// The phases of a blocked (nChw8c / nChw16c) tensor, for dilated
// convolutions. A stride-1 convolution with dilations (dh, dw) reads, for
// the output pixels (a + dh*i, b + dw*j), only the input pixels of the same
// phase (a, b) of the zero-padded input, at unit steps: it is dh*dw
// convolutions without dilation and without padding, one per phase.
// NchwcConv runs them as one call (onednn_nchwc.cpp) on the phase images
// stacked along the rows of one image per batch entry: the output rows that
// straddle two phase images are computed and dropped, and the call keeps
// the batch size, so oneDNN picks the kernel a convolution of that batch
// gets (its Winograd kernels for 3x3, where its dilated ones stride through
// memory).
#pragma once

#include <cstdint>

namespace onnxscope::cpu {

// Tensor [n, blocks, h, w, block] and its phases stacked as
// [n, blocks, rows, pw, block]: phase image a*dw + b's row y at stacked row
// (a*dw + b)*pitch + y, for y < ph; rows = (dh*dw - 1)*pitch + ph.
struct PhaseGrid {
  int64_t n = 0, blocks = 0, block = 0;  // images, channel blocks, lanes a block
  int64_t h = 0, w = 0;                  // the whole tensor's pixels
  int64_t dh = 1, dw = 1;                // the phase steps (the dilations)
  int64_t ph = 0, pw = 0;                // each phase image's pixels
  int64_t pitch = 0;                     // stacked rows from one phase image to the next (>= ph)
  int64_t top = 0, left = 0;             // zero rows / columns before the tensor's row 0 / column 0 (its padding)
  int64_t rows() const { return (dh * dw - 1) * pitch + ph; }
};

// dst [n, blocks, rows, pw, block]: phase image (a, b)'s pixel (y, x) is
// src[i][c][a + dh*y - top][b + dw*x - left], zero where that falls outside
// src; rows between phase images are zero.
void to_phases(const float* src, const PhaseGrid& g, float* dst);

// The inverse for an output: dst [n, blocks, h, w, block] takes pixel (y, x)
// from phase image (y%dh, x%dw) at (y/dh, x/dw), for every pixel of dst
// (top and left are 0, ph*dh >= h, pw*dw >= w).
void from_phases(const float* src, const PhaseGrid& g, float* dst);

}  // namespace onnxscope::cpu
