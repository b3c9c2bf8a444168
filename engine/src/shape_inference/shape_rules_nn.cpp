// Shape rules of neural-network operators: convolution, pooling,
// normalization, matrix products, resizing, recurrent layers, Einsum.
#include <algorithm>
#include <cmath>
#include <map>

#include "shape_inference/shape_rules.h"

namespace onnxscope::shape_rules {
namespace {

// Window attributes and spatial sizes stay below 2^31 so that the formulas
// below cannot overflow; anything larger is treated as invalid or unknown.
constexpr int64_t kBig = int64_t{1} << 31;
bool small(int64_t v) { return v > -kBig && v < kBig; }
Dim small_dim(const Dim& d) { return d.is_known() && !small(d.value) ? Dim{} : d; }

// Attribute list of `n` ints, or `def` repeated when absent; nullopt if the
// size is wrong or a value is absurd.
std::optional<std::vector<int64_t>> ints_or(const RuleIO& io, std::string_view name, size_t n, int64_t def) {
  auto v = io.attr_ints(name);
  if (!v) return std::vector<int64_t>(n, def);
  if (v->size() != n || !std::all_of(v->begin(), v->end(), small)) return std::nullopt;
  return v;
}

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// Spatial output dims of a sliding window (Conv and pooling). `kernel` are the
// kernel sizes; `ceil_mode` only for pooling.
std::optional<std::vector<Dim>> window_dims(RuleIO& io, std::span<const Dim> in, const std::vector<int64_t>& kernel,
                                            bool ceil_mode) {
  size_t n = in.size();
  auto strides = ints_or(io, "strides", n, 1);
  auto dilations = ints_or(io, "dilations", n, 1);
  auto pads = ints_or(io, "pads", 2 * n, 0);
  if (!strides || !dilations || !pads || kernel.size() != n) {
    io.fail("kernel_shape, strides, dilations or pads are invalid for the spatial rank");
    return std::nullopt;
  }
  std::string auto_pad = io.attr_s("auto_pad", "NOTSET");
  std::vector<Dim> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t s = (*strides)[i], d = (*dilations)[i], k = kernel[i];
    if (s <= 0 || d <= 0 || k <= 0 || !small(k)) {
      io.fail("invalid kernel, stride or dilation");
      return std::nullopt;
    }
    int64_t ek = (k - 1) * d + 1;  // effective kernel extent
    const Dim x = small_dim(in[i]);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out[i] = s == 1 ? x : (x.is_known() ? Dim::known(ceil_div(x.value, s)) : Dim{});
      continue;
    }
    int64_t pad = auto_pad == "VALID" ? 0 : (*pads)[i] + (*pads)[i + n];
    int64_t pad_begin = auto_pad == "VALID" ? 0 : (*pads)[i];
    if (!x.is_known()) {
      // A stride-1 window that the pads exactly compensate keeps a symbolic size.
      if (s == 1 && pad == ek - 1) out[i] = x;
      continue;
    }
    int64_t span = x.value + pad - ek;
    if (span < 0) {
      io.fail("kernel larger than the padded input");
      return std::nullopt;
    }
    int64_t o = (ceil_mode ? ceil_div(span, s) : span / s) + 1;
    // With ceil_mode a last window that would start in the end padding is dropped.
    if (ceil_mode && (o - 1) * s >= x.value + pad_begin) --o;
    out[i] = Dim::known(o);
  }
  return out;
}

// Kernel sizes from kernel_shape, or the weight's spatial dims.
std::optional<std::vector<int64_t>> kernel_of(const RuleIO& io, const std::vector<Dim>* w, size_t n) {
  if (auto k = io.attr_ints("kernel_shape")) return k;
  if (!w || w->size() != n + 2) return std::nullopt;
  std::vector<int64_t> k;
  for (size_t i = 2; i < w->size(); ++i) {
    if (!(*w)[i].is_known()) return std::nullopt;
    k.push_back((*w)[i].value);
  }
  return k;
}

void conv_like(RuleIO& io, size_t x_idx, size_t w_idx) {
  const auto* x = io.shape(x_idx);
  const auto* w = io.shape(w_idx);
  if (!x || x->size() < 3) return;
  size_t n = x->size() - 2;
  Dim channels = w && w->size() == n + 2 ? (*w)[0] : Dim{};
  std::vector<Dim> out = {(*x)[0], channels};
  auto kernel = kernel_of(io, w, n);
  if (!kernel) {
    out.resize(n + 2);  // rank known, spatial dims not
    return io.set(0, std::move(out));
  }
  auto sp = window_dims(io, std::span(*x).subspan(2), *kernel, false);
  if (!sp) return;
  out.insert(out.end(), sp->begin(), sp->end());
  io.set(0, std::move(out));
}

