// Renderers of `ttft stats` (ttft/report.h): text, JSON and CSV of per-group
// summaries.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "ttft/format.h"
#include "ttft/report.h"

namespace ttft {
namespace {

using json = nlohmann::json;

json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json QuantileJson(const TermQuantiles& q) {
  if (!q.available()) return nullptr;
  static constexpr const char* kKeys[] = {"p50", "p90", "p99", "p999"};
  json j;
  for (size_t i = 0; i < 4; ++i) j[kKeys[i]] = Num(q.at(i));
  j["mean"] = Num(q.mean);
  j["n"] = q.count;
  if (q.source == TermQuantiles::Source::kBuckets) {
    json b;
    for (size_t i = 0; i < 4; ++i) {
      b[kKeys[i]] = {Num(q.buckets[i].lower_bound), Num(q.buckets[i].upper_bound)};
    }
    j["bucket_bounds"] = b;
  }
  if (q.source == TermQuantiles::Source::kSketch) j["relative_error"] = q.sketch_alpha;
  if (!q.note.empty()) j["note"] = q.note;
  return j;
}

}  // namespace

nlohmann::json StatsJson(const std::vector<GroupSummary>& groups, int64_t skipped) {
  json out;
  out["groups"] = json::array();
  for (const GroupSummary& g : groups) {
    json j;
    j["key"] = json::object();
    for (const auto& [k, v] : g.key) j["key"][k] = v;
    j["count"] = g.stats.requests;
    j["rate_rps"] = Num(g.stats.request_rate_rps);
    j["ttft_s"] = QuantileJson(g.stats.ttft_s);
    j["queue_s"] = QuantileJson(g.stats.queue_s);
    j["prefill_s"] = QuantileJson(g.stats.prefill_s);
    j["itl_s"] = QuantileJson(g.stats.itl_s);
    j["prompt_tokens"] = QuantileJson(g.stats.prompt_tokens);
    j["prefix_cache_hit_rate"] = Num(g.stats.prefix_cache_hit_rate);
    if (!g.stats.hit_rate_note.empty()) j["prefix_cache_hit_rate_note"] = g.stats.hit_rate_note;
    out["groups"].push_back(std::move(j));
  }
  out["skipped"] = skipped;
  return out;
}

namespace {
std::string Fmt(double v) { return std::isfinite(v) ? fmt::format("{:.4g}", v) : "null"; }
}  // namespace

std::string RenderStatsText(const std::vector<GroupSummary>& groups, int64_t skipped) {
  std::string out;
  for (const GroupSummary& g : groups) {
    std::string key;
    for (const auto& [k, v] : g.key) {
      key += fmt::format("{}={} ", escape::Terminal(k), escape::Terminal(v));
    }
    out += fmt::format("{}count={} rate_rps={} prefix_cache_hit_rate={}\n", key, g.stats.requests,
                       Fmt(g.stats.request_rate_rps), Fmt(g.stats.prefix_cache_hit_rate));
    const std::pair<const char*, const TermQuantiles*> rows[] = {
        {"ttft_s", &g.stats.ttft_s},
        {"queue_s", &g.stats.queue_s},
        {"prefill_s", &g.stats.prefill_s},
        {"itl_s", &g.stats.itl_s},
        {"prompt_tokens", &g.stats.prompt_tokens}};
    for (const auto& [name, q] : rows) {
      if (!q->available()) {
        out += fmt::format("  {:<14} null\n", name);
        continue;
      }
      out += fmt::format("  {:<14} p50={} p90={} p99={} p999={} mean={}", name, Fmt(q->at(0)),
                         Fmt(q->at(1)), Fmt(q->at(2)), Fmt(q->at(3)), Fmt(q->mean));
      if (q->source == TermQuantiles::Source::kBuckets) {
        // The last bucket's bound is +Inf, as the exposition format writes it (le="+Inf").
        const double upper = q->buckets[2].upper_bound;
        out += fmt::format("  p99 in ({}, {}]", Fmt(q->buckets[2].lower_bound),
                           upper == INFINITY ? std::string("+Inf") : Fmt(upper));
      }
      if (q->source == TermQuantiles::Source::kSketch)
        out += fmt::format("  (sketch, ±{}%)", q->sketch_alpha * 100);
      out += fmt::format("\n");
      if (!q->note.empty()) {
        out += fmt::format("  {:<14} note: {}\n", "", escape::Terminal(q->note));
      }
    }
  }
  out += fmt::format("skipped={}\n", skipped);
  return out;
}

std::string RenderStatsCsv(const std::vector<GroupSummary>& groups) {
  using escape::CsvField;
  using escape::CsvNumber;
  std::string out;
  out += fmt::format("key,count,rate_rps,quantity,p50,p90,p99,p999,mean,prefix_cache_hit_rate\n");
  for (const GroupSummary& g : groups) {
    std::string key;
    for (const auto& [k, v] : g.key) key += fmt::format("{}={}", k, v);
    const std::pair<const char*, const TermQuantiles*> rows[] = {
        {"ttft_s", &g.stats.ttft_s},
        {"queue_s", &g.stats.queue_s},
        {"prefill_s", &g.stats.prefill_s},
        {"itl_s", &g.stats.itl_s},
        {"prompt_tokens", &g.stats.prompt_tokens}};
    for (const auto& [name, quantities] : rows) {
      const TermQuantiles* q = quantities;  // clang 14 cannot capture a structured binding
      auto f = [q](double v) { return q->available() ? CsvNumber(v) : std::string(); };
      out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", CsvField(key, /*always_quote=*/true),
                         g.stats.requests, CsvNumber(g.stats.request_rate_rps), name, f(q->at(0)),
                         f(q->at(1)), f(q->at(2)), f(q->at(3)), f(q->mean),
                         CsvNumber(g.stats.prefix_cache_hit_rate));
    }
  }
  return out;
}

}  // namespace ttft
