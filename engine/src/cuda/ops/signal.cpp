// DFT (opsets 17 and 20), STFT (17) and HannWindow / HammingWindow /
// BlackmanWindow (17) on the device (kernels/signal.h). Lengths, axes,
// steps and sizes are read on the host; the twiddles are computed there as
// the reference computes them and uploaded, so the device sums the
// reference's very factors. float32, float16, bfloat16 signals (double
// ones go to the CPU engine); a window of any numeric output type.
#include <cmath>
#include <cstring>
#include <numbers>

#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

// An integer scalar read on the host (rank 0 or one element), as the reference reads it.
int64_t host_scalar_int(const OpContext& c, size_t k, const char* what) {
  const Tensor* t = c.host(k);
  if (!t) c.fail(std::string(what) + " is required");
  if (!dtype_info(t->dtype()).is_integer) c.fail(std::string(what) + " must be an integer tensor");
  if (t->element_count() != 1 || t->rank() > 1) c.fail(std::string(what) + " must be a scalar, got " + shape_to_string(t->shape()));
  return t->element_as_int64(0);
}

// exp(sign * 2 pi i m / n) for m < n, uploaded (the reference's twiddles()).
DeviceTensor upload_twiddles(OpContext& c, int64_t n, double sign) {
  Tensor t = Tensor::zeros(DataType::Double, {2 * n});
  double* p = t.mutable_data<double>();
  for (int64_t m = 0; m < n; ++m) {
    const double a = sign * 2.0 * std::numbers::pi * double(m) / double(n);
    p[2 * m] = std::cos(a);
    p[2 * m + 1] = std::sin(a);
  }
  return c.upload(t);
}

std::optional<std::string> refuse_dft(const Graph& g, const Node& n) {
  return require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16}, 0, 1);
}

bool dft_reads_on_host(const Node&, size_t i) { return i == 1 || i == 2; }

void run_dft(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const auto rank = static_cast<int64_t>(x.shape.size());
  if (rank < 2) c.fail("input must have rank >= 2, got " + shape_to_string(x.shape));
  const int64_t comps = x.shape.back();
  if (comps != 1 && comps != 2) c.fail("the last dimension must be 1 (real) or 2 (complex), got " + std::to_string(comps));
  int64_t axis = c.opset() >= 20 ? -2 : c.attr_int("axis", 1);
  if (c.opset() >= 20 && c.host(2)) axis = host_scalar_int(c, 2, "axis");
  axis = normalize_axis(c, axis, x.shape.size());
  if (axis == rank - 1) c.fail("axis must not be the last (real/imaginary) dimension");
  const bool inverse = c.attr_int("inverse", 0) != 0, onesided = c.attr_int("onesided", 0) != 0;
  const int64_t n_in = x.shape[static_cast<size_t>(axis)];
  int64_t len = inverse && onesided ? 2 * (n_in - 1) : n_in;
  if (c.host(1)) len = host_scalar_int(c, 1, "dft_length");
  if (len <= 0) c.fail("dft_length must be positive, got " + std::to_string(len));
  const int64_t n_out = !inverse && onesided ? len / 2 + 1 : len;
  const int64_t out_comps = inverse && onesided ? 1 : 2;
  Shape out = x.shape;
  out[static_cast<size_t>(axis)] = n_out;
  out.back() = out_comps;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x.shape[static_cast<size_t>(d)];
  // The output first: its size check bounds dft_length before the host
  // builds a twiddle table of that length.
  c.output(0) = c.allocate(x.dtype, out);
  const DeviceTensor w = upload_twiddles(c, len, inverse ? 1.0 : -1.0);
  const int64_t lines = outer * inner;
  if (lines == 0 || elements_of(out) == 0) return;
  const DeviceTensor scratch = c.allocate(DataType::Double, {lines, len, 2});
  DftKernel k{};
  k.type = static_cast<ElemType>(x.dtype);
  k.n_in = n_in, k.len = len, k.n_out = n_out, k.inner = inner, k.comps = comps, k.out_comps = out_comps;
  k.inverse = inverse;
  k.irfft = inverse && onesided;
  k.x = x.data;
  k.twiddle = static_cast<const Cplx*>(w.data);
  k.scratch = static_cast<Cplx*>(scratch.data);
  k.y = c.output(0).data;
  launch(c.rt(), k, lines);
}

