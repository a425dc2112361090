// `ttft gate` end to end (docs/gate.md): the real binary on a simulated 5% canary of
// the seed's template regression (scenarios/canary-seed.yaml), its exit codes (0 Pass,
// 1 Fail, 3 Inconclusive, 2 usage), its formats (JSON and JUnit well-formed), a
// Prometheus that is down (Inconclusive, exit 3), config errors, repeated looks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "report/markdown_it_testing.h"
#include "run_ttft.h"
#include "telemetry/prometheus_process_testing.h"
#include "ttft/gate.h"

namespace ttft {
namespace {

using ::testing::HasSubstr;
using ::ttft::testing::RunResult;
using ::ttft::testing::RunTtft;
namespace fs = std::filesystem;

class GateCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("ttft_gate_it_" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    RunResult r = RunTtft("simulate " TTFT_SOURCE_DIR "/scenarios/canary-seed.yaml --quiet --out " +
                          dir_->string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete dir_;
  }
  static std::string Dir() { return dir_->string(); }
  static std::string Spans() { return (*dir_ / "spans.jsonl").string(); }
  static std::string Canary() {
    return Dir() + " --baseline-selector deploy=baseline --canary-selector deploy=canary";
  }
  static std::string Aa() {
    return Spans() + " --baseline-selector replica=rag-0 --canary-selector replica=rag-1";
  }
  static fs::path* dir_;
};
fs::path* GateCli::dir_ = nullptr;

// A minimal XML well-formedness check: one root, tags balanced and properly nested,
// attributes quoted, '&' only in entities, '<' never in text.
bool WellFormedXml(const std::string& x, std::string* why) {
  std::vector<std::string> stack;
  size_t i = 0;
  int roots = 0;
  if (x.rfind("<?xml", 0) == 0) i = x.find("?>") + 2;
  while (i < x.size()) {
    if (x[i] == '<') {
      size_t end = x.find('>', i);
      if (end == std::string::npos) return *why = "unterminated tag", false;
      std::string tag = x.substr(i + 1, end - i - 1);
      if (tag.find('<') != std::string::npos) return *why = "'<' inside a tag", false;
      if (tag[0] == '/') {
        if (stack.empty() || stack.back() != tag.substr(1))
          return *why = "mismatched " + tag, false;
        stack.pop_back();
      } else {
        const bool self = tag.back() == '/';
        std::string name = tag.substr(0, tag.find_first_of(" /"));
        // Attribute values quoted.
        static const std::regex attrs(R"(^[A-Za-z_][\w.-]*(\s+[A-Za-z_][\w.-]*="[^"<]*")*\s*/?$)");
        if (!std::regex_match(tag, attrs)) return *why = "bad attributes in <" + tag + ">", false;
        if (stack.empty()) ++roots;
        if (!self) stack.push_back(name);
      }
      i = end + 1;
    } else {
      if (x[i] == '&') {
        static const std::regex ent(R"(^&(amp|lt|gt|quot|apos);)");
        if (!std::regex_search(x.substr(i, 8), ent)) return *why = "bare &", false;
      }
      ++i;
    }
  }
  if (!stack.empty()) return *why = "unclosed " + stack.back(), false;
  if (roots != 1) return *why = "not one root element", false;
  return true;
}

TEST_F(GateCli, SeedCanaryFailsWithExitOne) {
  RunResult r = RunTtft("gate " + Canary());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("verdict: Fail (exit 1)"));
  EXPECT_THAT(r.out, HasSubstr("prefix_cache_hit_rate    Low"));
  // The same as two input sets selected separately.
  RunResult two = RunTtft("gate --baseline " + Spans() + " --canary " + Spans() +
                          " --baseline-selector deploy=baseline --canary-selector deploy=canary");
  EXPECT_EQ(two.exit_code, 1) << two.err;
}

TEST_F(GateCli, AaPasses) {
  RunResult r = RunTtft("gate " + Aa());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("verdict: Pass"));
  // Metrics only: the histogram test on the replicas' series.
  std::string proms;
  for (const auto& e : fs::directory_iterator(fs::path(Dir()) / "metrics"))
    proms += " " + e.path().string();
  RunResult m = RunTtft("gate" + proms +
                        " --baseline-selector replica=rag-0 --canary-selector replica=rag-1");
  EXPECT_EQ(m.exit_code, 0) << m.out << m.err;
  EXPECT_THAT(m.out, HasSubstr("two-proportion"));
}

