// The DPDK fabric's transmit side, per lcore (README.md, "Several transmit lcores"): a TxLane is everything
// one lcore needs to send its links' frames, in the style of DPDK's l2fwd (no shared mutable state on the
// hot path): the Senders of its links (reliability), their pacers and busy periods, the flows' frame
// templates, its mbuf stash, its own transmit queues of port A, its held frames (build-ahead) and its
// counters. With `--dpdk-tx-lcore off` the main lcore runs the one lane inline (the fabric's transmit()
// on it, as before); with transmit lcores each lane runs on an lcore of its own (TxWorker), and the
// walker hands it messages, and the main lcore the feedback for its senders, through single-producer
// single-consumer rte_rings. Links are sharded by their source rank: lane = source rank mod lanes, so
// every frame of a link (and of a pair) is built, paced and sent by one lcore, in its order.
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emulator/fabric.h"
#include "emulator/histogram.h"
#include "emulator/time.h"
#include "host/dpdk/dpdk_stats.h"
#include "host/dpdk/link_pacer.h"
#include "host/wire/first_frames.h"
#include "host/wire/flow_templates.h"
#include "host/wire/reassembly.h"

struct rte_ring;

namespace fabemu::host::dpdk {

// One walker message (DpdkFabric's record of it). Written by the main lcore before the message is handed
// to its lane (the ring's release orders it); a lane reads its first link, departure and rate for pacing
// and stamps tx_ticks when the device takes its first frame (a relaxed atomic: the main lcore reads it once
// the message has arrived, which it cannot before that frame left).
struct MessageRecord {
  uint32_t src = 0, dst = 0;
  uint64_t bytes = 0;
  uint64_t flow = 0;
  uint64_t wire_id = 0;
  std::atomic<uint64_t> tx_ticks{0};  // TSC: its first frame taken by the device
  uint64_t rx_ticks = 0;              // TSC: its last frame received
  emu::Time ready;            // handed to the fabric (modelled)
  uint32_t coll = emu::Message::kNoCollective;
  emu::Time arrived_emulated;  // the dilated wall clock when its last packet arrived
  emu::Time depart;           // modelled departure of its first byte on its first link
  // D > 0: the dilated wall clock when the walker handed it over (submit): later than `ready` when the
  // walker waited for the wire (a message it depends on arrived late).
  emu::Time handed;
  emu::Rate rate = emu::Rate::from_ps_per_byte_q32(0);  // of that link
  uint32_t first_link = 0;
  bool submitted = false, arrived = false, local = false;
  bool retransmitted = false;  // a frame of it was sent again: no RTT sample (Karn's rule)
  uint32_t ce = 0;             // its packets that arrived marked CE (RxCompletion::ce)
};

// Per first link: its frames and bytes and the busy periods of its first transmissions (LinkBusy: online,
// a link's first transmissions leave in the order of their schedule), and of the closed periods those
// in which the polling thread stalled (disturbed).
struct LinkPace : LinkBusy {
  uint64_t disturbed = 0;
};

// A gap of a polling lcore (wall ps).
struct PollStall {
  uint64_t from_ps, to_ps;
};

// Build-ahead (DpdkFabricOptions::ahead): a sender's first transmissions built before they are due wait
// in its Held queue, in order, and move to their transmit queue (with their PacedRuns and first-frame
// entries) once due. While a sender holds frames, its new ones queue behind them, so a link's frames
// leave in their order.
struct HeldFrames {
  std::vector<rte_mbuf*> mbufs;
  std::vector<PacedRun> runs;
  std::vector<std::pair<size_t, MessageRecord*>> firsts;  // index into mbufs of a message's first frame
  size_t mbuf_head = 0, run_head = 0, first_head = 0;
  size_t frames() const noexcept { return mbufs.size() - mbuf_head; }
};

// A message the main lcore hands to a transmit lcore (32 bytes, an element of the hand-over ring).
struct TxHandOver {
  MessageRecord* record;  // the Sender's cookie
  uint64_t wire_id;       // the id the pair's Sender gives it (ids are consecutive per pair: checked)
  uint64_t stamp_ps;      // the engine's time at the hand-over: the frames' header stamp unpaced
  uint32_t src, dst;
};
static_assert(sizeof(TxHandOver) == 32);

// A transmit lcore tells the main lcore that a packet of a message was sent again (Karn's rule: no RTT
// sample from it). 16 bytes, an element of the notice ring.
struct TxRetransmitted {
  uint64_t wire_id;
  uint32_t src, dst;
};
static_assert(sizeof(TxRetransmitted) == 16);

// What one transmit lcore did (DpdkStats::TxLcore): merged into the fabric's counters once it has stopped.
struct TxLaneCounters {
  uint64_t polls = 0, handed = 0, feedback = 0;
  uint64_t poll_stalls = 0, poll_gap_max_ns = 0;
};

struct TxLane {
  static constexpr uint16_t kStash = 32;       // data mbufs taken from the zero pool at a time
  static constexpr uint16_t kShortStash = 8;   // the runs of one next_runs call
  unsigned lcore = 0;                          // the main lcore for the inline lane
  uint16_t txq_base = 0;                       // port A transmit queue of its local queue 0
  LinkSenders senders;
  // By sender: no work before this wall ps (Sender::next_work after its last transmit; 0 once a message
  // is submitted to it, a NACK reaches it or the RTO changes). Contiguous: transmit() reads it per poll.
  std::vector<uint64_t> next_work;
  FlowTemplates templates;  // the data frames' templates, by flow
  rte_mbuf* stash[kStash] = {};  // taken from the data pool, not yet used
  uint16_t stash_next = 0, stash_n = 0;
  rte_mbuf* short_stash[kShortStash] = {};  // RoCEv2: a run's shorter last frame, from port A's pool
  uint16_t short_n = 0;
  std::array<TxRun, kShortStash> runs{};
  // By local queue (one per receive path: a sender's frames on the one of its source rank mod the
  // queues): frames built and not yet taken by the device, their PacedRuns, their messages' first frames.
  std::vector<std::vector<rte_mbuf*>> data;
  std::vector<PacedQueue> paced_q;
  std::vector<FirstFrames<MessageRecord>> firsts;
  std::vector<PacedRun> paced;  // pace_run's runs of one next_runs call: [0, paced_n)
  uint32_t paced_n = 0;
  uint64_t pace_now_ps = 0;     // pace_run's last reading of the wall clock
  uint64_t pace_ahead_ps = 0;   // pace_run's build-ahead for the sender at hand (wall)
  // Per link (only its own links' are used): the pacer's next slot, the busy periods, the closed
  // undisturbed periods' ratios.
  std::vector<LinkSlot> pace_slot;
  std::vector<LinkPace> link_pace;
  std::vector<double> period_ratios;
  std::vector<HeldFrames> held;  // by sender
  std::vector<uint32_t> holding;  // the senders with held frames
  size_t held_frames = 0;
  bool behind = false;  // a run built over `ahead` late: build nothing ahead
  uint64_t next_release_ps = ~uint64_t{0};  // the earliest due time of a held frame (wall)
  uint64_t ip_id = 0;
  uint64_t stamp_ps = 0;  // a transmit lcore's unpaced header stamp: the latest hand-over's engine time
  std::vector<uint32_t> missing;  // a NACK's list
  // Its counters: the main lcore's DpdkStats and stall list for the inline lane, its own on an lcore.
  DpdkStats* st = nullptr;
  std::vector<PollStall>* stalls = nullptr;
  DpdkStats own_stats;
  std::vector<PollStall> own_stalls;
  TxLaneCounters counters;
  uint64_t last_poll_ps = 0;
  // On an lcore of its own: the rings from the main lcore (hand-overs, feedback mbufs) and to it
  // (retransmission notices), and the messages handed over that wait for their pair's window.
  rte_ring* handovers = nullptr;
  rte_ring* feedback = nullptr;
  rte_ring* notices = nullptr;
  std::vector<TxHandOver> backlog;
  std::array<TxHandOver, 32> taken{};  // a round's hand-overs off the ring
  std::vector<uint8_t> scratch;  // decode_mbuf's
  std::vector<TxRetransmitted> pending_notices;  // the notice ring was full
  uint64_t rto_generation = 0;
  // Main -> lane: drain() asks the lane to say when it is settled.
  alignas(64) std::atomic<bool> draining{false};
  // Lane -> main: while draining, the hand-overs it has taken when nothing is left to send or
  // acknowledge (every message it took is acknowledged, nothing built or held), else ~0.
  alignas(64) std::atomic<uint64_t> settled{~uint64_t{0}};

