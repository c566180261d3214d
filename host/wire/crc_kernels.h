// The CRC-32 kernels the frame code shares (crc.cpp, roce.cpp, frame.cpp, the FrameTemplate encoder): the
// slice tables and the zero-run operators built at compile time, the carry-less products and folding, and
// the per-width CRC batches of a run (crc_lanes.cpp). host/wire's own: not for use outside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "host/wire/crc.h"
#include "host/wire/fabemu_header.h"

namespace fabemu::host::dpdk::detail {

// --- CRC-32 (reflected 0xEDB88320), slicing-by-8 tables built at compile time ---
constexpr uint32_t kPoly = 0xEDB88320u;

// t[k][b]: the register after byte b then k zero bytes, from a zero register. crc_raw uses slices 0-7;
// the templates' CRCs up to 39, the contribution of a byte 39 bytes before the end of the CRC'd block.
constexpr int kCrcSlices = 40;
struct CrcTables {
  uint32_t t[kCrcSlices][256];
};
constexpr CrcTables make_tables() {
  CrcTables c{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t r = i;
    for (int k = 0; k < 8; ++k) r = (r & 1) ? (r >> 1) ^ kPoly : r >> 1;
    c.t[0][i] = r;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int s = 1; s < kCrcSlices; ++s) c.t[s][i] = (c.t[s - 1][i] >> 8) ^ c.t[0][c.t[s - 1][i] & 0xFF];
  }
  return c;
}
inline constexpr CrcTables kCrc = make_tables();

// The raw register (no pre/post inversion) advanced over `n` bytes.
uint32_t crc_raw(uint32_t s, const uint8_t* p, size_t n) noexcept;

// crc_raw, with 64 bytes or more folded by carry-less products when `engine` is kClmul (below).
uint32_t crc_bulk(uint32_t s, const uint8_t* p, size_t n, CrcEngine engine) noexcept;

// Multiplication modulo the CRC polynomial in the reflected representation (bit 31 is x^0), so a run
// of zero bytes advances the register by one multiplication by x^(8n) instead of n table steps.
constexpr uint32_t mulmodp(uint32_t a, uint32_t b) noexcept {
  uint32_t m = 1u << 31;
  uint32_t p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return p;
}
struct X2n {
  uint32_t t[64];
};
constexpr X2n make_x2n() {
  X2n x{};
  uint32_t p = 1u << 30;  // x^1
  x.t[0] = p;
  for (int k = 1; k < 64; ++k) x.t[k] = p = mulmodp(p, p);  // x^(2^k)
  return x;
}
inline constexpr X2n kX2n = make_x2n();

// x^(8b) and x^(8 * 256 b) for every byte value b: two lookups and one multiplication give the operator
// for any run shorter than 64 KiB (every frame), instead of one multiplication per bit of the length.
struct ZeroOps {
  uint32_t lo[256];
  uint32_t hi[256];
};
constexpr ZeroOps make_zero_ops() {
  ZeroOps z{};
  z.lo[0] = z.hi[0] = 1u << 31;  // x^0
  for (int b = 1; b < 256; ++b) {
    z.lo[b] = mulmodp(z.lo[b - 1], kX2n.t[3]);   // * x^8
    z.hi[b] = mulmodp(z.hi[b - 1], kX2n.t[11]);  // * x^2048
  }
  return z;
}
inline constexpr ZeroOps kZeroOps = make_zero_ops();

// The register advanced over n zero bytes, from the tables (crc_raw_zeros) or, with the clmul engine, by
// carry-less multiplication (crc_zeros).
uint32_t crc_raw_zeros(uint32_t s, uint64_t n) noexcept;
uint32_t crc_zeros(uint32_t s, uint64_t n, CrcEngine engine) noexcept;

// Byte offsets in the fabemu header of the fields that change from packet to packet of a flow's messages
// of one size (message id and seq are contiguous).
constexpr size_t kIdAt = kHeaderIdAt, kSeqAt = kHeaderSeqAt, kOffsetAt = kHeaderOffsetAt, kTimeAt = kHeaderTimeAt,
                 kCrcAt = kHeaderCrcAt;

// The contribution of the big-endian N-byte value v at byte At of an End-byte block to the register after
// the block, from a zero register: the CRC is linear in the data, so what repeats is computed once.
// Unrolled at compile time (a loop here costs more than the lookups).
template <size_t End, size_t At, size_t N, size_t... I>
inline uint32_t crc_field(uint64_t v, std::index_sequence<I...>) noexcept {
  static_assert(End - At <= kCrcSlices && At + N <= End);
  return (kCrc.t[End - 1 - (At + I)][(v >> (8 * (N - 1 - I))) & 0xFF] ^ ...);
}
template <size_t End, size_t At, size_t N>
inline uint32_t crc_field(uint64_t v) noexcept {
  return crc_field<End, At, N>(v, std::make_index_sequence<N>{});
}

