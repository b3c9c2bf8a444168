// Einsum of two float32 operands as one batched matrix product (oneDNN's
// matmul), the form every contraction exporters write takes
// ("bhqd,bhkd->bhqk", "bij,bjk->bik", "...ij,...jk->...ik", "bnd,dh->bnh").
//
// core/einsum_plan.h gives, for each output and each summed dim, the stride
// it moves each operand by. An output dim both operands move along is a
// batch dim, one only A moves along is a row (M) dim, one only B moves along a
// column (N) dim; a summed dim both move along is contracted (K). Each group
// is collapsed into one dim where the operand's strides allow (a view, no
// copy); otherwise that operand is first copied into [batch, M, K] (or
// [batch, K, N]) order. The product lands in the output directly when the
// output's order is batch, M, N; otherwise in a buffer permuted into it.
//
// Left to the reference: other element types, one or three operands, a label
// summed in one operand only, a dim of size > 1 neither operand moves along
// (broadcast in both), empty tensors.
#include <algorithm>
#include <array>
#include <numeric>
#include <optional>

#include "core/einsum_plan.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/tensor/strided_copy.h"

namespace onnxscope::cpu {
namespace {

using namespace onednn;
using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;

// Dims of one operand (or the output) over the three groups, in order.
struct View {
  Shape dims;
  std::vector<int64_t> strides;
};

// One dim of size `n` moved `s` elements per step, if the dims collapse into it.
std::optional<std::pair<int64_t, int64_t>> collapse(const Shape& dims, const std::vector<int64_t>& strides) {
  int64_t n = 1, s = 1;
  bool any = false;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] == 1) continue;
    if (!any) {
      n = dims[i];
      s = strides[i];
      any = true;
    } else if (strides[i] == s * n) {
      n *= dims[i];
    } else {
      return std::nullopt;
    }
  }
  return std::make_pair(n, any ? s : 1);
}

struct Problem {
  einsum::Plan plan;
  // Dims per group, as indices into the plan's output dims (batch, M, N) or summed dims (K).
  std::vector<size_t> batch, m, n, k;
  int64_t B = 1, M = 1, N = 1, K = 1;
};

std::string equation_of(const KernelContext& ctx) {
  std::string eq;
  for (char ch : ctx.attr_string("equation"))
    if (ch != ' ') eq += ch;
  return eq;
}

std::optional<Problem> problem_of(const KernelContext& ctx) {
  if (ctx.input_count() != 2 || !float_inputs(ctx)) return std::nullopt;
  const Value* a = ctx.input_value(0);
  const Value* b = ctx.input_value(1);
  if (!a || !b || a->tensor().element_count() == 0 || b->tensor().element_count() == 0) return std::nullopt;
  Problem p;
  try {
    p.plan = einsum::plan(equation_of(ctx), {a->tensor().shape(), b->tensor().shape()});
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // the reference says what is wrong
  }
  const einsum::Plan& pl = p.plan;
  for (size_t d = 0; d < pl.out_shape.size(); ++d) {
    const int64_t sa = pl.out_stride[0][d], sb = pl.out_stride[1][d], size = pl.out_shape[d];
    if (size == 0) return std::nullopt;
    if (size == 1) continue;
    if (sa && sb) p.batch.push_back(d), p.B *= size;
    else if (sa) p.m.push_back(d), p.M *= size;
    else if (sb) p.n.push_back(d), p.N *= size;
    else return std::nullopt;  // repeated in the output, read by neither
  }
  for (size_t d = 0; d < pl.sum_shape.size(); ++d) {
    if (pl.sum_shape[d] == 0) return std::nullopt;
    if (pl.sum_shape[d] == 1) continue;
    if (!pl.sum_stride[0][d] || !pl.sum_stride[1][d]) return std::nullopt;  // summed in one operand only
    p.k.push_back(d);
    p.K *= pl.sum_shape[d];
  }
  // Contracted dims in A's memory order (outermost first), so a plain A collapses.
  std::stable_sort(p.k.begin(), p.k.end(), [&](size_t x, size_t y) { return pl.sum_stride[0][x] > pl.sum_stride[0][y]; });
  return p;
}

