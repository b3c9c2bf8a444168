// Reference kernel: Dropout.
//
// Float math accumulates in double (the spec leaves the precision open) and
// rounds once on store; integer sums and products wrap like numpy's.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/reduction/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

// numpy's legacy RandomState generator (MT19937 seeded with init_genrand, doubles
// from two 32-bit draws). The upstream training-mode Dropout tests were made with
// RandomState(seed).uniform(0, 1, shape) >= ratio, so this reproduces them exactly.
class NumpyRandomState {
 public:
  explicit NumpyRandomState(uint32_t seed) {
    mt_[0] = seed;
    for (uint32_t i = 1; i < kN; ++i) mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + i;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() {
    const uint32_t a = next32() >> 5, b = next32() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

 private:
  static constexpr uint32_t kN = 624, kM = 397;
  uint32_t next32() {
    if (pos_ >= kN) {
      for (uint32_t i = 0; i < kN; ++i) {
        const uint32_t v = (mt_[i] & 0x80000000u) | (mt_[(i + 1) % kN] & 0x7fffffffu);
        mt_[i] = mt_[(i + kM) % kN] ^ (v >> 1) ^ ((v & 1u) ? 0x9908b0dfu : 0u);
      }
      pos_ = 0;
    }
    uint32_t y = mt_[pos_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }
  uint32_t mt_[kN];
  uint32_t pos_ = kN;
};

}  // namespace

// Inference (the default) copies the input and gives an all-true mask. Training
// keeps each element with probability 1 - ratio and scales kept ones by
// 1 / (1 - ratio). Versions: 1 and 6 train unless is_test is set (their spec's
// default); 7 to 11 always infer; 12+ take ratio and training_mode as inputs.
// The mask is of the data's type (1/0) before opset 10 and bool after.
void Dropout(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t version = ctx.opset_version();
  double ratio = 0.5;
  bool training = false;
  if (version < 12) {
    ratio = ctx.attr_float("ratio", 0.5f);
    training = version < 7 && ctx.attr_int("is_test", 0) == 0;
  } else {
    if (const Tensor* r = ctx.optional_input(1)) {
      if (r->element_count() != 1 || !dtype_info(r->dtype()).is_float) ctx.fail("ratio must be a float scalar");
      ratio = r->element_as_double(0);
    }
    if (const Tensor* t = ctx.optional_input(2)) {
      if (t->element_count() != 1 || t->dtype() != DataType::Bool) ctx.fail("training_mode must be a bool scalar");
      training = load<bool>(*t, 0);
    }
  }
  if (!(ratio >= 0.0 && ratio <= 1.0)) ctx.fail("ratio must be in [0, 1], got " + std::to_string(ratio));
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  Tensor* mask = ctx.output_wanted(1)
                     ? &ctx.allocate_output(1, version < 10 ? x.dtype() : DataType::Bool, x.shape())
                     : nullptr;
  const uint32_t seed = static_cast<uint32_t>(ctx.has_attr("seed") ? ctx.attr_int("seed", 0) : ctx.seed());
  dispatch<kFloats | kFloat8>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    auto set_mask = [&](uint64_t i, bool keep) {
      if (!mask) return;
      if (version < 10) put<S>(*mask, i, C(keep ? 1 : 0));
      else store<bool>(*mask, i, keep);
    };
    if (!training || ratio == 0.0) {
      if (x.element_count() > 0) std::memcpy(y.mutable_raw(), x.raw(), x.byte_size());
      for (uint64_t i = 0; i < x.element_count(); ++i) set_mask(i, true);
      return;
    }
    NumpyRandomState rng(seed);
    const C scale = static_cast<C>(1.0 / (1.0 - ratio));  // unused when ratio is 1: nothing is kept
    for (uint64_t i = 0; i < x.element_count(); ++i) {
      const bool keep = rng.uniform() >= ratio;
      put<S>(y, i, keep ? C(get<S>(x, i) * scale) : C(0));
      set_mask(i, keep);
    }
  });
}

}  // namespace onnxscope::ref
