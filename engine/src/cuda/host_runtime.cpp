// The CUDA engine's runtime over host memory (cuda/runtime.h): kernels run
// as loops (kernels/launch_host.cpp), GEMM and convolution as plain loops
// with cuBLAS's and cuDNN's argument meanings (and, through Runtime, their
// argument rules), so the operators above are
// exercised, argument plumbing included, in every CI run.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

#include "onnxscope/deadline.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/portable.h"
#include "cuda/runtime.h"

namespace onnxscope::cuda {

namespace {

// TF32 keeps 10 of float32's 23 mantissa bits (round to nearest).
float to_tf32(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return f;
  u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
  std::memcpy(&f, &u, 4);
  return f;
}

// The rounding a mode applies to GEMM/convolution inputs (and, for fp16, outputs).
float round_input(MathMode mode, float v) {
  if (mode == MathMode::Tf32) return to_tf32(v);
  if (mode == MathMode::Fp16) return half_to_float(float_to_half(v));
  return v;
}
float round_output(MathMode mode, float v) { return mode == MathMode::Fp16 ? half_to_float(float_to_half(v)) : v; }

// Element `at` of an operand: from its float16 copy when one is given (a
// cached constant in fp16 mode), else the float rounded as the mode rounds.
float operand(const float* x, const void* half, int64_t at, MathMode mode) {
  return half ? half_to_float(static_cast<const uint16_t*>(half)[at]) : round_input(mode, x[at]);
}

void host_gemm(const GemmArgs& g, MathMode mode) {
  for (int64_t b = 0; b < g.batch; ++b) {
    const int64_t ab = b * g.stride_a, bb = b * g.stride_b;
    float* c = g.c + b * g.stride_c;
    for (int64_t j = 0; j < g.n; ++j, poll_deadline())
      for (int64_t i = 0; i < g.m; ++i) {
        double acc = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          const float av = operand(g.a, g.a_half, ab + (g.trans_a ? p + i * g.lda : i + p * g.lda), mode);
          const float bv = operand(g.b, g.b_half, bb + (g.trans_b ? j + p * g.ldb : p + j * g.ldb), mode);
          acc += static_cast<double>(av) * bv;
        }
        float& out = c[i + j * g.ldc];
        // beta 0: C is not read (it may hold anything), as in cuBLAS
        out = round_output(mode, static_cast<float>(g.alpha * acc + (g.beta == 0.f ? 0.0 : static_cast<double>(g.beta) * out)));
      }
  }
}

struct SpatialSizes {
  int64_t in = 1, out = 1, window = 1;  // elements of an input plane, an output plane, the kernel
};
SpatialSizes spatial_sizes(const ConvArgs& c) {
  SpatialSizes s;
  for (int d = 0; d < c.rank; ++d) {
    s.in *= c.in[d];
    s.out *= c.out[d];
    s.window *= c.kernel[d];
  }
  return s;
}

// Through a column matrix per image and group (col[ci * window + w][o]:
// the input under kernel position w for output o), so the inner loop runs
// over contiguous outputs; the light models' convolutions take seconds.
void host_conv(const ConvArgs& c, MathMode mode) {
  const int64_t cg = c.c / c.groups, kg = c.k / c.groups;
  const auto [in_size, out_size, window] = spatial_sizes(c);
  std::vector<float> col(static_cast<size_t>(cg * window * out_size));
  std::vector<int64_t> oc(static_cast<size_t>(out_size) * 3);
  for (int64_t o = 0; o < out_size; ++o)
    for (int64_t d = c.rank - 1, r = o; d >= 0; --d) {
      oc[static_cast<size_t>(o * 3 + d)] = r % c.out[d];
      r /= c.out[d];
    }
  std::vector<float> acc(static_cast<size_t>(out_size));
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t g = 0; g < c.groups; ++g) {
      for (int64_t ci = 0; ci < cg; ++ci) {
        const int64_t plane_at = (n * c.c + g * cg + ci) * in_size;
        for (int64_t w = 0; w < window; ++w) {
          poll_deadline();  // one node of a mutated model can take minutes here
          float* row = col.data() + (ci * window + w) * out_size;
          for (int64_t o = 0; o < out_size; ++o) {
            int64_t off = 0;
            bool inside = true;
            for (int64_t d = c.rank - 1, r = w, step = 1; d >= 0; --d) {
              const int64_t p = oc[static_cast<size_t>(o * 3 + d)] * c.stride[d] + (r % c.kernel[d]) * c.dilation[d] - c.pad[d];
              r /= c.kernel[d];
              inside = inside && p >= 0 && p < c.in[d];
              off += p * step;
              step *= c.in[d];
            }
            row[o] = inside ? operand(c.x, c.x_half, plane_at + off, mode) : 0.f;
          }
        }
      }
      for (int64_t k = g * kg; k < (g + 1) * kg; ++k) {
        std::fill(acc.begin(), acc.end(), 0.f);
        for (int64_t r = 0; r < cg * window; ++r, poll_deadline()) {
          const float wv = operand(c.w, c.w_half, k * cg * window + r, mode);
          const float* row = col.data() + r * out_size;
          for (int64_t o = 0; o < out_size; ++o) acc[static_cast<size_t>(o)] += wv * row[o];
        }
        float* y = c.y + (n * c.k + k) * out_size;
        for (int64_t o = 0; o < out_size; ++o) y[o] = round_output(mode, acc[static_cast<size_t>(o)]);
      }
    }
}

