// PromQL label matchers (ttft/promql.h): Prometheus's lexer and parser rules for a
// matcher list (promql/parser/lex.go, generated_parser.y), the string literals' escapes
// as Go's strconv.UnquoteChar reads them, and regexes compiled by RE2.

#include "ttft/promql.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <utility>

#include "ttft/format.h"

namespace ttft {

namespace {

// A PromQL string literal at s[i] (i at the opening quote): its value, and i past the
// closing quote; or why it is not one, i at the offending character. "..." and '...' take
// Go's escapes (Prometheus unquotes them with the rules of Go's strconv.UnquoteChar: an
// escape it does not know fails the whole expression); `...` is raw. Written by hand:
// no packaged C++ library reads PromQL.
struct Unquoted {
  std::string value;
  std::string why;  // empty: value holds the literal's value
};
Unquoted UnquotePromString(std::string_view s, size_t& i) {
  const char quote = s[i++];
  Unquoted u;
  // `n` digits in `base` at s[i] into v, i past them (false: fewer, or not digits).
  auto digits = [&](size_t n, int base, uint32_t& v) {
    if (s.size() - i < n) return false;
    const char* first = s.data() + i;
    const auto r = std::from_chars(first, first + n, v, base);
    if (r.ec != std::errc() || r.ptr != first + n) return false;
    i += n;
    return true;
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == quote) {
      ++i;
      return u;
    }
    if (c != '\\' || quote == '`') {
      u.value += c;
      ++i;
      continue;
    }
    const size_t at = i++;
    const char e = i < s.size() ? s[i] : '\0';
    uint32_t v = 0;
    // The one-letter escapes, and what each stands for.
    static constexpr std::string_view kLetters = "abfnrtv\\";
    static constexpr std::string_view kMeanings = "\a\b\f\n\r\t\v\\";
    if (const size_t k = kLetters.find(e); e != '\0' && k != std::string_view::npos) {
      u.value += kMeanings[k];
      ++i;
      continue;
    }
    switch (e) {
      case '"':
      case '\'':
        if (e != quote) break;
        u.value += e;
        ++i;
        continue;
      case 'x':
        ++i;
        if (!digits(2, 16, v)) break;
        u.value += static_cast<char>(v);
        continue;
      case 'u':
      case 'U':
        ++i;
        if (!digits(e == 'u' ? 4 : 8, 16, v) || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
          break;
        }
        escape::AppendUtf8(u.value, v);
        continue;
      default:
        if (e >= '0' && e <= '7') {
          if (!digits(3, 8, v) || v > 255) break;
          u.value += static_cast<char>(v);
          continue;
        }
        break;
    }
    i = at;
    u.why = fmt::format(
        "an escape sequence PromQL does not accept ('{}'; a regex's backslash is "
        "written \\\\ inside \"...\", or use `...`)",
        s.substr(at, std::min<size_t>(2, s.size() - at)));
    return u;
  }
  u.why = "an unterminated value";
  return u;
}

}  // namespace

Status CheckLabelMatchers(std::string_view s, std::string_view flag, LabelMatchersSyntax syntax) {
  size_t i = 0;
  auto skip_space = [&] {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  };
  auto bad = [&](const std::string& why) {
    return Status::Invalid(
        fmt::format("{} '{}': {} at character {} (expected label matchers such as "
                    "job=\"vllm\",namespace=~\"prod-.*\")",
                    flag, s, why, i + 1));
  };
  // A line break would end the generated files' comment header early; other control
  // characters have no place in a selector either.
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\r' || c == '\n') return bad("a line break");
    if ((c < 0x20 && c != '\t') || c == 0x7f) return bad("a control character");
  }
  i = 0;
  if (!escape::IsValidUtf8(s)) return Status::Invalid(fmt::format("{}: not valid UTF-8", flag));
  skip_space();
  if (i == s.size()) return Status::Ok();
  while (true) {
    skip_space();
    std::string name;
    if (syntax.quoted_names && i < s.size() && (s[i] == '"' || s[i] == '\'' || s[i] == '`')) {
      const size_t name_at = i;
      Unquoted n = UnquotePromString(s, i);
      if (!n.why.empty()) return bad(n.why);
      if (n.value.empty() || !escape::IsValidUtf8(n.value)) {
        i = name_at;
        return bad("a quoted label name that is empty or not valid UTF-8");
      }
      name = std::move(n.value);
    } else {
      const size_t start = i;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      name = s.substr(start, i - start);
      if (!IsLabelName(name)) return bad("no label name");
    }
    skip_space();
    bool regex = false;
    if (s.compare(i, 2, "=~") == 0 || s.compare(i, 2, "!~") == 0) {
      regex = true;
      i += 2;
    } else if (s.compare(i, 2, "!=") == 0) {
      i += 2;
    } else if (i < s.size() && s[i] == '=') {
      i += 1;
    } else {
      return bad("no matcher operator (=, !=, =~, !~)");
    }
    skip_space();
    if (i >= s.size() || (s[i] != '"' && s[i] != '\'' && s[i] != '`')) {
      return bad("the value is not a quoted string (\"...\", '...' or `...`)");
    }
    const size_t value_at = i;
    const Unquoted u = UnquotePromString(s, i);
    if (!u.why.empty()) return bad(u.why);
    if (regex) {
      RE2::Options opts;
      opts.set_log_errors(false);
      // Prometheus' parser compiles the pattern alone (promtool: "error parsing regexp"),
      // then anchored as "^(?:" + value + ")$", which compiles whenever the pattern does.
      const RE2 re(u.value, opts);
      if (!re.ok()) {
        i = value_at;
        return bad(fmt::format("the regex of label '{}' does not compile ({})", name, re.error()));
      }
    }
    skip_space();
    if (i == s.size()) return Status::Ok();
    if (s[i] != ',') return bad("expected ',' between matchers");
    ++i;
    skip_space();
    if (i == s.size()) return Status::Ok();  // a trailing comma, as PromQL allows
  }
}

namespace {

// Trimmed by hand: Debian's absl::StripAsciiWhitespace takes absl's own string_view
// type (ABSL_OPTION_USE_STD_STRING_VIEW 0).
std::string_view TrimBlanks(std::string_view v) {
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  return v;
}

}  // namespace

std::string_view TrimLabelMatchers(std::string_view selector) {
  std::string_view m = TrimBlanks(selector);
  if (!m.empty() && m.back() == ',') m = TrimBlanks(m.substr(0, m.size() - 1));
  return m;
}

std::string_view StripSelectorBraces(std::string_view selector) {
  std::string_view m = TrimBlanks(selector);
  if (m.starts_with('{') && m.ends_with('}')) m = m.substr(1, m.size() - 2);
  return m;
}

bool IsLabelName(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace ttft