// FABEMU_NO_CLMUL builds the table engine alone on x86-64 too, as on every other architecture.
#if defined(__x86_64__) && !defined(FABEMU_NO_CLMUL)
#define FABEMU_HAVE_CLMUL 1
#define FABEMU_CLMUL_TARGET __attribute__((target("pclmul,sse4.1")))

// Carry-less multiplication in the reflected representation: a 32-bit register times a 32-bit constant
// is a 63-bit product whose bit k is the coefficient of x^(62-k). Read as 64 bits (bit k: x^(63-k)) it is
// the product times x, so each constant is x^(e-1) mod P for a factor x^e: no shift per product. A
// 64-bit value reduces to the register by Barrett's method (two more products, no division): with
// H its top 32 coefficients (the low 32 bits), q = floor(H * floor(x^64 / P) / x^32) and R mod P =
// R - q * P, whose remainder lies in the high 32 bits.
constexpr uint64_t reflect(uint64_t v, int bits) noexcept {
  uint64_t r = 0;
  for (int i = 0; i < bits; ++i) r |= ((v >> i) & 1) << (bits - 1 - i);
  return r;
}
// floor(x^64 / P) in the normal representation (33 bits), by long division.
constexpr uint64_t x64_div_p() noexcept {
  constexpr uint64_t kPolyNormal = 0x04C11DB7;  // P without its x^32 term
  uint64_t q = uint64_t{1} << 32;               // the x^64 step: x^64 - x^32 P leaves kPolyNormal x^32
  uint64_t r = kPolyNormal << 32;
  for (int d = 63; d >= 32; --d) {
    if ((r >> d) & 1) {
      q |= uint64_t{1} << (d - 32);
      r ^= (uint64_t{1} << 32 | kPolyNormal) << (d - 32);
    }
  }
  return q;
}
inline constexpr uint64_t kMu33 = reflect(x64_div_p(), 33);
inline constexpr uint64_t kP33 = uint64_t{kPoly} << 1 | 1;  // P reflected over 33 bits
static_assert(reflect(kP33, 33) == 0x104C11DB7);

// x^m mod P, one multiplication by x per power: for the compile-time constants below.
constexpr uint32_t xpow(uint32_t m) noexcept {
  uint32_t p = 1u << 31;
  while (m-- > 0) p = (p & 1) ? (p >> 1) ^ kPoly : p >> 1;
  return p;
}
// The constant of a big-endian 4-byte field followed by `after` bytes up to the end of the CRC'd block:
// its bytes cross 32 bits of the register, then 8 per byte after it (less the one x of the product).
constexpr uint64_t field_k(size_t after) noexcept { return xpow(static_cast<uint32_t>(32 + 8 * after - 1)); }

// The fabemu header's fields in two pairs, (low id, seq) and (low offset, low time), 56-byte block.
alignas(16) inline constexpr uint64_t kHeaderK[4] = {field_k(kCrcAt - kIdAt - 8), field_k(kCrcAt - kSeqAt - 4),
                                              field_k(kCrcAt - kOffsetAt - 8), field_k(kCrcAt - kTimeAt - 8)};
// The fields fixed within a run of one message's frames (low id, low time); the moving pair (seq, low
// offset) is kHeaderK[1..2].
alignas(16) inline constexpr uint64_t kFixedK[2] = {kHeaderK[0], kHeaderK[3]};
// A whole fabemu header's CRC'd block (the receive side's check): the register a 0xFFFFFFFF start leaves
// after 56 zero bytes (the CRC is linear: the block's register from that start is this XOR the register
// its bytes leave from a zero one).
inline constexpr uint32_t kInitAcrossBlock = mulmodp(kZeroOps.lo[kCrcAt], 0xFFFFFFFFu);

