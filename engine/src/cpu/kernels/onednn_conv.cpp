// oneDNN convolutions: Conv and FusedConv (Conv + activation post-op), and
// ConvTranspose; 1-D to 3-D, groups, dilations, pads / auto_pad, bias
// (ConvTranspose: output_padding, output_shape). Float32 only.
//
// Activations stay plain (NCHW) at the kernel boundary; inside, oneDNN picks
// its layouts (format any): the input and output are reordered per call when
// it wants a blocked one, the weights once per initializer (cached).
#include <cstdlib>

#include "cpu/kernels/onednn_parts.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu::onednn {
namespace {

using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// What a convolution needs once the attributes are resolved.
struct ConvProblem {
  Shape x, w, y;  // y: output dims
  int64_t group = 1;
  bool bias = false;
  ref::nn::Window win;        // its kernel cropped to the taps that read the input (crop_window)
  std::vector<int64_t> crop;  // the first kept tap per axis; empty: the whole kernel
  int threads = 1;            // threads_for its multiply-adds
  std::string key;
};

// Fills `p` from the node; false when oneDNN should not take it. May throw
// (bad attributes): the callers run it under safely() / ctx.fail.
bool conv_problem(const KernelContext& ctx, ConvProblem& p) {
  if (!float_inputs(ctx) || ctx.input_count() < 2 || ctx.input_count() > 3) return false;  // no sum input here
  const Value* xv = ctx.input_value(0);
  const Value* wv = ctx.input_value(1);
  if (!xv || !wv) return false;
  const Tensor& x = xv->tensor();
  const Tensor& w = wv->tensor();
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank() || !nonempty(x) || !nonempty(w)) return false;
  p.x = x.shape();
  p.w = w.shape();
  p.group = ctx.attr_int("group", 1);
  const int64_t C = p.x[1], M = p.w[0];
  if (p.group < 1 || M % p.group != 0 || p.w[1] * p.group != C) return false;
  std::vector<int64_t> kernel(p.w.begin() + 2, p.w.end());
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != kernel) return false;
  if (const Value* b = ctx.input_count() > 2 ? ctx.input_value(2) : nullptr) {
    if (b->tensor().rank() != 1 || b->tensor().shape()[0] != M) return false;
    p.bias = true;
  }
  p.win = ref::nn::resolve_window(ctx, std::vector<int64_t>(p.x.begin() + 2, p.x.end()), kernel, false);
  p.y = {p.x[0], M};
  p.y.insert(p.y.end(), p.win.out.begin(), p.win.out.end());
  p.crop = crop_window(p.win);
  p.threads = use_threads(threads_for(conv_macs(p.y, p.w[1], p.win.kernel)));
  p.key = "conv" + dims_key(p.x) + dims_key(p.w) + dims_key(p.win.kernel) + dims_key(p.crop) + (p.bias ? "b" : "") + "|g" + std::to_string(p.group) +
          dims_key(p.win.strides) + dims_key(p.win.dilations) + dims_key(p.win.pad_begin) + dims_key(p.win.pad_end) +
          activation_key(ctx) + "|t" + std::to_string(p.threads);
  return true;
}

// A convolution's weights as the primitive reads them: the (cropped) kernel.
Shape weight_dims(const ConvProblem& p) {
  Shape w{p.w[0], p.w[1]};
  w.insert(w.end(), p.win.kernel.begin(), p.win.kernel.end());
  return grouped_weight_dims(w, p.group);
}

// Whether the input/output stay NCHW inside oneDNN. Measured on ResNet-50
// (batch 1, AVX-512): a 1x1 convolution on NCHW is one sgemm and beats the
// blocked (brgconv) kernel plus the two reorders; for larger kernels the
// blocked kernel wins even with them. ONNXSCOPE_ONEDNN_PLAIN=1 / =0 forces
// one way (for such measurements).
bool plain_activations(const ConvProblem& p) {
  static const int forced = [] {
    const char* e = std::getenv("ONNXSCOPE_ONEDNN_PLAIN");
    return e && *e ? (*e == '1' ? 1 : 0) : -1;
  }();
  if (forced >= 0) return forced == 1;
  for (int64_t k : p.win.kernel)
    if (k != 1) return false;
  return true;
}

