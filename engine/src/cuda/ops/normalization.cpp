// BatchNormalization (inference), LayerNormalization, GroupNormalization,
// InstanceNormalization, RMSNormalization, Softmax and LogSoftmax
// (kernels/rows.h, kernels/elementwise.h); Hardmax, LpNormalization and LRN
// (kernels/lines.h); float32, and every one of them on float16 / bfloat16
// through float32 (run_on_float32), rounded once.
#include <algorithm>

#include "cuda/ops/op_table.h"
#include "cuda/shapes.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_batchnorm(const Graph& g, const Node& n) {
  if (n.inputs.size() != 5) return std::string("BatchNormalization takes five inputs");
  if (n.outputs.size() > 1) return std::string("the CUDA BatchNormalization runs inference only (one output)");
  if (const Attribute* t = n.attribute("training_mode"); t && t->i != 0) return std::string("training_mode=1");
  // From opset 15 scale and B (T1) and the statistics (T2) may differ from X's type.
  return require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16});
}

void batchnorm_f32(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  if (x.shape.size() < 2) c.fail("the input " + shape_to_string(x.shape) + " has no channel dim");
  const int64_t channels = x.shape[1];
  for (size_t i = 1; i < 5; ++i)
    if (elements_of(c.input(i).shape) != static_cast<uint64_t>(channels))
      c.fail("input " + std::to_string(i) + " " + shape_to_string(c.input(i).shape) + " does not have " + std::to_string(channels) + " channels");
  DeviceTensor factor = c.allocate(DataType::Float, {channels});
  DeviceTensor offset = c.allocate(DataType::Float, {channels});
  BatchNormFoldKernel fold{c.attr_float("epsilon", 1e-5f),
                           static_cast<const float*>(c.input(1).data),
                           static_cast<const float*>(c.input(2).data),
                           static_cast<const float*>(c.input(3).data),
                           static_cast<const float*>(c.input(4).data),
                           static_cast<float*>(factor.data),
                           static_cast<float*>(offset.data)};
  launch(c.rt(), fold, channels);
  int64_t inner = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) inner *= x.shape[d];
  c.output(0) = c.allocate(DataType::Float, x.shape);
  ChannelAffineKernel k{inner, channels, static_cast<const float*>(x.data), static_cast<const float*>(factor.data),
                        static_cast<const float*>(offset.data), static_cast<float*>(c.output(0).data)};
  launch(c.rt(), k, static_cast<int64_t>(elements_of(x.shape)));
}

std::optional<std::string> refuse_layernorm(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return std::string("LayerNormalization takes X and Scale");
  if (const Attribute* s = n.attribute("stash_type"); s && s->i != 1) return std::string("stash_type other than float");
  if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16})) return r;
  for (size_t i = 1; i < n.inputs.size() && i < 3; ++i)
    if (!n.inputs[i].empty() && declared_type(g, n.inputs[i]) != declared_type(g, n.inputs[0]))
      return std::string("the CUDA LayerNormalization takes Scale and B of X's type");
  return std::nullopt;
}

