// oneDNN n-ary sum: ONNX Sum when every input is a float32 tensor of the same
// shape (ResNet's residual adds); broadcasting Sums stay with the reference.
// The shape does not matter to an elementwise sum, so the primitive works on
// the flattened tensors and is shared by every shape of one size.
#include "cpu/kernels/onednn_parts.h"

namespace onnxscope::cpu::onednn {
namespace {

bool sum_problem(const KernelContext& ctx, int64_t& n, std::string& key) {
  if (ctx.input_count() < 1 || !float_inputs(ctx)) return false;
  const Value* first = ctx.input_value(0);
  if (!first) return false;
  const Shape& s = first->tensor().shape();
  for (size_t i = 1; i < ctx.input_count(); ++i)
    if (!ctx.input_value(i) || ctx.input_value(i)->tensor().shape() != s) return false;
  if (first->tensor().element_count() == 0) return false;
  n = static_cast<int64_t>(first->tensor().element_count());
  key = "sum" + std::to_string(ctx.input_count()) + "x" + std::to_string(n) + "|t" + std::to_string(sync_threads());
  return true;
}

std::shared_ptr<const Prim> sum_prim(const std::string& key, int64_t n, size_t inputs) {
  return get_prim(key, [&] {
    const dnnl::memory::desc md = plain_md({n});
    dnnl::sum::primitive_desc pd(md, std::vector<float>(inputs, 1.0f), std::vector<dnnl::memory::desc>(inputs, md),
                                 engine(), base_attr());
    return make_prim<dnnl::sum>(pd);
  });
}

bool accepts_sum(const KernelContext& ctx) {
  return safely([&] {
    int64_t n = 0;
    std::string key;
    return sum_problem(ctx, n, key) && sum_prim(key, n, ctx.input_count())->ok;
  });
}

void Sum(KernelContext& ctx) {
  guarded(ctx, [&] {
    int64_t n = 0;
    std::string key;
    if (!sum_problem(ctx, n, key)) ctx.fail("problem not supported by the oneDNN sum");
    auto prim = sum_prim(key, n, ctx.input_count());
    if (!prim->ok) ctx.fail("oneDNN could not create this sum");
    const dnnl::memory::desc md = plain_md({n});
    Tensor& y = new_output(ctx, ctx.input(0).shape());
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DST, user_mem(md, y.mutable_raw())}};
    for (size_t i = 0; i < ctx.input_count(); ++i)
      args.emplace(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), user_mem(md, ctx.input(i).raw()));
    execute(*prim, std::move(args));
  });
}

}  // namespace

void register_onednn_sum(KernelRegistry& r) {
  // Sum-6 onward (Sum-1 had consumed_inputs); same-shape inputs only.
  r.add(KernelDef{"", "Sum", 6, INT_MAX, "onednn", Sum, accepts_sum});
}

}  // namespace onnxscope::cpu::onednn
