// Tests of end-to-end runs (ttft/pipeline.h).
#include "ttft/pipeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "ttft/dataset.h"
#include "ttft/scenario.h"

namespace ttft {
namespace {

namespace fs = std::filesystem;

Scenario Incident(const std::string& name) {
  auto sc = BuiltinScenario(name);
  EXPECT_TRUE(sc.ok()) << sc.status().ToString();
  return *sc;
}

TEST(ScenarioWindows, OnePolicyAroundTheChange) {
  Scenario sc = Incident("incidents/load-surge");
  sc.analysis.change_at_s = 600;
  sc.analysis.window_s = 200;
  sc.analysis.warmup_s = 450;
  sc.duration_s = 700;
  const AnalysisWindows w = ScenarioWindows(sc);
  EXPECT_EQ(w.change_at_s, 600);
  EXPECT_EQ(w.baseline.from_s, 450);  // clipped to the warm-up
  EXPECT_EQ(w.baseline.to_s, 600);
  EXPECT_EQ(w.incident.from_s, 600);
  EXPECT_EQ(w.incident.to_s, 700);  // clipped to the run
  sc.analysis.change_at_s = 800;    // after the run: no change
  sc.events.clear();
  const AnalysisWindows none = ScenarioWindows(sc);
  EXPECT_TRUE(std::isnan(none.change_at_s));
  EXPECT_FALSE(none.baseline.valid());
  EXPECT_EQ(none.incident.from_s, 450);
  EXPECT_EQ(none.incident.to_s, 700);
}

// What `ttft simulate` writes and `ttft diagnose FOLDER` reads gives the report that
// `ttft drill` builds in memory: the folder convention lives on both sides in the library.
TEST(RunScenario, FolderReadBackDiagnosesTheSame) {
  const Scenario sc = Incident("incidents/load-surge");
  const fs::path dir =
      fs::path(testing::TempDir()) / ("ttft_pipeline_folder_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  RunOptions options;
  options.out_dir = dir.string();
  options.diagnose = true;
  auto run = RunScenario(sc, options);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_TRUE(run->diagnosis.has_value());
  EXPECT_TRUE(fs::exists(dir / "spans.jsonl"));
  EXPECT_FALSE(fs::exists(dir / "spans.jsonl.partial"));
  EXPECT_TRUE(fs::exists(dir / "summary.json"));
  EXPECT_EQ(run->summary["requests"], run->result.requests);

  Dataset data;
  ASSERT_TRUE(LoadDataset(std::vector<std::string>{dir.string()}, {}, data).ok());
  EXPECT_EQ(static_cast<int64_t>(data.snapshots.size()), run->result.snapshots);
  auto windows = ChooseWindows({}, data);
  ASSERT_TRUE(windows.ok()) << windows.status().ToString();
  EXPECT_EQ(windows->change_at_s, run->windows.change_at_s);
  EXPECT_EQ(windows->baseline.from_s, run->windows.baseline.from_s);
  EXPECT_EQ(windows->incident.to_s, run->windows.incident.to_s);
  auto rep = Diagnose(DiagnosisInputOf(data, *windows));
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_EQ(rep->verdict, run->diagnosis->verdict);
  EXPECT_EQ(rep->baseline.ttft_s.p99, run->diagnosis->baseline.ttft_s.p99);
  EXPECT_EQ(rep->incident.ttft_s.p99, run->diagnosis->incident.ttft_s.p99);
  ASSERT_FALSE(rep->hypotheses.empty());
  EXPECT_EQ(rep->hypotheses.front().id, run->diagnosis->hypotheses.front().id);
  EXPECT_EQ(rep->hypotheses.front().id, "load_surge");
}

TEST(RunScenario, DiagnosisNeedsAChange) {
  Scenario sc = Incident("incidents/load-surge");
  sc.analysis.change_at_s = -1;
  sc.events.clear();
  RunOptions options;
  options.diagnose = true;
  const auto run = RunScenario(sc, options);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(RunDrill(sc, "seed", {}).ok());
}

TEST(RunScenario, AnUnwritableFolderIsAnIoError) {
  const Scenario sc = Incident("incidents/load-surge");
  RunOptions options;
  options.out_dir = "/proc/ttft-cannot-write-here";
  const auto run = RunScenario(sc, options);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kIoError);
}

TEST(RunDrill, TheSeedDrillPassesItsSignature) {
  auto sc = BuiltinScenario("seed-drill");
  ASSERT_TRUE(sc.ok());
  auto drill = RunDrill(*sc, "seed", {});
  ASSERT_TRUE(drill.ok()) << drill.status().ToString();
  ASSERT_TRUE(drill->run.diagnosis.has_value());
  EXPECT_EQ(drill->run.diagnosis->hypotheses.front().id, "prefix_cache_collapse");
  for (const SignatureCheck& c : drill->signature)
    EXPECT_TRUE(c.pass) << c.what << ": " << c.observed;
  EXPECT_GT(drill->prefill_6000_uncached_s, drill->prefill_1000_after_5000_cached_s);
}

}  // namespace
}  // namespace ttft
