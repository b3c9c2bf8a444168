// Reference kernels: Scan (opset 8, and opsets 9 on).
//
// Values: an optional holding a value is that value itself (a tensor or a
// sequence); an empty optional is Value::none(type). Subgraphs (If branches,
// Loop/Scan bodies, SequenceMap's body) run through ctx.run_graph, which binds
// their inputs by position and lets them read the enclosing scope. These
// kernels only move data, so every element type works, packed 4-/2-/6-bit
// types and strings included.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/controlflow/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

// The same elements under another shape with the same element count.
Tensor reshaped(const KernelContext& ctx, const Tensor& x, const Shape& shape) {
  Tensor out = new_tensor(ctx, x.dtype(), shape);
  copy_elements(x, 0, out, 0, x.element_count());
  return out;
}

// x's shape without `axis`.
Shape without_axis(const Shape& s, int64_t axis) {
  Shape r = s;
  r.erase(r.begin() + axis);
  return r;
}

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

}  // namespace

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

}  // namespace onnxscope::ref
