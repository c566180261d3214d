// RFC 6298's retransmission-timeout estimator (SRTT + 4 RTTVAR, gains 1/8 and 1/4) on whole-message
// round trips, never below a floor (the configured RTO) nor above a ceiling. Shared by the DPDK and the
// socket fabric; needs no DPDK. Karn's rule is the caller's: no sample from a message that had a
// retransmission (its round trip is ambiguous).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "emulator/time.h"
#include "emulator/topology.h"

namespace fabemu::host::dpdk {

class RtoEstimator {
 public:
  explicit RtoEstimator(emu::Duration floor, emu::Duration ceiling = emu::Duration::from_ms(1000))
      : floor_(floor), ceiling_(std::max(floor, ceiling)), current_(floor), max_(floor) {}

  // One sample (ns). True when the RTO moved by more than 1/8: only then need the senders be told.
  bool sample(uint64_t ns) noexcept {
    const double x = static_cast<double>(ns);
    if (srtt_ns_ == 0) {
      srtt_ns_ = x;
      rttvar_ns_ = x / 2;
    } else {
      rttvar_ns_ = 0.75 * rttvar_ns_ + 0.25 * std::abs(srtt_ns_ - x);
      srtt_ns_ = 0.875 * srtt_ns_ + 0.125 * x;
    }
    const double want_ns = std::min(static_cast<double>(ceiling_.ps()) / 1000.0, srtt_ns_ + 4 * rttvar_ns_);
    const emu::Duration want = std::max(floor_, emu::Duration::from_ps(static_cast<uint64_t>(want_ns) * 1000));
    if (want.ps() * 8 > current_.ps() * 9 || want.ps() * 9 < current_.ps() * 8) {
      current_ = want;
      max_ = std::max(max_, want);
      return true;
    }
    return false;
  }
  // SRTT + 4 RTTVAR without the floor (at most the ceiling); zero before the first sample.
  emu::Duration estimate() const noexcept {
    const double ns = std::min(static_cast<double>(ceiling_.ps()) / 1000.0, srtt_ns_ + 4 * rttvar_ns_);
    return emu::Duration::from_ps(static_cast<uint64_t>(ns) * 1000);
  }
  // The senders' tail age (SenderConfig::tail_age): how old the last packet sent of a message must be
  // before a NACK that does not cover it resends it as a tail-loss probe. estimate() (a whole message
  // takes at least as long as its last packet, so a packet older than that has not just been slow in a
  // queue), at least the NACK delay, at most the RTO; the RTO before the first sample.
  emu::Duration tail_age(emu::Duration nack_delay) const noexcept {
    return std::clamp(estimate(), std::min(nack_delay, current_), current_);
  }
  // The tail age to give the senders now (after a sample): tail_age(nack_delay) when it differs by more
  // than 1/8 from the last one given (the first time: always), else nothing, so that the senders are
  // told only of a real change.
  std::optional<emu::Duration> next_tail_age(emu::Duration nack_delay) noexcept {
    const emu::Duration t = tail_age(nack_delay);
    if (tail_given_ != emu::Duration::max() && t.ps() * 8 <= tail_given_.ps() * 9 && t.ps() * 9 >= tail_given_.ps() * 8) {
      return std::nullopt;
    }
    tail_given_ = t;
    tail_min_ = tail_min_ == emu::Duration{} ? t : std::min(tail_min_, t);
    return t;
  }
  // The smallest tail age given out (zero: none yet, the senders' tails wait for the RTO).
  emu::Duration tail_age_min() const noexcept { return tail_min_; }
  emu::Duration floor() const noexcept { return floor_; }
  emu::Duration rto() const noexcept { return current_; }
  emu::Duration max() const noexcept { return max_; }

 private:
  emu::Duration floor_, ceiling_, current_, max_;
  emu::Duration tail_given_ = emu::Duration::max(), tail_min_;
  double srtt_ns_ = 0, rttvar_ns_ = 0;
};

// The time the topology's slowest link takes to serialize `bytes`, on `clock`'s wall clock (dilated).
template <class Clock>
emu::Duration slowest_link_wall(const emu::Topology& topo, uint64_t bytes, const Clock& clock) {
  uint64_t slowest = 0;
  for (const emu::Link& l : topo.links()) slowest = std::max(slowest, l.rate.ps_per_byte_q32());
  return clock.to_wall(emu::Rate::from_ps_per_byte_q32(slowest).ser(bytes));
}

// The RTO floor of a fabric: the configured `rto`; when paced (`clock` not as fast as possible), at least
// four partial-ACK intervals (`ack_bytes` each) of the topology's slowest link on the wall clock.
template <class Clock>
emu::Duration paced_rto_floor(emu::Duration rto, const emu::Topology& topo, uint64_t ack_bytes, const Clock& clock) {
  if (clock.as_fast_as_possible()) return rto;
  return std::max(rto, emu::Duration::from_ps(slowest_link_wall(topo, ack_bytes, clock).ps() * 4));
}

// The NACK delay of a fabric: the configured `nack_delay`; when paced, at least kNackFrameGaps frame times
// (`frame_bytes` of payload each) of the topology's slowest link on the wall clock. A receiver NACKs a message
// that has been idle for the NACK delay; paced, a message's frames leave one frame time apart on the dilated
// clock, so a delay below that NACKs every frame merely not due yet (at --dilation 10000, 1442-byte frames
// of a 50 GB/s link are 288 us apart, more than the 200 us default).
inline constexpr uint64_t kNackFrameGaps = 4;
template <class Clock>
emu::Duration paced_nack_floor(emu::Duration nack_delay, const emu::Topology& topo, uint64_t frame_bytes,
                               const Clock& clock) {
  if (clock.as_fast_as_possible()) return nack_delay;
  return std::max(nack_delay, emu::Duration::from_ps(slowest_link_wall(topo, frame_bytes, clock).ps() * kNackFrameGaps));
}

}  // namespace fabemu::host::dpdk
