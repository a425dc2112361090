// A replica's metrics as a Prometheus exposition snapshot with vLLM v1 names
// (ttft/fleet.h). HELP strings are vLLM's own (vllm/v1/metrics/loggers.py, as
// exported by vLLM 0.30).
#include <algorithm>

#include "ttft/fleet.h"

namespace ttft {
namespace {

MetricFamily& Family(std::vector<MetricFamily>& fams, const char* name, const char* help,
                     MetricType type) {
  for (auto& f : fams) {
    if (f.name == name) return f;
  }
  fams.push_back(MetricFamily{name, help, type, {}});
  return fams.back();
}

Labels WithLabel(const Labels& base, const char* key, const std::string& value) {
  Labels out = base;
  out.emplace_back(key, value);
  std::sort(out.begin(), out.end());
  return out;
}

HistogramValue ToValue(const Histogram& h) {
  HistogramValue v;
  v.upper_bounds = *h.bounds;
  v.cumulative_counts.resize(h.bounds->size());
  double acc = 0;
  for (size_t i = 0; i < h.bounds->size(); ++i) {
    acc += static_cast<double>(h.counts[i]);
    v.cumulative_counts[i] = acc;
  }
  v.count = static_cast<double>(h.count);
  v.sum = h.sum;
  return v;
}

}  // namespace

void AppendReplicaSeries(const Replica& r, const ReplicaSpec& spec, const std::string& model_name,
                         double process_start_s, std::vector<MetricFamily>& fams) {
  // prometheus_client's help text (process_collector.py).
  Family(fams, "process_start_time_seconds",
         "Start time of the process since unix epoch in seconds.", MetricType::kGauge)
      .series.push_back({{{"region", spec.region}, {"replica", spec.name}}, process_start_s, {}});
  Labels labels = {
      {"engine", "0"}, {"model_name", model_name}, {"region", spec.region}, {"replica", spec.name}};
  std::sort(labels.begin(), labels.end());
  const EngineMetrics& m = r.metrics();
  auto gauge = [&](const char* name, const char* help, double v) {
    Family(fams, name, help, MetricType::kGauge).series.push_back({labels, v, {}});
  };
  auto counter = [&](const char* name, const char* help, double v) {
    Family(fams, name, help, MetricType::kCounter).series.push_back({labels, v, {}});
  };
  auto hist = [&](const char* name, const char* help, const Histogram& h) {
    Family(fams, name, help, MetricType::kHistogram).series.push_back({labels, 0, ToValue(h)});
  };
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
        static_cast<double>(r.num_running()));
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
        static_cast<double>(r.num_waiting()));
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", r.KvUsage());
  counter("vllm:prefix_cache_queries_total",
          "Prefix cache queries, in terms of number of queried tokens.",
          static_cast<double>(m.prefix_cache_queries));
  counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.",
          static_cast<double>(m.prefix_cache_hits));
  counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.",
          static_cast<double>(m.num_preemptions));
  counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.",
          static_cast<double>(m.prompt_tokens));
  {
    MetricFamily& f = Family(fams, "vllm:prompt_tokens_by_source_total",
                             "Number of prompt tokens by source.", MetricType::kCounter);
    f.series.push_back({WithLabel(labels, "source", "local_compute"),
                        static_cast<double>(m.prompt_tokens - m.prompt_tokens_cached),
                        {}});
    f.series.push_back({WithLabel(labels, "source", "local_cache_hit"),
                        static_cast<double>(m.prompt_tokens_cached),
                        {}});
    f.series.push_back({WithLabel(labels, "source", "external_kv_transfer"), 0.0, {}});
  }
  counter("vllm:prompt_tokens_cached_total", "Number of cached prompt tokens (local + external).",
          static_cast<double>(m.prompt_tokens_cached));
  counter("vllm:generation_tokens_total", "Number of generation tokens processed.",
          static_cast<double>(m.generation_tokens));
  {
    MetricFamily& f = Family(fams, "vllm:request_success_total",
                             "Count of successfully processed requests.", MetricType::kCounter);
    f.series.push_back(
        {WithLabel(labels, "finished_reason", "stop"), static_cast<double>(m.success_stop), {}});
    f.series.push_back({WithLabel(labels, "finished_reason", "length"),
                        static_cast<double>(m.success_length),
                        {}});
    f.series.push_back(
        {WithLabel(labels, "finished_reason", "abort"), static_cast<double>(m.success_abort), {}});
  }
  hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", m.prompt_len);
  hist("vllm:request_generation_tokens", "Number of generation tokens processed.",
       m.generation_len);
  hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
       m.iteration_tokens);
  hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", m.ttft);
  hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", m.itl);
  hist("vllm:request_time_per_output_token_seconds",
       "Histogram of time_per_output_token_seconds per request.", m.tpot);
  hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", m.e2e);
  hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
       m.queue);
  hist("vllm:request_inference_time_seconds",
       "Histogram of time spent in RUNNING phase for request.", m.inference);
  hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.",
       m.prefill);
  hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.",
       m.decode);
  hist("vllm:request_prefill_kv_computed_tokens",
       "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
       m.prefill_kv_computed);
}

}  // namespace ttft
