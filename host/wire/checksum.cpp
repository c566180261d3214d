// RFC 1071 sums: the portable, SSE2 and AVX2 engines.
#include "host/wire/checksum.h"

#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "host/wire/byte_access.h"

namespace fabemu::host::dpdk {

namespace detail {

namespace {
#if defined(FABEMU_HAVE_AVX2_SUM)
bool cpu_has_avx2() noexcept {
  static const bool avx2 = [] {
    __builtin_cpu_init();  // may run before the constructors that set the CPU model up
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return avx2;
}
#endif
}  // namespace

std::atomic<SumEngine> g_sum_engine{best_sum_engine()};

namespace {
#if defined(FABEMU_HAVE_AVX2_SUM)
// AVX2, 64 bytes an iteration: the little-endian 16-bit halves of 32-bit lanes (a mask and a shift, no
// shuffles) into one accumulator, widened to 64 bits once a block. Consumes whole 64-byte chunks
// (n becomes n % 64); the sum is of little-endian words, as the SSE2 path's below.
[[gnu::target("avx2")]] uint64_t sum_le_avx2(const uint8_t*& p_io, size_t& n_io) noexcept {
  // The pointer and count in locals: written through the references, they were stored every iteration.
  const uint8_t* p = p_io;
  size_t n = n_io;
  const __m256i mask = _mm256_set1_epi32(0xFFFF);
  const __m256i zero = _mm256_setzero_si256();
  uint64_t s = 0;
  while (n >= 64) {
    // A lane gains at most 4 * 0xFFFF an iteration: 16384 iterations stay below 2^32. One accumulator:
    // with four, GCC 12 copied each into another register every iteration.
    const size_t iters = std::min<size_t>(n / 64, 16384);
    __m256i x = zero;
    for (size_t i = 0; i < iters; ++i, p += 64) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
      const __m256i vs = _mm256_add_epi32(_mm256_and_si256(v, mask), _mm256_srli_epi32(v, 16));
      const __m256i ws = _mm256_add_epi32(_mm256_and_si256(w, mask), _mm256_srli_epi32(w, 16));
      x = _mm256_add_epi32(x, _mm256_add_epi32(vs, ws));
    }
    n -= iters * 64;
    const __m256i wide = _mm256_add_epi64(_mm256_unpacklo_epi32(x, zero), _mm256_unpackhi_epi32(x, zero));
    const __m128i two = _mm_add_epi64(_mm256_castsi256_si128(wide), _mm256_extracti128_si256(wide, 1));
    s += static_cast<uint64_t>(_mm_cvtsi128_si64(two)) + static_cast<uint64_t>(_mm_extract_epi64(two, 1));
  }
  p_io = p;
  n_io = n;
  return s;
}
#endif
}  // namespace

// RFC 1071 sum of 16-bit big-endian words, unfolded. Every caller passes a segment that starts at an
// even offset of the checksummed data, so segments add up.
uint64_t sum16(const uint8_t* p, size_t n) noexcept {
#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const SumEngine engine = n >= 64 ? g_sum_engine.load(std::memory_order_relaxed) : SumEngine::kPortable;
  if (engine != SumEngine::kPortable) {
    // Payloads (the receive side's UDP checksum over every byte): RFC 1071's byte order independence.
    // The sum of little-endian words, folded, is the big-endian one with its two bytes swapped, and
    // a folded sum is congruent modulo 0xFFFF to the unfolded one the callers add up; it is 0 only for
    // all-zero data, as theirs. 32-bit words widened into 64-bit lanes: 16 bytes per two adds.
    uint64_t wide = 0;
#if defined(FABEMU_HAVE_AVX2_SUM)
    if (engine == SumEngine::kAvx2 && n >= 128) wide = sum_le_avx2(p, n);  // the 64-byte chunks
#endif
    const __m128i zero = _mm_setzero_si128();
    __m128i lo = zero, hi = zero;
    for (; n >= 16; p += 16, n -= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      lo = _mm_add_epi64(lo, _mm_unpacklo_epi32(v, zero));
      hi = _mm_add_epi64(hi, _mm_unpackhi_epi32(v, zero));
    }
    alignas(16) uint64_t lanes[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(lanes), lo);
    _mm_store_si128(reinterpret_cast<__m128i*>(lanes + 2), hi);
    uint64_t s = wide + lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for (; n >= 4; p += 4, n -= 4) {
      uint32_t w;
      std::memcpy(&w, p, 4);
      s += w;
    }
    if (n >= 2) {
      uint16_t w;
      std::memcpy(&w, p, 2);
      s += w;
      p += 2;
      n -= 2;
    }
    if (n) s += p[0];  // the low byte of a little-endian word
    s = (s & 0xFFFFFFFF) + (s >> 32);
    s = (s & 0xFFFF) + (s >> 16);
    s = (s & 0xFFFF) + (s >> 16);
    s = (s & 0xFFFF) + (s >> 16);
    return __builtin_bswap16(static_cast<uint16_t>(s));
  }
#endif
  // Big-endian 32-bit words add up to the same folded sum as their 16-bit halves (2^16 == 1 modulo
  // 0xFFFF), at half the additions; a 64-bit accumulator cannot overflow below 2^32 words.
  uint64_t s = 0;
  while (n >= 8) {
    s += uint64_t{get32(p)} + get32(p + 4);
    p += 8;
    n -= 8;
  }
  while (n >= 4) {
    s += get32(p);
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    s += get16(p);
    p += 2;
    n -= 2;
  }
  if (n) s += uint64_t{p[0]} << 8;
  return s;
}
#if defined(FABEMU_HAVE_AVX2_SUM)
// all_zero's AVX2 loop: n >= 32; the last 32 bytes by one load that may overlap the ones before.
[[gnu::target("avx2")]] bool all_zero_avx2(const uint8_t* p, size_t n) noexcept {
  const auto* q = reinterpret_cast<const __m256i*>(p);  // (a lambda would not inherit the target)
  __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + n - 32)), b = _mm256_setzero_si256();
  for (; n >= 128; q += 4, n -= 128) {
    a = _mm256_or_si256(a, _mm256_or_si256(_mm256_loadu_si256(q), _mm256_loadu_si256(q + 1)));
    b = _mm256_or_si256(b, _mm256_or_si256(_mm256_loadu_si256(q + 2), _mm256_loadu_si256(q + 3)));
  }
  for (; n >= 32; ++q, n -= 32) a = _mm256_or_si256(a, _mm256_loadu_si256(q));
  a = _mm256_or_si256(a, b);
  return _mm256_testz_si256(a, a) != 0;
}
#endif

}  // namespace detail

using namespace detail;

SumEngine sum_engine() noexcept { return g_sum_engine.load(std::memory_order_relaxed); }

bool set_sum_engine(SumEngine e) noexcept {
  bool ok = e == SumEngine::kPortable;
#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  ok = ok || e == SumEngine::kSse2;
#endif
#if defined(FABEMU_HAVE_AVX2_SUM)
  ok = ok || (e == SumEngine::kAvx2 && cpu_has_avx2());
#endif
  if (ok) g_sum_engine.store(e, std::memory_order_relaxed);
  return ok;
}

SumEngine best_sum_engine() noexcept {
#if defined(FABEMU_HAVE_AVX2_SUM)
  if (cpu_has_avx2()) return SumEngine::kAvx2;
#endif
#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return SumEngine::kSse2;
#else
  return SumEngine::kPortable;
#endif
}

uint16_t ones_complement_sum(std::span<const uint8_t> data, uint32_t initial) noexcept {
  return fold(initial + sum16(data.data(), data.size()));
}

}  // namespace fabemu::host::dpdk
