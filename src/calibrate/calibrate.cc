// The fit of `ttft calibrate` (ttft/calibrate.h).
#include "ttft/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "ttft/format.h"

#include <nlopt.h>

namespace ttft {
namespace {

constexpr double kFlatObjective = 0.005;  // 0.5 percentage points of summed MAPE
constexpr double kProbe = 0.25;           // identifiability probe: +-25 %

bool MeasuredOverloaded(const MeasurementRow& r) {
  return r.n_failed > 0 || r.measured.ttft_mean_ms > 10e3;  // as RunValidation decides
}

// Sum over the three metrics of their mean absolute percentage error over the rows
// not measured overloaded, each row's error capped at 100 %: a row the simulation
// overloads (errors of thousands of percent) must not hide what a step does to the
// others, and it still costs as much as a row can.
double Objective(const ValidationReport& rep) {
  double o = 0;
  for (double StageMetrics::*f : {&StageMetrics::ttft_mean_ms, &StageMetrics::e2e_mean_ms,
                                  &StageMetrics::decode_ms_per_token}) {
    double sum = 0;
    int n = 0;
    for (const StageResult& r : rep.rows) {
      const double e = r.error.*f;
      if (r.measured_overloaded || !std::isfinite(e)) continue;
      sum += std::min(e, 1.0);
      ++n;
    }
    if (n > 0) o += sum / n;
  }
  return o;
}

// A parameter's step: multiplicative for a positive value, absolute from zero.
struct Free {
  const CostParamField* field;
  double zero_step;  // the first step when the value is 0
  // The size a move of value `v` is measured against: `v`, or the zero step at 0.
  double Scale(double v) const { return v > 0 ? v : zero_step; }
};

double ZeroStep(const std::string& name) {
  if (name == "prefill_layer_overhead_s" || name == "layer_overhead_s") return 20e-6;
  if (name == "front_end_s_per_prompt_token") return 1e-6;
  if (name == "seq_overhead_s" || name == "allreduce_latency_s") return 5e-6;
  if (name == "step_overhead_s") return 0.1e-3;
  if (name == "front_end_s") return 5e-3;
  return 0.05;
}

class Fitter;
struct SearchState {
  Fitter* fitter;
  CostParams base;  // the start; the free parameters are overwritten
  const std::vector<Free>* free;
  std::vector<double> scale;  // x[i] * scale[i] is parameter i's value
  CostParams best;
  double best_obj = std::numeric_limits<double>::infinity();
};
double SearchObjective(unsigned n, const double* x, double* grad, void* data);

class Fitter {
 public:
  Fitter(const std::vector<MeasurementRow>& rows, const CalibrateOptions& o, int* evals)
      : rows_(rows), opt_(o), evals_(evals) {}

  // The objective of `c` on the rows (a large value when the simulation fails).
  double Eval(const CostParams& c, ValidationReport* out = nullptr) {
    ++*evals_;
    ValidateOptions vo;
    vo.cost = c;
    vo.seed = opt_.seed;
    vo.repeats = opt_.seeds;
    auto rep = RunValidation(rows_, vo);
    if (!rep.ok() || rep->mape_rows == 0) return 1e9;
    if (out) *out = *rep;
    return Objective(*rep);
  }

