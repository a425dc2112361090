// The JSON renderer of a DiagnosisReport (ttft/report.h): the stable schema of
// docs/diagnosis.md.
#include <cmath>
#include <string>

#include "report/tables.h"
#include "ttft/report.h"

namespace ttft {
namespace {

nlohmann::json J(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

// From histogram buckets, each quantile's bucket [lower, upper] and the note on what
// the buckets do not resolve too (spans: the three figures only).
nlohmann::json TermsJson(const TermQuantiles& t) {
  nlohmann::json j = {{"p50", J(t.p50)}, {"p90", J(t.p90)}, {"p99", J(t.p99)}};
  if (t.source == TermQuantiles::Source::kBuckets) {
    constexpr const char* kKeys[] = {"p50", "p90", "p99"};
    nlohmann::json b = nlohmann::json::object();
    for (size_t i = 0; i < 3; ++i) {
      b[kKeys[i]] = {J(t.buckets[i].lower_bound), J(t.buckets[i].upper_bound)};
    }
    j["buckets"] = b;
    if (!t.note.empty()) j["note"] = t.note;
  }
  return j;
}

// The counterfactual replay (ttft/attribution.h) and its lines as the other formats
// print them (report::AttributionLines).
nlohmann::json AttributionJson(const DiagnosisReport& r) {
  const Attribution& a = r.attribution;
  const report::AttributionText t = report::AttributionLines(r);
  nlohmann::json factors = nlohmann::json::array();
  for (const FactorShare& f : a.factors) {
    factors.push_back({{"factor", std::string(ToString(f.factor))},
                       {"hypothesis", f.hypothesis},
                       {"cause", f.cause},
                       {"change", f.change},
                       {"share", J(f.share)},
                       {"share_ci", {J(f.share_lo), J(f.share_hi)}},
                       {"single_share", J(f.single_share)},
                       {"alone_p99_s", J(f.alone_p99_s)}});
  }
  return {{"run", a.run},
          {"not_run_reason", a.not_run_reason},
          {"headline", t.headline},
          {"method", a.method},
          {"seeds", a.seeds},
          {"replays", a.replays},
          {"requests_baseline", a.requests_baseline},
          {"requests_incident", a.requests_incident},
          {"factors", factors},
          {"interaction", J(a.interaction)},
          {"interaction_ci", {J(a.interaction_lo), J(a.interaction_hi)}},
          {"unexplained", J(a.unexplained)},
          {"checks",
           {{"observed_before_p99_s", J(a.observed_before_p99_s)},
            {"observed_before_ci_s", {J(a.observed_before_lo_s), J(a.observed_before_hi_s)}},
            {"observed_after_p99_s", J(a.observed_after_p99_s)},
            {"observed_after_ci_s", {J(a.observed_after_lo_s), J(a.observed_after_hi_s)}},
            {"replay_none_p99_s", J(a.replay_none_p99_s)},
            {"replay_all_p99_s", J(a.replay_all_p99_s)},
            {"replay_all_range_s", {J(a.replay_all_min_s), J(a.replay_all_max_s)}},
            {"incident_reproduced", a.incident_check_ok},
            {"baseline_within_noise", a.baseline_check_ok}}},
          {"assumptions", a.assumptions},
          {"not_factors", a.not_factors},
          {"text",
           {{"headline", t.headline},
            {"causes", t.causes},
            {"mitigations", t.mitigations},
            {"checks", t.checks},
            {"notes", t.notes}}}};
}

nlohmann::json StatsJson(const WindowStats& w) {
  return {
      {"from_s", J(w.from_s)},
      {"to_s", J(w.to_s)},
      {"requests", w.requests},
      {"ok", w.ok},
      {"errors", w.errors},
      {"rejected_too_long", w.rejected_too_long},
      {"request_rate_rps", J(w.request_rate_rps)},
      {"error_rate", J(w.error_rate)},
      {"ttft_s", TermsJson(w.ttft_s)},
      {"queue_s", TermsJson(w.queue_s)},
      {"prefill_s", TermsJson(w.prefill_s)},
      {"front_end_s", TermsJson(w.front_end_s)},
      {"itl_p50_s", J(w.itl_s.p50)},
      {"itl_max_p99_s", J(w.itl_max_p99_s)},
      {"prefix_cache_hit_rate", J(w.prefix_cache_hit_rate)},
      {"cached_tokens_mean", J(w.cached_tokens_mean)},
      {"uncached_tokens_mean", J(w.uncached_tokens_mean)},
      {"prompt_tokens_p50", J(w.prompt_tokens.p50)},
      {"prompt_tokens_p99", J(w.prompt_tokens.p99)},
      {"output_tokens_mean", J(w.output_tokens_mean)},
      {"output_tokens_p99", J(w.output_tokens_p99)},
      {"preemptions_per_request", J(w.preemptions_per_request)},
      {"prefill_s_per_1k_uncached", J(w.prefill_s_per_1k_uncached)},
      {"concurrency", J(w.concurrency)},
      // null: metrics whose series name no replica
      {"replicas", std::isnan(ReplicasShown(w)) ? nlohmann::json() : nlohmann::json(w.replicas)},
      {"kv_usage", J(w.kv_usage)},
      {"from_metrics", w.from_metrics},
  };
}

nlohmann::json AnnotationJson(const Annotation& a) {
  return {{"at_s", a.at_s}, {"kind", a.kind}, {"target", a.target}, {"detail", a.detail}};
}

}  // namespace

nlohmann::json ReportJson(const DiagnosisReport& r) {
  nlohmann::json hyps = nlohmann::json::array();
  for (const Hypothesis& h : r.hypotheses) {
    nlohmann::json evidence = nlohmann::json::array();
    for (const EvidenceLine& e : h.evidence) evidence.push_back(e.sentence);
    hyps.push_back({{"id", h.id},
                    {"title", h.title},
                    {"confidence", h.confidence},
                    {"runnable", h.runnable},
                    {"evidence", evidence},
                    {"splitting_metric", h.splitting_metric},
                    {"next_check", h.next_check},
                    {"fix", h.fix},
                    {"prevention", h.prevention},
                    {"owners", h.owners}});
  }
  nlohmann::json groups = nlohmann::json::object();
  for (const GroupSplit& g : r.groups) {
    nlohmann::json rows = nlohmann::json::array();
    for (const GroupRow& row : g.rows) {
      if (rows.size() >= 50) break;
      rows.push_back({{"value", row.value},
                      {"share_before", row.share_before},
                      {"share_after", row.share_after},
                      {"contribution", row.contribution},
                      {"requests_before", row.before.requests},
                      {"requests_after", row.after.requests},
                      {"ttft_p99_before_s", J(row.before.ttft_s.p99)},
                      {"ttft_p99_after_s", J(row.after.ttft_s.p99)},
                      {"hit_rate_before", J(row.before.prefix_cache_hit_rate)},
                      {"hit_rate_after", J(row.after.prefix_cache_hit_rate)},
                      {"prompt_tokens_p99_before", J(row.before.prompt_tokens.p99)},
                      {"prompt_tokens_p99_after", J(row.after.prompt_tokens.p99)},
                      {"replicas_before", row.before.replicas},
                      {"replicas_after", row.after.replicas}});
    }
    groups[g.dimension] = rows;
  }
  const Decomposition& d = r.decomposition;
  nlohmann::json actions = nlohmann::json::array();
  for (const Action& a : r.actions) {
    actions.push_back({{"kind", a.kind}, {"text", a.text}, {"owner", a.owner}});
  }
  nlohmann::json contributions = nlohmann::json::array();
  for (const Contribution& c : r.contributions) contributions.push_back(report::Sentence(r, c));
  nlohmann::json label_changes = nlohmann::json::array();
  for (const LabelChange& c : r.label_changes) label_changes.push_back(ToString(c));
  nlohmann::json ann = nlohmann::json::array(), sus = nlohmann::json::array();
  for (const Annotation& a : r.annotations) ann.push_back(AnnotationJson(a));
  for (const Annotation& a : r.suspect_changes) sus.push_back(AnnotationJson(a));
  const Magnitude& m = r.magnitude;
  nlohmann::json out = {
      {"schema_version", kReportSchemaVersion},
      {"verdict", std::string(ToString(r.verdict))},
      {"verdict_reason", r.verdict_reason},
      {"sources", r.sources},
      {"change_at_s", J(r.change_at_s)},
      {"onset_s", J(r.onset_s)},
      {"significance",
       {{"p99_ratio", J(r.p99_ratio.estimate)},
        {"p99_ratio_ci", {J(r.p99_ratio.lower), J(r.p99_ratio.upper)}},
        {"ci_level", r.p99_ratio.level},
        {"p50_ratio", J(r.p50_ratio)},
        {"mann_whitney_p", J(r.mann_whitney_p)},
        {"hodges_lehmann_shift_s", J(r.hodges_lehmann_shift_s)},
        {"tail_test_p", J(r.tail_test_p)},
        {"samples_baseline", r.test_samples_baseline},
        {"samples_incident", r.test_samples_incident}}},
      {"baseline", StatsJson(r.baseline)},
      {"incident", StatsJson(r.incident)},
      {"decomposition",
       {{"before",
         {{"ttft_s", TermsJson(d.before_ttft)},
          {"front_end_s", TermsJson(d.before_front_end)},
          {"queue_s", TermsJson(d.before_queue)},
          {"prefill_s", TermsJson(d.before_prefill)}}},
        {"after",
         {{"ttft_s", TermsJson(d.after_ttft)},
          {"front_end_s", TermsJson(d.after_front_end)},
          {"queue_s", TermsJson(d.after_queue)},
          {"prefill_s", TermsJson(d.after_prefill)}}},
        {"tail_mean_before",
         {{"ttft_s", J(d.tail_before_ttft)},
          {"front_end_s", J(d.tail_before_front_end)},
          {"queue_s", J(d.tail_before_queue)},
          {"prefill_s", J(d.tail_before_prefill)}}},
        {"tail_mean_after",
         {{"ttft_s", J(d.tail_after_ttft)},
          {"front_end_s", J(d.tail_after_front_end)},
          {"queue_s", J(d.tail_after_queue)},
          {"prefill_s", J(d.tail_after_prefill)}}},
        {"share_of_p99_increase",
         {{"front_end", J(d.share_front_end)},
          {"queue", J(d.share_queue)},
          {"prefill", J(d.share_prefill)}}},
        {"dominant", d.dominant}}},
      {"hypotheses", hyps},
      {"hypotheses_assessed", r.hypotheses_assessed},
      {"groups", groups},
      {"contributions", contributions},
      {"explanation",
       {{"available", m.available},
        {"cost_model", m.cost_model},
        {"prefill_compute_before_s", J(m.prefill_compute_before_s)},
        {"prefill_compute_after_s", J(m.prefill_compute_after_s)},
        {"utilisation_before", J(m.utilisation_before)},
        {"utilisation_after", J(m.utilisation_after)},
        {"busiest_replica_before", m.busiest_replica_before},
        {"busiest_replica_after", m.busiest_replica_after},
        {"kingman_wait_before_s", J(m.kingman_wait_before_s)},
        {"kingman_wait_after_s", J(m.kingman_wait_after_s)},
        {"pk_wait_before_s", J(m.pk_wait_before_s)},
        {"pk_wait_after_s", J(m.pk_wait_after_s)},
        {"observed_queue_mean_before_s", J(m.observed_queue_mean_before_s)},
        {"observed_queue_mean_after_s", J(m.observed_queue_mean_after_s)},
        {"verdict", m.verdict},
        {"sentence", m.sentence}}},
      {"attribution", AttributionJson(r)},
      {"actions", actions},
      {"annotations", ann},
      {"suspect_changes", sus},
      {"label_changes", label_changes},
      {"fidelity_notes", r.fidelity_notes},
  };
  // From metrics: the interval the histogram buckets give each ratio ([x, x] when they
  // resolve both quantiles; an upper end of null when unbounded).
  if (r.baseline.from_metrics && r.incident.from_metrics) {
    for (const auto& [key, i] :
         {std::pair{"p99_ratio_bounds", 2}, std::pair{"p50_ratio_bounds", 0}}) {
      const RatioBounds b = QuantileRatio(r.baseline.ttft_s, r.incident.ttft_s, i);
      out["significance"][key] = {J(b.lo), J(b.hi)};
    }
  }
  return out;
}

std::string RenderJson(const DiagnosisReport& r) { return ReportJson(r).dump(2) + "\n"; }

}  // namespace ttft