// a0 * k[0] ^ a1 * k[1], unreduced. The constants load as a pair, unaligned: a template's own
// multipliers are wherever the caller put the template.
FABEMU_CLMUL_TARGET inline __m128i clmul_pair(uint32_t a0, uint32_t a1, const uint64_t* k) noexcept {
  const __m128i a = _mm_set_epi64x(a1, a0);
  const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(k));
  return _mm_xor_si128(_mm_clmulepi64_si128(a, c, 0x00), _mm_clmulepi64_si128(a, c, 0x11));
}
FABEMU_CLMUL_TARGET inline uint32_t barrett(__m128i r) noexcept {
  const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
  const __m128i k = _mm_set_epi64x(static_cast<int64_t>(kP33), static_cast<int64_t>(kMu33));
  __m128i q = _mm_clmulepi64_si128(_mm_and_si128(r, low32), k, 0x00);
  q = _mm_clmulepi64_si128(_mm_and_si128(q, low32), k, 0x10);
  // The high half of the low quadword: movq and a shift (pextrd is two uops).
  return static_cast<uint32_t>(static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_xor_si128(r, q))) >> 32);
}
// a * b mod P, for registers a and b.
FABEMU_CLMUL_TARGET inline uint32_t clmul_mulmod(uint32_t a, uint32_t b) noexcept {
  return barrett(_mm_slli_epi64(_mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(a)),
                                                     _mm_cvtsi32_si128(static_cast<int>(b)), 0x00),
                                1));
}
// The raw register advanced over n bytes (n >= 64, a multiple of 16) by folding, the method of Intel's
// white paper "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ Instruction" (2009): the
// register is XORed into the first block; four 128-bit accumulators each move 512 bits on per step (a
// block's low and high halves times x^(512+64) and x^512 mod P, in the paper's reflected constants) and
// take in the next 64 bytes; the four fold into one (by 128 bits), which takes in the remaining blocks;
// the 128-bit remainder is reduced to 64 and to 32 bits by two more products, then by Barrett's method.
FABEMU_CLMUL_TARGET inline __m128i load128(const uint8_t* q) noexcept {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}
// x's low half times k's low one, plus x's high half times k's high one, plus `next`.
FABEMU_CLMUL_TARGET inline __m128i fold128(__m128i x, __m128i k, __m128i next) noexcept {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}
// The 1-block multipliers of the folding (high, low halves).
FABEMU_CLMUL_TARGET inline __m128i fold_k3k4() noexcept { return _mm_set_epi64x(0x0ccaa009e, 0x1751997d0); }
// A folded 128-bit remainder reduced to the 32-bit register: to 64 bits, to 32, then Barrett.
FABEMU_CLMUL_TARGET inline uint32_t fold_reduce(__m128i x) noexcept {
  const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124);                 // 64 -> 32 bits
  const __m128i poly_mu = _mm_set_epi64x(0x1f7011641, 0x1db710641);  // Barrett: mu, P (reflected, 33 bits)
  const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
  x = _mm_xor_si128(_mm_clmulepi64_si128(x, fold_k3k4(), 0x10), _mm_srli_si128(x, 8));             // 128 -> 64
  x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), k5, 0x00), _mm_srli_si128(x, 4));  // -> 32
  __m128i q = _mm_clmulepi64_si128(_mm_and_si128(x, low32), poly_mu, 0x10);
  q = _mm_clmulepi64_si128(_mm_and_si128(q, low32), poly_mu, 0x00);
  return static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(x, q), 1));
}
FABEMU_CLMUL_TARGET uint32_t crc_fold(uint32_t s, const uint8_t* p, size_t n) noexcept;
// The CRC-32 of a fabemu header's first kCrcAt (56) bytes by folding (fabemu_header_crc's kClmul engine).
FABEMU_CLMUL_TARGET uint32_t header_crc_clmul(const uint8_t* p) noexcept;

// A run's CRCs several frames at a time (run_crc_batch(), crc_lanes.cpp): Clmul::moving() and the ICRCs of
// Middle packets of a run's frames, 4 (512-bit VPCLMULQDQ) or 2 (256-bit) frames a vector.
#define FABEMU_LANES4_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.1,ssse3")))
#define FABEMU_LANES2_TARGET __attribute__((target("avx2,vpclmulqdq,pclmul,sse4.1,ssse3")))
namespace lanes4 {
FABEMU_LANES4_TARGET void moving_batch(uint32_t seq, uint32_t offset_lo, uint32_t stride, uint32_t n,
                                       uint32_t* moving) noexcept;
FABEMU_LANES4_TARGET void icrc_batch(const uint64_t* id_crc_k, const uint64_t* bth_k, __m128i lens_pair, uint32_t key,
                                     uint32_t seq, uint32_t offset_lo, uint32_t stride, uint16_t ip_id, uint32_t n,
                                     uint32_t crc_base, uint32_t key_crc, uint32_t w0_middle, uint32_t* moving,
                                     uint32_t* icrc) noexcept;
}  // namespace lanes4
namespace lanes2 {
FABEMU_LANES2_TARGET void moving_batch(uint32_t seq, uint32_t offset_lo, uint32_t stride, uint32_t n,
                                       uint32_t* moving) noexcept;
FABEMU_LANES2_TARGET void icrc_batch(const uint64_t* id_crc_k, const uint64_t* bth_k, __m128i lens_pair, uint32_t key,
                                     uint32_t seq, uint32_t offset_lo, uint32_t stride, uint16_t ip_id, uint32_t n,
                                     uint32_t crc_base, uint32_t key_crc, uint32_t w0_middle, uint32_t* moving,
                                     uint32_t* icrc) noexcept;
}  // namespace lanes2
#endif

}  // namespace fabemu::host::dpdk::detail
