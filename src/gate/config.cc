// The gate's YAML config (ttft/gate.h, docs/gate.md): strict keys, bounded values,
// every error naming file:line.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "ttft/gate.h"

namespace ttft {
namespace {

class ConfigParser {
 public:
  explicit ConfigParser(std::string name) : name_(std::move(name)) {}

  Result<GateConfig> Parse(const YAML::Node& root) {
    GateConfig c = DefaultGateConfig();
    if (!root.IsMap()) return Err(root, "(top level)", "expected a map");
    TTFT_RETURN_IF_ERROR(
        Keys(root, "(top level)",
             {"confidence", "bootstrap_resamples", "sequential_alpha", "criteria"}));
    if (root["confidence"]) {
      TTFT_ASSIGN_OR_RETURN(c.confidence, Num(root["confidence"], "confidence"));
      if (!(c.confidence > 0.5 && c.confidence < 1)) {
        return Err(root["confidence"], "confidence", "must be in (0.5, 1)");
      }
    }
    if (root["bootstrap_resamples"]) {
      TTFT_ASSIGN_OR_RETURN(double r, Num(root["bootstrap_resamples"], "bootstrap_resamples"));
      if (!(r >= 100 && r <= 100000) || r != std::floor(r)) {
        return Err(root["bootstrap_resamples"], "bootstrap_resamples",
                   "must be a whole number in [100, 100000]");
      }
      c.bootstrap_resamples = static_cast<int>(r);
    }
    if (root["sequential_alpha"]) {
      TTFT_ASSIGN_OR_RETURN(c.sequential_alpha, Num(root["sequential_alpha"], "sequential_alpha"));
      if (!(c.sequential_alpha > 0 && c.sequential_alpha < 0.5)) {
        return Err(root["sequential_alpha"], "sequential_alpha", "must be in (0, 0.5)");
      }
    }
    if (const YAML::Node list = root["criteria"]) {
      if (!list.IsSequence() || list.size() == 0) {
        return Err(list, "criteria", "expected a non-empty list");
      }
      c.criteria.clear();
      for (size_t i = 0; i < list.size(); ++i) {
        TTFT_ASSIGN_OR_RETURN(GateCriterion cr, Criterion(list[i], fmt::format("criteria[{}]", i)));
        c.criteria.push_back(cr);
      }
    }
    return c;
  }

 private:
  Status Err(const YAML::Node& n, std::string_view path, std::string_view what) const {
    return Status::Invalid(fmt::format("{}:{}: {}: {}", name_, n.Mark().line + 1, path, what));
  }

  Status Keys(const YAML::Node& map, std::string_view path,
              std::initializer_list<std::string_view> allowed) const {
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string key = it->first.as<std::string>();
      bool ok = false;
      for (std::string_view a : allowed) ok = ok || a == key;
      if (!ok) {
        std::string known;
        for (std::string_view a : allowed) known += (known.empty() ? "" : ", ") + std::string(a);
        return Err(it->first, path, fmt::format("unknown key '{}' (known: {})", key, known));
      }
    }
    return Status::Ok();
  }

