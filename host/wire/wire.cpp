// Frame encode/decode. Layout and the reasons for each choice: host/dpdk/README.md.
#include "host/wire/wire.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "host/wire/fabemu_header.h"

namespace fabemu::host::dpdk {

namespace {

// --- big-endian field access ---
inline void put8(uint8_t* p, uint8_t v) noexcept { p[0] = v; }
inline void put16(uint8_t* p, uint16_t v) noexcept {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void put24(uint8_t* p, uint32_t v) noexcept {
  p[0] = static_cast<uint8_t>(v >> 16);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v);
}
inline void put32(uint8_t* p, uint32_t v) noexcept {
  put16(p, static_cast<uint16_t>(v >> 16));
  put16(p + 2, static_cast<uint16_t>(v));
}
inline uint16_t get16(const uint8_t* p) noexcept { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t get24(const uint8_t* p) noexcept { return uint32_t{p[0]} << 16 | uint32_t{p[1]} << 8 | p[2]; }
inline uint32_t get32(const uint8_t* p) noexcept { return uint32_t{get16(p)} << 16 | get16(p + 2); }

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
constexpr CrcTables kCrc = make_tables();

// The raw register (no pre/post inversion) advanced over `n` bytes.
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
constexpr X2n kX2n = make_x2n();

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
constexpr ZeroOps kZeroOps = make_zero_ops();

uint32_t crc_raw_zeros(uint32_t s, uint64_t n) noexcept {
  if (n < 65536) return mulmodp(mulmodp(kZeroOps.lo[n & 0xFF], kZeroOps.hi[n >> 8]), s);
  uint64_t bits = n * 8;
  for (int k = 0; bits != 0 && s != 0; ++k, bits >>= 1) {
    if (bits & 1) s = mulmodp(kX2n.t[k], s);
  }
  return s;
}

// The engine of sum16 for spans of 64 bytes and more (set_sum_engine: tests and benchmarks).
#if defined(__x86_64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define FABEMU_HAVE_AVX2_SUM 1
bool cpu_has_avx2() noexcept {
  static const bool avx2 = [] {
    __builtin_cpu_init();  // may run before the constructors that set the CPU model up
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return avx2;
}
#endif
std::atomic<SumEngine> g_sum_engine{best_sum_engine()};

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

// True when the n bytes at p are all zero (a data frame's payload): 32 bytes a load with the AVX2 sum
// engine, 16 with SSE2, 8 otherwise.
bool all_zero(const uint8_t* p, size_t n) noexcept {
#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const SumEngine engine = n >= 32 ? g_sum_engine.load(std::memory_order_relaxed) : SumEngine::kPortable;
#if defined(FABEMU_HAVE_AVX2_SUM)
  if (engine == SumEngine::kAvx2) return all_zero_avx2(p, n);
#endif
  if (engine != SumEngine::kPortable) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + n - 16));
    for (; n >= 16; p += 16, n -= 16) a = _mm_or_si128(a, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm_movemask_epi8(_mm_cmpeq_epi8(a, _mm_setzero_si128())) == 0xFFFF;
  }
#endif
  uint64_t acc = 0;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    acc |= w;
  }
  for (; n > 0; --n) acc |= *p++;
  return acc == 0;
}

uint16_t fold(uint64_t s) noexcept {
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

// An IPv4 header of 20 bytes sums to 0xFFFF (its checksum is right): five native 32-bit loads. The sum
// of little-endian words folds to the byte swap of RFC 1071's big-endian one (byte order independence),
// and 0xFFFF is its own swap; a folded sum is 0 only for all-zero bytes in either order.
bool ipv4_header_sum_ok(const uint8_t* ip) noexcept {
  uint64_t s = 0;
  for (size_t i = 0; i < kIpv4HeaderBytes; i += 4) {
    uint32_t w;
    std::memcpy(&w, ip + i, 4);
    s += w;
  }
  return fold(s) == 0xFFFF;
}

uint64_t pseudo_header_sum(uint32_t src_ip, uint32_t dst_ip, uint16_t udp_len) noexcept {
  return (src_ip >> 16) + (src_ip & 0xFFFF) + (dst_ip >> 16) + (dst_ip & 0xFFFF) + kIpProtoUdp + udp_len;
}

constexpr size_t kUdpOff = kEthHeaderBytes + kIpv4HeaderBytes;
constexpr size_t kL4Off = kUdpOff + kUdpHeaderBytes;

size_t roce_pad(size_t payload_bytes) noexcept { return (4 - payload_bytes % 4) % 4; }

size_t udp_payload_bytes(WireMode mode, size_t payload_bytes) noexcept {
  return mode == WireMode::kFabemu
             ? kFabemuHeaderBytes + payload_bytes
             : kBthBytes + kFabemuHeaderBytes + payload_bytes + roce_pad(payload_bytes) + kIcrcBytes;
}

void write_bth(uint8_t* b, const Bth& t, size_t pad) noexcept {
  put8(b + 0, t.opcode);
  put8(b + 1, static_cast<uint8_t>((t.solicited ? 0x80 : 0) | (t.mig_req ? 0x40 : 0) | (pad << 4) | (t.tver & 0x0F)));
  put16(b + 2, t.pkey);
  put8(b + 4, 0);
  put24(b + 5, t.dest_qp & 0xFFFFFF);
  put8(b + 8, t.ack_req ? 0x80 : 0);
  put24(b + 9, t.psn & 0xFFFFFF);
}

// --- template path: native-order values stored big-endian in one move each (store_be*: fabemu_header.h) ---
inline uint32_t hi32(uint64_t v) noexcept { return static_cast<uint32_t>(v >> 32); }
inline uint32_t lo32(uint64_t v) noexcept { return static_cast<uint32_t>(v); }

// `field`'s value as an opaque register: its load stays a load of its own width. Without it GCC merges
// the loads (and comparisons) of adjacent fields into one wider load, which the CPU cannot forward from
// the narrower stores of a caller that has just written them: it waits for them to reach the cache.
template <class T>
[[gnu::always_inline]] inline T alone(const T& field) noexcept {
  T v = field;
  asm("" : "+r"(v));
  return v;
}

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

bool known_opcode(uint8_t op) noexcept {
  return op == kRcSendFirst || op == kRcSendMiddle || op == kRcSendLast || op == kRcSendOnly;
}

}  // namespace

uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> data, CrcEngine engine) noexcept {
  return ~crc_bulk(~crc, data.data(), data.size(), engine);
}

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

namespace {
constexpr size_t kIcrcMaskedBytes = kIpv4HeaderBytes + kUdpHeaderBytes + kBthBytes;
// The IPv4, UDP and BTH bytes of frame `f` as the ICRC covers them: every variant field set to ones.
void icrc_mask(const uint8_t* f, uint8_t* masked) noexcept {
  std::memcpy(masked, f + kEthHeaderBytes, kIcrcMaskedBytes);
  masked[1] = 0xFF;                // TOS (DSCP and ECN)
  masked[8] = 0xFF;                // TTL
  masked[10] = masked[11] = 0xFF;  // IP header checksum
  masked[kIpv4HeaderBytes + 6] = masked[kIpv4HeaderBytes + 7] = 0xFF;  // UDP checksum
  masked[kIpv4HeaderBytes + kUdpHeaderBytes + 4] = 0xFF;               // BTH reserved byte
}
}  // namespace

