// The CUDA engine's operator table (ggml's discipline: one table, each
// operator a plain function): what each ONNX operator accepts (decided at
// placement, from declared types and attributes), which inputs it reads on
// the host, and how it runs over a Runtime (cuda/runtime.h). An operator
// that refuses a node sends it to the CPU engine with the reason.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cuda/fault_log.h"
#include "cuda/half_cache.h"
#include "cuda/runtime.h"
#include "offload/device.h"
#include "onnxscope/ir.h"
#include "onnxscope/tensor.h"

namespace onnxscope::cuda {

using offload::DeviceTensor;

// What an operator sees when it runs one node.
class OpContext {
 public:
  OpContext(std::shared_ptr<Runtime> rt, FaultLog& faults, const Node& node, int64_t opset, MathMode mode,
            std::span<const DeviceTensor* const> in, std::span<const Tensor* const> host, std::vector<DeviceTensor>& out,
            HalfCache* halves = nullptr)
      : rt_(std::move(rt)), faults_(faults), node_(node), opset_(opset), mode_(mode), in_(in), host_(host), out_(out),
        halves_(halves) {}

  Runtime& rt() { return *rt_; }
  // Where a kernel of this node reports a fault it finds (cuda/fault_log.h).
  FaultLog::Site fault_site(FaultKind kind = FaultKind::Index);
  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  MathMode mode() const { return mode_; }
  size_t input_count() const { return in_.size(); }
  // Input k on the device (throws when it is absent).
  const DeviceTensor& input(size_t k) const;
  bool has_input(size_t k) const { return k < in_.size() && in_[k]; }
  // In fp16 mode, input k in float16 when it is a float32 constant (a
  // weight, converted once: cuda/half_cache.h); else nullptr.
  const void* half_constant(size_t k) {
    return mode_ == MathMode::Fp16 && halves_ && has_input(k) ? halves_->get(*in_[k]) : nullptr;
  }
  // In fp16 mode, input k in float16 without a conversion: a weight's kept
  // copy (half_constant), or the half copy its producer wrote beside a
  // float32 activation (DeviceTensor::half_copy); else nullptr.
  const void* half_input(size_t k) {
    if (const void* h = half_constant(k)) return h;
    if (mode_ != MathMode::Fp16 || !has_input(k) || in_[k]->dtype != DataType::Float || !in_[k]->half_copy) return nullptr;
    rt_->count_half_input();
    return in_[k]->half_copy;
  }
  // In fp16 mode, room for t's half copy (t float32), attached to t, for its
  // producer's epilogue to fill; else nullptr.
  uint16_t* make_half_copy(DeviceTensor& t);
  // Input k read on the host (nullptr when omitted).
  const Tensor* host(size_t k) const { return k < host_.size() ? host_[k] : nullptr; }
  bool wants_output(size_t k) const { return k < node_.outputs.size() && !node_.outputs[k].empty(); }
  DeviceTensor& output(size_t k) { return out_.at(k); }
  // New device memory (not initialised), freed when the last holder goes.
  DeviceTensor allocate(DataType dtype, const Shape& shape);
  // A host tensor copied to new device memory.
  DeviceTensor upload(const Tensor& t);
  // Attribute helpers with the spec's defaults.
  int64_t attr_int(const char* name, int64_t dflt) const;
  float attr_float(const char* name, float dflt) const;
  std::vector<int64_t> attr_ints(const char* name) const;
  std::string attr_string(const char* name, const std::string& dflt) const;
  // Throws std::runtime_error naming the operator.
  [[noreturn]] void fail(const std::string& what) const;
  // The same node over other device inputs and outputs (run_on_float32's widened copies).
  OpContext over(std::span<const DeviceTensor* const> in, std::vector<DeviceTensor>& out) const {
    return OpContext(rt_, faults_, node_, opset_, mode_, in, host_, out, halves_);
  }

