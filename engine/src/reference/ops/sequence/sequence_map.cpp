// Reference kernel: SequenceMap.
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

}  // namespace onnxscope::ref
