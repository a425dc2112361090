// RequestSource: tenants' arrival processes and trace replays merged in arrival
// order (ttft/workload.h).
//
// Arrivals. Each tenant's process runs in "operational time" Lambda(t), the
// integral of its rate r(t) (piecewise constant: rate pieces times the latest
// tenant_traffic multiplier). Gaps are drawn with mean 1 in operational time and
// mapped back through Lambda^-1, so a gap in progress when the rate changes is
// rescaled: its remaining work continues at the new rate. For Poisson (exponential
// gaps) this is exact by memorylessness: it has the same law as restarting the gap
// at the boundary. For gamma renewal (shape 1/cv^2) it is the standard time change
// of a renewal process. A zero rate pauses the clock; no arrivals occur.
//
// Randomness. Each tenant has its own streams for arrivals, content and output
// lengths, seeded from (seed, tenant name, stream): adding a tenant, or changing a
// template, does not move any other tenant's arrivals.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <utility>

#include "ttft/workload.h"
#include "workload/random.h"

namespace ttft {

using workload_internal::Combine;
using workload_internal::Exp1;
using workload_internal::Gamma;
using workload_internal::HashStr;
using workload_internal::HashU64;

using workload_internal::Uniform01;

namespace {

constexpr int32_t kMaxPromptTokens = std::numeric_limits<int32_t>::max() / 2;

// A sampled segment or output length: at least 1, at most kMaxSegmentTokens.
int32_t RoundTokens(double x) {
  if (!(x >= 1)) return 1;  // also NaN
  if (x >= kMaxSegmentTokens) return kMaxSegmentTokens;
  return static_cast<int32_t>(std::llround(x));
}

uint64_t Tag(std::string_view tag) { return HashStr(tag, 0x7474667400000000ULL); }

struct SegmentPlan {
  SegmentKind kind = SegmentKind::kStatic;
  uint64_t key = 0;                    // static, per_tenant: the key; otherwise the key base
  int32_t tokens = 0;                  // static, per_tenant
  const Distribution* dist = nullptr;  // per_user, per_request
};

struct VersionPlan {
  int32_t label = 0;
  std::vector<SegmentPlan> segments;
};

struct Source {
  // Pending request, ready to be merged.
  bool has_pending = false;
  bool exhausted = false;
  Request pending;
  std::vector<PromptPiece> pieces;  // scratch
};

struct TenantSource : Source {
  const TenantSpec* spec = nullptr;
  int32_t index = 0;
  Rng arrival_rng, content_rng, output_rng;
  uint64_t seed = 0;
  uint64_t salt = 0;
  double shape = 1;  // gamma shape; <= 0: Poisson
  bool poisson = true;
  bool deterministic = false;
  // Piecewise-constant rate: rates[i] holds on [times[i], times[i + 1]).
  std::vector<double> times, rates;
  size_t seg = 0;
  double t = 0;
  double work = 0;  // remaining operational time of the gap in progress
  std::vector<std::pair<double, VersionPlan>> timeline;  // sorted by at_s
  std::vector<double> canary_fraction;                   // parallel to timeline; 0: not a canary
  Rng canary_rng;                                        // draws the canary split only
  int64_t counter = 0;
};

struct TraceSource : Source {
  const TraceSpec* spec = nullptr;
  int32_t tenant = 0;
  int32_t label = 0;
  uint64_t key_base = 0;
  std::unique_ptr<TraceReader> reader;
  TraceRecord rec;
  int64_t count = 0;
};

// inference-perf shared_prefix traffic (shared_prefix.cc): stage by stage.
struct SharedPrefixSource : Source {
  const SharedPrefixSpec* spec = nullptr;
  int32_t tenant = 0;
  int32_t label = 0;
  std::vector<SharedPrefixPrompt> prompts;
  std::vector<std::vector<uint64_t>> hashes;  // per prompt
  Rng arrival_rng;
  size_t stage = 0;
  std::vector<double> times;  // the current stage's send times
  size_t k = 0;               // request number within the stage
};

class RequestSourceImpl final : public RequestSource {
 public:
  static Result<std::unique_ptr<RequestSource>> Make(const WorkloadSpec& spec);

  Result<bool> Next(Request& out) override;
  const std::vector<std::string>& tenant_names() const override { return tenant_names_; }
  const std::vector<std::string>& template_labels() const override { return labels_; }
  const std::vector<std::string>& tenant_regions() const override { return regions_; }
  const std::vector<std::string>& tenant_pools() const override { return pools_; }