uint32_t roce_icrc(std::span<const uint8_t> f, CrcEngine engine) noexcept {
  if (f.size() < kL4Off + kBthBytes) return 0;
  uint8_t masked[kIcrcMaskedBytes];
  icrc_mask(f.data(), masked);
  static constexpr uint8_t kMaskedLrh[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  uint32_t s = crc_raw(0xFFFFFFFFu, kMaskedLrh, 8);
  s = crc_raw(s, masked, sizeof masked);
  s = crc_bulk(s, f.data() + kL4Off + kBthBytes, f.size() - kL4Off - kBthBytes, engine);
  return ~s;
}

size_t frame_bytes(WireMode mode, size_t payload_bytes) noexcept {
  return std::max(kMinFrameBytes, kL4Off + udp_payload_bytes(mode, payload_bytes));
}

size_t max_payload_for_mtu(WireMode mode, size_t mtu) noexcept {
  const size_t overhead = kIpv4HeaderBytes + udp_payload_bytes(mode, 0) + kUdpHeaderBytes;
  if (mtu > 65535) mtu = 65535;
  if (mtu <= overhead) return 0;
  const size_t room = mtu - overhead;
  return mode == WireMode::kFabemu ? room : room & ~size_t{3};
}

size_t encode(const FrameSpec& spec, std::span<uint8_t> out) noexcept {
  const FabemuHeader& h = spec.hdr;
  const size_t payload = header_payload_bytes(h.kind, spec.payload_bytes, spec.missing);
  const size_t pad = spec.mode == WireMode::kRoceV2 ? roce_pad(payload) : 0;
  const size_t udp_len = kUdpHeaderBytes + udp_payload_bytes(spec.mode, payload);
  if (kIpv4HeaderBytes + udp_len > 65535) return 0;
  const size_t ip_end = kUdpOff + udp_len;
  const size_t total = std::max(kMinFrameBytes, ip_end);
  if (out.size() < total) return 0;
  uint8_t* f = out.data();

  // Ethernet II
  std::memcpy(f, spec.dst.mac.data(), 6);
  std::memcpy(f + 6, spec.src.mac.data(), 6);
  put16(f + 12, kEtherTypeIpv4);

  // IPv4: no options, DF, TTL 64
  uint8_t* ip = f + kEthHeaderBytes;
  put8(ip + 0, 0x45);
  put8(ip + 1, tos_byte(spec.dscp, spec.ecn));
  put16(ip + 2, static_cast<uint16_t>(kIpv4HeaderBytes + udp_len));
  put16(ip + 4, spec.ip_id);
  put16(ip + 6, 0x4000);
  put8(ip + 8, 64);
  put8(ip + 9, kIpProtoUdp);
  put16(ip + 10, 0);
  put32(ip + 12, spec.src.ip);
  put32(ip + 16, spec.dst.ip);
  put16(ip + 10, static_cast<uint16_t>(~fold(sum16(ip, kIpv4HeaderBytes))));

  // UDP (checksum last: it covers the ICRC)
  uint8_t* udp = f + kUdpOff;
  put16(udp + 0, spec.src.port);
  put16(udp + 2, spec.mode == WireMode::kRoceV2 ? kRoceV2Port : spec.dst.port);
  put16(udp + 4, static_cast<uint16_t>(udp_len));
  put16(udp + 6, 0);

  uint8_t* l4 = f + kL4Off;
  if (spec.mode == WireMode::kRoceV2) {
    write_bth(l4, spec.bth, pad);
    l4 += kBthBytes;
  }
  write_fabemu_header(h, std::span<uint8_t, kFabemuHeaderBytes>(l4, kFabemuHeaderBytes));
  uint8_t* body = l4 + kFabemuHeaderBytes;
  // The checksum sums only the bytes that may be non-zero: zero padding adds nothing.
  uint64_t sum = pseudo_header_sum(spec.src.ip, spec.dst.ip, static_cast<uint16_t>(udp_len)) + sum16(udp, body - udp);
  if (h.kind == PacketKind::kNack) {
    store_missing(body, spec.missing);
    sum += sum16(body, payload);
  } else {
    std::memset(body, 0, payload);
  }
  std::memset(body + payload, 0, pad);
  if (spec.mode == WireMode::kRoceV2) {
    uint8_t* icrc_at = body + payload + pad;
    // ICRC: the headers through the fabemu header, then payload+pad (zeros unless a NACK list).
    uint32_t s = ~roce_icrc({f, static_cast<size_t>(body - f)});
    s = h.kind == PacketKind::kNack ? crc_raw(s, body, payload + pad) : crc_raw_zeros(s, payload + pad);
    const uint32_t icrc = ~s;
    // Little-endian on the wire, like the Ethernet FCS (Linux rxe, Wireshark's check).
    for (int i = 0; i < 4; ++i) icrc_at[i] = static_cast<uint8_t>(icrc >> (8 * i));
    sum += sum16(icrc_at, kIcrcBytes);  // at an even offset: payload + pad is a multiple of 4
  }
  uint16_t csum = static_cast<uint16_t>(~fold(sum));
  put16(udp + 6, csum == 0 ? 0xFFFF : csum);
  std::memset(f + ip_end, 0, total - ip_end);
  return total;
}

// --- FrameTemplate ---

FrameSpec run_frame(const FrameSpec& first, uint32_t i, uint32_t n, uint32_t last_bytes) noexcept {
  FrameSpec s = first;
  s.hdr.seq = first.hdr.seq + i;
  s.hdr.offset = first.hdr.offset + uint64_t{i} * first.payload_bytes;
  s.ip_id = static_cast<uint16_t>(first.ip_id + i);
  s.payload_bytes = i + 1 == n ? last_bytes : first.payload_bytes;
  set_data_bth(s.bth, s.hdr.seq, s.hdr.count);
  return s;
}

FrameTemplate::FrameTemplate(const FrameSpec& flow) noexcept
    : mode_(flow.mode), src_(flow.src), dst_(flow.dst), tos_(tos_byte(flow.dscp, flow.ecn)) {
  if (mode_ == WireMode::kRoceV2) dst_.port = kRoceV2Port;
  uint8_t* f = image_;
  std::memcpy(f, dst_.mac.data(), 6);
  std::memcpy(f + 6, src_.mac.data(), 6);
  put16(f + 12, kEtherTypeIpv4);
  uint8_t* ip = f + kEthHeaderBytes;
  put8(ip + 0, 0x45);
  put8(ip + 1, tos_);
  put16(ip + 6, 0x4000);
  put8(ip + 8, 64);
  put8(ip + 9, kIpProtoUdp);
  put32(ip + 12, src_.ip);
  put32(ip + 16, dst_.ip);
  ip_sum_ = fold(sum16(ip, kIpv4HeaderBytes));  // folded: congruent, and no carry lost
  uint8_t* udp = f + kUdpOff;
  put16(udp + 0, src_.port);
  put16(udp + 2, dst_.port);
  udp_sum_ = fold(pseudo_header_sum(src_.ip, dst_.ip, 0) + sum16(udp, 4));
  static constexpr uint8_t kMaskedStart[10] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x45, 0xFF};
  icrc_head_ = crc_raw(0xFFFFFFFFu, kMaskedStart, sizeof kMaskedStart);
}

bool FrameTemplate::matches(const FrameSpec& spec) const noexcept {
  if (spec.mode != mode_ || spec.src != src_ || tos_byte(spec.dscp, spec.ecn) != tos_) return false;
  if (!mac_equal(spec.dst.mac, dst_.mac) || spec.dst.ip != dst_.ip) return false;
  return mode_ == WireMode::kRoceV2 || spec.dst.port == dst_.port;
}

namespace {

// Nibble tables of the operator x^(8n): run.nib[i][v] is the product of the operator with the register
// nibble i (x^(4i) .. x^(4i+3)) equal to v, so a register crosses n zero bytes in eight lookups.
constexpr void build_zero_run(detail::ZeroRun& run, uint32_t n) noexcept {
  uint32_t a = mulmodp(kZeroOps.lo[n & 0xFF], kZeroOps.hi[n >> 8]);  // x^(8n)
  uint32_t pow[32] = {};                                             // a * x^k
  for (int k = 0; k < 32; ++k) {
    pow[k] = a;
    a = (a & 1) ? (a >> 1) ^ kPoly : a >> 1;
  }
  for (int i = 0; i < 8; ++i) {
    for (uint32_t v = 0; v < 16; ++v) {
      uint32_t p = 0;
      for (int j = 0; j < 4; ++j) {
        if (v & (8u >> j)) p ^= pow[4 * i + j];
      }
      run.nib[i][v] = p;
    }
  }
  run.bytes = n;
}

uint32_t cross_zeros(const detail::ZeroRun& run, uint32_t s) noexcept {
  uint32_t p = 0;
  for (int i = 0; i < 8; ++i) p ^= run.nib[i][(s >> (28 - 4 * i)) & 0xF];
  return p;
}

// RoCEv2 ICRC pieces: the masked bytes from IPv4 byte 2 to the end of the BTH, and the fabemu header.
constexpr size_t kIcrcPrefix = kIpv4HeaderBytes - 2 + kUdpHeaderBytes + kBthBytes;  // 38
constexpr detail::ZeroRun make_header_run() {
  detail::ZeroRun r;
  build_zero_run(r, kFabemuHeaderBytes);
  return r;
}
constexpr detail::ZeroRun kHeaderRun = make_header_run();  // a register across 60 bytes

// --- the engines of the per-frame CRC parts ---

// The packet's fields of the RoCEv2 ICRC prefix (masked IPv4 from byte 2, UDP, BTH), as written.
struct IcrcFields {
  uint16_t ip_len, ip_id, udp_len;
  uint16_t bth_head;  // BTH bytes 0-1: opcode, SE/M/pad/TVer
  uint32_t bth_psn;   // BTH bytes 8-11: A, PSN
};

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
constexpr uint64_t kMu33 = reflect(x64_div_p(), 33);
constexpr uint64_t kP33 = uint64_t{kPoly} << 1 | 1;  // P reflected over 33 bits
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
alignas(16) constexpr uint64_t kHeaderK[4] = {field_k(kCrcAt - kIdAt - 8), field_k(kCrcAt - kSeqAt - 4),
                                              field_k(kCrcAt - kOffsetAt - 8), field_k(kCrcAt - kTimeAt - 8)};
// The fields fixed within a run of one message's frames (low id, low time); the moving pair (seq, low
// offset) is kHeaderK[1..2].
alignas(16) constexpr uint64_t kFixedK[2] = {kHeaderK[0], kHeaderK[3]};
// A whole fabemu header's CRC'd block (the receive side's check): the register a 0xFFFFFFFF start leaves
// after 56 zero bytes (the CRC is linear: the block's register from that start is this XOR the register
// its bytes leave from a zero one).
constexpr uint32_t kInitAcrossBlock = mulmodp(kZeroOps.lo[kCrcAt], 0xFFFFFFFFu);

// The RoCEv2 ICRC at the end of the fabemu header, as multipliers of (IPv4 length|id, UDP length, BTH bytes
// 0-1, BTH A|PSN), each a 4-byte field (the 2-byte ones followed by two masked bytes that are 0 there),
// then of the register at the header's CRC field (cached key, packet fields, the CRC: 4 bytes before the
// end). A run of n zero bytes after the header multiplies each by x^(8n) (detail::ClmulRun).
constexpr size_t kPrefixTail = kIcrcPrefix - 4 + kFabemuHeaderBytes;  // bytes after a field at prefix 0
alignas(16) constexpr uint64_t kIcrcK[6] = {field_k(kPrefixTail - 0), field_k(kPrefixTail - 22),
                                            field_k(kPrefixTail - 26), field_k(kPrefixTail - 34),
                                            field_k(0), 0};

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

// A run's CRCs several frames at a time (run_crc_batch()): wire_crc_lanes.inc once per vector width, lane
// j of a vector frame j's pair of fields (the same products as clmul_pair and barrett, lane by lane). Only
// in functions of the width's instruction set, called when run_crc_batch() is that width.

// Four frames a vector: 512-bit VPCLMULQDQ (AVX-512 F/BW/VL).
namespace lanes4 {
#define FABEMU_LANES_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.1,ssse3")))
struct Lanes {
  using V = __m512i;
  static constexpr uint32_t kLanes = 4;
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V bcast(__m128i x) noexcept {
    return _mm512_maskz_broadcast_i32x4(0xFFFF, x);
  }
  template <class F>
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V per_lane(F f) noexcept {
    V v = _mm512_zextsi128_si512(f(0));
    v = _mm512_inserti32x4(v, f(1), 1);
    v = _mm512_inserti32x4(v, f(2), 2);
    return _mm512_inserti32x4(v, f(3), 3);
  }
  template <int kImm>
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V clmul(V a, V k) noexcept {
    return _mm512_clmulepi64_epi128(a, k, kImm);
  }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V xor_(V a, V b) noexcept { return _mm512_xor_si512(a, b); }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V and_(V a, V b) noexcept { return _mm512_and_si512(a, b); }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V or_(V a, V b) noexcept { return _mm512_or_si512(a, b); }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V add32(V a, V b) noexcept { return _mm512_add_epi32(a, b); }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V shuffle8(V a, V s) noexcept { return _mm512_shuffle_epi8(a, s); }
  // The masked forms here and in bcast: GCC 12's unmasked ones warn of their undefined sources.
  [[gnu::always_inline]] FABEMU_LANES_TARGET static __m128i dword1s(V x) noexcept {
    const V idx = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 13, 9, 5, 1);
    return _mm512_maskz_extracti32x4_epi32(0xF, _mm512_maskz_permutexvar_epi32(0xF, idx, x), 0);
  }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V to_dword2(__m128i x) noexcept {
    const V idx = _mm512_set_epi32(0, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0);
    return _mm512_maskz_permutexvar_epi32(0x4444, idx, _mm512_zextsi128_si512(x));
  }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static void store(uint32_t* p, __m128i x) noexcept {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), x);
  }
};
#include "host/wire/wire_crc_lanes.inc"
#undef FABEMU_LANES_TARGET
}  // namespace lanes4

