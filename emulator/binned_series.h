// Time series of per-channel totals over bins of one width, bounded in memory: when something reaches
// past the last bin, neighbouring bins merge in pairs and the width doubles (as often as needed), so a
// fixed number of bins per channel covers a run of any length. Behind the report's link utilization
// series (channel = link, weight 1: busy picoseconds per bin) and the timeline's bytes-in-flight
// counters (channel = rank, weight = bytes: byte-picoseconds per bin). Integer picoseconds throughout;
// the storage is allocated once, at construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fabemu::emu {

class BinnedSeries {
 public:
  __extension__ using u128 = unsigned __int128;  // quiet under -Wpedantic, as detail::u128

  // `channels` x `bins` zeros; the first bin is `width_ps` wide. bins: even, 2..65536; width_ps >= 1.
  BinnedSeries(size_t channels, uint32_t bins, uint64_t width_ps) : bins_(bins), width_ps_(width_ps) {
    if (bins < 2 || bins > 65536 || bins % 2 != 0) {
      throw std::invalid_argument("a binned series needs an even number of bins from 2 to 65536, not " +
                                  std::to_string(bins));
    }
    if (width_ps == 0) throw std::invalid_argument("a binned series needs bins at least 1 ps wide");
    values_.assign(channels * bins, 0);
  }

  // Adds `weight` per picosecond of [from_ps, to_ps) to channel c, split over the bins it spans.
  void add(size_t c, uint64_t from_ps, uint64_t to_ps, uint64_t weight = 1) {
    if (to_ps <= from_ps) return;
    while (to_ps - 1 >= end_ps()) widen();
    if (to_ps > reached_ps_) reached_ps_ = to_ps;
    u128* row = &values_[c * bins_];
    for (uint64_t b = from_ps / width_ps_, t = from_ps; t < to_ps; ++b) {
      const uint64_t bin_end = (b + 1) * width_ps_;
      const uint64_t until = to_ps < bin_end ? to_ps : bin_end;
      row[b] += static_cast<u128>(until - t) * weight;
      t = until;
    }
  }

  size_t channels() const noexcept { return bins_ == 0 ? 0 : values_.size() / bins_; }
  uint32_t bins() const noexcept { return bins_; }
  uint64_t width_ps() const noexcept { return width_ps_; }
  // Bins up to the one holding the latest end added (0 when nothing was added).
  uint32_t bins_used() const noexcept {
    return reached_ps_ == 0 ? 0 : static_cast<uint32_t>((reached_ps_ - 1) / width_ps_ + 1);
  }
  // Weight x picoseconds in bin b of channel c.
  u128 value(size_t c, uint32_t b) const noexcept { return values_[c * bins_ + b]; }

 private:
  uint64_t end_ps() const noexcept {
    const u128 end = static_cast<u128>(width_ps_) * bins_;
    return end > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(end);
  }
  // Bins 2k and 2k+1 become bin k; the width doubles.
  void widen() {
    if (width_ps_ > UINT64_MAX / 2) throw std::overflow_error("a binned series reached the end of time");
    const size_t n = channels();
    for (size_t c = 0; c < n; ++c) {
      u128* row = &values_[c * bins_];
      for (uint32_t b = 0; b < bins_ / 2; ++b) row[b] = row[2 * b] + row[2 * b + 1];
      for (uint32_t b = bins_ / 2; b < bins_; ++b) row[b] = 0;
    }
    width_ps_ *= 2;
  }

  uint32_t bins_;
  uint64_t width_ps_;
  uint64_t reached_ps_ = 0;
  std::vector<u128> values_;  // channel-major
};

}  // namespace fabemu::emu
