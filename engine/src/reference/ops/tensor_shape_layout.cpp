// Reference kernels: padding, generators and block rearrangements: Pad,
// CenterCropPad, Range, EyeLike, Trilu, DepthToSpace, SpaceToDepth, Col2Im.
#include <algorithm>
#include <cmath>

#include "core/range_plan.h"
#include "reference/kernel_util.h"
#include "reference/ops/ops.h"
#include "reference/ops/tensor_shape_parts.h"

namespace onnxscope::ref {
namespace {

int64_t checked_axis(const KernelContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// Distinct axes made non-negative; all axes of the rank when none are given.
std::vector<int64_t> checked_axes(const KernelContext& ctx, std::vector<int64_t> axes, bool given, int64_t rank) {
  if (!given) {
    axes.resize(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) axes[static_cast<size_t>(d)] = d;
    return axes;
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& a : axes) {
    a = checked_axis(ctx, a, rank);
    if (seen[static_cast<size_t>(a)]) ctx.fail("axis " + std::to_string(a) + " is given twice");
    seen[static_cast<size_t>(a)] = true;
  }
  return axes;
}

// a * b, failing instead of overflowing.
int64_t mul(const KernelContext& ctx, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) ctx.fail("sizes overflow: " + std::to_string(a) + " * " + std::to_string(b));
  return r;
}

// --- Pad --------------------------------------------------------------------------

// A one-element tensor of type `t` holding `v` (Pad's attribute `value`).
Tensor scalar_of(const KernelContext& ctx, DataType t, double v) {
  Tensor s = Tensor::zeros(t, {});
  dispatch<kFloats | kInts | kBool>(ctx, t, [&](auto tag) {
    using S = typename decltype(tag)::type;
    put<S>(s, 0, from_double<compute_t<S>>(v));  // a value of 1e30 or NaN for an int tensor: saturated, 0
  });
  return s;
}

void Pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  const int64_t opset = ctx.opset_version();
  const std::string mode = ctx.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && !(mode == "wrap" && opset >= 19))
    ctx.fail("unsupported mode '" + mode + "'");

  std::vector<int64_t> pads;
  Tensor fill_storage;
  const Tensor* fill = nullptr;  // null: zeros (the default constant)
  std::vector<int64_t> axes;
  bool axes_given = false;
  if (opset < 11) {
    const char* name = opset < 2 ? "paddings" : "pads";
    if (!ctx.has_attr(name)) ctx.fail(std::string("required attribute '") + name + "' is missing");
    pads = ctx.attr_ints(name);
    const float value = ctx.attr_float("value", 0.0f);
    if (value != 0.0f || std::signbit(value)) {
      fill_storage = scalar_of(ctx, x.dtype(), value);
      fill = &fill_storage;
    }
  } else {
    pads = int_values(ctx, ctx.input(1));
    if (const Tensor* cv = ctx.optional_input(2); cv && cv->element_count() > 0) {
      if (cv->dtype() != x.dtype()) ctx.fail("constant_value must have the element type of data");
      if (cv->element_count() != 1) ctx.fail("constant_value must hold one element");
      fill = cv;
    }
    if (opset >= 18 && ctx.has_input(3)) {
      axes = int_values(ctx, ctx.input(3));
      axes_given = true;
    }
  }
  axes = checked_axes(ctx, axes, axes_given, rank);
  const size_t naxes = axes.size();
  if (pads.size() != 2 * naxes)
    ctx.fail("pads has " + std::to_string(pads.size()) + " entries, expected " + std::to_string(2 * naxes));
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < naxes; ++i) {
    begin[static_cast<size_t>(axes[i])] = pads[i];
    end[static_cast<size_t>(axes[i])] = pads[naxes + i];
  }
  Shape out(static_cast<size_t>(rank));
  for (size_t d = 0; d < out.size(); ++d) {
    // Negative pads crop.
    if (__builtin_add_overflow(x.shape()[d], begin[d], &out[d]) || __builtin_add_overflow(out[d], end[d], &out[d]))
      ctx.fail("pads " + shape_to_string(pads) + " overflow");
    if (out[d] < 0) ctx.fail("pads " + shape_to_string(pads) + " remove more than dimension " + std::to_string(d) + " holds");
    if (mode != "constant" && x.shape()[d] == 0 && out[d] > 0)
      ctx.fail("cannot " + mode + "-pad dimension " + std::to_string(d) + " of size 0");
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  if (y.element_count() == 0) return;
  // Output coordinate k is input coordinate c = k - begin, mapped into the input by the mode.
  const auto strides = strides_of(x.shape());
  std::vector<std::vector<int64_t>> table(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    const int64_t n = x.shape()[d];
    // In 128 bits: a pad of -2^63 must not wrap k - begin around.
    auto mod = [](__int128 a, int64_t m) { return static_cast<int64_t>(((a % m) + m) % m); };
    for (int64_t k = 0; k < out[d]; ++k) {
      const __int128 c128 = static_cast<__int128>(k) - begin[d];
      int64_t c;
      if (mode == "constant") {
        c = c128 < 0 || c128 >= n ? -1 : static_cast<int64_t>(c128);
      } else if (mode == "edge") {
        c = c128 < 0 ? 0 : c128 >= n ? n - 1 : static_cast<int64_t>(c128);
      } else if (mode == "wrap") {
        c = mod(c128, n);
      } else {  // reflect about the edge elements (numpy "reflect"), repeatedly if needed
        const int64_t period = 2 * (n - 1);
        c = period == 0 ? 0 : mod(c128, period);
        if (c >= n) c = period - c;
      }
      table[d].push_back(c < 0 ? -1 : c * strides[d]);
    }
  }
  gather_by_tables(ctx, x, y, table, fill);
}

