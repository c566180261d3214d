// Simulated time (integer picoseconds) and link speed (Q32.32 picoseconds per byte) as strong types, so
// the software model, the C++ cycle model and the RTL compute every timestamp identically.
#pragma once

#include <bit>
#include <cassert>
#include <compare>
#include <cstdint>
#include <limits>

namespace fabemu::emu {

// Overflow policy, one for all time arithmetic: a result that does not fit in 64 bits (or would go
// below zero) is a bug, so debug builds assert; release builds saturate at max() (or zero) rather than
// wrap, because a wrapped time would sort an event into the past and silently reorder the run, while
// a saturated one sorts last and shows up as an absurd time in the report. 2^64 ps is 213 days of
// emulated time, so only a bug or unchecked user input can get there: validate input where it enters.
namespace detail {

__extension__ using u128 = unsigned __int128;  // __extension__: GCC/Clang builtin, quiet under -Wpedantic

constexpr uint64_t add_sat(uint64_t a, uint64_t b) noexcept {
  uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    assert(false && "fabemu::emu time overflow (a + b >= 2^64 ps)");
    return std::numeric_limits<uint64_t>::max();
  }
  return r;
}

constexpr uint64_t sub_sat(uint64_t a, uint64_t b) noexcept {
  if (a < b) {
    assert(false && "fabemu::emu time underflow (a - b < 0)");
    return 0;
  }
  return a - b;
}

constexpr uint64_t mul_sat(uint64_t a, uint64_t b) noexcept {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    assert(false && "fabemu::emu time overflow (a * b >= 2^64 ps)");
    return std::numeric_limits<uint64_t>::max();
  }
  return r;
}

}  // namespace detail