// Scale and bias as the kernels read them: one element (step 0) or the
// normalized dims in full (step 1). Any other shape that broadcasts to the
// normalized dims (as the spec's Mul and Add broadcast: [1, C, 1] on [N, C,
// W] normalized from axis 0) is expanded to them first.
struct Param {
  const float* data = nullptr;
  int64_t step = 0;
  DeviceTensor expanded;  // held until the kernel has run
};
Param param(OpContext& c, size_t input, const Shape& x, size_t axis, int64_t n) {
  const DeviceTensor& t = c.input(input);
  const Shape& full = t.shape;
  const uint64_t count = elements_of(full);
  if (count == 1) return {static_cast<const float*>(t.data), 0, {}};
  Shape s(std::find_if(full.begin(), full.end(), [](int64_t d) { return d != 1; }), full.end());
  bool trailing = count == static_cast<uint64_t>(n) && s.size() <= x.size() - axis;
  for (size_t i = 0; trailing && i < s.size(); ++i) trailing = s[s.size() - 1 - i] == x[x.size() - 1 - i];
  if (trailing) return {static_cast<const float*>(t.data), 1, {}};
  const Shape normalized(x.begin() + static_cast<std::ptrdiff_t>(axis), x.end());
  const Shape shapes[2] = {full, normalized};
  const auto plan = broadcast_plan(shapes);
  if (!plan || plan->out != normalized)
    c.fail("input " + std::to_string(input) + " " + shape_to_string(full) + " does not broadcast to the normalized dims " +
           shape_to_string(normalized) + " of " + shape_to_string(x));
  Param p{nullptr, 1, c.allocate(DataType::Float, normalized)};
  broadcast_into(c, t, normalized, p.expanded.data);
  p.data = static_cast<const float*>(p.expanded.data);
  return p;
}

// `type`: X's (the normalized values are rounded to float16 or bfloat16
// first). `skip`: FusedAddLayerNorm's B, added to X first (X's shape), its
// Scale and Bias then inputs 2 and 3; else LayerNormalization's 1 and 2.
void layernorm_f32(OpContext& c, DataType type, const DeviceTensor* skip = nullptr) {
  const DeviceTensor& x = c.input(0);
  const size_t scale_at = skip ? 2 : 1;
  if (skip && skip->shape != x.shape)
    c.fail("A " + shape_to_string(x.shape) + " and B " + shape_to_string(skip->shape) + " differ in shape");
  if (x.shape.empty()) c.fail("a scalar has nothing to normalize");
  const auto axis = static_cast<size_t>(normalize_axis(c, c.attr_int("axis", -1), x.shape.size()));
  int64_t rows = 1, n = 1;
  for (size_t d = 0; d < x.shape.size(); ++d) (d < axis ? rows : n) *= x.shape[d];
  LayerNormKernel k{};
  k.n = n;
  k.epsilon = c.attr_float("epsilon", 1e-5f);
  k.narrow = narrow_code(type);
  const Param scale = param(c, scale_at, x.shape, axis, n);
  k.scale_step = scale.step;
  k.scale = scale.data;
  Param bias;
  if (c.has_input(scale_at + 1)) {
    bias = param(c, scale_at + 1, x.shape, axis, n);
    k.bias_step = bias.step;
    k.bias = bias.data;
  }
  k.skip = skip ? static_cast<const float*>(skip->data) : nullptr;
  c.output(0) = c.allocate(DataType::Float, x.shape);
  Shape stat = x.shape;
  for (size_t d = axis; d < stat.size(); ++d) stat[d] = 1;
  const bool stats = !skip;  // FusedAddLayerNorm has Y only
  if (stats && c.wants_output(1)) c.output(1) = c.allocate(DataType::Float, stat);
  if (stats && c.wants_output(2)) c.output(2) = c.allocate(DataType::Float, stat);
  k.x = static_cast<const float*>(x.data);
  k.y = static_cast<float*>(c.output(0).data);
  // fp16: Y's half copy, for the GEMMs a transformer's normalization feeds
  // (BERT's three projections read one: converted once instead of thrice).
  if (type == DataType::Float) k.half_out = c.make_half_copy(c.output(0));  // (not a widened copy's)
  k.mean = stats && c.wants_output(1) ? static_cast<float*>(c.output(1).data) : nullptr;
  k.inv_std_dev = stats && c.wants_output(2) ? static_cast<float*>(c.output(2).data) : nullptr;
  if (n == 0) return;
  launch(c.rt(), k, rows);
}

// float16 / bfloat16 X, Scale and B through float32; Y rounded to X's type,
// Mean and InvStdDev kept in float32 (stash_type 1), as the reference's
// (which also rounds the normalized values to X's type before the scale).
void run_layernorm(OpContext& c) {
  const DataType t = c.input(0).dtype;
  run_on_float32(c, [t](OpContext& f) { layernorm_f32(f, t); }, 1u);
}

