// Time, Duration and Rate against closed-form values.
#include "emulator/time.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "tests/emulator/print.h"

namespace fabemu::emu {

namespace {

using u128 = detail::u128;
constexpr uint64_t kOne = uint64_t{1} << 32;  // 1 ps/byte in Q32.32

// The DESIGN.md formula, written out independently of Rate::ser.
uint64_t ceil_ser(uint64_t bytes, uint64_t raw) {
  const u128 p = u128{bytes} * raw;
  return static_cast<uint64_t>((p >> 32) + ((p & (kOne - 1)) != 0 ? 1 : 0));
}

TEST(Time, UnitsAndArithmetic) {
  using namespace fabemu::emu::literals;
  EXPECT_EQ(Time::from_ns(3).ps(), 3'000u);
  EXPECT_EQ(Time::from_us(2).ps(), 2'000'000u);
  EXPECT_EQ(Time::from_ms(1).ps(), 1'000'000'000u);
  EXPECT_EQ(Duration::from_ms(5), 5_ms);
  EXPECT_EQ(1500_ps + 2_ns, Duration::from_ps(3'500));
  EXPECT_EQ(Time::from_us(1) + 250_ns, Time::from_ps(1'250'000));
  EXPECT_EQ(Time::from_us(1) - 250_ns, Time::from_ps(750'000));
  EXPECT_EQ(Time::from_us(3) - Time::from_us(1), 2_us);
  EXPECT_EQ(4_ns * 3, 12_ns);
  EXPECT_LT(Time::from_ps(999), Time::from_ns(1));
  EXPECT_LT(Time::from_ns(1'000'000), Time::max());
  Time t;
  t += 7_us;
  t -= 2_us;
  EXPECT_EQ(t, Time::from_us(5));
  EXPECT_EQ(t.since_start(), 5_us);
  static_assert(Time::from_ns(1) + 1_ns == Time::from_ps(2'000), "time arithmetic is constexpr");
  static_assert(sizeof(Time) == 8 && sizeof(Duration) == 8 && sizeof(Rate) == 8);
}

// Overflow policy: assert in debug builds, saturate in release builds (time.h says why).
TEST(Time, OverflowPolicy) {
  const Time near_end = Time::max() - Duration::from_ps(10);
#ifdef NDEBUG
  EXPECT_EQ(near_end + Duration::from_ps(11), Time::max());
  EXPECT_EQ(Time::from_ps(5) - Duration::from_ps(6), Time::zero());
  EXPECT_EQ(Time::from_ps(5) - Time::from_ps(6), Duration::zero());
  EXPECT_EQ(Duration::from_ps(uint64_t{1} << 63) * 2, Duration::max());
  EXPECT_EQ(Duration::from_ms(uint64_t{1} << 40), Duration::max());
#else
  EXPECT_DEATH((void)(near_end + Duration::from_ps(11)), "overflow");
  EXPECT_DEATH((void)(Time::from_ps(5) - Duration::from_ps(6)), "underflow");
  EXPECT_DEATH((void)Duration::from_ms(uint64_t{1} << 40), "overflow");
#endif
  EXPECT_EQ(near_end + Duration::from_ps(10), Time::max());  // the last representable picosecond
}

TEST(Rate, NetworkGigabits) {
  // 400 Gb/s = 50e9 B/s = 20 ps/byte exactly.
  constexpr Rate r400 = Rate::from_gbps(400);
  static_assert(r400.ps_per_byte_q32() == 20 * kOne, "conversion is constexpr and exact");
  static_assert(r400.ser(1500) == Duration::from_ps(30'000));
  EXPECT_EQ(r400.ser(1), Duration::from_ps(20));
  EXPECT_EQ(r400.ser(0), Duration::zero());

  const Rate r100 = Rate::from_gbps(100);
  EXPECT_EQ(r100.ps_per_byte_q32(), 80 * kOne);
  EXPECT_EQ(r100.ser(4096), Duration::from_ps(327'680));
  EXPECT_EQ(Rate::from_bytes_per_sec(12'500'000'000), r100);
  EXPECT_EQ(Rate::from_ps_per_byte_q32(80 * kOne), r100);

  // 800 Gb/s = 10 ps/byte; 1 Gb/s = 8000 ps/byte.
  EXPECT_EQ(Rate::from_gbps(800).ps_per_byte_q32(), 10 * kOne);
  EXPECT_EQ(Rate::from_gbps(1).ps_per_byte_q32(), 8'000 * kOne);
  // 2.5 Gb/s is exact in binary: 3200 ps/byte.
  EXPECT_EQ(Rate::from_gbps(2.5).ps_per_byte_q32(), 3'200 * kOne);
}

// 2400 Gb/s = 3e11 B/s = 3 + 1/3 ps/byte: raw = round(10/3 * 2^32) = round(14316557653.33) = 14316557653,
// slightly below the true value, and ser() rounds up to whole picoseconds.
TEST(Rate, NonDyadicRoundsToNearestAndSerRoundsUp) {
  constexpr uint64_t kRaw = 14'316'557'653;
  const Rate r = Rate::from_gbps(2400);
  EXPECT_EQ(r.ps_per_byte_q32(), kRaw);
  EXPECT_EQ(Rate::from_bytes_per_sec(300'000'000'000), r);
  EXPECT_EQ(r.ser(1), Duration::from_ps(4));    // 3.33 -> 4
  EXPECT_EQ(r.ser(2), Duration::from_ps(7));    // 6.67 -> 7
  EXPECT_EQ(r.ser(3), Duration::from_ps(10));   // 9.99999999977 -> 10
  EXPECT_EQ(r.ser(6), Duration::from_ps(20));   // 19.9999999995 -> 20
  EXPECT_EQ(r.ser(1500), Duration::from_ps(5'000));
  // At 3 * 2^32 bytes the raw value's rounding shows: 3 * kRaw ps, one less than 10 * 2^32.
  EXPECT_EQ(r.ser(3 * kOne), Duration::from_ps(3 * kRaw));
  EXPECT_EQ(3 * kRaw, 10 * kOne - 1);
  // Round to nearest, not down: 2/3 ps/byte (12e11 B/s) has raw 2863311530.67 -> 2863311531.
  EXPECT_EQ(Rate::from_bytes_per_sec(1'500'000'000'000).ps_per_byte_q32(), 2'863'311'531u);
  for (uint64_t bytes : {1u, 7u, 64u, 1023u, 9000u, 65'537u}) {
    EXPECT_EQ(r.ser(bytes).ps(), ceil_ser(bytes, kRaw)) << bytes << " bytes";
  }
}

// ASTRA-sim's network.yml "GB/s" is 2^30 bytes/s: 50 GB/s = 53687091200 B/s.
TEST(Rate, AstraGigabytes) {
  const Rate r = Rate::from_astra_gbps(50);
  // round(1e12 * 2^32 / (50 * 2^30)) = round(4e12 / 50) = 8e10 exactly.
  const u128 num = u128{1'000'000'000'000} << 32;
  const u128 den = u128{50} << 30;
  EXPECT_EQ(u128{r.ps_per_byte_q32()}, (2 * num + den) / (2 * den));
  EXPECT_EQ(r.ps_per_byte_q32(), 80'000'000'000u);
  EXPECT_EQ(Rate::from_bytes_per_sec(50ull << 30), r);
  // 1 MiB: 2^20 * 8e10 / 2^32 = 19531250 ps exactly (18.626 ps/byte).
  EXPECT_EQ(r.ser(1'048'576).ps(), ceil_ser(1'048'576, r.ps_per_byte_q32()));
  EXPECT_EQ(r.ser(1'048'576), Duration::from_ps(19'531'250));
  EXPECT_EQ(r.ser(1'048'577), Duration::from_ps(19'531'269));  // + 18.6 ps, rounded up

  // 12.5 GB/s: raw = 4e12 / 12.5 = 3.2e11, exact although 12.5 is not an integer.
  EXPECT_EQ(Rate::from_astra_gbps(12.5).ps_per_byte_q32(), 320'000'000'000u);
}

// 0.1 has no exact double; the conversion uses the double's exact value (0.1000000000000000055...).
// The expected raw value is worked out long-hand from frexp, independently of Rate's own decoding.
TEST(Rate, FractionalInputIsExact) {
  const double g = 0.1;
  int e = 0;
  const double frac = std::frexp(g, &e);  // g = frac * 2^e, frac in [0.5, 1)
  const auto m = static_cast<uint64_t>(std::ldexp(frac, 53));
  e -= 53;  // g = m * 2^e exactly
  ASSERT_LT(e, 0);
  const u128 num = (u128{8'000} << 32) << -e;  // raw = round(8000 * 2^32 / g)
  const u128 want = (2 * num + m) / (2 * u128{m});
  EXPECT_EQ(u128{Rate::from_gbps(g).ps_per_byte_q32()}, want);
  // The double's excess (5.6e-17 relative) moves the quotient by 0.02 raw units: still 80000 ps/byte.
  EXPECT_EQ(Rate::from_gbps(g).ps_per_byte_q32(), 80'000 * kOne);
}

TEST(Rate, HugeSizesAreExact) {
  constexpr uint64_t k2to40 = uint64_t{1} << 40;
  // 2^40 bytes at 20 ps/byte: the product bytes * raw is 2^40 * 20 * 2^32, far beyond 64 bits.
  EXPECT_EQ(Rate::from_gbps(400).ser(k2to40), Duration::from_ps(20 * k2to40));
  const Rate r = Rate::from_gbps(2400);
  EXPECT_EQ(r.ser(k2to40), Duration::from_ps(256 * r.ps_per_byte_q32()));
  // One more byte adds 3.33 ps: 256 * raw + ceil(raw / 2^32).
  EXPECT_EQ(r.ser(k2to40 + 1), Duration::from_ps(256 * r.ps_per_byte_q32() + 4));
  EXPECT_EQ(r.ser(k2to40 + 1).ps(), ceil_ser(k2to40 + 1, r.ps_per_byte_q32()));
  // The largest size whose time fits: (2^64 - 1) bytes at 1/2^32 ps/byte is 2^32 ps.
  EXPECT_EQ(Rate::from_ps_per_byte_q32(1).ser(std::numeric_limits<uint64_t>::max()), Duration::from_ps(kOne));
  // An infinitely fast link (raw 0, only from the raw constructor).
  EXPECT_EQ(Rate::from_ps_per_byte_q32(0).ser(k2to40), Duration::zero());
#ifdef NDEBUG
  // 2^63 bytes at 8000 ps/byte does not fit in 64 bits of ps: saturates (release policy).
  EXPECT_EQ(Rate::from_gbps(1).ser(uint64_t{1} << 63), Duration::max());
#endif
}

TEST(Rate, RejectsUnusableInput) {
  EXPECT_THROW(Rate::from_gbps(0), std::invalid_argument);
  EXPECT_THROW(Rate::from_gbps(-400), std::invalid_argument);
  EXPECT_THROW(Rate::from_gbps(std::numeric_limits<double>::infinity()), std::invalid_argument);
  EXPECT_THROW(Rate::from_gbps(std::nan("")), std::invalid_argument);
  EXPECT_THROW(Rate::from_gbps(1e-300), std::invalid_argument);  // far too slow
  EXPECT_THROW(Rate::from_gbps(1e300), std::invalid_argument);   // rounds to 0 ps/byte
  EXPECT_THROW(Rate::from_astra_gbps(0), std::invalid_argument);
  EXPECT_THROW(Rate::from_bytes_per_sec(0), std::invalid_argument);
  EXPECT_THROW(Rate::from_bytes_per_sec(232), std::invalid_argument);
  // The slowest accepted rate: 233 B/s is just under 2^32 ps/byte.
  EXPECT_LT(Rate::from_bytes_per_sec(233).ps_per_byte_q32(), std::numeric_limits<uint64_t>::max());
  try {
    (void)Rate::from_gbps(-1.5);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "Rate::from_gbps(-1.5): the rate must be a positive finite number");
  }
}

}  // namespace
}  // namespace fabemu::emu
