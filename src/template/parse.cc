// The template lexer and parser: jinja2 3.1's lexer rules (lexer.py) with
// trim_blocks=True and lstrip_blocks=True, and its expression grammar (parser.py).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <set>

#include "template/internal.h"
#include "ttft/format.h"
#include "ttft/template.h"

namespace ttft {
namespace tmpl {
namespace {

enum class Tok : uint8_t {
  kData,
  kVarBegin,
  kVarEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInt,
  kFloat,
  kOp,
  kEof
};

struct Token {
  Tok type = Tok::kEof;
  std::string text;  // data, name, operator, unescaped string, number text
  SourcePos pos;
};

const std::set<std::string, std::less<>> kFilters = {
    "abs",     "capitalize", "count",  "d",          "default", "e",          "escape",
    "first",   "float",      "format", "int",        "items",   "join",       "last",
    "length",  "list",       "lower",  "map",        "reject",  "rejectattr", "replace",
    "reverse", "safe",       "select", "selectattr", "sort",    "string",     "sum",
    "title",   "tojson",     "trim",   "upper",      "unique"};
const std::set<std::string, std::less<>> kTests = {
    "defined", "undefined", "none",  "string",      "number",   "integer",  "float",
    "boolean", "true",      "false", "mapping",     "iterable", "sequence", "callable",
    "equalto", "eq",        "ne",    "lt",          "le",       "gt",       "ge",
    "in",      "odd",       "even",  "divisibleby", "sameas",   "lower",    "upper"};

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

class Lexer {
 public:
  Lexer(std::string source, std::string_view name) : src_(std::move(source)), name_(name) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  SourcePos Pos(size_t off) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), off);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(off - line_starts_[line - 1] + 1)};
  }
  Status Error(size_t off, std::string_view what) const {
    SourcePos p = Pos(off);
    return Status::Invalid(fmt::format("{}:{}:{}: {}", name_, p.line, p.column, what));
  }

  Result<std::vector<Token>> Run() {
    size_t pos = 0;
    bool line_starting = true;
    const size_t n = src_.size();
    while (pos < n) {
      size_t tag = pos;
      char kind = 0;
      while (true) {
        tag = src_.find('{', tag);
        if (tag == std::string::npos || tag + 1 >= n) {
          tag = std::string::npos;
          break;
        }
        const char c = src_[tag + 1];
        if (c == '{' || c == '%' || c == '#') {
          kind = c;
          break;
        }
        ++tag;
      }
      if (tag == std::string::npos) {
        Emit(Tok::kData, src_.substr(pos), pos);
        break;
      }
      std::string text = src_.substr(pos, tag - pos);
      size_t after = tag + 2;
      const char sign = after < n && (src_[after] == '-' || src_[after] == '+') ? src_[after] : 0;
      if (sign == '-') {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      } else if (sign != '+' && kind != '{') {
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
            std::all_of(text.begin() + static_cast<ptrdiff_t>(l_pos), text.end(),
                        [](char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; })) {
          text.resize(l_pos);
        }
      }
      if (!text.empty()) Emit(Tok::kData, text, pos);
      if (sign) ++after;
      if (kind == '#') {
        size_t end = src_.find("#}", after);
        if (end == std::string::npos) return Error(tag, "missing end of comment tag");
        size_t next = end + 2;
        if (end > after && src_[end - 1] == '-') {
          while (next < n && IsSpace(src_[next])) ++next;
        } else if (!(end > after && src_[end - 1] == '+') && next < n && src_[next] == '\n') {
          ++next;
        }
        line_starting = src_[next - 1] == '\n';
        pos = next;
        continue;
      }
      if (kind == '%' && IsRaw(after)) {
        TTFT_ASSIGN_OR_RETURN(pos, LexRaw(tag, after, line_starting));
        continue;
      }
      Emit(kind == '{' ? Tok::kVarBegin : Tok::kBlockBegin, "", tag);
      TTFT_ASSIGN_OR_RETURN(pos, LexTag(tag, after, kind == '{'));
      line_starting = src_[pos - 1] == '\n';
    }
    Emit(Tok::kEof, "", n);
    return std::move(toks_);
  }

 private:
  void Emit(Tok t, std::string text, size_t off) {
    toks_.push_back({t, std::move(text), Pos(off)});
  }

  bool IsRaw(size_t p) const {
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    return src_.compare(p, 2, "%}") == 0 || src_.compare(p, 3, "-%}") == 0;
  }

  // {% raw %}...{% endraw %}: returns the offset after the end tag.
  Result<size_t> LexRaw(size_t tag, size_t p, bool& line_starting) {
    p = src_.find("raw", p) + 3;
    while (IsSpace(src_[p])) ++p;
    bool strip_after = src_[p] == '-';
    p += strip_after ? 3 : 2;
    if (strip_after) {
      while (p < src_.size() && IsSpace(src_[p])) ++p;
    }
    size_t q = p;
    while (true) {
      q = src_.find("{%", q);
      if (q == std::string::npos) return Error(tag, "missing end of raw directive");
      size_t r = q + 2;
      const char sign = src_[r] == '-' || src_[r] == '+' ? src_[r] : 0;
      if (sign) ++r;
      while (r < src_.size() && IsSpace(src_[r])) ++r;
      if (src_.compare(r, 6, "endraw") != 0) {
        q += 2;
        continue;
      }
      r += 6;
      while (r < src_.size() && IsSpace(src_[r])) ++r;
      std::string text = src_.substr(p, q - p);
      if (sign == '-') {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      }
      if (!text.empty()) Emit(Tok::kData, text, p);
      if (src_.compare(r, 3, "-%}") == 0) {
        r += 3;
        while (r < src_.size() && IsSpace(src_[r])) ++r;
      } else if (src_.compare(r, 2, "%}") == 0) {
        r += 2;
        if (r < src_.size() && src_[r] == '\n') ++r;
      } else {
        return Error(r, "expected '%}' after endraw");
      }
      line_starting = src_[r - 1] == '\n';
      return r;
    }
  }

  // Tokens of one {{ }} or {% %} tag from p; returns the offset after its end.
  Result<size_t> LexTag(size_t tag, size_t p, bool var) {
    const size_t n = src_.size();
    std::vector<char> balance;
    while (true) {
      while (p < n && IsSpace(src_[p])) ++p;
      if (p >= n)
        return Error(tag, var ? "unexpected end of template, expected '}}'"
                              : "unexpected end of template, expected '%}'");
      if (balance.empty()) {
        if (var) {
          if (src_.compare(p, 3, "-}}") == 0) {
            Emit(Tok::kVarEnd, "", p);
            p += 3;
            while (p < n && IsSpace(src_[p])) ++p;
            return p;
          }
          if (src_.compare(p, 2, "}}") == 0) {
            Emit(Tok::kVarEnd, "", p);
            return p + 2;
          }
        } else {
          if (src_.compare(p, 3, "-%}") == 0) {
            Emit(Tok::kBlockEnd, "", p);
            p += 3;
            while (p < n && IsSpace(src_[p])) ++p;
            return p;
          }
          if (src_.compare(p, 3, "+%}") == 0) {
            Emit(Tok::kBlockEnd, "", p);
            return p + 3;
          }
          if (src_.compare(p, 2, "%}") == 0) {
            Emit(Tok::kBlockEnd, "", p);
            p += 2;
            if (p < n && src_[p] == '\n') ++p;
            return p;
          }
        }
      }
      const char c = src_[p];
      const size_t start = p;
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        while (p < n && (std::isalnum(static_cast<unsigned char>(src_[p])) || src_[p] == '_')) ++p;
        Emit(Tok::kName, src_.substr(start, p - start), start);
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        auto digits = [&] {
          while (p < n && (std::isdigit(static_cast<unsigned char>(src_[p])) ||
                           (src_[p] == '_' && p + 1 < n &&
                            std::isdigit(static_cast<unsigned char>(src_[p + 1]))))) {
            ++p;
          }
        };
        digits();
        bool is_float = false;
        if (p + 1 < n && src_[p] == '.' && std::isdigit(static_cast<unsigned char>(src_[p + 1]))) {
          ++p;
          digits();
          is_float = true;
        }
        if (p < n && (src_[p] == 'e' || src_[p] == 'E')) {
          size_t q = p + 1;
          if (q < n && (src_[q] == '+' || src_[q] == '-')) ++q;
          if (q < n && std::isdigit(static_cast<unsigned char>(src_[q]))) {
            p = q;
            digits();
            is_float = true;
          }
        }
        std::string num;
        for (size_t i = start; i < p; ++i) {
          if (src_[i] != '_') num.push_back(src_[i]);
        }
        Emit(is_float ? Tok::kFloat : Tok::kInt, num, start);
      } else if (c == '\'' || c == '"') {
        ++p;
        std::string raw;
        while (p < n && src_[p] != c) {
          if (src_[p] == '\\' && p + 1 < n) raw.push_back(src_[p++]);
          raw.push_back(src_[p++]);
        }
        if (p >= n) return Error(start, "unexpected end of string");
        ++p;
        Emit(Tok::kString, Unescape(raw), start);
      } else {
        static const char* kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "*",
                                     "/",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                     "<",  ">",  "=",  ".",  ":",  "|",  ",", ";"};
        const char* op = nullptr;
        for (const char* o : kOps) {
          if (src_.compare(p, std::strlen(o), o) == 0) {
            op = o;
            break;
          }
        }
        if (op == nullptr) return Error(p, fmt::format("unexpected char '{}'", c));
        if (std::strchr("([{", op[0]) && op[1] == 0) {
          balance.push_back(op[0] == '(' ? ')' : op[0] == '[' ? ']' : '}');
        } else if (std::strchr(")]}", op[0]) && op[1] == 0) {
          if (balance.empty()) return Error(p, fmt::format("unexpected '{}'", op));
          if (balance.back() != op[0]) {
            return Error(p, fmt::format("unexpected '{}', expected '{}'", op, balance.back()));
          }
          balance.pop_back();
        }
        p += std::strlen(op);
        Emit(Tok::kOp, op, start);
      }
    }
  }

  // Python's unicode-escape decoding of a string literal's body.
  static std::string Unescape(const std::string& s) {
    std::string out;
    auto put = [&](uint32_t cp) { escape::AppendUtf8(out, cp); };
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\' || i + 1 >= s.size()) {
        out.push_back(s[i]);
        continue;
      }
      const char e = s[++i];
      auto hex = [&](int len) -> bool {
        const size_t n = static_cast<size_t>(len);
        if (i + n >= s.size()) return false;
        uint32_t v = 0;
        const char* first = s.data() + i + 1;
        const auto r = std::from_chars(first, first + n, v, 16);
        if (r.ec != std::errc() || r.ptr != first + n || v > 0x10FFFF) return false;
        put(v);
        i += n;
        return true;
      };
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'v': out.push_back('\v'); break;
        case 'a': out.push_back('\a'); break;
        case '\\': out.push_back('\\'); break;
        case '\'': out.push_back('\''); break;
        case '"': out.push_back('"'); break;
        case '\n': break;
        case 'x':
          if (!hex(2)) out += "\\x";
          break;
        case 'u':
          if (!hex(4)) out += "\\u";
          break;
        case 'U':
          if (!hex(8)) out += "\\U";
          break;
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k) {
              v = v * 8 + static_cast<uint32_t>(s[++i] - '0');
            }
            put(v);
          } else {
            out.push_back('\\');
            out.push_back(e);
          }
      }
    }
    return out;
  }

  std::string src_;
  std::string name_;
  std::vector<size_t> line_starts_;
  std::vector<Token> toks_;
};

