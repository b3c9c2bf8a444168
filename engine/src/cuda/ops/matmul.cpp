// MatMul and Gemm on the runtime's strided-batched GEMM (cuBLAS on the
// GPU), through row_major_gemm: no data moves for the transposes. On
// float16 / bfloat16 both widen their operands to float32 first.
#include "cuda/ops/op_table.h"
#include "cuda/shapes.h"

namespace onnxscope::cuda {

// cuBLAS is column-major: it computes out^T = op(b)^T x op(a)^T, reading
// each row-major buffer as its transpose.
void row_major_gemm(OpContext& c, const float* a, const float* b, float* out, int64_t m, int64_t k, int64_t n, bool ta,
                    bool tb, float alpha, float beta, int64_t batch, int64_t a_stride, int64_t b_stride, const void* a_half,
                    const void* b_half, const Epilogue& epilogue) {
  GemmArgs g;
  g.trans_a = tb;
  g.trans_b = ta;
  g.m = n;
  g.n = m;
  g.k = k;
  g.alpha = alpha;
  g.beta = beta;
  g.a = b;
  g.a_half = b_half;
  g.lda = tb ? k : n;
  g.stride_a = b_stride;
  g.b = a;
  g.b_half = a_half;
  g.ldb = ta ? m : k;
  g.stride_b = a_stride;
  g.c = out;
  g.ldc = n;
  g.stride_c = m * n;
  g.batch = batch;
  g.epilogue = epilogue;
  c.rt().gemm(g, c.mode());
}

namespace {

std::optional<std::string> refuse_matmul(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2) return std::string("MatMul takes two inputs");
  if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16})) return r;
  if (declared_type(g, n.inputs[0]) != declared_type(g, n.inputs[1])) return std::string("the inputs of MatMul differ in type");
  return std::nullopt;
}


}  // namespace

// numpy's matmul: 1-D operands get a dim of 1 (dropped from the result),
// batch dims broadcast. Batches one strided-batched GEMM can take go as
// one call; other broadcasts as one call per output matrix.
DeviceTensor matmul_f32(OpContext& c, const DeviceTensor& a, const DeviceTensor& b, bool constants, const DeviceTensor* bias,
                        const Activation& act, bool half_copy) {
  if (a.shape.empty() || b.shape.empty()) c.fail("MatMul does not take scalars");
  Shape as = a.shape, bs = b.shape;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k) c.fail("inner sizes differ: " + shape_to_string(a.shape) + " x " + shape_to_string(b.shape));
  const Shape shapes[2] = {Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2)};
  auto batch = broadcast_plan(shapes);
  if (!batch) c.fail("batch dims of " + shape_to_string(a.shape) + " and " + shape_to_string(b.shape) + " do not broadcast");
  Shape out = batch->out;
  if (a.shape.size() > 1) out.push_back(m);
  if (b.shape.size() > 1) out.push_back(n);
  const int64_t last = b.shape.size() > 1 ? n : m;  // the result's last dim (m when B is 1-D)
  if (bias && elements_of(bias->shape) != static_cast<uint64_t>(last))
    c.fail("the bias " + shape_to_string(bias->shape) + " does not match the last dim of " + shape_to_string(out));
  DeviceTensor result = c.allocate(DataType::Float, out);
  const int64_t count = static_cast<int64_t>(elements_of(batch->out));
  if (m == 0 || n == 0 || count == 0) return result;
  float* y = static_cast<float*>(result.data);
  if (k == 0) {  // a sum over nothing
    c.rt().zero(y, bytes_of(DataType::Float, out));
    if (bias || act.op != UnaryOp::Identity) apply_epilogue(c, result, bias, 1, last, act);
    return result;
  }
  Epilogue ep = epilogue_of(act);  // bias over the last dim: the rows of cuBLAS's column-major C
  ep.bias = bias ? static_cast<const float*>(bias->data) : nullptr;
  ep.channels = last;
  // fp16: the half copy of a fused node's result, for the GEMMs that read
  // it next (a feed-forward block's second, attention's from Q, K, V).
  if (half_copy) ep.half_out = c.make_half_copy(result);
  const auto* ad = static_cast<const float*>(a.data);
  const auto* bd = static_cast<const float*>(b.data);
  // Weights (constants) in fp16 mode: their float16 copies, made once.
  // Activations with a half copy beside them: that copy.
  const void* a16 = constants ? c.half_input(0) : nullptr;
  const void* b16 = constants ? c.half_input(1) : nullptr;
  if (auto plan = matmul_plan(as, bs)) {
    if (plan->b_stride == 0)  // one B for every batch: A's batches are rows of one taller GEMM
      row_major_gemm(c, ad, bd, y, m * plan->batch, k, n, false, false, 1.f, 0.f, 1, 0, 0, a16, b16, ep);
    else
      row_major_gemm(c, ad, bd, y, m, k, n, false, false, 1.f, 0.f, plan->batch, plan->a_stride, plan->b_stride, a16, b16,
                     ep);
    return result;
  }
  auto half_at = [](const void* h, int64_t elements) -> const void* {
    return h ? static_cast<const uint16_t*>(h) + elements : nullptr;
  };
  const Epilogue whole = ep;
  for (int64_t i = 0; i < count; ++i) {  // strides in matrices, from the merged batch dims
    int64_t rest = i, ao = 0, bo = 0;
    for (int d = batch->rank - 1; d >= 0; --d) {
      const int64_t coord = rest % batch->dims[static_cast<size_t>(d)];
      rest /= batch->dims[static_cast<size_t>(d)];
      ao += coord * batch->strides[0][static_cast<size_t>(d)];
      bo += coord * batch->strides[1][static_cast<size_t>(d)];
    }
    if (whole.half_out) ep.half_out = whole.half_out + i * m * n;  // this matrix's part of the half copy
    row_major_gemm(c, ad + ao * m * k, bd + bo * k * n, y + i * m * n, m, k, n, false, false, 1.f, 0.f, 1, 0, 0,
                   half_at(a16, ao * m * k), half_at(b16, bo * k * n), ep);
  }
  return result;
}

