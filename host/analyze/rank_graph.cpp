#include "host/analyze/rank_graph.h"

#include <algorithm>
#include <utility>

namespace fabemu::analyze {

void RankGraph::add(const traces::Node& node) {
  if (!index_.emplace(node.id(), static_cast<uint32_t>(nodes_.size())).second) return;
  GraphNode g;
  g.id = node.id();
  g.type = node.type();
  g.duration_us = node.duration_micros();
  const bool comm = traces::is_comm(node.type());
  g.bytes = static_cast<uint64_t>(std::max<int64_t>(0, traces::attr_int(node, comm ? "comm_size" : "tensor_size")
                                                            .value_or(0)));
  if (keep_names_) g.name = node.name();
  g.data_deps.assign(node.data_deps().begin(), node.data_deps().end());
  g.ctrl_deps.assign(node.ctrl_deps().begin(), node.ctrl_deps().end());
  nodes_.push_back(std::move(g));
}

int64_t RankGraph::index_of(uint64_t id) const {
  const auto it = index_.find(id);
  return it == index_.end() ? -1 : static_cast<int64_t>(it->second);
}

Chain RankGraph::longest_chain() const {
  // Kahn's order over the edges between nodes present; best[i] = heaviest path ending at i.
  const size_t n = nodes_.size();
  std::vector<uint32_t> waiting(n, 0);
  std::vector<std::vector<uint32_t>> children(n);
  for (size_t i = 0; i < n; ++i) {
    for (const auto* deps : {&nodes_[i].data_deps, &nodes_[i].ctrl_deps}) {
      for (const uint64_t dep : *deps) {
        const int64_t p = index_of(dep);
        if (p < 0 || static_cast<size_t>(p) == i) continue;
        children[static_cast<size_t>(p)].push_back(static_cast<uint32_t>(i));
        ++waiting[i];
      }
    }
  }
  // The heaviest path ending just before each node, as (duration, nodes): among paths of equal duration (a trace
  // without durations: all of them) the one with the most nodes.
  std::vector<std::pair<uint64_t, uint64_t>> reach(n, {0, 0});
  std::vector<int64_t> from(n, -1);  // the node before it on that path
  std::vector<uint32_t> ready;
  for (size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push_back(static_cast<uint32_t>(i));
  }
  int64_t last = -1;
  std::pair<uint64_t, uint64_t> longest{0, 0};
  while (!ready.empty()) {
    const uint32_t i = ready.back();
    ready.pop_back();
    const std::pair<uint64_t, uint64_t> total{reach[i].first + nodes_[i].duration_us, reach[i].second + 1};
    if (total > longest) {
      last = i;
      longest = total;
    }
    for (const uint32_t c : children[i]) {
      if (total > reach[c]) {
        reach[c] = total;
        from[c] = i;
      }
      if (--waiting[c] == 0) ready.push_back(c);
    }
  }
  Chain chain;
  if (last < 0) return chain;
  chain.duration_us = longest.first;
  for (int64_t i = last; i >= 0; i = from[static_cast<size_t>(i)]) {
    chain.ids.push_back(nodes_[static_cast<size_t>(i)].id);
  }
  std::reverse(chain.ids.begin(), chain.ids.end());
  return chain;
}

RankGraph load_rank_graph(const std::string& path, int64_t rank, bool keep_names) {
  traces::TraceReader reader(path, rank);
  RankGraph graph(keep_names);
  traces::Node node;
  while (reader.next(node)) graph.add(node);
  return graph;
}

}  // namespace fabemu::analyze
