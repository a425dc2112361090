// -----------------------------------------------------------------------------
// File: tokenizer/llama3_js_testing.h
// -----------------------------------------------------------------------------
//
// Test and benchmark helper (not part of the library): the reference implementation
// the tokenizer is compared with, the npm package `llama3-tokenizer-js`
// (belladoreai/llama3-tokenizer-js v1.2.0), run under node.
//
//   * InstallLlama3Js(dir): `npm install --prefix DIR llama3-tokenizer-js` (bounded by
//     a timeout), unless DIR already holds it. Nothing is downloaded at build time; the
//     folder lives under the build directory and is never committed.
//   * WriteLlama3TokenizerJson(dir, out): decodes the package's own data with node
//     (its bundle's `llama_vocab_base64`: UTF-8 token strings joined by "\n", id = line;
//     `llama_merges_binary`: base64 of 17-bit big-endian vocab ids, two per merge, in
//     priority order, zero-padded; 256 special tokens after the 128,000 base tokens,
//     as the package's llama3SpecialTokens list) into a tokenizer.json in the Llama 3
//     form (Split on the Llama 3 pattern, Isolated; ByteLevel without regex;
//     ignore_merges true; merges as ["a", "b"] pairs; special tokens as added tokens).
//     The node side checks that its decoding gives the package's own tables.
//   * EncodeWithLlama3Js(dir, texts): the package's encode(text, {bos: false, eos: false}).
//
// Every function returns an error string (empty on success) rather than failing, so a
// test can GTEST_SKIP when npm, node or the registry is not reachable.

#ifndef TTFT_TOKENIZER_LLAMA3_JS_TESTING_H_
#define TTFT_TOKENIZER_LLAMA3_JS_TESTING_H_

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace ttft::testing {

// The full path of an executable found on PATH, or "".
inline std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const std::string p = dir + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

// The directory of the running executable (the build directory for tests and benches).
inline std::string ExecutableDir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

// Holds an exclusive flock on DIR/.lock while alive: test processes that ctest runs in
// parallel install and convert one at a time.
class DirLock {
 public:
  explicit DirLock(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    fd_ = open((dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~DirLock() {
    if (fd_ >= 0) close(fd_);  // releases the lock
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

// A name unique to this process inside `dir`.
inline std::string ScratchName(const std::string& dir, const std::string& stem) {
  return dir + "/" + stem + "." + std::to_string(getpid());
}

inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

// Runs a shell command; returns its exit status (-1 if it could not run).
inline int RunShell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  if (rc == -1 || !WIFEXITED(rc)) return -1;
  return WEXITSTATUS(rc);
}

inline std::string Llama3JsBundle(const std::string& dir) {
  return dir + "/node_modules/llama3-tokenizer-js/bundle/llama3-tokenizer-with-baked-data.js";
}

// Installs the package into `dir` unless present. Returns "" or why it could not.
inline std::string InstallLlama3Js(const std::string& dir, int timeout_s = 180) {
  DirLock lock(dir);
  if (std::filesystem::exists(Llama3JsBundle(dir))) return "";
  const std::string npm = FindOnPath("npm");
  if (npm.empty()) return "npm not found on PATH";
  if (FindOnPath("node").empty()) return "node not found on PATH";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string log = dir + "/npm-install.log";
  const int rc = RunShell("timeout " + std::to_string(timeout_s) + " " + ShellQuote(npm) +
                          " install --prefix " + ShellQuote(dir) +
                          " --no-audit --no-fund --no-save llama3-tokenizer-js > " +
                          ShellQuote(log) + " 2>&1");
  if (rc != 0 || !std::filesystem::exists(Llama3JsBundle(dir))) {
    return "npm install llama3-tokenizer-js failed (exit " + std::to_string(rc) +
           "; registry unreachable?), see " + log;
  }
  return "";
}

// The node side: `node ref.mjs convert OUT.json`, `encode IN.json OUT.json`,
// `bench TEXT.txt` (prints {"seconds", "cpu_seconds": wall and CPU s (the process, GC
// threads included) of one encode after a warm-up, "tokens": n}).
inline constexpr const char* kLlama3JsScript = R"JS(
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
const [mode, a, b] = process.argv.slice(2);
const bundle = process.env.LLAMA3_JS_BUNDLE;
const mod = await import(pathToFileURL(bundle).href);
const tok = mod.default;
if (mode === 'convert') {
  const src = fs.readFileSync(bundle, 'utf8');
  const grab = (name) => {
    const m = src.match(new RegExp('const ' + name + ' = "([A-Za-z0-9+/=]*)"'));
    if (!m) throw new Error('no ' + name + ' in ' + bundle);
    return Buffer.from(m[1], 'base64');
  };
  const vocab = grab('llama_vocab_base64').toString('utf8').split('\n');
  const packed = grab('llama_merges_binary');
  const ids = [];
  const nbits = packed.length * 8;
  for (let bit = 0; bit + 17 <= nbits; bit += 17) {
    let v = 0;
    for (let k = 0; k < 17; ++k) {
      const p = bit + k;
      v = (v << 1) | ((packed[p >> 3] >> (7 - (p & 7))) & 1);
    }
    ids.push(v);
  }
  const merges = [];
  for (let i = 0; i + 1 < ids.length; i += 2) merges.push([vocab[ids[i]], vocab[ids[i + 1]]]);
  const special = tok.vocabById.slice(vocab.length);
  // The decoding must give the package's own tables.
  if (vocab.length + special.length !== tok.vocabById.length) throw new Error('vocab size');
  for (let i = 0; i < vocab.length; ++i) {
    if (vocab[i] !== tok.vocabById[i]) throw new Error('vocab differs at ' + i);
  }
  if (merges.length !== tok.merges.size) throw new Error('merge count ' + merges.length + ' vs ' + tok.merges.size);
  merges.forEach(([x, y], i) => {
    if (tok.merges.get(x + ' ' + y) !== 2 * i + 1) throw new Error('merge ' + i + ' differs');
  });
  const v = {};
  vocab.forEach((s, i) => { v[s] = i; });
  const added = special.map((s, i) => ({ id: vocab.length + i, content: s, single_word: false,
    lstrip: false, rstrip: false, normalized: false, special: true }));
  const pattern = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  const out = { version: '1.0', truncation: null, padding: null, added_tokens: added,
    normalizer: null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }] },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
      end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: true,
      vocab: v, merges: merges } };
  fs.writeFileSync(a, JSON.stringify(out));
} else if (mode === 'encode') {
  const texts = JSON.parse(fs.readFileSync(a, 'utf8'));
  fs.writeFileSync(b, JSON.stringify(texts.map((t) => tok.encode(t, { bos: false, eos: false }))));
} else if (mode === 'bench') {
  const text = fs.readFileSync(a, 'utf8');
  tok.encode(text.slice(0, 100000), { bos: false, eos: false });
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  const n = tok.encode(text, { bos: false, eos: false }).length;
  const c = process.cpuUsage(c0);
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(JSON.stringify({ seconds: s, cpu_seconds: (c.user + c.system) / 1e6, tokens: n }));
} else {
  throw new Error('mode: convert, encode or bench');
}
)JS";

