#include "traces/custom_graph.h"

#include <fmt/format.h>

#include <deque>
#include <filesystem>
#include <map>
#include <tuple>
#include <unordered_map>

#include "traces/error.h"
#include "traces/trace_set.h"

namespace fabemu::traces {

namespace {

namespace fs = std::filesystem;

Location at(const CustomGraph& g, size_t position, const Node& node) {
  return Location{.file = g.path, .rank = static_cast<int64_t>(position), .node_id = node.id()};
}

bool exists(const std::string& prefix, int64_t rank) {
  return fs::is_regular_file(rank_file_path(prefix, rank)) || fs::is_regular_file(rank_file_path(prefix, rank, true));
}

// The peer position of a SEND (comm_dst) or RECV (comm_src): present, in 0..n-1, not its own.
int64_t peer_of(const CustomGraph& g, size_t position, const Node& node, size_t n) {
  const bool send = node.type() == ChakraProtoMsg::COMM_SEND_NODE;
  const auto info = comm_info(node);
  const auto peer = send ? info.dst : info.src;
  const char* key = send ? "comm_dst" : "comm_src";
  if (!peer) throw TraceError(at(g, position, node), fmt::format("{} without {}", send ? "SEND" : "RECV", key));
  if (*peer < 0 || *peer >= static_cast<int64_t>(n) || *peer == static_cast<int64_t>(position)) {
    throw TraceError(at(g, position, node),
                     fmt::format("{} {}: expected a member position in 0..{} other than this file's own ({}): the "
                                 "custom implementation has one file per member of the collective's group",
                                 key, *peer, n - 1, position));
  }
  if (!info.size) throw TraceError(at(g, position, node), fmt::format("{} without comm_size", send ? "SEND" : "RECV"));
  return *peer;
}

// Unique ids, dependencies inside the graph, no cycle (Kahn's order reaches every node).
void check_dependencies(const CustomGraph& g, size_t position) {
  std::unordered_map<uint64_t, size_t> index;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!index.emplace(g.nodes[i].id(), i).second) {
      throw TraceError(at(g, position, g.nodes[i]), "a second node with this id");
    }
  }
  std::vector<std::vector<size_t>> children(g.nodes.size());
  std::vector<size_t> parents(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    for (const auto* deps : {&node.data_deps(), &node.ctrl_deps()}) {
      for (const uint64_t d : *deps) {
        const auto it = index.find(d);
        if (it == index.end()) {
          throw TraceError(at(g, position, node), fmt::format("depends on node {}, which is not in this file", d));
        }
        children[it->second].push_back(i);
        ++parents[i];
      }
    }
  }
  std::deque<size_t> ready;
  for (size_t i = 0; i < parents.size(); ++i) {
    if (parents[i] == 0) ready.push_back(i);
  }
  size_t seen = 0;
  for (; !ready.empty(); ready.pop_front(), ++seen) {
    for (const size_t c : children[ready.front()]) {
      if (--parents[c] == 0) ready.push_back(c);
    }
  }
  if (seen == g.nodes.size()) return;
  for (size_t i = 0; i < parents.size(); ++i) {
    if (parents[i] > 0) {
      throw TraceError(at(g, position, g.nodes[i]), "is on a dependency cycle (or depends on one)");
    }
  }
}

struct Transfer {
  size_t position;
  const Node* node;
  uint64_t bytes;
};
using PairKey = std::tuple<int64_t, int64_t, int64_t>;  // src, dst, tag

void check_pairs(const CustomGraphs& graphs, const std::map<PairKey, std::vector<Transfer>>& sends,
                 std::map<PairKey, std::vector<Transfer>>& recvs) {
  for (const auto& [key, ss] : sends) {
    const auto& rs = recvs[key];
    for (size_t k = 0; k < ss.size(); ++k) {
      const Transfer& s = ss[k];
      if (k >= rs.size()) {
        throw TraceError(at(graphs[s.position], s.position, *s.node),
                         fmt::format("SEND #{} to position {} tag {} ({} bytes) has no RECV in {}: every SEND needs "
                                     "its RECV (src, dst, tag, size)",
                                     k, std::get<1>(key), std::get<2>(key), s.bytes, graphs[std::get<1>(key)].path));
      }
      const Transfer& r = rs[k];
      if (r.bytes != s.bytes) {
        throw TraceError(at(graphs[r.position], r.position, *r.node),
                         fmt::format("RECV #{} from position {} tag {} is of {} bytes, but the SEND it matches (node "
                                     "{} of {}) sends {}",
                                     k, std::get<0>(key), std::get<2>(key), r.bytes, s.node->id(),
                                     graphs[s.position].path, s.bytes));
      }
    }
  }
  for (const auto& [key, rs] : recvs) {
    const auto it = sends.find(key);
    const size_t matched = it == sends.end() ? 0 : it->second.size();
    if (rs.size() > matched) {
      const Transfer& r = rs[matched];
      throw TraceError(at(graphs[r.position], r.position, *r.node),
                       fmt::format("RECV from position {} tag {} ({} bytes) has no SEND in {}", std::get<0>(key),
                                   std::get<2>(key), r.bytes, graphs[std::get<0>(key)].path));
    }
  }
}

