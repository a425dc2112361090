// -----------------------------------------------------------------------------
// File: ttft/template.h
// -----------------------------------------------------------------------------
//
// A Jinja subset as Hugging Face chat templates are written, rendered the way
// `transformers` renders them (utils/chat_template_utils.py `_compile_jinja_template`):
// jinja2's ImmutableSandboxedEnvironment with trim_blocks=True, lstrip_blocks=True and the
// loopcontrols extension, `tojson` = json.dumps(ensure_ascii=False, indent=...), and the
// globals raise_exception(msg) and strftime_now(fmt). docs/template.md lists what is
// supported; anything else is an error with its line and column, never ignored. The real
// chat templates of ../shared/data/chat-templates/ render byte-identically to Debian's
// python3-jinja2 (template_diff_test).
//
// Render tracking: a value from a *tracked source* (a variable or a path in it, such as
// `messages[0].content`, tagged by TagSource, or a strftime_now() result) carries its
// source id through string operations (+, ~, join, trim, slicing, tojson, macros), and
// the rendered output lists, per source, the byte ranges it produced (RenderResult::spans).
// Control flow is not tracked (a loop whose length a variable sets produces template
// text): the linter's second render with other samples catches what tracking misses.
//
// Example:
//
//   TTFT_ASSIGN_OR_RETURN(ttft::Template t, ttft::Template::Parse(text, "chat.jinja"));
//   ttft::Value vars = ttft::Value::Dict();
//   vars.Set("messages", *ttft::Value::FromJson(R"([{"role":"user","content":"Hi"}])"));
//   vars.Set("add_generation_prompt", ttft::Value(true));
//   TTFT_ASSIGN_OR_RETURN(ttft::RenderResult r, t.Render(vars));
//
// Thread safety: a parsed Template is immutable; Render may run from many threads at once.

#ifndef TTFT_TEMPLATE_H_
#define TTFT_TEMPLATE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ttft/core.h"

namespace ttft {

// A range of bytes [begin, end) that came from tracked source `source` (>= 0).
struct TaintSpan {
  uint32_t begin = 0;
  uint32_t end = 0;
  int32_t source = -1;
};

struct TemplateCallable;

// A template value: undefined, none, bool, int, float, string (with the tracked spans of
// its bytes), list (or tuple), dict (ordered as inserted), namespace, or callable.
// Lists, dicts and namespaces are shared on copy (as Python objects are); only
// namespaces are ever mutated (`{% set ns.x = ... %}`).
class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kCallable
  };
  using Items = std::vector<std::pair<std::string, Value>>;

  Value() = default;  // undefined
  explicit Value(bool b) : kind_(Kind::kBool), i_(b ? 1 : 0) {}
  explicit Value(int64_t i) : kind_(Kind::kInt), i_(i) {}
  explicit Value(int i) : kind_(Kind::kInt), i_(i) {}
  explicit Value(double f) : kind_(Kind::kFloat), f_(f) {}
  explicit Value(std::string s) : kind_(Kind::kString), s_(std::make_shared<Str>()) {
    s_->text = std::move(s);
  }
  explicit Value(const char* s) : Value(std::string(s)) {}
  static Value None();
  static Value Undefined(std::string name);  // name: for "'x' is undefined" messages
  static Value List(std::vector<Value> items = {}, bool tuple = false);
  static Value Dict();
  static Value Namespace();
  static Value Callable(std::shared_ptr<const TemplateCallable> fn);
  // A string whose bytes carry `spans` (sorted, disjoint, within the text).
  static Value TrackedString(std::string text, std::vector<TaintSpan> spans);
  // JSON text to a value (objects keep their key order). Errors name `source`.
  static Result<Value> FromJson(std::string_view json, std::string_view source = "json");

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kDict && d_->is_namespace; }
  bool is_tuple() const { return kind_ == Kind::kList && l_->tuple; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }

  // REQUIRES: the matching kind.
  bool as_bool() const { return i_ != 0; }
  int64_t as_int() const { return i_; }
  double as_double() const { return kind_ == Kind::kInt ? static_cast<double>(i_) : f_; }
  const std::string& str() const { return s_->text; }
  const std::vector<TaintSpan>& spans() const { return s_->spans; }
  const std::vector<Value>& list() const { return l_->items; }
  const Items& items() const { return d_->items; }
  const TemplateCallable& callable() const { return *fn_; }
  // The undefined value's name ("messages[3]"), for messages.
  const std::string& undefined_name() const { return s_->text; }

  // Dict: the value of `key`, or nullptr. REQUIRES: is_dict().
  const Value* Find(std::string_view key) const;
  // Dict: sets (replacing in place or appending). REQUIRES: is_dict().
  void Set(std::string key, Value v);
  // List: appends. REQUIRES: is_list().
  void Append(Value v);

  // The tracked source of a non-string value (-1: untracked); a string's sources are
  // its spans. For a list or dict this is the source tagged on the container itself.
  int32_t source() const { return src_; }
  // Tags this value and everything in it as coming from `source` (a deep copy:
  // containers shared with other values are not touched). Tagged(-1) removes all tags.
  Value Tagged(int32_t source) const;
  // The first tracked source in this value or anything in it, or -1.
  int32_t FirstSource() const;

  // Python truthiness (undefined and empty containers are false).
  bool Truthy() const;
  // Python str(): "None", "True", repr of lists and dicts, "" for undefined.
  std::string ToPython() const;
  // Python repr().
  std::string Repr() const;

 private:
  struct Str {
    std::string text;
    std::vector<TaintSpan> spans;
  };
  struct ListData {
    std::vector<Value> items;
    bool tuple = false;
  };
  struct DictData {
    Items items;
    bool is_namespace = false;
  };
  friend class ValueBuilderAccess;

  Kind kind_ = Kind::kUndefined;
  int32_t src_ = -1;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<Str> s_;  // string text, or an undefined value's name
  std::shared_ptr<ListData> l_;
  std::shared_ptr<DictData> d_;
  std::shared_ptr<const TemplateCallable> fn_;
};

