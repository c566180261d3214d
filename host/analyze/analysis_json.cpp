// `fabemu trace analyze --json`: docs/trace.md documents every field.
#include <algorithm>

#include "host/analyze/analysis_output.h"

namespace fabemu::analyze {
namespace {

using nlohmann::json;

// Node ids of a chain written at most (the count is always whole).
constexpr size_t kChainIdsListed = 1000;

json spread_json(const Spread& s, const TraceAnalysis& a) {
  return {{"min", s.min}, {"max", s.max}, {"mean", s.mean}, {"cv", s.cv},
          {"max_rank", s.max_rank >= 0 ? json(a.ranks[static_cast<size_t>(s.max_rank)].rank) : json(nullptr)}};
}

json member_json(const CollectiveMember& m) { return {{"rank", m.rank}, {"node_id", m.node_id}, {"bytes", m.bytes}}; }

json instance_json(const CollectiveInstance& I, const TraceAnalysis& a, bool detail) {
  json j = {{"pg_name", I.pg},
            {"seq", I.seq},
            {"type", traces::collective_name(I.type)},
            {"name", I.name},
            {"first_node_id", I.members.empty() ? json(nullptr) : json(I.members.front().node_id)},
            {"group_size", I.group_size},
            {"members", I.members.size()},
            {"typical_bytes", I.typical_bytes},
            {"min_bytes", I.bytes.min},
            {"max_bytes", I.bytes.max},
            {"mean_bytes", I.bytes.mean},
            {"max_over_mean", I.max_over_mean()},
            {"cv", I.bytes.cv},
            {"balanced", I.balanced()}};
  if (!detail) return j;
  j["mixed_types"] = I.mixed_types;
  j["deviating"] = json::array();
  for (const auto& m : I.deviating) j["deviating"].push_back(member_json(m));
  j["missing_ranks"] = missing_ranks(I, a);
  j["bytes_per_rank"] = json::array();
  for (const auto& m : I.members) j["bytes_per_rank"].push_back(member_json(m));
  return j;
}

json summary_json(const CollectiveSummary& s, const TraceAnalysis& a, bool group) {
  json j = {{group ? "pg_name" : "type", s.key},
            {"instances", s.instances},
            {"imbalanced", s.imbalanced},
            {"bytes", s.bytes},
            {"worst_cv", s.worst_cv}};
  if (group) j["ranks"] = a.group_ranks.count(s.key) != 0 ? a.group_ranks.at(s.key) : std::vector<int64_t>{};
  if (s.worst_instance >= 0) {
    const auto& I = a.collectives[static_cast<size_t>(s.worst_instance)];
    j["worst_instance"] = {{"pg_name", I.pg}, {"seq", I.seq}};
  }
  return j;
}

json matrix_json(const TrafficMatrix& m) {
  uint64_t bytes = 0, messages = 0;
  json cells = json::array();
  for (const auto& [pair, cell] : m) {
    bytes += cell.bytes;
    messages += cell.messages;
    cells.push_back({{"src", pair.first}, {"dst", pair.second}, {"bytes", cell.bytes}, {"messages", cell.messages}});
  }
  return {{"messages", messages}, {"bytes", bytes}, {"pairs", m.size()}, {"cells", cells}};
}

json rank_json(const RankAnalysis& r) {
  const size_t listed = std::min(r.chain_ids.size(), kChainIdsListed);
  return {{"rank", r.rank},
          {"file", r.path},
          {"nodes", r.nodes},
          {"comp_nodes", r.comp_nodes},
          {"compute_us", r.compute_us},
          {"num_ops", r.num_ops},
          {"tensor_bytes", r.tensor_bytes},
          {"collective_bytes", r.collective_bytes},
          {"sends", r.sends},
          {"send_bytes", r.send_bytes},
          {"recvs", r.recvs},
          {"recv_bytes", r.recv_bytes},
          {"chain_us", r.chain_us},
          {"chain_nodes", r.chain_ids.size()},
          {"chain_ids", std::vector<uint64_t>(r.chain_ids.begin(), r.chain_ids.begin() + static_cast<long>(listed))}};
}

}  // namespace

json analysis_json(const TraceAnalysis& a, const AnalysisInputs& inputs) {
  json instances = json::array(), imbalanced = json::array(), groups = json::array(), types = json::array(),
       ranks = json::array();
  for (const auto& I : a.collectives) instances.push_back(instance_json(I, a, false));
  for (const size_t i : a.worst_first) imbalanced.push_back(instance_json(a.collectives[i], a, true));
  for (const auto& s : a.by_group) groups.push_back(summary_json(s, a, true));
  for (const auto& s : a.by_type) types.push_back(summary_json(s, a, false));
  for (const auto& r : a.ranks) ranks.push_back(rank_json(r));
  json implied = nullptr;
  if (inputs.implied != nullptr) {
    implied = matrix_json(inputs.implied->matrix);
    implied["network"] = inputs.network;
    implied["algorithms"] = inputs.implied->algorithms;
    implied["warnings"] = inputs.implied->warnings;
  }
  return {{"prefix", a.prefix},
          {"ranks", a.ranks.size()},
          {"collectives",
           {{"instances", a.collectives.size()},
            {"imbalanced", a.worst_first.size()},
            {"unmatched_nodes", a.untyped_collectives}}},
          {"imbalanced", imbalanced},
          {"by_group", groups},
          {"by_type", types},
          {"instances", instances},
          {"p2p", matrix_json(a.p2p)},
          {"collective_traffic", implied},
          {"spread",
           {{"compute_us", spread_json(a.compute_us, a)},
            {"num_ops", spread_json(a.num_ops, a)},
            {"tensor_bytes", spread_json(a.tensor_bytes, a)},
            {"collective_bytes", spread_json(a.collective_bytes, a)},
            {"chain_us", spread_json(a.chain_us, a)}}},
          {"per_rank", ranks}};
}

}  // namespace fabemu::analyze
