// Fits the cost model's free parameters to a vLLM measurement table and reports the
// fit in sample and held out (docs/calibration.md).
//
//   build/calibrate ../shared/data/vllm-h100/calibration.csv [FREE]
//
// FREE is a comma-separated list of the parameters to fit (default:
// front_end_s,decode_mbu,seq_overhead_s); the others keep their defaults.
// Free parameters (the others keep their sourced defaults, docs/calibration.md):
// front_end_s, decode_mbu, seq_overhead_s, prefill_mfu. Objective: the sum of the
// mean absolute percentage errors of TTFT mean, TTFT p90, E2E mean and decode time
// per token over the rows that are not measured overloaded. Search: coordinate descent
// over a grid per parameter, repeated until nothing improves (deterministic).
// Held out: for each workload, fit on the other workloads' rows and score its rows.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ttft/validate.h"

namespace {

using ttft::CostParams;
using ttft::MeasurementRow;

struct Param {
  const char* name;
  double CostParams::*field;
  std::vector<double> grid;
};

std::vector<double> Range(double lo, double hi, double step) {
  std::vector<double> v;
  for (double x = lo; x <= hi + step / 2; x += step) v.push_back(x);
  return v;
}

double Objective(const ttft::ValidationReport& r) {
  return r.mape.ttft_mean_ms + r.mape.ttft_p90_ms + r.mape.e2e_mean_ms + r.mape.decode_ms_per_token;
}

double Evaluate(const std::vector<MeasurementRow>& rows, const CostParams& c,
                ttft::ValidationReport* out = nullptr) {
  ttft::ValidateOptions opt;
  opt.cost = c;
  opt.repeats = 1;  // one seed per evaluation: the search stays fast (see docs/calibration.md)
  auto rep = ttft::RunValidation(rows, opt);
  if (!rep.ok()) {
    std::fprintf(stderr, "%s\n", rep.status().ToString().c_str());
    return 1e9;
  }
  if (out) *out = *rep;
  return Objective(*rep);
}

CostParams Fit(const std::vector<MeasurementRow>& rows, std::vector<Param>& params) {
  CostParams best;
  double best_obj = Evaluate(rows, best);
  for (int pass = 0; pass < 6; ++pass) {
    bool improved = false;
    for (const Param& p : params) {
      for (double v : p.grid) {
        CostParams c = best;
        c.*p.field = v;
        const double o = Evaluate(rows, c);
        if (o < best_obj - 1e-9) {
          best_obj = o;
          best = c;
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  return best;
}

std::string Describe(const CostParams& c) {
  return fmt::format(
      "front_end_s={:.4f} decode_mbu={:.3f} seq_overhead_s={:.6f} prefill_mfu={:.3f}",
      c.front_end_s, c.decode_mbu, c.seq_overhead_s, c.prefill_mfu);
}

std::string Mapes(const ttft::StageMetrics& m) {
  return fmt::format(
      "ttft_mean {:.1f}%  ttft_p50 {:.1f}%  ttft_p90 {:.1f}%  ttft_p99 {:.1f}%  e2e_mean {:.1f}%  "
      "e2e_p99 {:.1f}%  decode {:.1f}%  out_tok_s {:.1f}%",
      m.ttft_mean_ms * 100, m.ttft_p50_ms * 100, m.ttft_p90_ms * 100, m.ttft_p99_ms * 100,
      m.e2e_mean_ms * 100, m.e2e_p99_ms * 100, m.decode_ms_per_token * 100, m.out_tok_s * 100);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: calibrate DATA.csv [FREE]\n");
    return 2;
  }
  auto all = ttft::ReadMeasurements(argv[1]);
  if (!all.ok()) {
    std::fprintf(stderr, "%s\n", all.status().ToString().c_str());
    return 1;
  }
  // Only rows that are not overloaded (failed requests or TTFT above 10 s) are fitted.
  std::vector<MeasurementRow> rows;
  for (const auto& r : *all) {
    if (r.n_failed == 0 && r.measured.ttft_mean_ms < 10e3) rows.push_back(r);
  }
  std::vector<Param> params = {
      {"front_end_s", &CostParams::front_end_s, Range(0.010, 0.040, 0.001)},
      {"decode_mbu", &CostParams::decode_mbu, Range(0.60, 0.90, 0.01)},
      {"seq_overhead_s", &CostParams::seq_overhead_s, Range(0.0, 80e-6, 2e-6)},
      {"prefill_mfu", &CostParams::prefill_mfu, Range(0.40, 0.80, 0.02)},
  };
  const std::string free = argc > 2 ? argv[2] : "front_end_s,decode_mbu,seq_overhead_s";
  std::vector<Param> chosen;
  for (const Param& p : params) {
    if (("," + free + ",").find(std::string(",") + p.name + ",") != std::string::npos) {
      chosen.push_back(p);
    }
  }
  params = chosen;
  std::printf("free parameters: %s\n", free.c_str());
  ttft::ValidationReport rep;
  const CostParams fit = Fit(rows, params);
  Evaluate(rows, fit, &rep);
  std::printf("in-sample fit on %zu rows: %s\n  %s\n\n", rows.size(), Describe(fit).c_str(),
              Mapes(rep.mape).c_str());
  {
    ttft::ValidationReport full;
    ttft::ValidateOptions opt;
    opt.cost = fit;
    auto r = ttft::RunValidation(*all, opt);
    if (r.ok()) std::printf("%s\n", ttft::ValidationText(*r).c_str());
  }

  // Hold one workload out.
  std::set<std::string> workloads;
  std::map<std::string, std::string> workload_of;
  for (const auto& r : rows) workloads.insert(r.experiment);
  ttft::StageMetrics held{};
  int n_held = 0;
  for (const std::string& w : workloads) {
    std::vector<MeasurementRow> train, test;
    for (const auto& r : rows) (r.experiment == w ? test : train).push_back(r);
    const CostParams c = Fit(train, params);
    ttft::ValidationReport t;
    Evaluate(test, c, &t);
    std::printf("held out %s (%zu rows), fitted on the other %zu: %s\n  %s\n", w.c_str(),
                test.size(), train.size(), Describe(c).c_str(), Mapes(t.mape).c_str());
    for (const auto& r : t.rows) {
      held.ttft_mean_ms += r.error.ttft_mean_ms;
      held.ttft_p50_ms += r.error.ttft_p50_ms;
      held.ttft_p90_ms += r.error.ttft_p90_ms;
      held.ttft_p99_ms += r.error.ttft_p99_ms;
      held.e2e_mean_ms += r.error.e2e_mean_ms;
      held.e2e_p99_ms += r.error.e2e_p99_ms;
      held.decode_ms_per_token += r.error.decode_ms_per_token;
      held.out_tok_s += r.error.out_tok_s;
      ++n_held;
    }
  }
  for (double ttft::StageMetrics::*f :
       {&ttft::StageMetrics::ttft_mean_ms, &ttft::StageMetrics::ttft_p50_ms,
        &ttft::StageMetrics::ttft_p90_ms, &ttft::StageMetrics::ttft_p99_ms,
        &ttft::StageMetrics::e2e_mean_ms, &ttft::StageMetrics::e2e_p99_ms,
        &ttft::StageMetrics::decode_ms_per_token, &ttft::StageMetrics::out_tok_s}) {
    held.*f /= n_held;
  }
  std::printf("\nheld-out MAPE over %d rows (each scored by the fit without its workload):\n  %s\n",
              n_held, Mapes(held).c_str());
  return 0;
}
