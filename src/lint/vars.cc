// The vars file of `ttft lint`: YAML, variable or path -> {class, sample} or a bare class.
#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <system_error>

#include "lint/internal.h"
#include "ttft/lint.h"

namespace ttft {

std::string_view ToString(VarClass c) {
  switch (c) {
    case VarClass::kStatic: return "static";
    case VarClass::kPerTenant: return "per_tenant";
    case VarClass::kPerUser: return "per_user";
    case VarClass::kPerRequest: return "per_request";
  }
  return "?";
}

namespace {

std::optional<VarClass> ParseClass(const std::string& s) {
  if (s == "static") return VarClass::kStatic;
  if (s == "per_tenant") return VarClass::kPerTenant;
  if (s == "per_user") return VarClass::kPerUser;
  if (s == "per_request") return VarClass::kPerRequest;
  return std::nullopt;
}

// A sample's YAML as a template value; errors name `source`, the line and `where` (the
// sample's path).
Result<Value> FromYaml(const YAML::Node& n, std::string_view source, const std::string& where) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return Value::None();
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return Value(s);  // quoted: always a string
      if (s == "null" || s == "~" || s == "Null" || s == "NULL") return Value::None();
      if (s == "true" || s == "True" || s == "TRUE") return Value(true);
      if (s == "false" || s == "False" || s == "FALSE") return Value(false);
      if (!s.empty()) {
        char* end = nullptr;
        errno = 0;
        const long long i = std::strtoll(s.c_str(), &end, 10);
        if (*end == 0 && errno == 0) return Value(static_cast<int64_t>(i));
        const double d = std::strtod(s.c_str(), &end);
        if (*end == 0 && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' ||
                          s[0] == '.' || s[0] == '+')) {
          return Value(d);
        }
      }
      return Value(s);
    }
    case YAML::NodeType::Sequence: {
      std::vector<Value> items;
      for (size_t i = 0; i < n.size(); ++i) {
        TTFT_ASSIGN_OR_RETURN(Value v, FromYaml(n[i], source, fmt::format("{}[{}]", where, i)));
        items.push_back(std::move(v));
      }
      return Value::List(std::move(items));
    }
    case YAML::NodeType::Map: {
      Value d = Value::Dict();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) {
          return Status::Invalid(fmt::format("{}:{}: {}: map keys must be strings", source,
                                             kv.first.Mark().line + 1, where));
        }
        TTFT_ASSIGN_OR_RETURN(Value v,
                              FromYaml(kv.second, source, where + "." + kv.first.Scalar()));
        d.Set(kv.first.Scalar(), std::move(v));
      }
      return d;
    }
    default:
      return Status::Invalid(
          fmt::format("{}:{}: {}: unsupported YAML node", source, n.Mark().line + 1, where));
  }
}

}  // namespace

namespace lint {

Result<std::vector<PathStep>> ParsePath(std::string_view path) {
  std::vector<PathStep> steps;
  size_t i = 0;
  auto ident = [&]() -> std::string {
    const size_t b = i;
    while (i < path.size() && (std::isalnum(static_cast<unsigned char>(path[i])) ||
                               path[i] == '_' || path[i] == '-')) {
      ++i;
    }
    return std::string(path.substr(b, i - b));
  };
  std::string root = ident();
  if (root.empty() || std::isdigit(static_cast<unsigned char>(root[0]))) {
    return Status::Invalid(fmt::format("'{}': a path starts with a variable name", path));
  }
  steps.push_back({root, -1});
  while (i < path.size()) {
    if (path[i] == '.') {
      ++i;
      std::string k = ident();
      if (k.empty()) return Status::Invalid(fmt::format("'{}': expected a key after '.'", path));
      steps.push_back({k, -1});
    } else if (path[i] == '[') {
      ++i;
      if (i < path.size() && (path[i] == '\'' || path[i] == '"')) {
        const char q = path[i++];
        const size_t e = path.find(q, i);
        if (e == std::string_view::npos || e + 1 >= path.size() || path[e + 1] != ']') {
          return Status::Invalid(fmt::format("'{}': unterminated ['key']", path));
        }
        steps.push_back({std::string(path.substr(i, e - i)), -1});
        i = e + 2;
      } else {
        const size_t b = i;
        while (i < path.size() && std::isdigit(static_cast<unsigned char>(path[i]))) ++i;
        if (i == b || i >= path.size() || path[i] != ']') {
          return Status::Invalid(fmt::format("'{}': expected [index] or ['key']", path));
        }
        int64_t index = 0;
        const auto [end, ec] = std::from_chars(path.data() + b, path.data() + i, index);
        if (ec != std::errc()) {
          return Status::Invalid(fmt::format("'{}': index beyond 2^63", path));
        }
        steps.push_back({"", index});
        ++i;
      }
    } else {
      return Status::Invalid(fmt::format("'{}': unexpected '{}' in a path", path, path[i]));
    }
  }
  return steps;
}

}  // namespace lint

Result<VarsFile> ParseVarsFile(std::string_view yaml, std::string_view source) {
  VarsFile vf;
  vf.path = std::string(source);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own message is "bad file"
    return Status::Invalid(fmt::format("{}:{}:{}: nested deeper than {} levels", source,
                                       e.mark.line + 1, e.mark.column + 1, e.depth()));
  } catch (const YAML::Exception& e) {
    return Status::Invalid(
        fmt::format("{}:{}:{}: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (root.IsNull()) return vf;
  if (!root.IsMap()) {
    return Status::Invalid(
        fmt::format("{}: expected a map of variable -> {{class, sample}}", source));
  }
  for (const auto& kv : root) {
    const int line = kv.first.Mark().line + 1;
    if (!kv.first.IsScalar()) {
      return Status::Invalid(fmt::format("{}:{}: variable names must be strings", source, line));
    }
    VarSpec spec;
    spec.path = kv.first.Scalar();
    spec.line = line;
    auto where = [&](std::string_view what) {
      return Status::Invalid(fmt::format("{}:{}: {}: {}", source, line, spec.path, what));
    };
    auto steps = lint::ParsePath(spec.path);
    if (!steps.ok()) return where(steps.status().message());
    const YAML::Node& v = kv.second;
    std::string cls;
    if (v.IsScalar()) {
      cls = v.Scalar();
    } else if (v.IsMap()) {
      for (const auto& f : v) {
        const std::string k = f.first.IsScalar() ? f.first.Scalar() : "";
        if (k == "class") {
          if (!f.second.IsScalar()) return where("class must be a string");
          cls = f.second.Scalar();
        } else if (k == "sample") {
          TTFT_ASSIGN_OR_RETURN(Value s, FromYaml(f.second, source, spec.path + ".sample"));
          spec.sample = std::move(s);
        } else {
          return where(fmt::format("unknown field '{}' (expected class, sample)", k));
        }
      }
      if (cls.empty()) return where("missing 'class'");
    } else {
      return where(
          "expected a class (static, per_tenant, per_user, per_request) or "
          "{class, sample}");
    }
    auto c = ParseClass(cls);
    if (!c) {
      return where(
          fmt::format("unknown class '{}' (static, per_tenant, per_user, per_request)", cls));
    }
    spec.cls = *c;
    for (const VarSpec& other : vf.vars) {
      if (other.path == spec.path) {
        return where(fmt::format("declared twice (first on line {})", other.line));
      }
    }
    vf.vars.push_back(std::move(spec));
  }
  return vf;
}

Result<VarsFile> ReadVarsFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::NotFound(fmt::format("{}: cannot open the vars file", path));
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseVarsFile(ss.str(), path);
}

}  // namespace ttft
