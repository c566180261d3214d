// Where the lab fabric's datagrams travel (host/lab/README.md, "Data planes"). The socket fabric
// (socket_fabric.h) builds each packet as a datagram: the 60-byte fabemu header, then its message bytes
// as zeros or a NACK's missing list (datagram.h). A transport carries those bytes from a local rank to a
// rank's address and hands back what arrived for the local ranks:
//   - UdpTransport (socket_fabric.cpp): one kernel UDP socket per local rank, sendmmsg/recvmmsg;
//   - the DPDK transport (dpdk_transport.h, built with DPDK): the datagram is the UDP payload of an
//     Ethernet/IPv4/UDP frame (a fabemu-mode frame of the DPDK fabric, checksums valid) on the host's
//     DPDK port, addressed to the MAC of the port of the rank's host.
// Everything above the transport (replicated model, reliability, pacing, fault injection, stats) is the
// socket fabric's, whatever the transport.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "host/wire/frame.h"

namespace fabemu::lab {

// One datagram to send: `len` bytes at `data`, to rank `to`.
struct TxDatagram {
  const uint8_t* data = nullptr;
  uint32_t len = 0;
  uint32_t to = 0;
};

class DatagramSink {
 public:
  // A datagram that arrived for local rank `rank` (the rank whose address it was sent to); `truncated`:
  // it was longer than the receive buffer. `d` is valid during the call only.
  virtual void datagram(uint32_t rank, std::span<const uint8_t> d, bool truncated) = 0;

 protected:
  ~DatagramSink() = default;
};

struct TransportStats {
  uint64_t send_errors = 0;   // datagrams the transport gave up on (the reliability layer resends them)
  uint64_t frames_not_ours = 0;  // DPDK: frames on the port that carry no datagram for a local rank
  // The frames that carried a datagram for a local rank (DPDK) or the datagrams (UDP, when the run's class
  // is not the default), by the ECN codepoint they arrived with (index: host::dpdk::Ecn; CE: marked by a
  // switch on the way), and those whose DSCP was not the run's.
  uint64_t frames_by_ecn[4] = {};
  uint64_t frames_dscp_changed = 0;
  int rcvbuf_bytes = 0, sndbuf_bytes = 0;  // UDP: what the kernel granted
};

class DatagramTransport {
 public:
  virtual ~DatagramTransport() = default;
  // For logs and the report, e.g. "udp" or "dpdk net_af_packet0 02:00:00:00:00:01".
  virtual std::string describe() const = 0;
  // Where rank r receives, for messages (e.g. "127.0.0.1:47001", "02:fe:00:00:00:01 198.18.0.2:47000").
  virtual std::string address_of(uint32_t rank) const = 0;
  // Datagrams of local rank `from`, in order. Returns how many the wire took (a prefix of `batch`); the
  // rest are offered again later. A datagram it gave up on counts as taken (TransportStats::send_errors).
  virtual uint32_t send(uint32_t from, std::span<const TxDatagram> batch) = 0;
  // Everything that has arrived for the local ranks, one sink.datagram() each; no waiting.
  virtual void receive(DatagramSink& sink) = 0;
  virtual TransportStats stats() const = 0;
};

// How a lab run's DPDK frames look (lab.yaml's `wire`, `dscp`, `ecn`; host/lab/README.md, "lab.yaml").
struct LabWire {
  host::dpdk::WireMode mode = host::dpdk::WireMode::kFabemu;
  uint8_t dscp = 0;                                 // 0-63, every frame's IPv4 DSCP
  host::dpdk::Ecn ecn = host::dpdk::Ecn::kNotEct;   // every frame's ECN codepoint (never CE)
};

// A host's DPDK port, opened once by the agent (`fabemu agent --dpdk-device`) and used by every lab run
// with `fabric: dpdk` (implemented in dpdk_transport.cpp).
class LabDataPort {
 public:
  virtual ~LabDataPort() = default;
  virtual host::dpdk::MacAddr mac() const = 0;
  virtual std::string describe() const = 0;
  // A transport over this port for one run, its frames in `wire.mode` (fabemu: UDP to the rank's port;
  // RoCEv2: UDP 4791, a BTH before the fabemu header, the ICRC after) with `wire`'s traffic class.
  // endpoints[r]: where rank r receives (lab_dpdk_endpoint()); local[r]: r is hosted here. Datagrams
  // between two local ranks stay in the host (the port cannot send a frame to itself).
  // std::invalid_argument for sizes that do not match, a datagram that cannot fit a frame of the port's
  // MTU, a DSCP above 63 or the CE codepoint.
  virtual std::unique_ptr<DatagramTransport> open(std::vector<host::dpdk::Endpoint> endpoints,
                                                  std::vector<bool> local, uint32_t max_datagram,
                                                  const LabWire& wire) = 0;
};

// Rank r's address in a DPDK lab run: the MAC of its host's port, IP 198.18.0.1 + r (the default address
// plan, RFC 2544 space), UDP port 47000.
host::dpdk::Endpoint lab_dpdk_endpoint(uint32_t rank, const host::dpdk::MacAddr& host_mac);

}  // namespace fabemu::lab
