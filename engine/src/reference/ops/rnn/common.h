// Helpers shared by the reference's recurrent layers: the problem read from the
// inputs, activations, the batched matrix-vector step and the outputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/rnn_plan.h"
#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/math/exp_f64.h"
#include "reference/ops/math/gemm_f64.h"
#include "reference/ops/real_values.h"
#include "reference/thread_scratch.h"

namespace onnxscope::ref {

// --- activation functions ------------------------------------------------------

// f(x) in double; the functions, their order and defaults: core/rnn_plan.h.
struct Activation : rnn::Activation {
  // x[i] = f(x[i]) for i < n: each value as operator() gives it.
  void apply(double* x, int64_t n) const;
  double operator()(double x) const {
    switch (kind) {
      case Relu: return !(x <= 0) ? x : 0.0;  // NaN kept, as the Relu operator
      case Tanh: return math::tanh_by_expm1(x);  // math/exp_f64.h: apply over an array, the same bits
      case Sigmoid: return math::sigmoid_by_exp(x);
      case Affine: return alpha * x + beta;
      case LeakyRelu: return x >= 0 ? x : alpha * x;
      case ThresholdedRelu: return x >= alpha ? x : 0.0;
      case ScaledTanh: return alpha * std::tanh(beta * x);
      case HardSigmoid: return std::min(std::max(alpha * x + beta, 0.0), 1.0);
      case Elu: return x >= 0 ? x : alpha * std::expm1(x);
      case Softsign: return x / (1 + std::fabs(x));
      case Softplus: return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    }
    return x;
  }
};

// --- shared set-up ---------------------------------------------------------------

// Everything a recurrent kernel needs, parsed and checked (core/rnn_plan.h),
// inputs as doubles. Index helpers hide the layout attribute.
struct RnnProblem : rnn::Plan {
  // X, W and R are read from the node's inputs where they are used (no copy
  // in double of the whole tensors); B is zero-filled when absent.
  const Tensor* X = nullptr;
  const Tensor* W = nullptr;
  const Tensor* R = nullptr;
  std::vector<double> B;
  std::vector<int64_t> seq_lens;   // per batch
  std::vector<Activation> functions;
  DataType dtype = DataType::Float;

