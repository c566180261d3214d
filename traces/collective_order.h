// The rule that matches a collective across the members of its process group: the k-th collective of a
// group in each member's file is the group's k-th collective (file order, the order the program launched
// them: NCCL's rule). `fabemu run` (emulator/walker.cpp) and `fabemu trace analyze` place collectives
// with it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "traces/process_groups.h"
#include "traces/reader.h"

namespace fabemu::traces {

// Where a collective sits: its group (as defined when it was read) and its index among that group's
// collectives in the rank's file.
struct CollectivePlace {
  const ProcessGroup* pg;
  uint64_t seq;
};

// Feed it every node of a rank in file order (after the METADATA_NODEs before them are added to `groups`).
class CollectiveOrder {
 public:
  // The place of a COMM_COLL_NODE with a valid comm_type in a known group; nullopt for any other node
  // (a CPU-side record without comm_type, an unknown pg_name: the caller says why when it uses the node).
  std::optional<CollectivePlace> place(int64_t rank, const Node& node, const ProcessGroups& groups);

 private:
  std::map<std::pair<int64_t, std::string>, uint64_t> next_seq_;  // (rank, group name) -> next index
};

}  // namespace fabemu::traces
