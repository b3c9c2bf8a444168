// Reference kernel: ai.onnx.preview.training Gradient: reverse-mode differentiation of the graph it names.
//
// Partial derivatives of the tensor named by `y` with respect to the tensors
// named by `xs`, by reverse-mode differentiation of the nodes between them.
// The forward part is recomputed from this node's own inputs (the values of
// xs, then zs), as the spec says. Arithmetic in double; derivative rules for
// the elementwise ops listed below.
#include <map>
#include <set>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

struct Grad {
  Shape shape;
  std::vector<double> v;
};

std::vector<double> values_of(const Tensor& t) { return real_values(t); }

// Sums a broadcast gradient back down to the operand's shape.
Grad unbroadcast(const KernelContext& ctx, const Shape& out, const std::vector<double>& g, const Shape& to) {
  Grad r{to, std::vector<double>(checked_element_count(to).value_or(0), 0.0)};
  const Shape* shapes[] = {&to};
  BroadcastIndex bi(out, shapes);
  for (size_t i = 0; i < g.size(); ++i, bi.next()) r.v[bi.offsets()[0]] += g[i];
  (void)ctx;
  return r;
}

void accumulate(std::map<std::string, Grad>& grads, const std::string& name, Grad g) {
  auto it = grads.find(name);
  if (it == grads.end()) {
    grads.emplace(name, std::move(g));
    return;
  }
  for (size_t i = 0; i < g.v.size(); ++i) it->second.v[i] += g.v[i];
}

}  // namespace

