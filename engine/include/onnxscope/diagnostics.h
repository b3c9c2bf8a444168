// Located findings about a model or file: what is wrong, where, and what was
// expected. Every user-facing error in onnxscope is one of these.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace onnxscope {

enum class Severity { Info, Warning, Error };
std::string_view severity_name(Severity s);

struct Location {
  std::string file;        // model or data file
  std::string graph;       // "main", "main/If_0:then_branch", "function ai.custom::Foo"
  int64_t node_index = -1; // position in that graph's node list
  std::string node;        // node label (name or op#index)
  std::string op_type;
  std::string value;       // tensor / value name, attribute name, ...
  std::string to_string() const;
};

struct Diagnostic {
  Severity severity = Severity::Error;
  std::string code;     // stable kebab-case id: "undefined-input", "raw-data-size"
  Location where;
  std::string message;  // what is wrong
  std::string expected; // what would have been right, if that helps
  std::string to_string() const;  // "file: graph main, node 'x' (Conv #3): message (expected ...)"
};

// Thrown where work cannot go on (unreadable file, hostile data). Carries the
// same located diagnostic that a validation pass would have reported.
class Error : public std::runtime_error {
 public:
  explicit Error(Diagnostic d);
  const Diagnostic& diagnostic() const { return diag_; }

 private:
  Diagnostic diag_;
};

class Diagnostics {
 public:
  void add(Diagnostic d) { items_.push_back(std::move(d)); }
  void error(std::string code, Location where, std::string message, std::string expected = {});
  void warning(std::string code, Location where, std::string message, std::string expected = {});
  void info(std::string code, Location where, std::string message);
  const std::vector<Diagnostic>& items() const { return items_; }
  std::vector<Diagnostic>& items() { return items_; }
  size_t count(Severity s) const;
  bool has_errors() const { return count(Severity::Error) > 0; }

 private:
  std::vector<Diagnostic> items_;
};

}  // namespace onnxscope
