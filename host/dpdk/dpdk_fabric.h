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
#pragma once

#include <rte_mbuf.h>

#include <array>
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
#include "host/wire/address_plan.h"
#include "host/dpdk/dpdk_env.h"
#include "host/wire/first_frames.h"
#include "host/wire/flow_templates.h"
#include "host/wire/message_pacing.h"
#include "host/wire/pcap_writer.h"
#include "host/dpdk/realtime.h"
#include "host/dpdk/link_pacer.h"
#include "host/wire/reassembly.h"
#include "host/wire/rto_estimator.h"
#include "host/dpdk/rx_worker.h"
#include "host/wire/frame.h"

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
  // The receive side's checks of a data frame's payload: its UDP checksum and, in RoCEv2 mode, its ICRC
  // (the IPv4 header checksum and the fabemu header CRC are always checked). kAuto: checked, unless the
  // NIC has checked the UDP checksum (RX checksum offload) or the ports are an in-process ring pair
  // (DpdkPorts::in_process: the receiver reads the very mbufs the sender built, so nothing can have
  // changed them; the checks were a quarter of the receive lcore's time). kOn: checked on every device
  // but a NIC that checked them.
  enum class Checksums { kAuto, kOn };
  Checksums checksums = Checksums::kAuto;
};

// The devices the frames go through. Data frames are sent on a() and received on b(); ACKs and NACKs go
// back from b() to a(). a() and b() may be the same port (a device that loops frames back).
class DpdkPorts {
 public:
  // An in-process ring pair (rte_eth_from_rings), named net_ring_<name>_a/_b, with `queues` queues each
  // way (cfg's queue counts should match: DpdkFabricOptions::rx_lcores) of `ring_size` frames. With a
  // `device`, every frame from a to b crosses it (RingPair: a stand-in device under test of known latency
  // and rate), which holds up to 2 x ring_size.
  static DpdkPorts ring(const std::string& name, const PortConfig& cfg, uint16_t queues = 1, RingDevice device = {},
                        unsigned ring_size = kRingDelayFrames / 2);
  // The most frames ring()'s device holds (twice its rings' size): port A's mbufs, which a pool for a ring
  // pair with a device has room for on top (the frames a NIC has sent come back to their pool at once).
  static constexpr uint32_t kRingDelayFrames = 2 * 4096;  // at ring()'s default ring_size
  // A memif server and client on `socket` (a path in a directory of the caller's); waits up to 2 s for
  // the link (std::runtime_error otherwise).
  static DpdkPorts memif(const std::string& socket, const PortConfig& cfg);
  // User devices: `b` empty means a() == b(). A device EAL has probed already (a PCI device, with or
  // without -a, or a --vdev in the EAL arguments) is used as it is, by name; others are probed.
  static DpdkPorts devargs(const std::string& a, const std::string& b, const PortConfig& cfg);

  DpdkPorts(DpdkPorts&&) noexcept = default;
  DpdkPorts& operator=(DpdkPorts&&) = delete;
  // memif: the client is closed first, and the server only once the interrupt thread has seen it go.
  ~DpdkPorts();

