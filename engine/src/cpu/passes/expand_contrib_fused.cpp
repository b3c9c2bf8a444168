// The fused operators ONNX Runtime's graph optimizer saves into models
// (optimized_model_filepath), on float32, in the CPU engine's own terms:
//   com.microsoft FusedConv(X, W, [B]) with an activation the engine's
//     FusedConv has (fused_ops.h: the same names and parameters)
//     -> onnxscope.cpu FusedConv, the same node (a sum input Z stays with
//        the reference kernel: the CPU engine has no residual convolution)
//   com.microsoft FusedGemm(A, B, [C]) with Relu, Tanh, Sigmoid, LeakyRelu or
//     HardSigmoid (its activation_alpha / _beta as the engine's
//     activation_params) -> onnxscope.cpu FusedGemm
//   com.microsoft FusedMatMul(A, B) with alpha, transA, transB, no transBatch
//     -> [Transpose(A)] [Transpose(B)] MatMul [Mul(alpha)]
//        (a constant B's Transpose folds at prepare time; the MatMul and what
//        follows it then fuse as an exporter's own would)
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

bool engine_activation(const Node& n) {
  const Attribute* a = n.attribute("activation");
  if (!a) return true;
  static const std::set<std::string> known = {"Relu", "Tanh", "Sigmoid", "LeakyRelu", "Clip", "HardSigmoid"};
  return a->type == AttrType::String && known.count(a->s) > 0;
}

bool gemm_activation(const Node& n) {
  const Attribute* a = n.attribute("activation");
  if (!a) return true;
  static const std::set<std::string> known = {"Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid"};
  return a->type == AttrType::String && known.count(a->s) > 0;
}

// FusedGemm's activation_alpha / activation_beta as the engine's
// activation_params (fused_ops.h), ONNX's defaults where absent.
void to_engine_gemm(Node& n) {
  const Attribute* a = n.attribute("activation");
  const std::string act = a ? a->s : "";
  auto f = [&](const char* name, float fallback) {
    const Attribute* x = n.attribute(name);
    return x && x->type == AttrType::Float ? x->f : fallback;
  };
  std::vector<float> params;
  if (act == "LeakyRelu") params = {f("activation_alpha", 0.01f)};
  else if (act == "HardSigmoid") params = {f("activation_alpha", 0.2f), f("activation_beta", 0.5f)};
  std::vector<Attribute> kept;
  for (auto& at : n.attributes)
    if (at.name.rfind("activation_", 0) != 0) kept.push_back(std::move(at));
  n.attributes = std::move(kept);
  if (!params.empty()) n.attributes.push_back(make_attr_floats("activation_params", params));
  n.domain = kCpuDomain;
}

int64_t attr_int_or(const Node& n, const char* name, int64_t v) {
  const Attribute* a = n.attribute(name);
  return a && a->type == AttrType::Int ? a->i : v;
}

// Float32: X or W known to be float and neither known to be another type.
// ONNX Runtime's saved models declare no types for the values its contrib
// nodes make (a FusedConv after a FusedConv), but their weights are typed
// initializers, and the operators take X and W of one type.
bool float_op(const Graph& g, const Node& n) {
  const DataType x = elem_type(g, n.inputs[0]), w = elem_type(g, n.inputs[1]);
  return (x == DataType::Float || w == DataType::Float) && (x == DataType::Float || x == DataType::Undefined) &&
         (w == DataType::Float || w == DataType::Undefined);
}

}  // namespace

bool expand_contrib_fused(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  std::vector<Node> out;
  out.reserve(g.nodes.size());
  size_t convs = 0, matmuls = 0;
  for (Node& n : g.nodes) {
    const bool ms = n.domain == "com.microsoft";
    if (ms && n.op_type == "FusedConv" && n.inputs.size() >= 2 && n.inputs.size() <= 3 && n.outputs.size() == 1 &&
        float_op(g, n) && engine_activation(n) && ctx.allow(n.name)) {
      n.domain = kCpuDomain;
      out.push_back(std::move(n));
      ++convs;
      continue;
    }
    if (ms && n.op_type == "FusedGemm" && n.inputs.size() >= 2 && n.outputs.size() == 1 && float_op(g, n) &&
        gemm_activation(n) && ctx.allow(n.name)) {
      to_engine_gemm(n);
      out.push_back(std::move(n));
      ++convs;
      continue;
    }
    const bool fm = ms && n.op_type == "FusedMatMul" && n.inputs.size() == 2 && n.outputs.size() == 1 &&
                    float_op(g, n) && attr_int_or(n, "transBatchA", 0) == 0 &&
                    attr_int_or(n, "transBatchB", 0) == 0;
    // 0: unknown (or a scalar, which MatMul refuses anyway).
    const size_t ra = fm ? known_rank(g, n.inputs[0]).value_or(0) : 0;
    const size_t rb = fm ? known_rank(g, n.inputs[1]).value_or(0) : 0;
    const bool ta = attr_int_or(n, "transA", 0) != 0, tb = attr_int_or(n, "transB", 0) != 0;
    // A transposed operand needs its rank (the permutation swaps its last two dims).
    if (!fm || (ta && ra < 2) || (tb && rb < 2) || !ctx.allow(n.name)) {
      out.push_back(std::move(n));
      continue;
    }
    const std::string base = n.name.empty() ? "FusedMatMul" : n.name;
    auto transpose = [&](const std::string& x, size_t rank, const char* tag) {
      Node t;
      t.name = unique_node_name(g, base + "_Transpose" + tag);
      t.op_type = "Transpose";
      t.inputs = {x};
      t.outputs = {unique_value_name(g, x + "_T")};
      std::vector<int64_t> perm(rank);
      for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(d);
      std::swap(perm[rank - 2], perm[rank - 1]);
      t.attributes.push_back(make_attr_ints("perm", perm));
      std::string y = t.outputs[0];
      out.push_back(std::move(t));
      return y;
    };
    const std::string a = ta ? transpose(n.inputs[0], ra, "A") : n.inputs[0];
    const std::string b = tb ? transpose(n.inputs[1], rb, "B") : n.inputs[1];
    const Attribute* alpha_attr = n.attribute("alpha");
    const float alpha = alpha_attr && alpha_attr->type == AttrType::Float ? alpha_attr->f : 1.0f;
    Node mm;
    mm.name = unique_node_name(g, base + "_MatMul");
    mm.op_type = "MatMul";
    mm.inputs = {a, b};
    mm.outputs = {alpha == 1.0f ? n.outputs[0] : unique_value_name(g, n.outputs[0] + "_unscaled")};
    const std::string product = mm.outputs[0];
    out.push_back(std::move(mm));
    if (alpha != 1.0f) out.push_back(scale_node(g, base, product, alpha, n.outputs[0]));
    ++matmuls;
  }
  g.nodes = std::move(out);  // (every node was moved into out, rewritten or not)
  if (convs + matmuls == 0) return false;
  if (convs) add_cpu_opset(model);
  log_pass(ctx, model, "expand-contrib-fused: " + std::to_string(convs) + " FusedConv/FusedGemm -> the engine's, " +
                           std::to_string(matmuls) + " FusedMatMul -> MatMul with its transposes and scale");
  return true;
}

}  // namespace onnxscope::cpu