 private:
  Status Refill(TenantSource& s);
  Status Refill(TraceSource& s);
  Status Refill(SharedPrefixSource& s);
  Result<VersionPlan> Plan(const TenantSpec& tenant, size_t tmpl, size_t version);

  WorkloadSpec spec_;
  std::vector<std::unique_ptr<TenantSource>> tenants_;
  std::vector<std::unique_ptr<TraceSource>> traces_;
  std::vector<std::unique_ptr<SharedPrefixSource>> shared_;
  std::vector<std::string> tenant_names_, labels_, regions_, pools_;
  std::vector<std::vector<int32_t>> label_index_;  // [template][version]
  int64_t next_seq_ = 0;
};

// The rate schedule of a tenant over [0, duration).
void BuildSchedule(const TenantSpec& t, const std::vector<TrafficChange>& changes, double duration,
                   TenantSource& s) {
  std::vector<double> bounds{0};
  for (const auto& p : t.arrivals.pieces) {
    if (p.from_s > 0 && p.from_s < duration) bounds.push_back(p.from_s);
  }
  std::vector<const TrafficChange*> mine;
  for (const auto& c : changes) {
    if (c.tenant != t.name) continue;
    mine.push_back(&c);
    if (c.at_s > 0 && c.at_s < duration) bounds.push_back(c.at_s);
  }
  std::stable_sort(mine.begin(), mine.end(), [](const TrafficChange* a, const TrafficChange* b) {
    return a->at_s < b->at_s;
  });
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  for (double b : bounds) {
    double base = t.arrivals.rate_rps;
    for (const auto& p : t.arrivals.pieces) {
      if (p.from_s <= b) base = p.rate_rps;
    }
    double mult = 1;  // the latest change applies (relative to the configured rate)
    for (const auto* c : mine) {
      if (c->at_s <= b) mult = c->multiplier;
    }
    s.times.push_back(b);
    s.rates.push_back(std::max(0.0, base * mult));
  }
}

Result<VersionPlan> RequestSourceImpl::Plan(const TenantSpec& tenant, size_t ti, size_t vi) {
  const TemplateSpec& tmpl = spec_.templates[ti];
  const TemplateVersion& ver = tmpl.versions[vi];
  VersionPlan plan;
  plan.label = label_index_[ti][vi];
  for (size_t i = 0; i < ver.segments.size(); ++i) {
    const SegmentSpec& seg = ver.segments[i];
    SegmentPlan sp;
    sp.kind = seg.kind;
    switch (seg.kind) {
      case SegmentKind::kStatic: {
        // The key depends on the content only: not on the version or the position.
        sp.key = seg.content.empty() ? Combine(Combine(Tag("static"), tmpl.name), seg.name)
                                     : Combine(Tag("static-content"), seg.content);
        Rng rng(HashU64(sp.key, spec_.seed));
        sp.tokens = RoundTokens(seg.tokens.Sample(rng));
        break;
      }
      case SegmentKind::kPerTenant: {
        sp.key = Combine(Combine(Tag("per_tenant"), tenant.name), seg.name);
        Rng rng(HashU64(sp.key, spec_.seed));
        sp.tokens = RoundTokens(seg.tokens.Sample(rng));
        break;
      }
      case SegmentKind::kPerUser:
        sp.key = Combine(Combine(Tag("per_user"), tenant.name), seg.name);
        sp.dist = &seg.tokens;
        break;
      case SegmentKind::kPerRequest:
        sp.key = Combine(Combine(Combine(Tag("per_request"), tenant.name), seg.name), i);
        sp.dist = &seg.tokens;
        break;
    }
    plan.segments.push_back(sp);
  }
  return plan;
}

Result<std::unique_ptr<RequestSource>> RequestSourceImpl::Make(const WorkloadSpec& in) {
  TTFT_RETURN_IF_ERROR(CheckWorkloadLimits(in));
  auto self = std::make_unique<RequestSourceImpl>();
  self->spec_ = in;
  const WorkloadSpec& spec = self->spec_;
  if (spec.block_size <= 0) {
    return Status::Invalid(fmt::format("block_size: must be > 0, got {}", spec.block_size));
  }
  if (!spec.tenants.empty() && !(spec.duration_s > 0)) {
    return Status::Invalid(fmt::format("duration_s: must be > 0, got {}", spec.duration_s));
  }
  auto find_template = [&](std::string_view name) -> int {
    for (size_t i = 0; i < spec.templates.size(); ++i) {
      if (spec.templates[i].name == name) return static_cast<int>(i);
    }
    return -1;
  };
  auto find_version = [&](int ti, std::string_view v) -> int {
    const auto& vs = spec.templates[ti].versions;
    for (size_t i = 0; i < vs.size(); ++i) {
      if (vs[i].version == v) return static_cast<int>(i);
    }
    return -1;
  };
  for (size_t ti = 0; ti < spec.templates.size(); ++ti) {
    self->label_index_.emplace_back();
    for (const auto& v : spec.templates[ti].versions) {
      self->label_index_.back().push_back(static_cast<int32_t>(self->labels_.size()));
      self->labels_.push_back(spec.templates[ti].name + "@" + v.version);
    }
  }
  for (size_t i = 0; i < spec.template_switches.size(); ++i) {
    const auto& sw = spec.template_switches[i];
    const int ti = find_template(sw.template_name);
    if (ti < 0) {
      return Status::Invalid(fmt::format("template_switches[{}].template: unknown template \"{}\"",
                                         i, sw.template_name));
    }
    if (find_version(ti, sw.version) < 0) {
      return Status::Invalid(
          fmt::format("template_switches[{}].version: template \"{}\" has no "
                      "version \"{}\"",
                      i, sw.template_name, sw.version));
    }
    if (!sw.tenant.empty() &&
        std::none_of(spec.tenants.begin(), spec.tenants.end(),
                     [&](const TenantSpec& t) { return t.name == sw.tenant; })) {
      return Status::Invalid(
          fmt::format("template_switches[{}].tenant: unknown tenant \"{}\"", i, sw.tenant));
    }
  }
  for (size_t i = 0; i < spec.traffic_changes.size(); ++i) {
    const auto& c = spec.traffic_changes[i];
    if (std::none_of(spec.tenants.begin(), spec.tenants.end(),
                     [&](const TenantSpec& t) { return t.name == c.tenant; })) {
      return Status::Invalid(
          fmt::format("traffic_changes[{}].tenant: unknown tenant \"{}\"", i, c.tenant));
    }
    if (!(c.multiplier >= 0) || std::isinf(c.multiplier)) {
      return Status::Invalid(
          fmt::format("traffic_changes[{}].multiplier: must be >= 0, got {}", i, c.multiplier));
    }
  }

  for (size_t i = 0; i < spec.tenants.size(); ++i) {
    const TenantSpec& t = spec.tenants[i];
    for (size_t j = 0; j < i; ++j) {
      if (spec.tenants[j].name == t.name) {
        return Status::Invalid(fmt::format("tenants[{}].name: duplicate tenant \"{}\"", i, t.name));
      }
    }
    const int ti = find_template(t.template_name);
    if (ti < 0) {
      return Status::Invalid(
          fmt::format("tenants[{}].template: unknown template \"{}\"", i, t.template_name));
    }
    const int vi = find_version(ti, t.template_version);
    if (vi < 0) {
      return Status::Invalid(
          fmt::format("tenants[{}].version: template \"{}\" has no version "
                      "\"{}\"",
                      i, t.template_name, t.template_version));
    }
    const auto& a = t.arrivals;
    if (a.pieces.empty() && !(a.rate_rps > 0 && std::isfinite(a.rate_rps))) {
      return Status::Invalid(
          fmt::format("tenants[{}].rate_rps: must be > 0, got {}", i, a.rate_rps));
    }
    for (size_t p = 0; p < a.pieces.size(); ++p) {
      if (!(a.pieces[p].rate_rps >= 0) || std::isinf(a.pieces[p].rate_rps) ||
          !std::isfinite(a.pieces[p].from_s) ||
          (p > 0 && a.pieces[p].from_s <= a.pieces[p - 1].from_s)) {
        return Status::Invalid(fmt::format(
            "tenants[{}].rate_rps[{}]: pieces need rate_rps >= 0 and increasing from_s", i, p));
      }
    }
    auto s = std::make_unique<TenantSource>();
    s->spec = &t;
    s->index = static_cast<int32_t>(i);
    const uint64_t base = Combine(HashU64(spec.seed, 0), t.name);
    s->arrival_rng.seed(Combine(base, "arrivals"));
    s->content_rng.seed(Combine(base, "content"));
    s->output_rng.seed(Combine(base, "output"));
    s->seed = spec.seed;
    s->salt = t.cache_salt.empty() ? 0 : HashStr(t.cache_salt, 0x5a17);
    s->poisson = a.kind == ArrivalSpec::Kind::kPoisson;
    s->deterministic = !s->poisson && !(a.cv > 0);
    if (!s->poisson && a.cv > 0) s->shape = 1.0 / (a.cv * a.cv);
    BuildSchedule(t, spec.traffic_changes, spec.duration_s, *s);
    // Template timeline: the initial version, then the switches that apply.
    TTFT_ASSIGN_OR_RETURN(VersionPlan initial, self->Plan(t, ti, vi));
    s->timeline.emplace_back(-std::numeric_limits<double>::infinity(), std::move(initial));
    s->canary_fraction.push_back(0);
    s->canary_rng.seed(Combine(base, "canary"));
    std::vector<const TemplateSwitch*> sws;
    for (const auto& sw : spec.template_switches) {
      if (sw.tenant == t.name || (sw.tenant.empty() && sw.template_name == t.template_name)) {
        sws.push_back(&sw);
      }
    }
    std::stable_sort(sws.begin(), sws.end(), [](const TemplateSwitch* a, const TemplateSwitch* b) {
      return a->at_s < b->at_s;
    });
    for (const auto* sw : sws) {
      const int sti = find_template(sw->template_name);
      TTFT_ASSIGN_OR_RETURN(VersionPlan p, self->Plan(t, sti, find_version(sti, sw->version)));
      s->timeline.emplace_back(sw->at_s, std::move(p));
      s->canary_fraction.push_back(sw->canary_fraction);
    }
    self->tenant_names_.push_back(t.name);
    self->regions_.push_back(t.region);
    self->pools_.push_back(t.pool);
    self->tenants_.push_back(std::move(s));
  }

  for (size_t i = 0; i < spec.traces.size(); ++i) {
    const TraceSpec& tr = spec.traces[i];
    if (!(tr.time_scale > 0) || std::isinf(tr.time_scale)) {
      return Status::Invalid(
          fmt::format("traces[{}].time_scale: must be > 0, got {}", i, tr.time_scale));
    }
    if (tr.max_requests < 0) {
      return Status::Invalid(
          fmt::format("traces[{}].max_requests: must be >= 0, got {}", i, tr.max_requests));
    }
    auto s = std::make_unique<TraceSource>();
    s->spec = &tr;
    TTFT_ASSIGN_OR_RETURN(s->reader, TraceReader::Open(tr.format, tr.path));
    s->tenant = static_cast<int32_t>(self->tenant_names_.size());
    s->label = static_cast<int32_t>(self->labels_.size());
    s->key_base = Combine(Tag(tr.format == TraceSpec::Format::kMooncake ? "mooncake" : "azure"),
                          static_cast<uint64_t>(i));
    const std::string stem = std::filesystem::path(tr.path).stem().string();
    self->labels_.push_back(fmt::format(
        "{}@{}", tr.format == TraceSpec::Format::kMooncake ? "mooncake" : "azure", stem));
    self->tenant_names_.push_back(tr.tenant);
    self->regions_.push_back(tr.region);
    self->pools_.push_back(tr.pool);
    self->traces_.push_back(std::move(s));
  }
  for (size_t i = 0; i < spec.shared_prefix.size(); ++i) {
    const SharedPrefixSpec& sp = spec.shared_prefix[i];
    TTFT_RETURN_IF_ERROR(ValidateSharedPrefix(sp, fmt::format("shared_prefix[{}]", i)));
    auto s = std::make_unique<SharedPrefixSource>();
    s->spec = &sp;
    s->prompts = BuildSharedPrefixPrompts(sp, spec.seed);
    for (const auto& p : s->prompts) {
      s->hashes.emplace_back();
      ComputeBlockHashes(p.pieces, spec.block_size, 0, s->hashes.back());
    }
    s->arrival_rng.seed(Combine(Combine(HashU64(spec.seed, 0), sp.tenant), "shared-arrivals"));
    s->times =
        ConstantLoadSendTimes(sp.stages[0].rate_rps, sp.stages[0].duration_s, 0.0, s->arrival_rng);
    s->tenant = static_cast<int32_t>(self->tenant_names_.size());
    s->label = static_cast<int32_t>(self->labels_.size());
    self->labels_.push_back("shared_prefix@" + sp.tenant);
    self->tenant_names_.push_back(sp.tenant);
    self->regions_.push_back(sp.region);
    self->pools_.push_back(sp.pool);
    self->shared_.push_back(std::move(s));
  }
  return std::unique_ptr<RequestSource>(std::move(self));
}

Status RequestSourceImpl::Refill(SharedPrefixSource& s) {
  const SharedPrefixSpec& sp = *s.spec;
  while (s.k >= s.times.size()) {
    if (s.stage + 1 >= sp.stages.size()) {
      s.exhausted = true;
      return Status::Ok();
    }
    // The next stage starts stage_gap_s after this one's last send (the fleet cannot
    // wait for the drain; see ttft/workload.h). Request numbers restart at 0.
    const double start = (s.times.empty() ? 0.0 : s.times.back()) + sp.stage_gap_s;
    ++s.stage;
    s.times = ConstantLoadSendTimes(sp.stages[s.stage].rate_rps, sp.stages[s.stage].duration_s,
                                    start, s.arrival_rng);
    s.k = 0;
  }
  const double t = s.times[s.k];
  if (spec_.duration_s > 0 && t >= spec_.duration_s) {
    s.exhausted = true;
    return Status::Ok();
  }
  const size_t prompt = s.k % s.prompts.size();
  Request& r = s.pending;
  r = Request{};
  r.arrival_s = t;
  r.tenant = s.tenant;
  r.template_label = s.label;
  r.prompt_tokens = s.prompts[prompt].tokens;
  r.output_tokens = sp.output_len;
  r.block_hashes = s.hashes[prompt];
  ++s.k;
  s.has_pending = true;
  return Status::Ok();
}

Status RequestSourceImpl::Refill(TenantSource& s) {
  const double duration = spec_.duration_s;
  // Next arrival: walk the rate schedule until the gap's operational time is spent.
  if (s.work <= 0) {
    if (s.deterministic) {
      s.work = 1;
    } else if (s.poisson) {
      s.work = Exp1(s.arrival_rng);
    } else {
      s.work = Gamma(s.arrival_rng, s.shape) / s.shape;
    }
  }
  for (;;) {
    if (s.t >= duration) {
      s.exhausted = true;
      return Status::Ok();
    }
    const double end = s.seg + 1 < s.times.size() ? s.times[s.seg + 1] : duration;
    const double rate = s.rates[s.seg];
    if (rate > 0) {
      const double dt = s.work / rate;
      if (s.t + dt < end) {
        s.t += dt;
        s.work = 0;
        break;
      }
      s.work = std::max(0.0, s.work - (end - s.t) * rate);
    }
    s.t = end;
    if (s.seg + 1 < s.times.size()) {
      ++s.seg;
    } else {
      s.exhausted = true;
      return Status::Ok();
    }
  }
  // Content at the arrival time.
  size_t v = 0;
  while (v + 1 < s.timeline.size() && s.timeline[v + 1].first <= s.t) ++v;
  Request::CanaryArm arm = Request::CanaryArm::kNone;
  if (const double f = s.canary_fraction[v]; f > 0 && f < 1 && v > 0) {
    // 53 random bits to a uniform in [0, 1).
    const double u = static_cast<double>(s.canary_rng() >> 11) * 0x1.0p-53;
    arm = u < f ? Request::CanaryArm::kCanary : Request::CanaryArm::kBaseline;
    if (arm == Request::CanaryArm::kBaseline) --v;
  }
  const VersionPlan& plan = s.timeline[v].second;
  Request& r = s.pending;
  r = Request{};
  r.canary = arm;
  r.arrival_s = s.t;
  r.tenant = s.index;
  r.template_label = plan.label;
  r.client_timeout_s = s.spec->timeout_s;
  s.pieces.clear();
  int64_t prompt = 0;
  int64_t first_unique_token = -1;
  for (size_t i = 0; i < plan.segments.size(); ++i) {
    const SegmentPlan& sp = plan.segments[i];
    PromptPiece p;
    switch (sp.kind) {
      case SegmentKind::kStatic:
      case SegmentKind::kPerTenant:
        p.key = sp.key;
        p.tokens = sp.tokens;
        break;
      case SegmentKind::kPerUser: {
        const int64_t users = std::max<int64_t>(1, s.spec->users);
        auto user = static_cast<int64_t>(Uniform01(s.content_rng) * static_cast<double>(users));
        user = std::min(user, users - 1);
        p.key = Combine(sp.key, static_cast<uint64_t>(user));
        Rng rng(HashU64(p.key, s.seed));
        p.tokens = RoundTokens(sp.dist->Sample(rng));
        break;
      }
      case SegmentKind::kPerRequest:
        p.key = Combine(sp.key, static_cast<uint64_t>(s.counter));
        p.tokens = RoundTokens(sp.dist->Sample(s.content_rng));
        if (first_unique_token < 0 && p.tokens > 0) first_unique_token = prompt;
        break;
    }
    prompt += p.tokens;
    s.pieces.push_back(p);
  }
  ++s.counter;
  r.prompt_tokens = static_cast<int32_t>(std::min<int64_t>(prompt, kMaxPromptTokens));
  r.output_tokens = RoundTokens(s.spec->output_tokens.Sample(s.output_rng));
  ComputeBlockHashes(s.pieces, spec_.block_size, s.salt, r.block_hashes);
  if (first_unique_token >= 0) {
    r.unique_from_block = static_cast<int32_t>(first_unique_token / spec_.block_size);
  }
  s.has_pending = true;
  return Status::Ok();
}

Status RequestSourceImpl::Refill(TraceSource& s) {
  const TraceSpec& tr = *s.spec;
  if (tr.max_requests > 0 && s.count >= tr.max_requests) {
    s.exhausted = true;
    return Status::Ok();
  }
  TTFT_ASSIGN_OR_RETURN(bool more, s.reader->Next(s.rec));
  const double t = s.rec.t_s * tr.time_scale;
  if (!more || (spec_.duration_s > 0 && t >= spec_.duration_s)) {
    s.exhausted = true;
    s.reader.reset();
    return Status::Ok();
  }
  Request& r = s.pending;
  r = Request{};
  r.arrival_s = t;
  r.tenant = s.tenant;
  r.template_label = s.label;
  r.prompt_tokens = static_cast<int32_t>(s.rec.input_tokens);
  r.output_tokens = static_cast<int32_t>(std::max<int64_t>(1, s.rec.output_tokens));
  s.pieces.clear();
  if (tr.format == TraceSpec::Format::kMooncake) {
    // One piece per 512-token block id; the last block holds the remainder.
    const auto n = static_cast<int64_t>(s.rec.hash_ids.size());
    for (int64_t i = 0; i < n; ++i) {
      const int64_t tokens =
          i + 1 < n ? kMooncakeBlockTokens : s.rec.input_tokens - kMooncakeBlockTokens * (n - 1);
      s.pieces.push_back({Combine(s.key_base, s.rec.hash_ids[i]), static_cast<int32_t>(tokens)});
    }
  } else {
    s.pieces.push_back(
        {Combine(Combine(s.key_base, "req"), static_cast<uint64_t>(s.count)), r.prompt_tokens});
    r.unique_from_block = 0;  // an Azure prompt is unique content
  }
  ComputeBlockHashes(s.pieces, spec_.block_size, 0, r.block_hashes);
  ++s.count;
  s.has_pending = true;
  return Status::Ok();
}

Result<bool> RequestSourceImpl::Next(Request& out) {
  Source* best = nullptr;
  for (auto& s : tenants_) {
    if (!s->has_pending && !s->exhausted) TTFT_RETURN_IF_ERROR(Refill(*s));
    if (s->has_pending && (!best || s->pending.arrival_s < best->pending.arrival_s)) best = s.get();
  }
  for (auto& s : traces_) {
    if (!s->has_pending && !s->exhausted) TTFT_RETURN_IF_ERROR(Refill(*s));
    if (s->has_pending && (!best || s->pending.arrival_s < best->pending.arrival_s)) best = s.get();
  }
  for (auto& s : shared_) {
    if (!s->has_pending && !s->exhausted) TTFT_RETURN_IF_ERROR(Refill(*s));
    if (s->has_pending && (!best || s->pending.arrival_s < best->pending.arrival_s)) best = s.get();
  }
  if (!best) return false;
  out = std::move(best->pending);
  best->has_pending = false;
  out.seq = next_seq_++;
  return true;
}

}  // namespace

Result<std::unique_ptr<RequestSource>> RequestSource::Create(const WorkloadSpec& spec) {
  return RequestSourceImpl::Make(spec);
}

}  // namespace ttft