TEST_F(GateCli, JsonAndJunitAreWellFormed) {
  RunResult j = RunTtft("gate " + Canary() + " --format json");
  EXPECT_EQ(j.exit_code, 1);
  auto doc = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << j.out;
  EXPECT_EQ(doc["verdict"], "Fail");
  EXPECT_EQ(doc["exit_code"], 1);
  ASSERT_EQ(doc["criteria"].size(), 4u);
  for (const auto& c : doc["criteria"]) {
    EXPECT_TRUE(c.contains("rule") && c.contains("label") && c.contains("effect_lower"));
  }
  for (const std::string& args : {Canary(), Aa()}) {
    RunResult x = RunTtft("gate " + args + " --format junit");
    std::string why;
    EXPECT_TRUE(WellFormedXml(x.out, &why)) << why << "\n" << x.out;
    EXPECT_THAT(x.out, HasSubstr("<testsuites"));
  }
  RunResult gh = RunTtft("gate " + Canary() + " --format github");
  EXPECT_THAT(gh.out, HasSubstr("::error title=ttft gate: Fail::"));
  RunResult md = RunTtft("gate " + Canary() + " --format markdown");
  EXPECT_THAT(md.out, HasSubstr("| criterion | label |"));
  EXPECT_EQ(md.exit_code, 1);
}

// Every way into Markdown markup, in a selector value (no ',' or '=': the selector's
// separators) and in a model label.
const std::string kHostile =
    "rag-9\n# Owned\n<script>alert(1)</script>[x](javascript:alert(1))![i](javascript:alert(2))"
    "<javascript:alert(3)>`pwn`|cell|";

// The gate's Markdown rendered as GitHub-flavoured Markdown (markdown-it): the data's
// strings stay text. The only raw HTML is the gate's own <details> around the rules.
void ExpectNoInjectedElement(const std::string& md) {
  SCOPED_TRACE(md);
  std::string why;
  std::optional<nlohmann::json> doc =
      ::ttft::testing::InspectMarkdown(md, &why, "js-markdown-integration");
  if (!doc) {
    ASSERT_NE(why.rfind("check.mjs", 0), 0u) << why;
    GTEST_SKIP() << "markdown-it not available: " << why;
  }
  for (const auto& h : (*doc)["html"]) {
    const std::string tag = h.get<std::string>();
    EXPECT_TRUE(tag == "<details><summary>Rules</summary>\n" || tag == "</details>\n") << tag;
  }
  EXPECT_TRUE((*doc)["links"].empty()) << (*doc)["links"].dump();
  EXPECT_TRUE((*doc)["images"].empty()) << (*doc)["images"].dump();
  ASSERT_EQ((*doc)["headings"].size(), 1u) << (*doc)["headings"].dump();
  EXPECT_EQ((*doc)["headings"][0]["tag"], "h3");
  for (const auto& c : (*doc)["code"]) {
    EXPECT_EQ(c.get<std::string>().find("pwn"), std::string::npos) << "a code span from data";
  }
  ASSERT_EQ((*doc)["tables"].size(), 1u);
  for (const auto& row : (*doc)["tables"][0]) EXPECT_EQ(row, 7) << (*doc)["tables"].dump();
  const std::string text = (*doc)["text"];
  EXPECT_NE(text.find("<script>alert(1)</script>[x](javascript:alert(1))"), std::string::npos)
      << text;
  const std::string html = (*doc)["rendered"];
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<h1"), std::string::npos);
}