// FusedAddLayerNorm (cpu/fused_ops.h, fuse-add-layernorm): float32 only.
std::optional<std::string> refuse_add_layernorm(const Graph& g, const Node& n) {
  if (n.inputs.size() < 3 || n.inputs.size() > 4) return std::string("FusedAddLayerNorm takes A, B, Scale and an optional Bias");
  if (const Attribute* s = n.attribute("stash_type"); s && s->i != 1) return std::string("stash_type other than float");
  return require_types(g, n, {DataType::Float});
}

void run_add_layernorm(OpContext& c) {
  for (size_t i = 0; i < c.input_count(); ++i)
    if (c.has_input(i) && c.input(i).dtype != DataType::Float) c.fail("FusedAddLayerNorm takes float32");
  layernorm_f32(c, DataType::Float, &c.input(1));
}

// InstanceNormalization is GroupNormalization with a group per channel and
// a scale and bias per channel; GroupNormalization's are per group before
// opset 21, per channel from it.
std::optional<std::string> refuse_group_norm(const Graph& g, const Node& n) {
  if (n.inputs.size() != 3) return n.op_type + " takes three inputs";
  if (n.op_type == "GroupNormalization") {
    const Attribute* groups = n.attribute("num_groups");
    if (!groups || groups->i <= 0) return std::string("GroupNormalization without a positive num_groups");
    if (const Attribute* s = n.attribute("stash_type"); s && s->i != 1) return std::string("stash_type other than float");
  }
  return require_one_real_type(g, n);
}

// `type`: X's (GroupNormalization's normalized values are rounded to
// float16 or bfloat16 first, InstanceNormalization's are not, as the reference's).
void group_norm_f32(OpContext& c, DataType type) {
  const DeviceTensor& x = c.input(0);
  if (x.shape.size() < 2) c.fail("the input " + shape_to_string(x.shape) + " has no channel dim");
  const bool instance = c.node().op_type == "InstanceNormalization";
  const int64_t batch = x.shape[0], channels = x.shape[1];
  const int64_t groups = instance ? channels : c.attr_int("num_groups", 0);
  if (groups <= 0 || channels % groups != 0)
    c.fail("num_groups (" + std::to_string(groups) + ") must be positive and divide the channel count " + std::to_string(channels));
  const bool per_channel = instance || c.opset() >= 21;
  const int64_t params = per_channel ? channels : groups;
  for (size_t i = 1; i < 3; ++i)
    if (elements_of(c.input(i).shape) != static_cast<uint64_t>(params))
      c.fail("input " + std::to_string(i) + " " + shape_to_string(c.input(i).shape) + " does not hold " + std::to_string(params) +
             (per_channel ? " channels" : " groups"));
  int64_t spatial = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) spatial *= x.shape[d];
  c.output(0) = c.allocate(DataType::Float, x.shape);
  if (batch * channels * spatial == 0) return;
  GroupNormKernel k{groups,
                    channels / groups,
                    spatial,
                    c.attr_float("epsilon", 1e-5f),
                    per_channel,
                    static_cast<const float*>(x.data),
                    static_cast<const float*>(c.input(1).data),
                    static_cast<const float*>(c.input(2).data),
                    static_cast<float*>(c.output(0).data),
                    instance ? 0 : narrow_code(type)};
  launch(c.rt(), k, batch * groups);
}

void run_group_norm(OpContext& c) {
  const DataType t = c.input(0).dtype;
  run_on_float32(c, [t](OpContext& f) { group_norm_f32(f, t); });
}

void run_batchnorm(OpContext& c) { run_on_float32(c, batchnorm_f32); }

std::optional<std::string> refuse_rms_norm(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2) return std::string("RMSNormalization takes X and scale");
  if (const Attribute* s = n.attribute("stash_type"); s && s->i != 1) return std::string("stash_type other than float");
  if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16})) return r;
  if (declared_type(g, n.inputs[1]) != declared_type(g, n.inputs[0])) return std::string("the CUDA RMSNormalization takes scale of X's type");
  return std::nullopt;
}

