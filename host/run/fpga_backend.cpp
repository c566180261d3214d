// `--fabric fpga`: the FPGA kernel computes every packet-hop of the packet model (--device hwemu, model or
// xrt:N with --xclbin; host/fpga/README.md).
#include <fmt/core.h>

#include <memory>

#include "emulator/link_results.h"
#include "host/fpga/fpga_fabric.h"
#include "host/run/backend.h"

namespace fabemu::run {
namespace {

class FpgaBackend final : public LocalBackend {
 public:
  explicit FpgaBackend(const BackendContext& c)
      : fabric_(host::fpga::make_fpga_fabric(c.engine, c.topology, c.plan.mtu,
                                             c.args.device.empty() ? "hwemu" : c.args.device, c.args.xclbin)) {}

  void finish(emu::RunResult& result) override {
    result.links = emu::link_results(*fabric_, result.total);
    host::fpga::FpgaFabric& f = *fabric_;
    result.sections.emplace_back(
        "fpga", fmt::format("{{\"device\": \"{}\", \"runs\": {}, \"hops\": {}, \"cycles\": {}}}",
                            f.device().describe(), f.device_runs(), f.device_hops(), f.device_cycles()));
  }

  std::string summary_section() const override {
    host::fpga::FpgaFabric& f = *fabric_;
    return fmt::format(
        "FPGA\n  device              {}\n  kernel runs         {} (conservative windows of the smallest link "
        "latency)\n  packet-hops         {} in {} kernel cycles\n",
        f.device().describe(), f.device_runs(), f.device_hops(), f.device_cycles());
  }

 protected:
  emu::Fabric& fabric() override { return *fabric_; }

 private:
  std::unique_ptr<host::fpga::FpgaFabric> fabric_;
};

}  // namespace

std::unique_ptr<Backend> make_fpga_backend(const BackendContext& context) {
  return std::make_unique<FpgaBackend>(context);
}

}  // namespace fabemu::run
