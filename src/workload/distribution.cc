// Distribution sampling and the chained KV block hashes (ttft/workload.h).
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ttft/workload.h"
#include "workload/random.h"

namespace ttft {

using workload_internal::StdNormal;
using workload_internal::Uniform01;

std::string_view ToString(SegmentKind k) {
  switch (k) {
    case SegmentKind::kStatic: return "static";
    case SegmentKind::kPerTenant: return "per_tenant";
    case SegmentKind::kPerUser: return "per_user";
    case SegmentKind::kPerRequest: return "per_request";
  }
  return "static";
}

namespace {

// Lognormal parameters for a given mean and coefficient of variation:
// sigma^2 = ln(1 + cv^2), mu = ln(mean) - sigma^2 / 2.
void LognormalParams(double mean, double cv, double& mu, double& sigma) {
  const double s2 = std::log1p(cv * cv);
  sigma = std::sqrt(s2);
  mu = std::log(mean) - s2 / 2;
}

double Phi(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

double Distribution::Sample(Rng& rng) const {
  switch (kind) {
    case Kind::kFixed: return value;
    case Kind::kUniform: return min + Uniform01(rng) * (max - min);
    case Kind::kLognormal: {
      if (mean <= 0) return 0;
      double x = mean;
      if (cv > 0) {
        double mu, sigma;
        LognormalParams(mean, cv, mu, sigma);
        x = std::exp(mu + sigma * StdNormal(rng));
      }
      if (clamp_min > 0) x = std::max(x, clamp_min);
      if (clamp_max > 0) x = std::min(x, clamp_max);
      return x;
    }
    case Kind::kEmpirical: {
      if (values.empty()) return 0;
      const double u = Uniform01(rng);
      if (weights.size() != values.size()) {
        const auto i = static_cast<size_t>(u * static_cast<double>(values.size()));
        return values[std::min(i, values.size() - 1)];
      }
      double total = 0;
      for (double w : weights) total += std::max(w, 0.0);
      double target = u * total, acc = 0;
      for (size_t i = 0; i < values.size(); ++i) {
        acc += std::max(weights[i], 0.0);
        if (target < acc) return values[i];
      }
      return values.back();
    }
  }
  return 0;
}

double Distribution::Mean() const {
  switch (kind) {
    case Kind::kFixed: return value;
    case Kind::kUniform: return (min + max) / 2;
    case Kind::kLognormal: {
      if (mean <= 0) return 0;
      if (cv <= 0) {
        double x = mean;
        if (clamp_min > 0) x = std::max(x, clamp_min);
        if (clamp_max > 0) x = std::min(x, clamp_max);
        return x;
      }
      // E[clamp(X, a, b)] = a P(X < a) + E[X; a <= X <= b] + b P(X > b), with
      // E[X; X <= c] = mean * Phi((ln c - mu - sigma^2) / sigma).
      double mu, sigma;
      LognormalParams(mean, cv, mu, sigma);
      const double a = clamp_min > 0 ? clamp_min : 0;
      const double b = clamp_max > 0 ? clamp_max : INFINITY;
      if (b <= a) return a;
      auto partial = [&](double c) {  // E[X; X <= c]
        if (c <= 0) return 0.0;
        if (std::isinf(c)) return mean;
        return mean * Phi((std::log(c) - mu - sigma * sigma) / sigma);
      };
      auto cdf = [&](double c) {
        if (c <= 0) return 0.0;
        if (std::isinf(c)) return 1.0;
        return Phi((std::log(c) - mu) / sigma);
      };
      double m = partial(b) - partial(a);
      if (a > 0) m += a * cdf(a);
      if (!std::isinf(b)) m += b * (1 - cdf(b));
      return m;
    }
    case Kind::kEmpirical: {
      if (values.empty()) return 0;
      if (weights.size() != values.size()) {
        double s = 0;
        for (double v : values) s += v;
        return s / static_cast<double>(values.size());
      }
      double s = 0, w = 0;
      for (size_t i = 0; i < values.size(); ++i) {
        s += values[i] * std::max(weights[i], 0.0);
        w += std::max(weights[i], 0.0);
      }
      return w > 0 ? s / w : 0;
    }
  }
  return 0;
}

// Chained block hashes, after vLLM's hash_block_tokens (vllm/v1/core/kv_cache_utils.py):
//   h_j = H(h_{j-1}, tokens of block j, extra keys), extra keys (the cache salt) on
//   block 0 only, full blocks only.
// Tokens are never materialised: token i of a piece with key K is a pure function of
// (K, i), so a block is described exactly by the runs (K, first i, count) it covers.
// Zero-length pieces contribute nothing, so the description depends on the token
// sequence only. O(pieces + blocks).
void ComputeBlockHashes(const std::vector<PromptPiece>& pieces, int block_size, uint64_t salt,
                        std::vector<uint64_t>& out) {
  out.clear();
  if (block_size <= 0) return;
  int64_t total = 0;
  for (const PromptPiece& p : pieces) total += std::max<int32_t>(0, p.tokens);
  out.reserve(static_cast<size_t>(total / block_size));
  // The hashed words of one block: parent, [salt,] then (key, offset, take) per piece
  // it overlaps. Most blocks overlap one or two pieces and fit the inline buffer; a
  // block over more pieces uses `words`. The bytes hashed are the same either way.
  constexpr size_t kInline = 2 + 3 * 8;
  uint64_t inline_buf[kInline];
  std::vector<uint64_t> words;
  // The parent of block 0: a fixed constant, as vLLM's NONE_HASH is within one run.
  uint64_t parent = 0x9e3779b97f4a7c15ULL;
  size_t piece = 0;
  int64_t offset = 0;  // into pieces[piece]
  for (int64_t j = 0;; ++j) {
    size_t n = 0;
    bool spilled = false;
    inline_buf[n++] = parent;
    if (j == 0) inline_buf[n++] = salt;
    int64_t need = block_size;
    while (need > 0 && piece < pieces.size()) {
      const int64_t len = pieces[piece].tokens;
      if (offset >= len) {
        ++piece;
        offset = 0;
        continue;
      }
      const int64_t take = std::min(need, len - offset);
      if (!spilled && n + 3 > kInline) {
        words.assign(inline_buf, inline_buf + n);
        spilled = true;
      }
      if (spilled) {
        words.insert(words.end(), {pieces[piece].key, static_cast<uint64_t>(offset),
                                   static_cast<uint64_t>(take)});
      } else {
        inline_buf[n++] = pieces[piece].key;
        inline_buf[n++] = static_cast<uint64_t>(offset);
        inline_buf[n++] = static_cast<uint64_t>(take);
      }
      offset += take;
      need -= take;
    }
    if (need > 0) return;  // partial block: not hashed
    parent = spilled ? XXH3_64bits(words.data(), words.size() * sizeof(uint64_t))
                     : XXH3_64bits(inline_buf, n * sizeof(uint64_t));
    out.push_back(parent);
  }
}

}  // namespace ttft
