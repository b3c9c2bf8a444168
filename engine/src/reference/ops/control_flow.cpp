// Reference kernels: control flow, sequences, optionals: If, Loop, Scan, SequenceConstruct, SequenceEmpty, SequenceAt, SequenceInsert, SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap, Optional, OptionalHasElement, OptionalGetElement.
//
// Values: an optional holding a value is that value itself (a tensor or a
// sequence); an empty optional is Value::none(type). Subgraphs (If branches,
// Loop/Scan bodies, SequenceMap's body) run through ctx.run_graph, which binds
// their inputs by position and lets them read the enclosing scope.
// These kernels only move data, so every element type works, packed 4-/2-/6-bit
// types and strings included.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/ops.h"

namespace onnxscope::ref {
namespace {

// A Loop whose trip count and condition never stop it (or a count this large)
// is treated as a runaway model rather than left to hang the tool.
constexpr int64_t kMaxLoopIterations = 10'000'000;

// --- tensor helpers ----------------------------------------------------------

uint64_t product(const Shape& s, size_t from, size_t to) {
  uint64_t n = 1;
  for (size_t d = from; d < to; ++d) n *= static_cast<uint64_t>(s[d]);
  return n;
}

// A zero-filled tensor, size-checked like ctx.allocate_output.
Tensor new_tensor(const KernelContext& ctx, DataType type, const Shape& shape) {
  auto count = checked_element_count(shape);
  if (!count) ctx.fail("tensor shape " + shape_to_string(shape) + " is negative or overflows");
  uint64_t bytes = type == DataType::String ? *count * sizeof(std::string)
                                            : storage_bytes(type, *count).value_or(UINT64_MAX);
  if (bytes > ctx.max_tensor_bytes())
    ctx.fail("a tensor of shape " + shape_to_string(shape) + " would need " + std::to_string(bytes) +
             " bytes, more than the limit of " + std::to_string(ctx.max_tensor_bytes()));
  return Tensor::zeros(type, shape);
}

// Copies n consecutive elements of src (from element `from`) to dst (at `to`);
// both have the same element type.
void copy_elements(const Tensor& src, uint64_t from, Tensor& dst, uint64_t to, uint64_t n) {
  if (n == 0) return;
  const DataType t = src.dtype();
  if (t == DataType::String) {
    for (uint64_t i = 0; i < n; ++i) dst.mutable_strings()[to + i] = src.strings()[from + i];
  } else if (is_packed_dtype(t)) {
    std::byte* out = dst.mutable_raw();
    for (uint64_t i = 0; i < n; ++i)
      set_packed_element_bits(t, out, to + i, packed_element_bits(t, src.raw(), from + i));
  } else {
    const uint64_t elem = dtype_info(t).bits / 8;
    std::memcpy(dst.mutable_raw() + to * elem, src.raw() + from * elem, n * elem);
  }
}

// The same elements under another shape with the same element count.
Tensor reshaped(const KernelContext& ctx, const Tensor& x, const Shape& shape) {
  Tensor out = new_tensor(ctx, x.dtype(), shape);
  copy_elements(x, 0, out, 0, x.element_count());
  return out;
}

// Elements [start, start+len) along `axis` of x, returned with `out_shape`
// (x's shape with that axis set to len, or with it removed when len is 1).
Tensor slice_axis(const KernelContext& ctx, const Tensor& x, int64_t axis, int64_t start, int64_t len,
                  const Shape& out_shape) {
  const Shape& s = x.shape();
  const uint64_t outer = product(s, 0, static_cast<size_t>(axis));
  const uint64_t mid = static_cast<uint64_t>(s[static_cast<size_t>(axis)]);
  const uint64_t inner = product(s, static_cast<size_t>(axis) + 1, s.size());
  Tensor out = new_tensor(ctx, x.dtype(), out_shape);
  const uint64_t block = static_cast<uint64_t>(len) * inner;
  for (uint64_t o = 0; o < outer; ++o)
    copy_elements(x, (o * mid + static_cast<uint64_t>(start)) * inner, out, o * block, block);
  return out;
}

// x's shape without `axis`.
Shape without_axis(const Shape& s, int64_t axis) {
  Shape r = s;
  r.erase(r.begin() + axis);
  return r;
}

// numpy.concatenate (stack=false) or numpy.stack (stack=true) of `parts` along
// `axis`, which is already normalised (into [0, rank] when stacking).
Tensor join(const KernelContext& ctx, const std::vector<const Tensor*>& parts, int64_t axis, bool stack,
            const std::string& what) {
  if (parts.empty()) ctx.fail(what + ": nothing to concatenate");
  const Tensor& first = *parts.front();
  const Shape& base = first.shape();
  const size_t a = static_cast<size_t>(axis);
  Shape out_shape = base;
  int64_t total = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    const Tensor& t = *parts[p];
    if (t.dtype() != first.dtype())
      ctx.fail(what + ": element " + std::to_string(p) + " is " + std::string(dtype_name(t.dtype())) + ", element 0 is " +
               std::string(dtype_name(first.dtype())));
    bool same = t.rank() == first.rank();
    for (size_t d = 0; same && d < base.size(); ++d)
      if (t.shape()[d] != base[d] && (stack || d != a)) same = false;
    if (!same)
      ctx.fail(what + ": element " + std::to_string(p) + " has shape " + shape_to_string(t.shape()) +
               ", which does not match element 0's " + shape_to_string(base) +
               (stack ? "" : " outside axis " + std::to_string(axis)));
    if (__builtin_add_overflow(total, stack ? int64_t{1} : t.shape()[a], &total))
      ctx.fail(what + ": the concatenated axis overflows");
  }
  if (stack) out_shape.insert(out_shape.begin() + axis, total);
  else out_shape[a] = total;
  const uint64_t outer = product(base, 0, a);
  const uint64_t inner = product(base, stack ? a : a + 1, base.size());
  Tensor out = new_tensor(ctx, first.dtype(), out_shape);
  uint64_t offset = 0;  // position along the axis where the current part starts
  for (const Tensor* t : parts) {
    const uint64_t mid = stack ? 1 : static_cast<uint64_t>(t->shape()[a]);
    for (uint64_t o = 0; o < outer; ++o)
      copy_elements(*t, o * mid * inner, out, (o * static_cast<uint64_t>(total) + offset) * inner, mid * inner);
    offset += mid;
  }
  return out;
}

// The value of a 1-element bool tensor (If's and Loop's conditions).
bool bool_scalar(const KernelContext& ctx, const Tensor& t, const std::string& what) {
  if (t.dtype() != DataType::Bool) ctx.fail(what + " must be a bool tensor, got " + std::string(dtype_name(t.dtype())));
  if (t.element_count() != 1)
    ctx.fail(what + " must hold a single element, got shape " + shape_to_string(t.shape()));
  return t.raw()[0] != std::byte{0};
}

// The value of a 1-element int32/int64 tensor (sequence positions, trip counts).
int64_t int_scalar(const KernelContext& ctx, const Tensor& t, const std::string& what, bool int64_only = false) {
  if (t.dtype() != DataType::Int64 && (int64_only || t.dtype() != DataType::Int32))
    ctx.fail(what + " must be " + (int64_only ? "int64" : "int32 or int64") + ", got " +
             std::string(dtype_name(t.dtype())));
  if (t.element_count() != 1)
    ctx.fail(what + " must be a scalar, got shape " + shape_to_string(t.shape()));
  return t.element_as_int64(0);
}

Tensor int64_scalar(int64_t v) {
  Tensor t = Tensor::zeros(DataType::Int64, {});
  store<int64_t>(t, 0, v);
  return t;
}

Tensor bool_scalar_tensor(bool v) {
  Tensor t = Tensor::zeros(DataType::Bool, {});
  store<bool>(t, 0, v);
  return t;
}

// Before opset 13 control-flow values are tensors; 13 adds sequences, 16 optionals.
void check_value_kind(const KernelContext& ctx, const Value& v, const std::string& what) {
  const int64_t opset = ctx.opset_version();
  if (v.is_map()) ctx.fail(what + " is a map, which control-flow operators do not carry");
  if (opset < 13 && !v.is_tensor()) ctx.fail(what + " must be a tensor before opset 13, got " + v.describe());
  if (opset < 16 && v.is_none()) ctx.fail(what + " is an empty optional, which is allowed from opset 16 on");
}

// The body output a scan output comes from must be a tensor.
const Tensor& scan_element(const KernelContext& ctx, const Value& v, const std::string& what) {
  if (!v.is_tensor()) ctx.fail(what + " must be a tensor, got " + v.describe());
  return v.tensor();
}

// Accumulated scan-output elements: same type and shape every iteration, and
// their total kept under the tensor size limit.
struct ScanAccumulator {
  std::vector<Tensor> items;
  uint64_t bytes = 0;