  // Minimises the objective from `start` over `free` with at most `budget` evaluations
  // (NLopt's Subplex; see the comment at SearchObjective).
  CostParams Search(const CostParams& start, const std::vector<Free>& free, int budget,
                    double* obj) {
    SearchState st{this, start, &free, {}, start};
    const unsigned n = static_cast<unsigned>(free.size());
    std::vector<double> x(n), lb(n), ub(n), dx(n);
    for (unsigned i = 0; i < n; ++i) {
      const double v = start.*(free[i].field->field);
      st.scale.push_back(free[i].Scale(v));
      x[i] = v / st.scale[i];
      lb[i] = free[i].field->min / st.scale[i];
      ub[i] = free[i].field->max / st.scale[i];
      dx[i] = v > 0 ? 0.2 : 1.0;  // 20 % of a value; one zero step from 0
    }
    // nlopt_create fails only out of memory; then there is no search.
    nlopt_opt o = n > 0 && budget > 1 ? nlopt_create(NLOPT_LN_SBPLX, n) : nullptr;
    if (o != nullptr) {
      nlopt_set_min_objective(o, &SearchObjective, &st);
      nlopt_set_lower_bounds(o, lb.data());
      nlopt_set_upper_bounds(o, ub.data());
      nlopt_set_initial_step(o, dx.data());
      nlopt_set_maxeval(o, budget);
      nlopt_set_xtol_abs1(o, 0.003);  // 0.3 % of each parameter's scale
      double f = 0;
      // Whatever the stop reason (budget, tolerance, a failure), the best point
      // evaluated is SearchObjective's.
      nlopt_optimize(o, x.data(), &f);
      nlopt_destroy(o);
    }
    // No search (nothing free, a budget of 1, no memory) or none evaluated: the start.
    if (!std::isfinite(st.best_obj)) {
      *obj = Eval(start);
      return start;
    }
    *obj = st.best_obj;
    return st.best;
  }

