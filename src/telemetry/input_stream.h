// Internal: byte streams over files, standard input and gzip (detected by magic bytes).
#ifndef TTFT_TELEMETRY_INPUT_STREAM_H_
#define TTFT_TELEMETRY_INPUT_STREAM_H_

#include <zlib.h>

#include <memory>
#include <string>

#include "ttft/core.h"

namespace ttft::internal {

// Reads a file ("-" is standard input), decompressing gzip (all members) when the
// first two bytes are 1f 8b. Not thread-safe.
class InputStream {
 public:
  static Result<std::unique_ptr<InputStream>> Open(const std::string& path);
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  // Reads up to `n` bytes into `dst`; 0 at end of input.
  Result<size_t> Read(char* dst, size_t n);
  const std::string& name() const { return name_; }
  bool gzip() const { return gzip_; }

 private:
  InputStream() = default;
  Result<size_t> ReadRaw(char* dst, size_t n);
  std::string name_;
  int fd_ = -1;
  bool owns_fd_ = false;
  bool gzip_ = false;
  bool raw_eof_ = false;
  z_stream z_{};
  bool z_init_ = false;
  bool stream_done_ = true;  // between gzip members
  std::string pending_;      // bytes peeked before the mode was chosen
  std::unique_ptr<char[]> in_buf_;
  static constexpr size_t kInBufBytes = 1 << 18;
};

}  // namespace ttft::internal

#endif  // TTFT_TELEMETRY_INPUT_STREAM_H_
