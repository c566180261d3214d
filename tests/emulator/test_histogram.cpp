// LogHistogram: exact below 256, within 1/128 above, quantiles as HdrHistogram reports them.
#include "emulator/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

using fabemu::emu::LogHistogram;

TEST(LogHistogram, BucketsTileTheWholeRangeWithoutGaps) {
  EXPECT_EQ(LogHistogram::bucket_of(0), 0u);
  EXPECT_EQ(LogHistogram::bucket_of(255), 255u);
  EXPECT_EQ(LogHistogram::bucket_of(256), 256u);  // [256, 257]: two values per bucket from here
  EXPECT_EQ(LogHistogram::bucket_of(257), 256u);
  EXPECT_EQ(LogHistogram::bucket_of(258), 257u);
  EXPECT_EQ(LogHistogram::bucket_of(UINT64_MAX), LogHistogram::kBuckets - 1);
  for (size_t b = 0; b + 1 < LogHistogram::kBuckets; ++b) {
    ASSERT_EQ(LogHistogram::highest(b) + 1, LogHistogram::lowest(b + 1)) << "bucket " << b;
    ASSERT_EQ(LogHistogram::bucket_of(LogHistogram::lowest(b)), b);
    ASSERT_EQ(LogHistogram::bucket_of(LogHistogram::highest(b)), b);
  }
  EXPECT_EQ(LogHistogram::highest(LogHistogram::kBuckets - 1), UINT64_MAX);
  // Relative width of a bucket: at most 1/128 of its lowest value.
  for (size_t b = LogHistogram::kExact; b < LogHistogram::kBuckets; b += 37) {
    const double lo = static_cast<double>(LogHistogram::lowest(b));
    const double width = static_cast<double>(LogHistogram::highest(b) - LogHistogram::lowest(b)) + 1;
    EXPECT_LE(width / lo, 1.0 / 128 + 1e-12) << "bucket " << b;
  }
}

TEST(LogHistogram, SmallValuesAreExact) {
  LogHistogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.record(v);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 100u);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
  EXPECT_EQ(h.quantile(0.5), 50u);
  EXPECT_EQ(h.quantile(0.99), 99u);
  EXPECT_EQ(h.quantile(1.0), 100u);
  EXPECT_EQ(h.quantile(0.0), 1u);
}

TEST(LogHistogram, QuantilesOfRandomDataWithinOneBucket) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(12.0, 2.0);  // around 160 us in ns, wide
  LogHistogram h, a, b;
  std::vector<uint64_t> v;
  for (int i = 0; i < 100'000; ++i) {
    const auto x = static_cast<uint64_t>(dist(rng));
    v.push_back(x);
    h.record(x);
    (i % 2 == 0 ? a : b).record(x);
  }
  std::sort(v.begin(), v.end());
  for (const double q : {0.01, 0.1, 0.5, 0.9, 0.99, 0.999}) {
    const uint64_t exact = v[static_cast<size_t>(q * static_cast<double>(v.size())) - 1];
    const uint64_t got = h.quantile(q);
    EXPECT_GE(got, exact) << "q " << q;
    EXPECT_EQ(LogHistogram::bucket_of(got), LogHistogram::bucket_of(exact)) << "q " << q;
  }
  EXPECT_EQ(h.max(), v.back());
  EXPECT_EQ(h.min(), v.front());
  a.merge(b);
  for (const double q : {0.5, 0.99}) EXPECT_EQ(a.quantile(q), h.quantile(q));
  EXPECT_EQ(a.count(), h.count());
  uint64_t buckets = 0, counted = 0;
  h.for_each_bucket([&](uint64_t lo, uint64_t hi, uint64_t n) {
    EXPECT_LE(lo, hi);
    ++buckets;
    counted += n;
  });
  EXPECT_EQ(counted, 100'000u);
  EXPECT_GT(buckets, 500u);
}

