// The RoCEv2 ICRC's pieces the frame code inlines: the masking of the variant fields, and the ICRC of a
// frame whose body is zeros (decode's check of a data frame). host/wire's own: not for use outside it.
// Internal linkage, as they had beside their callers: decode() is their only caller of the second.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "host/wire/crc_kernels.h"
#include "host/wire/frame.h"
#include "host/wire/frame_layout.h"

namespace fabemu::host::dpdk::detail {
namespace {

constexpr size_t kIcrcMaskedBytes = kIpv4HeaderBytes + kUdpHeaderBytes + kBthBytes;
// The IPv4, UDP and BTH bytes of frame `f` as the ICRC covers them: every variant field set to ones.
inline void icrc_mask(const uint8_t* f, uint8_t* masked) noexcept {
  std::memcpy(masked, f + kEthHeaderBytes, kIcrcMaskedBytes);
  masked[1] = 0xFF;                // TOS (DSCP and ECN)
  masked[8] = 0xFF;                // TTL
  masked[10] = masked[11] = 0xFF;  // IP header checksum
  masked[kIpv4HeaderBytes + 6] = masked[kIpv4HeaderBytes + 7] = 0xFF;  // UDP checksum
  masked[kIpv4HeaderBytes + kUdpHeaderBytes + 4] = 0xFF;               // BTH reserved byte
}

// roce_icrc of a frame whose bytes after the fabemu header, up to the ICRC, are `zeros` zero bytes: the
// masked start and the fabemu header in one buffer (with the clmul engine 128 bytes, all folded; else 108
// by tables), then the zeros by one product. The same value, without reading the payload again.
inline uint32_t roce_icrc_zero_body(const uint8_t* f, size_t zeros, CrcEngine engine) noexcept {
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
}  // namespace fabemu::host::dpdk::detail