TEST_F(GateCli, MarkdownKeepsAHostileSelectorAsText) {
  std::string proms;
  for (const auto& e : fs::directory_iterator(fs::path(Dir()) / "metrics"))
    proms += " " + e.path().string();
  // The canary selector matches no series: the Inconclusive reason quotes it.
  RunResult r = RunTtft("gate" + proms + " --baseline-selector replica=rag-0 --canary-selector '" +
                        "replica=" + kHostile + "' --format markdown");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("no TTFT histogram series matching replica=rag-9"));
  ExpectNoInjectedElement(r.out);
}

// A Prometheus that is down: Inconclusive (exit 3), and in a machine format the reason
// also on standard error, where the person at the terminal sees it.
TEST(GateUnavailable, JsonSaysWhyOnStandardErrorToo) {
  RunResult r = RunTtft(
      "gate --prometheus http://127.0.0.1:1 --baseline-selector replica=a "
      "--canary-selector replica=b --from 0 --to 600 --timeout 2 --format json",
      60);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, ::testing::HasSubstr(
                         "ttft gate: inconclusive: Prometheus at http://127.0.0.1:1 unavailable"));
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["verdict"], "Inconclusive");
}

TEST(GateMarkdown, KeepsHostileModelLabelsAsText) {
  GateArm baseline, canary;
  baseline.model = "llama-3.3-70b";
  canary.model = kHostile;
  GateResult result = JudgeGate(GateConfig{}, baseline, canary);
  ASSERT_EQ(result.verdict, GateVerdict::kInconclusive);
  ASSERT_NE(result.reason.find("<script>"), std::string::npos) << result.reason;
  // A criterion whose rule quotes the data too.
  CriterionResult c;
  c.rule = kHostile;
  result.criteria.push_back(c);
  Result<std::string> md = RenderGate(result, "markdown");
  ASSERT_TRUE(md.ok()) << md.status().ToString();
  ExpectNoInjectedElement(*md);
}

// One statistics model (WindowStats): for the same window and data, `ttft stats`,
// `ttft diagnose` and `ttft gate` print the same p99 TTFT, from spans and from
// metrics alone (the scrapes at 90..300 s: the gate's and diagnose's window
// [90, 300] covers exactly those, which are the files given to stats).
TEST_F(GateCli, PrintsTheP99OfStatsAndDiagnose) {
  auto json_of = [](const RunResult& r, const std::string& what) {
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << what << ": " << r.out << r.err;
    return j;
  };
  auto gate_p99 = [&](const std::string& inputs) {
    RunResult g = RunTtft("gate --baseline " + inputs + " --canary " + inputs +
                          " --from 90 --to 300 --format json");
    nlohmann::json j = json_of(g, "gate");
    for (const auto& c : j["criteria"]) {
      if (c["metric"] == "ttft_p99") {
        EXPECT_EQ(c["baseline"], c["canary"]);
        return c["baseline"].get<double>();
      }
    }
    ADD_FAILURE() << "no ttft_p99 criterion: " << g.out;
    return 0.0;
  };
  // Spans: the window [90, 300) by arrival.
  nlohmann::json stats =
      json_of(RunTtft("stats " + Spans() + " --from 90 --to 300 --format json"), "stats");
  nlohmann::json diag = json_of(RunTtft("diagnose " + Spans() +
                                        " --baseline-window 90:300 --incident-window 300:500 "
                                        "--format json"),
                                "diagnose");
  const double stats_p99 = stats["groups"][0]["ttft_s"]["p99"].get<double>();
  EXPECT_GT(stats_p99, 0);
  EXPECT_EQ(diag["baseline"]["ttft_s"]["p99"].get<double>(), stats_p99);
  EXPECT_EQ(gate_p99(Spans()), stats_p99);

  // Metrics: histogram quantiles over the scrapes covering [90, 300].
  std::string all, window;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(*dir_ / "metrics")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    all += " " + f;
    const double t = std::stod(fs::path(f).stem().string().substr(1));
    if (t >= 90 && t <= 300) window += " " + f;
  }
  ASSERT_FALSE(window.empty());
  nlohmann::json mstats = json_of(RunTtft("stats" + window + " --format json"), "stats metrics");
  nlohmann::json mdiag = json_of(RunTtft("diagnose" + all +
                                         " --baseline-window 90:300 --incident-window 300:500 "
                                         "--format json"),
                                 "diagnose metrics");
  const double mstats_p99 = mstats["groups"][0]["ttft_s"]["p99"].get<double>();
  EXPECT_GT(mstats_p99, 0);
  EXPECT_EQ(mdiag["baseline"]["ttft_s"]["p99"].get<double>(), mstats_p99);
  EXPECT_EQ(gate_p99(all), mstats_p99);
}

