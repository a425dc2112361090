// The renderer: evaluates the syntax tree with jinja2's semantics (Python values,
// per-iteration loop scopes, default Undefined), tracking where output bytes came from.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <limits>
#include <unordered_map>

#include "template/internal.h"
#include "ttft/template.h"

namespace ttft {
namespace tmpl {
namespace {

// True when `v` is the namespace `ns` or holds it in a list, dict or namespace. Namespaces
// are the only values a template mutates, so refusing such an assignment keeps every value
// acyclic: the recursive walks (tojson, comparison, source tracking) would otherwise
// recurse forever (the template fuzzer found `{% set ns.n = ns %}`). Terminates because
// `v` is acyclic by this invariant.
bool HoldsNamespace(const Value& v, const Value& ns) {
  if (v.is_namespace() && &v.items() == &ns.items()) return true;
  if (v.is_list()) {
    for (const Value& e : v.list()) {
      if (HoldsNamespace(e, ns)) return true;
    }
  } else if (v.is_dict()) {
    for (const auto& [k, e] : v.items()) {
      if (HoldsNamespace(e, ns)) return true;
    }
  }
  return false;
}

struct Builtin : TemplateCallable {
  enum class Kind : uint8_t { kRaise, kStrftime, kNamespace, kRange, kDict, kMacro, kMethod };
  Kind kind = Kind::kRaise;
  const Stmt* macro = nullptr;
  Value self;  // kMethod: the bound object
};

std::shared_ptr<const TemplateCallable> MakeBuiltin(Builtin::Kind k, std::string name) {
  auto b = std::make_shared<Builtin>();
  b->kind = k;
  b->name = std::move(name);
  return b;
}

const char* TypeName(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "Undefined";
    case Value::Kind::kNone: return "NoneType";
    case Value::Kind::kBool: return "bool";
    case Value::Kind::kInt: return "int";
    case Value::Kind::kFloat: return "float";
    case Value::Kind::kString: return "str";
    case Value::Kind::kList: return v.is_tuple() ? "tuple" : "list";
    case Value::Kind::kDict: return v.is_namespace() ? "Namespace" : "dict";
    case Value::Kind::kCallable: return "function";
  }
  return "?";
}

bool IsIntLike(const Value& v) {
  return v.kind() == Value::Kind::kInt || v.kind() == Value::Kind::kBool;
}

bool Equal(const Value& a, const Value& b) {
  if (a.is_number() || a.kind() == Value::Kind::kBool) {
    if (!(b.is_number() || b.kind() == Value::Kind::kBool)) return false;
    if (IsIntLike(a) && IsIntLike(b)) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.str() == b.str();
    case Value::Kind::kList: {
      if (a.is_tuple() != b.is_tuple() || a.list().size() != b.list().size()) return false;
      for (size_t i = 0; i < a.list().size(); ++i) {
        if (!Equal(a.list()[i], b.list()[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (a.is_namespace() || b.is_namespace()) return &a.items() == &b.items();
      if (a.items().size() != b.items().size()) return false;
      for (const auto& [k, v] : a.items()) {
        const Value* o = b.Find(k);
        if (o == nullptr || !Equal(v, *o)) return false;
      }
      return true;
    }
    case Value::Kind::kCallable: return &a.callable() == &b.callable();
    default: return false;
  }
}

// Slices [start:stop:step] of a sequence of n elements (Python's slice.indices).
std::vector<size_t> SliceIndices(int64_t n, const Value* start, const Value* stop,
                                 const Value* step) {
  int64_t st = step && !step->is_none() ? step->as_int() : 1;
  std::vector<size_t> out;
  if (st == 0) return out;
  auto clamp = [&](const Value* v, int64_t def, bool is_start) {
    if (v == nullptr || v->is_none()) return def;
    int64_t x = v->as_int();
    if (x < 0) x += n;
    if (st > 0) return std::clamp<int64_t>(x, 0, n);
    (void)is_start;
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t b = clamp(start, st > 0 ? 0 : n - 1, true);
  const int64_t e = clamp(stop, st > 0 ? n : -1, false);
  for (int64_t i = b; st > 0 ? i < e : i > e;) {
    out.push_back(static_cast<size_t>(i));
    if (__builtin_add_overflow(i, st, &i)) break;  // past the end either way
  }
  return out;
}

class Renderer {
 public:
  Renderer(const Template::Impl& impl, const Value& globals, const RenderOptions& opt)
      : impl_(impl), globals_(globals), opt_(opt) {
    frames_.emplace_back();
    budget_.left = opt.max_built_bytes;
  }

  Result<RenderResult> Run() {
    TBuf out(&budget_);
    out_ = &out;
    TTFT_RETURN_IF_ERROR(ExecBody(impl_.body));
    RenderResult r;
    r.text = std::move(out.text());
    r.spans = std::move(out.spans());
    for (const TaintSpan& s : r.spans) {
      auto it = std::upper_bound(emits_.begin(), emits_.end(), s.begin,
                                 [](uint32_t off, const auto& e) { return off < e.first; });
      r.span_pos.push_back(it == emits_.begin() ? SourcePos{} : std::prev(it)->second);
    }
    return r;
  }

 private:
  using Frame = std::vector<std::pair<std::string, Value>>;

  Status Error(const SourcePos& p, std::string_view what) const {
    return Status::Invalid(fmt::format("{}:{}:{}: {}", impl_.name, p.line, p.column, what));
  }
  Status UndefinedError(const SourcePos& p, const Value& v) const {
    return Error(p, v.undefined_name().find(' ') == std::string::npos
                        ? fmt::format("'{}' is undefined", v.undefined_name())
                        : v.undefined_name());
  }

  // ---- the render's budget (ByteBudget) ----------------------------------------------
  Status BudgetError(const SourcePos& p) const {
    return Error(p, fmt::format("the template built more than {} bytes of strings and lists "
                                "(RenderOptions::max_built_bytes): a runaway loop?",
                                opt_.max_built_bytes));
  }
  Status Charge(size_t bytes, const SourcePos& p) {
    return budget_.Take(bytes) ? Status::Ok() : BudgetError(p);
  }
  Status ChargeItems(size_t n, const SourcePos& p) {
    return n > opt_.max_built_bytes / sizeof(Value) ? BudgetError(p) : Charge(n * sizeof(Value), p);
  }
  // The string `b` built; an error when it overflowed (too long, or the budget spent).
  Result<Value> Built(TBuf& b, const SourcePos& p) const {
    if (b.overflowed()) {
      if (budget_.exhausted) return BudgetError(p);
      return Error(p, fmt::format("a string longer than {} bytes", kMaxStringBytes));
    }
    return b.Build();
  }
  // CodePointOffsets(s), charged to the budget (four bytes per code point).
  Result<std::vector<uint32_t>> Offsets(const std::string& s, const SourcePos& p) {
    TTFT_RETURN_IF_ERROR(Charge(4 * (s.size() + 1), p));
    return CodePointOffsets(s);
  }

  // Python's ints are unbounded; templates are rendered with 64-bit ints, and a result
  // that does not fit is an error rather than a wrapped number.
  Result<Value> IntOrOverflow(bool overflow, int64_t r, const SourcePos& p) const {
    if (overflow) return Error(p, "integer overflow (ttft renders 64-bit integers)");
    return Value(r);
  }
  // int(x) of a finite float: truncates; outside the 64-bit range is an overflow error.
  Result<int64_t> DoubleToInt(double d, const SourcePos& p) const {
    const double t = std::trunc(d);
    // 2^63 is exact in a double; every double below it and at or above -2^63 fits.
    if (!(t >= -0x1p63 && t < 0x1p63))
      return Error(p, "integer overflow (ttft renders 64-bit integers)");
    return static_cast<int64_t>(t);
  }
  static constexpr int kMaxPrecision = 1000;  // %.Nf: N above this is refused

  // ---- scopes ------------------------------------------------------------------------
  Value Lookup(const std::string& name) const {
    for (size_t i = frames_.size(); i-- > base_;) {
      for (const auto& [k, v] : frames_[i]) {
        if (k == name) return v;
      }
    }
    if (base_ > 0) {
      for (const auto& [k, v] : frames_[0]) {
        if (k == name) return v;
      }
    }
    if (const Value* v = globals_.Find(name)) return *v;
    static const std::unordered_map<std::string, Builtin::Kind> kGlobals = {
        {"raise_exception", Builtin::Kind::kRaise},
        {"strftime_now", Builtin::Kind::kStrftime},
        {"namespace", Builtin::Kind::kNamespace},
        {"range", Builtin::Kind::kRange},
        {"dict", Builtin::Kind::kDict}};
    if (auto it = kGlobals.find(name); it != kGlobals.end()) {
      return Value::Callable(MakeBuiltin(it->second, name));
    }
    return Value::Undefined(name);
  }
  void Assign(Frame& f, const std::string& name, Value v) {
    for (auto& [k, old] : f) {
      if (k == name) {
        old = std::move(v);
        return;
      }
    }
    f.emplace_back(name, std::move(v));
  }

  // ---- statements --------------------------------------------------------------------
  Status ExecBody(const Body& body) {
    for (const auto& s : body) {
      TTFT_RETURN_IF_ERROR(Exec(*s));
      if (break_ || continue_) return Status::Ok();
    }
    return Status::Ok();
  }

  Status Emit(const Value& v, const SourcePos& pos) {
    const uint32_t begin = static_cast<uint32_t>(out_->size());
    const size_t nspans = out_->spans().size();
    if (v.is_string()) {
      out_->AddString(v);
    } else {
      out_->Add(v.ToPython(), v.FirstSource());
    }
    if (out_->spans().size() != nspans || (!out_->spans().empty() && v.FirstSource() >= 0)) {
      if (depth_ == 0) emits_.emplace_back(begin, pos);
    }
    if (out_->overflowed()) return Built(*out_, pos).status();
    if (out_->size() > opt_.max_output_bytes) {
      return Error(pos, fmt::format("output larger than {} bytes", opt_.max_output_bytes));
    }
    return Status::Ok();
  }

  Status Exec(const Stmt& s) {
    switch (s.kind) {
      case Stmt::Kind::kText: out_->Add(s.text, -1); return Status::Ok();
      case Stmt::Kind::kOutput: {
        TTFT_ASSIGN_OR_RETURN(Value v, Eval(*s.expr));
        if (v.is_undefined() && opt_.strict_undefined) return UndefinedError(s.expr->pos, v);
        return Emit(v, s.pos);
      }
      case Stmt::Kind::kIf: {
        for (const auto& [cond, body] : s.branches) {
          TTFT_ASSIGN_OR_RETURN(Value c, Eval(*cond));
          if (c.Truthy()) return ExecBody(body);
        }
        return ExecBody(s.else_body);
      }
      case Stmt::Kind::kFor: return ExecFor(s);
      case Stmt::Kind::kSet: {
        TTFT_ASSIGN_OR_RETURN(Value v, Eval(*s.expr));
        if (!s.attr.empty()) {
          Value ns = Lookup(s.targets[0]);
          if (!ns.is_namespace()) {
            return Error(s.pos, fmt::format("cannot assign attribute on non-namespace object "
                                            "'{}'",
                                            s.targets[0]));
          }
          if (HoldsNamespace(v, ns)) {
            return Error(s.pos, fmt::format("'{}.{}' would hold '{}' itself (a cycle)",
                                            s.targets[0], s.attr, s.targets[0]));
          }
          ns.Set(s.attr, std::move(v));
          return Status::Ok();
        }
        Assign(frames_.back(), s.targets[0], std::move(v));
        return Status::Ok();
      }
      case Stmt::Kind::kSetBlock: {
        TBuf buf(&budget_);
        TBuf* saved = out_;
        out_ = &buf;
        ++depth_;
        Status st = ExecBody(s.body);
        --depth_;
        out_ = saved;
        TTFT_RETURN_IF_ERROR(st);
        TTFT_ASSIGN_OR_RETURN(Value v, Built(buf, s.pos));
        Assign(frames_.back(), s.targets[0], std::move(v));
        return Status::Ok();
      }
      case Stmt::Kind::kMacro: {
        auto b = std::make_shared<Builtin>();
        b->kind = Builtin::Kind::kMacro;
        b->name = s.targets[0];
        b->macro = &s;
        Assign(frames_.back(), s.targets[0], Value::Callable(std::move(b)));
        return Status::Ok();
      }
      case Stmt::Kind::kBreak: break_ = true; return Status::Ok();
      case Stmt::Kind::kContinue: continue_ = true; return Status::Ok();
      case Stmt::Kind::kScope: return ExecBody(s.body);
    }
    return Status::Ok();
  }

  Result<std::vector<Value>> Iterate(const Value& v, const SourcePos& pos) {
    switch (v.kind()) {
      case Value::Kind::kUndefined: return std::vector<Value>{};
      case Value::Kind::kList:
        TTFT_RETURN_IF_ERROR(ChargeItems(v.list().size(), pos));
        return v.list();
      case Value::Kind::kDict: {
        if (v.is_namespace()) break;
        TTFT_RETURN_IF_ERROR(ChargeItems(v.items().size(), pos));
        std::vector<Value> keys;
        for (const auto& [k, e] : v.items()) {
          keys.push_back(v.source() >= 0 ? Value(k).Tagged(v.source()) : Value(k));
        }
        return keys;
      }
      case Value::Kind::kString: {
        std::vector<Value> chars;
        TTFT_ASSIGN_OR_RETURN(const std::vector<uint32_t> off, Offsets(v.str(), pos));
        TTFT_RETURN_IF_ERROR(ChargeItems(off.size() - 1, pos));
        for (size_t i = 0; i + 1 < off.size(); ++i) {
          TBuf b(&budget_);
          b.AddSub(v, off[i], off[i + 1]);
          TTFT_ASSIGN_OR_RETURN(Value c, Built(b, pos));
          chars.push_back(std::move(c));
        }
        return chars;
      }
      default: break;
    }
    return Error(pos, fmt::format("'{}' object is not iterable", TypeName(v)));
  }

  Status Bind(Frame& f, const std::vector<std::string>& targets, const Value& item,
              const SourcePos& pos) {
    if (targets.size() == 1) {
      Assign(f, targets[0], item);
      return Status::Ok();
    }
    if (!item.is_list() || item.list().size() != targets.size()) {
      return Error(pos, fmt::format("cannot unpack {} into {} loop variables", TypeName(item),
                                    targets.size()));
    }
    for (size_t i = 0; i < targets.size(); ++i) Assign(f, targets[i], item.list()[i]);
    return Status::Ok();
  }

  Status ExecFor(const Stmt& s) {
    TTFT_ASSIGN_OR_RETURN(Value seq, Eval(*s.expr));
    TTFT_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(seq, s.expr->pos));
    if (s.filter) {
      std::vector<Value> kept;
      for (Value& it : items) {
        frames_.emplace_back();
        Status st = Bind(frames_.back(), s.targets, it, s.pos);
        Result<Value> c = st.ok() ? Eval(*s.filter) : Result<Value>(st);
        frames_.pop_back();
        if (!c.ok()) return c.status();
        if (c->Truthy()) kept.push_back(std::move(it));
      }
      items = std::move(kept);
    }
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      if (++iterations_ > opt_.max_iterations) {
        return Error(s.pos, fmt::format("more than {} loop iterations", opt_.max_iterations));
      }
      Value loop = Value::Dict();
      loop.Set("index", Value(i + 1));
      loop.Set("index0", Value(i));
      loop.Set("revindex", Value(n - i));
      loop.Set("revindex0", Value(n - i - 1));
      loop.Set("first", Value(i == 0));
      loop.Set("last", Value(i == n - 1));
      loop.Set("length", Value(n));
      loop.Set("depth", Value(1));
      loop.Set("depth0", Value(0));
      if (i > 0) loop.Set("previtem", items[static_cast<size_t>(i - 1)]);
      if (i + 1 < n) loop.Set("nextitem", items[static_cast<size_t>(i + 1)]);
      frames_.emplace_back();
      Status st = Bind(frames_.back(), s.targets, items[static_cast<size_t>(i)], s.pos);
      if (st.ok()) {
        Assign(frames_.back(), "loop", std::move(loop));
        st = ExecBody(s.body);
      }
      frames_.pop_back();
      TTFT_RETURN_IF_ERROR(st);
      continue_ = false;
      if (break_) {
        break_ = false;
        break;
      }
    }
    if (n == 0) return ExecBody(s.else_body);
    return Status::Ok();
  }

  // ---- expressions -------------------------------------------------------------------
  Result<Value> GetAttr(const Value& obj, const std::string& name, const SourcePos& pos) {
    static const char* kDictMethods[] = {"items", "keys", "values", "get"};
    static const char* kStrMethods[] = {"strip",   "lstrip",     "rstrip",    "lower",
                                        "upper",   "startswith", "endswith",  "split",
                                        "replace", "title",      "capitalize"};
    if (obj.is_undefined()) return UndefinedError(pos, obj);
    if (obj.is_dict()) {
      if (!obj.is_namespace()) {
        for (const char* m : kDictMethods) {
          if (name == m) return Method(obj, name);
        }
      }
      if (const Value* v = obj.Find(name)) return *v;
      return Value::Undefined(fmt::format("'{}' has no attribute '{}'",
                                          obj.is_namespace() ? "Namespace" : "dict object", name));
    }
    if (obj.is_string()) {
      for (const char* m : kStrMethods) {
        if (name == m) return Method(obj, name);
      }
    }
    return Value::Undefined(
        fmt::format("'{}' has no attribute '{}'",
                    obj.is_none() ? "None" : std::string(TypeName(obj)) + " object", name));
  }
  static Value Method(const Value& self, const std::string& name) {
    auto b = std::make_shared<Builtin>();
    b->kind = Builtin::Kind::kMethod;
    b->name = name;
    b->self = self;
    return Value::Callable(std::move(b));
  }

  Result<Value> GetItem(const Value& obj, const Value& key, const SourcePos& pos) {
    if (obj.is_undefined()) return UndefinedError(pos, obj);
    if (obj.is_list() && IsIntLike(key)) {
      int64_t i = key.as_int();
      const auto n = static_cast<int64_t>(obj.list().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.list()[static_cast<size_t>(i)];
      return Value::Undefined(
          fmt::format("{} object has no element {}", TypeName(obj), key.as_int()));
    }
    if (obj.is_string() && IsIntLike(key)) {
      TTFT_ASSIGN_OR_RETURN(const std::vector<uint32_t> off, Offsets(obj.str(), pos));
      int64_t i = key.as_int();
      const auto n = static_cast<int64_t>(off.size()) - 1;
      if (i < 0) i += n;
      if (i >= 0 && i < n) {
        TBuf b(&budget_);
        b.AddSub(obj, off[static_cast<size_t>(i)], off[static_cast<size_t>(i) + 1]);
        return Built(b, pos);
      }
      return Value::Undefined(fmt::format("str object has no element {}", key.as_int()));
    }
    if (obj.is_dict() && key.is_string()) {
      if (const Value* v = obj.Find(key.str())) return *v;
      return GetAttr(obj, key.str(), pos);
    }
    if (key.is_string()) return GetAttr(obj, key.str(), pos);
    return Value::Undefined(fmt::format("{} object has no element {}", TypeName(obj), key.Repr()));
  }

  Result<Value> Slice(const Value& obj, const Value* a, const Value* b, const Value* c,
                      const SourcePos& pos) {
    for (const Value* v : {a, b, c}) {
      if (v != nullptr && !v->is_none() && !IsIntLike(*v)) {
        return Error(pos, "slice indices must be integers or None");
      }
    }
    if (c != nullptr && !c->is_none() && c->as_int() == 0) {
      return Error(pos, "slice step cannot be zero");
    }
    if (obj.is_list()) {
      std::vector<Value> out;
      for (size_t i : SliceIndices(static_cast<int64_t>(obj.list().size()), a, b, c)) {
        out.push_back(obj.list()[i]);
      }
      return Value::List(std::move(out), obj.is_tuple());
    }
    if (obj.is_string()) {
      TTFT_ASSIGN_OR_RETURN(const std::vector<uint32_t> off, Offsets(obj.str(), pos));
      TBuf out(&budget_);
      for (size_t i : SliceIndices(static_cast<int64_t>(off.size()) - 1, a, b, c)) {
        out.AddSub(obj, off[i], off[i + 1]);
      }
      return Built(out, pos);
    }
    if (obj.is_undefined()) return UndefinedError(pos, obj);
    return Error(pos, fmt::format("'{}' object is not subscriptable", TypeName(obj)));
  }

  Result<Value> Eval(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: return Lookup(e.name);
      case Expr::Kind::kAttr: {
        TTFT_ASSIGN_OR_RETURN(Value o, Eval(*e.a));
        return GetAttr(o, e.name, e.pos);
      }
      case Expr::Kind::kItem: {
        TTFT_ASSIGN_OR_RETURN(Value o, Eval(*e.a));
        TTFT_ASSIGN_OR_RETURN(Value k, Eval(*e.b));
        return GetItem(o, k, e.pos);
      }
      case Expr::Kind::kSlice: {
        TTFT_ASSIGN_OR_RETURN(Value o, Eval(*e.a));
        Value parts[3];
        const Expr* exprs[3] = {e.b.get(), e.c.get(), e.d.get()};
        for (int k = 0; k < 3; ++k) {
          if (exprs[k]) {
            TTFT_ASSIGN_OR_RETURN(parts[k], Eval(*exprs[k]));
          }
        }
        return Slice(o, exprs[0] ? &parts[0] : nullptr, exprs[1] ? &parts[1] : nullptr,
                     exprs[2] ? &parts[2] : nullptr, e.pos);
      }
      case Expr::Kind::kCall: return EvalCall(e);
      case Expr::Kind::kFilter: return EvalFilter(e);
      case Expr::Kind::kTest: {
        TTFT_ASSIGN_OR_RETURN(Value v, Eval(*e.a));
        std::vector<Value> args;
        for (const auto& a : e.args) {
          TTFT_ASSIGN_OR_RETURN(Value x, Eval(*a));
          args.push_back(std::move(x));
        }
        TTFT_ASSIGN_OR_RETURN(bool r, Test(e.name, v, args, e.pos));
        return Value(r != e.negated);
      }
      case Expr::Kind::kNeg:
      case Expr::Kind::kPos: {
        TTFT_ASSIGN_OR_RETURN(Value v, Eval(*e.a));
        if (v.is_undefined()) return UndefinedError(e.pos, v);
        if (!v.is_number() && v.kind() != Value::Kind::kBool) {
          return Error(e.pos, fmt::format("bad operand type for unary {}: '{}'",
                                          e.kind == Expr::Kind::kNeg ? '-' : '+', TypeName(v)));
        }
        if (e.kind == Expr::Kind::kPos) return IsIntLike(v) ? Value(v.as_int()) : v;
        if (!IsIntLike(v)) return Value(-v.as_double());
        int64_t r = 0;
        const bool overflow = __builtin_sub_overflow(int64_t{0}, v.as_int(), &r);
        return IntOrOverflow(overflow, r, e.pos);
      }
      case Expr::Kind::kNot: {
        TTFT_ASSIGN_OR_RETURN(Value v, Eval(*e.a));
        return Value(!v.Truthy());
      }
      case Expr::Kind::kAnd: {
        TTFT_ASSIGN_OR_RETURN(Value a, Eval(*e.a));
        if (!a.Truthy()) return a;
        return Eval(*e.b);
      }
      case Expr::Kind::kOr: {
        TTFT_ASSIGN_OR_RETURN(Value a, Eval(*e.a));
        if (a.Truthy()) return a;
        return Eval(*e.b);
      }
      case Expr::Kind::kBinary: {
        TTFT_ASSIGN_OR_RETURN(Value a, Eval(*e.a));
        TTFT_ASSIGN_OR_RETURN(Value b, Eval(*e.b));
        return Binary(e.name, a, b, e.pos);
      }
      case Expr::Kind::kCompare: {
        TTFT_ASSIGN_OR_RETURN(Value a, Eval(*e.a));
        TTFT_ASSIGN_OR_RETURN(Value b, Eval(*e.b));
        return Compare(e.name, a, b, e.pos);
      }
      case Expr::Kind::kCond: {
        TTFT_ASSIGN_OR_RETURN(Value c, Eval(*e.a));
        if (c.Truthy()) return Eval(*e.b);
        if (e.c) return Eval(*e.c);
        return Value::Undefined("the inline if-expression on " + Where(e.pos) +
                                " evaluated to false and no else section was defined.");
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        TTFT_RETURN_IF_ERROR(ChargeItems(e.args.size(), e.pos));
        std::vector<Value> items;
        for (const auto& a : e.args) {
          TTFT_ASSIGN_OR_RETURN(Value x, Eval(*a));
          items.push_back(std::move(x));
        }
        return Value::List(std::move(items), e.kind == Expr::Kind::kTuple);
      }
      case Expr::Kind::kDict: {
        Value d = Value::Dict();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          TTFT_ASSIGN_OR_RETURN(Value k, Eval(*e.args[i]));
          TTFT_ASSIGN_OR_RETURN(Value v, Eval(*e.args[i + 1]));
          if (!k.is_string()) return Error(e.args[i]->pos, "unsupported: non-string dict keys");
          d.Set(k.str(), std::move(v));
        }
        return d;
      }
    }
    return Error(e.pos, "internal: unknown expression");
  }

  std::string Where(const SourcePos& p) const {
    return fmt::format("{}:{}:{}", impl_.name, p.line, p.column);
  }

  Result<Value> Binary(const std::string& op, const Value& a, const Value& b,
                       const SourcePos& pos) {
    if (op == "~") {
      TBuf out(&budget_);
      for (const Value* v : {&a, &b}) {
        if (v->is_string()) {
          out.AddString(*v);
        } else {
          out.Add(v->ToPython(), v->FirstSource());
        }
      }
      return Built(out, pos);
    }
    if (a.is_undefined()) return UndefinedError(pos, a);
    if (b.is_undefined()) return UndefinedError(pos, b);
    const bool na = a.is_number() || a.kind() == Value::Kind::kBool;
    const bool nb = b.is_number() || b.kind() == Value::Kind::kBool;
    auto type_error = [&] {
      return Error(pos, fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op,
                                    TypeName(a), TypeName(b)));
    };
    if (op == "+") {
      if (a.is_string() && b.is_string()) {
        TBuf out(&budget_);
        out.AddString(a);
        out.AddString(b);
        return Built(out, pos);
      }
      if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        TTFT_RETURN_IF_ERROR(ChargeItems(a.list().size() + b.list().size(), pos));
        std::vector<Value> items = a.list();
        items.insert(items.end(), b.list().begin(), b.list().end());
        return Value::List(std::move(items), a.is_tuple());
      }
      if (!na || !nb) {
        if (a.is_string() || b.is_string()) {
          return Error(pos, fmt::format("can only concatenate str (not \"{}\") to str",
                                        TypeName(a.is_string() ? b : a)));
        }
        return type_error();
      }
      if (IsIntLike(a) && IsIntLike(b)) {
        int64_t r = 0;
        const bool overflow = __builtin_add_overflow(a.as_int(), b.as_int(), &r);
        return IntOrOverflow(overflow, r, pos);
      }
      return Value(a.as_double() + b.as_double());
    }
    if (op == "*" && ((a.is_string() && IsIntLike(b)) || (IsIntLike(a) && b.is_string()))) {
      const Value& s = a.is_string() ? a : b;
      const int64_t k = (a.is_string() ? b : a).as_int();
      TBuf out(&budget_);
      if (k > 0 && !s.str().empty() &&
          static_cast<uint64_t>(k) > kMaxStringBytes / s.str().size()) {
        return Error(pos, fmt::format("a string longer than {} bytes", kMaxStringBytes));
      }
      for (int64_t i = 0; i < k && !out.overflowed() && !s.str().empty(); ++i) out.AddString(s);
      return Built(out, pos);
    }
    if (op == "%" && a.is_string()) return PercentFormat(a, b, pos);
    if (!na || !nb) return type_error();
    const bool ints = IsIntLike(a) && IsIntLike(b);
    if (op == "-" || op == "*") {
      if (!ints) {
        return Value(op == "-" ? a.as_double() - b.as_double() : a.as_double() * b.as_double());
      }
      int64_t r = 0;
      const bool overflow = op == "-" ? __builtin_sub_overflow(a.as_int(), b.as_int(), &r)
                                      : __builtin_mul_overflow(a.as_int(), b.as_int(), &r);
      return IntOrOverflow(overflow, r, pos);
    }
    if (op == "/") {
      if (b.as_double() == 0) return Error(pos, "division by zero");
      return Value(a.as_double() / b.as_double());
    }
    if (op == "//" || op == "%") {
      if (b.as_double() == 0) return Error(pos, "integer division or modulo by zero");
      if (ints) {
        // INT64_MIN // -1 is the one quotient that does not fit.
        if (a.as_int() == std::numeric_limits<int64_t>::min() && b.as_int() == -1) {
          return op == "//" ? IntOrOverflow(true, 0, pos) : Value(int64_t{0});
        }
        int64_t q = a.as_int() / b.as_int();
        int64_t r = a.as_int() % b.as_int();
        if (r != 0 && ((r < 0) != (b.as_int() < 0))) {
          --q;
          r += b.as_int();
        }
        return op == "//" ? Value(q) : Value(r);
      }
      const double q = std::floor(a.as_double() / b.as_double());
      return op == "//" ? Value(q) : Value(a.as_double() - q * b.as_double());
    }
    if (op == "**") {
      if (ints && b.as_int() >= 0) {
        // Square-and-multiply; |a| >= 2 overflows by exponent 64, so the loop is short.
        int64_t r = 1;
        int64_t base = a.as_int();
        bool overflow = false;
        for (int64_t e = b.as_int(); e > 0 && !overflow; e >>= 1) {
          if ((e & 1) != 0) overflow = __builtin_mul_overflow(r, base, &r);
          if (e > 1 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
        }
        return IntOrOverflow(overflow, r, pos);
      }
      return Value(std::pow(a.as_double(), b.as_double()));
    }
    return Error(pos, "internal: unknown operator " + op);
  }

  // Python's printf-style str % args: %s %r %d %i %f (with precision) and %%.
  Result<Value> PercentFormat(const Value& fmt_v, const Value& args, const SourcePos& pos) {
    std::vector<Value> list = args.is_tuple() ? args.list() : std::vector<Value>{args};
    size_t next = 0;
    TBuf out(&budget_);
    const std::string& f = fmt_v.str();
    for (size_t i = 0; i < f.size(); ++i) {
      if (f[i] != '%') {
        out.AddSub(fmt_v, i, i + 1);
        continue;
      }
      if (++i >= f.size()) return Error(pos, "incomplete format");
      int prec = -1;
      if (f[i] == '.') {
        prec = 0;
        while (++i < f.size() && std::isdigit(static_cast<unsigned char>(f[i]))) {
          prec = prec * 10 + (f[i] - '0');
          if (prec > kMaxPrecision) return Error(pos, "format precision too large");
        }
        if (i >= f.size()) return Error(pos, "incomplete format");
      }
      const char c = f[i];
      if (c == '%') {
        out.Add("%", -1);
        continue;
      }
      if (next >= list.size()) return Error(pos, "not enough arguments for format string");
      const Value& v = list[next++];
      if (c == 's') {
        if (v.is_string()) {
          out.AddString(v);
        } else {
          out.Add(v.ToPython(), v.FirstSource());
        }
      } else if (c == 'r') {
        out.Add(v.Repr(), v.FirstSource());
      } else if (c == 'd' || c == 'i') {
        if (!v.is_number() && v.kind() != Value::Kind::kBool) {
          return Error(
              pos, fmt::format("%{} format: a real number is required, not {}", c, TypeName(v)));
        }
        if (IsIntLike(v)) {
          out.Add(std::to_string(v.as_int()), v.FirstSource());
        } else {
          TTFT_ASSIGN_OR_RETURN(const int64_t x, DoubleToInt(v.as_double(), pos));
          out.Add(std::to_string(x), v.FirstSource());
        }
      } else if (c == 'f') {
        if (!v.is_number() && v.kind() != Value::Kind::kBool) {
          return Error(pos,
                       fmt::format("%f format: a real number is required, not {}", TypeName(v)));
        }
        out.Add(fmt::format("{:.{}f}", v.as_double(), prec < 0 ? 6 : prec), v.FirstSource());
      } else {
        return Error(pos, fmt::format("unsupported format character '{}'", c));
      }
    }
    if (next < list.size()) {
      return Error(pos, "not all arguments converted during string formatting");
    }
    return Built(out, pos);
  }

  Result<bool> Contains(const Value& container, const Value& item, const SourcePos& pos) {
    switch (container.kind()) {
      case Value::Kind::kUndefined: return false;
      case Value::Kind::kString:
        if (!item.is_string()) {
          return Error(pos, fmt::format("'in <string>' requires string as left operand, not {}",
                                        TypeName(item)));
        }
        return container.str().find(item.str()) != std::string::npos;
      case Value::Kind::kList:
        for (const Value& v : container.list()) {
          if (Equal(v, item)) return true;
        }
        return false;
      case Value::Kind::kDict:
        if (!item.is_string()) return false;
        return container.Find(item.str()) != nullptr;
      default:
        return Error(pos,
                     fmt::format("argument of type '{}' is not iterable", TypeName(container)));
    }
  }

  Result<bool> Less(const Value& a, const Value& b, const SourcePos& pos) {
    const bool na = a.is_number() || a.kind() == Value::Kind::kBool;
    const bool nb = b.is_number() || b.kind() == Value::Kind::kBool;
    if (na && nb) {
      if (IsIntLike(a) && IsIntLike(b)) return a.as_int() < b.as_int();
      return a.as_double() < b.as_double();
    }
    if (a.is_string() && b.is_string()) return a.str() < b.str();
    if (a.is_list() && b.is_list()) {
      const size_t n = std::min(a.list().size(), b.list().size());
      for (size_t i = 0; i < n; ++i) {
        if (!Equal(a.list()[i], b.list()[i])) return Less(a.list()[i], b.list()[i], pos);
      }
      return a.list().size() < b.list().size();
    }
    if (a.is_undefined()) return UndefinedError(pos, a);
    if (b.is_undefined()) return UndefinedError(pos, b);
    return Error(pos, fmt::format("'<' not supported between instances of '{}' and '{}'",
                                  TypeName(a), TypeName(b)));
  }

  Result<Value> Compare(const std::string& op, const Value& a, const Value& b,
                        const SourcePos& pos) {
    if (op == "==") return Value(Equal(a, b));
    if (op == "!=") return Value(!Equal(a, b));
    if (op == "in" || op == "not in") {
      TTFT_ASSIGN_OR_RETURN(bool r, Contains(b, a, pos));
      return Value(op == "in" ? r : !r);
    }
    if (op == "<")
      return Less(a, b, pos).ok() ? Value(*Less(a, b, pos))
                                  : Result<Value>(Less(a, b, pos).status());
    if (op == ">") {
      TTFT_ASSIGN_OR_RETURN(bool r, Less(b, a, pos));
      return Value(r);
    }
    TTFT_ASSIGN_OR_RETURN(bool lt, Less(op == "<=" ? a : b, op == "<=" ? b : a, pos));
    return Value(lt || Equal(a, b));
  }

  // ---- calls -------------------------------------------------------------------------
  struct Args {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
    const Value* Kw(std::string_view name) const {
      for (const auto& [k, v] : kw) {
        if (k == name) return &v;
      }
      return nullptr;
    }
    // Positional i or keyword `name`, or nullptr.
    const Value* Get(size_t i, std::string_view name) const {
      if (i < pos.size()) return &pos[i];
      return Kw(name);
    }
  };

  Result<Args> EvalArgs(const Expr& e) {
    Args a;
    for (const auto& x : e.args) {
      TTFT_ASSIGN_OR_RETURN(Value v, Eval(*x));
      a.pos.push_back(std::move(v));
    }
    for (const auto& [k, x] : e.kwargs) {
      TTFT_ASSIGN_OR_RETURN(Value v, Eval(*x));
      a.kw.emplace_back(k, std::move(v));
    }
    return a;
  }

  Result<Value> EvalCall(const Expr& e) {
    TTFT_ASSIGN_OR_RETURN(Value fn, Eval(*e.a));
    TTFT_ASSIGN_OR_RETURN(Args args, EvalArgs(e));
    if (fn.is_undefined()) return UndefinedError(e.pos, fn);
    if (fn.kind() != Value::Kind::kCallable) {
      return Error(e.pos, fmt::format("'{}' object is not callable", TypeName(fn)));
    }
    const auto* b = dynamic_cast<const Builtin*>(&fn.callable());
    if (b == nullptr) return Error(e.pos, "internal: foreign callable");
    switch (b->kind) {
      case Builtin::Kind::kRaise: {
        std::string msg = args.pos.empty() ? "" : args.pos[0].ToPython();
        return Error(e.pos, "raise_exception: " + msg);
      }
      case Builtin::Kind::kStrftime: {
        if (args.pos.size() != 1 || !args.pos[0].is_string()) {
          return Error(e.pos, "strftime_now(format): one string argument");
        }
        std::string s;
        if (opt_.strftime_now) {
          s = opt_.strftime_now(args.pos[0].str());
        } else {
          std::time_t t = std::time(nullptr);
          std::tm tm{};
          localtime_r(&t, &tm);
          char buf[512];
          const size_t n = std::strftime(buf, sizeof buf, args.pos[0].str().c_str(), &tm);
          s.assign(buf, n);
        }
        Value v(std::move(s));
        return opt_.strftime_source >= 0 ? v.Tagged(opt_.strftime_source) : v;
      }
      case Builtin::Kind::kNamespace:
      case Builtin::Kind::kDict: {
        Value ns = b->kind == Builtin::Kind::kNamespace ? Value::Namespace() : Value::Dict();
        for (const Value& p : args.pos) {
          if (!p.is_dict()) return Error(e.pos, b->name + "(): positional argument must be a dict");
          for (const auto& [k, v] : p.items()) ns.Set(k, v);
        }
        for (auto& [k, v] : args.kw) ns.Set(k, v);
        return ns;
      }
      case Builtin::Kind::kRange: {
        int64_t start = 0, stop = 0, step = 1;
        for (const Value& p : args.pos) {
          if (!IsIntLike(p)) return Error(e.pos, "range(): integer arguments expected");
        }
        if (args.pos.size() == 1) {
          stop = args.pos[0].as_int();
        } else if (args.pos.size() >= 2) {
          start = args.pos[0].as_int();
          stop = args.pos[1].as_int();
          if (args.pos.size() == 3) step = args.pos[2].as_int();
        } else {
          return Error(e.pos, "range() expects 1 to 3 arguments");
        }
        if (step == 0) return Error(e.pos, "range() arg 3 must not be zero");
        std::vector<Value> out;
        for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
          if (out.size() > (1u << 20)) return Error(e.pos, "range(): more than 2^20 items");
          TTFT_RETURN_IF_ERROR(ChargeItems(1, e.pos));
          out.emplace_back(i);
          if (__builtin_add_overflow(i, step, &i)) break;  // past stop either way
        }
        return Value::List(std::move(out));
      }
      case Builtin::Kind::kMacro: return CallMacro(*b->macro, args, e.pos);
      case Builtin::Kind::kMethod: return CallMethod(b->self, b->name, args, e.pos);
    }
    return Error(e.pos, "internal: unknown builtin");
  }

  Result<Value> CallMacro(const Stmt& m, const Args& args, const SourcePos& pos) {
    if (depth_ >= 64) return Error(pos, "macro calls nested deeper than 64");
    if (args.pos.size() > m.params.size()) {
      return Error(pos, fmt::format("macro '{}' takes not more than {} argument(s)", m.targets[0],
                                    m.params.size()));
    }
    Frame f;
    for (size_t i = 0; i < m.params.size(); ++i) {
      const std::string& p = m.params[i].first;
      if (i < args.pos.size()) {
        f.emplace_back(p, args.pos[i]);
      } else if (const Value* v = args.Kw(p)) {
        f.emplace_back(p, *v);
      } else if (m.params[i].second) {
        TTFT_ASSIGN_OR_RETURN(Value d, Eval(*m.params[i].second));
        f.emplace_back(p, std::move(d));
      } else {
        f.emplace_back(p, Value::Undefined(fmt::format("parameter '{}' was not provided", p)));
      }
    }
    for (const auto& [k, v] : args.kw) {
      const std::string& key = k;  // clang 14 cannot capture a structured binding
      if (std::none_of(m.params.begin(), m.params.end(),
                       [&](const auto& p) { return p.first == key; })) {
        return Error(pos,
                     fmt::format("macro '{}' takes no keyword argument '{}'", m.targets[0], k));
      }
    }
    const size_t saved_base = base_;
    TBuf* saved_out = out_;
    const bool saved_break = break_, saved_continue = continue_;
    frames_.push_back(std::move(f));
    base_ = frames_.size() - 1;
    TBuf buf(&budget_);
    out_ = &buf;
    ++depth_;
    Status st = ExecBody(m.body);
    --depth_;
    out_ = saved_out;
    base_ = saved_base;
    frames_.pop_back();
    break_ = saved_break;
    continue_ = saved_continue;
    TTFT_RETURN_IF_ERROR(st);
    return Built(buf, pos);
  }

  Result<Value> CallMethod(const Value& self, const std::string& name, const Args& args,
                           const SourcePos& pos) {
    if (self.is_dict()) {
      if (name == "items") {
        return ItemsOf(self, pos);
      }
      std::vector<Value> out;
      if (name == "keys" || name == "values") {
        TTFT_RETURN_IF_ERROR(ChargeItems(self.items().size(), pos));
        for (const auto& [k, v] : self.items()) {
          if (name == "keys") {
            out.push_back(self.source() >= 0 ? Value(k).Tagged(self.source()) : Value(k));
          } else {
            out.push_back(v);
          }
        }
        return Value::List(std::move(out));
      }
      if (name == "get") {
        if (args.pos.empty() || !args.pos[0].is_string()) {
          return args.pos.size() > 1 ? args.pos[1] : Value::None();
        }
        if (const Value* v = self.Find(args.pos[0].str())) return *v;
        return args.pos.size() > 1 ? args.pos[1] : Value::None();
      }
    }
    if (self.is_string()) {
      const std::string& s = self.str();
      auto strarg = [&](size_t i) -> const Value* {
        return i < args.pos.size() && args.pos[i].is_string() ? &args.pos[i] : nullptr;
      };
      if (name == "strip" || name == "lstrip" || name == "rstrip") {
        return Strip(self, name != "rstrip", name != "lstrip", strarg(0), pos);
      }
      if (name == "lower" || name == "upper") return CaseMap(self, name == "upper", pos);
      if (name == "title" || name == "capitalize") return TitleCase(self, name == "title", pos);
      if (name == "startswith" || name == "endswith") {
        std::vector<Value> cands;
        if (!args.pos.empty() && args.pos[0].is_list()) {
          cands = args.pos[0].list();
        } else if (!args.pos.empty()) {
          cands.push_back(args.pos[0]);
        }
        for (const Value& c : cands) {
          if (!c.is_string()) return Error(pos, name + "(): arguments must be str");
          const std::string& p = c.str();
          if (p.size() <= s.size() &&
              (name == "startswith" ? s.compare(0, p.size(), p) == 0
                                    : s.compare(s.size() - p.size(), p.size(), p) == 0)) {
            return Value(true);
          }
        }
        return Value(false);
      }
      if (name == "replace") {
        if (!strarg(0) || !strarg(1)) return Error(pos, "replace(old, new): str arguments");
        return Replace(self, args.pos[0].str(), args.pos[1].str(), pos);
      }
      if (name == "split") {
        std::vector<Value> out;
        const Value* sep = strarg(0);
        if (sep == nullptr) {
          size_t i = 0;
          while (i < s.size()) {
            while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
            size_t j = i;
            while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
            if (j > i) {
              TTFT_RETURN_IF_ERROR(ChargeItems(1, pos));
              TBuf b(&budget_);
              b.AddSub(self, i, j);
              TTFT_ASSIGN_OR_RETURN(Value part, Built(b, pos));
              out.push_back(std::move(part));
            }
            i = j;
          }
        } else {
          if (sep->str().empty()) return Error(pos, "split(): empty separator");
          size_t i = 0;
          while (true) {
            const size_t j = s.find(sep->str(), i);
            TTFT_RETURN_IF_ERROR(ChargeItems(1, pos));
            TBuf b(&budget_);
            b.AddSub(self, i, j == std::string::npos ? s.size() : j);
            TTFT_ASSIGN_OR_RETURN(Value part, Built(b, pos));
            out.push_back(std::move(part));
            if (j == std::string::npos) break;
            i = j + sep->str().size();
          }
        }
        return Value::List(std::move(out));
      }
    }
    return Error(pos, fmt::format("'{}' object has no method '{}'", TypeName(self), name));
  }

  Result<Value> ItemsOf(const Value& d, const SourcePos& pos) {
    TTFT_RETURN_IF_ERROR(ChargeItems(d.items().size(), pos));
    std::vector<Value> out;
    for (const auto& [k, v] : d.items()) {
      Value key = d.source() >= 0 ? Value(k).Tagged(d.source()) : Value(k);
      out.push_back(Value::List({std::move(key), v}, true));
    }
    return Value::List(std::move(out));
  }

  Result<Value> Strip(const Value& v, bool left, bool right, const Value* chars,
                      const SourcePos& pos) {
    const std::string& s = v.str();
    TTFT_ASSIGN_OR_RETURN(const std::vector<uint32_t> off, Offsets(s, pos));
    auto strip_cp = [&](size_t idx) {
      size_t p = off[idx];
      const char32_t c = NextCodePoint(s, p);
      if (chars == nullptr) return IsPySpace(c);
      size_t q = 0;
      while (q < chars->str().size()) {
        if (NextCodePoint(chars->str(), q) == c) return true;
      }
      return false;
    };
    size_t b = 0, e = off.size() - 1;
    if (left) {
      while (b < e && strip_cp(b)) ++b;
    }
    if (right) {
      while (e > b && strip_cp(e - 1)) --e;
    }
    TBuf out(&budget_);
    out.AddSub(v, off[b], off[e]);
    return Built(out, pos);
  }
  Result<Value> CaseMap(const Value& v, bool upper, const SourcePos& pos) {
    TTFT_RETURN_IF_ERROR(Charge(v.str().size(), pos));
    std::string s = v.str();
    for (char& c : s) {
      c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c))
                                  : std::tolower(static_cast<unsigned char>(c)));
    }
    return Value::TrackedString(std::move(s), v.spans());
  }
  Result<Value> TitleCase(const Value& v, bool title, const SourcePos& pos) {
    TTFT_RETURN_IF_ERROR(Charge(v.str().size(), pos));
    std::string s = v.str();
    bool start = true;
    for (char& c : s) {
      const auto u = static_cast<unsigned char>(c);
      if (std::isalpha(u)) {
        c = static_cast<char>(start ? std::toupper(u) : std::tolower(u));
        start = false;
      } else if (title) {
        start = true;
      } else {
        c = static_cast<char>(std::tolower(u));
        start = false;
      }
    }
    return Value::TrackedString(std::move(s), v.spans());
  }
  Result<Value> Replace(const Value& v, const std::string& from, const std::string& to,
                        const SourcePos& pos) {
    const std::string& s = v.str();
    TBuf out(&budget_);
    const int32_t src = v.FirstSource();
    size_t i = 0;
    if (from.empty()) {
      out.Add(to, src);
      for (size_t p = 0; p < s.size() && !out.overflowed();) {
        const size_t q = p;
        NextCodePoint(s, p);
        out.AddSub(v, q, p);
        out.Add(to, src);
      }
      return Built(out, pos);
    }
    while (!out.overflowed()) {
      const size_t j = s.find(from, i);
      if (j == std::string::npos) break;
      out.AddSub(v, i, j);
      out.Add(to, src);
      i = j + from.size();
    }
    out.AddSub(v, i, s.size());
    return Built(out, pos);
  }

  // ---- filters -----------------------------------------------------------------------
  Result<Value> ToStr(const Value& v) {
    if (v.is_string()) return v;
    Value s(v.ToPython());
    const int32_t src = v.FirstSource();
    return src >= 0 ? s.Tagged(src) : s;
  }

  Result<Value> AttrPath(const Value& item, const Value& path, const SourcePos& pos) {
    if (!path.is_string()) return GetItem(item, path, pos);
    Value cur = item;
    size_t i = 0;
    const std::string& p = path.str();
    while (true) {
      const size_t j = p.find('.', i);
      const std::string part = p.substr(i, j == std::string::npos ? std::string::npos : j - i);
      if (cur.is_undefined()) return cur;
      if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c));
          })) {
        int64_t index = 0;
        const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
        if (ec != std::errc()) return Value::Undefined("no element " + part);
        TTFT_ASSIGN_OR_RETURN(cur, GetItem(cur, Value(index), pos));
      } else {
        TTFT_ASSIGN_OR_RETURN(cur, GetItem(cur, Value(part), pos));
      }
      if (j == std::string::npos) break;
      i = j + 1;
    }
    return cur;
  }

  Result<Value> EvalFilter(const Expr& e) {
    TTFT_ASSIGN_OR_RETURN(Value v, Eval(*e.a));
    TTFT_ASSIGN_OR_RETURN(Args args, EvalArgs(e));
    return ApplyFilter(e.name, v, args, e.pos);
  }

  Result<Value> ApplyFilter(const std::string& name, const Value& v, const Args& args,
                            const SourcePos& pos) {
    if (name == "tojson") {
      int indent = -1;
      if (const Value* i = args.Get(0, "indent")) {
        if (IsIntLike(*i)) {
          indent = static_cast<int>(std::clamp<int64_t>(i->as_int(), 0, 64));
        } else if (!i->is_none()) {
          return Error(pos, "tojson: indent must be an integer");
        }
      }
      for (const auto& [k, x] : args.kw) {
        if (k != "indent" && !(k == "ensure_ascii" && !x.Truthy()) &&
            !(k == "sort_keys" && !x.Truthy())) {
          return Error(pos, fmt::format("tojson: unsupported argument '{}'", k));
        }
      }
      auto r = ToJson(v, indent);
      if (!r.ok()) return Error(pos, r.status().message());
      TTFT_RETURN_IF_ERROR(Charge(r->str().size(), pos));
      return r;
    }
    if (name == "trim") {
      TTFT_ASSIGN_OR_RETURN(Value s, ToStr(v));
      const Value* chars = args.Get(0, "chars");
      return Strip(s, true, true, chars && chars->is_string() ? chars : nullptr, pos);
    }
    if (name == "length" || name == "count") {
      switch (v.kind()) {
        case Value::Kind::kUndefined: return Value(0);
        case Value::Kind::kString: return Value(static_cast<int64_t>(CodePointCount(v.str())));
        case Value::Kind::kList: return Value(static_cast<int64_t>(v.list().size()));
        case Value::Kind::kDict: return Value(static_cast<int64_t>(v.items().size()));
        default: return Error(pos, fmt::format("object of type '{}' has no len()", TypeName(v)));
      }
    }
    if (name == "upper" || name == "lower") {
      TTFT_ASSIGN_OR_RETURN(Value s, ToStr(v));
      return CaseMap(s, name == "upper", pos);
    }
    if (name == "capitalize" || name == "title") {
      TTFT_ASSIGN_OR_RETURN(Value s, ToStr(v));
      return TitleCase(s, name == "title", pos);
    }
    if (name == "first" || name == "last") {
      if (v.is_undefined()) return UndefinedError(pos, v);
      TTFT_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v, pos));
      if (items.empty()) return Value::Undefined("No " + name + " item, sequence was empty.");
      return name == "first" ? items.front() : items.back();
    }
    if (name == "default" || name == "d") {
      const Value* boolean = args.Get(1, "boolean");
      const bool use_default =
          v.is_undefined() || (boolean != nullptr && boolean->Truthy() && !v.Truthy());
      if (!use_default) return v;
      const Value* def = args.Get(0, "default_value");
      return def ? *def : Value(std::string());
    }
    if (name == "join") {
      const Value* sep = args.Get(0, "d");
      const Value* attr = args.Get(1, "attribute");
      TTFT_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v, pos));
      TBuf out(&budget_);
      bool first = true;
      for (Value& it : items) {
        if (out.overflowed()) break;
        if (attr) {
          TTFT_ASSIGN_OR_RETURN(it, AttrPath(it, *attr, pos));
        }
        if (!first && sep) {
          if (sep->is_string()) {
            out.AddString(*sep);
          } else {
            out.Add(sep->ToPython(), sep->FirstSource());
          }
        }
        first = false;
        TTFT_ASSIGN_OR_RETURN(Value s, ToStr(it));
        out.AddString(s);
      }
      return Built(out, pos);
    }
    if (name == "items") {
      if (v.is_undefined()) return Value::List();
      if (!v.is_dict() || v.is_namespace()) {
        return Error(
            pos, fmt::format("items: can only get item pairs from a mapping, not {}", TypeName(v)));
      }
      return ItemsOf(v, pos);
    }
    if (name == "string") return ToStr(v);
    if (name == "safe") return v;
    if (name == "escape" || name == "e") {
      TTFT_ASSIGN_OR_RETURN(Value s, ToStr(v));
      std::string out;
      for (char c : s.str()) {
        switch (c) {
          case '&': out += "&amp;"; break;
          case '<': out += "&lt;"; break;
          case '>': out += "&gt;"; break;
          case '"': out += "&#34;"; break;
          case '\'': out += "&#39;"; break;
          default: out.push_back(c);
        }
      }
      Value r(std::move(out));
      return s.FirstSource() >= 0 ? r.Tagged(s.FirstSource()) : r;
    }
    if (name == "int" || name == "float") {
      const Value* def = args.Get(0, "default");
      Value fallback = def ? *def : (name == "int" ? Value(0) : Value(0.0));
      double d = 0;
      bool ok = true;
      if (IsIntLike(v)) {
        d = static_cast<double>(v.as_int());
        if (name == "int") return Value(v.as_int());
      } else if (v.kind() == Value::Kind::kFloat) {
        d = v.as_double();
      } else if (v.is_string()) {
        std::string s = v.str();
        s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
        char* end = nullptr;
        errno = 0;
        if (name == "int") {
          const long long x = std::strtoll(s.c_str(), &end, 10);
          while (end && *end && std::isspace(static_cast<unsigned char>(*end))) ++end;
          if (end != s.c_str() && end && *end == 0 && errno == 0)
            return Value(static_cast<int64_t>(x));
        }
        d = std::strtod(s.c_str(), &end);
        while (end && *end && std::isspace(static_cast<unsigned char>(*end))) ++end;
        ok = end != s.c_str() && end && *end == 0;
      } else {
        ok = false;
      }
      if (!ok) return fallback;
      if (name == "int") {
        if (!std::isfinite(d)) return fallback;
        TTFT_ASSIGN_OR_RETURN(const int64_t x, DoubleToInt(d, pos));
        return Value(x);
      }
      return Value(d);
    }
    if (name == "list") {
      TTFT_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v, pos));
      return Value::List(std::move(items));
    }
    if (name == "reverse") {
      if (v.is_string()) {
        TTFT_ASSIGN_OR_RETURN(const std::vector<uint32_t> off, Offsets(v.str(), pos));
        TBuf out(&budget_);
        for (size_t i = off.size() - 1; i-- > 0;) out.AddSub(v, off[i], off[i + 1]);
        return Built(out, pos);
      }
      TTFT_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v, pos));
      std::reverse(items.begin(), items.end());
      return Value::List(std::move(items));
    }
    if (name == "replace") {
      TTFT_ASSIGN_OR_RETURN(Value s, ToStr(v));
      if (args.pos.size() < 2 || !args.pos[0].is_string() || !args.pos[1].is_string()) {
        return Error(pos, "replace(old, new): str arguments");
      }
      return Replace(s, args.pos[0].str(), args.pos[1].str(), pos);
    }
    if (name == "abs") {
      if (IsIntLike(v)) {
        int64_t r = v.as_int();
        const bool overflow = r < 0 && __builtin_sub_overflow(int64_t{0}, r, &r);
        return IntOrOverflow(overflow, r, pos);
      }
      if (v.kind() == Value::Kind::kFloat) return Value(std::fabs(v.as_double()));
      return Error(pos, fmt::format("bad operand type for abs(): '{}'", TypeName(v)));
    }
    if (name == "format") {
      TTFT_ASSIGN_OR_RETURN(Value s, ToStr(v));
      if (!args.kw.empty()) return Error(pos, "format: keyword arguments are not supported");
      return PercentFormat(s, Value::List(args.pos, true), pos);
    }
    if (name == "sum") {
      const Value* attr = args.Get(0, "attribute");
      const Value* start = args.Get(1, "start");
      Value acc = start ? *start : Value(0);
      TTFT_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v, pos));
      for (Value& it : items) {
        if (attr) {
          TTFT_ASSIGN_OR_RETURN(it, AttrPath(it, *attr, pos));
        }
        TTFT_ASSIGN_OR_RETURN(acc, Binary("+", acc, it, pos));
      }
      return acc;
    }
    if (name == "unique" || name == "sort") {
      TTFT_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v, pos));
      const Value* attr = args.Kw("attribute");
      std::vector<std::pair<Value, Value>> keyed;
      for (Value& it : items) {
        Value k = it;
        if (attr) {
          TTFT_ASSIGN_OR_RETURN(k, AttrPath(it, *attr, pos));
        }
        const Value* cs = args.Kw("case_sensitive");
        if (k.is_string() && !(cs && cs->Truthy())) {
          TTFT_ASSIGN_OR_RETURN(k, CaseMap(k, false, pos));
        }
        keyed.emplace_back(std::move(k), std::move(it));
      }
      std::vector<Value> out;
      if (name == "unique") {
        std::vector<Value> seen;
        for (auto& [k, it] : keyed) {
          const Value& key = k;  // clang 14 cannot capture a structured binding
          if (std::none_of(seen.begin(), seen.end(),
                           [&](const Value& s) { return Equal(s, key); })) {
            seen.push_back(k);
            out.push_back(std::move(it));
          }
        }
        return Value::List(std::move(out));
      }
      Status err;
      std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        auto r = Less(x.first, y.first, pos);
        if (!r.ok()) {
          err = r.status();
          return false;
        }
        return *r;
      });
      TTFT_RETURN_IF_ERROR(err);
      const Value* rev = args.Get(0, "reverse");
      if (rev && rev->Truthy()) std::reverse(keyed.begin(), keyed.end());
      for (auto& kv : keyed) out.push_back(std::move(kv.second));
      return Value::List(std::move(out));
    }
    if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") {
      const bool attr = name.size() > 6;
      const bool keep = name[0] == 's';
      TTFT_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v, pos));
      size_t k = 0;
      Value path;
      if (attr) {
        if (args.pos.empty()) return Error(pos, name + ": missing attribute name");
        path = args.pos[k++];
      }
      std::string test;
      if (k < args.pos.size()) {
        if (!args.pos[k].is_string()) return Error(pos, name + ": test name must be a string");
        test = args.pos[k++].str();
        static const std::vector<std::string> kKnown = {
            "defined",     "undefined", "none",    "string", "number",  "integer",
            "float",       "boolean",   "true",    "false",  "mapping", "iterable",
            "sequence",    "callable",  "equalto", "eq",     "ne",      "lt",
            "le",          "gt",        "ge",      "in",     "odd",     "even",
            "divisibleby", "sameas",    "lower",   "upper",  "==",      "!="};
        if (std::find(kKnown.begin(), kKnown.end(), test) == kKnown.end()) {
          return Error(pos, fmt::format("{}: unsupported test '{}'", name, test));
        }
        if (test == "==") test = "eq";
        if (test == "!=") test = "ne";
      }
      std::vector<Value> targs(args.pos.begin() + static_cast<ptrdiff_t>(k), args.pos.end());
      std::vector<Value> out;
      for (const Value& it : items) {
        Value x = it;
        if (attr) {
          TTFT_ASSIGN_OR_RETURN(x, AttrPath(it, path, pos));
        }
        bool r = false;
        if (test.empty()) {
          r = x.Truthy();
        } else {
          TTFT_ASSIGN_OR_RETURN(r, Test(test, x, targs, pos));
        }
        if (r == keep) out.push_back(it);
      }
      return Value::List(std::move(out));
    }
    if (name == "map") {
      TTFT_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v, pos));
      std::vector<Value> out;
      if (const Value* attr = args.Kw("attribute")) {
        const Value* def = args.Kw("default");
        for (const Value& it : items) {
          TTFT_ASSIGN_OR_RETURN(Value x, AttrPath(it, *attr, pos));
          out.push_back(x.is_undefined() && def ? *def : x);
        }
        return Value::List(std::move(out));
      }
      if (args.pos.empty() || !args.pos[0].is_string()) {
        return Error(pos, "map: expected a filter name or attribute=");
      }
      const std::string f = args.pos[0].str();
      if (f == "map" || f == "tojson" || f == "trim" || f == "length" || f == "count" ||
          f == "upper" || f == "lower" || f == "string" || f == "int" || f == "float" ||
          f == "first" || f == "last" || f == "default" || f == "d" || f == "join" ||
          f == "items" || f == "list" || f == "title" || f == "capitalize" || f == "abs" ||
          f == "safe" || f == "replace" || f == "reverse" || f == "format" || f == "escape" ||
          f == "e") {
        Args rest;
        rest.pos.assign(args.pos.begin() + 1, args.pos.end());
        rest.kw = args.kw;
        for (const Value& it : items) {
          TTFT_ASSIGN_OR_RETURN(Value x, ApplyFilter(f, it, rest, pos));
          out.push_back(std::move(x));
        }
        return Value::List(std::move(out));
      }
      return Error(pos, fmt::format("map: unsupported filter '{}'", f));
    }
    return Error(pos, fmt::format("unsupported filter '{}'", name));
  }

  // ---- tests -------------------------------------------------------------------------
  Result<bool> Test(const std::string& name, const Value& v, const std::vector<Value>& args,
                    const SourcePos& pos) {
    const Value* arg = args.empty() ? nullptr : &args[0];
    auto need_arg = [&]() -> Status {
      if (arg == nullptr) return Error(pos, fmt::format("test '{}' needs an argument", name));
      return Status::Ok();
    };
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "string") return v.is_string();
    if (name == "number") return v.is_number() || v.kind() == Value::Kind::kBool;
    if (name == "integer") return v.kind() == Value::Kind::kInt;
    if (name == "float") return v.kind() == Value::Kind::kFloat;
    if (name == "boolean") return v.kind() == Value::Kind::kBool;
    if (name == "true") return v.kind() == Value::Kind::kBool && v.as_bool();
    if (name == "false") return v.kind() == Value::Kind::kBool && !v.as_bool();
    if (name == "mapping") return v.is_dict() && !v.is_namespace();
    if (name == "iterable") {
      return v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace());
    }
    if (name == "sequence") return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
    if (name == "callable") return v.kind() == Value::Kind::kCallable;
    if (name == "equalto" || name == "eq") {
      TTFT_RETURN_IF_ERROR(need_arg());
      return Equal(v, *arg);
    }
    if (name == "ne") {
      TTFT_RETURN_IF_ERROR(need_arg());
      return !Equal(v, *arg);
    }
    if (name == "lt" || name == "gt" || name == "le" || name == "ge") {
      TTFT_RETURN_IF_ERROR(need_arg());
      TTFT_ASSIGN_OR_RETURN(Value r, Compare(name == "lt"   ? "<"
                                             : name == "gt" ? ">"
                                             : name == "le" ? "<="
                                                            : ">=",
                                             v, *arg, pos));
      return r.as_bool();
    }
    if (name == "in") {
      TTFT_RETURN_IF_ERROR(need_arg());
      return Contains(*arg, v, pos);
    }
    if (name == "odd" || name == "even" || name == "divisibleby") {
      if (!IsIntLike(v)) return Error(pos, fmt::format("test '{}' needs an integer", name));
      if (name == "divisibleby") {
        TTFT_RETURN_IF_ERROR(need_arg());
        if (!IsIntLike(*arg) || arg->as_int() == 0) {
          return Error(pos, "divisibleby: a non-zero integer is needed");
        }
        return arg->as_int() == -1 || v.as_int() % arg->as_int() == 0;
      }
      return (v.as_int() % 2 != 0) == (name == "odd");
    }
    if (name == "sameas") {
      TTFT_RETURN_IF_ERROR(need_arg());
      if (v.is_none() || v.kind() == Value::Kind::kBool) {
        return v.kind() == arg->kind() && Equal(v, *arg);
      }
      return false;
    }
    if (name == "lower" || name == "upper") {
      if (!v.is_string()) return false;
      bool cased = false;
      for (char c : v.str()) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalpha(u)) {
          cased = true;
          if (name == "lower" ? std::isupper(u) : std::islower(u)) return false;
        }
      }
      return cased;
    }
    return Error(pos, fmt::format("unsupported test '{}'", name));
  }

  const Template::Impl& impl_;
  const Value& globals_;
  const RenderOptions& opt_;
  std::vector<Frame> frames_;
  size_t base_ = 0;  // the innermost macro's frame; lookups skip frames below it (but 0)
  TBuf* out_ = nullptr;
  int depth_ = 0;
  int64_t iterations_ = 0;
  ByteBudget budget_;
  bool break_ = false;
  bool continue_ = false;
  std::vector<std::pair<uint32_t, SourcePos>> emits_;
};

}  // namespace
}  // namespace tmpl

Result<RenderResult> Template::Render(const Value& vars, const RenderOptions& options) const {
  if (!vars.is_dict()) return Status::Invalid(impl_->name + ": render variables must be a dict");
  tmpl::Renderer r(*impl_, vars, options);
  return r.Run();
}

}  // namespace ttft
