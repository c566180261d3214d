// Clock offset estimation between coordinator and agent: NTP's four timestamps, minimum-delay filter.
#pragma once

#include <cstdint>
#include <span>

namespace fabemu::lab {

// CLOCK_REALTIME in ns since the epoch: the clock both ends of a lab share by NTP/PTP, so start times agree.
std::int64_t realtime_ns();

struct ClockSample {
  std::int64_t t1 = 0;  // coordinator send
  std::int64_t t2 = 0;  // agent receive
  std::int64_t t3 = 0;  // agent send
  std::int64_t t4 = 0;  // coordinator receive
  // agent clock minus coordinator clock, assuming symmetric paths
  std::int64_t offset() const { return ((t2 - t1) + (t3 - t4)) / 2; }
  // round trip without the agent's processing time
  std::int64_t delay() const { return (t4 - t1) - (t3 - t2); }
};

struct ClockEstimate {
  std::int64_t offset_ns = 0;  // add to a coordinator time to get the agent's time
  std::int64_t delay_ns = 0;   // round-trip delay of the sample used
  std::uint32_t samples = 0;
};

// The offset of the sample with the least delay (its asymmetry error is bounded by delay/2).
// Throws std::invalid_argument when `samples` is empty.
ClockEstimate estimate_clock(std::span<const ClockSample> samples);

}  // namespace fabemu::lab
