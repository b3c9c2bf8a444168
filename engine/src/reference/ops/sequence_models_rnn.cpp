// Recurrent layers: RNN, GRU, LSTM (every opset; version 1's output_sequence
// attribute does not change the values and is ignored, layout appears in 14).
// Inputs are widened to double, the recurrence runs in double and each output
// is rounded once to the input type. Semantics follow the operator docs
// (activations, activation_alpha/beta, clip, sequence_lens, direction, layout,
// GRU linear_before_reset, LSTM peepholes and input_forget); onnx's Python
// reference ignores several of these.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // products and sums round as written
#endif
#include <algorithm>
#include <stdexcept>
#include <cmath>
#include <string>
#include <vector>

#include "core/rnn_plan.h"
#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"
#include "reference/ops/ops.h"
#include "reference/ops/sequence_models_parts.h"

namespace onnxscope::ref {
namespace {

using seqm::sigmoid;

// --- activation functions ------------------------------------------------------

// f(x) in double; the functions, their order and defaults: core/rnn_plan.h.
struct Activation : rnn::Activation {
  double operator()(double x) const {
    switch (kind) {
      case Relu: return x > 0 ? x : 0.0;
      case Tanh: return std::tanh(x);
      case Sigmoid: return sigmoid(x);
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
  std::vector<double> X, W, R, B;  // B is zero-filled when absent
  std::vector<int64_t> seq_lens;   // per batch
  std::vector<Activation> functions;
  DataType dtype = DataType::Float;

  double x(int64_t t, int64_t b, int64_t i) const {
    return batch_first ? X[(b * seq + t) * input + i] : X[(t * batch + b) * input + i];
  }
  uint64_t state_index(int64_t d, int64_t b, int64_t h) const {
    return batch_first ? uint64_t((b * dirs + d) * hidden + h) : uint64_t((d * batch + b) * hidden + h);
  }
  uint64_t y_index(int64_t t, int64_t d, int64_t b, int64_t h) const {
    return batch_first ? uint64_t(((b * seq + t) * dirs + d) * hidden + h) : uint64_t(((t * dirs + d) * batch + b) * hidden + h);
  }
  double clipped(double v) const { return clip > 0 ? std::min(std::max(v, -double(clip)), double(clip)) : v; }
};

// Reads a state input (initial_h / initial_c) or zeros.
std::vector<double> read_state(const KernelContext& ctx, const RnnProblem& p, size_t index, const char* name) {
  const Tensor* t = ctx.optional_input(index);
  if (!t) return std::vector<double>(size_t(p.dirs * p.batch * p.hidden), 0.0);
  if (t->dtype() != p.dtype) ctx.fail(std::string(name) + " must have the type of X");
  return real_values(*t);
}

RnnProblem parse_problem(const KernelContext& ctx, int64_t gates, const std::vector<std::string>& default_acts) {
  RnnProblem p;
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor& R = ctx.input(2);
  seqm::require_float(ctx, X, "X");
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
  p.X = real_values(X);
  p.W = real_values(W);
  p.R = real_values(R);
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
  seqm::check_work(ctx, p.y_shape(), "Y");
  return p;
}

// A (dirs, rows, cols) matrix stored by columns, (dirs, cols, rows): a
// product with v then runs along the rows, one vector of outputs per
// element of v, instead of one dot product per row.
std::vector<double> by_columns(const std::vector<double>& M, int64_t dirs, int64_t rows, int64_t cols) {
  std::vector<double> t(M.size());
  for (int64_t d = 0; d < dirs && !M.empty(); ++d)
    for (int64_t g = 0; g < rows; ++g)
      for (int64_t i = 0; i < cols; ++i) t[size_t((d * cols + i) * rows + g)] = M[size_t((d * rows + g) * cols + i)];
  return t;
}

// out[b][g] = sum_i M[d, row0 + g, i] * v[b][i] for g < rows and each of n
// vectors (v and out n blocks, strides vs and os), the terms in order of i
// (each product and sum rounded in double): blocks of a by_columns matrix
// times v, each column of M read once for all n, so a
// step of the recurrence reads the weights once per thread instead of once
// per batch entry. Four columns go into each output while it is in a
// register (the four adds in order of i, as the plain loop makes them).
__attribute__((target_clones("avx512f", "avx2", "default")))
void matvec_n(const std::vector<double>& MT, int64_t d, int64_t total_rows, int64_t row0, int64_t rows, int64_t cols,
              const double* v, int64_t vs, double* out, int64_t os, int64_t n) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < rows; ++g) out[b * os + g] = 0.0;
  auto col = [&](int64_t i) { return MT.data() + (d * cols + i) * total_rows + row0; };
  int64_t i = 0;
  for (; i + 4 <= cols; i += 4) {
    const double *c0 = col(i), *c1 = col(i + 1), *c2 = col(i + 2), *c3 = col(i + 3);
    for (int64_t b = 0; b < n; ++b) {
      const double* vb = v + b * vs + i;
      const double v0 = vb[0], v1 = vb[1], v2 = vb[2], v3 = vb[3];
      double* o = out + b * os;
      for (int64_t g = 0; g < rows; ++g) {
        double acc = o[g];
        const double p0 = c0[g] * v0;
        acc = acc + p0;
        const double p1 = c1[g] * v1;
        acc = acc + p1;
        const double p2 = c2[g] * v2;
        acc = acc + p2;
        const double p3 = c3[g] * v3;
        acc = acc + p3;
        o[g] = acc;
      }
    }
  }
  for (; i < cols; ++i) {
    const double* c0 = col(i);
    for (int64_t b = 0; b < n; ++b) {
      const double vi = v[b * vs + i];
      double* o = out + b * os;
      for (int64_t g = 0; g < rows; ++g) {
        const double p = c0[g] * vi;
        o[g] = o[g] + p;
      }
    }
  }
}

// Batch entries per thread: one contiguous range each, so each thread reads
// the weights once per step for all of its entries.
int64_t per_thread(int64_t batch) {
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
  // Packs the running entries' inputs x_t and states (hcur: the range's
  // states from b0, H each) into xt and hin, in that order.
  void pack(const RnnProblem& p, int64_t b0, const std::vector<double>& hcur, std::vector<double>& xt,
            std::vector<double>& hin) const {
    const int64_t H = p.hidden;
    for (size_t j = 0; j < b.size(); ++j) {
      for (int64_t i = 0; i < p.input; ++i) xt[j * size_t(p.input) + size_t(i)] = p.x(t[j], b[j], i);
      for (int64_t k = 0; k < H; ++k) hin[j * size_t(H) + size_t(k)] = hcur[size_t((b[j] - b0) * H + k)];
    }
  }
};

// The states (initial or running, [dirs, batch, hidden] in the layout) of
// direction d for batch entries [b0, b1), packed as [b1 - b0, hidden], and back.
void take_states(const RnnProblem& p, int64_t d, int64_t b0, int64_t b1, const std::vector<double>& from,
                 std::vector<double>& to) {
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t k = 0; k < p.hidden; ++k) to[size_t((b - b0) * p.hidden + k)] = from[p.state_index(d, b, k)];
}
void put_states(const RnnProblem& p, int64_t d, int64_t b0, int64_t b1, const std::vector<double>& from,
                std::vector<double>& to) {
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t k = 0; k < p.hidden; ++k) to[p.state_index(d, b, k)] = from[size_t((b - b0) * p.hidden + k)];
}