  void add(const KernelContext& ctx, const Tensor& t, const std::string& what) {
    if (!items.empty()) {
      const Tensor& f = items.front();
      if (t.dtype() != f.dtype() || t.shape() != f.shape())
        ctx.fail(what + " is " + std::string(dtype_name(t.dtype())) + shape_to_string(t.shape()) + " in iteration " +
                 std::to_string(items.size()) + " but was " + std::string(dtype_name(f.dtype())) +
                 shape_to_string(f.shape()) + " in iteration 0; it may not change across iterations");
    }
    bytes += t.is_string() ? t.element_count() * sizeof(std::string) : t.byte_size();
    if (bytes > ctx.max_tensor_bytes())
      ctx.fail(what + " grew past the tensor size limit of " + std::to_string(ctx.max_tensor_bytes()) + " bytes after " +
               std::to_string(items.size() + 1) + " iterations");
    items.push_back(t);
  }
  std::vector<const Tensor*> pointers(bool reverse = false) const {
    std::vector<const Tensor*> p;
    for (const auto& t : items) p.push_back(&t);
    if (reverse) std::reverse(p.begin(), p.end());
    return p;
  }
};

// The element shape of a scan output whose body never ran, from the body's
// declared output type. The spec leaves this case open; like onnxruntime,
// unknown dims become 0 (and an unknown rank a rank-0 element).
std::pair<DataType, Shape> declared_element(const KernelContext& ctx, const ValueInfo& vi, const std::string& what) {
  if (vi.type.kind != TypeInfo::Kind::Tensor || vi.type.elem == DataType::Undefined)
    ctx.fail(what + " ('" + vi.name + "') has no declared tensor type, so its empty result after zero iterations "
             "cannot be built");
  Shape s;
  if (vi.type.shape)
    for (const Dim& d : *vi.type.shape) s.push_back(d.is_known() ? d.value : 0);
  return {vi.type.elem, s};
}

const Graph& graph_attr(const KernelContext& ctx, const char* name) {
  const Graph* g = ctx.attr_graph(name);
  if (!g) ctx.fail(std::string("attribute '") + name + "' (a graph) is required");
  return *g;
}

// --- If ------------------------------------------------------------------------

void If(KernelContext& ctx) {
  const bool cond = bool_scalar(ctx, ctx.input(0), "If's cond");
  const Graph& branch = graph_attr(ctx, cond ? "then_branch" : "else_branch");
  const char* name = cond ? "then_branch" : "else_branch";
  if (branch.outputs.size() != ctx.output_count())
    ctx.fail(std::string(name) + " has " + std::to_string(branch.outputs.size()) + " outputs but the node has " +
             std::to_string(ctx.output_count()));
  std::vector<Value> outs = ctx.run_graph(branch, {});
  for (size_t i = 0; i < outs.size(); ++i) {
    check_value_kind(ctx, outs[i], std::string(name) + " output " + std::to_string(i));
    ctx.set_output(i, std::move(outs[i]));
  }
}

// --- Loop ----------------------------------------------------------------------

// Inputs (M?, cond?, v_initial...); body (iter, cond_in, v...) -> (cond_out, v..., scan...).
// Spec table: with M and cond given, `for (i = 0; i < M && cond; ++i) cond = body(...)`.
// Without the cond input the body's cond_out is ignored ("Note this value is
// ignored"), which makes ("", "") a loop that never ends; onnxruntime and onnx's
// Python reference still stop on cond_out there, this follows the spec text.
void Loop(KernelContext& ctx) {
  const Graph& body = graph_attr(ctx, "body");
  const size_t n_inputs = ctx.input_count();
  if (n_inputs < 2) ctx.fail("Loop needs the inputs M and cond (either may be \"\")");
  const size_t N = n_inputs - 2;  // loop-carried dependencies
  if (body.inputs.size() != N + 2)
    ctx.fail("the body takes " + std::to_string(body.inputs.size()) + " inputs but Loop passes " + std::to_string(N + 2) +
             " (iteration number, condition and " + std::to_string(N) + " loop-carried values)");
  if (body.outputs.size() < N + 1)
    ctx.fail("the body has " + std::to_string(body.outputs.size()) + " outputs but needs at least " +
             std::to_string(N + 1) + " (condition and " + std::to_string(N) + " loop-carried values)");
  const size_t K = body.outputs.size() - 1 - N;  // scan outputs
  if (ctx.output_count() > N + K)
    ctx.fail("Loop has " + std::to_string(ctx.output_count()) + " outputs but its body yields only " +
             std::to_string(N) + " loop-carried values and " + std::to_string(K) + " scan outputs");

  const Tensor* m_input = ctx.optional_input(0);
  const int64_t max_trips = m_input ? int_scalar(ctx, *m_input, "Loop's M", true) : INT64_MAX;
  const Tensor* cond_input = ctx.optional_input(1);
  const bool use_cond = cond_input != nullptr;
  bool cond = use_cond ? bool_scalar(ctx, *cond_input, "Loop's cond") : true;

  std::vector<Value> carried(N);
  for (size_t i = 0; i < N; ++i) {
    const Value* v = ctx.input_value(2 + i);
    // An omitted ("") loop-carried input can only stand for an empty optional.
    carried[i] = v ? *v : Value::none();
    check_value_kind(ctx, carried[i], "loop-carried input " + std::to_string(i));
  }
  std::vector<ScanAccumulator> scans(K);

  int64_t iter = 0;
  for (; iter < max_trips && cond; ++iter) {
    if (iter >= kMaxLoopIterations)
      ctx.fail("Loop ran " + std::to_string(kMaxLoopIterations) +
               " iterations without stopping (the reference interpreter's limit); its trip count and condition "
               "look like they never end the loop");
    std::vector<Value> args;
    args.reserve(N + 2);
    args.emplace_back(int64_scalar(iter));
    args.emplace_back(bool_scalar_tensor(cond));
    for (auto& v : carried) args.push_back(std::move(v));
    std::vector<Value> outs = ctx.run_graph(body, std::move(args));
    if (!outs[0].is_tensor()) ctx.fail("the body's condition output must be a tensor, got " + outs[0].describe());
    const bool next = bool_scalar(ctx, outs[0].tensor(), "the body's condition output");
    if (use_cond) cond = next;
    for (size_t i = 0; i < N; ++i) {
      check_value_kind(ctx, outs[1 + i], "loop-carried output " + std::to_string(i));
      carried[i] = std::move(outs[1 + i]);
    }
    for (size_t k = 0; k < K; ++k) {
      const std::string what = "scan output " + std::to_string(k);
      scans[k].add(ctx, scan_element(ctx, outs[1 + N + k], what), what);
    }
  }

  for (size_t i = 0; i < N && i < ctx.output_count(); ++i) ctx.set_output(i, std::move(carried[i]));
  for (size_t k = 0; k < K && N + k < ctx.output_count(); ++k) {
    const std::string what = "scan output " + std::to_string(k);
    if (iter == 0) {
      auto [type, elem] = declared_element(ctx, body.outputs[1 + N + k], what);
      elem.insert(elem.begin(), 0);
      ctx.set_output(N + k, new_tensor(ctx, type, elem));
    } else {
      ctx.set_output(N + k, join(ctx, scans[k].pointers(), 0, true, what));
    }
  }
}

// --- Scan ----------------------------------------------------------------------

// An optional per-input/per-output list attribute of 0/1 flags or axes.
std::vector<int64_t> list_attr(const KernelContext& ctx, const char* name, size_t count) {
  std::vector<int64_t> v = ctx.attr_ints(name, std::vector<int64_t>(count, 0));
  if (v.size() != count)
    ctx.fail(std::string("attribute '") + name + "' has " + std::to_string(v.size()) + " entries, expected " +
             std::to_string(count));
  return v;
}

void check_directions(const KernelContext& ctx, const std::vector<int64_t>& dirs, const char* name) {
  for (int64_t d : dirs)
    if (d != 0 && d != 1) ctx.fail(std::string("attribute '") + name + "' entries must be 0 or 1, got " + std::to_string(d));
}

// Axis normalisation; negative axes are accepted from opset 11 on.
int64_t scan_axis(const KernelContext& ctx, int64_t axis, int64_t rank, const std::string& what) {
  if (axis < 0 && ctx.opset_version() < 11)
    ctx.fail(what + " axis " + std::to_string(axis) + " is negative, which is allowed from opset 11 on");
  if (axis < -rank || axis >= rank)
    ctx.fail(what + " axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// Checks the counts shared by both Scan forms; returns K (scan outputs).
size_t scan_counts(const KernelContext& ctx, const Graph& body, size_t N, size_t M) {
  if (body.inputs.size() != N + M)
    ctx.fail("the body takes " + std::to_string(body.inputs.size()) + " inputs but Scan passes " + std::to_string(N + M) +
             " (" + std::to_string(N) + " states and " + std::to_string(M) + " scan elements)");
  if (body.outputs.size() < N)
    ctx.fail("the body has " + std::to_string(body.outputs.size()) + " outputs, fewer than the " + std::to_string(N) +
             " state variables");
  const size_t K = body.outputs.size() - N;
  if (ctx.output_count() != N + K)
    ctx.fail("Scan has " + std::to_string(ctx.output_count()) + " outputs but its body yields " + std::to_string(N) +
             " states and " + std::to_string(K) + " scan outputs");
  return K;
}

// A new state must keep its type and shape ("required to have the same shape
// in each iteration of the loop").
void check_state(const KernelContext& ctx, const Value& v, const Tensor& before, size_t i) {
  const std::string what = "state output " + std::to_string(i);
  const Tensor& t = scan_element(ctx, v, what);
  if (t.dtype() != before.dtype() || t.shape() != before.shape())
    ctx.fail(what + " is " + std::string(dtype_name(t.dtype())) + shape_to_string(t.shape()) + " but the state was " +
             std::string(dtype_name(before.dtype())) + shape_to_string(before.shape()) +
             "; states may not change shape across iterations");
}

// Opset 8: inputs (sequence_lens?, states..., scans...), batch axis 0, sequence
// axis 1, 'directions' for the scan inputs. Each batch entry runs its own loop
// over its first sequence_lens[b] steps (a reverse scan input is read from step
// sequence_lens[b]-1 down to 0); scan outputs are padded with zeros (the spec
// leaves the padding undefined).
void Scan8(KernelContext& ctx) {
  const Graph& body = graph_attr(ctx, "body");
  const int64_t m_attr = ctx.required_attr("num_scan_inputs").i;
  if (ctx.input_count() < 1 || m_attr < 1 || static_cast<size_t>(m_attr) > ctx.input_count() - 1)
    ctx.fail("num_scan_inputs is " + std::to_string(m_attr) + " but Scan has " +
             std::to_string(ctx.input_count() > 0 ? ctx.input_count() - 1 : 0) + " state and scan inputs");
  const size_t M = static_cast<size_t>(m_attr);
  const size_t N = ctx.input_count() - 1 - M;
  const size_t K = scan_counts(ctx, body, N, M);
  const std::vector<int64_t> dirs = list_attr(ctx, "directions", M);
  check_directions(ctx, dirs, "directions");

  std::vector<const Tensor*> scans(M);
  for (size_t j = 0; j < M; ++j) {
    scans[j] = &ctx.input(1 + N + j);
    if (scans[j]->rank() < 2)
      ctx.fail("scan input " + std::to_string(j) + " must have batch and sequence axes, got shape " +
               shape_to_string(scans[j]->shape()));
    if (scans[j]->shape()[0] != scans[0]->shape()[0] || scans[j]->shape()[1] != scans[0]->shape()[1])
      ctx.fail("scan input " + std::to_string(j) + " has shape " + shape_to_string(scans[j]->shape()) +
               ", whose batch and sequence sizes differ from scan input 0's " + shape_to_string(scans[0]->shape()));
  }
  const int64_t batch = scans[0]->shape()[0];
  const int64_t max_len = scans[0]->shape()[1];
  if (max_len > 0 && batch > kMaxLoopIterations / max_len)
    ctx.fail("Scan would run " + std::to_string(batch) + " x " + std::to_string(max_len) +
             " iterations, more than the reference interpreter's limit of " + std::to_string(kMaxLoopIterations));
  std::vector<const Tensor*> inits(N);
  for (size_t i = 0; i < N; ++i) {
    inits[i] = &ctx.input(1 + i);
    if (inits[i]->rank() < 1 || inits[i]->shape()[0] != batch)
      ctx.fail("initial state " + std::to_string(i) + " has shape " + shape_to_string(inits[i]->shape()) +
               " but its first axis must be the batch size " + std::to_string(batch));
  }
  std::vector<int64_t> lens(static_cast<size_t>(batch), max_len);
  if (const Tensor* sl = ctx.optional_input(0)) {
    if (sl->dtype() != DataType::Int64) ctx.fail("sequence_lens must be int64, got " + std::string(dtype_name(sl->dtype())));
    if (sl->rank() != 1 || sl->shape()[0] != batch)
      ctx.fail("sequence_lens has shape " + shape_to_string(sl->shape()) + " but must be [" + std::to_string(batch) + "]");
    for (int64_t b = 0; b < batch; ++b) {
      lens[static_cast<size_t>(b)] = load<int64_t>(*sl, static_cast<uint64_t>(b));
      if (lens[static_cast<size_t>(b)] < 0 || lens[static_cast<size_t>(b)] > max_len)
        ctx.fail("sequence_lens[" + std::to_string(b) + "] is " + std::to_string(lens[static_cast<size_t>(b)]) +
                 ", outside [0, " + std::to_string(max_len) + "]");
    }
  }

  std::vector<std::vector<Tensor>> final_states(N);          // per state, per batch entry
  std::vector<std::vector<Tensor>> outputs(K);               // per scan output, batch*max_len elements
  std::vector<std::vector<bool>> produced(K);                // which of those the body computed
  for (size_t k = 0; k < K; ++k) {
    outputs[k].resize(static_cast<size_t>(batch * max_len));
    produced[k].assign(static_cast<size_t>(batch * max_len), false);
  }
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> states(N);
    for (size_t i = 0; i < N; ++i)
      states[i] = slice_axis(ctx, *inits[i], 0, b, 1, without_axis(inits[i]->shape(), 0));
    const int64_t len = lens[static_cast<size_t>(b)];
    for (int64_t t = 0; t < len; ++t) {
      std::vector<Value> args;
      for (const auto& s : states) args.emplace_back(s);
      for (size_t j = 0; j < M; ++j) {
        // Element [b, step]: a contiguous block of the trailing axes.
        const Tensor& x = *scans[j];
        const int64_t step = dirs[j] ? len - 1 - t : t;
        Shape elem(x.shape().begin() + 2, x.shape().end());
        const uint64_t inner = product(elem, 0, elem.size());
        Tensor e = new_tensor(ctx, x.dtype(), elem);
        copy_elements(x, static_cast<uint64_t>(b * max_len + step) * inner, e, 0, inner);
        args.emplace_back(std::move(e));
      }
      std::vector<Value> outs = ctx.run_graph(body, std::move(args));
      for (size_t i = 0; i < N; ++i) {
        check_state(ctx, outs[i], states[i], i);
        states[i] = outs[i].tensor();
      }
      for (size_t k = 0; k < K; ++k) {
        const std::string what = "scan output " + std::to_string(k);
        const Tensor& e = scan_element(ctx, outs[N + k], what);
        const size_t slot = static_cast<size_t>(b * max_len + t);
        outputs[k][slot] = e;
        produced[k][slot] = true;
      }
    }
    for (size_t i = 0; i < N; ++i) final_states[i].push_back(std::move(states[i]));
  }

  for (size_t i = 0; i < N; ++i) {
    std::vector<const Tensor*> parts;
    for (const auto& t : final_states[i]) parts.push_back(&t);
    if (batch == 0) ctx.set_output(i, *inits[i]);
    else ctx.set_output(i, join(ctx, parts, 0, true, "state output " + std::to_string(i)));
  }
  for (size_t k = 0; k < K; ++k) {
    const std::string what = "scan output " + std::to_string(k);
    // The element type and shape: from any step that ran, else the declared type.
    DataType type = DataType::Undefined;
    Shape elem;
    for (size_t s = 0; s < outputs[k].size(); ++s)
      if (produced[k][s]) {
        type = outputs[k][s].dtype();
        elem = outputs[k][s].shape();
        break;
      }
    if (type == DataType::Undefined) std::tie(type, elem) = declared_element(ctx, body.outputs[N + k], what);
    const Tensor padding = new_tensor(ctx, type, elem);
    std::vector<const Tensor*> parts;
    for (size_t s = 0; s < outputs[k].size(); ++s) parts.push_back(produced[k][s] ? &outputs[k][s] : &padding);
    Shape out_shape = elem;
    out_shape.insert(out_shape.begin(), {batch, max_len});
    if (parts.empty()) {
      ctx.set_output(N + k, new_tensor(ctx, type, out_shape));
    } else {
      ScanAccumulator check;  // same shape everywhere, bounded total size
      for (const Tensor* p : parts) check.add(ctx, *p, what);
      ctx.set_output(N + k, reshaped(ctx, join(ctx, parts, 0, true, what), out_shape));
    }
  }
}

// Opset 9+: inputs (states..., scans...), scanned along scan_input_axes in
// scan_input_directions; scan outputs stacked along scan_output_axes, appended
// or prepended per scan_output_directions.
void Scan9(KernelContext& ctx) {
  const Graph& body = graph_attr(ctx, "body");
  const int64_t m_attr = ctx.required_attr("num_scan_inputs").i;
  if (m_attr < 1 || static_cast<size_t>(m_attr) > ctx.input_count())
    ctx.fail("num_scan_inputs is " + std::to_string(m_attr) + " but Scan has " + std::to_string(ctx.input_count()) +
             " inputs");
  const size_t M = static_cast<size_t>(m_attr);
  const size_t N = ctx.input_count() - M;
  const size_t K = scan_counts(ctx, body, N, M);
  std::vector<int64_t> in_axes = list_attr(ctx, "scan_input_axes", M);
  const std::vector<int64_t> in_dirs = list_attr(ctx, "scan_input_directions", M);
  const std::vector<int64_t> out_axes = list_attr(ctx, "scan_output_axes", K);
  const std::vector<int64_t> out_dirs = list_attr(ctx, "scan_output_directions", K);
  check_directions(ctx, in_dirs, "scan_input_directions");
  check_directions(ctx, out_dirs, "scan_output_directions");

  std::vector<const Tensor*> scans(M);
  int64_t len = 0;
  for (size_t j = 0; j < M; ++j) {
    scans[j] = &ctx.input(N + j);
    const std::string what = "scan input " + std::to_string(j);
    if (scans[j]->rank() < 1) ctx.fail(what + " is a scalar; it needs an axis to scan");
    in_axes[j] = scan_axis(ctx, in_axes[j], scans[j]->rank(), what);
    const int64_t l = scans[j]->shape()[static_cast<size_t>(in_axes[j])];
    if (j == 0) len = l;
    else if (l != len)
      ctx.fail(what + " has " + std::to_string(l) + " steps along its scan axis but scan input 0 has " + std::to_string(len));
  }
  if (len > kMaxLoopIterations)
    ctx.fail("Scan would run " + std::to_string(len) + " iterations, more than the reference interpreter's limit of " +
             std::to_string(kMaxLoopIterations));
  std::vector<Tensor> states(N);
  for (size_t i = 0; i < N; ++i) states[i] = ctx.input(i);

  std::vector<ScanAccumulator> acc(K);
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Value> args;
    for (const auto& s : states) args.emplace_back(s);
    for (size_t j = 0; j < M; ++j) {
      const Tensor& x = *scans[j];
      const int64_t step = in_dirs[j] ? len - 1 - t : t;
      args.emplace_back(slice_axis(ctx, x, in_axes[j], step, 1, without_axis(x.shape(), in_axes[j])));
    }
    std::vector<Value> outs = ctx.run_graph(body, std::move(args));
    for (size_t i = 0; i < N; ++i) {
      check_state(ctx, outs[i], states[i], i);
      states[i] = outs[i].tensor();
    }
    for (size_t k = 0; k < K; ++k) {
      const std::string what = "scan output " + std::to_string(k);
      acc[k].add(ctx, scan_element(ctx, outs[N + k], what), what);
    }
  }

  for (size_t i = 0; i < N; ++i) ctx.set_output(i, std::move(states[i]));
  for (size_t k = 0; k < K; ++k) {
    const std::string what = "scan output " + std::to_string(k);
    if (len == 0) {
      auto [type, elem] = declared_element(ctx, body.outputs[N + k], what);
      const int64_t axis = scan_axis(ctx, out_axes[k], static_cast<int64_t>(elem.size()) + 1, what);
      elem.insert(elem.begin() + axis, 0);
      ctx.set_output(N + k, new_tensor(ctx, type, elem));
      continue;
    }
    const int64_t axis = scan_axis(ctx, out_axes[k], acc[k].items.front().rank() + 1, what);
    ctx.set_output(N + k, join(ctx, acc[k].pointers(out_dirs[k] == 1), axis, true, what));
  }
}

// --- sequences -------------------------------------------------------------------

const Value& sequence_input(const KernelContext& ctx, size_t i) {
  const Value* v = ctx.input_value(i);
  if (!v || v->is_none()) ctx.fail("input " + std::to_string(i) + " (a sequence) is required but missing");
  if (!v->is_sequence()) ctx.fail("input " + std::to_string(i) + " must be a sequence, got " + v->describe());
  return *v;
}

// Element type of a sequence: its items', else its declared element type.
DataType sequence_dtype(const Value& seq) {
  for (const auto& item : seq.items())
    if (item.is_tensor()) return item.tensor().dtype();
  const TypeInfo& t = seq.declared_type();
  if (t.kind == TypeInfo::Kind::Tensor) return t.elem;
  if (t.kind == TypeInfo::Kind::Sequence && t.inner && t.inner->kind == TypeInfo::Kind::Tensor) return t.inner->elem;
  return DataType::Undefined;
}

// A copy of `seq` with new items, keeping its element type for when it is empty.
Value with_items(const Value& seq, std::vector<Value> items, DataType dtype) {
  TypeInfo elem = seq.declared_type();
  if (elem.kind != TypeInfo::Kind::Tensor && dtype != DataType::Undefined) elem = TypeInfo::tensor(dtype);
  return Value::sequence(std::move(items), std::move(elem));
}

// Resolves a position in [-n, n-1] (or [-n, n] for insertion).
size_t sequence_position(const KernelContext& ctx, const Tensor& pos, size_t n, bool insertion) {
  int64_t p = int_scalar(ctx, pos, "position");
  const int64_t size = static_cast<int64_t>(n);
  const int64_t hi = insertion ? size : size - 1;
  if (p < -size || p > hi)
    ctx.fail("position " + std::to_string(p) + " is out of range [" + std::to_string(-size) + ", " + std::to_string(hi) +
             "] for a sequence of " + std::to_string(n) + " tensors");
  return static_cast<size_t>(p < 0 ? p + size : p);
}

void SequenceConstruct(KernelContext& ctx) {
  if (ctx.input_count() == 0) ctx.fail("SequenceConstruct needs at least one input");
  std::vector<Value> items;
  const DataType dtype = ctx.input(0).dtype();
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const Tensor& t = ctx.input(i);
    if (t.dtype() != dtype)
      ctx.fail("input " + std::to_string(i) + " is " + std::string(dtype_name(t.dtype())) + " but input 0 is " +
               std::string(dtype_name(dtype)) + "; all must have the same type");
    items.emplace_back(t);
  }
  ctx.set_output(0, Value::sequence(std::move(items), TypeInfo::tensor(dtype)));
}

