// NchwcScaleShift (cpu/nchwc.h): y = x * scale[c] + shift[c] on a blocked
// float tensor, the form the nchwc-layout pass gives an inference
// BatchNormalization between blocked layers (DenseNet's pre-activation
// batch norms), with the Relu that follows it when there is one, and of
// the Concat before it when nothing else reads that (the pieces read in
// place). Scale and shift cover the padded channels too (zeros there, so
// padding stays zero). Plain loops the compiler vectorises over the block,
// split across the thread pool.
#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/nchwc.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

// One (n, channel block) plane; built for AVX-512, AVX2 and the baseline
// (target_clones), as the project is built for the baseline ISA.
ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void plane(const float* src, float* dst, const float* sa, const float* sb, int64_t spatial, int64_t block, bool relu) {
  if (relu) {
    for (int64_t i = 0; i < spatial; ++i)
      for (int64_t l = 0; l < block; ++l) {
        const float v = src[i * block + l] * sa[l] + sb[l];
        dst[i * block + l] = !(v <= 0.0f) ? v : 0.0f;  // as the Relu kernels: NaN kept
      }
  } else {
    for (int64_t i = 0; i < spatial; ++i)
      for (int64_t l = 0; l < block; ++l) dst[i * block + l] = src[i * block + l] * sa[l] + sb[l];
  }
}

void NchwcScaleShift(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor& shift = ctx.input(2);
  if (x.dtype() != DataType::Float || x.rank() < 3 || scale.dtype() != DataType::Float ||
      shift.dtype() != DataType::Float)
    ctx.fail("NchwcScaleShift takes a blocked float tensor and float scale and shift");
  // The pieces (X, then inputs 3...) and the first channel block of each in Y.
  std::vector<const Tensor*> pieces{&x};
  for (size_t i = 3; i < ctx.input_count(); ++i) pieces.push_back(&ctx.input(i));
  const Shape& s = x.shape();
  const int64_t block = s.back();
  std::vector<int64_t> first{0};
  for (size_t k = 0; k < pieces.size(); ++k) {
    const Shape& ps = pieces[k]->shape();
    bool same = pieces[k]->dtype() == DataType::Float && ps.size() == s.size() && ps[0] == s[0] && ps.back() == block;
    for (size_t d = 2; same && d + 1 < s.size(); ++d) same = ps[d] == s[d];
    if (!same)
      ctx.fail("NchwcScaleShift: input " + std::to_string(k == 0 ? 0 : k + 2) + " " + shape_to_string(ps) +
               " does not concatenate with input 0 " + shape_to_string(s) + " along the channel blocks");
    first.push_back(first.back() + ps[1]);
  }
  const int64_t cb = first.back();
  const uint64_t channels = static_cast<uint64_t>(cb * block);
  if (scale.element_count() != channels || shift.element_count() != channels)
    ctx.fail("NchwcScaleShift: scale and shift hold " + std::to_string(scale.element_count()) + " and " +
             std::to_string(shift.element_count()) + " values, the input has " + std::to_string(channels) +
             " (padded) channels");
  int64_t spatial = 1;
  for (size_t d = 2; d + 1 < s.size(); ++d) spatial *= s[d];
  Shape ys = s;
  ys[1] = cb;
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, ys);
  const float* a = scale.data<float>();
  const float* b = shift.data<float>();
  float* out = y.mutable_data<float>();
  const std::string act = ctx.attr_string("activation", "");
  if (!act.empty() && act != "Relu") ctx.fail("NchwcScaleShift: unknown activation '" + act + "'");
  const bool relu = act == "Relu";
  const int64_t planes = s[0] * cb;  // (n, channel block) pairs of Y
  parallel_for(planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, spatial * block)), [&](int64_t p0, int64_t p1) {
    size_t k = 0;
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / cb, c = p % cb;
      while (c < first[k] || c >= first[k + 1]) k = (k + 1) % pieces.size();
      const int64_t piece_blocks = first[k + 1] - first[k];
      const float* src = pieces[k]->data<float>() + (n * piece_blocks + c - first[k]) * spatial * block;
      plane(src, out + p * spatial * block, a + c * block, b + c * block, spatial, block, relu);
    }
  });
}

}  // namespace

void register_nchwc_scale_shift_kernel(KernelRegistry& r) {
  r.add(KernelDef{"onnxscope.cpu", kNchwcScaleShift, 1, INT_MAX, "cpu-loop", NchwcScaleShift, nullptr});
}

}  // namespace onnxscope::cpu