// ConvTranspose in scatter form: each input element times each kernel tap
// added to the output position it reaches, accumulated in float.
void host_conv_transpose(const ConvArgs& c, MathMode mode) {
  auto round = [&](float v) { return round_input(mode, v); };
  const int64_t cg = c.c / c.groups, kg = c.k / c.groups;
  const auto [in_size, out_size, window] = spatial_sizes(c);
  // Where input position i and kernel tap w land in the output (-1: outside).
  std::vector<int64_t> lands(static_cast<size_t>(in_size * window));
  for (int64_t i = 0; i < in_size; ++i)
    for (int64_t w = 0; w < window; ++w) {
      int64_t off = 0, step = 1;
      bool inside = true;
      for (int64_t d = c.rank - 1, ri = i, rw = w; d >= 0; --d) {
        const int64_t o = (ri % c.in[d]) * c.stride[d] + (rw % c.kernel[d]) * c.dilation[d] - c.pad[d];
        ri /= c.in[d];
        rw /= c.kernel[d];
        inside = inside && o >= 0 && o < c.out[d];
        off += o * step;
        step *= c.out[d];
      }
      lands[static_cast<size_t>(i * window + w)] = inside ? off : -1;
    }
  std::vector<float> acc(static_cast<size_t>(out_size));
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t g = 0; g < c.groups; ++g)
      for (int64_t m = 0; m < kg; ++m) {
        std::fill(acc.begin(), acc.end(), 0.f);
        for (int64_t ci = g * cg; ci < (g + 1) * cg; ++ci, poll_deadline()) {
          const float* plane = c.x + (n * c.c + ci) * in_size;
          const int64_t wk = (ci * kg + m) * window;
          for (int64_t i = 0; i < in_size; ++i) {
            const float xv = round(plane[i]);
            for (int64_t w = 0; w < window; ++w) {
              const int64_t o = lands[static_cast<size_t>(i * window + w)];
              if (o >= 0) acc[static_cast<size_t>(o)] += xv * operand(c.w, c.w_half, wk + w, mode);
            }
          }
        }
        float* y = c.y + (n * c.k + g * kg + m) * out_size;
        for (int64_t o = 0; o < out_size; ++o) y[o] = round_output(mode, acc[static_cast<size_t>(o)]);
      }
}

// A capture: the calls made while capturing, replayed in order.
struct HostCapture final : offload::CapturedWork {
  std::vector<std::function<void()>> calls;
};

class HostRuntime final : public Runtime {
 public:
  explicit HostRuntime(int row_lanes) : lanes_(row_lanes) {}
  std::string name() const override { return lanes_ > 1 ? "host (rows on " + std::to_string(lanes_) + " lanes)" : "host"; }

