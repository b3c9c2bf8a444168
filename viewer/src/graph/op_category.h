// Operator categories for colouring graph nodes, and their colours.
#pragma once

#include <QColor>
#include <QString>
#include <string_view>

namespace onnxscope::viewer::graph {

enum class OpCategory {
  ConvMatmul, Activation, Normalization, Pooling, Elementwise, ShapeData,
  ControlFlow, Reduction, Other, Group, Io,
};

OpCategory op_category(std::string_view op_type);
QColor category_color(OpCategory c);
QString category_name(OpCategory c);

}  // namespace onnxscope::viewer::graph
