// The DPDK fabric (issue 4, first vertical slice): the walker's messages become real frames (host/wire/frame.h) on a
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
//
// The class in parts, one file each: dpdk_fabric.cpp (making, send, one round of I/O: poll, drain),
// dpdk_transmit.cpp (a transmit lane's frames built, paced, held, flushed), dpdk_tx_lanes.cpp (the lanes on
// transmit lcores: hand-overs, feedback, their rounds), dpdk_receive.cpp (the delay line, completions,
// feedback, the RTO), dpdk_fabric_stats.cpp (stats()). The devices are dpdk_ports.h, the stats and their
// report dpdk_stats.h.
#pragma once

#include <rte_mbuf.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "emulator/event_queue.h"
#include "emulator/fabric.h"
#include "emulator/histogram.h"
#include "emulator/packet_fabric.h"
#include "emulator/report.h"
#include "emulator/topology.h"
#include "host/wire/collective_spans.h"
#include "host/wire/address_plan.h"
#include "host/dpdk/dpdk_env.h"
#include "host/dpdk/dpdk_ports.h"
#include "host/dpdk/dpdk_stats.h"
#include "host/wire/realtime_fabric.h"
#include "host/wire/first_frames.h"
#include "host/wire/flow_templates.h"
#include "host/wire/message_pacing.h"
#include "host/wire/pcap_writer.h"
#include "host/dpdk/realtime.h"
#include "host/dpdk/link_pacer.h"
#include "host/wire/reassembly.h"
#include "host/wire/rto_estimator.h"
#include "host/dpdk/rx_worker.h"
#include "host/dpdk/tx_lane.h"
#include "host/wire/frame.h"
#include "host/wire/live_metrics.h"

