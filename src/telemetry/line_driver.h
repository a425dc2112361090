// Internal: the chunked line driver of the span readers: splits buffered input into
// lines for a LineParser, reading more as it goes, in memory O(chunk + longest line).
#ifndef TTFT_TELEMETRY_LINE_DRIVER_H_
#define TTFT_TELEMETRY_LINE_DRIVER_H_

#include <simdjson.h>

#include <fmt/format.h>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>
#include "ttft/spans.h"

#include "telemetry/span_record.h"
#include "ttft/core.h"

namespace ttft::internal {

// Splits `buf[0, filled)` into lines and feeds them; returns the offset of the
// first byte not consumed (the start of an incomplete last line).
inline Result<size_t> FeedLines(LineParser& parser, char* buf, size_t filled, size_t capacity,
                                int64_t& line_no) {
  size_t start = 0;
  for (;;) {
    const void* nl = std::memchr(buf + start, '\n', filled - start);
    if (nl == nullptr) return start;
    const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - buf);
    size_t len = end - start;
    if (len > 0 && buf[start + len - 1] == '\r') --len;
    TTFT_RETURN_IF_ERROR(parser.ParseLine(buf + start, len, capacity - start, line_no, false));
    ++line_no;
    start = end + 1;
  }
}

// Feeds everything `read(dst, n) -> Result<size_t>` (0 at the end) returns to `parser`,
// line by line. `buf` (size data_cap + SIMDJSON_PADDING) holds `filled` bytes read
// already, `eof` when they are all there are. The last line may lack its newline. Does
// not call parser.Finish(). Stops early, returning Ok, once `*stop` is set. A line
// longer than kMaxLineBytes is an error naming `name` and the line.
template <typename Read>
Status ParseStream(Read&& read, LineParser& parser, std::vector<char>& buf, size_t data_cap,
                   size_t filled, bool eof, int64_t& line_no,
                   const std::atomic<bool>* stop = nullptr, std::string_view name = "input") {
  const size_t padding = simdjson::SIMDJSON_PADDING;
  for (;;) {
    TTFT_ASSIGN_OR_RETURN(size_t rest, FeedLines(parser, buf.data(), filled, buf.size(), line_no));
    // Keep the incomplete tail; grow when one line fills the buffer.
    std::memmove(buf.data(), buf.data() + rest, filled - rest);
    filled -= rest;
    if (eof) break;
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) return Status::Ok();
    if (filled == data_cap) {
      if (data_cap >= kMaxLineBytes) {
        return Status::Invalid(
            fmt::format("{}:{}: a line longer than {} bytes, the limit for one record", name,
                        line_no, kMaxLineBytes));
      }
      data_cap = std::min(data_cap * 2, kMaxLineBytes);
      buf.resize(data_cap + padding, '\0');
    }
    TTFT_ASSIGN_OR_RETURN(size_t n, read(buf.data() + filled, data_cap - filled));
    if (n == 0) eof = true;
    filled += n;
  }
  if (filled > 0) {
    std::memset(buf.data() + filled, 0, buf.size() - filled);
    size_t len = filled;
    if (buf[len - 1] == '\r') --len;
    TTFT_RETURN_IF_ERROR(parser.ParseLine(buf.data(), len, buf.size(), line_no, true));
  }
  return Status::Ok();
}

// The spans a reader would emit from `filled` bytes of `buf` holding `lines` newlines
// when the whole input is `total` bytes: 2% high, so that columns are allocated once.
inline size_t EstimateSpans(size_t lines, size_t filled, uint64_t total) {
  return static_cast<size_t>(static_cast<double>(total) / static_cast<double>(filled) *
                             static_cast<double>(lines) * 1.02) +
         1;
}

}  // namespace ttft::internal

#endif  // TTFT_TELEMETRY_LINE_DRIVER_H_