// Allocates the outputs Y, Y_h (and Y_c) that are wanted.
struct RnnOutputs {
  std::vector<double> Y, Yh, Yc;
};
void write_outputs(KernelContext& ctx, const RnnProblem& p, const RnnOutputs& o, bool has_c) {
  if (ctx.output_count() > 0 && ctx.output_wanted(0)) seqm::store_doubles(ctx, ctx.allocate_output(0, p.dtype, p.y_shape()), o.Y);
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) seqm::store_doubles(ctx, ctx.allocate_output(1, p.dtype, p.state_shape()), o.Yh);
  if (has_c && ctx.output_count() > 2 && ctx.output_wanted(2))
    seqm::store_doubles(ctx, ctx.allocate_output(2, p.dtype, p.state_shape()), o.Yc);
}

// --- RNN -----------------------------------------------------------------------
// Ht = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Wbi + Rbi)
void RNN(KernelContext& ctx) {
  RnnProblem p = parse_problem(ctx, 1, {"Tanh"});
  const std::vector<double> WT = by_columns(p.W, p.dirs, p.hidden, p.input), RT = by_columns(p.R, p.dirs, p.hidden, p.hidden);
  const std::vector<Activation>& acts = p.functions;
  const int64_t H = p.hidden;
  std::vector<double> h = read_state(ctx, p, 5, "initial_h");
  RnnOutputs o;
  o.Y.assign(size_t(p.seq * p.dirs * p.batch * H), 0.0);
  for (int64_t d = 0; d < p.dirs; ++d) {
    const Activation& f = acts[size_t(d)];
    const double* Wb = p.B.data() + d * 2 * H;
    const double* Rb = Wb + H;
    // Batch entries are independent: each is computed by one thread, in one order.
    cpu::parallel_for(p.batch, per_thread(p.batch), [&](int64_t b0, int64_t b1) {
      const int64_t nb = b1 - b0;
      std::vector<double> xt(size_t(nb * p.input)), wx(size_t(nb * H)), rh(size_t(nb * H)), hcur(size_t(nb * H)),
          hin(size_t(nb * H));
      take_states(p, d, b0, b1, h, hcur);
      StepEntries step;
      for (int64_t s = 0; s < p.seq; ++s) {
        step.at(p, d, s, b0, b1);
        const int64_t n = static_cast<int64_t>(step.b.size());
        if (n == 0) break;
        step.pack(p, b0, hcur, xt, hin);
        matvec_n(WT, d, H, 0, H, p.input, xt.data(), p.input, wx.data(), H, n);
        matvec_n(RT, d, H, 0, H, H, hin.data(), H, rh.data(), H, n);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t b = step.b[size_t(j)], t = step.t[size_t(j)];
          double* hb = hcur.data() + (b - b0) * H;
          for (int64_t k = 0; k < H; ++k) {
            const size_t q = size_t(j * H + k);
            hb[k] = f(p.clipped(wx[q] + rh[q] + Wb[k] + Rb[k]));
            o.Y[p.y_index(t, d, b, k)] = hb[k];
          }
        }
      }
      put_states(p, d, b0, b1, hcur, h);
    });
  }
  o.Yh = std::move(h);
  write_outputs(ctx, p, o, false);
}