std::shared_ptr<const Prim> conv_prim(const KernelContext& ctx, const ConvProblem& p) {
  return get_prim(p.key, [&] {
    dnnl::post_ops po;
    if (!append_activation(ctx, po)) return Prim{};
    dnnl::primitive_attr attr = base_attr();
    attr.set_post_ops(po);
    const size_t k = p.win.out.size();
    const bool plain = plain_activations(p);
    const md src = plain ? plain_md(p.x) : md(p.x, dt::f32, tag::any);
    const md dst = plain ? plain_md(p.y) : md(p.y, dt::f32, tag::any);
    const md wei(weight_dims(p), dt::f32, tag::any);
    dnnl::memory::dims dil(k);
    for (size_t i = 0; i < k; ++i) dil[i] = p.win.kernel[i] == 1 ? 0 : p.win.dilations[i] - 1;  // oneDNN counts the gaps
    using F = dnnl::convolution_forward;
    const auto fwd = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_direct;
    F::desc d = p.bias ? F::desc(fwd, alg, src, wei, md({p.w[0]}, dt::f32, tag::x), dst, p.win.strides, dil,
                                 p.win.pad_begin, p.win.pad_end)
                       : F::desc(fwd, alg, src, wei, dst, p.win.strides, dil, p.win.pad_begin, p.win.pad_end);
    F::primitive_desc pd(d, attr, engine());
    Prim r = make_prim<F>(pd, true);
    if (!r.ok) return r;
    r.src = pd.src_desc();
    r.weights = pd.weights_desc();
    r.dst = pd.dst_desc();
    return r;
  });
}

bool accepts_conv(const KernelContext& ctx) {
  return safely([&] {
    ConvProblem p;
    return conv_problem(ctx, p) && conv_prim(ctx, p)->ok;
  });
}

void Conv(KernelContext& ctx) {
  guarded(ctx, [&] {
    ConvProblem p;
    if (!conv_problem(ctx, p)) ctx.fail("problem not supported by the oneDNN convolution");
    auto prim = conv_prim(ctx, p);
    if (!prim->ok) ctx.fail("oneDNN could not create this convolution");
    const Tensor& x = ctx.input(0);
    Tensor& y = new_output(ctx, p.y);
    use_threads(p.threads);
    dnnl::memory src = to_layout(user_mem(plain_md(p.x), x.raw()), prim->src, 0);
    auto wei = p.crop.empty() ? weights_in(ctx, 1, plain_md(weight_dims(p)), prim->weights)
                              : weights_in(ctx, 1, cropped_weights_md(p.w, p.group, p.win.kernel, p.crop), prim->weights, false);
    dnnl::memory out = user_mem(plain_md(p.y), y.mutable_raw());
    dnnl::memory dst = prim->dst == out.get_desc() ? out : slot_mem(prim->dst, 1);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, *wei}, {DNNL_ARG_DST, dst}};
    if (p.bias) args.emplace(DNNL_ARG_BIAS, user_mem(plain_md({p.w[0]}), ctx.input(2).raw()));
    execute(*prim, std::move(args));
    if (dst != out) {
      dnnl::reorder(dst, out).execute(stream(), dst, out);
      stream().wait();
    }
  });
}

// --- ConvTranspose ---------------------------------------------------------------

