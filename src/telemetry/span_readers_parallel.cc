// ReadSpanTable (ttft/spans.h): a large plain file in a splittable format (span JSONL)
// is cut into byte ranges at newlines, parsed on a thread per range and merged in file
// order into the table and report a sequential ReadSpans would give.
#include <fmt/format.h>
#include <simdjson.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <queue>
#include <thread>

#include "telemetry/input_formats.h"
#include "telemetry/line_driver.h"
#include "telemetry/span_record.h"
#include "ttft/spans.h"

namespace ttft {
namespace internal {
namespace {

// An open file, closed on scope exit.
struct FileFd {
  int fd = -1;
  ~FileFd() {
    if (fd >= 0) ::close(fd);
  }
};

Result<size_t> PRead(int fd, const std::string& name, char* dst, size_t n, uint64_t pos) {
  for (;;) {
    const ssize_t r = ::pread(fd, dst, n, static_cast<off_t>(pos));
    if (r >= 0) return static_cast<size_t>(r);
    if (errno != EINTR) {
      return Status::IoError(fmt::format("{}: read failed: {}", name, std::strerror(errno)));
    }
  }
}

// One byte range of a span JSONL file read by ReadSpanTable: [begin, end), starting at
// a line's first byte and (but for the last) ending just after a newline.
struct Range {
  uint64_t begin = 0, end = 0;
  SpanTable own;          // the spans of ranges after the first (the first fills the table)
  ReadReport own_report;  // likewise
  std::unique_ptr<RecordContext> ctx;
  std::unique_ptr<LineParser> parser;
  Status status;
  int64_t lines = 0;  // lines parsed: the range's last line number
};

// Parses one range; `first` ranges estimate the spans of the whole file (`total`).
Status ParseRange(int fd, const std::string& name, Range& r, SpanTable& table, bool first,
                  uint64_t total, size_t chunk_bytes, const std::atomic<bool>& stop) {
  size_t data_cap = std::max<size_t>(chunk_bytes, 4096);
  std::vector<char> buf(data_cap + simdjson::SIMDJSON_PADDING, '\0');
  uint64_t pos = r.begin;
  auto read = [&](char* dst, size_t n) -> Result<size_t> {
    n = static_cast<size_t>(std::min<uint64_t>(n, r.end - pos));
    if (n == 0) return size_t{0};
    TTFT_ASSIGN_OR_RETURN(size_t got, PRead(fd, name, dst, n, pos));
    pos += got;
    return got;
  };
  size_t filled = 0;
  bool eof = false;
  while (filled < data_cap && !eof) {
    TTFT_ASSIGN_OR_RETURN(size_t n, read(buf.data() + filled, data_cap - filled));
    eof = n == 0;
    filled += n;
  }
  const size_t lines = static_cast<size_t>(std::count(buf.data(), buf.data() + filled, '\n'));
  if (lines > 0) {
    if (first) {
      table.Reserve(table.size() + EstimateSpans(lines, filled, total));
      r.ctx->ReserveIds(EstimateSpans(lines, filled, r.end - r.begin));
    } else {
      r.ctx->ExpectMore(EstimateSpans(lines, filled, r.end - r.begin));
    }
  }
  int64_t line_no = 1;
  // Line numbers here count from the range's start: name the byte offset instead.
  const std::string where = fmt::format("{} (from byte {})", name, r.begin);
  Status st = ParseStream(read, *r.parser, buf, data_cap, filled, eof, line_no, &stop, where);
  r.lines = line_no - 1;
  return st;
}

// The line numbers `wanted` (ascending, 1-based within the range) of range `r`, as text.
Result<std::vector<std::string>> LinesOf(int fd, const std::string& name, const Range& r,
                                         const std::vector<int64_t>& wanted) {
  std::vector<std::string> out(wanted.size());
  std::vector<char> buf(1 << 20);
  size_t next = 0;
  int64_t line = 1;
  for (uint64_t pos = r.begin; pos < r.end && next < wanted.size();) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), r.end - pos));
    TTFT_ASSIGN_OR_RETURN(size_t n, PRead(fd, name, buf.data(), want, pos));
    if (n == 0) break;
    pos += n;
    for (const char* p = buf.data(); p < buf.data() + n && next < wanted.size();) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', buf.data() + n - p));
      const char* stop = nl != nullptr ? nl : buf.data() + n;
      if (line == wanted[next]) out[next].append(p, stop);
      if (nl == nullptr) break;
      if (line == wanted[next]) ++next;
      ++line;
      p = nl + 1;
    }
  }
  return out;
}