// Operand i viewed over (batch, first group, second group).
View operand_view(const Problem& p, size_t i, const std::vector<size_t>& first, bool first_is_sum,
                  const std::vector<size_t>& second, bool second_is_sum) {
  View v;
  auto add = [&](const std::vector<size_t>& dims, bool sum) {
    for (size_t d : dims) {
      v.dims.push_back(sum ? p.plan.sum_shape[d] : p.plan.out_shape[d]);
      v.strides.push_back(sum ? p.plan.sum_stride[i][d] : p.plan.out_stride[i][d]);
    }
  };
  add(p.batch, false);
  add(first, first_is_sum);
  add(second, second_is_sum);
  return v;
}

// The strides of an operand as [batch, rows, cols] when each group collapses
// and one of the two inner dims steps by 1; nullopt when it must be copied.
std::optional<std::array<int64_t, 3>> strides_3d(const View& v, size_t nb, size_t nr, int64_t R, int64_t C) {
  auto group = [&](size_t from, size_t count) {
    const auto f = static_cast<long>(from), e = static_cast<long>(from + count);
    return collapse(Shape(v.dims.begin() + f, v.dims.begin() + e), std::vector<int64_t>(v.strides.begin() + f, v.strides.begin() + e));
  };
  const auto b = group(0, nb), r = group(nb, nr), c = group(nb + nr, v.dims.size() - nb - nr);
  if (!b || !r || !c) return std::nullopt;
  int64_t rs = r->second, cs = c->second;
  if (C == 1) cs = 1;  // a dim of 1 may have any stride: pick what oneDNN wants
  if (R == 1) rs = cs == 1 ? C : 1;
  if (rs != 1 && cs != 1) return std::nullopt;
  return std::array<int64_t, 3>{b->second, rs, cs};
}

// How the product runs: each operand's [batch, rows, cols] strides (packed
// when it is copied first), and the primitive.
struct Layout {
  bool copy_a = false, copy_b = false;
  std::array<int64_t, 3> sa{}, sb{};
  std::shared_ptr<const Prim> prim;
};

Layout layout_of(const Problem& p, const View& va, const View& vb) {
  Layout l;
  const auto a = strides_3d(va, p.batch.size(), p.m.size(), p.M, p.K);
  const auto b = strides_3d(vb, p.batch.size(), p.k.size(), p.K, p.N);
  l.copy_a = !a;
  l.copy_b = !b;
  l.sa = a ? *a : std::array<int64_t, 3>{p.M * p.K, p.K, 1};
  l.sb = b ? *b : std::array<int64_t, 3>{p.K * p.N, p.N, 1};
  if (p.B == 1) {  // any batch stride will do
    l.sa[0] = p.M * p.K;
    l.sb[0] = p.K * p.N;
  }
  std::string key = "einsum" + std::to_string(p.B) + "," + std::to_string(p.M) + "," + std::to_string(p.K) + "," +
                    std::to_string(p.N);
  for (int64_t s : l.sa) key += "," + std::to_string(s);
  for (int64_t s : l.sb) key += "," + std::to_string(s);
  key += "|t" + std::to_string(sync_threads());
  l.prim = get_prim(key, [&] {
    const md am({p.B, p.M, p.K}, dt::f32, {l.sa[0], l.sa[1], l.sa[2]});
    const md bm({p.B, p.K, p.N}, dt::f32, {l.sb[0], l.sb[1], l.sb[2]});
    const md ym({p.B, p.M, p.N}, dt::f32, {p.M * p.N, p.N, 1});
    dnnl::matmul::desc d(am, bm, ym);
    dnnl::matmul::primitive_desc pd(d, base_attr(), engine());
    return make_prim<dnnl::matmul>(pd, /*no_ref=*/true);
  });
  return l;
}

