// Reference kernel: ConcatFromSequence.
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

}  // namespace onnxscope::ref
