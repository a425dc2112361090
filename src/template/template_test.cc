#include "ttft/template.h"

#include <gtest/gtest.h>

#include <string>

namespace ttft {
namespace {

Value Vars(std::string_view json) {
  auto v = Value::FromJson(json);
  EXPECT_TRUE(v.ok());
  return *v;
}

std::string Render(std::string_view tmpl, std::string_view vars = "{}") {
  auto t = Template::Parse(tmpl, "t");
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return "<parse error>";
  auto r = t->Render(Vars(vars));
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->text : "<render error: " + r.status().message() + ">";
}

std::string RenderError(std::string_view tmpl, std::string_view vars = "{}") {
  auto t = Template::Parse(tmpl, "t");
  if (!t.ok()) return t.status().message();
  auto r = t->Render(Vars(vars));
  return r.ok() ? "" : r.status().message();
}

// A string literal's escapes decode as Python's: \x, \u and \U with their digit counts
// (UTF-8 out); too few or non-hex digits, or a code point past U+10FFFF, stay as written.
TEST(TemplateTest, StringLiteralHexEscapes) {
  EXPECT_EQ(Render(R"({{ '\u00e9\x41\U0001F600|\xZZ|\U00110000|\u12' }})"),
            "\u00e9A\U0001F600|\\xZZ|\\U00110000|\\u12");
}

TEST(TemplateTest, ExpressionsAndFilters) {
  EXPECT_EQ(Render("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }}"), "7 3 2 3.5");
  EXPECT_EQ(Render("{{ 'a' ~ 1 ~ none }}"), "a1None");
  EXPECT_EQ(Render("{{ [1, 'x', true, none, 1.5] }}"), "[1, 'x', True, None, 1.5]");
  EXPECT_EQ(Render("{{ {'b': 1, 'a': [2]} | tojson }}"), R"({"b": 1, "a": [2]})");
  EXPECT_EQ(Render("{{ x | tojson(indent=2) }}", R"({"x":{"k":[1,{}]}})"),
            "{\n  \"k\": [\n    1,\n    {}\n  ]\n}");
  EXPECT_EQ(Render("{{ '  hi  ' | trim | upper }}|{{ 'abc' | length }}|{{ 'é' | length }}"),
            "HI|3|1");
  EXPECT_EQ(Render("{{ xs | join(', ') }}|{{ xs | first }}|{{ xs | last }}|{{ xs[1:] }}",
                   R"({"xs":["a","b","c"]})"),
            "a, b, c|a|c|['b', 'c']");
  EXPECT_EQ(Render("{{ y | default('d') }}{{ '' | default('e', true) }}"), "de");
  EXPECT_EQ(Render("{{ '%s=%d' | format('a', 3) }}"), "a=3");
  EXPECT_EQ(Render("{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='c') | list }}",
                   R"({"ms":[{"role":"user","c":1},{"role":"x","c":2},{"role":"user","c":3}]})"),
            "[1, 3]");
  EXPECT_EQ(
      Render("{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %}", R"({"d":{"z":1,"a":2}})"),
      "z=1;a=2;");
  EXPECT_EQ(Render("{{ 'a' if x is defined else 'b' }}{{ 'c' if none is none }}"), "bc");
  EXPECT_EQ(Render("{{ 'x' in 'xyz' }} {{ 2 not in [1] }} {{ 'k' in {'k': 1} }}"),
            "True True True");
}

TEST(TemplateTest, WhitespaceControlAsTransformers) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indentation before.
  EXPECT_EQ(Render("{% if true %}\n  a\n  {% endif %}\nb"), "  a\nb");
  EXPECT_EQ(Render("x  {{- 'y' -}}  \n z"), "xyz");
  EXPECT_EQ(Render("a\n{# note #}\nb\n"), "a\nb");
  EXPECT_EQ(Render("a\r\nb\r\n"), "a\nb");
}

TEST(TemplateTest, LoopsScopesNamespacesMacros) {
  EXPECT_EQ(Render("{% for x in xs if x > 1 %}{{ loop.index0 }}{{ x }}{% if loop.last %}!"
                   "{% endif %}{% endfor %}",
                   R"({"xs":[1,2,3]})"),
            "0213!");
  // A set inside a loop does not leak out of the iteration (jinja2 scoping).
  EXPECT_EQ(Render("{% set x = 5 %}{% for i in [1,2] %}{{ x }}{% set x = i %}{% endfor %}{{ x }}"),
            "555");
  EXPECT_EQ(Render("{% set ns = namespace(n=0) %}{% for i in [1,2,3] %}{% set ns.n = ns.n + i %}"
                   "{% endfor %}{{ ns.n }}"),
            "6");
  EXPECT_EQ(
      Render("{% macro f(a, b='B') %}<{{ a }}{{ b }}>{% endmacro %}{{ f(1) }}{{ f(2, b=3) }}"),
      "<1B><23>");
  EXPECT_EQ(
      Render("{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}"),
      "012");
}

TEST(TemplateTest, SyntaxErrorsHaveLineAndColumn) {
  EXPECT_EQ(RenderError("ok\n{% if x %}\n{{ 1 + }}"),
            "t:3:8: unexpected end of print statement '}}'");
  EXPECT_EQ(RenderError("{{ x | nosuchfilter }}"),
            "t:1:8: unsupported filter 'nosuchfilter' (docs/template.md lists the supported "
            "filters)");
  EXPECT_EQ(RenderError("a\n  {% include 'x' %}"),
            "t:2:6: unsupported tag 'include' (docs/template.md lists the supported tags)");
  EXPECT_EQ(RenderError("{% for x in y %}"),
            "t:1:17: unexpected end of template: missing '{% endfor %}'");
  EXPECT_EQ(RenderError("{{ 'abc }}"), "t:1:4: unexpected end of string");
}

TEST(TemplateTest, RuntimeErrorsHaveLineAndColumn) {
  EXPECT_EQ(RenderError("\n{{ x.y }}"), "t:2:5: 'x' is undefined");
  EXPECT_EQ(RenderError("{{ 'a' + 1 }}"), "t:1:8: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(RenderError("{{ raise_exception('bad roles') }}"),
            "t:1:19: raise_exception: bad roles");
  // Printing an undefined value is "" (jinja2's default), or an error when strict.
  EXPECT_EQ(Render("[{{ nothing }}]"), "[]");
  auto t = Template::Parse("{{ nothing }}", "t");
  ASSERT_TRUE(t.ok());
  RenderOptions strict;
  strict.strict_undefined = true;
  EXPECT_EQ(t->Render(Value::Dict(), strict).status().message(), "t:1:4: 'nothing' is undefined");
}

// Python's ints are unbounded; ours are 64-bit, and a result that does not fit is an
// error naming the place, never a wrapped number (a fuzz finding: 88**88 wrapped).
TEST(TemplateTest, IntegerOverflowIsAnErrorNotAWrappedNumber) {
  const std::string overflow = "integer overflow (ttft renders 64-bit integers)";
  EXPECT_EQ(RenderError("{{ 88 ** 88 }}"), "t:1:7: " + overflow);
  EXPECT_EQ(RenderError("{{ 9223372036854775807 + 1 }}"), "t:1:24: " + overflow);
  EXPECT_EQ(RenderError("{{ -9223372036854775807 - 2 }}"), "t:1:25: " + overflow);
  EXPECT_EQ(RenderError("{{ 4294967296 * 4294967296 }}"), "t:1:15: " + overflow);
  EXPECT_EQ(RenderError("{{ 1e300 | int }}"), "t:1:12: " + overflow);
  EXPECT_EQ(RenderError("{{ '%d' % 1e300 }}"), "t:1:9: " + overflow);
  EXPECT_EQ(RenderError("{{ '%.99999999999f' % 1.0 }}"), "t:1:21: format precision too large");
  // What fits is exact, up to the edges of the range.
  EXPECT_EQ(Render("{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ 3 ** 0 }}"),
            "4611686018427387904 -9223372036854775808 1");
  EXPECT_EQ(Render("{{ (-9223372036854775807 - 1) % -1 }} {{ 7 is divisibleby(-1) }}"), "0 True");
  EXPECT_EQ(Render("{{ range(0, 9223372036854775807, 4611686018427387904) | list }}"),
            "[0, 4611686018427387904]");
  EXPECT_EQ(Render("{{ 'abc'[1::9223372036854775807] }}"), "b");
  // An index too large for 64 bits is a missing element, like any other.
  EXPECT_EQ(Render("{{ [[1]] | map(attribute='0.99999999999999999999') | list }}"),
            Render("{{ [[1]] | map(attribute='0.5') | list }}"));
}

TEST(TemplateTest, TracksWhichSourceProducedWhichBytes) {
  auto t = Template::Parse("SYS {{ 'Hello ' + user + '!' }} {{ d | tojson }} end", "t");
  ASSERT_TRUE(t.ok());
  Value vars = Value::Dict();
  vars.Set("user", Value("Ann").Tagged(0));
  Value d = *Value::FromJson(R"({"id": 7})");
  vars.Set("d", d.Tagged(1));
  auto r = t->Render(vars);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "SYS Hello Ann! {\"id\": 7} end");
  ASSERT_EQ(r->spans.size(), 2u);
  EXPECT_EQ(r->text.substr(r->spans[0].begin, r->spans[0].end - r->spans[0].begin), "Ann");
  EXPECT_EQ(r->spans[0].source, 0);
  EXPECT_EQ(r->text.substr(r->spans[1].begin, r->spans[1].end - r->spans[1].begin), "{\"id\": 7}");
  EXPECT_EQ(r->spans[1].source, 1);
  EXPECT_EQ(r->span_pos[0].line, 1);
  EXPECT_EQ(r->span_pos[0].column, 8);  // the {{ }} that printed it
  // strftime_now results carry the clock's source when asked.
  auto c = Template::Parse("{{ strftime_now('%Y') }}", "t");
  RenderOptions opt;
  opt.strftime_now = [](std::string_view) { return std::string("2026"); };
  opt.strftime_source = 5;
  auto rc = c->Render(Value::Dict(), opt);
  ASSERT_TRUE(rc.ok());
  ASSERT_EQ(rc->spans.size(), 1u);
  EXPECT_EQ(rc->spans[0].source, 5);
}

