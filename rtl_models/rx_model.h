// The C++ model of the card's receive path sched_rx (hw/sched/doc/sched_rx.md): what it counts, made with
// host/wire's decode() (the same rules: the UDP checksum checked, the RoCEv2 ICRC not): the global counters
// by verdict, the latency histogram (emu::LogHistogram's buckets), the per-flow counters and the arrival
// records, from the frames as they arrived and their first beats' cycles. The RTL tests hold sched_rx to it
// (tests/fpga/rx_bench.h); the C++ model of the hardware-in-the-loop path (hil_wire.h, HilWireModel) is it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "emulator/histogram.h"
#include "host/wire/frame.h"

namespace fabemu::rtl {

inline constexpr int kRxFlowAw = 10;     // sched_rx's FLOW_AW default: 1024 flows
inline constexpr int kRxGlobals = 20;
// Global counters after the verdicts (0..13, host/wire's Verdict).
enum RxGlobal : int { kRxFramesAll = 14, kRxFeedback = 15, kRxOutOfRange = 16, kRxEarly = 17, kRxRecords = 18,
                      kRxRecordsDropped = 19 };

struct RxConfig {
  bool roce = false;
  uint16_t port_lo = 0, port_hi = 0;
  uint16_t npus = 8;
  uint64_t q32 = uint64_t{1} << 32;     // ps per cycle, Q32.32
  bool flow_seq = false;                // cfg_flow_seq: loss and reordering by the IPv4 id as the flow's sequence
};

struct RxFlowCounters {
  uint64_t frames = 0, payload = 0, wire = 0, lost = 0, reordered = 0, ce = 0;
  friend bool operator==(const RxFlowCounters&, const RxFlowCounters&) = default;
};

struct RxRecord {
  uint32_t src = 0, dst = 0, frames = 0;
  uint64_t msg = 0, bytes = 0, first = 0, last = 0;
  friend bool operator==(const RxRecord&, const RxRecord&) = default;
};

// floor(cycle * q / 2^32) mod 2^64, as sched_rx_mulq.
inline uint64_t rx_arrival_ps(uint64_t cycle, uint64_t q) noexcept {
  const uint64_t ah = cycle >> 32, al = cycle & 0xFFFFFFFF, bh = q >> 32, bl = q & 0xFFFFFFFF;
  return (ah * bh << 32) + ah * bl + al * bh + (al * bl >> 32);
}

class RxModel {
 public:
  explicit RxModel(const RxConfig& c);

  // One frame as it arrived, `cycle` its first beat's (sched_rx's cycle input). Returns decode()'s verdict.
  host::dpdk::Verdict frame(std::span<const uint8_t> f, uint64_t cycle);

  // The latency (arrival - tx_time, ps) of the last frame that was ours, when it was not negative.
  std::optional<uint64_t> last_latency() const noexcept { return last_latency_; }
  // The flow the last frame counted in (a data frame that was ours, its flow in range).
  std::optional<uint32_t> last_flow() const noexcept { return last_flow_; }
  const RxFlowCounters& flow(uint32_t idx) const noexcept { return flows_[idx]; }
  // Flows that counted a frame, by index (src * npus + dst).
  const std::vector<uint32_t>& touched() const noexcept { return touched_; }

  std::array<uint64_t, kRxGlobals> g{};
  std::vector<RxRecord> records;
  emu::LogHistogram hist;

 private:
  struct State {
    bool active = false;
    uint64_t msg = 0;
    uint32_t count = 0, expected = 0, frames = 0;
    uint64_t bytes = 0, first = 0;
    uint16_t flow_expected = 0;   // the flow's next sequence number (flow_seq)
  };
  RxConfig cfg_;
  host::dpdk::DecodeRules rules_;
  std::vector<State> st_;
  std::vector<RxFlowCounters> flows_;
  std::vector<uint32_t> touched_;
  std::optional<uint64_t> last_latency_;
  std::optional<uint32_t> last_flow_;
};

}  // namespace fabemu::rtl
