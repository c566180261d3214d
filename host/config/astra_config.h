// Reads ASTRA-sim's configuration files unchanged: the analytical network file (network.yml) and
// the system-layer file (system.json). Every key, unit and default: host/config/README.md.
#pragma once

#include <cstddef>
#include <string>

#include "emulator/config.h"

namespace fabemu::host {

// Reads an ASTRA-sim network.yml: topology, npus_count, bandwidth (ASTRA-sim GB/s = 2^30 B/s) and
// latency (ns), one list entry per dimension. Throws traces::TraceError naming the file, the line
// and the key for a missing, unknown, repeated or invalid key, or YAML that does not parse.
emu::NetworkConfig load_network_yml(const std::string& path);

// Reads an ASTRA-sim system.json for a network of `dims` dimensions (>= 1; std::invalid_argument
// otherwise). Throws traces::TraceError naming the file, the line and the key for an unknown,
// repeated or invalid key (suggesting the closest known key), or the byte offset of invalid JSON.
emu::SystemConfig load_system_json(const std::string& path, size_t dims);

}  // namespace fabemu::host
