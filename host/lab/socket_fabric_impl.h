// The socket fabric's implementation (socket_fabric.h says what it is, host/lab/README.md, "Socket fabric",
// how), shared by its two files: socket_fabric.cpp (making, the walker's messages, the delay line, the
// drain, the public face) and socket_wire.cpp (the rounds of I/O: transmit, receive, feedback, the stats).
// Private to host/lab.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "host/lab/datagram.h"
#include "host/lab/dilated_clock.h"
#include "host/wire/collective_spans.h"
#include "host/lab/socket_fabric.h"
#include "host/lab/udp_transport.h"
#include "host/wire/message_pacing.h"
#include "host/wire/rto_estimator.h"

namespace fabemu::lab {

namespace hd = host::dpdk;
using boost::asio::ip::udp;

class SocketFabric::Impl final : private emu::EventTarget, private emu::DeliveryListener, private DatagramSink {
 public:
  // `udp`: the transport when it is the UDP one (endpoints(), set_remote_endpoint()), else nullptr.
  Impl(emu::Topology topology, std::unique_ptr<DatagramTransport> transport, UdpTransport* udp,
       std::vector<bool> local, SocketFabricOptions o);

  void send(const emu::Message& m, emu::Time ready);
  emu::Engine& engine() noexcept { return engine_; }
  void set_listener(emu::DeliveryListener* l) noexcept { listener_ = l; }
  bool drain(emu::Duration limit);
  void serve(const std::function<bool()>& until);
  bool interrupted() const noexcept { return interrupted_; }
  bool stalled() const noexcept { return !stall_.empty(); }
  const std::string& stall_reason() const noexcept { return stall_; }
  const emu::PacketFabric& model() const noexcept { return model_; }
  emu::PacketFabric& mutable_model() noexcept { return model_; }
  const SocketStats& stats();
  const std::vector<udp::endpoint>& endpoints() const noexcept { return udp_ != nullptr ? udp_->endpoints() : no_endpoints_; }
  void set_remote_endpoint(uint32_t rank, const udp::endpoint& ep);
  // The datagram size the fabric's slots hold: the header and the larger of a data payload and a NACK list.
  static size_t slot_bytes(const SocketFabricOptions& o) noexcept {
    return kDatagramHeaderBytes + std::max<size_t>(o.payload, 4 * kMaxMissingPerNack);
  }

 private:
  static constexpr uint32_t kFramesPerSender = 64;  // per round, so that one sender cannot starve the others
  // A receiver acknowledges what it has in order every this many packets of a message (a power of two), so
  // that a paced message longer than the RTO is not resent while it is still going out.
  static constexpr uint32_t kAckEvery = 32;
  static constexpr uint32_t kMaxMissingPerNack = 256;
  // The pacer's burst allowance, in full datagrams of the link (as the DPDK fabric's).
  static constexpr uint64_t kPacingBurstFrames = 64;
  static constexpr uint64_t kStallNs = 100'000;
  static constexpr int64_t kPublishNs = 1'000'000;  // LiveMetrics are refreshed about every millisecond
  static constexpr uint32_t kNoLink = ~uint32_t{0};
  // A wire message: (src * npus + dst, per-pair message id).
  struct WireKey {
    uint64_t pair;
    uint64_t id;
    bool operator==(const WireKey&) const = default;
  };
  struct WireKeyHash {
    size_t operator()(const WireKey& k) const noexcept {
      uint64_t x = k.pair * 0x9E3779B97F4A7C15ULL ^ (k.id + 0x632BE59BD9B4E019ULL);
      x ^= x >> 31;
      return static_cast<size_t>(x * 0xBF58476D1CE4E5B9ULL);
    }
  };

  // One walker message, under a key of the fabric's own (the walker reuses its ids once delivered, and a
  // record may outlive its delivery until its last ACK).
  struct Record {
    uint64_t walker_id = 0;
    uint32_t src = 0, dst = 0;
    uint64_t bytes = 0, flow = 0;
    uint64_t wire_id = 0;
    uint32_t coll = emu::Message::kNoCollective;
    uint32_t first_link = kNoLink;
    emu::Time ready;                  // the walker's ready time
    emu::Time handed;                 // the dilated clock when the walker handed it over
    emu::Time depart;                 // modelled departure of its first byte on its first link
    emu::Rate rate = emu::Rate::from_ps_per_byte_q32(0);
    int64_t tx_first_ns = -1;         // wall, its first datagram
    emu::Time arrived_emulated;       // the dilated clock when it was reassembled here
    bool src_local = false, dst_local = false;
    bool arrived = false;             // reassembled here (or no local destination to wait for)
    bool acked = false;               // completely acknowledged (or no local source)
    bool delivered = false;           // handed to the walker
    bool numbered = false;            // its ready-time event gave it its wire id
    bool retransmitted = false;       // a datagram of it was sent again: no RTT sample (Karn's rule)
  };
  struct TxEntry {
    uint32_t len;
    uint32_t to;                      // rank
    uint32_t link;                    // kNoLink: not a paced first transmission
    uint64_t scheduled_ps;            // its modelled departure, wall
  };
  // Datagrams built and not yet taken by the kernel, in `slots` fixed-size slots (zero beyond what was
  // written: data payloads are never written, so they stay zero).
  struct Queue {
    std::vector<uint8_t> buf;
    std::vector<TxEntry> entries;     // [0, n) pending
    uint32_t n = 0;
  };
  struct Sock {  // a local rank's datagrams waiting for the transport
    uint32_t rank = 0;
    Queue data, feedback;
  };
  struct HeldRx {  // a data packet held back by reorder injection
    hd::FabemuHeader h;
    uint32_t bytes;
    uint32_t after;  // released after this many later data packets (or when the sockets are idle)
  };

