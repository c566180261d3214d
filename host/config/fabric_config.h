// fabemu's own fabric file (YAML): the target network (dimensions, or a leaf-spine fat-tree), the
// fabric model and its MTU, and the system layer (collective algorithms, chunking, delays, roofline)
// in one file, with network units (link bandwidth in gigaBITS per second). Every key, unit and
// default: host/config/README.md, section "fabemu fabric file".
#pragma once

#include <cstdint>
#include <string>

#include "emulator/config.h"
#include "emulator/nccl_model.h"
#include <optional>

namespace fabemu::host {

struct FabricFile {
  emu::NetworkConfig network;
  emu::SystemConfig system;
  std::string model;  // "analytical" | "packet" | "" = not given
  uint32_t mtu = 0;   // bytes; 0 = whole messages (not given)
  // The `nccl:` section: the system as NCCL sees it (GPUs per node = topology[0].npus, nodes = the rest),
  // for `fabemu bench collective`; absent = not given.
  std::optional<emu::nccl::System> nccl;
  bool nccl_validated = true;  // `nccl.validated: false`: stated from public specs, never checked against a run
  // `collective_semantics`: "astra" (default: ASTRA-sim's collectives) or "nccl" (the NCCL model's times in
  // `fabemu run`, emu::WalkerOptions::nccl; needs the nccl section).
  std::string collective_semantics = "astra";
  std::string source;
};

// Reads a fabemu fabric file. Throws traces::TraceError naming the file, the line and the key for a
// missing, unknown (with a suggestion), repeated or invalid key, or YAML that does not parse.
FabricFile load_fabric_yaml(const std::string& path);

}  // namespace fabemu::host
