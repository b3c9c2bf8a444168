// MatMul(A, B) + bias -> Gemm(A, B, bias) when A and B are 2-D (ranks known),
// the bias has shape [N] or [1, N] with N = B's column count, and only the
// Add reads the product. Gemm (opset >= 7) broadcasts C unidirectionally to
// [M, N], exactly what the Add did. Float and double only.
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

bool bias_fits(const Graph& g, const std::string& bias, int64_t n) {
  auto s = static_shape(g, bias);
  if (!s) return false;
  return (s->size() == 1 && (*s)[0] == n) || (s->size() == 2 && (*s)[0] == 1 && (*s)[1] == n);
}

}  // namespace

bool matmul_add_to_gemm(Model& model, PassContext& ctx) {
  if (model.opset_version("") < 7) return false;
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& add = g.nodes[i];
    if (!is_op(add, "Add") || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
    for (int side = 0; side < 2; ++side) {
      const std::string& prod = add.inputs[static_cast<size_t>(side)];
      const std::string& bias = add.inputs[static_cast<size_t>(1 - side)];
      const int mi = idx.producer_index(prod);
      if (mi < 0 || remove[static_cast<size_t>(mi)] || !idx.only_read_by(prod, i)) continue;
      const Node& mm = g.nodes[static_cast<size_t>(mi)];
      if (!is_op(mm, "MatMul") || mm.inputs.size() != 2 || mm.outputs.size() != 1) continue;
      const auto a = tensor_type(g, mm.inputs[0]);
      const auto b = tensor_type(g, mm.inputs[1]);
      if (!a || !b || !a->shape || !b->shape || a->shape->size() != 2 || b->shape->size() != 2) continue;
      if ((a->elem != DataType::Float && a->elem != DataType::Double) || elem_type(g, bias) != a->elem) continue;
      const Dim& n = (*b->shape)[1];
      if (!n.is_known() || !bias_fits(g, bias, n.value) || !ctx.allow(mm.name)) continue;
      Node gemm;
      gemm.name = mm.name;  // replaces the MatMul; the Add's name goes to provenance
      gemm.op_type = "Gemm";
      gemm.inputs = {mm.inputs[0], mm.inputs[1], bias};
      gemm.outputs = {add.outputs[0]};
      set_fused_from(gemm, {&mm, &add});
      // At the Add's position: the bias may be computed after the MatMul.
      g.nodes[i] = std::move(gemm);
      remove[static_cast<size_t>(mi)] = true;
      ++fused;
      break;
    }
  }
  erase_nodes(g, remove);
  if (fused) log_pass(ctx, model, "matmul-add-to-gemm: " + std::to_string(fused) + " MatMul + Add -> Gemm");
  return fused > 0;
}

}  // namespace onnxscope::cpu
