// `--fabric fpga`: the FPGA scheduler runs the packet model. `--fpga-interface hops` (default): the host
// keeps the packets and the kernel computes every packet-hop (--device hwemu, model or xrt:N with
// --xclbin). `--fpga-interface messages`: the card keeps the packets, one descriptor in and one delivery
// record out per message (--device model, the default, or hwemu). host/fpga/README.md.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "emulator/dilation.h"
#include "emulator/histogram.h"
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

// `--fabric fpga --dilation D`: the card's wire (hardware in the loop, hw/sched/doc/sched_hil.md).
bool hardware_in_the_loop(const RunArgs& a) { return a.fabric == "fpga" && a.was_given("--dilation"); }

rtl::HilOptions hil_options(const RunArgs& a) {
  rtl::HilOptions o;
  o.dilation_q16 = emu::dilation_q16(a.dilation);
  const double mhz = 1e6 * static_cast<double>(rtl::kTxPeriodDen) / static_cast<double>(rtl::kTxPeriodNum);
  o.device.latency_cycles = static_cast<uint64_t>(std::llround(a.fpga_device_delay_us * mhz));
  o.device.rate_mbps = static_cast<uint64_t>(std::llround(a.fpga_device_rate_gbps * 1000.0));
  o.device.ecn_bytes = a.fpga_device_ecn_bytes;
  o.device.drop_every = a.fpga_device_drop;
  return o;
}

std::unique_ptr<host::fpga::FpgaMsgFabric> msg_fabric(const BackendContext& c) {
  if (hardware_in_the_loop(c.args)) {
    return host::fpga::make_fpga_hil_fabric(c.engine, c.topology, c.plan.mtu, c.args.device.empty() ? "hwemu" : c.args.device,
                                            hil_options(c.args));
  }
  return host::fpga::make_fpga_msg_fabric(c.engine, c.topology, c.plan.mtu, c.args.device.empty() ? "model" : c.args.device);
}

// The wire's figures: cycles of 102400/33 ps (322.265625 MHz); the latency histogram in emulated ps.
struct WireFigures {
  emu::LogHistogram latency;
  double worst_late_ns = 0, wall_ms = 0;
  explicit WireFigures(const rtl::HilReport& w) {
    for (std::size_t b = 0; b < w.histogram.size(); ++b) latency.record(emu::LogHistogram::lowest(b), w.histogram[b]);
    const double ns = static_cast<double>(rtl::kTxPeriodNum) / static_cast<double>(rtl::kTxPeriodDen) / 1000.0;
    worst_late_ns = static_cast<double>(w.worst_late_cycles) * ns;
    wall_ms = static_cast<double>(w.cycles) * ns / 1e6;
  }
};

using WireCollective = host::fpga::FpgaMsgFabric::WireCollective;

std::string deviation_json(double v) { return std::isfinite(v) ? fmt::format("{:.6f}", v) : std::string("null"); }

std::string wire_json(const rtl::HilReport& w, const rtl::HilOptions& o, uint32_t npus,
                      const std::vector<WireCollective>& colls) {
  const WireFigures f(w);
  std::string collectives;
  for (const WireCollective& c : colls) {
    collectives += fmt::format("{}{{\"index\": {}, \"messages\": {}, \"arrived\": {}, \"bytes\": {}, \"modelled_ps\": {}, "
                               "\"measured_ps\": {}, \"deviation\": {}, \"late_start_ps\": {}}}",
                               collectives.empty() ? "" : ", ", c.coll, c.messages, c.arrived, c.bytes, c.modelled_ps,
                               c.measured_ps, deviation_json(c.deviation), c.late_start_ps);
  }
  std::string flows;
  for (const rtl::HilFlow& fl : w.flows) {
    flows += fmt::format("{}{{\"src\": {}, \"dst\": {}, \"sent\": {}, \"frames\": {}, \"payload_bytes\": {}, "
                         "\"wire_bytes\": {}, \"lost\": {}, \"reordered\": {}, \"ce\": {}}}",
                         flows.empty() ? "" : ", ", fl.flow / npus, fl.flow % npus, fl.sent, fl.frames, fl.payload,
                         fl.wire, fl.lost, fl.reordered, fl.ce);
  }
  const emu::LogHistogram& h = f.latency;
  return fmt::format(
      "{{\"clock_mhz\": 322.265625, \"dilation\": {}, \"lead_cycles\": {}, \"cycles\": {}, \"wall_ms\": {:.6f}, "
      "\"frames_sent\": {}, \"frames_received\": {}, \"late_frames\": {}, \"worst_late_cycles\": {}, "
      "\"worst_late_ns\": {:.3f}, \"device\": {{\"latency_cycles\": {}, \"rate_mbps\": {}, \"ecn_bytes\": {}, "
      "\"drop_every\": {}, \"frames\": {}, \"dropped\": {}, \"marked\": {}}}, \"latency_ps\": {{\"count\": {}, "
      "\"min\": {}, \"p50\": {}, \"p99\": {}, \"max\": {}, \"mean\": {:.1f}}}, \"flows\": [{}], \"collectives\": [{}]}}",
      static_cast<double>(o.dilation_q16) / 65536.0, o.lead_cycles, w.cycles, f.wall_ms, w.frames_sent, w.rx_frames,
      w.late_measured, w.worst_late_cycles, f.worst_late_ns, o.device.latency_cycles, o.device.rate_mbps,
      o.device.ecn_bytes, o.device.drop_every, w.device.frames, w.device.dropped, w.device.marked, h.count(), h.min(),
      h.quantile(0.5), h.quantile(0.99), h.max(), h.mean(), flows, collectives);
}

