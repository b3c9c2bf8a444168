// Reference kernel: NonZero.
//
// Ordering of floats follows numpy's sort: NaN sorts after every number and
// NaNs are equal to each other (TopK puts NaN first when largest=1, Unique
// collapses NaNs, ArgMax and ArgMin both pick NaN like numpy does).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void NonZero(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<uint64_t> hits;  // flat positions of non-zero elements, row-major
  if (x.is_string()) {
    for (uint64_t i = 0; i < x.element_count(); ++i)
      if (!x.strings()[i].empty()) hits.push_back(i);  // numpy: a string is "non-zero" when not empty
  } else {
    dispatch<kAllFixed | kComplex>(ctx, x.dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      using C = compute_t<S>;
      for (uint64_t i = 0; i < x.element_count(); ++i)
        if (get<S>(x, i) != C(0)) hits.push_back(i);  // NaN counts as non-zero
    });
  }
  // Scalars give shape [0, N] (the spec's deviation from numpy's [1, N]).
  const int64_t r = x.rank();
  const int64_t n = static_cast<int64_t>(hits.size());
  Tensor& y = ctx.allocate_output(0, DataType::Int64, {r, n});
  const std::vector<int64_t> strides = strides_of(x.shape());
  for (int64_t j = 0; j < n; ++j) {
    uint64_t rest = hits[j];
    for (int64_t d = 0; d < r; ++d) {
      store<int64_t>(y, static_cast<uint64_t>(d * n + j), static_cast<int64_t>(rest / strides[d]));
      rest %= strides[d];
    }
  }
}

}  // namespace onnxscope::ref