  TxLane() = default;
  TxLane(const TxLane&) = delete;
  TxLane& operator=(const TxLane&) = delete;
  ~TxLane();
  // Frames built and not yet taken by the device (held ones included).
  size_t built() const noexcept {
    size_t n = held_frames;
    for (const auto& q : data) n += q.size();
    return n;
  }
  // Creates the three rings (names unique in the process); std::runtime_error when it cannot. The rest of
  // its state is made by the lcore that runs it (TxLaneLoop::tx_lane_start).
  void make_rings(unsigned ring_size);
};

// What a TxWorker runs, a round at a time (DpdkFabric).
class TxLaneLoop {
 public:
  // The lane's state (senders, templates, queues, tables), made by the lcore that runs it.
  virtual void tx_lane_start(TxLane& lane) = 0;
  virtual void tx_lane_round(TxLane& lane) = 0;

 protected:
  ~TxLaneLoop() = default;
};

// Runs a TxLane on an lcore of its own (rte_eal_remote_launch) until stopped. Main lcore API only.
class TxWorker {
 public:
  // std::runtime_error when the lcore cannot be launched.
  TxWorker(TxLaneLoop& loop, TxLane& lane, unsigned lcore);
  // Stops at once and waits.
  ~TxWorker();
  TxWorker(const TxWorker&) = delete;
  TxWorker& operator=(const TxWorker&) = delete;

  void request_stop() noexcept { stop_.store(true, std::memory_order_release); }
  bool done() const noexcept { return done_.load(std::memory_order_acquire); }
  // Waits for the worker; afterwards its lane may be read. Rethrows its failure as std::runtime_error.
  void join();
  bool joined() const noexcept { return joined_; }
  unsigned lcore() const noexcept { return lcore_; }

 private:
  static int entry(void* self);
  int run() noexcept;

  TxLaneLoop& loop_;
  TxLane& lane_;
  unsigned lcore_;
  bool joined_ = false;
  std::string failure_;  // written by the worker before done_
  alignas(64) std::atomic<bool> stop_{false};
  alignas(64) std::atomic<bool> done_{false};
};

}  // namespace fabemu::host::dpdk
