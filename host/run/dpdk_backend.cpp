// `--fabric dpdk`: every message as real Ethernet frames through DPDK devices (an in-process ring pair or
// memif, or the user's --dpdk-devargs), delivered to the walker at the packet model's times; EAL arguments
// after `--` (host/dpdk/README.md). Built only with DPDK.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "host/wire/address_plan.h"
#include "host/dpdk/dpdk_env.h"
#include "host/dpdk/dpdk_fabric.h"
#include "host/run/backend.h"
#include "host/run/live_endpoint.h"
#include "host/run/exit_status.h"
#include "host/run/lcore_ids.h"

namespace fabemu::run {
namespace {

namespace hd = host::dpdk;

// Stops EAL when the run is over (after the fabric and the ports, which are destroyed first).
struct EalSession {
  bool started = false;
  ~EalSession() {
    if (started) hd::Eal::shutdown();
  }
};

// The memif socket file of --dpdk-port memif, removed when the run is over.
struct MemifSocketFile {
  std::string path;
  ~MemifSocketFile() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove(path, ec);
  }
};

// --dpdk-rx-lcore: auto, off, all, an lcore id, or a list of them (several receive lcores, a queue each).
std::vector<unsigned> receive_lcores(const RunArgs& a) {
  std::vector<unsigned> rx_lcores = lcore_list(a.dpdk_rx_lcore).value_or(std::vector<unsigned>{});
  if (a.dpdk_rx_lcore == "all" && a.dpdk_devargs.size() != 1) {
    // Every worker lcore EAL has; one of them is `auto`'s choice, none leaves the receive side on the main
    // lcore (as auto; so does one device looping frames back).
    rx_lcores = hd::Eal::idle_worker_lcores();
    if (rx_lcores.size() < 2) rx_lcores.clear();
  }
  return rx_lcores;
}

// --dpdk-tx-lcore: off, auto, all, an lcore id, or a list of them (a transmit lane each). auto and all take
// the worker lcores the receive side leaves (--dpdk-rx-lcore auto takes the first, with two ports).
std::vector<unsigned> transmit_lcores(const RunArgs& a, const std::vector<unsigned>& rx_lcores) {
  if (a.dpdk_tx_lcore == "off") return {};
  if (const auto id = lcore_id(a.dpdk_tx_lcore)) return {*id};
  if (const auto ids = lcore_list(a.dpdk_tx_lcore)) return *ids;
  std::vector<unsigned> idle = hd::Eal::idle_worker_lcores();
  const bool rx_auto = rx_lcores.empty() && a.dpdk_devargs.size() != 1 && a.dpdk_rx_lcore != "off";
  std::vector<unsigned> taken = rx_lcores;
  if (rx_auto && (a.dpdk_rx_lcore == "auto" || a.dpdk_rx_lcore == "all") && !idle.empty()) taken.push_back(idle.front());
  if (rx_auto) {
    if (const auto id = lcore_id(a.dpdk_rx_lcore)) taken.push_back(*id);
  }
  std::erase_if(idle, [&](unsigned id) { return std::find(taken.begin(), taken.end(), id) != taken.end(); });
  // (erase, not resize(1): GCC 12 at -O3 sees resize's growth path and gives a false -Warray-bounds.)
  if (a.dpdk_tx_lcore == "auto" && idle.size() > 1) idle.erase(idle.begin() + 1, idle.end());
  return idle;  // none: the main lcore sends (a warning says so)
}

hd::PortConfig port_config(const RunArgs& a, const emu::Topology& topology, uint16_t queues, size_t tx_lcores) {
  const auto tx_lanes = static_cast<uint16_t>(std::max<size_t>(1, tx_lcores));
  hd::PortConfig cfg;
  cfg.rx_queues = queues;
  cfg.tx_queues = static_cast<uint16_t>(queues * tx_lanes);  // port A's: a queue per receive path per lane
  // Sized from the workload: its rank count sets what the fabric holds outside the device rings.
  // (one mempool cache per lcore that touches the pools: the main one, the receive side's, the transmit side's).
  cfg.mbufs = cfg.mbufs_for(
      hd::DpdkFabric::frames_in_flight(static_cast<uint32_t>(topology.npus()), queues, tx_lanes), 32,
      std::min(static_cast<unsigned>(queues + tx_lcores + 1), rte_lcore_count()));
  cfg.mtu = static_cast<uint16_t>(std::min<uint32_t>(a.wire_mtu, 65535));
  if (a.wire_mtu > 1500) cfg.data_room = hd::PortConfig::data_room_for_mtu(a.wire_mtu);
  return cfg;
}

std::unique_ptr<hd::DpdkPorts> open_ports(const RunArgs& a, hd::PortConfig cfg, uint16_t queues,
                                          MemifSocketFile& memif) {
  if (!a.dpdk_devargs.empty()) {
    if (a.dpdk_devargs.size() > 2) throw std::invalid_argument("--dpdk-devargs: at most two devices (A, then B)");
    return std::make_unique<hd::DpdkPorts>(
        hd::DpdkPorts::devargs(a.dpdk_devargs[0], a.dpdk_devargs.size() > 1 ? a.dpdk_devargs[1] : "", cfg));
  }
  if (a.dpdk_port == "memif") {
    memif.path = (std::filesystem::temp_directory_path() / fmt::format("fabemu-memif-{}.sock", ::getpid())).string();
    return std::make_unique<hd::DpdkPorts>(hd::DpdkPorts::memif(memif.path, cfg));
  }
  hd::RingDevice device;
  device.delay_ns = static_cast<uint64_t>(std::llround(a.dpdk_ring_delay_us * 1000.0));
  device.bytes_per_sec = static_cast<uint64_t>(std::llround(a.dpdk_ring_rate_gbps * 1e9 / 8));
  device.ecn_bytes = a.dpdk_ring_ecn_bytes;
  if (device.any()) cfg.mbufs += hd::DpdkPorts::kRingDelayFrames;  // the frames the device holds
  return std::make_unique<hd::DpdkPorts>(hd::DpdkPorts::ring("run", cfg, queues, device));
}

hd::DpdkFabricOptions fabric_options(const RunArgs& a, uint32_t mtu, const std::vector<unsigned>& rx_lcores,
                                     const std::vector<unsigned>& tx_lcores) {
  hd::DpdkFabricOptions o;
  o.model_mtu = mtu == 0 ? ~uint32_t{0} : mtu;
  o.mode = a.roce ? hd::WireMode::kRoceV2 : hd::WireMode::kFabemu;
  o.wire_mtu = a.wire_mtu;
  o.dscp = static_cast<uint8_t>(a.wire_dscp);
  o.ecn = hd::sender_ecn(a.wire_ecn).value_or(hd::Ecn::kNotEct);  // CLI::IsMember took only those three
  o.dilation = a.as_fast_as_possible ? 0.0 : a.dilation;
  o.faults.drop_rate = a.drop_rate;
  o.faults.reorder_rate = a.reorder_rate;
  o.faults.duplicate_rate = a.duplicate_rate;
  o.faults.seed = a.fault_seed;
  o.pcap = a.pcap;
  o.tx_lcores = tx_lcores;
  if (!rx_lcores.empty()) {
    o.rx_lcores = rx_lcores;
  } else if (a.dpdk_rx_lcore == "off") {
    o.rx_lcore = hd::DpdkFabricOptions::kRxLcoreOff;
  } else if (a.dpdk_rx_lcore != "auto" && a.dpdk_rx_lcore != "all") {
    o.rx_lcore = static_cast<int>(lcore_id(a.dpdk_rx_lcore).value());  // checked by the option's validator
  }
  if (a.dpdk_verify_checksums == "on") o.checksums = hd::DpdkFabricOptions::Checksums::kOn;
  o.stall_timeout = emu::Duration::from_ms(a.dpdk_stall_timeout_ms);
  o.ahead = emu::Duration::from_us(a.dpdk_ahead_us);
  if (a.dpdk_rto_us <= a.dpdk_nack_delay_us) {
    throw std::invalid_argument(fmt::format(
        "--dpdk-rto {} us must exceed --dpdk-nack-delay {} us: a packet would time out before its NACK could come",
        a.dpdk_rto_us, a.dpdk_nack_delay_us));
  }
  o.rto = emu::Duration::from_us(a.dpdk_rto_us);
  o.nack_delay = emu::Duration::from_us(a.dpdk_nack_delay_us);
  o.window = a.dpdk_window;
  return o;
}

hd::AddressPlan address_plan(const RunArgs& a, const emu::Topology& topology) {
  auto plan = a.address_plan.empty() ? hd::AddressPlan::make_default(static_cast<uint32_t>(topology.npus()))
                                     : hd::AddressPlan::load_yaml(a.address_plan);
  if (plan.size() < static_cast<uint32_t>(topology.npus())) {
    throw std::invalid_argument(fmt::format("{}: the address plan has ranks 0 to {}, the topology {} NPUs: every NPU "
                                            "needs an address (ranks beyond the topology's are not used)",
                                            a.address_plan, plan.size() - 1, topology.npus()));
  }
  return plan;
}

// EAL's arguments: the user's (after --) or the defaults without hugepages. Under -q, EAL logs errors only
// (its start-up lines are notices and infos): the level comes first, so that a --log-level of the user's
// still decides.
std::vector<std::string> eal_args(const RunArgs& a) {
  std::vector<std::string> v = a.eal_args.empty() ? hd::Eal::no_huge_args() : a.eal_args;
  if (a.quiet) v.insert(v.begin(), "--log-level=error");
  return v;
}

class DpdkBackend final : public RealtimeBackend {
 public:
  explicit DpdkBackend(const BackendContext& c) : args_(c.args) {
    hd::Eal::start(eal_args(args_));
    eal_.started = true;
    const std::vector<unsigned> rx_lcores = receive_lcores(args_);
    const std::vector<unsigned> tx_lcores = transmit_lcores(args_, rx_lcores);
    const auto queues = static_cast<uint16_t>(std::max<size_t>(1, rx_lcores.size()));
    const auto lanes = static_cast<uint16_t>(std::max<size_t>(1, tx_lcores.size()));
    if (lanes > 1 && args_.dpdk_devargs.empty() && args_.dpdk_port == "memif") {
      throw std::invalid_argument(fmt::format(
          "--dpdk-tx-lcore {}: memif pairs each transmit queue of one end with the receive queue of the same number, "
          "so {} transmit lcores would send on queues no receive path polls; use --dpdk-port ring or a NIC",
          args_.dpdk_tx_lcore, lanes));
    }
    try {
      ports_ = open_ports(args_, port_config(args_, c.topology, queues, tx_lcores.size()), queues, memif_);
    } catch (const std::runtime_error& e) {
      if (lanes == 1) throw;
      throw std::runtime_error(fmt::format("--dpdk-tx-lcore {}: {} transmit lcores take {} transmit queues of port A: {}",
                                           args_.dpdk_tx_lcore, lanes, queues * lanes, e.what()));
    }
    hd::DpdkFabricOptions o = fabric_options(args_, c.plan.mtu, rx_lcores, tx_lcores);
    if (!args_.metrics.empty()) {
      live_ = std::make_unique<LiveEndpoint>(args_.metrics, c.topology.links().size(), "dpdk");
      o.live = &live_->live();
      if (!args_.quiet) fmt::print(stderr, "fabemu: metrics on {}\n", live_->url());
    }
    fabric_ = std::make_unique<hd::DpdkFabric>(c.topology, address_plan(args_, c.topology), *ports_, o);
  }

