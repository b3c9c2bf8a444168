// oneDNN plumbing shared by the onednn_*.cpp kernels (see onednn_parts.h) and
// the registration of their families.
#include <cstdlib>
#include <algorithm>
#include <cpuid.h>
#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <optional>

#include "core/cpu_features.h"
#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu {
namespace onednn {
namespace {

// Caches are dropped whole when they grow past these (a long conformance run
// prepares thousands of small models; a served model needs a few hundred).
constexpr size_t kMaxPrims = 4096;
constexpr size_t kMaxWeightBytes = size_t{1} << 30;

struct WeightEntry {
  std::shared_ptr<Buffer> hold;  // keeps the source alive so its address is not reused
  std::shared_ptr<dnnl::memory> mem;
  size_t bytes = 0;
};

std::mutex g_prims_mutex;
std::unordered_map<std::string, std::shared_ptr<const Prim>> g_prims;
std::mutex g_weights_mutex;
std::unordered_map<std::string, WeightEntry> g_weights;
size_t g_weight_bytes = 0;

using OmpSetNumThreads = void (*)(int);

// libgomp is loaded as libdnnl's dependency; we look the setter up instead of
// linking OpenMP into the engine ourselves.
OmpSetNumThreads omp_setter() {
  static OmpSetNumThreads fn = reinterpret_cast<OmpSetNumThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  return fn;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * std::max<int64_t>(dims[i], 1);
  return s;
}

}  // namespace

const dnnl::engine& engine() {
  static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

int use_threads(int n) {
  n = std::max(1, std::min(n, thread_count()));
  thread_local int current = -1;
  if (n != current) {
    if (auto fn = omp_setter()) fn(n);
    current = n;
  }
  return n;
}

int sync_threads() { return use_threads(thread_count()); }

int threads_for(int64_t work) { return work < kSmallWork ? 1 : thread_count(); }

int64_t conv_macs(const Shape& y, int64_t in_per_group, const std::vector<int64_t>& kernel) {
  int64_t n = in_per_group;
  for (int64_t d : y) n *= d;
  for (int64_t k : kernel) n *= k;
  return n;
}

std::shared_ptr<const Prim> get_prim(const std::string& key, const std::function<Prim()>& make) {
  {
    std::lock_guard<std::mutex> lk(g_prims_mutex);
    auto it = g_prims.find(key);
    if (it != g_prims.end()) return it->second;
  }
  // Built outside the lock: two threads may build the same one, the first stored wins.
  auto p = std::make_shared<Prim>();
  try {
    *p = make();
  } catch (const dnnl::error&) {
    p = std::make_shared<Prim>();  // not ok
  }
  std::lock_guard<std::mutex> lk(g_prims_mutex);
  if (g_prims.size() >= kMaxPrims) g_prims.clear();
  return g_prims.emplace(key, std::move(p)).first->second;
}

thread_local size_t t_scratch_high = 0;

size_t scratchpad_high_water(bool reset) {
  const size_t high = t_scratch_high;
  if (reset) t_scratch_high = 0;
  return high;
}

void execute_kept(const Prim& p, std::unordered_map<int, dnnl::memory>& args) {
  const dnnl::memory::desc& sd = p.scratchpad;
  thread_local std::vector<char> scratch;
  if (const size_t bytes = sd.get_size(); bytes > 0) {
    t_scratch_high = std::max(t_scratch_high, bytes);
    if (scratch.size() < bytes) scratch.resize(bytes);
    auto it = args.find(DNNL_ARG_SCRATCHPAD);
    if (it == args.end() || it->second.get_desc() != sd)
      args.insert_or_assign(DNNL_ARG_SCRATCHPAD, dnnl::memory(sd, engine(), scratch.data()));
    else if (it->second.get_data_handle() != scratch.data())
      it->second.set_data_handle(scratch.data());
  }
  p.prim.execute(stream(), args);
  stream().wait();
}

void execute(const Prim& p, std::unordered_map<int, dnnl::memory> args) { execute_kept(p, args); }

dnnl::primitive_attr base_attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

dnnl::memory::desc plain_md(const std::vector<int64_t>& dims, dnnl::memory::data_type type) {
  std::vector<int64_t> d = dims.empty() ? std::vector<int64_t>{1} : dims;
  return dnnl::memory::desc(d, type, row_major_strides(d));
}

Shape grouped_weight_dims(const Shape& w, int64_t group) {
  if (group == 1) return w;
  Shape d{group, w[0] / group};
  d.insert(d.end(), w.begin() + 1, w.end());
  return d;
}

bool has_int8_vnni() {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool avx512_vnni = (c & (1u << 11)) != 0 && ONNXSCOPE_CPU_AVX512("avx512f");
    unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
    const bool avx_vnni = __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) && (a1 & (1u << 4)) != 0 &&
                          __builtin_cpu_supports("avx2") && !cpu_isa_capped_to_avx2();
    return avx512_vnni || avx_vnni;
  }();
  return yes;
}

