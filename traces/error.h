// Errors and findings about trace input: every one names the file, rank, byte offset and node a
// user needs to find and fix the problem.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace fabemu::traces {

// Where in the input a problem is. Unknown parts stay empty and are left out of the message.
struct Location {
  std::string file;
  std::optional<int64_t> rank;
  std::optional<uint64_t> line;        // for text inputs (JSON, ASTRA-sim text), 1-based
  std::optional<uint64_t> offset;      // byte offset of the message's length prefix (uncompressed)
  std::optional<uint64_t> node_index;  // 0-based position of the node in the file (metadata excluded)
  std::optional<uint64_t> node_id;
};

// "FILE: rank R: byte B: node #I (id N)" with the unknown parts omitted.
std::string to_string(const Location& where);

// Thrown by the trace library for input it cannot use. what() is the full user-facing message.
class TraceError : public std::runtime_error {
 public:
  TraceError(Location where, const std::string& detail);
  const Location& where() const noexcept { return where_; }
  const std::string& detail() const noexcept { return detail_; }

 private:
  Location where_;
  std::string detail_;
};

enum class Severity { kWarning, kError };

// A validation finding: what is wrong, and where.
struct Finding {
  Severity severity = Severity::kError;
  Location where;
  std::string what;
};

std::string to_string(const Finding& finding);

}  // namespace fabemu::traces
