// Test-only, header-only: runs a real Prometheus server (Debian's /usr/bin/prometheus)
// as a child process for the length of a test, on a free 127.0.0.1 port, and stops it.
// Shared by the tests that check ttft against a real server (telemetry_test's
// prom_client_test.cc; integration_test's stats_prometheus_test.cc and
// diagnose_prometheus_test.cc). Each test keeps its own data (scrape config, promtool
// backfill) and its own readiness check; this header owns the process: the port, the
// fork/exec, the bounded waits and the log. Not part of ttft_lib; never include it from
// library code.
//
// Everything listens on and connects to 127.0.0.1 only, and every wait is bounded.
//
//   auto ready = [](int port) { return ttft::testing::HttpGet(port, "/-/ready").status == 200; };
//   ttft::testing::PrometheusProcess prom;
//   if (!prom.Start(dir / "prometheus.yml", dir / "data", dir / "prometheus.log", ready,
//                   /*timeout_s=*/30)) {
//     FAIL() << prom.error();  // says why, with the tail of the server's log
//   }
//   ... query prom.url() ...
//   prom.Stop();  // or leave it to the destructor
#ifndef TTFT_TELEMETRY_PROMETHEUS_PROCESS_TESTING_H_
#define TTFT_TELEMETRY_PROMETHEUS_PROCESS_TESTING_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>

namespace ttft::testing {

// Where Debian's prometheus package installs the server and its tool.
inline constexpr const char* kPrometheus = "/usr/bin/prometheus";
inline constexpr const char* kPromtool = "/usr/bin/promtool";

// True when `path` exists and is executable (tests skip when it is not).
inline bool IsExecutable(const char* path) { return ::access(path, X_OK) == 0; }

// A 127.0.0.1 port nobody listened on a moment ago (bound to port 0, then released),
// or -1. Another process may take it before it is used: callers retry.
inline int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Percent-encodes everything but RFC 3986's unreserved characters (for query strings).
inline std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

struct HttpResponse {
  int status = 0;    // 0: no connection, or no HTTP status line in the answer
  std::string body;  // after the header
};

// A minimal HTTP/1.0 GET of `target` ("/path?query", already encoded) from
// 127.0.0.1:`port`. Connect, each send and each receive time out after `timeout_s`, and
// the whole exchange stops reading after about 2 * `timeout_s`.
inline HttpResponse HttpGet(int port, const std::string& target, double timeout_s = 2) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(2 * timeout_s);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_s);
  tv.tv_usec = static_cast<suseconds_t>((timeout_s - static_cast<double>(tv.tv_sec)) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);  // also bounds connect
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return {};
  }
  const std::string req = "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return {};
  }
  std::string resp;
  char buf[8192];
  ssize_t n;
  while (Clock::now() < deadline && (n = ::recv(fd, buf, sizeof buf, 0)) > 0) {
    resp.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  HttpResponse r;
  if (std::sscanf(resp.c_str(), "HTTP/%*s %d", &r.status) != 1) return {};
  const size_t body = resp.find("\r\n\r\n");
  if (body != std::string::npos) r.body = resp.substr(body + 4);
  return r;
}

// The last `max_bytes` of a file ("" when it cannot be read).
inline std::string TailFile(const std::filesystem::path& path, size_t max_bytes = 4000) {
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.size() > max_bytes ? s.substr(s.size() - max_bytes) : s;
}

// One /usr/bin/prometheus child on 127.0.0.1. Not copyable or movable; not thread-safe.
// PR_SET_PDEATHSIG kills the child if the thread that called Start dies, so a crashed
// test leaves no server behind: call Start from the thread that outlives the server
// (a gtest SetUpTestSuite, the main thread, does).
class PrometheusProcess {
 public:
  // Called with the server's port until it returns true. It must return within a few
  // seconds (HttpGet's default bound is 2 s per exchange).
  using ReadyFn = std::function<bool(int port)>;
  // A port picked just before start may be taken meanwhile: Start tries this many.
  static constexpr int kPortAttempts = 3;
  // Stop's wait for the SIGTERM'd server to exit before it sends SIGKILL.
  static constexpr double kStopGraceS = 5;