  // The row of X (and of the input projection) that holds x_t of batch entry b.
  int64_t x_row(int64_t t, int64_t b) const { return batch_first ? b * seq + t : t * batch + b; }
  uint64_t state_index(int64_t d, int64_t b, int64_t h) const {
    return batch_first ? uint64_t((b * dirs + d) * hidden + h) : uint64_t((d * batch + b) * hidden + h);
  }
  uint64_t y_index(int64_t t, int64_t d, int64_t b, int64_t h) const {
    return batch_first ? uint64_t(((b * seq + t) * dirs + d) * hidden + h) : uint64_t(((t * dirs + d) * batch + b) * hidden + h);
  }
  double clipped(double v) const { return clip > 0 ? std::min(std::max(v, -double(clip)), double(clip)) : v; }
};

// Reads a state input (initial_h / initial_c) or zeros.
inline std::vector<double> read_state(const KernelContext& ctx, const RnnProblem& p, size_t index, const char* name) {
  const Tensor* t = ctx.optional_input(index);
  if (!t) return std::vector<double>(size_t(p.dirs * p.batch * p.hidden), 0.0);
  if (t->dtype() != p.dtype) ctx.fail(std::string(name) + " must have the type of X");
  return real_values(*t);
}

inline RnnProblem parse_problem(const KernelContext& ctx, int64_t gates, const std::vector<std::string>& default_acts) {
  RnnProblem p;
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor& R = ctx.input(2);
  real::require_float(ctx, X, "X");
  p.dtype = X.dtype();
  if (W.dtype() != p.dtype || R.dtype() != p.dtype) ctx.fail("W and R must have the type of X");
  rnn::Attributes a;
  a.direction = ctx.attr_string("direction", "forward");
  a.layout = ctx.attr_int("layout", 0);
  if (ctx.has_attr("hidden_size")) a.hidden_size = ctx.attr_int("hidden_size", 0);
  if (ctx.has_attr("clip")) a.clip = ctx.attr_float("clip", 0.0f);
  a.activations = ctx.attr_strings("activations", {});
  a.alphas = ctx.attr_floats("activation_alpha", {});
  a.betas = ctx.attr_floats("activation_beta", {});
  auto shape_of = [&](size_t i) { const Tensor* t = ctx.optional_input(i); return t ? &t->shape() : nullptr; };
  rnn::OptionalShapes more{shape_of(3), shape_of(4), shape_of(5), gates == 4 ? shape_of(6) : nullptr, gates == 4 ? shape_of(7) : nullptr};
  try {
    static_cast<rnn::Plan&>(p) = rnn::plan(a, gates, default_acts, X.shape(), W.shape(), R.shape(), more);
  } catch (const std::invalid_argument& e) {
    ctx.fail(e.what());
  }
  for (const rnn::Activation& f : p.acts) p.functions.push_back(Activation{f});
  p.X = &X;
  p.W = &W;
  p.R = &R;
  if (const Tensor* B = ctx.optional_input(3)) {
    if (B->dtype() != p.dtype) ctx.fail("B must have the type of X");
    p.B = real_values(*B);
  } else {
    p.B.assign(size_t(p.dirs * 2 * gates * p.hidden), 0.0);
  }
  p.seq_lens.assign(size_t(p.batch), p.seq);
  if (const Tensor* L = ctx.optional_input(4)) {
    p.seq_lens = int_values(ctx, *L);
    for (int64_t v : p.seq_lens)
      if (v < 0 || v > p.seq) ctx.fail("sequence_lens value " + std::to_string(v) + " outside [0, " + std::to_string(p.seq) + "]");
  }
  real::check_work(ctx, p.y_shape(), "Y");
  return p;
}

// R of every direction laid out for the matrix-vector step: its rows in
// segments (the gates a product takes at once: GRU's z and r, then h), each
// segment in panels of 32 rows (zeros past its end) in which column i's 32
// values are adjacent, so a step streams each panel once, in order. Weights
// of float, float16 or bfloat16 are kept as float (each exactly, and half
// the bytes a step streams through the cache); double weights as double.
// The panels live in the calling thread's scratch (reference/thread_scratch.h).
struct RecurrentWeights {
  static constexpr int64_t kPanel = 32;
  struct FloatPanels;
  struct DoublePanels;
  int64_t cols = 0;
  std::vector<std::pair<int64_t, int64_t>> segments;  // (first row, rows)
  std::vector<int64_t> offset;                         // [d * segments + s]: the segment's first panel in the data
  bool float_panels = true;                            // floats or doubles holds the panels
  ThreadScratch<float, FloatPanels> floats;
  ThreadScratch<double, DoublePanels> doubles;
  bool is_float() const { return float_panels; }
  int64_t panel_start(int64_t d, size_t s, int64_t q) const { return offset[size_t(d) * segments.size() + s] + q * cols * kPanel; }
  const float* panel_f(int64_t d, size_t s, int64_t q) const { return floats->data() + panel_start(d, s, q); }
  const double* panel_d(int64_t d, size_t s, int64_t q) const { return doubles->data() + panel_start(d, s, q); }
  double at(int64_t d, size_t s, int64_t q, int64_t i) const {  // value i of a panel (column i / kPanel, row i % kPanel)
    return is_float() ? static_cast<double>(panel_f(d, s, q)[i]) : panel_d(d, s, q)[i];
  }
};

inline RecurrentWeights recurrent_weights(const KernelContext& ctx, const Tensor& R, int64_t dirs, int64_t rows, int64_t cols,
                                          std::vector<std::pair<int64_t, int64_t>> segments) {
  constexpr int64_t P = RecurrentWeights::kPanel;
  RecurrentWeights w;
  w.cols = cols;
  w.segments = std::move(segments);
  int64_t size = 0;
  struct Panel {
    int64_t d, s, q;  // direction, segment, panel within the segment
  };
  std::vector<Panel> panels;
  for (int64_t d = 0; d < dirs; ++d)
    for (size_t s = 0; s < w.segments.size(); ++s) {
      w.offset.push_back(size);
      const int64_t n = (w.segments[s].second + P - 1) / P;
      size += n * P * cols;
      for (int64_t q = 0; q < n; ++q) panels.push_back({d, int64_t(s), q});
    }
  auto fill = [&](auto& data) {
    using D = typename std::decay_t<decltype(data)>::value_type;
    data.resize(size_t(std::max<int64_t>(size, 1)));
    dispatch<kFloats>(ctx, R.dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      const std::byte* const m = R.raw();
      // Panels shared out to the threads (each writes every value of its own).
      cpu::parallel_for(static_cast<int64_t>(panels.size()), std::max<int64_t>(1, 8192 / std::max<int64_t>(1, cols * P)),
                        [&](int64_t lo, int64_t hi) {
        for (int64_t k = lo; k < hi; ++k) {
          const Panel& pn = panels[size_t(k)];
          const auto [row0, n] = w.segments[size_t(pn.s)];
          D* out = data.data() + w.panel_start(pn.d, size_t(pn.s), pn.q);
          for (int64_t g = 0; g < P; ++g) {
            const int64_t row = pn.q * P + g;
            if (row >= n) {
              for (int64_t i = 0; i < cols; ++i) out[i * P + g] = D(0);
              continue;
            }
            const uint64_t first = uint64_t((pn.d * rows + row0 + row) * cols);
            for (int64_t i = 0; i < cols; ++i) out[i * P + g] = static_cast<D>(to_compute(load_at<S>(m, first + uint64_t(i))));
          }
        }
      });
    });
  };
  w.float_panels = R.dtype() != DataType::Double;
  if (w.float_panels) fill(*w.floats);
  else fill(*w.doubles);
  return w;
}

