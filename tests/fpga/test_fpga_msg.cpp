// The message-level FPGA interface (hw/sched/doc/msg_interface.md): its records, the card's C++ reference
// (MsgSchedModel) and FpgaMsgFabric over it, against PacketFabric: the same deliveries on randomized
// workloads and the same walker reports on the shared ASTRA-sim microbenchmarks, with the host-card
// traffic of both FPGA interfaces counted side by side.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "emulator/link_results.h"
#include "emulator/report_json.h"
#include "host/config/astra_config.h"
#include "host/fpga/fpga_fabric.h"
#include "host/fpga/fpga_msg_fabric.h"
#include "rtl_models/msg_sched_model.h"
#include "tests/emulator/walker_test_util.h"
#include "tests/fpga/fpga_test_util.h"
#include "tests/fpga/microbenchmarks.h"
#include "traces/trace_set.h"

namespace ft = fabemu::fpga_test;
namespace fpga = fabemu::host::fpga;
namespace emu = fabemu::emu;
namespace msg = fabemu::hw::msg;

namespace {

std::vector<std::pair<uint64_t, emu::Time>> msg_deliveries(const emu::NetworkConfig& config, uint32_t mtu,
                                                           const std::vector<ft::TimedMessage>& msgs,
                                                           uint64_t* syncs = nullptr) {
  struct Log final : emu::DeliveryListener {
    void on_delivered(uint64_t id, emu::Time at) override { v.emplace_back(id, at); }
    std::vector<std::pair<uint64_t, emu::Time>> v;
  } log;
  emu::Engine engine;
  auto fabric = fpga::make_fpga_msg_fabric(engine, emu::Topology(config), mtu, "model");
  fabric->set_listener(&log);
  for (const auto& tm : msgs) fabric->send(tm.m, tm.ready);
  engine.run();
  EXPECT_EQ(fabric->messages_delivered(), msgs.size());
  EXPECT_EQ(fabric->messages_pushed(), msgs.size());
  if (syncs != nullptr) *syncs = fabric->syncs();
  return log.v;
}

}  // namespace

TEST(FpgaMsgMap, RecordsRoundTripAtTheLimitsOfTheirFields) {
  const msg::MsgDesc d{~uint64_t{0} - 5, 0x0123456789abcdefULL, msg::kMaxMsgBytes, msg::kMaxHops, 0xfedcba98u,
                       msg::kMaxRank, 12345};
  EXPECT_EQ(msg::decode_msg(msg::encode(d)), d);
  const msg::Delivery r{42, (uint64_t{1} << 41) + 7, msg::kNoCycle - 1, 0x89abcdefu};
  EXPECT_EQ(msg::decode_delivery(msg::encode(r)), r);
  // Each field where hw/sched/doc/msg_interface.md puts it: bytes 21 (hops) and 26..28 (src), little-endian.
  const auto rec = msg::encode(d);
  EXPECT_EQ(rec[21], 255);
  EXPECT_EQ(rec[26] | rec[27] << 8 | rec[28] << 16, static_cast<int>(msg::kMaxRank));
  EXPECT_EQ(rec[29] | rec[30] << 8 | rec[31] << 16, 12345);
}

