// The socket fabric (issue 7): the DPDK fabric's real-time engine over kernel UDP sockets (Boost.Asio),
// for hosts without DPDK-capable NICs and for multi-host runs. host/lab/README.md, "Socket fabric".
//
// Same contract as host/dpdk/dpdk_fabric.h: the fabric owns an engine and a PacketFabric on it (the FIFO
// link contract of DESIGN.md) over *every* rank of the workload. The model decides when a message is
// delivered; the wire decides whether it may be. Each UDP datagram carries what follows the UDP header of
// a fabemu-mode DPDK frame: the 60-byte fabemu header, then as many zero bytes as the packet carries
// message bytes.
//
// Multi-host: every process of a run replays the whole model (the same walker, the same events in the
// same order), and puts on the wire only the messages with a rank of its own at one end. `local[r]` says
// which ranks this process hosts; it binds one UDP socket per local rank at endpoints[r]. When the model
// delivers a message:
//   - destination local: wait until it is reassembled here (and, with D > 0, until the dilated wall
//     clock reaches the modelled time: the delay line);
//   - source local, destination remote: wait until the destination's last ACK says it is complete;
//   - neither local: no wire (with D > 0, wait for the dilated wall clock, so that processes keep step).
// So the walker of every process sees exactly the packet model's times, each message crosses the network
// once, and a run split over hosts reports what a single-host run reports. Waiting always services the
// sockets (transmit, receive, ACK/NACK, retransmit), so two processes waiting on each other progress.
#pragma once

#include <boost/asio/ip/udp.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "emulator/event_queue.h"
#include "emulator/fabric.h"
#include "emulator/histogram.h"
#include "emulator/packet_fabric.h"
#include "emulator/topology.h"
#include "host/wire/reassembly.h"
#include "host/lab/datagram_transport.h"
#include "host/lab/live_metrics.h"
#include "host/lab/socket_stats.h"
#include "host/wire/realtime_fabric.h"

namespace fabemu::lab {

struct SocketFabricOptions {
  uint32_t model_mtu = ~uint32_t{0};  // the PacketFabric's packet size (the software model's --mtu)
  uint32_t payload = 1400;            // message bytes per datagram, after the 60-byte fabemu header
  double dilation = 0;                // 0: as fast as possible; D > 0: D times slower than the target
  host::dpdk::FaultConfig faults;     // applied to data datagrams on the receive side
  emu::Duration nack_delay = emu::Duration::from_us(200);  // wall time
  emu::Duration rto = emu::Duration::from_ms(10);          // initial/minimum retransmission timeout, wall
  uint32_t window = 1024;             // messages in flight per (sender, receiver) pair; a power of two
  // A message the model has delivered but the wire has not, with nothing received for this long (wall),
  // stops the run there (stalled(); SocketStats::stall names the message, its ranks and the peer's
  // endpoint): a dead peer must not hang the run, and what it did so far is still reported.
  emu::Duration stall_timeout = emu::Duration::from_ms(10'000);
  // Wall-clock epoch of emulated time 0, CLOCK_REALTIME nanoseconds (the coordinator's agreed start,
  // already in this host's clock). 0: the first send() starts the clock.
  int64_t start_realtime_ns = 0;
  // Polled every round of I/O; true ends the run early: no more deliveries, interrupted() is true.
  std::function<bool()> stop_requested;
  LiveMetrics* live = nullptr;        // when set, kept current (link_bytes sized to the topology's links)
  // Datagrams per sendmmsg/recvmmsg call (1..1024); 1: one Boost.Asio send_to / recvmsg per datagram.
  uint32_t batch = 32;
  // The UDP transport's traffic class: every datagram's IPv4 DSCP (0-63) and ECN codepoint (not CE);
  // a DPDK transport takes its own (LabWire).
  uint8_t dscp = 0;
  host::dpdk::Ecn ecn = host::dpdk::Ecn::kNotEct;
  int socket_buffer_bytes = 4 << 20;  // SO_RCVBUF/SO_SNDBUF asked (SO_*BUFFORCE first, then capped by rmem_max)
};

class SocketFabric final : public host::dpdk::RealtimeFabric {
 public:
  // endpoints[r]: where rank r receives (one per NPU of the topology); local[r]: this process hosts r.
  // std::invalid_argument for bad options or sizes; boost::system::system_error when a socket cannot bind.
  SocketFabric(emu::Topology topology, std::vector<boost::asio::ip::udp::endpoint> endpoints,
               std::vector<bool> local, SocketFabricOptions options);
  // The same fabric over another transport (datagram_transport.h), e.g. a DPDK port: local[r] must be
  // what the transport was opened with. endpoints() is then empty and set_remote_endpoint() a logic_error.
  SocketFabric(emu::Topology topology, std::unique_ptr<DatagramTransport> transport, std::vector<bool> local,
               SocketFabricOptions options);
  ~SocketFabric() override;
  // The longest datagram the fabric sends with `options`: the header and the larger of a data payload and
  // a NACK's list (what a transport opened for it must carry).
  static uint32_t max_datagram(const SocketFabricOptions& options) noexcept;

  void send(const emu::Message& m, emu::Time ready) override;
  using Fabric::send;
  emu::Engine& engine() override;
  void set_listener(emu::DeliveryListener* listener) override;

  // After the walk: services the sockets until every message with a local source is acknowledged or
  // `limit` (wall) has passed; true when all were.
  bool drain(emu::Duration limit = kDrainLimit) override;
  // Keeps servicing the sockets (answering retransmissions of peers still finishing) until `until()`
  // returns true or stop_requested does.
  void serve(const std::function<bool()>& until);
  bool interrupted() const noexcept override;
  // True when the wire stalled (SocketFabricOptions::stall_timeout) and the run stopped there; the reason
  // is SocketStats::stall (stall_reason()). drain() then waits for nothing.
  bool stalled() const noexcept override;
  const std::string& stall_reason() const noexcept override;
  std::string_view name() const noexcept override { return "socket fabric"; }
  // "socket": stats() as socket_stats_to_json and format_socket_stats.
  ReportSection report_section() override;

  // The endpoint of every rank: local ones as bound (port 0 resolved to the port the kernel chose). Empty
  // over a transport other than UDP.
  const std::vector<boost::asio::ip::udp::endpoint>& endpoints() const noexcept;
  // Where a remote rank receives, when it is known only after construction (its process bound port 0).
  // std::logic_error for a local rank or after the first send().
  void set_remote_endpoint(uint32_t rank, const boost::asio::ip::udp::endpoint& endpoint);

  const emu::PacketFabric& model() const noexcept override;
  emu::PacketFabric& mutable_model() noexcept override;
  const SocketStats& stats();  // refreshed on every call

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace fabemu::lab
