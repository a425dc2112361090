// The YAML nesting bound (ttft/core.h): a text scan, not a parse, so that it runs
// before yaml-cpp's recursive descent sees the input.
#include <string_view>

#include "ttft/core.h"

namespace ttft {

int YamlNestingExceededAt(std::string_view text, int max_flow, int max_block) {
  int flow = 0;
  int line_no = 1;
  size_t line_start = 0;
  while (line_start <= text.size()) {
    size_t end = text.find('\n', line_start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(line_start, end - line_start);
    size_t i = 0;
    int block = 0;
    while (i < line.size()) {
      if (line[i] == ' ') {
        ++block;
        ++i;
      } else if ((line[i] == '-' || line[i] == '?' || line[i] == ':') && i + 1 < line.size() &&
                 (line[i + 1] == ' ' || line[i + 1] == '\t')) {
        block += 2;
        i += 2;
      } else {
        break;
      }
    }
    if (block > max_block) return line_no;
    for (char c : line) {
      if (c == '[' || c == '{') ++flow;
      if ((c == ']' || c == '}') && flow > 0) --flow;
      if (flow > max_flow) return line_no;
    }
    line_start = end + 1;
    ++line_no;
  }
  return 0;
}

}  // namespace ttft
