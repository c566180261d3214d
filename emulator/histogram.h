// A log-linear histogram of non-negative integers (latencies in ns, ...), in the manner of HdrHistogram:
// values below 256 are counted exactly; above, every power of two is split into 128 equal buckets, so a
// value is known to within 1/128 (0.78%) of itself. Fixed size (about 59 KB), no allocation when
// recording, O(1) record, mergeable. Quantiles are reported as the highest value of their bucket (never
// above the exact maximum), as HdrHistogram's value_at_percentile does.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace fabemu::emu {

class LogHistogram {
 public:
  static constexpr int kSubBits = 8;                    // 2^8 exact values, 2^7 buckets per power of two
  static constexpr uint64_t kExact = uint64_t{1} << kSubBits;
  static constexpr uint64_t kHalf = kExact / 2;
  static constexpr std::size_t kBuckets = (64 - kSubBits) * kHalf + kExact;

  static constexpr std::size_t bucket_of(uint64_t v) noexcept {
    if (v < kExact) return static_cast<std::size_t>(v);
    // bit_width(v) - kSubBits (>= 1), written with the index of the top bit (63 ^ countl_zero: one bsr)
    const uint64_t e = static_cast<uint64_t>(63 ^ std::countl_zero(v)) + 1 - kSubBits;
    return static_cast<std::size_t>(e * kHalf + (v >> e));
  }
  // Smallest and largest value counted in bucket b.
  static constexpr uint64_t lowest(std::size_t b) noexcept {
    if (b < kExact) return b;
    const uint64_t e = b / kHalf - 1;
    return (b - e * kHalf) << e;
  }
  static constexpr uint64_t highest(std::size_t b) noexcept {
    if (b < kExact) return b;
    const uint64_t e = b / kHalf - 1;
    return (((b - e * kHalf) + 1) << e) - 1;
  }

  void record(uint64_t v, uint64_t n = 1) noexcept {
    if (n == 0) return;
    counts_[bucket_of(v)] += n;
    count_ += n;
    sum_ += static_cast<double>(v) * static_cast<double>(n);
    if (v < min_) min_ = v;
    if (v > max_) max_ = v;
  }
  // record(value(i)) for i in [0, n): the same counts, minimum and maximum, with the totals kept in
  // registers until the end (the sum is added once, so the mean may differ in its last bits). value(i)
  // is called once for each i, in order (it may step a state of its own).
  template <class F>
  void record_each(std::size_t n, F&& value) noexcept {
    if (n == 0) return;
    uint64_t lo = min_, hi = max_;
    uint64_t sum_lo = 0, sum_hi = 0;  // the sum's 128 bits, its carries counted by hand (fewer registers)
    for (std::size_t i = 0; i < n; ++i) {
      const uint64_t v = value(i);
      ++counts_[bucket_of(v)];
      sum_lo += v;
      sum_hi += sum_lo < v;
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    count_ += n;
    sum_ += static_cast<double>(sum_hi) * 18446744073709551616.0 + static_cast<double>(sum_lo);
    min_ = lo;
    max_ = hi;
  }
  // record_each of values that never rise (value(0) is the largest; the caller knows): the minimum and
  // maximum are the last and first values. When n times the first fits in 64 bits (always, for latencies
  // in ns), so does the sum: no carry is counted. The values' power of two (their buckets' exponent) only
  // falls too: it is found again only when a value drops below the lowest of the current one, and a
  // value's bucket is a shift and an add.
  template <class F>
  void record_falling(std::size_t n, F&& value) noexcept {
    if (n == 0) return;
    const uint64_t first = value(0);
    if (first <= std::numeric_limits<uint64_t>::max() / n) {
      falling_loop<true>(n, first, value);
    } else {
      falling_loop<false>(n, first, value);
    }
  }
  void merge(const LogHistogram& o) noexcept {
    for (std::size_t b = 0; b < kBuckets; ++b) counts_[b] += o.counts_[b];
    count_ += o.count_;
    sum_ += o.sum_;
    if (o.min_ < min_) min_ = o.min_;
    if (o.max_ > max_) max_ = o.max_;
  }
  void clear() noexcept { *this = LogHistogram(); }

  uint64_t count() const noexcept { return count_; }
  uint64_t min() const noexcept { return count_ == 0 ? 0 : min_; }
  uint64_t max() const noexcept { return max_; }
  double mean() const noexcept { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }
  // The value at quantile q (0..1): the highest value of the bucket holding the ceil(q * count)-th
  // smallest value (at least the 1st), capped at max(); 0 when empty.
  uint64_t quantile(double q) const noexcept {
    if (count_ == 0) return 0;
    if (!(q > 0)) return min();
    const double want = q >= 1 ? static_cast<double>(count_) : q * static_cast<double>(count_);
    uint64_t rank = static_cast<uint64_t>(want);
    if (static_cast<double>(rank) < want) ++rank;
    if (rank == 0) rank = 1;
    uint64_t seen = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
      seen += counts_[b];
      if (seen >= rank) return highest(b) < max_ ? (highest(b) > min() ? highest(b) : min()) : max_;
    }
    return max_;
  }
  // Calls f(lowest, highest, count) for every non-empty bucket in ascending order.
  template <typename F>
  void for_each_bucket(F&& f) const {
    for (std::size_t b = 0; b < kBuckets; ++b) {
      if (counts_[b] != 0) f(lowest(b), highest(b), counts_[b]);
    }
  }

 private:
  // record_falling's loop, value(0) = `first` already taken. kSum64: the sum cannot pass 64 bits. The
  // values from `floor` up (to the last one, which is at most the top of its power of two) are counted
  // in bucket base + (v >> shift), as bucket_of gives.
  template <bool kSum64, class F>
  void falling_loop(std::size_t n, uint64_t first, F& value) noexcept {
    uint64_t sum_lo = 0, sum_hi = 0;
    uint64_t floor = 0, base = 0;
    unsigned shift = 0;
    const auto range_of = [&](uint64_t v) {
      if (v < kExact) {
        floor = 0;
        base = 0;
        shift = 0;
      } else {
        shift = static_cast<unsigned>(63 ^ std::countl_zero(v)) + 1 - kSubBits;  // bucket_of's e
        floor = uint64_t{1} << (shift + kSubBits - 1);
        base = shift * kHalf;
      }
    };
    uint64_t v = first;
    range_of(v);
    for (std::size_t i = 0;;) {
      if (v < floor) [[unlikely]] range_of(v);
      ++counts_[base + (v >> shift)];
      sum_lo += v;
      if constexpr (!kSum64) sum_hi += sum_lo < v;
      if (++i == n) break;
      v = value(i);
    }
    count_ += n;
    sum_ += static_cast<double>(sum_hi) * 18446744073709551616.0 + static_cast<double>(sum_lo);
    min_ = std::min(min_, v);
    max_ = std::max(max_, first);
  }

  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  double sum_ = 0;
  uint64_t min_ = std::numeric_limits<uint64_t>::max();
  uint64_t max_ = 0;
};

}  // namespace fabemu::emu