// Two frames a vector: 256-bit VPCLMULQDQ (AVX2; Zen 3, Ice Lake and later, without AVX-512 on some).
namespace lanes2 {
#define FABEMU_LANES_TARGET __attribute__((target("avx2,vpclmulqdq,pclmul,sse4.1,ssse3")))
struct Lanes {
  using V = __m256i;
  static constexpr uint32_t kLanes = 2;
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V bcast(__m128i x) noexcept { return _mm256_broadcastsi128_si256(x); }
  template <class F>
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V per_lane(F f) noexcept {
    return _mm256_set_m128i(f(1), f(0));
  }
  template <int kImm>
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V clmul(V a, V k) noexcept {
    return _mm256_clmulepi64_epi128(a, k, kImm);
  }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V xor_(V a, V b) noexcept { return _mm256_xor_si256(a, b); }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V and_(V a, V b) noexcept { return _mm256_and_si256(a, b); }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V or_(V a, V b) noexcept { return _mm256_or_si256(a, b); }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V add32(V a, V b) noexcept { return _mm256_add_epi32(a, b); }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V shuffle8(V a, V s) noexcept { return _mm256_shuffle_epi8(a, s); }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static __m128i dword1s(V x) noexcept {
    return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(x, _mm256_set_epi32(0, 0, 0, 0, 0, 0, 5, 1)));
  }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static V to_dword2(__m128i x) noexcept {
    const V idx = _mm256_set_epi32(0, 1, 0, 0, 0, 0, 0, 0);
    return _mm256_blend_epi32(_mm256_setzero_si256(), _mm256_permutevar8x32_epi32(_mm256_zextsi128_si256(x), idx), 0x44);
  }
  [[gnu::always_inline]] FABEMU_LANES_TARGET static void store(uint32_t* p, __m128i x) noexcept {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), x);
  }
};
#include "host/wire/wire_crc_lanes.inc"
#undef FABEMU_LANES_TARGET
}  // namespace lanes2
#endif

}  // namespace

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

unsigned run_crc_batch_widest() noexcept {
#if defined(FABEMU_HAVE_CLMUL)
  static const unsigned widest = [] {
    __builtin_cpu_init();
    if (best_crc_engine() != CrcEngine::kClmul || !__builtin_cpu_supports("vpclmulqdq")) return 0u;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
      return 4u;
    }
    return __builtin_cpu_supports("avx2") ? 2u : 0u;
  }();
  return widest;
#else
  return 0;
#endif
}

bool run_crc_batch_runs(unsigned lanes) noexcept {
  return lanes == 0 || ((lanes == 2 || lanes == 4) && lanes <= run_crc_batch_widest());
}

namespace {
std::atomic<unsigned> g_run_crc_batch{run_crc_batch_widest()};
}  // namespace

unsigned run_crc_batch() noexcept { return g_run_crc_batch.load(std::memory_order_relaxed); }

unsigned set_run_crc_batch(unsigned lanes) noexcept {
  if (run_crc_batch_runs(lanes)) g_run_crc_batch.store(lanes, std::memory_order_relaxed);
  return run_crc_batch();
}

namespace {
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
}  // namespace

namespace {
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

// roce_icrc of a frame whose bytes after the fabemu header, up to the ICRC, are `zeros` zero bytes: the
// masked start and the fabemu header in one buffer (with the clmul engine 128 bytes, all folded; else 108
// by tables), then the zeros by one product. The same value, without reading the payload again.
uint32_t roce_icrc_zero_body(const uint8_t* f, size_t zeros, CrcEngine engine) noexcept {
  constexpr size_t kLrh = 8, kHead = kLrh + kIcrcMaskedBytes + kFabemuHeaderBytes;
#if defined(FABEMU_HAVE_CLMUL)
  if (engine == CrcEngine::kClmul && best_crc_engine() == CrcEngine::kClmul) {
    // Folded whole, no byte left to the tables: the register after the masked LRH (a constant) XORed into
    // the next four bytes starts a CRC from zero over the other 100, and zero bytes put before them keep
    // that register zero, so 28 of them make two 64-byte blocks (four lanes folded once, then merged:
    // a shorter chain of products than seven 16-byte blocks one after another).
    static const uint32_t kAfterLrh = [] {
      const uint8_t lrh[kLrh] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
      return crc_raw(0xFFFFFFFFu, lrh, kLrh);
    }();
    constexpr size_t kBody = kIcrcMaskedBytes + kFabemuHeaderBytes, kPad = (64 - kBody % 64) % 64;
    static_assert((kPad + kBody) % 64 == 0 && kPad + kBody >= 64);
    alignas(16) uint8_t b[kPad + kBody];
    std::memset(b, 0, kPad);
    icrc_mask(f, b + kPad);
    std::memcpy(b + kPad + kIcrcMaskedBytes, f + kL4Off + kBthBytes, kFabemuHeaderBytes);
    for (size_t i = 0; i < 4; ++i) b[kPad + i] ^= static_cast<uint8_t>(kAfterLrh >> (8 * i));
    return ~crc_zeros(crc_fold(0, b, sizeof b), zeros, engine);
  }
#endif
  uint8_t buf[kHead];
  std::memset(buf, 0xFF, kLrh);
  icrc_mask(f, buf + kLrh);
  std::memcpy(buf + kLrh + kIcrcMaskedBytes, f + kL4Off + kBthBytes, kFabemuHeaderBytes);
  return ~crc_zeros(crc_bulk(0xFFFFFFFFu, buf, kHead, engine), zeros, engine);
}
}  // namespace

uint32_t fabemu_header_crc(const uint8_t* header, CrcEngine engine) noexcept {
#if defined(FABEMU_HAVE_CLMUL)
  if (engine == CrcEngine::kClmul && best_crc_engine() == CrcEngine::kClmul) return header_crc_clmul(header);
#else
  static_cast<void>(engine);
#endif
  return ~crc_raw(0xFFFFFFFFu, header, kCrcAt);
}

bool FrameTemplate::set_crc_engine(CrcEngine e) noexcept {
  if (e == CrcEngine::kClmul && best_crc_engine() != CrcEngine::kClmul) return false;
  engine_ = e;
  return true;
}

namespace detail {

struct Encoder {
  // The portable engine: one slice-table lookup per byte of the packet's fields.
  struct Table {
    static constexpr bool kBatch = false;  // run_crc_batch() is Clmul's
    // The raw register (from zero) of the fabemu header's 56 CRC'd bytes with only the packet's fields.
    // In two parts, for a run of one message's frames: the fields fixed within the run (low halves of id
    // and time) and those that move (seq, low offset). header(h) == fixed ^ moving.
    static uint32_t fixed(uint32_t id_lo, uint32_t time_lo) noexcept {
      return crc_field<kCrcAt, kIdAt + 4, 4>(id_lo) ^ crc_field<kCrcAt, kTimeAt + 4, 4>(time_lo);
    }
    static uint32_t moving(uint32_t seq, uint32_t offset_lo) noexcept {
      return crc_field<kCrcAt, kSeqAt, 4>(seq) ^ crc_field<kCrcAt, kOffsetAt + 4, 4>(offset_lo);
    }
    static uint32_t header(const FabemuHeader& h) noexcept {
      return fixed(lo32(h.message_id), lo32(h.tx_time_ps)) ^ moving(h.seq, lo32(h.offset));
    }
    // The ICRC register after payload and pad (`tail` bytes at `body`, zeros unless `nack`), not inverted.
    // Linear in the bytes: the cached parts, the packet's fields by table, the register across the
    // header by kHeaderRun.
    static uint32_t icrc(FrameTemplate& t, const IcrcFields& p, uint32_t fields, uint32_t crc,
                         const FabemuHeader& h, const uint8_t* body, size_t tail, bool nack) noexcept {
      static_cast<void>(fields);  // Clmul's shortcut; here the header's bytes are looked up again
      uint32_t s = t.key_prefix_icrc_ ^ crc_field<kIcrcPrefix, 0, 2>(p.ip_len) ^
                   crc_field<kIcrcPrefix, 2, 2>(p.ip_id) ^ crc_field<kIcrcPrefix, 22, 2>(p.udp_len) ^
                   crc_field<kIcrcPrefix, 26, 2>(p.bth_head) ^ crc_field<kIcrcPrefix, 34, 4>(p.bth_psn);
      s = cross_zeros(kHeaderRun, s) ^ t.key_header_icrc_ ^
          crc_field<kFabemuHeaderBytes, kIdAt + 4, 4>(lo32(h.message_id)) ^
          crc_field<kFabemuHeaderBytes, kSeqAt, 4>(h.seq) ^
          crc_field<kFabemuHeaderBytes, kOffsetAt + 4, 4>(lo32(h.offset)) ^
          crc_field<kFabemuHeaderBytes, kTimeAt + 4, 4>(lo32(h.tx_time_ps)) ^
          crc_field<kFabemuHeaderBytes, kCrcAt, 4>(crc);
      if (nack) return crc_raw(s, body, tail);
      if (tail == 0) return s;
      if (t.zeros_.bytes != tail) build_zero_run(t.zeros_, static_cast<uint32_t>(tail));
      return cross_zeros(t.zeros_, s);
    }
    // The ICRCs of a run's data frames (IPv4 and UDP lengths and the zero tail fixed): icrc() per frame.
    class IcrcRun {
     public:
      IcrcRun(FrameTemplate& t, uint16_t ip_len, uint16_t udp_len, size_t tail) noexcept
          : t_(t), tail_(tail), ip_len_(ip_len), udp_len_(udp_len) {}
      uint32_t frame(uint16_t ip_id, uint16_t bth_head, uint32_t bth_psn, uint32_t fields, uint32_t crc,
                     const FabemuHeader& h) const noexcept {
        return icrc(t_, IcrcFields{ip_len_, ip_id, udp_len_, bth_head, bth_psn}, fields, crc, h, nullptr, tail_, false);
      }

