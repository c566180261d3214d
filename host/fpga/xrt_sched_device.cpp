// The board path: XRT opens the card, loads the xclbin built by hw/sched/vitis, and runs sched_kernel
// with three buffer objects in the banks its arguments connect to, through one xrt::run reused for every
// window. Every XRT failure becomes a std::runtime_error that names the device, the run and what to do.
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#include "host/fpga/sched_device.h"
#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_kernel.h"

namespace fabemu::host::fpga {

namespace hs = hw::sched;

namespace {

// Kernel argument indices, in kernel.xml order.
enum Arg : int { kLinks = 0, kDesc = 1, kCmpl = 2, kNumLinks = 3, kNumDesc = 4 };

// How long wait() lets a run take: the kernel needs about one clock (3.3 ns at 300 MHz) per record
// when memory keeps up; this allows a second plus 1 us per record before calling the run hung.
std::chrono::milliseconds run_timeout(uint64_t records) {
  return std::chrono::milliseconds{1'000 + records / 1'000};
}

std::string state_name(ert_cmd_state s) {
  switch (s) {
    case ERT_CMD_STATE_NEW: return "NEW";
    case ERT_CMD_STATE_QUEUED: return "QUEUED";
    case ERT_CMD_STATE_RUNNING: return "RUNNING";
    case ERT_CMD_STATE_COMPLETED: return "COMPLETED";
    case ERT_CMD_STATE_ERROR: return "ERROR";
    case ERT_CMD_STATE_ABORT: return "ABORT";
    case ERT_CMD_STATE_SUBMITTED: return "SUBMITTED";
    case ERT_CMD_STATE_TIMEOUT: return "TIMEOUT";
    case ERT_CMD_STATE_NORESPONSE: return "NORESPONSE";
    default: return "state " + std::to_string(static_cast<int>(s));
  }
}

class XrtSchedDevice final : public SchedDevice {
 public:
  XrtSchedDevice(unsigned index, const std::string& xclbin) : name_("xrt:" + std::to_string(index)) {
    if (xclbin.empty()) {
      throw std::runtime_error("fpga: --device " + name_ + " needs --xclbin <file> (built by hw/sched/vitis/Makefile)");
    }
    try {
      device_ = xrt::device(index);
    } catch (const std::exception& e) {
      throw std::runtime_error("fpga: cannot open Xilinx FPGA device " + std::to_string(index) + " (" + e.what() +
                               "); is a board installed and its driver loaded (xbutil examine)? Without a board "
                               "use --device hwemu (the RTL under Verilator) or --device model");
    }
    try {
      const xrt::uuid uuid = device_.load_xclbin(xclbin);
      kernel_ = xrt::kernel(device_, uuid, "sched_kernel", xrt::kernel::cu_access_mode::exclusive);
      run_ = xrt::run(kernel_);
    } catch (const std::exception& e) {
      throw std::runtime_error("fpga: cannot load kernel sched_kernel from " + xclbin + " on " + name_ + ": " + e.what());
    }
    name_ += " (" + xclbin + ")";
  }

  std::string describe() const override { return name_; }
  uint32_t link_capacity() override { return kernel_.read_register(hs::REG_LINK_CAP); }

  void allocate(std::size_t links, std::size_t hops) override {
    const auto bytes = [](std::size_t n) { return std::max<std::size_t>(n, 1) * hs::RECORD_BYTES; };
    links_ = xrt::bo(device_, bytes(links), kernel_.group_id(kLinks));
    desc_ = xrt::bo(device_, bytes(hops), kernel_.group_id(kDesc));
    cmpl_ = xrt::bo(device_, bytes(hops), kernel_.group_id(kCmpl));
    link_cap_ = links;
    hop_cap_ = hops;
  }

  void write_links(std::span<const LinkEntry> links) override {
    if (links.size() > link_cap_) throw std::length_error("fpga: more link entries than the allocated buffer holds");
    auto* p = links_.map<uint8_t*>();
    for (std::size_t i = 0; i < links.size(); ++i) std::memcpy(p + i * hs::RECORD_BYTES, hs::encode(links[i]).data(), hs::RECORD_BYTES);
    if (!links.empty()) links_.sync(XCL_BO_SYNC_BO_TO_DEVICE, links.size() * hs::RECORD_BYTES, 0);
  }

