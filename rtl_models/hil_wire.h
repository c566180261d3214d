// The hardware-in-the-loop path around the card (issue 46 item 5; hw/sched/doc/sched_hil.md): the
// contracts the RTL top sched_hil and its C++ models share (the transmit clock, the scaling of emulated
// picoseconds to transmit cycles, the frame of a departure), and the two C++ stand-ins of the hw-emu bench:
// the MAC (100 GbE line rate) and the device under test (latency, rate, ECN marking, drops).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "emulator/time.h"
#include "hw/sched/include/fabemu_msg_map.h"
#include "host/wire/frame.h"
#include "rtl_models/rx_model.h"

namespace fabemu::rtl {

// The transmit clock: a 100 GbE CMAC's 512-bit stream at 322.265625 MHz, a period of 102400/33 ps exactly.
inline constexpr uint64_t kTxPeriodNum = 102400;
inline constexpr uint64_t kTxPeriodDen = 33;
inline constexpr uint32_t kTxLanes = 64;
// 100 Gb/s is 1280/33 bytes per transmit cycle; an Ethernet frame occupies its bytes + 24 (FCS, preamble,
// inter-frame gap) on the wire.
inline constexpr uint64_t kLineBytesNum = 1280;
inline constexpr uint64_t kLineOverhead = 24;
// The largest payload a frame carries (sched_fg: the IPv4 total length limit in fabemu mode).
inline constexpr uint32_t kHilMaxPayload = 65447;

// Transmit cycles per emulated picosecond in Q16.48 for a dilation (Q16.16, emu::dilation_q16): D / period,
// rounded to nearest. std::invalid_argument for 0 or a dilation whose value does not fit 16 integer bits.
uint64_t hil_cycles_per_ps_q48(uint64_t dilation_q16);
// Emulated picoseconds per transmit cycle in Q32.32 (period / D, rounded): sched_rx's cfg_ps_per_cycle_q32.
uint64_t hil_ps_per_cycle_q32(uint64_t dilation_q16);
// The transmit cycle of a departure at `t_ps`: c0 + ceil(t_ps * k / 2^48), the product kept to 112 bits
// and the cycle to 64, as sched_hil_cyc computes it.
uint64_t hil_tx_cycle(uint64_t t_ps, uint64_t k_q48, uint64_t c0) noexcept;
// The frame sched_hil sends for a departure: fabemu mode, host/wire's default address plan, a data packet
// whose tx_time is the modelled departure, its IPv4 id `flow_seq`: the departure's number along its flow.
host::dpdk::FrameSpec hil_frame_spec(const hw::msg::Departure& d, uint16_t flow_seq, uint8_t dscp, host::dpdk::Ecn ecn);

// The card's per-flow departure numbering (sched_hil's flow sequence table): flow (src, dst) by the ranks'
// low kHilFseqRankBits bits, each flow's departures numbered 0, 1, 2, ... mod 2^16 in departure order.
inline constexpr uint32_t kHilFseqRankBits = 5;
class HilFlowSeq {
 public:
  uint16_t next(uint32_t src, uint32_t dst) noexcept {
    constexpr uint32_t m = (1u << kHilFseqRankBits) - 1;
    return next_[(src & m) << kHilFseqRankBits | (dst & m)]++;
  }

 private:
  std::array<uint16_t, std::size_t{1} << (2 * kHilFseqRankBits)> next_{};
};

struct Beat {
  std::array<uint8_t, kTxLanes> bytes{};
  uint32_t keep = 0;  // bytes used, from lane 0
  bool last = false;
};

// The MAC: takes a frame's beats back to back (tready high inside a frame) and starts a frame only when the
// wire, at 100 Gb/s with 24 bytes of overhead per frame, has finished the previous one.
class HilMac {
 public:
  bool ready(uint64_t cycle) const noexcept { return in_frame_ || cycle * kLineBytesNum >= free_; }
  // Between frames: the first cycle from `cycle` on in which the MAC takes a frame's first beat.
  uint64_t ready_from(uint64_t cycle) const noexcept {
    return std::max(cycle, (free_ + kLineBytesNum - 1) / kLineBytesNum);
  }
  // A beat transferred in `cycle`; `frame_bytes` is the frame's length (the first beat's IPv4 total length + 14).
  void take(uint64_t cycle, const Beat& b, uint64_t frame_bytes) noexcept;

