// The host's view of the FPGA message scheduler: one interface (load, allocate buffers, write
// descriptors, start, wait, read completions) over three devices: a board through XRT ("xrt:N"), the
// Verilated RTL ("hwemu") and the C++ model ("model"). Register and record layouts are
// hw/sched/include/fabemu_sched_map.h; semantics are hw/README.md's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hw/sched/include/fabemu_sched_map.h"

namespace fabemu::host::fpga {

using hw::sched::Completion;
using hw::sched::HopDesc;
using hw::sched::LinkEntry;

class SchedDevice {
 public:
  SchedDevice() = default;
  SchedDevice(const SchedDevice&) = delete;
  SchedDevice& operator=(const SchedDevice&) = delete;
  virtual ~SchedDevice() = default;

  // "xrt:0 (xclbin K.xclbin)", "hwemu", "model": for messages and reports.
  virtual std::string describe() const = 0;
  // Link-table entries the loaded kernel holds (REG_LINK_CAP).
  virtual uint32_t link_capacity() = 0;
  // Device buffers for `links` link-table entries and `hops` descriptors and as many completions,
  // replacing earlier ones. Link state inside the kernel is not touched.
  virtual void allocate(std::size_t links, std::size_t hops) = 0;
  // Preconditions: sizes within the last allocate() (std::length_error otherwise).
  virtual void write_links(std::span<const LinkEntry> links) = 0;
  virtual void write_descriptors(std::span<const HopDesc> hops) = 0;
  // Starts a run: load num_links link-table entries (0 keeps the link state), then schedule num_desc
  // descriptors in their buffer order.
  virtual void start(uint32_t num_links, uint32_t num_desc) = 0;
  // Blocks until the run is done. Throws std::runtime_error when the device reports a failure.
  virtual void wait() = 0;
  virtual void read_completions(std::span<Completion> out) = 0;
  // Kernel clock cycles of the last run, start to done (REG_CYCLES).
  virtual uint64_t last_run_cycles() = 0;
};

// Opens a device from its command-line spelling: "xrt:<index>" (needs `xclbin`), "hwemu", "model".
// Throws std::invalid_argument for an unknown spelling and std::runtime_error when the device cannot be
// opened: no board, no xclbin, or a backend this build does not have (XRT, Verilator), each with a
// message that says what to do instead.
std::unique_ptr<SchedDevice> open_sched_device(const std::string& spec, const std::string& xclbin = {});

// Throws std::runtime_error naming `device`, its run number `run` (1 = the first) and the failed
// interface when `status` (REG_STATUS read after ap_done) has an error bit set; the completions of such
// a run must not be used.
void check_run_status(uint32_t status, const std::string& device, uint64_t run);

// True when this build has the backend ("xrt", "hwemu", "model").
bool has_backend(const std::string& backend) noexcept;

// Schedules `hops` (in their order) on `device` in runs of at most `window` descriptors: the first run
// loads `links`, later ones keep the kernel's link state. Throws std::invalid_argument when a hop names
// a link outside `links` or `links` exceeds the kernel's capacity.
std::vector<Completion> schedule(SchedDevice& device, std::span<const LinkEntry> links, std::span<const HopDesc> hops,
                                 std::size_t window = 65'536);

}  // namespace fabemu::host::fpga
