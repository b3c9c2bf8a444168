// ConvInteger (onnxruntime's dynamic quantization of convolutions) and
// QLinearConv (its static QOperator format) as oneDNN's int8 convolution,
// u8/s8 x s8 -> s32, 1-D to 3-D, groups, strides, dilations, pads.
//
// The input's zero point is oneDNN's source zero point: it is subtracted from
// every input value and the padding counts as the zero point (contributes
// nothing), which is what ONNX asks. The weights' zero points (scalar or per
// output channel) are subtracted once from the weights, which must then fit
// int8 (w - zw in [-128, 127]: true of every symmetric int8 quantization and of
// uint8 weights with zero point 128); the rest goes to the reference. Sums are
// exact in int32 (no term over 255 * 128 and at most 33,000 terms per output,
// the reference's int64 sums agree), and only CPUs with VNNI are taken: without
// it oneDNN's u8 x s8 path saturates 16-bit pair sums. Weights must be
// initializers (the shifted, reordered copy is kept for the node, the
// shifted one given back once reordered).
//
// QLinearConv then requantizes each sum as the reference does:
//   y = saturate(round_half_even((acc + bias) * float(x_scale * w_scale / y_scale)) + y_zp)
// the multiplier formed in float and applied in double.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/param_values.h"
#include "cpu/kernels/quantization/qlinear_conv_params.h"
#include "cpu/kernels/quantization/requantize.h"
#include "cpu/nhwc.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"
#include "reference/thread_scratch.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu {
namespace {

using namespace onednn;
using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Where the operands are among the node's inputs.
struct Slots {
  size_t x, x_zp, w, w_zp;
};
constexpr Slots kConvInteger{0, 2, 1, 3};
constexpr Slots kQLinearConv{0, 2, 3, 5};

bool int8_type(DataType t) { return t == DataType::Uint8 || t == DataType::Int8; }

const Value* input_at(const KernelContext& ctx, size_t i) { return ctx.input_count() > i ? ctx.input_value(i) : nullptr; }

int64_t int8_at(const Tensor& t, uint64_t i) {
  return t.dtype() == DataType::Int8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
}

struct Problem {
  Shape x, w, y;
  int64_t group = 1;
  bool x_signed = false;
  ref::nn::Window win;
  std::string key;
};

// The problem and primitive worked out for one input shape.
struct Plan {
  Problem p;
  std::shared_ptr<const Prim> prim;
};

// What a node keeps between calls: the weights minus their zero points as
// int8 for its initializer, and the plan for its last input shape (the
// problem's key string and the primitive cache's lookup cost a few
// microseconds a call, and accepts() and the kernel both need them: a
// small QOperator MobileNet's 52 convolutions felt it).
struct Weights {
  bool planned = false;
  Shape plan_x;
  DataType plan_type = DataType::Float;
  int plan_threads = 0;
  Plan plan;
  const void* source = nullptr;
  const void* zp_source = nullptr;
  bool made = false;  // fits is known for this source
  bool fits = false;
  std::vector<int8_t> shifted;  // given back once reordered (remade if another layout is wanted)
  std::shared_ptr<dnnl::memory> reordered;  // in the primitive's layout
  dnnl::memory::desc reordered_for;
};

// x_channels_last: X is [N, D..., C] (NhwcQLinearConv), its problem the same.
std::optional<Problem> problem_of(const KernelContext& ctx, Slots sl, bool x_channels_last) {
  if (!has_int8_vnni()) return std::nullopt;
  const Value* xv = input_at(ctx, sl.x);
  const Value* wv = input_at(ctx, sl.w);
  if (!xv || !wv || !xv->is_tensor() || !wv->is_tensor() || !is_initializer(ctx, sl.w)) return std::nullopt;
  const Tensor& x = xv->tensor();
  const Tensor& w = wv->tensor();
  if (!int8_type(x.dtype()) || !int8_type(w.dtype())) return std::nullopt;
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank() || x.element_count() == 0 || w.element_count() == 0)
    return std::nullopt;
  Problem p;
  p.x = x_channels_last ? channels_first_shape(x.shape()) : x.shape();
  p.w = w.shape();
  p.group = ctx.attr_int("group", 1);
  const int64_t C = p.x[1], M = p.w[0];
  if (p.group < 1 || M % p.group != 0 || p.w[1] * p.group != C) return std::nullopt;
  std::vector<int64_t> kernel(p.w.begin() + 2, p.w.end());
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != kernel) return std::nullopt;
  int64_t terms = p.w[1];
  for (int64_t k : kernel) terms *= k;
  if (terms > 33000) return std::nullopt;  // int32 sums stay exact
  // The input's zero point: a scalar of its type. The weights': a scalar or one per output channel.
  if (const Value* z = input_at(ctx, sl.x_zp))
    if (!z->is_tensor() || z->tensor().dtype() != x.dtype() || z->tensor().element_count() != 1) return std::nullopt;
  if (const Value* z = input_at(ctx, sl.w_zp)) {
    const Tensor& t = z->tensor();
    if (!z->is_tensor() || t.dtype() != w.dtype() || !is_initializer(ctx, sl.w_zp)) return std::nullopt;
    if (!(t.element_count() == 1 && t.rank() <= 1) && !(t.rank() == 1 && t.shape()[0] == M)) return std::nullopt;
  }
  p.win = ref::nn::resolve_window(ctx, std::vector<int64_t>(p.x.begin() + 2, p.x.end()), kernel, false);
  for (int64_t o : p.win.out)
    if (o <= 0) return std::nullopt;
  // oneDNN 2.6's 3-D int8 convolution gets the source zero point wrong in
  // the padding (sums off by thousands with pads on the height or width and
  // a nonzero input zero point): a padded 3-D convolution is the reference's.
  if (x.rank() == 5)
    for (size_t d = 0; d < p.win.pad_begin.size(); ++d)
      if (p.win.pad_begin[d] != 0 || p.win.pad_end[d] != 0) return std::nullopt;
  p.y = {p.x[0], M};
  p.y.insert(p.y.end(), p.win.out.begin(), p.win.out.end());
  p.x_signed = x.dtype() == DataType::Int8;
  p.key = std::string("qconv") + (p.x_signed ? "s" : "u") + (x_channels_last ? "l" : "") + dims_key(p.x) + dims_key(p.w) + "|g" +
          std::to_string(p.group) + dims_key(p.win.strides) + dims_key(p.win.dilations) + dims_key(p.win.pad_begin) +
          dims_key(p.win.pad_end) + "|t" + std::to_string(sync_threads());
  return p;
}

