#include "graph/op_category.h"

#include <string>
#include <unordered_map>

namespace onnxscope::viewer::graph {

OpCategory op_category(std::string_view op) {
  using C = OpCategory;
  static const std::unordered_map<std::string_view, C> table = [] {
    std::unordered_map<std::string_view, C> t;
    auto put = [&](C c, std::initializer_list<std::string_view> ops) {
      for (auto o : ops) t[o] = c;
    };
    put(C::ConvMatmul, {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MatMul", "MatMulInteger",
                        "QLinearMatMul", "Gemm", "Einsum", "DeformConv", "Attention", "RNN", "LSTM", "GRU",
                        "FusedMatMul", "FusedConv", "MultiHeadAttention"});
    put(C::Activation, {"Relu", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid", "Tanh", "Elu", "Selu", "Celu",
                        "Gelu", "FastGelu", "BiasGelu", "Softplus", "Softsign", "HardSwish", "Mish", "ThresholdedRelu",
                        "Softmax", "LogSoftmax", "Hardmax", "Erf", "Clip", "QuickGelu", "Swish"});
    put(C::Normalization, {"BatchNormalization", "InstanceNormalization", "LayerNormalization",
                           "GroupNormalization", "LpNormalization", "MeanVarianceNormalization", "LRN",
                           "RMSNormalization", "SkipLayerNormalization", "SimplifiedLayerNormalization",
                           "Dropout"});
    put(C::Pooling, {"MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool", "LpPool", "GlobalLpPool",
                     "MaxRoiPool", "RoiAlign", "MaxUnpool"});
    put(C::Elementwise, {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Abs", "Neg", "Reciprocal",
                         "Floor", "Ceil", "Round", "Sign", "Mod", "Max", "Min", "Sum", "Mean", "Sin", "Cos", "Tan",
                         "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Equal", "Less",
                         "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Not", "Where", "IsNaN",
                         "IsInf", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "Cast",
                         "CastLike", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"});
    put(C::ShapeData, {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice",
                       "Gather", "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND", "Shape",
                       "Size", "Expand", "Tile", "Pad", "Identity", "Constant", "ConstantOfShape", "Range",
                       "DepthToSpace", "SpaceToDepth", "Resize", "Upsample", "OneHot", "NonZero", "Compress",
                       "Trilu", "EyeLike", "SplitToSequence", "ConcatFromSequence", "SequenceAt",
                       "SequenceConstruct", "SequenceInsert", "SequenceErase", "SequenceLength", "SequenceEmpty",
                       "CenterCropPad", "Col2Im", "TopK", "Unique", "ReverseSequence"});
    put(C::ControlFlow, {"If", "Loop", "Scan", "SequenceMap", "Optional", "OptionalGetElement",
                         "OptionalHasElement"});
    put(C::Reduction, {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                       "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "CumSum"});
    return t;
  }();
  auto it = table.find(op);
  return it == table.end() ? C::Other : it->second;
}

QColor category_color(OpCategory c) {
  switch (c) {
    case OpCategory::ConvMatmul: return QColor(0x4f, 0x81, 0xbd);     // blue
    case OpCategory::Activation: return QColor(0xe0, 0x8e, 0x3c);     // orange
    case OpCategory::Normalization: return QColor(0x5a, 0xa0, 0x5a);  // green
    case OpCategory::Pooling: return QColor(0x3d, 0xa5, 0xa8);        // teal
    case OpCategory::Elementwise: return QColor(0x9a, 0x7b, 0xc1);    // violet
    case OpCategory::ShapeData: return QColor(0x8c, 0x8c, 0x8c);      // grey
    case OpCategory::ControlFlow: return QColor(0xc9, 0x4f, 0x4f);    // red
    case OpCategory::Reduction: return QColor(0xc7, 0xa8, 0x2e);      // ochre
    case OpCategory::Other: return QColor(0xa0, 0x82, 0x6b);          // brown
    case OpCategory::Group: return QColor(0x5d, 0x6d, 0x8a);          // slate
    case OpCategory::Io: return QColor(0xf2, 0xf2, 0xf2);
  }
  return Qt::gray;
}

QString category_name(OpCategory c) {
  switch (c) {
    case OpCategory::ConvMatmul: return "conv/matmul";
    case OpCategory::Activation: return "activation";
    case OpCategory::Normalization: return "normalization";
    case OpCategory::Pooling: return "pooling";
    case OpCategory::Elementwise: return "elementwise math";
    case OpCategory::ShapeData: return "shape/data movement";
    case OpCategory::ControlFlow: return "control flow";
    case OpCategory::Reduction: return "reduction";
    case OpCategory::Other: return "other";
    case OpCategory::Group: return "group";
    case OpCategory::Io: return "graph input/output";
  }
  return {};
}

}  // namespace onnxscope::viewer::graph
