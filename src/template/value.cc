// Template values: construction, Python str()/repr(), json.dumps, and the tracked-string
// builder.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "template/internal.h"
#include "ttft/template.h"

namespace ttft {

using tmpl::TBuf;

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::Undefined(std::string name) {
  Value v;
  v.s_ = std::make_shared<Str>();
  v.s_->text = std::move(name);
  return v;
}

Value Value::List(std::vector<Value> items, bool tuple) {
  Value v;
  v.kind_ = Kind::kList;
  v.l_ = std::make_shared<ListData>();
  v.l_->items = std::move(items);
  v.l_->tuple = tuple;
  return v;
}

Value Value::Dict() {
  Value v;
  v.kind_ = Kind::kDict;
  v.d_ = std::make_shared<DictData>();
  return v;
}

Value Value::Namespace() {
  Value v = Dict();
  v.d_->is_namespace = true;
  return v;
}

Value Value::Callable(std::shared_ptr<const TemplateCallable> fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.fn_ = std::move(fn);
  return v;
}

Value Value::TrackedString(std::string text, std::vector<TaintSpan> spans) {
  Value v(std::move(text));
  v.s_->spans = std::move(spans);
  return v;
}

namespace {

Value FromNlohmann(const nlohmann::ordered_json& j, int depth, bool& too_deep) {
  if (depth > 256) {
    too_deep = true;
    return Value::None();
  }
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::None();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(static_cast<int64_t>(j.get<int64_t>()));
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(FromNlohmann(e, depth + 1, too_deep));
      return Value::List(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value d = Value::Dict();
      for (auto it = j.begin(); it != j.end(); ++it)
        d.Set(it.key(), FromNlohmann(it.value(), depth + 1, too_deep));
      return d;
    }
    default: return Value::None();
  }
}

}  // namespace

Result<Value> Value::FromJson(std::string_view json, std::string_view source) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(json, nullptr, false);
  if (j.is_discarded()) return Status::Invalid(fmt::format("{}: not valid JSON", source));
  bool too_deep = false;
  Value v = FromNlohmann(j, 0, too_deep);
  if (too_deep) return Status::Invalid(fmt::format("{}: nested deeper than 256", source));
  return v;
}

const Value* Value::Find(std::string_view key) const {
  for (const auto& [k, v] : d_->items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Value::Set(std::string key, Value v) {
  for (auto& [k, old] : d_->items) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  d_->items.emplace_back(std::move(key), std::move(v));
}

void Value::Append(Value v) { l_->items.push_back(std::move(v)); }

Value Value::Tagged(int32_t source) const {
  switch (kind_) {
    case Kind::kString: {
      std::vector<TaintSpan> spans;
      if (!s_->text.empty() && source >= 0) {
        spans.push_back({0, static_cast<uint32_t>(s_->text.size()), source});
      }
      Value v = TrackedString(s_->text, std::move(spans));
      v.src_ = source;
      return v;
    }
    case Kind::kList: {
      std::vector<Value> items;
      items.reserve(l_->items.size());
      for (const Value& e : l_->items) items.push_back(e.Tagged(source));
      Value v = List(std::move(items), l_->tuple);
      v.src_ = source;
      return v;
    }
    case Kind::kDict: {
      Value v = is_namespace() ? Namespace() : Dict();
      for (const auto& [k, e] : d_->items) v.d_->items.emplace_back(k, e.Tagged(source));
      v.src_ = source;
      return v;
    }
    default: {
      Value v = *this;
      v.src_ = source;
      return v;
    }
  }
}

int32_t Value::FirstSource() const {
  if (src_ >= 0) return src_;
  switch (kind_) {
    case Kind::kString: return s_->spans.empty() ? -1 : s_->spans.front().source;
    case Kind::kList:
      for (const Value& e : l_->items) {
        if (int32_t s = e.FirstSource(); s >= 0) return s;
      }
      return -1;
    case Kind::kDict:
      for (const auto& [k, e] : d_->items) {
        if (int32_t s = e.FirstSource(); s >= 0) return s;
      }
      return -1;
    default: return -1;
  }
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool:
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0;
    case Kind::kString: return !s_->text.empty();
    case Kind::kList: return !l_->items.empty();
    case Kind::kDict: return is_namespace() || !d_->items.empty();
    case Kind::kCallable: return true;
  }
  return false;
}

std::string Value::ToPython() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kString: return s_->text;
    default: return Repr();
  }
}

