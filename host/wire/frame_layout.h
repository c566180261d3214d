// Offsets and lengths of the frame layout, and field helpers, for host/wire's own files (frame.cpp, roce.cpp,
// the FrameTemplate encoder): not for use outside it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "host/wire/frame.h"
#include "host/wire/roce.h"

namespace fabemu::host::dpdk::detail {

inline uint64_t pseudo_header_sum(uint32_t src_ip, uint32_t dst_ip, uint16_t udp_len) noexcept {
  return (src_ip >> 16) + (src_ip & 0xFFFF) + (dst_ip >> 16) + (dst_ip & 0xFFFF) + kIpProtoUdp + udp_len;
}

constexpr size_t kUdpOff = kEthHeaderBytes + kIpv4HeaderBytes;
constexpr size_t kL4Off = kUdpOff + kUdpHeaderBytes;

inline size_t roce_pad(size_t payload_bytes) noexcept { return (4 - payload_bytes % 4) % 4; }

inline size_t udp_payload_bytes(WireMode mode, size_t payload_bytes) noexcept {
  return mode == WireMode::kFabemu
             ? kFabemuHeaderBytes + payload_bytes
             : kBthBytes + kFabemuHeaderBytes + payload_bytes + roce_pad(payload_bytes) + kIcrcBytes;
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

}  // namespace fabemu::host::dpdk::detail