TEST_F(GateCli, DownPrometheusIsInconclusive) {
  const int down = ::ttft::testing::FreeLoopbackPort();
  ASSERT_GT(down, 0);
  RunResult r = RunTtft("gate --prometheus http://127.0.0.1:" + std::to_string(down) +
                        " --from 0 --to 600 --timeout 1 --baseline-selector deploy=v1 "
                        "--canary-selector deploy=v2 --format json");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  EXPECT_EQ(doc["verdict"], "Inconclusive");
  EXPECT_THAT(doc["reason"].get<std::string>(), HasSubstr("127.0.0.1:" + std::to_string(down)));
  EXPECT_LT(r.seconds, 30);
}

// A loopback HTTP server that answers every request with `reply` (or, when `reply`
// is empty, reads the request and never answers: a hung server). Stops in its
// destructor; every wait is bounded by poll timeouts.
class FakeServer {
 public:
  explicit FakeServer(std::string reply) : reply_(std::move(reply)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    timeval tv{0, 100000};  // accept() wakes every 100 ms to check stop_
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    thread_ = std::thread([this] {
      std::vector<int> held;
      while (!stop_) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) continue;
        char buf[4096];
        timeval rtv{1, 0};
        ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &rtv, sizeof rtv);
        (void)::recv(c, buf, sizeof buf, 0);
        if (reply_.empty()) {
          held.push_back(c);  // hung: keep it open, say nothing
          continue;
        }
        const std::string r =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            "Content-Length: " +
            std::to_string(reply_.size()) + "\r\nConnection: close\r\n\r\n" + reply_;
        (void)::send(c, r.data(), r.size(), MSG_NOSIGNAL);
        ::close(c);
      }
      for (int c : held) ::close(c);
    });
  }
  ~FakeServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }

 private:
  std::string reply_;
  int fd_ = -1, port_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST_F(GateCli, GarbageOrHungPrometheusIsInconclusive) {
  const std::string args =
      " --from 0 --to 600 --timeout 1 --baseline-selector deploy=v1 "
      "--canary-selector deploy=v2";
  {
    FakeServer garbage("this is not JSON {");
    ASSERT_GT(garbage.port(), 0);
    RunResult r =
        RunTtft("gate --prometheus http://127.0.0.1:" + std::to_string(garbage.port()) + args, 60);
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("verdict: Inconclusive"));
  }
  {
    FakeServer hung("");
    ASSERT_GT(hung.port(), 0);
    RunResult r =
        RunTtft("gate --prometheus http://127.0.0.1:" + std::to_string(hung.port()) + args, 60);
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("verdict: Inconclusive"));
    EXPECT_LT(r.seconds, 20);  // 3 attempts of 1 s plus back-off
  }
}

TEST_F(GateCli, MissingSeriesIsInconclusive) {
  std::string proms;
  for (const auto& e : fs::directory_iterator(fs::path(Dir()) / "metrics"))
    proms += " " + e.path().string();
  RunResult r = RunTtft("gate" + proms +
                        " --baseline-selector replica=rag-0 --canary-selector replica=rag-9");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("no TTFT histogram series matching replica=rag-9"));
}

TEST_F(GateCli, TooLittleDataIsInconclusive) {
  RunResult r = RunTtft("gate " + Canary() + " --to 70");
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("too little data"));
}