// out[b][g] = sum_i R[d, row0 + g, i] * v[b][i] for the rows g of segment s
// and each of n vectors (v and out n blocks, strides vs and os), the terms
// in order of i (each term a fused multiply-add in double, from 0.0), so a
// step of the recurrence reads the weights once per thread for all of its
// batch entries (rnn/matvec.cpp).
void matvec_n(const RecurrentWeights& w, int64_t d, size_t s, const double* v, int64_t vs, double* out, int64_t os, int64_t n);
// Its plain form (what machines without AVX-512 run), for the tests to hold the two to the same bits.
void matvec_n_plain(const RecurrentWeights& w, int64_t d, size_t s, const double* v, int64_t vs, double* out, int64_t os,
                    int64_t n);

// One step's elementwise arithmetic over n hidden values (rnn/step_math.cpp,
// vectorised; the order of operations as written, each lane as the scalar loop):
// out = clip(((a + b) + c) + d), the gates' pre-activations (x W^T, h R^T, Wb, Rb).
void gate_sums(double* out, const double* a, const double* b, const double* c, const double* d, int64_t n, double clip);
// out = clip((((a + b) + c) + d) + p * s), with an LSTM's peephole p on the cell state s.
void gate_sums_peephole(double* out, const double* a, const double* b, const double* c, const double* d, const double* p,
                        const double* s, int64_t n, double clip);
// An LSTM's cell: c = f * c + i * g (f = 1 - i with input_forget), then the
// output gate's pre-activation o = clip((((a + b) + wb) + rb) + po * c) and hc = c.
void lstm_cell(double* c, double* o, double* hc, const double* i, const double* f, const double* g, bool input_forget,
               const double* a, const double* b, const double* wb, const double* rb, const double* po, int64_t n,
               double clip);
// A GRU's state: h = (1 - z) * hnew + z * h.
void gru_state(double* h, const double* z, const double* hnew, int64_t n);
// out = a * b.
void product(double* out, const double* a, const double* b, int64_t n);

// Batch entries per thread: one contiguous range each, so each thread reads
// the weights once per step for all of its entries.
inline int64_t per_thread(int64_t batch) {
  const int64_t threads = std::max<int64_t>(1, cpu::thread_count());
  return std::max<int64_t>(1, (batch + threads - 1) / threads);
}

// The batch entries of [b0, b1) that step k of direction d processes, with
// their time index: a shorter sequence has ended, and a backward direction
// starts from each sequence's own end.
struct StepEntries {
  std::vector<int64_t> b, t;
  void at(const RnnProblem& p, int64_t d, int64_t k, int64_t b0, int64_t b1) {
    b.clear();
    t.clear();
    for (int64_t e = b0; e < b1; ++e) {
      const int64_t len = p.seq_lens[size_t(e)];
      if (k >= len) continue;
      b.push_back(e);
      t.push_back(p.backward(d) ? len - 1 - k : k);
    }
  }
  // The running entries' states (hcur: the range's states from b0, H each)
  // and their rows of the input projection (G values each, in this order:
  // StepProjection::rows), packed: where every entry of [b0, b1) runs, hcur
  // and the rows themselves; else copies in hin and wx. The states are read
  // before the step writes hcur.
  struct Packed {
    const double* h;
    const double* wx;
  };
  Packed pack(const RnnProblem& p, int64_t b0, int64_t b1, const std::vector<double>& hcur, std::vector<double>& hin,
              const double* rows, int64_t G, std::vector<double>& wx) const {
    if (static_cast<int64_t>(b.size()) == b1 - b0) return {hcur.data(), rows};  // entries b0, b0 + 1, ... in order
    const int64_t H = p.hidden;
    for (size_t j = 0; j < b.size(); ++j)
      for (int64_t k = 0; k < H; ++k) hin[j * size_t(H) + size_t(k)] = hcur[size_t((b[j] - b0) * H + k)];
    std::copy(rows, rows + static_cast<std::ptrdiff_t>(b.size()) * G, wx.begin());
    return {hin.data(), wx.data()};
  }
};

