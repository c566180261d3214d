// The balance analysis behind `fabemu trace analyze`: per collective instance (matched across its group's
// members by traces/collective_order.h, the rule `fabemu run` matches by) the bytes on each member and
// how far they spread; summaries per process group and per collective type; the point-to-point traffic
// matrix; compute per rank and its spread; each rank's longest dependency chain.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "traces/attrs.h"
#include "traces/trace_set.h"

namespace fabemu::analyze {

// How a set of per-rank values spreads: cv = population standard deviation / mean (0 when the mean is 0).
struct Spread {
  double min = 0, max = 0, mean = 0, cv = 0;
  int64_t max_rank = -1;  // a rank holding the maximum (the first), -1 for no values
};
Spread spread_of(const std::vector<double>& values);

struct CollectiveMember {
  int32_t rank;
  uint64_t node_id;
  uint64_t bytes;  // comm_size
};

// One collective as its group's members issued it: the seq-th collective of group `pg` in every member's file.
struct CollectiveInstance {
  std::string pg;  // normalized pg_name; "" = the default group of all ranks
  uint64_t seq = 0;
  traces::CollectiveType type = ChakraProtoMsg::ALL_REDUCE;  // the first member's
  std::string name;                                          // the first member's node name
  std::optional<std::vector<bool>> involved_dim;             // the first member's
  size_t group_size = 0;                                     // ranks in the group
  std::vector<CollectiveMember> members;                     // those that issued it, by rank
  bool mixed_types = false;                                  // members disagree on the collective type
  // Filled by finish(): the size most members have (ties: the smaller), and the spread of the members' bytes.
  uint64_t typical_bytes = 0;
  Spread bytes;
  std::vector<CollectiveMember> deviating;  // members whose bytes are not typical_bytes
  bool balanced() const { return deviating.empty() && !mixed_types && members.size() == group_size; }
  double max_over_mean() const { return bytes.mean > 0 ? bytes.max / bytes.mean : 1.0; }
};

// Instances, bytes and the worst spread of a set of collectives (a process group, a collective type).
struct CollectiveSummary {
  std::string key;  // the group's name or the collective type's
  size_t ranks = 0;  // groups only: members
  uint64_t instances = 0;
  uint64_t imbalanced = 0;  // instances that are not balanced()
  uint64_t bytes = 0;       // over all members of all instances
  double worst_cv = 0;
  int64_t worst_instance = -1;  // index into TraceAnalysis::collectives
};

struct TrafficCell {
  uint64_t bytes = 0;
  uint64_t messages = 0;
};
// (src rank, dst rank) -> traffic; pairs without traffic are absent.
using TrafficMatrix = std::map<std::pair<int32_t, int32_t>, TrafficCell>;

struct RankAnalysis {
  int32_t rank = 0;
  std::string path;
  uint64_t nodes = 0;
  uint64_t comp_nodes = 0;
  uint64_t compute_us = 0;     // COMP_NODE duration_micros
  uint64_t num_ops = 0;        // COMP_NODE num_ops
  uint64_t tensor_bytes = 0;   // COMP_NODE tensor_size
  uint64_t collective_bytes = 0;  // comm_size of its collectives
  uint64_t send_bytes = 0, sends = 0;
  uint64_t recv_bytes = 0, recvs = 0;
  uint64_t chain_us = 0;              // its longest dependency chain by duration
  std::vector<uint64_t> chain_ids;    // that chain's node ids, first to last
};

struct TraceAnalysis {
  std::string prefix;
  std::vector<RankAnalysis> ranks;
  std::vector<CollectiveInstance> collectives;  // in the order first read (rank 0's file first)
  std::vector<size_t> worst_first;              // indices of the not-balanced instances, worst first
  std::vector<CollectiveSummary> by_group;
  std::vector<CollectiveSummary> by_type;
  std::map<std::string, std::vector<int64_t>> group_ranks;  // each group's members, for the groups used
  TrafficMatrix p2p;
  uint64_t untyped_collectives = 0;  // COMM_COLL_NODEs without a comm_type or group (not matched)
  // Spread over the ranks of compute_us, num_ops, tensor_bytes, collective_bytes and chain_us.
  Spread compute_us, num_ops, tensor_bytes, collective_bytes, chain_us;
};

struct AnalyzeOptions {
  std::optional<std::string> comm_group_file;
};

// Reads every rank file once. Throws TraceError (file, rank, node) on unreadable input.
TraceAnalysis analyze_workload(const std::string& prefix, const std::vector<traces::RankFile>& files,
                               const AnalyzeOptions& options = {});

}  // namespace fabemu::analyze
