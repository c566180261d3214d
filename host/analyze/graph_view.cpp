#include "host/analyze/graph_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <deque>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include "traces/info.h"

namespace fabemu::analyze {
namespace {

// Fill colours by node type (Okabe-Ito), and the longest chain's.
const char* type_colour(traces::NodeType type) {
  switch (type) {
    case ChakraProtoMsg::COMP_NODE: return "#9ecae1";
    case ChakraProtoMsg::COMM_COLL_NODE: return "#E69F00";
    case ChakraProtoMsg::COMM_SEND_NODE: return "#56B4E9";
    case ChakraProtoMsg::COMM_RECV_NODE: return "#009E73";
    case ChakraProtoMsg::MEM_LOAD_NODE:
    case ChakraProtoMsg::MEM_STORE_NODE: return "#CC79A7";
    default: return "#d9d9d9";
  }
}
constexpr const char* kChainColour = "#D55E00";

std::string dot_escape(std::string_view text, size_t max_chars) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max_chars; ++i) {
    const char c = text[i];
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n' || c == '\r') {
      out += ' ';
      continue;
    }
    out += c;
  }
  if (text.size() > max_chars) out += "...";
  return out;
}

std::string node_label(const GraphNode& n) {
  std::string what = traces::node_type_name(n.type);
  if (what.ends_with("_NODE")) what.resize(what.size() - 5);
  std::string size;
  if (traces::is_comm(n.type)) size = traces::format_bytes(n.bytes);
  if (n.duration_us != 0 || n.type == ChakraProtoMsg::COMP_NODE) {
    size += fmt::format("{}{} us", size.empty() ? "" : ", ", n.duration_us);
  }
  return fmt::format("#{} {}\\n{}{}", n.id, what, dot_escape(n.name, 40), size.empty() ? "" : "\\n" + size);
}

std::vector<size_t> select_nodes(const RankGraph& graph, int64_t rank, const std::string& where,
                                 const GraphWindow& w) {
  const auto& nodes = graph.nodes();
  std::vector<size_t> picked;
  if (w.id_range) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].id >= w.id_range->first && nodes[i].id <= w.id_range->second) picked.push_back(i);
    }
    if (picked.empty()) {
      throw std::invalid_argument(fmt::format("{}: rank {} has no node with an id in {}..{}", where, rank,
                                              w.id_range->first, w.id_range->second));
    }
    return picked;
  }
  if (!w.around) {
    for (size_t i = 0; i < nodes.size(); ++i) picked.push_back(i);
    return picked;
  }
  const int64_t start = graph.index_of(*w.around);
  if (start < 0) throw std::invalid_argument(fmt::format("{}: rank {} has no node id {}", where, rank, *w.around));
  // Breadth first over edges either way: the node's ancestors and descendants up to `depth` edges.
  std::vector<std::vector<size_t>> children(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto* deps : {&nodes[i].data_deps, &nodes[i].ctrl_deps}) {
      for (const uint64_t d : *deps) {
        if (const int64_t p = graph.index_of(d); p >= 0) children[static_cast<size_t>(p)].push_back(i);
      }
    }
  }
  std::vector<uint32_t> dist(nodes.size(), UINT32_MAX);
  std::deque<size_t> queue{static_cast<size_t>(start)};
  dist[static_cast<size_t>(start)] = 0;
  while (!queue.empty()) {
    const size_t i = queue.front();
    queue.pop_front();
    picked.push_back(i);
    if (dist[i] == w.depth) continue;
    auto visit = [&](size_t j) {
      if (dist[j] != UINT32_MAX) return;
      dist[j] = dist[i] + 1;
      queue.push_back(j);
    };
    for (const size_t c : children[i]) visit(c);
    for (const auto* deps : {&nodes[i].data_deps, &nodes[i].ctrl_deps}) {
      for (const uint64_t d : *deps) {
        if (const int64_t p = graph.index_of(d); p >= 0) visit(static_cast<size_t>(p));
      }
    }
  }
  std::sort(picked.begin(), picked.end());
  return picked;
}

}  // namespace

