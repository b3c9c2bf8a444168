// Reference kernels: Optional, OptionalHasElement, OptionalGetElement.
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

}  // namespace onnxscope::ref