namespace {

// float16 / bfloat16: the operands widened to float32 (exact), the product
// accumulated in float32 as a float32 MatMul's, rounded once to the type.
void run_matmul(OpContext& c) {
  const DeviceTensor& a = c.input(0);
  const DeviceTensor& b = c.input(1);
  if (a.dtype != b.dtype) c.fail("A and B must have the same element type");
  if (a.dtype == DataType::Float) {
    c.output(0) = matmul_f32(c, a, b, true);
    return;
  }
  if (a.dtype != DataType::Float16 && a.dtype != DataType::BFloat16) c.fail("no kernel for " + std::string(dtype_name(a.dtype)));
  // The widened copies are no weights: their fp16 copies are not kept.
  run_on_float32(c, [](OpContext& f) { f.output(0) = matmul_f32(f, f.input(0), f.input(1), false); });
}

std::optional<std::string> refuse_gemm(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return std::string("Gemm takes A and B");
  if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16})) return r;
  for (size_t i = 1; i < n.inputs.size() && i < 3; ++i)
    if (!n.inputs[i].empty() && declared_type(g, n.inputs[i]) != declared_type(g, n.inputs[0]))
      return std::string("the inputs of Gemm differ in type");
  return std::nullopt;
}

// Y = alpha * A' B' + beta * C, A' = transA ? A^T : A (row-major [M, K]),
// B' likewise [K, N]; C broadcasts to [M, N] and is copied into Y first.
// float32 a, b and bias (or nullptr); `constants`: a and b are the node's
// inputs 0 and 1 (whose fp16 copies c.half_constant keeps).
DeviceTensor gemm_f32(OpContext& c, const DeviceTensor& a, const DeviceTensor& b, const DeviceTensor* bias, bool constants) {
  if (a.shape.size() != 2 || b.shape.size() != 2) c.fail("A and B must be matrices, not " + shape_to_string(a.shape) + " and " + shape_to_string(b.shape));
  const bool ta = c.attr_int("transA", 0) != 0, tb = c.attr_int("transB", 0) != 0;
  const int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
  const int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (k != kb) c.fail("inner sizes differ: " + shape_to_string(a.shape) + (ta ? "^T" : "") + " x " + shape_to_string(b.shape) + (tb ? "^T" : ""));
  const float alpha = c.attr_float("alpha", 1.f);
  float beta = c.attr_float("beta", 1.f);
  DeviceTensor y = c.allocate(DataType::Float, {m, n});
  if (m == 0 || n == 0) return y;
  if (bias && beta != 0.f)
    broadcast_into(c, *bias, {m, n}, y.data);
  else
    beta = 0.f;
  if (k == 0) {  // Y = beta * C
    if (beta == 0.f) c.rt().zero(y.data, bytes_of(DataType::Float, {m, n}));
    else if (beta != 1.f) {
      BinaryKernel scale{};
      scale.op = BinaryOp::Mul;
      scale.bc.rank = 1;
      scale.bc.out[0] = m * n;
      scale.bc.stride[0][0] = 1;  // b: one element, stride 0
      Tensor beta_t = Tensor::zeros(DataType::Float, {});
      beta_t.mutable_data<float>()[0] = beta;
      const DeviceTensor factor = c.upload(beta_t);
      scale.type = ElemType::Float;
      scale.a = y.data;
      scale.b = factor.data;
      scale.y = y.data;
      launch(c.rt(), scale, m * n);
    }
    return y;
  }
  row_major_gemm(c, static_cast<const float*>(a.data), static_cast<const float*>(b.data), static_cast<float*>(y.data),
                 m, k, n, ta, tb, alpha, beta, 1, 0, 0, constants ? c.half_input(0) : nullptr,
                 constants ? c.half_input(1) : nullptr);
  return y;
}

// float16 / bfloat16: A, B and C widened to float32 (exact), the float32
// Gemm, the result rounded once to the type.
void run_gemm(OpContext& c) {
  const DeviceTensor& a = c.input(0);
  const DeviceTensor& b = c.input(1);
  const DeviceTensor* bias = c.has_input(2) ? &c.input(2) : nullptr;
  if (b.dtype != a.dtype || (bias && bias->dtype != a.dtype)) c.fail("A, B and C must have the same element type");
  if (a.dtype == DataType::Float) {
    c.output(0) = gemm_f32(c, a, b, bias, true);
    return;
  }
  if (a.dtype != DataType::Float16 && a.dtype != DataType::BFloat16) c.fail("no kernel for " + std::string(dtype_name(a.dtype)));
  run_on_float32(c, [](OpContext& f) {
    f.output(0) = gemm_f32(f, f.input(0), f.input(1), f.has_input(2) ? &f.input(2) : nullptr, false);
  });
}

}  // namespace

void add_matmul_ops(std::vector<OpDef>& t) {
  t.push_back({"MatMul", refuse_matmul, run_matmul, OpBackend::Gemm});
  t.push_back({"Gemm", refuse_gemm, run_gemm, OpBackend::Gemm});
}

}  // namespace onnxscope::cuda