TEST(FpgaMsgFabric, SameDeliveriesAsPacketFabric) {
  for (const ft::WorkloadCase& c : ft::kWorkloadCases) {  // zero-latency links are refused (RefusesWhat...)
    SCOPED_TRACE(c.name);
    const auto config = c.config();
    const auto msgs = ft::random_messages(emu::Topology(config), 31, 3'000, 20'000'000, 4 * c.mtu, c.incast);
    uint64_t syncs = 0;
    EXPECT_EQ(msg_deliveries(config, c.mtu, msgs, &syncs), ft::packet_fabric_deliveries(config, c.mtu, msgs));
    EXPECT_GT(syncs, 0u);
  }
}

// 2^41 ps later: every 64-bit time of the descriptors, the card's links and the records carries its high word.
TEST(FpgaMsgFabric, TimesPast2To32PsAreExact) {
  const auto config = ft::fat_tree_4x3x2();
  auto msgs = ft::random_messages(emu::Topology(config), 2024, 1'500, 5'000'000, 6'000, true);
  for (auto& tm : msgs) tm.ready = tm.ready + emu::Duration::from_ps(uint64_t{1} << 41);
  const auto expected = ft::packet_fabric_deliveries(config, 1500, msgs);
  for (const auto& [id, at] : expected) ASSERT_GE(at.ps(), uint64_t{1} << 41) << "message " << id;
  EXPECT_EQ(msg_deliveries(config, 1500, msgs), expected);
}

TEST(FpgaMsgFabric, RefusesWhatTheCardCannotTake) {
  emu::Engine engine;
  emu::NetworkConfig zero;
  zero.dims = {ft::dim(emu::DimTopology::kRing, 4, emu::Rate::from_gbps(100), emu::Duration::zero())};
  try {
    fpga::make_fpga_msg_fabric(engine, emu::Topology(zero), 4096, "model");
    FAIL() << "a zero-latency link was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("link 0 has latency 0"), std::string::npos) << e.what();
  }
  auto fabric = fpga::make_fpga_msg_fabric(engine, emu::Topology(ft::ring8()), 4096, "model");
  const auto what = [&](const emu::Message& m) {
    try {
      fabric->send(m);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(what({7, 0, 8, 10, 0}).find("message 7 (rank 0 to 8): the topology has NPUs 0..7"), std::string::npos);
  EXPECT_NE(what({9, 1, 2, uint64_t{1} << 40, 0}).find("message 9 (rank 1 to 2): 1099511627776 bytes"),
            std::string::npos);
  EXPECT_THROW(fpga::make_fpga_msg_fabric(engine, emu::Topology(ft::ring8()), 4096, "xrt:0"), std::runtime_error);
}

TEST(MsgSchedModel, RejectsDescriptorsBelowTheWatermarkOrOutsideTheRoutes) {
  const std::vector<fabemu::hw::sched::LinkEntry> links{{1u << 20, 500, 0}, {1u << 20, 700, 0}};
  fabemu::rtl::MsgSchedModel card(links, 1024);
  const std::vector<uint32_t> route{0, 1};
  card.append_route(route);
  EXPECT_THROW(card.append_route(std::vector<uint32_t>{2}), std::invalid_argument);
  card.advance(1'000);
  try {
    card.push(msg::MsgDesc{999, 5, 100, 2, 0, 3, 4});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("message 5 (rank 3 to 4) is ready at 999 ps, below the watermark 1000 ps"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(card.push(msg::MsgDesc{1'000, 6, 100, 3, 0, 3, 4}), std::invalid_argument);  // 3 links from 0
  EXPECT_THROW(card.push(msg::MsgDesc{1'000, 6, 100, 0, 0, 3, 4}), std::invalid_argument);  // no link
  // One 2048-byte message over both links at MTU 1024; 2^20 in Q32.32 is 1/4096 ps per byte, so
  // ser(1024) = 1 ps. Its two packets leave link 0 at 1501 and 1502 and link 1 at 2202 and 2203.
  EXPECT_EQ(card.known_until(), ~uint64_t{0});  // nothing unrecorded
  card.push(msg::MsgDesc{1'000, 8, 2'048, 2, 0, 3, 4});
  EXPECT_EQ(card.known_until(), 1'000u + 500 + 700);  // not handed over yet: ready + the route's latencies
  card.advance(1'001);
  EXPECT_EQ(card.known_until(), 1'502u + 700);  // the last packet's far end on link 0 + link 1's latency
  card.advance(1'502);
  EXPECT_EQ(card.known_until(), 1'502u + 700);  // its far-end event at 1502 not run yet
  std::vector<msg::Delivery> out;
  EXPECT_EQ(card.take(out), 0u);
  card.advance(1'503);
  EXPECT_EQ(card.known_until(), ~uint64_t{0});
  EXPECT_EQ(card.take(out), 1u);
  EXPECT_EQ(out[0], (msg::Delivery{8, 2'203, msg::kNoCycle, 2}));
  EXPECT_EQ(card.in_flight(), 1u);
  card.advance(3'000);
  EXPECT_EQ(card.in_flight(), 0u);
  EXPECT_EQ(card.link_counters(1).bytes, 2'048u);
  EXPECT_EQ(card.link_counters(1).packets, 2u);
}

TEST(FpgaMsgFabric, MicrobenchmarkReportsMatchSoftware) {
  FABEMU_REQUIRE_SHARED(traces_dir);
  using namespace emu::walker_test;
  const emu::SystemConfig sys = ft::microbenchmark_system(traces_dir);
  uint64_t hop_bytes = 0, hop_transfers = 0, msg_bytes = 0, msg_transfers = 0, messages = 0, syncs = 0, runs = 0;
  int n_runs = 0;
  for (const ft::Microbenchmark& mb : ft::shared_microbenchmarks(traces_dir)) {
    SCOPED_TRACE(mb.what);
    ASSERT_EQ(mb.files.size(), static_cast<std::size_t>(mb.npus)) << mb.what;
    const auto& files = mb.files;
    const auto& net = mb.network;
    const fabemu::traces::ProcessGroups groups(mb.npus);
    ++n_runs;
    const auto run = [&](int which) {  // 0 software, 1 hop-level model device, 2 message-level
      emu::Engine engine(1 << 12);
      emu::Topology topology(net);
      emu::WalkerOptions o;
      o.system = sys;
      emu::RunResult r;
      if (which == 0) {
        emu::PacketFabric fabric(engine, topology, 4096);
        r = emu::Walker(fabric, net, files, groups, std::move(o)).run();
        r.links = emu::link_results(fabric, r.total);
      } else if (which == 1) {
        auto fabric = fpga::make_fpga_fabric(engine, topology, 4096, "model");
        r = emu::Walker(*fabric, net, files, groups, std::move(o)).run();
        // Per kernel run: the descriptors in and the completions out (32 bytes each, one burst each way),
        // and at least 7 register accesses of 4 bytes (NUM_LINKS, NUM_DESC, ap_start, one poll of ap_done,
        // REG_CYCLES twice, REG_STATUS).
        hop_bytes += fabric->device_hops() * 64 + fabric->device_runs() * 28;
        hop_transfers += fabric->device_runs() * (2 + 7);
        runs += fabric->device_runs();
      } else {
        auto fabric = fpga::make_fpga_msg_fabric(engine, topology, 4096, "model");
        r = emu::Walker(*fabric, net, files, groups, std::move(o)).run();
        fabric->finish();
        r.links = emu::link_results(*fabric, r.total);
        const fpga::MsgTraffic& t = fabric->device().traffic();
        msg_bytes += t.bytes_to_card + t.bytes_from_card;
        msg_transfers += t.transfers;
        messages += fabric->messages_pushed();
        syncs += fabric->syncs();
      }
      return r;
    };
    const emu::RunResult sw = run(0);
    ASSERT_TRUE(sw.stuck.empty());
    run(1);
    emu::RunResult m = run(2);
    // The walker's engine runs no packet events (the card does): every other number is the same.
    m.events = sw.events;
    EXPECT_EQ(emu::report_to_json(m), emu::report_to_json(sw));
  }
  std::printf("microbenchmarks (%d runs, mtu 4096): hop-level %llu kernel runs, %llu bytes in %llu transfers; "
              "message-level %llu messages, %llu syncs, %llu bytes in %llu transfers (%.1fx fewer bytes, %.1fx fewer "
              "transfers)\n",
              n_runs, static_cast<unsigned long long>(runs), static_cast<unsigned long long>(hop_bytes),
              static_cast<unsigned long long>(hop_transfers), static_cast<unsigned long long>(messages),
              static_cast<unsigned long long>(syncs), static_cast<unsigned long long>(msg_bytes),
              static_cast<unsigned long long>(msg_transfers), static_cast<double>(hop_bytes) / static_cast<double>(msg_bytes),
              static_cast<double>(hop_transfers) / static_cast<double>(msg_transfers));
  EXPECT_GE(hop_bytes, 10 * msg_bytes);
}
