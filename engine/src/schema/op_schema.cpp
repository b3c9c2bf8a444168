#include "onnxscope/op_schema.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace onnxscope {
namespace {
#include "schema/onnx_op_schemas.inc"

std::string_view canonical_domain(std::string_view d) { return d == "ai.onnx" ? std::string_view{} : d; }

// kOpSchemas is sorted by (domain, name, since_version): binary search the op.
std::span<const OpSchema> versions_of(std::string_view domain, std::string_view op) {
  domain = canonical_domain(domain);
  auto key = [](const OpSchema& s) { return std::pair<std::string_view, std::string_view>(s.domain, s.name); };
  auto want = std::pair<std::string_view, std::string_view>(domain, op);
  auto lo = std::lower_bound(std::begin(kOpSchemas), std::end(kOpSchemas), want,
                             [&](const OpSchema& s, const auto& w) { return key(s) < w; });
  auto hi = lo;
  while (hi != std::end(kOpSchemas) && key(*hi) == want) ++hi;
  return {lo, hi};
}
}  // namespace

const AttrSpec* OpSchema::attribute(std::string_view n) const {
  for (const auto& a : attributes)
    if (n == a.name) return &a;
  return nullptr;
}

const TypeConstraint* OpSchema::constraint(std::string_view param) const {
  for (const auto& c : type_constraints)
    if (param == c.param) return &c;
  return nullptr;
}

const FormalParam* OpSchema::input_param(size_t position) const {
  if (inputs.empty()) return nullptr;
  if (position < inputs.size()) return &inputs[position];
  return inputs.back().option == 2 ? &inputs.back() : nullptr;
}

const FormalParam* OpSchema::output_param(size_t position) const {
  if (outputs.empty()) return nullptr;
  if (position < outputs.size()) return &outputs[position];
  return outputs.back().option == 2 ? &outputs.back() : nullptr;
}

const OpSchema* find_schema(std::string_view domain, std::string_view op, int64_t opset_version) {
  const OpSchema* best = nullptr;
  for (const auto& s : versions_of(domain, op))
    if (s.since_version <= opset_version) best = &s;
  return best;
}

std::vector<const OpSchema*> schema_versions(std::string_view domain, std::string_view op) {
  std::vector<const OpSchema*> out;
  for (const auto& s : versions_of(domain, op)) out.push_back(&s);
  return out;
}

bool is_standard_domain(std::string_view domain) { return max_known_opset(domain) > 0; }

int64_t max_known_opset(std::string_view domain) {
  domain = canonical_domain(domain);
  int64_t best = 0;
  for (const auto& s : kOpSchemas)
    if (domain == s.domain) best = std::max<int64_t>(best, s.since_version);
  return best;
}

const FunctionBodyBytes* find_function_body(const OpSchema& schema, int64_t model_opset) {
  const FunctionBodyBytes* best = nullptr;
  for (const auto& b : kFunctionBodies)
    if (std::string_view(b.domain) == schema.domain && std::string_view(b.name) == schema.name &&
        b.since_version == schema.since_version && b.opset <= model_opset && (!best || b.opset > best->opset))
      best = &b;
  return best;
}

std::span<const OpSchema> all_schemas() { return kOpSchemas; }
std::string_view schema_onnx_version() { return ONNXSCOPE_SCHEMA_ONNX_VERSION; }

}  // namespace onnxscope
