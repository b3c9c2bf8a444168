// float16/bfloat16 nodes on the CPU engine's float32 kernels: which nodes may
// compute in float32 (shared by the compute-low-precision-in-float32 pass and
// the "cpu-float32" kernels, low_precision.cpp), and those kernels.
#pragma once

#include <functional>
#include <string>

#include "onnxscope/ir.h"
#include "onnxscope/kernel.h"
#include "onnxscope/op_schema.h"

namespace onnxscope::cpu {

inline bool low_precision(DataType t) { return t == DataType::Float16 || t == DataType::BFloat16; }

// Nodes that keep their types: data movement, shapes, comparisons and
// selections (exact in any type), outputs typed by an attribute, subgraphs,
// and the ops whose spec computes parts in the input type (Attention's QK^T
// and softmax, SwiGLU's gate, QuantizeLinear's x / scale).
bool keeps_its_type(const Node& n);

// Nodes this engine computes in float16 itself (float32 in the registers,
// each result rounded once to nearest even: the bits the Casts around them
// would give, without the Casts' passes over memory): the AVX-512 unary
// kernels and the plain depthwise convolution. The
// compute-low-precision-in-float32 pass leaves a float16 one as it is;
// should its kernel decline the problem at run, the cpu-float32 kernel
// widens it as the pass would have. `constant`: a value's initializer, if any.
bool computes_float16_itself(const Node& n, const std::function<const Tensor*(const std::string&)>& constant);

// A float16/bfloat16 tensor's values as float32 (exact), converted as the
// Cast kernel converts them.
Tensor widened_to_float(const Tensor& t);
// A float32 tensor's values in `to` (Float16 or BFloat16), each rounded to
// nearest even as the Cast kernel rounds them (float_to_half's bits).
Tensor narrowed(const Tensor& t, DataType to);

// Whether the schema lets formal parameter `p` be float32.
bool allows_float(const OpSchema& s, const FormalParam* p);

// For every operator the CPU engine has kernels for, a "cpu-float32" kernel
// (after them, before the reference): it takes a node with float16/bfloat16
// inputs that may compute in float32, widens those inputs, runs the first of
// `engine`'s kernels that accepts the widened problem, and rounds each output
// to the type its input type constraint gives it; the reference kernel when
// none accepts. The plan that keeps every original node (capture runs) runs
// half models on them; the fast plan has the pass make the same Casts.
void register_float32_kernels(KernelRegistry& r, const KernelRegistry& cpu, const KernelRegistry* engine);

}  // namespace onnxscope::cpu