// Output of [M, K] x [K, N] style products with numpy batch broadcasting.
void matmul_shapes(RuleIO& io, size_t ia, size_t ib) {
  const auto* a = io.shape(ia);
  const auto* b = io.shape(ib);
  if (!a || !b) return;
  if (a->empty() || b->empty()) return io.fail("MatMul of a scalar");
  std::vector<Dim> A = *a, B = *b;
  bool a1 = A.size() == 1, b1 = B.size() == 1;
  if (a1) A.insert(A.begin(), Dim::known(1));
  if (b1) B.push_back(Dim::known(1));
  std::vector<Dim> ba(A.begin(), A.end() - 2), bb(B.begin(), B.end() - 2);
  const std::vector<Dim>* both[] = {&ba, &bb};
  auto batch = broadcast_shapes(both);
  if (!batch) return io.fail("batch dimensions cannot be broadcast");
  const Dim &ka = A.back(), &kb = B[B.size() - 2];
  if (ka.is_known() && kb.is_known() && ka.value != kb.value) return io.fail("inner dimensions differ");
  if (!a1) batch->push_back(A[A.size() - 2]);
  if (!b1) batch->push_back(B.back());
  io.set(0, std::move(*batch));
}

}  // namespace

void rule_conv(RuleIO& io) { conv_like(io, 0, 1); }
void rule_conv_integer(RuleIO& io) { conv_like(io, 0, 1); }
void rule_qlinear_conv(RuleIO& io) { conv_like(io, 0, 3); }

void rule_conv_transpose(RuleIO& io) {
  const auto* x = io.shape(0);
  const auto* w = io.shape(1);
  if (!x || x->size() < 3) return;
  size_t n = x->size() - 2;
  Dim channels = w && w->size() == n + 2 ? dim_mul((*w)[1], Dim::known(io.attr_i("group", 1))) : Dim{};
  std::vector<Dim> out = {(*x)[0], channels};
  if (auto os = io.attr_ints("output_shape"); os && os->size() >= n) {
    // output_shape may carry N and C too (older exporters); its last n are spatial.
    auto sp = known_dims(std::span(*os).subspan(os->size() - n));
    out.insert(out.end(), sp.begin(), sp.end());
    return io.set(0, std::move(out));
  }
  auto kernel = kernel_of(io, w, n);
  auto strides = ints_or(io, "strides", n, 1);
  auto dilations = ints_or(io, "dilations", n, 1);
  auto pads = ints_or(io, "pads", 2 * n, 0);
  auto opad = ints_or(io, "output_padding", n, 0);
  bool sane = kernel && kernel->size() == n && std::all_of(kernel->begin(), kernel->end(), small);
  if (!sane || !strides || !dilations || !pads || !opad) {
    out.resize(n + 2);
    return io.set(0, std::move(out));
  }
  std::string auto_pad = io.attr_s("auto_pad", "NOTSET");
  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  for (size_t i = 0; i < n; ++i) {
    const Dim d = small_dim((*x)[i + 2]);
    int64_t s = (*strides)[i];
    if (same) {
      out.push_back(dim_mul(d, Dim::known(s)));
      continue;
    }
    int64_t ek = ((*kernel)[i] - 1) * (*dilations)[i] + 1;
    int64_t pad = auto_pad == "VALID" ? 0 : (*pads)[i] + (*pads)[i + n];
    int64_t extra = (*opad)[i] + ek - pad;  // out = s*(in-1) + extra
    if (d.is_known()) {
      int64_t o = s * (d.value - 1) + extra;
      out.push_back(o >= 0 ? Dim::known(o) : Dim{});
    } else {
      out.push_back(s == 1 && extra == 1 ? d : Dim{});
    }
  }
  io.set(0, std::move(out));
}

void rule_pool(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x || x->size() < 3) return;
  auto kernel = io.attr_ints("kernel_shape");
  if (!kernel) return io.fail("pooling without kernel_shape");
  auto sp = window_dims(io, std::span(*x).subspan(2), *kernel, io.attr_i("ceil_mode", 0) != 0);
  if (!sp) return;
  std::vector<Dim> out = {(*x)[0], (*x)[1]};
  out.insert(out.end(), sp->begin(), sp->end());
  io.set(0, out);
  io.set(1, std::move(out));  // MaxPool Indices
}

