// Private to the template module: the syntax tree, the tracked-string builder and the
// string helpers shared by the parser (parse.cc), the renderer (render.cc) and the
// values (value.cc).
#ifndef TTFT_TEMPLATE_INTERNAL_H_
#define TTFT_TEMPLATE_INTERNAL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ttft/template.h"

namespace ttft::tmpl {

// What one render may build in all: the bytes appended to its strings, plus
// sizeof(Value) per list item and four bytes per code point indexed
// (RenderOptions::max_built_bytes). Without it a template that doubles a string or a
// list in a loop reaches terabytes within 40 iterations, and one that copies a large
// string in every iteration of a long loop runs for hours.
struct ByteBudget {
  size_t left = 0;
  bool exhausted = false;
  // Takes `bytes` from the budget; false (and exhausted) when it has not that many.
  bool Take(size_t bytes) {
    if (exhausted || bytes > left) {
      exhausted = true;
      return false;
    }
    left -= bytes;
    return true;
  }
};

// The longest string a render builds (span offsets are 32-bit; the output's default
// bound, RenderOptions::max_output_bytes, is the same).
inline constexpr size_t kMaxStringBytes = size_t{1} << 28;

// Builds a string and the tracked spans of its bytes (adjacent spans of one source merge).
// An append that would make it longer than kMaxStringBytes, or that `budget` (when given)
// cannot pay for, is dropped and marks the buffer overflowed(): its text is then
// incomplete and must not be used (the renderer turns it into an error).
class TBuf {
 public:
  explicit TBuf(ByteBudget* budget = nullptr) : budget_(budget) {}
  void Add(std::string_view s, int32_t source);
  // Appends a string value with its spans shifted.
  void AddString(const Value& v);
  // Appends the bytes [b, e) of a string value with their spans.
  void AddSub(const Value& v, size_t b, size_t e);
  size_t size() const { return text_.size(); }
  bool overflowed() const { return overflowed_; }
  std::string& text() { return text_; }
  std::vector<TaintSpan>& spans() { return spans_; }
  // REQUIRES: !overflowed().
  Value Build() { return Value::TrackedString(std::move(text_), std::move(spans_)); }

 private:
  // Whether `n` more bytes may be appended; marks the buffer overflowed if not.
  bool Room(size_t n);
  void AddSpan(uint32_t b, uint32_t e, int32_t source);
  ByteBudget* budget_;
  bool overflowed_ = false;
  std::string text_;
  std::vector<TaintSpan> spans_;
};

// Python float repr (shortest round trip; exponent form below 1e-4 and from 1e16).
std::string PyFloat(double d);
// Python repr of a str.
std::string PyStrRepr(std::string_view s);
// Decodes one UTF-8 code point at s[i] (advancing i); malformed bytes decode as one
// code point each (U+FFFD), so every byte belongs to exactly one "character".
char32_t NextCodePoint(std::string_view s, size_t& i);
// The number of code points of s, as CodePointOffsets(s).size() - 1, without allocating.
size_t CodePointCount(std::string_view s);
// Byte offsets of the code points of s, plus s.size() at the end.
std::vector<uint32_t> CodePointOffsets(std::string_view s);
// Python str.isspace() for a code point.
bool IsPySpace(char32_t c);

// ---------------------------------------------------------------------------
// Syntax tree
// ---------------------------------------------------------------------------

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind : uint8_t {
    kLiteral,  // value
    kName,     // name
    kAttr,     // a.name
    kItem,     // a[b]
    kSlice,    // a[b:c:d] (b, c, d may be null)
    kCall,     // a(args, kw=...)
    kFilter,   // a | name(args)   (a null for a filter block, unused)
    kTest,     // a is [not] name(args)
    kNeg,      // -a
    kPos,      // +a
    kNot,      // not a
    kAnd,      // a and b
    kOr,       // a or b
    kBinary,   // a op b: + - * / // % ** ~
    kCompare,  // a op b: == != < > <= >= in, not in
    kCond,     // b if a else c  (a = test, b = then, c = else or null)
    kList,     // [a, ...]
    kTuple,    // (a, ...)
    kDict,     // {k: v, ...}: args alternate key, value
  };
  Kind kind = Kind::kLiteral;
  SourcePos pos;
  Value value;       // kLiteral
  std::string name;  // name, attribute, filter, test, operator
  bool negated = false;
  ExprPtr a, b, c, d;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  enum class Kind : uint8_t {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // branches (cond, body) ..., else_body
    kFor,       // targets in expr [if filter]: body [else else_body]
    kSet,       // targets (name, or ns.attr as name + attr) = expr
    kSetBlock,  // {% set name %}body{% endset %}
    kMacro,     // name(params=defaults): body
    kBreak,
    kContinue,
    kScope,  // a body rendered as is ({% generation %})
  };
  Kind kind = Kind::kText;
  SourcePos pos;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::string> targets;
  std::string attr;                                     // kSet on a namespace attribute
  std::vector<std::pair<std::string, ExprPtr>> params;  // kMacro (default may be null)
};

}  // namespace ttft::tmpl

struct ttft::Template::Impl {
  std::string name;
  tmpl::Body body;
  std::vector<TemplateUse> uses;
};

#endif  // TTFT_TEMPLATE_INTERNAL_H_
