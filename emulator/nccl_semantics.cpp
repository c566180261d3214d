#include "emulator/nccl_semantics.h"

#include <fmt/format.h>

#include <algorithm>

namespace fabemu::emu::nccl {

Semantics::Semantics(const System& machine) : machine_(machine) {
  per_node_.assign(static_cast<size_t>(machine_.nodes), 0);
}

const Model& Semantics::model_of(int32_t per_node, int32_t nodes) {
  const auto key = std::make_pair(per_node, nodes);
  auto it = models_.find(key);
  if (it == models_.end()) {
    System s = machine_;
    // A group with fewer GPUs on a node than the machine uses their share of its NICs, and NVLS needs at
    // least two GPUs of the group on the switch.
    if (per_node < machine_.gpus_per_node) {
      s.net_channel_gbps = machine_.net_channel_gbps * per_node / machine_.gpus_per_node;
    }
    if (per_node < 2) s.nvls = false;
    s.gpus_per_node = per_node;
    s.nodes = nodes;
    it = models_.emplace(key, Model(s)).first;
  }
  return it->second;
}

std::optional<Choice> Semantics::choose(traces::CollectiveType type, uint64_t comm_size,
                                        const std::vector<int64_t>& ranks, int32_t world,
                                        std::set<std::string>& warnings) {
  Func func = Func::kAllReduce;
  switch (type) {
    case ChakraProtoMsg::ALL_REDUCE:
    case ChakraProtoMsg::BARRIER: func = Func::kAllReduce; break;
    case ChakraProtoMsg::ALL_GATHER: func = Func::kAllGather; break;
    case ChakraProtoMsg::REDUCE_SCATTER: func = Func::kReduceScatter; break;
    case ChakraProtoMsg::BROADCAST: func = Func::kBroadcast; break;
    case ChakraProtoMsg::REDUCE: func = Func::kReduce; break;
    default: return std::nullopt;
  }
  // The group's shape on the machine.
  const int32_t gpn = machine_.gpus_per_node;
  const auto n = static_cast<int32_t>(ranks.empty() ? world : static_cast<int32_t>(ranks.size()));
  std::fill(per_node_.begin(), per_node_.end(), 0);
  int32_t nodes = 0;
  int32_t most = 0;
  for (int32_t i = 0; i < n; ++i) {
    const int64_t r = ranks.empty() ? i : ranks[static_cast<size_t>(i)];
    int32_t& c = per_node_[static_cast<size_t>(r / gpn)];
    if (c++ == 0) ++nodes;
    most = std::max(most, c);
  }
  int32_t per_node = most;
  if (static_cast<int64_t>(most) * nodes != n) {
    per_node = (n + nodes - 1) / nodes;
    warnings.insert(fmt::format("NCCL semantics: a group of {} ranks spread unevenly over {} nodes runs as {} per node",
                                n, nodes, per_node));
  }
  // nccl-tests' size: an all-gather's is the gathered whole; a barrier moves nothing.
  uint64_t bytes = type == ChakraProtoMsg::BARRIER ? 0 : comm_size;
  if (func == Func::kAllGather) bytes *= static_cast<uint64_t>(n);
  if (n < 2) return Choice{Algo::kRing, Proto::kSimple, Duration::zero(), 0, 0};
  const auto c = model_of(per_node, nodes).choose(func, bytes);
  if (!c) {
    warnings.insert(fmt::format("NCCL semantics: no algorithm/protocol allowed for {}; ASTRA-sim's semantics used",
                                func_name(func)));
  }
  return c;
}

}  // namespace fabemu::emu::nccl
