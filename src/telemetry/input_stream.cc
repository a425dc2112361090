// Byte streams over files, stdin and gzip (input_stream.h).
#include "telemetry/input_stream.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ttft::internal {

Result<std::unique_ptr<InputStream>> InputStream::Open(const std::string& path) {
  std::unique_ptr<InputStream> in(new InputStream());
  if (path == "-") {
    in->name_ = "<stdin>";
    in->fd_ = 0;
  } else {
    in->name_ = path;
    in->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (in->fd_ < 0) {
      const int err = errno;
      if (err == ENOENT) return Status::NotFound(fmt::format("{}: no such file", path));
      return Status::IoError(fmt::format("{}: cannot open: {}", path, std::strerror(err)));
    }
    in->owns_fd_ = true;
  }
  // Peek at the magic bytes.
  char head[2];
  size_t got = 0;
  while (got < 2) {
    auto n = in->ReadRaw(head + got, 2 - got);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    got += *n;
  }
  in->pending_.assign(head, got);
  if (got == 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
      static_cast<unsigned char>(head[1]) == 0x8b) {
    in->gzip_ = true;
    if (inflateInit2(&in->z_, 15 + 32) != Z_OK) {
      return Status::Internal(fmt::format("{}: inflateInit2 failed", in->name_));
    }
    in->z_init_ = true;
    in->in_buf_ = std::make_unique<char[]>(kInBufBytes);
  }
  return in;
}

InputStream::~InputStream() {
  if (z_init_) inflateEnd(&z_);
  if (owns_fd_ && fd_ >= 0) ::close(fd_);
}

Result<size_t> InputStream::ReadRaw(char* dst, size_t n) {
  if (raw_eof_) return size_t{0};
  for (;;) {
    const ssize_t r = ::read(fd_, dst, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(fmt::format("{}: read failed: {}", name_, std::strerror(errno)));
    }
    if (r == 0) raw_eof_ = true;
    return static_cast<size_t>(r);
  }
}

Result<size_t> InputStream::Read(char* dst, size_t n) {
  if (n == 0) return size_t{0};
  if (!gzip_) {
    if (!pending_.empty()) {
      const size_t k = std::min(n, pending_.size());
      std::memcpy(dst, pending_.data(), k);
      pending_.erase(0, k);
      return k;
    }
    return ReadRaw(dst, n);
  }
  z_.next_out = reinterpret_cast<Bytef*>(dst);
  z_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
  while (z_.avail_out > 0) {
    if (z_.avail_in == 0) {
      size_t k = 0;
      if (!pending_.empty()) {
        k = pending_.size();
        std::memcpy(in_buf_.get(), pending_.data(), k);
        pending_.clear();
      } else {
        auto r = ReadRaw(in_buf_.get(), kInBufBytes);
        if (!r.ok()) return r.status();
        k = *r;
      }
      if (k == 0) {
        // End of the compressed input. Mid-stream means a truncated file.
        const bool produced = z_.avail_out != static_cast<uInt>(std::min<size_t>(n, 1u << 30));
        if (!stream_done_ && !produced) {
          return Status::IoError(fmt::format("{}: gzip stream truncated", name_));
        }
        break;  // return what we have; a truncation is reported on the next call
      }
      z_.next_in = reinterpret_cast<Bytef*>(in_buf_.get());
      z_.avail_in = static_cast<uInt>(k);
    }
    stream_done_ = false;
    const int rc = inflate(&z_, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      stream_done_ = true;
      // Another member may follow (concatenated gzip).
      if (inflateReset(&z_) != Z_OK) return Status::Internal("inflateReset failed");
      continue;
    }
    if (rc == Z_BUF_ERROR && z_.avail_in == 0) continue;
    if (rc != Z_OK) {
      return Status::IoError(
          fmt::format("{}: gzip data corrupt: {}", name_, z_.msg ? z_.msg : "inflate error"));
    }
  }
  return n - z_.avail_out;
}

}  // namespace ttft::internal
