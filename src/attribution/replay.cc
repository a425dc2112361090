// The replay engine of the attribution (src/attribution/replay.h): a discrete-event
// loop over ttft::Replica with the routing of ttft::Simulate (src/fleet/simulate.cc),
// without a workload generator, scrapes or scenario events.
#include "attribution/replay.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <span>

#include "ttft/stats.h"

namespace ttft::attr {
namespace {

// splitmix64 (Steele, Lea and Flood 2014): block hashes of the replay.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t ChainHash(int32_t chain, int64_t block) {
  return Mix((static_cast<uint64_t>(chain) << 32) ^ static_cast<uint64_t>(block) ^ 0xc4a1ULL);
}

std::unique_ptr<Request> MakeRequest(int64_t seq, double at_s, int32_t prompt, int32_t cached,
                                     int32_t output, int32_t chain, int block_size) {
  auto r = std::make_unique<Request>();
  r->seq = seq;
  r->arrival_s = at_s;
  r->prompt_tokens = std::max(prompt, 1);
  r->output_tokens = std::max(output, 1);
  const int64_t blocks = r->prompt_tokens / block_size;
  const int64_t shared = std::min<int64_t>(blocks, cached / block_size);
  r->block_hashes.resize(static_cast<size_t>(blocks));
  for (int64_t i = 0; i < shared; ++i)
    r->block_hashes[static_cast<size_t>(i)] = ChainHash(chain, i);
  for (int64_t i = shared; i < blocks; ++i) {
    r->block_hashes[static_cast<size_t>(i)] = Mix(static_cast<uint64_t>(seq) * 0x100000001b3ULL ^
                                                  static_cast<uint64_t>(i) ^ (1ULL << 63));
  }
  r->unique_from_block = static_cast<int32_t>(shared);
  return r;
}

}  // namespace

NextStep::NextStep(size_t n)
    : n_(n),
      leaves_(std::bit_ceil(std::max<size_t>(n, 1))),
      ends_(2 * leaves_, std::numeric_limits<double>::infinity()),
      winner_(2 * leaves_, 0) {
  for (size_t k = 0; k < leaves_; ++k) winner_[leaves_ + k] = static_cast<uint32_t>(k);
  for (size_t k = leaves_; k-- > 1;) winner_[k] = winner_[2 * k];  // all equal: the left
}

void NextStep::Set(size_t i, double end_s) {
  size_t k = leaves_ + i;
  ends_[k] = std::isnan(end_s) ? std::numeric_limits<double>::infinity() : end_s;
  // The right subtree's minimum wins only when strictly smaller: ties go to the left,
  // the lower indices, as in a scan for the first strict minimum.
  for (k /= 2; k >= 1; k /= 2) {
    const uint32_t l = winner_[2 * k], r = winner_[2 * k + 1];
    winner_[k] = ends_[leaves_ + r] < ends_[leaves_ + l] ? r : l;
  }
}

size_t NextStep::First() const {
  const uint32_t w = winner_[1];
  return ends_[leaves_ + w] == std::numeric_limits<double>::infinity() ? n_
                                                                       : static_cast<size_t>(w);
}

double QuantileOf(std::vector<double>& v, double p) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  return Quantile(std::span<double>(v), p);
}

