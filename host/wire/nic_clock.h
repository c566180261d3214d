// The NIC's clock on the host's TSC: a NIC that timestamps received frames (RTE_ETH_RX_OFFLOAD_TIMESTAMP)
// counts in its own clock, which rte_eth_read_clock reads. ClockFit maps it to TSC ticks by a least-squares
// line through (nic, tsc) samples, the most recent kWindow of them, so that a NIC's receive time and the
// TSC the frames were sent at can be subtracted. DPDK-free (the sampling is the caller's). README.md,
// "NIC hardware timestamps".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace fabemu::host::dpdk {

class ClockFit {
 public:
  static constexpr size_t kWindow = 16;

  // One pair read at (as nearly as possible) the same instant. A sample whose NIC clock does not advance
  // past the newest one is ignored (a clock that did not move tells nothing about the rate).
  void add(uint64_t nic, uint64_t tsc) noexcept;
  // At least two samples with different NIC times: to_tsc() is a line.
  bool ready() const noexcept { return ready_; }
  size_t samples() const noexcept { return count_ < kWindow ? count_ : kWindow; }
  // The TSC at NIC time `nic` (extrapolated outside the samples); the newest sample's TSC offset by the
  // NIC time before ready(). Integer: tsc0 + offset + (nic - nic0) * slope (Q32.32), with nic0/tsc0 a
  // sample of the window.
  uint64_t to_tsc(uint64_t nic) const noexcept;
  // TSC ticks per NIC tick, and the largest |residual| of the window's samples (TSC ticks).
  double slope() const noexcept { return static_cast<double>(slope_q32_) / 4294967296.0; }
  double max_residual() const noexcept { return max_residual_; }

 private:
  void refit() noexcept;
  std::array<uint64_t, kWindow> nic_{}, tsc_{};
  size_t count_ = 0;      // samples ever added (the window holds the last kWindow)
  uint64_t last_nic_ = 0;
  bool ready_ = false;
  uint64_t nic0_ = 0, tsc0_ = 0;  // the reference sample of the line
  int64_t offset_ = 0;            // fitted TSC at nic0_, minus tsc0_
  int64_t slope_q32_ = 0;         // fitted TSC ticks per NIC tick, Q32.32
  double max_residual_ = 0;
};

}  // namespace fabemu::host::dpdk
