#include "emulator/collective_plan.h"

#include <fmt/format.h>

#include <algorithm>

namespace fabemu::emu {

using traces::CollectiveType;

namespace {

const std::vector<CollectiveImpl>& impls(const SystemConfig& s, PhaseOp op) {
  switch (op) {
    case PhaseOp::kAllGather:
    case PhaseOp::kGather:
    case PhaseOp::kScatter: return s.all_gather;
    case PhaseOp::kReduceScatter: return s.reduce_scatter;
    case PhaseOp::kAllToAll: return s.all_to_all;
    default: return s.all_reduce;
  }
}

bool hierarchical_op(PhaseOp op) {
  return op == PhaseOp::kAllReduce || op == PhaseOp::kReduceScatter || op == PhaseOp::kAllGather ||
         op == PhaseOp::kAllToAll;
}

// Appends phases to one plan, noting why an algorithm asked for is not the one run.
class PhaseList {
 public:
  PhaseList(CollectivePlan& out, bool closed_form, std::set<std::string>& warnings)
      : out_(out), closed_form_(closed_form), warnings_(warnings) {
    out_.phases.clear();
    out_.total_steps = 0;
  }

  void add(PhaseOp op, CollectiveAlgo algo, int32_t dim, int32_t n, int32_t stride, uint64_t mul, uint64_t div) {
    std::string why;
    PhaseSchedule::resolve_algo(op, algo, n, &why);
    if (!why.empty()) warnings_.insert(fmt::format("{} over {} ranks: {}", phase_op_name(op), n, why));
    const PhaseSchedule s(op, algo, n, 0);
    const bool cf = closed_form_ && s.step_synchronous() && hierarchical_op(op);
    out_.phases.push_back(Phase{op, s.algo(), dim, n, stride, mul, div, out_.total_steps, s.steps(), cf});
    out_.total_steps += s.steps();
  }

