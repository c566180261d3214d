// The C++ model of the whole kernel (hw/sched/rtl/sched_kernel.sv) behind its register map: the host
// writes the argument registers, sets ap_start, and the run reads the link table and descriptors from
// DeviceMemory and writes the completions, with the link state kept between runs as in block RAM.
// Functional at the kernel level (the hop core's cycle behaviour is SchedCoreModel's); REG_CYCLES
// reports the cycles the RTL takes when memory never stalls (run_cycles()).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "rtl_models/device_memory.h"
#include "rtl_models/sched_core_model.h"

namespace fabemu::rtl {

// log2 of the link capacity of the model device and of the hw-emu build (FABEMU_HWEMU_LINK_ADDR_W in
// rtl_models/CMakeLists.txt) and of the Vitis Makefile's default: 4096 links.
inline constexpr unsigned kLinkAddrW = 12;

class SchedKernelModel {
 public:
  explicit SchedKernelModel(DeviceMemory& memory, unsigned link_addr_w = kLinkAddrW);

  void write_reg(uint32_t offset, uint32_t value);
  // Reading REG_CTRL clears ap_done, as on the RTL.
  uint32_t read_reg(uint32_t offset);
  // The same control sequence as SchedHwEmu: the run happens at start().
  void start() { write_reg(hw::sched::REG_CTRL, 1u << hw::sched::CTRL_AP_START); }
  // Throws std::logic_error when no run was started.
  void wait_done();
  uint32_t link_capacity() const noexcept { return static_cast<uint32_t>(links_.size()); }

  // Kernel cycles of a run when memory never stalls (as test_fpga_kernel measures on the RTL and
  // asserts): the link load takes one cycle per entry plus kLoadOverhead, the descriptors one cycle per
  // hop plus kRunOverhead (pipeline fill, memory and write-response latency), an empty run kEmptyRun.
  static constexpr uint64_t kLoadOverhead = 3;
  static constexpr uint64_t kRunOverhead = 17;
  static constexpr uint64_t kEmptyRun = 3;
  static constexpr uint64_t run_cycles(uint64_t num_links, uint64_t num_desc) noexcept {
    return (num_links == 0 ? 0 : num_links + kLoadOverhead) + (num_desc == 0 ? kEmptyRun : num_desc + kRunOverhead);
  }

 private:
  void run();

  DeviceMemory& mem_;
  std::vector<LinkEntry> links_;
  std::array<uint32_t, 32> regs_{};
  bool done_ = false;
  uint64_t cycles_ = 0;
};

}  // namespace fabemu::rtl