 private:
  bool in_frame_ = false;
  uint64_t free_ = 0;  // the wire is busy until free_ / 1280 cycles
};

struct HilDeviceOptions {
  uint64_t latency_cycles = 0;  // a beat taken in cycle c leaves at c + latency at the earliest
  uint64_t rate_mbps = 0;       // frames leave at most at this rate (frame bytes; 0: one beat a cycle)
  uint64_t ecn_bytes = 0;       // ECT frames that find this many bytes queued are marked CE (0: never)
  uint64_t drop_every = 0;      // drops data frame n (from 0) when (n + 1) % drop_every == 0 (0: none)
};

struct HilDeviceCounters {
  uint64_t frames = 0, dropped = 0, marked = 0, forwarded = 0;
};

// The device under test between the MAC and the receive path: a FIFO of beats (a fixed ring, `capacity`
// beats; std::runtime_error when it would overflow).
class HilDevice {
 public:
  HilDevice(const HilDeviceOptions& o, std::size_t capacity);
  void take(uint64_t cycle, const Beat& b);
  // The beat the device offers in `cycle` (nullptr: none); pop() when the receive side took it.
  const Beat* offer(uint64_t cycle) const noexcept;
  void pop() noexcept;
  bool empty() const noexcept { return count_ == 0; }
  // The earliest cycle the oldest beat may leave (the device not empty).
  uint64_t head_earliest() const noexcept { return ring_[head_].earliest; }
  const HilDeviceCounters& counters() const noexcept { return c_; }

 private:
  struct Slot {
    Beat beat;
    uint64_t earliest;
  };
  HilDeviceOptions o_;
  std::vector<Slot> ring_;
  std::size_t head_ = 0, count_ = 0;
  uint64_t queued_bytes_ = 0;
  bool in_frame_ = false, dropping_ = false;
  uint64_t start_ = 0, index_ = 0;  // the current frame's first out cycle and beat index
  uint64_t free_ = 0;               // the output is busy until this cycle
  emu::detail::u128 free_u_ = 0;    // with a rate: until free_u_ / (rate_mbps * 64) cycles
  HilDeviceCounters c_;
};

// The bench's options and what it measured (rtl_models/sched_hil_hwemu.h; the report's FPGA section).
struct HilOptions {
  uint64_t dilation_q16 = uint64_t{1} << 16;
  uint64_t lead_cycles = 8192;
  HilDeviceOptions device;
  uint8_t dscp = 0;               // the frames are ECT(0), so that the device may mark them
  uint32_t npus = 1;              // ranks: flows src * npus + dst, at most 1024 (sched_rx's flow table)
  bool keep_frames = false;       // keep every frame's bytes and cycles (tests)
  std::size_t device_beats = std::size_t{1} << 16;
};

// A frame at the MAC (keep_frames).
struct HilFrame {
  uint64_t sched = 0;  // the cycle its first beat was scheduled in (hil_tx_cycle of its tx_time)
  uint64_t first = 0;  // the cycle its first beat was transferred
  std::vector<uint8_t> bytes;
};

// A flow's figures: `sent` the frames the card sent on it (counted at the MAC), the rest as the receive path
// counted them, but `lost` = sent - frames (every frame sent arrives once or was dropped: exact whatever the
// order); `rx_lost` is the receive path's own count (sequence gaps less late frames: the tail of a flow, its
// frames after the last one that arrived, is not in it).
struct HilFlow {
  uint32_t flow = 0;  // src * npus + dst
  uint64_t sent = 0, frames = 0, payload = 0, wire = 0, lost = 0, reordered = 0, ce = 0, rx_lost = 0;
};

struct HilArrival {
  uint32_t src = 0, dst = 0;
  uint64_t msg = 0, frames = 0, bytes = 0, first_cycle = 0, last_cycle = 0;
};

// Appends every element of `from` to `out` and empties `from`; returns how many (the cards' take_departures).
template <class T>
std::size_t move_all(std::vector<T>& from, std::vector<T>& out) {
  const std::size_t n = from.size();
  out.insert(out.end(), from.begin(), from.end());
  from.clear();
  return n;
}

// A flow's HilFlow from the frames the card sent on it and the receive path's counters.
HilFlow hil_flow(uint32_t flow, uint64_t sent, const RxFlowCounters& rx) noexcept;

// A message whose first frame (seq 0) left the MAC after its scheduled cycle, and by how many cycles.
struct HilLateStart {
  uint64_t msg = 0, cycles = 0;
};

struct HilReport {
  uint64_t frames_sent = 0;        // sched_fg's frames
  uint64_t late_frames = 0;        // sched_fg's late_frames
  uint64_t late_measured = 0;      // frames whose first beat left after its cycle, at the MAC
  uint64_t early = 0;              // ... before its cycle (never)
  uint64_t worst_late_cycles = 0;
  uint64_t rx_frames = 0, rx_ours = 0, rx_negative = 0, rx_records = 0, rx_records_dropped = 0;
  HilDeviceCounters device;
  std::vector<HilFlow> flows;      // flows the card sent frames on, by index
  std::vector<uint64_t> histogram; // emu::LogHistogram bucket counts of latency (ps)
  uint64_t cycles = 0;             // the clock at the end
  uint64_t c0 = 0;
  std::vector<HilArrival> arrivals;         // the receive path's arrival records, in output order
  std::vector<HilLateStart> late_starts;    // in departure order
};

}  // namespace fabemu::rtl
