// The input limits (ttft/input.h kMaxWholeFileBytes, ttft/spans.h kMaxLineBytes): an
// over-long file or line is an error naming the file, before memory runs out.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ttft/input.h"
#include "ttft/spans.h"

namespace ttft {
namespace {

namespace fs = std::filesystem;

std::string Temp(const std::string& name) {
  return (fs::temp_directory_path() / ("ttft_limits_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// Writes `n` copies of `byte` gzip-compressed, in 1 MiB pieces.
void WriteGzip(const std::string& path, size_t n, char byte) {
  gzFile f = gzopen(path.c_str(), "wb9");
  ASSERT_NE(f, nullptr);
  const std::string piece(size_t{1} << 20, byte);
  for (size_t done = 0; done < n;) {
    const size_t k = std::min(piece.size(), n - done);
    ASSERT_EQ(gzwrite(f, piece.data(), static_cast<unsigned>(k)), static_cast<int>(k));
    done += k;
  }
  gzclose(f);
}

TEST(ReadInputFile, ExactlyTheLimitIsReadOneByteMoreIsAnError) {
  const std::string path = Temp("whole.txt");
  std::ofstream(path, std::ios::binary) << std::string(1000, 'x');
  auto ok = ReadInputFile(path, 1000);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->size(), 1000u);
  auto over = ReadInputFile(path, 999);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find(path + ": more than 999 bytes"), std::string::npos)
      << over.status().message();
  fs::remove(path);
}

TEST(ReadInputFile, AGzipBombStopsAtTheLimitAfterDecompression) {
  const std::string path = Temp("bomb.gz");
  WriteGzip(path, size_t{64} << 20, 'a');  // 64 MiB of 'a': about 64 KB on disk
  ASSERT_LT(fs::file_size(path), size_t{1} << 20);
  auto r = ReadInputFile(path, size_t{1} << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("after decompression"), std::string::npos)
      << r.status().message();
  fs::remove(path);
}

// One endless line (a gzip bomb without newlines): the span reader stops at
// kMaxLineBytes with the file and line, instead of growing its buffer without end.
TEST(ReadSpans, ALineLongerThanTheLimitIsAnErrorNamingFileAndLine) {
  const std::string path = Temp("endless.jsonl.gz");
  WriteGzip(path, kMaxLineBytes + (size_t{1} << 20), 'a');
  SpanTable table;
  ReadReport report;
  const Status st = ReadSpanTable(path, SpanReadOptions{}, table, report);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(path + ":1: a line longer than"), std::string::npos) << st.message();
  EXPECT_EQ(table.size(), 0u);
  fs::remove(path);
}

}  // namespace
}  // namespace ttft
