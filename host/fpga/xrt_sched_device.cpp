// The board path: XRT opens the card, loads the xclbin built by hw/sched/vitis, and runs sched_kernel
// with three buffer objects in the banks its arguments connect to. Every XRT failure becomes a
// std::runtime_error that names the device and says what to do.
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

  void start(uint32_t num_links, uint32_t num_desc) override {
    run_ = xrt::run(kernel_);
    run_.set_arg(kLinks, links_);
    run_.set_arg(kDesc, desc_);
    run_.set_arg(kCmpl, cmpl_);
    run_.set_arg(kNumLinks, num_links);
    run_.set_arg(kNumDesc, num_desc);
    run_.start();
  }

  void wait() override {
    const auto state = run_.wait();
    if (state != ERT_CMD_STATE_COMPLETED) {
      throw std::runtime_error("fpga: sched_kernel on " + name_ + " ended in state " + std::to_string(static_cast<int>(state)));
    }
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
  std::string name_;
  xrt::device device_;
  xrt::kernel kernel_;
  xrt::bo links_, desc_, cmpl_;
  xrt::run run_;
  std::size_t link_cap_ = 0;
  std::size_t hop_cap_ = 0;
};

}  // namespace

std::unique_ptr<SchedDevice> open_xrt_device(unsigned index, const std::string& xclbin) {
  return std::make_unique<XrtSchedDevice>(index, xclbin);
}

}  // namespace fabemu::host::fpga
