#include "host/wire/nic_clock.h"

#include <algorithm>
#include <cmath>

namespace fabemu::host::dpdk {

void ClockFit::add(uint64_t nic, uint64_t tsc) noexcept {
  if (count_ > 0 && nic <= last_nic_) return;
  nic_[count_ % kWindow] = nic;
  tsc_[count_ % kWindow] = tsc;
  ++count_;
  last_nic_ = nic;
  refit();
}

void ClockFit::refit() noexcept {
  const size_t n = samples();
  const size_t newest = (count_ - 1) % kWindow;
  nic0_ = nic_[newest];
  tsc0_ = tsc_[newest];
  if (n < 2) {
    ready_ = false;
    offset_ = 0;
    slope_q32_ = int64_t{1} << 32;
    return;
  }
  // Least squares on values relative to the newest sample (small, exact in a double for ~10^15 ticks).
  double sx = 0, sy = 0;
  for (size_t i = 0; i < n; ++i) {
    sx += static_cast<double>(static_cast<int64_t>(nic_[i] - nic0_));
    sy += static_cast<double>(static_cast<int64_t>(tsc_[i] - tsc0_));
  }
  const double mx = sx / static_cast<double>(n), my = sy / static_cast<double>(n);
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    const double dx = static_cast<double>(static_cast<int64_t>(nic_[i] - nic0_)) - mx;
    const double dy = static_cast<double>(static_cast<int64_t>(tsc_[i] - tsc0_)) - my;
    sxx += dx * dx;
    sxy += dx * dy;
  }
  if (!(sxx > 0)) return;
  const double slope = sxy / sxx;
  slope_q32_ = static_cast<int64_t>(std::llround(slope * 4294967296.0));
  offset_ = static_cast<int64_t>(std::llround(my - slope * mx));
  ready_ = true;
  max_residual_ = 0;
  for (size_t i = 0; i < n; ++i) {
    const double fit = static_cast<double>(static_cast<int64_t>(to_tsc(nic_[i]) - tsc0_));
    const double y = static_cast<double>(static_cast<int64_t>(tsc_[i] - tsc0_));
    max_residual_ = std::max(max_residual_, std::abs(fit - y));
  }
}

uint64_t ClockFit::to_tsc(uint64_t nic) const noexcept {
  if (count_ == 0) return nic;
  __extension__ using i128 = __int128;
  const i128 dx = static_cast<i128>(nic) - static_cast<i128>(nic0_);
  const i128 scaled = dx * slope_q32_;
  // Round to nearest (arithmetic shift of a negative value rounds towards minus infinity: add half first).
  const i128 dy = (scaled + (i128{1} << 31)) >> 32;
  const i128 t = static_cast<i128>(tsc0_) + offset_ + dy;
  return t < 0 ? 0 : static_cast<uint64_t>(t);
}

}  // namespace fabemu::host::dpdk
