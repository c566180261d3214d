// CRC-32 (IEEE, reflected, as zlib's) for the frames: the engines (byte tables, or carry-less products
// where the CPU has PCLMULQDQ), the whole-buffer CRC and the fabemu header's CRC. The RoCEv2 ICRC is in
// roce.h, the kernels the frame code shares in crc_kernels.h.
#pragma once

#include <cstdint>
#include <span>

namespace fabemu::host::dpdk {

// How encode(FrameTemplate&) computes the CRC parts of the fields that change from frame to frame: by
// byte tables (portable), or by carry-less multiplication (PCLMULQDQ, x86-64 CPUs that have it). The
// bytes are the same; kClmul is faster (the RoCEv2 ICRC most) and keeps 40 KiB of tables out of the cache.
enum class CrcEngine : uint8_t { kTable, kClmul };
// kClmul when this CPU runs it (checked once), else kTable: the engine a FrameTemplate starts with.
CrcEngine best_crc_engine() noexcept;

// CRC-32 (IEEE 802.3, reflected, as zlib's crc32): crc32(data) == crc32_update(0, data). With kClmul
// (the default when the CPU has it) 64 bytes or more are folded 16 bytes at a time by carry-less products,
// about ten times faster than the byte tables of kTable on a 1 KiB frame; the result is the same.
uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> data, CrcEngine engine = best_crc_engine()) noexcept;

// The CRC-32 of a fabemu header's first 56 bytes (the value of its CRC field), by `engine` (kClmul falls
// back to kTable where this CPU lacks it): what write_fabemu_header stores and decode checks.
uint32_t fabemu_header_crc(const uint8_t* header, CrcEngine engine = best_crc_engine()) noexcept;

}  // namespace fabemu::host::dpdk
