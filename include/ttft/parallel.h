// -----------------------------------------------------------------------------
// File: ttft/parallel.h
// -----------------------------------------------------------------------------
//
// Independent jobs on several cores: the seeds of a validation, the arms and seeds of
// a what-if, the coalitions of an attribution. Each job writes its own slot, so the
// result does not depend on the thread count or on which thread ran which job.
//
// Example:
//
//   std::vector<double> p99(seeds.size());
//   ttft::ParallelFor(seeds.size(), 0, [&](size_t i) { p99[i] = Replay(seeds[i]); });

#ifndef TTFT_PARALLEL_H_
#define TTFT_PARALLEL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace ttft {

// Calls fn(i) once for every i in [0, n), on min(threads, n) threads counting the
// caller's (threads <= 0: one per core); each thread takes the next index from a
// shared counter. Returns when every call has returned.
// REQUIRES: calls for different i share no mutable state; fn does not throw.
template <typename Fn>
void ParallelFor(size_t n, int threads, Fn&& fn) {
  const size_t wanted = threads > 0 ? static_cast<size_t>(threads)
                                    : std::max(1u, std::thread::hardware_concurrency());
  const size_t count = std::min(wanted, n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::jthread> pool;
  for (size_t t = 1; t < count; ++t) pool.emplace_back(work);
  work();
}

}  // namespace ttft

#endif  // TTFT_PARALLEL_H_
