#include "traces/error.h"

#include <fmt/format.h>

namespace fabemu::traces {

std::string to_string(const Location& where) {
  std::string out = where.file.empty() ? std::string("<input>") : where.file;
  if (where.rank) out += fmt::format(": rank {}", *where.rank);
  if (where.line) out += fmt::format(": line {}", *where.line);
  if (where.offset) out += fmt::format(": byte {}", *where.offset);
  if (where.node_index && where.node_id) {
    out += fmt::format(": node #{} (id {})", *where.node_index, *where.node_id);
  } else if (where.node_id) {
    out += fmt::format(": node id {}", *where.node_id);
  } else if (where.node_index) {
    out += fmt::format(": node #{}", *where.node_index);
  }
  return out;
}

TraceError::TraceError(Location where, const std::string& detail)
    : std::runtime_error(to_string(where) + ": " + detail), where_(std::move(where)), detail_(detail) {}

std::string to_string(const Finding& finding) {
  return fmt::format("{}: {}: {}", finding.severity == Severity::kError ? "error" : "warning",
                     to_string(finding.where), finding.what);
}

}  // namespace fabemu::traces
