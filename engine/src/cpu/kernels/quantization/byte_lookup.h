// out[i] = table[in[i]] for n bytes, 64 at a time with AVX-512 VBMI where the
// CPU has it, on this thread (byte_lookup.cpp). For the 8-bit kernels that
// apply a 256-entry table (QLinearSigmoid, QuantizedLookup, QLinearConcat's
// requantization).
#pragma once

#include <cstdint>

namespace onnxscope::cpu {

void lookup_bytes(const uint8_t* in, uint8_t* out, int64_t n, const uint8_t* table);

}  // namespace onnxscope::cpu