     private:
      FrameTemplate& t_;
      size_t tail_;
      uint16_t ip_len_, udp_len_;
    };
  };

#if defined(FABEMU_HAVE_CLMUL)
  // PCLMULQDQ: one product per 4-byte field against a constant, the products XORed, one reduction.
  struct Clmul {
    static constexpr bool kBatch = true;
    // moving() of a run's frames i = 0 .. n-1 (seq + i, offset_lo + i * stride) into moving[i], `lanes`
    // (run_crc_batch(): 2 or 4) at a time: `moving` has room for n rounded up to a multiple of 4.
    [[gnu::noinline]] static void moving_batch(unsigned lanes, uint32_t seq, uint32_t offset_lo, uint32_t stride,
                                               uint32_t n, uint32_t* moving) noexcept {
      if (lanes == 4) {
        lanes4::moving_batch(seq, offset_lo, stride, n, moving);
      } else {
        lanes2::moving_batch(seq, offset_lo, stride, n, moving);
      }
    }
    FABEMU_CLMUL_TARGET static uint32_t header(const FabemuHeader& h) noexcept {
      // Big-endian fields read as the register reads bytes: byte-swapped.
      const __m128i id_seq = clmul_pair(__builtin_bswap32(lo32(h.message_id)), __builtin_bswap32(h.seq), kHeaderK);
      const __m128i offset_time =
          clmul_pair(__builtin_bswap32(lo32(h.offset)), __builtin_bswap32(lo32(h.tx_time_ps)), kHeaderK + 2);
      return barrett(_mm_xor_si128(id_seq, offset_time));
    }
    // As Table's (the reduction is linear: header(h) == fixed ^ moving). One pair of products each.
    FABEMU_CLMUL_TARGET static uint32_t fixed(uint32_t id_lo, uint32_t time_lo) noexcept {
      return barrett(clmul_pair(__builtin_bswap32(id_lo), __builtin_bswap32(time_lo), kFixedK));
    }
    FABEMU_CLMUL_TARGET static uint32_t moving(uint32_t seq, uint32_t offset_lo) noexcept {
      return barrett(clmul_pair(__builtin_bswap32(seq), __builtin_bswap32(offset_lo), kHeaderK + 1));
    }
    // As Table::icrc. The register at the header's CRC field is the cached key part, `fields` (the header
    // register's packet part: the same bytes) and the CRC's own bytes; the CRC'd bytes after it (4, and
    // the zero run) are in the multipliers, so the whole ICRC is five products and one reduction.
    FABEMU_CLMUL_TARGET static uint32_t icrc(FrameTemplate& t, const IcrcFields& p, uint32_t fields, uint32_t crc,
                                             const FabemuHeader& h, const uint8_t* body, size_t tail,
                                             bool nack) noexcept {
      static_cast<void>(h);  // its fields are in `fields`
      const uint64_t* k = kIcrcK;
      if (!nack && tail != 0) {
        if (t.run_.bytes != tail) build_run(t.run_, static_cast<uint32_t>(tail));
        k = t.run_.k;
      }
      const uint32_t at_crc = t.key_icrc_at_crc_ ^ fields ^ __builtin_bswap32(crc);
      const __m128i r = _mm_xor_si128(
          _mm_xor_si128(clmul_pair(__builtin_bswap32(uint32_t{p.ip_len} << 16 | p.ip_id),
                                   __builtin_bswap32(uint32_t{p.udp_len} << 16), k),
                        clmul_pair(__builtin_bswap32(uint32_t{p.bth_head} << 16), __builtin_bswap32(p.bth_psn), k + 2)),
          _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(at_crc)),
                               _mm_loadu_si128(reinterpret_cast<const __m128i*>(k + 4)), 0x00));
      const uint32_t s = barrett(r);
      return nack ? crc_raw(s, body, tail) : s;
    }
    // icrc() of a run's data frames, whose IPv4 and UDP lengths and zero tail are the same: the
    // multipliers chosen and the lengths' products taken once, then four products and one reduction a
    // frame (the IPv4 id and the register at the CRC field paired, the BTH's two words paired). The same
    // values as icrc(): the lengths' word is XORed out of the (length | id) word, and products are
    // linear in it.
    class IcrcRun {
     public:
      FABEMU_CLMUL_TARGET IcrcRun(FrameTemplate& t, uint16_t ip_len, uint16_t udp_len, size_t tail) noexcept {
        const uint64_t* k = kIcrcK;
        if (tail != 0) {
          if (t.run_.bytes != tail) build_run(t.run_, static_cast<uint32_t>(tail));
          k = t.run_.k;
        }
        lens_ = clmul_pair(__builtin_bswap32(uint32_t{ip_len} << 16), __builtin_bswap32(uint32_t{udp_len} << 16), k);
        id_crc_k_[0] = k[0];
        id_crc_k_[1] = k[4];
        bth_k_[0] = k[2];
        bth_k_[1] = k[3];
        key_ = t.key_icrc_at_crc_;
      }
      // moving_batch() into moving[i], and the ICRCs' registers (frame()'s, before the inversion) into
      // icrc[i] of frames i = 0 .. n-1 as Middle packets (BTH word 0 `w0_middle`, A clear, PSN = seq mod
      // 2^24), IPv4 ids ip_id + i (mod 2^16); the header CRC part crc_base (key_crc ^ fixed) and key_crc as
      // full_frames has them. A message's first and last packets are not Middle ones: their icrc[i] is
      // not theirs. `lanes` (2 or 4) at a time: both arrays have room for n rounded up to a multiple of 4.
      [[gnu::noinline]] void batch(unsigned lanes, uint32_t seq, uint32_t offset_lo, uint32_t stride, uint16_t ip_id,
                                   uint32_t n, uint32_t crc_base, uint32_t key_crc, uint32_t w0_middle,
                                   uint32_t* moving, uint32_t* icrc) const noexcept {
        if (lanes == 4) {
          lanes4::icrc_batch(id_crc_k_, bth_k_, lens_, key_, seq, offset_lo, stride, ip_id, n, crc_base, key_crc,
                             w0_middle, moving, icrc);
        } else {
          lanes2::icrc_batch(id_crc_k_, bth_k_, lens_, key_, seq, offset_lo, stride, ip_id, n, crc_base, key_crc,
                             w0_middle, moving, icrc);
        }
      }
      FABEMU_CLMUL_TARGET uint32_t frame(uint16_t ip_id, uint16_t bth_head, uint32_t bth_psn, uint32_t fields,
                                         uint32_t crc, const FabemuHeader& h) const noexcept {
        static_cast<void>(h);  // its fields are in `fields`
        const uint32_t at_crc = key_ ^ fields ^ __builtin_bswap32(crc);
        return barrett(_mm_xor_si128(
            lens_, _mm_xor_si128(clmul_pair(__builtin_bswap32(uint32_t{ip_id}), at_crc, id_crc_k_),
                                 clmul_pair(__builtin_bswap32(uint32_t{bth_head} << 16), __builtin_bswap32(bth_psn),
                                            bth_k_))));
      }

     private:
      __m128i lens_;
      alignas(16) uint64_t id_crc_k_[2];
      alignas(16) uint64_t bth_k_[2];
      uint32_t key_;
    };
    // kIcrcK times x^(8n), for a run of n zero bytes: when the payload length changes.
    [[gnu::noinline]] FABEMU_CLMUL_TARGET static void build_run(ClmulRun& run, uint32_t n) noexcept {
      const uint32_t x8n = clmul_mulmod(kZeroOps.lo[n & 0xFF], kZeroOps.hi[n >> 8]);
      for (int i = 0; i < 5; ++i) run.k[i] = clmul_mulmod(static_cast<uint32_t>(kIcrcK[i]), x8n);
      run.k[5] = 0;
      run.bytes = n;
    }
  };