  Port& a() noexcept { return *a_; }
  Port& b() noexcept { return b_ ? *b_ : *a_; }
  std::string describe() const;
  // An in-process ring pair (ring()): the receiving port hands over the sender's own mbufs.
  bool in_process() const noexcept { return ring_ != nullptr; }
  // The ring pair (ring()): its device, the frames the device handed to b, the most it held at once.
  const RingPair* ring_pair() const noexcept { return ring_.get(); }

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
  // The run's wire settings (DpdkFabricOptions), so that a report says how to run it again.
  struct Settings {
    WireMode mode = WireMode::kFabemu;
    uint32_t wire_mtu = 0, window = 0;
    emu::Duration rto, nack_delay, stall_timeout;
    FaultConfig faults;
    bool verify_checksums_on = false;  // --dpdk-verify-checksums on (else auto)
    uint8_t dscp = 0;                  // --wire-dscp
    Ecn ecn = Ecn::kNotEct;            // --wire-ecn
    RingDevice ring_device;            // --dpdk-ring-delay, --dpdk-ring-rate: the ring pair's device (none)
    emu::Duration ahead;               // --dpdk-ahead (DpdkFabricOptions::ahead)
  };
  Settings settings;
  emu::Duration wall;                 // wall time from the first send (the run's start) to the last poll
  uint64_t messages = 0;              // messages that went on the wire (src != dst)
  uint64_t local_messages = 0;        // src == dst: not on the wire
  uint64_t message_bytes = 0;         // bytes of those messages
  uint64_t bytes_completed = 0;       // message bytes the receivers reassembled (== message_bytes at the end)
  uint64_t messages_completed = 0;
  uint64_t frames_tx = 0, frame_bytes_tx = 0;
  uint64_t frames_rx = 0, frame_bytes_rx = 0;
  // Non-empty when the run stopped because nothing of ours arrived for the stall timeout: which message
  // waited, on which ports, and what else arrived meanwhile.
  std::string stall;
  // Lcores: the main one (walker, model, senders, pacing, port A) and the receive side's (port B); -1:
  // the receive side runs on the main lcore. Frames and polls of the receive lcore (its counters join
  // these stats once it has stopped, in drain()).
  unsigned main_lcore = 0;
  int rx_lcore = -1;
  uint64_t rx_lcore_frames = 0, rx_lcore_polls = 0;
  // Each receive lcore (several with DpdkFabricOptions::rx_lcores; one otherwise; none when the receive
  // side runs on the main lcore): its lcore, port B queue, frames received and polls. rx_lcore is the
  // first one's lcore, rx_lcore_frames and rx_lcore_polls their sums.
  struct RxLcore {
    unsigned lcore = 0;
    uint16_t queue = 0;
    uint64_t frames = 0, polls = 0;
  };
  std::vector<RxLcore> rx_lcores;
  // Which clock timed arrivals on each receiving port: "nic" (its RX timestamps, mapped to the TSC by a
  // fit of rte_eth_read_clock samples) or "tsc"; how many frames carried a hardware timestamp.
  struct PortClock {
    std::string port, role, clock;
    bool offload = false;             // RTE_ETH_RX_OFFLOAD_TIMESTAMP enabled
    bool checksum_offload = false;    // RTE_ETH_RX_OFFLOAD_IPV4_CKSUM and UDP_CKSUM enabled (decode_mbuf)
    // Who checks the payloads (UDP checksum, RoCEv2 ICRC): "nic" (checksum_offload; fabemu checks
    // what the NIC did not find good), "fabemu", or "skipped" (an in-process ring pair, Checksums::kAuto).
    std::string checksums = "fabemu";
    uint64_t frames = 0, hw_timestamped = 0;
    // clock "nic": the line mapping the NIC's clock to the TSC (ClockFit) of the first receive path, and
    // the largest distance of a clock sample from its path's line over all receive paths, in ns.
    size_t fit_samples = 0;
    double fit_tsc_per_nic_tick = 0;
    double fit_max_residual_ns = 0;
  };
  std::vector<PortClock> rx_clocks;
  uint64_t nic_arrivals = 0;          // messages whose arrival the NIC's clock timed (the others: TSC)
  uint64_t data_frames = 0;           // first transmissions
  uint64_t retransmissions = 0, nack_retransmissions = 0, timeout_retransmissions = 0;
  // Of the NACK retransmissions, packets past what their NACK covered, taken as lost for their age
  // (Sender::on_nack with a tail age); the smallest tail age the senders had (0: never set, the RTO).
  uint64_t tail_retransmissions = 0;
  emu::Duration tail_age_min;
  // NACKed packets not sent again: their last copy left after what the NACK says arrived, less than the
  // tail age before (still on their way; Sender::on_nack).
  uint64_t nacks_in_flight = 0;
  uint64_t acks = 0, nacks = 0;
  emu::Duration rto_max;              // the largest retransmission timeout the senders had (adaptive)
  uint64_t rx_duplicates = 0, rx_reordered = 0, rx_stale = 0, rx_invalid = 0, rx_receiver_invalid = 0;
  uint64_t injected_drops = 0, injected_duplicates = 0, injected_reorders = 0;
  uint64_t not_ours = 0;
  uint64_t not_ours_by_verdict[kVerdictCount] = {};
  // Data frames of ours received (every copy), by the ECN codepoint they arrived with (index: Ecn), and
  // those whose DSCP was not the one they left with: what the device did to the TOS byte. Frames sent ECT
  // that arrive CE were marked by a switch whose queue built up; Not-ECT ones, had their ECN cleared.
  uint64_t data_by_ecn[4] = {};
  uint64_t dscp_changed = 0;
  uint64_t ring_ce_marked = 0;        // frames the ring pair's device marked CE (RingDevice::ecn_bytes)
  uint64_t late = 0;                  // messages complete on the wire after their modelled time (D > 0)
  // Gaps between the starts of two rounds of polling (wall): the longest, and the stalls (over 100 us).
  // Frames due in a stall leave late; OS preemption of the polling thread shows up here.
  uint64_t poll_gap_max_ns = 0, poll_stalls = 0;
  // Flushes of data frames to port A (a transmit queue with frames built), and those in which the device
  // took fewer than it was given (its transmit queue full: the rest waited for a later poll). A device
  // that refuses frames makes them leave late whatever fabemu does: the lab NIC's line rate, or the
  // device under test's own rate.
  uint64_t tx_flushes = 0, tx_full = 0;
  // The same of the receive lcore's polls (rx_lcore >= 0): frames that arrive in its stall are timed late.
  uint64_t rx_poll_gap_max_ns = 0, rx_poll_stalls = 0;
  // --pcap (once the capture is closed, at the end of the run): frames captured, and how often and how long
  // in all the polling lcores waited for the capture's writing thread (every buffer full of frames not yet
  // written: PcapWriter). Those waits are stalls of the lcores like any other, caused by the capture.
  std::string pcap;                   // the capture's file ("": none)
  uint64_t pcap_frames = 0, pcap_waits = 0, pcap_wait_ns = 0;
  // The capture failed (the file could not take it: a full disk, a size limit): why, naming the file, and
  // the frames sent after that, not captured. The run itself went on; "" when the capture is whole.
  std::string pcap_error;
  uint64_t pcap_dropped = 0;
  uint64_t deliveries = 0;            // messages handed to the walker
  // Wire latency per message: its first frame's transmission to its reassembly, wall ns (TSC).
  emu::LogHistogram latency_ns;
  // D > 0: per message, how much later (emulated ns) than its modelled delivery its last packet really
  // arrived, for the `late` ones; and how many arrived early or on time (the delay line held them).
  emu::LogHistogram lateness_ns;
  uint64_t on_time = 0;
  // Pacing, measured per first link that carried first transmissions (retransmissions are not paced and
  // not counted). The pacer lets a frame go when it is due: at its modelled departure (on the dilated wall
  // clock), and no earlier than the link's rate allows after the frame before; a frame that leaves more
  // than the burst allowance (64 frames of the link) late restarts the link's schedule from there (so it
  // never bursts above the rate to catch up more). A link's frames fall into busy periods (each due no
  // later than the end of the one before, + 1 ns). At the target rate a period's bytes (all but the last
  // frame's) take from its first frame's due time to its last one's: that span over the actual one (to
  // the last frame's departure, TSC after tx_burst) is achieved / target rate, at most 1. A period during
  // which the polling thread stalled (over 100 us between two polls) is *disturbed*: the host, not the
  // pacer, set its rate. How far frames left from the model's schedule is the jitter below. Only with
  // D > 0 (with D = 0 nothing is scheduled).
  struct Link {
    uint32_t link = 0;
    uint64_t bytes = 0, frames = 0;
    double target_gbps = 0;
    uint64_t busy_periods = 0;        // with at least two frames
    uint64_t disturbed_periods = 0;   // of those, disturbed by a stall of the polling thread
    uint64_t spanned_bytes = 0;       // bytes of the frames a span covers (each period's last excluded)
    double scheduled_ns = 0;          // sum of the periods' scheduled spans (wall ns)
    double actual_ns = 0;             // sum of their actual spans (wall ns)
    double ratio = 0;                 // achieved / target = scheduled_ns / actual_ns (0: no span)
  };
  std::vector<Link> links;            // by link id, those that carried frames
  double pacing_ratio = 0;            // all periods of all links: sum of scheduled spans / sum of actual spans
  // Median over the undisturbed busy periods of all links of scheduled / actual span: how exactly the
  // pacer keeps the target rate when the host lets it (0: no undisturbed period).
  double pacing_median_ratio = 0;
  uint64_t pacing_periods = 0, pacing_disturbed_periods = 0;
  // |actual - scheduled departure| per paced first transmission, wall ns, all links (D > 0).
  emu::LogHistogram jitter_ns;
  // Of the paced first transmissions, those built before they were due and held until then (build-ahead,
  // DpdkFabricOptions::ahead).
  uint64_t frames_ahead = 0;
  // Measured vs modelled, per collective (D > 0), on the emulated clock: `modelled` from the earliest
  // modelled time one of its messages was handed to the fabric to the latest modelled delivery of one;
  // `measured` from the earliest real hand-over of one (the dilated wall clock when the walker handed it
  // over, or its modelled time if that is later: a walker that waited for an earlier collective's late
  // frames starts this one late, and that inherited delay is not this collective's) to the latest real
  // arrival of one. deviation = measured / modelled - 1: negative when the lab path is faster than the
  // target (the delay line hid it), positive when slower.
  // `stalled`: how much of the measured span (emulated) a polling lcore, main or receive, spent in a stall
  // (poll_stalls, rx_poll_stalls): time in which fabemu itself held frames back or timed them late, so a
  // deviation of that order may be fabemu's own, not the path's.
  struct Collective {
    uint32_t coll = 0;                // position in RunResult::collectives
    uint64_t messages = 0, bytes = 0; // wire messages (src != dst)
    emu::Duration modelled, measured;
    double deviation = 0;
    emu::Duration stalled;
    // The most one of its messages' first frame left (taken by the device) after the message's modelled
    // departure or its hand-over, whichever is later, emulated: fabemu's own delay in putting the
    // collective on the wire (a cold start, a polling stall, senders behind), which the measured span
    // includes whatever the device did. (A message handed over late because the walker waited for the
    // wire is late by the wire's doing, not fabemu's: only what follows its hand-over counts.)
    emu::Duration late_start;
    // Its messages' data frames that arrived marked CE (first copies): where the device's queues built.
    uint64_t ce_frames = 0;
  };
  std::vector<Collective> collectives;  // by coll
};

