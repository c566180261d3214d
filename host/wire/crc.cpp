// CRC-32: the table and carry-less engines, the whole-buffer CRC and the fabemu header's. Why each piece
// is as it is: host/wire/README.md and host/dpdk/README.md ("Fast framing").
#include "host/wire/crc.h"

#include <atomic>
#include <cstddef>

#include "host/wire/crc_kernels.h"

namespace fabemu::host::dpdk {

namespace detail {

uint32_t crc_raw(uint32_t s, const uint8_t* p, size_t n) noexcept {
  while (n >= 8) {
    const uint32_t lo = s ^ (uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24);
    s = kCrc.t[7][lo & 0xFF] ^ kCrc.t[6][(lo >> 8) & 0xFF] ^ kCrc.t[5][(lo >> 16) & 0xFF] ^ kCrc.t[4][lo >> 24] ^
        kCrc.t[3][p[4]] ^ kCrc.t[2][p[5]] ^ kCrc.t[1][p[6]] ^ kCrc.t[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) s = kCrc.t[0][(s ^ *p++) & 0xFF] ^ (s >> 8);
  return s;
}

uint32_t crc_raw_zeros(uint32_t s, uint64_t n) noexcept {
  if (n < 65536) return mulmodp(mulmodp(kZeroOps.lo[n & 0xFF], kZeroOps.hi[n >> 8]), s);
  uint64_t bits = n * 8;
  for (int k = 0; bits != 0 && s != 0; ++k, bits >>= 1) {
    if (bits & 1) s = mulmodp(kX2n.t[k], s);
  }
  return s;
}

#if defined(FABEMU_HAVE_CLMUL)
FABEMU_CLMUL_TARGET uint32_t crc_fold(uint32_t s, const uint8_t* p, size_t n) noexcept {
  const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);  // 4 blocks: high, low halves
  const __m128i k3k4 = fold_k3k4();
  __m128i x0 = _mm_xor_si128(load128(p), _mm_cvtsi32_si128(static_cast<int>(s)));
  __m128i x1 = load128(p + 16), x2 = load128(p + 32), x3 = load128(p + 48);
  p += 64;
  n -= 64;
  for (; n >= 64; p += 64, n -= 64) {
    x0 = fold128(x0, k1k2, load128(p));
    x1 = fold128(x1, k1k2, load128(p + 16));
    x2 = fold128(x2, k1k2, load128(p + 32));
    x3 = fold128(x3, k1k2, load128(p + 48));
  }
  __m128i x = fold128(fold128(fold128(x0, k3k4, x1), k3k4, x2), k3k4, x3);
  for (; n >= 16; p += 16, n -= 16) x = fold128(x, k3k4, load128(p));
  return fold_reduce(x);
}

// The CRC-32 of a header's first kCrcAt (56) bytes, folded as crc_fold folds its last four blocks: the
// bytes behind 8 zero bytes (which leave a register of 0 as it is) are four 16-byte blocks, the first
// from one 8-byte load; 6 products for the blocks, 4 for the reduction, and the constant a 0xFFFFFFFF
// start leaves across 56 bytes (the table engine: crc_raw).
static_assert(kCrcAt == 56, "four blocks: 8 zero bytes and 56");
FABEMU_CLMUL_TARGET uint32_t header_crc_clmul(const uint8_t* p) noexcept {
  const __m128i k3k4 = fold_k3k4();
  const __m128i x0 = _mm_slli_si128(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), 8);
  const __m128i x = fold128(fold128(fold128(x0, k3k4, load128(p + 8)), k3k4, load128(p + 24)), k3k4, load128(p + 40));
  return ~(fold_reduce(x) ^ kInitAcrossBlock);
}
#endif

}  // namespace detail

using namespace detail;

CrcEngine best_crc_engine() noexcept {
#if defined(FABEMU_HAVE_CLMUL)
  static const bool clmul = [] {
    __builtin_cpu_init();  // may run before the constructors that set the CPU model up
    return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  }();
  return clmul ? CrcEngine::kClmul : CrcEngine::kTable;
#else
  return CrcEngine::kTable;
#endif
}

namespace detail {

uint32_t crc_bulk(uint32_t s, const uint8_t* p, size_t n, CrcEngine engine) noexcept {
#if defined(FABEMU_HAVE_CLMUL)
  if (n >= 64 && engine == CrcEngine::kClmul && best_crc_engine() == CrcEngine::kClmul) {
    const size_t folded = n & ~size_t{15};
    s = crc_fold(s, p, folded);
    p += folded;
    n -= folded;
  }
#else
  static_cast<void>(engine);
#endif
  return crc_raw(s, p, n);
}

// The register advanced over n zero bytes: one product by x^(8n) (two table entries and a product for
// the operator), by carry-less multiplication with the clmul engine.
uint32_t crc_zeros(uint32_t s, uint64_t n, CrcEngine engine) noexcept {
#if defined(FABEMU_HAVE_CLMUL)
  if (n < 65536 && engine == CrcEngine::kClmul && best_crc_engine() == CrcEngine::kClmul) {
    return clmul_mulmod(clmul_mulmod(kZeroOps.lo[n & 0xFF], kZeroOps.hi[n >> 8]), s);
  }
#else
  static_cast<void>(engine);
#endif
  return crc_raw_zeros(s, n);
}

}  // namespace detail

uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> data, CrcEngine engine) noexcept {
  return ~crc_bulk(~crc, data.data(), data.size(), engine);
}

uint32_t fabemu_header_crc(const uint8_t* header, CrcEngine engine) noexcept {
#if defined(FABEMU_HAVE_CLMUL)
  if (engine == CrcEngine::kClmul && best_crc_engine() == CrcEngine::kClmul) return header_crc_clmul(header);
#else
  static_cast<void>(engine);
#endif
  return ~crc_raw(0xFFFFFFFFu, header, kCrcAt);
}

}  // namespace fabemu::host::dpdk