void SequenceEmpty(KernelContext& ctx) {
  const int64_t dtype = ctx.attr_int("dtype", static_cast<int64_t>(DataType::Float));
  if (dtype < INT32_MIN || dtype > INT32_MAX || !is_known_dtype(static_cast<int32_t>(dtype)) ||
      dtype == static_cast<int64_t>(DataType::Undefined))
    ctx.fail("dtype " + std::to_string(dtype) + " is not a known tensor element type");
  ctx.set_output(0, Value::sequence({}, TypeInfo::tensor(static_cast<DataType>(dtype))));
}

void SequenceAt(KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  const size_t p = sequence_position(ctx, ctx.input(1), seq.items().size(), false);
  ctx.set_output(0, seq.items()[p]);
}

void SequenceInsert(KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  const Tensor& t = ctx.input(1);
  const DataType dtype = sequence_dtype(seq);
  if (dtype != DataType::Undefined && t.dtype() != dtype)
    ctx.fail("cannot insert a " + std::string(dtype_name(t.dtype())) + " tensor into a sequence of " +
             std::string(dtype_name(dtype)));
  std::vector<Value> items = seq.items();
  const Tensor* pos = ctx.optional_input(2);
  const size_t p = pos ? sequence_position(ctx, *pos, items.size(), true) : items.size();
  items.insert(items.begin() + static_cast<std::ptrdiff_t>(p), Value(t));
  ctx.set_output(0, with_items(seq, std::move(items), t.dtype()));
}

