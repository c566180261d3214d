// Message and datagram rate of the socket fabric on loopback UDP (host/lab/socket_fabric.h), one thread
// doing everything (model, reliability, sockets), as fast as possible (D = 0):
//   ninja -C build fabemu_bench_socket_fabric && build/bench/fabemu_bench_socket_fabric
// BM_SocketFabric/B/K: 2 ranks on a 2-NPU ring (fast links, so the model is never the limit), messages of
// B bytes both ways, 64 in flight (each delivery sends the next), K datagrams per sendmmsg/recvmmsg call
// (K = 1: Boost.Asio send_to and recvmsg per datagram). Counters: messages/s and datagrams/s of wall
// time (all datagrams: data, ACK and NACK), bytes/s of message bytes.
#include <benchmark/benchmark.h>

#include <boost/asio/ip/udp.hpp>
#include <chrono>
#include <cstdint>
#include <vector>

#include "emulator/config.h"
#include "emulator/topology.h"
#include "host/lab/socket_fabric.h"

namespace fabemu::bench {
namespace {

constexpr uint64_t kMessages = 20'000;
constexpr uint64_t kInFlight = 64;

emu::NetworkConfig two_ranks() {
  emu::NetworkDim d;
  d.topology = emu::DimTopology::kRing;
  d.npus = 2;
  d.bandwidth = emu::Rate::from_astra_gbps(10'000);
  d.bandwidth_gbps = 10'000;
  d.latency = emu::Duration::from_ns(1);
  emu::NetworkConfig c;
  c.dims = {d};
  return c;
}

class Driver final : public emu::DeliveryListener {
 public:
  Driver(lab::SocketFabric& f, uint64_t bytes, uint64_t total) : f_(f), bytes_(bytes), total_(total) {}
  void start() {
    for (uint64_t i = 0; i < kInFlight && sent_ < total_; ++i) next();
  }
  void on_delivered(uint64_t, emu::Time) override {
    if (sent_ < total_) next();
  }

 private:
  void next() {
    const int32_t src = static_cast<int32_t>(sent_ & 1);
    f_.send(emu::Message{sent_, src, 1 - src, bytes_, sent_ & 1}, f_.engine().now());
    ++sent_;
  }
  lab::SocketFabric& f_;
  uint64_t bytes_, total_, sent_ = 0;
};

void BM_SocketFabric(benchmark::State& state) {
  const auto bytes = static_cast<uint64_t>(state.range(0));
  const auto batch = static_cast<uint32_t>(state.range(1));
  const uint64_t total = bytes > 4096 ? kMessages / 10 : kMessages;
  double wall_s = 0;
  uint64_t messages = 0, datagrams = 0;
  for (auto _ : state) {
    lab::SocketFabricOptions o;
    o.batch = batch;
    const std::vector<boost::asio::ip::udp::endpoint> eps(
        2, boost::asio::ip::udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    lab::SocketFabric f(emu::Topology(two_ranks()), eps, {true, true}, o);
    Driver d(f, bytes, total);
    f.set_listener(&d);
    const auto t0 = std::chrono::steady_clock::now();
    d.start();
    f.engine().run();
    f.drain();
    wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const lab::SocketStats& s = f.stats();
    messages += s.messages_received;
    datagrams += s.datagrams_tx;
    if (s.messages_received != total) state.SkipWithError("not every message arrived");
  }
  state.counters["messages/s"] = static_cast<double>(messages) / wall_s;
  state.counters["datagrams/s"] = static_cast<double>(datagrams) / wall_s;
  state.counters["bytes/s"] = static_cast<double>(messages * bytes) / wall_s;
}
BENCHMARK(BM_SocketFabric)
    ->ArgsProduct({{1024, 65536}, {1, 32}})
    ->ArgNames({"bytes", "batch"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

}  // namespace
}  // namespace fabemu::bench

BENCHMARK_MAIN();
