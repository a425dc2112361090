// Differential test: the real chat templates of ../shared/data/chat-templates/, rendered
// with several message lists, must give byte-identical output to Debian's python3-jinja2
// set up as transformers sets it up (ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks, loopcontrols, json.dumps tojson, raise_exception, strftime_now), and
// must fail where jinja2 fails. Skipped with a message where python3 or jinja2 is absent.
#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "ttft/template.h"

namespace ttft {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPython = "/usr/bin/python3";

// Renders every case with jinja2; returns the JSON list of {"ok", "text"|"error"}.
constexpr const char* kScript = R"PY(
import json, sys, time
import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.exceptions import TemplateError

def raise_exception(message):
    raise TemplateError(message)

FIXED = time.struct_time((2026, 12, 3, 13, 45, 7, 3, 337, 0))
def strftime_now(fmt):
    return time.strftime(fmt, FIXED)

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                    extensions=[jinja2.ext.loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = strftime_now
cases = json.load(open(sys.argv[1]))
out = []
for c in cases:
    try:
        t = env.from_string(open(c["template"], encoding="utf-8", newline="").read())
        out.append({"ok": True, "text": t.render(**c["vars"])})
    except Exception as e:
        out.append({"ok": False, "error": type(e).__name__ + ": " + str(e)})
json.dump(out, open(sys.argv[2], "w"))
)PY";

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool HaveJinja() {
  if (!fs::exists(kPython)) return false;
  return std::system((std::string(kPython) + " -c 'import jinja2' 2>/dev/null").c_str()) == 0;
}

// The message lists (and other variables) every template is rendered with.
std::vector<nlohmann::ordered_json> VarSets() {
  using J = nlohmann::ordered_json;
  std::vector<J> sets;
  J base = {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"add_generation_prompt", true}};
  {
    J v = base;
    v["messages"] = J::parse(R"([{"role":"system","content":"You are helpful."},
                                 {"role":"user","content":"Hi"}])");
    sets.push_back(v);
  }
  {
    J v = base;
    v["add_generation_prompt"] = false;
    v["messages"] = J::parse(R"([{"role":"user","content":"  What is 2+2?\n"},
        {"role":"assistant","content":"4, of course."},
        {"role":"user","content":"And in 日本語? 🚀 <tag> & \"quotes\" 'single'"}])");
    sets.push_back(v);
  }
  {
    J v = base;
    v["messages"] = J::parse(R"([{"role":"user","content":"Weather in Paris?"}])");
    v["tools"] = J::parse(R"([{"type":"function","function":{"name":"get_weather",
        "description":"Get the weather <now> & later",
        "parameters":{"type":"object","properties":{
          "city":{"type":"string","description":"  The city  "},
          "days":{"type":"integer","description":"How many days"},
          "units":{"type":["string","null"],"description":"C or F"},
          "tags":{"type":"array","items":{"type":"string"},"description":"tags"},
          "extra":{"type":"object","additionalProperties":{"type":"number"},"description":"x"}},
          "required":["city"]}}}])");
    sets.push_back(v);
  }
  {
    J v = base;
    v["messages"] = J::parse(R"([{"role":"system","content":"Sys"},
        {"role":"user","content":"Call it"},
        {"role":"assistant","content":"","tool_calls":[{"id":"call_123456789","type":"function",
           "function":{"name":"get_weather","arguments":{"city":"Paris","days":3,"ratio":0.5}}}]},
        {"role":"tool","tool_call_id":"call_123456789","content":"{\"temp\": 21.5}"},
        {"role":"user","content":"Thanks"}])");
    v["tools"] = J::parse(R"([{"type":"function","function":{"name":"get_weather",
        "description":"Weather","parameters":{"type":"object","properties":{
          "city":{"type":"string","description":"City"}}}}}])");
    sets.push_back(v);
  }
  {
    J v = base;
    v["date_string"] = "01 Jan 2025";
    v["messages"] = J::parse(R"([{"role":"system","content":[{"type":"text","text":" Multi "}]},
        {"role":"user","content":[{"type":"text","text":"part one"},{"type":"text","text":"two"}]}])");
    sets.push_back(v);
  }
  return sets;
}

TEST(TemplateDiffTest, RealChatTemplatesMatchJinja2) {
  const fs::path dir = fs::path(TTFT_SHARED_DATA_DIR) / "chat-templates";
  if (!fs::exists(dir)) GTEST_SKIP() << "no " << dir << ": the real chat templates are absent";
  if (!HaveJinja()) {
    GTEST_SKIP() << kPython << " with jinja2 is absent (apt-get install python3-jinja2)";
  }
  std::vector<fs::path> templates;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".jinja") templates.push_back(e.path());
  }
  std::sort(templates.begin(), templates.end());
  ASSERT_GE(templates.size(), 12u);

  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  const auto sets = VarSets();
  for (const auto& t : templates) {
    for (const auto& v : sets) cases.push_back({{"template", t.string()}, {"vars", v}});
  }
  const fs::path tmp = fs::temp_directory_path() / ("ttft_tmpl_diff_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  std::ofstream(tmp / "cases.json") << cases.dump();
  std::ofstream(tmp / "render.py") << kScript;
  const std::string cmd = std::string(kPython) + " " + (tmp / "render.py").string() + " " +
                          (tmp / "cases.json").string() + " " + (tmp / "out.json").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto ref = nlohmann::json::parse(ReadFile(tmp / "out.json"));
  fs::remove_all(tmp);
  ASSERT_EQ(ref.size(), cases.size());

  RenderOptions opt;
  opt.strftime_now = [](std::string_view fmt) {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 11;
    tm.tm_mday = 3;
    tm.tm_hour = 13;
    tm.tm_min = 45;
    tm.tm_sec = 7;
    tm.tm_wday = 4;
    tm.tm_yday = 336;
    char buf[256];
    const size_t n = std::strftime(buf, sizeof buf, std::string(fmt).c_str(), &tm);
    return std::string(buf, n);
  };
  int compared = 0, both_failed = 0, mismatched = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = cases[i]["template"];
    auto t = Template::Parse(ReadFile(path), fs::path(path).filename().string());
    ASSERT_TRUE(t.ok()) << t.status().message();
    auto vars = Value::FromJson(cases[i]["vars"].dump());
    ASSERT_TRUE(vars.ok());
    auto r = t->Render(*vars, opt);
    if (!ref[i]["ok"].get<bool>()) {
      EXPECT_FALSE(r.ok()) << path << " case " << i % sets.size() << ": jinja2 failed ("
                           << ref[i]["error"] << ") but we rendered";
      if (!r.ok()) ++both_failed;
      continue;
    }
    ASSERT_TRUE(r.ok()) << path << " case " << i % sets.size() << ": " << r.status().message();
    const std::string want = ref[i]["text"];
    if (r->text != want) {
      ++mismatched;
      size_t d = 0;
      while (d < want.size() && d < r->text.size() && want[d] == r->text[d]) ++d;
      ADD_FAILURE() << path << " case " << i % sets.size() << ": differs at byte " << d
                    << "\n jinja2: " << nlohmann::json(want.substr(d > 40 ? d - 40 : 0, 120)).dump()
                    << "\n ttft:   "
                    << nlohmann::json(r->text.substr(d > 40 ? d - 40 : 0, 120)).dump();
    }
    ++compared;
  }
  std::printf(
      "template diff: %d renders byte-identical to jinja2 %s, %d failing in both, %d "
      "differing\n",
      compared - mismatched, "3.1 (Debian)", both_failed, mismatched);
  EXPECT_GT(compared, 40);
}

}  // namespace
}  // namespace ttft