#endif

  // Caches what the frames of messages with `key` share (image, header CRC, UDP sum, RoCEv2 ICRC parts).
  [[gnu::noinline]] static void set_key(FrameTemplate& t, const FrameTemplate::MessageKey& key,
                                        const FabemuHeader& h) noexcept;
  // The cache for the message of `h` whose key fields are the values given (encode() reads them each
  // with a load of its own, alone()): set_key when any differs from t's key.
  [[gnu::always_inline]] static inline void use_key(FrameTemplate& t, const FabemuHeader& h, PacketKind kind,
                                                    uint16_t flags, uint32_t src_rank, uint32_t dst_rank,
                                                    uint32_t count, uint64_t length, uint16_t pkey,
                                                    uint32_t qp) noexcept {
    const FrameTemplate::MessageKey& k = t.key_;
    if (!t.key_valid_ || kind != k.kind || flags != k.flags || src_rank != k.src_rank || dst_rank != k.dst_rank ||
        count != k.count || length != k.message_length || hi32(h.message_id) != k.id_hi ||
        hi32(h.offset) != k.offset_hi || hi32(h.tx_time_ps) != k.time_hi || pkey != k.pkey || qp != k.dest_qp)
        [[unlikely]] {
      set_key(t,
              FrameTemplate::MessageKey{kind, flags, src_rank, dst_rank, count, length, hi32(h.message_id),
                                        hi32(h.offset), hi32(h.tx_time_ps), pkey, qp},
              h);
    }
  }
  struct Packet;
  // kRoce: the template's mode when the caller knows it (1 RoCEv2, 0 fabemu), -1 to read it.
  template <class Crc, int kRoce = -1>
  [[gnu::always_inline]] static inline size_t write(FrameTemplate& t, const Packet& p, PacketKind kind,
                                                    std::span<const uint32_t> missing, bool payload_zero,
                                                    uint8_t* f) noexcept;
  template <class Crc>
  [[gnu::always_inline]] static inline size_t encode(FrameTemplate& t, const FrameSpec& spec,
                                                     std::span<uint8_t> out) noexcept;
  // Frame i of the run from `first` (its seq, offset and IPv4 id moved on by i), of `bytes` payload,
  // written as encode() writes a frame: a run's shorter last frame, or the frame of a run of one.
  template <class Crc, int kRoce>
  [[gnu::always_inline]] static inline size_t run_frame_at(FrameTemplate& t, const FrameSpec& first, uint32_t i,
                                                           uint32_t bytes, bool payload_zero, uint8_t* f) noexcept;
  // Whether a run of data frames of first.payload_bytes each (the last one last_bytes) fits `room` and an
  // IPv4 datagram: what run() and one() refuse alike. The longest frame is a full one.
  [[gnu::always_inline]] static inline bool run_fits(WireMode mode, const FrameSpec& first, uint32_t last_bytes,
                                                     size_t room) noexcept {
    if (first.hdr.kind != PacketKind::kData || last_bytes > first.payload_bytes) return false;
    const size_t udp_len = kUdpHeaderBytes + udp_payload_bytes(mode, first.payload_bytes);
    return kIpv4HeaderBytes + udp_len <= 65535 && room >= std::max(kMinFrameBytes, kUdpOff + udp_len);
  }
  // run() of a run of one frame (one-packet messages, retransmissions), the template's mode known
  // (kRoce): written as encode() writes a frame (a run image would be one more copy of the frame head),
  // without the CRC batch and with only the branches of that mode.
  template <class Crc, bool kRoce>
  [[gnu::always_inline]] static inline bool one(FrameTemplate& t, const FrameSpec& first, uint32_t last_bytes,
                                                uint8_t* const* frames, size_t room, uint16_t* lens,
                                                bool payload_zero) noexcept;
  template <class Crc>
  [[gnu::always_inline]] static inline bool run(FrameTemplate& t, const FrameSpec& first, uint32_t n,
                                                uint32_t last_bytes, uint8_t* const* frames, size_t room,
                                                uint16_t* lens, bool payload_zero) noexcept;
  // What the full frames of a run share (run() computes it once): the run's frame-head image, the frames
  // and their lengths, the first frame's fields, the lengths, and the fixed parts of the checks.
  struct FullFrames {
    const uint8_t* img;
    uint8_t* const* frames;
    uint16_t* lens;
    uint32_t seq;
    uint64_t offset;
    uint16_t ip_id;
    uint32_t stride;
    size_t pad, udp_len;
    uint16_t ip_len;
    size_t tail_zeros;  // bytes after the IP datagram up to the minimum frame
    uint64_t ip_base;
    uint32_t crc_base;
    uint64_t sum_base;
    uint32_t count;
    uint64_t message_id, tx_time_ps;
    unsigned lanes;  // run_crc_batch() when full_frames batches (kBatch)
  };
  // kBatch: the CRCs of the frames from Crc's batch functions first (run_crc_batch(); lanes <= full <= kBatchMax).
  static constexpr uint32_t kBatchMax = 64;
  template <class Crc, bool kRoce, bool kZero, bool kBatch>
  [[gnu::always_inline]] static inline void full_frames(FrameTemplate& t, const FullFrames& r, Bth& b,
                                                        uint32_t full) noexcept;
  // full_frames of the mode and payload kind given (a function, not a lambda: inlined, it takes on the
  // caller's instruction set, as full_frames does).
  template <class Crc, bool kBatch>
  [[gnu::always_inline]] static inline void full_frames_of(FrameTemplate& t, const FullFrames& r, Bth& b,
                                                           uint32_t full, bool roce, bool zero) noexcept {
    if (roce && zero) {
      full_frames<Crc, true, true, kBatch>(t, r, b, full);
    } else if (roce) {
      full_frames<Crc, true, false, kBatch>(t, r, b, full);
    } else if (zero) {
      full_frames<Crc, false, true, kBatch>(t, r, b, full);
    } else {
      full_frames<Crc, false, false, kBatch>(t, r, b, full);
    }
  }
  static size_t table(FrameTemplate& t, const FrameSpec& spec, std::span<uint8_t> out) noexcept {
    return encode<Table>(t, spec, out);
  }
#if defined(FABEMU_HAVE_CLMUL)
  // Its own function with the instruction set enabled: Clmul's members inline only into such a caller.
  FABEMU_CLMUL_TARGET static size_t clmul(FrameTemplate& t, const FrameSpec& spec, std::span<uint8_t> out) noexcept {
    return encode<Clmul>(t, spec, out);
  }
  FABEMU_CLMUL_TARGET static bool clmul_run(FrameTemplate& t, const FrameSpec& first, uint32_t n, uint32_t last_bytes,
                                            uint8_t* const* frames, size_t room, uint16_t* lens,
                                            bool payload_zero) noexcept {
    return run<Clmul>(t, first, n, last_bytes, frames, room, lens, payload_zero);
  }
  // A run of one frame (one-packet messages, retransmissions): run() with n = 1, in a function of its own
  // without the run image and the CRC batch (their stack frame and its set-up cost about as much as the
  // frame's own work).
  FABEMU_CLMUL_TARGET static bool clmul_run_one(FrameTemplate& t, const FrameSpec& first, uint32_t last_bytes,
                                                uint8_t* const* frames, size_t room, uint16_t* lens,
                                                bool payload_zero) noexcept {
    if (t.mode_ == WireMode::kRoceV2) return one<Clmul, true>(t, first, last_bytes, frames, room, lens, payload_zero);
    return one<Clmul, false>(t, first, last_bytes, frames, room, lens, payload_zero);
  }
#endif
  static bool table_run(FrameTemplate& t, const FrameSpec& first, uint32_t n, uint32_t last_bytes,
                        uint8_t* const* frames, size_t room, uint16_t* lens, bool payload_zero) noexcept {
    return run<Table>(t, first, n, last_bytes, frames, room, lens, payload_zero);
  }
  static bool table_run_one(FrameTemplate& t, const FrameSpec& first, uint32_t last_bytes, uint8_t* const* frames,
                            size_t room, uint16_t* lens, bool payload_zero) noexcept {
    if (t.mode_ == WireMode::kRoceV2) return one<Table, true>(t, first, last_bytes, frames, room, lens, payload_zero);
    return one<Table, false>(t, first, last_bytes, frames, room, lens, payload_zero);
  }
};

void Encoder::set_key(FrameTemplate& t, const FrameTemplate::MessageKey& key, const FabemuHeader& h) noexcept {
  const bool roce = t.mode_ == WireMode::kRoceV2;
  uint8_t* bth = t.image_ + kL4Off;
  uint8_t* hdr = roce ? bth + kBthBytes : bth;
  uint64_t sum = t.udp_sum_;
  if (roce) {
    std::memset(bth, 0, kBthBytes);  // words 0 and 2 are the packet's
    store_be32(bth + 4, key.dest_qp);
    sum += key.dest_qp;
  }
  // The header with the packet's fields zero: low halves of id, offset and time, seq, and the CRC.
  const uint32_t w_kind = store_header_fields(hdr, h);
  std::memset(hdr + kIdAt + 4, 0, 8);
  std::memset(hdr + kOffsetAt + 4, 0, 4);
  std::memset(hdr + kTimeAt + 4, 0, 4);
  std::memset(hdr + kCrcAt, 0, 4);
  sum += uint64_t{kFabemuMagic} + w_kind + key.src_rank + key.dst_rank + key.id_hi + key.count +
         hi32(key.message_length) + lo32(key.message_length) + key.offset_hi + key.time_hi;
  t.key_sum_ = sum;
  t.key_crc_ = crc_raw(0xFFFFFFFFu, hdr, kCrcAt);
  if (roce) {
    t.key_header_icrc_ = crc_raw(0, hdr, kFabemuHeaderBytes);
    // IPv4 from byte 2, UDP, BTH: masked as the ICRC masks them, the packet's fields zero.
    uint8_t prefix[kIcrcPrefix];
    std::memcpy(prefix, t.image_ + kEthHeaderBytes + 2, kIcrcPrefix);
    std::memset(prefix, 0, 4);                                       // total length, id
    prefix[8 - 2] = 0xFF;                                            // TTL
    prefix[10 - 2] = prefix[11 - 2] = 0xFF;                          // IP header checksum
    prefix[18 + 4] = prefix[18 + 5] = 0;                             // UDP length
    prefix[18 + 6] = prefix[18 + 7] = 0xFF;                          // UDP checksum
    prefix[26] = prefix[27] = 0;                                     // BTH opcode, SE/M/pad/TVer
    prefix[26 + 2] = static_cast<uint8_t>(key.pkey >> 8);            // P_Key: the message's
    prefix[26 + 3] = static_cast<uint8_t>(key.pkey);
    prefix[26 + 4] = 0xFF;                                           // BTH reserved byte
    std::memset(prefix + 26 + 8, 0, 4);                              // BTH A, PSN
    t.key_prefix_icrc_ = crc_raw(t.icrc_head_, prefix, kIcrcPrefix);
    t.key_icrc_at_crc_ = crc_raw_zeros(t.key_prefix_icrc_, kCrcAt) ^ crc_raw(0, hdr, kCrcAt);
  }
  t.key_ = key;
  t.key_valid_ = true;
}

// The packet's part of one frame (what encode() and run() share): every packet field of a frame of
// t.key_'s message. `missing` is a NACK's list (empty otherwise); payload_zero: the payload and pad
// bytes are already zero (not written).
struct Encoder::Packet {
  uint64_t message_id = 0, offset = 0, tx_time_ps = 0;
  uint32_t seq = 0;
  uint16_t ip_id = 0;
  uint32_t payload = 0;  // bytes after the fabemu header (a NACK's list, or the data's zeros)
  uint32_t w0 = 0, w2 = 0;  // RoCEv2: BTH words 0 and 2
};

