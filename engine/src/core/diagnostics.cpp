#include "onnxscope/diagnostics.h"

namespace onnxscope {

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "?";
}

std::string Location::to_string() const {
  std::string s;
  auto add = [&](const std::string& part) {
    if (part.empty()) return;
    if (!s.empty()) s += ", ";
    s += part;
  };
  add(file);
  if (!graph.empty()) add("graph " + graph);
  if (!node.empty() || node_index >= 0) {
    std::string n = "node '" + node + "'";
    if (!op_type.empty() || node_index >= 0) {
      n += " (";
      if (!op_type.empty()) n += op_type;
      if (node_index >= 0) n += (op_type.empty() ? "#" : " #") + std::to_string(node_index);
      n += ")";
    }
    add(n);
  }
  if (!value.empty()) add("'" + value + "'");
  return s;
}

std::string Diagnostic::to_string() const {
  std::string s = std::string(severity_name(severity)) + "[" + code + "]";
  std::string w = where.to_string();
  if (!w.empty()) s += " " + w;
  s += ": " + message;
  if (!expected.empty()) s += " (expected " + expected + ")";
  return s;
}

Error::Error(Diagnostic d) : std::runtime_error(d.to_string()), diag_(std::move(d)) {}

void Diagnostics::error(std::string code, Location where, std::string message, std::string expected) {
  items_.push_back({Severity::Error, std::move(code), std::move(where), std::move(message), std::move(expected)});
}
void Diagnostics::warning(std::string code, Location where, std::string message, std::string expected) {
  items_.push_back({Severity::Warning, std::move(code), std::move(where), std::move(message), std::move(expected)});
}
void Diagnostics::info(std::string code, Location where, std::string message) {
  items_.push_back({Severity::Info, std::move(code), std::move(where), std::move(message), {}});
}
size_t Diagnostics::count(Severity s) const {
  size_t n = 0;
  for (const auto& d : items_) n += d.severity == s;
  return n;
}

}  // namespace onnxscope