Shape weight_dims(const auto& p) { return grouped_weight_dims(p.w, p.group); }

std::shared_ptr<const Prim> prim_of(const Problem& p) {
  return get_prim(p.key, [&] {
    dnnl::primitive_attr attr = base_attr();
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    const size_t k = p.win.out.size();
    const md src(p.x, p.x_signed ? dt::s8 : dt::u8, tag::any);
    const md wei(weight_dims(p), dt::s8, tag::any);
    const md dst(p.y, dt::s32, tag::any);
    dnnl::memory::dims dil(k);
    for (size_t i = 0; i < k; ++i) dil[i] = p.win.kernel[i] == 1 ? 0 : p.win.dilations[i] - 1;  // oneDNN counts the gaps
    using F = dnnl::convolution_forward;
    F::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, wei, dst, p.win.strides, dil,
              p.win.pad_begin, p.win.pad_end);
    F::primitive_desc pd(d, attr, engine());
    Prim r = make_prim<F>(pd, /*no_ref=*/true);
    if (!r.ok) return r;
    r.src = pd.src_desc();
    r.weights = pd.weights_desc();
    r.dst = pd.dst_desc();
    return r;
  });
}

// The weights minus their zero points into w.shifted; false when one does not fit int8.
bool shift_weights(const KernelContext& ctx, const Problem& p, Slots sl, Weights& w) {
  const Tensor& t = ctx.input_value(sl.w)->tensor();
  const Value* zv = input_at(ctx, sl.w_zp);
  const uint64_t n = t.element_count(), per = n / static_cast<uint64_t>(p.w[0]);
  w.shifted.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t z = zv ? int8_at(zv->tensor(), zv->tensor().element_count() == 1 ? 0 : i / per) : 0;
    const int64_t v = int8_at(t, i) - z;
    if (v < -128 || v > 127) {
      w.shifted.clear();
      return false;
    }
    w.shifted[i] = static_cast<int8_t>(v);
  }
  return true;
}

