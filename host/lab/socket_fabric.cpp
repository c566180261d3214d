// The socket fabric: host/lab/socket_fabric.h says what it is, host/lab/README.md ("Socket fabric") how.
#include "host/lab/socket_fabric.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "host/wire/histogram_format.h"
#include "host/wire/message_pacing.h"
#include "host/wire/rto_estimator.h"
#include "host/lab/datagram.h"
#include "host/lab/dilated_clock.h"
#include "host/lab/udp_transport.h"

namespace fabemu::lab {

namespace hd = host::dpdk;
using boost::asio::ip::udp;

namespace {

constexpr uint32_t kFramesPerSender = 64;  // per round, so that one sender cannot starve the others
// A receiver acknowledges what it has in order every this many packets of a message (a power of two), so
// that a paced message longer than the RTO is not resent while it is still going out.
constexpr uint32_t kAckEvery = 32;
constexpr uint32_t kMaxMissingPerNack = 256;
// The pacer's burst allowance, in full datagrams of the link (as the DPDK fabric's).
constexpr uint64_t kPacingBurstFrames = 64;
constexpr uint64_t kStallNs = 100'000;
constexpr int64_t kPublishNs = 1'000'000;  // LiveMetrics are refreshed about every millisecond
constexpr uint32_t kNoLink = ~uint32_t{0};

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

}  // namespace

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
  const emu::PacketFabric& model() const noexcept { return model_; }
  const SocketStats& stats();
  const std::vector<udp::endpoint>& endpoints() const noexcept { return udp_ != nullptr ? udp_->endpoints() : no_endpoints_; }
  void set_remote_endpoint(uint32_t rank, const udp::endpoint& ep);
  // The datagram size the fabric's slots hold: the header and the larger of a data payload and a NACK list.
  static size_t slot_bytes(const SocketFabricOptions& o) noexcept {
    return kDatagramHeaderBytes + std::max<size_t>(o.payload, 4 * kMaxMissingPerNack);
  }

