// Reference kernels: reductions, softmax, normalization, losses: Reduce*, Softmax, LogSoftmax, Hardmax, LpNormalization, BatchNormalization, InstanceNormalization, LayerNormalization, GroupNormalization, RMSNormalization, LRN, MeanVarianceNormalization, Dropout, Clip, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
//
// This file holds the reductions, the softmax family, Clip and Dropout; the
// normalizations and the losses are in reduce_norm_normalization.cpp. Float
// math accumulates in double (the spec leaves the precision open) and rounds
// once on store; integer sums and products wrap like numpy's.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/ops.h"
#include "reference/ops/reduce_norm_parts.h"

namespace onnxscope::ref {
namespace {

using rn::for_each_reduction;
using rn::put_real;

// --- Reduce* ---------------------------------------------------------------

enum class ReduceOp { Sum, Mean, Prod, Max, Min, L1, L2, LogSum, LogSumExp, SumSquare };

// Which axes of the input are reduced. Older versions take them from the 'axes'
// attribute, newer ones (ReduceSum from 13, the others from 18) from the optional
// second input, and add noop_with_empty_axes: then no axes mean no reduction
// at all instead of "reduce everything".
std::vector<bool> reduced_axes(const KernelContext& ctx, int64_t rank, bool axes_as_input) {
  std::vector<int64_t> axes;
  bool noop_if_empty = false;
  if (axes_as_input) {
    if (const Tensor* t = ctx.optional_input(1)) axes = int_values(ctx, *t);
    noop_if_empty = ctx.attr_int("noop_with_empty_axes", 0) != 0;
  } else {
    axes = ctx.attr_ints("axes", {});
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty() && !noop_if_empty);
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(ctx, a, rank);
    if (n >= rank) ctx.fail("axis " + std::to_string(a) + " is out of range for a scalar (rank 0)");
    if (reduced[n]) ctx.fail("axes lists axis " + std::to_string(a) + " more than once");
    reduced[n] = true;
  }
  return reduced;
}

double reduce_identity(ReduceOp op) {
  switch (op) {
    case ReduceOp::Prod: return 1.0;
    case ReduceOp::Max: return -std::numeric_limits<double>::infinity();
    case ReduceOp::Min: return std::numeric_limits<double>::infinity();
    default: return 0.0;  // sums (LogSum and LogSumExp take the log of an empty sum: -inf)
  }
}

// Any numeric element type, computed in double: used for every float type and
// for the integer forms of L2, LogSum and LogSumExp (truncated on store).
template <typename S>
void reduce_in_double(ReduceOp op, const Tensor& x, Tensor& y, const std::vector<bool>& reduced, uint64_t count) {
  const uint64_t m = y.element_count();
  std::vector<double> acc(m, reduce_identity(op));
  auto fold = [&](auto combine) {
    for_each_reduction(x.shape(), reduced, [&](uint64_t i, uint64_t o) {
      acc[o] = combine(acc[o], static_cast<double>(get<S>(x, i)));
    });
  };
  std::vector<double> shift;  // LogSumExp: the largest finite element of each group
  switch (op) {
    case ReduceOp::Sum: case ReduceOp::Mean: case ReduceOp::LogSum:
      fold([](double a, double v) { return a + v; });
      break;
    case ReduceOp::SumSquare: case ReduceOp::L2:
      fold([](double a, double v) { return a + v * v; });
      break;
    case ReduceOp::L1: fold([](double a, double v) { return a + std::fabs(v); }); break;
    case ReduceOp::Prod: fold([](double a, double v) { return a * v; }); break;
    case ReduceOp::Max:  // NaN propagates, like numpy.maximum
      fold([](double a, double v) { return std::isnan(a) || std::isnan(v) ? std::nan("") : (v > a ? v : a); });
      break;
    case ReduceOp::Min:
      fold([](double a, double v) { return std::isnan(a) || std::isnan(v) ? std::nan("") : (v < a ? v : a); });
      break;
    case ReduceOp::LogSumExp: {
      // log(sum(exp(x - s))) + s with s the largest finite element, so exp never
      // overflows; infinities then give the right +-inf and all -inf gives -inf.
      shift.assign(m, -std::numeric_limits<double>::infinity());
      for_each_reduction(x.shape(), reduced, [&](uint64_t i, uint64_t o) {
        const double v = static_cast<double>(get<S>(x, i));
        if (std::isfinite(v) && v > shift[o]) shift[o] = v;
      });
      for (double& s : shift)
        if (!std::isfinite(s)) s = 0.0;
      for_each_reduction(x.shape(), reduced, [&](uint64_t i, uint64_t o) {
        acc[o] += std::exp(static_cast<double>(get<S>(x, i)) - shift[o]);
      });
      break;
    }
  }
  for (uint64_t o = 0; o < m; ++o) {
    double r = acc[o];
    switch (op) {
      case ReduceOp::Mean: r = r / static_cast<double>(count); break;  // empty: 0/0 = NaN, as numpy
      case ReduceOp::L2: r = std::sqrt(r); break;
      case ReduceOp::LogSum: r = std::log(r); break;
      case ReduceOp::LogSumExp: r = std::log(r) + shift[o]; break;
      default: break;
    }
    put_real<S>(y, o, r);
  }
}

// Integer Sum/Prod/SumSquare/L1/Mean/Max/Min, exact in 64 bits. Sums and
// products wrap modulo 2^64 and are then truncated to the element type, which
// gives the same wrap-around as numpy's arithmetic in the element type. Mean
// divides the 64-bit sum, truncating toward zero (numpy's cast of the quotient).
template <typename T>
void reduce_integers(ReduceOp op, const Tensor& x, Tensor& y, const std::vector<bool>& reduced, uint64_t count) {
  const uint64_t m = y.element_count();
  if (op == ReduceOp::Max || op == ReduceOp::Min) {
    const bool is_max = op == ReduceOp::Max;
    // Empty groups give the type's minimum (Max) or maximum (Min).
    std::vector<T> acc(m, is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
    for_each_reduction(x.shape(), reduced, [&](uint64_t i, uint64_t o) {
      const T v = load<T>(x, i);
      if (is_max ? v > acc[o] : v < acc[o]) acc[o] = v;
    });
    for (uint64_t o = 0; o < m; ++o) store<T>(y, o, acc[o]);
    return;
  }
  std::vector<uint64_t> acc(m, op == ReduceOp::Prod ? 1u : 0u);
  auto fold = [&](auto combine) {
    for_each_reduction(x.shape(), reduced, [&](uint64_t i, uint64_t o) {
      acc[o] = combine(acc[o], static_cast<uint64_t>(load<T>(x, i)));  // sign-extends, so wrap-around is exact
    });
  };
  switch (op) {
    case ReduceOp::Sum: case ReduceOp::Mean: fold([](uint64_t a, uint64_t v) { return a + v; }); break;
    case ReduceOp::SumSquare: fold([](uint64_t a, uint64_t v) { return a + v * v; }); break;
    case ReduceOp::Prod: fold([](uint64_t a, uint64_t v) { return a * v; }); break;
    case ReduceOp::L1:
      fold([](uint64_t a, uint64_t v) {
        if constexpr (std::is_signed_v<T>) return a + (static_cast<int64_t>(v) < 0 ? uint64_t{0} - v : v);
        else return a + v;
      });
      break;
    default: break;
  }
  for (uint64_t o = 0; o < m; ++o) {
    if (op == ReduceOp::Mean) {
      if (count == 0) {
        store<T>(y, o, T(0));  // undefined by the spec (numpy divides by zero); 0 keeps it deterministic
      } else if constexpr (std::is_signed_v<T>) {
        store<T>(y, o, static_cast<T>(static_cast<int64_t>(acc[o]) / static_cast<int64_t>(count)));
      } else {
        store<T>(y, o, static_cast<T>(acc[o] / count));
      }
    } else {
      store<T>(y, o, static_cast<T>(acc[o]));  // modular (C++20)
    }
  }
}

// Bool ReduceMax/ReduceMin (opset 20+), with False < True: any / all.
void reduce_bools(ReduceOp op, const Tensor& x, Tensor& y, const std::vector<bool>& reduced) {
  const bool is_max = op == ReduceOp::Max;
  std::vector<char> acc(y.element_count(), is_max ? 0 : 1);  // empty: False for Max, True for Min
  for_each_reduction(x.shape(), reduced, [&](uint64_t i, uint64_t o) {
    const bool v = load<bool>(x, i);
    acc[o] = is_max ? (acc[o] || v) : (acc[o] && v);
  });
  for (uint64_t o = 0; o < acc.size(); ++o) store<bool>(y, o, acc[o] != 0);
}

// axes_input_since: the first version taking axes as an input (13 or 18).
void reduce(KernelContext& ctx, ReduceOp op, int axes_input_since) {
  const Tensor& x = ctx.input(0);
  const int64_t version = ctx.opset_version();
  const auto reduced = reduced_axes(ctx, x.rank(), version >= axes_input_since);
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  Shape out_shape;
  uint64_t count = 1;  // elements folded into each output element
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (!reduced[d]) out_shape.push_back(x.shape()[d]);
    else {
      count *= static_cast<uint64_t>(x.shape()[d]);
      if (keepdims) out_shape.push_back(1);
    }
  }
  const bool log_op = op == ReduceOp::LogSum || op == ReduceOp::LogSumExp;
  if (x.dtype() == DataType::Bool) {
    if ((op != ReduceOp::Max && op != ReduceOp::Min) || version < 20)
      ctx.fail("does not support element type bool (ReduceMax/ReduceMin accept it from opset 20)");
    reduce_bools(op, x, ctx.allocate_output(0, x.dtype(), out_shape), reduced);
    return;
  }
  if (log_op && version >= 28 && dtype_info(x.dtype()).is_integer)
    ctx.fail("does not support integer element types from opset 28");
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  dispatch<kNumeric>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<S>) {
      if (op == ReduceOp::L2 || log_op) reduce_in_double<S>(op, x, y, reduced, count);
      else reduce_integers<S>(op, x, y, reduced, count);
    } else {
      reduce_in_double<S>(op, x, y, reduced, count);
    }
  });
}

