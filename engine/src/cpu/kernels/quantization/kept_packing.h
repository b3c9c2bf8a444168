// The packed form of a node's 8-bit weights that an int8 kernel keeps in its
// node state (qlinear_conv_1x1.cpp, qlinear_conv_depthwise.cpp,
// qgemm_vnni.cpp, matmul_integer_vnni.cpp), made again when the weights or their zero points are
// other tensors. Keyed by the tensors' buffers, not their bytes' address:
// reading that would restore bytes a kernel gave back (release_bytes).
#pragma once

#include <functional>
#include <utility>

#include "cpu/kernels/onednn_parts.h"

namespace onnxscope::cpu {

struct KeptPacking {
  const void* source = nullptr;
  const void* zp_source = nullptr;
  bool fits = false;  // the weights minus their zero points fit int8
};

inline const void* buffer_key(const Tensor& t) {
  return t.buffer() ? static_cast<const void*>(t.buffer().get()) : static_cast<const void*>(t.raw());
}

// P derives from KeptPacking; `make(p)` packs input `w` (minus input `zp`'s
// zero points, when given) into p and returns whether they fit. Without node
// state (a one-off call) `local` is used.
template <class P, class Make>
P* kept_packing(const KernelContext& ctx, P& local, size_t w, size_t zp, Make make) {
  P* p = onednn::node_state<P>(ctx);
  if (!p) p = &local;
  const Value* zv = ctx.input_count() > zp ? ctx.input_value(zp) : nullptr;
  const void* source = buffer_key(ctx.input(w));
  const void* zp_source = zv ? buffer_key(zv->tensor()) : nullptr;
  if (p->source == source && p->zp_source == zp_source && p->source) return p;
  p->source = source;
  p->zp_source = zp_source;
  p->fits = make(*p);
  return p;
}

// Gives weight tensor `w`'s bytes back to its buffer where the engine may
// (the model is no one else's) and the packing is the node's own (kept in
// its state, not `local`), `restore` writing them again from the packed copy
// when they are read: a model's int8 weights are then held once.
template <class P>
void give_back_packed_weights(const Tensor& w, const P& p, const P& local, std::function<void(std::byte*)> restore) {
  if (p.fits && onednn::releasing_repacked_weights() && w.buffer() && &p != &local && w.byte_size() == w.buffer()->size())
    w.buffer()->release_bytes(std::move(restore));
}

}  // namespace onnxscope::cpu
