// oneDNN kernels of the blocked layout (cpu/nchwc.h): the two reorders and
// NchwcConv, a convolution (with its fused activation) that reads blocked
// or plain NCHW and writes blocked nChw8c / nChw16c, so consecutive
// convolutions run oneDNN's blocked kernels without reorders between them.
// Outputs are zero-filled first: padded channels stay zero (or finite), so
// a later convolution's zero weights for them never meet a NaN.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/cpu_features.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/tensor/nchwc_phases.h"
#include "cpu/nchwc.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu {

int64_t nchwc_block() {
  static const int64_t block = [] {
    if (const char* e = std::getenv("ONNXSCOPE_NCHWC_BLOCK"); e && *e) {  // for measurements: 0, 8 or 16
      const int v = std::atoi(e);
      return static_cast<int64_t>(v == 8 || v == 16 ? v : 0);
    }
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    auto has = [&](dnnl::cpu_isa want) { return (isa & static_cast<unsigned>(want)) == static_cast<unsigned>(want); };
    if (has(dnnl::cpu_isa::avx512_core)) return int64_t{16};
    if (has(dnnl::cpu_isa::avx2)) return int64_t{8};
    return int64_t{0};
  }();
  return block;
}

namespace onednn {
namespace {

using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

tag blocked_tag(int64_t block) { return block == 16 ? tag::nChw16c : tag::nChw8c; }

bool valid_block(int64_t b) { return b == 8 || b == 16; }

// --- reorders --------------------------------------------------------------

bool to_accepts(const KernelContext& ctx) {
  const Value* x = ctx.input_value(0);
  return is_float(x) && x->tensor().rank() == 4 && valid_block(ctx.attr_int("block", 0));
}

void ToNchwc(KernelContext& ctx) {
  guarded(ctx, [&] {
    sync_threads();
    const Tensor& x = ctx.input(0);
    const int64_t block = ctx.attr_int("block", 0);
    Tensor& y = uninitialized_output(ctx, 0, DataType::Float, nchwc_shape(x.shape(), block));  // the reorder writes the padding too
    if (x.element_count() == 0) return;
    dnnl::memory src = user_mem(plain_md(x.shape()), x.raw());
    dnnl::memory dst = user_mem(md(x.shape(), dt::f32, blocked_tag(block)), y.mutable_raw());
    dnnl::reorder(src, dst).execute(stream(), src, dst);
    stream().wait();
  });
}

bool from_accepts(const KernelContext& ctx) {
  const Value* x = ctx.input_value(0);
  if (!is_float(x) || x->tensor().rank() != 5 || !valid_block(x->tensor().shape().back())) return false;
  const int64_t c = ctx.attr_int("channels", 0), b = x->tensor().shape().back();
  return blocks_hold(c, x->tensor().shape()[1], b);
}

void FromNchwc(KernelContext& ctx) {
  guarded(ctx, [&] {
    sync_threads();
    const Tensor& x = ctx.input(0);
    const Shape& b = x.shape();
    const Shape plain{b[0], ctx.attr_int("channels", 0), b[2], b[3]};
    Tensor& y = new_output(ctx, plain);
    if (y.element_count() == 0) return;
    dnnl::memory src = user_mem(md(plain, dt::f32, blocked_tag(b.back())), x.raw());
    dnnl::memory dst = user_mem(plain_md(plain), y.mutable_raw());
    dnnl::reorder(src, dst).execute(stream(), src, dst);
    stream().wait();
  });
}

// --- convolution -------------------------------------------------------------

struct Problem {
  Shape x, w, y;  // logical NCHW input, OIHW weights, logical output
  int64_t group = 1, block = 16;
  bool bias = false, plain_input = false, sum = false;
  bool own_silu = false;        // Swish with alpha 1 applied after the call by silu_in_place, not as a post-op
  ref::nn::Window win;          // its kernel cropped to the taps that read the input (crop_window)
  std::vector<int64_t> crop;    // the first kept tap per axis; empty: the whole kernel
  int threads = 1;              // threads_for its multiply-adds
  std::string key;
  // A dilated convolution at stride 1 runs on its input's phases
  // (tensor/nchwc_phases.h): x, y and win above are then that call's (each
  // image's phase images stacked along its rows, no dilation, no padding),
  // `outer_y` the node's output, `in` and `out` the phase grids of its
  // input and output.
  bool phases = false;
  Shape outer_y;
  PhaseGrid in, out;
};

// SiLU (Swish with alpha 1) after the convolution: oneDNN's swish post-op,
// or the call without it and then silu_in_place over the output while it is
// in cache. On the AMD EPYC (Zen 4) development machine of session 26 the
// post-op cost 3.6 ms of efficientnet_b0's 13 ms at batch 1 (1 thread; the
// convolutions alone 7.3 ms), our pass after it less: efficientnet_b0 13.4
// -> 12.1 ms (1 thread), 7.3 -> 6.7 ms (2 threads). Session 25 kept the
// post-op on Intel, having measured it against a separate SiLU node only;
// on the Intel Xeon (AVX-512, AMX) of session 37 our pass was the faster
// too: efficientnet_b0 batch 1 at 1 thread faster in 13 of 14 alternated
// pairs (12.6 -> 11.8 ms in the first), at 2 threads even (9 of 16), batch 8
// 59.9 -> 58.0 ms (2 threads, 7 of 10). So every AVX-512 processor takes our
// pass; ONNXSCOPE_OWN_SILU=0 keeps the post-op (1 forces ours).
bool silu_after_conv() {
  static const bool on = [] {
    if (!ONNXSCOPE_CPU_AVX512("avx512f")) return false;
    if (const char* e = std::getenv("ONNXSCOPE_OWN_SILU")) return std::string(e) != "0";
    return true;
  }();
  return on;
}

// A measurement switch set to 0 (the default: on).
bool env_is_zero(const char* name) {
  const char* e = std::getenv(name);
  return e && std::string(e) == "0";
}

// Dilated convolutions on their input's phases; ONNXSCOPE_CONV_PHASES=0
// keeps oneDNN's dilated kernels, for measurements.
bool phases_enabled() {
  static const bool on = !env_is_zero("ONNXSCOPE_CONV_PHASES");
  return on;
}

// Where the call on the phase images computes at most 30% more output
// pixels than the node's (the rows that straddle two phase images, and the
// phases' last rows and columns past the output's edge), at stride 1; taken
// only where that call runs on Winograd (conv_plan): measured on this
// project's Xeon at 2 threads, a direct call on the phases was as slow as
// oneDNN's dilated kernel or slower (5x5 kernels, grouped convolutions).
bool phases_fit(const Problem& p) {
  if (!phases_enabled() || p.plain_input || !p.crop.empty() || p.win.kernel.size() != 2) return false;
  bool dilated = false;
  for (size_t i = 0; i < 2; ++i) {
    if (p.win.strides[i] != 1) return false;
    dilated = dilated || p.win.dilations[i] > 1;
  }
  // (In double: a model's dilations and pads may be anything up to 2^40.)
  if (!dilated) return false;
  const double d0 = static_cast<double>(p.win.dilations[0]), d1 = static_cast<double>(p.win.dilations[1]);
  const double len0 = std::ceil(static_cast<double>(p.x[2] + p.win.pad_begin[0] + p.win.pad_end[0]) / d0);
  const double rows = d0 * d1 * len0 - static_cast<double>(p.win.kernel[0]) + 1;
  const double cols = std::ceil(static_cast<double>(p.win.out[1]) / d1);
  const double pixels = static_cast<double>(p.win.out[0]) * static_cast<double>(p.win.out[1]);
  return pixels <= 0x1p31 && rows * cols <= 1.3 * pixels;
}

// Rewrites `p` as the call on the stacked phase images. The zero-padded
// input has H + pads rows, ceil(that / dh) a phase image; a phase image's
// output has ceil(OH / dh) rows, the stacked call's dh*dw*len - kh + 1.
void to_phase_problem(Problem& p) {
  const int64_t N = p.x[0];
  const int64_t d[2] = {p.win.dilations[0], p.win.dilations[1]};
  int64_t len[2], q[2];
  for (size_t i = 0; i < 2; ++i) {
    len[i] = (p.x[2 + i] + p.win.pad_begin[i] + p.win.pad_end[i] + d[i] - 1) / d[i];
    q[i] = len[i] - p.win.kernel[i] + 1;
  }
  p.in = PhaseGrid{N, (p.x[1] + p.block - 1) / p.block, p.block, p.x[2], p.x[3], d[0], d[1], len[0], len[1], len[0],
                   p.win.pad_begin[0], p.win.pad_begin[1]};
  p.out = PhaseGrid{N, (p.y[1] + p.block - 1) / p.block, p.block, p.y[2], p.y[3], d[0], d[1], q[0], q[1], len[0], 0, 0};
  p.phases = true;
  p.outer_y = p.y;
  p.x = {N, p.x[1], p.in.rows(), len[1]};
  p.y = {N, p.y[1], p.out.rows(), q[1]};
  p.win.in = {p.in.rows(), len[1]};
  p.win.dilations = {1, 1};
  p.win.pad_begin = {0, 0};
  p.win.pad_end = {0, 0};
  p.win.out = {p.out.rows(), q[1]};
}

bool problem(const KernelContext& ctx, Problem& p, bool phases_ok) {
  if (!float_inputs(ctx) || ctx.input_count() < 2 || !ctx.input_value(0) || !ctx.input_value(1)) return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  const Tensor& w = ctx.input_value(1)->tensor();
  p.block = ctx.attr_int("block", 0);
  p.plain_input = ctx.attr_int("plain_input", 0) == 1;
  p.group = ctx.attr_int("group", 1);
  if (!valid_block(p.block) || w.rank() != 4 || !nonempty(w) || p.group < 1) return false;
  p.w = w.shape();
  const int64_t C = p.w[1] * p.group, M = p.w[0];
  if (M % p.group != 0) return false;
  if (p.plain_input) {
    if (x.rank() != 4 || x.shape()[1] != C) return false;
    p.x = x.shape();
  } else {
    if (x.rank() != 5 || x.shape()[4] != p.block || x.shape()[1] != (C + p.block - 1) / p.block) return false;
    p.x = {x.shape()[0], C, x.shape()[2], x.shape()[3]};
  }
  if (p.x[0] == 0 || p.x[2] == 0 || p.x[3] == 0) return false;  // zero-sized: the reference form
  std::vector<int64_t> kernel(p.w.begin() + 2, p.w.end());
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != kernel) return false;
  if (const Value* b = ctx.input_count() > 2 ? ctx.input_value(2) : nullptr) {
    if (b->tensor().rank() != 1 || b->tensor().shape()[0] != M) return false;
    p.bias = true;
  }
  p.win = ref::nn::resolve_window(ctx, {p.x[2], p.x[3]}, kernel, false);
  p.y = {p.x[0], M, p.win.out[0], p.win.out[1]};
  p.crop = crop_window(p.win);
  if (const Value* s = ctx.input_count() > 3 ? ctx.input_value(3) : nullptr) {  // the residual, blocked like Y
    if (s->tensor().shape() != nchwc_shape(p.y, p.block)) return false;
    // oneDNN 2.6 gives wrong sums for strided convolutions with a sum post-op
    // (cpu_kernels_test found it): those run on the reference form.
    for (int64_t st : p.win.strides)
      if (st != 1) return false;
    // It also crashes (in its brgconv JIT code, on AVX-512) where padding
    // reaches past the kernel, so a whole output row or column reads only
    // padding (a 1x1 or 1xN kernel with pads on that axis): those too.
    for (size_t i = 0; i < 2; ++i) {
      const int64_t extent = (p.win.kernel[i] - 1) * p.win.dilations[i] + 1;
      if (p.win.pad_begin[i] >= extent || p.win.pad_end[i] >= extent) return false;
    }
    p.sum = true;
  }
  if (phases_ok && phases_fit(p)) to_phase_problem(p);
  p.threads = use_threads(threads_for(conv_macs(p.y, p.w[1], p.win.kernel)));
  p.own_silu = silu_after_conv() && ctx.attr_string("activation", "") == "Swish" &&
               ctx.attr_floats("activation_params") == std::vector<float>{1.0f};
  p.key = "nchwc" + std::to_string(p.block) + (p.plain_input ? "p" : "b") + dims_key(p.x) + dims_key(p.w) +
          (p.bias ? "b" : "") + (p.sum ? "s" : "") + "|g" + std::to_string(p.group) + dims_key(p.win.kernel) + dims_key(p.crop) +
          dims_key(p.win.strides) + dims_key(p.win.dilations) +
          dims_key(p.win.pad_begin) + dims_key(p.win.pad_end) + activation_key(ctx) + (p.own_silu ? "|own" : "") +
          "|t" + std::to_string(p.threads);
  return true;
}

// oneDNN's Winograd convolutions (F(2x2,3x3) and F(4x4,3x3) on AVX-512) do
// a 3x3 stride-1 convolution with about half the multiplications; timed alone
// on this machine, ResNet-50's 3x3 layers take 0.55-0.8x (batch 1) and
// 0.4-0.55x (batch 8) of the direct kernel's time. Their rounding differs from a direct sum by a few
// float32 ulps of the partial sums (cpu_kernels_test's tolerance holds).
// ONNXSCOPE_WINOGRAD=0 keeps every convolution direct, for a comparison that
// must not see that difference.
bool winograd_enabled() {
  static const bool on = !env_is_zero("ONNXSCOPE_WINOGRAD");
  return on;
}

bool winograd_fits(const Problem& p) {
  if (!winograd_enabled() || p.plain_input || p.group != 1 || p.block != 16) return false;
  if (p.win.kernel.size() != 2 || p.win.kernel[0] != 3 || p.win.kernel[1] != 3) return false;
  for (size_t i = 0; i < 2; ++i)
    if (p.win.strides[i] != 1 || p.win.dilations[i] != 1) return false;
  // Winograd's memory is its weights (transformed, plus the plain copy it
  // cannot give back, winograd_weights_ok), the same for any image size; what
  // it saves, 5/9 of the products, grows with the output positions N OH OW.
  // Below 64 positions (ResNet's 7x7 stage at batch 1) a layer saves under
  // 3 products a run per byte it adds: ResNet-18 batch 1 on a Zen 4, 2
  // threads, 150 -> 96 MiB above the model's load for 11.3 -> 12.2 ms;
  // ResNet-50 194 -> 156 MiB, 32.6 -> 33.0-33.3 ms (session 26).
  if (p.y[0] * p.y[2] * p.y[3] < 64) return false;
  return true;
}

// Winograd keeps its weights transformed: 16/9 of them for F(2x2,3x3), 4x
// for F(4x4,3x3) (what oneDNN picks at larger batches, and at batch 1 from
// 256 channels), besides the plain ones, which it cannot give back. Taken
// when that costs at most 2x, or at most 4 MiB more, so a large model's
// peak memory stays near the direct kernel's (ResNet-50 batch 8 with every
// layer on F(4x4,3x3): 425 MiB against 278 MiB, session 26) -- or when the
// layer computes at least kWinogradPositions output pixels a run: F(4x4,3x3)
// then saves at least 64 multiply-adds a run for every byte it adds (6.75
// an output pixel per input-output channel pair, for 27 floats more of
// weights). Timed alone on this project's Xeon at 2 threads (session 45),
// such layers take about half the direct kernel's time: [8,256,14,14]
// 256 -> 256 channels 5.7-6.3 -> 2.9-3.8 ms, [1,256,32,32] 3.8-5.4 ->
// 1.6-2.2, [1,512,32,32] 21.5-21.9 -> 9.1-9.8; below that many pixels the
// direct kernel can be the faster ([1,256,14,14]: 0.45-0.64 against
// 0.69-0.77). (Transforming the weights at every call instead, through
// oneDNN's reorder, made those layers 7-13x slower than keeping them.)
constexpr int64_t kWinogradPositions = 1024;

bool winograd_weights_ok(const Problem& p, const dnnl::memory::desc& wino_weights) {
  const double plain = 4.0 * static_cast<double>(p.w[0] * p.w[1] * p.w[2] * p.w[3]);
  const double wino = static_cast<double>(wino_weights.get_size());
  return wino <= 2 * plain || wino - plain <= 4.0 * (1 << 20) || p.y[0] * p.y[2] * p.y[3] >= kWinogradPositions;
}

// Its scratchpad holds the whole batch's transformed input and output
// tiles (about 2.25x both for F(4x4,3x3)); execute_kept keeps the largest
// one a thread has needed for the rest of the run. A large map at a large
// batch makes it the process's largest allocation: inception_v3's 147x147
// layers at batch 8 asked 102 and 150 MiB, more than its 63 MiB of
// activations, and put its peak RSS above onnxruntime's. Above this, the
// direct kernel (a scratchpad of a few MiB) runs the layer.
constexpr size_t kWinogradScratchpad = size_t{64} << 20;

// The weights the primitive reads: [M, C/G] and the (cropped) kernel, grouped.
Shape weight_dims(const Problem& p) {
  return grouped_weight_dims({p.w[0], p.w[1], p.win.kernel[0], p.win.kernel[1]}, p.group);
}

// Their user layout: the plain tensor, or the view of the taps kept.
md user_weights_md(const Problem& p) {
  return p.crop.empty() ? plain_md(weight_dims(p)) : cropped_weights_md(p.w, p.group, p.win.kernel, p.crop);
}

std::shared_ptr<const Prim> prim_of(const KernelContext& ctx, const Problem& p) {
  return get_prim(p.key, [&] {
    dnnl::post_ops po;
    if (p.sum) po.append_sum(1.0f);  // dst = conv + dst (the residual, copied there first), then the activation
    if (!p.own_silu && !append_activation(ctx, po)) return Prim{};
    dnnl::primitive_attr attr = base_attr();
    attr.set_post_ops(po);
    dnnl::memory::dims dil(2);
    for (size_t i = 0; i < 2; ++i) dil[i] = p.win.kernel[i] == 1 ? 0 : p.win.dilations[i] - 1;
    using F = dnnl::convolution_forward;
    // First Winograd where it applies (below), then the blocked layouts
    // themselves; where oneDNN has no fast kernel for them (some shapes with
    // padded channels), its own choice, with reorders around the call
    // (NchwcConv still runs; only those calls pay for them).
    struct Try {
      bool exact;
      dnnl::algorithm alg;
    };
    std::vector<Try> tries;
    if (winograd_fits(p)) tries.push_back({true, dnnl::algorithm::convolution_winograd});
    tries.push_back({true, dnnl::algorithm::convolution_direct});
    tries.push_back({false, dnnl::algorithm::convolution_direct});
    for (const Try& t : tries) {
      const bool exact = t.exact;
      const md src = exact ? (p.plain_input ? plain_md(p.x) : md(p.x, dt::f32, blocked_tag(p.block))) : md(p.x, dt::f32, tag::any);
      const md dst = exact ? md(p.y, dt::f32, blocked_tag(p.block)) : md(p.y, dt::f32, tag::any);
      const md wei(weight_dims(p), dt::f32, tag::any);
      const auto fwd = dnnl::prop_kind::forward_inference;
      const auto alg = t.alg;
      try {
        F::desc d = p.bias ? F::desc(fwd, alg, src, wei, md({p.w[0]}, dt::f32, tag::x), dst, p.win.strides, dil,
                                     p.win.pad_begin, p.win.pad_end)
                           : F::desc(fwd, alg, src, wei, dst, p.win.strides, dil, p.win.pad_begin, p.win.pad_end);
        F::primitive_desc pd(d, attr, engine());
        if (alg == dnnl::algorithm::convolution_winograd &&
            (!winograd_weights_ok(p, pd.weights_desc()) || pd.scratchpad_desc().get_size() > kWinogradScratchpad))
          continue;
        Prim r = make_prim<F>(pd, true);
        if (!r.ok) continue;
        r.extra = {alg == dnnl::algorithm::convolution_winograd ? 1 : 0};  // conv_plan asks
        r.src = pd.src_desc();
        r.weights = pd.weights_desc();
        r.dst = pd.dst_desc();
        return r;
      } catch (const dnnl::error&) {
        if (!exact) throw;
      }
    }
    return Prim{};
  });
}

// What NchwcConv worked out for its node: the problem, the primitive and the
// reordered weights, reused while the inputs keep their shapes (and the
// weights their storage), so a steady-state call skips the cache keys and
// lookups (a few microseconds per convolution, which MobileNet's 52 small
// ones feel).
struct ConvState {
  bool ok = false;
  Shape x, w, residual;
  const Buffer* w_buf = nullptr;  // the weights' storage (not its bytes: those may be released)
  int threads = 0;
  Problem p;
  std::shared_ptr<const Prim> prim;
  std::shared_ptr<dnnl::memory> wei;  // reordered initializer weights
  // Memory objects over this call's buffers, made once and re-pointed.
  md x_md, y_md, b_md;
  dnnl::memory xm, ym, bm;
  std::unordered_map<int, dnnl::memory> args;
};

bool fits(const ConvState& s, const KernelContext& ctx) {
  if (!s.ok || s.threads != sync_threads() || ctx.input_count() < 2) return false;
  const Value* x = ctx.input_value(0);
  const Value* w = ctx.input_value(1);
  if (!is_float(x) || !is_float(w) || x->tensor().shape() != s.x || w->tensor().shape() != s.w) return false;
  if (s.wei && w->tensor().buffer().get() != s.w_buf) return false;
  const Value* b = ctx.input_count() > 2 ? ctx.input_value(2) : nullptr;
  if ((b != nullptr) != s.p.bias || (b && (!is_float(b) || b->tensor().shape() != Shape{s.p.w[0]}))) return false;
  const Value* r = ctx.input_count() > 3 ? ctx.input_value(3) : nullptr;
  if ((r != nullptr) != s.p.sum || (r && (!is_float(r) || r->tensor().shape() != s.residual))) return false;
  return true;
}

// The plan for this call: the node's kept one when it still fits, else worked
// out again (into the node's state, or `local` where the engine keeps none).
// nullptr when the blocked convolution does not take this problem.
ConvState* conv_plan(const KernelContext& ctx, std::optional<ConvState>& local) {
  ConvState* kept = node_state<ConvState>(ctx);
  if (kept && fits(*kept, ctx)) return kept;
  ConvState& s = kept ? *kept : local.emplace();
  if (kept) s = ConvState{};
  if (!problem(ctx, s.p, true)) return nullptr;
  s.prim = prim_of(ctx, s.p);
  // The phase images are written in the blocked layout itself, and pay off
  // on Winograd (phases_fit); otherwise the node's own (dilated) problem runs.
  if (s.p.phases && (!s.prim->ok || s.prim->extra != std::vector<int64_t>{1} || s.prim->src != md(s.p.x, dt::f32, blocked_tag(s.p.block)) ||
                     s.prim->dst != md(s.p.y, dt::f32, blocked_tag(s.p.block)))) {
    s.p = Problem{};
    if (!problem(ctx, s.p, false)) return nullptr;
    s.prim = prim_of(ctx, s.p);
  }
  if (!s.prim->ok) return nullptr;
  s.x = ctx.input(0).shape();
  s.w = ctx.input(1).shape();
  if (s.p.sum) s.residual = ctx.input(3).shape();
  s.threads = sync_threads();
  s.ok = true;
  return &s;
}

bool conv_accepts(const KernelContext& ctx) {
  return safely([&] {
    std::optional<ConvState> local;
    return conv_plan(ctx, local) != nullptr;
  });
}

// The call on the phase images of a dilated convolution: the input's phases
// into this thread's slot 0, the residual's (where there is one) into slot 1,
// which the call adds into and overwrites, then back into y.
void run_on_phases(KernelContext& ctx, ConvState& plan, std::unordered_map<int, dnnl::memory>& args, Tensor& y) {
  const Problem& p = plan.p;
  const Prim& prim = *plan.prim;
  dnnl::memory src = slot_mem(prim.src, 0), dst = slot_mem(prim.dst, 1);
  to_phases(ctx.input(0).data<float>(), p.in, static_cast<float*>(src.get_data_handle()));
  if (p.sum) to_phases(ctx.input(3).data<float>(), p.out, static_cast<float*>(dst.get_data_handle()));
  args[DNNL_ARG_SRC] = src;
  args[DNNL_ARG_DST] = dst;
  execute_kept(prim, args);
  from_phases(static_cast<const float*>(dst.get_data_handle()), p.out, y.mutable_data<float>());
}

void NchwcConv(KernelContext& ctx) {
  guarded(ctx, [&] {
    std::optional<ConvState> local;
    ConvState* plan = conv_plan(ctx, local);
    if (!plan) ctx.fail("problem not supported by the blocked oneDNN convolution");
    const Problem& p = plan->p;
    const Prim* prim = plan->prim.get();
    const Tensor& x = ctx.input(0);
    use_threads(p.threads);  // (the reorders below too)
    // oneDNN writes every element of a blocked output, padding channels included.
    // With a residual that dies here, the convolution adds into its storage
    // (the sum post-op reads dst) instead of a copy of it.
    const Shape yb = nchwc_shape(p.phases ? p.outer_y : p.y, p.block);
    std::shared_ptr<Buffer> in_place = p.sum ? ctx.reusable_input_buffer(3) : nullptr;
    if (in_place && (ctx.input(3).shape() != yb || in_place->size() < ctx.input(3).byte_size())) in_place.reset();
    if (in_place) ctx.output(0) = Value(Tensor::from_buffer(DataType::Float, yb, in_place));
    Tensor& y = in_place ? ctx.output(0).tensor() : uninitialized_output(ctx, 0, DataType::Float, yb);
    std::shared_ptr<dnnl::memory> wei = plan->wei;
    if (!wei) {
      wei = weights_in(ctx, 1, user_weights_md(p), prim->weights, p.crop.empty());
      if (!local && is_initializer(ctx, 1)) {
        plan->wei = wei;
        plan->w_buf = ctx.input(1).buffer().get();
      }
    }
    auto& args = plan->args;
    args[DNNL_ARG_WEIGHTS] = *wei;
    if (p.bias) {
      if (!plan->bm) plan->b_md = plain_md({p.w[0]});
      args[DNNL_ARG_BIAS] = point(plan->bm, plan->b_md, ctx.input(2).raw());
    }
    if (p.phases) {
      run_on_phases(ctx, *plan, args, y);
    } else {
      if (!plan->xm) plan->x_md = p.plain_input ? plain_md(p.x) : md(p.x, dt::f32, blocked_tag(p.block));
      dnnl::memory src = to_layout(point(plan->xm, plan->x_md, x.raw()), prim->src, 0);
      if (!plan->ym) plan->y_md = md(p.y, dt::f32, blocked_tag(p.block));
      dnnl::memory out = point(plan->ym, plan->y_md, y.mutable_raw());
      dnnl::memory dst = prim->dst == out.get_desc() ? out : slot_mem(prim->dst, 1);
      if (p.sum) {
        if (!in_place) std::memcpy(y.mutable_raw(), ctx.input(3).raw(), y.byte_size());
        if (dst != out) {
          dnnl::reorder(out, dst).execute(stream(), out, dst);
          stream().wait();
        }
      }
      args[DNNL_ARG_SRC] = src;
      args[DNNL_ARG_DST] = dst;
      execute_kept(*prim, args);
      if (dst != out) {
        dnnl::reorder(dst, out).execute(stream(), dst, out);
        stream().wait();
      }
    }
    if (p.own_silu) silu_in_place(y.mutable_data<float>(), static_cast<int64_t>(y.element_count()));
  });
}

}  // namespace

void register_onednn_nchwc(KernelRegistry& r) {
  r.add(KernelDef{"onnxscope.cpu", kToNchwc, 1, INT_MAX, "onednn", ToNchwc, to_accepts});
  r.add(KernelDef{"onnxscope.cpu", kFromNchwc, 1, INT_MAX, "onednn", FromNchwc, from_accepts});
  r.add(KernelDef{"onnxscope.cpu", kNchwcConv, 1, INT_MAX, "onednn", NchwcConv, conv_accepts});
}

}  // namespace onednn
}  // namespace onnxscope::cpu
