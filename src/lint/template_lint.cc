// Template mode: two tracked renders, tokenized; where non-static content starts.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "lint/internal.h"
#include "ttft/lint.h"

namespace ttft {
namespace {

using lint::PathStep;

// A second sample for a non-static value: every string gets a different first byte,
// numbers +1, and dicts reverse their key order (a request's JSON fixes no order).
// Booleans, None and the structural keys "role" and "type" stay: they steer the
// template's control flow, which a real second request of the same shape shares.
Value Perturb(const Value& v, bool structural) {
  switch (v.kind()) {
    case Value::Kind::kString: {
      if (structural) return v;
      const std::string& s = v.str();
      return Value((!s.empty() && s[0] == '~' ? "^" : "~") + s);
    }
    case Value::Kind::kInt: return Value(v.as_int() + 1);
    case Value::Kind::kFloat: return Value(v.as_double() + 1);
    case Value::Kind::kList: {
      std::vector<Value> items;
      for (const Value& e : v.list()) items.push_back(Perturb(e, false));
      return Value::List(std::move(items), v.is_tuple());
    }
    case Value::Kind::kDict: {
      Value d = Value::Dict();
      for (auto it = v.items().rbegin(); it != v.items().rend(); ++it) {
        d.Set(it->first, Perturb(it->second, it->first == "role" || it->first == "type"));
      }
      return d;
    }
    default: return v;
  }
}

// Tags a non-static value as coming from `id`, except the values of "role" and "type"
// keys: they are the prompt's shape (which turns, which parts), the same for every request
// of that shape, and treated as static (Perturb keeps them too).
Value TagContent(const Value& v, int32_t id) {
  switch (v.kind()) {
    case Value::Kind::kList: {
      std::vector<Value> items;
      for (const Value& e : v.list()) items.push_back(TagContent(e, id));
      return Value::List(std::move(items), v.is_tuple());
    }
    case Value::Kind::kDict: {
      Value d = Value::Dict();
      for (const auto& [k, e] : v.items()) {
        d.Set(k, (k == "role" || k == "type") && e.is_string() ? e.Tagged(-1) : TagContent(e, id));
      }
      return d;
    }
    default: return v.Tagged(id);
  }
}

// A placeholder of kPlaceholderBytes bytes; `which` ('A' or 'B') is its first byte.
std::string PlaceholderText(const std::string& name, char which) {
  std::string s = std::string(1, which) + "<" + name + " placeholder>";
  s.resize(kPlaceholderBytes, '.');
  return s;
}

Value Placeholder(const std::string& name, char which) {
  const std::string p = PlaceholderText(name, which);
  if (name == "messages") {
    return *Value::FromJson(fmt::format(R"([{{"role": "user", "content": "{}"}}])", p));
  }
  if (name == "tools") {
    return *Value::FromJson(fmt::format(
        R"([{{"type": "function", "function": {{"name": "placeholder_tool", "description": "{}",
            "parameters": {{"type": "object", "properties": {{}}}}}}}}])",
        p));
  }
  return Value(p);
}

// Returns `root` with the value at `steps[k..]` replaced by f(old) (containers on the
// way are copied, never mutated in place).
template <typename F>
Result<Value> Update(const Value& root, const std::vector<PathStep>& steps, size_t k, F&& f,
                     const std::string& path) {
  if (k == steps.size()) return f(root);
  const PathStep& s = steps[k];
  if (s.index >= 0) {
    if (!root.is_list() || s.index >= static_cast<int64_t>(root.list().size())) {
      return Status::Invalid(fmt::format("{}: no element [{}] in the sample", path, s.index));
    }
    std::vector<Value> items = root.list();
    TTFT_ASSIGN_OR_RETURN(items[static_cast<size_t>(s.index)],
                          Update(items[static_cast<size_t>(s.index)], steps, k + 1, f, path));
    return Value::List(std::move(items), root.is_tuple());
  }
  if (!root.is_dict() || root.Find(s.key) == nullptr) {
    return Status::Invalid(fmt::format("{}: no key '{}' in the sample", path, s.key));
  }
  Value d = Value::Dict();
  for (const auto& [key, val] : root.items()) {
    if (key == s.key) {
      TTFT_ASSIGN_OR_RETURN(Value nv, Update(val, steps, k + 1, f, path));
      d.Set(key, std::move(nv));
    } else {
      d.Set(key, val);
    }
  }
  return d;
}

