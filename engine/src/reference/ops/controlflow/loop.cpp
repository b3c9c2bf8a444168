// Reference kernel: Loop.
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

}  // namespace onnxscope::ref
