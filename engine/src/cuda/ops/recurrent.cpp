// RNN, GRU and LSTM (float32, and float16 / bfloat16 through it; every
// opset and attribute the reference takes) as GEMMs and one gate kernel per
// step (kernels/recurrent.h):
//  - X·W^T for every step and both directions, one strided-batched GEMM;
//  - per step, h·R^T for both directions, one strided-batched GEMM (GRU
//    without linear_before_reset: the z and r rows, then a second GEMM of
//    (r (.) h)·Rh^T), then the gate kernel, which updates h (and c) in place
//    and writes Y.
// States live as [dirs, batch, hidden]; layout 1's batch-first states are
// copied in and out. The problem and its checks are the reference's
// (core/rnn_plan.h). sequence_lens are read on the device: a value outside
// [0, seq] is reported after the run, as the reference refuses it.
#include <stdexcept>

#include "core/rnn_plan.h"
#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

struct Recurrent {
  int64_t gates;
  std::vector<std::string> default_acts;
  size_t state_inputs;  // 1 (initial_h) or 2 (initial_h, initial_c)
};

const Recurrent& recurrent_of(const std::string& op) {
  static const Recurrent rnn{1, {"Tanh"}, 1}, gru{3, {"Sigmoid", "Tanh"}, 1}, lstm{4, {"Sigmoid", "Tanh", "Tanh"}, 2};
  return op == "RNN" ? rnn : op == "GRU" ? gru : lstm;
}

std::optional<std::string> refuse_recurrent(const Graph& g, const Node& n) {
  if (n.inputs.size() < 3) return n.op_type + " takes X, W and R";
  if (auto r = require_one_real_type(g, n, 0, 4)) return r;  // X, W, R, B
  if (auto r = require_types(g, n, {DataType::Int32}, 4, 1)) return r;
  for (size_t i = 5; i < n.inputs.size(); ++i)  // initial_h, initial_c, P
    if (!n.inputs[i].empty() && declared_type(g, n.inputs[i]) != declared_type(g, n.inputs[0]))
      return "the CUDA " + n.op_type + " takes initial states and peepholes of X's type";
  return std::nullopt;
}

// Copies a state between the kernel's [dirs, batch, hidden] and the
// layout's (batch-first: [batch, dirs, hidden]).
void copy_state(OpContext& c, const rnn::Plan& p, const void* from, void* to, bool into_kernel_layout) {
  StridedCopy s;
  const int64_t h = p.hidden;
  if (!p.batch_first) {
    s.dims = {p.dirs * p.batch * h};
    s.in_stride = s.out_stride = {1};
  } else {
    s.dims = {p.dirs, p.batch, h};  // walked in the kernel's order
    const std::vector<int64_t> kernel = {p.batch * h, h, 1}, batch_first = {h, p.dirs * h, 1};
    s.in_stride = into_kernel_layout ? batch_first : kernel;
    s.out_stride = into_kernel_layout ? kernel : batch_first;
  }
  strided_copy(c, DataType::Float, s, from, to);
}

RecurrentActivation device_activation(const rnn::Activation& a) {
  RecurrentActivation r;
  r.kind = static_cast<int>(a.kind);
  r.alpha = static_cast<float>(a.alpha);
  r.beta = static_cast<float>(a.beta);
  return r;
}