void GradientOp(KernelContext& ctx) {
  const std::vector<std::string> xs = ctx.attr_strings("xs");
  const std::vector<std::string> zs = ctx.attr_strings("zs");
  const std::string y = ctx.attr_string("y");
  if (xs.empty() || y.empty()) ctx.fail("attributes 'xs' and 'y' are required");
  if (ctx.input_count() != xs.size() + zs.size())
    ctx.fail("expects " + std::to_string(xs.size() + zs.size()) + " inputs (the values of xs then zs), got " +
             std::to_string(ctx.input_count()));
  if (ctx.output_count() != xs.size()) ctx.fail("expects one output per name in xs");

  // The nodes y depends on, stopping at the fed names.
  const Graph& g = ctx.graph();
  std::set<std::string> fed(xs.begin(), xs.end());
  fed.insert(zs.begin(), zs.end());
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& o : g.nodes[i].outputs) producer[o] = i;
  std::set<size_t> needed;
  std::vector<std::string> stack{y};
  while (!stack.empty()) {
    std::string name = stack.back();
    stack.pop_back();
    if (fed.count(name)) continue;
    auto p = producer.find(name);
    if (p == producer.end()) continue;  // a graph input or initializer: a constant here
    if (&g.nodes[p->second] == &ctx.node()) ctx.fail("y depends on this Gradient node itself");
    if (!needed.insert(p->second).second) continue;
    for (const auto& in : g.nodes[p->second].inputs)
      if (!in.empty()) stack.push_back(in);
  }
  if (!fed.count(y) && !producer.count(y)) ctx.fail("y '" + y + "' is not produced in this graph");

  // Recompute them as a subgraph fed with this node's inputs; every
  // intermediate becomes an output so the backward pass can read it.
  Graph sub;
  std::vector<Value> feeds;
  for (size_t k = 0; k < xs.size() + zs.size(); ++k) {
    sub.inputs.push_back({k < xs.size() ? xs[k] : zs[k - xs.size()], {}, {}});
    feeds.push_back(*ctx.input_value(k));
  }
  for (size_t i : needed) sub.nodes.push_back(g.nodes[i]);
  for (const auto& n : sub.nodes)
    for (const auto& o : n.outputs)
      if (!o.empty()) sub.outputs.push_back({o, {}, {}});
  std::vector<Value> outs = ctx.run_graph(sub, std::move(feeds));
  std::map<std::string, const Tensor*> value;
  for (size_t k = 0; k < sub.inputs.size(); ++k) value[sub.inputs[k].name] = &ctx.input(k);
  for (size_t k = 0; k < sub.outputs.size(); ++k)
    if (outs[k].is_tensor()) value[sub.outputs[k].name] = &outs[k].tensor();
  auto tensor = [&](const std::string& name) -> const Tensor& {
    auto it = value.find(name);
    if (it == value.end()) ctx.fail("value '" + name + "' is not available to differentiate");
    return *it->second;
  };

  std::map<std::string, Grad> grads;
  const Tensor& yt = tensor(y);
  grads[y] = Grad{yt.shape(), std::vector<double>(yt.element_count(), 1.0)};
  for (auto it = sub.nodes.rbegin(); it != sub.nodes.rend(); ++it) {
    const Node& n = *it;
    auto gy = grads.find(n.outputs.empty() ? std::string() : n.outputs[0]);
    if (gy == grads.end()) continue;  // does not reach y
    const Grad gout = gy->second;
    const std::string& op = n.op_type;
    auto in = [&](size_t k) -> const Tensor& { return tensor(n.inputs.at(k)); };
    auto elementwise2 = [&](auto da, auto db) {
      const Tensor& a = in(0);
      const Tensor& b = in(1);
      auto av = values_of(a), bv = values_of(b);
      const Shape* shapes[] = {&a.shape(), &b.shape()};
      BroadcastIndex bi(gout.shape, shapes);
      std::vector<double> ga(gout.v.size()), gb(gout.v.size());
      for (size_t i = 0; i < gout.v.size(); ++i, bi.next()) {
        const double x = av[bi.offsets()[0]], z = bv[bi.offsets()[1]];
        ga[i] = gout.v[i] * da(x, z);
        gb[i] = gout.v[i] * db(x, z);
      }
      accumulate(grads, n.inputs[0], unbroadcast(ctx, gout.shape, ga, a.shape()));
      accumulate(grads, n.inputs[1], unbroadcast(ctx, gout.shape, gb, b.shape()));
    };
    auto elementwise1 = [&](auto d) {
      auto xv = values_of(in(0));
      const auto yv = values_of(tensor(n.outputs[0]));
      Grad r{in(0).shape(), std::vector<double>(xv.size())};
      for (size_t i = 0; i < xv.size(); ++i) r.v[i] = gout.v[i] * d(xv[i], yv[i]);
      accumulate(grads, n.inputs[0], std::move(r));
    };
    if (op == "Add") elementwise2([](double, double) { return 1.0; }, [](double, double) { return 1.0; });
    else if (op == "Sub") elementwise2([](double, double) { return 1.0; }, [](double, double) { return -1.0; });
    else if (op == "Mul") elementwise2([](double, double b) { return b; }, [](double a, double) { return a; });
    else if (op == "Div") elementwise2([](double, double b) { return 1.0 / b; }, [](double a, double b) { return -a / (b * b); });
    else if (op == "Neg") elementwise1([](double, double) { return -1.0; });
    else if (op == "Identity") elementwise1([](double, double) { return 1.0; });
    else if (op == "Relu") elementwise1([](double x, double) { return x > 0 ? 1.0 : 0.0; });
    else if (op == "Exp") elementwise1([](double, double yv) { return yv; });
    else if (op == "Tanh") elementwise1([](double, double yv) { return 1.0 - yv * yv; });
    else if (op == "Sigmoid") elementwise1([](double, double yv) { return yv * (1.0 - yv); });
    else if (op == "Log") elementwise1([](double x, double) { return 1.0 / x; });
    else ctx.fail("no derivative rule for " + op + " (on the path from xs to y)");
  }

  for (size_t k = 0; k < xs.size(); ++k) {
    const Tensor& x = ctx.input(k);
    Tensor& out = ctx.allocate_output(k, x.dtype(), x.shape());
    auto it = grads.find(xs[k]);
    dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      for (uint64_t i = 0; i < out.element_count(); ++i)
        put<S>(out, i, static_cast<compute_t<S>>(it == grads.end() ? 0.0 : it->second.v[i]));
    });
  }
}

}  // namespace onnxscope::ref
