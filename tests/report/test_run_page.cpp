// The run page (fabemu run --html; host/report/run_page.h) from hand-made results: every section there with
// the marks it should draw and their values; blocks of ranks at scale; measured vs modelled from a real-time
// fabric's report section; text escaped; and the traffic matrix's blocks.
#include "host/report/run_page.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fabemu::report {
namespace {

using emu::Duration;
using emu::Time;

Time at_ps(uint64_t ps) { return Time::from_ps(ps); }
Duration ps(uint64_t v) { return Duration::from_ps(v); }

// Each chart's title and the number of marks it declares; the page must draw as many as it declares.
struct Chart {
  std::string title;
  size_t points;
};
std::vector<Chart> charts(const std::string& html) {
  std::vector<Chart> out;
  const auto attribute = [](const std::string& tag, const std::string& name) {
    const size_t at = tag.find(name + "=\"") + name.size() + 2;
    return tag.substr(at, tag.find('"', at) - at);
  };
  for (size_t open = html.find("<svg class=\"chart\""); open != std::string::npos;
       open = html.find("<svg class=\"chart\"", open + 1)) {
    const size_t body = html.find('>', open) + 1, close = html.find("</svg>", body);
    const std::string tag = html.substr(open, body - open);
    const std::string inside = html.substr(body, close - body);
    const size_t declared = std::stoul(attribute(tag, "data-points"));
    size_t drawn = 0;
    for (size_t p = inside.find("class=\"point\""); p != std::string::npos; p = inside.find("class=\"point\"", p + 1)) {
      ++drawn;
    }
    EXPECT_EQ(drawn, declared) << attribute(tag, "aria-label");
    out.push_back({attribute(tag, "aria-label"), declared});
  }
  return out;
}

// Four ranks, three collectives, two links with a series of 4 bins of 1 us, a traffic matrix.
emu::RunResult small_run() {
  emu::RunResult r;
  r.workload = "w<1>";
  r.fabric = "software";
  r.model = "packet (mtu 4096)";
  r.topology = "Ring(4)";
  r.npus = 4;
  r.total = r.reached = at_ps(4'000'000);
  for (int32_t k = 0; k < 4; ++k) {
    emu::RankResult rank;
    rank.rank = k;
    rank.finish = at_ps(k == 2 ? 4'000'000 : 3'000'000);
    rank.compute_busy = ps(1'000'000);
    rank.exposed_comm = ps(1'500'000);
    rank.idle = ps(rank.finish.ps() - 2'500'000);
    rank.sent_bytes = 1000 * static_cast<uint64_t>(k + 1);
    rank.received_bytes = 500;
    r.ranks.push_back(rank);
  }
  for (uint64_t i = 0; i < 3; ++i) {
    emu::CollectiveResult c;
    c.index = i;
    c.type = i == 1 ? "ALL_GATHER" : "ALL_REDUCE";
    c.name = "coll" + std::to_string(i);
    c.bytes = 1 << 20;
    c.members = 4;
    c.algorithm = "ring";
    c.issued_last = at_ps(0);
    c.finished = at_ps(1'000'000 * (i + 1));  // durations 1, 2, 3 us: the slowest is #2
    c.busbw_bytes_per_s = 1e9 * static_cast<double>(3 - i);
    r.collectives.push_back(c);
  }
  r.links = {{.id = 0, .from = 0, .to = 1, .busy = ps(2'000'000), .utilization = 0.5},
             {.id = 3, .from = 3, .to = 0, .busy = ps(1'000'000), .utilization = 0.25}};
  r.link_series.bin_ps = 1'000'000;
  r.link_series.links = {0, 3};
  r.link_series.busy_ps = {{1'000'000, 500'000, 0, 500'000}, {0, 0, 1'000'000, 0}};
  r.traffic = emu::TrafficMatrix(4);
  r.traffic.add(0, 1, 2, 2048);
  r.traffic.add(3, 0, 1, 100);
  return r;
}

TEST(RunPage, EverySectionDrawsItsMarks) {
  const std::string html = run_page(small_run());
  const auto c = charts(html);
  ASSERT_EQ(c.size(), 8u) << html;
  EXPECT_EQ(c[0].points, 4u);   // finish per rank
  EXPECT_EQ(c[1].points, 12u);  // compute / comm, no compute / idle per rank
  EXPECT_EQ(c[2].points, 8u);   // sent and received per rank
  EXPECT_EQ(c[3].points, 3u);   // the slowest collectives
  EXPECT_EQ(c[4].points, 3u);   // bus bandwidth in issue order
  EXPECT_EQ(c[5].points, 4u);   // link heatmap: the non-zero cells
  EXPECT_EQ(c[6].points, 2u);   // utilization of the busiest links
  EXPECT_EQ(c[7].points, 2u);   // traffic matrix: the non-zero cells
  // Values in the tooltips: the latest rank, the slowest collective first, a bin half busy, a matrix cell.
  EXPECT_NE(html.find("<title>rank 2: 4 us</title>"), std::string::npos);
  EXPECT_LT(html.find("<title>#2 ALL_REDUCE: 3 us</title>"), html.find("<title>#0 ALL_REDUCE: 1 us</title>"));
  EXPECT_NE(html.find("<title>link 0 (0-&gt;1) &#8594; 1: 50 %</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>link 3 (3-&gt;0) &#8594; 2: 100 %</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>3 &#8594; 0: 100 B</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>0 &#8594; 1: 2 KiB</title>"), std::string::npos);
  EXPECT_NE(html.find("<h1>fabemu run: w&lt;1&gt;</h1>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("Measured vs modelled"), std::string::npos);  // the software fabric measures nothing
}

TEST(RunPage, AnalyticalRunsSayWhyThereAreNoLinks) {
  emu::RunResult r = small_run();
  r.model = "analytical";
  r.links.clear();
  r.link_series = {};
  const std::string html = run_page(r);
  EXPECT_NE(html.find("run with --model packet for link utilization"), std::string::npos);
  EXPECT_EQ(charts(html).size(), 6u);
}

TEST(RunPage, ManyRanksAreDrawnInBlocks) {
  emu::RunResult r = small_run();
  r.ranks.resize(2050, r.ranks[0]);
  r.ranks[2049].finish = at_ps(9'000'000);
  const auto c = charts(run_page(r));
  EXPECT_EQ(c[0].points, 684u);  // blocks of 3 ranks: ceil(2050 / 3)
  EXPECT_EQ(c[0].title, "Finish time per block of 3 ranks: the block&#39;s latest");
  const std::string html = run_page(r);
  EXPECT_NE(html.find("<title>ranks 2049-2049: 9 us</title>"), std::string::npos);
}

TEST(RunPage, MeasuredAgainstModelledFromTheFabricsSection) {
  emu::RunResult r = small_run();
  r.fabric = "dpdk";
  r.sections.emplace_back(
      "dpdk", R"({"dilation": 100, "collectives": [{"index": 0, "modelled_ps": 1000000, "measured_ps": 1010000},)"
              R"( {"index": 2, "modelled_ps": 2000000, "measured_ps": 3000000}]})");
  const std::string html = run_page(r);
  const auto c = charts(html);
  ASSERT_EQ(c.size(), 9u);
  EXPECT_EQ(c[8].points, 2u);
  EXPECT_NE(html.find("<title>#2: 1.5 x</title>"), std::string::npos);
  EXPECT_NE(html.find("<td>+50.00%</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>+1.00%</td>"), std::string::npos);
  // The most deviating first in the table.
  EXPECT_LT(html.find("<td>+50.00%</td>"), html.find("<td>+1.00%</td>"));

  // The FPGA fabric's are in its section's `wire` object.
  r.fabric = "fpga";
  r.sections = {{"fpga", R"({"device": "model", "wire": {"collectives": [{"index": 1, "modelled_ps": 4000000, )"
                         R"("measured_ps": 3000000}]}})"}};
  const std::string fpga = run_page(r);
  EXPECT_NE(fpga.find("From the report&#39;s &quot;fpga&quot; section"), std::string::npos);
  EXPECT_NE(fpga.find("<td>-25.00%</td>"), std::string::npos);

  r.sections = {{"socket", R"({"dilation": 0})"}};
  r.fabric = "socket";
  EXPECT_NE(run_page(r).find("The socket fabric reports no per-collective measurement."), std::string::npos);
}

TEST(RunPage, ProblemsAreListedAndCapped) {
  emu::RunResult r = small_run();
  r.stuck = {"rank 1 waits for <x>"};
  for (int i = 0; i < 150; ++i) r.warnings.push_back("w" + std::to_string(i));
  const std::string html = run_page(r);
  EXPECT_NE(html.find("<td>rank 1 waits for &lt;x&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>w98</td>"), std::string::npos);
  EXPECT_EQ(html.find("<td>w99</td>"), std::string::npos);
  EXPECT_NE(html.find("... and 51 more"), std::string::npos);
}

// Ranks are summed into blocks so that the matrix is at most 128 x 128.
TEST(TrafficMatrix, BlocksOfRanksKeepItAtMost128Square) {
  EXPECT_TRUE(emu::TrafficMatrix().empty());
  const struct {
    uint32_t ranks, block, side;
  } cases[] = {{1, 1, 1}, {128, 1, 128}, {129, 2, 65}, {1024, 8, 128}, {1025, 9, 114}, {100000, 782, 128}};
  for (const auto& k : cases) {
    const emu::TrafficMatrix m(k.ranks);
    EXPECT_EQ(m.block, k.block) << k.ranks;
    EXPECT_EQ(m.side, k.side) << k.ranks;
    EXPECT_EQ(m.bytes.size(), static_cast<size_t>(k.side) * k.side) << k.ranks;
  }
  emu::TrafficMatrix m(1024);
  m.add(1023, 0, 3, 300);
  m.add(1016, 7, 1, 50);
  EXPECT_EQ(m.messages[127 * 128 + 0], 4u);
  EXPECT_EQ(m.bytes[127 * 128 + 0], 350u);
}

}  // namespace
}  // namespace fabemu::report