double ReplayP99(const std::vector<ReplayRequest>& requests, const ReplayFleet& fleet,
                 const FleetState& state, RouterSpec::Kind router,
                 std::vector<double>* prefill_per_token_s, double* itl_median_s) {
  const size_t n = fleet.names.size();
  std::vector<std::unique_ptr<Replica>> reps(n);
  for (size_t i = 0; i < n; ++i) {
    if (!state.active[i]) continue;
    const EngineConfig& e = state.baseline_settings && !fleet.baseline_engines.empty()
                                ? fleet.baseline_engines[i]
                                : fleet.engines[i];
    auto blocks = e.KvCapacityBlocks();
    reps[i] = std::make_unique<Replica>(e, blocks.ok() ? *blocks : 1);
    reps[i]->SetSlowdown(state.slowdown[i]);
  }
  const int bs = fleet.engines.empty() ? 16 : fleet.engines[0].block_size;
  // The engine's times are >= 0 (a negative step end means "nothing to do"): the
  // replay runs on a clock where the warm-up starts at 0 and the first request
  // arrives at 100 s. TTFT is a difference, so the shift changes nothing.
  const double shift =
      100 - (requests.empty() ? 0 : requests.front().arrival_s + requests.front().front_end_s);
  std::vector<double> ttft(requests.size(), std::numeric_limits<double>::infinity());
  std::vector<double> per_token(prefill_per_token_s != nullptr ? requests.size() : 0,
                                std::numeric_limits<double>::quiet_NaN());
  std::vector<int32_t> placed(requests.size(), -1);  // the replica each request went to
  // Requests longer than max_model_len are rejected, as vLLM rejects them: not served,
  // so not in the p99 (the diagnosis' p99 is over ok requests too).
  std::vector<bool> rejected(requests.size(), false);
  std::vector<double> itl;  // per served request with >= 2 output tokens, when asked
  FinishFn on_finish = [&](const FinishedRequest& f) {
    const int64_t seq = f.request->seq;
    if (seq >= 0 && f.status == RequestStatus::kRejectedTooLong)
      rejected[static_cast<size_t>(seq)] = true;
    if (seq < 0 || f.status != RequestStatus::kOk) return;
    const size_t i = static_cast<size_t>(seq);
    ttft[i] = f.first_token_s - (requests[i].arrival_s + shift);
    if (itl_median_s != nullptr && f.output_tokens >= 2)
      itl.push_back(f.itl_sum_s / static_cast<double>(f.output_tokens - 1));
    const int64_t uncached = f.request->prompt_tokens - f.cached_tokens;
    if (prefill_per_token_s != nullptr && uncached >= 64 && f.scheduled_s >= 0) {
      per_token[i] = (f.first_token_s - f.scheduled_s) / static_cast<double>(uncached);
    }
  };
  // A request's candidates: the active replicas of its route set, else of its region,
  // else every active one.
  std::vector<std::vector<int32_t>> by_region(fleet.regions.size()),
      by_route(fleet.route_sets.size());
  std::vector<int32_t> all;
  for (size_t i = 0; i < n; ++i) {
    if (!reps[i]) continue;
    all.push_back(static_cast<int32_t>(i));
    by_region[static_cast<size_t>(fleet.replica_region[i])].push_back(static_cast<int32_t>(i));
  }
  for (size_t g = 0; g < fleet.route_sets.size(); ++g) {
    for (int32_t i : fleet.route_sets[g])
      if (reps[static_cast<size_t>(i)]) by_route[g].push_back(i);
  }
  auto candidates = [&](const ReplayRequest& q) -> const std::vector<int32_t>& {
    if (static_cast<size_t>(q.route) < by_route.size() &&
        !by_route[static_cast<size_t>(q.route)].empty())
      return by_route[static_cast<size_t>(q.route)];
    if (!by_region[static_cast<size_t>(q.region)].empty())
      return by_region[static_cast<size_t>(q.region)];
    return all;
  };

  // Warm each replica's cache with the chains of the requests it may serve, at their
  // longest cached length.
  std::vector<std::map<int32_t, int32_t>> longest(n);  // per replica: chain -> cached tokens
  {
    std::map<std::pair<int32_t, int32_t>, int32_t> per_route;  // (route, chain)
    for (const ReplayRequest& r : requests) {
      int32_t& l = per_route[{r.route * 65536 + r.region, r.chain}];
      l = std::max(l, r.cached_tokens);
    }
    for (const auto& [key, cached] : per_route) {
      ReplayRequest probe;
      probe.route = key.first / 65536;
      probe.region = key.first % 65536;
      for (int32_t i : candidates(probe)) {
        int32_t& l = longest[static_cast<size_t>(i)][key.second];
        l = std::max(l, cached);
      }
    }
  }
  int64_t warm_seq = -1;
  for (size_t i = 0; i < n; ++i) {
    if (!reps[i]) continue;
    double now = 0;
    for (const auto& [chain, cached] : longest[i]) {
      if (cached < bs) continue;
      if (cached + int64_t{2} > reps[i]->config().max_model_len) {
        --warm_seq;  // the replica would reject it: skipped, its id kept unused
        continue;
      }
      reps[i]->Enqueue(MakeRequest(warm_seq--, now, cached + 1, cached, 1, chain, bs), now,
                       on_finish);
    }
    while (true) {
      const double end = reps[i]->StartStep(now);
      if (end < 0) break;
      now = end;
      reps[i]->FinishStep(now, on_finish);
    }
  }

  // The longest prompt + 1 any active replica accepts.
  int64_t longest_allowed = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!reps[i]) continue;
    const EngineConfig& e = state.baseline_settings && !fleet.baseline_engines.empty()
                                ? fleet.baseline_engines[i]
                                : fleet.engines[i];
    longest_allowed = std::max(longest_allowed, e.max_model_len);
  }
  const double kInf = std::numeric_limits<double>::infinity();
  NextStep step_end(n);
  auto kick = [&](size_t i, double now) {
    Replica& r = *reps[i];
    if (r.step_planned()) {
      step_end.Set(i, r.Interrupt(now));
      return;
    }
    const double end = r.StartStep(now);
    step_end.Set(i, end >= 0 ? end : kInf);
  };
  uint64_t rr = 0;
  size_t next = 0;
  const double deadline =
      requests.empty() ? 0 : requests.back().arrival_s + requests.back().front_end_s + shift + 600;
  while (true) {
    const size_t si = step_end.First();
    const double te = si < n ? step_end.end_s(si) : kInf;
    const double ta = next < requests.size()
                          ? requests[next].arrival_s + requests[next].front_end_s + shift
                          : kInf;
    if (si == n && next == requests.size()) break;
    if (std::min(te, ta) > deadline) break;
    if (te <= ta) {  // step ends before enqueues at equal times, as the fleet orders them
      Replica& r = *reps[si];
      r.FinishStep(te, on_finish);
      const double end = r.StartStep(te);
      step_end.Set(si, end >= 0 ? end : kInf);
      continue;
    }
    const ReplayRequest& q = requests[next];
    if (q.prompt_tokens + int64_t{1} > longest_allowed) {
      // Every replica would reject it (Replica::Enqueue's rule); rejected here, before
      // MakeRequest hashes its blocks: a span claiming 2e9 prompt tokens took 2 GB.
      rejected[next] = true;
      ++rr;  // as when it was routed and then rejected
      ++next;
      continue;
    }
    const std::vector<int32_t>& c = candidates(q);
    auto req = MakeRequest(static_cast<int64_t>(next), ta, q.prompt_tokens, q.cached_tokens,
                           q.output_tokens, q.chain, bs);
    const size_t m = c.size();
    const size_t start = static_cast<size_t>(rr++ % m);
    int32_t best = c[start];
    if (router == RouterSpec::Kind::kLeastOutstanding) {
      for (size_t k = 1; k < m; ++k) {
        const int32_t i = c[(start + k) % m];
        if (reps[static_cast<size_t>(i)]->num_outstanding() <
            reps[static_cast<size_t>(best)]->num_outstanding())
          best = i;
      }
    } else if (router == RouterSpec::Kind::kPrefixAware) {
      int64_t max_load = 0;
      for (int32_t i : c)
        max_load = std::max(max_load, reps[static_cast<size_t>(i)]->num_outstanding());
      const double blocks = std::max<double>(1.0, static_cast<double>(req->block_hashes.size()));
      double best_score = -kInf;
      for (size_t k = 0; k < m; ++k) {
        const int32_t i = c[(start + k) % m];
        const Replica& r = *reps[static_cast<size_t>(i)];
        const double score =
            static_cast<double>(r.CachedPrefixBlocks(*req)) / blocks -
            static_cast<double>(r.num_outstanding()) / static_cast<double>(max_load + 1);
        if (score > best_score) {
          best_score = score;
          best = i;
        }
      }
    }
    placed[next] = best;
    reps[static_cast<size_t>(best)]->Enqueue(std::move(req), ta, on_finish);
    kick(static_cast<size_t>(best), ta);
    ++next;
  }
  if (prefill_per_token_s != nullptr) {
    std::vector<std::vector<double>> per(n);
    for (size_t i = 0; i < requests.size(); ++i) {
      if (placed[i] >= 0 && std::isfinite(per_token[i]))
        per[static_cast<size_t>(placed[i])].push_back(per_token[i]);
    }
    prefill_per_token_s->assign(n, std::numeric_limits<double>::quiet_NaN());
    for (size_t r = 0; r < n; ++r) {
      if (per[r].size() >= 20) (*prefill_per_token_s)[r] = QuantileOf(per[r], 0.5);
    }
  }
  if (itl_median_s != nullptr) *itl_median_s = QuantileOf(itl, 0.5);
  size_t kept = 0;
  for (size_t i = 0; i < ttft.size(); ++i)
    if (!rejected[i]) ttft[kept++] = ttft[i];
  ttft.resize(kept);
  return QuantileOf(ttft, 0.99);
}

}  // namespace ttft::attr