std::optional<std::string> refuse_stft(const Graph& g, const Node& n) {
  if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16}, 0, 1)) return r;
  if (n.inputs.size() > 2 && !n.inputs[2].empty() && declared_type(g, n.inputs[2]) != declared_type(g, n.inputs[0]))
    return std::string("the CUDA STFT takes a window of the signal's type");
  return std::nullopt;
}

bool stft_reads_on_host(const Node&, size_t i) { return i == 1 || i == 3; }

void run_stft(OpContext& c) {
  const DeviceTensor& signal = c.input(0);
  if (signal.shape.size() != 3 || (signal.shape[2] != 1 && signal.shape[2] != 2))
    c.fail("signal must have shape [batch, length, 1 or 2], got " + shape_to_string(signal.shape));
  const int64_t batch = signal.shape[0], length = signal.shape[1], comps = signal.shape[2];
  const int64_t step = host_scalar_int(c, 1, "frame_step");
  if (step <= 0) c.fail("frame_step must be positive, got " + std::to_string(step));
  const DeviceTensor* window = c.has_input(2) ? &c.input(2) : nullptr;
  int64_t frame = length;
  if (window) {
    if (window->shape.size() != 1) c.fail("window must be 1-D, got " + shape_to_string(window->shape));
    if (window->dtype != signal.dtype) c.fail("window must have the signal's type");
    frame = window->shape[0];
  }
  if (c.host(3)) {
    const int64_t v = host_scalar_int(c, 3, "frame_length");
    if (window && v != frame)
      c.fail("frame_length " + std::to_string(v) + " differs from the window length " + std::to_string(frame));
    frame = v;
  }
  if (frame <= 0 || frame > length)
    c.fail("frame_length " + std::to_string(frame) + " must be in [1, signal_length " + std::to_string(length) + "]");
  const bool onesided = c.attr_int("onesided", 1) != 0;
  if (onesided && comps == 2) c.fail("onesided output is not possible for a complex signal");
  const int64_t frames = (length - frame) / step + 1, bins = onesided ? frame / 2 + 1 : frame;
  const DeviceTensor w = upload_twiddles(c, frame, -1.0);
  c.output(0) = c.allocate(signal.dtype, {batch, frames, bins, 2});
  if (batch == 0) return;
  const DeviceTensor scratch = c.allocate(DataType::Double, {batch * frames, frame, 2});
  StftKernel k{};
  k.type = static_cast<ElemType>(signal.dtype);
  k.length = length, k.comps = comps, k.step = step, k.frame = frame, k.frames = frames, k.bins = bins;
  k.signal = signal.data;
  k.window = window ? window->data : nullptr;
  k.twiddle = static_cast<const Cplx*>(w.data);
  k.scratch = static_cast<Cplx*>(scratch.data);
  k.y = c.output(0).data;
  launch(c.rt(), k, batch * frames);
}

// The window operators' output types: every real numeric type.
bool window_output_type(int64_t t) {
  switch (static_cast<DataType>(t)) {
    case DataType::Uint8: case DataType::Uint16: case DataType::Uint32: case DataType::Uint64:
    case DataType::Int8: case DataType::Int16: case DataType::Int32: case DataType::Int64:
    case DataType::Float16: case DataType::Float: case DataType::Double: case DataType::BFloat16: return true;
    default: return false;
  }
}

std::optional<std::string> refuse_window(const Graph&, const Node& n) {
  const Attribute* t = n.attribute("output_datatype");
  if (t && !window_output_type(t->i)) return "output_datatype " + std::to_string(t->i);
  return std::nullopt;
}

bool window_reads_on_host(const Node&, size_t i) { return i == 0; }