TEST(TemplateTest, UsesListClockCallsAndTojson) {
  auto t =
      Template::Parse("{% set d = strftime_now('%d') %}{{ tools | tojson }}{{ m.items() }}", "t");
  ASSERT_TRUE(t.ok());
  int clock = 0, tojson = 0, items = 0;
  for (const TemplateUse& u : t->uses()) {
    clock += u.kind == TemplateUse::Kind::kClockCall;
    if (u.kind == TemplateUse::Kind::kTojson) {
      ++tojson;
      EXPECT_EQ(u.argument, "tools");
    }
    if (u.kind == TemplateUse::Kind::kItems) {
      ++items;
      EXPECT_EQ(u.argument, "m");
    }
  }
  EXPECT_EQ(clock, 1);
  EXPECT_EQ(tojson, 1);
  EXPECT_EQ(items, 1);
}

// A namespace assigned into itself (directly or through a container or another
// namespace) would make every recursive walk of values loop forever: the template
// fuzzer's stack overflow. It is an error naming the cycle; a non-cyclic nesting works.
TEST(TemplateTest, NamespaceCyclesAreErrors) {
  EXPECT_NE(RenderError("{% set ns = namespace(n=0) %}{% set ns.n = ns %}{{ ns.n }}").find("cycle"),
            std::string::npos);
  EXPECT_NE(
      RenderError("{% set ns = namespace(n=0) %}{% set ns.n = [1, {'k': ns}] %}").find("cycle"),
      std::string::npos);
  EXPECT_NE(RenderError("{% set a = namespace() %}{% set b = namespace(x=a) %}"
                        "{% set a.y = b %}{{ a.y | tojson }}")
                .find("cycle"),
            std::string::npos);
  EXPECT_EQ(Render("{% set a = namespace(v=1) %}{% set b = namespace(x=a) %}{{ b.x.v }}"), "1");
}

