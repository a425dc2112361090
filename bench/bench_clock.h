// -----------------------------------------------------------------------------
// File: bench/bench_clock.h
// -----------------------------------------------------------------------------
//
// The clocks the benchmarks read: wall time, this process's CPU time, and a
// rusage time value in seconds. On a shared machine CPU time is the steadier
// one-core figure; every bench prints both.

#ifndef TTFT_BENCH_BENCH_CLOCK_H_
#define TTFT_BENCH_BENCH_CLOCK_H_

#include <sys/resource.h>
#include <sys/time.h>

#include <chrono>
#include <ctime>

namespace ttft::bench {

// Monotonic wall clock, seconds.
inline double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds (user + system) of this process, all threads.
inline double CpuSelf() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A rusage time value in seconds.
inline double Sec(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
}

}  // namespace ttft::bench

#endif  // TTFT_BENCH_BENCH_CLOCK_H_
