// `ttft tokenize --tokenizer tokenizer.json [--format json] [--count]`: the token ids (or
// their number) of standard input (ttft/tokenizer.h). Without --tokenizer only --count
// is allowed, and the count is the documented approximation, said so on standard error
// (text) or as "approximate": true (JSON).
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "ttft/tokenizer.h"

namespace ttft::cli {

namespace {

// Standard input is read whole, so it is bounded: 256 MiB (a prompt is at most a few
// MB; 2.5 GB of input once took 4.2 GB of memory). docs/tokenizer.md.
constexpr size_t kMaxTokenizeInputBytes = size_t{256} << 20;

Result<std::string> ReadStdin() {
  std::string text;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) {
    if (text.size() + n > kMaxTokenizeInputBytes) {
      return Status::Invalid(
          fmt::format("standard input: more than {} bytes (the limit of ttft tokenize's input)",
                      kMaxTokenizeInputBytes));
    }
    text.append(buf, n);
  }
  if (std::ferror(stdin)) return Status::IoError("standard input: read failed");
  return text;
}

}  // namespace

Runner RegisterTokenize(CLI::App& app) {
  struct Opts {
    std::string tokenizer, format = "text";
    bool count = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--tokenizer", o->tokenizer,
                 "Hugging Face tokenizer.json (byte-level BPE, e.g. Llama 3); without it only "
                 "--count, approximated");
  app.add_option("--format", o->format, "text (ids separated by spaces) or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_flag("--count", o->count, "Print the number of tokens instead of the ids");
  return [o]() -> Status {
    if (o->tokenizer.empty() && !o->count) {
      return Status::Invalid(
          "--tokenizer FILE is needed for ids (--count alone gives an approximate count)");
    }
    Tokenizer tok = Tokenizer::Approximate();
    if (!o->tokenizer.empty()) {
      TTFT_ASSIGN_OR_RETURN(tok, Tokenizer::FromFile(o->tokenizer));
    }
    TTFT_ASSIGN_OR_RETURN(std::string text, ReadStdin());
    std::vector<int32_t> ids;
    int64_t count = 0;
    if (o->count) {
      auto c = tok.Count(text);
      if (!c.ok()) return c.status().WithContext("standard input");
      count = *c;
    } else {
      auto r = tok.Encode(text);
      if (!r.ok()) return r.status().WithContext("standard input");
      ids = std::move(*r);
      count = static_cast<int64_t>(ids.size());
    }
    if (o->format == "json") {
      nlohmann::json j;
      j["count"] = count;
      j["approximate"] = tok.approximate();
      if (!o->count) j["ids"] = ids;
      std::cout << j.dump() << "\n";
    } else if (o->count) {
      std::cout << count << "\n";
      if (tok.approximate()) {
        std::fprintf(stderr,
                     "ttft tokenize: approximate count (no --tokenizer): from Llama 3 "
                     "pre-tokens and their bytes (docs/tokenizer.md)\n");
      }
    } else {
      fmt::memory_buffer out;
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) out.push_back(' ');
        fmt::format_to(std::back_inserter(out), "{}", ids[i]);
      }
      out.push_back('\n');
      std::fwrite(out.data(), 1, out.size(), stdout);
    }
    std::cout.flush();
    if (std::ferror(stdout)) return Status::IoError("standard output: write failed");
    return Status::Ok();
  };
}

}  // namespace ttft::cli
