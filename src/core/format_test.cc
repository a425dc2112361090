// The per-format escaping of data strings and the time formats (ttft/format.h).
#include "ttft/format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace ttft {
namespace {

TEST(EscapeUtf8, AcceptsWellFormedAndRejectsEveryIllFormedSequence) {
  EXPECT_TRUE(escape::IsValidUtf8(""));
  EXPECT_TRUE(escape::IsValidUtf8("acme-rag \u00e9 \u20ac \U0001F600"));
  EXPECT_FALSE(escape::IsValidUtf8("\xff"));              // never a UTF-8 byte
  EXPECT_FALSE(escape::IsValidUtf8("a\xc3"));             // truncated
  EXPECT_FALSE(escape::IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(escape::IsValidUtf8("\xed\xa0\x80"));      // surrogate U+D800
  EXPECT_FALSE(escape::IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(escape::IsValidUtf8("\x80"));              // lone continuation byte
}

TEST(EscapeUtf8, AppendsEachLengthAtItsBoundaries) {
  std::string out;
  for (char32_t cp : {0x0, 0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF}) {
    escape::AppendUtf8(out, cp);
  }
  EXPECT_EQ(out, std::string("\0\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf"
                             "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf",
                             20));
  EXPECT_TRUE(escape::IsValidUtf8(out));
}

TEST(NumfmtPValue, NeverPrintsAnUnderflowAsZero) {
  EXPECT_EQ(numfmt::PValue(0.0312), "0.031");
  EXPECT_EQ(numfmt::PValue(4.1e-75), "4.1e-75");
  EXPECT_EQ(numfmt::PValue(0.0312, 3), "0.0312");
  EXPECT_EQ(numfmt::PValue(1e-300), "1e-300");
  EXPECT_EQ(numfmt::PValue(std::erfc(40.0)), "< 1e-300");  // erfc underflows to 0
  EXPECT_EQ(numfmt::PValue(std::nan("")), "n/a");
  EXPECT_EQ(numfmt::PClause(0.5), "p = 0.5");
  EXPECT_EQ(numfmt::PClause(0), "p < 1e-300");
  EXPECT_EQ(numfmt::PClause(INFINITY), "p = n/a");
}

TEST(EscapeTerminal, ShowsEveryControlCharacterAsAnEscape) {
  using escape::Terminal;
  EXPECT_EQ(Terminal("acme-rag"), "acme-rag");
  EXPECT_EQ(Terminal("caf\xc3\xa9 \xe2\x86\x92 ok\tx"), "caf\xc3\xa9 \xe2\x86\x92 ok\tx");
  // Colour, the window title (OSC 0 ... BEL), a new line, a carriage return, DEL.
  EXPECT_EQ(Terminal("\x1b[31mred\x1b]0;pwned\x07\nx\ry\x7f"),
            "\\x1b[31mred\\x1b]0;pwned\\x07\\nx\\ry\\x7f");
  // C1 (U+009B is CSI), a bidi override, and bytes that are not UTF-8.
  EXPECT_EQ(Terminal("a\xc2\x9b"
                     "b\xe2\x80\xae"
                     "c\xff\x9b"),
            "a\\u009bb\\u202ec\\xff\\x9b");
  // A truncated sequence at the end, an overlong '/', a surrogate.
  EXPECT_EQ(Terminal("\xe2\x86"), "\\xe2\\x86");
  EXPECT_EQ(Terminal("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(Terminal("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  for (int c = 0; c < 0x20; ++c) {
    const std::string out = Terminal(std::string(1, static_cast<char>(c)));
    if (c == '\t') {
      EXPECT_EQ(out, "\t");
    } else {
      EXPECT_EQ(out.find_first_of(std::string("\0\x1b\n\r", 4)), std::string::npos) << c;
      EXPECT_EQ(out[0], '\\') << c;
    }
  }
}

TEST(EscapeMarkdown, NoMarkupCanStartFromData) {
  using escape::Markdown;
  EXPECT_EQ(Markdown("acme-rag app@v2 p99 1.2 s -> 3 s (x2.50)"),
            "acme-rag app@v2 p99 1.2 s -> 3 s (x2.50)");
  EXPECT_EQ(Markdown("vllm:prefix_cache_hits"), "vllm:prefix_cache_hits");  // inert intraword _
  EXPECT_EQ(Markdown("_x_ *y* a * b"), "\\_x\\_ \\*y\\* a * b");
  EXPECT_EQ(Markdown("a\n# Owned"), "a # Owned");  // no new line, so no heading
  EXPECT_EQ(Markdown("# Owned"), "\\# Owned");     // nor at the start of a list item
  EXPECT_EQ(Markdown("> q"), "\\> q");
  EXPECT_EQ(Markdown("- x"), "\\- x");
  EXPECT_EQ(Markdown("+ x"), "\\+ x");
  EXPECT_EQ(Markdown("---"), "\\---");
  EXPECT_EQ(Markdown("-1.5 and 5.97 rps"), "-1.5 and 5.97 rps");
  EXPECT_EQ(Markdown("[60,300) s CI [3.03, 3.83]"), "\\[60,300) s CI [3.03, 3.83]");
  EXPECT_EQ(Markdown("[x]: javascript:alert(1)"), "\\[x\\]: javascript:alert(1)");
  EXPECT_EQ(Markdown("a [x][y] [z][]"), "a [x\\][y] [z\\][]");
  EXPECT_EQ(Markdown("12. x"), "12\\. x");
  EXPECT_EQ(Markdown("1) x"), "1\\) x");
  EXPECT_EQ(Markdown("a - b # c 1. d"), "a - b # c 1. d");
  EXPECT_EQ(Markdown("<script>alert(1)</script>"), "\\<script>alert(1)\\</script>");
  EXPECT_EQ(Markdown("[x](javascript:alert(1))"), "\\[x\\](javascript:alert(1))");
  EXPECT_EQ(Markdown("a [x](javascript:alert(1))"), "a [x\\](javascript:alert(1))");
  EXPECT_EQ(Markdown("a ![i](http://h/i.png)"), "a ![i\\](http://h/i.png)");
  EXPECT_EQ(Markdown("<javascript:alert(1)>"), "\\<javascript:alert(1)>");
  EXPECT_EQ(Markdown("`code` a|b ~~s~~ &lt;"), "\\`code\\` a\\|b \\~\\~s\\~\\~ \\&lt;");
  EXPECT_EQ(Markdown("back\\slash"), "back\\\\slash");
  EXPECT_EQ(Markdown("a\r\n\tb\x1b[31m\x07"), "a   b[31m");
  EXPECT_EQ(Markdown("caf\xc3\xa9\xff"), "caf\xc3\xa9");
}

// Splits one CSV record (RFC 4180), for the round trip.
std::vector<std::string> ParseCsvRecord(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cells.back() += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      cells.emplace_back();
    } else {
      cells.back() += ch;
    }
  }
  return cells;
}

TEST(EscapeCsv, QuotesAsRfc4180AndGuardsFormulas) {
  using escape::CsvField;
  EXPECT_EQ(CsvField("replica=east-0"), "replica=east-0");
  EXPECT_EQ(CsvField("replica=east-0", true), "\"replica=east-0\"");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField("=HYPERLINK(\"http://x\",\"y\")"),
            "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"");
  EXPECT_EQ(CsvField("+1+cmd"), "'+1+cmd");
  EXPECT_EQ(CsvField("-2+3"), "'-2+3");
  EXPECT_EQ(CsvField("@SUM(A1)"), "'@SUM(A1)");
  EXPECT_EQ(CsvField("\tx"), "'\tx");
  EXPECT_EQ(CsvField("\rx"), "\"'\rx\"");
  EXPECT_EQ(CsvField("-"), "'-");
  // Numbers are not formulas.
  EXPECT_EQ(CsvField("-1.5"), "-1.5");
  EXPECT_EQ(CsvField("+3"), "+3");
  EXPECT_EQ(CsvField("-1e-07"), "-1e-07");
  // Round trip through a reader.
  const std::string hostile = "a,\"b\"\r\nc";
  const auto cells = ParseCsvRecord(CsvField(hostile) + ",x");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0], hostile);
  EXPECT_EQ(cells[1], "x");
}

TEST(EscapeCsv, NumbersInTheirShortestForm) {
  using escape::CsvNumber;
  EXPECT_EQ(CsvNumber(0.2f), "0.2");
  EXPECT_EQ(CsvNumber(static_cast<double>(0.2f)), "0.2");  // a widened float32
  EXPECT_EQ(CsvNumber(0.2), "0.2");
  EXPECT_EQ(CsvNumber(0.1 + 0.2), "0.30000000000000004");  // a double keeps its digits
  EXPECT_EQ(CsvNumber(1.0152845643856727), "1.0152845643856727");
  EXPECT_EQ(CsvNumber(3483.0), "3483");
  EXPECT_EQ(CsvNumber(-1.5), "-1.5");
  EXPECT_EQ(CsvNumber(1e-7), "1e-07");
  EXPECT_EQ(CsvNumber(std::nan("")), "");
  EXPECT_EQ(CsvNumber(INFINITY), "");
  for (double v : {0.24822977185249329, 0.009779573418200016, 123.456, 1e300}) {
    EXPECT_EQ(std::stod(CsvNumber(v)) == v || std::stof(CsvNumber(v)) == static_cast<float>(v),
              true)
        << v;
  }
}

TEST(NumFmt, WindowsOfEpochInputsAreClockTimes) {
  EXPECT_EQ(numfmt::Window(60, 300), "[60,300) s");
  EXPECT_EQ(numfmt::Window(1790960618, 1790962418), "[2026-10-02T17:03:38Z, 17:33:38Z)");
  EXPECT_EQ(numfmt::Window(1790960618.25, 1790962418), "[2026-10-02T17:03:38.250Z, 17:33:38Z)");
  EXPECT_EQ(numfmt::Window(1790960618, 1791047018), "[2026-10-02T17:03:38Z, 2026-10-03T17:03:38Z)");
  EXPECT_EQ(numfmt::Window(NAN, 1), "n/a");
  EXPECT_EQ(numfmt::TimePoint(1800), "t=1800 s");
  EXPECT_EQ(numfmt::TimePoint(1790960618), "2026-10-02T17:03:38Z");
  EXPECT_EQ(numfmt::TimePoint(NAN), "n/a");
  // Neither an empty-looking window nor a bound written out in 300 digits.
  EXPECT_EQ(numfmt::Window(10, 10.000000000001), "[10,10.000000000001) s");
  EXPECT_EQ(numfmt::Window(60, 1e300), "[60,1e+300) s");
  EXPECT_EQ(numfmt::TimePoint(1e300), "t=1e+300 s");
  EXPECT_EQ(numfmt::Fixed(199982221464054.0, 2), "2e+14");
  EXPECT_EQ(numfmt::Fixed(22050762800095.16, 2), "2.205e+13");
  EXPECT_EQ(numfmt::Fixed(999999999.5, 1), "999999999.5");
}

TEST(NumFmt, SecondsNeverShowANonZeroFigureAsZeroOrInThousands) {
  EXPECT_EQ(numfmt::Secs(0.0123), "12 ms");
  EXPECT_EQ(numfmt::Secs(2.5), "2.50 s");
  EXPECT_EQ(numfmt::Secs(0), "0 ms");
  EXPECT_EQ(numfmt::Secs(0.00042), "0.42 ms");
  EXPECT_EQ(numfmt::Secs(1e-12), "1e-09 ms");
  EXPECT_EQ(numfmt::Secs(0.9999), "1.00 s");  // not "1000 ms"
  EXPECT_EQ(numfmt::Secs(-2.5), "-2.50 s");   // not "-2500 ms"
  EXPECT_EQ(numfmt::Secs(-0.0123), "-12 ms");
  EXPECT_EQ(numfmt::Secs(2.2e13), "2.2e+13 s");
  EXPECT_EQ(numfmt::Secs(NAN), "n/a");
}

}  // namespace
}  // namespace ttft