  void write_descriptors(std::span<const HopDesc> hops) override {
    if (hops.size() > hop_cap_) throw std::length_error("fpga: more descriptors than the allocated buffer holds");
    auto* p = desc_.map<uint8_t*>();
    for (std::size_t i = 0; i < hops.size(); ++i) std::memcpy(p + i * hs::RECORD_BYTES, hs::encode(hops[i]).data(), hs::RECORD_BYTES);
    if (!hops.empty()) desc_.sync(XCL_BO_SYNC_BO_TO_DEVICE, hops.size() * hs::RECORD_BYTES, 0);
  }

  // The buffers may have been replaced by allocate(): every argument is set again on the one run object.
  void start(uint32_t num_links, uint32_t num_desc) override {
    if (num_links > link_cap_ || num_desc > hop_cap_) throw std::length_error("fpga: run larger than its buffers");
    ++runs_;
    records_ = uint64_t{num_links} + num_desc;
    try {
      run_.set_arg(kLinks, links_);
      run_.set_arg(kDesc, desc_);
      run_.set_arg(kCmpl, cmpl_);
      run_.set_arg(kNumLinks, num_links);
      run_.set_arg(kNumDesc, num_desc);
      run_.start();
    } catch (const std::exception& e) {
      throw std::runtime_error(run_name() + ": cannot start (" + e.what() + ")");
    }
  }

  void wait() override {
    const auto timeout = run_timeout(records_);
    const ert_cmd_state state = run_.wait(timeout);
    if (state == ERT_CMD_STATE_TIMEOUT) {
      const ert_cmd_state after = run_.abort();
      throw std::runtime_error(run_name() + ": no ap_done within " + std::to_string(timeout.count()) + " ms for " +
                               std::to_string(records_) + " records (aborted: " + state_name(after) +
                               "); the kernel is hung or the xclbin is not fabemu's sched_kernel (xbutil examine)");
    }
    if (state != ERT_CMD_STATE_COMPLETED) {
      throw std::runtime_error(run_name() + ": ended in state " + state_name(state) + " instead of COMPLETED");
    }
    check_run_status(kernel_.read_register(hs::REG_STATUS), name_, runs_);
  }

  void read_completions(std::span<Completion> out) override {
    if (out.size() > hop_cap_) throw std::length_error("fpga: more completions than the allocated buffer holds");
    if (out.empty()) return;
    cmpl_.sync(XCL_BO_SYNC_BO_FROM_DEVICE, out.size() * hs::RECORD_BYTES, 0);
    const auto* p = cmpl_.map<const uint8_t*>();
    hs::Record r;
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::memcpy(r.data(), p + i * hs::RECORD_BYTES, hs::RECORD_BYTES);
      out[i] = hs::decode_completion(r);
    }
  }

  uint64_t last_run_cycles() override {
    return uint64_t{kernel_.read_register(hs::REG_CYCLES_LO)} | uint64_t{kernel_.read_register(hs::REG_CYCLES_HI)} << 32;
  }

 private:
  std::string run_name() const { return "fpga: sched_kernel run " + std::to_string(runs_) + " on " + name_; }

  std::string name_;
  xrt::device device_;
  xrt::kernel kernel_;
  xrt::bo links_, desc_, cmpl_;
  xrt::run run_;
  uint64_t runs_ = 0;     // runs started, for messages
  uint64_t records_ = 0;  // link entries + descriptors of the current run
  std::size_t link_cap_ = 0;
  std::size_t hop_cap_ = 0;
};

}  // namespace

std::unique_ptr<SchedDevice> open_xrt_device(unsigned index, const std::string& xclbin) {
  return std::make_unique<XrtSchedDevice>(index, xclbin);
}

}  // namespace fabemu::host::fpga
