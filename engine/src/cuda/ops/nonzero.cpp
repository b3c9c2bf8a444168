// NonZero for any fixed-width type (kernels/nonzero.h): the count is read
// back on the host in the middle of the run, since the output's size is
// that count; so a run holding NonZero is not captured (a capture cannot
// wait for the device), and its memory plan holds while the counts repeat.
#include "cuda/ops/op_table.h"
#include "offload/steady_state.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_nonzero(const Graph& g, const Node& n) {
  if (n.inputs.size() != 1) return std::string("NonZero takes X");
  const DataType t = declared_type(g, n.inputs[0]);
  if (!castable(t)) return "the CUDA NonZero does not read " + std::string(t == DataType::Undefined ? "an unknown type" : dtype_name(t));
  return std::nullopt;
}

void run_nonzero(OpContext& c) {
  if (c.rt().capturing())
    throw offload::CaptureUnsupported("NonZero's output size is a count the host reads from the device mid-run");
  const DeviceTensor& x = c.input(0);
  if (x.shape.size() > static_cast<size_t>(kKernelRank)) c.fail("X has more than " + std::to_string(kKernelRank) + " dims");
  const auto n = static_cast<int64_t>(elements_of(x.shape));
  const auto rank = static_cast<int64_t>(x.shape.size());
  const Chunks split = chunks_of(n);
  const int64_t chunk = split.size, chunks = split.count;
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
