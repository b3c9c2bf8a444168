// A random chain of float32 elementwise operators, every operator of
// cpu/fused_ops.h kChainOps possible, for the fuse-elementwise tests of
// each engine: inputs x (rank 1 to 3) and s (broadcast against x), an
// initializer 'half', at most 8 nodes (one chain), output 'y'. Operators
// that need a positive operand (Log, Sqrt, Reciprocal, Pow, Div) get
// Abs + 0.5 first; attributes are drawn too.
#pragma once

#include <random>

#include "model_builder.h"

namespace onnxscope::test {

ModelBuilder random_elementwise_chain(std::mt19937& rng);

}  // namespace onnxscope::test
