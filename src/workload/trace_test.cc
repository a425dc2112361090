// Tests for trace replay (Mooncake JSONL, Azure CSV) through RequestSource.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ttft/workload.h"

namespace ttft {
namespace {

namespace fs = std::filesystem;

class TraceTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() / ("ttft_trace_test_" + std::to_string(::getpid()) + "_" +
                                     testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    auto p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

  static WorkloadSpec Spec(TraceSpec::Format f, const std::string& path, double duration = 0) {
    WorkloadSpec w;
    TraceSpec t;
    t.format = f;
    t.path = path;
    t.tenant = "mc";
    w.traces.push_back(t);
    w.duration_s = duration;
    return w;
  }

  // All requests, or the first error.
  static Result<std::vector<Request>> Drain(const WorkloadSpec& w) {
    TTFT_ASSIGN_OR_RETURN(auto src, RequestSource::Create(w));
    std::vector<Request> out;
    Request r;
    for (;;) {
      TTFT_ASSIGN_OR_RETURN(bool more, src->Next(r));
      if (!more) break;
      out.push_back(r);
    }
    return out;
  }

  fs::path dir_;
};

constexpr const char* kMooncake =
    R"({"timestamp": 1000, "input_length": 1100, "output_length": 50, "hash_ids": [0, 1, 2]}
{"timestamp": 1500, "input_length": 1090, "output_length": 0, "hash_ids": [0, 1, 3]}

{"timestamp": 3000, "input_length": 600, "output_length": 7, "hash_ids": [9, 10]}
)";

TEST_F(TraceTest, MooncakePiecesAndTiming) {
  auto rs = Drain(Spec(TraceSpec::Format::kMooncake, Write("a.jsonl", kMooncake)));
  ASSERT_TRUE(rs.ok()) << rs.status().ToString();
  ASSERT_EQ(rs->size(), 3u);
  const auto& r = *rs;
  EXPECT_EQ(r[0].arrival_s, 0);  // offset so the first request is at t = 0
  EXPECT_DOUBLE_EQ(r[1].arrival_s, 0.5);
  EXPECT_DOUBLE_EQ(r[2].arrival_s, 2.0);
  EXPECT_EQ(r[0].prompt_tokens, 1100);
  EXPECT_EQ(r[0].output_tokens, 50);
  EXPECT_EQ(r[1].output_tokens, 1);  // 0 generated tokens: at least one is produced
  EXPECT_EQ(r[0].block_hashes.size(), 1100u / 16);
  // Ids 0 and 1 (1024 tokens = 64 blocks of 16) are shared; id 2 vs 3 are not.
  for (int i = 0; i < 64; ++i) EXPECT_EQ(r[0].block_hashes[i], r[1].block_hashes[i]);
  // r[1] has 1,090 tokens = 68 full blocks, so block 64 (hash id 2 vs 3) exists in both.
  ASSERT_EQ(r[1].block_hashes.size(), 1090u / 16);
  EXPECT_NE(r[0].block_hashes[64], r[1].block_hashes[64]);
  EXPECT_NE(r[2].block_hashes[0], r[0].block_hashes[0]);
  for (const auto& q : r) EXPECT_EQ(q.tenant, 0);
  auto src = RequestSource::Create(Spec(TraceSpec::Format::kMooncake, (dir_ / "a.jsonl").string()));
  ASSERT_TRUE(src.ok());
  EXPECT_EQ((*src)->tenant_names(), std::vector<std::string>{"mc"});
  EXPECT_EQ((*src)->template_labels(), std::vector<std::string>{"mooncake@a"});
}

TEST_F(TraceTest, TimeScaleDurationAndMaxRequests) {
  auto w = Spec(TraceSpec::Format::kMooncake, Write("a.jsonl", kMooncake));
  w.traces[0].time_scale = 0.5;
  auto rs = Drain(w);
  ASSERT_TRUE(rs.ok());
  EXPECT_DOUBLE_EQ((*rs)[2].arrival_s, 1.0);
  w.duration_s = 1.0;  // [0, 1): the third request at 1.0 is out
  rs = Drain(w);
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ(rs->size(), 2u);
  w.duration_s = 0;
  w.traces[0].max_requests = 1;
  rs = Drain(w);
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ(rs->size(), 1u);
}

TEST_F(TraceTest, MooncakeErrorsNameFileLineAndField) {
  struct Case {
    std::string line2;
    std::string want;  // after "<path>:2: "
  };
  const std::vector<Case> cases = {
      {R"({"timestamp": 5, "input_length": -3, "output_length": 1, "hash_ids": []})",
       "input_length: expected a positive integer, got -3"},
      {R"({"timestamp": 5, "input_length": "12", "output_length": 1, "hash_ids": [1]})",
       "input_length: expected a positive integer, got \"12\""},
      {R"({"timestamp": 5, "output_length": 1, "hash_ids": [1]})", "input_length: missing"},
      {R"({"timestamp": 5, "input_length": 600, "output_length": 1, "hash_ids": [1]})",
       "hash_ids: expected ceil(input_length / 512) = 2 ids, got 1"},
      {R"({"timestamp": 5, "input_length": 600, "output_length": 1, "hash_ids": [1, -2]})",
       "hash_ids[1]: expected an integer >= 0, got -2"},
      {R"({"timestamp": 0.5, "input_length": 6, "output_length": 1, "hash_ids": [1]})",
       "timestamp: decreases: 0.5 ms after a later record"},
      {R"({"timestamp": 5, "input_length": 6)",
       "expected a JSON object, got \"{\"timestamp\": 5, \"input_length\": 6\""},
  };
  const std::string first =
      R"({"timestamp": 1, "input_length": 6, "output_length": 1, "hash_ids": [1]})";
  for (const auto& c : cases) {
    auto path = Write("bad.jsonl", first + "\n" + c.line2 + "\n");
    auto rs = Drain(Spec(TraceSpec::Format::kMooncake, path));
    ASSERT_FALSE(rs.ok()) << c.line2;
    EXPECT_EQ(rs.status().message(), path + ":2: " + c.want);
    EXPECT_EQ(rs.status().code(), StatusCode::kDataError);
  }
}

TEST_F(TraceTest, MissingFileIsNotFound) {
  auto path = (dir_ / "nope.jsonl").string();
  auto rs = Drain(Spec(TraceSpec::Format::kMooncake, path));
  ASSERT_FALSE(rs.ok());
  EXPECT_EQ(rs.status().code(), StatusCode::kNotFound);
  EXPECT_NE(rs.status().message().find(path), std::string::npos);
}

TEST_F(TraceTest, AzureCrlfNoFinalNewline) {
  auto path = Write("az.csv",
                    "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
                    "2023-11-16 18:15:46.6805900,374,44\r\n"
                    "2023-11-16 18:15:50.9951690,396,109\r\n"
                    "2023-11-17 00:00:00.5,20,1");
  auto w = Spec(TraceSpec::Format::kAzure, path);
  auto rs = Drain(w);
  ASSERT_TRUE(rs.ok()) << rs.status().ToString();
  ASSERT_EQ(rs->size(), 3u);
  EXPECT_EQ((*rs)[0].arrival_s, 0);
  EXPECT_NEAR((*rs)[1].arrival_s, 4.314579, 1e-9);
  EXPECT_NEAR((*rs)[2].arrival_s, 5 * 3600 + 44 * 60 + 13.8194100, 1e-6);
  EXPECT_EQ((*rs)[0].prompt_tokens, 374);
  EXPECT_EQ((*rs)[1].output_tokens, 109);
  EXPECT_EQ((*rs)[0].block_hashes.size(), 374u / 16);
  // No prefix information: requests share nothing.
  EXPECT_NE((*rs)[0].block_hashes[0], (*rs)[1].block_hashes[0]);
}

TEST_F(TraceTest, AzureErrors) {
  const std::string hdr = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  struct Case {
    std::string text;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"time,in,out\n",
       ":1: header: expected \"TIMESTAMP,ContextTokens,GeneratedTokens\", got "
       "\"time,in,out\""},
      {hdr + "2023-11-16 18:15:46.68,0,4\n",
       ":2: ContextTokens: expected a positive integer, "
       "got \"0\""},
      {hdr + "2023-11-16 18:15:46.68,5,x\n",
       ":2: GeneratedTokens: expected an integer >= 0, "
       "got \"x\""},
      {hdr + "2023-13-16 18:15:46.68,5,4\n",
       ":2: TIMESTAMP: expected \"YYYY-MM-DD "
       "HH:MM:SS.fffffff\", got \"2023-13-16 18:15:46.68\""},
      {hdr + "2023-11-16 18:15:46.68,5\n",
       ":2: expected 3 fields "
       "TIMESTAMP,ContextTokens,GeneratedTokens, got "
       "\"2023-11-16 18:15:46.68,5\""},
  };
  for (const auto& c : cases) {
    auto path = Write("bad.csv", c.text);
    auto rs = Drain(Spec(TraceSpec::Format::kAzure, path));
    ASSERT_FALSE(rs.ok()) << c.text;
    EXPECT_EQ(rs.status().message(), path + c.want);
  }
}

