// Big-endian field access byte by byte, for host/wire's own files (the one-move stores of the template
// path are fabemu_header.h's store_be*).
#pragma once

#include <cstdint>

namespace fabemu::host::dpdk::detail {

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

}  // namespace fabemu::host::dpdk::detail