// W^T of direction d packed in double once for every thread's projections,
// where that copy is small (at most kMaxBytes: a small layer's products are
// short, and packing W for each block of steps was a tenth of its time);
// a larger W is packed a block of columns at a time by each product
// (math/gemm_f64.h), so no double copy of a large weight is made.
class InputWeights {
 public:
  InputWeights(const KernelContext& ctx, const RnnProblem& p, int64_t d, int64_t G) {
    if (G * p.input * static_cast<int64_t>(sizeof(double)) > kMaxBytes) return;
    dispatch<kFloats>(ctx, p.dtype, [&](auto tag) {
      using S = typename decltype(tag)::type;
      const math::Operand wt{p.W->raw() + d * G * p.input * static_cast<int64_t>(sizeof(S)), p.input, 1};  // rows of W
      packed_.emplace(math::Packer{&math::detail::pack_strided<S>, &wt}, G, p.input, *storage_);
    });
  }
  const math::PackedB* packed() const { return packed_ ? &*packed_ : nullptr; }

 private:
  static constexpr int64_t kMaxBytes = int64_t{4} << 20;
  struct Panels;
  ThreadScratch<double, Panels> storage_;  // kept by the calling thread between runs
  std::optional<math::PackedB> packed_;
};

// x_t W^T for the running entries of one thread's batch range [b0, b1) in
// direction d, computed by that thread a block of steps at a time (about
// kRows rows of G values): each value the same products and sums in order of
// the input index as one product over every step would give (math/gemm_f64.h:
// the blocking decides nothing), in scratch that does not grow with the
// sequence (a whole projection of 512 steps of an LSTM was 8 MB to fault in).
class StepProjection {
 public:
  StepProjection(const KernelContext& ctx, const RnnProblem& p, const InputWeights& w, int64_t d, int64_t G, int64_t b0,
                 int64_t b1)
      : ctx_(ctx), p_(p), w_(w), d_(d), G_(G), b0_(b0), b1_(b1),
        block_steps_(std::max<int64_t>(1, kRows / std::max<int64_t>(1, b1 - b0))) {}
  // Step s's rows, one per running entry in StepEntries' order; steps asked in increasing order.
  const double* rows(int64_t s) {
    if (s < s0_ || s >= s0_ + static_cast<int64_t>(start_.size())) compute(s);
    return xw_->data() + start_[size_t(s - s0_)] * G_;
  }

