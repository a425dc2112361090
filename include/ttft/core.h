// -----------------------------------------------------------------------------
// File: ttft/core.h
// -----------------------------------------------------------------------------
//
// The vocabulary every ttft module speaks:
//
//   * `Status` and `Result<T>`: errors are values. Library code never throws across
//     its public API and never exits; only `main` turns a Status into an exit code
//     and a one-line message. A message names the file, the line and the field,
//     e.g. "scenarios/x.yaml:12: tenants[0].rate_rps: must be > 0, got -1".
//
//   * `Span`: the per-request record (docs/spans.md). The simulator writes spans,
//     the telemetry readers produce spans from real vLLM output, and the diagnosis
//     reads spans without knowing where they came from. Times are seconds, in the
//     time base of the run (simulated seconds since the scenario start, or Unix
//     seconds for real telemetry).
//
// Example:
//
//   ttft::Result<int> ParsePort(std::string_view s) {
//     if (s.empty()) return ttft::Status::Invalid("port: empty");
//     return 8080;
//   }
//   auto port = ParsePort(arg);
//   if (!port.ok()) return port.status();
//   Use(*port);
//
// Thread safety: all types here are values; distinct objects may be used from
// distinct threads without synchronisation.

#ifndef TTFT_CORE_H_
#define TTFT_CORE_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace ttft {

// Status codes. `main` maps them to exit codes (see ExitCodeFor).
enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,  // bad input: malformed file, out-of-range value (exit 2)
  kNotFound,         // a named file, preset or series does not exist (exit 2)
  kDataError,        // a malformed record under --strict (exit 65, EX_DATAERR)
  kUnavailable,      // a server is down or timed out (exit 69, EX_UNAVAILABLE)
  kInternal,         // a broken invariant: a bug in ttft (exit 70, EX_SOFTWARE)
  kIoError,          // a read or write failed (exit 74, EX_IOERR)
};

