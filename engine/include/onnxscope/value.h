// A runtime value flowing along a graph edge: a tensor, a sequence of values,
// a map (ai.onnx.ml), or none (an empty optional, an omitted input).
#pragma once

#include <memory>
#include <vector>

#include "onnxscope/ir.h"
#include "onnxscope/tensor.h"

namespace onnxscope {

class Value {
 public:
  enum class Kind { None, Tensor, Sequence, Map };

  Value() = default;
  Value(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}  // NOLINT: implicit on purpose
  // A sequence; `elem` says what an empty one would hold (SequenceEmpty's dtype).
  static Value sequence(std::vector<Value> items, TypeInfo elem = {});
  // A map from 1-D keys (int64 or string) to 1-D values of the same length.
  static Value map(Tensor keys, Tensor values);
  // An empty optional of the given type.
  static Value none(TypeInfo type = {});

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  bool is_sequence() const { return kind_ == Kind::Sequence; }
  bool is_map() const { return kind_ == Kind::Map; }

  // Access of the wrong kind throws std::logic_error (kernels check first).
  const Tensor& tensor() const;
  Tensor& tensor();
  const std::vector<Value>& items() const;
  std::vector<Value>& items();
  const Tensor& map_keys() const;
  const Tensor& map_values() const;
  // Element type of a sequence or type of a none value, when known.
  const TypeInfo& declared_type() const { return type_; }

  // "float[2,3]", "seq(3 x float[...])", "map(int64->float, 3)", "none".
  std::string describe() const;

 private:
  Kind kind_ = Kind::None;
  Tensor tensor_;
  std::vector<Value> items_;
  Tensor map_values_;
  TypeInfo type_;
};

}  // namespace onnxscope