struct Source {
  std::string name;
  VarClass cls;
};

// Volatile-looking literals (ECMAScript regexes).
struct VolatilePattern {
  const char* what;
  std::regex re;
};
const std::vector<VolatilePattern>& VolatilePatterns() {
  static const std::vector<VolatilePattern> kPatterns = [] {
    std::vector<VolatilePattern> p;
    const char* months = "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*";
    p.push_back({"a UUID", std::regex("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                                      "[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")});
    p.push_back({"a date", std::regex("\\b(19|20)\\d\\d-[01]\\d-[0-3]\\d\\b")});
    p.push_back(
        {"a date", std::regex(std::string("\\b[0-3]?\\d ") + months + " (19|20)\\d\\d\\b")});
    p.push_back(
        {"a date", std::regex(std::string("\\b") + months + " [0-3]?\\d,? (19|20)\\d\\d\\b")});
    p.push_back({"a time", std::regex("\\b[0-2]?\\d:[0-5]\\d(:[0-5]\\d)?\\b")});
    p.push_back(
        {"a request id", std::regex("\\b(req|request|trace|span|session)[-_]?(id)?[-_:= ]{0,3}"
                                    "[0-9a-fA-F]{8,64}\\b",
                                    std::regex::icase)});
    p.push_back({"a long hex id", std::regex("\\b[0-9a-f]{16,64}\\b")});
    return p;
  }();
  return kPatterns;
}

SourcePos PosOf(std::string_view source, size_t off) {
  SourcePos p{1, 1};
  for (size_t i = 0; i < off && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

// The text around byte `at`, cut at character boundaries.
std::string Excerpt(const std::string& text, size_t at) {
  auto boundary = [&](size_t i) {
    while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
    return std::min(i, text.size());
  };
  const size_t b = boundary(at > 60 ? at - 60 : 0);
  const size_t e = boundary(std::min(text.size(), at + 40));
  at = std::max(b, std::min(boundary(at), e));
  std::string s = text.substr(b, at - b) + "⟦" + text.substr(at, e - at) + "⟧";
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

bool TemplateLintReport::violation() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.level == FindingLevel::kError; });
}

Result<TemplateLintReport> LintTemplate(const Template& tmpl, std::string_view template_source,
                                        const VarsFile& vars, const Tokenizer& tokenizer,
                                        const LintOptions& options) {
  if (options.block_size <= 0) return Status::Invalid("--block-size must be > 0");
  if (options.first_tokens < 0) return Status::Invalid("--first-tokens must be >= 0");
  TemplateLintReport rep;
  rep.template_path = tmpl.name();
  rep.vars_path = vars.path;
  rep.approximate_tokens = tokenizer.approximate();
  rep.first_tokens = options.first_tokens;
  rep.block_size = options.block_size;

  std::set<std::string> read;
  std::map<std::string, std::string> alias;  // name -> the root it was assigned from
  for (const TemplateUse& u : tmpl.uses()) {
    if (u.kind == TemplateUse::Kind::kVariable) read.insert(u.name);
    if (u.kind == TemplateUse::Kind::kAlias && !u.argument.empty() && u.argument != u.name) {
      alias.emplace(u.name, u.argument);
    }
  }

  // Whole variables first, then paths into them (shallow before deep).
  std::vector<const VarSpec*> order;
  for (const VarSpec& v : vars.vars) order.push_back(&v);
  std::vector<std::vector<PathStep>> steps_of(vars.vars.size());
  for (size_t i = 0; i < vars.vars.size(); ++i) {
    TTFT_ASSIGN_OR_RETURN(steps_of[i], lint::ParsePath(vars.vars[i].path));
    if (!read.count(steps_of[i][0].key)) {
      return Status::Invalid(
          fmt::format("{}:{}: '{}': the template never reads variable '{}' (a misspelling?)",
                      vars.path, vars.vars[i].line, vars.vars[i].path, steps_of[i][0].key));
    }
  }
  std::vector<size_t> idx(vars.vars.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(),
                   [&](size_t a, size_t b) { return steps_of[a].size() < steps_of[b].size(); });

  std::vector<Source> sources;
  Value va = Value::Dict(), vb = Value::Dict();
  std::map<std::string, VarClass> class_of_root;
  for (size_t i : idx) {
    const VarSpec& spec = vars.vars[i];
    const auto& steps = steps_of[i];
    const bool tracked = spec.cls != VarClass::kStatic;
    int32_t id = -1;
    if (tracked) {
      id = static_cast<int32_t>(sources.size());
      sources.push_back({spec.path, spec.cls});
    }
    if (steps.size() == 1) {
      Value a, b;
      if (spec.sample) {
        a = *spec.sample;
        b = tracked ? Perturb(a, false) : a;
      } else {
        a = Placeholder(steps[0].key, 'A');
        b = tracked ? Placeholder(steps[0].key, 'B') : a;
        rep.notes.push_back(fmt::format("{} ({}): no sample, a {}-byte placeholder was used",
                                        spec.path, ToString(spec.cls), kPlaceholderBytes));
      }
      if (tracked) {
        a = TagContent(a, id);
        b = TagContent(b, id);
      }
      va.Set(steps[0].key, a);
      vb.Set(steps[0].key, b);
      class_of_root[steps[0].key] = spec.cls;
      continue;
    }
    const Value* ra = va.Find(steps[0].key);
    if (ra == nullptr) {
      return Status::Invalid(
          fmt::format("{}:{}: {}: declare '{}' with a sample first (a path "
                      "needs the variable's structure)",
                      vars.path, spec.line, spec.path, steps[0].key));
    }
    // A path overrides its variable's class for that part: the part keeps the variable's
    // sample unless it has its own, loses the variable's tag, and gets its own (static:
    // none, and the second render gets the same value).
    Value new_a;
    auto set_a = [&](const Value& old) -> Value {
      Value x = spec.sample ? *spec.sample : old.Tagged(-1);
      new_a = tracked ? TagContent(x, id) : x;
      return new_a;
    };
    auto set_b = [&](const Value&) -> Value {
      if (!tracked) return new_a;
      return TagContent(Perturb(new_a.Tagged(-1), false), id);
    };
    auto na = Update(*ra, steps, 1, set_a, spec.path);
    if (!na.ok()) {
      return Status::Invalid(fmt::format("{}:{}: {}", vars.path, spec.line, na.status().message()));
    }
    TTFT_ASSIGN_OR_RETURN(Value nb, Update(*vb.Find(steps[0].key), steps, 1, set_b, spec.path));
    va.Set(steps[0].key, *na);
    vb.Set(steps[0].key, nb);
  }
  if (read.count("add_generation_prompt") && va.Find("add_generation_prompt") == nullptr) {
    va.Set("add_generation_prompt", Value(true));
    vb.Set("add_generation_prompt", Value(true));
    rep.notes.push_back("add_generation_prompt: not declared, true (static) was used");
  }

  // The clock is a per-request source: two renders, two different days and times.
  const int32_t clock_id = static_cast<int32_t>(sources.size());
  sources.push_back({"strftime_now()", VarClass::kPerRequest});
  auto clock = [](int year, int mon, int day, int h, int m, int s) {
    return [=](std::string_view f) {
      std::tm tm{};
      tm.tm_year = year - 1900;
      tm.tm_mon = mon - 1;
      tm.tm_mday = day;
      tm.tm_hour = h;
      tm.tm_min = m;
      tm.tm_sec = s;
      std::mktime(&tm);
      char buf[512];
      const size_t n = std::strftime(buf, sizeof buf, std::string(f).c_str(), &tm);
      return std::string(buf, n);
    };
  };
  RenderOptions oa, ob;
  oa.strict_undefined = ob.strict_undefined = true;
  oa.strftime_source = ob.strftime_source = clock_id;
  oa.strftime_now = clock(2026, 12, 3, 13, 45, 7);
  ob.strftime_now = clock(2027, 6, 18, 8, 12, 55);
  auto undefined_hint = [&](const Status& st) {
    if (st.message().find("is undefined") != std::string::npos) {
      return Status::Invalid(st.message() + fmt::format(" (declare it in {})", vars.path));
    }
    return st;
  };
  auto ra = tmpl.Render(va, oa);
  if (!ra.ok()) return undefined_hint(ra.status());
  auto rb = tmpl.Render(vb, ob);
  if (!rb.ok()) return undefined_hint(rb.status());
  const RenderResult& A = *ra;
  const RenderResult& B = *rb;

  // The first non-static byte: tracked output, or the first difference.
  int64_t b_track = A.spans.empty() ? -1 : A.spans.front().begin;
  int64_t b_diff = -1;
  {
    const size_t n = std::min(A.text.size(), B.text.size());
    size_t i = 0;
    while (i < n && A.text[i] == B.text[i]) ++i;
    if (i < n || A.text.size() != B.text.size()) b_diff = static_cast<int64_t>(i);
  }
  int64_t b = b_track;
  if (b_diff >= 0 && (b < 0 || b_diff < b)) b = b_diff;
  rep.first_non_static_byte = b;

  auto enc = tokenizer.EncodeWithOffsets(A.text);
  if (!enc.ok()) return enc.status().WithContext(tmpl.name() + ": rendered prompt");
  const Encoding& ea = *enc;
  rep.prompt_tokens = static_cast<int64_t>(ea.ids.size());
  int64_t prefix = rep.prompt_tokens;
  if (b >= 0) {
    prefix = 0;
    for (size_t i = 0; i < ea.ids.size(); ++i) {
      const uint64_t end = i + 1 < ea.ids.size() ? ea.byte_offsets[i + 1] : A.text.size();
      if (end > static_cast<uint64_t>(b)) break;
      prefix = static_cast<int64_t>(i) + 1;
    }
    if (!tokenizer.approximate()) {
      TTFT_ASSIGN_OR_RETURN(std::vector<int32_t> ib, tokenizer.Encode(B.text));
      size_t c = 0;
      while (c < ea.ids.size() && c < ib.size() && ea.ids[c] == ib[c]) ++c;
      prefix = std::min<int64_t>(prefix, static_cast<int64_t>(c));
    }
  }
  rep.cacheable_prefix_tokens = prefix;
  rep.cacheable_prefix_blocks = prefix / options.block_size;
  if (tokenizer.approximate()) {
    rep.notes.push_back("no --tokenizer: token counts are the approximation of docs/tokenizer.md");
  }

  if (b >= 0) {
    const RenderResult* from = nullptr;
    size_t span = 0;
    for (const RenderResult* r : {&A, &B}) {
      for (size_t i = 0; i < r->spans.size() && from == nullptr; ++i) {
        if (r->spans[i].begin <= b && b < r->spans[i].end) {
          from = r;
          span = i;
        }
      }
      if (from) break;
    }
    if (from) {
      const Source& s = sources[static_cast<size_t>(from->spans[span].source)];
      rep.offender = s.name;
      rep.offender_class = std::string(ToString(s.cls));
      rep.offender_pos = from->span_pos[span];
    } else {
      rep.offender = "(control flow)";
      rep.offender_class =
          "output differs between the two samples where no tracked value was "
          "printed: a branch or loop depends on a non-static variable";
    }
    rep.excerpt = Excerpt(
        A.text, static_cast<size_t>(std::min<int64_t>(b, static_cast<int64_t>(A.text.size()))));
    if (prefix < options.first_tokens) {
      rep.findings.push_back(
          {"TTFT-L001", FindingLevel::kError,
           fmt::format(
               "non-static content from '{}' ({}) starts at token {} (byte {}), within "
               "the first {} tokens: the cacheable prefix is {} tokens = {} full blocks of {}",
               rep.offender, from ? rep.offender_class : "control flow", prefix, b,
               options.first_tokens, prefix, rep.cacheable_prefix_blocks, options.block_size),
           rep.offender_pos, rep.offender});
    }
  }

  // Volatile literals in the static part (before the first non-static byte, outside
  // tracked output).
  {
    const size_t limit = b >= 0 ? static_cast<size_t>(b) : A.text.size();
    std::set<std::string> seen;
    size_t pos = 0;
    std::vector<std::pair<size_t, size_t>> segments;
    for (const TaintSpan& s : A.spans) {
      if (s.begin > pos) segments.emplace_back(pos, std::min<size_t>(s.begin, limit));
      pos = s.end;
    }
    if (pos < limit) segments.emplace_back(pos, limit);
    for (const auto& [sb, se] : segments) {
      if (sb >= se) continue;
      const std::string seg = A.text.substr(sb, se - sb);
      for (const VolatilePattern& p : VolatilePatterns()) {
        for (auto it = std::sregex_iterator(seg.begin(), seg.end(), p.re);
             it != std::sregex_iterator(); ++it) {
          const std::string lit = it->str();
          if (!seen.insert(lit).second) continue;
          const size_t at = template_source.find(lit);
          rep.findings.push_back(
              {"TTFT-L002", FindingLevel::kWarning,
               fmt::format("static text \"{}\" in the prompt prefix looks like {}: if it changes "
                           "(per deploy, per day), every cached prefix after it is lost",
                           lit, p.what),
               at == std::string_view::npos ? SourcePos{} : PosOf(template_source, at), ""});
        }
      }
    }
  }

  auto resolve = [&](std::string name) {
    for (int k = 0; k < 16 && !class_of_root.count(name) && alias.count(name); ++k) {
      name = alias[name];
    }
    return name;
  };
  for (const TemplateUse& u : tmpl.uses()) {
    if (u.kind == TemplateUse::Kind::kClockCall) {
      rep.findings.push_back(
          {"TTFT-L003", FindingLevel::kWarning,
           fmt::format("{}() reads the wall clock: its text changes every day (or second), so "
                       "a prefix containing it stops matching; keep it after the static prefix "
                       "or out of the prompt",
                       u.name),
           u.pos, u.name + "()"});
    }
    if (u.kind == TemplateUse::Kind::kTojson || u.kind == TemplateUse::Kind::kItems) {
      const std::string root = resolve(u.argument);
      auto c = class_of_root.find(root);
      if (c != class_of_root.end() && c->second != VarClass::kStatic) {
        rep.findings.push_back(
            {"TTFT-L004", FindingLevel::kWarning,
             fmt::format("{} of '{}' ({}): a dict's key order follows the request's JSON, so "
                         "equal content can serialise differently; sort the keys or build the "
                         "text in a fixed order",
                         u.kind == TemplateUse::Kind::kTojson ? "tojson" : "items()", root,
                         ToString(c->second)),
             u.pos, root});
      }
    }
  }
  std::stable_sort(rep.findings.begin(), rep.findings.end(),
                   [](const Finding& x, const Finding& y) {
                     return static_cast<int>(x.level) < static_cast<int>(y.level);
                   });
  return rep;
}

}  // namespace ttft
