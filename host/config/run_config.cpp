#include "host/config/run_config.h"

#include <fmt/core.h>

#include <stdexcept>
#include <utility>

#include "host/config/astra_config.h"
#include "host/config/fabric_config.h"

namespace fabemu::host {

RunConfig load_run_config(const std::string& fabric_file, const std::string& network_file,
                          const std::string& system_file) {
  RunConfig c;
  if (!fabric_file.empty()) {
    FabricFile f = load_fabric_yaml(fabric_file);
    c.network = std::move(f.network);
    c.system = std::move(f.system);
    c.model = std::move(f.model);
    c.mtu = f.mtu;
    c.nccl = f.nccl;
    c.nccl_semantics = f.collective_semantics == "nccl";
    return c;
  }
  c.network = load_network_yml(network_file);
  if (!system_file.empty()) {
    c.system = load_system_json(system_file, c.network.dims.size());
  } else {
    default_algorithms(c.system, c.network.dims.size());
  }
  return c;
}

void default_algorithms(emu::SystemConfig& s, size_t dims) {
  for (auto* list : {&s.all_reduce, &s.all_gather, &s.reduce_scatter, &s.all_to_all}) {
    if (list->empty()) list->assign(dims, emu::CollectiveImpl{});
  }
}

emu::ComputeModel parse_compute_model(std::string_view name, std::string_view option) {
  if (name == "auto") return emu::ComputeModel::kAuto;
  if (name == "duration") return emu::ComputeModel::kDuration;
  if (name == "roofline") return emu::ComputeModel::kRoofline;
  throw std::invalid_argument(fmt::format("{} {}: expected auto, duration or roofline", option, name));
}

}  // namespace fabemu::host