TEST_F(GateCli, UsageErrorsExitTwo) {
  RunResult none = RunTtft("gate " + Spans());
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("--baseline-selector"));
  RunResult label =
      RunTtft("gate " + Spans() + " --baseline-selector pod=a --canary-selector pod=b");
  EXPECT_EQ(label.exit_code, 2);
  EXPECT_THAT(label.err, HasSubstr("selector label 'pod'"));
  RunResult fmt = RunTtft("gate " + Canary() + " --format html");
  EXPECT_EQ(fmt.exit_code, 2);
  const fs::path cfg = fs::path(Dir()) / "gate.yaml";
  std::ofstream(cfg) << "criteria:\n  - {metric: ttft_p99, threshold: 0.9}\n";
  RunResult bad = RunTtft("gate " + Canary() + " --config " + cfg.string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr(cfg.string() + ":2: criteria[0].threshold"));
  std::ofstream(cfg) << "criteria:\n  - {metric: ttft_p99}\nlooks: 3\n";
  RunResult unknown = RunTtft("gate " + Canary() + " --config " + cfg.string());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr(cfg.string() + ":3: (top level): unknown key 'looks'"));
  // A canary serving another model.
  const fs::path other = fs::path(Dir()) / "other-model.jsonl";
  {
    std::ifstream in(Spans());
    std::ofstream out(other);
    std::string line;
    while (std::getline(in, line)) {
      out << std::regex_replace(line, std::regex("llama-3.3-70b"), "llama-3.1-8b") << "\n";
    }
  }
  RunResult models =
      RunTtft("gate --baseline " + Spans() + " --canary " + other.string() +
              " --baseline-selector deploy=baseline --canary-selector deploy=canary");
  EXPECT_EQ(models.exit_code, 2) << models.out;
  EXPECT_THAT(models.err, HasSubstr("same model"));
}

TEST_F(GateCli, RepeatedLooksWithAStateFile) {
  const fs::path state = fs::path(Dir()) / "state.json";
  fs::remove(state);
  // The regression: the first look already fails (the sequential test's streams).
  RunResult fail = RunTtft("gate " + Canary() + " --state " + state.string() + " --to 300");
  EXPECT_EQ(fail.exit_code, 1) << fail.out << fail.err;
  EXPECT_THAT(fail.out, HasSubstr("sequential test rejected"));
  fs::remove(state);
  // A/A: not final -> Inconclusive (keep looking); final -> Pass. Looks grow the window.
  RunResult look1 = RunTtft("gate " + Aa() + " --state " + state.string() + " --to 500");
  EXPECT_EQ(look1.exit_code, 3) << look1.out << look1.err;
  RunResult look2 = RunTtft("gate " + Aa() + " --state " + state.string() + " --final");
  EXPECT_EQ(look2.exit_code, 0) << look2.out << look2.err;
  std::ifstream in(state);
  auto j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["looks"], 2);
  // A look whose data ends before the state's last look: another rollout's state.
  RunResult behind = RunTtft("gate " + Aa() + " --state " + state.string() + " --to 300");
  EXPECT_EQ(behind.exit_code, 2) << behind.out << behind.err;
  EXPECT_THAT(behind.err, HasSubstr("a state file of another rollout?"));
  std::ofstream(state) << "{\"looks\": \"many\"}";
  RunResult garbage = RunTtft("gate " + Aa() + " --state " + state.string());
  EXPECT_EQ(garbage.exit_code, 2);
  EXPECT_THAT(garbage.err, HasSubstr("not a gate state file"));
}

TEST_F(GateCli, EveryForIsBoundedInTime) {
  RunResult r = RunTtft("gate " + Aa() + " --every 1s --for 2s", 60);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_LT(r.seconds, 10);
  EXPECT_THAT(r.err, HasSubstr("look 2"));
  RunResult fail = RunTtft("gate " + Canary() + " --every 1s --for 30s", 60);
  EXPECT_EQ(fail.exit_code, 1);
  EXPECT_LT(fail.seconds, 10);  // fails at the first look
}

}  // namespace
}  // namespace ttft
