// A custom collective implementation (ASTRA-sim's "<coll>-implementation-custom"): per member position of the
// collective's group, the graph of SEND, RECV and COMP nodes that IS the collective's algorithm. Such graphs
// are small (a few nodes per step of the algorithm), so they are read whole, then checked once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "traces/attrs.h"
#include "traces/reader.h"

namespace fabemu::traces {

// Bounds on a custom implementation: members, and nodes per member's graph.
inline constexpr int32_t kMaxCustomMembers = 1 << 16;
inline constexpr size_t kMaxCustomNodes = size_t{1} << 20;

struct CustomGraph {
  std::string path;         // the .et file, or "FILE.xml (gpu G)"
  std::vector<Node> nodes;  // file order
  uint64_t sent = 0;        // bytes of its SENDs
  uint64_t received = 0;    // bytes of its RECVs
};
using CustomGraphs = std::vector<CustomGraph>;  // [member position]

// Reads PREFIX.0.et ... PREFIX.<n-1>.et (plain or .gz) for a group of n members. TraceError when one is
// missing or PREFIX.<n>.et exists too (the implementation is for more members than the group has).
CustomGraphs read_custom_graphs(const std::string& prefix, int32_t n);

// Checks the graphs as a whole and fills sent/received: every node is a SEND, RECV, COMP or METADATA node;
// a SEND has comm_dst, a RECV comm_src, both a peer position in 0..n-1 other than their own and a comm_size;
// node ids are unique and every dependency names a node of the same graph, without cycles; every SEND has a
// RECV on its peer with the same (src, dst, tag) and size, in order. TraceError names file, position, node.
void check_custom_graphs(CustomGraphs& graphs);

// The least bytes every member of a `type` collective of `bytes` (comm_size, as the workload gives it) over n
// members must send and receive, whatever the algorithm: the bytes of its own data others need and of the
// others' data it needs (docs/custom_collectives.md, "Sizes"). nullopt: no custom key for this type.
struct ByteFloor {
  uint64_t send = 0;
  uint64_t recv = 0;
};
std::optional<ByteFloor> custom_byte_floor(CollectiveType type, uint64_t bytes, int32_t n);

}  // namespace fabemu::traces