void CenterCropPad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  const std::vector<int64_t> shape = int_values(ctx, ctx.input(1));
  const std::vector<int64_t> axes = checked_axes(ctx, ctx.attr_ints("axes"), ctx.has_attr("axes"), rank);
  if (shape.size() != axes.size())
    ctx.fail("shape has " + std::to_string(shape.size()) + " entries for " + std::to_string(axes.size()) + " axes");
  Shape out = x.shape();
  for (size_t i = 0; i < axes.size(); ++i) {
    if (shape[i] < 0) ctx.fail("shape " + shape_to_string(shape) + " has a negative dimension");
    out[static_cast<size_t>(axes[i])] = shape[i];
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  if (y.element_count() == 0) return;
  // Crop or pad symmetrically; an odd difference leaves the extra element at the end.
  const auto strides = strides_of(x.shape());
  std::vector<std::vector<int64_t>> table(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    const int64_t n = x.shape()[d];
    const int64_t shift = n >= out[d] ? (n - out[d]) / 2 : -((out[d] - n) / 2);
    for (int64_t k = 0; k < out[d]; ++k) {
      const int64_t c = k + shift;
      table[d].push_back(c < 0 || c >= n ? -1 : c * strides[d]);
    }
  }
  gather_by_tables(ctx, x, y, table);
}

// --- generators -------------------------------------------------------------------