class Parser {
 public:
  Parser(std::vector<Token> toks, std::string_view name, std::vector<TemplateUse>& uses)
      : t_(std::move(toks)), name_(name), uses_(uses) {}

  Result<Body> ParseTemplate() {
    Body body;
    std::string end;
    TTFT_RETURN_IF_ERROR(ParseBody(body, {}, end));
    return body;
  }

 private:
  const Token& Cur() const { return t_[i_]; }
  const Token& Peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  void Next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  bool IsOp(std::string_view op) const { return Cur().type == Tok::kOp && Cur().text == op; }
  bool IsName(std::string_view n) const { return Cur().type == Tok::kName && Cur().text == n; }
  Status Error(const SourcePos& p, std::string_view what) const {
    return Status::Invalid(fmt::format("{}:{}:{}: {}", name_, p.line, p.column, what));
  }
  Status ErrorHere(std::string_view what) const { return Error(Cur().pos, what); }
  static std::string Describe(const Token& t) {
    switch (t.type) {
      case Tok::kEof: return "end of template";
      case Tok::kVarEnd: return "end of print statement '}}'";
      case Tok::kBlockEnd: return "end of statement block '%}'";
      case Tok::kString: return "string";
      case Tok::kInt:
      case Tok::kFloat: return "number " + t.text;
      default: return "'" + t.text + "'";
    }
  }
  Status Expect(std::string_view op) {
    if (!IsOp(op)) return ErrorHere(fmt::format("expected '{}', got {}", op, Describe(Cur())));
    Next();
    return Status::Ok();
  }
  Status ExpectBlockEnd() {
    if (Cur().type != Tok::kBlockEnd) {
      return ErrorHere(
          fmt::format("expected end of statement block '%}}', got {}", Describe(Cur())));
    }
    Next();
    return Status::Ok();
  }