void SequenceErase(KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  std::vector<Value> items = seq.items();
  const Tensor* pos = ctx.optional_input(1);
  if (!pos && items.empty()) ctx.fail("cannot erase the last tensor of an empty sequence");
  const size_t p = pos ? sequence_position(ctx, *pos, items.size(), false) : items.size() - 1;
  items.erase(items.begin() + static_cast<std::ptrdiff_t>(p));
  ctx.set_output(0, with_items(seq, std::move(items), sequence_dtype(seq)));
}

void SequenceLength(KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  ctx.set_output(0, int64_scalar(static_cast<int64_t>(seq.items().size())));
}

void SplitToSequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 1) ctx.fail("cannot split a scalar");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), x.rank());
  const int64_t keepdims = ctx.attr_int("keepdims", 1);
  const int64_t dim = x.shape()[static_cast<size_t>(axis)];
  const Tensor* split = ctx.optional_input(1);

  std::vector<int64_t> lengths;
  bool squeeze = false;
  // Every chunk costs a Value even when empty: bound their number.
  auto check_count = [&](uint64_t n) {
    if (n > ctx.max_tensor_bytes() / sizeof(Value))
      ctx.fail("splitting into " + std::to_string(n) + " chunks would exceed the memory limit");
  };
  if (!split) {
    check_count(static_cast<uint64_t>(dim));
    // Default: chunks of 1; keepdims=0 drops the split axis.
    lengths.assign(static_cast<size_t>(dim), 1);
    squeeze = keepdims == 0;
  } else if (split->rank() == 0) {
    const int64_t chunk = int_scalar(ctx, *split, "split");
    if (chunk <= 0) ctx.fail("split must be positive, got " + std::to_string(chunk));
    check_count(static_cast<uint64_t>(dim / chunk + 1));
    for (int64_t start = 0; start < dim; start += chunk) lengths.push_back(std::min(chunk, dim - start));
  } else {
    if (split->rank() != 1) ctx.fail("split must be a scalar or 1-D, got shape " + shape_to_string(split->shape()));
    if (split->dtype() != DataType::Int32 && split->dtype() != DataType::Int64)
      ctx.fail("split must be int32 or int64, got " + std::string(dtype_name(split->dtype())));
    lengths = int_values(ctx, *split);
    int64_t sum = 0;
    // The spec says "positive", but onnx's own test (simple/test_sequence_model8)
    // splits a 0-length axis by [0, 0, 0]; empty chunks are accepted as numpy does.
    for (int64_t l : lengths) {
      if (l < 0) ctx.fail("split entries must not be negative, got " + std::to_string(l));
      if (__builtin_add_overflow(sum, l, &sum)) ctx.fail("split entries overflow");
    }
    if (sum != dim)
      ctx.fail("split entries sum to " + std::to_string(sum) + " but axis " + std::to_string(axis) + " has size " +
               std::to_string(dim));
  }

  std::vector<Value> items;
  int64_t start = 0;
  for (int64_t l : lengths) {
    Shape shape = x.shape();
    if (squeeze) shape.erase(shape.begin() + axis);
    else shape[static_cast<size_t>(axis)] = l;
    items.emplace_back(slice_axis(ctx, x, axis, start, l, shape));
    start += l;
  }
  ctx.set_output(0, Value::sequence(std::move(items), TypeInfo::tensor(x.dtype())));
}

