#include "onnxscope/value.h"

#include <stdexcept>

namespace onnxscope {

Value Value::sequence(std::vector<Value> items, TypeInfo elem) {
  Value v;
  v.kind_ = Kind::Sequence;
  v.items_ = std::move(items);
  v.type_ = std::move(elem);
  return v;
}

Value Value::map(Tensor keys, Tensor values) {
  if (keys.rank() != 1 || values.rank() != 1 || keys.element_count() != values.element_count())
    throw std::invalid_argument("map keys and values must be 1-D of the same length");
  Value v;
  v.kind_ = Kind::Map;
  v.tensor_ = std::move(keys);
  v.map_values_ = std::move(values);
  return v;
}

Value Value::none(TypeInfo type) {
  Value v;
  v.type_ = std::move(type);
  return v;
}

namespace {
[[noreturn]] void wrong(const char* want, Value::Kind have) {
  static const char* names[] = {"none", "tensor", "sequence", "map"};
  throw std::logic_error(std::string("value is a ") + names[static_cast<int>(have)] + ", not a " + want);
}
}  // namespace

const Tensor& Value::tensor() const {
  if (kind_ != Kind::Tensor) wrong("tensor", kind_);
  return tensor_;
}
Tensor& Value::tensor() {
  if (kind_ != Kind::Tensor) wrong("tensor", kind_);
  return tensor_;
}
const std::vector<Value>& Value::items() const {
  if (kind_ != Kind::Sequence) wrong("sequence", kind_);
  return items_;
}
std::vector<Value>& Value::items() {
  if (kind_ != Kind::Sequence) wrong("sequence", kind_);
  return items_;
}
const Tensor& Value::map_keys() const {
  if (kind_ != Kind::Map) wrong("map", kind_);
  return tensor_;
}
const Tensor& Value::map_values() const {
  if (kind_ != Kind::Map) wrong("map", kind_);
  return map_values_;
}

std::string Value::describe() const {
  switch (kind_) {
    case Kind::None: return "none";
    case Kind::Tensor: return std::string(dtype_name(tensor_.dtype())) + shape_to_string(tensor_.shape());
    case Kind::Sequence: {
      std::string s = "seq(" + std::to_string(items_.size()) + " x ";
      s += items_.empty() ? type_.to_string() : items_.front().describe();
      return s + ")";
    }
    case Kind::Map:
      return "map(" + std::string(dtype_name(tensor_.dtype())) + "->" + std::string(dtype_name(map_values_.dtype())) +
             ", " + std::to_string(tensor_.element_count()) + ")";
  }
  return "?";
}

}  // namespace onnxscope
