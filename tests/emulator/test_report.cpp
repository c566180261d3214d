// Reports: the JSON report (golden text, round trip, errors), bandwidth figures, the run summary, the
// comparison of two reports and the Chrome / Perfetto timeline.
#include <gtest/gtest.h>

#include <functional>

#include <filesystem>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "emulator/report_json.h"
#include "emulator/summary.h"
#include "emulator/timeline.h"
#include "tests/emulator/print.h"
#include "traces/error.h"

namespace fabemu::emu {
namespace {

RunResult sample() {
  RunResult r;
  r.workload = "gen/all_reduce/2npus_1MB/all_reduce";
  r.fabric = "software";
  r.model = "analytical";
  r.topology = "Ring(2) 50 GiB/s 500 ns";
  r.npus = 2;
  r.total = Time::from_ps(1'500'000'000);
  r.reached = r.total;
  RankResult r0;
  r0.rank = 0;
  r0.finish = Time::from_ps(1'500'000'000);
  r0.nodes = 10;
  r0.comp_nodes = 6;
  r0.comm_nodes = 4;
  r0.compute_busy = Duration::from_ps(900'000'000);
  r0.comm_busy = Duration::from_ps(700'000'000);
  r0.exposed_comm = Duration::from_ps(400'000'000);
  r0.idle = Duration::from_ps(200'000'000);
  r0.device_compute = Duration::from_ps(800'000'000);
  r0.sent_messages = 3;
  r0.sent_bytes = 526'386;
  r0.received_messages = 3;
  r0.received_bytes = 526'286;
  RankResult r1 = r0;
  r1.rank = 1;
  r1.finish = Time::from_ps(1'499'999'999);
  r1.compute_busy = Duration::from_ps(1'000'000'000);
  r1.comm_busy = Duration::from_ps(600'000'000);
  r1.exposed_comm = Duration::from_ps(300'000'000);
  r1.idle = Duration::from_ps(199'999'999);
  r1.device_compute = Duration::from_ps(1'000'000'000);
  r1.compute_scale = 0.3;
  r1.sent_bytes = 526'286;
  r1.received_bytes = 526'386;
  r.ranks = {r0, r1};

  CollectiveResult c0;
  c0.index = 0;
  c0.type = "ALL_REDUCE";
  c0.name = "allreduce \"grad\"";
  c0.node_id = 7;
  c0.bytes = 1'048'576;
  c0.members = 2;
  c0.algorithm = "ring";
  c0.chunks = 2;
  c0.messages = 4;
  c0.message_bytes = 1'048'576;
  c0.issued_first = Time::from_ps(100'000'000);
  c0.issued_last = Time::from_ps(100'000'500);
  c0.finished = Time::from_ps(300'000'500);
  compute_bandwidths(c0);
  CollectiveResult c1;
  c1.index = 1;
  c1.type = "ALL_GATHER";
  c1.group = "tp";
  c1.name = "ag";
  c1.node_id = 12;
  c1.bytes = 4096;
  c1.members = 2;
  c1.algorithm = "direct";
  c1.chunks = 1;
  c1.messages = 2;
  c1.message_bytes = 4096;
  c1.issued_first = Time::from_ps(500'000'000);
  c1.issued_last = Time::from_ps(500'000'000);
  c1.finished = Time::from_ps(500'001'000);
  compute_bandwidths(c1);
  r.collectives = {c0, c1};
  r.p2p = {.sends = 1, .bytes = 100};
  LinkResult l;
  l.id = 3;
  l.from = 0;
  l.to = 2;
  l.dim = 0;
  l.bytes = 1'052'672;
  l.packets = 260;
  l.busy = Duration::from_ps(525'000'000);
  l.utilization = 0.35;
  r.links = {l};
  r.messages = 6;
  r.message_bytes = 1'052'672;
  r.events = 1234;
  r.collectives_closed_form = 1;
  r.warnings = {"rank 1: 3 dangling dependencies dropped"};
  return r;
}

void expect_equal(const RunResult& a, const RunResult& b) {
  EXPECT_EQ(a.workload, b.workload);
  EXPECT_EQ(a.fabric, b.fabric);
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.topology, b.topology);
  EXPECT_EQ(a.npus, b.npus);
  EXPECT_EQ(a.total, b.total);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t i = 0; i < a.ranks.size(); ++i) {
    SCOPED_TRACE(i);
    const RankResult &x = a.ranks[i], &y = b.ranks[i];
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.finish, y.finish);
    EXPECT_EQ(x.nodes, y.nodes);
    EXPECT_EQ(x.comp_nodes, y.comp_nodes);
    EXPECT_EQ(x.comm_nodes, y.comm_nodes);
    EXPECT_EQ(x.compute_busy, y.compute_busy);
    EXPECT_EQ(x.comm_busy, y.comm_busy);
    EXPECT_EQ(x.exposed_comm, y.exposed_comm);
    EXPECT_EQ(x.idle, y.idle);
    EXPECT_EQ(x.device_compute, y.device_compute);
    EXPECT_EQ(x.compute_scale, y.compute_scale);
    EXPECT_EQ(x.sent_messages, y.sent_messages);
    EXPECT_EQ(x.sent_bytes, y.sent_bytes);
    EXPECT_EQ(x.received_messages, y.received_messages);
    EXPECT_EQ(x.received_bytes, y.received_bytes);
  }
  ASSERT_EQ(a.collectives.size(), b.collectives.size());
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    SCOPED_TRACE(i);
    const CollectiveResult &x = a.collectives[i], &y = b.collectives[i];
    EXPECT_EQ(x.index, y.index);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.group, y.group);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.node_id, y.node_id);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.members, y.members);
    EXPECT_EQ(x.algorithm, y.algorithm);
    EXPECT_EQ(x.chunks, y.chunks);
    EXPECT_EQ(x.messages, y.messages);
    EXPECT_EQ(x.message_bytes, y.message_bytes);
    EXPECT_EQ(x.issued_first, y.issued_first);
    EXPECT_EQ(x.issued_last, y.issued_last);
    EXPECT_EQ(x.finished, y.finished);
    EXPECT_EQ(x.algbw_bytes_per_s, y.algbw_bytes_per_s);
    EXPECT_EQ(x.busbw_bytes_per_s, y.busbw_bytes_per_s);
  }
  EXPECT_EQ(a.p2p.sends, b.p2p.sends);
  EXPECT_EQ(a.p2p.bytes, b.p2p.bytes);
  ASSERT_EQ(a.links.size(), b.links.size());
  for (size_t i = 0; i < a.links.size(); ++i) {
    SCOPED_TRACE(i);
    const LinkResult &x = a.links[i], &y = b.links[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.from, y.from);
    EXPECT_EQ(x.to, y.to);
    EXPECT_EQ(x.dim, y.dim);
    EXPECT_EQ(x.tier, y.tier);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.packets, y.packets);
    EXPECT_EQ(x.busy, y.busy);
    EXPECT_EQ(x.utilization, y.utilization);
  }
  EXPECT_EQ(a.messages, b.messages);
  EXPECT_EQ(a.message_bytes, b.message_bytes);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.collectives_closed_form, b.collectives_closed_form);
  EXPECT_EQ(a.warnings, b.warnings);
}

