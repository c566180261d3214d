#include "host/fpga/sched_device.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "rtl_models/device_memory.h"
#include "rtl_models/sched_kernel_model.h"
#ifdef FABEMU_HAVE_VERILATOR
#include "rtl_models/sched_hwemu.h"
#endif

namespace fabemu::host::fpga {

namespace hs = hw::sched;

#ifdef FABEMU_HAVE_XRT
// xrt_sched_device.cpp
std::unique_ptr<SchedDevice> open_xrt_device(unsigned index, const std::string& xclbin);
#endif

namespace {

// A device reached through registers and a DeviceMemory: the C++ model and the Verilated RTL.
// Kernel: write_reg, read_reg, start, wait_done.
template <typename Kernel>
class MmioDevice final : public SchedDevice {
 public:
  explicit MmioDevice(std::string name) : name_(std::move(name)), kernel_(mem_) {}

  std::string describe() const override { return name_; }
  uint32_t link_capacity() override { return kernel_.read_reg(hs::REG_LINK_CAP); }

  void allocate(std::size_t links, std::size_t hops) override {
    mem_.clear();
    link_cap_ = links;
    hop_cap_ = hops;
    links_addr_ = mem_.allocate(links * hs::RECORD_BYTES);
    desc_addr_ = mem_.allocate(hops * hs::RECORD_BYTES);
    cmpl_addr_ = mem_.allocate(hops * hs::RECORD_BYTES);
  }

  void write_links(std::span<const LinkEntry> links) override {
    if (links.size() > link_cap_) throw std::length_error("fpga: more link entries than the allocated buffer holds");
    for (std::size_t i = 0; i < links.size(); ++i) {
      const auto r = hs::encode(links[i]);
      mem_.write(links_addr_ + i * hs::RECORD_BYTES, r.data(), r.size());
    }
  }

  void write_descriptors(std::span<const HopDesc> hops) override {
    if (hops.size() > hop_cap_) throw std::length_error("fpga: more descriptors than the allocated buffer holds");
    for (std::size_t i = 0; i < hops.size(); ++i) {
      const auto r = hs::encode(hops[i]);
      mem_.write(desc_addr_ + i * hs::RECORD_BYTES, r.data(), r.size());
    }
  }

  void start(uint32_t num_links, uint32_t num_desc) override {
    if (num_links > link_cap_ || num_desc > hop_cap_) throw std::length_error("fpga: run larger than its buffers");
    const auto put64 = [&](uint32_t lo, uint64_t v) {
      kernel_.write_reg(lo, static_cast<uint32_t>(v));
      kernel_.write_reg(lo + 4, static_cast<uint32_t>(v >> 32));
    };
    put64(hs::REG_LINKS_ADDR_LO, links_addr_);
    put64(hs::REG_DESC_ADDR_LO, desc_addr_);
    put64(hs::REG_CMPL_ADDR_LO, cmpl_addr_);
    kernel_.write_reg(hs::REG_NUM_LINKS, num_links);
    kernel_.write_reg(hs::REG_NUM_DESC, num_desc);
    kernel_.start();
  }

  void wait() override {
    kernel_.wait_done();
    check_run_status(kernel_.read_reg(hs::REG_STATUS), name_, ++runs_);
  }

  void read_completions(std::span<Completion> out) override {
    if (out.size() > hop_cap_) throw std::length_error("fpga: more completions than the allocated buffer holds");
    hs::Record r;
    for (std::size_t i = 0; i < out.size(); ++i) {
      mem_.read(cmpl_addr_ + i * hs::RECORD_BYTES, r.data(), r.size());
      out[i] = hs::decode_completion(r);
    }
  }

  uint64_t last_run_cycles() override {
    return uint64_t{kernel_.read_reg(hs::REG_CYCLES_LO)} | uint64_t{kernel_.read_reg(hs::REG_CYCLES_HI)} << 32;
  }