  // Parses statements until a block tag named in `ends`; its name is left in `end`,
  // with the parser after the tag's name.
  Status ParseBody(Body& body, const std::vector<std::string_view>& ends, std::string& end) {
    while (true) {
      const Token& t = Cur();
      switch (t.type) {
        case Tok::kEof:
          if (ends.empty()) return Status::Ok();
          return ErrorHere(
              fmt::format("unexpected end of template: missing '{{% {} %}}'", ends.back()));
        case Tok::kData: {
          auto s = std::make_unique<Stmt>();
          s->kind = Stmt::Kind::kText;
          s->text = t.text;
          s->pos = t.pos;
          body.push_back(std::move(s));
          Next();
          break;
        }
        case Tok::kVarBegin: {
          Next();
          auto s = std::make_unique<Stmt>();
          s->kind = Stmt::Kind::kOutput;
          s->pos = Cur().pos;
          TTFT_ASSIGN_OR_RETURN(s->expr, ParseTuple(true));
          if (Cur().type != Tok::kVarEnd) {
            return ErrorHere(
                fmt::format("expected end of print statement '}}}}', got {}", Describe(Cur())));
          }
          Next();
          body.push_back(std::move(s));
          break;
        }
        case Tok::kBlockBegin: {
          Next();
          if (Cur().type != Tok::kName) return ErrorHere("expected a tag name");
          const std::string tag = Cur().text;
          if (std::find(ends.begin(), ends.end(), tag) != ends.end()) {
            end = tag;
            Next();
            return Status::Ok();
          }
          TTFT_RETURN_IF_ERROR(ParseStatement(body));
          break;
        }
        default: return ErrorHere(fmt::format("unexpected {}", Describe(t)));
      }
    }
  }