bool accepts(const KernelContext& ctx) {
  return safely([&] {
    const std::optional<Problem> p = problem_of(ctx);
    if (!p) return false;
    return layout_of(*p, operand_view(*p, 0, p->m, false, p->k, true), operand_view(*p, 1, p->k, true, p->n, false)).prim->ok;
  });
}

// A contiguous copy of a view (its dims in order), for an operand that does not collapse.
std::vector<float> packed(const Tensor& t, const View& v) {
  uint64_t n = 1;
  for (int64_t d : v.dims) n *= static_cast<uint64_t>(d);
  std::vector<float> out(n);
  std::vector<int64_t> dst_strides(v.dims.size(), 1);
  for (size_t i = v.dims.size(); i-- > 1;) dst_strides[i - 1] = dst_strides[i] * v.dims[i];
  strided_copy(reinterpret_cast<std::byte*>(out.data()), dst_strides, t.raw(), v.strides, v.dims, sizeof(float));
  return out;
}

void Einsum(KernelContext& ctx) {
  guarded(ctx, [&] {
    const std::optional<Problem> po = problem_of(ctx);
    if (!po) ctx.fail("problem not supported by the batched-product einsum");
    const Problem& p = *po;
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const View va = operand_view(p, 0, p.m, false, p.k, true);
    const View vb = operand_view(p, 1, p.k, true, p.n, false);
    const Layout l = layout_of(p, va, vb);
    if (!l.prim->ok) ctx.fail("oneDNN could not create this einsum's matmul");
    const std::vector<float> a_copy = l.copy_a ? packed(a, va) : std::vector<float>{};
    const std::vector<float> b_copy = l.copy_b ? packed(b, vb) : std::vector<float>{};
    Tensor& y = new_output(ctx, p.plan.out_shape);
    // The output in (batch, M, N) order is the output itself when its dims come in that order.
    std::vector<size_t> order = p.batch;
    order.insert(order.end(), p.m.begin(), p.m.end());
    order.insert(order.end(), p.n.begin(), p.n.end());
    const bool direct = std::is_sorted(order.begin(), order.end());
    std::vector<float> tmp(direct ? 0 : static_cast<size_t>(p.B * p.M * p.N));
    float* out = direct ? y.mutable_data<float>() : tmp.data();
    const md am({p.B, p.M, p.K}, dt::f32, {l.sa[0], l.sa[1], l.sa[2]});
    const md bm({p.B, p.K, p.N}, dt::f32, {l.sb[0], l.sb[1], l.sb[2]});
    const md ym({p.B, p.M, p.N}, dt::f32, {p.M * p.N, p.N, 1});
    execute(*l.prim, {{DNNL_ARG_SRC, user_mem(am, l.copy_a ? a_copy.data() : a.data<float>())},
                      {DNNL_ARG_WEIGHTS, user_mem(bm, l.copy_b ? b_copy.data() : b.data<float>())},
                      {DNNL_ARG_DST, user_mem(ym, out)}});
    if (direct) return;
    // Permute (batch, M, N) into the output's order.
    const Shape& os = p.plan.out_shape;
    std::vector<int64_t> y_strides(os.size(), 1);
    for (size_t i = os.size(); i-- > 1;) y_strides[i - 1] = y_strides[i] * os[i];
    Shape dims;
    std::vector<int64_t> dst;
    for (size_t d : order) {
      dims.push_back(os[d]);
      dst.push_back(y_strides[d]);
    }
    std::vector<int64_t> src(dims.size(), 1);
    for (size_t i = dims.size(); i-- > 1;) src[i - 1] = src[i] * dims[i];
    strided_copy(y.mutable_raw(), dst, reinterpret_cast<const std::byte*>(tmp.data()), src, dims, sizeof(float));
  });
}

}  // namespace

void register_einsum_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Einsum", 12, INT_MAX, "onednn-matmul", Einsum, accepts});
}

}  // namespace onnxscope::cpu
