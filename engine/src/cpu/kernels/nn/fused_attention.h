// onnxscope.cpu FusedAttention (cpu/fused_ops.h): the problem as the
// kernel's ISA forms see it (fused_attention.cpp sets it up and shares the
// work items out; fused_attention_avx512.cpp and fused_attention_avx2.cpp
// compute them). A work item is up to kRows query rows of one head; 8 of
// them at a time, their scores against every key stay in an 8 x T buffer
// (L1/L2), the softmax runs on it, and the rows of Y are summed from V's
// rows and written where Y keeps them: the scores never go through memory
// as a [B, H, Sq, T] tensor, and Q, K, V and Y are read and written in
// either head layout (bshd_in / bshd_out: no Transposes).
//
// The float operations are the unfused graph's, in its order: q * scale_q
// and k * scale_k rounded to float, the scores as float sums of products
// (fused multiply-adds, as the products), * scale, + mask, the softmax as
// the cpu engine's Softmax computes it on that ISA (softmax_rows.cpp: the
// maximum, e^(s - max) within 3.2 ulp, their sum, times 1 / sum, quotients
// below FLT_MIN as 0), the NaN guard, and Y as float sums over the keys.
// Only the order of the terms of each sum may differ from the products'.
#pragma once

#include <cstdint>
#include <vector>

namespace onnxscope::cpu::attention {

constexpr int64_t kRows = 32;  // query rows a work item takes (8 at a time through the scores)

// Where element (b, h, s, d) of a [B, H, S, D] operand lies, given either layout.
struct HeadView {
  const float* data = nullptr;
  int64_t H = 0, S = 0, D = 0;
  bool bshd = false;
  const float* row(int64_t b, int64_t h, int64_t s) const {
    return data + (bshd ? ((b * S + s) * H + h) * D : ((b * H + h) * S + s) * D);
  }
};

// The mask's element for scores (b, h, i, t), rank <= 4 aligned to the right,
// a stride of 0 on every broadcast dim.
struct MaskView {
  const float* data = nullptr;
  int64_t stride[4] = {0, 0, 0, 0};  // b, h, i, t
  const float* row(int64_t b, int64_t h, int64_t i) const {
    return data + b * stride[0] + h * stride[1] + i * stride[2];
  }
};

struct Problem {
  HeadView q, k, v;
  MaskView mask;
  bool has_mask = false;
  int64_t B = 0, H = 0, Sq = 0, T = 0, D = 0, Dv = 0;
  float scale_q = 1, scale_k = 1, scale = 1;
  bool nan_to_zero = false, bshd_out = false;
  float* y = nullptr;
  float* y_row(int64_t b, int64_t h, int64_t i) const {  // Y's row (b, h, i) in its layout
    return y + (bshd_out ? ((b * Sq + i) * H + h) * Dv : ((b * H + h) * Sq + i) * Dv);
  }
};

// K^T of head (b, h), scaled, into kt[d * ld + t] (ld a multiple of 16,
// the keys past T as zeros), and query rows [i0, i1) of that head: qs holds
// 8 rows of scaled q, s 8 rows of scores.
using PackKt = void (*)(const Problem& p, int64_t b, int64_t h, float* kt, int64_t ld);
using AttendRows = void (*)(const Problem& p, int64_t b, int64_t h, int64_t i0, int64_t i1, const float* kt, int64_t ld,
                            std::vector<float>& qs, std::vector<float>& s);

void pack_kt_avx512(const Problem& p, int64_t b, int64_t h, float* kt, int64_t ld);
void attend_rows_avx512(const Problem& p, int64_t b, int64_t h, int64_t i0, int64_t i1, const float* kt, int64_t ld,
                        std::vector<float>& qs, std::vector<float>& s);
void pack_kt_avx2(const Problem& p, int64_t b, int64_t h, float* kt, int64_t ld);
void attend_rows_avx2(const Problem& p, int64_t b, int64_t h, int64_t i0, int64_t i1, const float* kt, int64_t ld,
                      std::vector<float>& qs, std::vector<float>& s);

}  // namespace onnxscope::cpu::attention