dnnl::memory user_mem(const dnnl::memory::desc& md, const void* data) {
  return dnnl::memory(md, engine(), const_cast<void*>(data));
}

const dnnl::memory& point(dnnl::memory& m, const dnnl::memory::desc& md, const void* data) {
  if (!m)
    m = dnnl::memory(md, engine(), const_cast<void*>(data));
  else if (m.get_data_handle() != data)
    m.set_data_handle(const_cast<void*>(data));
  return m;
}

dnnl::memory slot_mem(const dnnl::memory::desc& md, int slot) {
  thread_local std::vector<char> buffers[2];
  std::vector<char>& b = buffers[slot];
  if (b.size() < md.get_size()) b.resize(md.get_size());
  return dnnl::memory(md, engine(), b.data());
}

dnnl::memory to_layout(const dnnl::memory& from, const dnnl::memory::desc& want, int slot) {
  if (from.get_desc() == want) return from;
  dnnl::memory out = slot >= 0 ? slot_mem(want, slot) : dnnl::memory(want, engine());
  std::optional<dnnl::reorder> direct;
  try {
    direct.emplace(from, out);
  } catch (const dnnl::error&) {
    // oneDNN 2.6 has no reorder from some strided views (a cropped kernel's
    // weights) into some blocked layouts: through a dense copy of the view.
    if (from.get_desc().data.format_kind != dnnl_blocked) throw;
    dnnl::memory tmp(plain_md(from.get_desc().dims(), from.get_desc().data_type()), engine());
    dnnl::reorder(from, tmp).execute(stream(), const_cast<dnnl::memory&>(from), tmp);
    dnnl::reorder(tmp, out).execute(stream(), tmp, out);
    stream().wait();
    return out;
  }
  direct->execute(stream(), const_cast<dnnl::memory&>(from), out);
  stream().wait();
  return out;
}

Tensor& new_output(KernelContext& ctx, const Shape& shape) {
  return uninitialized_output(ctx, 0, DataType::Float, shape);
}

bool is_initializer(const KernelContext& ctx, size_t i) { return ctx.input_is_initializer(i); }

namespace {
thread_local bool t_release_repacked = false;

// Calls f(offset) with the element offset of each element of a strided view
// (no inner blocks), in the row-major order of its dims; false for any other
// layout.
template <class F>
bool for_each_view_offset(const dnnl::memory::desc& v, F&& f) {
  const dnnl_memory_desc_t& d = v.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0 || d.ndims < 1) return false;
  const int n = d.ndims;
  const auto* stride = d.format_desc.blocking.strides;
  for (int k = 0; k < n; ++k)
    if (d.dims[k] <= 0) return true;
  std::vector<int64_t> at(static_cast<size_t>(n), 0);
  int64_t base = d.offset0;
  for (;;) {
    for (int64_t i = 0, o = base; i < d.dims[n - 1]; ++i, o += stride[n - 1]) f(o);
    int k = n - 2;
    for (; k >= 0; --k) {
      base += stride[k];
      if (++at[static_cast<size_t>(k)] < d.dims[k]) break;
      base -= stride[k] * d.dims[k];
      at[static_cast<size_t>(k)] = 0;
    }
    if (k < 0) return true;
  }
}

