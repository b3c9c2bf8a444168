#include "onnxscope/conformance/expectations.h"

#include <fstream>
#include <set>
#include <sstream>
#include <toml++/toml.h>

namespace onnxscope::conformance {

Expectations load_expectations(const std::filesystem::path& path) {
  toml::table root;
  try {
    root = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << path.string() << ":" << e.source().begin.line << ": " << e.description();
    throw std::runtime_error(msg.str());
  }
  Expectations out;
  auto where = [&](const std::string& key) { return path.string() + ": test '" + key + "': "; };
  if (auto suite = root["suite"].as_table()) {
    out.onnx_version = (*suite)["onnx_version"].value_or(std::string{});
    out.test_count = static_cast<size_t>((*suite)["test_count"].value_or(int64_t{0}));
  }
  auto tests = root["tests"].as_table();
  if (!tests) throw std::runtime_error(path.string() + ": no [tests] table");
  for (const auto& [k, node] : *tests) {
    const std::string key(k.str());
    auto t = node.as_table();
    if (!t) throw std::runtime_error(where(key) + "must be a table");
    Expectation e;
    std::string status = (*t)["status"].value_or(std::string{});
    auto st = status_from_name(status);
    if (!st) throw std::runtime_error(where(key) + "unknown status '" + status + "' (pass, fail, error, crash, timeout, skip)");
    e.status = *st;
    e.reason = (*t)["reason"].value_or(std::string{});
    if (e.status != Status::Pass && e.reason.empty())
      throw std::runtime_error(where(key) + "status '" + status + "' needs a reason");
    auto rtol = (*t)["rtol"].value<double>();
    auto atol = (*t)["atol"].value<double>();
    if (rtol || atol) {
      Tolerance tol;
      if (rtol) tol.rtol = *rtol;
      if (atol) tol.atol = *atol;
      e.tolerance = tol;
    }
    for (const auto& [field, v] : *t) {
      static const std::set<std::string> known = {"status", "reason", "rtol", "atol"};
      if (!known.count(std::string(field.str())))
        throw std::runtime_error(where(key) + "unknown field '" + std::string(field.str()) + "'");
    }
    out.tests.emplace(key, std::move(e));
  }
  return out;
}

namespace {
std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o += c;
  }
  return o + "\"";
}
}  // namespace

void save_expectations(const std::filesystem::path& path, const Expectations& e, const std::string& engine) {
  std::ostringstream o;
  o << "# Conformance expectations of the " << engine << " engine on the ONNX backend test suite.\n"
    << "# Every non-pass has a reason. Regenerate with:\n"
    << "#   onnxscope conformance --suite DIR --engine " << engine << " --expectations THIS_FILE --update-expectations\n"
    << "# then review the diff: a reason written by hand is kept while the status stays the same.\n\n"
    << "[suite]\n"
    << "onnx_version = " << quoted(e.onnx_version) << "\n"
    << "test_count = " << e.test_count << "\n";
  for (const auto& [key, x] : e.tests) {
    o << "\n[tests." << quoted(key) << "]\nstatus = \"" << status_name(x.status) << "\"\n";
    if (!x.reason.empty()) o << "reason = " << quoted(x.reason) << "\n";
    if (x.tolerance) o << "rtol = " << x.tolerance->rtol << "\natol = " << x.tolerance->atol << "\n";
  }
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path.string());
  f << o.str();
}

void update_expectations(Expectations& e, const std::vector<CaseResult>& results) {
  for (const auto& r : results) {
    auto it = e.tests.find(r.key);
    if (it != e.tests.end() && it->second.status == r.status) continue;  // keep its reason
    Expectation x = it != e.tests.end() ? it->second : Expectation{};
    x.status = r.status;
    x.reason = r.status == Status::Pass ? "" : r.detail.substr(0, 400);
    if (x.status != Status::Pass && x.reason.empty()) x.reason = std::string(status_name(r.status));
    e.tests[r.key] = x;
  }
}

Drift compute_drift(const Expectations& e, const std::vector<CaseResult>& results, const std::vector<TestCase>& cases,
                    bool whole_suite) {
  Drift d;
  std::set<std::string> in_suite;
  for (const auto& c : cases) in_suite.insert(case_key(c));
  for (const auto& r : results) {
    auto it = e.tests.find(r.key);
    if (it == e.tests.end()) {
      d.not_in_file.push_back(r.key);
      continue;
    }
    if (it->second.status == r.status) continue;
    DriftItem item{r.key, std::string(status_name(it->second.status)), std::string(status_name(r.status)), r.detail};
    if (it->second.status == Status::Pass) d.regressions.push_back(item);
    else if (r.status == Status::Pass) d.new_passes.push_back(item);
    else d.changed.push_back(item);
  }
  if (whole_suite)
    for (const auto& [key, x] : e.tests)
      if (!in_suite.count(key)) d.not_in_suite.push_back(key);
  return d;
}

}  // namespace onnxscope::conformance