// floor(bytes * parts / n), saturated at 2^64 - 1.
uint64_t share(uint64_t bytes, int32_t n, int32_t parts) {
  const auto un = static_cast<uint64_t>(n);
  const auto up = static_cast<uint64_t>(parts);
  const uint64_t whole = bytes / un;
  if (up != 0 && whole > ~uint64_t{0} / up) return ~uint64_t{0};
  return whole * up + (bytes % un) * up / un;
}

}  // namespace

CustomGraphs read_custom_graphs(const std::string& prefix, int32_t n) {
  if (n < 1 || n > kMaxCustomMembers) {
    throw TraceError({.file = prefix}, fmt::format("a group of {} members: expected 1 to {}", n, kMaxCustomMembers));
  }
  CustomGraphs graphs(static_cast<size_t>(n));
  for (int32_t p = 0; p < n; ++p) {
    std::string path = rank_file_path(prefix, p);
    if (!fs::is_regular_file(path)) path = rank_file_path(prefix, p, true);
    if (!fs::is_regular_file(path)) {
      throw TraceError({.file = rank_file_path(prefix, p), .rank = p},
                       fmt::format("no such file: the custom implementation {} needs one file per member of the "
                                   "collective's group ({} members: {}.0.et to {}.{}.et)",
                                   prefix, n, prefix, prefix, n - 1));
    }
    CustomGraph& g = graphs[static_cast<size_t>(p)];
    g.path = path;
    TraceReader reader(path, p);
    Node node;
    while (reader.next(node)) {
      if (g.nodes.size() == kMaxCustomNodes) {
        throw TraceError({.file = path, .rank = p}, fmt::format("more than {} nodes in a custom implementation's file",
                                                                kMaxCustomNodes));
      }
      g.nodes.push_back(node);
    }
  }
  if (exists(prefix, n)) {
    throw TraceError({.file = rank_file_path(prefix, n), .rank = n},
                     fmt::format("the custom implementation {} has files for more members than the collective's group "
                                 "has ({}): one file per member, {}.0.et to {}.{}.et",
                                 prefix, n, prefix, prefix, n - 1));
  }
  return graphs;
}

void check_custom_graphs(CustomGraphs& graphs) {
  const size_t n = graphs.size();
  std::map<PairKey, std::vector<Transfer>> sends, recvs;
  for (size_t p = 0; p < n; ++p) {
    CustomGraph& g = graphs[p];
    g.sent = g.received = 0;
    check_dependencies(g, p);
    for (const Node& node : g.nodes) {
      switch (node.type()) {
        case ChakraProtoMsg::COMM_SEND_NODE:
        case ChakraProtoMsg::COMM_RECV_NODE: {
          const int64_t peer = peer_of(g, p, node, n);
          const auto info = comm_info(node);
          const uint64_t bytes = *info.size;
          const int64_t self = static_cast<int64_t>(p);
          if (node.type() == ChakraProtoMsg::COMM_SEND_NODE) {
            g.sent += bytes;
            sends[{self, peer, info.tag.value_or(0)}].push_back({p, &node, bytes});
          } else {
            g.received += bytes;
            recvs[{peer, self, info.tag.value_or(0)}].push_back({p, &node, bytes});
          }
          break;
        }
        case ChakraProtoMsg::COMP_NODE:
        case ChakraProtoMsg::METADATA_NODE:
          break;
        default:
          throw TraceError(at(g, p, node),
                           fmt::format("a {} in a custom collective implementation: expected SEND, RECV and COMP "
                                       "nodes only (the graph is the collective's algorithm)",
                                       node_type_name(node.type())));
      }
    }
  }
  check_pairs(graphs, sends, recvs);
}

std::optional<ByteFloor> custom_byte_floor(CollectiveType type, uint64_t bytes, int32_t n) {
  if (n < 2) return ByteFloor{};
  switch (type) {
    case ChakraProtoMsg::ALL_REDUCE:  // every element of each member leaves it and reaches it reduced
      return ByteFloor{bytes, bytes};
    case ChakraProtoMsg::REDUCE_SCATTER:  // the n-1 shares others own leave; its own share comes in
      return ByteFloor{share(bytes, n, n - 1), share(bytes, n, 1)};
    case ChakraProtoMsg::ALL_GATHER:  // comm_size is each member's input: it leaves, the n-1 others come in
      return ByteFloor{bytes, share(bytes, 1, n - 1)};
    case ChakraProtoMsg::ALL_TO_ALL:  // the n-1 shares for others leave, the n-1 shares from others come in
      return ByteFloor{share(bytes, n, n - 1), share(bytes, n, n - 1)};
    default:
      return std::nullopt;
  }
}

}  // namespace fabemu::traces
