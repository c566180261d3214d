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

struct SocketStats {
  std::string transport;              // the datagrams' carrier: "UDP", or "DPDK <device> <MAC>"
  double dilation = 0;
  emu::Duration wall;                 // from the clock's start to the last poll
  // Non-empty when the run stopped because nothing arrived for the stall timeout: which message waited,
  // for what (datagrams or ACKs), from which peer.
  std::string stall;
  uint64_t messages_sent = 0, bytes_sent = 0;          // local source, remote or local destination
  uint64_t messages_received = 0, bytes_received = 0;  // reassembled for a local destination
  uint64_t model_only_messages = 0;   // neither end local (no wire)
  uint64_t local_messages = 0;        // src == dst
  uint64_t datagrams_tx = 0, datagram_bytes_tx = 0, datagrams_rx = 0, datagram_bytes_rx = 0;
  uint64_t retransmissions = 0, nack_retransmissions = 0, timeout_retransmissions = 0;
  uint64_t acks = 0, nacks = 0;
  uint64_t rx_duplicates = 0, rx_reordered = 0, rx_stale = 0;
  uint64_t injected_drops = 0, injected_duplicates = 0, injected_reorders = 0;
  uint64_t not_ours = 0;              // datagrams that are not valid fabemu datagrams for a local rank
  uint64_t frames_not_ours = 0;       // DPDK transport: frames on the port that carry no datagram for a local rank
  // The datagrams (UDP, when the run's class is not the default) or the frames that carried one (DPDK)
  // for a local rank, by the ECN codepoint they arrived with (index: host::dpdk::Ecn, so [3] is CE: marked
  // on the way), and those whose DSCP was not the run's.
  uint64_t frames_by_ecn[4] = {};
  uint64_t frames_dscp_changed = 0;
  uint64_t send_errors = 0;           // sendto failures other than EAGAIN (retried by the reliability layer)
  uint64_t late = 0, on_time = 0;     // D > 0: local-destination messages reassembled after / by their modelled delivery
  // Per message with a local source: its first datagram sent to the ACK that completes it (wall ns, one
  // way plus the ACK's way back; the adaptive RTO's sample).
  emu::LogHistogram latency_ns;
  emu::LogHistogram lateness_ns;      // D > 0: emulated ns late, for the late ones
  // Additions of the implementation:
  uint64_t deliveries = 0;            // messages handed to the walker
  uint64_t data_datagrams = 0;        // first transmissions of data packets
  uint64_t feedback_dropped = 0;      // ACK/NACK not queued (socket full): the sender's timeout covers them
  uint64_t rx_invalid = 0;            // ours but refused by the receiver (window, inconsistent) or feedback for no sender
  uint64_t not_ours_by_verdict[8] = {};  // by DatagramVerdict (host/lab/datagram.h)
  emu::Duration rto_max;              // the largest (adaptive) retransmission timeout used
  // D > 0: |actual - modelled departure| of each paced first transmission, wall ns (after sendmmsg returned).
  emu::LogHistogram jitter_ns;
  uint64_t poll_gap_max_ns = 0, poll_stalls = 0;  // gaps between rounds of I/O (stalls: over 100 us)
  int rcvbuf_bytes = 0, sndbuf_bytes = 0;         // what the kernel granted (it reports twice the value set)
  uint32_t batch = 0;
};

std::string format_socket_stats(const SocketStats& stats);
std::string socket_stats_to_json(const SocketStats& stats);  // the report's "socket" section

class SocketFabric final : public emu::Fabric {
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
  bool drain(emu::Duration limit = emu::Duration::from_ms(2'000));
  // Keeps servicing the sockets (answering retransmissions of peers still finishing) until `until()`
  // returns true or stop_requested does.
  void serve(const std::function<bool()>& until);
  bool interrupted() const noexcept;
  // True when the wire stalled (SocketFabricOptions::stall_timeout) and the run stopped there; the reason
  // is SocketStats::stall. drain() then waits for nothing.
  bool stalled() const noexcept;

  // The endpoint of every rank: local ones as bound (port 0 resolved to the port the kernel chose). Empty
  // over a transport other than UDP.
  const std::vector<boost::asio::ip::udp::endpoint>& endpoints() const noexcept;
  // Where a remote rank receives, when it is known only after construction (its process bound port 0).
  // std::logic_error for a local rank or after the first send().
  void set_remote_endpoint(uint32_t rank, const boost::asio::ip::udp::endpoint& endpoint);

  const emu::PacketFabric& model() const noexcept;
  const SocketStats& stats();  // refreshed on every call

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace fabemu::lab