 private:
  // One walker message, under a key of the fabric's own (the walker reuses its ids once delivered, and a
  // record may outlive its delivery until its last ACK).
  struct Record {
    uint64_t walker_id = 0;
    uint32_t src = 0, dst = 0;
    uint64_t bytes = 0, flow = 0;
    uint64_t wire_id = 0;
    uint32_t coll = emu::Message::kNoCollective;
    uint32_t first_link = kNoLink;
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
};

// --- construction --------------------------------------------------------------------------------------

SocketFabric::Impl::Impl(emu::Topology topology, std::unique_ptr<DatagramTransport> transport, UdpTransport* udp,
                         std::vector<bool> local, SocketFabricOptions o)
    : engine_(1 << 16),
      model_(engine_, std::move(topology), o.model_mtu),
      opt_(std::move(o)),
      npus_(static_cast<uint32_t>(model_.topology().npus())),
      transport_(std::move(transport)),
      udp_(udp),
      local_(std::move(local)),
      clock_(opt_.dilation),
      slot_bytes_(slot_bytes(opt_)),
      faults_(opt_.faults),
      rto_(opt_.rto) {
  if (local_.size() != npus_) {
    throw std::invalid_argument(fmt::format("socket fabric: {} local flags for {} NPUs", local_.size(), npus_));
  }
  model_.set_listener(this);
  // At least four partial-ACK intervals of the slowest link, paced (as the DPDK fabric).
  rto_ = hd::RtoEstimator(hd::paced_rto_floor(opt_.rto, model_.topology(), uint64_t{opt_.payload} * kAckEvery, clock_));
  if (opt_.start_realtime_ns != 0) {
    clock_.start_at_realtime(opt_.start_realtime_ns);
    started_ = true;
  }
  sock_of_.assign(npus_, -1);
  for (uint32_t r = 0; r < npus_; ++r) {
    if (!local_[r]) continue;
    auto so = std::make_unique<Sock>();
    so->rank = r;
    for (Queue* q : {&so->data, &so->feedback}) {
      q->buf.assign(size_t{opt_.batch} * slot_bytes_, 0);
      q->entries.resize(opt_.batch);
    }
    sock_of_[r] = static_cast<int32_t>(socks_.size());
    socks_.push_back(std::move(so));
  }
  tx_batch_.resize(opt_.batch);
  {
    hd::SenderConfig c;
    c.payload_per_packet = opt_.payload;
    c.window = opt_.window;
    c.rto = rto_.rto();
    senders_ = hd::LinkSenders(npus_, model_.topology().links().size(), c);
  }
  receivers_.resize(npus_);
  pacing_.size_for(model_.topology());
  pace_next_ps_.assign(model_.topology().links().size(), 0);
  published_.link_bytes.assign(model_.topology().links().size(), 0);
  stats_.dilation = opt_.dilation;
  stats_.batch = opt_.batch;
  stats_.rto_max = rto_.rto();
  stats_.transport = transport_->describe();
}

void SocketFabric::Impl::set_remote_endpoint(uint32_t rank, const udp::endpoint& ep) {
  if (udp_ == nullptr) throw std::logic_error(fmt::format("socket fabric over {}: no UDP endpoints", transport_->describe()));
  if (!records_.empty()) throw std::logic_error("socket fabric: endpoints cannot change once the run has started");
  udp_->set_remote_endpoint(rank, ep);
}

hd::Receiver& SocketFabric::Impl::receiver(uint32_t dst) {
  return hd::endpoint_of(receivers_, active_receivers_, dst, [&] {
    hd::ReceiverConfig c;
    c.sources = npus_;
    c.window = opt_.window;
    c.nack_delay = opt_.nack_delay;
    c.max_missing_per_nack = kMaxMissingPerNack;
    return c;
  });
}

// --- the model's side ----------------------------------------------------------------------------------

void SocketFabric::Impl::send(const emu::Message& m, emu::Time ready) {
  if (!started_) {
    // Wall time zero is the first send(), not the construction: reading the traces does not count.
    started_ = true;
    clock_.restart();
  }
  if (opt_.live != nullptr) opt_.live->running.store(true, std::memory_order_relaxed);
  model_.send(m, ready);  // validates, and schedules the modelled delivery
  Record r;
  r.walker_id = m.id;
  r.src = static_cast<uint32_t>(m.src);
  r.dst = static_cast<uint32_t>(m.dst);
  r.bytes = m.bytes;
  r.flow = m.flow;
  r.coll = m.coll;
  r.src_local = local_[r.src];
  r.dst_local = local_[r.dst];
  const uint64_t key = next_key_++;
  if (!by_walker_.emplace(m.id, key).second) {
    throw std::logic_error(fmt::format("socket fabric: message id {} is already in flight", m.id));
  }
  Record& rec = records_.emplace(key, r).first->second;
  if (r.src == r.dst) {
    ++stats_.local_messages;
    rec.arrived = rec.acked = true;
  } else if (!r.src_local && !r.dst_local) {
    ++stats_.model_only_messages;
    rec.arrived = rec.acked = true;
  } else {
    // Always an event, even when ready == now: every process with an end of this message then gives
    // the messages of a pair their wire ids in the same order, (ready, send order).
    engine_.at(ready, *this, key);
  }
}

void SocketFabric::Impl::on_event(uint64_t id) {
  const auto it = records_.find(id);
  if (it == records_.end() || it->second.numbered) return;  // numbered already (see on_delivered)
  Record& r = it->second;
  r.numbered = true;
  const uint64_t p = pair(r.src, r.dst);
  r.wire_id = next_wire_[p]++;
  const WireKey key{p, r.wire_id};
  if (r.dst_local) {
    if (early_.erase(key) > 0) {
      r.arrived = true;
      r.arrived_emulated = clock_.emulated();
    } else {
      rx_wait_.emplace(key, id);
    }
  } else {
    r.arrived = true;
  }
  if (!r.src_local) {
    r.acked = true;
    return;
  }
  tx_wait_.emplace(key, id);
  ++stats_.messages_sent;
  stats_.bytes_sent += r.bytes;
  const hd::MessagePacing::FirstHop hop = pacing_.book(model_.topology(), r.src, r.dst, r.flow, r.bytes, engine_.now());
  r.first_link = hop.link;
  r.depart = hop.depart;
  r.rate = hop.rate;
  if (!clock_.as_fast_as_possible()) {
    pacing_.wait(r.depart, id);
    return;
  }
  if (!backlog_.empty() || !try_submit(id, r)) backlog_.push_back(id);
}

bool SocketFabric::Impl::try_submit(uint64_t id, Record& r) {
  const hd::LinkSenders::Pair ps = senders_.of(r.src, r.dst, r.first_link);
  if (held_.size() < senders_.size()) held_.resize(senders_.size());
  hd::Sender& s = senders_[ps.sender];
  uint64_t& next = next_submit_[pair(r.src, r.dst)];
  // The Sender numbers a pair's messages in submission order: it must be the wire id order.
  if (r.wire_id != next || !s.can_submit(ps.dst)) return false;
  const uint64_t got = s.submit(ps.dst, r.bytes, id);
  if (got != r.wire_id) throw std::logic_error("socket fabric: the Sender's message ids diverged from the model's");
  ++next;
  return true;
}

void SocketFabric::Impl::on_delivered(uint64_t id, emu::Time at) {
  const auto w = by_walker_.find(id);
  if (w == by_walker_.end()) throw std::logic_error(fmt::format("socket fabric: unknown message {} delivered", id));
  const uint64_t key = w->second;
  by_walker_.erase(w);
  const auto it = records_.find(key);
  Record& r = it->second;
  // A message delivered at its ready time (zero bytes, zero latency) may come before its own ready-time
  // event: numbered here then, the same way in every process.
  if (!r.numbered && (r.src_local || r.dst_local) && r.src != r.dst) on_event(key);
  const auto wire_done = [&r] { return r.dst_local ? r.arrived : r.acked; };
  int64_t last_progress = clock_.since_start_ns();
  while (!wire_done() || (!clock_.as_fast_as_possible() && clock_.emulated() < at)) {
    if (stop_requested()) {
      interrupted_ = true;
      engine_.stop();
      return;
    }
    const bool got = poll();
    const int64_t now = clock_.since_start_ns();
    if (got || wire_done()) {
      last_progress = now;
    } else if (now - last_progress > static_cast<int64_t>(opt_.stall_timeout.ps() / 1000)) {
      // The run stops here, as on a stop request: the walker reports what had finished and what had not,
      // the "socket" section what went on the wire, and the caller fails with this reason (stalled()).
      const uint32_t peer = r.dst_local ? r.src : r.dst;
      stall_ = fmt::format(
          "message {} ({} bytes, rank {} -> {}) was delivered by the model at {} ps, but for {} ms nothing arrived "
          "for it: it waits for {} from rank {} at {}{}",
          id, r.bytes, r.src, r.dst, at.ps(), opt_.stall_timeout.ps() / 1'000'000'000,
          r.dst_local ? "its datagrams" : "its ACKs", peer, transport_->address_of(peer),
          hd::describe_drops(opt_.faults, "datagrams"));
      engine_.stop();
      return;
    }
  }
  if (r.src != r.dst && r.dst_local && !clock_.as_fast_as_possible()) {
    if (r.arrived_emulated > at) {
      ++stats_.late;
      stats_.lateness_ns.record((r.arrived_emulated - at).ps() / 1000);
    } else {
      ++stats_.on_time;
    }
  }
  r.delivered = true;
  ++stats_.deliveries;
  if (opt_.live != nullptr) opt_.live->emulated_ps.store(static_cast<int64_t>(at.ps()), std::memory_order_relaxed);
  finish_if_done(it);
  if (listener_ != nullptr) listener_->on_delivered(id, at);
}

// A record goes once the walker has it and, with a local source, its last ACK came.
void SocketFabric::Impl::finish_if_done(std::unordered_map<uint64_t, Record>::iterator it) {
  if (it->second.delivered && it->second.acked) records_.erase(it);
}

// --- I/O -----------------------------------------------------------------------------------------------

bool SocketFabric::Impl::poll() {
  const int64_t now_ns = clock_.since_start_ns();
  if (last_poll_ns_ != 0 && now_ns > last_poll_ns_) {
    const auto gap = static_cast<uint64_t>(now_ns - last_poll_ns_);
    stats_.poll_gap_max_ns = std::max(stats_.poll_gap_max_ns, gap);
    if (gap > kStallNs) ++stats_.poll_stalls;
  }
  last_poll_ns_ = now_ns;
  // Receive first: after a stall of this thread (preemption), the ACKs that came meanwhile must reach the
  // senders before their timers are looked at, or everything sent before the stall goes out again.
  rx_any_ = false;
  data_seen_ = false;
  transport_->receive(*this);
  if (local_feedback_) {
    // ACKs and NACKs to local senders go out now and are read back at once (loopback delivers within
    // the send call), so that those senders see them before their timers.
    local_feedback_ = false;
    for (auto& so : socks_) flush(*so, so->feedback);
    transport_->receive(*this);
  }
  if (!data_seen_ && !reorder_.empty()) {
    // Nothing newer came: what was held back is released (it was overtaken by what arrived meanwhile).
    for (size_t i = 0; i < reorder_.size(); ++i) handle_data(reorder_[i].h, reorder_[i].bytes);
    reorder_.clear();
  }
  if (pacing_.waiting()) {
    const emu::Time emulated = clock_.emulated();
    for (uint64_t id; pacing_.pop_due(emulated, id);) backlog_.push_back(id);
  }
  if (!backlog_.empty()) {
    // In order: once one waits, later ones wait too (a pair's wire ids must reach its Sender in order).
    size_t kept = 0;
    for (const uint64_t id : backlog_) {
      if (kept > 0 || !try_submit(id, records_.at(id))) backlog_[kept++] = id;
    }
    backlog_.resize(kept);
  }
  transmit();
  const emu::Time wall = clock_.wall();
  for (const uint32_t dst : active_receivers_) {
    hd::Receiver& rx = *receivers_[dst];
    if (rx.active_messages() == 0) continue;
    nacks_.clear();
    rx.poll_nacks(wall, nacks_);
    for (const hd::Nack& n : nacks_.nacks) {
      feedback(dst, n.src, n.message_id, hd::PacketKind::kNack, n.count, n.cumulative, n.covered,
               std::span<const uint32_t>(nacks_.seqs).subspan(n.first, n.missing));
    }
  }
  for (auto& so : socks_) {
    flush(*so, so->feedback);
    flush(*so, so->data);
  }
  if (opt_.live != nullptr && now_ns - last_publish_ns_ >= kPublishNs) publish();
  return rx_any_;
}

void SocketFabric::Impl::transmit() {
  const emu::Time wall = clock_.wall();
  const emu::Time ts = stamp();
  const bool paced_run = !clock_.as_fast_as_possible();
  for (uint32_t si = 0; si < senders_.size(); ++si) {
    hd::Sender& s = senders_[si];
    const uint32_t src = senders_.src(si);
    Sock& so = *socks_[static_cast<size_t>(sock_of_[src])];
    Queue& q = so.data;
    for (uint32_t k = 0; k < kFramesPerSender; ++k) {
      if (q.n == opt_.batch) {
        flush(so, q);
        if (q.n == opt_.batch) break;  // the socket is full: next round
      }
      hd::TxPacket p;
      if (held_[si]) {
        p = *held_[si];
      } else if (!s.next(wall, p)) {
        break;
      }
      const uint32_t dst = senders_.dst(si, p.dst);  // p.dst is the destination's number in this sender
      Record* rec = nullptr;
      if (const auto w = records_.find(p.cookie); w != records_.end()) {
        if (!p.retransmit) {
          rec = &w->second;
        } else {
          w->second.retransmitted = true;  // Karn's rule: no RTT sample from this message
        }
      }
      // Pacing: a first transmission leaves no earlier than the modelled departure of its bytes on the
      // dilated clock, nor earlier than its link's rate allows after the datagram before.
      uint64_t scheduled_ps = 0;
      if (rec != nullptr && paced_run) {
        scheduled_ps = clock_.to_wall((rec->depart + rec->rate.ser(p.offset)).since_start()).ps();
        const uint64_t due = std::max(scheduled_ps, pace_next_ps_[rec->first_link]);
        const uint64_t now_ps = clock_.wall().ps();
        if (due > now_ps) {
          held_[si] = p;
          break;
        }
        const uint64_t burst_ps = clock_.to_wall(rec->rate.ser(uint64_t{opt_.payload} * kPacingBurstFrames)).ps();
        const uint64_t anchor = now_ps > due + burst_ps ? now_ps - burst_ps : due;
        pace_next_ps_[rec->first_link] = anchor + clock_.to_wall(rec->rate.ser(p.bytes)).ps();
      }
      held_[si].reset();
      const hd::FabemuHeader h{hd::PacketKind::kData, p.retransmit ? hd::kFlagRetransmit : uint16_t{0}, src, dst,
                               p.message_id, p.seq, p.count, p.message_length, p.offset, ts.ps()};
      write_datagram_header(h, slot(q, q.n));
      q.entries[q.n] = TxEntry{static_cast<uint32_t>(kDatagramHeaderBytes + p.bytes), dst,
                               rec != nullptr && paced_run ? rec->first_link : kNoLink, scheduled_ps};
      ++q.n;
      if (rec != nullptr) {
        ++stats_.data_datagrams;
        if (rec->tx_first_ns < 0) rec->tx_first_ns = clock_.since_start_ns();
      }
    }
    flush(so, q);
  }
}

void SocketFabric::Impl::flush(Sock& so, Queue& q) {
  if (q.n == 0) return;
  for (uint32_t i = 0; i < q.n; ++i) tx_batch_[i] = TxDatagram{slot(q, i), q.entries[i].len, q.entries[i].to};
  const uint32_t sent = transport_->send(so.rank, std::span<const TxDatagram>(tx_batch_.data(), q.n));
  if (sent == 0) return;
  const uint64_t now_ps = clock_.wall().ps();
  for (uint32_t i = 0; i < sent; ++i) {
    const TxEntry& e = q.entries[i];
    ++stats_.datagrams_tx;
    stats_.datagram_bytes_tx += e.len;
    if (e.link != kNoLink) {
      stats_.jitter_ns.record((now_ps > e.scheduled_ps ? now_ps - e.scheduled_ps : e.scheduled_ps - now_ps) / 1000);
    }
  }
  if (sent < q.n) {  // the kernel took part of them: the rest moves to the front
    std::memmove(slot(q, 0), slot(q, sent), size_t{q.n - sent} * slot_bytes_);
    std::copy(q.entries.begin() + sent, q.entries.begin() + q.n, q.entries.begin());
  }
  q.n -= sent;
}

void SocketFabric::Impl::datagram(uint32_t rank, std::span<const uint8_t> d, bool truncated) {
  ++stats_.datagrams_rx;
  stats_.datagram_bytes_rx += d.size();
  DecodedDatagram dd;
  const DatagramVerdict v =
      truncated ? DatagramVerdict::kTruncated : decode_datagram(d, DatagramRules{npus_, opt_.payload, rank}, dd);
  if (v != DatagramVerdict::kOurs) {
    ++stats_.not_ours;
    ++stats_.not_ours_by_verdict[static_cast<size_t>(v)];
    return;
  }
  if (dd.hdr.kind != hd::PacketKind::kData) {
    rx_any_ = true;
    handle_feedback(dd);
    return;
  }
  data_seen_ = true;
  const hd::FaultDecision f = faults_.next();
  if (f.drop) return;  // lost on the way: not progress (the stall timeout counts from the last that got through)
  rx_any_ = true;
  if (f.reorder) {
    reorder_.push_back(HeldRx{dd.hdr, dd.payload_bytes, 1 + static_cast<uint32_t>(faults_.uniform(8))});
    return;
  }
  handle_data(dd.hdr, dd.payload_bytes);
  if (f.duplicate) handle_data(dd.hdr, dd.payload_bytes);
  // Packets held back are released behind `after` later data packets.
  for (size_t j = 0; j < reorder_.size();) {
    if (--reorder_[j].after == 0) {
      const HeldRx h = reorder_[j];
      reorder_.erase(reorder_.begin() + static_cast<ptrdiff_t>(j));
      handle_data(h.h, h.bytes);
    } else {
      ++j;
    }
  }
}

void SocketFabric::Impl::handle_data(const hd::FabemuHeader& h, uint32_t bytes) {
  const hd::RxPacket p{h.src_rank, h.message_id, h.seq, h.count, h.message_length, bytes,
                       (h.flags & hd::kFlagRetransmit) != 0};
  hd::Receiver& rx = receiver(h.dst_rank);
  const hd::RxEvent e = rx.on_packet(p, clock_.wall());
  if (e == hd::RxEvent::kInvalid || e == hd::RxEvent::kOutOfWindow) ++stats_.rx_invalid;
  if (e == hd::RxEvent::kCompleted) {
    ++stats_.messages_received;
    stats_.bytes_received += h.message_length;
    const WireKey key{pair(h.src_rank, h.dst_rank), h.message_id};
    const auto w = rx_wait_.find(key);
    if (w != rx_wait_.end()) {
      Record& r = records_.at(w->second);
      r.arrived = true;
      r.arrived_emulated = clock_.emulated();
      rx_wait_.erase(w);
    } else {
      early_.insert(key);  // the sender's process is ahead of this one's replay
    }
  }
  if (e == hd::RxEvent::kCompleted || e == hd::RxEvent::kStale) {
    feedback(h.dst_rank, h.src_rank, h.message_id, hd::PacketKind::kAck, h.count, h.count, h.count, {});
  } else if (e == hd::RxEvent::kAccepted && (h.seq & (kAckEvery - 1)) == kAckEvery - 1) {
    // A partial ACK: everything below the first gap (or up to this packet) has arrived.
    uint32_t gap = 0;
    const size_t n = rx.missing(h.src_rank, h.message_id, std::span<uint32_t>(&gap, 1));
    const uint32_t cumulative = n > 0 ? gap : h.seq + 1;
    if (cumulative > 0) {
      feedback(h.dst_rank, h.src_rank, h.message_id, hd::PacketKind::kAck, h.count, cumulative, cumulative, {});
    }
  }
}

void SocketFabric::Impl::handle_feedback(const DecodedDatagram& d) {
  const hd::FabemuHeader& h = d.hdr;  // from receiver h.src_rank to sender h.dst_rank
  const hd::LinkSenders::Pair ps = senders_.find(h.dst_rank, h.src_rank);
  if (ps.sender == ~0u) {
    ++stats_.rx_invalid;
    return;
  }
  hd::Sender& s = senders_[ps.sender];
  bool done = false;
  if (h.kind == hd::PacketKind::kAck) {
    ++stats_.acks;
    done = s.on_ack(ps.dst, h.message_id, h.seq);
  } else {
    ++stats_.nacks;
    missing_.resize(d.missing_count());
    for (size_t i = 0; i < missing_.size(); ++i) missing_[i] = d.missing(i);
    done = s.on_nack(ps.dst, h.message_id, h.seq, static_cast<uint32_t>(h.offset), missing_, clock_.wall());
  }
  if (!done) return;
  const auto w = tx_wait_.find(WireKey{pair(h.dst_rank, h.src_rank), h.message_id});
  if (w == tx_wait_.end()) return;
  const auto it = records_.find(w->second);
  tx_wait_.erase(w);
  if (it == records_.end()) return;
  Record& r = it->second;
  r.acked = true;
  if (r.tx_first_ns >= 0) {
    const auto ns = static_cast<uint64_t>(std::max<int64_t>(0, clock_.since_start_ns() - r.tx_first_ns));
    stats_.latency_ns.record(ns);
    if (!r.retransmitted) {  // Karn's rule: a retransmission makes the sample ambiguous
      if (rto_.sample(ns)) {
        senders_.set_rto(rto_.rto());
        stats_.rto_max = rto_.max();
      }
      // Tail-loss probes on NACK (Sender::on_nack with `now`), as the DPDK fabric's.
      if (const auto tail = rto_.next_tail_age(opt_.nack_delay)) senders_.set_tail_age(*tail);
    }
  }
  finish_if_done(it);
}

void SocketFabric::Impl::feedback(uint32_t from, uint32_t to, uint64_t id, hd::PacketKind kind, uint32_t count,
                                  uint32_t cumulative, uint32_t covered, std::span<const uint32_t> missing) {
  Sock& so = *socks_[static_cast<size_t>(sock_of_[from])];
  Queue& q = so.feedback;
  if (q.n == opt_.batch) flush(so, q);
  if (q.n == opt_.batch) {
    ++stats_.feedback_dropped;  // the sender's timeout covers it
    return;
  }
  const hd::FabemuHeader h{kind, 0, from, to, id, cumulative, count, 0, covered, stamp().ps()};
  local_feedback_ = local_feedback_ || local_[to];
  const size_t len = encode_datagram(h, 0, missing, {slot(q, q.n), slot_bytes_});
  q.entries[q.n] = TxEntry{static_cast<uint32_t>(len), to, kNoLink, 0};
  ++q.n;
}

// --- after the walk ------------------------------------------------------------------------------------

bool SocketFabric::Impl::drain(emu::Duration limit) {
  // After a stall nothing is waited for: a peer brought nothing for the stall timeout.
  if (stalled()) return false;
  const int64_t start = clock_.since_start_ns();
  const auto limit_ns = static_cast<int64_t>(limit.ps() / 1000);
  const auto busy = [&] {
    if (!backlog_.empty() || pacing_.waiting()) return true;
    for (const auto& so : socks_) {
      if (so->data.n > 0 || so->feedback.n > 0) return true;
    }
    for (size_t i = 0; i < senders_.size(); ++i) {
      if (senders_[i].unacked_messages() > 0 || held_[i]) return true;
    }
    return false;
  };
  bool done = true;
  while (busy()) {
    if (clock_.since_start_ns() - start > limit_ns || stop_requested()) {
      done = false;
      break;
    }
    poll();
  }
  // Then until the sockets are quiet (late re-ACKs), so that nothing of this run is left for another.
  int64_t quiet_since = clock_.since_start_ns();
  while (clock_.since_start_ns() - quiet_since < 2'000'000 && clock_.since_start_ns() - start <= limit_ns) {
    if (poll()) quiet_since = clock_.since_start_ns();
  }
  if (opt_.live != nullptr) {
    publish();
    opt_.live->running.store(false, std::memory_order_relaxed);
  }
  return done;
}

void SocketFabric::Impl::serve(const std::function<bool()>& until) {
  while (!until() && !stop_requested()) poll();
  if (opt_.live != nullptr) publish();
}

void SocketFabric::Impl::publish() {
  LiveMetrics& m = *opt_.live;
  last_publish_ns_ = clock_.since_start_ns();
  stats();
  const auto bump = [](std::atomic<uint64_t>& c, uint64_t& last, uint64_t now) {
    if (now > last) LiveMetrics::add(c, now - last);
    last = now;
  };
  Published& p = published_;
  bump(m.messages_sent, p.messages_sent, stats_.messages_sent);
  bump(m.bytes_sent, p.bytes_sent, stats_.bytes_sent);
  bump(m.messages_received, p.messages_received, stats_.messages_received);
  bump(m.bytes_received, p.bytes_received, stats_.bytes_received);
  bump(m.frames_sent, p.frames_sent, stats_.datagrams_tx);
  bump(m.frames_received, p.frames_received, stats_.datagrams_rx);
  bump(m.retransmissions, p.retransmissions, stats_.retransmissions);
  bump(m.not_ours, p.not_ours, stats_.not_ours);
  // The model's per-link bytes (every process replays the whole model: the same in each).
  const size_t links = std::min(m.link_bytes.size(), p.link_bytes.size());
  for (size_t l = 0; l < links; ++l) {
    bump(m.link_bytes[l], p.link_bytes[l], model_.link_stats(static_cast<emu::LinkId>(l)).bytes);
  }
  m.link_count.store(links, std::memory_order_relaxed);
  m.emulated_ps.store(static_cast<int64_t>(engine_.now().ps()), std::memory_order_relaxed);
}

const SocketStats& SocketFabric::Impl::stats() {
  SocketStats& s = stats_;
  s.wall = emu::Duration::from_ps(clock_.wall().ps());
  s.stall = stall_;
  s.retransmissions = s.nack_retransmissions = s.timeout_retransmissions = 0;
  for (size_t i = 0; i < senders_.size(); ++i) {
    const hd::SenderStats& st = senders_[i].stats();
    s.retransmissions += st.retransmissions;
    s.nack_retransmissions += st.nack_retransmissions;
    s.timeout_retransmissions += st.timeout_retransmissions;
  }
  s.rx_duplicates = s.rx_reordered = s.rx_stale = 0;
  for (const uint32_t r : active_receivers_) {
    const hd::ReceiverStats& st = receivers_[r]->stats();
    s.rx_duplicates += st.duplicates;
    s.rx_reordered += st.reordered;
    s.rx_stale += st.stale;
  }
  const TransportStats t = transport_->stats();
  s.send_errors = t.send_errors;
  s.frames_not_ours = t.frames_not_ours;
  std::copy(std::begin(t.frames_by_ecn), std::end(t.frames_by_ecn), std::begin(s.frames_by_ecn));
  s.frames_dscp_changed = t.frames_dscp_changed;
  s.rcvbuf_bytes = t.rcvbuf_bytes;
  s.sndbuf_bytes = t.sndbuf_bytes;
  s.injected_drops = faults_.dropped();
  s.injected_duplicates = faults_.duplicated();
  s.injected_reorders = faults_.reordered();
  return s;
}

// --- the public face -----------------------------------------------------------------------------------

namespace {
void check_options(const SocketFabricOptions& o) {
  if (o.payload == 0 || o.payload > 65507 - kDatagramHeaderBytes) {
    throw std::invalid_argument(fmt::format("socket fabric: payload {}: expected 1..{}", o.payload,
                                            65507 - kDatagramHeaderBytes));
  }
  if (o.batch == 0 || o.batch > 1024) {
    throw std::invalid_argument(fmt::format("socket fabric: batch {}: expected 1..1024", o.batch));
  }
  if (o.window == 0 || (o.window & (o.window - 1)) != 0) {
    throw std::invalid_argument(fmt::format("socket fabric: window {} must be a power of two", o.window));
  }
  if (o.stall_timeout.ps() == 0) throw std::invalid_argument("socket fabric: zero stall timeout");
  hd::check_sender_class(o.dscp, o.ecn, "socket fabric");
}

std::unique_ptr<UdpTransport> udp_transport(std::vector<udp::endpoint> endpoints, const std::vector<bool>& local,
                                            const emu::Topology& topology, const SocketFabricOptions& o) {
  check_options(o);
  if (endpoints.size() != static_cast<size_t>(topology.npus())) {
    throw std::invalid_argument(
        fmt::format("socket fabric: {} endpoints for {} NPUs", endpoints.size(), topology.npus()));
  }
  return std::make_unique<UdpTransport>(std::move(endpoints), local, o.batch, o.socket_buffer_bytes,
                                        static_cast<uint32_t>(SocketFabric::Impl::slot_bytes(o)), o.dscp, o.ecn);
}
}  // namespace

SocketFabric::SocketFabric(emu::Topology topology, std::vector<udp::endpoint> endpoints, std::vector<bool> local,
                           SocketFabricOptions options) {
  auto udp = udp_transport(std::move(endpoints), local, topology, options);
  UdpTransport* raw = udp.get();
  impl_ = std::make_unique<Impl>(std::move(topology), std::move(udp), raw, std::move(local), std::move(options));
}

SocketFabric::SocketFabric(emu::Topology topology, std::unique_ptr<DatagramTransport> transport,
                           std::vector<bool> local, SocketFabricOptions options) {
  check_options(options);
  if (!transport) throw std::invalid_argument("socket fabric: no transport");
  impl_ = std::make_unique<Impl>(std::move(topology), std::move(transport), nullptr, std::move(local),
                                 std::move(options));
}
SocketFabric::~SocketFabric() = default;
uint32_t SocketFabric::max_datagram(const SocketFabricOptions& options) noexcept {
  return static_cast<uint32_t>(Impl::slot_bytes(options));
}
void SocketFabric::send(const emu::Message& m, emu::Time ready) { impl_->send(m, ready); }
emu::Engine& SocketFabric::engine() { return impl_->engine(); }
void SocketFabric::set_listener(emu::DeliveryListener* listener) { impl_->set_listener(listener); }
bool SocketFabric::drain(emu::Duration limit) { return impl_->drain(limit); }
void SocketFabric::serve(const std::function<bool()>& until) { impl_->serve(until); }
bool SocketFabric::interrupted() const noexcept { return impl_->interrupted(); }
bool SocketFabric::stalled() const noexcept { return impl_->stalled(); }
const emu::PacketFabric& SocketFabric::model() const noexcept { return impl_->model(); }
const SocketStats& SocketFabric::stats() { return impl_->stats(); }
const std::vector<udp::endpoint>& SocketFabric::endpoints() const noexcept { return impl_->endpoints(); }
void SocketFabric::set_remote_endpoint(uint32_t rank, const udp::endpoint& endpoint) {
  impl_->set_remote_endpoint(rank, endpoint);
}

// --- reports -------------------------------------------------------------------------------------------

std::string format_socket_stats(const SocketStats& s) {
  std::string out = fmt::format("Socket fabric ({})\n", s.transport);
  out += fmt::format("  time                {}, wall {:.3f} ms\n",
                     s.dilation == 0 ? std::string("as fast as possible (deliveries at modelled times)")
                                     : fmt::format("dilation {:g} (emulated = wall / {:g})", s.dilation, s.dilation),
                     static_cast<double>(s.wall.ps()) / 1e9);
  if (!s.stall.empty()) out += fmt::format("  stalled             the run stopped: {}\n", s.stall);
  out += fmt::format("  messages            {} sent ({} bytes), {} received ({} bytes), {} local, {} model only, "
                     "{} delivered\n",
                     s.messages_sent, s.bytes_sent, s.messages_received, s.bytes_received, s.local_messages,
                     s.model_only_messages, s.deliveries);
  out += fmt::format("  datagrams sent      {} ({} bytes): {} data, {} retransmitted ({} on NACK, {} on timeout), "
                     "{} ACK, {} NACK received; {} batched per call\n",
                     s.datagrams_tx, s.datagram_bytes_tx, s.data_datagrams, s.retransmissions, s.nack_retransmissions,
                     s.timeout_retransmissions, s.acks, s.nacks, s.batch);
  out += fmt::format("  datagrams received  {} ({} bytes); not ours {}{}\n", s.datagrams_rx, s.datagram_bytes_rx,
                     s.not_ours,
                     s.frames_not_ours == 0 ? std::string()
                                            : fmt::format("; {} other frames on the port", s.frames_not_ours));
  for (size_t v = 1; v < kDatagramVerdictCount; ++v) {
    if (s.not_ours_by_verdict[v] > 0) {
      out += fmt::format("    {:<34}{}\n", to_string(static_cast<DatagramVerdict>(v)), s.not_ours_by_verdict[v]);
    }
  }
  const uint64_t* by = s.frames_by_ecn;
  if (by[1] + by[2] + by[3] + s.frames_dscp_changed > 0) {
    out += fmt::format("  frames by ECN       {} not-ECT, {} ECT(0), {} ECT(1), {} CE (marked on the way); DSCP rewritten on "
                       "{}\n",
                       by[0], by[2], by[1], by[3], s.frames_dscp_changed);
  }
  out += fmt::format("  detected            {} duplicates, {} reordered, {} stale copies, {} invalid\n", s.rx_duplicates,
                     s.rx_reordered, s.rx_stale, s.rx_invalid);
  if (s.injected_drops + s.injected_duplicates + s.injected_reorders > 0) {
    out += fmt::format("  injected faults     {} drops, {} duplicates, {} reorders\n", s.injected_drops,
                       s.injected_duplicates, s.injected_reorders);
  }
  if (s.send_errors + s.feedback_dropped > 0) {
    out += fmt::format("  send errors         {}; feedback not queued {}\n", s.send_errors, s.feedback_dropped);
  }
  out += fmt::format("  retransmit timeout  up to {:.3f} ms (adaptive){}\n", static_cast<double>(s.rto_max.ps()) / 1e9,
                     s.rcvbuf_bytes == 0 ? std::string()
                                         : fmt::format("; socket buffers rcv {} / snd {} bytes", s.rcvbuf_bytes,
                                                       s.sndbuf_bytes));
  if (s.dilation > 0) {
    out += fmt::format("  late deliveries     {} of {} (wire slower than the target){}\n", s.late, s.late + s.on_time,
                       s.late == 0 ? std::string()
                                   : fmt::format(": by {} (emulated ns)", hd::histogram_text(s.lateness_ns)));
    out += fmt::format("  departure jitter    |actual - scheduled| {} ns over {} datagrams (wall, after sendmmsg)\n",
                       hd::histogram_text(s.jitter_ns), s.jitter_ns.count());
    out += fmt::format("  polling             {} stalls over 100 us, longest gap {} ns\n", s.poll_stalls,
                       s.poll_gap_max_ns);
  }
  if (s.latency_ns.count() > 0) {
    out += fmt::format("  message latency     {} ns over {} messages (first datagram sent to its last ACK)\n",
                       hd::histogram_text(s.latency_ns), s.latency_ns.count());
  }
  return out;
}

std::string socket_stats_to_json(const SocketStats& s) {
  std::string o = "{\n";
  const auto kv = [&](const char* k, const std::string& v, bool last = false) {
    o += fmt::format("    \"{}\": {}{}\n", k, v, last ? "" : ",");
  };
  const auto n = [](uint64_t v) { return fmt::format("{}", v); };
  kv("transport", fmt::format("\"{}\"", s.transport));
  kv("dilation", fmt::format("{}", s.dilation));
  kv("wall_ps", n(s.wall.ps()));
  kv("stall", s.stall.empty() ? std::string("null") : nlohmann::json(s.stall).dump());
  kv("messages_sent", n(s.messages_sent));
  kv("bytes_sent", n(s.bytes_sent));
  kv("messages_received", n(s.messages_received));
  kv("bytes_received", n(s.bytes_received));
  kv("model_only_messages", n(s.model_only_messages));
  kv("local_messages", n(s.local_messages));
  kv("deliveries", n(s.deliveries));
  kv("datagrams_tx", n(s.datagrams_tx));
  kv("datagram_bytes_tx", n(s.datagram_bytes_tx));
  kv("datagrams_rx", n(s.datagrams_rx));
  kv("datagram_bytes_rx", n(s.datagram_bytes_rx));
  kv("data_datagrams", n(s.data_datagrams));
  kv("retransmissions", n(s.retransmissions));
  kv("nack_retransmissions", n(s.nack_retransmissions));
  kv("timeout_retransmissions", n(s.timeout_retransmissions));
  kv("rto_max_ps", n(s.rto_max.ps()));
  kv("acks", n(s.acks));
  kv("nacks", n(s.nacks));
  kv("rx_duplicates", n(s.rx_duplicates));
  kv("rx_reordered", n(s.rx_reordered));
  kv("rx_stale", n(s.rx_stale));
  kv("rx_invalid", n(s.rx_invalid));
  kv("injected_drops", n(s.injected_drops));
  kv("injected_duplicates", n(s.injected_duplicates));
  kv("injected_reorders", n(s.injected_reorders));
  std::string verdicts = "{";
  bool first = true;
  for (size_t v = 1; v < kDatagramVerdictCount; ++v) {
    if (s.not_ours_by_verdict[v] == 0) continue;
    verdicts += fmt::format("{}\"{}\": {}", first ? "" : ", ", to_string(static_cast<DatagramVerdict>(v)),
                            s.not_ours_by_verdict[v]);
    first = false;
  }
  kv("not_ours", n(s.not_ours));
  kv("not_ours_by_verdict", verdicts + "}");
  kv("frames_not_ours", n(s.frames_not_ours));
  kv("frames_by_ecn", fmt::format("{{\"not_ect\": {}, \"ect1\": {}, \"ect0\": {}, \"ce\": {}}}", s.frames_by_ecn[0],
                                  s.frames_by_ecn[1], s.frames_by_ecn[2], s.frames_by_ecn[3]));
  kv("frames_dscp_changed", n(s.frames_dscp_changed));
  kv("send_errors", n(s.send_errors));
  kv("feedback_dropped", n(s.feedback_dropped));
  kv("late", n(s.late));
  kv("on_time", n(s.on_time));
  kv("lateness_ns", hd::histogram_json(s.lateness_ns, false));
  kv("latency_ns", hd::histogram_json(s.latency_ns, false));
  kv("jitter_ns", hd::histogram_json(s.jitter_ns, false));
  kv("poll_gap_max_ns", n(s.poll_gap_max_ns));
  kv("poll_stalls", n(s.poll_stalls));
  kv("rcvbuf_bytes", fmt::format("{}", s.rcvbuf_bytes));
  kv("sndbuf_bytes", fmt::format("{}", s.sndbuf_bytes));
  kv("batch", n(s.batch), true);
  o += "  }";
  return o;
}

}  // namespace fabemu::lab
