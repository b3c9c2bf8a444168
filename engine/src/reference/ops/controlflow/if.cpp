// Reference kernel: If.
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

}  // namespace onnxscope::ref
