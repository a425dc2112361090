// -----------------------------------------------------------------------------
// File: diagnose/parallel.h (private to the diagnose module)
// -----------------------------------------------------------------------------
//
// The baseline and incident windows of a large diagnosis on two threads.

#ifndef TTFT_DIAGNOSE_PARALLEL_H_
#define TTFT_DIAGNOSE_PARALLEL_H_

#include <cstddef>
#include <thread>
#include <utility>

namespace ttft::diag {

// Runs `a` and `b`, which must not share mutable state: `b` on a second thread when
// `parallel` (the baseline and incident windows of a large diagnosis, on two cores),
// else one after the other. The results do not depend on which.
template <typename A, typename B>
void RunBoth(bool parallel, A&& a, B&& b) {
  if (!parallel || std::thread::hardware_concurrency() < 2) {
    a();
    b();
    return;
  }
  std::jthread other(std::forward<B>(b));
  a();
}

// Windows with at least this many rows between them are computed on two threads.
inline constexpr size_t kParallelRows = 200000;

}  // namespace ttft::diag

#endif  // TTFT_DIAGNOSE_PARALLEL_H_
