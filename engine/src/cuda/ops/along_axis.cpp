// Operators that walk each line along an axis (kernels/lines.h): ArgMax and
// ArgMin (float32, int32, int64) and CumSum / CumProd (float32, float64,
// int32, int64), one thread per line; TopK (float32, int32, int64), one
// thread per element ranking it in its line. float16 / bfloat16 through
// float32 (run_on_float32): exact for the comparisons, and CumSum's double
// sums round through float32 to the narrow type as the reference's do.
#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_arg(const Graph& g, const Node& n) {
  return require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16, DataType::Int32, DataType::Int64});
}

template <class T>
void launch_arg(OpContext& c, const DeviceTensor& x, bool max, bool last, int64_t n, int64_t inner, int64_t lines) {
  const ArgReduceKernel<T> k{max, last, n, inner, static_cast<const T*>(x.data), static_cast<int64_t*>(c.output(0).data)};
  launch(c.rt(), k, lines);
}

void arg_extreme(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const bool keepdims = c.attr_int("keepdims", 1) != 0;
  const bool last = c.opset() >= 12 && c.attr_int("select_last_index", 0) != 0;
  if (x.shape.empty()) {  // a scalar: its only element is at 0 (axis 0, as the reference takes it)
    if (const int64_t a = c.attr_int("axis", 0); a != 0) c.fail("axis " + std::to_string(a) + " of a scalar");
    c.output(0) = c.allocate(DataType::Int64, {});
    c.rt().zero(c.output(0).data, 8);
    return;
  }
  const auto axis = static_cast<size_t>(normalize_axis(c, c.attr_int("axis", 0), x.shape.size()));
  const int64_t n = x.shape[axis];
  if (n == 0) c.fail("cannot take the arg-extreme over axis " + std::to_string(axis) + " of size 0");
  Shape out = x.shape;
  if (keepdims) out[axis] = 1;
  else out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
  c.output(0) = c.allocate(DataType::Int64, out);
  const auto lines = static_cast<int64_t>(elements_of(out));
  if (lines == 0) return;
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const bool max = c.node().op_type == "ArgMax";
  switch (x.dtype) {
    case DataType::Float: launch_arg<float>(c, x, max, last, n, inner, lines); break;
    case DataType::Int32: launch_arg<int32_t>(c, x, max, last, n, inner, lines); break;
    case DataType::Int64: launch_arg<int64_t>(c, x, max, last, n, inner, lines); break;
    default: c.fail("no kernel for " + std::string(dtype_name(x.dtype)));
  }
}

bool cumulative_reads_on_host(const Node&, size_t i) { return i == 1; }

std::optional<std::string> refuse_cumulative(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2) return n.op_type + " takes x and axis";
  return require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16, DataType::Double, DataType::Int32, DataType::Int64}, 0, 1);
}

template <class T>
void launch_cumulative(OpContext& c, const DeviceTensor& x, int64_t n, int64_t inner, int64_t lines) {
  const CumulativeKernel<T> k{c.node().op_type == "CumProd",
                              c.attr_int("exclusive", 0) != 0,
                              c.attr_int("reverse", 0) != 0,
                              n,
                              inner,
                              static_cast<const T*>(x.data),
                              static_cast<T*>(c.output(0).data)};
  launch(c.rt(), k, lines);
}

void cumulative(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  if (x.shape.empty()) c.fail("x must have rank 1 or more");
  const std::vector<int64_t> axis_value = host_ints(c, 1);
  if (axis_value.size() != 1) c.fail("axis should hold one value, not " + std::to_string(axis_value.size()));
  const auto axis = static_cast<size_t>(normalize_axis(c, axis_value[0], x.shape.size()));
  c.output(0) = c.allocate(x.dtype, x.shape);
  const int64_t n = x.shape[axis];
  if (n == 0 || elements_of(x.shape) == 0) return;
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const auto lines = static_cast<int64_t>(elements_of(x.shape)) / n;
  switch (x.dtype) {
    case DataType::Float: launch_cumulative<float>(c, x, n, inner, lines); break;
    case DataType::Double: launch_cumulative<double>(c, x, n, inner, lines); break;
    case DataType::Int32: launch_cumulative<int32_t>(c, x, n, inner, lines); break;
    case DataType::Int64: launch_cumulative<int64_t>(c, x, n, inner, lines); break;
    default: c.fail("no kernel for " + std::string(dtype_name(x.dtype)));
  }
}

// TopK compares each element with its whole line: lines of known length up
// to this go to the device, longer or unknown ones to the CPU engine.
// Lines up to kTopKLine: every element ranked against its line (n * n
// reads). Longer lines: the k-th key found first, then only the k admitted
// elements ranked (kernels/lines.h TopKCutKernel), when k is a constant up
// to kTopKLongK.
constexpr int64_t kTopKLine = 4096;
constexpr int64_t kTopKLongK = 1024;

bool topk_reads_on_host(const Node&, size_t i) { return i == 1; }