// A packed copy of part of a float32 weight (a convolution's kernel cropped
// to the taps that read the input: `view` over its plain bytes) cannot give
// the rest back, so the rest is kept beside it, compactly, and the plain
// bytes are given back: the weight stays resident once. Restored from both,
// exactly (the packed part by the reverse reorder, the rest copied).
void release_around_view(const Tensor& t, const dnnl::memory::desc& view, const std::shared_ptr<dnnl::memory>& packed) {
  // The tensor must be its buffer's whole (the view's offsets are from its start).
  if (view.data.data_type != dnnl_f32 || t.byte_size() != t.buffer()->size() || t.buffer()->size() % sizeof(float) != 0)
    return;
  const int64_t total = static_cast<int64_t>(t.buffer()->size() / sizeof(float));
  std::vector<bool> in_view(static_cast<size_t>(total), false);
  bool inside = true;
  int64_t viewed = 0;
  if (!for_each_view_offset(view, [&](int64_t o) {
        if (o < 0 || o >= total || in_view[static_cast<size_t>(o)]) {
          inside = false;
        } else {
          in_view[static_cast<size_t>(o)] = true;
          ++viewed;
        }
      }) || !inside)
    return;
  const float* plain = reinterpret_cast<const float*>(t.raw());
  auto rest = std::make_shared<std::vector<float>>();
  rest->reserve(static_cast<size_t>(total - viewed));  // exactly: the plain bytes and this are both held until the release
  for (int64_t i = 0; i < total; ++i)
    if (!in_view[static_cast<size_t>(i)]) rest->push_back(plain[i]);
  t.buffer()->release_bytes([packed, view, rest, total](std::byte* dst) {
    dnnl::memory from = *packed;
    dnnl::memory dense(plain_md(view.dims()), engine());
    dnnl::reorder(from, dense).execute(stream(), from, dense);
    stream().wait();
    float* out = reinterpret_cast<float*>(dst);
    const float* kept = static_cast<const float*>(dense.get_data_handle());
    std::vector<bool> in_view(static_cast<size_t>(total), false);
    int64_t k = 0;
    for_each_view_offset(view, [&](int64_t o) {
      out[o] = kept[k++];
      in_view[static_cast<size_t>(o)] = true;
    });
    size_t r = 0;
    for (int64_t i = 0; i < total; ++i)
      if (!in_view[static_cast<size_t>(i)]) out[i] = (*rest)[r++];
  });
}

// The cached copy of `t` in layout `want`, made on a miss. nullptr on a miss
// when `only_if_room` and the cache has no room (nothing is dropped for it).
std::shared_ptr<dnnl::memory> cached_reorder(const Tensor& t, const dnnl::memory::desc& user, const dnnl::memory::desc& want,
                                             bool only_if_room, bool whole = true) {
  // The key: buffer + shape + source and wanted layouts (raw descriptor bytes).
  // Not the data address: reading that would bring released bytes back.
  std::string key(reinterpret_cast<const char*>(&want.data), sizeof(want.data));
  key.append(reinterpret_cast<const char*>(&user.data), sizeof(user.data));
  key += std::to_string(reinterpret_cast<uintptr_t>(t.buffer().get())) + dims_key(t.shape());
  const size_t bytes = want.get_size();
  {
    std::lock_guard<std::mutex> lk(g_weights_mutex);
    auto it = g_weights.find(key);
    if (it != g_weights.end()) return it->second.mem;
    if (only_if_room && g_weight_bytes + bytes > kMaxWeightBytes) return nullptr;
  }
  auto mem = std::make_shared<dnnl::memory>(to_layout(user_mem(user, t.raw()), want));
  {
    std::lock_guard<std::mutex> lk(g_weights_mutex);
    if (g_weight_bytes + bytes > kMaxWeightBytes) {
      g_weights.clear();
      g_weight_bytes = 0;
    }
    auto [it, fresh] = g_weights.emplace(key, WeightEntry{t.buffer(), mem, bytes});
    if (!fresh) return it->second.mem;
    g_weight_bytes += bytes;
  }
  // The plain bytes are now a second copy: give them back where the reorder
  // is a permutation of float32 values (a blocked layout), so that reordering
  // back restores them exactly. Winograd's transformed weights are not: their
  // source stays (oneDNN has no reorder back from them).
  if (t_release_repacked && want.data.format_kind == dnnl_blocked) {
    if (whole && user.get_size() == t.buffer()->size())
      t.buffer()->release_bytes([mem, user](std::byte* dst) {
        dnnl::memory packed = *mem;
        dnnl::memory plain(user, engine(), dst);
        dnnl::reorder(packed, plain).execute(stream(), packed, plain);
        stream().wait();
      });
    else if (!whole)
      release_around_view(t, user, mem);
  }
  return mem;
}
}  // namespace

std::shared_ptr<dnnl::memory> weights_in(const KernelContext& ctx, size_t input, const dnnl::memory::desc& user,
                                         const dnnl::memory::desc& want, bool whole) {
  const Tensor& t = ctx.input(input);
  if (user == want) return std::make_shared<dnnl::memory>(user_mem(user, t.raw()));
  if (!is_initializer(ctx, input) || !t.buffer()) return std::make_shared<dnnl::memory>(to_layout(user_mem(user, t.raw()), want));
  return cached_reorder(t, user, want, false, whole);
}

