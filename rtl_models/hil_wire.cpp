#include "rtl_models/hil_wire.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "host/wire/address_plan.h"

namespace fabemu::rtl {

namespace dp = host::dpdk;
using emu::detail::u128;

uint64_t hil_cycles_per_ps_q48(uint64_t dilation_q16) {
  if (dilation_q16 == 0 || dilation_q16 >= (uint64_t{1} << 32)) {
    throw std::invalid_argument("hardware in the loop: dilation (Q16.16) " + std::to_string(dilation_q16) +
                                " out of range (above 0, below 65536)");
  }
  // D / period = (dilation_q16 / 2^16) * 33 / 102400; in Q16.48: dilation_q16 * 33 * 2^32 / 102400.
  const u128 num = u128{dilation_q16} * kTxPeriodDen << 32;
  return static_cast<uint64_t>((num + kTxPeriodNum / 2) / kTxPeriodNum);
}

uint64_t hil_ps_per_cycle_q32(uint64_t dilation_q16) {
  hil_cycles_per_ps_q48(dilation_q16);  // the same range
  // period / D in Q32.32 = 102400 * 2^48 / (33 * dilation_q16).
  const u128 num = u128{kTxPeriodNum} << 48;
  const u128 den = u128{kTxPeriodDen} * dilation_q16;
  return static_cast<uint64_t>((num + den / 2) / den);
}

uint64_t hil_tx_cycle(uint64_t t_ps, uint64_t k_q48, uint64_t c0) noexcept {
  const u128 p = (u128{t_ps} * k_q48) & ((u128{1} << 112) - 1);
  const uint64_t ceil = static_cast<uint64_t>(p >> 48) + ((p & ((u128{1} << 48) - 1)) != 0 ? 1 : 0);
  return c0 + ceil;
}

dp::FrameSpec hil_frame_spec(const hw::msg::Departure& d, uint16_t flow_seq, uint8_t dscp, dp::Ecn ecn) {
  dp::FrameSpec s;
  s.mode = dp::WireMode::kFabemu;
  s.src = dp::default_endpoint(d.src);
  s.dst = dp::default_endpoint(d.dst);
  s.ip_id = flow_seq;
  s.dscp = dscp;
  s.ecn = ecn;
  s.hdr = dp::FabemuHeader{dp::PacketKind::kData, 0, d.src, d.dst, d.id, static_cast<uint32_t>(d.seq),
                           static_cast<uint32_t>(d.count), d.msg_bytes, d.offset, d.time_ps};
  s.payload_bytes = d.bytes;
  return s;
}

HilFlow hil_flow(uint32_t flow, uint64_t sent, const RxFlowCounters& rx) noexcept {
  return HilFlow{flow, sent, rx.frames, rx.payload, rx.wire, sent - rx.frames, rx.reordered, rx.ce, rx.lost};
}

void HilMac::take(uint64_t cycle, const Beat& b, uint64_t frame_bytes) noexcept {
  if (!in_frame_) free_ = std::max(free_, cycle * kLineBytesNum) + (frame_bytes + kLineOverhead) * kTxPeriodDen;
  in_frame_ = !b.last;
}

HilDevice::HilDevice(const HilDeviceOptions& o, std::size_t capacity) : o_(o), ring_(capacity) {}

void HilDevice::take(uint64_t cycle, const Beat& b) {
  if (!in_frame_) {
    in_frame_ = true;
    index_ = 0;
    const uint64_t n = c_.frames++;
    dropping_ = o_.drop_every != 0 && (n + 1) % o_.drop_every == 0;
    const uint64_t len = 14 + (uint64_t{b.bytes[16]} << 8 | b.bytes[17]);  // Ethernet + IPv4 total length
    if (dropping_) {
      ++c_.dropped;
    } else {
      start_ = std::max(cycle + o_.latency_cycles, free_);
      free_ = start_ + (len + kTxLanes - 1) / kTxLanes;
      if (o_.rate_mbps != 0) {  // len bytes at rate_mbps * 64 / 165000 bytes per cycle
        const u128 r = u128{o_.rate_mbps} * 64;
        free_u_ = std::max(free_u_, u128{start_} * r) + u128{len} * 165000;
        free_ = std::max(free_, static_cast<uint64_t>((free_u_ + r - 1) / r));
      }
    }
  }
  if (!dropping_) {
    if (count_ == ring_.size()) {
      throw std::runtime_error("hardware in the loop: the stand-in device's queue of " + std::to_string(ring_.size()) +
                               " beats is full (a rate far below the traffic's)");
    }
    Slot& s = ring_[(head_ + count_) % ring_.size()];
    s.beat = b;
    s.earliest = start_ + index_;
    if (index_ == 0 && o_.ecn_bytes != 0 && queued_bytes_ >= o_.ecn_bytes &&
        dp::mark_ce(std::span<uint8_t>(s.beat.bytes.data(), s.beat.keep))) {
      ++c_.marked;
    }
    ++count_;
    queued_bytes_ += b.keep;
  }
  ++index_;
  if (b.last) in_frame_ = false;
}

const Beat* HilDevice::offer(uint64_t cycle) const noexcept {
  if (count_ == 0 || ring_[head_].earliest > cycle) return nullptr;
  return &ring_[head_].beat;
}

void HilDevice::pop() noexcept {
  if (ring_[head_].beat.last) ++c_.forwarded;
  queued_bytes_ -= ring_[head_].beat.keep;
  head_ = (head_ + 1) % ring_.size();
  --count_;
}

}  // namespace fabemu::rtl
