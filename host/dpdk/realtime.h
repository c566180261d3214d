// The DPDK fabric's wall clock: the TSC (rte_rdtsc / rte_get_tsc_hz) once EAL runs, else
// std::chrono::steady_clock, mapped to emulated picoseconds with a time-dilation factor D:
// emulated ps = wall ps / D ("--dilation 8": the target fabric runs 8 times slower than real time, so an
// 800G target fits on 100G lab NICs). D = 0 means "as fast as possible": emulated time does not follow
// the wall clock at all (the engine's virtual clock jumps from event to event).
#pragma once

#include <cstdint>

#include "emulator/time.h"

namespace fabemu::host::dpdk {

// floor(a * b / d) for a quotient that fits 64 bits (d > 0), exactly as the 128-bit division gives it,
// without one: a double estimate (a * b_over_d, b_over_d = b / d precomputed) corrected by 128-bit
// products. The polling loop reads the clock several times per frame, and a 128-bit division
// (__udivti3) cost about as much as the rest of the clock did. Far estimates (quotients beyond 2^52,
// where a double's error exceeds a few units) take the division.
inline uint64_t mul_div_floor(uint64_t a, uint64_t b, uint64_t d, double b_over_d) noexcept {
  using u128 = emu::detail::u128;
  const u128 n = u128{a} * b;
  const double est = static_cast<double>(a) * b_over_d;
  if (!(est < 4503599627370496.0)) return static_cast<uint64_t>(n / d);  // 2^52
  auto q = static_cast<uint64_t>(est);
  u128 qd = u128{q} * d;
  while (qd > n) {
    --q;
    qd -= d;
  }
  while (n - qd >= d) {
    ++q;
    qd += d;
  }
  return q;
}

class TscClock {
 public:
  // std::invalid_argument for a negative, NaN or absurd (> 1e6) dilation. Starts the clock (restart()).
  explicit TscClock(double dilation = 0);

  // Wall time zero is now.
  void restart() noexcept;
  // Raw ticks (TSC cycles, or steady_clock nanoseconds without EAL) and their frequency.
  uint64_t ticks() const noexcept;
  uint64_t hz() const noexcept { return hz_; }
  // Wall time since restart(), in picoseconds (undilated).
  emu::Time wall() const noexcept;
  // Wall time at raw tick count `t` (0 for ticks before restart()), and the emulated time then.
  emu::Time wall_at(uint64_t t) const noexcept;
  emu::Time emulated_at(uint64_t t) const noexcept;
  // A tick difference in nanoseconds.
  uint64_t ticks_to_ns(uint64_t ticks) const noexcept;
  // Wall time since restart() divided by the dilation: the emulated time the wall clock says it is.
  // Time::max() when as_fast_as_possible() (every emulated time has come).
  emu::Time emulated() const noexcept;
  // One reading of the clock, for a loop that needs the time several ways: the raw ticks, the wall time
  // then (wall_at) and the emulated time then (emulated_at; Time::max() when as_fast_as_possible()).
  // A TSC read is not free, on a virtual machine least of all, and a round of the DPDK fabric's polling
  // loop read it six times before it took one Reading (PERFORMANCE.md, "One clock reading a round").
  struct Reading {
    uint64_t ticks = 0;
    emu::Time wall, emulated;
  };
  Reading read() const noexcept { return at(ticks()); }
  Reading at(uint64_t t) const noexcept;
  // Emulated duration -> wall duration (times D).
  emu::Duration to_wall(emu::Duration emulated) const noexcept {
    return emu::Duration::from_ps(to_wall_ps(emulated.ps(), dilation_q16_));
  }
  // to_wall of `emulated_ps` at D * 2^16 = `dilation_q16` (dilation_q16()): for loops that keep it in a
  // register.
  static uint64_t to_wall_ps(uint64_t emulated_ps, uint64_t dilation_q16) noexcept {
    return static_cast<uint64_t>((emu::detail::u128{emulated_ps} * dilation_q16) >> 16);
  }
  uint64_t dilation_q16() const noexcept { return dilation_q16_; }
  // dilation_q16() at D = 1: wall time is emulated time.
  static constexpr uint64_t kUnitQ16 = uint64_t{1} << 16;

  double dilation() const noexcept { return dilation_; }
  bool as_fast_as_possible() const noexcept { return dilation_q16_ == 0; }
  // True when ticks() are TSC cycles (EAL running), false for the steady_clock fallback.
  bool uses_tsc() const noexcept { return tsc_; }
  // The raw tick count of wall time zero (the last restart()).
  uint64_t start_ticks() const noexcept { return start_; }

 private:
  double dilation_;
  uint64_t dilation_q16_;  // D * 2^16, rounded; 0 = as fast as possible
  double ps_per_tick_ = 0, ns_per_tick_ = 0, q16_per_dilation_ = 0;  // mul_div_floor's estimates
  bool tsc_;
  uint64_t hz_;
  uint64_t start_ = 0;
};

}  // namespace fabemu::host::dpdk
