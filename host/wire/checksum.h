// RFC 1071 internet checksums (IPv4 header, UDP): the ones'-complement sum and its engines (portable,
// SSE2, AVX2). The detail part is host/wire's own, for the frame code.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

namespace fabemu::host::dpdk {

// RFC 1071 ones'-complement sum folded to 16 bits (not inverted), of big-endian 16-bit words.
uint16_t ones_complement_sum(std::span<const uint8_t> data, uint32_t initial = 0) noexcept;

// How the ones'-complement sums of spans of 64 bytes and more are computed (decode's UDP checksum over a
// payload is the big one): 32-bit words a pair of 64-bit lanes at a time (SSE2, every x86-64), 16-bit
// halves of 32-bit lanes 64 bytes at a time (AVX2, CPUs that have it), or 32-bit words one at a time
// (kPortable, every other CPU). Same sums; the process starts with the best this CPU runs.
enum class SumEngine : uint8_t { kPortable, kSse2, kAvx2 };
SumEngine best_sum_engine() noexcept;
SumEngine sum_engine() noexcept;
// For tests and benchmarks (process-wide): false, and no change, when this CPU or build cannot run `e`.
bool set_sum_engine(SumEngine e) noexcept;

namespace detail {

#if defined(__x86_64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define FABEMU_HAVE_AVX2_SUM 1
// all_zero's AVX2 loop (frame.cpp): n >= 32.
bool all_zero_avx2(const uint8_t* p, size_t n) noexcept;
#endif
// The engine of sum16 for spans of 64 bytes and more (set_sum_engine: tests and benchmarks).
extern std::atomic<SumEngine> g_sum_engine;

// RFC 1071 sum of 16-bit big-endian words, unfolded. Every caller passes a segment that starts at an
// even offset of the checksummed data, so segments add up.
uint64_t sum16(const uint8_t* p, size_t n) noexcept;

inline uint16_t fold(uint64_t s) noexcept {
  // The two 32-bit halves added with their end-around carry: the residue mod 2^32 - 1 (= 0xFFFF * 0x10001,
  // so the same mod 0xFFFF), 0 only when s is. Then that word's halves the same way, as Linux's
  // csum_fold: the high half of x + rotl(x, 16) is hi + lo plus the carry out of lo + hi. The result is
  // the value in 1..0xFFFF congruent to s (0 for 0), as four 16-bit folds give (checked against them
  // on 5 * 10^7 edge and 2 * 10^8 random sums).
  const auto hi = static_cast<uint32_t>(s >> 32);
  uint32_t x = static_cast<uint32_t>(s) + hi;
  x += x < hi ? 1u : 0u;
  x += std::rotl(x, 16);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace detail

}  // namespace fabemu::host::dpdk