template <class Crc, int kRoce>
[[gnu::always_inline]] inline size_t Encoder::write(FrameTemplate& t, const Packet& p, PacketKind kind,
                                                    std::span<const uint32_t> missing, bool payload_zero,
                                                    uint8_t* f) noexcept {
  const bool roce = kRoce < 0 ? t.mode_ == WireMode::kRoceV2 : kRoce == 1;
  const size_t payload = p.payload;
  const size_t pad = roce ? roce_pad(payload) : 0;
  const size_t udp_len = kUdpHeaderBytes + udp_payload_bytes(roce ? WireMode::kRoceV2 : WireMode::kFabemu, payload);
  const size_t ip_end = kUdpOff + udp_len;
  const size_t total = std::max(kMinFrameBytes, ip_end);
  // Everything up to the end of the fabemu header from the image (a constant-size copy per mode), then
  // the packet's fields: lengths, IP id and the IPv4 checksum (RFC 1624), BTH, the header's fields.
  uint8_t* l4 = f + kL4Off;
  if (roce) {
    std::memcpy(f, t.image_, kL4Off + kBthBytes + kFabemuHeaderBytes);
    store_be32(l4, p.w0);
    store_be32(l4 + 8, p.w2);
    l4 += kBthBytes;
  } else {
    std::memcpy(f, t.image_, kL4Off + kFabemuHeaderBytes);
  }
  uint8_t* ip = f + kEthHeaderBytes;
  const auto ip_len = static_cast<uint16_t>(kIpv4HeaderBytes + udp_len);
  store_be16(ip + 2, ip_len);
  store_be16(ip + 4, p.ip_id);
  store_be16(ip + 10, static_cast<uint16_t>(~fold(uint64_t{t.ip_sum_} + ip_len + p.ip_id)));
  uint8_t* udp = f + kUdpOff;
  store_be16(udp + 4, static_cast<uint16_t>(udp_len));
  store_be32(l4 + kIdAt + 4, lo32(p.message_id));
  store_be32(l4 + kSeqAt, p.seq);
  store_be32(l4 + kOffsetAt + 4, lo32(p.offset));
  store_be32(l4 + kTimeAt + 4, lo32(p.tx_time_ps));
  // The header CRC: the message's part from the cache, the packet's fields by the engine.
  FabemuHeader h;
  h.message_id = p.message_id;
  h.seq = p.seq;
  h.offset = p.offset;
  h.tx_time_ps = p.tx_time_ps;
  const uint32_t fields = Crc::header(h);
  const uint32_t crc = ~(t.key_crc_ ^ fields);
  store_be32(l4 + kCrcAt, crc);
  // The UDP checksum from the fields' values (big-endian 32-bit words sum like their 16-bit halves): the
  // message's words cached, the UDP length twice (header and pseudo-header), the packet's words.
  uint64_t sum = t.key_sum_ + 2 * udp_len + p.w0 + p.w2 + lo32(p.message_id) + p.seq + lo32(p.offset) +
                 lo32(p.tx_time_ps) + crc;

  uint8_t* body = l4 + kFabemuHeaderBytes;
  const bool nack = kind == PacketKind::kNack;
  if (nack) {
    // store_missing() spelled out, as above: the same instructions as before the header was shared.
    for (size_t i = 0; i < missing.size(); ++i) store_be32(body + 4 * i, missing[i]);
    sum += sum16(body, payload);
  } else if (payload != 0 && !payload_zero) {
    std::memset(body, 0, payload);
  }
  if (pad != 0 && (nack || !payload_zero)) std::memset(body + payload, 0, pad);
  if (roce) {
    // ICRC: masked IPv4 (from byte 2), UDP and BTH, the fabemu header, then payload and pad.
    const IcrcFields ic{ip_len, p.ip_id, static_cast<uint16_t>(udp_len), static_cast<uint16_t>(p.w0 >> 16), p.w2};
    const uint32_t s = Crc::icrc(t, ic, fields, crc, h, body, payload + pad, nack);
    const uint32_t icrc = ~s;
    uint8_t* icrc_at = body + payload + pad;
    const uint32_t le = std::endian::native == std::endian::little ? icrc : __builtin_bswap32(icrc);
    std::memcpy(icrc_at, &le, 4);    // little-endian on the wire
    sum += __builtin_bswap32(icrc);  // those bytes read as a big-endian word
  }
  const auto csum = static_cast<uint16_t>(~fold(sum));
  store_be16(udp + 6, csum == 0 ? 0xFFFF : csum);
  if (total > ip_end) std::memset(f + ip_end, 0, total - ip_end);
  return total;
}

// The BTH words 0 and 2 of a packet (RoCEv2): opcode, SE/M/pad/TVer and P_Key; A and PSN.
inline void bth_words(const Bth& b, size_t pad, uint32_t& w0, uint32_t& w2) noexcept {
  w0 = uint32_t{b.opcode} << 24 |
       uint32_t{static_cast<uint8_t>((b.solicited ? 0x80 : 0) | (b.mig_req ? 0x40 : 0) | (pad << 4) |
                                     (b.tver & 0x0F))}
           << 16 |
       b.pkey;
  w2 = (b.ack_req ? 0x80000000u : 0) | (b.psn & 0xFFFFFF);
}

template <class Crc>
size_t Encoder::encode(FrameTemplate& t, const FrameSpec& spec, std::span<uint8_t> out) noexcept {
  const FabemuHeader& h = spec.hdr;
  const bool roce = t.mode_ == WireMode::kRoceV2;
  // header_payload_bytes() spelled out: inlined, GCC 12 hoists both loads and a cmov ahead of the data branch.
  const size_t payload = h.kind == PacketKind::kData   ? spec.payload_bytes
                         : h.kind == PacketKind::kNack ? spec.missing.size() * 4
                                                       : 0;
  const size_t udp_len = kUdpHeaderBytes + udp_payload_bytes(t.mode_, payload);
  if (kIpv4HeaderBytes + udp_len > 65535) return 0;
  if (out.size() < std::max(kMinFrameBytes, kUdpOff + udp_len)) return 0;

  Packet p;
  if (roce) bth_words(spec.bth, roce_pad(payload), p.w0, p.w2);
  // The message's part of the frame (image, CRC and sums) is cached per MessageKey: built on a change.
  // The caller has usually just written `spec` a field at a time, so each field is read with a load of
  // its own (alone()): no MessageKey is built for the comparison, since its adjacent fields would be
  // copied and compared in wide loads that wait for those stores (about 5 ns a frame, measured).
  use_key(t, h, alone(h.kind), alone(h.flags), alone(h.src_rank), alone(h.dst_rank), alone(h.count),
          alone(h.message_length), roce ? alone(spec.bth.pkey) : uint16_t{0},
          roce ? alone(spec.bth.dest_qp) & 0xFFFFFF : 0);
  p.message_id = h.message_id;
  p.offset = h.offset;
  p.tx_time_ps = h.tx_time_ps;
  p.seq = h.seq;
  p.ip_id = spec.ip_id;
  p.payload = static_cast<uint32_t>(payload);
  return write<Crc>(t, p, h.kind, spec.missing, false, out.data());
}

// The frames of `stride` bytes of a run, from the run's image: per frame only the IP id, seq, offset, BTH
// words and the three checks are written (and the payload when it is not zero already).
template <class Crc, bool kRoce, bool kZero, bool kBatch>
[[gnu::always_inline]] inline void Encoder::full_frames(FrameTemplate& t, const FullFrames& r, Bth& b,
                                                        uint32_t full) noexcept {
  const size_t head = kRoce ? kL4Off + kBthBytes + kFabemuHeaderBytes : kL4Off + kFabemuHeaderBytes;
  const size_t l4_at = kRoce ? kL4Off + kBthBytes : kL4Off;
  // In locals: the frames' byte stores may alias anything in memory, so a value read through `r` or `t`
  // would be loaded again after every store.
  const uint8_t* const img = r.img;
  uint8_t* const* const frames = r.frames;
  uint16_t* const lens = r.lens;
  const uint32_t stride = r.stride, count = r.count;
  const size_t pad = r.pad, udp_len = r.udp_len, tail_zeros = r.tail_zeros;
  const uint16_t ip_len = r.ip_len;
  const uint64_t sum_base = r.sum_base;
  const uint32_t ip_base16 = fold(r.ip_base);  // not 0: the base holds the version word
  const uint32_t crc_base = r.crc_base, key_crc = t.key_crc_;
  const uint32_t body_bytes = static_cast<uint32_t>(stride + pad);
  const auto total = static_cast<uint16_t>(kUdpOff + udp_len + tail_zeros);
  FabemuHeader ch;  // Table::icrc reads the packet's fields from a header
  ch.message_id = r.message_id;
  ch.tx_time_ps = r.tx_time_ps;
  // RoCEv2: the BTH's first word of a Middle packet (every frame of the run but a message's first and
  // last has it), and the ICRC's per-run part (lengths, zero tail), once.
  uint32_t w0_middle = 0;
  if constexpr (kRoce) {
    Bth m = b;
    set_data_bth(m, 1, 3);  // packet 1 of 3: Middle, A clear
    uint32_t w2_unused = 0;
    bth_words(m, pad, w0_middle, w2_unused);
  }
  const auto icrc_run = [&] {
    if constexpr (kRoce) {
      return typename Crc::IcrcRun(t, ip_len, static_cast<uint16_t>(udp_len), body_bytes);
    } else {
      return 0;
    }
  }();
  // kBatch: every frame's moving CRC part, and in RoCEv2 mode its ICRC register as a Middle packet, r.lanes
  // frames at a time before the loop.
  alignas(16) uint32_t moving_of[kBatch ? kBatchMax : 1];
  alignas(16) uint32_t icrc_of[kBatch && kRoce ? kBatchMax : 1];
  if constexpr (kBatch) {
    if constexpr (kRoce) {
      icrc_run.batch(r.lanes, r.seq, static_cast<uint32_t>(r.offset), stride, r.ip_id, full, crc_base, key_crc, w0_middle,
                     moving_of, icrc_of);
    } else {
      Crc::moving_batch(r.lanes, r.seq, static_cast<uint32_t>(r.offset), stride, full, moving_of);
    }
  }
  uint32_t seq = r.seq;
  uint64_t offset = r.offset;
  uint16_t ip_id = r.ip_id;
  for (uint32_t i = 0; i < full; ++i, ++seq, offset += stride, ++ip_id) {
    uint8_t* f = frames[i];
    const auto offset_lo = static_cast<uint32_t>(offset);
    uint8_t* l4 = f + l4_at;
    uint64_t sum = sum_base;
    std::memcpy(f, img, head);
    uint32_t w0 = 0, w2 = 0;
    bool middle = false;
    if constexpr (kRoce) {
      if (seq != 0 && seq + 1 < count) [[likely]] {  // Middle: as set_data_bth and bth_words give
        middle = true;
        w0 = w0_middle;
        w2 = seq & 0xFFFFFF;
      } else {
        set_data_bth(b, seq, count);
        bth_words(b, pad, w0, w2);
      }
      store_be32(f + kL4Off, w0);
      store_be32(f + kL4Off + 8, w2);
      sum += uint64_t{w0} + w2;
    }
    store_be16(f + kEthHeaderBytes + 4, ip_id);
    // The base folded once (ip_base16: 1..0xFFFF) plus the id is at most 0x1FFFE: one end-around carry
    // gives fold()'s value (the same residue, never 0).
    const uint32_t ip_sum = ip_base16 + ip_id;
    store_be16(f + kEthHeaderBytes + 10, static_cast<uint16_t>(~((ip_sum & 0xFFFF) + (ip_sum >> 16))));
    store_be32(l4 + kSeqAt, seq);
    store_be32(l4 + kOffsetAt + 4, offset_lo);
    uint32_t moving;
    if constexpr (kBatch) {
      moving = moving_of[i];
    } else {
      moving = Crc::moving(seq, offset_lo);
    }
    const uint32_t crc = ~(crc_base ^ moving);
    store_be32(l4 + kCrcAt, crc);
    sum += uint64_t{seq} + offset_lo + crc;
    uint8_t* body = l4 + kFabemuHeaderBytes;
    if constexpr (!kZero) std::memset(body, 0, body_bytes);
    if constexpr (kRoce) {
      ch.seq = seq;
      ch.offset = offset;
      uint32_t icrc;
      if (kBatch && middle) [[likely]] {
        icrc = ~icrc_of[i];
      } else {
        icrc = ~icrc_run.frame(ip_id, static_cast<uint16_t>(w0 >> 16), w2, crc_base ^ moving ^ key_crc, crc, ch);
      }
      const uint32_t le = std::endian::native == std::endian::little ? icrc : __builtin_bswap32(icrc);
      std::memcpy(body + body_bytes, &le, 4);
      sum += __builtin_bswap32(icrc);
    }
    const auto csum = static_cast<uint16_t>(~fold(sum));
    store_be16(f + kUdpOff + 6, csum == 0 ? 0xFFFF : csum);
    if (tail_zeros != 0) [[unlikely]] std::memset(f + kUdpOff + udp_len, 0, tail_zeros);
    lens[i] = total;
  }
}