 private:
  std::string name_;
  rtl::DeviceMemory mem_;
  Kernel kernel_;
  std::size_t link_cap_ = 0;
  std::size_t hop_cap_ = 0;
  uint64_t links_addr_ = 0;
  uint64_t desc_addr_ = 0;
  uint64_t cmpl_addr_ = 0;
  uint64_t runs_ = 0;
};

}  // namespace

void check_run_status(uint32_t status, const std::string& device, uint64_t run) {
  const bool rd = ((status >> hs::STATUS_RD_ERR) & 1) != 0;
  const bool wr = ((status >> hs::STATUS_WR_ERR) & 1) != 0;
  if (!rd && !wr) return;
  std::string what;
  if (rd) what = "a read of the link table or descriptors (m00_axi) answered RRESP != OKAY";
  if (wr) what += std::string(rd ? "; " : "") + "a completion write (m01_axi) answered BRESP != OKAY";
  throw std::runtime_error("fpga: sched_kernel run " + std::to_string(run) + " on " + device + " failed: " + what +
                           " (REG_STATUS = " + std::to_string(status) + "); its completions are not valid. Check the "
                           "buffers' device addresses and banks (hw/sched/vitis/*.cfg)");
}

bool has_backend(const std::string& backend) noexcept {
  if (backend == "model") return true;
#ifdef FABEMU_HAVE_VERILATOR
  if (backend == "hwemu") return true;
#endif
#ifdef FABEMU_HAVE_XRT
  if (backend == "xrt") return true;
#endif
  return false;
}

std::unique_ptr<SchedDevice> open_sched_device(const std::string& spec, const std::string& xclbin) {
  if (spec == "model") return std::make_unique<MmioDevice<rtl::SchedKernelModel>>("model");
  if (spec == "hwemu") {
#ifdef FABEMU_HAVE_VERILATOR
    return std::make_unique<MmioDevice<rtl::SchedHwEmu>>("hwemu");
#else
    throw std::runtime_error("fpga: this fabemu was built without Verilator, so --device hwemu is unavailable; "
                             "install verilator (host/tools/install-deps.sh) and rebuild, or use --device model");
#endif
  }
  if (spec.rfind("xrt:", 0) == 0) {
    const std::string idx = spec.substr(4);
    if (idx.empty() || idx.size() > 3 || !std::all_of(idx.begin(), idx.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      throw std::invalid_argument("fpga: device '" + spec + "': expected xrt:<index>, e.g. xrt:0");
    }
#ifdef FABEMU_HAVE_XRT
    return open_xrt_device(static_cast<unsigned>(std::stoul(idx)), xclbin);
#else
    (void)xclbin;
    throw std::runtime_error("fpga: this fabemu was built without XRT, so --device " + spec +
                             " is unavailable; install libxrt-dev and rebuild, or use --device hwemu or model");
#endif
  }
  throw std::invalid_argument("fpga: unknown device '" + spec + "' (expected xrt:<index>, hwemu or model)");
}

std::vector<Completion> schedule(SchedDevice& device, std::span<const LinkEntry> links, std::span<const HopDesc> hops,
                                 std::size_t window) {
  if (window == 0 || window > 0xffff'ffffu) throw std::invalid_argument("fpga::schedule: window must be 1..2^32-1");
  if (links.size() > device.link_capacity()) {
    throw std::invalid_argument("fpga::schedule: " + std::to_string(links.size()) + " links, but the kernel of " +
                                device.describe() + " holds " + std::to_string(device.link_capacity()));
  }
  for (const HopDesc& h : hops) {
    if (h.link >= links.size()) {
      throw std::invalid_argument("fpga::schedule: hop " + std::to_string(h.tag) + " names link " +
                                  std::to_string(h.link) + " of " + std::to_string(links.size()));
    }
  }
  const std::size_t per_run = std::min(window, std::max<std::size_t>(hops.size(), 1));
  device.allocate(links.size(), per_run);
  device.write_links(links);
  std::vector<Completion> out(hops.size());
  bool loaded = false;
  for (std::size_t b = 0; b < hops.size() || !loaded; b += per_run) {
    const std::size_t n = std::min(per_run, hops.size() - std::min(b, hops.size()));
    device.write_descriptors(hops.subspan(b, n));
    device.start(loaded ? 0 : static_cast<uint32_t>(links.size()), static_cast<uint32_t>(n));
    device.wait();
    device.read_completions(std::span<Completion>(out).subspan(b, n));
    loaded = true;
  }
  return out;
}

}  // namespace fabemu::host::fpga
