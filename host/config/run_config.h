// The configuration of one run, read the same way by `fabemu run` and by a lab agent: the target fabric from
// a fabemu fabric file, or from ASTRA-sim's network.yml (+ system.json); the compute model by its name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "emulator/config.h"
#include "emulator/walker.h"

namespace fabemu::host {

struct RunConfig {
  emu::NetworkConfig network;
  emu::SystemConfig system;
  std::string model;  // the fabric file's "analytical" | "packet"; "" when not given (or from network.yml)
  uint32_t mtu = 0;   // the fabric file's packet size; 0 = whole messages (not given)
  std::optional<emu::nccl::System> nccl;  // the fabric file's nccl section
  bool nccl_semantics = false;            // its `collective_semantics: nccl` (the section is then present)
};

// A fabric file when `fabric_file` is not empty; else `network_file` and, when given, `system_file` (without
// one, every collective uses ring on every dimension: default_algorithms). Errors name the file and line.
RunConfig load_run_config(const std::string& fabric_file, const std::string& network_file,
                          const std::string& system_file);

// ASTRA-sim needs a system.json; without one fabemu uses ring everywhere (and otherwise the defaults of
// SystemConfig), so a network file alone is enough to run.
void default_algorithms(emu::SystemConfig& s, size_t dims);

// "auto", "duration" or "roofline"; anything else throws std::invalid_argument naming `option`.
emu::ComputeModel parse_compute_model(std::string_view name, std::string_view option);

}  // namespace fabemu::host
