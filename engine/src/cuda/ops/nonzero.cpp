// NonZero for any fixed-width type (kernels/nonzero.h): the count is read
// back on the host in the middle of the run, since the output's size is
// that count; so a run holding NonZero is not captured (a capture cannot
// wait for the device), and its memory plan holds while the counts repeat.
#include <algorithm>

#include "cuda/ops/op_table.h"
#include "offload/steady_state.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_nonzero(const Graph& g, const Node& n) {
  if (n.inputs.size() != 1) return std::string("NonZero takes X");
  return require_types(g, n, {DataType::Float, DataType::Double, DataType::Float16, DataType::BFloat16, DataType::Int8,
                              DataType::Int16, DataType::Int32, DataType::Int64, DataType::Uint8, DataType::Uint16,
                              DataType::Uint32, DataType::Uint64, DataType::Bool});
}

void run_nonzero(OpContext& c) {
  if (c.rt().capturing())
    throw offload::CaptureUnsupported("NonZero's output size is a count the host reads from the device mid-run");
  const DeviceTensor& x = c.input(0);
  if (x.shape.size() > static_cast<size_t>(kKernelRank)) c.fail("X has more than " + std::to_string(kKernelRank) + " dims");
  const auto n = static_cast<int64_t>(elements_of(x.shape));
  const auto rank = static_cast<int64_t>(x.shape.size());
  const int64_t chunk = std::max<int64_t>(256, (n + 1023) / 1024);  // at most 1024 chunks
  const int64_t chunks = (n + chunk - 1) / chunk;
  const DeviceTensor counts = c.allocate(DataType::Int64, {chunks + 1});
  auto* places = static_cast<int64_t*>(counts.data);
  const auto type = static_cast<ElemType>(x.dtype);
  launch(c.rt(), NonZeroCountKernel{type, n, chunk, x.data, places}, chunks);
  launch(c.rt(), NonZeroPlacesKernel{chunks, places}, 1);
  int64_t total = 0;
  c.rt().copy_out(&total, places + chunks, sizeof total);  // waits for the kernels
  if (total < 0 || total > n) c.fail("the device counted " + std::to_string(total) + " non-zero elements of " + std::to_string(n));
  c.output(0) = c.allocate(DataType::Int64, {rank, total});
  if (total == 0 || rank == 0) return;
  NonZeroWriteKernel w{};
  w.type = type;
  w.n = n;
  w.chunk = chunk;
  w.total = total;
  w.dims.rank = static_cast<int>(rank);
  for (int64_t d = 0; d < rank; ++d) w.dims.d[d] = x.shape[static_cast<size_t>(d)];
  w.x = x.data;
  w.places = places;
  w.y = static_cast<int64_t*>(c.output(0).data);
  launch(c.rt(), w, chunks);
}

}  // namespace

void add_nonzero_ops(std::vector<OpDef>& t) { t.push_back({"NonZero", refuse_nonzero, run_nonzero}); }

}  // namespace onnxscope::cuda
