// Status, exit codes and request-status names (ttft/core.h).
#include <fmt/format.h>

#include "ttft/core.h"

namespace ttft {

Status Status::WithContext(std::string_view prefix) const {
  if (ok()) return *this;
  return {code_, fmt::format("{}: {}", prefix, message_)};
}

std::string Status::ToString() const {
  switch (code_) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument: " + message_;
    case StatusCode::kNotFound: return "not found: " + message_;
    case StatusCode::kDataError: return "data error: " + message_;
    case StatusCode::kUnavailable: return "unavailable: " + message_;
    case StatusCode::kInternal: return "internal error: " + message_;
    case StatusCode::kIoError: return "i/o error: " + message_;
  }
  return message_;
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return 0;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound: return 2;
    case StatusCode::kDataError: return 65;
    case StatusCode::kUnavailable: return 69;
    case StatusCode::kInternal: return 70;
    case StatusCode::kIoError: return 74;
  }
  return 70;
}

std::string_view ToString(RequestStatus s) {
  switch (s) {
    case RequestStatus::kOk: return "ok";
    case RequestStatus::kRejectedTooLong: return "rejected_too_long";
    case RequestStatus::kAborted: return "aborted";
    case RequestStatus::kError: return "error";
  }
  return "error";
}

std::optional<RequestStatus> ParseRequestStatus(std::string_view s) {
  for (auto st : {RequestStatus::kOk, RequestStatus::kRejectedTooLong, RequestStatus::kAborted,
                  RequestStatus::kError}) {
    if (ToString(st) == s) return st;
  }
  return std::nullopt;
}

}  // namespace ttft