std::string wire_text(const rtl::HilReport& w, const rtl::HilOptions& o, uint32_t npus,
                      const std::vector<WireCollective>& colls) {
  const WireFigures f(w);
  const emu::LogHistogram& h = f.latency;
  std::string s = fmt::format(
      "  wire                dilation {}, 322.265625 MHz 512-bit stream, lead {} cycles; {} cycles ({:.3f} ms of wall time)\n"
      "  frames              {} sent, {} received; the device dropped {} and marked {} CE\n"
      "  late departures     {} (worst {} cycles, {:.1f} ns)\n"
      "  arrival latency     {} frames, measured - modelled departure: min {} / p50 {} / p99 {} / max {} ps\n",
      static_cast<double>(o.dilation_q16) / 65536.0, o.lead_cycles, w.cycles, f.wall_ms, w.frames_sent, w.rx_frames,
      w.device.dropped, w.device.marked, w.late_measured, w.worst_late_cycles, f.worst_late_ns, h.count(), h.min(),
      h.quantile(0.5), h.quantile(0.99), h.max());
  if (!colls.empty()) {
    std::vector<double> dev;
    for (const WireCollective& c : colls) dev.push_back(c.deviation);
    std::sort(dev.begin(), dev.end());
    const std::size_t n = dev.size();
    const double median = n % 2 == 1 ? dev[n / 2] : (dev[n / 2 - 1] + dev[n / 2]) / 2;
    s += fmt::format("  measured/modelled   {} collectives (last arrival at the receive path vs last modelled delivery): "
                     "deviation median {:+.3f}%, min {:+.3f}%, max {:+.3f}%\n",
                     n, 100 * median, 100 * dev.front(), 100 * dev.back());
  }
  s += "  flows               src -> dst: frames sent, received, lost, reordered, CE\n";
  for (const rtl::HilFlow& fl : w.flows) {
    s += fmt::format("    {:>4} -> {:<4}      {} {} {} {} {}\n", fl.flow / npus, fl.flow % npus, fl.sent, fl.frames,
                     fl.lost, fl.reordered, fl.ce);
  }
  return s;
}

class FpgaMsgBackend final : public LocalBackend {
 public:
  explicit FpgaMsgBackend(const BackendContext& c)
      : fabric_(msg_fabric(c)), hil_(hil_options(c.args)), npus_(static_cast<uint32_t>(c.topology.npus())) {}

  void finish(emu::RunResult& result) override {
    fabric_->finish();
    result.links = emu::link_results(*fabric_, result.total);
    host::fpga::FpgaMsgFabric& f = *fabric_;
    const host::fpga::MsgTraffic& t = f.device().traffic();
    result.sections.emplace_back(
        "fpga",
        fmt::format("{{\"device\": \"{}\", \"interface\": \"messages\", \"messages\": {}, \"routes\": {}, \"syncs\": {}, "
                    "\"card_events\": {}, \"packet_hops\": {}, \"bytes_to_card\": {}, \"bytes_from_card\": {}, "
                    "\"transfers\": {}, \"doorbells\": {}, \"polls\": {}{}}}",
                    f.device().describe(), f.messages_pushed(), f.routes_loaded(), f.syncs(), f.device().card_events(),
                    f.device().card_packet_hops(), t.bytes_to_card, t.bytes_from_card, t.transfers, t.doorbells,
                    t.polls, f.wire() == nullptr ? std::string() : ", \"wire\": " + wire_json(*f.wire(), hil_, npus_, f.wire_collectives())));
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
        t.doorbells, t.polls) + (f.wire() == nullptr ? std::string() : wire_text(*f.wire(), hil_, npus_, f.wire_collectives()));
  }

 protected:
  emu::Fabric& fabric() override { return *fabric_; }

 private:
  std::unique_ptr<host::fpga::FpgaMsgFabric> fabric_;
  rtl::HilOptions hil_;
  uint32_t npus_;
};

}  // namespace

std::unique_ptr<Backend> make_fpga_backend(const BackendContext& context) {
  if (context.args.fpga_interface == "messages" || hardware_in_the_loop(context.args)) {
    return std::make_unique<FpgaMsgBackend>(context);
  }
  return std::make_unique<FpgaHopBackend>(context);
}

}  // namespace fabemu::run