 private:
  const std::vector<MeasurementRow>& rows_;
  const CalibrateOptions& opt_;
  int* evals_;
};

// Subplex (Rowan 1990, "Functional stability analysis of numerical algorithms"):
// Nelder-Mead on a sequence of low-dimensional subspaces, robust to the small jumps a
// discrete-event simulation puts in the objective, and unlike a coordinate search it
// follows a valley that runs across the axes (two parameters the data trade against
// each other). Parameters are scaled by their start so one tolerance suits all.
double SearchObjective(unsigned n, const double* x, double* /*grad*/, void* data) {
  auto* st = static_cast<SearchState*>(data);
  CostParams c = st->base;
  for (unsigned i = 0; i < n; ++i) c.*((*st->free)[i].field->field) = x[i] * st->scale[i];
  const double o = st->fitter->Eval(c);
  if (o < st->best_obj) {
    st->best_obj = o;
    st->best = c;
  }
  return o;
}

std::string Pct(double v) { return std::isfinite(v) ? fmt::format("{:.1f}%", v * 100) : "n/a"; }

}  // namespace

Result<CalibrationResult> Calibrate(const std::vector<MeasurementRow>& all,
                                    const CalibrateOptions& opt) {
  CalibrationResult res;
  if (opt.seeds < 1 || opt.seeds > 100) {
    return Status::Invalid(fmt::format("seeds: {} (1 to 100)", opt.seeds));
  }
  res.seeds = opt.seeds;
  std::vector<Free> free;
  for (const std::string& n : opt.free) {
    const CostParamField* f = FindCostParamField(n);
    if (!f) return Status::Invalid(fmt::format("free parameter '{}': unknown", n));
    for (const Free& other : free) {
      if (other.field == f) return Status::Invalid(fmt::format("free parameter '{}': twice", n));
    }
    free.push_back({f, ZeroStep(n)});
  }
  std::vector<MeasurementRow> rows;
  std::map<std::string, std::pair<int, int>> per_file;  // file: fitted, left out
  for (const auto& r : all) {
    const std::string file = r.source.substr(
        0, r.source.rfind(':') == std::string::npos ? r.source.size() : r.source.rfind(':'));
    if (!r.skip_reason.empty()) {
      res.warnings.push_back("row not used: " + r.skip_reason);
      ++per_file[file].second;
    } else if (MeasuredOverloaded(r)) {
      res.warnings.push_back(fmt::format(
          "{}: {} stage {}: measured overloaded (failed requests or TTFT above 10 s), not fitted",
          r.source, r.experiment, r.stage));
      ++per_file[file].second;
    } else {
      rows.push_back(r);
      ++per_file[file].first;
    }
  }
  if (rows.empty()) return Status::Invalid("no measurement row can be fitted (see the warnings)");
  res.async_scheduling = rows.front().async_scheduling;
  for (const auto& r : rows) {
    if (r.async_scheduling != rows.front().async_scheduling) res.async_scheduling.reset();
  }
  for (const auto& [file, n] : per_file) {
    res.data.push_back(fmt::format("{} ({} rows fitted, {} left out)", file, n.first, n.second));
  }
  // What the inputs did not say (engine defaults, a bench result's workload): per row.
  for (const auto& r : rows) {
    for (const auto& d : r.defaults_used)
      res.data.push_back(fmt::format("{}: assumed {}", r.source, d));
  }

  Fitter fit(rows, opt, &res.evaluations);
  double obj = 0;
  CostParams start = opt.start;
  // A freed gqa_kv_mbu tied to kv_mbu (0) starts at the value it stands for; if the
  // data do not identify it, it goes back to its sourced 0, tied.
  for (const Free& f : free) {
    if (f.field->field == &CostParams::gqa_kv_mbu) start.gqa_kv_mbu = start.KvMbu(true);
  }
  CostParams c = fit.Search(start, free, opt.max_evaluations, &obj);

  // Identifiability by profile (Raue et al. 2009, "Structural and practical
  // identifiability analysis of partially observed dynamical models by exploiting the
  // profile likelihood", Bioinformatics 25:1923): each parameter is held 25 % off its
  // fitted value while the others are refitted (a short warm-started search). If the
  // others make up for the move to within kFlatObjective, the data see a combination,
  // not the parameter. A one-at-a-time probe misses such a trade: two terms that both
  // price a long-context step each move the objective alone, and not together.
  // The least identified is kept at its sourced value first, the rest refitted and
  // profiled again: keeping one takes a compensator from the others, so a parameter
  // that traded only against it may now be seen (and one that was seen stays seen).
  // At least 12 (a 1-D Subplex needs about that to make up for a 25 % move), never more
  // than the whole budget asked for.
  const int profile_budget = std::min(opt.max_evaluations, std::max(12, opt.max_evaluations / 10));
  std::vector<size_t> active(free.size());  // not kept: fitted
  for (size_t i = 0; i < free.size(); ++i) active[i] = i;
  std::vector<const CostParamField*> partner(free.size(), nullptr);
  // The refitted point of the probe nearer the sourced value: where the others went to
  // make up for the move, the start of the refit if the parameter is kept.
  std::vector<CostParams> compensated(free.size(), c);
  auto profile = [&](size_t i) {
    std::vector<Free> others;
    for (size_t j : active) {
      if (j != i) others.push_back(free[j]);
    }
    const Free& f = free[i];
    const double v = c.*(f.field->field);
    double worst = 0, moved_most = 0, nearest = std::numeric_limits<double>::infinity();
    partner[i] = nullptr;
    for (double dir : {+1.0, -1.0}) {
      CostParams q = c;
      double& x = q.*(f.field->field);
      x = v > 0 ? v * (1 + dir * kProbe) : std::max(0.0, dir * f.zero_step);
      x = std::clamp(x, f.field->min, f.field->max);
      if (x == v) continue;
      double o = 0;
      const CostParams r =
          others.empty() ? (o = fit.Eval(q), q) : fit.Search(q, others, profile_budget, &o);
      worst = std::max(worst, o - obj);
      if (std::abs(x - res.params[i].sourced) < nearest) {
        nearest = std::abs(x - res.params[i].sourced);
        compensated[i] = r;
      }
      for (const Free& g : others) {
        const double before = c.*(g.field->field);
        const double move = std::abs(r.*(g.field->field) - before) / g.Scale(before);
        if (move > moved_most && move > 0.05) moved_most = move, partner[i] = g.field;
      }
    }
    res.params[i].sensitivity = worst;
    res.params[i].identified = worst >= kFlatObjective;
  };
  for (size_t i = 0; i < free.size(); ++i) {
    FittedParam p;
    p.name = free[i].field->name;
    p.sourced = opt.start.*(free[i].field->field);
    res.params.push_back(p);
    profile(i);
  }
  for (;;) {
    size_t u = free.size();
    for (size_t i : active) {
      if (!res.params[i].identified &&
          (u == free.size() || res.params[i].sensitivity < res.params[u].sensitivity))
        u = i;
    }
    if (u == free.size()) break;
    FittedParam& p = res.params[u];
    const CostParamField* f = free[u].field;
    if (partner[u]) p.traded_with = partner[u]->name;
    const std::string sourced = f->zero_means && p.sourced == 0
                                    ? fmt::format("0 ({})", f->zero_means)
                                    : fmt::format("{}", p.sourced);
    res.warnings.push_back(
        partner[u] ? fmt::format("{}: not identified by these data (held 25 % off, the objective "
                                 "moves by {:.2f} points with the others refitted: {} makes up for "
                                 "it); kept at its sourced value {}",
                                 p.name, p.sensitivity * 100, partner[u]->name, sourced)
                   : fmt::format("{}: not identified by these data (held 25 % off, the objective "
                                 "moves by {:.2f} points); kept at its sourced value {}",
                                 p.name, p.sensitivity * 100, sourced));
    c = compensated[u];
    c.*(f->field) = p.sourced;
    active.erase(std::find(active.begin(), active.end(), u));
    if (active.empty()) break;
    std::vector<Free> still;
    still.reserve(active.size());
    for (size_t j : active) still.push_back(free[j]);
    c = fit.Search(c, still, std::max(10, opt.max_evaluations / 4), &obj);
    for (size_t j : active) {
      if (res.params[j].identified) continue;
      profile(j);
      if (res.params[j].identified) {
        res.warnings.push_back(fmt::format(
            "{}: identified once {} is kept (held 25 % off, the objective then moves by "
            "{:.2f} points with the others refitted)",
            res.params[j].name, p.name, res.params[j].sensitivity * 100));
      }
    }
  }
  ValidationReport rep;
  res.objective = fit.Eval(c, &rep);
  res.in_sample = rep.mape;
  res.rows = rep.mape_rows;
  res.cost = c;
  for (FittedParam& p : res.params) {
    p.value = c.*(FindCostParamField(p.name)->field);
  }

  // Leave one run out: fit without the run (warm start, a quarter of the budget),
  // score its rows.
  std::vector<std::string> runs;
  for (const auto& r : rows) {
    if (std::find(runs.begin(), runs.end(), r.experiment) == runs.end())
      runs.push_back(r.experiment);
  }
  if (opt.leave_one_run_out && runs.size() >= 2) {
    std::vector<Free> identified;
    for (size_t i = 0; i < free.size(); ++i) {
      if (res.params[i].identified) identified.push_back(free[i]);
    }
    const auto fields = std::vector<double StageMetrics::*>{
        &StageMetrics::ttft_mean_ms,        &StageMetrics::ttft_p50_ms, &StageMetrics::ttft_p90_ms,
        &StageMetrics::ttft_p99_ms,         &StageMetrics::e2e_mean_ms, &StageMetrics::e2e_p99_ms,
        &StageMetrics::decode_ms_per_token, &StageMetrics::out_tok_s};
    std::vector<double> sum(fields.size(), 0);
    std::vector<int> cnt(fields.size(), 0);
    for (const std::string& run : runs) {
      std::vector<MeasurementRow> train, test;
      for (const auto& r : rows) (r.experiment == run ? test : train).push_back(r);
      Fitter f(train, opt, &res.evaluations);
      double o = 0;
      const CostParams held = f.Search(c, identified, std::max(10, opt.max_evaluations / 4), &o);
      ValidationReport t;
      Fitter(test, opt, &res.evaluations).Eval(held, &t);
      for (const auto& row : t.rows) {
        for (size_t i = 0; i < fields.size(); ++i) {
          const double e = row.error.*fields[i];
          if (!row.measured_overloaded && std::isfinite(e)) {
            sum[i] += e;
            ++cnt[i];
          }
        }
      }
    }
    for (size_t i = 0; i < fields.size(); ++i) {
      res.leave_one_run_out.*fields[i] =
          cnt[i] ? sum[i] / cnt[i] : std::numeric_limits<double>::quiet_NaN();
    }
    res.runs = static_cast<int>(runs.size());
  } else if (opt.leave_one_run_out) {
    res.warnings.push_back("one run only: no leave-one-run-out error");
  }
  return res;
}

std::string CalibrationResultYaml(const CalibrationResult& r) {
  auto q = [](const std::string& s) {
    std::string o = "\"";
    for (char ch : s) {
      if (ch == '"' || ch == '\\') o += '\\';
      if (static_cast<unsigned char>(ch) < 0x20) {
        o += fmt::format("\\x{:02x}", static_cast<unsigned char>(ch));
        continue;
      }
      o += ch;
    }
    return o + "\"";
  };
  auto mape = [](const StageMetrics& m) {
    auto v = [](double x) {
      return std::isfinite(x) ? fmt::format("{:.4f}", x) : std::string("null");
    };
    return fmt::format("{{ttft_mean: {}, ttft_p90: {}, e2e_mean: {}, decode_ms_per_token: {}}}",
                       v(m.ttft_mean_ms), v(m.ttft_p90_ms), v(m.e2e_mean_ms),
                       v(m.decode_ms_per_token));
  };
  std::string fit = "data:\n";
  for (const auto& d : r.data) fit += "  - " + q(d) + "\n";
  fit += "fitted:\n";
  for (const auto& p : r.params) {
    fit += fmt::format("  {}: {{value: {}, sourced: {}, identified: {}, sensitivity: {:.4f}{}}}\n",
                       p.name, p.value, p.sourced, p.identified ? "true" : "false", p.sensitivity,
                       p.traded_with.empty() ? "" : ", traded_with: " + p.traded_with);
  }
  fit += fmt::format(
      "objective: \"MAPE(TTFT mean) + MAPE(E2E mean) + MAPE(decode ms/token), {} seed{}\"\n",
      r.seeds, r.seeds == 1 ? "" : "s");
  fit += fmt::format("in_sample_mape: {}\nin_sample_rows: {}\n", mape(r.in_sample), r.rows);
  if (r.runs > 0) {
    fit += fmt::format("leave_one_run_out_mape: {}\nruns: {}\n", mape(r.leave_one_run_out), r.runs);
  }
  fit += fmt::format("evaluations: {}\n", r.evaluations);
  fit += "warnings:\n";
  if (r.warnings.empty()) fit.back() = ' ', fit += "[]\n";
  for (const auto& w : r.warnings) fit += "  - " + q(w) + "\n";
  return CalibrationProfileYaml(r.cost, r.async_scheduling, fit);
}

std::string CalibrationResultText(const CalibrationResult& r) {
  std::string out = "fitted on:\n";
  for (const auto& d : r.data) out += "  " + escape::Terminal(d) + "\n";
  out += "parameters:\n";
  for (const auto& p : r.params) {
    const CostParamField* field = FindCostParamField(p.name);
    const char* zero_means = field ? field->zero_means : nullptr;
    out += fmt::format("  {:<28} {:<12.6g} (sourced {}){}\n", p.name, p.value,
                       zero_means && p.sourced == 0 ? fmt::format("0: {}", zero_means)
                                                    : fmt::format("{:.6g}", p.sourced),
                       p.identified ? "" : "  NOT IDENTIFIED: kept");
  }
  auto line = [&](const char* label, const StageMetrics& m, int n, const char* unit) {
    out +=
        fmt::format("{} over {} {}: TTFT mean {}, TTFT p90 {}, E2E mean {}, decode ms/token {}\n",
                    label, n, unit, Pct(m.ttft_mean_ms), Pct(m.ttft_p90_ms), Pct(m.e2e_mean_ms),
                    Pct(m.decode_ms_per_token));
  };
  line("in-sample MAPE", r.in_sample, r.rows, "rows");
  if (r.runs > 0) line("leave-one-run-out MAPE", r.leave_one_run_out, r.runs, "runs");
  out += fmt::format("{} evaluations ({} seed{} each)\n", r.evaluations, r.seeds,
                     r.seeds == 1 ? "" : "s");
  for (const auto& w : r.warnings) out += "warning: " + escape::Terminal(w) + "\n";
  return out;
}

}  // namespace ttft