// What a render may build is bounded (RenderOptions): a loop that doubles a string or a
// list, or copies a large string in every iteration, is an error in well under a second
// instead of terabytes of memory or hours; and a repetition is exact or an error, never
// silently shortened (it was cut at 2^20 copies).
TEST(TemplateTest, RunawayBuildingIsAnErrorAndRepetitionIsExact) {
  EXPECT_EQ(Render("{{ ('x' * 2000000) | length }}"), "2000000");
  EXPECT_EQ(Render("{{ 'ab' * 3 }}|{{ 2 * 'c' }}|{{ 'ab' * 0 }}|{{ 'ab' * -2 }}|{{ '' * 10**15 }}"),
            "ababab|cc|||");
  EXPECT_NE(RenderError("{{ 'xy' * 10**15 }}").find("a string longer than 268435456 bytes"),
            std::string::npos);

  RenderOptions small;
  small.max_built_bytes = size_t{1} << 20;
  auto error_with = [&](std::string_view tmpl) {
    auto t = Template::Parse(tmpl, "t");
    if (!t.ok()) return t.status().message();
    auto r = t->Render(Value::Dict(), small);
    return r.ok() ? std::string() : r.status().message();
  };
  const char* kRunaways[] = {
      // A string doubled 40 times: a terabyte.
      "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}{{ ns.s | length }}",
      // A list doubled 40 times.
      "{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}"
      "{% endfor %}{{ ns.l | length }}",
      // A list appended to item by item: quadratic copying.
      "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}"
      "{% endfor %}",
      // A large string copied in every iteration.
      "{% set big = 'x' * 100000 %}{% for i in range(100000) %}{% set c = big | upper %}"
      "{% endfor %}",
      // A large list walked by a filter in every iteration.
      "{% set l = range(10000) | list %}{% for i in range(10000) %}{{ l | first }}{% endfor %}",
      // Joined with a large separator.
      "{% set s = 'ab' * 10000 %}{{ range(1000) | join(s) }}",
  };
  for (const char* tmpl : kRunaways) {
    const std::string error = error_with(tmpl);
    EXPECT_NE(error.find("max_built_bytes"), std::string::npos) << tmpl << ": " << error;
    EXPECT_EQ(error.rfind("t:1:", 0), 0u) << error;  // names the template, line and column
  }
  // A template that builds a little at a time stays within the budget.
  EXPECT_EQ(error_with("{% set ns = namespace(s='') %}{% for i in range(100) %}"
                       "{% set ns.s = ns.s ~ 'hello ' %}{% endfor %}{{ ns.s | length }}"),
            "");
}

}  // namespace
}  // namespace ttft
