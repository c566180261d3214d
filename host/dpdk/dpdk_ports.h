// The DPDK devices a DpdkFabric's frames go through: an in-process ring pair, a memif pair, or the user's
// devices (README.md, "DPDK fabric").
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "host/dpdk/dpdk_env.h"

namespace fabemu::host::dpdk {

// The devices the frames go through. Data frames are sent on a() and received on b(); ACKs and NACKs go
// back from b() to a(). a() and b() may be the same port (a device that loops frames back).
class DpdkPorts {
 public:
  // An in-process ring pair (rte_eth_from_rings), named net_ring_<name>_a/_b, with `queues` queues each
  // way (cfg's queue counts should match: DpdkFabricOptions::rx_lcores) of `ring_size` frames. With a
  // `device`, every frame from a to b crosses it (RingPair: a stand-in device under test of known latency
  // and rate), which holds up to 2 x ring_size.
  static DpdkPorts ring(const std::string& name, const PortConfig& cfg, uint16_t queues = 1, RingDevice device = {},
                        unsigned ring_size = kRingDelayFrames / 2);
  // The most frames ring()'s device holds (twice its rings' size): port A's mbufs, which a pool for a ring
  // pair with a device has room for on top (the frames a NIC has sent come back to their pool at once).
  static constexpr uint32_t kRingDelayFrames = 2 * 4096;  // at ring()'s default ring_size
  // A memif server and client on `socket` (a path in a directory of the caller's); waits up to 2 s for
  // the link (std::runtime_error otherwise).
  static DpdkPorts memif(const std::string& socket, const PortConfig& cfg);
  // User devices: `b` empty means a() == b(). A device EAL has probed already (a PCI device, with or
  // without -a, or a --vdev in the EAL arguments) is used as it is, by name; others are probed.
  static DpdkPorts devargs(const std::string& a, const std::string& b, const PortConfig& cfg);

  DpdkPorts(DpdkPorts&&) noexcept = default;
  DpdkPorts& operator=(DpdkPorts&&) = delete;
  // memif: the client is closed first, and the server only once the interrupt thread has seen it go.
  ~DpdkPorts();

  Port& a() noexcept { return *a_; }
  Port& b() noexcept { return b_ ? *b_ : *a_; }
  std::string describe() const;
  // An in-process ring pair (ring()): the receiving port hands over the sender's own mbufs.
  bool in_process() const noexcept { return ring_ != nullptr; }
  // The ring pair (ring()): its device, the frames the device handed to b, the most it held at once.
  const RingPair* ring_pair() const noexcept { return ring_.get(); }

 private:
  DpdkPorts() = default;
  std::unique_ptr<RingPair> ring_;  // destroyed after the ports (declared first)
  std::unique_ptr<Port> a_;
  std::unique_ptr<Port> b_;
  std::string what_;
  bool memif_ = false;
};

}  // namespace fabemu::host::dpdk