  void on_event(uint64_t id) override;                    // a message's ready time: give it its wire id
  void on_delivered(uint64_t id, emu::Time at) override;  // the model delivers: gate on the wire
  bool try_submit(uint64_t id, Record& r);
  bool poll();
  void transmit();
  void datagram(uint32_t rank, std::span<const uint8_t> d, bool truncated) override;  // DatagramSink
  void handle_data(const hd::FabemuHeader& h, uint32_t bytes);
  void handle_feedback(const DecodedDatagram& d);
  void feedback(uint32_t from, uint32_t to, uint64_t id, hd::PacketKind kind, uint32_t count, uint32_t cumulative,
                uint32_t covered, std::span<const uint32_t> missing);
  void flush(Sock& so, Queue& q);
  void finish_if_done(std::unordered_map<uint64_t, Record>::iterator it);
  void publish();
  bool stop_requested() const { return opt_.stop_requested && opt_.stop_requested(); }
  hd::Receiver& receiver(uint32_t dst);
  uint8_t* slot(Queue& q, uint32_t i) noexcept { return q.buf.data() + size_t{i} * slot_bytes_; }
  uint64_t pair(uint32_t src, uint32_t dst) const noexcept { return uint64_t{src} * npus_ + dst; }
  emu::Time stamp() const noexcept { return clock_.as_fast_as_possible() ? engine_.now() : clock_.emulated(); }

  emu::Engine engine_;
  emu::PacketFabric model_;
  SocketFabricOptions opt_;
  uint32_t npus_;
  std::unique_ptr<DatagramTransport> transport_;
  UdpTransport* udp_;
  std::vector<udp::endpoint> no_endpoints_;
  std::vector<bool> local_;
  DilatedClock clock_;
  emu::DeliveryListener* listener_ = nullptr;
  size_t slot_bytes_;
  std::vector<std::unique_ptr<Sock>> socks_;
  std::vector<int32_t> sock_of_;            // rank -> index in socks_, -1 when remote
  std::vector<TxDatagram> tx_batch_;        // a queue's datagrams as the transport takes them

  std::unordered_map<uint64_t, Record> records_;                    // by key
  std::unordered_map<uint64_t, uint64_t> by_walker_;                // walker id -> key, until delivered
  uint64_t next_key_ = 0;
  std::unordered_map<WireKey, uint64_t, WireKeyHash> rx_wait_;     // local destination: waiting for reassembly
  std::unordered_map<WireKey, uint64_t, WireKeyHash> tx_wait_;     // local source: waiting for the last ACK
  std::unordered_set<WireKey, WireKeyHash> early_;                  // reassembled before this replay got there
  std::unordered_map<uint64_t, uint64_t> next_wire_;                // pair -> next wire id (model order)
  std::unordered_map<uint64_t, uint64_t> next_submit_;              // pair -> next wire id given to the Sender
  std::vector<uint64_t> backlog_;                                   // walker ids waiting for a window slot
  hd::MessagePacing pacing_;                                        // first hops; D > 0: messages waiting to depart
  hd::LinkSenders senders_;                                         // one per first link (reassembly.h)
  std::vector<std::unique_ptr<hd::Receiver>> receivers_;
  std::vector<uint32_t> active_receivers_;
  std::vector<std::optional<hd::TxPacket>> held_;                   // per sender: waiting for its departure
  std::vector<uint64_t> pace_next_ps_;                              // per first link, wall: the pacer's next slot
  std::vector<HeldRx> reorder_;
  hd::FaultFilter faults_;
  hd::NackBatch nacks_;
  std::vector<uint32_t> missing_;
  hd::RtoEstimator rto_;
  bool rx_any_ = false, data_seen_ = false, interrupted_ = false, started_ = false;
  std::string stall_;  // why the run stopped on a stall (empty: it did not)
  bool local_feedback_ = false;  // feedback queued for a local sender this round
  int64_t last_poll_ns_ = 0, last_publish_ns_ = 0;
  struct Published {
    uint64_t messages_sent = 0, bytes_sent = 0, messages_received = 0, bytes_received = 0, frames_sent = 0,
             frames_received = 0, retransmissions = 0, not_ours = 0;
    std::vector<uint64_t> link_bytes;
  } published_;
  SocketStats stats_;
  hd::CollectiveSpans coll_spans_;  // measured vs modelled per collective (D > 0, local destinations)
};

}  // namespace fabemu::lab
