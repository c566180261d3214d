#include "traces/info.h"

#include <fmt/format.h>

#include <algorithm>

namespace fabemu::traces {

std::string format_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{} {}", bytes, kUnits[unit]);
}

WorkloadSummary summarize_workload(const std::vector<RankFile>& files,
                                   const std::optional<std::string>& comm_group_file) {
  WorkloadSummary out;
  out.groups = ProcessGroups(static_cast<int64_t>(files.size()));
  if (comm_group_file) out.groups.load_file(*comm_group_file);
  Node node;
  for (const RankFile& file : files) {
    TraceReader reader(file.path, file.rank);
    RankSummary s;
    s.rank = file.rank;
    s.path = file.path;
    s.gzip = reader.compressed();
    s.version = reader.metadata().version();
    for (const auto& a : reader.metadata().attr()) {
      if (a.name() == "schema" && a.value_case() == Attribute::kStringVal) s.schema = a.string_val();
    }
    while (reader.next(node)) {
      ++s.nodes;
      ++s.by_type[static_cast<size_t>(node.type())];
      s.data_edges += static_cast<uint64_t>(node.data_deps_size());
      s.ctrl_edges += static_cast<uint64_t>(node.ctrl_deps_size());
      s.max_parents = std::max<uint64_t>(s.max_parents, static_cast<uint64_t>(node.data_deps_size()));
      if (attr_bool(node, "is_cpu_op").value_or(false)) ++s.cpu_ops;
      switch (node.type()) {
        case ChakraProtoMsg::COMP_NODE: s.compute_micros += node.duration_micros(); break;
        case ChakraProtoMsg::METADATA_NODE: out.groups.add_from_metadata_node(node, reader.last_location()); break;
        case ChakraProtoMsg::COMM_COLL_NODE: {
          const CommInfo c = comm_info(node);
          if (c.collective) {
            ++s.collectives[{*c.collective, c.size.value_or(0)}];
            s.collective_bytes += c.size.value_or(0);
          } else {
            ++s.untyped_collectives;
          }
          break;
        }
        case ChakraProtoMsg::COMM_SEND_NODE:
          ++s.sends;
          s.send_bytes += comm_info(node).size.value_or(0);
          break;
        case ChakraProtoMsg::COMM_RECV_NODE:
          ++s.recvs;
          s.recv_bytes += comm_info(node).size.value_or(0);
          break;
        default: break;
      }
    }
    s.trace_bytes = reader.bytes_read();
    out.ranks.push_back(std::move(s));
  }
  return out;
}

}  // namespace fabemu::traces
