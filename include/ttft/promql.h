// -----------------------------------------------------------------------------
// File: ttft/promql.h
// -----------------------------------------------------------------------------
//
// PromQL label matchers as a user writes them on the command line (`job="vllm",
// namespace=~"prod-.*"`): the check every selector gets before ttft puts it into a
// query (`stats`/`diagnose --prometheus --selector`) or a generated rule (`rules
// --selector`). A typo is then refused locally, naming the flag and the character,
// before any service is contacted; and a value cannot close the braces and add a
// query of its own (`a="b"} or up{c="d"` would otherwise mix `up` into the window).
//
// The grammar is Prometheus's (promql/parser/lex.go, generated_parser.y): matchers
// `name op value` separated by commas, a trailing comma allowed; op one of = != =~ !~;
// the value a PromQL string ("..." and '...' with Go's escapes, `...` raw); a regex
// must compile as Go's regexp syntax, which RE2 implements. Written by hand: no
// packaged C++ library parses PromQL.
//
// Example:
//
//   TTFT_RETURN_IF_ERROR(ttft::CheckLabelMatchers(sel, "--selector"));
//   std::string expr = "up{" + std::string(ttft::TrimLabelMatchers(sel)) + "}";
//
// Thread safety: the functions are pure; call them from any thread.

#ifndef TTFT_PROMQL_H_
#define TTFT_PROMQL_H_

#include <string_view>

#include "ttft/core.h"

namespace ttft {

struct LabelMatchersSyntax {
  // Also accept a quoted label name (`"service.name"="x"`), as Prometheus 3.0 does for
  // UTF-8 names (prometheus.io/docs/guides/utf8). Off for generated rules: Prometheus
  // 2.x (Debian 12's) and its promtool refuse them.
  bool quoted_names = false;
};

// OK when `matchers` (without braces; blanks around the matchers ignored; may be empty)
// is a list of label matchers in `syntax`. Otherwise InvalidArgument whose message
// starts with `flag` and the text and names the first offending character (1-based)
// and what is wrong there: a line break or other control character, invalid UTF-8, no
// label name, no operator, an unquoted or unterminated value, an escape PromQL does not
// accept, a regex that does not compile, no comma between matchers.
Status CheckLabelMatchers(std::string_view matchers, std::string_view flag,
                          LabelMatchersSyntax syntax = {});

// The matchers of a list CheckLabelMatchers accepted, without the blanks around them
// and a trailing comma, ready to be joined to other matchers with a comma: PromQL
// takes `{a="x",}`, but neither `{a="x",,le="1"}` nor `{  ,le="1"}`.
std::string_view TrimLabelMatchers(std::string_view matchers);

// A selector as users also write it, `{...}` with blanks around: the text inside one
// pair of braces, or the selector itself (less the blanks) when it has none.
std::string_view StripSelectorBraces(std::string_view selector);

// A label name in Prometheus's legacy character set, [a-zA-Z_][a-zA-Z0-9_]*.
bool IsLabelName(std::string_view s);

}  // namespace ttft

#endif  // TTFT_PROMQL_H_