 private:
  // Rows of x_t a block (24: whole register tiles of 6 rows for 1, 2, 3, 4, 6 or 8 entries).
  static constexpr int64_t kRows = 24;
  void compute(int64_t s0) {
    s0_ = s0;
    start_.clear();
    x_rows_.clear();
    StepEntries e;
    for (int64_t s = s0; s < std::min(p_.seq, s0 + block_steps_); ++s) {
      start_.push_back(static_cast<int64_t>(x_rows_.size()));
      e.at(p_, d_, s, b0_, b1_);
      for (size_t j = 0; j < e.b.size(); ++j) x_rows_.push_back(p_.x_row(e.t[j], e.b[j]));
    }
    const auto rows = static_cast<int64_t>(x_rows_.size());
    xw_->resize(size_t(std::max<int64_t>(rows, 1) * G_));
    if (rows == 0) return;
    dispatch<kFloats>(ctx_, p_.dtype, [&](auto tag) {
      using S = typename decltype(tag)::type;
      const Gather a{p_.X->raw(), p_.input, x_rows_.data()};
      const math::Packer pa{&pack_gathered<S>, &a};
      if (const math::PackedB* packed = w_.packed()) return packed->multiply(pa, rows, xw_->data(), G_, math::exact_double_products<S>);
      const math::Operand wt{p_.W->raw() + d_ * G_ * p_.input * static_cast<int64_t>(sizeof(S)), p_.input, 1};  // rows of W
      double* xw = xw_->data();
      math::gemm_packed(pa, math::Packer{&math::detail::pack_strided<S>, &wt}, rows, G_, p_.input,
                        [&](int64_t i, int64_t j0, const double* v, int64_t n) { std::copy(v, v + n, xw + i * G_ + j0); },
                        math::exact_double_products<S>);
    });
  }
  // Rows of X by index (math/gemm_f64.h's Packer contract).
  struct Gather {
    const std::byte* x;
    int64_t cols;
    const int64_t* rows;
  };
  template <typename S>
  static void pack_gathered(const void* ctx, int64_t r0, int64_t rows, int64_t K, int64_t width, double* out) {
    const Gather& m = *static_cast<const Gather*>(ctx);
    for (int64_t g = 0; g * width < rows; ++g)
      for (int64_t r = 0; r < width; ++r) {
        const int64_t i = g * width + r;
        const std::byte* src = i < rows ? m.x + m.rows[r0 + i] * m.cols * static_cast<int64_t>(sizeof(S)) : nullptr;
        for (int64_t t = 0; t < K; ++t)
          out[(g * K + t) * width + r] = src ? static_cast<double>(to_compute(load_at<S>(src, static_cast<uint64_t>(t)))) : 0.0;
      }
  }

  const KernelContext& ctx_;
  const RnnProblem& p_;
  const InputWeights& w_;
  int64_t d_, G_, b0_, b1_, block_steps_;
  int64_t s0_ = -1;
  struct Rows;
  std::vector<int64_t> start_, x_rows_;
  ThreadScratch<double, Rows> xw_;
};

// The states (initial or running, [dirs, batch, hidden] in the layout) of
// direction d for batch entries [b0, b1), packed as [b1 - b0, hidden], and back.
inline void take_states(const RnnProblem& p, int64_t d, int64_t b0, int64_t b1, const std::vector<double>& from,
                 std::vector<double>& to) {
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t k = 0; k < p.hidden; ++k) to[size_t((b - b0) * p.hidden + k)] = from[p.state_index(d, b, k)];
}

inline void put_states(const RnnProblem& p, int64_t d, int64_t b0, int64_t b1, const std::vector<double>& from,
                std::vector<double>& to) {
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t k = 0; k < p.hidden; ++k) to[p.state_index(d, b, k)] = from[size_t((b - b0) * p.hidden + k)];
}

// Y, written as the steps run: each value rounded once to X's type, straight
// into the output (zeros where a sequence has ended); nothing when Y is not wanted.
class RnnY {
 public:
  RnnY(KernelContext& ctx, const RnnProblem& p) {
    if (ctx.output_count() == 0 || !ctx.output_wanted(0)) return;
    data_ = ctx.allocate_output(0, p.dtype, p.y_shape()).mutable_raw();
    dispatch<kFloats>(ctx, p.dtype, [&](auto tag) {
      using S = typename decltype(tag)::type;
      store_ = [](std::byte* y, uint64_t i, const double* v, int64_t n) {
        for (int64_t k = 0; k < n; ++k) store_at<S>(y, i + uint64_t(k), from_compute<S>(static_cast<compute_t<S>>(v[k])));
      };
    });
  }
  // Y[i + k] = v[k] for k < n (a hidden row is adjacent in either layout).
  void put_row(uint64_t i, const double* v, int64_t n) const {
    if (data_) store_(data_, i, v, n);
  }

 private:
  std::byte* data_ = nullptr;
  void (*store_)(std::byte*, uint64_t, const double*, int64_t) = nullptr;
};

// The final states Y_h (and Y_c) that are wanted.
struct RnnOutputs {
  std::vector<double> Yh, Yc;
};

inline void write_outputs(KernelContext& ctx, const RnnProblem& p, const RnnOutputs& o, bool has_c) {
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) real::store_doubles(ctx, ctx.allocate_output(1, p.dtype, p.state_shape()), o.Yh);
  if (has_c && ctx.output_count() > 2 && ctx.output_wanted(2))
    real::store_doubles(ctx, ctx.allocate_output(2, p.dtype, p.state_shape()), o.Yc);
}

}  // namespace onnxscope::ref