// --- GRU -----------------------------------------------------------------------
// Gates in W/R/B are ordered z, r, h.
void GRU(KernelContext& ctx) {
  RnnProblem p = parse_problem(ctx, 3, {"Sigmoid", "Tanh"});
  const std::vector<double> WT = by_columns(p.W, p.dirs, 3 * p.hidden, p.input), RT = by_columns(p.R, p.dirs, 3 * p.hidden, p.hidden);
  const std::vector<Activation>& acts = p.functions;
  const bool linear_before_reset = ctx.attr_int("linear_before_reset", 0) != 0;
  const int64_t H = p.hidden;
  std::vector<double> h = read_state(ctx, p, 5, "initial_h");
  RnnOutputs o;
  o.Y.assign(size_t(p.seq * p.dirs * p.batch * H), 0.0);
  for (int64_t d = 0; d < p.dirs; ++d) {
    const Activation& f = acts[size_t(2 * d)];
    const Activation& g = acts[size_t(2 * d + 1)];
    const double* Wb = p.B.data() + d * 6 * H;  // Wbz, Wbr, Wbh
    const double* Rb = Wb + 3 * H;                // Rbz, Rbr, Rbh
    // Batch entries are independent: each is computed by one thread, in one order.
    cpu::parallel_for(p.batch, per_thread(p.batch), [&](int64_t b0, int64_t b1) {
      const int64_t nb = b1 - b0, G = 3 * H;
      std::vector<double> xt(size_t(nb * p.input)), wx(size_t(nb * G)), rh(size_t(nb * G)), hcur(size_t(nb * H)),
          hin(size_t(nb * H)), rhid(size_t(nb * H)), rmul(size_t(nb * H)), z(size_t(nb * H)), r(size_t(nb * H));
      take_states(p, d, b0, b1, h, hcur);
      StepEntries step;
      for (int64_t s = 0; s < p.seq; ++s) {
        step.at(p, d, s, b0, b1);
        const int64_t n = static_cast<int64_t>(step.b.size());
        if (n == 0) break;
        step.pack(p, b0, hcur, xt, hin);
        matvec_n(WT, d, G, 0, G, p.input, xt.data(), p.input, wx.data(), G, n);
        matvec_n(RT, d, G, 0, 2 * H, H, hin.data(), H, rh.data(), G, n);  // Rz, Rr rows
        for (int64_t j = 0; j < n; ++j) {
          const double* wxj = wx.data() + j * G;
          const double* rhj = rh.data() + j * G;
          for (int64_t k = 0; k < H; ++k) {
            z[size_t(j * H + k)] = f(p.clipped(wxj[k] + rhj[k] + Wb[k] + Rb[k]));
            r[size_t(j * H + k)] = f(p.clipped(wxj[H + k] + rhj[H + k] + Wb[H + k] + Rb[H + k]));
          }
        }
        if (linear_before_reset) {
          // ht = g(Xt*(Wh^T) + rt (.) (Ht-1*(Rh^T) + Rbh) + Wbh)
          matvec_n(RT, d, G, 2 * H, H, H, hin.data(), H, rhid.data(), H, n);
          for (int64_t q = 0; q < n * H; ++q)
            rhid[size_t(q)] = r[size_t(q)] * (rhid[size_t(q)] + Rb[2 * H + q % H]);
        } else {
          // ht = g(Xt*(Wh^T) + (rt (.) Ht-1)*(Rh^T) + Rbh + Wbh)
          for (int64_t q = 0; q < n * H; ++q) rmul[size_t(q)] = r[size_t(q)] * hin[size_t(q)];
          matvec_n(RT, d, G, 2 * H, H, H, rmul.data(), H, rhid.data(), H, n);
          for (int64_t q = 0; q < n * H; ++q) rhid[size_t(q)] += Rb[2 * H + q % H];
        }
        for (int64_t j = 0; j < n; ++j) {
          const int64_t b = step.b[size_t(j)], t = step.t[size_t(j)];
          double* hb = hcur.data() + (b - b0) * H;
          for (int64_t k = 0; k < H; ++k) {
            const size_t q = size_t(j * H + k);
            const double ht = g(p.clipped(wx[size_t(j * G + 2 * H + k)] + rhid[q] + Wb[2 * H + k]));
            hb[k] = (1 - z[q]) * ht + z[q] * hb[k];
            o.Y[p.y_index(t, d, b, k)] = hb[k];
          }
        }
      }
      put_states(p, d, b0, b1, hcur, h);
    });
  }
  o.Yh = std::move(h);
  write_outputs(ctx, p, o, false);
}