// A Status is either OK or an error code with a message. Cheap to copy when OK.
class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status Invalid(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status DataError(std::string msg) { return {StatusCode::kDataError, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
  static Status IoError(std::string msg) { return {StatusCode::kIoError, std::move(msg)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "<prefix>: <message>". OK stays OK.
  Status WithContext(std::string_view prefix) const;

  // "ok", or "invalid argument: <message>" and so on.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// The process exit code for a status: 0, 2, 65, 69, 70 or 74 (sysexits.h).
int ExitCodeFor(const Status& status);

// A value or an error. REQUIRES: an error Result is built from a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  // REQUIRES: ok().
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  // OK when ok(); the error otherwise.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

// Propagates a non-OK Status out of the calling function.
#define TTFT_RETURN_IF_ERROR(expr) \
  do {                             \
    ::ttft::Status _st = (expr);   \
    if (!_st.ok()) return _st;     \
  } while (0)

#define TTFT_CONCAT_INNER_(a, b) a##b
#define TTFT_CONCAT_(a, b) TTFT_CONCAT_INNER_(a, b)
// Assigns the value of a Result to `lhs`, or returns its error. `lhs` may be a
// declaration (`int x`), so it cannot be parenthesised.
#define TTFT_ASSIGN_OR_RETURN(lhs, expr) \
  TTFT_ASSIGN_OR_RETURN_IMPL_(TTFT_CONCAT_(_res_, __LINE__), lhs, expr)
// NOLINTBEGIN(bugprone-macro-parentheses)
#define TTFT_ASSIGN_OR_RETURN_IMPL_(res, lhs, expr) \
  auto res = (expr);                                \
  if (!res.ok()) return res.status();               \
  lhs = std::move(res).value()
// NOLINTEND(bugprone-macro-parentheses)

// -----------------------------------------------------------------------------
// The request span (docs/spans.md)
// -----------------------------------------------------------------------------

// Terminal status of a request. Anything but kOk is an error kind.
enum class RequestStatus : uint8_t {
  kOk = 0,
  kRejectedTooLong,  // prompt + 1 > max_model_len: rejected at admission, as vLLM does
  kAborted,          // the client or an event ended the request before it finished
  kError,            // any other engine error
};
std::string_view ToString(RequestStatus s);
// Accepts the strings ToString produces; returns nullopt for anything else.
std::optional<RequestStatus> ParseRequestStatus(std::string_view s);

// One record per request. Durations are seconds, >= 0. A field the source could
// not provide is NaN (durations) or -1 (token counts), never a guess.
//
// Invariants for simulator output (checked by property tests):
//   ttft_s = front_end_s + queue_s + prefill_s
//   e2e_s  = ttft_s + decode_s
//   0 <= cached_tokens <= prompt_tokens
// `front_end_s` is the model's per-request front-end overhead (tokenisation, IPC:
// the part of vLLM's TTFT that lies outside the engine core's queue and prefill).
struct Span {
  std::string request_id;
  double arrival_s = 0;    // when the front end received the request
  double queue_s = 0;      // waiting: first queued to first scheduled (vLLM's definition)
  double prefill_s = 0;    // first scheduled to first token (includes preemptions during prefill)
  double front_end_s = 0;  // front-end overhead included in ttft_s
  double ttft_s = 0;
  double decode_s = 0;  // first token to last token
  double e2e_s = 0;
  double itl_mean_s = 0;  // mean inter-token interval after the first token (NaN if < 2 tokens)
  double itl_max_s = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache (vLLM num_cached_tokens)
  int64_t output_tokens = 0;
  int32_t preemptions = 0;
  RequestStatus status = RequestStatus::kOk;
  // Labels.
  std::string replica;
  std::string region;
  std::string tenant;
  std::string model;
  std::string template_version;  // serialised as "template"
  std::string deploy;            // engine-config version
};

// -----------------------------------------------------------------------------
// Counts read as doubles
// -----------------------------------------------------------------------------
//
// A count that arrives as a double (a Prometheus sample, a JSON number) fits an
// int64_t only below 2^63 = 9.223e18; converting anything larger is undefined
// (a cast) or unspecified (std::llround). Below kCountLimit every double converts.
inline constexpr double kCountLimit = 9.2e18;

// `v` rounded to a count, saturated to [0, kCountLimit] (NaN is 0). For counts
// whose double value is also kept (rates are computed from the double), so that an
// absurd counter prints as a bounded number instead of an unspecified one.
//   SaturatingCount(41.6) == 42;  SaturatingCount(1e300) == 9'200'000'000'000'000'000
inline int64_t SaturatingCount(double v) {
  if (!(v > 0)) return 0;
  return static_cast<int64_t>(std::llround(v < kCountLimit ? v : kCountLimit));
}

// -----------------------------------------------------------------------------
// YAML nesting
// -----------------------------------------------------------------------------

// yaml-cpp's parser recurses once per nesting level, so the YAML readers (scenarios,
// gate configs) bound the nesting of the text before they parse it. Returns the
// first line (1-based) at which `text` is open inside more than `max_flow` flow
// brackets ('[', '{'), or is indented by more than `max_block` block columns (a space
// is one; a "- ", "? " or ": " indicator before the content two), else 0.
// Conservative: brackets inside quoted scalars and comments count too.
//   YamlNestingExceededAt("a: [[[1]]]", 2, 64) == 1
int YamlNestingExceededAt(std::string_view text, int max_flow, int max_block);

// -----------------------------------------------------------------------------
// Large arrays
// -----------------------------------------------------------------------------
//
// `LargeAllocator<T>`: the allocator of columns and scratch arrays that hold millions
// of elements (span tables, diagnosis buffers). A block of 2 MB or more is mapped on
// its own (mmap, size rounded up to 2 MB) and advised to use transparent huge pages
// (madvise MADV_HUGEPAGE, a hint the kernel may ignore): filling a fresh 40 MB column
// then costs ~20 page faults instead of ~10,000, and in a VM the faults, not the
// zeroing, were most of the cost of fresh memory (docs/performance.md). A freed block
// is kept for reuse (up to 1 GB in all, split or grown with mremap to fit the next
// requests; resident until reused or the process ends), since a reused page needs no
// fault and no zeroing. Smaller blocks, and every block in sanitizer builds (so ASan
// keeps checking them), come from operator new.
//
//   ttft::LargeVector<float> ttft_s;   // a std::vector with this allocator
//   ttft_s.reserve(10'000'000);        // one 40 MB mapping on huge pages
//
// Elements a LargeVector adds without a value (resize(n), the size constructor) are
// default-initialised, as by `new T[n]`: numbers are NOT zeroed, because such
// buffers are about to be overwritten and zeroing them first is a second pass over
// memory. Give a value (`v.resize(n, 0)`) where zeros are wanted.
//
// Thread safety: stateless; all instances compare equal.
namespace internal {
// REQUIRES: bytes > 0. Throws std::bad_alloc when out of memory.
void* AllocateLarge(size_t bytes);
// REQUIRES: `p` came from AllocateLarge(bytes) with the same `bytes`.
void FreeLarge(void* p, size_t bytes) noexcept;
}  // namespace internal

template <typename T>
struct LargeAllocator {
  using value_type = T;
  LargeAllocator() = default;
  template <typename U>
  LargeAllocator(const LargeAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) { return static_cast<T*>(internal::AllocateLarge(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { internal::FreeLarge(p, n * sizeof(T)); }
  // Default-initialises (see above); any other construction is forwarded.
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <typename U>
  bool operator==(const LargeAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename T>
using LargeVector = std::vector<T, LargeAllocator<T>>;

}  // namespace ttft

#endif  // TTFT_CORE_H_
