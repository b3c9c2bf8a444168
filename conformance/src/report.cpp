#include "onnxscope/conformance/report.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace onnxscope::conformance {
namespace {

struct Counts {
  size_t by[6] = {0, 0, 0, 0, 0, 0};
  size_t total() const { return by[0] + by[1] + by[2] + by[3] + by[4] + by[5]; }
  void add(Status s) { ++by[static_cast<int>(s)]; }
  std::string line() const {
    std::ostringstream o;
    o << by[0] << " passed, " << by[1] << " failed, " << by[2] << " errors, " << by[3] << " crashed, " << by[4]
      << " timed out, " << by[5] << " skipped";
    return o.str();
  }
};

std::string group_of(const std::string& key) {
  auto slash = key.find('/');
  return slash == std::string::npos ? "" : key.substr(0, slash);
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path.string());
  f << text;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') o += c;
    }
  }
  return o;
}

std::string drift_lines(const Drift& d, const char* bullet) {
  std::ostringstream o;
  for (const auto& x : d.regressions) o << bullet << "REGRESSION " << x.key << ": expected " << x.expected << ", got " << x.actual << " (" << x.detail.substr(0, 200) << ")\n";
  for (const auto& x : d.new_passes) o << bullet << "NEW PASS " << x.key << ": expected " << x.expected << ", now passes\n";
  for (const auto& x : d.changed) o << bullet << "CHANGED " << x.key << ": expected " << x.expected << ", got " << x.actual << " (" << x.detail.substr(0, 200) << ")\n";
  for (const auto& k : d.not_in_file) o << bullet << "NOT IN EXPECTATIONS " << k << "\n";
  for (const auto& k : d.not_in_suite) o << bullet << "NOT IN SUITE " << k << "\n";
  return o.str();
}

}  // namespace

std::string summary_text(const std::vector<CaseResult>& results, const Drift& drift, const std::string& engine) {
  std::map<std::string, Counts> groups;
  Counts all;
  for (const auto& r : results) {
    groups[group_of(r.key)].add(r.status);
    all.add(r.status);
  }
  std::ostringstream o;
  o << "engine " << engine << ":\n";
  for (const auto& [g, c] : groups) o << "  " << (g.empty() ? "(root)" : g) << ": " << c.line() << "\n";
  if (!drift.empty()) o << "drift from the expectations:\n" << drift_lines(drift, "  ");
  else o << "no drift from the expectations\n";
  // The plain closing line CI systems read.
  o << "conformance: " << all.by[0] << " passed, " << (all.total() - all.by[0] - all.by[5]) << " failed, " << all.by[5]
    << " skipped\n";
  return o.str();
}

void write_markdown_report(const std::filesystem::path& path, const std::vector<CaseResult>& results,
                           const Drift& drift, const std::string& engine) {
  std::map<std::string, Counts> groups;
  std::map<std::string, std::pair<size_t, size_t>> per_op;  // op -> (tests, passed)
  Counts all;
  for (const auto& r : results) {
    groups[group_of(r.key)].add(r.status);
    all.add(r.status);
    for (const auto& op : std::set<std::string>(r.ops.begin(), r.ops.end())) {
      ++per_op[op].first;
      per_op[op].second += r.status == Status::Pass;
    }
  }
  std::ostringstream o;
  o << "# Conformance of the " << engine << " engine\n\n## Totals\n\n| folder | tests | pass | fail | error | crash | timeout | skip |\n|---|---|---|---|---|---|---|---|\n";
  auto row = [&](const std::string& name, const Counts& c) {
    o << "| " << name << " | " << c.total();
    for (size_t s : c.by) o << " | " << s;
    o << " |\n";
  };
  for (const auto& [g, c] : groups) row(g.empty() ? "(root)" : g, c);
  row("**all**", all);
  o << "\n## Drift\n\n" << (drift.empty() ? "None: every test has its expected status.\n" : drift_lines(drift, "- "));
  o << "\n## Not passing\n\n| test | status | detail |\n|---|---|---|\n";
  for (const auto& r : results)
    if (r.status != Status::Pass) {
      std::string d;
      for (char ch : r.detail.substr(0, 300)) d += ch == '|' ? std::string("\\|") : ch == '\n' ? std::string(" ") : std::string(1, ch);
      o << "| " << r.key << " | " << status_name(r.status) << " | " << d << " |\n";
    }
  o << "\n## Per operator\n\nTests whose main graph uses the operator.\n\n| operator | tests | passed | pass % |\n|---|---|---|---|\n";
  for (const auto& [op, tp] : per_op) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.1f", 100.0 * static_cast<double>(tp.second) / static_cast<double>(tp.first));
    o << "| " << op << " | " << tp.first << " | " << tp.second << " | " << pct << " |\n";
  }
  write_file(path, o.str());
}