// Captures the request id of the one span it receives.
class IdSink final : public SpanSink {
 public:
  void Add(const SpanRecord& s) override { id = std::string(s.request_id); }
  std::string id;
};

// The request id the format's parser sees on `line` (a line it accepted once).
std::string RequestIdOf(std::string line, const SpanReadOptions& options,
                        ParserFactory make_parser) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const size_t len = line.size();
  line.resize(len + simdjson::SIMDJSON_PADDING, '\0');
  SpanReadOptions o = options;
  o.strict = false;
  o.detect_duplicates = false;
  IdSink sink;
  ReadReport report;
  RecordContext ctx("", o, sink, report);
  const std::unique_ptr<LineParser> parser = make_parser(ctx, true);
  (void)parser->ParseLine(line.data(), len, line.size(), 1, false);
  return sink.id;
}

// Merges range `r` (after the first) into `table` and `report` as if it had been read
// right after the ranges before it, whose duplicate sets are `earlier` and whose lines
// number `line_offset`: the records whose id an earlier range accepted are dropped
// and reported as duplicates, issues get file line numbers and join in line order.
// Returns the status a sequential read would have stopped with (strict: the first
// bad record of the range in file order).
Status MergeRange(int fd, const std::string& name, Range& r, RecordContext& first,
                  const std::vector<const RecordContext*>& earlier, int64_t line_offset,
                  const SpanReadOptions& options, ParserFactory make_parser, SpanTable& table,
                  ReadReport& report) {
  using Row = RecordContext::Row;
  const LargeVector<Row>& rows = r.ctx->rows();
  // Rows whose id an earlier range holds, in order.
  std::vector<size_t> dropped;
  constexpr size_t kAhead = 16;
  auto seen = [&](size_t i) {
    for (const RecordContext* c : earlier) {
      if (c->SeenId(rows[i].hash)) return true;
    }
    return false;
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i + kAhead < rows.size() && (rows[i + kAhead].line & RecordContext::kHasId)) {
      for (const RecordContext* c : earlier) c->PrefetchId(rows[i + kAhead].hash);
    }
    if ((rows[i].line & RecordContext::kHasId) && seen(i)) dropped.push_back(i);
  }
  auto line_of = [&](size_t row) { return rows[row].line & RecordContext::kLineMask; };
  // Under strict, a duplicate before the range's own first error stops the read there.
  const bool strict_dup = options.strict && !dropped.empty() &&
                          (r.status.ok() || r.ctx->strict_error_line() == 0 ||
                           line_of(dropped.front()) < r.ctx->strict_error_line());
  size_t keep_end = r.own.size();  // rows past this are dropped too (strict)
  if (strict_dup) {
    keep_end = dropped.front();
    dropped.resize(1);
  }
  // Reported duplicates: the first ones that fit in the report's issue list.
  const ReadReport& local = r.own_report;
  std::vector<RecordIssue> issues;
  std::string strict_reason;
  {
    std::vector<int64_t> dup_lines;
    size_t li = 0, di = 0;
    const size_t room = ReadReport::kMaxIssues > report.issues.size()
                            ? ReadReport::kMaxIssues - report.issues.size()
                            : 0;
    std::vector<std::pair<int64_t, int>> order;  // (line, 0 local / 1 duplicate)
    while (order.size() < room && (li < local.issues.size() || di < dropped.size())) {
      const int64_t dl = di < dropped.size() ? line_of(dropped[di]) : INT64_MAX;
      const int64_t ll =
          li < local.issues.size() && !strict_dup ? local.issues[li].line : INT64_MAX;
      if (dl == INT64_MAX && ll == INT64_MAX) break;
      if (dl < ll) {
        order.emplace_back(dl, 1);
        dup_lines.push_back(dl);
        ++di;
      } else {
        order.emplace_back(ll, 0);
        ++li;
      }
    }
    if (strict_dup && dup_lines.empty()) dup_lines.push_back(line_of(dropped.front()));
    std::vector<std::string> texts;
    if (!dup_lines.empty()) {
      TTFT_ASSIGN_OR_RETURN(texts, LinesOf(fd, name, r, dup_lines));
    }
    for (std::string& t : texts) {
      t = fmt::format("duplicate request_id '{}'", RequestIdOf(std::move(t), options, make_parser));
    }
    if (strict_dup) strict_reason = texts.front();
    li = 0;
    di = 0;
    for (const auto& [line, kind] : order) {
      if (kind == 0) {
        RecordIssue issue = local.issues[li++];
        issue.line += line_offset;
        issues.push_back(std::move(issue));
      } else {
        issues.push_back(RecordIssue{name, line + line_offset, texts[di++]});
      }
    }
  }
  // Counts.
  const int64_t ndrop = static_cast<int64_t>(dropped.size());
  if (strict_dup) {
    report.records_read += static_cast<int64_t>(keep_end);
    report.records_skipped += 1;
    report.skipped_by_category["duplicate request_id"] += 1;
  } else {
    report.records_read += local.records_read - ndrop;
    report.records_skipped += local.records_skipped + ndrop;
    report.records_ignored += local.records_ignored;
    for (const auto& [category, n] : local.skipped_by_category) {
      report.skipped_by_category[category] += n;
    }
    if (ndrop > 0) report.skipped_by_category["duplicate request_id"] += ndrop;
    for (const std::string& w : local.warnings) report.warnings.push_back(w);
  }
  for (RecordIssue& issue : issues) report.issues.push_back(std::move(issue));
  // Rows.
  if (strict_dup) {
    table.Append(r.own, {}, keep_end);
    return Status::DataError(
        fmt::format("{}:{}: {}", name, line_of(keep_end) + line_offset, strict_reason));
  }
  table.Append(r.own, dropped, SIZE_MAX, /*threads=*/2);
  int64_t with = r.ctx->with_ttft(), over = r.ctx->ttft_over_30s();
  for (size_t i : dropped) {
    with -= (rows[i].line & RecordContext::kWithTtft) ? 1 : 0;
    over -= (rows[i].line & RecordContext::kTtftOver30) ? 1 : 0;
  }
  first.AddTtftCounts(with, over);
  if (!r.status.ok() && r.ctx->strict_error_line() > 0) {
    const RecordIssue& bad = local.issues.back();
    return Status::DataError(
        fmt::format("{}:{}: {}", name, r.ctx->strict_error_line() + line_offset, bad.reason));
  }
  return r.status;
}

}  // namespace