// Whether the senders kept to the target's schedule: the first warning a user validating a device needs,
// since frames that leave late make every measured time late, whatever the device under test did. A
// paced run (D > 0) whose first links carried at least kKeptPaceRatio of their target rate over all their
// busy periods (DpdkStats::pacing_ratio, stalls of the polling thread included) kept pace; below it, the
// senders fell behind and the measured times include fabemu's own delay. It says nothing of the receive
// side (its polling stalls are in the stats). Measured on this project's machine, the quick-start sample
// on a ring pair: D = 100 and 150 kept pace (ratios 0.991-0.996; every collective within 0.21% of the
// model but once +2.6%); D = 75, 60 and 50 fell behind (0.988, 0.971, 0.90-0.94; worst collectives +0.44%,
// +1.28%, +46.7-59.6%). host/dpdk/README.md, "Fidelity".
inline constexpr double kKeptPaceRatio = 0.99;
// The share of flushes in which the device refused frames above which a run that fell behind blames the
// device (Fidelity::Cause::kDevice).
inline constexpr double kDeviceFullShare = 0.01;
struct Fidelity {
  enum class Verdict {
    kNotPaced,    // D = 0, or no first transmission was paced: nothing to compare
    kUnmeasured,  // paced, but no link carried two frames back to back: no rate to compare
    kKeptPace,
    kFellBehind,
  };
  // Why the senders fell behind, and so what to do about it (kFellBehind only; kNone otherwise).
  enum class Cause {
    kNone,
    // The busy periods no polling stall disturbed kept the rate (their median DpdkStats::pacing_median_ratio
    // at least kKeptPaceRatio), or every period was disturbed: the shortfall came from the stalls, i.e. the
    // OS took the polling lcores' cores. Give them cores of their own (or raise --dilation).
    kStalls,
    // Even the undisturbed periods fell short: this host cannot build and pace the frames at D. Raise
    // --dilation.
    kSpeed,
    // The device refused frames (DpdkStats::tx_full in at least kDeviceFullShare of the flushes): its
    // transmit queue was full, so frames waited whatever fabemu did. A lab NIC slower than the target at
    // D (raise --dilation), or the device under test's own rate.
    kDevice,
  };
  Verdict verdict = Verdict::kNotPaced;
  Cause cause = Cause::kNone;
  double rate_ratio = 0;                // DpdkStats::pacing_ratio
  double undisturbed_ratio = 0;         // DpdkStats::pacing_median_ratio (0: every period was disturbed)
  double departure_lateness_ns = 0;     // median departure jitter (wall ns) / D: emulated ns
  // Collectives that started late (started_late): the rate can be kept while a stall or a cold start set
  // some messages back, and those collectives' deviations are then partly fabemu's own.
  size_t late_collectives = 0;
};
// A collective one of whose messages left later than its modelled departure by more than 1% of the
// collective's modelled span (DpdkStats::Collective::late_start).
bool started_late(const DpdkStats::Collective& c) noexcept;
Fidelity fidelity(const DpdkStats& stats) noexcept;
// "not_paced", "unmeasured", "kept_pace", "fell_behind" (the report's names).
const char* to_string(Fidelity::Verdict v) noexcept;
// "none", "stalls", "speed" (the report's names).
const char* to_string(Fidelity::Cause c) noexcept;