inline std::string NodeCommand(const std::string& dir, const std::string& args) {
  // Written under a unique name and renamed: a reader never sees a partial script.
  const std::string script = dir + "/llama3_js_ref.mjs";
  const std::string tmp = ScratchName(dir, "llama3_js_ref.mjs");
  std::ofstream(tmp) << kLlama3JsScript;
  std::error_code ec;
  std::filesystem::rename(tmp, script, ec);
  return "env LLAMA3_JS_BUNDLE=" + ShellQuote(Llama3JsBundle(dir)) + " " +
         ShellQuote(FindOnPath("node")) + " " + ShellQuote(script) + " " + args;
}

// Writes the package's vocabulary and merges as a tokenizer.json at `out`.
inline std::string WriteLlama3TokenizerJson(const std::string& dir, const std::string& out) {
  DirLock lock(dir);
  if (std::filesystem::exists(out)) return "";
  const std::string tmp = ScratchName(dir, "tokenizer.json");
  const int rc = RunShell("timeout 120 " + NodeCommand(dir, "convert " + ShellQuote(tmp)) + " 2> " +
                          ShellQuote(dir + "/convert.log"));
  if (rc != 0)
    return "node convert failed (exit " + std::to_string(rc) + "), see " + dir + "/convert.log";
  std::filesystem::rename(tmp, out);
  return "";
}

// The package's ids for each text ({bos: false, eos: false}).
inline std::string EncodeWithLlama3Js(const std::string& dir, const std::vector<std::string>& texts,
                                      std::vector<std::vector<int32_t>>* ids) {
  const std::string in = ScratchName(dir, "corpus.json"), out = ScratchName(dir, "corpus_ids.json");
  std::ofstream(in) << nlohmann::json(texts).dump();
  const int rc = RunShell("timeout 300 " +
                          NodeCommand(dir, "encode " + ShellQuote(in) + " " + ShellQuote(out)) +
                          " 2> " + ShellQuote(dir + "/encode.log"));
  if (rc != 0)
    return "node encode failed (exit " + std::to_string(rc) + "), see " + dir + "/encode.log";
  nlohmann::json j;
  {
    std::ifstream f(out);
    j = nlohmann::json::parse(f, nullptr, false);
  }
  std::error_code ec;
  std::filesystem::remove(in, ec);
  std::filesystem::remove(out, ec);
  if (j.is_discarded() || !j.is_array() || j.size() != texts.size())
    return "node output unreadable";
  ids->clear();
  for (const auto& row : j) ids->push_back(row.get<std::vector<int32_t>>());
  return "";
}

}  // namespace ttft::testing

#endif  // TTFT_TOKENIZER_LLAMA3_JS_TESTING_H_