namespace fabemu::host::dpdk {

struct DpdkFabricOptions {
  uint32_t model_mtu = ~uint32_t{0};  // the PacketFabric's packet size (the software model's --mtu)
  WireMode mode = WireMode::kFabemu;
  uint32_t wire_mtu = 1500;           // IP MTU of the frames (message bytes per frame: max_payload_for_mtu)
  // The IPv4 TOS byte of every frame (data, ACK, NACK): the traffic class a switch queues them in, and
  // whether they are ECN-capable (ECT(0)/ECT(1): a switch that marks ECN marks them CE instead of dropping
  // them). Data frames that arrive CE-marked or with another DSCP are counted (DpdkStats).
  uint8_t dscp = 0;                   // 0..63
  Ecn ecn = Ecn::kNotEct;             // kNotEct, kEct0 or kEct1 (kCe is refused)
  double dilation = 0;                // 0: as fast as possible; D > 0: D times slower than the target
  // D > 0: how far ahead of the dilated clock (wall time) the fabric works (README.md, "Build-ahead"): the
  // walker takes a delivery whose frames have arrived this long before its modelled time, a message is
  // handed to its sender this long before its departure, and frames due within it are built and held
  // until they are due, so that a transmit round hands the device frames already built. 0: at the time.
  emu::Duration ahead = emu::Duration::from_us(20);
  FaultConfig faults;                 // applied to data frames on the receive side
  emu::Duration nack_delay = emu::Duration::from_us(200);  // wall time
  // Above the queueing of the device rings: 1024 frames on memif take about a millisecond here.
  // Wall time; with D > 0 at least four partial-ACK intervals (32 packets each) of the slowest link.
  emu::Duration rto = emu::Duration::from_ms(10);
  uint32_t window = 1024;             // messages in flight per (sender, receiver) pair; a power of two
  std::string pcap;                   // non-empty: every frame sent is captured there (both lcores' frames)
  // When set, kept current about every millisecond by the main lcore (--metrics): its counters, the
  // completions, the model's clock and link bytes (link_bytes sized to the topology's links).
  LiveMetrics* live = nullptr;
  // A message the model has delivered but the wire has not, with no progress for this long (wall time; no
  // message completed and no ACK taken: NACKs alone, frames not ours and frames the fault injection drops
  // do not count): the run stops there, as on SIGINT, and
  // stalled() says why (a dead device must not hang the run, and what it did so far is still reported).
  emu::Duration stall_timeout = emu::Duration::from_ms(10'000);
  // The receive side's lcore (README.md, "Receive lcore"). kRxLcoreAuto: the first worker lcore EAL has
  // (e.g. EAL -l 0-1), when a() != b(); else the main lcore. kRxLcoreOff: the main lcore polls
  // everything. An lcore id: that one (std::invalid_argument when it is not an idle worker lcore or
  // a() == b()).
  static constexpr int kRxLcoreAuto = -1;
  static constexpr int kRxLcoreOff = -2;
  int rx_lcore = kRxLcoreAuto;
  // Several receive lcores (README.md, "Several receive lcores"): when not empty, rx_lcore is not used and
  // the receive side is split into one path per lcore listed, path q on queue q of port B (its data
  // frames in, its ACKs/NACKs out) and of port A (the feedback in, polled by the main lcore). Both ports
  // need that many queues (PortConfig::rx_queues and tx_queues; std::invalid_argument otherwise, or for an
  // lcore that is not an idle worker, listed twice, or ports that are one device). A sender's frames leave
  // on port A's queue (source rank mod queues): port B's RSS spreads them by flow where the device hashes
  // (a NIC), and a device that does not (ring pair, memif) hands them to port B's queue of that number.
  std::vector<unsigned> rx_lcores;
  // The transmit lcores (README.md, "Several transmit lcores"): empty (`--dpdk-tx-lcore off`), the main lcore
  // sends every frame, as before; else one transmit lane per lcore listed, lane i on the i-th, owning the
  // links whose source rank mod the lanes is i (their Senders, pacers, templates, held frames) and port A's
  // transmit queues [i * R, (i + 1) * R) (R: the receive paths; a sender's frames on i * R + source rank mod
  // R). Port A needs that many transmit queues (std::invalid_argument otherwise, or for an lcore that is not
  // an idle worker, is a receive lcore, is listed twice, and with --pcap).
  std::vector<unsigned> tx_lcores;
  // The receive side's checks of a data frame's payload: its UDP checksum and, in RoCEv2 mode, its ICRC
  // (the IPv4 header checksum and the fabemu header CRC are always checked). kAuto: checked, unless the
  // NIC has checked the UDP checksum (RX checksum offload) or the ports are an in-process ring pair
  // (DpdkPorts::in_process: the receiver reads the very mbufs the sender built, so nothing can have
  // changed them; the checks were a quarter of the receive lcore's time). kOn: checked on every device
  // but a NIC that checked them.
  enum class Checksums { kAuto, kOn };
  Checksums checksums = Checksums::kAuto;
};

class DpdkFabric final : public RealtimeFabric,
                         private emu::EventTarget,
                         private emu::DeliveryListener,
                         private RxSink,
                         private TxLaneLoop {
 public:
  // `plan` must cover every NPU of the topology. EAL must be running; `ports` must outlive the fabric.
  // std::invalid_argument for bad options.
  DpdkFabric(emu::Topology topology, AddressPlan plan, DpdkPorts& ports, DpdkFabricOptions options);
  ~DpdkFabric() override;

  // The most mbufs a fabric over `npus` ranks holds outside the device rings at once: frames built and
  // not yet taken by the device, one held packet per sender, and per receive path a round of ACKs/NACKs
  // and frames held back by reorder injection. A port's pool is PortConfig::mbufs_for(this, burst): the
  // rings come on top.
  static uint32_t frames_in_flight(uint32_t npus, uint32_t rx_paths = 1, uint32_t tx_lanes = 1) noexcept;

  void send(const emu::Message& m, emu::Time ready) override;
  using Fabric::send;
  emu::Engine& engine() override { return engine_; }
  void set_listener(emu::DeliveryListener* listener) override { listener_ = listener; }

  // After the walker's run: polls until every message is acknowledged (the last ACKs) or `limit` of wall
  // time has passed; returns true when all were. Closes the pcap file.
  bool drain(emu::Duration limit = kDrainLimit) override;
  // True when SIGINT/SIGTERM (Eal::stop_requested) ended the run early.
  bool interrupted() const noexcept override { return interrupted_; }
  // True when the wire stalled (DpdkFabricOptions::stall_timeout) and the run stopped there; the reason
  // is DpdkStats::stall (stall_reason()). drain() then waits for no acknowledgement.
  bool stalled() const noexcept override { return !stall_.empty(); }
  const std::string& stall_reason() const noexcept override { return stall_; }
  std::string_view name() const noexcept override { return "DPDK fabric"; }
  // "dpdk": stats() as dpdk_stats_to_json and format_dpdk_stats.
  ReportSection report_section() override;

  const emu::PacketFabric& model() const noexcept override { return model_; }
  emu::PacketFabric& mutable_model() noexcept override { return model_; }
  const emu::Topology& topology() const noexcept { return model_.topology(); }
  // Refreshed on every call (counters of the senders and receivers are summed here; those of a receive
  // lcore once it has stopped).
  const DpdkStats& stats();
  // The receive side's (first) lcore, -1 when it runs on the main lcore.
  int rx_lcore() const noexcept { return workers_.empty() ? -1 : static_cast<int>(workers_[0]->lcore()); }
  // The receive paths: one per receive lcore, or one on the main lcore.
  size_t rx_paths() const noexcept { return rx_paths_.size(); }
  // The transmit lanes: one per transmit lcore, or one on the main lcore.
  size_t tx_lanes() const noexcept { return lanes_.size(); }
  // The pool the data frames come from: one of port A's zero pools (Port::Recycle).
  const rte_mempool* data_pool() const noexcept { return data_pool_; }

 private:
  // Frames built and not yet taken by the device (with the mbuf stash): no more are built beyond them.
  static constexpr size_t kTxQueueLimit = 256;
  static constexpr uint32_t kFramesPerSender = 64;  // per poll, so that one sender cannot starve the others
  // A receiver acknowledges what it has in order every this many packets of a message (a power of two), so
  // that a paced message longer than the retransmission timeout is not resent while it is still going out.
  static constexpr uint32_t kAckEvery = 32;

  using Record = MessageRecord;  // one walker message (tx_lane.h)
  // What the DPDK fabric measures of a collective besides its spans (coll_spans_).
  struct CollExtra {
    // The most a message's first frame left after its modelled departure or its hand-over, the later.
    uint64_t late_start_ps = 0;
    uint64_t ce = 0;  // CE-marked data frames of its messages
  };
  // Closes lp's open busy period, its ratio (when undisturbed by a stall in `stalls`) into `ratios`.
  static void close_period(LinkPace& lp, std::vector<double>& ratios, const std::vector<PollStall>& stalls);
  // stats() in parts (dpdk_fabric_stats.cpp): the senders', receivers' and fault injections' sums (the
  // receivers' when `rx_readable`: no receive lcore runs); the pacing per first link; the collectives and
  // the stalls their spans overlap; out_'s receive side (its lcores, its clocks, its paths' counters).
  void sum_counters(DpdkStats& s, bool rx_readable) const;
  void pacing_stats(DpdkStats& s) const;
  std::vector<Span> stall_spans(bool rx_readable) const;
  void collective_stats(DpdkStats& s, bool rx_readable) const;
  void receive_side_stats(bool rx_readable);
  void transmit_side_stats();

  void on_event(uint64_t id) override;                   // a message's ready time has come: submit it
  void on_delivered(uint64_t id, emu::Time at) override;  // the model delivers: wait for the wire
  void submit(uint64_t id);
  bool try_submit(uint64_t id, Record& r);
  // One round of I/O: submit backlog, transmit, receive (the RxPath inline, or the receive lcore's
  // completions), ACK/NACK for the senders. Returns true when a frame or a completion was received.
  // `now`: the clock read just before, the round's one reading for its stall check, the messages due, the
  // pacing's now and the receive path's timers (poll() reads it).
  bool poll();
  bool poll(const TscClock::Reading& now);
  // --metrics: the counters into opt_.live (the main lcore's, and the receive side's when readable).
  void publish(uint64_t wall_ps);
  // The senders' packets of `lane`, a run of one message at a time (Sender::next_runs, fill_run); with
  // pacing, those that are due at `now` (pace_run, which reads the clock again for a frame not due yet).
  // The inline lane's on the main lcore (poll), a transmit lcore's by tx_lane_round.
  void transmit(TxLane& lane, const TscClock::Reading& now);
  // What a round of transmit() hands its senders' turns: the lane, the frames' spec (their source and last
  // destination set per sender), the pacing's gate, the round's clock reading, frames built so far.
  struct TxRound {
    DpdkFabric* fabric = nullptr;
    TxLane* lane = nullptr;
    FrameSpec spec;
    RunGate gate;
    emu::Time wall, stamp;  // the round's wall time, and the frames' stamp (its emulated time, or the engine's)
    bool paced = false;
    size_t built = 0;
    uint32_t src = 0, spec_dst = ~0u;  // the sender at hand's rank; the destination spec is set for
  };
  // Sender si's turn in a round: runs of its packets (next_runs) while it has any, its budget and the
  // transmit queues' room allow.
  void transmit_sender(uint32_t si, TxRound& round);
  // One run of sender si's packets built into frames on local transmit queue txq, or into its hold
  // (build-ahead), counted; paced_next moves past its PacedRuns. Returns its frames.
  uint32_t place_run(const TxRun& r, uint32_t si, size_t txq, TxRound& round, size_t& paced_next);
  // RunGate of a run of first transmissions: how many of its frames are due now; their PacedRuns into the
  // lane's `paced`.
  uint32_t pace_run(TxLane& lane, const TxRun& r);
  // A packet of message `wire_id` from src to dst is sent again: its round trip is no RTT sample (on a
  // transmit lcore: a notice to the main lcore, which does it).
  void retransmitted(TxLane& lane, uint32_t src, uint32_t dst, uint64_t wire_id);
  void retransmitted(uint32_t src, uint32_t dst, uint64_t wire_id);
  // The flow fields of frames from src to dst (src's own are in spec already).
  void set_destination(FrameSpec& spec, uint32_t src, uint32_t dst) const;
  // Port A's frames on the main lcore: ACKs and NACKs for the senders.
  void receive(Port& port);
  // An ACK or NACK for a sender: handled at once (the inline lane), or its mbuf passed to the transmit
  // lcore that owns the sender (false: the caller frees it).
  bool handle(const DecodedFrame& f, rte_mbuf* m);
  // The feedback for one of `lane`'s senders (on the lane's lcore).
  void handle_in(TxLane& lane, const DecodedFrame& f);
  void completed(const RxCompletion& c) override;  // RxSink: a message reassembled
  void feedback(const DecodedFrame& f) override { handle(f, nullptr); }  // RxSink: port B loops frames back
  void take_completions();
  // The receive lcores (empty: the receive side runs on the main lcore), and the transmit lcores (empty:
  // the main lcore sends), checked against each other and EAL's.
  std::vector<unsigned> choose_rx_lcores() const;
  std::vector<unsigned> choose_tx_lcores(const std::vector<unsigned>& rx_lcores) const;
  // The lanes, their queues and (with transmit lcores) their rings and workers (dpdk_tx_lanes.cpp).
  void make_lanes(const std::vector<unsigned>& tx_lcores, uint16_t rx_queues, const SenderConfig& senders);
  void start_tx_workers();
  // --- transmit lcores (dpdk_tx_lanes.cpp) ---
  // The lane of a sender's source rank (links are sharded by source rank).
  TxLane& lane_of(uint32_t src) noexcept { return *lanes_[lanes_.size() == 1 ? 0 : src % lanes_.size()]; }
  bool tx_lcores_on() const noexcept { return !tx_workers_.empty(); }
  // TxLaneLoop: a lane's state made (on its lcore); one round of a transmit lcore: hand-overs into its
  // Senders, feedback, the RTO, transmit().
  void tx_lane_start(TxLane& lane) override;
  void tx_lane_round(TxLane& lane) override;
  // The hand-overs waiting for their pair's window, submitted in order where it has room.
  void submit_backlog(TxLane& lane);
  // The main lcore: message r handed to its lane's ring (false: the ring is full).
  bool hand_over(uint64_t id, Record& r);
  // The main lcore: the lanes' retransmission notices; a failed lane rethrown.
  void take_notices();
  // Whether every lane has sent and had acknowledged every message handed to it (drain()).
  bool lanes_settled();
  // Stops and joins the transmit lcores (their lanes may be read afterwards).
  void join_tx_workers();
  // Whether the lanes' state may be read on the main lcore (inline, or their lcores joined).
  bool lanes_readable() const noexcept;
  // --- the transmit side's helpers ---
  // `paced` (the PacedRuns of `queue`'s frames, in order): frames taken by the device (transmit queue
  // `txq` of port A) are timed into the lane's link_pace and jitter histogram.
  void flush(TxLane& lane, uint16_t txq, std::vector<rte_mbuf*>& queue, FirstFrames<Record>& firsts,
             PacedQueue* paced);
  // Frames built and not yet taken by the device, all lanes (the inline lane's: the main lcore's).
  size_t tx_built() const noexcept { return tx_lcores_on() ? 0 : lanes_[0]->built(); }
  using Held = HeldFrames;
  // Moves every held frame due by `now_ps` (wall) to its transmit queue and, when it moved any, flushes
  // the queues (flush_all).
  void send_due_held(TxLane& lane, uint64_t now_ps);
  // flush() of every transmit queue of the lane.
  void flush_all(TxLane& lane, bool paced);
  // Sender si's local transmit queue (several receive paths: its source rank mod the queues): all its
  // frames on one, so its link's leave in order.
  static size_t txq_of(const TxLane& lane, uint32_t si) noexcept {
    return lane.data.size() == 1 ? 0 : lane.senders.src(si) % lane.data.size();
  }
  // A wall time (ps since the clock's start) as the dilated clock's emulated time then.
  uint64_t wall_to_emulated_ps(uint64_t wall_ps) const noexcept {
    return static_cast<uint64_t>((emu::detail::u128{wall_ps} << 16) / clock_.dilation_q16());
  }
  // Frames a sender may hold, and all senders of a lane: beyond them a sender builds only frames due now
  // (held frames count in the transmit queues' limit, whose room is for frames due now first).
  static constexpr size_t kHeldMax = 32, kHeldTotalMax = 128;
  // Whether any receive lcore is still running (not joined).
  bool workers_running() const noexcept;
  // A run of n data frames into ms[0..n) from the lane's flow templates (fill_run: spec is the first
  // frame's; the last frame carries last_bytes), captured and counted; returns their bytes.
  uint64_t build_run(TxLane& lane, rte_mbuf* const* ms, uint32_t n, const FrameSpec& spec, uint32_t last_bytes,
                     bool payload_zero);
  // The lane's data mbufs come from data_pool_ through its stash refilled kStash at a time, as the pool
  // gives them (take_frames): fill_run resets them. False when the pool is empty.
  bool refill_stash(TxLane& lane);
  // The lane's short stash full again (kShortStash, one per run of a next_runs call) from port A's pool;
  // false when that pool is (nearly) empty.
  bool refill_short(TxLane& lane);
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
  // The nodes of records_ and by_wire_: a message's nodes go back to this pool when it is delivered and
  // the next messages take them again, so no message allocates once the pool has reached the peak of
  // messages in flight (it only grows; DpdkFabric.NoAllocationPerMessageInSteadyState).
  std::pmr::unsynchronized_pool_resource record_pool_;
  // By walker id. A record's address is its packets' Sender cookie (stable: nodes do not move), so the
  // transmit loop finds it without a lookup; it is erased only once the message has arrived.
  std::pmr::unordered_map<uint64_t, Record> records_{&record_pool_};
  std::pmr::unordered_map<uint64_t, uint64_t> by_wire_{&record_pool_};  // pair_key -> walker id
  rte_mempool* data_pool_ = nullptr;                  // the data frames': port A's zero_pool() (payloads not written)
  // RoCEv2: the zero pool holds full frames only; a run's shorter last frame comes from port A's pool.
  bool split_short_ = false;
  // The transmit lanes (tx_lane.h): one, run inline by the main lcore, or one per transmit lcore, each run
  // by its TxWorker. A lane's senders, pacers, templates and queues are its lcore's alone.
  std::vector<std::unique_ptr<TxLane>> lanes_;
  std::vector<std::unique_ptr<TxWorker>> tx_workers_;
  std::vector<uint64_t> handed_;  // by lane: messages handed over (the main lcore's count)
  SenderConfig lane_senders_;     // each lane's senders' (tx_lane_start)
  uint16_t lane_queues_ = 1;      // each lane's transmit queues of port A (one per receive path)
  // With transmit lcores: the next wire id of each pair (ids are consecutive per pair, from 0), so that the
  // main lcore knows a message's id before its lane's Sender gives it.
  std::pmr::unordered_map<uint64_t, uint64_t> pair_ids_{&record_pool_};
  // The adaptive RTO and tail age for the transmit lcores: written by the main lcore (adapt_rto, a change
  // of more than 1/8), read by each lane once a round.
  alignas(64) std::atomic<uint64_t> rto_generation_{0};
  std::atomic<uint64_t> rto_ps_{0}, tail_age_ps_{0};
  std::array<RxCompletion, 64> completions_{};
  std::vector<uint64_t> burst_ps_;                    // per link: the pacer's burst allowance, wall ps
  std::vector<uint64_t> backlog_;                     // walker ids waiting for a window slot
  // The stall timeout's measure of progress (on_delivered): messages completed and ACKs taken; and the
  // NACKs taken, which the stall's reason counts.
  uint64_t progress_ = 0, nacks_in_ = 0;
  // First hops and, at D > 0, the walker ids waiting for their modelled departure.
  MessagePacing pacing_;
  CollectiveSpans coll_spans_;                        // measured vs modelled per collective
  std::vector<CollExtra> coll_extra_;                 // by Message::coll
  uint64_t ahead_wall_ps_ = 0, ahead_emulated_ps_ = 0;  // opt_.ahead (0 unpaced), and divided by D
  static constexpr uint64_t kSpinPs = 500'000;        // on_delivered waits this long at most for it
  std::unique_ptr<PcapWriter> pcap_;
  // With receive lcores: each one's frames (ACKs, NACKs) go to a capture of its own, merged into pcap_'s
  // file in time order by close_pcap().
  std::vector<std::unique_ptr<PcapWriter>> rx_pcaps_;
  void close_pcap();
  // The receive side (port B), a path per queue: run inline by poll() (one path), or each by its worker
  // on its own lcore (then only that worker touches it until join()).
  std::vector<std::unique_ptr<RxPath>> rx_paths_;
  std::vector<std::unique_ptr<RxWorker>> workers_;
  uint64_t completed_messages_ = 0, completed_bytes_ = 0;  // completions seen by the main lcore
  uint64_t a_hw_timestamped_ = 0;                     // port A frames with an RX timestamp
  std::vector<uint8_t> scratch_;
  bool rx_any_ = false;
  bool interrupted_ = false;
  std::string stall_;     // why the run stopped on a stall (empty: it did not)
  bool started_ = false;  // the first send() restarted the clock
  // Set (release) once that restart is done: the transmit lcores run no round before it (tx_lane_round), so
  // that none paces with a reading of the clock from before its zero.
  alignas(64) std::atomic<bool> clock_zero_set_{false};
  // --metrics: LiveMetrics published every kPublishPs of wall time (publish()).
  static constexpr uint64_t kPublishPs = 1'000'000'000;
  uint64_t last_publish_ps_ = 0;
  uint64_t unix_zero_ns_ = 0;  // the Unix time (ns) of clock_'s zero: the capture's dates
  uint64_t last_poll_ps_ = 0;
  using Stall = PollStall;
  std::vector<Stall> stalls_;  // the main lcore's, in time order
  // The senders' retransmission timeout: adaptive, at least opt_.rto (longer for slow paced links).
  RtoEstimator rto_{emu::Duration::from_ps(0)};
  void adapt_rto(uint64_t sample_ns);
  DpdkStats stats_;  // the main lcore's counters
  DpdkStats out_;    // stats(): stats_ with the receive side's
};

}  // namespace fabemu::host::dpdk
