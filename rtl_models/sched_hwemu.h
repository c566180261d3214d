// hw-emu: the real RTL (hw/sched/rtl/sched_kernel.sv, Verilated) behind the same register interface as
// SchedKernelModel. A clocked AXI4 slave model serves m00 (reads) and m01 (writes) from DeviceMemory,
// optionally with seeded random stalls on every channel; registers go through AXI4-Lite transactions.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <random>

#include "rtl_models/device_memory.h"

class Vsched_kernel;
class VerilatedContext;

namespace fabemu::rtl {

struct HwEmuOptions {
  // Probability in 1/256 that a slave channel stalls (ready or valid low) in a cycle: 0 = never.
  uint32_t stall_per_256 = 0;
  uint64_t seed = 1;
  // Give up (std::runtime_error) after this many cycles of a single run.
  uint64_t max_cycles_per_run = uint64_t{1} << 34;
  // Cycles from an AR handshake to the cycle its first R beat may be presented (1: the next cycle).
  uint32_t read_latency = 1;
  // Answer SLVERR on the R beat / the B response with this index (counted from 0 over the device's
  // life); kNoError: never.
  static constexpr uint64_t kNoError = ~uint64_t{0};
  uint64_t rresp_error_beat = kNoError;
  uint64_t bresp_error_burst = kNoError;
};

class SchedHwEmu {
 public:
  explicit SchedHwEmu(DeviceMemory& memory, HwEmuOptions options = {});
  ~SchedHwEmu();
  SchedHwEmu(const SchedHwEmu&) = delete;
  SchedHwEmu& operator=(const SchedHwEmu&) = delete;

  void write_reg(uint32_t offset, uint32_t value);
  uint32_t read_reg(uint32_t offset);
  // Sets ap_start (the argument registers must be written first).
  void start();
  // Polls REG_CTRL every 64 cycles until ap_done (std::runtime_error past max_cycles_per_run).
  void wait_done();
  void start_and_wait() {
    start();
    wait_done();
  }
  // Clock cycles simulated so far (for cycles-per-second figures).
  uint64_t cycles() const noexcept { return cycles_; }

 private:
  struct Burst {
    uint64_t addr;
    uint32_t beats;
    uint64_t ready_at = 0;  // first cycle its data may be presented (reads)
  };
  void tick();
  bool stall();

  DeviceMemory& mem_;
  HwEmuOptions opt_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vsched_kernel> top_;
  std::mt19937_64 rng_;
  std::deque<Burst> rd_bursts_;   // accepted ARs, served in order
  uint32_t rd_beat_ = 0;
  std::deque<Burst> wr_bursts_;   // accepted AWs
  uint32_t wr_beat_ = 0;
  uint32_t b_pending_ = 0;        // B responses owed
  bool r_held_ = false;           // R / B shown without a handshake: must stay valid (AXI)
  bool b_held_ = false;
  uint64_t r_beats_ = 0;          // R beats / B responses handed over so far
  uint64_t b_sent_ = 0;
  uint64_t cycles_ = 0;
  uint64_t run_begin_ = 0;
};

}  // namespace fabemu::rtl
