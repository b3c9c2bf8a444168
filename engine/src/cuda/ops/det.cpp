// Det (float32, and float16 / bfloat16 through it, rounded once): each
// trailing n x n matrix's determinant by one thread (kernels/det.h), n up to
// kDetMaxN where the shape is known (a thread's work grows as n^3); larger
// or unknown sizes, and double, go to the CPU engine.
#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

constexpr int64_t kDetMaxN = 64;

std::optional<std::string> refuse_det(const Graph& g, const Node& n) {
  if (n.inputs.size() != 1) return std::string("Det takes one input");
  if (auto r = require_one_real_type(g, n)) return r;
  // The matrix size known (the batch dims may be symbolic).
  const std::vector<Dim> dims = declared_dims(g, n.inputs[0]);
  if (dims.size() < 2 || !dims.back().is_known() || dims.back().value > kDetMaxN)
    return "Det on the device takes matrices of a known size up to " + std::to_string(kDetMaxN);
  return std::nullopt;
}

void det_f32(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const Shape& s = x.shape;
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2]) c.fail("X must have shape [*, M, M], got " + shape_to_string(s));
  const int64_t n = s.back();
  if (n > kDetMaxN) c.fail("matrices of " + std::to_string(n) + " rows: the device takes up to " + std::to_string(kDetMaxN));
  const Shape out(s.begin(), s.end() - 2);
  c.output(0) = c.allocate(DataType::Float, out);
  const auto count = static_cast<int64_t>(elements_of(out));
  if (count == 0) return;
  const DeviceTensor scratch = c.allocate(DataType::Double, s);
  DetKernel k{n, static_cast<const float*>(x.data), static_cast<double*>(scratch.data), static_cast<float*>(c.output(0).data)};
  launch(c.rt(), k, count);
}

void run_det(OpContext& c) { run_on_float32(c, det_f32); }

}  // namespace

void add_det_ops(std::vector<OpDef>& t) { t.push_back({"Det", refuse_det, run_det}); }

}  // namespace onnxscope::cuda
