#include "traces/file_kind.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "traces/astra_text.h"
#include "traces/byte_source.h"

namespace fabemu::traces {
namespace {

constexpr size_t kSniffBytes = 4096;

// Text: valid UTF-8 (a sequence cut by the end of `head` is fine) with no control byte but tab, newline,
// carriage return and form feed.
bool is_text(std::string_view head) {
  if (head.empty()) return false;
  for (size_t i = 0; i < head.size();) {
    const auto c = static_cast<unsigned char>(head[i]);
    if (c < 0x80) {
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') return false;
      ++i;
      continue;
    }
    const size_t more = c >= 0xF0 && c <= 0xF4 ? 3 : c >= 0xE0 ? 2 : c >= 0xC2 && c <= 0xDF ? 1 : 0;
    if (more == 0 || c > 0xF4) return false;
    for (size_t k = 1; k <= more; ++k) {
      if (i + k == head.size()) return true;  // cut at the end of what was read
      if ((static_cast<unsigned char>(head[i + k]) & 0xC0u) != 0x80u) return false;
    }
    i += more + 1;
  }
  return true;
}

std::string_view first_line(std::string_view text) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return {};
  text.remove_prefix(start);
  return text.substr(0, text.find_first_of("\r\n"));
}

std::string_view first_word(std::string_view line) { return line.substr(0, line.find_first_of(" \t")); }

// "root:x:0:0:root:/root:/bin/bash" shortened to 40 characters.
std::string shown(std::string_view line) {
  return line.size() > 40 ? fmt::format("\"{}...\"", line.substr(0, 40)) : fmt::format("\"{}\"", line);
}

}  // namespace

std::string describe_non_trace(const std::string& path) {
  std::string head;
  try {
    ByteSource source(path);
    uint8_t byte = 0;
    while (head.size() < kSniffBytes && source.get(byte)) head.push_back(static_cast<char>(byte));
  } catch (...) {  // unreadable or damaged: the reader's own error says so
    if (head.empty()) return "";
  }
  std::string_view text(head);
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark
  if (!is_text(text)) return "";
  const std::string_view line = first_line(text);
  if (!line.empty() && (line.front() == '{' || line.front() == '[')) {
    if (line.find("\"version\"") != std::string_view::npos) {
      return fmt::format("not a Chakra trace: it looks like a JSON Lines trace (fabemu's JSON form, the "
                         "GlobalMetadata on line 1); convert it first: fabemu trace convert --from json {} OUT.et",
                         path);
    }
    return "not a Chakra trace: it is JSON, and a Chakra trace is binary (length-prefixed protobuf messages); a "
           "trace in fabemu's JSON form converts with fabemu trace convert --from json FILE OUT.et";
  }
  if (is_astra_text_parallelism(first_word(line))) {
    return fmt::format("not a Chakra trace: it looks like an ASTRA-sim text workload (line 1 names the "
                       "parallelism, {}); convert it first: fabemu trace convert --from astra-text {} OUT --ranks N",
                       shown(line), path);
  }
  return fmt::format("not a Chakra trace: it is a text file (it starts {}), and a Chakra trace is binary "
                     "(length-prefixed protobuf messages: a GlobalMetadata, then the nodes)",
                     shown(line));
}

}  // namespace fabemu::traces