constexpr const char* kGolden = R"json({
  "schema": "fabemu.report/2",
  "workload": "gen/all_reduce/2npus_1MB/all_reduce",
  "fabric": "software",
  "model": "analytical",
  "topology": "Ring(2) 50 GiB/s 500 ns",
  "npus": 2,
  "total_time_ps": 1500000000,
  "total_time": "1.500 ms",
  "status": "complete",
  "time_reached_ps": 1500000000,
  "ranks": [
    {"rank": 0, "finish_time_ps": 1500000000, "compute_ps": 900000000, "comm_busy_ps": 700000000, "exposed_comm_ps": 400000000, "idle_ps": 200000000, "device_compute_ps": 800000000, "finish_minus_compute_ps": 700000000, "nodes": 10, "comp_nodes": 6, "comm_nodes": 4, "sent_messages": 3, "sent_bytes": 526386, "received_messages": 3, "received_bytes": 526286, "compute_scale": 1, "finished": true},
    {"rank": 1, "finish_time_ps": 1499999999, "compute_ps": 1000000000, "comm_busy_ps": 600000000, "exposed_comm_ps": 300000000, "idle_ps": 199999999, "device_compute_ps": 1000000000, "finish_minus_compute_ps": 499999999, "nodes": 10, "comp_nodes": 6, "comm_nodes": 4, "sent_messages": 3, "sent_bytes": 526286, "received_messages": 3, "received_bytes": 526386, "compute_scale": 0.3, "finished": true}
  ],
  "collectives": [
    {"index": 0, "type": "ALL_REDUCE", "group": "", "name": "allreduce \"grad\"", "node_id": 7, "bytes": 1048576, "members": 2, "algorithm": "ring", "chunks": 2, "messages": 4, "message_bytes": 1048576, "issued_first_ps": 100000000, "issued_last_ps": 100000500, "finished_ps": 300000500, "duration_ps": 200000000, "algbw_GBps": 5.242880, "busbw_GBps": 5.242880},
    {"index": 1, "type": "ALL_GATHER", "group": "tp", "name": "ag", "node_id": 12, "bytes": 4096, "members": 2, "algorithm": "direct", "chunks": 1, "messages": 2, "message_bytes": 4096, "issued_first_ps": 500000000, "issued_last_ps": 500000000, "finished_ps": 500001000, "duration_ps": 1000, "algbw_GBps": 8192.000000, "busbw_GBps": 4096.000000}
  ],
  "p2p": {"sends": 1, "bytes": 100},
  "links": [
    {"id": 3, "from": 0, "to": 2, "dim": 0, "bytes": 1052672, "packets": 260, "busy_ps": 525000000, "utilization": 0.350000}
  ],
  "totals": {"messages": 6, "message_bytes": 1052672, "events": 1234, "collectives_closed_form": 1},
  "warnings": [
    "rank 1: 3 dangling dependencies dropped"
  ],
  "stuck": []
}
)json";