// `type`: X's (the normalized values are rounded to float16 or bfloat16 first).
void rms_norm_f32(OpContext& c, DataType type) {
  const DeviceTensor& x = c.input(0);
  if (x.shape.empty()) c.fail("a scalar has nothing to normalize");
  const auto axis = static_cast<size_t>(normalize_axis(c, c.attr_int("axis", -1), x.shape.size()));
  int64_t rows = 1, n = 1;
  for (size_t d = 0; d < x.shape.size(); ++d) (d < axis ? rows : n) *= x.shape[d];
  c.output(0) = c.allocate(DataType::Float, x.shape);
  if (rows * n == 0) return;
  const Param scale = param(c, 1, x.shape, axis, n);
  RmsNormKernel k{n,
                  c.attr_float("epsilon", 1e-5f),
                  scale.step,
                  static_cast<const float*>(x.data),
                  scale.data,
                  static_cast<float*>(c.output(0).data),
                  narrow_code(type)};
  launch(c.rt(), k, rows);
}

// float16 / bfloat16 X and scale (of one type) through float32, as LayerNormalization.
void run_rms_norm(OpContext& c) {
  const DataType t = c.input(0).dtype;
  if (c.input(1).dtype != t) c.fail("scale must have X's element type on the device");
  run_on_float32(c, [t](OpContext& f) { rms_norm_f32(f, t); });
}

std::optional<std::string> refuse_softmax(const Graph& g, const Node& n) {
  return require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16});
}

// Since opset 13 along one axis; before, over the 2-D flattening at axis.
void run_softmax_f32(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  c.output(0) = c.allocate(DataType::Float, x.shape);
  if (x.shape.empty()) {  // a scalar: softmax 1, log-softmax 0
    Tensor one = Tensor::zeros(DataType::Float, {});
    one.mutable_data<float>()[0] = c.node().op_type == "Softmax" ? 1.f : 0.f;
    c.rt().copy_in(c.output(0).data, one.raw(), 4);
    return;
  }
  const bool modern = c.opset() >= 13;
  const auto axis = static_cast<size_t>(normalize_axis(c, c.attr_int("axis", modern ? -1 : 1), x.shape.size()));
  int64_t outer = 1, n = 1, inner = 1;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (d < axis) outer *= x.shape[d];
    else if (d == axis || !modern) n *= x.shape[d];
    else inner *= x.shape[d];
  }
  if (outer * n * inner == 0) return;
  SoftmaxKernel k{n, inner, c.node().op_type == "LogSoftmax", static_cast<const float*>(x.data), static_cast<float*>(c.output(0).data)};
  launch(c.rt(), k, outer * inner);
}

// float16 / bfloat16 through float32 (run_on_float32).
void run_softmax(OpContext& c) { run_on_float32(c, run_softmax_f32); }

// Hardmax: Softmax's lines (one axis from opset 13, the 2-D flattening at
// axis before), a thread per line.
void run_hardmax_f32(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  c.output(0) = c.allocate(DataType::Float, x.shape);
  const bool modern = c.opset() >= 13;
  const int64_t axis_attr = c.attr_int("axis", modern ? -1 : 1);
  int64_t outer = 1, n = 1, inner = 1;
  if (x.shape.empty()) {
    if (axis_attr != 0) c.fail("axis " + std::to_string(axis_attr) + " of a scalar");
  } else {
    const auto axis = static_cast<size_t>(normalize_axis(c, axis_attr, x.shape.size()));
    for (size_t d = 0; d < x.shape.size(); ++d) {
      if (d < axis) outer *= x.shape[d];
      else if (d == axis || !modern) n *= x.shape[d];
      else inner *= x.shape[d];
    }
  }
  if (outer * n * inner == 0) return;
  HardmaxKernel k{n, inner, static_cast<const float*>(x.data), static_cast<float*>(c.output(0).data)};
  launch(c.rt(), k, outer * inner);
}