void ConcatFromSequence(KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  const bool new_axis = ctx.attr_int("new_axis", 0) != 0;
  const int64_t axis_attr = ctx.required_attr("axis").i;
  if (seq.items().empty()) ctx.fail("cannot concatenate an empty sequence");
  std::vector<const Tensor*> parts;
  for (size_t i = 0; i < seq.items().size(); ++i) {
    const Value& v = seq.items()[i];
    if (!v.is_tensor()) ctx.fail("sequence element " + std::to_string(i) + " is not a tensor: " + v.describe());
    parts.push_back(&v.tensor());
  }
  const int64_t rank = parts.front()->rank();
  if (!new_axis && rank == 0) ctx.fail("cannot concatenate scalars without new_axis=1");
  // new_axis=1 accepts [-r-1, r]: the axis of the (r+1)-D result.
  const int64_t axis = normalize_axis(ctx, axis_attr, new_axis ? rank + 1 : rank);
  ctx.set_output(0, join(ctx, parts, axis, new_axis, "ConcatFromSequence"));
}

// Body runs once per element of the first input; other sequence inputs are
// iterated alongside it, tensor inputs passed whole to every run.
void SequenceMap(KernelContext& ctx) {
  const Graph& body = graph_attr(ctx, "body");
  const Value& first = sequence_input(ctx, 0);
  const size_t count = first.items().size();
  const size_t n_in = ctx.input_count();
  if (body.inputs.size() != n_in)
    ctx.fail("the body takes " + std::to_string(body.inputs.size()) + " inputs but SequenceMap has " + std::to_string(n_in));
  if (body.outputs.size() != ctx.output_count())
    ctx.fail("the body has " + std::to_string(body.outputs.size()) + " outputs but SequenceMap has " +
             std::to_string(ctx.output_count()));
  for (size_t i = 1; i < n_in; ++i) {
    const Value* v = ctx.input_value(i);
    if (!v || v->is_none()) ctx.fail("additional input " + std::to_string(i) + " is missing");
    if (v->is_sequence() && v->items().size() != count)
      ctx.fail("input " + std::to_string(i) + " is a sequence of " + std::to_string(v->items().size()) +
               " elements but input 0 has " + std::to_string(count));
  }
  std::vector<std::vector<Value>> results(body.outputs.size());
  for (size_t s = 0; s < count; ++s) {
    std::vector<Value> args;
    args.push_back(first.items()[s]);
    for (size_t i = 1; i < n_in; ++i) {
      const Value& v = *ctx.input_value(i);
      args.push_back(v.is_sequence() ? v.items()[s] : v);
    }
    std::vector<Value> outs = ctx.run_graph(body, std::move(args));
    for (size_t o = 0; o < outs.size(); ++o) {
      if (!outs[o].is_tensor()) ctx.fail("body output " + std::to_string(o) + " must be a tensor, got " + outs[o].describe());
      results[o].push_back(std::move(outs[o]));
    }
  }
  for (size_t o = 0; o < results.size(); ++o) {
    // Element type: the body's declared output type (a tensor), else the items'.
    TypeInfo elem = body.outputs[o].type;
    if (elem.kind == TypeInfo::Kind::Sequence && elem.inner) elem = *elem.inner;
    if (elem.kind != TypeInfo::Kind::Tensor && !results[o].empty())
      elem = TypeInfo::tensor(results[o].front().tensor().dtype());
    ctx.set_output(o, Value::sequence(std::move(results[o]), std::move(elem)));
  }
}

