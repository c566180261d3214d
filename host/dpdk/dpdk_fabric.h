// The DPDK fabric (issue 4, first vertical slice): the walker's messages become real frames (wire.h) on a
// DPDK port, made reliable by reassembly.h, and are delivered to the walker at the times of the target
// fabric's model. README.md, "DPDK fabric".
//
// How: the fabric owns the engine and a PacketFabric on it (the FIFO link contract of DESIGN.md, packet
// by packet). The model decides *when* a message is delivered; the wire decides *whether* it may be: when
// the model delivers a message, the fabric busy-polls the ports (transmit, receive, reassemble, ACK/NACK,
// retransmit) until every packet of that message has really arrived, and (with a dilation D > 0) until
// the wall clock has reached the modelled time: the receive-side delay line. Only then is the walker
// told, at the modelled time. So when the physical path keeps up, the walker sees exactly the times of
// the software packet model (bit for bit: the events the walker and the model schedule run in the same
// order), and what the wire really did (latency, loss, lateness) is measured separately (DpdkStats).
// Frames of a message leave no earlier than the modelled departure of its bytes on its first link
// (dilated wall clock; not paced with D = 0, "as fast as possible").
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "emulator/event_queue.h"
#include "emulator/fabric.h"
#include "emulator/packet_fabric.h"
#include "emulator/topology.h"
#include "host/dpdk/address_plan.h"
#include "host/dpdk/dpdk_env.h"
#include "host/dpdk/pcap_writer.h"
#include "host/dpdk/realtime.h"
#include "host/dpdk/reassembly.h"
#include "host/dpdk/wire.h"

namespace fabemu::host::dpdk {

struct DpdkFabricOptions {
  uint32_t model_mtu = ~uint32_t{0};  // the PacketFabric's packet size (the software model's --mtu)
  WireMode mode = WireMode::kFabemu;
  uint32_t wire_mtu = 1500;           // IP MTU of the frames (message bytes per frame: max_payload_for_mtu)
  double dilation = 0;                // 0: as fast as possible; D > 0: D times slower than the target
  FaultConfig faults;                 // applied to data frames on the receive side
  emu::Duration nack_delay = emu::Duration::from_us(200);  // wall time
  // Above the queueing of the device rings: 1024 frames on memif take about a millisecond here.
  emu::Duration rto = emu::Duration::from_ms(10);          // wall time
  uint32_t window = 1024;             // messages in flight per (sender, receiver) pair; a power of two
  std::string pcap;                   // non-empty: every frame sent is captured there
  // A message the model has delivered but the wire has not, with no frame received for this long
  // (wall time), is an error (std::runtime_error): a dead device must not hang the run.
  emu::Duration stall_timeout = emu::Duration::from_ms(10'000);
};

// The devices the frames go through. Data frames are sent on a() and received on b(); ACKs and NACKs go
// back from b() to a(). a() and b() may be the same port (a device that loops frames back).
class DpdkPorts {
 public:
  // An in-process ring pair (rte_eth_from_rings), named net_ring_<name>_a/_b.
  static DpdkPorts ring(const std::string& name, const PortConfig& cfg);
  // A memif server and client on `socket` (a path in a directory of the caller's); waits up to 2 s for
  // the link (std::runtime_error otherwise).
  static DpdkPorts memif(const std::string& socket, const PortConfig& cfg);
  // User devices: `b` empty means a() == b().
  static DpdkPorts devargs(const std::string& a, const std::string& b, const PortConfig& cfg);

  DpdkPorts(DpdkPorts&&) noexcept = default;
  DpdkPorts& operator=(DpdkPorts&&) = delete;
  // memif: the client is closed first, and the server only once the interrupt thread has seen it go.
  ~DpdkPorts();

  Port& a() noexcept { return *a_; }
  Port& b() noexcept { return b_ ? *b_ : *a_; }
  std::string describe() const;

 private:
  DpdkPorts() = default;
  std::unique_ptr<RingPair> ring_;  // destroyed after the ports (declared first)
  std::unique_ptr<Port> a_;
  std::unique_ptr<Port> b_;
  std::string what_;
  bool memif_ = false;
};

// Measurements of a run on the wire, for the report's "DPDK" section.
struct DpdkStats {
  double dilation = 0;
  emu::Duration wall;                 // wall time from construction to the last poll
  uint64_t messages = 0;              // messages that went on the wire (src != dst)
  uint64_t local_messages = 0;        // src == dst: not on the wire
  uint64_t message_bytes = 0;         // bytes of those messages
  uint64_t bytes_completed = 0;       // message bytes the receivers reassembled (== message_bytes at the end)
  uint64_t messages_completed = 0;
  uint64_t frames_tx = 0, frame_bytes_tx = 0;
  uint64_t frames_rx = 0, frame_bytes_rx = 0;
  uint64_t data_frames = 0;           // first transmissions
  uint64_t retransmissions = 0, nack_retransmissions = 0, timeout_retransmissions = 0;
  uint64_t acks = 0, nacks = 0;
  uint64_t rx_duplicates = 0, rx_reordered = 0, rx_stale = 0, rx_invalid = 0, rx_receiver_invalid = 0;
  uint64_t injected_drops = 0, injected_duplicates = 0, injected_reorders = 0;
  uint64_t not_ours = 0;
  uint64_t not_ours_by_verdict[kVerdictCount] = {};
  uint64_t late = 0;                  // messages complete on the wire after their modelled time (D > 0)
  uint64_t deliveries = 0;            // messages handed to the walker
  // Measured latency per wire message: first frame's transmission to reassembly, ns (TSC).
  std::vector<uint64_t> latency_ns;
  // The first link carrying the most bytes: its target rate and the rate its frames achieved, in
  // emulated Gb/s (wall rate * D; with D = 0 the raw wire rate).
  int64_t busiest_link = -1;
  uint64_t busiest_link_bytes = 0;
  double busiest_target_gbps = 0;
  double busiest_achieved_gbps = 0;
};

// The stats as the "DPDK" section of the text summary.
std::string format_dpdk_stats(const DpdkStats& stats);

class DpdkFabric final : public emu::Fabric, private emu::EventTarget, private emu::DeliveryListener {
 public:
  // `plan` must cover every NPU of the topology. EAL must be running; `ports` must outlive the fabric.
  // std::invalid_argument for bad options.
  DpdkFabric(emu::Topology topology, AddressPlan plan, DpdkPorts& ports, DpdkFabricOptions options);
  ~DpdkFabric() override;