// Python-style floor division (pads derived from output_shape may be negative).
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// Resolves ConvTranspose's geometry like the reference does; false for
// anything unusual (negative pads, bad attributes), which the reference reports.
bool deconv_problem(const KernelContext& ctx, ConvProblem& p) {
  if (!float_inputs(ctx) || ctx.input_count() < 2) return false;
  const Value* xv = ctx.input_value(0);
  const Value* wv = ctx.input_value(1);
  if (!xv || !wv) return false;
  const Tensor& x = xv->tensor();
  const Tensor& w = wv->tensor();
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank() || !nonempty(x) || !nonempty(w)) return false;
  p.x = x.shape();
  p.w = w.shape();
  p.group = ctx.attr_int("group", 1);
  const size_t k = p.x.size() - 2;
  const int64_t C = p.x[1];
  if (p.group < 1 || p.w[0] != C || C % p.group != 0) return false;
  const int64_t M = p.w[1] * p.group;
  std::vector<int64_t> kernel(p.w.begin() + 2, p.w.end());
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != kernel) return false;
  if (const Value* b = ctx.input_count() > 2 ? ctx.input_value(2) : nullptr) {
    if (b->tensor().rank() != 1 || b->tensor().shape()[0] != M) return false;
    p.bias = true;
  }
  ref::nn::Window& win = p.win;
  win.kernel = kernel;
  win.strides = ref::nn::spatial_attr(ctx, "strides", k, 1, 1);
  win.dilations = ref::nn::spatial_attr(ctx, "dilations", k, 1, 1);
  std::vector<int64_t> out_pad = ctx.attr_ints("output_padding", std::vector<int64_t>(k, 0));
  if (out_pad.empty()) out_pad.assign(k, 0);
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  if (pads.empty()) pads.assign(2 * k, 0);
  std::vector<int64_t> out_shape = ctx.attr_ints("output_shape");
  if (out_shape.size() == k + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (out_pad.size() != k || pads.size() != 2 * k || (!out_shape.empty() && out_shape.size() != k)) return false;
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID" &&
      !auto_pad.empty())
    return false;
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  win.pad_begin.assign(k, 0);
  win.pad_end.assign(k, 0);
  win.out.assign(k, 0);
  for (size_t d = 0; d < k; ++d) {
    if (out_pad[d] < 0 || (out_pad[d] >= win.strides[d] && out_pad[d] >= win.dilations[d])) return false;
    const int64_t span = (kernel[d] - 1) * win.dilations[d] + 1;
    const int64_t full = win.strides[d] * (p.x[d + 2] - 1) + out_pad[d] + span;
    if (!out_shape.empty() || same) {
      win.out[d] = !out_shape.empty() ? out_shape[d] : p.x[d + 2] * win.strides[d];
      const int64_t total = full - win.out[d];
      const int64_t half = floor_div(total, 2);
      win.pad_begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      win.pad_end[d] = total - win.pad_begin[d];
    } else {
      if (pads[d] < 0 || pads[k + d] < 0 || pads[d] > ref::nn::kMaxWindowValue || pads[k + d] > ref::nn::kMaxWindowValue)
        return false;
      if (auto_pad != "VALID") {
        win.pad_begin[d] = pads[d];
        win.pad_end[d] = pads[k + d];
      }
      win.out[d] = full - win.pad_begin[d] - win.pad_end[d];
    }
    // oneDNN takes output_padding as less right padding; it wants no negative pads.
    win.pad_end[d] -= out_pad[d];
    if (win.out[d] <= 0 || win.pad_begin[d] < 0 || win.pad_end[d] < 0) return false;
  }
  p.y = {p.x[0], M};
  p.y.insert(p.y.end(), win.out.begin(), win.out.end());
  p.key = "deconv" + dims_key(p.x) + dims_key(p.w) + (p.bias ? "b" : "") + "|g" + std::to_string(p.group) +
          dims_key(win.strides) + dims_key(win.dilations) + dims_key(win.pad_begin) + dims_key(win.pad_end) +
          dims_key(win.out) + "|t" + std::to_string(sync_threads());
  return true;
}