// A span of simulated time in picoseconds.
class Duration {
 public:
  constexpr Duration() noexcept = default;
  static constexpr Duration from_ps(uint64_t ps) noexcept { return Duration(ps); }
  static constexpr Duration from_ns(uint64_t ns) noexcept { return Duration(detail::mul_sat(ns, 1'000)); }
  static constexpr Duration from_us(uint64_t us) noexcept { return Duration(detail::mul_sat(us, 1'000'000)); }
  static constexpr Duration from_ms(uint64_t ms) noexcept { return Duration(detail::mul_sat(ms, 1'000'000'000)); }
  static constexpr Duration zero() noexcept { return Duration(0); }
  static constexpr Duration max() noexcept { return Duration(std::numeric_limits<uint64_t>::max()); }

  constexpr uint64_t ps() const noexcept { return ps_; }

  friend constexpr auto operator<=>(Duration, Duration) noexcept = default;
  friend constexpr Duration operator+(Duration a, Duration b) noexcept { return Duration(detail::add_sat(a.ps_, b.ps_)); }
  friend constexpr Duration operator-(Duration a, Duration b) noexcept { return Duration(detail::sub_sat(a.ps_, b.ps_)); }
  friend constexpr Duration operator*(Duration a, uint64_t k) noexcept { return Duration(detail::mul_sat(a.ps_, k)); }
  friend constexpr Duration operator*(uint64_t k, Duration a) noexcept { return a * k; }
  constexpr Duration& operator+=(Duration d) noexcept { return *this = *this + d; }
  constexpr Duration& operator-=(Duration d) noexcept { return *this = *this - d; }

 private:
  explicit constexpr Duration(uint64_t ps) noexcept : ps_(ps) {}
  uint64_t ps_ = 0;
};

// A point in simulated time: picoseconds since the start of the emulated run.
class Time {
 public:
  constexpr Time() noexcept = default;
  static constexpr Time from_ps(uint64_t ps) noexcept { return Time(ps); }
  static constexpr Time from_ns(uint64_t ns) noexcept { return Time(Duration::from_ns(ns).ps()); }
  static constexpr Time from_us(uint64_t us) noexcept { return Time(Duration::from_us(us).ps()); }
  static constexpr Time from_ms(uint64_t ms) noexcept { return Time(Duration::from_ms(ms).ps()); }
  static constexpr Time zero() noexcept { return Time(0); }
  // Also "never": it sorts after every reachable time.
  static constexpr Time max() noexcept { return Time(std::numeric_limits<uint64_t>::max()); }

  constexpr uint64_t ps() const noexcept { return ps_; }
  // Time elapsed since the start of the run.
  constexpr Duration since_start() const noexcept { return Duration::from_ps(ps_); }

  friend constexpr auto operator<=>(Time, Time) noexcept = default;
  friend constexpr Time operator+(Time t, Duration d) noexcept { return Time(detail::add_sat(t.ps_, d.ps())); }
  friend constexpr Time operator+(Duration d, Time t) noexcept { return t + d; }
  friend constexpr Time operator-(Time t, Duration d) noexcept { return Time(detail::sub_sat(t.ps_, d.ps())); }
  // Precondition: a >= b (time does not run backwards).
  friend constexpr Duration operator-(Time a, Time b) noexcept { return Duration::from_ps(detail::sub_sat(a.ps_, b.ps_)); }
  constexpr Time& operator+=(Duration d) noexcept { return *this = *this + d; }
  constexpr Time& operator-=(Duration d) noexcept { return *this = *this - d; }

 private:
  explicit constexpr Time(uint64_t ps) noexcept : ps_(ps) {}
  uint64_t ps_ = 0;
};

// `using namespace fabemu::emu::literals;` then `1500_ps`, `5_ns`, `2_us`, `1_ms` (all Durations).
inline namespace literals {
constexpr Duration operator""_ps(unsigned long long v) noexcept { return Duration::from_ps(v); }
constexpr Duration operator""_ns(unsigned long long v) noexcept { return Duration::from_ns(v); }
constexpr Duration operator""_us(unsigned long long v) noexcept { return Duration::from_us(v); }
constexpr Duration operator""_ms(unsigned long long v) noexcept { return Duration::from_ms(v); }
}  // namespace literals

namespace detail {
// Cold path of Rate's constructors, out of line so that the message can say which input was bad.
// Throws std::invalid_argument.
[[noreturn]] void throw_bad_rate(const char* constructor, double value, const char* why);
}  // namespace detail

// A link's speed: Q32.32 fixed-point picoseconds per byte (raw = ps_per_byte * 2^32). Converted once
// from the user's units; from then on only integers, so every model agrees to the picosecond.
//
// Rounding: each constructor takes the *exact* value of its argument (a double is a dyadic rational,
// so gigabits/s given as a double is converted without any floating-point arithmetic) and returns
// the nearest raw Q32.32 value, ties rounded up. The error is at most 2^-33 ps per byte, i.e. at most
// 1 ps per 8.6 GB serialized, and ser() rounds its result up to whole picoseconds.
//
// Range: 1 <= raw < 2^64, i.e. from about 2.3e-10 ps/byte to 2^32 ps/byte (~233 bytes/s). A value
// outside it, zero, negative, NaN or infinity throws std::invalid_argument.
class Rate {
 public:
  static constexpr unsigned kFractionBits = 32;

  // Gigabits per second, 10^9 bits/s (network convention: 400 Gb/s = 50e9 bytes/s = 20 ps/byte).
  static constexpr Rate from_gbps(double gigabits_per_second);
  // ASTRA-sim's "GB/s" in network.yml, which is 2^30 bytes per second (50 GB/s = 50 * 2^30 B/s).
  static constexpr Rate from_astra_gbps(double astra_gigabytes_per_second);
  static constexpr Rate from_bytes_per_sec(uint64_t bytes_per_second);
  // The raw Q32.32 value, as the FPGA register map and the cycle model carry it. Any value is
  // accepted; 0 is an infinitely fast link (ser() is always 0).
  static constexpr Rate from_ps_per_byte_q32(uint64_t raw) noexcept { return Rate(raw); }

  constexpr uint64_t ps_per_byte_q32() const noexcept { return raw_; }

  // Time to serialize `bytes`: ceil(bytes * raw / 2^32) ps, exact (128-bit intermediate). A result
  // of 2^64 ps or more follows the overflow policy above (assert in debug, Duration::max() otherwise).
  constexpr Duration ser(uint64_t bytes) const noexcept {
    const detail::u128 q = (detail::u128{bytes} * raw_ + ((detail::u128{1} << kFractionBits) - 1)) >> kFractionBits;
    if (q >> 64) {
      assert(false && "fabemu::emu::Rate::ser: serialization time >= 2^64 ps");
      return Duration::max();
    }
    return Duration::from_ps(static_cast<uint64_t>(q));
  }

  friend constexpr bool operator==(Rate, Rate) noexcept = default;

 private:
  explicit constexpr Rate(uint64_t raw) noexcept : raw_(raw) {}
  // round(k / value) for a positive finite double, exactly; `who` names the constructor for errors.
  static constexpr uint64_t round_div_exact(detail::u128 k, double value, const char* who);
  uint64_t raw_;
};

// 10^12 ps/s * 2^32: the numerator of every conversion from a "per second" unit.
inline constexpr detail::u128 kPsPerSecondQ32 = detail::u128{1'000'000'000'000} << Rate::kFractionBits;

constexpr uint64_t Rate::round_div_exact(detail::u128 k, double value, const char* who) {
  // Round half up of n / d, with 2n + d not overflowing for the ranges used below.
  constexpr auto round_div = [](detail::u128 n, detail::u128 d) { return (2 * n + d) / (2 * d); };
  const auto bits = std::bit_cast<uint64_t>(value);
  const auto biased_exp = static_cast<int>((bits >> 52) & 0x7ff);
  uint64_t mantissa = bits & ((uint64_t{1} << 52) - 1);
  if ((bits >> 63) != 0 || biased_exp == 0x7ff || (biased_exp == 0 && mantissa == 0)) {
    detail::throw_bad_rate(who, value, "must be a positive finite number");
  }
  // value == mantissa * 2^exp exactly.
  int exp = biased_exp == 0 ? -1074 : biased_exp - 1075;
  if (biased_exp != 0) mantissa |= uint64_t{1} << 52;
  const int tz = std::countr_zero(mantissa);
  mantissa >>= tz;
  exp += tz;
  // k < 2^46 and mantissa < 2^53 keep every intermediate below 2^128.
  assert(k < (detail::u128{1} << 46));
  detail::u128 raw = 0;
  if (exp <= 0) {
    // raw >= k * 2^-exp / 2^53 >= 2^(41 - exp - 53): past 75 it cannot fit in 64 bits.
    if (-exp >= 76) detail::throw_bad_rate(who, value, "is too slow (more than 2^32 ps per byte)");
    raw = round_div(k << -exp, mantissa);
  } else {
    // Past 63 the divisor exceeds 2k and the result rounds to 0.
    if (exp >= 64) detail::throw_bad_rate(who, value, "is too fast (less than 2^-32 ps per byte)");
    raw = round_div(k, detail::u128{mantissa} << exp);
  }
  if (raw >> 64) detail::throw_bad_rate(who, value, "is too slow (more than 2^32 ps per byte)");
  if (raw == 0) detail::throw_bad_rate(who, value, "is too fast (less than 2^-32 ps per byte)");
  return static_cast<uint64_t>(raw);
}

constexpr Rate Rate::from_gbps(double gigabits_per_second) {
  // ps/byte = 10^12 / (Gb/s * 10^9 / 8) = 8000 / (Gb/s).
  return Rate(round_div_exact(detail::u128{8'000} << kFractionBits, gigabits_per_second, "Rate::from_gbps"));
}

constexpr Rate Rate::from_astra_gbps(double astra_gigabytes_per_second) {
  // ps/byte = 10^12 / (GB/s * 2^30), and 2^32 / 2^30 = 4.
  return Rate(round_div_exact(detail::u128{4'000'000'000'000}, astra_gigabytes_per_second, "Rate::from_astra_gbps"));
}

constexpr Rate Rate::from_bytes_per_sec(uint64_t bytes_per_second) {
  // Below 233 B/s the raw value needs more than 64 bits (10^12 * 2^32 / 2^64 = 232.8).
  if (bytes_per_second < 233) {
    detail::throw_bad_rate("Rate::from_bytes_per_sec", static_cast<double>(bytes_per_second),
                           "is too slow (less than 233 bytes/s)");
  }
  const detail::u128 d = bytes_per_second;
  return Rate(static_cast<uint64_t>((2 * kPsPerSecondQ32 + d) / (2 * d)));
}

}  // namespace fabemu::emu