template <class Crc, int kRoce>
size_t Encoder::run_frame_at(FrameTemplate& t, const FrameSpec& first, uint32_t i, uint32_t bytes, bool payload_zero,
                             uint8_t* f) noexcept {
  const FabemuHeader& h = first.hdr;
  Packet p;
  p.message_id = h.message_id;
  p.tx_time_ps = h.tx_time_ps;
  p.seq = h.seq + i;
  p.offset = h.offset + uint64_t{i} * first.payload_bytes;
  p.ip_id = static_cast<uint16_t>(first.ip_id + i);
  p.payload = bytes;
  if (kRoce < 0 ? t.mode_ == WireMode::kRoceV2 : kRoce == 1) {
    Bth b = first.bth;
    set_data_bth(b, p.seq, h.count);
    bth_words(b, roce_pad(p.payload), p.w0, p.w2);
  }
  return write<Crc, kRoce>(t, p, PacketKind::kData, {}, payload_zero, f);
}

template <class Crc, bool kRoce>
bool Encoder::one(FrameTemplate& t, const FrameSpec& first, uint32_t last_bytes, uint8_t* const* frames, size_t room,
                  uint16_t* lens, bool payload_zero) noexcept {
  if (!run_fits(kRoce ? WireMode::kRoceV2 : WireMode::kFabemu, first, last_bytes, room)) return false;
  const FabemuHeader& h = first.hdr;
  if (h.seq == UINT32_MAX) [[unlikely]] {  // its seq + 1 does not fit: by encode(), as run() falls back
    lens[0] = static_cast<uint16_t>(
        encode<Crc>(t, run_frame(first, 0, 1, last_bytes), std::span<uint8_t>(frames[0], room)));
    return true;
  }
  use_key(t, h, h.kind, h.flags, h.src_rank, h.dst_rank, h.count, h.message_length,
          kRoce ? first.bth.pkey : uint16_t{0}, kRoce ? first.bth.dest_qp & 0xFFFFFF : 0);
  lens[0] = static_cast<uint16_t>(run_frame_at<Crc, kRoce ? 1 : 0>(t, first, 0, last_bytes, payload_zero, frames[0]));
  return true;
}

template <class Crc>
bool Encoder::run(FrameTemplate& t, const FrameSpec& first, uint32_t n, uint32_t last_bytes,
                  uint8_t* const* frames, size_t room, uint16_t* lens, bool payload_zero) noexcept {
  if (n == 0) return true;
  if (!run_fits(t.mode_, first, last_bytes, room)) return false;
  const FabemuHeader& h = first.hdr;
  const uint32_t stride = first.payload_bytes;
  const size_t udp_len = kUdpHeaderBytes + udp_payload_bytes(t.mode_, stride);
  const bool roce = t.mode_ == WireMode::kRoceV2;
  const uint64_t last_offset = h.offset + uint64_t{n - 1} * stride;
  if (hi32(last_offset) != hi32(h.offset) || h.seq + uint64_t{n} > UINT32_MAX) [[unlikely]] {
    // The offset's high half changes within the run (a message beyond 4 GiB): frame by frame.
    for (uint32_t i = 0; i < n; ++i) {
      lens[i] = static_cast<uint16_t>(
          encode<Crc>(t, run_frame(first, i, n, last_bytes), std::span<uint8_t>(frames[i], room)));
    }
    return true;
  }
  // One key for the whole run: the fields that change are seq, offset, IP id, the BTH's and the length.
  use_key(t, h, h.kind, h.flags, h.src_rank, h.dst_rank, h.count, h.message_length,
          roce ? first.bth.pkey : uint16_t{0}, roce ? first.bth.dest_qp & 0xFFFFFF : 0);
  // The frames of `stride` bytes (all, or all but a shorter last one) from an image of the run: the
  // flow's and message's image with this run's lengths, low id and low time in place, and the sums and
  // CRC part of those; per frame only the IP id, seq, offset, BTH words and the three checks are written.
  // (A run of one is one()'s: encode_run never gives it here.)
  const uint32_t full = last_bytes == stride ? n : n - 1;
  const uint32_t id_lo = lo32(h.message_id), time_lo = lo32(h.tx_time_ps);
  Bth b = first.bth;
  if (full > 0) {
    const size_t pad = roce ? roce_pad(stride) : 0;
    const size_t ip_end = kUdpOff + udp_len;
    const size_t total = std::max(kMinFrameBytes, ip_end);
    const auto ip_len = static_cast<uint16_t>(kIpv4HeaderBytes + udp_len);
    const size_t l4_at = roce ? kL4Off + kBthBytes : kL4Off;
    alignas(64) uint8_t img[FrameTemplate::kImageBytes];
    std::memcpy(img, t.image_, sizeof img);
    store_be16(img + kEthHeaderBytes + 2, ip_len);
    store_be16(img + kUdpOff + 4, static_cast<uint16_t>(udp_len));
    store_be32(img + l4_at + kIdAt + 4, id_lo);
    store_be32(img + l4_at + kTimeAt + 4, time_lo);
    const uint64_t ip_base = uint64_t{t.ip_sum_} + ip_len;
    const uint32_t crc_base = t.key_crc_ ^ Crc::fixed(id_lo, time_lo);
    const uint64_t sum_base = t.key_sum_ + 2 * udp_len + id_lo + time_lo;
    const FullFrames ff{img, frames, lens, h.seq, h.offset, first.ip_id, stride, pad, udp_len, ip_len,
                        total - ip_end, ip_base, crc_base, sum_base, h.count, h.message_id, h.tx_time_ps,
                        run_crc_batch()};
    // One loop per mode, payload kind and CRC batching: no per-frame test of any, and registers for the rest.
    // Batched only when the run fills every lane at least once: the batch's call and set-up cost more than
    // it saves on fewer frames (2-frame messages, 4 lanes: +2-4% in fabemu mode, +5-9% in RoCEv2 mode on
    // `msg_2pkt`, 2026-12-04, 3 alternated concurrent rounds; 4-frame messages unchanged).
    if constexpr (Crc::kBatch) {
      if (ff.lanes != 0 && full >= ff.lanes && full <= kBatchMax) {
        full_frames_of<Crc, true>(t, ff, b, full, roce, payload_zero);
      } else {
        full_frames_of<Crc, false>(t, ff, b, full, roce, payload_zero);
      }
    } else {
      full_frames_of<Crc, false>(t, ff, b, full, roce, payload_zero);
    }
  }
  if (full < n) {  // the message's shorter last packet, or the only one
    lens[full] = static_cast<uint16_t>(run_frame_at<Crc, -1>(t, first, full, last_bytes, payload_zero, frames[full]));
  }
  return true;
}

}  // namespace detail

size_t encode(FrameTemplate& t, const FrameSpec& spec, std::span<uint8_t> out) noexcept {
#if defined(FABEMU_HAVE_CLMUL)
  if (t.crc_engine() == CrcEngine::kClmul) return detail::Encoder::clmul(t, spec, out);
#endif
  return detail::Encoder::table(t, spec, out);
}

bool encode_run(FrameTemplate& t, const FrameSpec& first, uint32_t n, uint32_t last_bytes, uint8_t* const* frames,
                size_t room, uint16_t* lens, bool payload_zero) noexcept {
#if defined(FABEMU_HAVE_CLMUL)
  if (t.crc_engine() == CrcEngine::kClmul) {
    if (n == 1) return detail::Encoder::clmul_run_one(t, first, last_bytes, frames, room, lens, payload_zero);
    return detail::Encoder::clmul_run(t, first, n, last_bytes, frames, room, lens, payload_zero);
  }
#endif
  if (n == 1) return detail::Encoder::table_run_one(t, first, last_bytes, frames, room, lens, payload_zero);
  return detail::Encoder::table_run(t, first, n, last_bytes, frames, room, lens, payload_zero);
}

uint32_t DecodedFrame::missing(size_t i) const noexcept { return get32(payload.data() + 4 * i); }

