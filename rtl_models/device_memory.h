// A model of the FPGA card's global memory for the C++ model and the Verilator hw-emu: one flat
// byte array at a 64-bit base address, with a bump allocator of BUFFER_ALIGN-aligned buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/sched/include/fabemu_sched_map.h"

namespace fabemu::rtl {

class DeviceMemory {
 public:
  // The base sits above 4 GiB so that the high halves of the address registers are exercised.
  static constexpr uint64_t kBase = uint64_t{1} << 32;

  // Returns the device address of a fresh buffer of `bytes` (rounded up to the page).
  uint64_t allocate(std::size_t bytes) {
    const std::size_t size = (bytes + 4095) / 4096 * 4096;
    const uint64_t addr = kBase + mem_.size();
    mem_.resize(mem_.size() + (size == 0 ? 4096 : size));
    return addr;
  }
  // Forgets every buffer.
  void clear() noexcept { mem_.clear(); }

  uint8_t* at(uint64_t addr, std::size_t bytes) {
    if (addr < kBase || addr - kBase + bytes > mem_.size()) {
      throw std::out_of_range("DeviceMemory: access of " + std::to_string(bytes) + " bytes at 0x" + hex(addr) +
                              " is outside the allocated buffers");
    }
    return mem_.data() + (addr - kBase);
  }
  void write(uint64_t addr, const void* src, std::size_t bytes) { std::memcpy(at(addr, bytes), src, bytes); }
  void read(uint64_t addr, void* dst, std::size_t bytes) { std::memcpy(dst, at(addr, bytes), bytes); }

 private:
  static std::string hex(uint64_t v) {
    char buf[17];
    for (int i = 15; i >= 0; --i, v >>= 4) buf[i] = "0123456789abcdef"[v & 15];
    buf[16] = 0;
    return buf;
  }
  std::vector<uint8_t> mem_;
};

}  // namespace fabemu::rtl