  Status ParseStatement(Body& body) {
    const Token tag = Cur();
    const SourcePos pos = tag.pos;
    auto s = std::make_unique<Stmt>();
    s->pos = pos;
    if (++depth_ > 200) return Error(pos, "blocks nested deeper than 200");
    if (tag.text == "if") {
      Next();
      s->kind = Stmt::Kind::kIf;
      TTFT_ASSIGN_OR_RETURN(ExprPtr cond, ParseExpression(true));
      TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
      while (true) {
        Body b;
        std::string end;
        TTFT_RETURN_IF_ERROR(ParseBody(b, {"elif", "else", "endif"}, end));
        s->branches.emplace_back(std::move(cond), std::move(b));
        if (end == "elif") {
          TTFT_ASSIGN_OR_RETURN(cond, ParseExpression(true));
          TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
          continue;
        }
        if (end == "else") {
          TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
          TTFT_RETURN_IF_ERROR(ParseBody(s->else_body, {"endif"}, end));
        }
        TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
        break;
      }
    } else if (tag.text == "for") {
      Next();
      s->kind = Stmt::Kind::kFor;
      while (true) {
        if (Cur().type != Tok::kName) return ErrorHere("expected a loop variable name");
        s->targets.push_back(Cur().text);
        Next();
        if (IsOp(",")) {
          Next();
          continue;
        }
        break;
      }
      if (!IsName("in")) return ErrorHere(fmt::format("expected 'in', got {}", Describe(Cur())));
      Next();
      TTFT_ASSIGN_OR_RETURN(s->expr, ParseTuple(false));
      for (const std::string& t : s->targets) {
        uses_.push_back({TemplateUse::Kind::kAlias, t, pos, RootName(*s->expr)});
      }
      if (IsName("if")) {
        Next();
        TTFT_ASSIGN_OR_RETURN(s->filter, ParseExpression(true));
      }
      if (IsName("recursive")) return ErrorHere("unsupported: recursive loops");
      TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
      std::string end;
      TTFT_RETURN_IF_ERROR(ParseBody(s->body, {"else", "endfor"}, end));
      if (end == "else") {
        TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
        TTFT_RETURN_IF_ERROR(ParseBody(s->else_body, {"endfor"}, end));
      }
      TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
    } else if (tag.text == "set") {
      Next();
      if (Cur().type != Tok::kName) return ErrorHere("expected a variable name after 'set'");
      s->targets.push_back(Cur().text);
      Next();
      if (IsOp(".")) {
        Next();
        if (Cur().type != Tok::kName) return ErrorHere("expected an attribute name");
        s->attr = Cur().text;
        Next();
      }
      if (IsOp(",")) return ErrorHere("unsupported: tuple assignment in 'set'");
      if (IsOp("=")) {
        Next();
        s->kind = Stmt::Kind::kSet;
        TTFT_ASSIGN_OR_RETURN(s->expr, ParseTuple(true));
        if (s->attr.empty()) {
          uses_.push_back({TemplateUse::Kind::kAlias, s->targets[0], pos, RootName(*s->expr)});
        }
        TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
      } else {
        if (!s->attr.empty()) return ErrorHere("expected '='");
        if (IsOp("|")) return ErrorHere("unsupported: filters on a set block");
        TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
        s->kind = Stmt::Kind::kSetBlock;
        std::string end;
        TTFT_RETURN_IF_ERROR(ParseBody(s->body, {"endset"}, end));
        TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
      }
    } else if (tag.text == "macro") {
      Next();
      s->kind = Stmt::Kind::kMacro;
      if (Cur().type != Tok::kName) return ErrorHere("expected a macro name");
      s->targets.push_back(Cur().text);
      Next();
      TTFT_RETURN_IF_ERROR(Expect("("));
      while (!IsOp(")")) {
        if (!s->params.empty()) TTFT_RETURN_IF_ERROR(Expect(","));
        if (IsOp(")")) break;
        if (Cur().type != Tok::kName) return ErrorHere("expected a parameter name");
        std::string p = Cur().text;
        Next();
        ExprPtr def;
        if (IsOp("=")) {
          Next();
          TTFT_ASSIGN_OR_RETURN(def, ParseExpression(true));
        }
        s->params.emplace_back(std::move(p), std::move(def));
      }
      Next();
      TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
      std::string end;
      TTFT_RETURN_IF_ERROR(ParseBody(s->body, {"endmacro"}, end));
      TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
    } else if (tag.text == "break" || tag.text == "continue") {
      Next();
      s->kind = tag.text == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
    } else if (tag.text == "generation") {
      Next();
      s->kind = Stmt::Kind::kScope;
      TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
      std::string end;
      TTFT_RETURN_IF_ERROR(ParseBody(s->body, {"endgeneration"}, end));
      TTFT_RETURN_IF_ERROR(ExpectBlockEnd());
    } else if (tag.text.rfind("end", 0) == 0 || tag.text == "elif" || tag.text == "else") {
      return Error(pos, fmt::format("unexpected '{}'", tag.text));
    } else {
      return Error(pos, fmt::format("unsupported tag '{}' (docs/template.md lists the supported "
                                    "tags)",
                                    tag.text));
    }
    --depth_;
    body.push_back(std::move(s));
    return Status::Ok();
  }

