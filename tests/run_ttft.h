// -----------------------------------------------------------------------------
// File: tests/run_ttft.h
// -----------------------------------------------------------------------------
//
// Test-only: runs the real `ttft` binary (TTFT_BINARY, set by CMake) as a user
// would, for the integration tests.
//
//   RunResult r = RunTtft("drill --format json --quiet");
//   EXPECT_EQ(r.exit_code, 0) << r.err;

#ifndef TTFT_TESTS_RUN_TTFT_H_
#define TTFT_TESTS_RUN_TTFT_H_

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ttft::testing {

struct RunResult {
  int exit_code = -1;  // -1: not started, killed by a signal, or timed out
  std::string out;     // standard output
  std::string err;     // standard error
  double seconds = 0;  // wall time
};

// Runs `ttft ARGS` (ARGS is passed to the shell as is) and waits at most
// `timeout_s` seconds (coreutils `timeout`: exit code 124 when it fires).
inline RunResult RunTtft(const std::string& args, int timeout_s = 300) {
  static std::atomic<int> counter{0};
  namespace fs = std::filesystem;
  const fs::path err_path =
      fs::temp_directory_path() /
      ("ttft_it_err_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  const std::string cmd = "timeout " + std::to_string(timeout_s) + " " TTFT_BINARY " " + args +
                          " 2>" + err_path.string();
  RunResult r;
  const auto t0 = std::chrono::steady_clock::now();
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 65536> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(err_path);
  std::stringstream ss;
  ss << f.rdbuf();
  r.err = ss.str();
  std::error_code ec;
  fs::remove(err_path, ec);
  return r;
}

// A fresh, empty folder under the system's temporary folder, unique to this process:
// temp/ttft_it_<name>_<pid>.
inline std::filesystem::path TempDir(const std::string& name) {
  const std::filesystem::path d = std::filesystem::temp_directory_path() /
                                  ("ttft_it_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// The whole file, byte for byte ("" when it cannot be read).
inline std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace ttft::testing

#endif  // TTFT_TESTS_RUN_TTFT_H_
