// `--fabric fpga`: the FPGA scheduler runs the packet model. `--fpga-interface hops` (default): the host
// keeps the packets and the kernel computes every packet-hop (--device hwemu, model or xrt:N with
// --xclbin). `--fpga-interface messages`: the card keeps the packets, one descriptor in and one delivery
// record out per message (--device model, the default, or hwemu). host/fpga/README.md.
#include <fmt/core.h>

#include <memory>

#include "emulator/link_results.h"
#include "host/fpga/fpga_fabric.h"
#include "host/fpga/fpga_msg_fabric.h"
#include "host/run/backend.h"

namespace fabemu::run {
namespace {

class FpgaHopBackend final : public LocalBackend {
 public:
  explicit FpgaHopBackend(const BackendContext& c)
      : fabric_(host::fpga::make_fpga_fabric(c.engine, c.topology, c.plan.mtu,
                                             c.args.device.empty() ? "hwemu" : c.args.device, c.args.xclbin)) {}

  void finish(emu::RunResult& result) override {
    result.links = emu::link_results(*fabric_, result.total);
    host::fpga::FpgaFabric& f = *fabric_;
    result.sections.emplace_back(
        "fpga", fmt::format("{{\"device\": \"{}\", \"interface\": \"hops\", \"runs\": {}, \"hops\": {}, \"cycles\": {}}}",
                            f.device().describe(), f.device_runs(), f.device_hops(), f.device_cycles()));
  }

  std::string summary_section() const override {
    host::fpga::FpgaFabric& f = *fabric_;
    return fmt::format(
        "FPGA\n  device              {}\n  interface           hops\n  kernel runs         {} (conservative windows of "
        "the smallest link latency)\n  packet-hops         {} in {} kernel cycles\n",
        f.device().describe(), f.device_runs(), f.device_hops(), f.device_cycles());
  }

 protected:
  emu::Fabric& fabric() override { return *fabric_; }

 private:
  std::unique_ptr<host::fpga::FpgaFabric> fabric_;
};

class FpgaMsgBackend final : public LocalBackend {
 public:
  explicit FpgaMsgBackend(const BackendContext& c)
      : fabric_(host::fpga::make_fpga_msg_fabric(c.engine, c.topology, c.plan.mtu,
                                                 c.args.device.empty() ? "model" : c.args.device)) {}

  void finish(emu::RunResult& result) override {
    fabric_->finish();
    result.links = emu::link_results(*fabric_, result.total);
    host::fpga::FpgaMsgFabric& f = *fabric_;
    const host::fpga::MsgTraffic& t = f.device().traffic();
    result.sections.emplace_back(
        "fpga",
        fmt::format("{{\"device\": \"{}\", \"interface\": \"messages\", \"messages\": {}, \"routes\": {}, \"syncs\": {}, "
                    "\"card_events\": {}, \"packet_hops\": {}, \"bytes_to_card\": {}, \"bytes_from_card\": {}, "
                    "\"transfers\": {}, \"doorbells\": {}, \"polls\": {}}}",
                    f.device().describe(), f.messages_pushed(), f.routes_loaded(), f.syncs(), f.device().card_events(),
                    f.device().card_packet_hops(), t.bytes_to_card, t.bytes_from_card, t.transfers, t.doorbells,
                    t.polls));
  }

  std::string summary_section() const override {
    host::fpga::FpgaMsgFabric& f = *fabric_;
    const host::fpga::MsgTraffic& t = f.device().traffic();
    const uint64_t n = f.messages_pushed() == 0 ? 1 : f.messages_pushed();
    return fmt::format(
        "FPGA\n  device              {}\n  interface           messages (the card keeps the packets)\n"
        "  messages            {} on {} routes; {} packet-hops in {} card events\n"
        "  host-card traffic   {} bytes to the card, {} from it ({:.1f} per message) in {} transfers\n"
        "  synchronisation     {} syncs ({} doorbells, {} polls)\n",
        f.device().describe(), f.messages_pushed(), f.routes_loaded(), f.device().card_packet_hops(),
        f.device().card_events(), t.bytes_to_card, t.bytes_from_card,
        static_cast<double>(t.bytes_to_card + t.bytes_from_card) / static_cast<double>(n), t.transfers, f.syncs(),
        t.doorbells, t.polls);
  }

 protected:
  emu::Fabric& fabric() override { return *fabric_; }

 private:
  std::unique_ptr<host::fpga::FpgaMsgFabric> fabric_;
};

}  // namespace

std::unique_ptr<Backend> make_fpga_backend(const BackendContext& context) {
  if (context.args.fpga_interface == "messages") return std::make_unique<FpgaMsgBackend>(context);
  return std::make_unique<FpgaHopBackend>(context);
}

}  // namespace fabemu::run
