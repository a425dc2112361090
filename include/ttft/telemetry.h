// -----------------------------------------------------------------------------
// File: ttft/telemetry.h
// -----------------------------------------------------------------------------
//
// The telemetry module, all of it: an umbrella over its headers by concern. Include
// the narrow header for what you use:
//
//   ttft/input.h       input formats and their detection, file reading, ReadReport
//   ttft/spans.h       span writers and readers, SpanSink, SpanTable
//   ttft/metrics.h     MetricSnapshot, the exposition format, canonical metrics,
//                      WindowDelta
//   ttft/prometheus.h  the Prometheus HTTP API client and its JSON responses
//   ttft/csv.h         the RFC 4180 CSV tokenizer

#ifndef TTFT_TELEMETRY_H_
#define TTFT_TELEMETRY_H_

#include "ttft/csv.h"
#include "ttft/input.h"
#include "ttft/metrics.h"
#include "ttft/prometheus.h"
#include "ttft/spans.h"

#endif  // TTFT_TELEMETRY_H_