// --- LSTM ----------------------------------------------------------------------
// Gates in W/R/B are ordered i, o, f, c; peepholes P are ordered i, o, f.
void LSTM(KernelContext& ctx) {
  RnnProblem p = parse_problem(ctx, 4, {"Sigmoid", "Tanh", "Tanh"});
  const std::vector<double> WT = by_columns(p.W, p.dirs, 4 * p.hidden, p.input), RT = by_columns(p.R, p.dirs, 4 * p.hidden, p.hidden);
  const std::vector<Activation>& acts = p.functions;
  const bool input_forget = ctx.attr_int("input_forget", 0) != 0;
  const int64_t H = p.hidden;
  std::vector<double> h = read_state(ctx, p, 5, "initial_h");
  std::vector<double> c = read_state(ctx, p, 6, "initial_c");
  std::vector<double> P(size_t(p.dirs * 3 * H), 0.0);
  if (const Tensor* Pt = ctx.optional_input(7)) {
    if (Pt->dtype() != p.dtype) ctx.fail("P must have the type of X");
    P = real_values(*Pt);
  }
  RnnOutputs o;
  o.Y.assign(size_t(p.seq * p.dirs * p.batch * H), 0.0);
  for (int64_t d = 0; d < p.dirs; ++d) {
    const Activation& f = acts[size_t(3 * d)];
    const Activation& g = acts[size_t(3 * d + 1)];
    const Activation& hact = acts[size_t(3 * d + 2)];
    const double* Wb = p.B.data() + d * 8 * H;
    const double* Rb = Wb + 4 * H;
    const double* Pi = P.data() + d * 3 * H;
    const double* Po = Pi + H;
    const double* Pf = Pi + 2 * H;
    // Batch entries are independent: each is computed by one thread, in one order.
    cpu::parallel_for(p.batch, per_thread(p.batch), [&](int64_t b0, int64_t b1) {
      const int64_t nb = b1 - b0, G = 4 * H;
      std::vector<double> xt(size_t(nb * p.input)), wx(size_t(nb * G)), rh(size_t(nb * G)), hcur(size_t(nb * H)),
          ccur(size_t(nb * H)), hin(size_t(nb * H));
      take_states(p, d, b0, b1, h, hcur);
      take_states(p, d, b0, b1, c, ccur);
      StepEntries step;
      for (int64_t s = 0; s < p.seq; ++s) {
        step.at(p, d, s, b0, b1);
        const int64_t n = static_cast<int64_t>(step.b.size());
        if (n == 0) break;
        step.pack(p, b0, hcur, xt, hin);  // the running entries' inputs and states
        matvec_n(WT, d, G, 0, G, p.input, xt.data(), p.input, wx.data(), G, n);
        matvec_n(RT, d, G, 0, G, H, hin.data(), H, rh.data(), G, n);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t b = step.b[size_t(j)], t = step.t[size_t(j)];
          double* hb = hcur.data() + (b - b0) * H;
          double* cb = ccur.data() + (b - b0) * H;
          for (int64_t k = 0; k < H; ++k) {
            auto pre = [&](int64_t gate) {
              const size_t q = size_t(gate * H + k);
              return wx[size_t(j * G) + q] + rh[size_t(j * G) + q] + Wb[q] + Rb[q];
            };
            const double cprev = cb[k];
            const double it = f(p.clipped(pre(0) + Pi[k] * cprev));
            // input_forget couples the gates: the forget gate is 1 - it.
            const double ft = input_forget ? 1 - it : f(p.clipped(pre(2) + Pf[k] * cprev));
            const double ct = g(p.clipped(pre(3)));
            const double Ct = ft * cprev + it * ct;
            const double ot = f(p.clipped(pre(1) + Po[k] * Ct));
            cb[k] = Ct;
            hb[k] = ot * hact(Ct);
            o.Y[p.y_index(t, d, b, k)] = hb[k];
          }
        }
      }
      put_states(p, d, b0, b1, hcur, h);
      put_states(p, d, b0, b1, ccur, c);
    });
  }
  o.Yh = std::move(h);
  o.Yc = std::move(c);
  write_outputs(ctx, p, o, true);
}

}  // namespace

void register_sequence_models_rnn_ops(KernelRegistry& r) {
  r.add(KernelDef{"", "RNN", 1, INT_MAX, "reference", RNN, nullptr});
  r.add(KernelDef{"", "GRU", 1, INT_MAX, "reference", GRU, nullptr});
  r.add(KernelDef{"", "LSTM", 1, INT_MAX, "reference", LSTM, nullptr});
}

}  // namespace onnxscope::ref