Verdict decode(std::span<const uint8_t> frame, const DecodeRules& rules, DecodedFrame& out) noexcept {
  const uint8_t* f = frame.data();
  const size_t n = frame.size();
  if (n < kEthHeaderBytes) return Verdict::kTruncated;
  if (get16(f + 12) != kEtherTypeIpv4) return Verdict::kNotIpv4;
  if (n < kUdpOff) return Verdict::kTruncated;
  const uint8_t* ip = f + kEthHeaderBytes;
  if (ip[0] != 0x45 || (get16(ip + 6) & 0x3FFF) != 0) return Verdict::kBadIpHeader;
  const size_t ip_len = get16(ip + 2);
  if (ip_len < kIpv4HeaderBytes || kEthHeaderBytes + ip_len > n) return Verdict::kTruncated;
  if (!ipv4_header_sum_ok(ip)) return Verdict::kBadIpChecksum;
  if (ip[9] != kIpProtoUdp) return Verdict::kNotUdp;
  if (ip_len < kIpv4HeaderBytes + kUdpHeaderBytes) return Verdict::kTruncated;
  const uint8_t* udp = f + kUdpOff;
  const size_t udp_len = get16(udp + 4);
  if (udp_len != ip_len - kIpv4HeaderBytes) return Verdict::kTruncated;
  const uint32_t src_ip = get32(ip + 12);
  const uint32_t dst_ip = get32(ip + 16);
  // The bytes after the headers (the payload and, in RoCEv2 mode, its pad) are zeros in every data frame:
  // the emulator moves sizes, not data. When they are, the UDP checksum and the ICRC are taken over the
  // headers (and the ICRC) alone, the zeros counted by their length: they add nothing to a ones'
  // complement sum and move a CRC register by one product, so the results are the full sums', and the
  // payload is read once, by the zero test, instead of twice. Anything else (a NACK's list, a corrupted
  // byte, an odd length) takes the full sums, and so do bodies shorter than 64 bytes, where the test and
  // the split sums cost what they save (RoCEv2 118 B frames: 31 -> 35 ns with them). With neither check to
  // make (the NIC summed the UDP checksum, fabemu mode) the body is not read at all.
  const bool roce = rules.mode == WireMode::kRoceV2;
  const size_t head = kUdpHeaderBytes + (roce ? kBthBytes : 0) + kFabemuHeaderBytes;
  const size_t tail = roce ? kIcrcBytes : 0;
  // A zero UDP checksum ("none") is accepted only in RoCEv2 mode, where the ICRC protects the packet
  // (the RoCEv2 annex lets senders leave it zero).
  const uint16_t udp_csum = get16(udp + 6);
  const bool check_udp = rules.verify_udp_checksum && (udp_csum != 0 || !roce);
  const bool zero_body = (check_udp || (roce && rules.verify_icrc)) && udp_len >= head + tail + 64 &&
                         (udp_len - tail) % 2 == 0 && all_zero(udp + head, udp_len - head - tail);
  if (check_udp) {
    const uint64_t sum = zero_body ? sum16(udp, head) + (tail != 0 ? sum16(udp + udp_len - tail, tail) : 0)
                                   : sum16(udp, udp_len);
    if (fold(pseudo_header_sum(src_ip, dst_ip, static_cast<uint16_t>(udp_len)) + sum) != 0xFFFF) {
      return Verdict::kBadUdpChecksum;
    }
  }
  const uint16_t dport = get16(udp + 2);
  if (rules.mode == WireMode::kRoceV2 ? dport != kRoceV2Port : (dport < rules.port_lo || dport > rules.port_hi)) {
    return Verdict::kWrongPort;
  }

  const uint8_t* l4 = f + kL4Off;
  size_t l4_len = udp_len - kUdpHeaderBytes;
  Bth bth;
  uint8_t pad = 0;
  if (rules.mode == WireMode::kRoceV2) {
    if (l4_len < kBthBytes) return Verdict::kTruncated;
    bth.opcode = l4[0];
    bth.solicited = (l4[1] & 0x80) != 0;
    bth.mig_req = (l4[1] & 0x40) != 0;
    pad = static_cast<uint8_t>((l4[1] >> 4) & 0x3);
    bth.tver = l4[1] & 0x0F;
    bth.pkey = get16(l4 + 2);
    bth.dest_qp = get24(l4 + 5);
    bth.ack_req = (l4[8] & 0x80) != 0;
    bth.psn = get24(l4 + 9);
    // Real RDMA traffic (CNPs, ACKs, READs...) stops here, before any length that only fabemu implies.
    if (bth.tver != 0 || !known_opcode(bth.opcode)) return Verdict::kBadBth;
    if (l4_len < kBthBytes + kFabemuHeaderBytes + kIcrcBytes) return Verdict::kTruncated;
    if (l4_len < kBthBytes + kFabemuHeaderBytes + kIcrcBytes + pad) return Verdict::kBadBth;
    if (rules.verify_icrc) {
      // Read only when checked: the ICRC sits in the frame's last line, which nothing else here reads
      // (loaded unconditionally, its miss was 88% of decode's time with the checks off).
      const size_t icrc_off = kUdpOff + udp_len - kIcrcBytes;
      const uint8_t* ic = f + icrc_off;
      const uint32_t want = uint32_t{ic[0]} | uint32_t{ic[1]} << 8 | uint32_t{ic[2]} << 16 | uint32_t{ic[3]} << 24;
      const uint32_t got = zero_body ? roce_icrc_zero_body(f, udp_len - head - tail, rules.icrc_engine)
                                     : roce_icrc(frame.first(icrc_off), rules.icrc_engine);
      if (got != want) return Verdict::kBadIcrc;
    }
    l4 += kBthBytes;
    l4_len -= kBthBytes + kIcrcBytes + pad;
  }
  FabemuHeader h;
  switch (parse_fabemu_header({l4, l4_len}, h)) {
    case HeaderVerdict::kOk: break;
    case HeaderVerdict::kTruncated: return Verdict::kTruncated;
    case HeaderVerdict::kBadMagic: return Verdict::kBadMagic;
    case HeaderVerdict::kBadVersion: return Verdict::kBadVersion;
    case HeaderVerdict::kBadHeaderCrc: return Verdict::kBadHeaderCrc;
    case HeaderVerdict::kBadFields: return Verdict::kBadFields;
  }
  const size_t payload = l4_len - kFabemuHeaderBytes;

  std::memcpy(out.dst.mac.data(), f, 6);
  std::memcpy(out.src.mac.data(), f + 6, 6);
  out.src.ip = src_ip;
  out.dst.ip = dst_ip;
  out.src.port = get16(udp);
  out.dst.port = dport;
  out.ip_id = get16(ip + 4);
  out.dscp = static_cast<uint8_t>(ip[1] >> 2);
  out.ecn = static_cast<Ecn>(ip[1] & 3);
  // Field by field from opaque loads: parse_fabemu_header has just stored them one by one, and a copy of
  // the struct reads them back in wide loads that the CPU cannot forward from those stores (alone()).
  out.hdr.kind = alone(h.kind);
  out.hdr.flags = alone(h.flags);
  out.hdr.src_rank = alone(h.src_rank);
  out.hdr.dst_rank = alone(h.dst_rank);
  out.hdr.message_id = alone(h.message_id);
  out.hdr.seq = alone(h.seq);
  out.hdr.count = alone(h.count);
  out.hdr.message_length = alone(h.message_length);
  out.hdr.offset = alone(h.offset);
  out.hdr.tx_time_ps = alone(h.tx_time_ps);
  out.bth = bth;
  out.pad_count = pad;
  out.payload_bytes = static_cast<uint32_t>(payload);
  out.payload = {l4 + kFabemuHeaderBytes, payload};
  return Verdict::kOurs;
}

std::string_view to_string(Ecn e) noexcept {
  switch (e) {
    case Ecn::kNotEct: return "not-ect";
    case Ecn::kEct1: return "ect1";
    case Ecn::kEct0: return "ect0";
    case Ecn::kCe: return "ce";
  }
  return "?";
}

std::optional<Ecn> sender_ecn(std::string_view name) noexcept {
  if (name.empty() || name == "not-ect") return Ecn::kNotEct;
  if (name == "ect0") return Ecn::kEct0;
  if (name == "ect1") return Ecn::kEct1;
  return std::nullopt;
}

void check_sender_class(uint32_t dscp, Ecn ecn, std::string_view who) {
  if (dscp > 63) {
    throw std::invalid_argument(std::string(who) + ": DSCP " + std::to_string(dscp) +
                                " does not fit the field's 6 bits (0..63)");
  }
  if (ecn == Ecn::kCe) {
    throw std::invalid_argument(std::string(who) +
                                ": CE is a congested switch's mark, never a sender's (RFC 3168): send not-ect, ect0 "
                                "or ect1");
  }
}

std::string class_suffix(uint8_t dscp, Ecn ecn) {
  if (dscp == 0 && ecn == Ecn::kNotEct) return {};
  return " DSCP " + std::to_string(dscp) + " ECN " + std::string(to_string(ecn));
}

bool mark_ce(std::span<uint8_t> frame) noexcept {
  if (frame.size() < kEthHeaderBytes + kIpv4HeaderBytes || get16(frame.data() + 12) != kEtherTypeIpv4) return false;
  uint8_t* ip = frame.data() + kEthHeaderBytes;
  const size_t ihl = size_t{ip[0] & 0x0Fu} * 4;
  if ((ip[0] >> 4) != 4 || ihl < kIpv4HeaderBytes || frame.size() < kEthHeaderBytes + ihl) return false;
  const auto ecn = static_cast<Ecn>(ip[1] & 3);
  if (ecn != Ecn::kEct0 && ecn != Ecn::kEct1) return false;
  // RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m'), m the 16-bit word holding the TOS byte.
  const uint16_t m = get16(ip);
  ip[1] = static_cast<uint8_t>(ip[1] | 3);
  const uint16_t m2 = get16(ip);
  const uint32_t sum = uint32_t{static_cast<uint16_t>(~get16(ip + 10))} + static_cast<uint16_t>(~m) + m2;
  put16(ip + 10, static_cast<uint16_t>(~fold(sum)));
  return true;
}

std::string_view to_string(Verdict v) noexcept {
  switch (v) {
    case Verdict::kOurs: return "ours";
    case Verdict::kTruncated: return "truncated";
    case Verdict::kNotIpv4: return "not IPv4 (EtherType)";
    case Verdict::kBadIpHeader: return "bad IPv4 header (version, options or fragment)";
    case Verdict::kBadIpChecksum: return "bad IPv4 header checksum";
    case Verdict::kNotUdp: return "not UDP";
    case Verdict::kBadUdpChecksum: return "bad UDP checksum";
    case Verdict::kWrongPort: return "not our UDP port";
    case Verdict::kBadBth: return "bad InfiniBand BTH";
    case Verdict::kBadIcrc: return "bad RoCEv2 ICRC";
    case Verdict::kBadMagic: return "bad fabemu magic";
    case Verdict::kBadVersion: return "unsupported fabemu version";
    case Verdict::kBadHeaderCrc: return "bad fabemu header CRC";
    case Verdict::kBadFields: return "inconsistent fabemu header fields";
  }
  return "unknown";
}

}  // namespace fabemu::host::dpdk
