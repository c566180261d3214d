// The CRC batch of a run's frames, per vector width (crc_lanes.inc once per width).
#include <cstdint>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "host/wire/crc_kernels.h"

namespace fabemu::host::dpdk::detail {

#if defined(FABEMU_HAVE_CLMUL)
// A run's CRCs several frames at a time (run_crc_batch()): crc_lanes.inc once per vector width, lane
// j of a vector frame j's pair of fields (the same products as clmul_pair and barrett, lane by lane). Only
// in functions of the width's instruction set, called when run_crc_batch() is that width.

// Four frames a vector: 512-bit VPCLMULQDQ (AVX-512 F/BW/VL).
namespace lanes4 {
#define FABEMU_LANES_TARGET FABEMU_LANES4_TARGET
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
#include "host/wire/crc_lanes.inc"
#undef FABEMU_LANES_TARGET
}  // namespace lanes4

// Two frames a vector: 256-bit VPCLMULQDQ (AVX2; Zen 3, Ice Lake and later, without AVX-512 on some).
namespace lanes2 {
#define FABEMU_LANES_TARGET FABEMU_LANES2_TARGET
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
#include "host/wire/crc_lanes.inc"
#undef FABEMU_LANES_TARGET
}  // namespace lanes2
#endif

}  // namespace fabemu::host::dpdk::detail