namespace {
// The taps [lo, hi] of one axis that some output position reads inside the
// input, when they are fewer than k and the cropped window keeps the output size.
bool crop_axis(int64_t in, int64_t k, int64_t s, int64_t d, int64_t& p0, int64_t& p1, int64_t& lo, int64_t& kept) {
  if (in <= 0 || k <= 1 || s <= 0 || d <= 0 || p0 < 0 || p1 < 0 || in + p0 + p1 < (k - 1) * d + 1) return false;
  const int64_t out = (in + p0 + p1 - ((k - 1) * d + 1)) / s + 1;
  int64_t first = -1, last = -1;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t need = p0 - i * d;  // the first output position whose tap i is at or past the input's start
    const int64_t o = need <= 0 ? 0 : (need + s - 1) / s;
    if (o < out && o * s - p0 + i * d < in) {
      if (first < 0) first = i;
      last = i;
    }
  }
  if (first < 0 || (first == 0 && last == k - 1)) return false;
  const int64_t b = p0 - first * d, e = p1 - (k - 1 - last) * d;
  if (b < 0 || e < 0 || (in + b + e - ((last - first) * d + 1)) / s + 1 != out) return false;
  p0 = b;
  p1 = e;
  lo = first;
  kept = last - first + 1;
  return true;
}
}  // namespace

std::vector<int64_t> crop_window(ref::nn::Window& win) {
  const size_t n = win.kernel.size();
  if (win.in.size() != n || win.strides.size() != n || win.dilations.size() != n || win.pad_begin.size() != n ||
      win.pad_end.size() != n)
    return {};
  std::vector<int64_t> offsets(n, 0);
  bool any = false;
  for (size_t d = 0; d < n; ++d)
    any |= crop_axis(win.in[d], win.kernel[d], win.strides[d], win.dilations[d], win.pad_begin[d], win.pad_end[d], offsets[d],
                     win.kernel[d]);
  return any ? offsets : std::vector<int64_t>{};
}

dnnl::memory::desc cropped_weights_md(const Shape& full, int64_t group, const std::vector<int64_t>& kernel,
                                      const std::vector<int64_t>& offsets) {
  const Shape all = grouped_weight_dims(full, group);
  Shape part = all;
  std::vector<int64_t> at(all.size(), 0);
  for (size_t d = 0; d < kernel.size(); ++d) {
    part[all.size() - kernel.size() + d] = kernel[d];
    at[all.size() - kernel.size() + d] = offsets[d];
  }
  return plain_md(all).submemory_desc(part, at);
}

std::shared_ptr<dnnl::memory> cached_weights(const KernelContext& ctx, size_t input, const dnnl::memory::desc& user,
                                             const dnnl::memory::desc& want) {
  const Tensor& t = ctx.input(input);
  if (!is_initializer(ctx, input) || !t.buffer()) return nullptr;
  if (user == want) return std::make_shared<dnnl::memory>(user_mem(user, t.raw()));
  return cached_reorder(t, user, want, true);
}

}  // namespace onednn

bool onednn::releasing_repacked_weights() { return onednn::t_release_repacked; }

ReleaseRepackedWeights::ReleaseRepackedWeights(bool on) : previous_(onednn::t_release_repacked) {
  onednn::t_release_repacked = on;
}
ReleaseRepackedWeights::~ReleaseRepackedWeights() { onednn::t_release_repacked = previous_; }