TEST(ReportJson, GoldenText) {
  const RunResult r = sample();
  const std::string text = report_to_json(r);
  EXPECT_EQ(text, kGolden);
  EXPECT_EQ(report_to_json(sample()), text);  // deterministic
  EXPECT_TRUE(nlohmann::json::accept(text));
}

TEST(ReportJson, EmptyResultIsValidJson) {
  const std::string text = report_to_json(RunResult{});
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["schema"], "fabemu.report/2");
  EXPECT_TRUE(j["ranks"].empty());
  EXPECT_TRUE(j["warnings"].empty());
  expect_equal(report_from_json(text, "empty.json"), RunResult{});
}

TEST(ReportJson, RoundTripEveryField) {
  const RunResult r = sample();
  const RunResult back = report_from_json(report_to_json(r), "sample.json");
  expect_equal(r, back);
  EXPECT_EQ(report_to_json(back), report_to_json(r));
}

TEST(ReportJson, ReadsFileAndNamesItInErrors) {
  const auto dir = std::filesystem::temp_directory_path() / "fabemu_test_report";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "r.json").string();
  std::ofstream(path) << report_to_json(sample());
  expect_equal(read_report_file(path), sample());
  try {
    (void)read_report_file((dir / "absent.json").string());
    FAIL() << "no error";
  } catch (const traces::TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("absent.json"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

std::string error_of(const std::string& text) {
  try {
    (void)report_from_json(text, "r.json");
  } catch (const traces::TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

// Issue 51 item 4: a fat-tree's links carry their tier ("leaf", "spine"), read back; other links have none.
TEST(ReportJson, FatTreeLinkTiersRoundTrip) {
  RunResult r = sample();
  LinkResult spine = r.links[0];
  spine.id = 40;
  spine.dim = 1;
  spine.tier = "spine";
  r.links.push_back(spine);
  const std::string text = report_to_json(r);
  EXPECT_NE(text.find("\"dim\": 1, \"tier\": \"spine\", \"bytes\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"dim\": 0, \"bytes\""), std::string::npos) << text;
  const RunResult back = report_from_json(text, "ft.json");
  expect_equal(back, r);
  ASSERT_EQ(back.links.size(), 2u);
  EXPECT_EQ(back.links[0].tier, "");
  EXPECT_EQ(back.links[1].tier, "spine");
  auto j = nlohmann::json::parse(text);
  j["links"][1]["tier"] = "core";
  EXPECT_EQ(error_of(j.dump()), "r.json: /links/1/tier: expected \"leaf\" or \"spine\"");
}

TEST(ReportJson, ErrorsNameFileAndPointer) {
  auto j = nlohmann::json::parse(report_to_json(sample()));
  auto missing = j;
  missing["ranks"][1].erase("finish_time_ps");
  EXPECT_EQ(error_of(missing.dump()), "r.json: /ranks/1/finish_time_ps: missing");
  auto negative = j;
  negative["collectives"][0]["bytes"] = -1;
  EXPECT_EQ(error_of(negative.dump()), "r.json: /collectives/0/bytes: expected a non-negative integer");
  auto text = j;
  text["total_time_ps"] = "1 ms";
  EXPECT_EQ(error_of(text.dump()), "r.json: /total_time_ps: expected a non-negative integer");
  auto order = j;
  order["collectives"][1]["finished_ps"] = 1;
  EXPECT_EQ(error_of(order.dump()), "r.json: /collectives/1/finished_ps: is before issued_last_ps");
  auto schema = j;
  schema["schema"] = "fabemu.report/9";
  EXPECT_EQ(error_of(schema.dump()),
            "r.json: /schema: unsupported report schema \"fabemu.report/9\" (expected \"fabemu.report/2\" or "
            "\"fabemu.report/1\")");
  auto warn = j;
  warn["warnings"][0] = 5;
  EXPECT_EQ(error_of(warn.dump()), "r.json: /warnings/0: expected a string");
  EXPECT_EQ(error_of("[1, 2]"), "r.json: /: expected a JSON object (a fabemu report)");
  const std::string bad = error_of("{\n  \"schema\": \"fabemu.report/1\",\n  \"npus\": ,\n}");
  EXPECT_EQ(bad.rfind("r.json: line 3: not a JSON report: ", 0), 0u) << bad;
}

// ---- bandwidths ---------------------------------------------------------------------------------------

CollectiveResult timed(const std::string& type, uint64_t bytes, int32_t members, uint64_t duration_ps) {
  CollectiveResult c;
  c.type = type;
  c.bytes = bytes;
  c.members = members;
  c.issued_first = Time::from_ps(5);
  c.issued_last = Time::from_ps(1'000);
  c.finished = Time::from_ps(1'000 + duration_ps);
  compute_bandwidths(c);
  return c;
}

TEST(Bandwidth, NcclTestsFactorsAtEightRanks) {
  // 8,000,000 bytes in 1 ms: algbw 8e9 B/s (8 GB/s).
  constexpr uint64_t kBytes = 8'000'000, kMs = 1'000'000'000;
  const auto ar = timed("ALL_REDUCE", kBytes, 8, kMs);
  EXPECT_DOUBLE_EQ(ar.algbw_bytes_per_s, 8e9);
  EXPECT_DOUBLE_EQ(ar.busbw_bytes_per_s, 14e9);  // x 2*7/8
  const auto rs = timed("REDUCE_SCATTER", kBytes, 8, kMs);
  EXPECT_DOUBLE_EQ(rs.algbw_bytes_per_s, 8e9);
  EXPECT_DOUBLE_EQ(rs.busbw_bytes_per_s, 7e9);  // x 7/8
  const auto a2a = timed("ALL_TO_ALL", kBytes, 8, kMs);
  EXPECT_DOUBLE_EQ(a2a.algbw_bytes_per_s, 8e9);
  EXPECT_DOUBLE_EQ(a2a.busbw_bytes_per_s, 7e9);
  // All-gather: comm_size is each rank's input, so the gathered size is 8 x 8e6 = 64e6 bytes.
  const auto ag = timed("ALL_GATHER", kBytes, 8, kMs);
  EXPECT_DOUBLE_EQ(ag.algbw_bytes_per_s, 64e9);
  EXPECT_DOUBLE_EQ(ag.busbw_bytes_per_s, 56e9);
  const auto bc = timed("BROADCAST", kBytes, 8, kMs);
  EXPECT_DOUBLE_EQ(bc.busbw_bytes_per_s, 8e9);
  EXPECT_DOUBLE_EQ(busbw_factor("ALL_REDUCE", 8), 1.75);
  EXPECT_DOUBLE_EQ(busbw_factor("ALL_GATHER", 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor("REDUCE_SCATTER", 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor("ALL_TO_ALL", 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor("BARRIER", 8), 1.0);
}

TEST(Bandwidth, ZeroDurationGivesZero) {
  const auto c = timed("ALL_REDUCE", 1'000, 8, 0);
  EXPECT_EQ(c.algbw_bytes_per_s, 0.0);
  EXPECT_EQ(c.busbw_bytes_per_s, 0.0);
}

// ---- summary ------------------------------------------------------------------------------------------

TEST(Summary, Units) {
  EXPECT_EQ(format_ps(0), "0 ps");
  EXPECT_EQ(format_ps(999), "999 ps");
  EXPECT_EQ(format_ps(1'000), "1.000 ns");
  EXPECT_EQ(format_ps(1'234'567), "1.235 us");
  EXPECT_EQ(format_ps(1'500'000'000), "1.500 ms");
  EXPECT_EQ(format_ps(2'000'000'000'000), "2.000 s");
  EXPECT_EQ(format_signed_ps(-1'500), "-1.500 ns");
  EXPECT_EQ(format_signed_ps(2'000), "+2.000 ns");
  EXPECT_EQ(format_size(512), "512 B");
  EXPECT_EQ(format_size(65'536), "64 KiB");
  EXPECT_EQ(format_size(1'572'864), "1.50 MiB");
  EXPECT_EQ(format_size(1'000'000), "976.56 KiB");
}

void expect_contains(const std::string& text, const std::string& want) {
  EXPECT_NE(text.find(want), std::string::npos) << "missing '" << want << "' in:\n" << text;
}

TEST(Summary, KeyNumbers) {
  const std::string s = format_summary(sample());
  expect_contains(s, "Total time    1.500 ms (1500000000 ps)");
  expect_contains(s, "rank 0        1.500 ms  (1500000000 ps)");
  expect_contains(s, "rank 1        1.500 ms  (1499999999 ps)");
  // Averages: compute 950 us (63.3%), exposed 350 us (23.3%), idle 200 us (13.3%).
  expect_contains(s, "average over ranks");
  expect_contains(s, "950.000 us  63.3%");
  expect_contains(s, "350.000 us  23.3%");
  expect_contains(s, "200.000 us  13.3%");
  expect_contains(s, "slowest rank (rank 0)");
  expect_contains(s, "900.000 us  60.0%");
  // Slowest collective first: the all-reduce (200 us, 5.24 GB/s), then the all-gather (1 ns).
  const auto ar = s.find("ALL_REDUCE"), ag = s.find("ALL_GATHER");
  ASSERT_NE(ar, std::string::npos);
  ASSERT_NE(ag, std::string::npos);
  EXPECT_LT(ar, ag);
  expect_contains(s, "1 MiB");
  expect_contains(s, "200.000 us");
  expect_contains(s, "5.24 GB/s");
  expect_contains(s, "4096.00 GB/s");
  expect_contains(s, "35.0% busy");
  expect_contains(s, "rank 1: 3 dangling dependencies dropped");
  EXPECT_EQ(format_summary(sample()), s);
}

TEST(Summary, ManyRanksShowMinMedianMax) {
  RunResult r;
  r.npus = 20;
  for (int32_t i = 0; i < 20; ++i) {
    RankResult k;
    k.rank = i;
    k.finish = Time::from_ns(static_cast<uint64_t>(100 + (i * 7) % 20));  // a permutation of 100..119 ns
    r.ranks.push_back(k);
  }
  r.total = Time::from_ns(119);
  const std::string s = format_summary(r);
  expect_contains(s, "min       100.000 ns  (100000 ps)  rank 0");
  expect_contains(s, "median    109.000 ns  (109000 ps)  rank 7");
  expect_contains(s, "max       119.000 ns  (119000 ps)  rank 17");
  EXPECT_EQ(s.find("rank 5 "), std::string::npos);
}

// ---- comparison ---------------------------------------------------------------------------------------

TEST(Compare, RegressionGate) {
  const RunResult a = sample();
  RunResult b = sample();
  b.total = Time::from_ps(1'575'000'000);  // +5%
  EXPECT_FALSE(is_regression(a, b, 5.0));
  EXPECT_TRUE(is_regression(a, b, 4.99));
  EXPECT_FALSE(is_regression(b, a, 0.0));  // faster is never a regression
  RunResult zero;
  EXPECT_TRUE(is_regression(zero, a, 1000.0));
  EXPECT_FALSE(is_regression(zero, zero, 0.0));

  const std::string text = format_comparison(a, b, "a.json", "b.json", {.max_regression_pct = 1.0, .per_rank = true});
  expect_contains(text, "A  a.json: 1.500 ms (1500000000 ps), 2 NPUs, analytical model");
  expect_contains(text, "B  b.json: 1.575 ms (1575000000 ps)");
  expect_contains(text, "Delta (B - A)  +75.000 us (75000000 ps, +5.00%)");
  expect_contains(text, "ALL_REDUCE");
  expect_contains(text, "Rank finish");
  expect_contains(text, "REGRESSION: B is +5.00% slower than A (limit 1.00%)");

  const auto j = nlohmann::json::parse(comparison_to_json(a, b, "a.json", "b.json", {.max_regression_pct = 10.0}));
  EXPECT_EQ(j["delta_ps"], 75'000'000);
  EXPECT_DOUBLE_EQ(j["delta_pct"].get<double>(), 5.0);
  EXPECT_EQ(j["regression"], false);
  EXPECT_EQ(j["collective_types"].size(), 2u);
  EXPECT_EQ(j["collective_types"][0]["type"], "ALL_GATHER");
  EXPECT_FALSE(j.contains("ranks"));
}

// Issue 44 item 16: a gate fails on partial reports whatever their times, and warns when the two reports
// are of different workloads.
TEST(Compare, GateFailsOnPartialReportsAndWarnsOnDifferentWorkloads) {
  const RunResult a = sample();
  struct Case {
    const char* what;
    std::function<void(RunResult&)> make;
    const char* why;
  };
  const std::vector<Case> cases = {
      {"deadlocked", [](RunResult& r) { r.status = RunStatus::kDeadlocked; r.stuck = {"rank 1 waits"}; },
       "B (the candidate) is a partial report: the run is deadlocked"},
      {"interrupted", [](RunResult& r) { r.status = RunStatus::kInterrupted; }, "the run is interrupted"},
      {"stalled", [](RunResult& r) { r.status = RunStatus::kStalled; }, "the run is stalled"},
      {"lost ranks", [](RunResult& r) { r.status = RunStatus::kIncomplete; r.ranks.pop_back(); }, "is incomplete"},
      {"unfinished rank", [](RunResult& r) { r.ranks[1].finished = false; }, "(1 of 2 ranks did not finish"},
      {"ranks missing", [](RunResult& r) { r.ranks.pop_back(); }, "B (the candidate) has 1 ranks, A 2"},
      {"no ranks, total 0", [](RunResult& r) { r.ranks.clear(); r.total = Time::zero(); }, "B (the candidate) has no ranks"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    RunResult b = sample();
    c.make(b);
    b.total = Time::from_ps(a.total.ps() / 2);  // faster: only the refusal can fail it
    EXPECT_TRUE(fails_gate(a, b, 1000.0));
    EXPECT_FALSE(is_regression(a, b, 1000.0));
    const std::string text = format_comparison(a, b, "a.json", "b.json", {.max_regression_pct = 1.0});
    expect_contains(text, "FAIL: ");
    expect_contains(text, c.why);
    const auto j = nlohmann::json::parse(comparison_to_json(a, b, "a.json", "b.json", {.max_regression_pct = 1.0}));
    EXPECT_EQ(j["regression"], true);
    EXPECT_NE(j["gate_refused"].get<std::string>().find(c.why), std::string::npos);
  }
  // A partial baseline fails too; two complete reports of different workloads pass with a warning.
  RunResult partial = sample();
  partial.status = RunStatus::kDeadlocked;
  EXPECT_TRUE(fails_gate(partial, a, 1000.0));
  RunResult other = sample();
  other.workload = "gen/all_gather/2npus_1MB/all_gather";
  EXPECT_FALSE(fails_gate(a, other, 1.0));
  const std::string text = format_comparison(a, other, "a.json", "b.json", {.max_regression_pct = 1.0});
  expect_contains(text, "warning: A and B have different workloads: gen/all_reduce/2npus_1MB/all_reduce / "
                        "gen/all_gather/2npus_1MB/all_gather");
  expect_contains(text, "OK: B is within 1.00% of A");
}

// Issue 44 item 17: a partial run's summary says how far it got instead of "Total time 0 ps".
TEST(Summary, PartialRunShowsTheTimeReachedAndUnfinishedRanks) {
  RunResult r = sample();
  r.status = RunStatus::kDeadlocked;
  r.ranks[1].finished = false;
  r.reached = Time::from_ps(2'000'000'000);
  const std::string s = format_summary(r);
  expect_contains(s, "Total time    none: the run is deadlocked (1 of 2 ranks did not finish); it reached 2.000 ms "
                     "(2000000000 ps)");
  expect_contains(s, "rank 1        1.500 ms  (1499999999 ps)  did not finish");
  EXPECT_EQ(s.find("(1500000000 ps)  did not"), std::string::npos);
  // Round trip of the new keys, and a report without them reads as complete.
  const RunResult back = report_from_json(report_to_json(r), "r.json");
  EXPECT_EQ(back.status, RunStatus::kDeadlocked);
  EXPECT_EQ(back.reached, r.reached);
  EXPECT_FALSE(back.ranks[1].finished);
  std::string old = report_to_json(sample());
  old.erase(old.find("  \"status\""), old.find("  \"ranks\"") - old.find("  \"status\""));
  EXPECT_EQ(report_from_json(old, "old.json").status, RunStatus::kComplete);
  EXPECT_EQ(report_from_json(old, "old.json").reached, sample().total);
}

// A number beyond a double's range is a located error of the reader, not nlohmann's out_of_range (found by
// fuzz_report_json: "3236E878" in a report).
TEST(ReportJson, ANumberOutOfRangeIsALocatedError) {
  try {
    report_from_json("{\"schema\": \"fabemu.report/2\", \"npus\": 3236E878}", "big.json");
    FAIL() << "no error";
  } catch (const traces::TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("big.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a JSON report: number overflow parsing '3236E878'"), std::string::npos)
        << e.what();
  }
}

// A report written before the per-rank traffic keys reads back with 0 traffic, the rest unchanged.
TEST(ReportJson, ReportWithoutRankTrafficReadsAsZero) {
  std::string old = report_to_json(sample());
  for (const char* key : {"\"sent_messages\": 3, ", "\"sent_bytes\": 526386, ", "\"sent_bytes\": 526286, ",
                          "\"received_messages\": 3, ", "\"received_bytes\": 526286, ", "\"received_bytes\": 526386, "}) {
    for (size_t at = old.find(key); at != std::string::npos; at = old.find(key)) old.erase(at, std::string(key).size());
  }
  ASSERT_EQ(old.find("sent_"), std::string::npos) << old;
  const RunResult back = report_from_json(old, "old.json");
  for (const RankResult& k : back.ranks) {
    EXPECT_EQ(k.sent_messages + k.sent_bytes + k.received_messages + k.received_bytes, 0u);
  }
  EXPECT_EQ(back.ranks[1].compute_scale, 0.3);
}

// ---- timeline -----------------------------------------------------------------------------------------

// Counter events: on a rank's process (named once), and for rank -1 on the "network" process.
TEST(Timeline, CounterTracks) {
  std::ostringstream os;
  {
    ChromeTimeline t(os);
    t.counter(2, "bytes in flight", Time::from_ps(1'000), 4096.5);
    t.counter(-1, "link 3 (0->1) utilization", Time::from_ps(2'000'000), 0.25);
    t.counter(-1, "link 3 (0->1) utilization", Time::from_ps(4'000'000), 0);
    t.finish();
    EXPECT_EQ(t.counters(), 3u);
    EXPECT_EQ(t.slices(), 0u);
  }
  const auto j = nlohmann::json::parse(os.str());
  std::vector<nlohmann::json> counters;
  bool network_named = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "C") counters.push_back(e);
    if (e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == ChromeTimeline::kNetworkPid) {
      network_named = e["args"]["name"] == "network";
    }
  }
  EXPECT_TRUE(network_named);
  ASSERT_EQ(counters.size(), 3u);
  EXPECT_EQ(counters[0]["pid"], 3);
  EXPECT_EQ(counters[0]["name"], "bytes in flight");
  EXPECT_DOUBLE_EQ(counters[0]["ts"].get<double>(), 0.001);
  EXPECT_DOUBLE_EQ(counters[0]["args"]["value"].get<double>(), 4096.5);
  EXPECT_EQ(counters[1]["pid"], ChromeTimeline::kNetworkPid);
  EXPECT_DOUBLE_EQ(counters[1]["args"]["value"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(counters[2]["args"]["value"].get<double>(), 0.0);
}

TEST(Timeline, ChromeTraceEvents) {
  std::ostringstream os;
  {
    ChromeTimeline t(os);
    t.node_slice(0, 0, "fc1", "COMP_NODE", 3, Time::from_ps(0), Time::from_ps(2'000'000), 0);
    // A picosecond-valued slice: 1234.567891 us long 1 ps.
    t.node_slice(0, 1, "allreduce", "COMM_COLL_NODE", 7, Time::from_ps(1'234'567'891), Time::from_ps(1'234'567'892),
                 1'048'576);
    t.node_slice(1, 0, "", "COMP_NODE", 4, Time::from_ps(10), Time::from_ps(20), 0);
    // Rank 0 sends three messages; the first two overlap, so the second goes to a second lane.
    t.message_slice(0, 1, 4096, Time::from_ps(100), Time::from_ps(500), 0);
    t.message_slice(0, 1, 4096, Time::from_ps(200), Time::from_ps(600), 0);
    t.message_slice(0, 1, 100, Time::from_ps(500), Time::from_ps(900), ChromeTimeline::kNoCollective);
    t.finish();
    EXPECT_EQ(t.slices(), 6u);
    // Metadata: rank 0 process (2) + compute, comm stream 1, messages, messages 2 (2 each); rank 1
    // process (2) + compute (2).
    EXPECT_EQ(t.events(), 6u + 10u + 4u);
  }
  const std::string text = os.str();
  expect_contains(text, R"("ts":1234.567891,"dur":0.000001)");
  expect_contains(text, R"("ts":0.000000,"dur":2.000000)");
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["displayTimeUnit"], "ns");
  const auto& ev = j["traceEvents"];
  ASSERT_EQ(ev.size(), 20u);
  size_t x = 0, m = 0;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  std::map<int64_t, std::string> process_names;
  for (const auto& e : ev) {
    if (e["ph"] == "X") ++x;
    if (e["ph"] == "M") ++m;
    if (e["name"] == "thread_name") thread_names[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (e["name"] == "process_name") process_names[e["pid"]] = e["args"]["name"];
  }
  EXPECT_EQ(x, 6u);
  EXPECT_EQ(m, 14u);
  EXPECT_EQ(process_names[1], "rank 0");
  EXPECT_EQ(process_names[2], "rank 1");
  EXPECT_EQ((thread_names[{1, 1}]), "compute");
  EXPECT_EQ((thread_names[{1, 2}]), "comm stream 1");
  EXPECT_EQ((thread_names[{1, ChromeTimeline::kMessagesTid}]), "messages");
  EXPECT_EQ((thread_names[{1, ChromeTimeline::kMessagesTid + 1}]), "messages 2");
  // The messages: lanes 0, 1, 0; the collective index only on collective messages.
  std::vector<const nlohmann::json*> msgs;
  for (const auto& e : ev) {
    if (e["ph"] == "X" && e["cat"] == "message") msgs.push_back(&e);
  }
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_EQ((*msgs[0])["tid"], ChromeTimeline::kMessagesTid);
  EXPECT_EQ((*msgs[1])["tid"], ChromeTimeline::kMessagesTid + 1);
  EXPECT_EQ((*msgs[2])["tid"], ChromeTimeline::kMessagesTid);
  EXPECT_EQ((*msgs[0])["args"]["collective"], 0);
  EXPECT_EQ((*msgs[0])["args"]["bytes"], 4096);
  EXPECT_EQ((*msgs[0])["args"]["dst"], 1);
  EXPECT_FALSE((*msgs[2])["args"].contains("collective"));
  EXPECT_EQ((*msgs[2])["name"], "0->1");
  // Node slices carry node id and bytes; a nameless node is named by its kind.
  const auto& coll = ev[7];  // after rank 0 process, compute thread, fc1, comm stream 1 thread
  ASSERT_EQ(coll["ph"], "X");
  EXPECT_EQ(coll["name"], "allreduce");
  EXPECT_EQ(coll["cat"], "COMM_COLL_NODE");
  EXPECT_EQ(coll["args"]["node_id"], 7);
  EXPECT_EQ(coll["args"]["bytes"], 1'048'576);
  bool nameless = false;
  for (const auto& e : ev) nameless = nameless || (e["ph"] == "X" && e["pid"] == 2 && e["name"] == "COMP_NODE");
  EXPECT_TRUE(nameless);
}

TEST(Timeline, EmptyTimelineIsValidJson) {
  std::ostringstream os;
  { ChromeTimeline t(os); }  // the destructor finishes it
  const auto j = nlohmann::json::parse(os.str());
  EXPECT_TRUE(j["traceEvents"].empty());
}

TEST(Timeline, WritesFileAndNamesUnwritablePath) {
  const auto path = (std::filesystem::temp_directory_path() / "fabemu_test_timeline.json").string();
  {
    ChromeTimeline t(path);
    t.node_slice(0, 0, "x", "COMP_NODE", 1, Time::from_ps(0), Time::from_ps(1), 0);
    t.finish();
  }
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["traceEvents"].size(), 5u);
  std::filesystem::remove(path);
  try {
    ChromeTimeline bad("/nonexistent-dir/t.json");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/t.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fabemu::emu