void Range(KernelContext& ctx) {
  const Tensor& start = ctx.input(0);
  const Tensor& limit = ctx.input(1);
  const Tensor& delta = ctx.input(2);
  const DataType t = start.dtype();
  if (limit.dtype() != t || delta.dtype() != t) ctx.fail("start, limit and delta must have the same element type");
  if (start.element_count() != 1 || limit.element_count() != 1 || delta.element_count() != 1)
    ctx.fail("start, limit and delta must be scalars");
  range::Plan p;
  try {
    p = dtype_info(t).is_integer ? range::integer_plan(start.element_as_int64(0), limit.element_as_int64(0), delta.element_as_int64(0))
                                 : range::real_plan(start.element_as_double(0), limit.element_as_double(0), delta.element_as_double(0));
  } catch (const std::invalid_argument& e) {
    ctx.fail(e.what());
  }
  const int64_t n = p.count;
  Tensor& y = ctx.allocate_output(0, t, {n});
  if (dtype_info(t).is_integer) {
    dispatch<kInts>(ctx, t, [&](auto tag) {
      using S = typename decltype(tag)::type;
      for (int64_t i = 0; i < n; ++i)
        store<S>(y, static_cast<uint64_t>(i), static_cast<S>(static_cast<uint64_t>(p.start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(p.delta)));
    });
    return;
  }
  // Like numpy.arange, in the computation type C: the first two values are
  // start and start + delta, the rest start + i * (second - first).
  auto fill = [&](auto zero) {
    using C = decltype(zero);
    std::vector<C> v(static_cast<size_t>(n));
    const C first = static_cast<C>(p.first), second = static_cast<C>(static_cast<double>(first) + p.real_delta);
    const C step = second - first;
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = i == 0 ? first : i == 1 ? second : static_cast<C>(first + static_cast<C>(i) * step);
    return v;
  };
  auto store_all = [&](const auto& v) {
    dispatch<kFloats>(ctx, t, [&](auto tag) {
      using S = typename decltype(tag)::type;
      for (size_t i = 0; i < v.size(); ++i) put<S>(y, i, static_cast<compute_t<S>>(v[i]));
    });
  };
  const bool narrow = t == DataType::Float16 || t == DataType::BFloat16;
  if (narrow && ctx.opset_version() >= 27) {
    // stash_type: the precision float16/bfloat16 ranges are computed in.
    const int64_t stash = ctx.attr_int("stash_type", 1);
    if (stash == 1) store_all(fill(0.0f));
    else if (stash == 11) store_all(fill(0.0));
    else ctx.fail("stash_type must be 1 (float) or 11 (double), got " + std::to_string(stash));
  } else {
    store_all(fill(0.0));  // numpy computes in float64, then casts
  }
}

void EyeLike(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) ctx.fail("input must be 2-D, got shape " + shape_to_string(x.shape()));
  DataType t = x.dtype();
  if (ctx.has_attr("dtype")) {
    const int64_t v = ctx.attr_int("dtype", 0);
    if (v <= 0 || v > INT32_MAX || !is_known_dtype(static_cast<int32_t>(v))) ctx.fail("dtype is not a known element type");
    t = static_cast<DataType>(v);
  }
  const int64_t k = ctx.attr_int("k", 0);
  Tensor& y = ctx.allocate_output(0, t, x.shape());
  Tensor one = Tensor::zeros(t, {});
  dispatch<kAllFixed | kComplex>(ctx, t, [&](auto tag) {
    using S = typename decltype(tag)::type;
    put<S>(one, 0, static_cast<compute_t<S>>(1));
  });
  ElementMover move(one, y, &ctx);
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  for (int64_t i = 0; i < rows; ++i) {
    if (k >= cols || k <= -rows) break;  // no diagonal inside (and i + k cannot overflow below)
    const int64_t j = i + k;
    if (j >= 0 && j < cols) move(static_cast<uint64_t>(i * cols + j), 0);
  }
}

void Trilu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank 2 or more, got shape " + shape_to_string(x.shape()));
  int64_t k = 0;
  if (const Tensor* kt = ctx.optional_input(1)) {
    if (kt->element_count() != 1 || !dtype_info(kt->dtype()).is_integer) ctx.fail("k must be an integer scalar");
    k = kt->element_as_int64(0);
  }
  const bool upper = ctx.attr_int("upper", 1) != 0;
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  const int64_t rows = x.shape()[x.shape().size() - 2], cols = x.shape().back();
  if (y.element_count() == 0) return;
  const uint64_t batches = y.element_count() / static_cast<uint64_t>(rows * cols);
  ElementMover move(x, y, &ctx);
  uint64_t pos = 0;
  for (uint64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j, ++pos) {
        const bool keep = upper ? j - i >= k : j - i <= k;  // the rest stays zero
        if (keep) move(pos, pos);
      }
}

// --- block rearrangements ---------------------------------------------------------

