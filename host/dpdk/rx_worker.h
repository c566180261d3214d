// The receive side of the DPDK fabric (README.md, "Receive lcore"): the port data frames arrive on, the
// fault filter, the Receivers' reassembly and the ACKs/NACKs they send back. RxPath is that state and its
// poll loop; the main lcore calls it inline (one lcore), or an RxWorker runs it on an lcore of its own,
// owning the port entirely. Then the only state the two lcores share is a single-producer
// single-consumer rte_ring of fixed-size RxCompletion records (worker -> main) and the worker's stop
// request / done flags, each on a cache line of its own.
#pragma once

#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "host/wire/address_plan.h"
#include "host/dpdk/dpdk_env.h"
#include "host/wire/flow_templates.h"
#include "host/wire/nic_clock.h"
#include "host/wire/pcap_writer.h"
#include "host/dpdk/realtime.h"
#include "host/wire/reassembly.h"
#include "host/wire/frame.h"

struct rte_ring;

namespace fabemu::host::dpdk {

// A message the receive side reassembled. 32 bytes: an element of the worker -> main ring.
struct RxCompletion {
  uint32_t src = 0, dst = 0;
  uint64_t wire_id = 0;   // the sender's message id of the (src, dst) pair
  uint64_t rx_ticks = 0;  // TSC when its last packet arrived (the NIC's timestamp mapped to the TSC, `nic`)
  uint32_t nic = 0;       // 1: rx_ticks comes from the NIC's RX timestamp
  uint32_t ce = 0;        // its packets that arrived marked CE (Receiver::completed_ce)
};
static_assert(sizeof(RxCompletion) == 32);

struct RxPathConfig {
  uint32_t npus = 0;
  WireMode mode = WireMode::kFabemu;
  const AddressPlan* plan = nullptr;  // outlives the RxPath
  DecodeRules rules;
  uint32_t window = 1024;
  emu::Duration nack_delay = emu::Duration::from_us(200);
  FaultConfig faults;
  // The TOS the fabric's frames leave with: its ACK/NACK frames carry it, and its data frames arriving
  // with another DSCP or ECN codepoint are counted (RxPathStats).
  uint8_t dscp = 0;
  Ecn ecn = Ecn::kNotEct;
};

// Counters of the receive side, summed into DpdkStats.
struct RxPathStats {
  uint64_t frames_rx = 0, frame_bytes_rx = 0;
  uint64_t frames_tx = 0, frame_bytes_tx = 0;  // ACK and NACK frames built
  uint64_t acks = 0, nacks = 0;
  uint64_t not_ours = 0;
  uint64_t not_ours_by_verdict[kVerdictCount] = {};
  uint64_t rx_invalid = 0;      // ranks out of range; on the worker also feedback frames (they belong to A)
  uint64_t hw_timestamped = 0;  // frames that carried an RX timestamp of the device
  uint64_t nic_arrivals = 0;    // completions timed by the NIC's clock (the others by the TSC)
  uint64_t completions = 0;
  // Data frames of ours (every copy, first or not) by the ECN codepoint they arrived with (Ecn: Not-ECT,
  // ECT(1), ECT(0), CE), and those whose DSCP was not the one they left with (a device rewrote it).
  uint64_t data_by_ecn[4] = {};
  uint64_t dscp_changed = 0;
  uint64_t polls = 0;
  // Gaps between two polls of this path longer than kPollStallNs (the lcore preempted, a slow round):
  // frames that arrived meanwhile are timed late.
  uint64_t poll_stalls = 0, poll_gap_max_ns = 0;
};

// A gap between two polls longer than this is a stall, of the main lcore's polling and of a receive path's.
inline constexpr uint64_t kPollStallNs = 100'000;
// A stall of a polling lcore, in raw clock ticks (TscClock::ticks: the TSC under EAL).
struct TickSpan {
  uint64_t from, to;
};

// One receive round of a port: up to kRxBursts bursts of kRxBurst frames (fewer when a burst comes short).
inline constexpr uint16_t kRxBurst = 32;
inline constexpr int kRxBursts = 8;
inline constexpr uint16_t kRxPrefetch = 4;  // frames ahead whose heads receive_round prefetches
inline constexpr uint16_t kRxBodyPrefetch = 2;  // frames ahead whose bodies (lines 2..) it prefetches

// The receive loop both receive paths run (RxPath::poll on port B, DpdkFabric on a separate port A): each
// frame counted in `c` (frames_rx, frame_bytes_rx, not_ours, not_ours_by_verdict: RxPathStats or
// DpdkStats), its RX timestamp read (counted in `hw_timestamped`) and decoded. A frame not ours is counted
// and freed; one of ours goes to `ours(m, f, has_ts, ts, arrived)`, which then owns the mbuf; `arrived` is
// the TSC read as its burst came back from rx_burst (one reading a burst): when fabemu had the frame, before
// any frame of the burst was processed. Returns whether a
// frame of ours was received: frames that are not ours are no progress (the stall timeout, the receive
// lcore's and the drain's quiet time). They counted once, and a device that receives frames without end
// (net_null as the loopback device: 4.8 billion frames of zeros in 2 minutes) kept a run that had lost
// every frame of its own waiting forever instead of failing after the stall timeout. Inline: the
// per-frame work is the callers' own loop.
template <class Counters, class Ours>
inline bool receive_round(Port& port, uint16_t queue, const DecodeRules& rules, std::vector<uint8_t>& scratch,
                          Counters& c, uint64_t& hw_timestamped, Ours&& ours) {
  bool any = false;
  const bool icrc = rules.mode == WireMode::kRoceV2 && rules.verify_icrc, udp = rules.verify_udp_checksum;
  rte_mbuf* pkts[kRxBurst];
  // One for the round: decode writes every field of it for a frame of ours (Wire.RandomRoundTrip), and a
  // fresh one per frame cost its initialization each time (a `rep stos`, a quarter of this loop's own
  // samples in perf).
  DecodedFrame f;
  for (int b = 0; b < kRxBursts; ++b) {
    const uint16_t n = port.rx_burst(pkts, kRxBurst, queue);
    const uint64_t arrived = n > 0 ? rte_rdtsc() : 0;
    // The frames were written on another core: their heads are fetched kRxPrefetch frames ahead of the
    // decode (as DPDK's l3fwd does), so the misses overlap instead of coming one after another, and the
    // rest of each frame kRxBodyPrefetch frames ahead (the decode's zero test or checksum reads it all).
    // Only a body the decode will read: not when the NIC vouched for the UDP checksum (decode_mbuf) and no
    // ICRC is to be checked.
    const auto prefetch_body = [icrc, udp](const rte_mbuf* a) {
      if (!icrc && (!udp || (a->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD)) return;
      const auto* p = rte_pktmbuf_mtod(a, const uint8_t*);
      for (uint32_t off = 2 * RTE_CACHE_LINE_SIZE; off < a->data_len; off += RTE_CACHE_LINE_SIZE) rte_prefetch0(p + off);
    };
    for (uint16_t i = 0; i < n; ++i) rte_prefetch0(pkts[i]);  // the mbufs: data address and lengths
    for (uint16_t i = 0; i < n && i < kRxPrefetch; ++i) rte_prefetch0(rte_pktmbuf_mtod(pkts[i], const void*));
    for (uint16_t i = 0; i < n && i < kRxBodyPrefetch; ++i) prefetch_body(pkts[i]);
    for (uint16_t i = 0; i < n; ++i) {
      if (i + kRxPrefetch < n) {
        const auto* ahead = rte_pktmbuf_mtod(pkts[i + kRxPrefetch], const uint8_t*);
        rte_prefetch0(ahead);
        rte_prefetch0(ahead + RTE_CACHE_LINE_SIZE);
      }
      if (i + kRxBodyPrefetch < n) prefetch_body(pkts[i + kRxBodyPrefetch]);
      rte_mbuf* m = pkts[i];
      ++c.frames_rx;
      c.frame_bytes_rx += m->pkt_len;
      uint64_t ts = 0;
      const bool has_ts = port.rx_timestamp(m, ts);
      hw_timestamped += has_ts ? 1 : 0;
      const Verdict v = decode_mbuf(m, rules, f, scratch);
      if (v != Verdict::kOurs) {
        ++c.not_ours;
        ++c.not_ours_by_verdict[static_cast<size_t>(v)];
        rte_pktmbuf_free(m);
        continue;
      }
      any = true;
      ours(m, f, has_ts, ts, arrived);
    }
    if (n < kRxBurst) break;
  }
  return any;
}

// Hands `queue` to the port's transmit queue `txq` in bursts of up to `burst` frames, until the device is
// full or the queue empty; `taken(first, n)` after each burst that took n > 0 frames (indices into
// `queue`). Removes what was taken from `queue` and returns how many.
template <class Taken>
inline size_t send_bursts(Port& port, uint16_t txq, std::vector<rte_mbuf*>& queue, uint16_t burst, Taken&& taken) {
  size_t sent = 0;
  while (sent < queue.size()) {
    const auto n = static_cast<uint16_t>(std::min<size_t>(burst, queue.size() - sent));
    const uint16_t took = port.tx_burst(queue.data() + sent, n, txq);
    if (took > 0) taken(sent, took);
    sent += took;
    if (took < n) break;  // the device is full: the rest waits for the next poll
  }
  queue.erase(queue.begin(), queue.begin() + static_cast<ptrdiff_t>(sent));
  return sent;
}

// What RxPath::poll reports to its owner.
class RxSink {
 public:
  virtual void completed(const RxCompletion& c) = 0;
  // An ACK or NACK (for the Senders) that arrived on the receive port (a port that loops frames back).
  virtual void feedback(const DecodedFrame& f) = 0;

 protected:
  ~RxSink() = default;
};

// The receive side's state; one lcore at a time. Not copyable.
class RxPath {
 public:
  // Also reads the port's clock when its RX timestamps are on (ClockFit, "nic"); std::invalid_argument
  // for a bad fault configuration. `queue`: the port's receive queue it polls and the transmit queue its
  // ACKs/NACKs leave on (one path per queue: README.md, "Several receive lcores").
  RxPath(const RxPathConfig& config, Port& port, PcapWriter* pcap, uint16_t queue = 0);
  ~RxPath();
  RxPath(const RxPath&) = delete;
  RxPath& operator=(const RxPath&) = delete;

  // One round: up to 8 bursts of the port, decoded; data frames through the fault filter into the
  // Receivers; completions and feedback frames to `sink`; held-back frames released when nothing newer
  // came; NACKs of idle messages; the ACK/NACK frames sent. `stamp_ps` goes into the ACK/NACK headers
  // (kStampWall: this path's wall clock, ps). Returns true when a frame of ours was received and not
  // dropped by the fault injection: progress.
  // `now_ticks`: the TSC just read by the caller (the fabric's polling round reads it once for all its
  // parts); without it, poll reads it.
  static constexpr uint64_t kStampWall = ~uint64_t{0};
  bool poll(RxSink& sink, uint64_t stamp_ps) { return poll(sink, stamp_ps, clock_.ticks()); }
  bool poll(RxSink& sink, uint64_t stamp_ps, uint64_t now_ticks);
  // Nothing held back by reorder injection and no ACK/NACK waiting for the device.
  bool idle() const noexcept { return reorder_.empty() && tx_.empty(); }
  // Wall time zero of the Receivers' timers and of the pcap records of ACKs/NACKs.
  void restart_clock() noexcept {
    clock_.restart();
    next_nack_scan_ps_ = 0;  // a time on the clock before
    last_nack_scan_ps_ = 0;
  }
  const TscClock& clock() const noexcept { return clock_; }

  Port& port() noexcept { return port_; }
  uint16_t queue() const noexcept { return queue_; }
  const RxPathStats& stats() const noexcept { return stats_; }
  // Its polls' stalls (RxPathStats::poll_stalls), in time order; the first kMaxStalls of them.
  static constexpr size_t kMaxStalls = size_t{1} << 16;
  const std::vector<TickSpan>& stalls() const noexcept { return stalls_; }
  const FaultFilter& faults() const noexcept { return faults_; }
  // The Receivers' counters summed.
  ReceiverStats receiver_totals() const noexcept;
  // "nic" when arrivals are timed by the device's RX timestamps (offload on and its clock readable,
  // mapped to the TSC), else "tsc".
  const char* clock_name() const noexcept { return nic_ ? "nic" : "tsc"; }
  const ClockFit& clock_fit() const noexcept { return fit_; }
  void count_invalid() noexcept { ++stats_.rx_invalid; }

 private:
  // `arrived`: the TSC when the frame came back from rx_burst (RxCompletion::rx_ticks without the NIC's).
  void handle(const DecodedFrame& f, RxSink& sink, bool has_ts, uint64_t ts, uint64_t arrived);
  void process_held(rte_mbuf* m, RxSink& sink);
  void feedback(uint32_t from, uint32_t to, uint64_t id, PacketKind kind, uint32_t count, uint32_t cumulative,
                uint32_t covered, std::span<const uint32_t> missing);
  void flush();
  // NACKs of the Receivers' idle incomplete messages (Receiver::poll_nacks), sent with the round's flush.
  void nack_scan();
  void sample_clock() noexcept;
  Receiver& receiver(uint32_t dst);

  RxPathConfig cfg_;
  Port& port_;
  uint16_t queue_;
  PcapWriter* pcap_;
  TscClock clock_;
  FaultFilter faults_;
  std::vector<std::unique_ptr<Receiver>> receivers_;
  std::vector<uint32_t> active_receivers_;
  FlowTemplates templates_;  // ACK/NACK flows
  std::vector<rte_mbuf*> tx_;
  struct Held {
    rte_mbuf* m;
    uint32_t after;  // released after this many more data frames (or when the port is idle)
  };
  std::vector<Held> reorder_;
  std::vector<Held> release_;
  // The ACKs a round owes, built at its end (after its frames' completions, which the main lcore waits
  // for: an ACK built per frame held back the completions of the frames after it in the round).
  struct Ack {
    uint32_t from, to;
    uint64_t id;
    uint32_t count, cumulative;
  };
  std::vector<Ack> acks_;
  // The frames of this round that are done with, freed together after it (rte_pktmbuf_free_bulk).
  std::array<rte_mbuf*, size_t{kRxBurst} * kRxBursts> done_{};
  uint32_t done_n_ = 0;
  void free_done() noexcept;
  NackBatch nacks_;
  // The Receivers' NACK timers are checked every nack_delay / kNackScansPerDelay, not every poll: a check
  // reads every active Receiver and every message it holds, one cache line each, and every poll of a
  // 512-rank all-to-all spent tens of microseconds on it (18% of all samples, the receive lcore's
  // largest share). A NACK then leaves at most nack_delay / kNackScansPerDelay later than it fell due.
  static constexpr uint64_t kNackScansPerDelay = 8;
  uint64_t next_nack_scan_ps_ = 0;
  uint64_t last_nack_scan_ps_ = 0;  // when nack_scan last ran (a full round defers it: RxPath::poll)
  // By rank: the messages its Receiver holds incomplete (Receiver::active_messages() after its last
  // packet), so that the check passes over the idle ones without reading them.
  std::vector<uint32_t> active_of_;
  std::vector<uint8_t> scratch_;
  uint64_t ip_id_ = 0;
  uint64_t stamp_ps_ = 0;
  emu::Time now_;             // the wall clock of this round
  bool data_seen_ = false;
  bool nic_ = false;          // arrivals timed by the NIC
  ClockFit fit_;
  uint64_t next_sample_ = 0;  // TSC of the next clock sample
  uint64_t sample_every_ = 0;      // the interval to the next sample (doubling up to sample_every_max_)
  uint64_t sample_every_max_ = 0;
  uint64_t last_poll_ticks_ = 0;  // 0: no poll yet
  uint64_t stall_ticks_ = 0;      // kPollStallNs in ticks
  std::vector<TickSpan> stalls_;
  RxPathStats stats_;
};

// Runs an RxPath on an lcore of its own (rte_eal_remote_launch) until stopped. Main lcore API only.
class RxWorker {
 public:
  // `lcore` must be an enabled worker lcore waiting for work. std::runtime_error when it cannot be
  // launched or the ring cannot be created.
  RxWorker(RxPath& path, unsigned lcore);
  // Stops at once (without draining) and waits.
  ~RxWorker();
  RxWorker(const RxWorker&) = delete;
  RxWorker& operator=(const RxWorker&) = delete;

  // Completions the worker has passed over, up to `n`; returns how many.
  unsigned take(RxCompletion* out, unsigned n) noexcept;
  // Asks the worker to finish: it polls until its port has been quiet for `quiet_ns`, then passes its
  // last completions and returns; at `deadline_tsc` (or a stop request of EAL) it returns anyway.
  void request_stop(uint64_t quiet_ns, uint64_t deadline_tsc) noexcept;
  // The worker has returned (or failed): join() will not wait.
  bool done() const noexcept { return done_.load(std::memory_order_acquire); }
  // Waits for the worker (rte_eal_wait_lcore); afterwards its RxPath may be read. Rethrows the worker's
  // failure as std::runtime_error.
  void join();
  bool joined() const noexcept { return joined_; }
  unsigned lcore() const noexcept { return lcore_; }

 private:
  static int entry(void* self);  // rte_lcore_function_t
  int run() noexcept;

  class RingSink final : public RxSink {
   public:
    explicit RingSink(RxWorker& w) : w_(w) {}
    void completed(const RxCompletion& c) override;
    void feedback(const DecodedFrame& f) override;

   private:
    RxWorker& w_;
  };

  RxPath& path_;
  unsigned lcore_;
  rte_ring* ring_ = nullptr;
  bool joined_ = false;
  std::string failure_;  // written by the worker before done_
  // Worker-local: completions the ring had no room for yet.
  std::vector<RxCompletion> pending_;
  RingSink sink_{*this};
  // Main -> worker, written once (before the stop flag, which releases them).
  alignas(64) std::atomic<bool> stop_{false};
  uint64_t quiet_ns_ = 0, deadline_tsc_ = 0;
  // Worker -> main, written once.
  alignas(64) std::atomic<bool> done_{false};
};

}  // namespace fabemu::host::dpdk
