// Internal to src/workload: streaming readers for the trace formats described in
// ../shared/data/traces/README.md (Mooncake JSONL, Azure LLM inference CSV).
#ifndef TTFT_WORKLOAD_TRACE_READER_H_
#define TTFT_WORKLOAD_TRACE_READER_H_

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "ttft/core.h"
#include "ttft/workload.h"

namespace ttft::workload_internal {

// Mooncake: one id per 512-token block of the prompt.
inline constexpr int64_t kMooncakeBlockTokens = 512;
// Prompt and output lengths above this are rejected (Request holds int32 counts).
inline constexpr int64_t kMaxTraceTokens = 100'000'000;

struct TraceRecord {
  double t_s = 0;  // seconds after the trace's first record (time_scale not applied)
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;       // >= 0 as read; callers use max(1, .)
  std::vector<uint64_t> hash_ids;  // Mooncake only: ceil(input_tokens / 512) ids
};

// Reads one trace record per line, streaming. Every malformed line is an error
// naming "name:line: field: ..."; blank lines are skipped. Timestamps must not
// decrease.
class TraceReader {
 public:
  // Opens `path`; NotFound naming it when it cannot be opened.
  static Result<std::unique_ptr<TraceReader>> Open(TraceSpec::Format format,
                                                   const std::string& path);
  // Reads from `in`; `name` stands for the file in messages.
  TraceReader(TraceSpec::Format format, std::unique_ptr<std::istream> in, std::string name);

  // The next record; false at the end of the trace.
  Result<bool> Next(TraceRecord& rec);

 private:
  Status ParseMooncake(const std::string& line, TraceRecord& rec);
  Status ParseAzure(const std::string& line, TraceRecord& rec);
  Status Error(std::string_view field, std::string_view what) const;

  TraceSpec::Format format_;
  std::unique_ptr<std::istream> in_;
  std::string name_;
  int64_t line_no_ = 0;
  bool header_done_ = false;
  bool have_origin_ = false;
  // Origin of the time axis: the first record's time, split to keep precision for
  // Unix-epoch Azure timestamps.
  int64_t origin_whole_s_ = 0;
  double origin_frac_s_ = 0;
  double last_t_s_ = 0;
  std::string line_;
};

}  // namespace ttft::workload_internal

#endif  // TTFT_WORKLOAD_TRACE_READER_H_