void recurrent_f32(OpContext& c) {
  const Recurrent& kind = recurrent_of(c.node().op_type);
  const DeviceTensor& x = c.input(0);
  const DeviceTensor& w = c.input(1);
  const DeviceTensor& r = c.input(2);
  // Read by the types the kernels assume: a value of another (a declaration that lies) would be read past its end.
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{6}, size_t{7}})
    if (c.has_input(i) && c.input(i).dtype != DataType::Float)
      c.fail("input " + std::to_string(i) + " must be float, got " + std::string(dtype_name(c.input(i).dtype)));
  if (c.has_input(4) && c.input(4).dtype != DataType::Int32)
    c.fail("sequence_lens must be int32, got " + std::string(dtype_name(c.input(4).dtype)));
  auto shape_of = [&](size_t i) { return c.has_input(i) ? &c.input(i).shape : nullptr; };
  rnn::Attributes a;
  a.direction = c.attr_string("direction", "forward");
  a.layout = c.attr_int("layout", 0);
  if (c.node().attribute("hidden_size")) a.hidden_size = c.attr_int("hidden_size", 0);
  if (c.node().attribute("clip")) a.clip = c.attr_float("clip", 0.f);
  if (const Attribute* acts = c.node().attribute("activations")) a.activations = acts->strings;
  if (const Attribute* al = c.node().attribute("activation_alpha")) a.alphas = al->floats;
  if (const Attribute* be = c.node().attribute("activation_beta")) a.betas = be->floats;
  const bool lstm = kind.gates == 4;
  const rnn::OptionalShapes more{shape_of(3), shape_of(4), shape_of(5), lstm ? shape_of(6) : nullptr, lstm ? shape_of(7) : nullptr};
  rnn::Plan p;
  try {
    p = rnn::plan(a, kind.gates, kind.default_acts, x.shape, w.shape, r.shape, more);
  } catch (const std::invalid_argument& e) {
    c.fail(e.what());
  }
  const int64_t H = p.hidden, G = p.gates, rows = p.seq * p.batch;
  const Shape state = {p.dirs, p.batch, H};
  // Outputs, and the states (Y_h's and Y_c's memory when the layout is the kernel's).
  const bool want_y = c.wants_output(0), want_h = c.wants_output(1), want_c = lstm && c.wants_output(2);
  if (want_y) c.output(0) = c.allocate(DataType::Float, p.y_shape());
  if (want_h) c.output(1) = c.allocate(DataType::Float, p.state_shape());
  if (want_c) c.output(2) = c.allocate(DataType::Float, p.state_shape());
  if (elements_of(state) == 0) return;  // no batch or no hidden units: every output is empty
  if (want_y) c.rt().zero(c.output(0).data, bytes_of(DataType::Float, p.y_shape()));
  auto state_buffer = [&](bool wanted, size_t out, DeviceTensor& scratch) -> float* {
    if (wanted && !p.batch_first) return static_cast<float*>(c.output(out).data);
    scratch = c.allocate(DataType::Float, state);
    return static_cast<float*>(scratch.data);
  };
  DeviceTensor h_scratch, c_scratch;
  float* h = state_buffer(want_h, 1, h_scratch);
  float* cs = lstm ? state_buffer(want_c, 2, c_scratch) : nullptr;
  for (size_t k = 0; k < kind.state_inputs; ++k) {
    float* s = k == 0 ? h : cs;
    if (c.has_input(5 + k)) copy_state(c, p, c.input(5 + k).data, s, true);
    else c.rt().zero(s, bytes_of(DataType::Float, state));
  }

  // X·W^T: [dirs, seq * batch, G * H].
  const DeviceTensor xw = c.allocate(DataType::Float, {p.dirs, rows, G * H});
  if (p.input == 0 || rows == 0) c.rt().zero(xw.data, bytes_of(DataType::Float, xw.shape));
  else
    row_major_gemm(c, static_cast<const float*>(x.data), static_cast<const float*>(w.data), static_cast<float*>(xw.data), rows,
                   p.input, G * H, false, true, 1.f, 0.f, p.dirs, 0, G * H * p.input, nullptr, c.half_constant(1));

  const bool gru_split = G == 3 && c.attr_int("linear_before_reset", 0) == 0;
  RecurrentStepKernel k{};
  k.cell = G == 1 ? RecurrentCell::Rnn : G == 4 ? RecurrentCell::Lstm : gru_split ? RecurrentCell::GruGates : RecurrentCell::GruLinear;
  k.seq = p.seq;
  k.batch = p.batch;
  k.hidden = H;
  k.dirs = p.dirs;
  k.gates = G;
  k.batch_first = p.batch_first;
  k.reverse_only = p.reverse_only;
  k.input_forget = lstm && c.attr_int("input_forget", 0) != 0;
  k.clip = p.clip;
  const size_t per_dir = kind.default_acts.size();
  for (int64_t d = 0; d < p.dirs; ++d)
    for (size_t j = 0; j < per_dir; ++j) k.act[d][j] = device_activation(p.acts[static_cast<size_t>(d) * per_dir + j]);
  k.xw = static_cast<const float*>(xw.data);
  k.rh_width = gru_split ? 2 * H : G * H;
  const DeviceTensor rh = c.allocate(DataType::Float, {p.dirs, p.batch, k.rh_width});
  k.rh = static_cast<const float*>(rh.data);
  k.bias = c.has_input(3) ? static_cast<const float*>(c.input(3).data) : nullptr;
  k.peephole = lstm && c.has_input(7) ? static_cast<const float*>(c.input(7).data) : nullptr;
  k.lengths = c.has_input(4) ? static_cast<const int32_t*>(c.input(4).data) : nullptr;
  k.h = h;
  k.c = cs;
  k.y = want_y ? static_cast<float*>(c.output(0).data) : nullptr;
  const FaultLog::Site site = c.fault_site(FaultKind::Length);
  k.fault = site.record;
  k.site = site.id;
  DeviceTensor z, reset_h, rh2;
  if (gru_split) {
    z = c.allocate(DataType::Float, state);
    reset_h = c.allocate(DataType::Float, state);
    rh2 = c.allocate(DataType::Float, state);
    k.z = static_cast<float*>(z.data);
    k.reset_h = static_cast<float*>(reset_h.data);
  }
  const auto* rw = static_cast<const float*>(r.data);
  const void* rw_half = c.half_constant(2);
  const auto* rw_half_h = rw_half ? static_cast<const uint16_t*>(rw_half) + 2 * H * H : nullptr;
  const int64_t items = p.dirs * p.batch * H;
  for (int64_t step = 0; step < p.seq; ++step) {
    k.step = step;
    // h·R^T for both directions (R's first rh_width rows of each direction).
    row_major_gemm(c, h, rw, static_cast<float*>(rh.data), p.batch, H, k.rh_width, false, true, 1.f, 0.f, p.dirs, p.batch * H,
                   G * H * H, nullptr, rw_half);
    launch(c.rt(), k, items);
    if (!gru_split) continue;
    RecurrentStepKernel second = k;
    second.cell = RecurrentCell::GruHidden;
    second.rh = static_cast<const float*>(rh2.data);
    second.rh_width = H;
    row_major_gemm(c, k.reset_h, rw + 2 * H * H, static_cast<float*>(rh2.data), p.batch, H, H, false, true, 1.f, 0.f, p.dirs,
                   p.batch * H, G * H * H, nullptr, rw_half_h);
    launch(c.rt(), second, items);
  }
  if (want_h && p.batch_first) copy_state(c, p, h, c.output(1).data, false);
  if (want_c && p.batch_first) copy_state(c, p, cs, c.output(2).data, false);
}

// float16 / bfloat16 through float32 (the reference runs the recurrence in
// double and rounds each output once).
void run_recurrent(OpContext& c) { run_on_float32(c, recurrent_f32); }

}  // namespace

void add_recurrent_ops(std::vector<OpDef>& t) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) t.push_back({op, refuse_recurrent, run_recurrent, OpBackend::Gemm});
}

}  // namespace onnxscope::cuda
