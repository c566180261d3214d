// The software fabrics: PacketFabric, congestion-aware (every link a FIFO server, packet by packet, as
// DESIGN.md's link contract says), and AnalyticalFabric, congestion-unaware closed form for fast sweeps.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "emulator/binned_series.h"
#include "emulator/event_queue.h"
#include "emulator/fabric.h"
#include "emulator/packet_pool.h"
#include "emulator/slot_pool.h"
#include "emulator/time.h"
#include "emulator/topology.h"

namespace fabemu::emu {

// Per-link counters of the traffic a fabric carried, for reports and conservation checks.
struct LinkStats {
  uint64_t bytes = 0;
  uint64_t packets = 0;
};

// Where PacketFabric's hop timing is computed, when not by PacketFabric itself: a device that takes the
// link contract's arithmetic (host/fpga's scheduler kernel). Hops are handed over one by one, in the order
// they enter their links, and answered in batches, in the same order; the batcher keeps each link's
// link_free between batches.
class HopBatcher {
 public:
  virtual ~HopBatcher() = default;
  // A packet of `bytes` enters link `link` at `enter_ps`.
  virtual void add(uint32_t link, uint64_t enter_ps, uint32_t bytes) = 0;
  // The far-end times of every hop added since the last answer, in their order (far_end_ps.size() of
  // them); the batch is then closed.
  virtual void answer(std::span<uint64_t> far_end_ps) = 0;
};

// A message is cut into packets of `mtu` bytes (the last one shorter; a 0-byte message is one 0-byte
// packet). At each link a packet of n bytes arriving at t departs at d = max(t, link_free), frees the
// link at link_free = d + ser(n) and reaches the far end at link_free + latency; store-and-forward at
// every hop. The message is delivered when its last packet reaches dst. Its route is Topology::route of
// (src, dst, Message::flow): on a fat-tree the flow picks the spine (ECMP), one path per flow.
//
// Because a link is FIFO with a constant latency, a packet's far-end time is known the moment it
// reaches the link, and packets leave the far end in arrival order. So each link keeps one FIFO of
// packets with their far-end times and only its head has a pending event (htsim's one event per
// component): one event per packet per hop. Ties at equal times follow the engine's insertion order.
//
// The hop timing seam: by default the fabric computes a hop's far-end time the moment the packet enters
// the link. Given a HopBatcher, it hands the hop over instead and learns its time in conservative
// windows: a packet entering a link at t reaches the far end no earlier than t + L (L = the smallest link
// latency), so every hop that enters during [t0, t0 + L) is one batch, answered by an event at
// t0 + L - 1, before any of them can arrive (L = 0: each hop is a batch of its own). A link's head event
// whose time is not known yet, or could tie with one that is not, waits for the answer and is scheduled
// then, in the order it would have been: so runs whose sends are all known up front (or made from
// delivery callbacks) take the same times and event order as without a batcher, plus one event per batch.
// What can differ is the order at one picosecond between such a head event and an event another
// component scheduled during the same window (hw/README.md, "FpgaFabric").
//
// Packets and per-message state come from free lists that grow to the peak in flight and are then
// reused: no allocation per packet or message in steady state. All packets of a message enter its
// first link's FIFO when it is sent, so the peak is the bytes in flight / mtu.
class PacketFabric final : public Fabric, private EventTarget {
 public:
  // Preconditions: mtu >= 1 (std::invalid_argument otherwise). `engine` (and `batcher`, when given)
  // must outlive the fabric. `name` starts its error messages.
  PacketFabric(Engine& engine, Topology topology, uint32_t mtu, HopBatcher* batcher = nullptr,
               const char* name = "PacketFabric");

  // Throws std::invalid_argument when src or dst is not an NPU of the topology or ready < now.
  // A message ready later waits in a pooled slot for an injection event at `ready`.
  void send(const Message& m, Time ready) override;
  using Fabric::send;
  Engine& engine() override { return engine_; }
  void set_listener(DeliveryListener* listener) override { listener_ = listener; }

  const Topology& topology() const noexcept { return topology_; }
  uint32_t mtu() const noexcept { return mtu_; }
  const LinkStats& link_stats(LinkId link) const noexcept { return stats_[link]; }
  uint64_t messages_delivered() const noexcept { return delivered_; }
  // Packets allocated so far (the pool's high-water mark): it stops growing in steady state.
  std::size_t packet_pool_size() const noexcept { return pools_.packet_pool_size(); }
  // Records every link's busy time in `bins` bins from now on (the report's link_series, --link-series):
  // one busy interval [departure, link_free) per packet-hop, without a batcher (a batcher's hops are timed
  // elsewhere: the series stays empty). Throws std::invalid_argument for a bad bin count.
  void record_link_series(uint32_t bins) { series_.emplace(topology_.links().size(), bins, kFirstBinPs); }
  const BinnedSeries* link_series() const noexcept { return series_ ? &*series_ : nullptr; }

