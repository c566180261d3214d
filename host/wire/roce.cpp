// The RoCEv2 ICRC: of a whole frame, and of a frame whose body is zeros (the receive side's check).
#include "host/wire/roce.h"

#include <cstring>

#include "host/wire/crc_kernels.h"
#include "host/wire/roce_kernels.h"

namespace fabemu::host::dpdk {

using namespace detail;

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

}  // namespace fabemu::host::dpdk
