#include "loader/wire_scan.h"

#include <map>
#include <vector>

namespace onnxscope::detail {
namespace {

enum class Msg { None, Model, Graph, Node, Attribute, Tensor, SparseTensor, ValueInfo, TypeProto, Function, Training };

struct Field {
  const char* name;
  Msg msg;  // sub-message to descend into
  bool repeated = true;
};

// Only the message-typed fields on the paths that hold nearly all bytes.
const std::map<int, Field>& fields_of(Msg m) {
  static const std::map<Msg, std::map<int, Field>> table = {
      {Msg::Model, {{7, {"graph", Msg::Graph, false}}, {25, {"functions", Msg::Function}}, {20, {"training_info", Msg::Training}}}},
      {Msg::Graph,
       {{1, {"node", Msg::Node}}, {5, {"initializer", Msg::Tensor}}, {15, {"sparse_initializer", Msg::SparseTensor}},
        {11, {"input", Msg::ValueInfo}}, {12, {"output", Msg::ValueInfo}}, {13, {"value_info", Msg::ValueInfo}}}},
      {Msg::Node, {{5, {"attribute", Msg::Attribute}}}},
      {Msg::Attribute,
       {{5, {"t", Msg::Tensor, false}}, {6, {"g", Msg::Graph, false}}, {10, {"tensors", Msg::Tensor}}, {11, {"graphs", Msg::Graph}},
        {22, {"sparse_tensor", Msg::SparseTensor, false}}, {23, {"sparse_tensors", Msg::SparseTensor}}}},
      {Msg::SparseTensor, {{1, {"values", Msg::Tensor, false}}, {2, {"indices", Msg::Tensor, false}}}},
      {Msg::ValueInfo, {{2, {"type", Msg::TypeProto, false}}}},
      {Msg::Function, {{7, {"node", Msg::Node}}, {11, {"attribute_proto", Msg::Attribute}}}},
      {Msg::Training, {{1, {"initialization", Msg::Graph, false}}, {2, {"algorithm", Msg::Graph, false}}}},
  };
  static const std::map<int, Field> none;
  auto it = table.find(m);
  return it == table.end() ? none : it->second;
}

struct Scanner {
  const uint8_t* base;
  std::optional<WireProblem> problem;

  bool varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) return false;
      uint8_t b = *p++;
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }

  void report(const uint8_t* at, const std::string& path, std::string msg) {
    problem = WireProblem{static_cast<uint64_t>(at - base), path.empty() ? "model" : path, std::move(msg)};
  }

  bool scan(const uint8_t* p, const uint8_t* end, Msg msg, const std::string& path, int depth) {
    if (depth > 200) {
      report(p, path, "messages nest more than 200 levels deep");
      return false;
    }
    std::map<int, int> counts;
    while (p < end) {
      const uint8_t* at = p;
      uint64_t tag;
      if (!varint(p, end, tag)) {
        report(at, path, "field tag is cut off or malformed (truncated file?)");
        return false;
      }
      int field = static_cast<int>(tag >> 3);
      int wire = static_cast<int>(tag & 7);
      if (field == 0) {
        report(at, path, "field number 0 is invalid (not a protobuf message, or corrupted bytes)");
        return false;
      }
      auto f = fields_of(msg).find(field);
      std::string fpath = path;
      if (f != fields_of(msg).end()) {
        int k = counts[field]++;
        if (!fpath.empty()) fpath += '.';
        fpath += f->second.name;
        if (f->second.repeated) fpath += "[" + std::to_string(k) + "]";
      }
      switch (wire) {
        case 0: {
          uint64_t v;
          if (!varint(p, end, v)) {
            report(at, fpath, "varint of field " + std::to_string(field) + " is cut off or longer than 10 bytes");
            return false;
          }
          break;
        }
        case 1:
          if (end - p < 8) {
            report(at, fpath, "fixed64 field " + std::to_string(field) + " is cut off");
            return false;
          }
          p += 8;
          break;
        case 5:
          if (end - p < 4) {
            report(at, fpath, "fixed32 field " + std::to_string(field) + " is cut off");
            return false;
          }
          p += 4;
          break;
        case 2: {
          uint64_t len;
          if (!varint(p, end, len)) {
            report(at, fpath, "length of field " + std::to_string(field) + " is cut off");
            return false;
          }
          if (len > static_cast<uint64_t>(end - p)) {
            // Cut inside a known sub-message: look inside for the deepest place it breaks.
            if (f != fields_of(msg).end() && f->second.msg != Msg::None && !scan(p, end, f->second.msg, fpath, depth + 1))
              return false;
            report(at, fpath,
                   "field " + std::to_string(field) + " declares " + std::to_string(len) + " bytes but only " +
                       std::to_string(end - p) + " remain (truncated file?)");
            return false;
          }
          if (f != fields_of(msg).end() && f->second.msg != Msg::None)
            if (!scan(p, p + len, f->second.msg, fpath, depth + 1)) return false;
          p += len;
          break;
        }
        default:
          report(at, fpath, "field " + std::to_string(field) + " has invalid wire type " + std::to_string(wire) +
                                " (not a protobuf ModelProto, or corrupted bytes)");
          return false;
      }
    }
    return true;
  }
};

}  // namespace

std::optional<WireProblem> scan_model_wire(std::span<const std::byte> bytes) {
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  Scanner s{b, std::nullopt};
  s.scan(b, b + bytes.size(), Msg::Model, "", 0);
  return s.problem;
}

}  // namespace onnxscope::detail