// Spans of time [from, to), for covered_within.
struct Span {
  uint64_t from, to;
};
// Sorts `spans` by start and merges those that overlap or touch: disjoint spans in time order.
void merge_spans(std::vector<Span>& spans);
// How much of [from, to) the merged `spans` (merge_spans) cover.
uint64_t covered_within(const std::vector<Span>& merged, uint64_t from, uint64_t to) noexcept;

// The stats as the "DPDK" section of the text summary.
std::string format_dpdk_stats(const DpdkStats& stats);
// Its "traffic class" line: the TOS the frames left with and how the data frames arrived (by ECN codepoint,
// CE's share, DSCP rewritten). Empty for the default TOS (DSCP 0, Not-ECT) that came back unchanged.
std::string format_traffic_class(const DpdkStats& stats);
// "Measured vs modelled": the collectives' deviations (median, worst, and the `top` largest |deviation|
// with their names from `result`). Empty without per-collective measurements (D = 0, no collectives).
std::string format_measured_vs_modelled(const DpdkStats& stats, const emu::RunResult& result, size_t top = 10);
// The stats as a JSON object (the report's "dpdk" section; docs/report.md).
std::string dpdk_stats_to_json(const DpdkStats& stats);

class DpdkFabric final : public emu::Fabric, private emu::EventTarget, private emu::DeliveryListener, private RxSink {
 public:
  // `plan` must cover every NPU of the topology. EAL must be running; `ports` must outlive the fabric.
  // std::invalid_argument for bad options.
  DpdkFabric(emu::Topology topology, AddressPlan plan, DpdkPorts& ports, DpdkFabricOptions options);
  ~DpdkFabric() override;