void write_junit(const std::filesystem::path& path, const std::vector<CaseResult>& results, const std::string& engine,
                 const Expectations* expectations) {
  // The expectation a non-pass meets, or nullptr.
  auto expected = [&](const CaseResult& r) -> const Expectation* {
    if (!expectations || r.status == Status::Pass) return nullptr;
    auto it = expectations->tests.find(r.key);
    return it != expectations->tests.end() && it->second.status == r.status ? &it->second : nullptr;
  };
  std::map<std::string, std::vector<const CaseResult*>> groups;
  for (const auto& r : results) groups[group_of(r.key)].push_back(&r);
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"onnxscope conformance " << xml_escape(engine) << "\">\n";
  for (const auto& [g, rs] : groups) {
    size_t failures = 0, errors = 0, skipped = 0;
    double time = 0;
    for (const auto* r : rs) {
      const bool as_expected = expected(*r) != nullptr;
      failures += r->status == Status::Fail && !as_expected;
      errors += (r->status == Status::Error || r->status == Status::Crash || r->status == Status::Timeout) && !as_expected;
      skipped += r->status == Status::Skip || as_expected;
      time += r->seconds;
    }
    o << "  <testsuite name=\"" << xml_escape(engine + "." + (g.empty() ? "root" : g)) << "\" tests=\"" << rs.size()
      << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\" time=\"" << time << "\">\n";
    for (const auto* r : rs) {
      std::string name = r->key.substr(r->key.find('/') + 1);
      o << "    <testcase classname=\"" << xml_escape(engine + "." + (g.empty() ? "root" : g)) << "\" name=\"" << xml_escape(name)
        << "\" time=\"" << r->seconds << "\"";
      if (const Expectation* e = expected(*r); e && r->status != Status::Skip) {
        o << "><skipped message=\"" << xml_escape("expected " + std::string(status_name(r->status)) + ": " + e->reason +
                                                   " (" + r->detail.substr(0, 300) + ")")
          << "\"/></testcase>\n";
        continue;
      }
      switch (r->status) {
        case Status::Pass: o << "/>\n"; continue;
        case Status::Skip: o << "><skipped message=\"" << xml_escape(r->detail) << "\"/></testcase>\n"; continue;
        case Status::Fail: o << "><failure message=\"" << xml_escape(r->detail.substr(0, 500)) << "\"/></testcase>\n"; continue;
        default:
          o << "><error type=\"" << status_name(r->status) << "\" message=\"" << xml_escape(r->detail.substr(0, 500)) << "\"/></testcase>\n";
      }
    }
    o << "  </testsuite>\n";
  }
  o << "</testsuites>\n";
  write_file(path, o.str());
}

void write_json(const std::filesystem::path& path, const std::vector<CaseResult>& results) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : results)
    j.push_back({{"test", r.key}, {"status", std::string(status_name(r.status))}, {"detail", r.detail}, {"seconds", r.seconds}});
  write_file(path, j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace onnxscope::conformance