 private:
  static constexpr uint32_t kNone = ~uint32_t{0};
  static constexpr uint64_t kUnknown = ~uint64_t{0};  // a far end the batcher has not answered yet
  using Pools = PacketPools;
  struct LinkState {
    Time free_at;         // link_free of the contract (without a batcher)
    uint32_t head = kNone;
    uint32_t tail = kNone;
  };

  // The last route each NPU sent a message on, when it has at most kCachedHops links: a run of messages to
  // one peer (every step of a ring collective) computes its route once. The flow is part of the key only
  // where it picks the path (a fat-tree's ECMP); a route is a pure function of its key, so a hit is exact.
  static constexpr std::size_t kCachedHops = 6;
  struct CachedRoute {
    int32_t dst = -1;  // -1: nothing cached
    uint32_t hops = 0;
    uint64_t flow = 0;
    std::array<LinkId, kCachedHops> links{};
  };

  // arg: a link index, kInjectBit | a slot of the pools' parked messages (ready time come), or kFlush.
  void on_event(uint64_t arg) override;
  void inject(const Message& m);
  // Message m's route (Topology::route of (src, dst, flow)), written into `out`: from the cache when it holds it.
  std::span<LinkId> route_of(const Message& m, std::span<LinkId> out);
  // Packet `p` reaches link `l` at now(): the hop timed at once, or (kBatched) handed to the batcher.
  template <bool kBatched>
  void enter(uint32_t l, uint32_t p);
  void enter(uint32_t l, uint32_t p) { batcher_ == nullptr ? enter<false>(l, p) : enter<true>(l, p); }
  // With a batcher: hands packet `p`'s hop on link `l` over, opening a window when none is open.
  void batch_hop(uint32_t l, uint32_t p);
  // With a batcher: schedules link l's head event if its time is known and cannot tie with a hop not
  // answered yet, else keeps it for the answer.
  void schedule_head(uint32_t l);
  // Closes the window: the batcher's answers become far-end times, and the head events kept wait no more.
  void flush();

  Engine& engine_;
  Topology topology_;
  uint32_t mtu_;
  HopBatcher* batcher_;
  const char* name_;
  DeliveryListener* listener_ = nullptr;
  // One per link, plus a last loopback "link" (zero time) that delivers src == dst messages in an
  // event of their own rather than inside send().
  std::vector<LinkState> links_;
  std::vector<LinkStats> stats_;
  std::vector<CachedRoute> route_cache_;  // per source NPU
  bool flow_picks_route_ = false;         // Topology::is_fat_tree()
  Pools pools_;  // packets and messages in flight, messages waiting for their ready time
  uint64_t delivered_ = 0;
  static constexpr uint64_t kFirstBinPs = 1000;  // 1 ns, doubled as the run grows
  std::optional<BinnedSeries> series_;
  // The batcher's window: its length L, the time before which no hop of it arrives (kUnknown: none
  // open), its packets in the order handed over, their answers, and the links whose head events wait.
  uint64_t lookahead_ps_ = 0;
  uint64_t floor_ps_ = kUnknown;
  std::vector<uint32_t> batch_packets_;
  std::vector<uint64_t> answers_;
  std::vector<uint32_t> deferred_heads_;
  static constexpr uint64_t kInjectBit = uint64_t{1} << 63;
  static constexpr uint64_t kFlush = ~uint64_t{0};  // beyond any slot, so a link event tests one bit
};

// ASTRA-sim's analytical model: no queues, every message alone on the fabric. A message of B bytes sent
// at t over links 1..H is delivered at
//   t + sum_h latency_h + ser_min(B),  ser_min = the ser() of the slowest link of the route
// (for one rate and latency this is DESIGN.md's hops * latency + ser(bytes)); src == dst gives t.
// The route is the one of Message::flow (the ECMP key), as in PacketFabric.
// Whole message, no packets: pipelining across hops is assumed perfect, as in ASTRA-sim.
class AnalyticalFabric final : public Fabric, private EventTarget {
 public:
  AnalyticalFabric(Engine& engine, Topology topology);

  // Throws std::invalid_argument when src or dst is not an NPU of the topology or ready < now.
  void send(const Message& m, Time ready) override;
  using Fabric::send;
  Engine& engine() override { return engine_; }
  void set_listener(DeliveryListener* listener) override { listener_ = listener; }
  const AnalyticalFabric* analytical() const override { return this; }

  const Topology& topology() const noexcept { return topology_; }
  // The closed form above, as a duration from injection.
  Duration delay(const Message& m) const;
  uint64_t messages_delivered() const noexcept { return delivered_; }

 private:
  void on_event(uint64_t slot) override;

  Engine& engine_;
  Topology topology_;
  DeliveryListener* listener_ = nullptr;
  SlotPool<uint64_t> pending_;  // message ids waiting for their delivery event
  uint64_t delivered_ = 0;
  mutable std::vector<LinkId> route_buf_;  // max_hops entries, reused by delay()
  bool uniform_ = false;                   // every link has the same rate and latency
};

}  // namespace fabemu::emu