// --- optionals -------------------------------------------------------------------

void Optional(KernelContext& ctx) {
  const Value* v = ctx.input_value(0);
  const Attribute* type = ctx.attr("type");
  if (type && type->type != AttrType::TypeProto) ctx.fail("attribute 'type' must be a type proto");
  if (!v || v->is_none()) {
    if (!type) ctx.fail("Optional without an input needs the 'type' attribute");
    TypeInfo opt;
    opt.kind = TypeInfo::Kind::Optional;
    opt.inner = std::make_shared<TypeInfo>(type->tp);
    ctx.set_output(0, Value::none(std::move(opt)));
    return;
  }
  if (v->is_map()) ctx.fail("Optional cannot wrap a map");
  if (type) {
    const TypeInfo& t = type->tp;
    const bool kind_ok = (t.kind == TypeInfo::Kind::Tensor && v->is_tensor()) ||
                         (t.kind == TypeInfo::Kind::Sequence && v->is_sequence()) || t.kind == TypeInfo::Kind::Unknown;
    if (!kind_ok) ctx.fail("the input " + v->describe() + " does not match the 'type' attribute " + t.to_string());
    if (v->is_tensor() && t.elem != DataType::Undefined && t.elem != v->tensor().dtype())
      ctx.fail("the input " + v->describe() + " does not match the 'type' attribute " + t.to_string());
  }
  ctx.set_output(0, *v);
}