namespace {

// Sorts id hashes ascending: one pass distributes them by their top 11 bits, then
// each of the 2,048 buckets (a few KB for millions of uniform XXH3 hashes, so in
// cache) is sorted on its own. Three times faster than std::sort over 5 M hashes,
// which missed the cache on every partition pass.
void SortHashes(LargeVector<uint64_t>& v) {
  constexpr int kBits = 11;
  if (v.size() < (size_t{1} << 16)) {
    std::sort(v.begin(), v.end());
    return;
  }
  std::vector<size_t> first((size_t{1} << kBits) + 1, 0);
  for (uint64_t x : v) ++first[(x >> (64 - kBits)) + 1];
  for (size_t b = 1; b < first.size(); ++b) first[b] += first[b - 1];
  std::vector<size_t> at(first.begin(), first.end() - 1);
  LargeVector<uint64_t> out(v.size());
  for (uint64_t x : v) out[at[x >> (64 - kBits)]++] = x;
  for (size_t b = 0; b + 1 < first.size(); ++b) {
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(first[b]),
              out.begin() + static_cast<std::ptrdiff_t>(first[b + 1]));
  }
  v.swap(out);
}

// True when two of the values of `runs` (each sorted ascending) are equal, within a
// run or across runs: a k-way merge, O(n log k).
bool AnyEqual(const std::vector<std::span<const uint64_t>>& runs) {
  using Cursor = std::pair<uint64_t, size_t>;  // (value, run)
  std::priority_queue<Cursor, std::vector<Cursor>, std::greater<>> heap;
  std::vector<size_t> at(runs.size(), 0);
  for (size_t k = 0; k < runs.size(); ++k) {
    if (!runs[k].empty()) heap.emplace(runs[k][0], k);
  }
  bool any = false;
  uint64_t last = 0;
  while (!heap.empty()) {
    const auto [v, k] = heap.top();
    heap.pop();
    if (any && v == last) return true;
    any = true;
    last = v;
    // Stay on run k while it holds the smallest values (the common case for k = 1).
    const std::span<const uint64_t> run = runs[k];
    size_t i = ++at[k];
    const uint64_t bound = heap.empty() ? UINT64_MAX : heap.top().first;
    for (; i < run.size() && run[i] < bound; ++i) {
      if (run[i] == last) return true;
      last = run[i];
    }
    at[k] = i;
    if (i < run.size()) heap.emplace(run[i], k);
  }
  return false;
}

