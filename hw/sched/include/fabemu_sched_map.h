// The register and record map of the fabemu message-scheduler kernel, the C++ twin of
// hw/sched/rtl/fabemu_sched_pkg.sv (same names; test_fpga_map checks they agree). Used by the cycle
// model, the Verilator harness, the host drivers and hw/README.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace fabemu::hw::sched {

// --- AXI4-Lite control registers (byte offsets, 32-bit registers) ------------------------------------
inline constexpr uint32_t REG_CTRL = 0x00;
inline constexpr uint32_t REG_GIE = 0x04;
inline constexpr uint32_t REG_IER = 0x08;
inline constexpr uint32_t REG_ISR = 0x0C;
inline constexpr uint32_t REG_LINKS_ADDR_LO = 0x10;
inline constexpr uint32_t REG_LINKS_ADDR_HI = 0x14;
inline constexpr uint32_t REG_DESC_ADDR_LO = 0x18;
inline constexpr uint32_t REG_DESC_ADDR_HI = 0x1C;
inline constexpr uint32_t REG_CMPL_ADDR_LO = 0x20;
inline constexpr uint32_t REG_CMPL_ADDR_HI = 0x24;
inline constexpr uint32_t REG_NUM_LINKS = 0x28;
inline constexpr uint32_t REG_NUM_DESC = 0x30;
inline constexpr uint32_t REG_CYCLES_LO = 0x38;
inline constexpr uint32_t REG_CYCLES_HI = 0x3C;
inline constexpr uint32_t REG_LINK_CAP = 0x40;
inline constexpr uint32_t REG_VERSION = 0x44;
inline constexpr uint32_t REG_STATUS = 0x48;  // STATUS_* bits of the last run

inline constexpr uint32_t MAP_VERSION = 0x0001'0001;

inline constexpr uint32_t CTRL_AP_START = 0;
inline constexpr uint32_t CTRL_AP_DONE = 1;
inline constexpr uint32_t CTRL_AP_IDLE = 2;
inline constexpr uint32_t CTRL_AP_READY = 3;

// REG_STATUS: a read (m00_axi) or write (m01_axi) response of the last run was not OKAY.
inline constexpr uint32_t STATUS_RD_ERR = 0;
inline constexpr uint32_t STATUS_WR_ERR = 1;

// --- memory records: 32 bytes, little-endian, one 256-bit AXI beat ----------------------------------
inline constexpr uint32_t RECORD_BYTES = 32;
inline constexpr uint32_t RECORD_BITS = 256;
inline constexpr uint32_t BURST_BEATS = 16;
inline constexpr uint32_t BUFFER_ALIGN = 512;

inline constexpr uint32_t LINK_RATE_LSB = 0;
inline constexpr uint32_t LINK_LATENCY_LSB = 64;
inline constexpr uint32_t LINK_FREE_LSB = 128;
inline constexpr uint32_t DESC_TIME_LSB = 0;
inline constexpr uint32_t DESC_BYTES_LSB = 64;
inline constexpr uint32_t DESC_LINK_LSB = 96;
inline constexpr uint32_t DESC_TAG_LSB = 128;
inline constexpr uint32_t CMPL_DEPART_LSB = 0;
inline constexpr uint32_t CMPL_ARRIVE_LSB = 64;
inline constexpr uint32_t CMPL_TAG_LSB = 128;
inline constexpr uint32_t CMPL_LINK_LSB = 192;
inline constexpr uint32_t CMPL_BYTES_LSB = 224;

using Record = std::array<uint8_t, RECORD_BYTES>;

// One link-table entry: Q32.32 ps per byte, latency and initial link_free in ps.
struct LinkEntry {
  uint64_t rate_q32 = 0;
  uint64_t latency_ps = 0;
  uint64_t free_ps = 0;
  friend bool operator==(const LinkEntry&, const LinkEntry&) = default;
};

// One packet-hop: a packet of `bytes` reaches `link` at `time_ps`; `tag` is echoed back.
struct HopDesc {
  uint64_t time_ps = 0;
  uint32_t bytes = 0;
  uint32_t link = 0;
  uint64_t tag = 0;
  friend bool operator==(const HopDesc&, const HopDesc&) = default;
};

// The kernel's answer for one HopDesc: departure d = max(t, link_free) and far-end arrival
// d + ser(bytes) + latency, with the descriptor's tag, link and bytes.
struct Completion {
  uint64_t depart_ps = 0;
  uint64_t arrive_ps = 0;
  uint64_t tag = 0;
  uint32_t link = 0;
  uint32_t bytes = 0;
  friend bool operator==(const Completion&, const Completion&) = default;
};

namespace detail {
template <typename T>
inline void put(Record& r, uint32_t lsb, T v) noexcept {
  for (std::size_t i = 0; i < sizeof(T); ++i) r[lsb / 8 + i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
}
template <typename T>
inline T get(const Record& r, uint32_t lsb) noexcept {
  uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= uint64_t{r[lsb / 8 + i]} << (8 * i);
  return static_cast<T>(v);
}
}  // namespace detail

inline Record encode(const LinkEntry& e) noexcept {
  Record r{};
  detail::put(r, LINK_RATE_LSB, e.rate_q32);
  detail::put(r, LINK_LATENCY_LSB, e.latency_ps);
  detail::put(r, LINK_FREE_LSB, e.free_ps);
  return r;
}
inline Record encode(const HopDesc& d) noexcept {
  Record r{};
  detail::put(r, DESC_TIME_LSB, d.time_ps);
  detail::put(r, DESC_BYTES_LSB, d.bytes);
  detail::put(r, DESC_LINK_LSB, d.link);
  detail::put(r, DESC_TAG_LSB, d.tag);
  return r;
}
inline Record encode(const Completion& c) noexcept {
  Record r{};
  detail::put(r, CMPL_DEPART_LSB, c.depart_ps);
  detail::put(r, CMPL_ARRIVE_LSB, c.arrive_ps);
  detail::put(r, CMPL_TAG_LSB, c.tag);
  detail::put(r, CMPL_LINK_LSB, c.link);
  detail::put(r, CMPL_BYTES_LSB, c.bytes);
  return r;
}
inline LinkEntry decode_link(const Record& r) noexcept {
  return {detail::get<uint64_t>(r, LINK_RATE_LSB), detail::get<uint64_t>(r, LINK_LATENCY_LSB),
          detail::get<uint64_t>(r, LINK_FREE_LSB)};
}
inline HopDesc decode_desc(const Record& r) noexcept {
  return {detail::get<uint64_t>(r, DESC_TIME_LSB), detail::get<uint32_t>(r, DESC_BYTES_LSB),
          detail::get<uint32_t>(r, DESC_LINK_LSB), detail::get<uint64_t>(r, DESC_TAG_LSB)};
}
inline Completion decode_completion(const Record& r) noexcept {
  return {detail::get<uint64_t>(r, CMPL_DEPART_LSB), detail::get<uint64_t>(r, CMPL_ARRIVE_LSB),
          detail::get<uint64_t>(r, CMPL_TAG_LSB), detail::get<uint32_t>(r, CMPL_LINK_LSB),
          detail::get<uint32_t>(r, CMPL_BYTES_LSB)};
}

}  // namespace fabemu::hw::sched
