// Calibration profiles (ttft/calibration.h).
#include "ttft/calibration.h"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace ttft {

const std::vector<CostParamField>& CostParamFields() {
  static const std::vector<CostParamField> kFields = {
      {"prefill_mfu", &CostParams::prefill_mfu, 1e-3, 1.0},
      {"prefill_n_half_tokens", &CostParams::prefill_n_half_tokens, 0.0, 1e6},
      {"decode_mbu", &CostParams::decode_mbu, 1e-3, 1.0},
      {"kv_mbu", &CostParams::kv_mbu, 1e-3, 1.0},
      {"gqa_kv_mbu", &CostParams::gqa_kv_mbu, 0.0, 1.0, "tied to kv_mbu"},
      {"step_overhead_s", &CostParams::step_overhead_s, 0.0, 1.0},
      {"layer_overhead_s", &CostParams::layer_overhead_s, 0.0, 0.1},
      {"prefill_layer_overhead_s", &CostParams::prefill_layer_overhead_s, 0.0, 0.1},
      {"seq_overhead_s", &CostParams::seq_overhead_s, 0.0, 0.1},
      {"allreduce_latency_s", &CostParams::allreduce_latency_s, 0.0, 0.1},
      {"allreduce_bus_gbps", &CostParams::allreduce_bus_gbps, 1e-3, 1e6},
      {"front_end_s", &CostParams::front_end_s, 0.0, 60.0},
      {"front_end_s_per_prompt_token", &CostParams::front_end_s_per_prompt_token, 0.0, 0.01},
  };
  return kFields;
}

const CostParamField* FindCostParamField(std::string_view name) {
  for (const auto& f : CostParamFields()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

namespace {

int Line(const YAML::Node& n) { return n.Mark().line + 1; }

Status Err(const std::string& name, int line, const std::string& field, const std::string& what) {
  return Status::Invalid(fmt::format("{}:{}: {}: {}", name, line, field, what));
}

}  // namespace

Result<CalibrationProfile> ParseCalibrationProfile(std::string_view yaml, const std::string& name) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own message is "bad file"
    return Status::Invalid(
        fmt::format("{}:{}: nested deeper than {} levels", name, e.mark.line + 1, e.depth()));
  } catch (const YAML::Exception& e) {
    return Status::Invalid(fmt::format("{}:{}: not YAML: {}", name, e.mark.line + 1, e.msg));
  }
  if (!root.IsMap()) {
    return Err(name, root.IsDefined() ? Line(root) : 1, "ttft_calibration_profile",
               "expected a map with ttft_calibration_profile: 1 and cost:");
  }
  CalibrationProfile out;
  bool version = false;
  try {
    for (const auto& kv : root) {
      const YAML::Node knode = kv.first, vnode = kv.second;
      const std::string key = knode.IsScalar() ? knode.Scalar() : "";
      const int line = Line(knode);
      if (key == "ttft_calibration_profile") {
        if (!vnode.IsScalar() || vnode.Scalar() != "1") {
          return Err(name, line, key, "unsupported version (this ttft reads version 1)");
        }
        version = true;
      } else if (key == "cost") {
        const YAML::Node& cost = vnode;
        if (!cost.IsMap()) return Err(name, Line(cost), "cost", "expected a map of parameters");
        for (const auto& ckv : cost) {
          const YAML::Node cfirst = ckv.first, csecond = ckv.second;
          const std::string k = cfirst.IsScalar() ? cfirst.Scalar() : "";
          const CostParamField* f = FindCostParamField(k);
          if (!f) {
            std::string known;
            for (const auto& g : CostParamFields())
              known += std::string(known.empty() ? "" : ", ") + g.name;
            return Err(name, Line(cfirst), "cost." + k, "unknown parameter (known: " + known + ")");
          }
          for (const auto& s : out.set) {
            if (s == k) return Err(name, Line(cfirst), "cost." + k, "set twice");
          }
          if (!csecond.IsScalar()) {
            return Err(name, Line(csecond), "cost." + k, "expected a number");
          }
          const std::string& v = csecond.Scalar();
          char* end = nullptr;
          const double x = std::strtod(v.c_str(), &end);
          if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x)) {
            return Err(name, Line(csecond), "cost." + k, fmt::format("'{}' is not a number", v));
          }
          if (!f->Admits(x)) {
            return Err(name, Line(csecond), "cost." + k,
                       fmt::format("{} is outside {}..{}", v, f->min, f->max));
          }
          out.cost.*(f->field) = x;
          out.set.push_back(k);
        }
      } else if (key == "engine") {
        if (!vnode.IsMap()) return Err(name, Line(vnode), "engine", "expected a map");
        for (const auto& ekv : vnode) {
          const YAML::Node ek = ekv.first, ev = ekv.second;
          const std::string k = ek.IsScalar() ? ek.Scalar() : "";
          if (k != "async_scheduling") {
            return Err(name, Line(ek), "engine." + k, "unknown key (expected async_scheduling)");
          }
          const std::string v = ev.IsScalar() ? ev.Scalar() : "";
          if (v == "true") {
            out.async_scheduling = true;
          } else if (v == "false") {
            out.async_scheduling = false;
          } else {
            return Err(name, Line(ev), "engine.async_scheduling", "expected true or false");
          }
        }
      } else if (key == "fit") {
        YAML::Emitter e;
        e << vnode;
        out.fit_yaml = e.c_str();
      } else {
        return Err(name, line, key.empty() ? "(key)" : key,
                   "unknown key (expected ttft_calibration_profile, cost, engine, fit)");
      }
    }
  } catch (const YAML::Exception& e) {
    return Status::Invalid(fmt::format("{}:{}: {}", name, e.mark.line + 1, e.msg));
  }
  if (!version) {
    return Err(name, 1, "ttft_calibration_profile",
               "missing (expected ttft_calibration_profile: 1)");
  }
  return out;
}

Result<CalibrationProfile> ReadCalibrationProfile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("{}: cannot open calibration profile", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (ss.str().size() > (1u << 20)) {
    return Status::Invalid(fmt::format("{}:1: larger than 1 MiB, not a calibration profile", path));
  }
  return ParseCalibrationProfile(ss.str(), path);
}

std::string CalibrationProfileYaml(const CostParams& cost, std::optional<bool> async_scheduling,
                                   const std::string& fit_yaml) {
  std::string out =
      "# ttft calibration profile: the cost model's parameters (docs/cost-model.md),\n"
      "# read by simulate/validate/lint --calibration and the scenario key calibration:.\n"
      "ttft_calibration_profile: 1\ncost:\n";
  for (const auto& f : CostParamFields()) {
    const double v = cost.*(f.field);
    out += fmt::format("  {}: {}{}\n", f.name, v,
                       f.zero_means && v == 0 ? fmt::format("  # 0: {}", f.zero_means) : "");
  }
  if (async_scheduling.has_value()) {
    out += fmt::format("engine:\n  async_scheduling: {}\n", *async_scheduling ? "true" : "false");
  }
  if (!fit_yaml.empty()) {
    out += "fit:\n";
    std::istringstream lines(fit_yaml);
    std::string l;
    while (std::getline(lines, l)) out += "  " + l + "\n";
  }
  return out;
}

}  // namespace ttft
