#include "host/lab/clock.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace fabemu::lab {

std::int64_t realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ClockEstimate estimate_clock(std::span<const ClockSample> samples) {
  if (samples.empty()) throw std::invalid_argument("clock estimate from no samples");
  const auto best = std::min_element(samples.begin(), samples.end(),
                                     [](const ClockSample& a, const ClockSample& b) { return a.delay() < b.delay(); });
  return ClockEstimate{best->offset(), best->delay(), static_cast<std::uint32_t>(samples.size())};
}

}  // namespace fabemu::lab