void OptionalHasElement(KernelContext& ctx) {
  const Value* v = ctx.input_value(0);
  // Opset 15 requires the input; from 18 on an absent input means "no element".
  if (!v && ctx.opset_version() < 18) ctx.fail("OptionalHasElement requires its input before opset 18");
  ctx.set_output(0, bool_scalar_tensor(v && !v->is_none()));
}

void OptionalGetElement(KernelContext& ctx) {
  const Value* v = ctx.input_value(0);
  if (!v || v->is_none()) ctx.fail("the optional input is empty; it has no element to get");
  if (v->is_map()) ctx.fail("OptionalGetElement does not take maps");
  ctx.set_output(0, *v);
}

}  // namespace

void register_control_flow_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since, int until = INT_MAX) {
    r.add(KernelDef{"", op, since, until, "reference", fn, nullptr});
  };
  add("If", If, 1);
  add("Loop", Loop, 1);
  add("Scan", Scan8, 8, 8);
  add("Scan", Scan9, 9);
  add("SequenceConstruct", SequenceConstruct, 11);
  add("SequenceEmpty", SequenceEmpty, 11);
  add("SequenceAt", SequenceAt, 11);
  add("SequenceInsert", SequenceInsert, 11);
  add("SequenceErase", SequenceErase, 11);
  add("SequenceLength", SequenceLength, 11);
  add("SplitToSequence", SplitToSequence, 11);
  add("ConcatFromSequence", ConcatFromSequence, 11);
  add("SequenceMap", SequenceMap, 17);
  add("Optional", Optional, 15);
  add("OptionalHasElement", OptionalHasElement, 15);
  add("OptionalGetElement", OptionalGetElement, 15);
}

}  // namespace onnxscope::ref