std::string Value::Repr() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return i_ ? "True" : "False";
    case Kind::kInt: return std::to_string(i_);
    case Kind::kFloat: return tmpl::PyFloat(f_);
    case Kind::kString: return tmpl::PyStrRepr(s_->text);
    case Kind::kList: {
      std::string out = l_->tuple ? "(" : "[";
      for (size_t i = 0; i < l_->items.size(); ++i) {
        if (i > 0) out += ", ";
        out += l_->items[i].Repr();
      }
      if (l_->tuple && l_->items.size() == 1) out += ",";
      out += l_->tuple ? ")" : "]";
      return out;
    }
    case Kind::kDict: {
      if (is_namespace()) return "<Namespace>";
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : d_->items) {
        if (!first) out += ", ";
        first = false;
        out += tmpl::PyStrRepr(k) + ": " + v.Repr();
      }
      return out + "}";
    }
    case Kind::kCallable: return "<function " + fn_->name + ">";
  }
  return "";
}

// ---------------------------------------------------------------------------
// json.dumps(ensure_ascii=False, indent=...) with tracking
// ---------------------------------------------------------------------------

namespace {

void JsonEscapeInto(std::string_view s, std::string& out) {
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
}

// A string (with its spans, or all of it from `src`) as a JSON string.
void JsonString(const std::string& text, const std::vector<TaintSpan>& spans, int32_t src,
                TBuf& out) {
  std::string esc;
  out.Add("\"", src);
  size_t pos = 0;
  auto emit = [&](size_t b, size_t e, int32_t s) {
    esc.clear();
    JsonEscapeInto(std::string_view(text).substr(b, e - b), esc);
    out.Add(esc, s);
  };
  for (const TaintSpan& sp : spans) {
    if (sp.begin > pos) emit(pos, sp.begin, src);
    emit(sp.begin, sp.end, sp.source);
    pos = sp.end;
  }
  if (pos < text.size()) emit(pos, text.size(), src);
  out.Add("\"", src);
}

Status JsonInto(const Value& v, int indent, int depth, int32_t inherited, TBuf& out) {
  if (depth > 200) return Status::Invalid("tojson: nesting deeper than 200");
  const int32_t src = v.source() >= 0 ? v.source() : inherited;
  auto newline = [&](int d) {
    std::string s = "\n";
    s.append(static_cast<size_t>(indent) * static_cast<size_t>(d), ' ');
    out.Add(s, src);
  };
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return Status::Invalid("tojson: Object of type Undefined is not JSON serializable (" +
                             v.undefined_name() + ")");
    case Value::Kind::kCallable:
      return Status::Invalid("tojson: a function is not JSON serializable");
    case Value::Kind::kNone: out.Add("null", src); return Status::Ok();
    case Value::Kind::kBool: out.Add(v.as_bool() ? "true" : "false", src); return Status::Ok();
    case Value::Kind::kInt: out.Add(std::to_string(v.as_int()), src); return Status::Ok();
    case Value::Kind::kFloat: {
      double d = v.as_double();
      if (std::isnan(d)) {
        out.Add("NaN", src);
      } else if (std::isinf(d)) {
        out.Add(d > 0 ? "Infinity" : "-Infinity", src);
      } else {
        out.Add(tmpl::PyFloat(d), src);
      }
      return Status::Ok();
    }
    case Value::Kind::kString: JsonString(v.str(), v.spans(), src, out); return Status::Ok();
    case Value::Kind::kList: {
      if (v.list().empty()) {
        out.Add("[]", src);
        return Status::Ok();
      }
      out.Add("[", src);
      bool first = true;
      for (const Value& e : v.list()) {
        if (!first) out.Add(indent >= 0 ? "," : ", ", src);
        first = false;
        if (indent >= 0) newline(depth + 1);
        TTFT_RETURN_IF_ERROR(JsonInto(e, indent, depth + 1, src, out));
      }
      if (indent >= 0) newline(depth);
      out.Add("]", src);
      return Status::Ok();
    }
    case Value::Kind::kDict: {
      if (v.is_namespace()) return Status::Invalid("tojson: a namespace is not JSON serializable");
      if (v.items().empty()) {
        out.Add("{}", src);
        return Status::Ok();
      }
      out.Add("{", src);
      bool first = true;
      for (const auto& [k, e] : v.items()) {
        if (!first) out.Add(indent >= 0 ? "," : ", ", src);
        first = false;
        if (indent >= 0) newline(depth + 1);
        JsonString(k, {}, src, out);
        out.Add(": ", src);
        TTFT_RETURN_IF_ERROR(JsonInto(e, indent, depth + 1, src, out));
      }
      if (indent >= 0) newline(depth);
      out.Add("}", src);
      return Status::Ok();
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Value> ToJson(const Value& v, int indent) {
  TBuf out;
  TTFT_RETURN_IF_ERROR(JsonInto(v, indent, 0, -1, out));
  if (out.overflowed()) {
    return Status::Invalid(fmt::format("tojson: longer than {} bytes", tmpl::kMaxStringBytes));
  }
  return out.Build();
}

namespace tmpl {

void TBuf::AddSpan(uint32_t b, uint32_t e, int32_t source) {
  if (b >= e || source < 0) return;
  if (!spans_.empty() && spans_.back().end == b && spans_.back().source == source) {
    spans_.back().end = e;
  } else {
    spans_.push_back({b, e, source});
  }
}

bool TBuf::Room(size_t n) {
  if (overflowed_ || n > kMaxStringBytes - text_.size() ||
      (budget_ != nullptr && !budget_->Take(n))) {
    overflowed_ = true;
    return false;
  }
  return true;
}

void TBuf::Add(std::string_view s, int32_t source) {
  if (!Room(s.size())) return;
  const auto b = static_cast<uint32_t>(text_.size());
  text_.append(s);
  AddSpan(b, static_cast<uint32_t>(text_.size()), source);
}

void TBuf::AddString(const Value& v) { AddSub(v, 0, v.str().size()); }

void TBuf::AddSub(const Value& v, size_t b, size_t e) {
  if (!Room(e - b)) return;
  const auto base = static_cast<uint32_t>(text_.size());
  text_.append(v.str(), b, e - b);
  for (const TaintSpan& sp : v.spans()) {
    const size_t sb = std::max<size_t>(sp.begin, b);
    const size_t se = std::min<size_t>(sp.end, e);
    if (sb < se) {
      AddSpan(base + static_cast<uint32_t>(sb - b), base + static_cast<uint32_t>(se - b),
              sp.source);
    }
  }
}

std::string PyFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  // sci = [-]D[.DDD]e[+-]XX
  const size_t epos = sci.find('e');
  const int exp = std::stoi(sci.substr(epos + 1));
  std::string mant = sci.substr(0, epos);
  bool neg = false;
  if (mant[0] == '-') {
    neg = true;
    mant.erase(0, 1);
  }
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits.push_back(c);
  }
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02d}", exp < 0 ? '-' : '+', std::abs(exp));
  } else if (exp < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp) - 1, '0') + digits;
  } else {
    const size_t int_len = static_cast<size_t>(exp) + 1;  // exp >= 0 here
    if (digits.size() <= int_len) {
      out = digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  }
  return neg ? "-" + out : out;
}