// A built-in callable (raise_exception, strftime_now, namespace, range, a macro).
struct TemplateCallable {
  std::string name;
  virtual ~TemplateCallable() = default;
};

// Where in the template source: 1-based line and column (bytes).
struct SourcePos {
  int line = 0;
  int column = 0;
};

// Options of one render.
struct RenderOptions {
  // strftime_now(fmt): returns the formatted wall-clock time. Null: the local clock.
  std::function<std::string(std::string_view fmt)> strftime_now;
  // When >= 0, strftime_now() results carry this tracked source (the linter makes the
  // clock a per-request source).
  int32_t strftime_source = -1;
  // Printing an undefined value ({{ x }}) is an error instead of "" (jinja2's
  // StrictUndefined for output only; `is defined`, `default` and `if x` still work).
  bool strict_undefined = false;
  // Guards against runaway templates: the render fails past this many output bytes or
  // loop iterations (macro recursion is limited to depth 64), when it builds a string
  // longer than 2^28 bytes, or when it has built more than max_built_bytes in all: the
  // bytes of every string it makes, sizeof(Value) per list item and four bytes per code
  // point of a string it indexes, slices or iterates (so a loop that doubles a string
  // or a list, or copies a large one in every iteration, stops in well under a second).
  size_t max_output_bytes = size_t{1} << 28;
  int64_t max_iterations = int64_t{1} << 24;
  size_t max_built_bytes = size_t{1} << 30;
};

// What a render produced.
struct RenderResult {
  std::string text;
  // Bytes of `text` from tracked sources, sorted and disjoint (adjacent spans of the
  // same source merged). Bytes in no span came from template text or static values.
  std::vector<TaintSpan> spans;
  // Where in the template each span was emitted ({{ }} or the call), parallel to spans.
  std::vector<SourcePos> span_pos;
};

// A use in the template of something the linter looks at (TemplateUses).
struct TemplateUse {
  enum class Kind : uint8_t {
    kVariable,   // a top-level name read (not assigned first in the template)
    kClockCall,  // strftime_now(...) or now(...)
    kTojson,     // a |tojson filter
    kItems,      // a |items filter or .items() call
    kAlias,      // `for name in EXPR` or `set name = EXPR`: argument = EXPR's root
  };
  Kind kind = Kind::kVariable;
  std::string name;  // the variable, or the function / filter name
  SourcePos pos;
  std::string argument;  // tojson / items: the expression's root variable, if any
};

class Template {
 public:
  // Parses a template. Syntax errors, unknown filters or tests, and unsupported tags
  // (extends, include, import, call, filter blocks) are kInvalidArgument:
  // "<name>:<line>:<col>: <what>".
  static Result<Template> Parse(std::string_view source, std::string_view name = "template");

  // Renders with the top-level variables `vars` (a dict). raise_exception(), a type
  // error (e.g. str + int), an undefined value used as an object, or a guard limit is
  // kInvalidArgument "<name>:<line>:<col>: <what>".
  // REQUIRES: vars.is_dict().
  Result<RenderResult> Render(const Value& vars, const RenderOptions& options = {}) const;

  // The uses the linter inspects, in source order.
  const std::vector<TemplateUse>& uses() const;
  const std::string& name() const;

  struct Impl;

 private:
  explicit Template(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

// Python's json.dumps(v, ensure_ascii=False, indent=indent) (indent < 0: None), as
// transformers' tojson; the tracked spans of strings (and tagged values) carry over.
Result<Value> ToJson(const Value& v, int indent);

}  // namespace ttft

#endif  // TTFT_TEMPLATE_H_