// Parses the ranges [cuts[k], cuts[k + 1]) of an open span JSONL file on a thread
// each and merges them in file order (see ReadSpanTable). With `duplicates_found`
// null, duplicate ids are rejected as they come. Otherwise no id is rejected: each
// range keeps its records' id hashes, sorted on its thread, and when two are equal,
// or a range stopped with an error, *duplicates_found is set and the table and
// report are left for the caller to restore (the results would not be those of a
// sequential read).
Status ReadRanges(int fd, const std::string& path, const SpanReadOptions& options,
                  InputFormat format, const std::vector<uint64_t>& cuts, uint64_t size,
                  SpanTable& table, ReadReport& report, bool* duplicates_found) {
  const bool optimistic = duplicates_found != nullptr;
  std::vector<Range> ranges(cuts.size());
  for (size_t k = 0; k < ranges.size(); ++k) {
    Range& r = ranges[k];
    r.begin = cuts[k];
    r.end = k + 1 < cuts.size() ? cuts[k + 1] : size;
    if (k == 0) {
      r.ctx = std::make_unique<RecordContext>(path, options, table, report);
    } else {
      r.ctx = std::make_unique<RecordContext>(path, options, r.own, r.own_report);
      if (!optimistic) r.ctx->TraceRows();
    }
    if (optimistic) r.ctx->CollectIds();
    r.parser = FindInputFormat(format)->make_parser(*r.ctx, true);
  }
  // Under strict, ranges after one that stopped are not needed.
  std::vector<std::atomic<bool>> stop(ranges.size());
  auto run = [&](size_t k) {
    Range& r = ranges[k];
    r.status = ParseRange(fd, path, r, table, k == 0, size, options.chunk_bytes, stop[k]);
    if (!r.status.ok()) {
      for (size_t j = k + 1; j < ranges.size(); ++j) stop[j] = true;
    }
    if (optimistic && r.status.ok()) SortHashes(r.ctx->ids());
  };
  {
    std::vector<std::jthread> helpers;
    for (size_t k = 1; k < ranges.size(); ++k) helpers.emplace_back(run, k);
    run(0);
  }
  if (optimistic) {
    std::vector<std::span<const uint64_t>> sorted;
    for (Range& r : ranges) {
      if (!r.status.ok()) {
        *duplicates_found = true;  // which record stops a read depends on the duplicates
        return Status::Ok();
      }
      sorted.emplace_back(r.ctx->ids());
    }
    if (AnyEqual(sorted)) {
      *duplicates_found = true;
      return Status::Ok();
    }
  }
  if (!ranges[0].status.ok()) return ranges[0].status;
  std::vector<const RecordContext*> earlier = {ranges[0].ctx.get()};
  int64_t line_offset = ranges[0].lines;
  for (size_t k = 1; k < ranges.size(); ++k) {
    Range& r = ranges[k];
    TTFT_RETURN_IF_ERROR(MergeRange(fd, path, r, *ranges[0].ctx, earlier, line_offset, options,
                                    FindInputFormat(format)->make_parser, table, report));
    line_offset += r.lines;
    earlier.push_back(r.ctx.get());
    r.own = SpanTable();
  }
  return ranges[0].parser->Finish();
}

}  // namespace

}  // namespace internal

