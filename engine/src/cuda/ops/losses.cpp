// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opsets 12 on):
// input float32, float16 or bfloat16, targets int32 or int64 read and
// checked on the device, optional class weights, ignore_index, reductions
// none, sum and mean; SoftmaxCrossEntropyLoss's optional log_prob output.
// Computed in double as the reference computes them (kernels/losses.h).
#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_loss(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || n.inputs[1].empty()) return n.op_type + " takes an input and a target";
  if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16}, 0, 1)) return r;
  if (auto r = require_types(g, n, {DataType::Int32, DataType::Int64}, 1, 1)) return r;
  if (n.inputs.size() > 2 && !n.inputs[2].empty() && declared_type(g, n.inputs[2]) != declared_type(g, n.inputs[0]))
    return std::string("the weights' type differs from the input's");
  return std::nullopt;
}

void run_loss(OpContext& c) {
  const bool softmax = c.node().op_type == "SoftmaxCrossEntropyLoss";
  const DeviceTensor& x = c.input(0);
  const DeviceTensor& target = c.input(1);
  const DeviceTensor* weight = c.has_input(2) ? &c.input(2) : nullptr;
  const Shape& s = x.shape;
  if (s.size() < 2) c.fail(std::string(softmax ? "scores" : "input") + " must have shape (N, C, ...), got " + shape_to_string(s));
  Shape expected{s[0]};
  expected.insert(expected.end(), s.begin() + 2, s.end());
  if (target.shape != expected) c.fail("target has shape " + shape_to_string(target.shape) + ", expected " + shape_to_string(expected));
  if (target.dtype != DataType::Int32 && target.dtype != DataType::Int64)
    c.fail("target must be int32 or int64, got " + std::string(dtype_name(target.dtype)));
  const std::string reduction = c.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    c.fail("reduction must be 'none', 'sum' or 'mean', got '" + reduction + "'");
  const int64_t classes = s[1];
  const auto count = static_cast<int64_t>(elements_of(expected));
  const auto inner = static_cast<int64_t>(elements_of(Shape(s.begin() + 2, s.end())));  // D
  if (weight && (weight->dtype != x.dtype || elements_of(weight->shape) != static_cast<uint64_t>(classes)))
    c.fail("weight has shape " + shape_to_string(weight->shape) + " but " + std::to_string(classes) +
           " elements of the input's type are needed");
  const ElemType type = static_cast<ElemType>(x.dtype);

  DeviceTensor logp;
  if (softmax) {
    logp = c.allocate(DataType::Double, s);
    void* log_prob = nullptr;
    if (c.wants_output(1)) {
      c.output(1) = c.allocate(x.dtype, s);
      log_prob = c.output(1).data;
    }
    if (count > 0 && classes > 0)
      launch(c.rt(), LogSoftmaxLineKernel{type, classes, inner, x.data, static_cast<double*>(logp.data), log_prob}, count);
  }
  const DeviceTensor loss = c.allocate(DataType::Double, expected), weights = c.allocate(DataType::Double, expected);
  const bool none = reduction == "none";
  c.output(0) = c.allocate(x.dtype, none ? expected : Shape{});
  const bool has_ignore = c.node().attribute("ignore_index") != nullptr;
  const int64_t ignore = c.attr_int("ignore_index", 0);
  const bool wide = target.dtype == DataType::Int64;
  if (count > 0) {
    NllLossKernel k{};
    k.type = type;
    k.classes = classes;
    k.inner = inner;
    k.input = softmax ? nullptr : x.data;
    k.logp = softmax ? static_cast<const double*>(logp.data) : nullptr;
    k.target = target.data;
    k.target_wide = wide;
    k.has_ignore = has_ignore;
    k.ignore = ignore;
    k.weight = weight ? weight->data : nullptr;
    k.loss = static_cast<double*>(loss.data);
    k.weights = static_cast<double*>(weights.data);
    k.y = none ? c.output(0).data : nullptr;
    const FaultLog::Site site = c.fault_site(FaultKind::Target);
    k.fault = site.record;
    k.site = site.id;
    launch(c.rt(), k, count);
  }
  if (!none)
    launch(c.rt(),
           NllReduceKernel{type, reduction == "mean", count, target.data, wide, has_ignore, ignore,
                           static_cast<const double*>(loss.data), static_cast<const double*>(weights.data), c.output(0).data},
           1);
}

}  // namespace

void add_loss_ops(std::vector<OpDef>& t) {
  t.push_back({"NegativeLogLikelihoodLoss", refuse_loss, run_loss});
  t.push_back({"SoftmaxCrossEntropyLoss", refuse_loss, run_loss});
}

}  // namespace onnxscope::cuda
