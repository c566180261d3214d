// What a workload contains: per rank, node counts by type, dependency edges, collectives by type and
// size, point-to-point traffic; and the process groups. The data behind `fabemu trace info`.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "traces/attrs.h"
#include "traces/process_groups.h"
#include "traces/trace_set.h"

namespace fabemu::traces {

struct RankSummary {
  int64_t rank = 0;
  std::string path;
  bool gzip = false;
  uint64_t trace_bytes = 0;  // uncompressed
  std::string version;       // GlobalMetadata.version
  std::string schema;        // GlobalMetadata attr "schema", if any
  uint64_t nodes = 0;
  std::array<uint64_t, 8> by_type{};  // indexed by NodeType
  uint64_t data_edges = 0;
  uint64_t ctrl_edges = 0;
  uint64_t max_parents = 0;
  // (collective, comm_size) -> count, for COMM_COLL_NODEs with a comm_type
  std::map<std::pair<CollectiveType, uint64_t>, uint64_t> collectives;
  uint64_t collective_bytes = 0;
  uint64_t untyped_collectives = 0;  // COMM_COLL_NODEs without comm_type (CPU-side records)
  uint64_t sends = 0, send_bytes = 0, recvs = 0, recv_bytes = 0;
  uint64_t compute_micros = 0;  // sum of COMP_NODE duration_micros
  uint64_t cpu_ops = 0;         // nodes with is_cpu_op = true
};

struct WorkloadSummary {
  std::vector<RankSummary> ranks;
  ProcessGroups groups{0};
};

// Reads every rank file once (streaming). Process groups come from METADATA_NODEs and, when given,
// a comm-group file. Throws TraceError on unreadable input.
WorkloadSummary summarize_workload(const std::vector<RankFile>& files,
                                   const std::optional<std::string>& comm_group_file = std::nullopt);

// "1 MiB", "64 KiB", "1000 B": exact binary units when the size divides evenly.
std::string format_bytes(uint64_t bytes);

}  // namespace fabemu::traces