void ReduceSum(KernelContext& c) { reduce(c, ReduceOp::Sum, 13); }
void ReduceMean(KernelContext& c) { reduce(c, ReduceOp::Mean, 18); }
void ReduceProd(KernelContext& c) { reduce(c, ReduceOp::Prod, 18); }
void ReduceMax(KernelContext& c) { reduce(c, ReduceOp::Max, 18); }
void ReduceMin(KernelContext& c) { reduce(c, ReduceOp::Min, 18); }
void ReduceL1(KernelContext& c) { reduce(c, ReduceOp::L1, 18); }
void ReduceL2(KernelContext& c) { reduce(c, ReduceOp::L2, 18); }
void ReduceLogSum(KernelContext& c) { reduce(c, ReduceOp::LogSum, 18); }
void ReduceLogSumExp(KernelContext& c) { reduce(c, ReduceOp::LogSumExp, 18); }
void ReduceSumSquare(KernelContext& c) { reduce(c, ReduceOp::SumSquare, 18); }

// --- Softmax, LogSoftmax, Hardmax -------------------------------------------

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

// Before opset 13 the input is coerced to 2-D at `axis` (default 1) and the
// operator works on each row of [d0*..*d(axis-1), d(axis)*..*d(n-1)]; from 13
// it works along the single dimension `axis` (default -1).
void softmax_family(KernelContext& ctx, SoftmaxKind kind) {
  const Tensor& x = ctx.input(0);
  const bool coerce_2d = ctx.opset_version() < 13;
  const int64_t rank = x.rank();
  const auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", coerce_2d ? 1 : -1), rank));
  const Shape& s = x.shape();
  const uint64_t outer = rn::dims_product(s, 0, axis);
  const uint64_t len = coerce_2d ? rn::dims_product(s, axis, s.size()) : rn::dims_product(s, axis, axis + 1);
  const uint64_t inner = coerce_2d ? 1 : rn::dims_product(s, axis + 1, s.size());  // stride along the axis
  Tensor& y = ctx.allocate_output(0, x.dtype(), s);
  if (x.element_count() == 0) return;
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::byte* px = x.raw();  // fetched once: per element they cost more than the copy
    std::byte* py = y.mutable_raw();
    auto at = [&](uint64_t i) {
      S v;
      std::memcpy(&v, px + i * sizeof(S), sizeof(S));
      return static_cast<double>(to_compute(v));
    };
    auto set = [&](uint64_t i, double v) {
      const S r = from_compute<S>(static_cast<compute_t<S>>(v));
      std::memcpy(py + i * sizeof(S), &r, sizeof(S));
    };
    // Rows are independent: each is computed by one thread, in one order.
    cpu::parallel_for(static_cast<int64_t>(outer * inner), std::max<int64_t>(1, 4096 / static_cast<int64_t>(len)), [&](int64_t r0, int64_t r1) {
      poll_deadline();
      std::vector<double> row(len), e(len);
      for (auto r = static_cast<uint64_t>(r0); r < static_cast<uint64_t>(r1); ++r) {
        const uint64_t o = r / inner, k = r % inner;
        const uint64_t base = o * len * inner + k;
        for (uint64_t j = 0; j < len; ++j) row[j] = at(base + j * inner);
        if (kind == SoftmaxKind::Hardmax) {
          // 1 at the first maximum (the first NaN if any, like numpy.argmax), 0 elsewhere.
          uint64_t best = 0;
          for (uint64_t j = 1; j < len && !std::isnan(row[best]); ++j)
            if (std::isnan(row[j]) || row[j] > row[best]) best = j;
          for (uint64_t j = 0; j < len; ++j) set(base + j * inner, j == best ? 1.0 : 0.0);
          continue;
        }
        double mx = -std::numeric_limits<double>::infinity();
        for (double v : row) mx = std::max(mx, v);
        double sum = 0;
        for (uint64_t j = 0; j < len; ++j) {
          e[j] = std::exp(row[j] - mx);
          sum += e[j];
        }
        for (uint64_t j = 0; j < len; ++j) set(base + j * inner, kind == SoftmaxKind::Softmax ? e[j] / sum : (row[j] - mx) - std::log(sum));
      }
    });
  });
}