TEST_F(TraceTest, MergesWithTenantsInArrivalOrder) {
  auto w = Spec(TraceSpec::Format::kMooncake, Write("a.jsonl", kMooncake), 3);
  TemplateSpec t;
  t.name = "x";
  SegmentSpec s;
  s.name = "q";
  s.kind = SegmentKind::kPerRequest;
  s.tokens = Distribution::Fixed(10);
  t.versions.push_back({"v1", {s}});
  w.templates.push_back(t);
  TenantSpec ten;
  ten.name = "acme";
  ten.template_name = "x";
  ten.template_version = "v1";
  ten.arrivals.rate_rps = 5;
  ten.output_tokens = Distribution::Fixed(3);
  w.tenants.push_back(ten);
  auto rs = Drain(w);
  ASSERT_TRUE(rs.ok()) << rs.status().ToString();
  int traced = 0;
  for (size_t i = 0; i < rs->size(); ++i) {
    EXPECT_EQ((*rs)[i].seq, static_cast<int64_t>(i));
    if (i > 0) {
      EXPECT_GE((*rs)[i].arrival_s, (*rs)[i - 1].arrival_s);
    }
    traced += (*rs)[i].tenant == 1;
  }
  EXPECT_EQ(traced, 3);
  auto src = RequestSource::Create(w);
  ASSERT_TRUE(src.ok());
  EXPECT_EQ((*src)->tenant_names(), (std::vector<std::string>{"acme", "mc"}));
}

