// Reference kernels: the Reduce* operators (one reduction kernel).
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
#include "reference/ops/math/common.h"
#include "reference/ops/reduction/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using rn::for_each_reduction;
using rn::put_real;
namespace {

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
  // Reduced axes that are the last ones (a LayerNorm's or RMSNorm's mean over
  // the hidden dim): output o's elements are the run [o * len, (o + 1) * len),
  // folded in the same order, the outputs spread over the threads.
  size_t lead = reduced.size();
  while (lead > 0 && reduced[lead - 1]) --lead;
  const bool suffix = std::none_of(reduced.begin(), reduced.begin() + static_cast<std::ptrdiff_t>(lead), [](bool r) { return r; });
  const uint64_t len = m > 0 ? x.element_count() / m : 0;
  auto fold = [&](auto combine) {
    if (suffix && m > 0 && len > 0) {
      const std::byte* const px = x.raw();
      for_rows(m, len, [&](uint64_t lo, uint64_t hi) {
        const std::byte* const in = px;  // a local (math/common.h's unary)
        for (uint64_t o = lo; o < hi; ++o) {
          double a = acc[o];
          for (uint64_t t = 0; t < len; ++t) a = combine(a, static_cast<double>(to_compute(load_at<S>(in, o * len + t))));
          acc[o] = a;
        }
      });
      return;
    }
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

}  // namespace

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

}  // namespace onnxscope::ref
