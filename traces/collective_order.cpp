#include "traces/collective_order.h"

#include "traces/attrs.h"

namespace fabemu::traces {

std::optional<CollectivePlace> CollectiveOrder::place(int64_t rank, const Node& node, const ProcessGroups& groups) {
  if (node.type() != ChakraProtoMsg::COMM_COLL_NODE) return std::nullopt;
  // Only what the matching needs (comm_info reads every attribute).
  const auto type = attr_int(node, "comm_type");
  if (!type || !ChakraProtoMsg::CollectiveCommType_IsValid(static_cast<int>(*type))) return std::nullopt;
  const ProcessGroup* pg = groups.find(attr_string(node, "pg_name").value_or(""));
  if (pg == nullptr) return std::nullopt;
  return CollectivePlace{pg, next_seq_[{rank, pg->name}]++};
}

}  // namespace fabemu::traces
