// libFuzzer target for the template engine (ttft/template.h): any bytes parse as a
// template or give an error naming a line and column, and a parsed template renders with
// fixed variables (a chat-shaped `messages`, `tools`, tracked sources) or gives an error,
// never crashes or hangs (output, iteration and built-bytes guards set low). Checked
// invariants: the tracked spans are sorted, disjoint and inside the output. Built by
// scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ttft/template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = ttft::Template::Parse(text, "fuzz");
  if (!t.ok()) {
    if (t.status().message().rfind("fuzz:", 0) != 0) std::abort();
    return 0;
  }
  static const ttft::Value vars = [] {
    ttft::Value v = ttft::Value::Dict();
    v.Set("messages", ttft::Value::FromJson(
                          R"([{"role":"system","content":"S"},{"role":"user","content":"Hi"},
                              {"role":"assistant","content":null,"tool_calls":[{"id":"call_123456789",
                               "function":{"name":"f","arguments":{"a":1}}}]}])")
                          ->Tagged(0));
    v.Set("tools", *ttft::Value::FromJson(R"([{"type":"function","function":{"name":"f",
        "parameters":{"type":"object","properties":{"a":{"type":"integer"}}}}}])"));
    v.Set("add_generation_prompt", ttft::Value(true));
    v.Set("bos_token", ttft::Value("<s>"));
    v.Set("user", ttft::Value("ann").Tagged(1));
    return v;
  }();
  ttft::RenderOptions opt;
  opt.strftime_now = [](std::string_view) { return std::string("03 Dec 2026"); };
  opt.strftime_source = 2;
  opt.max_output_bytes = 1 << 20;
  opt.max_iterations = 1 << 14;
  opt.max_built_bytes = 1 << 24;  // a runaway input fails in milliseconds
  auto r = t->Render(vars, opt);
  if (!r.ok()) return 0;
  uint32_t last = 0;
  if (r->span_pos.size() != r->spans.size()) std::abort();
  for (const ttft::TaintSpan& s : r->spans) {
    if (s.begin < last || s.end <= s.begin || s.end > r->text.size() || s.source < 0) std::abort();
    last = s.end;
  }
  return 0;
}
