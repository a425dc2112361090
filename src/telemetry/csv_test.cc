// Tests for the CSV tokenizer (ttft/csv.h).
#include "ttft/csv.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ttft {
namespace {

using Fields = std::vector<std::string>;

// Every record of `text` with its first line, or the error and its line.
std::string Records(std::string_view text, CsvOptions options = {}) {
  CsvReader csv(text, options);
  Fields f;
  std::string out;
  while (csv.Next(f)) {
    out += std::to_string(csv.record_line()) + ":";
    for (const std::string& s : f) out += "[" + s + "]";
    out += "\n";
  }
  if (csv.error() == CsvError::kUnterminatedQuote) {
    out += "unterminated at " + std::to_string(csv.line()) + "\n";
  } else if (csv.error() == CsvError::kTextAfterQuote) {
    out += "text after quote at " + std::to_string(csv.line()) + "\n";
  }
  return out;
}

TEST(CsvReader, FieldsAndRecords) {
  EXPECT_EQ(Records("a,b,c\n1,2,3\n"), "1:[a][b][c]\n2:[1][2][3]\n");
  EXPECT_EQ(Records("a,b"), "1:[a][b]\n");                     // no final newline
  EXPECT_EQ(Records("a,\n,b\n"), "1:[a][]\n2:[][b]\n");        // empty fields
  EXPECT_EQ(Records(""), "");                                  // no records
  EXPECT_EQ(Records("a\n\nb\n"), "1:[a]\n2:\n3:[b]\n");        // an empty line: no fields
  EXPECT_EQ(Records("a\r\n\r\nb\r\n"), "1:[a]\n2:\n3:[b]\n");  // CRLF
  EXPECT_EQ(Records("a,b\r"), "1:[a][b]\n");                   // one CR before the end
  EXPECT_EQ(Records("a\r,b\n"), "1:[a\r][b]\n");               // a CR inside a field stays
}

TEST(CsvReader, QuotedFields) {
  EXPECT_EQ(Records("\"a,b\",\"say \"\"hi\"\"\"\n"), "1:[a,b][say \"hi\"]\n");
  EXPECT_EQ(Records("\"\",x\n"), "1:[][x]\n");
  // A quoted field may hold newlines; the next record starts on a later line.
  EXPECT_EQ(Records("\"two\nlines\",x\ny,z\n"), "1:[two\nlines][x]\n3:[y][z]\n");
  EXPECT_EQ(Records("\"a\"\r\nb\n"), "1:[a]\n2:[b]\n");
  // A quote inside an unquoted field is an ordinary byte.
  EXPECT_EQ(Records("ab\"c,d\n"), "1:[ab\"c][d]\n");
}

TEST(CsvReader, Errors) {
  EXPECT_EQ(Records("a,b\n\"open,c\nd\n"), "1:[a][b]\nunterminated at 4\n");
  EXPECT_EQ(Records("a\n\"x\"y,z\n"), "1:[a]\ntext after quote at 2\n");
  EXPECT_EQ(Records("\"x\" ,z\n"), "text after quote at 1\n");
  // The reader stays at the error.
  CsvReader csv("\"x\"y\nb\n");
  Fields f;
  EXPECT_FALSE(csv.Next(f));
  EXPECT_FALSE(csv.Next(f));
  EXPECT_EQ(csv.error(), CsvError::kTextAfterQuote);
}

TEST(CsvReader, TrimSpaces) {
  const CsvOptions trim{.trim_spaces = true};
  EXPECT_EQ(Records(" a , b ,c\n", trim), "1:[a][b][c]\n");
  EXPECT_EQ(Records(" a , b ,c\n"), "1:[ a ][ b ][c]\n");
  // Quoted fields keep their spaces; a field starting with a space is unquoted.
  EXPECT_EQ(Records("\" a \", \"b\"\n", trim), "1:[ a ][\"b\"]\n");
  EXPECT_EQ(Records("a, b \r", trim), "1:[a][b]\n");
}

TEST(CsvReader, FieldsVectorIsReused) {
  CsvReader csv("a,b,c\nd\n");
  Fields f = {"x", "y", "z", "w"};
  ASSERT_TRUE(csv.Next(f));
  EXPECT_EQ(f, (Fields{"a", "b", "c"}));
  ASSERT_TRUE(csv.Next(f));
  EXPECT_EQ(f, (Fields{"d"}));
  EXPECT_FALSE(csv.Next(f));
  EXPECT_EQ(csv.error(), CsvError::kNone);
}

}  // namespace
}  // namespace ttft
