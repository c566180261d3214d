// The lab fabric's DPDK transport (datagram_transport.h): each datagram is the UDP payload of an
// Ethernet/IPv4/UDP frame on the host's DPDK port, the fabemu-mode frame of the DPDK fabric (host/dpdk/
// README.md, "Wire format"), with valid IPv4 and UDP checksums. Built only with DPDK.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "host/lab/datagram_transport.h"

namespace fabemu::lab {

// Starts EAL with `eal_args` unless it is running (restoring the calling thread's CPU affinity afterwards:
// the agent's io and run threads stay unpinned), then probes and starts `devargs` (a PCI address, a
// --vdev EAL already probed, or vdev devargs such as "net_af_packet0,iface=eth1"). std::runtime_error
// naming the device or the EAL arguments.
std::unique_ptr<LabDataPort> open_lab_data_port(const std::string& devargs, const std::vector<std::string>& eal_args);

}  // namespace fabemu::lab