// The node's weights minus their zero points, made again when the initializer changes.
Weights* weights_of(const KernelContext& ctx, const Problem& p, Slots sl, Weights& local) {
  Weights* w = node_state<Weights>(ctx);
  if (!w) w = &local;
  const Tensor& t = ctx.input_value(sl.w)->tensor();
  const Value* zv = input_at(ctx, sl.w_zp);
  const void* zsrc = zv ? zv->tensor().raw() : nullptr;
  if (w->made && w->source == t.raw() && w->zp_source == zsrc) return w;
  w->source = t.raw();
  w->zp_source = zsrc;
  w->reordered.reset();
  w->fits = shift_weights(ctx, p, sl, *w);
  w->made = true;
  return w;
}

// The plan for the node's input: kept in its state while X keeps its shape
// and type and the thread count stays; nullptr where the problem is not
// this kernel's.
const Plan* plan_of(const KernelContext& ctx, Slots sl, Plan& local, bool x_channels_last = false) {
  Weights* st = node_state<Weights>(ctx);
  const Value* xv = input_at(ctx, sl.x);
  if (st && st->planned && xv && xv->is_tensor() && xv->tensor().shape() == st->plan_x &&
      xv->tensor().dtype() == st->plan_type && st->plan_threads == sync_threads())
    return &st->plan;
  const std::optional<Problem> p = problem_of(ctx, sl, x_channels_last);
  if (!p) return nullptr;
  Plan& out = st ? st->plan : local;
  out.p = *p;
  out.prim = prim_of(*p);
  if (st) {
    st->planned = true;
    st->plan_x = xv->tensor().shape();
    st->plan_type = xv->tensor().dtype();
    st->plan_threads = sync_threads();
  }
  return &out;
}

bool accepts_with(const KernelContext& ctx, Slots sl, bool x_channels_last = false) {
  return safely([&] {
    Plan local_plan;
    const Plan* plan = plan_of(ctx, sl, local_plan, x_channels_last);
    if (!plan || !plan->prim->ok) return false;
    Weights local;
    return weights_of(ctx, plan->p, sl, local)->fits;
  });
}

// Y's dims channels last (NHWC, NWC, NDHWC) as a descriptor of `type`.
md channels_last_md(const Shape& y, dt type) {
  const tag t = y.size() == 3 ? tag::nwc : y.size() == 4 ? tag::nhwc : tag::ndhwc;
  return md(y, type, t);
}

// The order of the int32 sums a caller wants: NCHW, channels last, or
// whichever oneDNN writes (no reorder).
enum class SumsOrder { plain, channels_last, either };

// acc = conv(x - x_zp, w - w_zp) as int32 in `order`; true when acc is
// channels last. X is read channels last where x_channels_last.
bool int8_conv(KernelContext& ctx, const Plan& plan, Slots sl, int32_t* acc, SumsOrder order, bool x_channels_last) {
  const Problem& p = plan.p;
  const Prim* prim = plan.prim.get();
  if (!prim->ok) ctx.fail("oneDNN could not create this int8 convolution");
  Weights local;
  Weights* w = weights_of(ctx, p, sl, local);
  if (!w->fits) ctx.fail("the weights minus their zero points do not fit int8");
  if (!w->reordered || w->reordered_for != prim->weights) {
    if (w->shifted.empty() && !shift_weights(ctx, p, sl, *w)) ctx.fail("the weights minus their zero points do not fit int8");
    const md plain = plain_md(weight_dims(p), dt::s8);
    w->reordered = std::make_shared<dnnl::memory>(prim->weights, engine());
    dnnl::memory user(plain, engine(), w->shifted.data());
    dnnl::reorder(user, *w->reordered).execute(stream(), user, *w->reordered);
    stream().wait();
    w->reordered_for = prim->weights;
    // The shifted copy has served: the node keeps the reordered one only
    // (a QOperator ResNet-18 held both, 11 MB more than onnxruntime's peak).
    if (w != &local) std::vector<int8_t>().swap(w->shifted);
  }
  const dt xt = p.x_signed ? dt::s8 : dt::u8;
  const md x_user = x_channels_last ? channels_last_md(p.x, xt) : plain_md(p.x, xt);
  dnnl::memory src = to_layout(user_mem(x_user, ctx.input(sl.x).raw()), prim->src, 0);
  const md y_last = channels_last_md(p.y, dt::s32);
  const bool last = order == SumsOrder::channels_last || (order == SumsOrder::either && prim->dst == y_last);
  dnnl::memory out = user_mem(last ? y_last : plain_md(p.y, dt::s32), acc);
  dnnl::memory dst = prim->dst == out.get_desc() ? out : slot_mem(prim->dst, 1);
  int32_t zp = 0;
  if (const Value* z = input_at(ctx, sl.x_zp)) zp = static_cast<int32_t>(int8_at(z->tensor(), 0));
  dnnl::memory zp_mem(md({1}, dt::s32, tag::x), engine(), &zp);
  execute(*prim, {{DNNL_ARG_SRC, src},
                  {DNNL_ARG_WEIGHTS, *w->reordered},
                  {DNNL_ARG_DST, dst},
                  {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_mem}});
  if (dst != out) {
    dnnl::reorder(dst, out).execute(stream(), dst, out);
    stream().wait();
  }
  return last;
}