void run_hardmax(OpContext& c) { run_on_float32(c, run_hardmax_f32); }

std::optional<std::string> refuse_lp_norm(const Graph& g, const Node& n) {
  if (const Attribute* p = n.attribute("p"); p && p->i != 1 && p->i != 2) return "LpNormalization p=" + std::to_string(p->i);
  return require_one_real_type(g, n);
}

void lp_norm_f32(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const int64_t p = c.attr_int("p", 2);
  if (p != 1 && p != 2) c.fail("p must be 1 or 2, got " + std::to_string(p));
  if (x.shape.empty()) c.fail("LpNormalization of a scalar");
  const auto axis = static_cast<size_t>(normalize_axis(c, c.attr_int("axis", -1), x.shape.size()));
  c.output(0) = c.allocate(DataType::Float, x.shape);
  const int64_t n = x.shape[axis];
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const auto count = static_cast<int64_t>(elements_of(x.shape));
  if (count == 0) return;
  LpNormKernel k{static_cast<int>(p), n, inner, static_cast<const float*>(x.data), static_cast<float*>(c.output(0).data)};
  launch(c.rt(), k, count / n);
}

std::optional<std::string> refuse_lrn(const Graph& g, const Node& n) {
  if (const Attribute* s = n.attribute("size"); !s || s->i <= 0) return std::string("LRN needs a positive size");
  return require_one_real_type(g, n);
}

void lrn_f32(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  if (x.shape.size() < 2) c.fail("X must have rank 2 or more (N x C x ...), got " + shape_to_string(x.shape));
  const int64_t size = c.attr_int("size", 0);
  if (size <= 0) c.fail("size must be positive, got " + std::to_string(size));
  c.output(0) = c.allocate(DataType::Float, x.shape);
  const auto count = static_cast<int64_t>(elements_of(x.shape));
  if (count == 0) return;
  LrnKernel k{};
  k.channels = x.shape[1];
  k.inner = count / (x.shape[0] * x.shape[1]);
  k.before = (size - 1) / 2;  // floor((size - 1) / 2) below, ceil above
  k.after = size / 2;
  // The attributes are float32; the reference computes in double from them.
  k.alpha_over_size = static_cast<double>(c.attr_float("alpha", 1e-4f)) / static_cast<double>(size);
  k.beta = c.attr_float("beta", 0.75f);
  k.bias = c.attr_float("bias", 1.0f);
  k.x = static_cast<const float*>(x.data);
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, count);
}

void run_lp_norm(OpContext& c) { run_on_float32(c, lp_norm_f32); }
void run_lrn(OpContext& c) { run_on_float32(c, lrn_f32); }

}  // namespace

void add_normalization_ops(std::vector<OpDef>& t) {
  t.push_back({"BatchNormalization", refuse_batchnorm, run_batchnorm});
  t.push_back({"LayerNormalization", refuse_layernorm, run_layernorm});
  t.push_back({"FusedAddLayerNorm", refuse_add_layernorm, run_add_layernorm, OpBackend::Kernel, nullptr, "onnxscope.cpu"});
  t.push_back({"GroupNormalization", refuse_group_norm, run_group_norm});
  t.push_back({"InstanceNormalization", refuse_group_norm, run_group_norm});
  t.push_back({"RMSNormalization", refuse_rms_norm, run_rms_norm});
  t.push_back({"Softmax", refuse_softmax, run_softmax});
  t.push_back({"LogSoftmax", refuse_softmax, run_softmax});
  t.push_back({"Hardmax", refuse_softmax, run_hardmax});
  t.push_back({"LpNormalization", refuse_lp_norm, run_lp_norm});
  t.push_back({"LRN", refuse_lrn, run_lrn});
}

}  // namespace onnxscope::cuda
