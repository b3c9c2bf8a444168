// Pad's negative pads, which every engine reads the same way: they crop
// first, and the mode (edge, wrap, reflect) pads from what is left, as
// onnxruntime and PyTorch's circular and reflect pads do (the spec does not
// say; onnx.reference refuses negative pads). [a b c d e] with pads [-1, 2]
// wraps to [b c d e b c], not [b c d e a b] (docs/compatibility.md).
#pragma once

#include <cstdint>

namespace onnxscope::pad {

// The elements of a dimension of n that its pads leave: at most n, possibly
// <= 0 (then only the constant mode can pad it). Never negates INT64_MIN.
inline int64_t kept(int64_t n, int64_t begin, int64_t end) {
  auto cut = [n](int64_t p) { return p >= 0 ? 0 : p < -n ? n : -p; };
  return n - cut(begin) - cut(end);
}

// The elements cropped at the start of a dimension of n.
inline int64_t cut_at_start(int64_t n, int64_t begin) { return n - kept(n, begin, 0); }

}  // namespace onnxscope::pad
