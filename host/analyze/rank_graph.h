// One rank's dependency graph held in memory (ids, types, sizes, durations, data and control edges), and its
// longest dependency chain by duration: what `fabemu trace analyze` and `fabemu trace graph` look at.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "traces/attrs.h"
#include "traces/reader.h"

namespace fabemu::analyze {

struct GraphNode {
  uint64_t id = 0;
  traces::NodeType type = ChakraProtoMsg::INVALID_NODE;
  uint64_t duration_us = 0;  // duration_micros
  uint64_t bytes = 0;        // comm_size (communication nodes) or tensor_size (compute)
  std::string name;          // kept only when the graph is built with names
  std::vector<uint64_t> data_deps;
  std::vector<uint64_t> ctrl_deps;
};

// The longest path through the graph where a path weighs the duration_micros of its nodes (ties: the most nodes).
struct Chain {
  uint64_t duration_us = 0;
  std::vector<uint64_t> ids;  // first to last
};

class RankGraph {
 public:
  explicit RankGraph(bool keep_names) : keep_names_(keep_names) {}
  // Adds a node as read (file order). A repeated id keeps its first node (trace validate reports it).
  void add(const traces::Node& node);
  const std::vector<GraphNode>& nodes() const { return nodes_; }
  // Index of the node with `id` in nodes(), or -1.
  int64_t index_of(uint64_t id) const;
  // Dependencies on ids absent from the graph are left out (as the resolver treats them: satisfied); nodes
  // on a dependency cycle are on no chain.
  Chain longest_chain() const;

 private:
  bool keep_names_;
  std::vector<GraphNode> nodes_;
  std::unordered_map<uint64_t, uint32_t> index_;
};

// Reads a whole rank file into a graph (TraceError naming the file and node on bad input).
RankGraph load_rank_graph(const std::string& path, int64_t rank, bool keep_names);

}  // namespace fabemu::analyze
