// libFuzzer target for `ttft rules --selector` (ttft/rules.h) and the label-matcher check
// of the Prometheus queries (ttft/promql.h): any bytes are either
// refused with a message naming --selector, or accepted; an accepted selector yields a
// recording-rule file that parses as YAML and whose every expression holds the selector
// as given, and a dashboard that parses as JSON, never a crash. The regex and escape
// rules themselves are checked against promtool in tests/rules_test.cc. Built by
// scripts/fuzz.sh.
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ttft/promql.h"
#include "ttft/rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ttft::RulesOptions o;
  o.selector.assign(reinterpret_cast<const char*>(data), size);
  const ttft::Status st = ttft::ValidateRulesOptions(o);
  // The query path's syntax (Prometheus 3's quoted names) accepts all the rules' does.
  const ttft::Status utf8 =
      ttft::CheckLabelMatchers(o.selector, "--selector", {.quoted_names = true});
  if (st.ok() && !utf8.ok()) std::abort();
  if (!utf8.ok() && utf8.message().find("--selector") == std::string::npos) std::abort();
  if (!st.ok()) {
    if (st.message().find("--selector") == std::string::npos) std::abort();
    return 0;
  }
  auto rec = ttft::RecordingRulesYaml(o);
  auto dash = ttft::DashboardJson(o);
  if (!rec.ok() || !dash.ok()) std::abort();
  YAML::Node root;
  try {
    root = YAML::Load(*rec);
  } catch (const YAML::Exception&) {
    std::abort();  // the selector broke the rule file's YAML
  }
  // The matchers as given, less the blanks around them and a trailing comma (which
  // PromQL refuses before another matcher).
  std::string_view m = o.selector;
  auto trim = [&m] {
    while (!m.empty() && (m.front() == ' ' || (m.front() >= '\t' && m.front() <= '\r'))) {
      m.remove_prefix(1);
    }
    while (!m.empty() && (m.back() == ' ' || (m.back() >= '\t' && m.back() <= '\r'))) {
      m.remove_suffix(1);
    }
  };
  trim();
  if (!m.empty() && m.back() == ',') {
    m.remove_suffix(1);
    trim();
  }
  for (const auto& g : root["groups"]) {
    for (const auto& r : g["rules"]) {
      const std::string expr = r["expr"].as<std::string>();
      if (expr.find(m) == std::string::npos) std::abort();
      if (expr.find(",,") != std::string::npos && o.selector.find(",,") == std::string::npos) {
        std::abort();
      }
    }
  }
  if (!nlohmann::json::accept(*dash)) std::abort();
  return 0;
}