  Result<double> Num(const YAML::Node& n, std::string_view path) const {
    if (!n.IsScalar()) return Err(n, path, "expected a number");
    std::string s = n.Scalar();
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v)) {
      return Err(n, path, fmt::format("expected a number, got '{}'", s));
    }
    return v;
  }

  Result<GateCriterion> Criterion(const YAML::Node& n, const std::string& path) const {
    if (!n.IsMap()) return Err(n, path, "expected a map");
    TTFT_RETURN_IF_ERROR(
        Keys(n, path, {"metric", "direction", "threshold", "min_samples", "critical"}));
    if (!n["metric"]) return Err(n, path, "missing 'metric'");
    std::string metric = n["metric"].IsScalar() ? n["metric"].Scalar() : "";
    std::optional<GateMetric> m = ParseGateMetric(metric);
    if (!m) {
      std::string known;
      for (int i = 0; i < kNumGateMetrics; ++i) {
        known += (known.empty() ? "" : ", ") + std::string(ToString(static_cast<GateMetric>(i)));
      }
      return Err(n["metric"], path + ".metric",
                 fmt::format("unknown metric '{}' (known: {})", metric, known));
    }
    GateCriterion c;
    // Defaults per metric: those of DefaultGateConfig, else the harmful direction.
    c.metric = *m;
    c.direction =
        *m == GateMetric::kPrefixCacheHitRate ? GateDirection::kDecrease : GateDirection::kIncrease;
    c.threshold = IsRatioMetric(*m)                       ? 1.5
                  : *m == GateMetric::kPrefixCacheHitRate ? 0.10
                  : *m == GateMetric::kErrorRate          ? 0.02
                                                          : 0.5;
    for (const GateCriterion& d : DefaultGateConfig().criteria) {
      if (d.metric == *m) c = d;
    }
    if (const YAML::Node d = n["direction"]) {
      std::string s = d.IsScalar() ? d.Scalar() : "";
      if (s == "increase")
        c.direction = GateDirection::kIncrease;
      else if (s == "decrease")
        c.direction = GateDirection::kDecrease;
      else if (s == "either")
        c.direction = GateDirection::kEither;
      else
        return Err(d, path + ".direction",
                   fmt::format("expected increase, decrease or either, got '{}'", s));
    }
    if (const YAML::Node t = n["threshold"]) {
      TTFT_ASSIGN_OR_RETURN(c.threshold, Num(t, path + ".threshold"));
      if (IsRatioMetric(*m) && !(c.threshold > 1)) {
        return Err(t, path + ".threshold",
                   fmt::format("a ratio threshold must be > 1 (a decrease is judged against its "
                               "inverse), got {}",
                               c.threshold));
      }
      if (!IsRatioMetric(*m) && !(c.threshold > 0)) {
        return Err(t, path + ".threshold",
                   fmt::format("a difference threshold must be > 0, got {}", c.threshold));
      }
      if ((*m == GateMetric::kPrefixCacheHitRate || *m == GateMetric::kErrorRate) &&
          !(c.threshold < 1)) {
        return Err(t, path + ".threshold",
                   fmt::format("a rate changes by less than 1, got {}", c.threshold));
      }
    }
    if (const YAML::Node s = n["min_samples"]) {
      TTFT_ASSIGN_OR_RETURN(double v, Num(s, path + ".min_samples"));
      if (!(v >= 1) || v != std::floor(v) || v > 1e12) {
        return Err(s, path + ".min_samples", "must be a whole number >= 1");
      }
      c.min_samples = static_cast<int64_t>(v);
    }
    if (const YAML::Node s = n["critical"]) {
      std::string v = s.IsScalar() ? s.Scalar() : "";
      if (v == "true")
        c.critical = true;
      else if (v == "false")
        c.critical = false;
      else
        return Err(s, path + ".critical", fmt::format("expected true or false, got '{}'", v));
    }
    return c;
  }

  std::string name_;
};

}  // namespace

Result<GateConfig> ParseGateConfig(std::string_view text, const std::string& name) {
  constexpr size_t kMaxBytes = 1 << 20;
  if (text.size() > kMaxBytes) {
    return Status::Invalid(fmt::format("{}: larger than {} bytes", name, kMaxBytes));
  }
  // A gate config is three levels deep; 32 flow brackets or 128 columns is hostile input.
  constexpr int kMaxFlow = 32, kMaxBlock = 128;
  if (const int line = YamlNestingExceededAt(text, kMaxFlow, kMaxBlock); line > 0) {
    return Status::Invalid(
        fmt::format("{}:{}: nested too deeply (more than {} brackets or {} columns of indentation)",
                    name, line, kMaxFlow, kMaxBlock));
  }
  try {
    YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsDefined() || root.IsNull()) return DefaultGateConfig();
    return ConfigParser(name).Parse(root);
  } catch (const YAML::Exception& e) {
    return Status::Invalid(fmt::format("{}:{}: invalid YAML: {}", name, e.mark.line + 1, e.msg));
  } catch (const std::exception& e) {
    return Status::Invalid(fmt::format("{}: {}", name, e.what()));
  }
}

Result<GateConfig> LoadGateConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("{}: cannot open the gate config", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseGateConfig(ss.str(), path);
}

}  // namespace ttft