  // Nothing for 0 bytes, as on the GPU (an empty tensor's address is null).
  void copy(void* to, const void* from, uint64_t bytes) override {
    if (bytes) run_or_record([=] { std::memmove(to, from, bytes); });
  }
  void zero(void* p, uint64_t bytes) override {
    if (bytes) run_or_record([=] { std::memset(p, 0, bytes); });
  }
  void launch_kernel(int kernel, const void* args, int64_t n) override {
    if (!capturing()) return launch_on_host(kernel, args, n, lanes_);
    // The functor's bytes, kept (aligned as any functor) for the replay.
    const size_t size = kernel_args_size(kernel);
    std::shared_ptr<std::max_align_t[]> copy(new std::max_align_t[(size + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t)]);
    std::memcpy(copy.get(), args, size);
    record([kernel, copy, n, lanes = lanes_] { launch_on_host(kernel, copy.get(), n, lanes); });
  }
  std::string gemm_name() const override { return "host-gemm"; }
  std::string conv_name() const override { return "host-conv"; }
  void replay(const offload::CapturedWork& work) override {
    const auto* c = dynamic_cast<const HostCapture*>(&work);
    if (!c) throw std::logic_error("not a capture of the host runtime");
    for (const auto& call : c->calls) call();
  }

 protected:
  void* device_allocate(uint64_t bytes) override {
    void* p = std::malloc(bytes ? bytes : 1);
    if (!p) throw std::runtime_error("out of host memory for " + std::to_string(bytes) + " bytes");
    std::memset(p, 0xff, bytes);  // float NaN, int -1: unwritten memory shows
    return p;
  }
  void device_release(void* p) override { std::free(p); }
  void device_copy_in(void* device, const void* host, uint64_t bytes) override { std::memcpy(device, host, bytes); }
  void device_copy_out(void* host, const void* device, uint64_t bytes) override { std::memcpy(host, device, bytes); }
  void device_synchronize() override {}
  // The epilogue is left to Runtime's kernel.
  bool device_gemm(const GemmArgs& g, MathMode mode) override {
    run_or_record([g, mode] { host_gemm(g, mode); });
    return false;
  }
  // The pointer arrays are read when the call runs (in a replay: after the
  // kernels that fill them), each matrix then as a GEMM of its own.
  void device_gemm_pointers(const GemmPointersArgs& g, MathMode mode) override {
    run_or_record([g, mode] {
      for (int64_t i = 0; i < g.batch; ++i) {
        GemmArgs one = gemm_args_of(g);
        one.batch = 1;
        if (g.half) {  // float16 operands (operand() reads them); C rounded as fp16 rounds it
          one.a_half = g.a[i];
          one.b_half = g.b[i];
        } else {
          one.a = g.a[i];
          one.b = g.b[i];
        }
        one.c = g.c[i];
        host_gemm(one, mode);
      }
    });
  }
  bool device_conv(const ConvArgs& c, MathMode mode) override {
    run_or_record([c, mode] { c.transposed ? host_conv_transpose(c, mode) : host_conv(c, mode); });
    return false;
  }
  void device_begin_capture() override { capture_ = std::make_unique<HostCapture>(); }
  std::unique_ptr<offload::CapturedWork> device_end_capture() override { return std::move(capture_); }
  void device_abort_capture() override { capture_.reset(); }

 private:
  template <class F>
  void run_or_record(F f) {
    if (capturing()) record(std::move(f));
    else f();
  }
  void record(std::function<void()> f) { capture_->calls.push_back(std::move(f)); }

  std::unique_ptr<HostCapture> capture_;
  int lanes_ = 1;
};

}  // namespace

const char* math_mode_name(MathMode m) {
  switch (m) {
    case MathMode::Fp32: return "fp32";
    case MathMode::Tf32: return "tf32";
    case MathMode::Fp16: return "fp16";
  }
  return "?";
}

std::shared_ptr<Runtime> make_host_runtime(int row_lanes) { return std::make_shared<HostRuntime>(row_lanes); }

}  // namespace onnxscope::cuda
