// Reference kernels: shape and data movement: Identity, Constant, ConstantOfShape, Cast, CastLike, Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Expand, Tile, Pad, Range, EyeLike, Trilu, DepthToSpace, SpaceToDepth, BitCast, CenterCropPad, Col2Im.
#include "reference/kernel_util.h"
#include "reference/ops/ops.h"

namespace onnxscope::ref {

void register_tensor_shape_ops(KernelRegistry& r) { (void)r; }

}  // namespace onnxscope::ref
