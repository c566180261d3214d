// Collectives in NCCL's semantics inside a walk (`collective_semantics: nccl` of a fabric file): the time of
// each collective from the NCCL model (nccl_model.h) of its process group's shape, the GPUs per node and the
// nodes its members span on the machine (rank r sits on node r / gpus_per_node), as NCCL's communicator of
// that group sees it: a group with fewer GPUs per node than the machine has their share of the node's network
// bandwidth, and no NVLS with one GPU per node. A model is built once per shape.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "emulator/nccl_model.h"
#include "traces/attrs.h"

namespace fabemu::emu::nccl {

class Semantics {
 public:
  // `machine`: the whole system (its gpus_per_node, nodes and everything else the groups' models share).
  explicit Semantics(const System& machine);

  // The model's choice for a collective of `type` whose ranks are `ranks` (ascending; empty = all `world`
  // ranks of the workload), `comm_size` as the trace says (an all-gather's is each rank's part). nullopt for
  // a type NCCL has no collective for (all-to-all, gather, scatter): the walker runs those in ASTRA-sim's
  // semantics. A group whose members are spread unevenly over nodes runs as ceil(members / nodes) per node,
  // and says so once in `warnings`.
  std::optional<Choice> choose(traces::CollectiveType type, uint64_t comm_size, const std::vector<int64_t>& ranks,
                               int32_t world, std::set<std::string>& warnings);

 private:
  const Model& model_of(int32_t per_node, int32_t nodes);

  System machine_;
  std::map<std::pair<int32_t, int32_t>, Model> models_;
  std::vector<int32_t> per_node_;  // scratch: members on each node
};

}  // namespace fabemu::emu::nccl
