// onnxruntime's dynamic quantization (quantize_dynamic) writes each linear
// layer as five nodes:
//   Aq, as, az = DynamicQuantizeLinear(X)
//   S = Mul(as, bs)                  bs: a constant float, one value or [N]
//   Q = MatMulInteger(Aq, B, az, bz) B, bz: constants
//   C = Cast(Q, to = FLOAT)
//   Y = Mul(C, S)        [Y' = Add(Y, bias)]   bias: a constant float [N]
// -> com.microsoft MatMulIntegerToFloat(Aq, B, as, bs, az, bz, [bias]), what
// onnxruntime's own optimizer makes of it; and where X's DynamicQuantizeLinear
// feeds that one node alone, DynamicQuantizeMatMul(X, B, bs, bz, [bias]).
// The int32 sums no longer go to memory and back through Cast and Mul (the
// kernel scales them in registers: kernels/quantization/matmul_integer_vnni.cpp).
//
// The same arithmetic: float(sum) * (as * bs[n]) [+ bias[n]], each step the
// float operation the unfused nodes do (Mul is commutative, the scale
// product is formed before it multiplies the sums, as S was).
#include <algorithm>

#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

constexpr const char* kMs = "com.microsoft";

// A constant float of one value, or [N] (rank <= 1).
bool per_column_constant(const Model& m, const std::string& name, int64_t n) {
  const Tensor* t = constant_tensor(m, name);
  return t && t->dtype() == DataType::Float && t->rank() <= 1 &&
         (t->element_count() == 1 || static_cast<int64_t>(t->element_count()) == n);
}

// A value known to hold one element (a scalar shape, or DynamicQuantizeLinear's scale or zero point).
bool one_value(const Model& m, const GraphIndex& idx, const std::string& name) {
  if (const Node* p = idx.producer_of(m.graph, name); p && is_op(*p, "DynamicQuantizeLinear") && p->outputs.size() == 3 &&
                                                      (p->outputs[1] == name || p->outputs[2] == name))
    return true;
  const auto s = static_shape(m.graph, name);
  return s && std::all_of(s->begin(), s->end(), [](int64_t d) { return d == 1; });
}

void add_ms_opset(Model& m) {
  for (const auto& o : m.opset_imports)
    if (o.domain == kMs) return;
  m.opset_imports.push_back({kMs, 1});
}

// MatMulInteger -> Cast -> Mul (-> Add) chains into MatMulIntegerToFloat.
size_t fuse_to_float(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mmi = g.nodes[i];
    if (!is_op(mmi, "MatMulInteger") || mmi.inputs.size() < 2 || mmi.outputs.size() != 1 || mmi.outputs[0].empty()) continue;
    const Tensor* b = constant_tensor(model, mmi.inputs[1]);
    if (!b || b->rank() != 2 || (b->dtype() != DataType::Int8 && b->dtype() != DataType::Uint8)) continue;
    // MatMulInteger's int32 sums cannot wrap (at most K * 255 * 256 in size), so
    // MatMulIntegerToFloat's unwrapped sums are the values the Cast read.
    if (b->shape()[0] > 32768) continue;
    const int64_t n = b->shape()[1];
    const std::string az = mmi.inputs.size() > 2 ? mmi.inputs[2] : "", bz = mmi.inputs.size() > 3 ? mmi.inputs[3] : "";
    if (!az.empty() && !one_value(model, idx, az)) continue;
    if (!bz.empty()) {  // one value or one per column, as MatMulIntegerToFloat takes it
      const Tensor* z = constant_tensor(model, bz);
      if (!z || z->rank() > 1 || (z->element_count() != 1 && static_cast<int64_t>(z->element_count()) != n)) continue;
    }
    const Node* cast = idx.sole_reader(g, mmi.outputs[0], "Cast");
    if (!cast) continue;
    const Attribute* to = cast->attribute("to");
    if (!to || to->i != static_cast<int64_t>(DataType::Float)) continue;
    const Node* mul = idx.sole_reader(g, cast->outputs[0], "Mul");
    if (!mul || mul->inputs.size() != 2) continue;
    const std::string s = other_operand(*mul, cast->outputs[0]);
    const Node* scales = s.empty() ? nullptr : idx.producer_of(g, s);
    if (!scales || !is_op(*scales, "Mul") || scales->inputs.size() != 2 || scales->outputs.size() != 1) continue;
    // S = Mul(as, bs): as one value at run time, bs a constant (one value or per column).
    std::string as, bs;
    for (int k = 0; k < 2 && as.empty(); ++k) {
      const std::string& x = scales->inputs[static_cast<size_t>(k)];
      const std::string& y = scales->inputs[static_cast<size_t>(1 - k)];
      if (elem_type(g, x) == DataType::Float && one_value(model, idx, x) && per_column_constant(model, y, n)) as = x, bs = y;
    }
    if (as.empty()) continue;
    std::vector<const Node*> chain = {&mmi, cast, mul};
    std::string bias, out = mul->outputs[0];
    if (const Node* add = idx.sole_reader(g, out, "Add"); add && add->inputs.size() == 2) {
      const std::string other = other_operand(*add, out);
      const Tensor* t = other.empty() ? nullptr : constant_tensor(model, other);
      if (t && t->dtype() == DataType::Float && t->rank() == 1 && t->shape()[0] == n) {
        bias = other;
        out = add->outputs[0];
        chain.push_back(add);
      }
    }
    // S's Mul goes with the chain when nothing else reads S.
    const bool scales_too = idx.only_read_by(s, static_cast<size_t>(mul - g.nodes.data()));
    if (scales_too) chain.insert(chain.begin(), scales);
    Node f;
    f.name = unique_node_name(g, (mmi.name.empty() ? std::string("MatMulInteger") : mmi.name) + "_to_float");
    f.op_type = "MatMulIntegerToFloat";
    f.domain = kMs;
    f.inputs = {mmi.inputs[0], mmi.inputs[1], as, bs, az, bz, bias};
    while (f.inputs.back().empty()) f.inputs.pop_back();
    f.outputs = {out};
    if (replace_chain(ctx, g, remove, chain, std::move(f))) ++fused;
  }
  erase_nodes(g, remove);
  return fused;
}