bool conv_integer_accepts(const KernelContext& ctx) {
  return ctx.input_count() >= 2 && ctx.input_count() <= 4 && accepts_with(ctx, kConvInteger);
}

void ConvInteger(KernelContext& ctx) {
  guarded(ctx, [&] {
    Plan local;
    const Plan* plan = plan_of(ctx, kConvInteger, local);
    if (!plan) ctx.fail("problem not supported by the oneDNN int8 convolution");
    Tensor& y = uninitialized_output(ctx, 0, DataType::Int32, plan->p.y);
    int8_conv(ctx, *plan, kConvInteger, y.mutable_data<int32_t>(), SumsOrder::plain, false);
  });
}

// --- QLinearConv --------------------------------------------------------------------

bool qlinear_conv_accepts_with(const KernelContext& ctx, bool x_channels_last) {
  return qlinear_conv_params_ok(ctx) && accepts_with(ctx, kQLinearConv, x_channels_last);
}

}  // namespace

bool qlinear_conv_params_ok(const KernelContext& ctx) {
  if (ctx.input_count() < 8 || ctx.input_count() > 9) return false;
  if (!scalar_float(ctx.input_value(1)) || !scalar_float(ctx.input_value(6))) return false;
  const Value* ws = ctx.input_value(4);
  const Value* yz = ctx.input_value(7);
  const Value* wv = ctx.input_value(3);
  if (!ws || !ws->is_tensor() || ws->tensor().dtype() != DataType::Float || !yz || !yz->is_tensor() || !wv ||
      !wv->is_tensor() || wv->tensor().rank() < 1)
    return false;
  const int64_t M = wv->tensor().shape()[0];
  if (!(ws->tensor().element_count() == 1 && ws->tensor().rank() <= 1) &&
      !(ws->tensor().rank() == 1 && ws->tensor().shape()[0] == M))
    return false;
  if (!int8_type(yz->tensor().dtype()) || yz->tensor().element_count() != 1) return false;
  if (const Value* b = input_at(ctx, 8)) {
    if (!b->is_tensor() || b->tensor().dtype() != DataType::Int32 || b->tensor().rank() != 1 || b->tensor().shape()[0] != M)
      return false;
  }
  return true;
}

std::vector<double> qlinear_conv_multipliers(const KernelContext& ctx, int64_t M) {
  const float x_scale = *scalar_float(ctx.input_value(1)), y_scale = *scalar_float(ctx.input_value(6));
  const Tensor& ws = ctx.input(4);
  std::vector<double> mult(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m)
    mult[static_cast<size_t>(m)] = static_cast<float>(x_scale * ws.data<float>()[ws.element_count() == 1 ? 0 : m] / y_scale);
  return mult;
}