std::optional<std::string> refuse_topk(const Graph& g, const Node& n) {
  if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16, DataType::Int32, DataType::Int64,
                                    DataType::Uint64}, 0, 1))
    return r;
  // The other dims may be symbolic (a batch): only the axis must be known.
  const std::vector<Dim> dims = declared_dims(g, n.inputs[0]);
  const Attribute* a = n.attribute("axis");
  const int64_t r = static_cast<int64_t>(dims.size()), axis = a ? a->i : -1;
  if (r > 0 && axis >= -r && axis < r) {
    const Dim& d = dims[static_cast<size_t>(axis < 0 ? axis + r : axis)];
    if (d.is_known() && d.value <= kTopKLine) return std::nullopt;
  }
  // Longer lines (or lines of an unknown length) take k * n reads: a k known here, and small.
  std::optional<int64_t> k;
  if (const Attribute* ka = n.attribute("k"); ka && n.inputs.size() < 2) k = ka->i;
  if (n.inputs.size() > 1)
    if (const Initializer* ki = g.initializer(n.inputs[1]); ki && ki->value.element_count() == 1) k = ki->value.element_as_int64(0);
  if (k && *k <= kTopKLongK) return std::nullopt;
  return "TopK on the device takes lines of a known length up to " + std::to_string(kTopKLine) + ", or a constant k up to " +
         std::to_string(kTopKLongK);
}

template <class T>
void launch_topk(OpContext& c, const DeviceTensor& x, bool largest, int64_t n, int64_t k, int64_t inner, int64_t items) {
  const auto* xd = static_cast<const T*>(x.data);
  auto* values = static_cast<T*>(c.output(0).data);
  auto* indices = static_cast<int64_t*>(c.output(1).data);
  if (n <= kTopKLine) {
    launch(c.rt(), TopKKernel<T>{largest, n, k, inner, xd, values, indices}, items);
    return;
  }
  const int64_t lines = items / n;
  const DeviceTensor cut = c.allocate(DataType::Int64, {lines, 2});
  auto* cuts = static_cast<int64_t*>(cut.data);
  launch(c.rt(), TopKCutKernel<T>{largest, sizeof(T) == 8 ? 64 : 32, n, k, inner, xd, cuts}, lines);
  launch(c.rt(), TopKSelectKernel<T>{largest, n, k, inner, xd, cuts, values, indices}, items);
}

void topk(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  int64_t k = 0;
  if (c.opset() < 10) {  // k an attribute in opset 1, the second input from 10
    if (!c.node().attribute("k")) c.fail("attribute 'k' is required before opset 10");
    k = c.attr_int("k", 0);
  } else {
    const std::vector<int64_t> kv = host_ints(c, 1);
    if (kv.size() != 1) c.fail("K should hold one value, not " + std::to_string(kv.size()));
    k = kv[0];
  }
  const bool largest = c.opset() < 11 || c.attr_int("largest", 1) != 0;
  if (x.shape.empty()) c.fail("X must have rank >= 1");
  const auto axis = static_cast<size_t>(normalize_axis(c, c.attr_int("axis", -1), x.shape.size()));
  const int64_t n = x.shape[axis];
  if (k < 0 || k > n)
    c.fail("k = " + std::to_string(k) + " must be in [0, " + std::to_string(n) + "], the size of axis " + std::to_string(axis));
  if (n > kTopKLine && k > kTopKLongK)
    c.fail("k = " + std::to_string(k) + " on a line of " + std::to_string(n) + " elements: the device takes k up to " +
           std::to_string(kTopKLongK) + " on lines longer than " + std::to_string(kTopKLine));
  Shape out = x.shape;
  out[axis] = k;
  c.output(0) = c.allocate(x.dtype, out);
  c.output(1) = c.allocate(DataType::Int64, out);
  const auto items = static_cast<int64_t>(elements_of(x.shape));
  if (k == 0 || items == 0) return;
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  switch (x.dtype) {
    case DataType::Float: launch_topk<float>(c, x, largest, n, k, inner, items); break;
    case DataType::Int32: launch_topk<int32_t>(c, x, largest, n, k, inner, items); break;
    case DataType::Int64: launch_topk<int64_t>(c, x, largest, n, k, inner, items); break;
    case DataType::Uint64: launch_topk<uint64_t>(c, x, largest, n, k, inner, items); break;
    default: c.fail("no kernel for " + std::string(dtype_name(x.dtype)));
  }
}

void run_arg(OpContext& c) { run_on_float32(c, arg_extreme); }
void run_cumulative(OpContext& c) { run_on_float32(c, cumulative); }
void run_topk(OpContext& c) { run_on_float32(c, topk); }

}  // namespace

void add_along_axis_ops(std::vector<OpDef>& t) {
  t.push_back({"TopK", refuse_topk, run_topk, OpBackend::Kernel, topk_reads_on_host});
  t.push_back({"ArgMax", refuse_arg, run_arg});
  t.push_back({"ArgMin", refuse_arg, run_arg});
  t.push_back({"CumSum", refuse_cumulative, run_cumulative, OpBackend::Kernel, cumulative_reads_on_host});
  t.push_back({"CumProd", refuse_cumulative, run_cumulative, OpBackend::Kernel, cumulative_reads_on_host});
}

}  // namespace onnxscope::cuda
