// ClockFit: the NIC clock -> TSC line of the fabric's hardware timestamps, on synthetic samples.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "host/wire/nic_clock.h"
#include "host/dpdk/realtime.h"

namespace fd = fabemu::host::dpdk;

namespace {

// A NIC counting nanoseconds (1 GHz) and a 2.5 GHz TSC that started 7 s earlier.
constexpr uint64_t kNic0 = 1'000'000'000'000ull;  // 1000 s of NIC time
constexpr uint64_t kTsc0 = 17'500'000'000ull;
uint64_t tsc_of(uint64_t nic) { return kTsc0 + (nic - kNic0) * 5 / 2; }

TEST(ClockFit, NotALineBeforeTwoSamples) {
  fd::ClockFit f;
  EXPECT_FALSE(f.ready());
  f.add(kNic0, kTsc0);
  EXPECT_FALSE(f.ready());
  EXPECT_EQ(f.samples(), 1u);
  // Before it is a line: the sample's TSC offset by the NIC time.
  EXPECT_EQ(f.to_tsc(kNic0 + 10), kTsc0 + 10);
  f.add(kNic0, kTsc0 + 5);  // the NIC clock did not move: ignored
  EXPECT_EQ(f.samples(), 1u);
  f.add(kNic0 + 100'000'000, tsc_of(kNic0 + 100'000'000));
  EXPECT_TRUE(f.ready());
}

TEST(ClockFit, ExactSamplesGiveTheLine) {
  fd::ClockFit f;
  for (uint64_t i = 0; i < 10; ++i) {
    const uint64_t nic = kNic0 + i * 100'000'000;  // every 100 ms
    f.add(nic, tsc_of(nic));
  }
  ASSERT_TRUE(f.ready());
  EXPECT_NEAR(f.slope(), 2.5, 1e-9);
  EXPECT_LE(f.max_residual(), 1.0);
  // Inside the samples, between them and extrapolated by a second: within a tick.
  for (const uint64_t nic : {kNic0, kNic0 + 123'456'789, kNic0 + 900'000'000, kNic0 + 1'900'000'001}) {
    const int64_t err = static_cast<int64_t>(f.to_tsc(nic) - tsc_of(nic));
    EXPECT_LE(err < 0 ? -err : err, 1) << nic;
  }
}

TEST(ClockFit, NoisySamplesAverageOut) {
  fd::ClockFit f;
  // Each TSC read off by a deterministic -40..+40 ticks (the time a read of the NIC clock takes).
  uint64_t state = 12345;
  for (uint64_t i = 0; i < 16; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t noise = static_cast<int64_t>(state >> 33) % 81 - 40;
    const uint64_t nic = kNic0 + i * 100'000'000;
    f.add(nic, static_cast<uint64_t>(static_cast<int64_t>(tsc_of(nic)) + noise));
  }
  ASSERT_TRUE(f.ready());
  EXPECT_NEAR(f.slope(), 2.5, 1e-6);
  EXPECT_LE(f.max_residual(), 80.0);
  const uint64_t mid = kNic0 + 750'000'000;
  const int64_t err = static_cast<int64_t>(f.to_tsc(mid) - tsc_of(mid));
  EXPECT_LE(err < 0 ? -err : err, 40);
}

TEST(ClockFit, TheWindowFollowsADrift) {
  fd::ClockFit f;
  for (uint64_t i = 0; i < 16; ++i) {
    const uint64_t nic = kNic0 + i * 100'000'000;
    f.add(nic, tsc_of(nic));
  }
  // The NIC's oscillator is 100 ppm fast from here on: after kWindow new samples only the new rate counts.
  const uint64_t n1 = kNic0 + 16 * 100'000'000ull;
  const auto drifted = [&](uint64_t nic) { return tsc_of(n1) + (nic - n1) * 5 / 2 * 10000 / 10001; };
  for (uint64_t i = 1; i <= fd::ClockFit::kWindow; ++i) {
    const uint64_t nic = n1 + i * 100'000'000;
    f.add(nic, drifted(nic));
  }
  EXPECT_EQ(f.samples(), fd::ClockFit::kWindow);
  EXPECT_NEAR(f.slope(), 2.5 * 10000 / 10001, 1e-6);
  const uint64_t later = n1 + 20 * 100'000'000ull;
  const int64_t err = static_cast<int64_t>(f.to_tsc(later) - drifted(later));
  EXPECT_LE(err < 0 ? -err : err, 2);
}

}  // namespace

// The clock's conversions without a 128-bit division give exactly what the division gives: TSC ticks to
// ps at real TSC rates, ps to emulated ps at dilations (Q16), at the edges and at random.
TEST(MulDivFloor, EqualsThe128BitDivision) {
  using u128 = fabemu::emu::detail::u128;
  std::mt19937_64 rng(7);
  const auto check = [](uint64_t a, uint64_t b, uint64_t d) {
    const u128 exact = u128{a} * b / d;
    const uint64_t got = fabemu::host::dpdk::mul_div_floor(a, b, d, static_cast<double>(b) / static_cast<double>(d));
    EXPECT_EQ(got, static_cast<uint64_t>(exact)) << a << " * " << b << " / " << d;
  };
  const uint64_t hzs[] = {1'000'000'000, 2'096'030'000, 2'100'000'001, 3'599'999'999, 999'999'937};
  for (const uint64_t hz : hzs) {
    for (const uint64_t a : {uint64_t{0}, uint64_t{1}, hz - 1, hz, hz + 1, uint64_t{1} << 40, uint64_t{1} << 42}) {
      check(a, 1'000'000'000'000u, hz);
      check(a, 1'000'000'000u, hz);
    }
    for (int i = 0; i < 20000; ++i) {
      const uint64_t a = rng() >> (22 + rng() % 42);  // up to ~2^42 ticks: days at GHz rates
      check(a, 1'000'000'000'000u, hz);
      check(a, 1'000'000'000u, hz);
    }
  }
  for (const uint64_t q16 : {uint64_t{1}, uint64_t{65536}, uint64_t{65536 * 1000}, uint64_t{6553600 + 3}, uint64_t{65536} * 1'000'000}) {
    for (int i = 0; i < 20000; ++i) check(rng() >> (12 + rng() % 52), 65536, q16);
  }
  // Quotients beyond 2^52 take the division, still exact (and truncated to 64 bits as it is).
  check(uint64_t{1} << 62, 1'000'000'000'000u, 2'096'030'000);
  check(~uint64_t{0}, 65536, 1);
}