namespace {

// QLinearConv, or NhwcQLinearConv (X and Y channels last) where channels_last.
void qlinear_conv(KernelContext& ctx, bool channels_last_io) {
  guarded(ctx, [&] {
    Plan local;
    const Plan* plan = plan_of(ctx, kQLinearConv, local, channels_last_io);
    if (!plan) ctx.fail("problem not supported by the oneDNN int8 convolution");
    const Problem* p = &plan->p;
    const int64_t N = p->y[0], M = p->y[1];
    int64_t spatial = 1;
    for (size_t i = 2; i < p->y.size(); ++i) spatial *= p->y[i];
    // The sums in scratch the thread keeps (a fresh zeroed vector was a
    // mapping, a fill and an unmapping of up to 4.8 MB per call).
    // Checked before they are made: padding from attributes can make them far
    // larger than the input (the mutation sweep's QOperator MobileNetV3).
    ref::check_work_buffer(ctx, p->y, "the int32 sums", 4);
    struct Sums;
    ref::ThreadScratch<int32_t, Sums> acc;
    acc->resize(static_cast<size_t>(N * M * spatial));
    const bool channels_last = int8_conv(ctx, *plan, kQLinearConv, acc->data(),
                                         channels_last_io ? SumsOrder::channels_last : SumsOrder::either, channels_last_io);
    const std::vector<double> mult = qlinear_conv_multipliers(ctx, M);
    const Value* bv = input_at(ctx, 8);
    const int32_t* bias = bv ? bv->tensor().data<int32_t>() : nullptr;
    const Tensor& yz = ctx.input(7);
    const bool u8 = yz.dtype() == DataType::Uint8;
    const double zp = static_cast<double>(int8_at(yz, 0));
    Tensor& y = uninitialized_output(ctx, 0, yz.dtype(), channels_last_io ? channels_last_shape(p->y) : p->y);
    std::byte* out = y.mutable_raw();
    const int64_t pixels = N * spatial;
    const int64_t pixel_grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(M, 1));
    int64_t terms = 1;  // products per sum: C / group times the window
    for (size_t i = 1; i < p->w.size(); ++i) terms *= p->w[i];
    // The float requantization where it is exact (requantize_avx512.h), checked once a call.
    std::vector<float> mult_f;
    if (float_requantization(mult.data(), M, bias, terms)) mult_f.assign(mult.begin(), mult.end());
    const float* mf = mult_f.empty() ? nullptr : mult_f.data();
    if (channels_last_io) {  // the sums and Y in one order: requantized in place
      parallel_for(pixels, pixel_grain, [&](int64_t p0, int64_t p1) {
        requantize_channels_last(acc->data() + p0 * M, p1 - p0, M, bias, mult.data(), zp, u8, out + p0 * M, mf);
      });
      return;
    }
    if (channels_last) {
      // Requantized where the sums lie (channels last), then one reorder of
      // the 8-bit result into NCHW: a quarter of the bytes the int32 sums'
      // reorder moved (111 reorders were 3.5 ms of a QOperator MobileNetV2).
      struct Bytes;
      ref::ThreadScratch<std::byte, Bytes> q;
      q->resize(static_cast<size_t>(N * M * spatial));
      parallel_for(pixels, pixel_grain, [&](int64_t p0, int64_t p1) {
        requantize_channels_last(acc->data() + p0 * M, p1 - p0, M, bias, mult.data(), zp, u8, q->data() + p0 * M, mf);
      });
      const dt t8 = u8 ? dt::u8 : dt::s8;
      dnnl::memory from = user_mem(channels_last_md(p->y, t8), q->data());
      dnnl::memory to = user_mem(plain_md(p->y, t8), out);
      dnnl::reorder(from, to).execute(stream(), from, to);
      stream().wait();
      return;
    }
    parallel_for(N * M, std::max<int64_t>(1, 16384 / std::max<int64_t>(spatial, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t m = r % M;
        const double k = mult[static_cast<size_t>(m)];
        const int64_t b = bias ? bias[m] : 0;  // the sum with the bias in int64, as the reference's
        requantize_run(acc->data() + r * spatial, spatial, b, k, zp, u8, out + r * spatial);
      }
    });
  });
}

bool qlinear_conv_accepts(const KernelContext& ctx) { return qlinear_conv_accepts_with(ctx, false); }
void QLinearConv(KernelContext& ctx) { qlinear_conv(ctx, false); }

bool nhwc_qlinear_conv_accepts(const KernelContext& ctx) { return qlinear_conv_accepts_with(ctx, true); }
void NhwcQLinearConv(KernelContext& ctx) { qlinear_conv(ctx, true); }

}  // namespace

bool int8_convolutions_channels_last() { return onednn::has_int8_vnni(); }

void register_conv_integer_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "ConvInteger", 10, INT_MAX, "onednn-int8", ConvInteger, conv_integer_accepts});
  r.add(KernelDef{"", "QLinearConv", 10, INT_MAX, "onednn-int8", QLinearConv, qlinear_conv_accepts});
  r.add(KernelDef{kCpuDomain, kNhwcQLinearConv, 1, INT_MAX, "onednn-int8", NhwcQLinearConv, nhwc_qlinear_conv_accepts});
}

}  // namespace onnxscope::cpu
