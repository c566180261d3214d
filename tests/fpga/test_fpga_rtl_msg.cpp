// The message-level RTL core sched_msg (hw/sched/rtl/sched_msg.sv, Verilated; rtl_models/sched_msg_hwemu.h)
// against its specification MsgSchedModel, record by record, bound by bound and counter by counter, on
// randomized push/advance sequences with random gaps on the input streams and back-pressure on the
// record stream; its full packet pool; and FpgaMsgFabric over the "hwemu" device against PacketFabric and
// against the "model" device on the 36 shared microbenchmark runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "emulator/link_results.h"
#include "emulator/report_json.h"
#include "host/fpga/fpga_msg_fabric.h"
#include "rtl_models/msg_sched_model.h"
#include "rtl_models/sched_msg_hwemu.h"
#include "tests/emulator/walker_test_util.h"
#include "tests/fpga/fpga_test_util.h"
#include "tests/fpga/microbenchmarks.h"
#include "traces/trace_set.h"

namespace ft = fabemu::fpga_test;
namespace fpga = fabemu::host::fpga;
namespace emu = fabemu::emu;
namespace msg = fabemu::hw::msg;
using fabemu::rtl::MsgHwEmuOptions;
using fabemu::rtl::MsgSchedModel;
using fabemu::rtl::SchedMsgHwEmu;

namespace {

struct Lockstep {
  uint64_t departures = 0, records = 0, advances = 0, events = 0, busy_cycles = 0, scan_cycles = 0, cycles = 0;
};

// Pushes `msgs` (ready order) into the model and the RTL alike, with watermarks advancing by random steps
// of up to `step` ps, comparing after each advance the records, the bound and (at the end) the counters.
Lockstep run_lockstep(const emu::NetworkConfig& config, uint32_t mtu, const std::vector<ft::TimedMessage>& msgs,
                      uint64_t step, uint64_t seed, MsgHwEmuOptions opt) {
  const emu::Topology topo(config);
  const auto links = ft::link_table(topo);
  MsgSchedModel model(links, mtu);
  SchedMsgHwEmu rtl(links, mtu, opt);
  std::map<std::vector<uint32_t>, uint32_t> routes;
  std::mt19937_64 rng(seed);
  Lockstep s;
  uint64_t w = msgs.empty() ? 0 : msgs.front().ready.ps();
  std::size_t i = 0;
  while (i < msgs.size() || model.in_flight() > 0) {
    const uint64_t nw = w + 1 + rng() % step;
    // Every message below the new watermark, and now and then one beyond it.
    while (i < msgs.size() && (msgs[i].ready.ps() < nw || rng() % 16 == 0)) {
      const emu::Message& m = msgs[i].m;
      const auto r = topo.route(m.src, m.dst, m.flow);
      const std::vector<uint32_t> ids(r.begin(), r.end());
      auto [it, fresh] = routes.emplace(ids, static_cast<uint32_t>(model.route_size()));
      if (fresh) {
        model.append_route(ids);
        rtl.append_route(ids);
      }
      const msg::MsgDesc d{msgs[i].ready.ps(), m.id, m.bytes, static_cast<uint32_t>(ids.size()), it->second,
                           static_cast<uint32_t>(m.src), static_cast<uint32_t>(m.dst)};
      model.push(d);
      rtl.push(d);
      ++i;
    }
    model.advance(nw);
    rtl.advance(nw);
    ++s.advances;
    std::vector<msg::Delivery> a, b;
    model.take(a);
    rtl.take(b);
    EXPECT_EQ(b, a) << "advance to " << nw << " ps";
    EXPECT_EQ(rtl.known_until(), model.known_until()) << "after advance to " << nw << " ps";
    std::vector<msg::Departure> da, db;
    model.take_departures(da);
    rtl.take_departures(db);
    EXPECT_EQ(db.size(), da.size()) << "departures by " << nw << " ps";
    for (std::size_t k = 0; k < da.size() && k < db.size() && !::testing::Test::HasFailure(); ++k) {
      EXPECT_EQ(db[k], da[k]) << "departure " << s.departures + k << ": message " << db[k].id << "/" << da[k].id
                              << " seq " << db[k].seq << "/" << da[k].seq << " at " << db[k].time_ps << "/"
                              << da[k].time_ps << " ps";
      EXPECT_LT(da[k].time_ps, nw);
      if (k > 0) {
        EXPECT_LE(da[k - 1].time_ps, da[k].time_ps);
      }
    }
    s.departures += da.size();
    if (::testing::Test::HasFailure()) break;
    s.records += a.size();
    w = nw;
  }
  for (uint32_t l = 0; l < links.size(); ++l) {
    const auto c = rtl.link_counters(l);
    EXPECT_EQ(c.bytes, model.link_counters(l).bytes) << "link " << l;
    EXPECT_EQ(c.packets, model.link_counters(l).packets) << "link " << l;
  }
  EXPECT_EQ(rtl.events(), model.events());
  EXPECT_EQ(rtl.runs(), model.runs());
  uint64_t packets = 0;  // every packet of every message left its first link once
  for (const ft::TimedMessage& tm : msgs) packets += tm.m.bytes == 0 ? 1 : (tm.m.bytes + mtu - 1) / mtu;
  EXPECT_EQ(s.departures, packets);
  EXPECT_EQ(rtl.packet_hops(), model.packet_hops());
  s.events = model.events();
  s.busy_cycles = rtl.busy_cycles();
  s.scan_cycles = rtl.scan_cycles();
  s.cycles = rtl.cycles();
  return s;
}

void print(const char* what, const Lockstep& s) {
  const uint64_t ev_cycles = s.busy_cycles - s.scan_cycles;
  std::printf("%s: %llu records, %llu advances, %llu events; %llu busy cycles (%.4f events/cycle), of which %llu "
              "computing known_until; the rest (events and descriptor intake) %.1f cycles per event\n",
              what, static_cast<unsigned long long>(s.records), static_cast<unsigned long long>(s.advances),
              static_cast<unsigned long long>(s.events), static_cast<unsigned long long>(s.busy_cycles),
              static_cast<double>(s.events) / static_cast<double>(s.busy_cycles),
              static_cast<unsigned long long>(s.scan_cycles),
              static_cast<double>(ev_cycles) / static_cast<double>(s.events));
}

}  // namespace

