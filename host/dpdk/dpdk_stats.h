// The DPDK fabric's measurements of a run (DpdkStats: the counters both real-time fabrics keep,
// WireStats, and the DPDK fabric's own: lcores, arrival clocks, pacing per link, per collective), the
// fidelity verdict drawn from them, and their text and JSON forms (the report's "DPDK" section).
// DpdkFabric::stats() fills them (dpdk_fabric_stats.cpp); dpdk_stats.cpp formats them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emulator/histogram.h"
#include "emulator/report.h"
#include "emulator/time.h"
#include "host/dpdk/dpdk_env.h"
#include "host/wire/frame.h"
#include "host/wire/reassembly.h"
#include "host/wire/wire_counters.h"

namespace fabemu::host::dpdk {

// Measurements of a run on the wire, for the report's "DPDK" section: WireStats (dilation, wall, stall,
// retransmissions, feedback, what the receive side refused, lateness, latency from the first frame's
// transmission to the reassembly, jitter, the main lcore's polling), and the DPDK fabric's own below.
struct DpdkStats : WireStats {
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
  uint64_t messages = 0;              // messages that went on the wire (src != dst)
  uint64_t message_bytes = 0;         // bytes of those messages
  uint64_t bytes_completed = 0;       // message bytes the receivers reassembled (== message_bytes at the end)
  uint64_t messages_completed = 0;
  uint64_t frames_tx = 0, frame_bytes_tx = 0;
  uint64_t frames_rx = 0, frame_bytes_rx = 0;
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
  // Each transmit lcore (DpdkFabricOptions::tx_lcores; none when the main lcore sends): its lcore, its
  // first transmit queue of port A and how many it has, the frames and bytes it sent (data frames among
  // them), its rounds, its flushes to the device and those the device did not take whole, its stalls over
  // 100 us, the messages handed to it and the ACK/NACK frames passed to it. Their frames, bytes and data
  // frames add up to frames_tx, frame_bytes_tx and data_frames (the receive side's ACKs/NACKs aside).
  struct TxLcore {
    unsigned lcore = 0;
    uint16_t queue = 0, queues = 0;
    uint64_t frames = 0, bytes = 0, data_frames = 0, polls = 0, bursts = 0, full = 0, stalls = 0;
    uint64_t messages = 0, feedback = 0;
  };
  std::vector<TxLcore> tx_lcores;
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
  // The smallest tail age the senders had (Sender::on_nack with a tail age; 0: never set, the RTO).
  emu::Duration tail_age_min;
  uint64_t not_ours_by_verdict[kVerdictCount] = {};
  // Data frames of ours received (every copy), by the ECN codepoint they arrived with (index: Ecn), and
  // those whose DSCP was not the one they left with: what the device did to the TOS byte. Frames sent ECT
  // that arrive CE were marked by a switch whose queue built up; Not-ECT ones, had their ECN cleared.
  uint64_t data_by_ecn[4] = {};
  uint64_t dscp_changed = 0;
  uint64_t ring_ce_marked = 0;        // frames the ring pair's device marked CE (RingDevice::ecn_bytes)
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
// side (its polling stalls are in the stats). The threshold's choice, from the quick-start sample on a ring
// pair at several dilations: host/dpdk/README.md, "Fidelity".
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

// The median of sorted values: the middle one, or the mean of the two middle ones for an even count
// (not empty).
double median_of_sorted(const std::vector<double>& v) noexcept;

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

}  // namespace fabemu::host::dpdk
