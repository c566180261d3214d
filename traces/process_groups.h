// Process groups: which ranks take part in a collective with a given pg_name. Found in METADATA_NODEs
// of the traces (PyTorch-collected ones) or in a comm-group file `{"<pg_name>": [ranks...]}`
// (ASTRA-sim's --comm-group-configuration). The default group ("") is all ranks; so is "0" unless a group
// "0" of fewer ranks is defined (real comm-group files number their groups from 0).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "traces/error.h"
#include "traces/reader.h"

namespace fabemu::traces {

struct ProcessGroup {
  std::string name;            // normalized (see normalize_pg_name); "" = default group
  std::vector<int64_t> ranks;  // sorted, unique
  Location defined_at;
};

class ProcessGroups {
 public:
  explicit ProcessGroups(int64_t world_size);

  // Adds a group; re-adding the same members is fine, different members are a TraceError naming both
  // places. Empty `ranks` means all ranks. Ranks outside 0..world_size-1 are an error.
  void add(const std::string& raw_name, std::vector<int64_t> ranks, const Location& where);
  // Reads a comm-group file. Throws TraceError naming the file (and key) on bad input.
  void load_file(const std::string& path);
  // If `node` is a METADATA_NODE describing process groups (inputs.values holding a Python-style list
  // of {"pg_name": ..., "ranks": [...]}), adds them and returns how many; 0 for other nodes.
  size_t add_from_metadata_node(const Node& node, const Location& where);

  // Members of the group named `raw_name` (normalized first); nullptr if unknown. The default group
  // always exists; "0" resolves to it unless a group "0" of fewer ranks is defined.
  const ProcessGroup* find(const std::string& raw_name) const;
  const std::map<std::string, ProcessGroup>& groups() const { return groups_; }
  int64_t world_size() const { return world_size_; }

 private:
  int64_t world_size_;
  std::map<std::string, ProcessGroup> groups_;
  ProcessGroup default_group_;
};

// Converts a Python literal (single quotes, True/False/None, tuples) to JSON text.
std::string python_literal_to_json(const std::string& text);
// Parses a Python literal as JSON, unwrapping one extra level of string quoting (some writers store
// the list's str() as a string). Throws nlohmann::json::exception when it is not readable.
nlohmann::json parse_python_literal(const std::string& text);

}  // namespace fabemu::traces