TEST(SchedMsgRtl, SameRecordsBoundsAndCountersAsTheModel) {
  uint64_t seed = 7;
  for (const ft::WorkloadCase& c : ft::kWorkloadCases) {
    SCOPED_TRACE(c.name);
    const auto config = c.config();
    const auto msgs = ft::random_messages(emu::Topology(config), ++seed, 400, 2'000'000, 4 * c.mtu, c.incast);
    const Lockstep s = run_lockstep(config, c.mtu, msgs, 40'000, seed, MsgHwEmuOptions{});
    print(c.name, s);
    EXPECT_EQ(s.records, msgs.size());
  }
}

TEST(SchedMsgRtl, SameWithStalledStreams) {
  uint64_t seed = 70;
  for (const ft::WorkloadCase& c : ft::kWorkloadCases) {
    SCOPED_TRACE(c.name);
    const auto config = c.config();
    const auto msgs = ft::random_messages(emu::Topology(config), ++seed, 250, 1'000'000, 3 * c.mtu, c.incast);
    MsgHwEmuOptions opt;
    opt.in_stall_per_256 = 100;
    opt.out_stall_per_256 = 160;
    opt.seed = seed;
    EXPECT_EQ(run_lockstep(config, c.mtu, msgs, 25'000, seed, opt).records, msgs.size());
  }
}

// 2^41 ps later, large messages (runs of up to 64 packets) and zero-byte ones.
TEST(SchedMsgRtl, TimesPast2To32PsLargeAndEmptyMessages) {
  const auto config = ft::fat_tree_4x3x2();
  auto msgs = ft::random_messages(emu::Topology(config), 2024, 300, 3'000'000, 64 * 1500, true);
  for (std::size_t k = 0; k < msgs.size(); k += 7) msgs[k].m.bytes = 0;
  for (auto& tm : msgs) tm.ready = tm.ready + emu::Duration::from_ps(uint64_t{1} << 41);
  const Lockstep s = run_lockstep(config, 1500, msgs, 60'000, 5, MsgHwEmuOptions{});
  print("fat_tree incast past 2^41 ps", s);
  EXPECT_EQ(s.records, msgs.size());
}

TEST(SchedMsgRtl, BoundBeforeAndAfterInjection) {
  const std::vector<fabemu::hw::sched::LinkEntry> links{{1u << 20, 500, 0}, {1u << 20, 700, 0}};
  SchedMsgHwEmu card(links, 1024);
  card.append_route(std::vector<uint32_t>{0, 1});
  card.advance(1'000);
  EXPECT_EQ(card.known_until(), ~uint64_t{0});
  card.push(msg::MsgDesc{1'000, 8, 2'048, 2, 0, 3, 4});
  EXPECT_EQ(card.known_until(), 1'000u + 500 + 700);
  card.advance(1'001);
  EXPECT_EQ(card.known_until(), 1'502u + 700);
  card.advance(1'503);
  EXPECT_EQ(card.known_until(), ~uint64_t{0});
  std::vector<msg::Delivery> out;
  ASSERT_EQ(card.take(out), 1u);
  EXPECT_EQ(out[0], (msg::Delivery{8, 2'203, msg::kNoCycle, 2}));
  EXPECT_THROW(card.push(msg::MsgDesc{999, 5, 100, 2, 0, 3, 4}), std::invalid_argument);  // below the watermark
}

// A pool of 6 entries for an incast of multi-packet messages: the core stops with its sticky error flag
// and every record it gave before is the model's.
TEST(SchedMsgRtl, FullPoolRaisesTheStickyErrorWithoutCorruption) {
  const auto config = ft::switch16();
  const auto msgs = ft::random_messages(emu::Topology(config), 99, 200, 200'000, 8 * 512, true);
  const emu::Topology topo(config);
  const auto links = ft::link_table(topo);
  MsgSchedModel model(links, 512);
  MsgHwEmuOptions opt;
  opt.pool_slots = 6;
  SchedMsgHwEmu rtl(links, 512, opt);
  std::vector<msg::Delivery> a, b;
  bool stopped = false;
  for (const auto& tm : msgs) {
    const auto r = topo.route(tm.m.src, tm.m.dst, tm.m.flow);
    const std::vector<uint32_t> ids(r.begin(), r.end());
    const auto at = static_cast<uint32_t>(model.route_size());
    model.append_route(ids);
    rtl.append_route(ids);
    const msg::MsgDesc d{tm.ready.ps(), tm.m.id, tm.m.bytes, static_cast<uint32_t>(ids.size()), at, 0, 0};
    model.push(d);
    rtl.push(d);
  }
  model.advance(~uint64_t{0});
  model.take(a);
  try {
    rtl.advance(~uint64_t{0});
  } catch (const std::runtime_error& e) {
    stopped = true;
    EXPECT_NE(std::string(e.what()).find("packet pool (6 entries) ran out"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(stopped);
  EXPECT_TRUE(rtl.pool_error());
  rtl.take(b);
  ASSERT_LE(b.size(), a.size());
  EXPECT_EQ(b, std::vector<msg::Delivery>(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(b.size())));
}

// More messages between two watermarks than the message table holds: the descriptor stream stalls (the
// core takes no descriptor it has no slot for) and, nothing being processable below the watermark, the
// harness reports it.
TEST(SchedMsgRtl, FullMessageTableStallsTheDescriptorStream) {
  const std::vector<fabemu::hw::sched::LinkEntry> links{{1u << 20, 500, 0}};
  SchedMsgHwEmu card(links, 1024);
  card.append_route(std::vector<uint32_t>{0});
  card.advance(1'000);
  for (uint64_t i = 0; i < (uint64_t{1} << SchedMsgHwEmu::kMsgAw) + 3; ++i) {
    card.push(msg::MsgDesc{2'000 + i, i, 100, 1, 0, 0, 1});
  }
  try {
    card.advance(1'500);
    FAIL() << "more messages than slots were taken";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("message table (4096 messages) is full"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(card.pool_error());
}

TEST(FpgaMsgFabricHwEmu, SameDeliveriesAsPacketFabric) {
  for (const ft::WorkloadCase& c : ft::kWorkloadCases) {
    SCOPED_TRACE(c.name);
    const auto config = c.config();
    const auto msgs = ft::random_messages(emu::Topology(config), 31, 600, 4'000'000, 4 * c.mtu, c.incast);
    struct Log final : emu::DeliveryListener {
      void on_delivered(uint64_t id, emu::Time at) override { v.emplace_back(id, at); }
      std::vector<std::pair<uint64_t, emu::Time>> v;
    } log;
    emu::Engine engine;
    auto fabric = fpga::make_fpga_msg_fabric(engine, emu::Topology(config), c.mtu, "hwemu");
    fabric->set_listener(&log);
    for (const auto& tm : msgs) fabric->send(tm.m, tm.ready);
    engine.run();
    EXPECT_EQ(log.v, ft::packet_fabric_deliveries(config, c.mtu, msgs));
  }
}

TEST(FpgaMsgFabricHwEmu, MicrobenchmarkReportsAndTrafficMatchTheModelDevice) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  const emu::SystemConfig sys = ft::microbenchmark_system(traces_dir);
  double t_sw = 0, t_model = 0, t_hw = 0;
  uint64_t messages = 0, departures = 0;
  for (const ft::Microbenchmark& mb : ft::shared_microbenchmarks(traces_dir)) {
    SCOPED_TRACE(mb.what);
    ASSERT_EQ(mb.files.size(), static_cast<std::size_t>(mb.npus));
    fpga::MsgTraffic traffic[2];
    std::vector<msg::Departure> deps[2];  // model device, hw-emu device
    const auto run = [&](int which, double& seconds) {  // 0 software, 1 model device, 2 hwemu device
      const auto t0 = std::chrono::steady_clock::now();
      emu::RunResult r;
      if (which == 0) {
        r = ft::walk_packet_model(mb, sys);
      } else {
        r = ft::walk_microbenchmark(
            mb, sys,
            [&](emu::Engine& e, const emu::Topology& t) {
              return fpga::make_fpga_msg_fabric(e, t, 4096, which == 1 ? "model" : "hwemu");
            },
            [&](fpga::FpgaMsgFabric& f) {
              f.finish();
              traffic[which - 1] = f.device().traffic();
              f.device().take_departures(deps[which - 1]);
              if (which == 2) messages += f.messages_pushed();
            });
      }
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return r;
    };
    const emu::RunResult sw = run(0, t_sw);
    run(1, t_model);
    emu::RunResult hw = run(2, t_hw);
    hw.events = sw.events;  // the card runs the packet events
    EXPECT_EQ(emu::report_to_json(hw), emu::report_to_json(sw));
    EXPECT_EQ(traffic[1].bytes_to_card, traffic[0].bytes_to_card);
    EXPECT_EQ(traffic[1].bytes_from_card, traffic[0].bytes_from_card);
    EXPECT_EQ(traffic[1].transfers, traffic[0].transfers);
    EXPECT_EQ(traffic[1].doorbells, traffic[0].doorbells);
    EXPECT_EQ(traffic[1].polls, traffic[0].polls);
    // The departures (first link of every message, (time, run) order): the RTL's are the model's.
    EXPECT_FALSE(deps[0].empty());
    EXPECT_TRUE(deps[1] == deps[0]) << deps[1].size() << " departures, the model " << deps[0].size();
    EXPECT_TRUE(std::is_sorted(deps[0].begin(), deps[0].end(),
                               [](const msg::Departure& a, const msg::Departure& b) { return a.time_ps < b.time_ps; }));
    departures += deps[1].size();
  }
  std::printf("departures: %llu packets leaving their first link, equal in the RTL and the model\n",
              static_cast<unsigned long long>(departures));
  std::printf("microbenchmarks (36 runs, mtu 4096, %llu messages): wall time software %.2f s, model device %.2f s, "
              "hw-emu device %.2f s (%.0fx software)\n",
              static_cast<unsigned long long>(messages), t_sw, t_model, t_hw, t_hw / t_sw);
}