TEST(LogHistogram, EmptyAndWeighted) {
  LogHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.quantile(0.5), 0u);
  EXPECT_EQ(h.min(), 0u);
  h.record(1'000'000, 3);
  h.record(10, 0);
  EXPECT_EQ(h.count(), 3u);
  EXPECT_EQ(h.quantile(0.5), 1'000'000u);  // capped at the exact maximum
  EXPECT_EQ(h.min(), 1'000'000u);
  h.clear();
  EXPECT_EQ(h.count(), 0u);
}

namespace {

// Every non-empty bucket of h: lowest, highest, count.
std::vector<std::array<uint64_t, 3>> buckets_of(const LogHistogram& h) {
  std::vector<std::array<uint64_t, 3>> b;
  h.for_each_bucket([&](uint64_t lo, uint64_t hi, uint64_t n) { b.push_back({lo, hi, n}); });
  return b;
}

// `got` counts what `want` (recorded one value at a time) counts: every bucket, the count, minimum and
// maximum; the mean to the rounding of one sum.
void expect_recorded_alike(const LogHistogram& want, const LogHistogram& got) {
  ASSERT_FALSE(buckets_of(want).empty());
  EXPECT_EQ(buckets_of(want), buckets_of(got));
  EXPECT_EQ(want.count(), got.count());
  EXPECT_EQ(want.min(), got.min());
  EXPECT_EQ(want.max(), got.max());
  EXPECT_NEAR(want.mean(), got.mean(), want.mean() * 1e-12);
}

}  // namespace

// record_each (the transmit path's per-burst recording) counts exactly as record() one value at a time.
TEST(LogHistogram, RecordEachEqualsRecordingOneByOne) {
  std::mt19937_64 rng(7);
  LogHistogram one, each;
  one.record(500);  // state before the batches: min and max carried over
  each.record(500);
  for (int batch = 0; batch < 200; ++batch) {
    std::vector<uint64_t> v(rng() % 40);  // empty batches too
    const int shift = static_cast<int>(rng() % 50);
    for (auto& x : v) x = rng() >> (14 + shift);
    for (uint64_t x : v) one.record(x);
    each.record_each(v.size(), [&](size_t i) { return v[i]; });
  }
  expect_recorded_alike(one, each);
}

// record_falling (a run's jitter: values that never rise) counts as record() one at a time, with the
// sum in 64 bits when n times the first value fits and in 128 when it does not (values up to 2^64 - 1).
TEST(LogHistogram, RecordFallingEqualsRecordingOneByOne) {
  std::mt19937_64 rng(11);
  LogHistogram one, falling;
  one.record(3);
  falling.record(3);
  int wide = 0;  // batches whose sum needs more than 64 bits
  for (int batch = 0; batch < 300; ++batch) {
    std::vector<uint64_t> v(1 + rng() % 40);
    const int shift = static_cast<int>(rng() % 64);
    for (auto& x : v) x = rng() >> shift;
    std::sort(v.rbegin(), v.rend());
    if (v[0] > std::numeric_limits<uint64_t>::max() / v.size()) ++wide;
    for (uint64_t x : v) one.record(x);
    falling.record_falling(v.size(), [&](size_t i) { return v[i]; });
  }
  ASSERT_GT(wide, 10);
  // Runs of values a few units apart (a fast link's frames): many in a row in one bucket, in the exact
  // range and above it, across bucket and power-of-two boundaries.
  for (int batch = 0; batch < 300; ++batch) {
    std::vector<uint64_t> v(1 + rng() % 64);
    const uint64_t step = rng() % 4;
    uint64_t x = rng() >> static_cast<int>(rng() % 64);
    for (auto& y : v) {
      y = x;
      x -= std::min(x, step);
    }
    for (uint64_t y : v) one.record(y);
    falling.record_falling(v.size(), [&](size_t i) { return v[i]; });
  }
  expect_recorded_alike(one, falling);
}