// DynamicQuantizeLinear(X) read by one MatMulIntegerToFloat alone (its three
// outputs as A, a_scale, a_zero_point) -> DynamicQuantizeMatMul(X, ...).
size_t fuse_dynamic(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mf = g.nodes[i];
    if (mf.domain != kMs || mf.op_type != "MatMulIntegerToFloat" || mf.inputs.size() < 5) continue;
    const int qi = idx.producer_index(mf.inputs[0]);
    if (qi < 0) continue;
    const Node& dq = g.nodes[static_cast<size_t>(qi)];
    if (!is_op(dq, "DynamicQuantizeLinear") || dq.outputs.size() != 3 || mf.inputs[2] != dq.outputs[1] ||
        mf.inputs[4] != dq.outputs[2])
      continue;
    if (!idx.only_read_by(dq.outputs[0], i) || !idx.only_read_by(dq.outputs[1], i) || !idx.only_read_by(dq.outputs[2], i))
      continue;
    Node f;
    f.name = unique_node_name(g, dq.name.empty() ? std::string("DynamicQuantizeMatMul") : dq.name + "_matmul");
    f.op_type = "DynamicQuantizeMatMul";
    f.domain = kMs;
    f.inputs = {dq.inputs[0], mf.inputs[1], mf.inputs[3], mf.inputs.size() > 5 ? mf.inputs[5] : "",
                mf.inputs.size() > 6 ? mf.inputs[6] : ""};
    while (f.inputs.back().empty()) f.inputs.pop_back();
    f.outputs = mf.outputs;
    if (replace_chain(ctx, g, remove, {&dq, &mf}, std::move(f))) ++fused;
  }
  erase_nodes(g, remove);
  return fused;
}

}  // namespace

bool fuse_matmul_integer_to_float(Model& model, PassContext& ctx) {
  if (model.opset_version("") < 10) return false;  // MatMulInteger-10 on
  const size_t to_float = fuse_to_float(model, ctx);
  if (to_float == 0) return false;
  add_ms_opset(model);
  const size_t dynamic = fuse_dynamic(model, ctx);
  log_pass(ctx, model, "fuse-matmul-integer-to-float: " + std::to_string(to_float) + " MatMulInteger + Cast + Mul [+ Add] -> " +
                           "MatMulIntegerToFloat, " + std::to_string(dynamic) + " of them with their DynamicQuantizeLinear -> " +
                           "DynamicQuantizeMatMul");
  return true;
}

}  // namespace onnxscope::cpu
