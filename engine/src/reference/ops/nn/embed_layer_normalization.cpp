// Reference kernel: com.microsoft EmbedLayerNormalization (ONNX Runtime's
// contrib operator for BERT's embedding layer, as its transformers optimizer
// fuses it).
//
//   s[b, t] = word_embedding[input_ids[b, t]] + position_embedding[p(b, t)]
//             (+ segment_embedding[segment_ids[b, t]])
//   output[b, t] = (s - mean(s)) / sqrt(var(s) + epsilon) * gamma + beta    over the hidden axis H
//
// p(b, t) is position_ids[b, t] (position_ids of shape (B, S)) or
// position_ids[0, t] (shape (1, S)), or t without position_ids. A
// segment_embedding without segment_ids adds its row 0 (BERT's default token
// type, as ONNX Runtime's kernel does); segment_ids without a
// segment_embedding is an error. Every id must select a row of its table: an
// id out of range is an error naming the input, the position and the value.
// Outputs: output (B, S, H); mask_index (int32, (B)): per batch, the number
// of mask values equal to 1 (0 without a mask; ONNX Runtime's CPU kernel
// counts so); embedding_sum (s, (B, S, H)). mask_index_type (0: no
// mask_index, 1: 1-D) only says whether the node has the second output.
// The sum is rounded to the embeddings' type after each add (ONNX Runtime
// adds word + position, then segment, in that type); mean and variance in
// double, each result rounded once.
#include <cmath>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::ref {
namespace {

void require_ids(const KernelContext& ctx, const Tensor& t, const Shape& want, const char* what) {
  if (t.dtype() != DataType::Int32)
    ctx.fail(std::string(what) + " must be int32, got " + std::string(dtype_name(t.dtype())));
  if (t.shape() != want)
    ctx.fail(std::string(what) + " must have input_ids' shape " + shape_to_string(want) + ", got " +
             shape_to_string(t.shape()));
}

// A 2-D embedding table of H columns and the embeddings' type.
void require_table(const KernelContext& ctx, const Tensor& t, int64_t hidden, DataType type, const char* what) {
  if (t.rank() != 2 || t.shape()[1] != hidden)
    ctx.fail(std::string(what) + " must have shape [rows," + std::to_string(hidden) +
             "] (word_embedding's hidden size), got " + shape_to_string(t.shape()));
  if (t.dtype() != type)
    ctx.fail(std::string(what) + " has element type " + std::string(dtype_name(t.dtype())) + ", word_embedding " +
             std::string(dtype_name(type)));
}

void require_vector(const KernelContext& ctx, const Tensor& t, int64_t hidden, DataType type, const char* what) {
  if (t.rank() != 1 || t.shape()[0] != hidden)
    ctx.fail(std::string(what) + " must have shape [" + std::to_string(hidden) + "] (the hidden size), got " +
             shape_to_string(t.shape()));
  if (t.dtype() != type)
    ctx.fail(std::string(what) + " has element type " + std::string(dtype_name(t.dtype())) + ", word_embedding " +
             std::string(dtype_name(type)));
}

// The row an id selects, or the message that names it.
int64_t row_of(const KernelContext& ctx, int32_t id, int64_t rows, const char* what, int64_t b, int64_t t,
               const char* table) {
  if (id < 0 || id >= rows)
    ctx.fail(std::string(what) + "[" + std::to_string(b) + "," + std::to_string(t) + "] = " + std::to_string(id) +
             " is out of range: " + table + " has " + std::to_string(rows) + " rows");
  return id;
}

}  // namespace

