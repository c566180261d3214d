#include "emulator/custom_collective.h"

#include <fmt/format.h>

#include <unordered_map>

#include "traces/error.h"

namespace fabemu::emu {

namespace {

constexpr const char* kKeys[] = {"all-reduce-implementation-custom", "all-gather-implementation-custom",
                                 "reduce-scatter-implementation-custom", "all-to-all-implementation-custom"};

bool is_xml(const std::string& source) { return source.size() > 4 && source.ends_with(".xml"); }

CustomMember compile(const traces::CustomGraph& g) {
  CustomMember m;
  m.graph = &g;
  const size_t n = g.nodes.size();
  std::unordered_map<uint64_t, uint32_t> index;
  for (size_t i = 0; i < n; ++i) index.emplace(g.nodes[i].id(), static_cast<uint32_t>(i));
  m.parents.assign(n, 0);
  std::vector<uint32_t> count(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    for (const auto* deps : {&g.nodes[i].data_deps(), &g.nodes[i].ctrl_deps()}) {
      for (const uint64_t d : *deps) {
        ++count[index.at(d)];
        ++m.parents[i];
      }
    }
  }
  m.child_begin.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) m.child_begin[i + 1] = m.child_begin[i] + count[i];
  m.children.assign(m.child_begin[n], 0);
  std::vector<uint32_t> fill(m.child_begin.begin(), m.child_begin.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    for (const auto* deps : {&g.nodes[i].data_deps(), &g.nodes[i].ctrl_deps()}) {
      for (const uint64_t d : *deps) m.children[fill[index.at(d)]++] = static_cast<uint32_t>(i);
    }
    if (m.parents[i] == 0) m.roots.push_back(static_cast<uint32_t>(i));
  }
  return m;
}

}  // namespace

CustomCollectives::CustomCollectives(const SystemConfig& system)
    : source_{system.all_reduce_custom, system.all_gather_custom, system.reduce_scatter_custom,
              system.all_to_all_custom} {}

int CustomCollectives::slot_of(traces::CollectiveType type) {
  switch (type) {
    case ChakraProtoMsg::ALL_REDUCE: return 0;
    case ChakraProtoMsg::ALL_GATHER: return 1;
    case ChakraProtoMsg::REDUCE_SCATTER: return 2;
    case ChakraProtoMsg::ALL_TO_ALL: return 3;
    default: return -1;
  }
}

const CustomAlgorithm* CustomCollectives::find(traces::CollectiveType type, int32_t n, uint64_t bytes,
                                               const std::string& issued_at) {
  const int slot = slot_of(type);
  if (slot < 0 || source_[static_cast<size_t>(slot)].empty()) return nullptr;
  const bool xml = is_xml(source_[static_cast<size_t>(slot)]);
  const auto key = std::make_tuple(slot, n, xml ? bytes : 0);
  auto it = cache_.find(key);
  if (it == cache_.end()) it = cache_.emplace(key, load(slot, n, bytes)).first;
  if (checked_.emplace(slot, n, bytes).second) check_floor(*it->second, type, n, bytes, issued_at);
  return it->second.get();
}

std::unique_ptr<CustomAlgorithm> CustomCollectives::load(int slot, int32_t n, uint64_t bytes) {
  const std::string& source = source_[static_cast<size_t>(slot)];
  auto a = std::make_unique<CustomAlgorithm>();
  a->source = source;
  if (is_xml(source)) {
    auto& xml = xml_[static_cast<size_t>(slot)];
    if (!xml) xml = std::make_unique<traces::MscclAlgo>(traces::read_msccl_xml(source));
    const auto coll = traces::msccl_collective(*xml);
    if (coll != std::array{ChakraProtoMsg::ALL_REDUCE, ChakraProtoMsg::ALL_GATHER, ChakraProtoMsg::REDUCE_SCATTER,
                           ChakraProtoMsg::ALL_TO_ALL}[static_cast<size_t>(slot)]) {
      throw traces::TraceError({.file = source, .line = 1},
                               fmt::format("element <algo>: coll=\"{}\", but the file is named by \"{}\"", xml->coll,
                                           kKeys[slot]));
    }
    if (xml->ngpus != n) {
      throw traces::TraceError({.file = source, .line = 1},
                               fmt::format("element <algo>: ngpus=\"{}\", but the collective's group has {} members: "
                                           "the algorithm must be for the group's size",
                                           xml->ngpus, n));
    }
    a->graphs = traces::msccl_to_graphs(*xml, bytes);
  } else {
    a->graphs = traces::read_custom_graphs(source, n);
    traces::check_custom_graphs(a->graphs);
  }
  for (const auto& g : a->graphs) a->members.push_back(compile(g));
  return a;
}

void CustomCollectives::check_floor(const CustomAlgorithm& a, traces::CollectiveType type, int32_t n, uint64_t bytes,
                                    const std::string& issued_at) const {
  const auto floor = traces::custom_byte_floor(type, bytes, n);
  for (size_t p = 0; p < a.graphs.size(); ++p) {
    const traces::CustomGraph& g = a.graphs[p];
    if (g.sent >= floor->send && g.received >= floor->recv) continue;
    const bool send = g.sent < floor->send;
    throw traces::TraceError(
        {.file = g.path, .rank = static_cast<int64_t>(p)},
        fmt::format("its graph {} {} bytes, but in a {} of {} bytes over {} members ({}) every member must {} at "
                    "least {} (docs/custom_collectives.md, \"Sizes\"): is the implementation for a smaller collective?",
                    send ? "sends" : "receives", send ? g.sent : g.received, traces::collective_name(type), bytes, n,
                    issued_at, send ? "send" : "receive", send ? floor->send : floor->recv));
  }
}

}  // namespace fabemu::emu
