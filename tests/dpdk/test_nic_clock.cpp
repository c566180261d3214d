// ClockFit: the NIC clock -> TSC line of the fabric's hardware timestamps, on synthetic samples.
#include <gtest/gtest.h>

#include <cstdint>

#include "host/dpdk/nic_clock.h"

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