  // The fabric's section, then its ports and "Measured vs modelled".
  void add_to(emu::RunResult& result, std::string& section) const override {
    const hd::DpdkStats& st = fabric_->stats();
    add_warnings(st, result);
    section += "  ports               " + ports_->describe() + "\n";
    const std::string mvm = hd::format_measured_vs_modelled(st, result, args_.top);
    if (!mvm.empty()) section += "\n" + mvm;
  }

  std::optional<int> own_exit_status() override {
    if (!fabric_->stats().pcap_error.empty()) {
      fmt::print(stderr, "fabemu: error: the --pcap capture failed: {}; the run went on and its summary and report are "
                         "whole, the capture is not\n",
                 fabric_->stats().pcap_error);
      return kExitError;
    }
    return std::nullopt;
  }

 protected:
  hd::RealtimeFabric& realtime() override { return *fabric_; }

 private:
  void add_warnings(const hd::DpdkStats& st, emu::RunResult& result) const {
    if (!st.pcap_error.empty()) result.warnings.push_back("DPDK fabric: the --pcap capture failed: " + st.pcap_error);
    const std::string nacks = hd::wire_nack_warning(
        st, st.data_frames, "DPDK fabric",
        fmt::format("{} us, --dpdk-nack-delay, at least {} frame times of the slowest link when paced",
                    st.settings.nack_delay.ps() / 1'000'000, hd::kNackFrameGaps));
    if (!nacks.empty()) result.warnings.push_back(nacks);
    if (args_.dpdk_rx_lcore == "all" && st.rx_lcore < 0) {
      result.warnings.push_back(
          "DPDK fabric: --dpdk-rx-lcore all found no worker lcore of EAL's (or one device looping frames back): the "
          "main lcore polled everything; give EAL more lcores, e.g. -- -l 0-2");
    }
    if ((args_.dpdk_tx_lcore == "all" || args_.dpdk_tx_lcore == "auto") && st.tx_lcores.empty()) {
      result.warnings.push_back(fmt::format(
          "DPDK fabric: --dpdk-tx-lcore {} found no worker lcore of EAL's that the receive side leaves: the main lcore "
          "sent every frame; give EAL more lcores, e.g. -- -l 0-2",
          args_.dpdk_tx_lcore));
    }
    if (st.settings.ring_device.any() && hd::Eal::every_cpu_has_an_lcore()) {
      result.warnings.push_back(
          "DPDK fabric: every CPU has an lcore, so the thread of the ring pair's device (--dpdk-ring-delay, "
          "--dpdk-ring-rate) shared a CPU with a polling lcore and may have held frames longer than the device "
          "says (a scheduler time slice, milliseconds): leave a CPU without an lcore for it");
    }
  }

  const RunArgs& args_;
  // Destroyed in reverse: the fabric, the ports, the memif socket file, then EAL.
  EalSession eal_;
  MemifSocketFile memif_;
  std::unique_ptr<hd::DpdkPorts> ports_;
  std::unique_ptr<LiveEndpoint> live_;  // before the fabric: it writes the counters until it goes
  std::unique_ptr<hd::DpdkFabric> fabric_;
};

}  // namespace

std::unique_ptr<Backend> make_dpdk_backend(const BackendContext& context) {
  return std::make_unique<DpdkBackend>(context);
}

}  // namespace fabemu::run