int64_t blocksize_of(const KernelContext& ctx) {
  const int64_t b = ctx.required_attr("blocksize").i;
  if (b <= 0) ctx.fail("blocksize must be positive, got " + std::to_string(b));
  return b;
}
bool crd_mode(const KernelContext& ctx) {
  const std::string mode = ctx.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.fail("mode must be 'DCR' or 'CRD', got '" + mode + "'");
  return mode == "CRD";
}

void DepthToSpace(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 4) ctx.fail("input must be 4-D, got shape " + shape_to_string(x.shape()));
  const int64_t b = blocksize_of(ctx);
  const bool crd = crd_mode(ctx);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (C % mul(ctx, b, b) != 0) ctx.fail("channels " + std::to_string(C) + " are not divisible by blocksize^2");
  const int64_t c_out = C / (b * b);
  Tensor& y = ctx.allocate_output(0, x.dtype(), {N, c_out, mul(ctx, H, b), mul(ctx, W, b)});
  ElementMover move(x, y, &ctx);
  uint64_t pos = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < c_out; ++c)
      for (int64_t oh = 0; oh < H * b; ++oh)
        for (int64_t ow = 0; ow < W * b; ++ow, ++pos) {
          const int64_t h = oh / b, i = oh % b, w = ow / b, j = ow % b;
          // DCR: channel = (i * b + j) * c_out + c; CRD: channel = c * b * b + i * b + j.
          const int64_t ic = crd ? c * b * b + i * b + j : (i * b + j) * c_out + c;
          move(pos, static_cast<uint64_t>(((n * C + ic) * H + h) * W + w));
        }
}

void SpaceToDepth(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 4) ctx.fail("input must be 4-D, got shape " + shape_to_string(x.shape()));
  const int64_t b = blocksize_of(ctx);
  const bool crd = crd_mode(ctx);  // mode exists from opset 28; DCR before
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (H % b != 0 || W % b != 0) ctx.fail("spatial size " + shape_to_string(x.shape()) + " is not divisible by blocksize");
  const int64_t oh_n = H / b, ow_n = W / b, c_out = mul(ctx, C, mul(ctx, b, b));
  Tensor& y = ctx.allocate_output(0, x.dtype(), {N, c_out, oh_n, ow_n});
  ElementMover move(x, y, &ctx);
  uint64_t pos = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < c_out; ++oc)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow, ++pos) {
          // DCR: oc = (i * b + j) * C + c; CRD: oc = c * b * b + i * b + j.
          const int64_t c = crd ? oc / (b * b) : oc % C;
          const int64_t ij = crd ? oc % (b * b) : oc / C;
          const int64_t h = oh * b + ij / b, w = ow * b + ij % b;
          move(pos, static_cast<uint64_t>(((n * C + c) * H + h) * W + w));
        }
}

