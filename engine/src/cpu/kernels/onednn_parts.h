// Shared pieces of the oneDNN kernels (kernels/onednn_*.cpp): the one engine,
// per-thread streams, the primitive and weight caches, thread-count sync, the
// activation -> post-op mapping and small input checks.
//
// Threading: Debian's libdnnl 2.6 is built with DNNL_CPU_RUNTIME=OMP (it links
// libgomp), so its parallel regions use OpenMP's nthreads ICV. Every kernel
// calls sync_threads() first, which sets omp_set_num_threads(thread_count())
// on the calling thread; the count is also part of every cache key because
// oneDNN sizes some kernels' work split when the primitive is created.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "onnxscope/kernel.h"

namespace onnxscope::ref::nn {
struct Window;
}

namespace onnxscope::cpu::onednn {

const dnnl::engine& engine();
dnnl::stream& stream();  // one per calling thread

// Sets OpenMP's thread count on this thread to cpu::thread_count(); returns it.
int sync_threads();
// Sets it to n (at most cpu::thread_count()); returns it.
int use_threads(int n);
// The threads a oneDNN call of `work` multiply-adds (or elements) gets: one
// below kSmallWork, where opening a parallel region and waking the pool
// costs more than a second thread saves (about 6 us a region on this
// project's 2-core VM: a small BERT's 13 regions a run took it from 0.06 to
// 0.14 ms); every thread of the pool above it.
inline constexpr int64_t kSmallWork = 32768;
int threads_for(int64_t work);
// Multiply-adds of a convolution: every output element of y sums
// `in_per_group` channels over the taps of `kernel`.
int64_t conv_macs(const Shape& y, int64_t in_per_group, const std::vector<int64_t>& kernel);

// A created primitive (or the reason it could not be made, so that `accepts`
// declines the same problem cheaply next time).
struct Prim {
  bool ok = false;
  dnnl::primitive prim;
  dnnl::memory::desc scratchpad;  // size of the user-managed scratchpad
  dnnl::memory::desc src, weights, dst;  // what the primitive wants (may be blocked)
  std::vector<int64_t> extra;             // op-specific data (e.g. resolved output dims)
};

// A Prim from a primitive descriptor of primitive kind P. With `no_ref`, a
// naive reference implementation is refused (for products, where oneDNN's
// "ref:any" runs far slower than even the reference engine).
template <class P>
Prim make_prim(const typename P::primitive_desc& pd, bool no_ref = false) {
  Prim r;
  if (no_ref && std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return r;
  r.ok = true;
  r.prim = P(pd);
  r.scratchpad = pd.scratchpad_desc();
  return r;
}

// The state this kernel keeps for its node (KernelContext::kernel_state) as
// an S, made empty on first use; nullptr where the engine keeps none.
// One kernel function always keeps the same S.
template <class S>
S* node_state(const KernelContext& ctx) {
  std::shared_ptr<void>* slot = ctx.kernel_state();
  if (!slot) return nullptr;
  if (!*slot) *slot = std::make_shared<S>();
  return static_cast<S*>(slot->get());
}

// The float32 inputs a kernel planned for, as a node state keeps them: each
// input's shape, or absent. A steady-state call compares them (and the
// thread count, which primitives are made for) instead of working the
// problem, its cache key and the lookups out again: a few microseconds a
// call, which a small model's 0.1 ms run feels.
struct PlannedInputs {
  std::vector<Shape> shapes;
  std::vector<uint8_t> given;
  int threads = 0;
  void record(const KernelContext& ctx);
  // The same inputs (float32 tensors of the recorded shapes) and threads.
  bool same(const KernelContext& ctx) const;
};

// Thread-safe get-or-create of a primitive by a string describing the problem.
// `make` returns the primitive or throws dnnl::error (recorded as not ok).
std::shared_ptr<const Prim> get_prim(const std::string& key, const std::function<Prim()>& make);

// Runs a primitive on this thread's stream with a user-managed scratchpad
// (primitives are built with scratchpad_mode::user so concurrent runs of the
// same primitive do not share one).
void execute(const Prim& p, std::unordered_map<int, dnnl::memory> args);
// The same with arguments a kernel keeps between calls (the scratchpad entry
// is set in them).
void execute_kept(const Prim& p, std::unordered_map<int, dnnl::memory>& args);
// The largest scratchpad a primitive run on this thread has asked for since
// the last reset (the buffer execute_kept keeps is that large); for tests.
size_t scratchpad_high_water(bool reset = false);

// An attribute with the user scratchpad mode set.
dnnl::primitive_attr base_attr();

// Memory over a plain (row-major) buffer.
dnnl::memory::desc plain_md(const std::vector<int64_t>& dims,
                            dnnl::memory::data_type type = dnnl::memory::data_type::f32);
// AVX512-VNNI or AVX-VNNI: oneDNN's u8 x s8 products are exact in int32 only
// there (without, its path saturates 16-bit pair sums).
bool has_int8_vnni();
// Convolution weights [M, C/G, k...] as oneDNN sees them: [G, M/G, C/G, k...] when grouped.
Shape grouped_weight_dims(const Shape& w, int64_t group);
dnnl::memory user_mem(const dnnl::memory::desc& md, const void* data);
// `m` made over `data` with layout `md` on first use, else re-pointed at
// `data` (cheaper than a memory object per call); returns it.
const dnnl::memory& point(dnnl::memory& m, const dnnl::memory::desc& md, const void* data);

// Data of `t` in the layout `want`. Same layout: t's own buffer. Otherwise a
// reorder, cached (keyed by buffer pointer, shape and `want`) when the tensor
// is a graph initializer, else redone on each call into `scratch`.
// Inside ReleaseRepackedWeights, a cached copy's source gives its plain bytes
// back (restored from the copy if read again), unless `user` views only part
// of them (`whole` false: a cropped kernel), which the copy cannot restore.
std::shared_ptr<dnnl::memory> weights_in(const KernelContext& ctx, size_t input, const dnnl::memory::desc& user,
                                         const dnnl::memory::desc& want, bool whole = true);

// Crops the taps of a convolution window that only ever read zero padding
// (a 3x3 window with padding 1 over a 1x1 or 2x2 map: the last stages of a
// ResNet on 32x32 images, SSD's smallest heads): `win`'s kernel and pads
// shrink, its output size stays; returns each spatial axis' first kept tap,
// or an empty vector when every tap reads the input somewhere. oneDNN's
// kernels skip padded taps but read every weight: a 512 -> 512 3x3
// convolution over a 1x1 map read 9.4 MB for 1 MB of weights it used.
std::vector<int64_t> crop_window(ref::nn::Window& win);
// The user layout of weights [M, C/G, k...] whose window crop_window cropped
// to `kernel` from `offsets`: a view into the plain tensor (pass whole=false
// to weights_in). `full` is the weight tensor's shape.
dnnl::memory::desc cropped_weights_md(const Shape& full, int64_t group, const std::vector<int64_t>& kernel,
                                      const std::vector<int64_t>& offsets);
// The cached copy of initializer `input` in layout `want`, made on first use;
// nullptr for a value that is not an initializer, or when the cache has no
// room for it (the caller then works on the plain weights).
std::shared_ptr<dnnl::memory> cached_weights(const KernelContext& ctx, size_t input, const dnnl::memory::desc& user,
                                             const dnnl::memory::desc& want);

// Reorders between a plain tensor and a (possibly blocked) layout, when they
// differ. With `slot` (0 or 1) the result lives in a per-thread buffer reused
// across calls (activations: no allocation and page faults per call), valid
// until the next call with that slot on this thread; without, it is allocated.
dnnl::memory to_layout(const dnnl::memory& from, const dnnl::memory::desc& want, int slot = -1);
// Memory of layout `md` in per-thread buffer `slot` (see to_layout).
dnnl::memory slot_mem(const dnnl::memory::desc& md, int slot);

// Output 0 as an uninitialised float32 tensor (size-checked like
// allocate_output, without its zero fill: every oneDNN kernel writes all of it).
Tensor& new_output(KernelContext& ctx, const Shape& shape);

// True when the node's input i is an initializer of the graph being run.
bool is_initializer(const KernelContext& ctx, size_t i);
// Inside ReleaseRepackedWeights on this thread: a kernel that keeps its own
// packed copy of an initializer may give the plain bytes back (Buffer::
// release_bytes, with a restore from its copy).
bool releasing_repacked_weights();

// --- activations (fused_ops.h) -------------------------------------------
// Appends the post-ops of the node's "activation" / "activation_params"
// attributes; false when the activation has no exact oneDNN post-op.
bool append_activation(const KernelContext& ctx, dnnl::post_ops& po);
// The activation part of a cache key.
std::string activation_key(const KernelContext& ctx);

// --- checks --------------------------------------------------------------
bool is_float(const Value* v);                 // a float32 tensor
bool float_inputs(const KernelContext& ctx);  // every given input is a float32 tensor
bool nonempty(const Tensor& t);               // no zero-sized dim and rank known
std::string dims_key(const Shape& s);
std::string float_key(float f);  // exact (bit pattern)

// Runs `fn` (an accepts body) and turns any exception into "decline".
bool safely(const std::function<bool()>& fn);

// Runs a kernel body, turning oneDNN errors into ctx.fail.
void guarded(KernelContext& ctx, const std::function<void()>& fn);

void register_onednn_conv(KernelRegistry& r);
void register_onednn_matmul(KernelRegistry& r);
void register_onednn_pool(KernelRegistry& r);
void register_onednn_norm(KernelRegistry& r);
void register_onednn_sum(KernelRegistry& r);
void register_onednn_nchwc(KernelRegistry& r);  // kernels/onednn_nchwc.cpp

}  // namespace onnxscope::cpu::onednn
