// com.microsoft GroupQueryAttention's bookkeeping, which the reference
// kernel and the CPU engine's share: heads and sizes from the inputs'
// shapes, each batch entry's past and total token counts from seqlens_k,
// the cache rows they fill, the rotary positions and the keys each query
// attends. Shapes, attributes and the small integer inputs only: each
// engine checks element types and computes itself. Problems are thrown as
// std::invalid_argument with the reason.
//
// For batch b: total_b = seqlens_k[b] + 1. A first prompt (S equals
// total_sequence_length) has no past (past_b = 0); otherwise past_b =
// total_b - S. present (B, Nkv, max(P, total_sequence_length), H) holds the
// past's first past_b rows, then the S new rows, then zeros. Rotary
// positions: position_ids, or past_b + s (a first prompt's padding rows, s
// >= total_b, at position 1, as ONNX Runtime places them). Query s attends
// keys [begin, end): end = min(past_b + s + 1, total_b) when causal (a
// ragged prompt's padding keys are never attended), total_b otherwise;
// begin = end - local_window_size when that is positive, else 0.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "onnxscope/ir.h"
#include "onnxscope/tensor.h"

namespace onnxscope::gqa {

struct Request {
  int64_t num_heads = 0, kv_num_heads = 0, local_window = -1;
  bool causal = true, do_rotary = false;
  Shape query;
  std::optional<Shape> key, value, past_key, past_value, cos_cache, sin_cache, position_ids;
  std::vector<int64_t> seqlens_k;     // the input's values
  std::vector<int64_t> total_length;  // total_sequence_length's values (one)
  std::vector<int64_t> positions;     // position_ids' values, when given
};

// Reads num_heads, kv_num_heads, local_window_size, causal and do_rotary.
Request request_of(const Node& n);

struct Plan {
  int64_t B = 0, S = 0, N = 0, Nkv = 0, H = 0, P = 0, total = 0, present_len = 0;
  bool packed = false, first_prompt = false, causal = true;
  int64_t window = -1;
  int64_t rotary_half = 0, rotary_rows = 0;  // the caches' (rows, rotary_dim / 2); 0: no rotary
  std::vector<int64_t> past_b, total_b;
  std::vector<int64_t> positions;  // (B, S) cache rows of the rotary, when do_rotary

  // The keys query s of batch b attends: [first, second).
  std::pair<int64_t, int64_t> keys(int64_t b, int64_t s) const {
    const int64_t end = causal ? std::min(past_b[size_t(b)] + s + 1, total_b[size_t(b)]) : total_b[size_t(b)];
    return {window > 0 ? std::max<int64_t>(0, end - window) : 0, end};
  }
  Shape present_shape() const { return {B, Nkv, present_len, H}; }
};

Plan plan(const Request& r);

}  // namespace onnxscope::gqa