namespace onednn {

// --- activations -----------------------------------------------------------

bool append_activation(const KernelContext& ctx, dnnl::post_ops& po) {
  const std::string act = ctx.attr_string("activation", "");
  const std::vector<float> p = ctx.attr_floats("activation_params");
  using A = dnnl::algorithm;
  if (act.empty()) return p.empty();
  int want = -1;
  for (const auto& f : kFusableActivations)
    if (act == f.op) want = f.params;
  if (want < 0 || static_cast<int>(p.size()) != want) return false;
  if (act == "Relu") po.append_eltwise(1.f, A::eltwise_relu, 0.f, 0.f);
  else if (act == "LeakyRelu") po.append_eltwise(1.f, A::eltwise_relu, p[0], 0.f);
  else if (act == "Sigmoid") po.append_eltwise(1.f, A::eltwise_logistic, 0.f, 0.f);
  else if (act == "Tanh") po.append_eltwise(1.f, A::eltwise_tanh, 0.f, 0.f);
  else if (act == "Clip") {
    if (!(p[0] <= p[1])) return false;  // min > max (or NaN): leave the edge case to the reference
    po.append_eltwise(1.f, A::eltwise_clip, p[0], p[1]);
  } else if (act == "HardSigmoid") {
    // max(0, min(1, alpha * x + beta)): this oneDNN has no hardsigmoid, so linear then clip.
    po.append_eltwise(1.f, A::eltwise_linear, p[0], p[1]);
    po.append_eltwise(1.f, A::eltwise_clip, 0.f, 1.f);
  } else if (act == "Gelu") {
    po.append_eltwise(1.f, p[0] != 0.f ? A::eltwise_gelu_tanh : A::eltwise_gelu_erf, 0.f, 0.f);
  } else if (act == "HardSwish") {
    po.append_eltwise(1.f, A::eltwise_hardswish, 0.f, 0.f);
  } else if (act == "Swish") {
    po.append_eltwise(1.f, A::eltwise_swish, p[0], 0.f);
  } else {
    return false;
  }
  return true;
}

std::string activation_key(const KernelContext& ctx) {
  std::string k = "|act=" + ctx.attr_string("activation", "");
  for (float f : ctx.attr_floats("activation_params")) {
    k += ',';
    k += float_key(f);
  }
  return k;
}

// --- checks ------------------------------------------------------------------

void PlannedInputs::record(const KernelContext& ctx) {
  const size_t n = ctx.input_count();
  shapes.assign(n, Shape{});
  given.assign(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (const Value* v = ctx.input_value(i); v && v->is_tensor()) {
      shapes[i] = v->tensor().shape();
      given[i] = 1;
    }
  threads = sync_threads();
}

bool PlannedInputs::same(const KernelContext& ctx) const {
  const size_t n = ctx.input_count();
  if (n != shapes.size() || threads != sync_threads()) return false;
  for (size_t i = 0; i < n; ++i) {
    const Value* v = ctx.input_value(i);
    if ((v != nullptr) != (given[i] != 0)) return false;
    if (v && (!is_float(v) || v->tensor().shape() != shapes[i])) return false;
  }
  return true;
}

bool is_float(const Value* v) { return v && v->is_tensor() && v->tensor().dtype() == DataType::Float; }

bool float_inputs(const KernelContext& ctx) {
  bool any = false;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const Value* v = ctx.input_value(i);
    if (!v) continue;  // omitted optional input
    if (!is_float(v)) return false;
    any = true;
  }
  return any;
}

bool nonempty(const Tensor& t) {
  for (int64_t d : t.shape())
    if (d <= 0) return false;
  return true;
}

std::string dims_key(const Shape& s) {
  std::string k = "[";
  for (int64_t d : s) k += std::to_string(d) + ",";
  return k + "]";
}

std::string float_key(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return std::to_string(u);
}

namespace {
// A small problem's call ran on fewer threads (threads_for): OpenMP's count
// on this thread goes back to --threads when the kernel is done, as every
// caller expects it.
struct RestoreThreads {
  ~RestoreThreads() { sync_threads(); }
};
}  // namespace

bool safely(const std::function<bool()>& fn) {
  RestoreThreads restore;
  try {
    return fn();
  } catch (...) {
    return false;
  }
}

void guarded(KernelContext& ctx, const std::function<void()>& fn) {
  RestoreThreads restore;
  try {
    fn();
  } catch (const dnnl::error& e) {
    ctx.fail(std::string("oneDNN: ") + e.what());
  }
}

}  // namespace onednn

void register_onednn_kernels(KernelRegistry& r) {
  onednn::register_onednn_conv(r);
  onednn::register_onednn_matmul(r);
  onednn::register_onednn_pool(r);
  onednn::register_onednn_norm(r);
  onednn::register_onednn_sum(r);
  onednn::register_onednn_nchwc(r);
}

void apply_cpu_isa_cap() {
  static const bool once = [] {
    if (cpu_isa_capped_to_avx2() && !std::getenv("DNNL_MAX_CPU_ISA") && !std::getenv("ONEDNN_MAX_CPU_ISA")) {
      try {
        dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
      } catch (const dnnl::error&) {  // oneDNN already chose its ISA in this process: DNNL_MAX_CPU_ISA=AVX2 does it
      }
    }
    return true;
  }();
  (void)once;
}

}  // namespace onnxscope::cpu
