// The workload's limits (ttft/workload.h, "Limits"): checked before a run starts, so
// that a hostile or mistyped scenario is an error naming its field, not a run that
// never ends or that exhausts memory.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ttft/workload.h"

namespace ttft {
namespace {

Status Above(const std::string& field, double value, double limit, std::string_view unit) {
  return Status::Invalid(
      fmt::format("{}: {:g} is above the limit of {:g} {}", field, value, limit, unit));
}

// Every value a token distribution can be asked for: a fixed value, a mean or a max
// above kMaxSegmentTokens is an error (a lognormal without a max is clamped when
// sampled, ttft/workload.h).
Status CheckTokens(const Distribution& d, const std::string& field) {
  constexpr double kLimit = kMaxSegmentTokens;
  auto check = [&](const char* part, double v) -> Status {
    if (v > kLimit) return Above(field + part, v, kLimit, "tokens");
    return Status::Ok();
  };
  switch (d.kind) {
    case Distribution::Kind::kFixed: return check("", d.value);
    case Distribution::Kind::kUniform: return check(".max", d.max);
    case Distribution::Kind::kLognormal:
      TTFT_RETURN_IF_ERROR(check(".mean", d.mean));
      TTFT_RETURN_IF_ERROR(check(".min", d.clamp_min));
      return check(".max", d.clamp_max);
    case Distribution::Kind::kEmpirical:
      for (double v : d.values) TTFT_RETURN_IF_ERROR(check(".values", v));
      return Status::Ok();
  }
  return Status::Ok();
}

// The arrivals a tenant expects in [0, duration_s): its piecewise rate integrated over
// the run, times its traffic changes from their times on; and its peak rate.
struct Load {
  double expected_requests = 0;
  double peak_rps = 0;
};

Load TenantLoad(const TenantSpec& t, const std::vector<TrafficChange>& changes, double duration_s) {
  std::vector<double> cuts = {0, duration_s};
  for (const RatePiece& p : t.arrivals.pieces) cuts.push_back(p.from_s);
  for (const TrafficChange& c : changes) {
    if (c.tenant == t.name) cuts.push_back(c.at_s);
  }
  std::sort(cuts.begin(), cuts.end());
  Load load;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    const double from = std::max(cuts[i], 0.0), to = std::min(cuts[i + 1], duration_s);
    if (!(to > from)) continue;
    double rate = t.arrivals.rate_rps;
    for (const RatePiece& p : t.arrivals.pieces) {
      if (p.from_s <= from) rate = p.rate_rps;
    }
    for (const TrafficChange& c : changes) {
      if (c.tenant == t.name && c.at_s <= from) rate *= c.multiplier;
    }
    load.peak_rps = std::max(load.peak_rps, rate);
    load.expected_requests += rate * (to - from);
  }
  return load;
}

}  // namespace

Status CheckWorkloadLimits(const WorkloadSpec& spec) {
  if (spec.duration_s > kMaxDurationS) {
    return Above("duration_s", spec.duration_s, kMaxDurationS, "s (30 days)");
  }
  for (const TemplateSpec& t : spec.templates) {
    for (const TemplateVersion& v : t.versions) {
      for (const SegmentSpec& s : v.segments) {
        TTFT_RETURN_IF_ERROR(CheckTokens(
            s.tokens,
            fmt::format("templates.{}.versions.{}.segments.{}.tokens", t.name, v.version, s.name)));
      }
    }
  }
  double expected = 0;
  for (size_t i = 0; i < spec.tenants.size(); ++i) {
    const TenantSpec& t = spec.tenants[i];
    const std::string field = fmt::format("tenants[{}] ({})", i, t.name);
    TTFT_RETURN_IF_ERROR(CheckTokens(t.output_tokens, field + ".output_tokens"));
    const Load load = TenantLoad(t, spec.traffic_changes, spec.duration_s);
    if (load.peak_rps > kMaxRateRps) {
      return Above(field + ".rate_rps (with its traffic changes)", load.peak_rps, kMaxRateRps,
                   "requests/s");
    }
    expected += load.expected_requests;
  }
  for (size_t i = 0; i < spec.shared_prefix.size(); ++i) {
    for (size_t k = 0; k < spec.shared_prefix[i].stages.size(); ++k) {
      const LoadStage& st = spec.shared_prefix[i].stages[k];
      const std::string field = fmt::format("shared_prefix[{}].stages[{}]", i, k);
      if (st.rate_rps > kMaxRateRps) {
        return Above(field + ".rate_rps", st.rate_rps, kMaxRateRps, "requests/s");
      }
      if (st.duration_s > kMaxDurationS) {
        return Above(field + ".duration_s", st.duration_s, kMaxDurationS, "s (30 days)");
      }
      expected += st.rate_rps * st.duration_s;
    }
  }
  if (expected > kMaxExpectedRequests) {
    return Status::Invalid(fmt::format(
        "the tenants and stages would send about {:.3g} requests, above the limit of {:g} per "
        "run: shorten duration_s or lower the rates (or split the run)",
        expected, kMaxExpectedRequests));
  }
  return Status::Ok();
}

}  // namespace ttft