void Softmax(KernelContext& c) { softmax_family(c, SoftmaxKind::Softmax); }
void LogSoftmax(KernelContext& c) { softmax_family(c, SoftmaxKind::LogSoftmax); }
void Hardmax(KernelContext& c) { softmax_family(c, SoftmaxKind::Hardmax); }

// --- Clip ------------------------------------------------------------------

// y = min(max(x, min), max): when min > max every element becomes max (the
// spec's rule); NaN elements stay NaN. Bounds are the 'min'/'max' attributes
// before opset 11 and optional scalar inputs from 11; a missing bound is no bound.
void Clip(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool from_inputs = ctx.opset_version() >= 11;
  const Tensor* lo_t = from_inputs ? ctx.optional_input(1) : nullptr;
  const Tensor* hi_t = from_inputs ? ctx.optional_input(2) : nullptr;
  for (const Tensor* b : {lo_t, hi_t})
    if (b && (b->dtype() != x.dtype() || b->element_count() != 1))
      ctx.fail("min and max must be scalars of the input's element type, got " +
               std::string(dtype_name(b->dtype())) + shape_to_string(b->shape()));
  const bool has_lo = from_inputs ? lo_t != nullptr : ctx.has_attr("min");
  const bool has_hi = from_inputs ? hi_t != nullptr : ctx.has_attr("max");
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch<kNumeric>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    C lo{}, hi{};
    // A float attribute bound on an integer input: past the type's range it
    // saturates (a C++ conversion would be undefined), NaN bounds nothing.
    bool use_lo = has_lo, use_hi = has_hi;
    auto bound = [&](const char* name, bool& use) {
      const float f = ctx.attr_float(name, 0);
      if constexpr (std::is_integral_v<C>) {
        if (std::isnan(f)) use = false;
        return saturating_cast<C>(f);
      } else {
        return static_cast<C>(f);
      }
    };
    if (has_lo) lo = from_inputs ? get<S>(*lo_t, 0) : bound("min", use_lo);
    if (has_hi) hi = from_inputs ? get<S>(*hi_t, 0) : bound("max", use_hi);
    for (uint64_t i = 0; i < x.element_count(); ++i) {
      C v = get<S>(x, i);
      if (use_lo && v < lo) v = lo;
      if (use_hi && v > hi) v = hi;
      put<S>(y, i, v);
    }
  });
}

// --- Dropout ---------------------------------------------------------------

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

}  // namespace

void register_reduce_norm_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since) {
    r.add(KernelDef{"", op, since, INT_MAX, "reference", fn, nullptr});
  };
  // Each kernel branches on ctx.opset_version() where versions differ (axes as
  // attribute or input, 2-D coercion, Clip bounds, Dropout modes).
  add("ReduceSum", ReduceSum, 1);
  add("ReduceMean", ReduceMean, 1);
  add("ReduceProd", ReduceProd, 1);
  add("ReduceMax", ReduceMax, 1);
  add("ReduceMin", ReduceMin, 1);
  add("ReduceL1", ReduceL1, 1);
  add("ReduceL2", ReduceL2, 1);
  add("ReduceLogSum", ReduceLogSum, 1);
  add("ReduceLogSumExp", ReduceLogSumExp, 1);
  add("ReduceSumSquare", ReduceSumSquare, 1);
  add("Softmax", Softmax, 1);
  add("LogSoftmax", LogSoftmax, 1);
  add("Hardmax", Hardmax, 1);
  add("Clip", Clip, 1);
  add("Dropout", Dropout, 1);
  register_reduce_norm_normalization_ops(r);
}

}  // namespace onnxscope::ref