 private:
  std::shared_ptr<Runtime> rt_;
  FaultLog& faults_;
  const Node& node_;
  int64_t opset_;
  MathMode mode_;
  std::span<const DeviceTensor* const> in_;
  std::span<const Tensor* const> host_;
  std::vector<DeviceTensor>& out_;
  HalfCache* halves_;
};

// Calls f(U{}) with U the unsigned integer of t's element width (1, 2, 4 or
// 8 bytes): how data movement kernels are picked for any fixed-width type.
template <class F>
void with_element_width(DataType t, F&& f) {
  switch (dtype_info(t).bits) {
    case 8: f(uint8_t{}); break;
    case 16: f(uint16_t{}); break;
    case 32: f(uint32_t{}); break;
    default: f(uint64_t{}); break;
  }
}

// Element counts and byte sizes, checked (throws std::runtime_error on overflow).
uint64_t elements_of(const Shape& s);
uint64_t bytes_of(DataType t, const Shape& s);

enum class OpBackend { Kernel, View, Gemm, Conv };  // what --explain shows: cuda, cuda-view, cublas, cudnn

struct OpDef {
  const char* op_type;  // in domain ai.onnx, unless `domain` says otherwise
  // nullopt: the device runs it; else the reason it does not.
  std::optional<std::string> (*refuse)(const Graph& g, const Node& n);
  void (*run)(OpContext& ctx);
  OpBackend backend = OpBackend::Kernel;
  // Inputs read on the host (shape arguments); nullptr: none.
  bool (*reads_on_host)(const Node& n, size_t input) = nullptr;
  const char* domain = "";  // "onnxscope.cpu" for the CPU engine's fused operators (cpu/fused_ops.h)
  // In place of `refuse` for an operator whose versions differ in what the
  // device can run (Dropout: training before opset 7), given the model's opset.
  std::optional<std::string> (*refuse_in_opset)(const Graph& g, const Node& n, int64_t opset) = nullptr;
};

// Each family file adds its operators (ops/<family>.cpp).
void add_elementwise_ops(std::vector<OpDef>& t);
void add_movement_ops(std::vector<OpDef>& t);
void add_matmul_ops(std::vector<OpDef>& t);
void add_conv_ops(std::vector<OpDef>& t);
void add_conv_transpose_ops(std::vector<OpDef>& t);
void add_pool_ops(std::vector<OpDef>& t);
void add_normalization_ops(std::vector<OpDef>& t);
void add_reduce_ops(std::vector<OpDef>& t);
void add_scatter_ops(std::vector<OpDef>& t);
void add_pad_ops(std::vector<OpDef>& t);
void add_resize_ops(std::vector<OpDef>& t);
void add_rearrange_ops(std::vector<OpDef>& t);
void add_along_axis_ops(std::vector<OpDef>& t);
void add_attention_ops(std::vector<OpDef>& t);  // Attention, RotaryEmbedding
void add_quantize_ops(std::vector<OpDef>& t);   // QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
void add_integer_product_ops(std::vector<OpDef>& t);  // MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv
void add_recurrent_ops(std::vector<OpDef>& t);        // RNN, GRU, LSTM
void add_range_ops(std::vector<OpDef>& t);            // Range
void add_nonzero_ops(std::vector<OpDef>& t);          // NonZero
void add_nms_ops(std::vector<OpDef>& t);              // NonMaxSuppression
void add_llm_block_ops(std::vector<OpDef>& t);        // SwiGLU, CausalConvWithState, LinearAttention
void add_constant_fill_ops(std::vector<OpDef>& t);    // ConstantOfShape, EyeLike
void add_grid_sample_ops(std::vector<OpDef>& t);      // GridSample, AffineGrid
void add_roi_align_ops(std::vector<OpDef>& t);        // RoiAlign
void add_loss_ops(std::vector<OpDef>& t);             // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void add_signal_ops(std::vector<OpDef>& t);           // DFT, STFT, HannWindow, HammingWindow, BlackmanWindow
void add_einsum_ops(std::vector<OpDef>& t);     // Einsum
void add_det_ops(std::vector<OpDef>& t);        // Det
void add_deform_conv_ops(std::vector<OpDef>& t);  // DeformConv
void add_fused_ops(std::vector<OpDef>& t);  // after the others: it reuses their entries

// The types Cast, and the kernels reading through cast_load, take: every
// float and integer width, the four float8 formats, bool (defined in
// ops/elementwise.cpp).
bool castable(DataType t);
// The integer types of one byte or more (int8..int64, uint8..uint64): what
// the integer kernels (kernels/integer_math.h) load; not the packed 4- and
// 2-bit ones, which dtype_info also calls integer (ops/elementwise.cpp).
bool fixed_width_integer(DataType t);
inline IntType int_type(DataType t) { return {static_cast<int>(dtype_info(t).bits / 8), dtype_info(t).is_signed}; }
// A whole tensor of n elements split for row kernels: chunks of 256
// elements or more, at most 1024 of them (warps on a GPU).
struct Chunks {
  int64_t size, count;
};
inline Chunks chunks_of(int64_t n) {
  const int64_t per_chunk = (n + 1023) / 1024, size = per_chunk > 256 ? per_chunk : 256;
  return {size, (n + size - 1) / size};
}

// Runs `run`, a float32 operator, on a node whose inputs may be float16 or
// bfloat16: those widened to float32 (exact), `run` on them, each float32
// output among `narrowed` (a bit per output) rounded once to that type
// (ops/op_table.cpp). The float32 math is the operator's own; the
// reference computes these in double, so a result can round to the
// neighbouring float16 value where it falls next to a tie.
// The narrow type is `to`, by default input 0's when that is float16 or
// bfloat16: an input of another type (BatchNormalization's float32
// statistics beside a float16 X) is widened too, but sets no output's type.
// `to` Float: no output rounded (DequantizeLinear's float32 output_dtype).
void run_on_float32(OpContext& c, const std::function<void(OpContext&)>& run, uint32_t narrowed = ~0u,
                    DataType to = DataType::Undefined);
// What the kernels' `narrow` fields take for a narrow input's type, where
// the reference rounds an intermediate value to it: 1 float16, 2 bfloat16,
// 0 otherwise (kernels/portable.h round_to_narrow).
inline int narrow_code(DataType t) { return t == DataType::Float16 ? 1 : t == DataType::BFloat16 ? 2 : 0; }

// Shared by the families (defined in ops/movement.cpp).
bool movable(DataType t);  // a fixed width of 1, 2, 4 or 8 bytes
// The placement rule of data movement: input 0 of a known fixed-width type.
std::optional<std::string> refuse_movable(const Graph& g, const Node& n);
std::vector<int64_t> contiguous_strides(const Shape& s);
// y[out_base + sum c*out_stride] = x[in_base + sum c*in_stride] over dims.
struct StridedCopy {
  std::vector<int64_t> dims, in_stride, out_stride;
  int64_t in_base = 0, out_base = 0;
};
void strided_copy(OpContext& c, DataType dtype, const StridedCopy& p, const void* x, void* y);
// x broadcast (numpy, one way) to `out`, written contiguously at y.
void broadcast_into(OpContext& c, const DeviceTensor& x, const Shape& out, void* y);
// A broadcast plan (cuda/shapes.h) as a kernel's index (ops/elementwise.cpp).
struct BroadcastPlan;
BroadcastIndex index_of(const BroadcastPlan& p);
// A fused node's activation (attributes activation, activation_params; cpu/fused_ops.h).
struct Activation {
  UnaryOp op = UnaryOp::Identity;
  float alpha = 0, beta = 0;
};
Activation activation_of(const OpContext& c);
// An epilogue with `act` and nothing else yet (ops/fused.cpp).
Epilogue epilogue_of(const Activation& act);
// y = act(y + bias) in place, one kernel (float32); the bias (or nullptr)
// indexed by (i / inner) % channels.
void apply_epilogue(OpContext& c, DeviceTensor& y, const DeviceTensor* bias, int64_t inner, int64_t channels,
                    const Activation& act);
// Row-major out[m, n] = alpha * op(a)[m, k] x op(b)[k, n] + beta * out, `batch`
// of them at the given element strides (out's: m * n); op(a) = a^T when ta
// (a stored [k, m]), op(b) likewise (ops/matmul.cpp).
// a_half, b_half: a and b already in float16 (c.half_constant), or nullptr.
void row_major_gemm(OpContext& c, const float* a, const float* b, float* out, int64_t m, int64_t k, int64_t n,
                    bool ta = false, bool tb = false, float alpha = 1.f, float beta = 0.f, int64_t batch = 1,
                    int64_t a_stride = 0, int64_t b_stride = 0, const void* a_half = nullptr, const void* b_half = nullptr,
                    const Epilogue& epilogue = {});
// MatMul of float32 a and b, numpy's broadcasting (ops/matmul.cpp), then
// y = act(y + bias) with bias (or nullptr) over the last dim, inside the
// GEMM where the runtime can. `constants`: a and b are the node's inputs 0
// and 1 (their half copies read in fp16). `half_copy`: fp16 writes the
// result's half copy too.
DeviceTensor matmul_f32(OpContext& c, const DeviceTensor& a, const DeviceTensor& b, bool constants,
                        const DeviceTensor* bias = nullptr, const Activation& act = {}, bool half_copy = false);
// Conv with its bias, `residual` (or nullptr) and `act` applied in one
// epilogue (ops/conv.cpp). A residual whose shape is not the output's is
// left out, and `act` with it: false, for the caller to add it broadcast.
bool conv_forward(OpContext& c, const Activation& act, const DeviceTensor* residual = nullptr);
int64_t normalize_axis(const OpContext& c, int64_t axis, size_t rank);
std::vector<int64_t> host_ints(const OpContext& c, size_t input);  // int64/int32 input read on the host

// The table, by domain ("" or "ai.onnx": the default) and op_type.
const OpDef* find_op(const std::string& op_type);
const OpDef* find_op(const std::string& domain, const std::string& op_type);
std::vector<std::string> supported_ops();  // "Conv", "onnxscope.cpu::FusedConv", ...

// Helpers the rules share: the declared type of a value (Undefined when unknown).
DataType declared_type(const Graph& g, const std::string& value);
std::optional<Shape> declared_shape(const Graph& g, const std::string& value);  // nullopt when unknown or symbolic
// Its dims, symbolic ones included (an initializer's all known); empty when the rank is unknown.
std::vector<Dim> declared_dims(const Graph& g, const std::string& value);
std::optional<std::string> require_types(const Graph& g, const Node& n, std::initializer_list<DataType> allowed,
                                         size_t first = 0, size_t count = SIZE_MAX);
// The rule of the float operators run through run_on_float32: inputs
// [first, first + count) float32, float16 or bfloat16, all of input
// `first`'s type (the spec's one T).
std::optional<std::string> require_one_real_type(const Graph& g, const Node& n, size_t first = 0, size_t count = SIZE_MAX);

}  // namespace onnxscope::cuda