void run_window(OpContext& c) {
  const int64_t size = host_scalar_int(c, 0, "size");
  if (size < 0) c.fail("size must be non-negative, got " + std::to_string(size));
  const int64_t type = c.attr_int("output_datatype", 1);
  if (!window_output_type(type)) c.fail("output_datatype " + std::to_string(type) + " is not supported");
  const std::string& op = c.node().op_type;
  CosineWindowKernel k{};
  k.out = static_cast<ElemType>(type);
  if (op == "HannWindow") k.terms = 2, k.a[0] = 0.5, k.a[1] = -0.5;
  else if (op == "HammingWindow") k.terms = 2, k.a[0] = 25.0 / 46.0, k.a[1] = -21.0 / 46.0;
  else k.terms = 3, k.a[0] = 0.42, k.a[1] = -0.5, k.a[2] = 0.08;
  k.period = static_cast<double>(c.attr_int("periodic", 1) != 0 ? size : size - 1);
  c.output(0) = c.allocate(static_cast<DataType>(type), {size});
  k.y = c.output(0).data;
  launch(c.rt(), k, size);
}

bool mel_reads_on_host(const Node&, size_t) { return true; }

// MelWeightMatrix (opset 17): the five scalars read on the host, the edges
// planned there as the reference plans them (core/mel_weights.h) and
// uploaded, one thread per element.
void run_mel_weight_matrix(OpContext& c) {
  const int64_t mel_bins = host_scalar_int(c, 0, "num_mel_bins");
  const int64_t dft_length = host_scalar_int(c, 1, "dft_length");
  const int64_t sample_rate = host_scalar_int(c, 2, "sample_rate");
  double hz[2] = {};
  for (size_t k = 3; k < 5; ++k) {
    const Tensor* t = c.host(k);
    const char* what = k == 3 ? "lower_edge_hertz" : "upper_edge_hertz";
    if (!t) c.fail(std::string(what) + " is required");
    if (!dtype_info(t->dtype()).is_float) c.fail(std::string(what) + " must be a float tensor");
    if (t->element_count() != 1 || t->rank() > 1) c.fail(std::string(what) + " must be a scalar, got " + shape_to_string(t->shape()));
    hz[k - 3] = t->element_as_double(0);
  }
  if (mel_bins <= 0 || dft_length <= 0 || sample_rate <= 0) c.fail("num_mel_bins, dft_length and sample_rate must be positive");
  const int64_t type = c.attr_int("output_datatype", 1);
  if (!window_output_type(type)) c.fail("output_datatype " + std::to_string(type) + " is not supported");
  const int64_t spec_bins = dft_length / 2 + 1;
  // The output first (its size check bounds num_mel_bins), then the host's edges.
  c.output(0) = c.allocate(static_cast<DataType>(type), {spec_bins, mel_bins});
  const std::vector<int64_t> edges = mel::edges(mel_bins, dft_length, sample_rate, hz[0], hz[1]);
  if (const std::optional<int64_t> j = mel::bin_outside(edges, spec_bins))
    c.fail("mel filter edge " + std::to_string(*j) + " falls outside the " + std::to_string(spec_bins) +
           " spectrogram bins (check the hertz range and sample_rate)");
  Tensor e = Tensor::zeros(DataType::Int64, {static_cast<int64_t>(edges.size())});
  std::copy(edges.begin(), edges.end(), e.mutable_data<int64_t>());
  const DeviceTensor edges_d = c.upload(e);
  MelWeightKernel k{static_cast<ElemType>(type), mel_bins, static_cast<const int64_t*>(edges_d.data), c.output(0).data};
  launch(c.rt(), k, spec_bins * mel_bins);
}

}  // namespace

void add_signal_ops(std::vector<OpDef>& t) {
  t.push_back({"MelWeightMatrix", refuse_window, run_mel_weight_matrix, OpBackend::Kernel, mel_reads_on_host});
  t.push_back({"DFT", refuse_dft, run_dft, OpBackend::Kernel, dft_reads_on_host});
  t.push_back({"STFT", refuse_stft, run_stft, OpBackend::Kernel, stft_reads_on_host});
  for (const char* w : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    t.push_back({w, refuse_window, run_window, OpBackend::Kernel, window_reads_on_host});
}

}  // namespace onnxscope::cuda
