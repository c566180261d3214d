// `fabemu trace graph`: a window of one rank's dependency graph as Graphviz DOT, nodes coloured by type and
// labelled with name and size or duration, data_deps solid and ctrl_deps dashed, the rank's longest chain
// (by duration) drawn thick. Bounded: a window of more than max_nodes nodes is refused with a message
// saying how to choose a smaller one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "host/analyze/rank_graph.h"

namespace fabemu::analyze {

struct GraphWindow {
  std::optional<std::pair<uint64_t, uint64_t>> id_range;  // --nodes A..B: node ids A to B, inclusive
  std::optional<uint64_t> around;                         // --around ID: the node and its neighbourhood
  uint32_t depth = 2;                                     // --depth K: edges away from `around`, either way
  size_t max_nodes = 500;                                 // the limit on a picture
};

struct GraphDot {
  std::string dot;
  size_t nodes = 0;  // drawn
  size_t edges = 0;  // drawn (both ends in the window)
  size_t chain_nodes_drawn = 0;
};

// "A..B" -> {A, B}; std::invalid_argument on anything else or A > B.
std::pair<uint64_t, uint64_t> parse_id_range(const std::string& text);

// `where` names the rank's file in errors. Throws std::invalid_argument for a window that selects nothing, an id
// the rank does not have, or more than max_nodes nodes.
GraphDot graph_dot(const RankGraph& graph, int64_t rank, const std::string& where, const GraphWindow& window);

}  // namespace fabemu::analyze
