// The tables the renderers share (report/tables.h).
#include "report/tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ttft/format.h"

namespace ttft::report {

using numfmt::Num;
using numfmt::Pct;
using numfmt::Pct1;
using numfmt::Ratio;
using numfmt::Secs;
using numfmt::X;

namespace {

// The change of quantile i: "" when the buckets resolve either side only as a bound
// (a ratio of interpolated figures there is noise).
std::string ChangeCell(const TermQuantiles& a, const TermQuantiles& b, size_t i) {
  if (IsQuantileBound(a, i) || IsQuantileBound(b, i)) return "";
  return X(Ratio(a.at(i), b.at(i)));
}

// A request rate ("4.50 rps"); "n/a" when unknown (a window of one scrape's totals).
std::string Rps(double v) { return std::isfinite(v) ? numfmt::Fixed(v, 2) + " rps" : "n/a"; }

// The input may carry no preemption counts (spans without the field, scrapes without
// vllm:num_preemptions_total): say so rather than print NaN.
std::string Preemptions(const WindowStats& w) {
  return std::isfinite(w.preemptions_per_request) ? numfmt::Fixed(w.preemptions_per_request, 3)
                                                  : "n/a (no data)";
}

}  // namespace

std::vector<SymRow> Symptoms(const DiagnosisReport& r) {
  const WindowStats& a = r.baseline;
  const WindowStats& b = r.incident;
  return {
      {"window", numfmt::Window(a.from_s, a.to_s), numfmt::Window(b.from_s, b.to_s), ""},
      {"requests (ok)", fmt::format("{} ({})", a.requests, a.ok),
       fmt::format("{} ({})", b.requests, b.ok), ""},
      {"request rate", Rps(a.request_rate_rps), Rps(b.request_rate_rps),
       X(Ratio(a.request_rate_rps, b.request_rate_rps))},
      {"p50 TTFT", QuantileText(a.ttft_s, 0), QuantileText(b.ttft_s, 0),
       ChangeCell(a.ttft_s, b.ttft_s, 0)},
      {"p99 TTFT", QuantileText(a.ttft_s, 2), QuantileText(b.ttft_s, 2),
       ChangeCell(a.ttft_s, b.ttft_s, 2)},
      {"p99 queue", QuantileText(a.queue_s, 2), QuantileText(b.queue_s, 2),
       ChangeCell(a.queue_s, b.queue_s, 2)},
      {"p99 prefill", QuantileText(a.prefill_s, 2), QuantileText(b.prefill_s, 2),
       ChangeCell(a.prefill_s, b.prefill_s, 2)},
      {"ITL p50", Secs(a.itl_s.p50), Secs(b.itl_s.p50), X(Ratio(a.itl_s.p50, b.itl_s.p50))},
      {"max ITL p99", Secs(a.itl_max_p99_s), Secs(b.itl_max_p99_s),
       X(Ratio(a.itl_max_p99_s, b.itl_max_p99_s))},
      {"error rate", Pct1(a.error_rate), Pct1(b.error_rate), ""},
      {"replicas", Num(ReplicasShown(a)), Num(ReplicasShown(b)), ""},
      {"prefix-cache hit rate", Pct1(a.prefix_cache_hit_rate), Pct1(b.prefix_cache_hit_rate), ""},
      {"prompt tokens p99", Num(a.prompt_tokens.p99), Num(b.prompt_tokens.p99),
       X(Ratio(a.prompt_tokens.p99, b.prompt_tokens.p99))},
      {"output tokens mean", Num(a.output_tokens_mean), Num(b.output_tokens_mean),
       X(Ratio(a.output_tokens_mean, b.output_tokens_mean))},
      {"preemptions / request", Preemptions(a), Preemptions(b), ""},
  };
}

std::string Terms(const TermQuantiles& t) {
  const std::string p50 = QuantileText(t, 0), p90 = QuantileText(t, 1), p99 = QuantileText(t, 2);
  // Three bounds alike ("<=300 ms" each) say it once, and fit the tables' columns.
  if (p50 == p90 && p90 == p99 && (p50.starts_with("<=") || p50.starts_with(">="))) {
    return "all " + p50;
  }
  return fmt::format("{} / {} / {}", p50, p90, p99);
}

bool StatesShares(const DiagnosisReport& r) { return r.verdict == Verdict::kRegression; }

std::string SharesWithheld(const DiagnosisReport& r) {
  if (StatesShares(r)) return "";
  if (r.verdict == Verdict::kInsufficientData || !r.hypotheses_assessed) {
    return "too few requests to tell a tail increase from noise: no share of one is stated";
  }
  const RatioBounds bounds = QuantileRatio(r.baseline.ttft_s, r.incident.ttft_s, 2);
  if (bounds.lo < bounds.hi) {
    return fmt::format(
        "p99 TTFT {} -> {} ({}): no share of a change the buckets do not "
        "resolve is stated",
        QuantileText(r.baseline.ttft_s, 2), QuantileText(r.incident.ttft_s, 2),
        QuantileRatioText(r.baseline.ttft_s, r.incident.ttft_s, 2));
  }
  const double ratio = Ratio(r.baseline.ttft_s.p99, r.incident.ttft_s.p99);
  if (!std::isfinite(ratio)) return "no p99 TTFT in one window: no share of an increase is stated";
  if (ratio <= 1) return fmt::format("p99 TTFT {}: no increase to share out", X(ratio));
  return fmt::format(
      "p99 TTFT {} is within noise (not a significant increase): no share of it is stated",
      X(ratio));
}

ShareWords ShareParts(double share, double delta_s) {
  if (!std::isfinite(share)) return {"n/a", ""};
  // Within half a point of the range: rounding, not a term that fell or overshot.
  if (share >= -0.005 && share <= 1.005) return {Pct(std::clamp(share, 0.0, 1.0)), ""};
  if (share < 0) {
    return {"none", std::isfinite(delta_s) ? fmt::format(" (it fell by {})", Secs(-delta_s))
                                           : std::string(" (it fell)")};
  }
  return {"all", std::isfinite(delta_s) ? fmt::format(" (+{}; the other terms fell)", Secs(delta_s))
                                        : std::string(" (the other terms fell)")};
}

std::string ShareText(double share, double delta_s) {
  const ShareWords w = ShareParts(share, delta_s);
  return w.share + w.note;
}

TermShares Shares(const DiagnosisReport& r) {
  if (!StatesShares(r)) return {"n/a", "n/a", "n/a"};
  const Decomposition& d = r.decomposition;
  return {ShareText(d.share_front_end, d.tail_after_front_end - d.tail_before_front_end),
          ShareText(d.share_queue, d.tail_after_queue - d.tail_before_queue),
          ShareText(d.share_prefill, d.tail_after_prefill - d.tail_before_prefill)};
}

namespace {

// A contribution of a label value new in the incident (no baseline figures).
bool IsNew(const DiagnosisReport& r, const Contribution& c) {
  if (std::isfinite(c.ttft_p99_before_s)) return false;
  for (const LabelChange& l : r.label_changes) {
    if (l.kind == LabelChange::Kind::kNew && l.dimension == c.dimension && l.value == c.value) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string Sentence(const DiagnosisReport& r, const Contribution& c) {
  std::string s =
      IsNew(r, c)
          ? fmt::format("{} {} (new in the incident): hit rate {}, p99 TTFT {}, {} of the requests",
                        c.dimension, LabelValueText(c.value), Pct(c.hit_rate_after),
                        Secs(c.ttft_p99_after_s), Pct(c.share_of_requests))
          : fmt::format("{} {}: hit rate {} to {}, p99 TTFT {} to {}, {} of the requests",
                        c.dimension, LabelValueText(c.value), Pct(c.hit_rate_before),
                        Pct(c.hit_rate_after), Secs(c.ttft_p99_before_s), Secs(c.ttft_p99_after_s),
                        Pct(c.share_of_requests));
  if (StatesShares(r)) {
    s += fmt::format(", {} of the p99 increase", ShareText(c.share_of_increase, kMissing));
  }
  return s;
}

std::vector<std::string> WhereItLives(const DiagnosisReport& r) {
  std::vector<std::string> out;
  for (const Contribution& c : r.contributions) out.push_back(Sentence(r, c));
  for (const LabelChange& l : r.label_changes) {
    bool named = false;
    for (const Contribution& c : r.contributions) {
      named = named || (IsNew(r, c) && l.kind == LabelChange::Kind::kNew &&
                        l.dimension == c.dimension && l.value == c.value);
    }
    if (!named) out.push_back(ToString(l));
  }
  return out;
}

std::string NothingToFix(const DiagnosisReport& r) {
  if (r.verdict == Verdict::kInsufficientData) {
    return "nothing to act on yet: too few requests to tell whether p99 TTFT regressed (see the "
           "verdict)";
  }
  return "nothing to fix: no regression";
}

AttributionText AttributionLines(const DiagnosisReport& r) {
  const Attribution& a = r.attribution;
  AttributionText t;
  t.headline = Headline(a);
  if (!a.run) return t;
  auto pct = [](double v) { return numfmt::Pct(v); };
  const bool shares = a.replay_none_p99_s - a.replay_all_p99_s > 0;
  for (const FactorShare& f : a.factors) {
    std::string line = f.cause + " (" + f.hypothesis + ")";
    if (shares) {
      line += fmt::format(": {} of the p99 increase", pct(f.share));
      if (a.seeds > 1 && pct(f.share_lo) != pct(f.share_hi))
        line += fmt::format(" (95% interval over {} seeds {} to {})", a.seeds, pct(f.share_lo),
                            pct(f.share_hi));
      line += fmt::format("; restored alone, the p99 would be {} ({} of the increase)",
                          numfmt::Secs(f.alone_p99_s), pct(f.single_share));
    }
    if (!f.change.empty()) line += "; what moved: " + f.change;
    t.causes.push_back(std::move(line));
    const Hypothesis* h = nullptr;
    for (const Hypothesis& x : r.hypotheses) {
      if (x.id == f.hypothesis) h = &x;
    }
    if (h != nullptr && !h->fix.empty()) {
      t.mitigations.push_back(shares ? fmt::format("{} ({}): {}", f.cause, pct(f.share), h->fix)
                                     : fmt::format("{}: {}", f.cause, h->fix));
    }
  }
  if (shares && a.factors.size() > 1) {
    t.causes.push_back(fmt::format(
        "interaction: {} of the increase (95% interval {} to {}) is what no cause explains "
        "alone (the increase less the sum of the single effects); the shares above include it",
        pct(a.interaction), pct(a.interaction_lo), pct(a.interaction_hi)));
  }
  t.checks.push_back(fmt::format(
      "model check, incident: the replay as observed gives a p99 of {} against {} observed (95% "
      "CI {} to {}): {}",
      numfmt::Secs(a.replay_none_p99_s), numfmt::Secs(a.observed_after_p99_s),
      numfmt::Secs(a.observed_after_lo_s), numfmt::Secs(a.observed_after_hi_s),
      a.incident_check_ok ? "reproduced" : "NOT reproduced: shares are of the replayed increase"));
  t.checks.push_back(fmt::format(
      "model check, baseline: every cause restored gives a p99 of {} ({} to {} over seeds) "
      "against the baseline's {} (95% CI {} to {}): {}",
      numfmt::Secs(a.replay_all_p99_s), numfmt::Secs(a.replay_all_min_s),
      numfmt::Secs(a.replay_all_max_s), numfmt::Secs(a.observed_before_p99_s),
      numfmt::Secs(a.observed_before_lo_s), numfmt::Secs(a.observed_before_hi_s),
      a.baseline_check_ok ? "within its noise" : "NOT within its noise"));
  if (a.unexplained > 0.05) {
    t.checks.push_back(fmt::format(
        "{} of the observed p99 increase is not reproduced by restoring these causes (a cause "
        "the replay cannot restore, or the model's error)",
        pct(a.unexplained)));
  }
  t.notes.push_back(fmt::format("method: {}; {} replays of {} baseline and {} incident requests",
                                a.method, a.replays, a.requests_baseline, a.requests_incident));
  for (const std::string& s : a.assumptions) t.notes.push_back("assumed: " + s);
  for (const std::string& s : a.not_factors) t.notes.push_back("not replayed: " + s);
  return t;
}

}  // namespace ttft::report