std::string PyStrRepr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char q = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, q);
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    const char32_t c = NextCodePoint(s, i);
    if (c == static_cast<char32_t>(q) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == 0xad) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    } else if (c == 0x2028 || c == 0x2029) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out.append(s.substr(start, i - start));
    }
  }
  out.push_back(q);
  return out;
}

char32_t NextCodePoint(std::string_view s, size_t& i) {
  const auto c = static_cast<unsigned char>(s[i]);
  int n = 0;
  char32_t cp = 0;
  if (c < 0x80) {
    ++i;
    return c;
  } else if ((c & 0xE0) == 0xC0) {
    n = 1;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 2;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 3;
    cp = c & 0x07;
  } else {
    ++i;
    return 0xFFFD;
  }
  if (i + static_cast<size_t>(n) >= s.size()) {
    ++i;
    return 0xFFFD;
  }
  for (int k = 1; k <= n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
    if ((cc & 0xC0) != 0x80) {
      ++i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (cc & 0x3F);
  }
  i += static_cast<size_t>(n) + 1;
  return cp;
}

size_t CodePointCount(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) NextCodePoint(s, i);
  return n;
}

std::vector<uint32_t> CodePointOffsets(std::string_view s) {
  std::vector<uint32_t> off;
  off.reserve(s.size() + 1);
  size_t i = 0;
  while (i < s.size()) {
    off.push_back(static_cast<uint32_t>(i));
    NextCodePoint(s, i);
  }
  off.push_back(static_cast<uint32_t>(s.size()));
  return off;
}

bool IsPySpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
         c == 0x205f || c == 0x3000;
}

}  // namespace tmpl
}  // namespace ttft
