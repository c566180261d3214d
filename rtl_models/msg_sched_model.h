// MsgSchedModel: the C++ reference of the message-level FPGA scheduler (issue 46, items 1 and 2;
// hw/sched/doc/msg_interface.md). The card takes message descriptors, cuts each message into packets at
// the MTU, walks them along their route (from the route array the host loads, one record per route) through
// per-link FIFOs with DESIGN.md's link contract (depart at max(arrival, link_free), link_free += ser(n),
// far end at link_free + latency; Q32.32 ps per byte, integer ps), and answers one delivery record per
// message. It is PacketFabric's model run on the card: the same arithmetic (rtl::ser_ps), the same FIFOs,
// one event per packet per hop, processed in (time, class, sequence) order where class 0 is a message
// handed to its first link and class 1 a packet reaching a link's far end: at one picosecond, the host's
// messages enter before the packets already on the wire move on (hw/sched/doc/msg_interface.md, "Ties").
//
// Conservative synchronisation with the host: the host's watermark W promises that every message with a
// ready time below W has been pushed; advance(W) processes every event before W and no other. A delivery is
// known (its record output) the moment the message's last packet enters its last link, at least one link
// latency before it happens, so known_until() runs ahead of W by the smallest latency at least, and often by
// much more: to the earliest delivery still unrecorded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "emulator/slot_pool.h"
#include "hw/sched/include/fabemu_msg_map.h"
#include "hw/sched/include/fabemu_sched_map.h"

namespace fabemu::rtl {

// The checks of MsgSchedModel's constructor, append_route and push (std::invalid_argument), shared with the
// hw-emu of the RTL card (rtl_models/sched_msg_hwemu.h), which makes them on the host side.
void check_msg_card(std::span<const hw::sched::LinkEntry> links, uint32_t mtu);
void check_msg_route(std::span<const uint32_t> link_ids, std::size_t links);
void check_msg_desc(const hw::msg::MsgDesc& d, uint64_t watermark, std::size_t route_size);

using PacketDeparture = hw::msg::Departure;

class MsgSchedModel {
 public:
  struct LinkCounters {
    uint64_t bytes = 0;
    uint64_t packets = 0;
  };

  // `links`: the link table (Q32.32 ps per byte, latency, initial link_free). Throws std::invalid_argument
  // for mtu 0, no links, or a link of latency 0 (the card needs a lookahead of at least 1 ps).
  MsgSchedModel(std::span<const hw::sched::LinkEntry> links, uint32_t mtu);

  // Appends link ids to the route array. std::invalid_argument (naming the id) for an id past the table.
  void append_route(std::span<const uint32_t> link_ids);
  std::size_t route_size() const noexcept { return route_.size(); }

  // Takes the next descriptor of the ring. std::invalid_argument (naming its id) when its ready time is
  // below the last watermark, its route is empty or outside the route array, or its bytes exceed the field.
  void push(const hw::msg::MsgDesc& d);
  // The host's watermark (monotonic: a smaller one is ignored): processes every event before `w`.
  void advance(uint64_t w);
  // Every delivery of a message pushed so far that happens before this time has been output: the earliest
  // delivery a message whose record is not out can still have (a message not handed to its first link yet:
  // its ready time + its route's latencies; one on its way: its last packet's far end on its current link +
  // the latencies of the links after it). ~0 when every record is out. Messages pushed later are the
  // host's to bound (their ready time + their route's latencies); every term is at least W + the smallest
  // latency.
  uint64_t known_until() const noexcept;
  // Moves the delivery records output so far to the end of `out`, in output order; returns how many.
  std::size_t take(std::vector<hw::msg::Delivery>& out);
  // Moves the departures released so far (every one before the watermark) to the end of `out`, in release
  // order; returns how many.
  std::size_t take_departures(std::vector<PacketDeparture>& out);

  // Messages pushed and not yet through (their last packet still on a link).
  std::size_t in_flight() const noexcept { return in_flight_; }
  const LinkCounters& link_counters(uint32_t link) const noexcept { return counters_[link]; }
  uint64_t events() const noexcept { return events_; }
  uint64_t runs() const noexcept { return run_seq_; }
  uint64_t packet_hops() const noexcept { return hops_; }
  uint64_t watermark() const noexcept { return watermark_; }

 private:
  static constexpr uint32_t kNone = ~uint32_t{0};
  struct Link {
    uint64_t rate_q32, latency_ps, free_ps;
    uint32_t head = kNone, tail = kNone;
  };
  struct Packet {
    uint64_t far_end_ps;
    uint32_t next, msg, bytes, hop;
    bool last;  // the message's last packet
  };
  struct Message {
    hw::msg::MsgDesc d;
    uint64_t packets;
    uint64_t packets_left;
    uint32_t last_packet;    // kNone until segmented
    uint64_t tail_latency;   // sum of the latencies of the route (for the known-until bound)
    bool recorded;
  };
  struct Event {
    uint64_t time;
    uint64_t key;  // class << 63 | sequence; index in `what`
    uint32_t what;
  };
  static bool later(const Event& a, const Event& b) noexcept {
    return a.time != b.time ? a.time > b.time : a.key > b.key;
  }
  struct Run {
    PacketDeparture next;  // the run's next departure
    uint64_t seq, ser_ps, last_bytes;
  };
  static bool run_later(const Run& a, const Run& b) noexcept {
    return a.next.time_ps != b.next.time_ps ? a.next.time_ps > b.next.time_ps : a.seq > b.seq;
  }

  void schedule(uint64_t time, bool hop_class, uint32_t what);
  void inject(uint32_t m, uint64_t now);
  void enter(uint32_t link, uint32_t p, uint64_t now);
  void leave(uint32_t link, uint64_t now);
  // The message's packets leaving its first link from `start` on, one every ser(MTU) ps.
  void add_run(const Message& msg, uint64_t start, uint64_t rate_q32);
  void release_departures(uint64_t before);
  // The earliest delivery message `m` can still have, while its record is not out.
  uint64_t earliest_delivery(uint32_t m) const noexcept;

  std::vector<Link> links_;
  std::vector<LinkCounters> counters_;
  uint32_t mtu_;
  std::vector<uint32_t> route_;
  emu::SlotPool<Packet> packets_;
  emu::SlotPool<Message> messages_;
  std::vector<Event> heap_;
  uint64_t sequence_ = 0;
  uint64_t watermark_ = 0;
  std::size_t in_flight_ = 0;
  std::vector<hw::msg::Delivery> out_;
  std::vector<Run> runs_;  // a heap by (next departure, sequence)
  uint64_t run_seq_ = 0;
  std::vector<PacketDeparture> departures_;
  uint64_t events_ = 0;
  uint64_t hops_ = 0;
};

}  // namespace fabemu::rtl
