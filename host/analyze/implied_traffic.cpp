#include "host/analyze/implied_traffic.h"

#include <fmt/format.h>

#include <map>
#include <stdexcept>
#include <tuple>

#include "emulator/collective_plan.h"

namespace fabemu::analyze {
namespace {

// Collectives alike in everything that shapes their messages are expanded once and counted.
using ShapeKey = std::tuple<std::string, int, uint64_t, std::vector<bool>, bool>;  // group, type, bytes, dims, dims given

class Expander {
 public:
  Expander(const emu::NetworkConfig& network, const emu::SystemConfig& system, int64_t world, ImpliedTraffic& out)
      : system_(system), world_(world), network_(network), out_(out) {
    ctx_.system = &system_;
    default_grid_ = emu::default_group_grid(network, world, out_.warnings);
  }

  // Adds `times` copies of a collective of `bytes` per member over `ranks` (empty: all ranks).
  void add(const CollectiveInstance& I, const std::vector<int32_t>& ranks, uint64_t bytes, uint64_t times) {
    const bool all = ranks.size() == static_cast<size_t>(world_);
    const auto n = static_cast<int32_t>(ranks.size());
    const uint64_t payload = I.type == ChakraProtoMsg::BARRIER ? 0 : bytes;
    emu::plan_collective(emu::CollectiveRequest{I.type, n, all ? &default_grid_ : &grid_of(I.pg, ranks), &I.involved_dim},
                         ctx_, plan_, out_.warnings);
    note_algorithms(I.type);
    const uint32_t chunks = emu::collective_chunks(I.type, bytes, system_.preferred_dataset_splits);
    for (uint32_t c = 0; c < chunks; ++c) {
      for (const emu::Phase& P : plan_.phases) {
        const emu::PhaseSchedule S = emu::phase_schedule(P, emu::chunk_share(payload, chunks, c), c);
        for (int32_t m = 0; m < n; ++m) add_member_sends(P, S, m, ranks, times);
      }
    }
  }

 private:
  void add_member_sends(const emu::Phase& P, const emu::PhaseSchedule& S, int32_t m, const std::vector<int32_t>& ranks,
                        uint64_t times) {
    const int32_t x = emu::phase_index(P, m);
    for (uint32_t s = 0; s < S.steps(); ++s) {
      const uint32_t sends = S.num_sends(x, s);
      for (uint32_t k = 0; k < sends; ++k) {
        const emu::ScheduledSend sd = S.send(x, s, k);
        const int32_t peer = emu::phase_member(P, m, sd.peer);
        TrafficCell& cell = out_.matrix[{ranks[static_cast<size_t>(m)], ranks[static_cast<size_t>(peer)]}];
        cell.bytes += sd.bytes * times;
        cell.messages += times;
      }
    }
  }

  // A smaller group's grid, computed once per group.
  const emu::MemberGrid& grid_of(const std::string& group, const std::vector<int32_t>& ranks) {
    auto it = grids_.find(group);
    if (it == grids_.end()) {
      const std::vector<int64_t> wide(ranks.begin(), ranks.end());
      it = grids_.emplace(group, emu::group_grid(network_, group, wide, out_.warnings)).first;
    }
    return it->second;
  }

  void note_algorithms(traces::CollectiveType type) {
    std::string algos;
    for (const auto& P : plan_.phases) algos += (algos.empty() ? "" : "+") + std::string(emu::algo_name(P.algo));
    algorithms_.emplace(traces::collective_name(type), algos);
    out_.algorithms.clear();
    for (const auto& [name, a] : algorithms_) out_.algorithms += (out_.algorithms.empty() ? "" : "; ") + name + ": " + a;
  }

  const emu::SystemConfig& system_;
  int64_t world_;
  const emu::NetworkConfig& network_;
  emu::PlanContext ctx_;
  emu::MemberGrid default_grid_;
  std::map<std::string, emu::MemberGrid> grids_;
  emu::CollectivePlan plan_;
  std::map<std::string, std::string> algorithms_;
  ImpliedTraffic& out_;
};

}  // namespace

ImpliedTraffic implied_traffic(const TraceAnalysis& analysis, const emu::NetworkConfig& network,
                               const emu::SystemConfig& system) {
  const auto world = static_cast<int64_t>(analysis.ranks.size());
  if (world > network.total_npus()) {
    throw std::invalid_argument(fmt::format("the workload has {} ranks but the network ({}) has only {} NPUs", world,
                                            network.source.empty() ? "network" : network.source, network.total_npus()));
  }
  // A collective's messages depend on its group's ranks, type, typical size and dimensions: count the alike.
  std::map<ShapeKey, std::pair<const CollectiveInstance*, uint64_t>> shapes;
  for (const auto& I : analysis.collectives) {
    if (I.mixed_types || I.members.size() != I.group_size) continue;  // `run` would stop at it
    ShapeKey key{I.pg, static_cast<int>(I.type), I.typical_bytes, I.involved_dim.value_or(std::vector<bool>{}),
                 I.involved_dim.has_value()};
    auto& [first, count] = shapes[key];
    if (first == nullptr) first = &I;
    ++count;
  }
  ImpliedTraffic out;
  Expander expander(network, system, world, out);
  for (const auto& [key, shape] : shapes) {
    const auto& [I, count] = shape;
    std::vector<int32_t> ranks;
    for (const auto& m : I->members) ranks.push_back(m.rank);
    expander.add(*I, ranks, I->typical_bytes, count);
  }
  return out;
}

}  // namespace fabemu::analyze