  void send(const emu::Message& m, emu::Time ready) override;
  using Fabric::send;
  emu::Engine& engine() override { return engine_; }
  void set_listener(emu::DeliveryListener* listener) override { listener_ = listener; }

  // After the walker's run: polls until every message is acknowledged (the last ACKs) or `limit` of wall
  // time has passed; returns true when all were. Closes the pcap file.
  bool drain(emu::Duration limit = emu::Duration::from_ms(2'000));
  // True when SIGINT/SIGTERM (Eal::stop_requested) ended the run early.
  bool interrupted() const noexcept { return interrupted_; }

  const emu::PacketFabric& model() const noexcept { return model_; }
  const emu::Topology& topology() const noexcept { return model_.topology(); }
  // Refreshed on every call (counters of the senders and receivers are summed here).
  const DpdkStats& stats();

 private:
  struct Record {  // one walker message
    uint32_t src = 0, dst = 0;
    uint64_t bytes = 0;
    uint64_t flow = 0;
    uint64_t wire_id = 0;
    uint64_t tx_ticks = 0, rx_ticks = 0;
    emu::Time arrived_emulated;  // the dilated wall clock when its last packet arrived
    emu::Time depart;           // modelled departure of its first byte on its first link
    emu::Rate rate = emu::Rate::from_ps_per_byte_q32(0);  // of that link
    uint32_t first_link = 0;
    bool submitted = false, arrived = false, local = false;
  };

  void on_event(uint64_t id) override;                   // a message's ready time has come: submit it
  void on_delivered(uint64_t id, emu::Time at) override;  // the model delivers: wait for the wire
  void submit(uint64_t id);
  bool try_submit(uint64_t id, Record& r);
  // One round of I/O: submit backlog, transmit, receive, NACK. Returns true when a frame was received.
  bool poll();
  void transmit();
  void receive(Port& port);
  void handle(const DecodedFrame& f);
  void process_held(rte_mbuf* m);
  void feedback(uint32_t from, uint32_t to, uint64_t id, PacketKind kind, uint32_t count, uint32_t cumulative,
                uint32_t covered, std::span<const uint32_t> missing);
  void flush(Port& port, std::vector<rte_mbuf*>& queue);
  rte_mbuf* frame(Port& port, const FrameSpec& spec);
  Sender& sender(uint32_t src);
  Receiver& receiver(uint32_t dst);
  static uint64_t pair_key(uint32_t src, uint32_t dst, uint64_t wire_id, uint32_t npus) noexcept {
    return (uint64_t{src} * npus + dst) << 40 ^ wire_id;
  }

  emu::Engine engine_;
  emu::PacketFabric model_;
  AddressPlan plan_;
  DpdkPorts& ports_;
  DpdkFabricOptions opt_;
  TscClock clock_;
  DecodeRules rules_;
  uint32_t npus_;
  uint32_t payload_;
  emu::DeliveryListener* listener_ = nullptr;
  std::unordered_map<uint64_t, Record> records_;      // by walker id
  std::unordered_map<uint64_t, uint64_t> by_wire_;    // pair_key -> walker id
  std::vector<uint64_t> backlog_;                     // walker ids waiting for a window slot
  // D > 0: walker ids waiting for their modelled departure, a min-heap of (departure ps, sequence, id),
  // so that the sender's retransmission timers start when a message really goes out.
  struct Waiting {
    uint64_t depart_ps, seq, id;
    bool operator>(const Waiting& o) const noexcept {
      return depart_ps != o.depart_ps ? depart_ps > o.depart_ps : seq > o.seq;
    }
  };
  std::vector<Waiting> pacing_;
  uint64_t pacing_seq_ = 0;
  std::vector<std::unique_ptr<Sender>> senders_;
  std::vector<std::unique_ptr<Receiver>> receivers_;
  std::vector<uint32_t> active_senders_;              // ranks with a Sender, in creation order
  std::vector<uint32_t> active_receivers_;
  std::vector<std::optional<TxPacket>> held_;         // per sender: a packet waiting for its departure
  std::vector<emu::LinkId> route_;
  std::vector<emu::Time> link_free_;                  // per link: pacing of first hops
  struct LinkTx {
    uint64_t bytes = 0;
    emu::Time first, last;
  };
  std::vector<LinkTx> link_tx_;
  std::vector<rte_mbuf*> tx_data_, tx_feedback_;      // frames built, not yet taken by the device
  struct Held {
    rte_mbuf* m;
    uint32_t after;  // released after this many more data frames (or when the port is idle)
  };
  std::vector<Held> reorder_;
  FaultFilter faults_;
  std::unique_ptr<PcapWriter> pcap_;
  NackBatch nacks_;
  std::vector<uint8_t> scratch_;
  std::vector<uint32_t> missing_;
  uint64_t ip_id_ = 0;
  bool rx_any_ = false;
  bool data_seen_ = false;
  bool interrupted_ = false;
  DpdkStats stats_;
};

}  // namespace fabemu::host::dpdk
