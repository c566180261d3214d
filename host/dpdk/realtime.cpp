#include "host/dpdk/realtime.h"

#include <rte_cycles.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include "emulator/dilation.h"
#include "host/dpdk/dpdk_env.h"

namespace fabemu::host::dpdk {

namespace {
using u128 = emu::detail::u128;
}

TscClock::TscClock(double dilation) : dilation_(dilation) {
  dilation_q16_ = emu::dilation_q16(dilation);
  tsc_ = Eal::running() && rte_get_tsc_hz() > 0;
  hz_ = tsc_ ? rte_get_tsc_hz() : 1'000'000'000;
  ps_per_tick_ = 1e12 / static_cast<double>(hz_);
  ns_per_tick_ = 1e9 / static_cast<double>(hz_);
  if (dilation_q16_ != 0) q16_per_dilation_ = 65536.0 / static_cast<double>(dilation_q16_);
  restart();
}

uint64_t TscClock::ticks() const noexcept {
  if (tsc_) return rte_rdtsc();
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

void TscClock::restart() noexcept { start_ = ticks(); }

uint64_t TscClock::ticks_to_ns(uint64_t t) const noexcept { return mul_div_floor(t, 1'000'000'000u, hz_, ns_per_tick_); }

emu::Time TscClock::wall() const noexcept {
  return emu::Time::from_ps(mul_div_floor(ticks() - start_, 1'000'000'000'000u, hz_, ps_per_tick_));
}

emu::Time TscClock::wall_at(uint64_t t) const noexcept {
  if (t <= start_) return emu::Time::from_ps(0);
  return emu::Time::from_ps(mul_div_floor(t - start_, 1'000'000'000'000u, hz_, ps_per_tick_));
}

emu::Time TscClock::emulated_at(uint64_t t) const noexcept {
  if (dilation_q16_ == 0) return emu::Time::max();
  return emu::Time::from_ps(mul_div_floor(wall_at(t).ps(), 65536, dilation_q16_, q16_per_dilation_));
}

TscClock::Reading TscClock::at(uint64_t t) const noexcept {
  Reading r;
  r.ticks = t;
  r.wall = wall_at(t);
  r.emulated = dilation_q16_ == 0 ? emu::Time::max()
                                  : emu::Time::from_ps(mul_div_floor(r.wall.ps(), 65536, dilation_q16_, q16_per_dilation_));
  return r;
}

emu::Time TscClock::emulated() const noexcept {
  if (dilation_q16_ == 0) return emu::Time::max();
  return emu::Time::from_ps(mul_div_floor(wall().ps(), 65536, dilation_q16_, q16_per_dilation_));
}

}  // namespace fabemu::host::dpdk