  ExprPtr Node(Expr::Kind k, SourcePos p) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->pos = p;
    return e;
  }

  Result<ExprPtr> ParseTuple(bool condexpr) {
    const SourcePos p = Cur().pos;
    TTFT_ASSIGN_OR_RETURN(ExprPtr first, ParseExpression(condexpr));
    if (!IsOp(",")) return first;
    ExprPtr t = Node(Expr::Kind::kTuple, p);
    t->args.push_back(std::move(first));
    while (IsOp(",")) {
      Next();
      if (Cur().type == Tok::kVarEnd || Cur().type == Tok::kBlockEnd || IsOp(")")) break;
      TTFT_ASSIGN_OR_RETURN(ExprPtr e, ParseExpression(condexpr));
      t->args.push_back(std::move(e));
    }
    return t;
  }

  Result<ExprPtr> ParseExpression(bool condexpr) {
    if (++edepth_ > 200) return ErrorHere("expression nested deeper than 200");
    TTFT_ASSIGN_OR_RETURN(ExprPtr e, ParseOr());
    while (condexpr && IsName("if")) {
      const SourcePos p = Cur().pos;
      Next();
      ExprPtr c = Node(Expr::Kind::kCond, p);
      TTFT_ASSIGN_OR_RETURN(c->a, ParseOr());
      c->b = std::move(e);
      if (IsName("else")) {
        Next();
        TTFT_ASSIGN_OR_RETURN(c->c, ParseExpression(true));
      }
      e = std::move(c);
    }
    --edepth_;
    return e;
  }

  Result<ExprPtr> ParseOr() {
    TTFT_ASSIGN_OR_RETURN(ExprPtr l, ParseAnd());
    while (IsName("or")) {
      ExprPtr n = Node(Expr::Kind::kOr, Cur().pos);
      Next();
      n->a = std::move(l);
      TTFT_ASSIGN_OR_RETURN(n->b, ParseAnd());
      l = std::move(n);
    }
    return l;
  }
  Result<ExprPtr> ParseAnd() {
    TTFT_ASSIGN_OR_RETURN(ExprPtr l, ParseNot());
    while (IsName("and")) {
      ExprPtr n = Node(Expr::Kind::kAnd, Cur().pos);
      Next();
      n->a = std::move(l);
      TTFT_ASSIGN_OR_RETURN(n->b, ParseNot());
      l = std::move(n);
    }
    return l;
  }
  Result<ExprPtr> ParseNot() {
    if (IsName("not")) {
      ExprPtr n = Node(Expr::Kind::kNot, Cur().pos);
      Next();
      if (++edepth_ > 200) return ErrorHere("expression nested deeper than 200");
      TTFT_ASSIGN_OR_RETURN(n->a, ParseNot());
      --edepth_;
      return n;
    }
    return ParseCompare();
  }
  Result<ExprPtr> ParseCompare() {
    TTFT_ASSIGN_OR_RETURN(ExprPtr l, ParseMath1());
    ExprPtr result;
    while (true) {
      std::string op;
      const SourcePos p = Cur().pos;
      if (Cur().type == Tok::kOp &&
          (Cur().text == "==" || Cur().text == "!=" || Cur().text == "<" || Cur().text == ">" ||
           Cur().text == "<=" || Cur().text == ">=")) {
        op = Cur().text;
        Next();
      } else if (IsName("in")) {
        op = "in";
        Next();
      } else if (IsName("not") && Peek().type == Tok::kName && Peek().text == "in") {
        op = "not in";
        Next();
        Next();
      } else {
        break;
      }
      TTFT_ASSIGN_OR_RETURN(ExprPtr r, ParseMath1());
      ExprPtr c = Node(Expr::Kind::kCompare, p);
      c->name = op;
      // Chains (a < b < c) become (a < b) and (b < c); b is parsed once and shared by
      // re-parsing positions is not needed: the right operand is evaluated twice.
      if (result) {
        c->a = CloneRef(*l);
      } else {
        c->a = std::move(l);
      }
      l = CloneRef(*r);
      c->b = std::move(r);
      if (result) {
        ExprPtr a = Node(Expr::Kind::kAnd, p);
        a->a = std::move(result);
        a->b = std::move(c);
        result = std::move(a);
      } else {
        result = std::move(c);
      }
    }
    return result ? std::move(result) : std::move(l);
  }
  // A deep copy (compare chains need the middle operand twice).
  static ExprPtr CloneRef(const Expr& e) {
    auto c = std::make_unique<Expr>();
    c->kind = e.kind;
    c->pos = e.pos;
    c->value = e.value;
    c->name = e.name;
    c->negated = e.negated;
    if (e.a) c->a = CloneRef(*e.a);
    if (e.b) c->b = CloneRef(*e.b);
    if (e.c) c->c = CloneRef(*e.c);
    if (e.d) c->d = CloneRef(*e.d);
    for (const auto& x : e.args) c->args.push_back(x ? CloneRef(*x) : nullptr);
    for (const auto& [k, x] : e.kwargs) c->kwargs.emplace_back(k, CloneRef(*x));
    return c;
  }
  Result<ExprPtr> ParseMath1() {
    TTFT_ASSIGN_OR_RETURN(ExprPtr l, ParseConcat());
    while (IsOp("+") || IsOp("-")) {
      ExprPtr n = Node(Expr::Kind::kBinary, Cur().pos);
      n->name = Cur().text;
      Next();
      n->a = std::move(l);
      TTFT_ASSIGN_OR_RETURN(n->b, ParseConcat());
      l = std::move(n);
    }
    return l;
  }
  Result<ExprPtr> ParseConcat() {
    TTFT_ASSIGN_OR_RETURN(ExprPtr l, ParseMath2());
    while (IsOp("~")) {
      ExprPtr n = Node(Expr::Kind::kBinary, Cur().pos);
      n->name = "~";
      Next();
      n->a = std::move(l);
      TTFT_ASSIGN_OR_RETURN(n->b, ParseMath2());
      l = std::move(n);
    }
    return l;
  }
  Result<ExprPtr> ParseMath2() {
    TTFT_ASSIGN_OR_RETURN(ExprPtr l, ParsePow());
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      ExprPtr n = Node(Expr::Kind::kBinary, Cur().pos);
      n->name = Cur().text;
      Next();
      n->a = std::move(l);
      TTFT_ASSIGN_OR_RETURN(n->b, ParsePow());
      l = std::move(n);
    }
    return l;
  }
  Result<ExprPtr> ParsePow() {
    TTFT_ASSIGN_OR_RETURN(ExprPtr l, ParseUnary(true));
    while (IsOp("**")) {
      ExprPtr n = Node(Expr::Kind::kBinary, Cur().pos);
      n->name = "**";
      Next();
      n->a = std::move(l);
      TTFT_ASSIGN_OR_RETURN(n->b, ParseUnary(true));
      l = std::move(n);
    }
    return l;
  }
  Result<ExprPtr> ParseUnary(bool with_filter) {
    if (++edepth_ > 200) return ErrorHere("expression nested deeper than 200");
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      node = Node(IsOp("-") ? Expr::Kind::kNeg : Expr::Kind::kPos, Cur().pos);
      Next();
      TTFT_ASSIGN_OR_RETURN(node->a, ParseUnary(false));
    } else {
      TTFT_ASSIGN_OR_RETURN(node, ParsePrimary());
    }
    TTFT_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
    if (with_filter) {
      TTFT_ASSIGN_OR_RETURN(node, ParseFilterExpr(std::move(node)));
    }
    --edepth_;
    return node;
  }

  Result<ExprPtr> ParsePrimary() {
    const Token t = Cur();
    switch (t.type) {
      case Tok::kName: {
        Next();
        ExprPtr e = Node(Expr::Kind::kLiteral, t.pos);
        if (t.text == "true" || t.text == "True") {
          e->value = Value(true);
        } else if (t.text == "false" || t.text == "False") {
          e->value = Value(false);
        } else if (t.text == "none" || t.text == "None") {
          e->value = Value::None();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = t.text;
          uses_.push_back({TemplateUse::Kind::kVariable, t.text, t.pos, ""});
        }
        return e;
      }
      case Tok::kString: {
        std::string s;
        while (Cur().type == Tok::kString) {
          s += Cur().text;
          Next();
        }
        ExprPtr e = Node(Expr::Kind::kLiteral, t.pos);
        e->value = Value(std::move(s));
        return e;
      }
      case Tok::kInt:
      case Tok::kFloat: {
        Next();
        ExprPtr e = Node(Expr::Kind::kLiteral, t.pos);
        if (t.type == Tok::kInt) {
          errno = 0;
          const long long v = std::strtoll(t.text.c_str(), nullptr, 10);
          if (errno == ERANGE) return Error(t.pos, "integer literal out of range");
          e->value = Value(static_cast<int64_t>(v));
        } else {
          e->value = Value(std::strtod(t.text.c_str(), nullptr));
        }
        return e;
      }
      case Tok::kOp: {
        if (t.text == "(") {
          Next();
          if (IsOp(")")) {
            Next();
            return Node(Expr::Kind::kTuple, t.pos);
          }
          TTFT_ASSIGN_OR_RETURN(ExprPtr e, ParseTuple(true));
          TTFT_RETURN_IF_ERROR(Expect(")"));
          return e;
        }
        if (t.text == "[") {
          Next();
          ExprPtr e = Node(Expr::Kind::kList, t.pos);
          while (!IsOp("]")) {
            if (!e->args.empty()) TTFT_RETURN_IF_ERROR(Expect(","));
            if (IsOp("]")) break;
            TTFT_ASSIGN_OR_RETURN(ExprPtr x, ParseExpression(true));
            e->args.push_back(std::move(x));
          }
          Next();
          return e;
        }
        if (t.text == "{") {
          Next();
          ExprPtr e = Node(Expr::Kind::kDict, t.pos);
          while (!IsOp("}")) {
            if (!e->args.empty()) TTFT_RETURN_IF_ERROR(Expect(","));
            if (IsOp("}")) break;
            TTFT_ASSIGN_OR_RETURN(ExprPtr k, ParseExpression(true));
            TTFT_RETURN_IF_ERROR(Expect(":"));
            TTFT_ASSIGN_OR_RETURN(ExprPtr v, ParseExpression(true));
            e->args.push_back(std::move(k));
            e->args.push_back(std::move(v));
          }
          Next();
          return e;
        }
        break;
      }
      default: break;
    }
    return Error(t.pos, fmt::format("unexpected {}", Describe(t)));
  }

  Result<ExprPtr> ParsePostfix(ExprPtr node) {
    while (true) {
      if (IsOp(".")) {
        const SourcePos p = Cur().pos;
        Next();
        ExprPtr e;
        if (Cur().type == Tok::kName) {
          e = Node(Expr::Kind::kAttr, p);
          e->name = Cur().text;
        } else if (Cur().type == Tok::kInt) {
          e = Node(Expr::Kind::kItem, p);
          e->b = Node(Expr::Kind::kLiteral, p);
          e->b->value = Value(static_cast<int64_t>(std::strtoll(Cur().text.c_str(), nullptr, 10)));
        } else {
          return ErrorHere("expected an attribute name after '.'");
        }
        Next();
        e->a = std::move(node);
        node = std::move(e);
      } else if (IsOp("[")) {
        const SourcePos p = Cur().pos;
        Next();
        ExprPtr parts[3];
        bool slice = false;
        for (int k = 0; k < 3; ++k) {
          if (!IsOp(":") && !IsOp("]")) {
            TTFT_ASSIGN_OR_RETURN(parts[k], ParseExpression(true));
          }
          if (IsOp(":") && k < 2) {
            slice = true;
            Next();
            continue;
          }
          break;
        }
        TTFT_RETURN_IF_ERROR(Expect("]"));
        ExprPtr e = Node(slice ? Expr::Kind::kSlice : Expr::Kind::kItem, p);
        e->a = std::move(node);
        if (!slice && !parts[0]) return Error(p, "expected an index inside '[]'");
        e->b = std::move(parts[0]);
        e->c = std::move(parts[1]);
        e->d = std::move(parts[2]);
        node = std::move(e);
      } else if (IsOp("(")) {
        ExprPtr e = Node(Expr::Kind::kCall, Cur().pos);
        TTFT_RETURN_IF_ERROR(ParseArgs(*e));
        if (node->kind == Expr::Kind::kName &&
            (node->name == "strftime_now" || node->name == "now")) {
          uses_.push_back({TemplateUse::Kind::kClockCall, node->name, node->pos, ""});
        }
        if (node->kind == Expr::Kind::kAttr && node->name == "items") {
          uses_.push_back({TemplateUse::Kind::kItems, "items", node->pos, RootName(*node->a)});
        }
        e->a = std::move(node);
        node = std::move(e);
      } else {
        return node;
      }
    }
  }

  static std::string RootName(const Expr& e) {
    const Expr* x = &e;
    while (x->kind == Expr::Kind::kAttr || x->kind == Expr::Kind::kItem ||
           x->kind == Expr::Kind::kSlice || x->kind == Expr::Kind::kFilter) {
      x = x->a.get();
    }
    return x->kind == Expr::Kind::kName ? x->name : "";
  }

  Status ParseArgs(Expr& e) {
    TTFT_RETURN_IF_ERROR(Expect("("));
    bool first = true;
    while (!IsOp(")")) {
      if (!first) TTFT_RETURN_IF_ERROR(Expect(","));
      first = false;
      if (IsOp(")")) break;
      if (IsOp("*") || IsOp("**")) return ErrorHere("unsupported: *args and **kwargs in calls");
      if (Cur().type == Tok::kName && Peek().type == Tok::kOp && Peek().text == "=") {
        std::string k = Cur().text;
        Next();
        Next();
        TTFT_ASSIGN_OR_RETURN(ExprPtr v, ParseExpression(true));
        e.kwargs.emplace_back(std::move(k), std::move(v));
      } else {
        if (!e.kwargs.empty()) return ErrorHere("positional argument follows keyword argument");
        TTFT_ASSIGN_OR_RETURN(ExprPtr v, ParseExpression(true));
        e.args.push_back(std::move(v));
      }
    }
    Next();
    return Status::Ok();
  }

  Result<ExprPtr> ParseFilterExpr(ExprPtr node) {
    while (true) {
      if (IsOp("|")) {
        Next();
        if (Cur().type != Tok::kName) return ErrorHere("expected a filter name after '|'");
        ExprPtr f = Node(Expr::Kind::kFilter, Cur().pos);
        f->name = Cur().text;
        Next();
        while (IsOp(".")) {  // dotted filter names are not supported
          return Error(f->pos, "unsupported: dotted filter names");
        }
        if (!kFilters.count(f->name)) {
          return Error(f->pos, fmt::format("unsupported filter '{}' (docs/template.md lists "
                                           "the supported filters)",
                                           f->name));
        }
        if (IsOp("(")) TTFT_RETURN_IF_ERROR(ParseArgs(*f));
        if (f->name == "tojson") {
          uses_.push_back({TemplateUse::Kind::kTojson, "tojson", f->pos, RootName(*node)});
        } else if (f->name == "items") {
          uses_.push_back({TemplateUse::Kind::kItems, "items", f->pos, RootName(*node)});
        }
        f->a = std::move(node);
        node = std::move(f);
      } else if (IsName("is")) {
        Next();
        ExprPtr t = Node(Expr::Kind::kTest, Cur().pos);
        if (IsName("not")) {
          t->negated = true;
          Next();
        }
        if (Cur().type != Tok::kName) return ErrorHere("expected a test name after 'is'");
        t->name = Cur().text;
        t->pos = Cur().pos;
        if (t->name == "none" || t->name == "true" || t->name == "false") {
          // lowercase names of the constants are tests here
        }
        if (!kTests.count(t->name)) {
          return ErrorHere(
              fmt::format("unsupported test '{}' (docs/template.md lists the "
                          "supported tests)",
                          t->name));
        }
        Next();
        if (IsOp("(")) {
          TTFT_RETURN_IF_ERROR(ParseArgs(*t));
        } else if ((Cur().type == Tok::kName || Cur().type == Tok::kString ||
                    Cur().type == Tok::kInt || Cur().type == Tok::kFloat || IsOp("[") ||
                    IsOp("{")) &&
                   !IsName("else") && !IsName("or") && !IsName("and") && !IsName("if") &&
                   !IsName("in") && !IsName("is") && !IsName("not")) {
          TTFT_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
          TTFT_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
          t->args.push_back(std::move(arg));
        }
        t->a = std::move(node);
        node = std::move(t);
      } else if (IsOp("(")) {
        ExprPtr e = Node(Expr::Kind::kCall, Cur().pos);
        TTFT_RETURN_IF_ERROR(ParseArgs(*e));
        e->a = std::move(node);
        node = std::move(e);
      } else {
        return node;
      }
    }
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  std::string name_;
  std::vector<TemplateUse>& uses_;
  int depth_ = 0;
  int edepth_ = 0;
};

// jinja2's newline handling: \r\n, \r and \n become \n, and one trailing line break is
// dropped (keep_trailing_newline=False).
std::string NormalizeNewlines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace
}  // namespace tmpl

Template::Template(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Result<Template> Template::Parse(std::string_view source, std::string_view name) {
  auto impl = std::make_shared<Impl>();
  impl->name = std::string(name);
  tmpl::Lexer lexer(tmpl::NormalizeNewlines(source), name);
  TTFT_ASSIGN_OR_RETURN(std::vector<tmpl::Token> toks, lexer.Run());
  tmpl::Parser parser(std::move(toks), name, impl->uses);
  TTFT_ASSIGN_OR_RETURN(impl->body, parser.ParseTemplate());
  return Template(std::move(impl));
}

const std::vector<TemplateUse>& Template::uses() const { return impl_->uses; }
const std::string& Template::name() const { return impl_->name; }

}  // namespace ttft