void rule_max_unpool(RuleIO& io) {
  const auto* x = io.shape(0);
  if (io.has(2)) {  // output_shape input wins over the formula
    if (auto os = io.ints_in(2)) io.set(0, known_dims(*os));
    else if (x) io.set(0, std::vector<Dim>(x->size()));
    return;
  }
  auto kernel = io.attr_ints("kernel_shape");
  if (!x || x->size() < 3 || !kernel || kernel->size() != x->size() - 2) return;
  size_t n = kernel->size();
  auto strides = ints_or(io, "strides", n, 1);
  auto pads = ints_or(io, "pads", 2 * n, 0);
  if (!strides || !pads || !std::all_of(kernel->begin(), kernel->end(), small))
    return io.fail("kernel_shape, strides or pads are invalid for the spatial rank");
  std::vector<Dim> out = {(*x)[0], (*x)[1]};
  for (size_t i = 0; i < n; ++i) {
    const Dim d = small_dim((*x)[i + 2]);
    int64_t o = d.is_known() ? (d.value - 1) * (*strides)[i] + (*kernel)[i] - (*pads)[i] - (*pads)[i + n] : -1;
    out.push_back(o >= 0 ? Dim::known(o) : Dim{});
  }
  io.set(0, std::move(out));
}

void rule_global_pool(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x || x->size() < 2) return;
  std::vector<Dim> out(x->size(), Dim::known(1));
  out[0] = (*x)[0];
  out[1] = (*x)[1];
  io.set(0, std::move(out));
}

void rule_batch_norm(RuleIO& io) {
  rule_same_as_input0(io);
  // Training outputs (running/saved mean and variance) are per channel.
  std::optional<std::vector<Dim>> per_channel;
  if (const auto* scale = io.shape(1)) per_channel = *scale;
  else if (const auto* x = io.shape(0); x && x->size() >= 2) per_channel = std::vector<Dim>{(*x)[1]};
  if (!per_channel) return;
  for (size_t i = 1; i < io.num_outputs(); ++i) io.set(i, *per_channel);
}

void rule_layer_norm(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return;
  io.set(0, *x);
  auto axis = normalize_axis(io.attr_i("axis", -1), static_cast<int64_t>(x->size()));
  if (!axis) return io.fail("axis out of range");
  // Mean and InvStdDev keep the leading dims and reduce the rest to 1.
  std::vector<Dim> stat(x->begin(), x->begin() + *axis);
  stat.resize(x->size(), Dim::known(1));
  io.set(1, stat);
  io.set(2, std::move(stat));
}

void rule_gemm(RuleIO& io) {
  const auto* a = io.shape(0);
  const auto* b = io.shape(1);
  if (!a || !b) return;
  if (a->size() != 2 || b->size() != 2) return io.fail("Gemm inputs must be 2-D");
  bool ta = io.attr_i("transA", 0) != 0, tb = io.attr_i("transB", 0) != 0;
  const Dim& k1 = (*a)[ta ? 0 : 1];
  const Dim& k2 = (*b)[tb ? 1 : 0];
  if (k1.is_known() && k2.is_known() && k1.value != k2.value) return io.fail("inner dimensions differ");
  io.set(0, {(*a)[ta ? 1 : 0], (*b)[tb ? 0 : 1]});
}

void rule_matmul(RuleIO& io) { matmul_shapes(io, 0, 1); }
void rule_qlinear_matmul(RuleIO& io) { matmul_shapes(io, 0, 3); }

namespace {
// Resize/Upsample output from per-axis scales: floor(d * scale), 1 keeps a symbol.
void apply_scales(RuleIO& io, const std::vector<Dim>& x, std::span<const double> scales,
                  std::span<const int64_t> axes) {
  if (scales.size() != axes.size()) return io.fail("scales do not match the rank or axes");
  std::vector<Dim> out = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    Dim& d = out[static_cast<size_t>(axes[i])];
    double s = scales[i];
    if (s == 1.0) continue;
    d = d.is_known() ? dim_from_real(static_cast<double>(d.value) * s) : Dim{};
  }
  io.set(0, std::move(out));
}
}  // namespace

