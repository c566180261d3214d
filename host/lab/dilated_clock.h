// The socket fabric's wall clock: std::chrono::steady_clock, its zero at an agreed CLOCK_REALTIME instant
// (multi-host: the coordinator's start, the same instant on every NTP/PTP-aligned host) or at restart(),
// mapped to emulated picoseconds with a time-dilation factor D: emulated ps = wall ps / D, with D as
// 16.16 fixed point like host/dpdk/realtime.h's TscClock. D = 0: every emulated time has come.
#pragma once

#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "emulator/dilation.h"
#include "emulator/time.h"

namespace fabemu::lab {

class DilatedClock {
 public:
  // std::invalid_argument for a negative, NaN or absurd (> 1e6) dilation, or one too small for the
  // clock's 16.16 steps (emu::dilation_q16). Starts the clock now.
  explicit DilatedClock(double dilation = 0) : dilation_(dilation), dilation_q16_(emu::dilation_q16(dilation, "dilation")) {
    restart();
  }

  static int64_t steady_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  static int64_t realtime_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  }

  // Wall time zero is now.
  void restart() noexcept { start_ns_ = steady_ns(); }
  // Wall time zero is the CLOCK_REALTIME instant `epoch_ns` (in the past or the future).
  void start_at_realtime(int64_t epoch_ns) noexcept { start_ns_ = steady_ns() - (realtime_ns() - epoch_ns); }

  // Nanoseconds since the start; negative before it.
  int64_t since_start_ns() const noexcept { return steady_ns() - start_ns_; }
  // Wall time since the start (0 before it), picoseconds.
  emu::Time wall() const noexcept {
    const int64_t ns = since_start_ns();
    return emu::Time::from_ps(ns <= 0 ? 0 : static_cast<uint64_t>(ns) * 1000);
  }
  // The emulated time the wall clock says it is; Time::max() as fast as possible.
  emu::Time emulated() const noexcept { return emulated(wall()); }
  emu::Time emulated(emu::Time wall) const noexcept {
    if (dilation_q16_ == 0) return emu::Time::max();
    return emu::Time::from_ps(static_cast<uint64_t>((emu::detail::u128{wall.ps()} << 16) / dilation_q16_));
  }
  // Emulated duration -> wall duration (times D).
  emu::Duration to_wall(emu::Duration emulated) const noexcept {
    return emu::Duration::from_ps(static_cast<uint64_t>((emu::detail::u128{emulated.ps()} * dilation_q16_) >> 16));
  }
  double dilation() const noexcept { return dilation_; }
  bool as_fast_as_possible() const noexcept { return dilation_q16_ == 0; }

 private:
  double dilation_;
  uint64_t dilation_q16_ = 0;
  int64_t start_ns_ = 0;
};

}  // namespace fabemu::lab