// The real traces in ../shared/data/traces, when present.
TEST_F(TraceTest, SharedDataTraces) {
  const fs::path dir = fs::path(TTFT_SHARED_DATA_DIR) / "traces";
  int read = 0;
  std::string missing;
  struct Case {
    TraceSpec::Format format;
    const char* file;
    size_t rows;
  };
  for (const Case& c :
       {Case{TraceSpec::Format::kMooncake, "mooncake_fast25_conversation_trace.jsonl", 12031},
        Case{TraceSpec::Format::kMooncake, "mooncake_fast25_synthetic_trace.jsonl", 3993},
        Case{TraceSpec::Format::kAzure, "azure_llm_2023_code.csv", 8819},
        Case{TraceSpec::Format::kAzure, "azure_llm_2023_conv.csv", 19366}}) {
    if (!fs::exists(dir / c.file)) {  // each trace that is present is read
      missing += std::string(missing.empty() ? "" : ", ") + c.file;
      continue;
    }
    ++read;
    auto rs = Drain(Spec(c.format, (dir / c.file).string()));
    ASSERT_TRUE(rs.ok()) << rs.status().ToString();
    EXPECT_EQ(rs->size(), c.rows) << c.file;
    EXPECT_EQ(rs->front().arrival_s, 0);
    EXPECT_GT(rs->back().arrival_s, 600) << c.file;   // each spans > 10 minutes
    EXPECT_LT(rs->back().arrival_s, 3700) << c.file;  // and about an hour at most
    if (std::string(c.file).find("conversation") != std::string::npos) {
      // The conversation trace's first requests share block id 0: a 512-token prefix.
      const auto& r = *rs;
      EXPECT_EQ(r[0].block_hashes[31], r[1].block_hashes[31]);
    }
  }
  if (!missing.empty()) {
    GTEST_SKIP() << read << " of 4 shared traces read; not found in " << dir.string() << ": "
                 << missing;
  }
}

}  // namespace
}  // namespace ttft
