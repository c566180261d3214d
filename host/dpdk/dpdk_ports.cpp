#include "host/dpdk/dpdk_ports.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace fabemu::host::dpdk {

DpdkPorts DpdkPorts::ring(const std::string& name, const PortConfig& cfg, uint16_t queues, RingDevice device,
                          unsigned ring_size) {
  DpdkPorts p;
  // Port A may have more transmit queues than `queues` (transmit lcores: a queue per receive path each).
  const uint16_t a_tx = std::max<uint16_t>(cfg.tx_queues, queues);
  p.ring_ = std::make_unique<RingPair>(name, ring_size, SOCKET_ID_ANY, queues, device, a_tx);
  p.a_ = std::make_unique<Port>(p.ring_->a(), cfg);
  PortConfig b_cfg = cfg;
  b_cfg.tx_queues = std::min<uint16_t>(cfg.tx_queues, queues);
  p.b_ = std::make_unique<Port>(p.ring_->b(), b_cfg);
  std::string dev;
  if (device.delay_ns > 0) dev = fmt::format("{:.3f} us latency", static_cast<double>(device.delay_ns) / 1000.0);
  if (device.bytes_per_sec > 0) {
    dev += fmt::format("{}{:.3f} Gb/s", dev.empty() ? "" : " and ", static_cast<double>(device.bytes_per_sec) * 8 / 1e9);
  }
  if (device.ecn_bytes > 0) dev += fmt::format(" marking ECN-capable frames CE behind {} bytes queued", device.ecn_bytes);
  p.what_ = fmt::format("ring pair net_ring_{0}_a -> net_ring_{0}_b{2}{3}, {1} mbufs per pool", name, cfg.mbufs,
                        queues == 1 ? std::string() : fmt::format(" ({} queues)", queues),
                        dev.empty() ? std::string() : ", a -> b through a device of " + dev);
  return p;
}

DpdkPorts DpdkPorts::memif(const std::string& socket, const PortConfig& cfg) {
  static int counter = 0;
  const int n = counter++;
  DpdkPorts p;
  p.b_ = std::make_unique<Port>(Port::open(fmt::format("net_memif_fs{},role=server,id=0,socket={}", n, socket), cfg));
  // DPDK 22.11's memif crashes now and then in the EAL interrupt thread when the client is probed while
  // that thread is still setting up the server's listening socket (seen in test_dpdk_env's memif test
  // too): let it settle first.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  p.a_ = std::make_unique<Port>(Port::open(fmt::format("net_memif_fc{},role=client,id=0,socket={}", n, socket), cfg));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!(p.a_->link_up() && p.b_->link_up()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!(p.a_->link_up() && p.b_->link_up())) {
    throw std::runtime_error(fmt::format("memif client and server on {} did not connect within 2 s", socket));
  }
  p.what_ = fmt::format("memif client -> server on {}, {} mbufs per pool", socket, cfg.mbufs);
  p.memif_ = true;
  return p;
}

DpdkPorts DpdkPorts::devargs(const std::string& a, const std::string& b, const PortConfig& cfg) {
  DpdkPorts p;
  p.a_ = std::make_unique<Port>(Port::attach_or_open(a, cfg));
  // B sends only the receive paths' ACKs/NACKs: a transmit queue per receive queue (port A may have more:
  // transmit lcores).
  PortConfig b_cfg = cfg;
  b_cfg.tx_queues = std::min(cfg.tx_queues, cfg.rx_queues);
  if (!b.empty()) p.b_ = std::make_unique<Port>(Port::attach_or_open(b, b_cfg));
  p.what_ = (b.empty() ? a + " (loopback)" : a + " -> " + b) + fmt::format(", {} mbufs per pool", cfg.mbufs);
  return p;
}

DpdkPorts::~DpdkPorts() {
  if (memif_ && a_ && b_) {
    a_.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b_.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string DpdkPorts::describe() const { return what_; }

}  // namespace fabemu::host::dpdk
