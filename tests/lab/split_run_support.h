// The replicated model split over two fabric instances ("hosts") in one process, each walking the whole
// workload on its own thread: shared by the socket fabric's UDP test and its DPDK transport test.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "emulator/packet_fabric.h"
#include "emulator/walker.h"
#include "host/lab/socket_fabric.h"
#include "tests/dpdk/fabric_test_support.h"
#include "traces/trace_set.h"

namespace fabemu::test {

// The packet model, counting the messages per (src, dst) on the way.
class CountingFabric final : public emu::Fabric {
 public:
  CountingFabric(emu::Engine& e, emu::Topology t) : inner_(e, std::move(t), kModelMtu) {}
  void send(const emu::Message& m, emu::Time ready) override {
    ++count[{m.src, m.dst}];
    inner_.send(m, ready);
  }
  using Fabric::send;
  emu::Engine& engine() override { return inner_.engine(); }
  void set_listener(emu::DeliveryListener* l) override { inner_.set_listener(l); }
  std::map<std::pair<int32_t, int32_t>, uint64_t> count;

 private:
  emu::PacketFabric inner_;
};

struct SoftwareRun {
  emu::RunResult result;
  std::map<std::pair<int32_t, int32_t>, uint64_t> count;
  // Messages from a rank in [lo, hi) to another rank (anywhere), and to a rank in [lo, hi) from another.
  uint64_t from(int32_t lo, int32_t hi) const {
    uint64_t n = 0;
    for (const auto& [k, v] : count) n += k.first >= lo && k.first < hi && k.first != k.second ? v : 0;
    return n;
  }
  uint64_t to(int32_t lo, int32_t hi) const {
    uint64_t n = 0;
    for (const auto& [k, v] : count) n += k.second >= lo && k.second < hi && k.first != k.second ? v : 0;
    return n;
  }
};

inline SoftwareRun run_counting_software(const Workload& w) {
  emu::Engine engine(1 << 12);
  CountingFabric fabric(engine, emu::Topology(w.net));
  SoftwareRun out;
  out.result = walk(fabric, w);
  out.count = fabric.count;
  return out;
}

inline void expect_same_times(const emu::RunResult& sw, const emu::RunResult& r) {
  ASSERT_TRUE(sw.stuck.empty());
  ASSERT_TRUE(r.stuck.empty()) << r.stuck.front();
  EXPECT_GT(sw.total.ps(), 0u);
  EXPECT_EQ(r.total.ps(), sw.total.ps());
  ASSERT_EQ(r.ranks.size(), sw.ranks.size());
  for (size_t i = 0; i < sw.ranks.size(); ++i) {
    EXPECT_EQ(r.ranks[i].finish.ps(), sw.ranks[i].finish.ps()) << "rank " << i;
    EXPECT_EQ(r.ranks[i].exposed_comm.ps(), sw.ranks[i].exposed_comm.ps()) << "rank " << i;
  }
  EXPECT_EQ(r.messages, sw.messages);
  EXPECT_EQ(r.message_bytes, sw.message_bytes);
}

// Local flags of a host with ranks [lo, hi) of n.
inline std::vector<bool> hosted(uint32_t lo, uint32_t hi, uint32_t n) {
  std::vector<bool> local(n, false);
  for (uint32_t r = lo; r < hi; ++r) local[r] = true;
  return local;
}

struct SplitSide {
  emu::RunResult result;
  bool drained = false;
  std::string error;
};

// Walks `w` over `a` and `b` at once (ranks of the 8-rank generated all-reduce: 0-3 on a, 4-7 on b), each
// side then serving the other's retransmissions until both are done; then checks that both report the
// model's times and that each sent exactly the messages whose source it hosts and reassembled those whose
// destination it hosts (on the ring, 3 -> 4 and 7 -> 0 cross).
inline void run_split_and_check(lab::SocketFabric& a, lab::SocketFabric& b, const Workload& w) {
  const SoftwareRun sw = run_counting_software(w);
  SplitSide sa, sb;
  std::atomic<int> finished{0};
  const auto run = [&](lab::SocketFabric& f, SplitSide& out) {
    try {
      traces::ProcessGroups groups(8);
      emu::Walker walker(f, w.net, w.files, groups, w.options());
      out.result = walker.run();
      out.drained = f.drain();
      ++finished;
      f.serve([&] { return finished.load() == 2; });
    } catch (const std::exception& e) {
      out.error = e.what();
      ++finished;
    }
  };
  std::thread ta(run, std::ref(a), std::ref(sa));
  std::thread tb(run, std::ref(b), std::ref(sb));
  ta.join();
  tb.join();
  ASSERT_EQ(sa.error, "");
  ASSERT_EQ(sb.error, "");
  expect_same_times(sw.result, sa.result);
  expect_same_times(sw.result, sb.result);
  EXPECT_TRUE(sa.drained);
  EXPECT_TRUE(sb.drained);
  const lab::SocketStats& x = a.stats();
  const lab::SocketStats& y = b.stats();
  std::printf("%s%s", lab::format_socket_stats(x).c_str(), lab::format_socket_stats(y).c_str());
  EXPECT_EQ(x.messages_sent, sw.from(0, 4));
  EXPECT_EQ(x.messages_received, sw.to(0, 4));
  EXPECT_EQ(y.messages_sent, sw.from(4, 8));
  EXPECT_EQ(y.messages_received, sw.to(4, 8));
  const uint64_t a_to_b = sw.count.at({3, 4}), b_to_a = sw.count.at({7, 0});
  EXPECT_GT(a_to_b, 0u);
  EXPECT_EQ(x.messages_sent - x.messages_received + b_to_a, a_to_b);
  EXPECT_EQ(x.model_only_messages, sw.from(4, 8) - b_to_a);
  EXPECT_EQ(y.model_only_messages, sw.from(0, 4) - a_to_b);
  EXPECT_EQ(x.deliveries, sw.result.messages);
  EXPECT_EQ(y.deliveries, sw.result.messages);
  EXPECT_EQ(x.not_ours + y.not_ours, 0u);
}

}  // namespace fabemu::test