std::pair<uint64_t, uint64_t> parse_id_range(const std::string& text) {
  const auto dots = text.find("..");
  uint64_t lo = 0, hi = 0;
  const auto parse = [](std::string_view s, uint64_t& v) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size() && !s.empty();
  };
  if (dots == std::string::npos || !parse(std::string_view(text).substr(0, dots), lo) ||
      !parse(std::string_view(text).substr(dots + 2), hi)) {
    throw std::invalid_argument(fmt::format("--nodes {}: expected a range of node ids A..B, e.g. 0..200", text));
  }
  if (lo > hi) throw std::invalid_argument(fmt::format("--nodes {}: the range is empty ({} > {})", text, lo, hi));
  return {lo, hi};
}

GraphDot graph_dot(const RankGraph& graph, int64_t rank, const std::string& where, const GraphWindow& window) {
  const std::vector<size_t> picked = select_nodes(graph, rank, where, window);
  if (picked.size() > window.max_nodes) {
    throw std::invalid_argument(fmt::format(
        "{}: rank {}: {} nodes to draw, more than the limit of {} (a picture that large is unreadable): choose a "
        "window with --nodes A..B (node ids) or --around ID --depth K, or raise --max-nodes",
        where, rank, picked.size(), window.max_nodes));
  }
  const auto& nodes = graph.nodes();
  const Chain chain = graph.longest_chain();
  std::unordered_set<uint64_t> on_chain(chain.ids.begin(), chain.ids.end());
  std::unordered_set<uint64_t> drawn;
  for (const size_t i : picked) drawn.insert(nodes[i].id);
  GraphDot out;
  std::string& dot = out.dot;
  dot += fmt::format("digraph \"rank {}\" {{\n  rankdir=TB;\n  labelloc=t;\n", rank);
  dot += fmt::format("  label=\"{}: rank {}: {} of {} nodes. Solid: data_deps, dashed: ctrl_deps; thick red: the "
                     "longest dependency chain ({} us over {} nodes)\";\n",
                     dot_escape(where, 200), rank, picked.size(), nodes.size(), chain.duration_us, chain.ids.size());
  dot += "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
         "  edge [arrowsize=0.6];\n";
  for (const size_t i : picked) {
    const GraphNode& n = nodes[i];
    const bool chained = on_chain.count(n.id) != 0;
    out.chain_nodes_drawn += chained ? 1 : 0;
    dot += fmt::format("  n{} [label=\"{}\", fillcolor=\"{}\"{}];\n", n.id, node_label(n), type_colour(n.type),
                       chained ? fmt::format(", color=\"{}\", penwidth=3", kChainColour) : "");
  }
  // The chain's consecutive pairs, to draw the edges between them thick.
  std::set<std::pair<uint64_t, uint64_t>> chain_edge;  // (from, to)
  for (size_t k = 1; k < chain.ids.size(); ++k) chain_edge.emplace(chain.ids[k - 1], chain.ids[k]);
  for (const size_t i : picked) {
    const GraphNode& n = nodes[i];
    for (const bool ctrl : {false, true}) {
      for (const uint64_t d : ctrl ? n.ctrl_deps : n.data_deps) {
        if (drawn.count(d) == 0 || d == n.id) continue;
        const bool thick = chain_edge.count({d, n.id}) != 0;
        dot += fmt::format("  n{} -> n{}{};\n", d, n.id,
                           ctrl ? (thick ? fmt::format(" [style=dashed, color=\"{}\", penwidth=3]", kChainColour)
                                         : std::string(" [style=dashed, color=\"#777777\"]"))
                                : (thick ? fmt::format(" [color=\"{}\", penwidth=3]", kChainColour) : std::string()));
        ++out.edges;
      }
    }
  }
  dot += "}\n";
  out.nodes = picked.size();
  return out;
}

}  // namespace fabemu::analyze