  PrometheusProcess() = default;
  PrometheusProcess(const PrometheusProcess&) = delete;
  PrometheusProcess& operator=(const PrometheusProcess&) = delete;
  ~PrometheusProcess() { Stop(); }

  // Runs `prometheus --config.file=config --storage.tsdb.path=data_dir
  // --web.listen-address=127.0.0.1:PORT --log.level=warn`, standard output and error
  // appended to `log`, and waits until `ready(PORT)` is true. Tries up to kPortAttempts
  // fresh ports while the child exits before it is ready (e.g. the port was taken).
  // Returns within `timeout_s` for all attempts together, plus at most one call of
  // `ready` and one Stop. True: the server is running and `ready` held. False: no child
  // is left running and error() gives the reason and the log's tail. Stops any server
  // this object was already running first.
  bool Start(const std::filesystem::path& config, const std::filesystem::path& data_dir,
             const std::filesystem::path& log, const ReadyFn& ready, double timeout_s) {
    using Clock = std::chrono::steady_clock;
    Stop();
    error_.clear();
    log_ = log;
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    std::string why = "no attempt made";
    for (int attempt = 1; attempt <= kPortAttempts && Clock::now() < deadline; ++attempt) {
      port_ = FreeLoopbackPort();
      if (port_ <= 0) {
        why = "no free port on 127.0.0.1";
        continue;
      }
      if (!Spawn(config, data_dir, log)) {
        why = "fork failed";
        continue;
      }
      while (true) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          why = "prometheus on port " + std::to_string(port_) + " exited (" + Describe(status) +
                ") before it was ready";
          break;  // e.g. the port was taken: try another
        }
        if (ready(port_)) return true;
        if (Clock::now() >= deadline) {
          Stop();
          why = "prometheus on port " + std::to_string(port_) + " was not ready within " +
                Seconds(timeout_s) + " s";
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    port_ = -1;
    error_ =
        "prometheus did not become ready: " + why + "; log " + log.string() + ":\n" + LogTail();
    return false;
  }

  // SIGTERM, up to kStopGraceS for the server to exit, then SIGKILL; the child is
  // reaped either way. Returns within about kStopGraceS. No-op when nothing runs.
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    const int polls = static_cast<int>(kStopGraceS / 0.05);
    for (int i = 0; i < polls; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  bool running() const { return pid_ > 0; }
  // The listening port after a successful Start; -1 otherwise.
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Why the last Start failed ("" after a success).
  const std::string& error() const { return error_; }
  // The last `max_bytes` of the server's log (every attempt appends to it).
  std::string LogTail(size_t max_bytes = 4000) const { return TailFile(log_, max_bytes); }

 private:
  static std::string Seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s);
    return buf;
  }

  static std::string Describe(int status) {
    if (WIFEXITED(status)) {
      const int code = WEXITSTATUS(status);
      return "exit status " + std::to_string(code) + (code == 127 ? ": could not exec" : "");
    }
    if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
    return "status " + std::to_string(status);
  }

  bool Spawn(const std::filesystem::path& config, const std::filesystem::path& data_dir,
             const std::filesystem::path& log) {
    // Everything the child needs is built before fork: after it, only async-signal-safe
    // calls until exec.
    const std::string cfg = "--config.file=" + config.string();
    const std::string data = "--storage.tsdb.path=" + data_dir.string();
    const std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port_);
    const std::string log_path = log.string();
    const char* argv[] = {kPrometheus,    cfg.c_str(),        data.c_str(),
                          listen.c_str(), "--log.level=warn", nullptr};
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return false;
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(126);  // the parent died before prctl
      const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execv(kPrometheus, const_cast<char* const*>(argv));
      ::_exit(127);
    }
    pid_ = pid;
    return true;
  }

  pid_t pid_ = -1;
  int port_ = -1;
  std::filesystem::path log_;
  std::string error_;
};

}  // namespace ttft::testing

#endif  // TTFT_TELEMETRY_PROMETHEUS_PROCESS_TESTING_H_
