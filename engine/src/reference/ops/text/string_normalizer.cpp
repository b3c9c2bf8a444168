// Reference kernel: StringNormalizer.
#include <algorithm>
#include <bit>
#include <cctype>
#include <clocale>
#include <cmath>
#include <cwctype>
#include <limits>
#include <locale.h>
#include <map>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include <re2/re2.h>

#include "reference/kernel_util.h"
#include "reference/ops/text/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

// A C library locale for case mapping (LC_CTYPE only), freed on scope exit.
class CaseLocale {
 public:
  explicit CaseLocale(const std::string& name) {
    // Try the name as given (with a UTF-8 codeset added when it names none);
    // fall back to C.UTF-8, whose tables cover Unicode's simple case mappings.
    // (glibc caches failed look-ups, so never ask for a malformed name.)
    std::vector<std::string> tries;
    if (!name.empty()) {
      tries.push_back(name);
      if (name.find('.') == std::string::npos) tries.push_back(name + ".UTF-8");
    }
    tries.push_back("C.UTF-8");
    for (const std::string& t : tries) {
      loc_ = newlocale(LC_CTYPE_MASK, t.c_str(), static_cast<locale_t>(nullptr));
      if (loc_ != static_cast<locale_t>(nullptr)) return;
    }
  }
  ~CaseLocale() {
    if (loc_ != static_cast<locale_t>(nullptr)) freelocale(loc_);
  }
  CaseLocale(const CaseLocale&) = delete;
  CaseLocale& operator=(const CaseLocale&) = delete;

  // Upper- or lower-cases each code point; bytes that are not valid UTF-8 pass through.
  std::string convert(const std::string& s, bool upper) const {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
      const auto b0 = static_cast<unsigned char>(s[i]);
      size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
      bool valid = len != 0 && i + len <= s.size();
      uint32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1Fu) : len == 3 ? (b0 & 0x0Fu) : (b0 & 0x07u);
      for (size_t k = 1; valid && k < len; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80) valid = false;
        cp = (cp << 6) | (b & 0x3Fu);
      }
      if (!valid) {
        out.push_back(s[i]);
        ++i;
        continue;
      }
      uint32_t mapped = cp;
      if (loc_ != static_cast<locale_t>(nullptr)) {
        mapped = static_cast<uint32_t>(upper ? towupper_l(static_cast<wint_t>(cp), loc_)
                                             : towlower_l(static_cast<wint_t>(cp), loc_));
      } else if (cp < 0x80) {
        mapped = static_cast<uint32_t>(upper ? std::toupper(static_cast<int>(cp)) : std::tolower(static_cast<int>(cp)));
      }
      append_utf8(out, mapped);
      i += len;
    }
    return out;
  }

 private:
  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  locale_t loc_ = static_cast<locale_t>(nullptr);
};

}  // namespace

// Drops elements equal to a stop word (compared case-insensitively unless
// is_case_sensitive), then changes the case of what is left.
void StringNormalizer(KernelContext& ctx) {
  const Tensor& x = string_input(ctx, 0);
  const bool two_dim = x.rank() == 2;
  if (!(x.rank() == 1 || (two_dim && x.shape()[0] == 1)))
    ctx.fail("input must have shape [C] or [1, C], got " + shape_to_string(x.shape()));
  const std::string action = ctx.attr_string("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    ctx.fail("case_change_action must be NONE, LOWER or UPPER, got '" + action + "'");
  const bool keep_case = action == "NONE", upper = action == "UPPER";
  const bool case_sensitive = ctx.attr_int("is_case_sensitive", 0) != 0;
  const CaseLocale loc(ctx.attr_string("locale", "en_US"));

  std::vector<std::string> stops = ctx.attr_strings("stopwords");
  if (!case_sensitive)
    for (std::string& w : stops) w = loc.convert(w, false);
  std::sort(stops.begin(), stops.end());

  std::vector<std::string> kept;
  for (const std::string& s : x.strings()) {
    const std::string key = case_sensitive ? s : loc.convert(s, false);
    if (std::binary_search(stops.begin(), stops.end(), key)) continue;
    if (keep_case) kept.push_back(s);
    else kept.push_back(loc.convert(s, upper));
  }
  if (kept.empty()) kept.emplace_back();  // all dropped: one empty string
  const auto c = static_cast<int64_t>(kept.size());
  ctx.set_output(0, Tensor::from_strings(two_dim ? Shape{1, c} : Shape{c}, std::move(kept)));
}

}  // namespace onnxscope::ref