void rule_resize(RuleIO& io) {
  const auto* x = io.shape(0);
  size_t scales_idx = io.opset < 11 ? 1 : 2, sizes_idx = 3;
  auto sizes = io.opset < 11 ? std::nullopt : io.ints_in(sizes_idx);
  const auto* scales = io.reals(scales_idx);
  if (scales && scales->empty()) scales = nullptr;  // empty scales: sizes are used
  if (sizes && sizes->empty()) sizes.reset();
  std::vector<int64_t> axes;
  if (auto a = io.attr_ints("axes"); a && io.opset >= 18) {
    if (!x) return;
    for (int64_t v : *a) {
      auto ax = normalize_axis(v, static_cast<int64_t>(x->size()));
      if (!ax) return io.fail("axis out of range");
      axes.push_back(*ax);
    }
  } else {
    size_t r = x ? x->size() : sizes ? sizes->size() : scales ? scales->size() : 0;
    for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (sizes) {
    if (sizes->size() != axes.size()) return io.fail("sizes do not match the rank or axes");
    std::string policy = io.attr_s("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch" || io.opset < 18) {
      std::vector<Dim> out = x ? *x : std::vector<Dim>(axes.size());
      for (size_t i = 0; i < axes.size(); ++i)
        out[static_cast<size_t>(axes[i])] = (*sizes)[i] >= 0 ? Dim::known((*sizes)[i]) : Dim{};
      return io.set(0, std::move(out));
    }
    // not_larger / not_smaller: one scale for all axes, rounded half up.
    if (!x) return;
    double scale = policy == "not_larger" ? 1e300 : -1e300;
    for (size_t i = 0; i < axes.size(); ++i) {
      const Dim& d = (*x)[static_cast<size_t>(axes[i])];
      if (!d.is_known() || d.value == 0) return io.set(0, std::vector<Dim>(x->size()));
      double s = static_cast<double>((*sizes)[i]) / static_cast<double>(d.value);
      scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
    }
    std::vector<Dim> out = *x;
    for (int64_t a : axes) {
      Dim& d = out[static_cast<size_t>(a)];
      d = dim_from_real(scale * static_cast<double>(d.value) + 0.5);
    }
    return io.set(0, std::move(out));
  }
  if (!x) return;
  if (!scales) return io.set(0, std::vector<Dim>(x->size()));  // rank is all we know
  apply_scales(io, *x, *scales, axes);
}

void rule_upsample(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return;
  std::vector<double> scales;
  if (io.opset >= 9) {
    const auto* s = io.reals(1);
    if (!s) return io.set(0, std::vector<Dim>(x->size()));
    scales = *s;
  } else if (auto s = io.attr_floats("scales")) {
    scales.assign(s->begin(), s->end());
  } else {
    return;  // opset 1 height_scale/width_scale: experimental, not handled
  }
  std::vector<int64_t> axes;
  for (size_t i = 0; i < x->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  apply_scales(io, *x, scales, axes);
}

void rule_einsum(RuleIO& io) {
  std::string eq;
  for (char c : io.attr_s("equation", "")) if (c != ' ') eq += c;
  auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t p = 0;;) {
    size_t q = lhs.find(',', p);
    terms.push_back(lhs.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  if (terms.size() != io.num_inputs()) return io.fail("equation does not match the number of inputs");
  std::map<char, Dim> letter;  // dim of each subscript letter
  std::map<char, int> count;
  std::vector<const std::vector<Dim>*> ell_shapes;
  std::vector<std::vector<Dim>> ell_store(terms.size());
  for (size_t t = 0; t < terms.size(); ++t) {
    const auto* s = io.shape(t);
    if (!s) return;
    std::string term = terms[t];
    auto dots = term.find("...");
    size_t letters = term.size() - (dots == std::string::npos ? 0 : 3);
    if (letters > s->size() || (dots == std::string::npos && letters != s->size()))
      return io.fail("equation term does not match the input rank");
    size_t ell = s->size() - letters, pos = 0;
    for (size_t c = 0; c < term.size(); ++c) {
      if (dots != std::string::npos && c == dots) {
        ell_store[t].assign(s->begin() + pos, s->begin() + pos + ell);
        pos += ell;
        c += 2;
        continue;
      }
      char ch = term[c];
      auto [it, fresh] = letter.emplace(ch, (*s)[pos]);
      if (!fresh) it->second = dim_merge(it->second, (*s)[pos]);
      ++count[ch];
      ++pos;
    }
    ell_shapes.push_back(&ell_store[t]);
  }
  auto ell = broadcast_shapes(ell_shapes);
  if (!ell) return io.fail("ellipsis dimensions cannot be broadcast");
  std::vector<Dim> out;
  if (arrow == std::string::npos) {
    // Implicit output: broadcast dims, then letters seen once, alphabetically.
    out = *ell;
    for (const auto& [ch, n] : count)
      if (n == 1) out.push_back(letter[ch]);
  } else {
    std::string rhs = eq.substr(arrow + 2);
    for (size_t c = 0; c < rhs.size(); ++c) {
      if (rhs.compare(c, 3, "...") == 0) {
        out.insert(out.end(), ell->begin(), ell->end());
        c += 2;
      } else if (auto it = letter.find(rhs[c]); it != letter.end()) {
        out.push_back(it->second);
      } else {
        return io.fail("output subscript not used by any input");
      }
    }
  }
  io.set(0, std::move(out));
}

void rule_rnn(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x || x->size() != 3) return;
  bool batch_first = io.attr_i("layout", 0) == 1;
  const Dim& seq = (*x)[batch_first ? 1 : 0];
  const Dim& batch = (*x)[batch_first ? 0 : 1];
  Dim dirs = Dim::known(io.attr_s("direction", "forward") == "bidirectional" ? 2 : 1);
  Dim hidden;
  if (const Attribute* h = io.attr("hidden_size")) {
    hidden = dim_of(h->i);
  } else if (const auto* r = io.shape(2); r && r->size() == 3 && (*r)[2].is_known()) {
    hidden = (*r)[2];  // R is [dirs, gates*hidden, hidden]
  }
  if (batch_first) {
    io.set(0, {batch, seq, dirs, hidden});
    io.set(1, {batch, dirs, hidden});
    io.set(2, {batch, dirs, hidden});
  } else {
    io.set(0, {seq, dirs, batch, hidden});
    io.set(1, {dirs, batch, hidden});
    io.set(2, {dirs, batch, hidden});
  }
}

void rule_grid_sample(RuleIO& io) {
  const auto* x = io.shape(0);
  const auto* g = io.shape(1);
  if (!x || !g || x->size() < 3 || g->size() != x->size()) return;
  std::vector<Dim> out = {dim_merge((*x)[0], (*g)[0]), (*x)[1]};
  out.insert(out.end(), g->begin() + 1, g->end() - 1);
  io.set(0, std::move(out));
}

void rule_roi_align(RuleIO& io) {
  const auto* x = io.shape(0);
  const auto* rois = io.shape(1);
  Dim n = rois && rois->size() == 2 ? (*rois)[0] : Dim{};
  Dim c = x && x->size() == 4 ? (*x)[1] : Dim{};
  io.set(0, {n, c, dim_of(io.attr_i("output_height", 1)), dim_of(io.attr_i("output_width", 1))});
}

void rule_max_roi_pool(RuleIO& io) {
  const auto* x = io.shape(0);
  const auto* rois = io.shape(1);
  auto pooled = io.attr_ints("pooled_shape");
  if (!pooled || pooled->size() != 2) return;
  Dim n = rois && rois->size() == 2 ? (*rois)[0] : Dim{};
  Dim c = x && x->size() == 4 ? (*x)[1] : Dim{};
  io.set(0, {n, c, dim_of((*pooled)[0]), dim_of((*pooled)[1])});
}

void rule_topk(RuleIO& io) {
  const auto* x = io.shape(0);
  if (!x) return;
  auto axis = normalize_axis(io.attr_i("axis", -1), static_cast<int64_t>(x->size()));
  if (!axis) return io.fail("axis out of range");
  Dim k;
  if (io.opset < 10) {
    k = dim_of(io.attr_i("k", 0));
  } else if (auto kv = io.ints_in(1); kv && kv->size() == 1 && (*kv)[0] >= 0) {
    k = Dim::known((*kv)[0]);
  } else if (const Folded* f = io.value(1); f && f->elems.size() == 1) {
    k = f->elems[0].to_dim();  // k taken from a symbolic dim
  }
  std::vector<Dim> out = *x;
  out[static_cast<size_t>(*axis)] = k;
  io.set(0, out);
  io.set(1, std::move(out));
}

}  // namespace onnxscope::shape_rules