void Col2Im(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> image = int_values(ctx, ctx.input(1));
  const std::vector<int64_t> block = int_values(ctx, ctx.input(2));
  const size_t nd = image.size();
  if (nd == 0 || block.size() != nd) ctx.fail("image_shape and block_shape must have the same, non-zero length");
  const auto dil = ctx.attr_ints("dilations", std::vector<int64_t>(nd, 1));
  const auto strides = ctx.attr_ints("strides", std::vector<int64_t>(nd, 1));
  const auto pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (dil.size() != nd || strides.size() != nd || pads.size() != 2 * nd)
    ctx.fail("dilations, strides and pads must match the " + std::to_string(nd) + " spatial dimensions");
  if (x.rank() != 3) ctx.fail("input must be 3-D [N, C * prod(block_shape), L], got " + shape_to_string(x.shape()));
  int64_t kernel = 1, blocks = 1;
  std::vector<int64_t> nblocks(nd);
  for (size_t i = 0; i < nd; ++i) {
    if (image[i] <= 0 || block[i] <= 0 || dil[i] <= 0 || strides[i] <= 0 || pads[i] < 0 || pads[nd + i] < 0)
      ctx.fail("image_shape, block_shape, dilations and strides must be positive and pads not negative");
    if (image[i] > INT32_MAX || block[i] > INT32_MAX || dil[i] > INT32_MAX || strides[i] > INT32_MAX ||
        pads[i] > INT32_MAX || pads[nd + i] > INT32_MAX)
      ctx.fail("Col2Im sizes beyond 2^31 are not supported");
    kernel = mul(ctx, kernel, block[i]);
    const int64_t room = image[i] + pads[i] + pads[nd + i] - dil[i] * (block[i] - 1) - 1;
    if (room < 0) ctx.fail("the blocks do not fit the padded image");
    nblocks[i] = room / strides[i] + 1;
    blocks = mul(ctx, blocks, nblocks[i]);
  }
  const int64_t N = x.shape()[0];
  if (x.shape()[1] % kernel != 0)
    ctx.fail("input dimension 1 (" + std::to_string(x.shape()[1]) + ") is not divisible by prod(block_shape)");
  if (x.shape()[2] != blocks)
    ctx.fail("input dimension 2 is " + std::to_string(x.shape()[2]) + ", expected " + std::to_string(blocks) +
             " blocks");
  const int64_t C = x.shape()[1] / kernel;
  Shape out{N, C};
  out.insert(out.end(), image.begin(), image.end());
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  int64_t image_size = 1;
  for (int64_t v : image) image_size = mul(ctx, image_size, v);
  if (x.is_string()) ctx.fail("overlapping blocks of strings cannot be summed");
  dispatch<kFloats | kInts | kBool | kComplex>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Cmp = compute_t<S>;
    // Overlapping blocks add up; floats are summed in double, complex numbers in
    // complex<double>, integers in 64 bits (bool: any true block gives true).
    using Acc = std::conditional_t<std::is_floating_point_v<Cmp>, double,
                                   std::conditional_t<std::is_integral_v<Cmp>, int64_t, std::complex<double>>>;
    std::vector<Acc> acc(static_cast<size_t>(y.element_count()), Acc(0));
    std::vector<int64_t> kpos(nd), bpos(nd);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t kidx = 0; kidx < kernel; ++kidx) {
          for (int64_t r = kidx, i = static_cast<int64_t>(nd) - 1; i >= 0; --i) {
            kpos[static_cast<size_t>(i)] = r % block[static_cast<size_t>(i)];
            r /= block[static_cast<size_t>(i)];
          }
          for (int64_t bidx = 0; bidx < blocks; ++bidx) {
            int64_t linear = 0;
            bool inside = true;
            for (int64_t r = bidx, i = static_cast<int64_t>(nd) - 1; i >= 0; --i) {
              bpos[static_cast<size_t>(i)] = r % nblocks[static_cast<size_t>(i)];
              r /= nblocks[static_cast<size_t>(i)];
            }
            for (size_t i = 0; i < nd; ++i) {
              const int64_t p = bpos[i] * strides[i] - pads[i] + kpos[i] * dil[i];
              if (p < 0 || p >= image[i]) inside = false;
              linear = linear * image[i] + p;
            }
            if (!inside) continue;
            const uint64_t src = static_cast<uint64_t>(((n * C + c) * kernel + kidx) * blocks + bidx);
            acc[static_cast<size_t>((n * C + c) * image_size + linear)] += static_cast<Acc>(get<S>(x, src));
          }
        }
    for (size_t i = 0; i < acc.size(); ++i) {
      if constexpr (std::is_same_v<Cmp, bool>) put<S>(y, i, acc[i] != 0);
      else put<S>(y, i, static_cast<Cmp>(acc[i]));
    }
  });
}

}  // namespace

void register_tensor_shape_layout_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since) {
    r.add(KernelDef{"", op, since, INT_MAX, "reference", fn, nullptr});
  };
  add("Pad", Pad, 1);
  add("CenterCropPad", CenterCropPad, 18);
  add("Range", Range, 11);
  add("EyeLike", EyeLike, 9);
  add("Trilu", Trilu, 14);
  add("DepthToSpace", DepthToSpace, 1);
  add("SpaceToDepth", SpaceToDepth, 1);
  add("Col2Im", Col2Im, 18);
}

}  // namespace onnxscope::ref
