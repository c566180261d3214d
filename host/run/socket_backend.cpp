// `--fabric socket`: every rank's messages as UDP datagrams between one loopback socket per rank, delivered
// at the packet model's times (host/lab/README.md, "Socket fabric").
#include <fmt/core.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include "host/wire/frame.h"
#include "host/lab/socket_fabric.h"
#include "host/run/backend.h"
#include "host/run/exit_status.h"
#include "host/run/live_endpoint.h"

namespace fabemu::run {
namespace {

// SIGINT/SIGTERM as a stop flag for a run that polls (the socket fabric), while the guard lives; the
// previous handlers come back when it goes. (EAL installs its own for the DPDK fabric.)
class StopSignals {
 public:
  StopSignals() {
    flag_.store(false, std::memory_order_relaxed);
    prev_int_ = std::signal(SIGINT, on_signal);
    prev_term_ = std::signal(SIGTERM, on_signal);
  }
  ~StopSignals() {
    std::signal(SIGINT, prev_int_);
    std::signal(SIGTERM, prev_term_);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  static bool requested() noexcept { return flag_.load(std::memory_order_relaxed); }

 private:
  static void on_signal(int) { flag_.store(true, std::memory_order_relaxed); }
  static inline std::atomic<bool> flag_{false};
  void (*prev_int_)(int) = SIG_DFL;
  void (*prev_term_)(int) = SIG_DFL;
};

std::vector<boost::asio::ip::udp::endpoint> loopback_endpoints(uint16_t base_port, uint32_t npus) {
  // Every rank local, one UDP socket each on 127.0.0.1 (--socket-base-port P: P + rank; 0: any free port).
  if (base_port != 0 && uint32_t{base_port} + npus - 1 > 65535) {
    throw std::invalid_argument(fmt::format("--socket-base-port {}: {} ranks do not fit below port 65536",
                                            base_port, npus));
  }
  std::vector<boost::asio::ip::udp::endpoint> eps;
  for (uint32_t r = 0; r < npus; ++r) {
    eps.emplace_back(boost::asio::ip::make_address("127.0.0.1"),
                     static_cast<uint16_t>(base_port == 0 ? 0 : base_port + r));
  }
  return eps;
}

lab::SocketFabricOptions socket_options(const RunArgs& a, uint32_t mtu) {
  lab::SocketFabricOptions o;
  o.model_mtu = mtu == 0 ? ~uint32_t{0} : mtu;
  o.dilation = a.as_fast_as_possible ? 0.0 : a.dilation;
  o.faults.drop_rate = a.drop_rate;
  o.faults.reorder_rate = a.reorder_rate;
  o.faults.duplicate_rate = a.duplicate_rate;
  o.faults.seed = a.fault_seed;
  o.stall_timeout = emu::Duration::from_ms(a.socket_stall_timeout_ms);
  o.dscp = static_cast<uint8_t>(a.wire_dscp);
  o.ecn = host::dpdk::sender_ecn(a.wire_ecn).value_or(host::dpdk::Ecn::kNotEct);
  o.stop_requested = [] { return StopSignals::requested(); };
  return o;
}

class SocketBackend final : public RealtimeBackend {
 public:
  explicit SocketBackend(const BackendContext& c) {
    const auto npus = static_cast<uint32_t>(c.topology.npus());
    auto endpoints = loopback_endpoints(c.args.socket_base_port, npus);
    lab::SocketFabricOptions o = socket_options(c.args, c.plan.mtu);
    if (!c.args.metrics.empty()) {
      live_ = std::make_unique<LiveEndpoint>(c.args.metrics, c.topology.links().size(), "socket");
      o.live = &live_->live();
      if (!c.args.quiet) fmt::print(stderr, "fabemu: metrics on {}\n", live_->url());
    }
    stop_signals_.emplace();
    fabric_ = std::make_unique<lab::SocketFabric>(c.topology, std::move(endpoints), std::vector<bool>(npus, true), o);
  }

  void add_to(emu::RunResult& result, std::string& /*section*/) const override {
    const lab::SocketStats& st = fabric_->stats();
    const std::string nacks = host::dpdk::wire_nack_warning(st, st.data_datagrams, "socket fabric", "");
    if (!nacks.empty()) result.warnings.push_back(nacks);
  }

 protected:
  host::dpdk::RealtimeFabric& realtime() override { return *fabric_; }

 private:
  std::unique_ptr<LiveEndpoint> live_;        // before the fabric: it writes the counters until it goes
  std::optional<StopSignals> stop_signals_;  // before the fabric: it polls the flag until it goes
  std::unique_ptr<lab::SocketFabric> fabric_;
};

}  // namespace

std::unique_ptr<Backend> make_socket_backend(const BackendContext& context) {
  return std::make_unique<SocketBackend>(context);
}

}  // namespace fabemu::run
