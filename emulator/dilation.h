// The time dilation of the real-time fabrics (--dilation D: the wall clock runs D times slower than the
// emulated one) as the 16.16 fixed point their clocks run at (host/dpdk/realtime.h, host/lab/dilated_clock.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace fabemu::emu {

// The smallest positive dilation whose 16.16 value is within 0.1% of it: below, the clock's steps of
// 1/65536 are too coarse (at 1e-5 the clock would run at 1.526e-5, 53% off, while the report said 1e-5).
inline constexpr double kMinDilation = 0.5 / 65536.0 / 1e-3;  // 0.00763 (rounding error <= 0.5 / 65536)

// D * 2^16, rounded. std::invalid_argument naming `what` (the option) for a D that is negative, NaN, above
// 1e6, or positive and below kMinDilation. 0 is "as fast as possible".
inline uint64_t dilation_q16(double d, const char* what = "--dilation") {
  if (!(d >= 0) || d > 1e6) {
    throw std::invalid_argument(fmt::format("{} {}: expected 0 (as fast as possible) .. 1e6", what, d));
  }
  if (d > 0 && d < kMinDilation) {
    throw std::invalid_argument(fmt::format(
        "{} {}: the real-time clocks run a dilation in steps of 1/65536, more than 0.1% off below {:.4f} ({} would "
        "run at {:.6g}); give at least {:.4f}, or 0 (as fast as possible)",
        what, d, kMinDilation, d, std::max(1.0, std::round(d * 65536.0)) / 65536.0, kMinDilation));
  }
  return static_cast<uint64_t>(std::llround(d * 65536.0));
}

}  // namespace fabemu::emu
