// Random elementwise chains (random_chain.h).
#include "random_chain.h"

#include "cpu/fused_ops.h"

namespace onnxscope::test {

ModelBuilder random_elementwise_chain(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto positive_first = [](const std::string& o) {
    return o == "Log" || o == "Sqrt" || o == "Reciprocal" || o == "Pow" || o == "Div";
  };
  ModelBuilder b(22);
  std::vector<DimSpec> shape;
  for (int d = pick(1, 3); d > 0; --d) shape.push_back(int64_t{pick(1, 4)});
  b.input("x", DataType::Float, shape);
  std::vector<DimSpec> side(shape.begin() + pick(0, static_cast<int>(shape.size())), shape.end());
  for (auto& d : side)
    if (pick(0, 1)) d = int64_t{1};
  b.input("s", DataType::Float, side);
  b.initializer(make_float_tensor("half", {}, {0.5f}));
  std::vector<const cpu::ChainOp*> chain;
  int nodes = 0;
  for (int want = pick(2, 8); nodes < want;) {
    const cpu::ChainOp& op = cpu::kChainOps[static_cast<size_t>(pick(0, static_cast<int>(std::size(cpu::kChainOps)) - 1))];
    const int cost = positive_first(op.op) ? 3 : 1;
    if (nodes + cost > 8) break;
    chain.push_back(&op);
    nodes += cost;
  }
  std::string v = "x";
  for (size_t i = 0; i < chain.size(); ++i) {
    const cpu::ChainOp& op = *chain[i];
    const std::string o = op.op, name = "n" + std::to_string(i);
    const std::string out = i + 1 == chain.size() ? "y" : "t" + std::to_string(i);
    if (positive_first(o)) {
      b.node("Abs", {v}, {name + "_abs"}, name + "_abs");
      b.node("Add", {name + "_abs", "half"}, {name + "_pos"}, name + "_pos");
      v = name + "_pos";
    }
    std::vector<std::string> in{v};
    if (op.arity == 2) in = pick(0, 1) || o == "Pow" || o == "Div" ? std::vector<std::string>{v, "s"} : std::vector<std::string>{"s", v};
    onnx::NodeProto& n = b.node(o, in, {out}, name);
    for (const char* a : op.attrs)
      if (a) attr_float(n, a, std::uniform_real_distribution<float>(0.1f, 1.5f)(rng));
    if (o == "Gelu" && pick(0, 1)) attr_string(n, "approximate", "tanh");
    v = out;
  }
  b.output_untyped("y");
  return b;
}

}  // namespace onnxscope::test