Status ReadSpanTable(const std::string& path, const SpanReadOptions& options, SpanTable& table,
                     ReadReport& report) {
  const int threads = options.threads > 0
                          ? options.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::error_code ec;
  if (threads < 2 || path == "-" || !std::filesystem::is_regular_file(path, ec)) {
    return ReadSpans(path, options, table, report);
  }
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec || size < std::max<uint64_t>(options.parallel_min_bytes, 2)) {
    return ReadSpans(path, options, table, report);
  }
  internal::FileFd file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) return ReadSpans(path, options, table, report);  // it words the error
  // Only a splittable format (span JSONL) in a plain file: the format must be certain
  // from the first bytes (DetectFormat decides a JSON object from its first 4 KB) and the
  // file not gzip.
  std::string head(static_cast<size_t>(std::min<uint64_t>(size, 1 << 16)), '\0');
  {
    auto n = internal::PRead(file.fd, path, head.data(), head.size(), 0);
    if (!n.ok()) return ReadSpans(path, options, table, report);
    head.resize(*n);
  }
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
      static_cast<unsigned char>(head[1]) == 0x8b) {
    return ReadSpans(path, options, table, report);
  }
  size_t lead = head.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  while (lead < head.size() && std::isspace(static_cast<unsigned char>(head[lead]))) ++lead;
  const InputFormat format =
      options.format != InputFormat::kAuto                                     ? options.format
      : lead + 4096 <= head.size() && (head[lead] == '{' || head[lead] == '[') ? DetectFormat(head)
                                                                               : InputFormat::kAuto;
  const internal::InputFormatRow* row = internal::FindInputFormat(format);
  if (row == nullptr || !row->splittable) return ReadSpans(path, options, table, report);

  // Split points: just after the first newline at or past size * k / threads.
  std::vector<uint64_t> cuts = {0};
  for (int k = 1; k < threads; ++k) {
    uint64_t at = std::max(cuts.back(), size * static_cast<uint64_t>(k) / threads);
    char block[4096];
    uint64_t cut = size;
    while (at < size) {
      auto n = internal::PRead(file.fd, path, block, sizeof block, at);
      if (!n.ok() || *n == 0) break;
      const void* nl = std::memchr(block, '\n', *n);
      if (nl != nullptr) {
        cut = at + static_cast<uint64_t>(static_cast<const char*>(nl) - block) + 1;
        break;
      }
      at += *n;
    }
    if (cut >= size || cut <= cuts.back()) break;
    cuts.push_back(cut);
  }
  if (cuts.size() < 2) return ReadSpans(path, options, table, report);
  if (!options.detect_duplicates) {
    return internal::ReadRanges(file.fd, path, options, format, cuts, size, table, report, nullptr);
  }
  // Optimistic first: duplicate ids are rare, and checking them afterwards (sorting
  // the ranges' id hashes) costs a fraction of rejecting them as they come (a random
  // probe into a set of millions per record). If there are any, the read is redone
  // the exact way, from the same starting table and report.
  const size_t base_rows = table.size();
  const ReadReport base_report = report;
  bool redo = false;
  Status st =
      internal::ReadRanges(file.fd, path, options, format, cuts, size, table, report, &redo);
  if (!redo) return st;
  table.Truncate(base_rows);
  report = base_report;
  return internal::ReadRanges(file.fd, path, options, format, cuts, size, table, report, nullptr);
}

}  // namespace ttft