void EmbedLayerNormalization(KernelContext& ctx) {
  const Tensor& ids = ctx.input(0);
  const Tensor* seg_ids = ctx.optional_input(1);
  const Tensor& word = ctx.input(2);
  const Tensor& pos = ctx.input(3);
  const Tensor* seg = ctx.optional_input(4);
  const Tensor& gamma = ctx.input(5);
  const Tensor& beta = ctx.input(6);
  const Tensor* mask = ctx.optional_input(7);
  const Tensor* pos_ids = ctx.optional_input(8);
  const int64_t mask_index_type = ctx.attr_int("mask_index_type", 1);
  if (mask_index_type != 0 && mask_index_type != 1)
    ctx.fail("mask_index_type must be 0 (no mask_index) or 1 (a 1-D mask_index), got " +
             std::to_string(mask_index_type));
  if (ids.dtype() != DataType::Int32) ctx.fail("input_ids must be int32, got " + std::string(dtype_name(ids.dtype())));
  if (ids.rank() != 2)
    ctx.fail("input_ids must have shape [batch, sequence], got " + shape_to_string(ids.shape()));
  const int64_t B = ids.shape()[0], S = ids.shape()[1];
  if (word.rank() != 2) ctx.fail("word_embedding must have shape [rows, hidden], got " + shape_to_string(word.shape()));
  const int64_t H = word.shape()[1];
  const DataType type = word.dtype();
  require_table(ctx, pos, H, type, "position_embedding");
  if (seg) require_table(ctx, *seg, H, type, "segment_embedding");
  require_vector(ctx, gamma, H, type, "gamma");
  require_vector(ctx, beta, H, type, "beta");
  if (seg_ids) {
    require_ids(ctx, *seg_ids, ids.shape(), "segment_ids");
    if (!seg) ctx.fail("segment_ids is given without a segment_embedding to look them up in");
  }
  if (seg && !seg_ids && seg->shape()[0] < 1)
    ctx.fail("segment_embedding has no rows (without segment_ids its row 0 is added)");
  if (mask) require_ids(ctx, *mask, ids.shape(), "mask");
  bool pos_broadcast = false;
  if (pos_ids) {
    if (pos_ids->dtype() != DataType::Int32)
      ctx.fail("position_ids must be int32, got " + std::string(dtype_name(pos_ids->dtype())));
    if (pos_ids->rank() != 2 || pos_ids->shape()[1] != S || (pos_ids->shape()[0] != B && pos_ids->shape()[0] != 1))
      ctx.fail("position_ids must have shape [" + std::to_string(B) + "," + std::to_string(S) + "] or [1," +
               std::to_string(S) + "], got " + shape_to_string(pos_ids->shape()));
    pos_broadcast = pos_ids->shape()[0] == 1 && B != 1;
  } else if (S > pos.shape()[0]) {
    ctx.fail("the sequence length " + std::to_string(S) + " exceeds position_embedding's " +
             std::to_string(pos.shape()[0]) + " rows (positions 0 to " + std::to_string(S - 1) +
             " without position_ids)");
  }

  // Every row each token reads, checked before anything is computed.
  const int64_t tokens = B * S;
  std::vector<int64_t> wrow(static_cast<size_t>(tokens)), prow(wrow.size()), srow(wrow.size(), 0);
  const int32_t* id = ids.data<int32_t>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < S; ++t) {
      const int64_t k = b * S + t;
      wrow[k] = row_of(ctx, id[k], word.shape()[0], "input_ids", b, t, "word_embedding");
      if (pos_ids) {
        const int32_t p = pos_ids->data<int32_t>()[pos_broadcast ? t : k];
        prow[k] = row_of(ctx, p, pos.shape()[0], "position_ids", pos_broadcast ? 0 : b, t, "position_embedding");
      } else {
        prow[k] = t;
      }
      if (seg_ids) srow[k] = row_of(ctx, seg_ids->data<int32_t>()[k], seg->shape()[0], "segment_ids", b, t,
                                    "segment_embedding");
    }

  const Shape out_shape{B, S, H};
  Tensor& y = ctx.allocate_output(0, type, out_shape);
  if (ctx.output_wanted(1)) {
    Tensor& mi = ctx.allocate_output(1, DataType::Int32, {B});
    if (mask)
      for (int64_t b = 0; b < B; ++b) {
        int32_t n = 0;
        for (int64_t t = 0; t < S; ++t) n += mask->data<int32_t>()[b * S + t] == 1 ? 1 : 0;
        mi.mutable_data<int32_t>()[b] = n;
      }
  }
  Tensor* sum_out = ctx.output_wanted(2) ? &ctx.allocate_output(2, type, out_shape) : nullptr;
  if (H == 0) return;
  const uint64_t h = static_cast<uint64_t>(H);
  const double eps = ctx.attr_float("epsilon", 1e-12f);
  std::vector<double> row(h);
  dispatch<kFloats>(ctx, type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    for (int64_t k = 0; k < tokens; ++k) {
      const uint64_t w0 = static_cast<uint64_t>(wrow[k]) * h, p0 = static_cast<uint64_t>(prow[k]) * h;
      const uint64_t s0 = static_cast<uint64_t>(srow[k]) * h, base = static_cast<uint64_t>(k) * h;
      for (uint64_t i = 0; i < h; ++i) {
        double v = round_as<T>(static_cast<double>(get<T>(word, w0 + i)) + static_cast<double>(get<T>(pos, p0 + i)));
        if (seg) v = round_as<T>(v + static_cast<double>(get<T>(*seg, s0 + i)));
        row[i] = v;
        if (sum_out) put<T>(*sum_out, base + i, static_cast<C>(v));
      }
      const auto [mean, var] = mean_var(h, [&](uint64_t i) { return row[i]; });
      const double inv_std = 1.0 / std::sqrt(var + eps);
      for (uint64_t i = 0; i < h; ++i)
        put<T>(y, base + i,
               static_cast<C>((row[i] - mean) * inv_std * static_cast<double>(get<T>(gamma, i)) +
                              static_cast<double>(get<T>(beta, i))));
    }
  });
}

}  // namespace onnxscope::ref