 private:
  CollectivePlan& out_;
  bool closed_form_;
  std::set<std::string>& warnings_;
};

// The dimensions a collective on a grid of members runs over, in the order of its phases.
std::vector<int32_t> hierarchical_dims(const CollectiveRequest& c, PhaseOp op, const std::vector<CollectiveImpl>& list) {
  std::vector<int32_t> dims;
  const bool one_for_all = !list.empty() && list.front().all_dims;
  if (c.grid == nullptr || !hierarchical_op(op) || c.grid->span.empty() || one_for_all) return dims;
  const std::vector<int32_t>& span = c.grid->span;
  const auto* involved = c.involved_dim != nullptr && c.involved_dim->has_value() ? &**c.involved_dim : nullptr;
  for (size_t d = 0; d < span.size(); ++d) {
    const bool is_involved = involved == nullptr || (d < involved->size() && (*involved)[d]);
    const bool configured = list.empty() || d < list.size();
    if (is_involved && configured && span[d] > 1) dims.push_back(static_cast<int32_t>(d));
  }
  // All-gather runs from the last dimension to the first, the mirror of reduce-scatter (ASTRA-sim's
  // order: the least data crosses the outer, slower dimensions); every other collective first to last.
  if (op == PhaseOp::kAllGather) std::reverse(dims.begin(), dims.end());
  return dims;
}

}  // namespace

PhaseOp flat_op(CollectiveType t) {
  switch (t) {
    case ChakraProtoMsg::REDUCE: return PhaseOp::kReduce;
    case ChakraProtoMsg::GATHER: return PhaseOp::kGather;
    case ChakraProtoMsg::SCATTER: return PhaseOp::kScatter;
    case ChakraProtoMsg::BROADCAST: return PhaseOp::kBroadcast;
    case ChakraProtoMsg::ALL_GATHER: return PhaseOp::kAllGather;
    case ChakraProtoMsg::ALL_TO_ALL: return PhaseOp::kAllToAll;
    case ChakraProtoMsg::REDUCE_SCATTER:
    case ChakraProtoMsg::REDUCE_SCATTER_BLOCK: return PhaseOp::kReduceScatter;
    default: return PhaseOp::kAllReduce;  // ALL_REDUCE, BARRIER
  }
}

std::vector<int32_t> default_group_span(const NetworkConfig& network, int64_t ranks, std::set<std::string>& warnings) {
  std::vector<int32_t> span;
  if (network.dims.size() <= 1) return span;
  int64_t left = ranks;
  for (const auto& d : network.dims) {
    if (left >= d.npus && left % d.npus == 0) {
      span.push_back(static_cast<int32_t>(d.npus));
      left /= d.npus;
    } else if (left < d.npus) {
      span.push_back(static_cast<int32_t>(left));
      left = 1;
    } else {
      warnings.insert(fmt::format(
          "the workload's {} ranks do not fill whole dimensions of the network: collectives of all ranks run "
          "flat over the ranks instead of dimension by dimension",
          ranks));
      return {};
    }
  }
  return span;
}

MemberGrid default_group_grid(const NetworkConfig& network, int64_t ranks, std::set<std::string>& warnings) {
  MemberGrid grid{default_group_span(network, ranks, warnings), {}};
  if (!grid.span.empty()) grid.stride = dimension_strides(network);
  return grid;
}

MemberGrid group_grid(const NetworkConfig& network, const std::string& group, const std::vector<int64_t>& ranks,
                      std::set<std::string>& warnings) {
  if (network.dims.size() <= 1 || ranks.empty()) return {};
  const std::vector<int32_t> net_stride = dimension_strides(network);
  auto coord = [&](int64_t rank, size_t d) { return (rank / net_stride[d]) % network.dims[d].npus; };
  // The coordinates the group's ranks take along each dimension.
  std::vector<std::vector<int64_t>> coords(network.dims.size());
  for (size_t d = 0; d < network.dims.size(); ++d) {
    for (int64_t r : ranks) coords[d].push_back(coord(r, d));
    std::sort(coords[d].begin(), coords[d].end());
    coords[d].erase(std::unique(coords[d].begin(), coords[d].end()), coords[d].end());
  }
  MemberGrid grid;
  int64_t members = 1;
  int spread = 0;
  for (const auto& c : coords) {
    grid.stride.push_back(static_cast<int32_t>(members));
    grid.span.push_back(static_cast<int32_t>(c.size()));
    members *= static_cast<int64_t>(c.size());
    spread += c.size() > 1 ? 1 : 0;
  }
  if (spread < 2) return {};
  // Member m must sit at coordinate coords[d][(m / stride[d]) % span[d]] along every dimension d.
  bool product = members == static_cast<int64_t>(ranks.size());
  for (size_t m = 0; product && m < ranks.size(); ++m) {
    for (size_t d = 0; product && d < coords.size(); ++d) {
      const auto at = (static_cast<int64_t>(m) / grid.stride[d]) % grid.span[d];
      product = coord(ranks[m], d) == coords[d][static_cast<size_t>(at)];
    }
  }
  if (product) return grid;
  warnings.insert(fmt::format(
      "process group \"{}\" spreads along {} dimensions but its ranks are not one set of coordinates per "
      "dimension in increasing rank order: its collectives run flat over its {} members",
      group, spread, ranks.size()));
  return {};
}

std::vector<int32_t> dimension_strides(const NetworkConfig& network) {
  std::vector<int32_t> strides;
  int64_t stride = 1;
  for (const auto& d : network.dims) {
    strides.push_back(static_cast<int32_t>(stride));
    stride *= d.npus;
  }
  if (strides.empty()) strides.push_back(1);
  return strides;
}

void plan_collective(const CollectiveRequest& c, const PlanContext& ctx, CollectivePlan& out,
                     std::set<std::string>& warnings) {
  PhaseList phases(out, ctx.closed_form, warnings);
  const PhaseOp op = flat_op(c.type);
  const auto& list = impls(*ctx.system, op);
  if (list.empty()) warnings.insert(fmt::format("no {} implementation configured: using ring", phase_op_name(op)));
  const CollectiveImpl first = list.empty() ? CollectiveImpl{} : list.front();
  const std::vector<int32_t> dims = hierarchical_dims(c, op, list);
  auto algo_of = [&](int32_t d) {
    return d < static_cast<int32_t>(list.size()) ? list[static_cast<size_t>(d)].algo : first.algo;
  };
  // Members per subgroup along dimension d: the members the grid puts there (fewer than the dimension's
  // NPUs when the network has idle NPUs or the group takes some of them).
  auto npus = [&](int32_t d) { return c.grid->span[static_cast<size_t>(d)]; };
  auto along = [&](PhaseOp phase_op, int32_t d, uint64_t mul, uint64_t div) {
    phases.add(phase_op, algo_of(d), d, npus(d), c.grid->stride[static_cast<size_t>(d)], mul, div);
  };
  if (dims.size() <= 1 || c.type == ChakraProtoMsg::BARRIER) {
    // Flat: one phase over the whole group (or the single involved dimension).
    if (dims.size() == 1) {
      along(op, dims[0], 1, 1);
    } else {
      phases.add(op, first.algo, 0, c.members, 0, 1, 1);
    }
    return;
  }
  const bool local_bw = ctx.system->collective_optimization == CollectiveOptimization::kLocalBwAware;
  uint64_t div = 1, mul = 1;
  switch (op) {
    case PhaseOp::kAllReduce:
      if (local_bw) {
        for (size_t j = 0; j + 1 < dims.size(); ++j) {
          along(PhaseOp::kReduceScatter, dims[j], 1, div);
          div *= static_cast<uint64_t>(npus(dims[j]));
        }
        along(PhaseOp::kAllReduce, dims.back(), 1, div);
        for (size_t j = dims.size() - 1; j-- > 0;) {
          along(PhaseOp::kAllGather, dims[j], 1, div);
          div /= static_cast<uint64_t>(npus(dims[j]));
        }
      } else {
        for (int32_t d : dims) along(PhaseOp::kAllReduce, d, 1, 1);
      }
      break;
    case PhaseOp::kReduceScatter:
      for (int32_t d : dims) {
        along(op, d, 1, div);
        div *= static_cast<uint64_t>(npus(d));
      }
      break;
    case PhaseOp::kAllGather:
      for (int32_t d : dims) {
        along(op, d, mul, 1);
        mul *= static_cast<uint64_t>(npus(d));
      }
      break;
    default:
      for (int32_t d : dims) along(op, d, 1, 1);
      break;
  }
}

CollectivePlan plan_collective(const CollectiveRequest& c, const PlanContext& ctx, std::set<std::string>& warnings) {
  CollectivePlan plan;
  plan_collective(c, ctx, plan, warnings);
  return plan;
}

}  // namespace fabemu::emu