  // The most mbufs a fabric over `npus` ranks holds outside the device rings at once: frames built and
  // not yet taken by the device, one held packet per sender, and per receive path a round of ACKs/NACKs
  // and frames held back by reorder injection. A port's pool is PortConfig::mbufs_for(this, burst): the
  // rings come on top.
  static uint32_t frames_in_flight(uint32_t npus, uint32_t rx_paths = 1) noexcept;

  void send(const emu::Message& m, emu::Time ready) override;
  using Fabric::send;
  emu::Engine& engine() override { return engine_; }
  void set_listener(emu::DeliveryListener* listener) override { listener_ = listener; }

  // After the walker's run: polls until every message is acknowledged (the last ACKs) or `limit` of wall
  // time has passed; returns true when all were. Closes the pcap file.
  bool drain(emu::Duration limit = emu::Duration::from_ms(2'000));
  // True when SIGINT/SIGTERM (Eal::stop_requested) ended the run early.
  bool interrupted() const noexcept { return interrupted_; }
  // True when the wire stalled (DpdkFabricOptions::stall_timeout) and the run stopped there; the reason
  // is DpdkStats::stall. drain() then waits for no acknowledgement.
  bool stalled() const noexcept { return !stall_.empty(); }

  const emu::PacketFabric& model() const noexcept { return model_; }
  const emu::Topology& topology() const noexcept { return model_.topology(); }
  // Refreshed on every call (counters of the senders and receivers are summed here; those of a receive
  // lcore once it has stopped).
  const DpdkStats& stats();
  // The receive side's (first) lcore, -1 when it runs on the main lcore.
  int rx_lcore() const noexcept { return workers_.empty() ? -1 : static_cast<int>(workers_[0]->lcore()); }
  // The receive paths: one per receive lcore, or one on the main lcore.
  size_t rx_paths() const noexcept { return rx_paths_.size(); }
  // The pool the data frames come from: one of port A's zero pools (Port::Recycle).
  const rte_mempool* data_pool() const noexcept { return data_pool_; }

 private:
  struct Record {  // one walker message
    uint32_t src = 0, dst = 0;
    uint64_t bytes = 0;
    uint64_t flow = 0;
    uint64_t wire_id = 0;
    uint64_t tx_ticks = 0, rx_ticks = 0;  // TSC: its first frame taken by the device; its last one received
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
  struct CollAcc {
    uint64_t messages = 0, bytes = 0;
    uint64_t first_ready_ps = ~uint64_t{0}, modelled_end_ps = 0, measured_end_ps = 0;
    // The earliest real start of one of its messages: its hand-over, or its ready time if that is later.
    uint64_t first_start_ps = ~uint64_t{0};
    // The most a message's first frame left after its modelled departure or its hand-over, the later.
    uint64_t late_start_ps = 0;
    uint64_t ce = 0;  // CE-marked data frames of its messages
  };
  // Closes lp's open busy period, its ratio (when undisturbed) into `ratios`.
  void close_period(LinkPace& lp, std::vector<double>& ratios) const;

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
  // The senders' packets, a run of one message at a time (Sender::next_runs, fill_run); with pacing, those
  // that are due at `now` (pace_run, which reads the clock again for a frame not due yet).
  void transmit(const TscClock::Reading& now);
  // RunGate of a run of first transmissions: how many of its frames are due now; their PacedRuns into
  // paced_.
  uint32_t pace_run(const TxRun& r);
  // A packet of message `wire_id` from src to dst is sent again: its round trip is no RTT sample.
  void retransmitted(uint32_t src, uint32_t dst, uint64_t wire_id);
  // The flow fields of frames from src to dst (src's own are in spec already).
  void set_destination(FrameSpec& spec, uint32_t src, uint32_t dst) const;
  // Port A's frames on the main lcore: ACKs and NACKs for the senders.
  void receive(Port& port);
  void handle(const DecodedFrame& f);  // an ACK or NACK for a sender
  void completed(const RxCompletion& c) override;  // RxSink: a message reassembled
  void feedback(const DecodedFrame& f) override { handle(f); }  // RxSink: port B loops frames back
  void take_completions();
  // The receive lcores (empty: the receive side runs on the main lcore).
  std::vector<unsigned> choose_rx_lcores() const;
  // `paced` (the PacedRuns of `queue`'s frames, in order): frames taken by the device (transmit queue
  // `txq`) are timed into link_pace_ and the jitter histogram.
  void flush(Port& port, uint16_t txq, std::vector<rte_mbuf*>& queue, FirstFrames<Record>& firsts,
             PacedQueue* paced);
  // Frames built and not yet taken by the device, all queues.
  size_t tx_built() const noexcept {
    size_t n = held_frames_;
    for (const auto& q : tx_data_) n += q.size();
    return n;
  }
  // Build-ahead (DpdkFabricOptions::ahead): a sender's first transmissions built before they are due wait
  // in its Held queue, in order, and move to their transmit queue (with their PacedRuns and first-frame
  // entries) once due: send_due_held(). While a sender holds frames, its new ones queue behind them, so a
  // link's frames leave in their order.
  struct Held {
    std::vector<rte_mbuf*> mbufs;
    std::vector<PacedRun> runs;
    std::vector<std::pair<size_t, Record*>> firsts;  // index into mbufs of a message's first frame
    size_t mbuf_head = 0, run_head = 0, first_head = 0;
    size_t frames() const noexcept { return mbufs.size() - mbuf_head; }
  };
  // Moves every held frame due by `now_ps` (wall) to its transmit queue and, when it moved any, flushes
  // the queues (flush_all).
  void send_due_held(uint64_t now_ps);
  // flush() of every transmit queue.
  void flush_all(bool paced);
  // Sender si's transmit queue (several receive paths: its source rank mod the queues): all its frames on
  // one, so its link's leave in order.
  size_t txq_of(uint32_t si) const noexcept {
    return tx_data_.size() == 1 ? 0 : senders_.src(si) % tx_data_.size();
  }
  // A wall time (ps since the clock's start) as the dilated clock's emulated time then.
  uint64_t wall_to_emulated_ps(uint64_t wall_ps) const noexcept {
    return static_cast<uint64_t>((emu::detail::u128{wall_ps} << 16) / clock_.dilation_q16());
  }
  // Frames a sender may hold, and all senders: beyond them a sender builds only frames due now (held frames
  // count in the transmit queues' limit, whose room is for frames due now first).
  static constexpr size_t kHeldMax = 32, kHeldTotalMax = 128;
  // Whether any receive lcore is still running (not joined).
  bool workers_running() const noexcept;
  // A frame from `port`'s pool (nullptr when it is empty), built by build().
  rte_mbuf* frame(Port& port, const FrameSpec& spec);
  // Writes spec's frame into `m` from its flow's template, captures and counts it; returns its length.
  uint16_t build(rte_mbuf* m, const FrameSpec& spec);
  // The same for a run of n data frames into ms[0..n) (fill_run: spec is the first frame's; the last
  // frame carries last_bytes); returns their bytes.
  uint64_t build_run(rte_mbuf* const* ms, uint32_t n, const FrameSpec& spec, uint32_t last_bytes,
                     bool payload_zero);
  // The template of flow src -> dst (nullptr beyond 65,536 flows: those frames are encoded whole).
  FrameTemplate& flow_template(const FrameSpec& spec) { return templates_.of(spec); }
  // The data frames' mbufs come from data_pool_ through a stash refilled kTxStash at a time, as the pool
  // gives them (take_frames): fill_run resets them. False when the pool is empty.
  bool refill_stash();
  // short_stash_ full again (kShortStash, one per run of a next_runs call) from port A's pool; false when
  // that pool is (nearly) empty.
  bool refill_short();
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
  FlowTemplates templates_;  // the data frames' templates, by flow
  rte_mempool* data_pool_ = nullptr;                  // the data frames': port A's zero_pool() (payloads not written)
  static constexpr uint16_t kTxStash = 32;
  rte_mbuf* tx_stash_[kTxStash] = {};                 // taken from data_pool_, not yet used
  uint16_t stash_next_ = 0, stash_n_ = 0;
  // RoCEv2: the zero pool holds full frames only; a run's shorter last frame comes from port A's pool.
  bool split_short_ = false;
  static constexpr uint16_t kShortStash = 8;          // the runs of one next_runs call (transmit's runs[])
  rte_mbuf* short_stash_[kShortStash] = {};
  uint16_t short_n_ = 0;
  // Scratch of transmit() and take_completions(), members so that no call initializes them again: as
  // locals their member initializers cost a memset per sender per poll (perf, an as-fast-as-possible run:
  // memset 15% of all samples, a third of the main lcore's; the run's rate +0-6%, 6 alternated pairs).
  std::array<TxRun, kShortStash> tx_runs_{};
  // By sender: no work before this wall ps (Sender::next_work after its last transmit; 0 once a message
  // is submitted to it, a NACK reaches it or the RTO changes). Contiguous: transmit() reads it per poll.
  std::vector<uint64_t> tx_next_work_;
  std::array<RxCompletion, 64> completions_{};
  std::vector<uint64_t> burst_ps_;                    // per link: the pacer's burst allowance, wall ps
  std::vector<uint64_t> backlog_;                     // walker ids waiting for a window slot
  // The stall timeout's measure of progress (on_delivered): messages completed and ACKs taken; and the
  // NACKs taken, which the stall's reason counts.
  uint64_t progress_ = 0, nacks_in_ = 0;
  // First hops and, at D > 0, the walker ids waiting for their modelled departure.
  MessagePacing pacing_;
  LinkSenders senders_;                               // one per first link
  // Per first link: the pacer's next slot (link_pacer.h, pace_frames).
  std::vector<LinkSlot> pace_slot_;
  std::vector<LinkPace> link_pace_;
  std::vector<double> period_ratios_;                 // closed undisturbed periods: scheduled / actual
  std::vector<CollAcc> coll_acc_;                     // by Message::coll
  // By port A transmit queue: frames built, not yet taken by the device. A sender's frames all go to one
  // queue (its source rank mod the queues), so each link's frames leave in their order.
  std::vector<std::vector<rte_mbuf*>> tx_data_;
  // With pacing, tx_data_'s frames as PacedRuns (by queue as tx_data_): a first transmission's (its link,
  // schedule and whether it continues its link's busy period), or a retransmission's (link kUnpacedLink:
  // not paced, not counted).
  std::vector<PacedQueue> tx_paced_;
  // By queue as tx_data_: the messages whose first frame waits there, stamped (Record::tx_ticks) when the
  // device takes it (flush).
  std::vector<FirstFrames<Record>> tx_firsts_;
  std::vector<PacedRun> paced_;                       // pace_run's runs of one next_runs call: [0, paced_n_)
  uint32_t paced_n_ = 0;
  uint64_t pace_now_ps_ = 0;                          // pace_run's last reading of the wall clock
  uint64_t pace_ahead_ps_ = 0;                        // pace_run's build-ahead for the sender at hand (wall)
  uint64_t ahead_wall_ps_ = 0, ahead_emulated_ps_ = 0;  // opt_.ahead (0 unpaced), and divided by D
  std::vector<Held> held_;                            // by sender
  std::vector<uint32_t> holding_;                     // the senders with held frames
  size_t held_frames_ = 0;
  bool tx_behind_ = false;                            // a run built over `ahead` late: build nothing ahead
  uint64_t next_release_ps_ = ~uint64_t{0};          // the earliest due time of a held frame (wall)
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
  std::vector<uint32_t> missing_;
  uint64_t ip_id_ = 0;
  bool rx_any_ = false;
  bool interrupted_ = false;
  std::string stall_;     // why the run stopped on a stall (empty: it did not)
  bool started_ = false;  // the first send() restarted the clock
  uint64_t last_poll_ps_ = 0;
  struct Stall {
    uint64_t from_ps, to_ps;  // wall
  };
  std::vector<Stall> stalls_;  // in time order
  // The senders' retransmission timeout: adaptive, at least opt_.rto (longer for slow paced links).
  RtoEstimator rto_{emu::Duration::from_ps(0)};
  void adapt_rto(uint64_t sample_ns);
  DpdkStats stats_;  // the main lcore's counters
  DpdkStats out_;    // stats(): stats_ with the receive side's
};

}  // namespace fabemu::host::dpdk