// ONNX's [C, M/G, k...] as oneDNN's [G, M/G, C/G, k...] (strides, no copy).
md deconv_user_weights(const ConvProblem& p) {
  const int64_t G = p.group, Cg = p.w[0] / G, Mg = p.w[1];
  int64_t ks = 1;
  for (size_t i = 2; i < p.w.size(); ++i) ks *= p.w[i];
  dnnl::memory::dims dims{G, Mg, Cg}, strides{Cg * Mg * ks, ks, Mg * ks};
  int64_t s = ks;
  for (size_t i = 2; i < p.w.size(); ++i) {
    s /= p.w[i];
    dims.push_back(p.w[i]);
    strides.push_back(s);
  }
  return md(dims, dt::f32, strides);
}

std::shared_ptr<const Prim> deconv_prim(const ConvProblem& p) {
  return get_prim(p.key, [&] {
    const size_t k = p.win.out.size();
    const bool plain = plain_activations(p);
    const md src = plain ? plain_md(p.x) : md(p.x, dt::f32, tag::any);
    const md dst = plain ? plain_md(p.y) : md(p.y, dt::f32, tag::any);
    const md user_w = deconv_user_weights(p);
    const md wei(user_w.dims(), dt::f32, tag::any);
    dnnl::memory::dims dil(k);
    for (size_t i = 0; i < k; ++i) dil[i] = p.win.kernel[i] == 1 ? 0 : p.win.dilations[i] - 1;
    using F = dnnl::deconvolution_forward;
    const auto fwd = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::deconvolution_direct;
    F::desc d = p.bias ? F::desc(fwd, alg, src, wei, md({p.y[1]}, dt::f32, tag::x), dst, p.win.strides, dil,
                                 p.win.pad_begin, p.win.pad_end)
                       : F::desc(fwd, alg, src, wei, dst, p.win.strides, dil, p.win.pad_begin, p.win.pad_end);
    F::primitive_desc pd(d, base_attr(), engine());
    Prim r = make_prim<F>(pd, true);
    if (!r.ok) return r;
    r.src = pd.src_desc();
    r.weights = pd.weights_desc();
    r.dst = pd.dst_desc();
    return r;
  });
}

bool accepts_deconv(const KernelContext& ctx) {
  return safely([&] {
    ConvProblem p;
    return deconv_problem(ctx, p) && deconv_prim(p)->ok;
  });
}

void ConvTranspose(KernelContext& ctx) {
  guarded(ctx, [&] {
    ConvProblem p;
    if (!deconv_problem(ctx, p)) ctx.fail("problem not supported by the oneDNN deconvolution");
    auto prim = deconv_prim(p);
    if (!prim->ok) ctx.fail("oneDNN could not create this deconvolution");
    Tensor& y = new_output(ctx, p.y);
    dnnl::memory src = to_layout(user_mem(plain_md(p.x), ctx.input(0).raw()), prim->src, 0);
    auto wei = weights_in(ctx, 1, deconv_user_weights(p), prim->weights);
    dnnl::memory out = user_mem(plain_md(p.y), y.mutable_raw());
    dnnl::memory dst = prim->dst == out.get_desc() ? out : slot_mem(prim->dst, 1);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, *wei}, {DNNL_ARG_DST, dst}};
    if (p.bias) args.emplace(DNNL_ARG_BIAS, user_mem(plain_md({p.y[1]}), ctx.input(2).raw()));
    execute(*prim, std::move(args));
    if (dst != out) {
      dnnl::reorder(dst, out).execute(stream(), dst, out);
      stream().wait();
    }
  });
}

}  // namespace

void register_onednn_conv(KernelRegistry& r) {
  r.add(KernelDef{"", "ConvTranspose", 1, INT_MAX, "onednn", ConvTranspose, accepts_deconv});
  r.add(KernelDef{"", "Conv", 1, INT_MAX, "onednn", Conv, accepts_conv});
  r.add(KernelDef{"onnxscope.cpu", "FusedConv", 1, INT_MAX, "onednn", Conv, accepts_conv});
}

}  // namespace onnxscope::cpu::onednn
