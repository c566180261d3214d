// `fabemu bench collective`'s parts: the system presets of traces/systems, nccl-tests' table layout and
// rounding, the fabric file's nccl: section errors, and the model's error on every published calibration table.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "emulator/nccl_model.h"
#include "host/config/fabric_config.h"
#include "host/nccl/collective_bench.h"
#include "host/nccl/nccl_tests_table.h"
#include "tests/support/test_support.h"
#include "traces/error.h"

namespace fabemu::nccl {
namespace {

namespace fs = std::filesystem;
using emu::nccl::Func;

std::string preset(const std::string& name) { return std::string(FABEMU_SOURCE_DIR) + "/traces/systems/" + name; }

emu::nccl::Model model_of(const std::string& name) {
  const auto f = host::load_fabric_yaml(preset(name));
  EXPECT_TRUE(f.nccl) << name;
  return emu::nccl::Model(*f.nccl);
}

TEST(SystemPresets, EveryPresetLoadsWithItsShapeAndValidation) {
  struct Expect {
    std::string file;
    int32_t gpus_per_node, nodes;
    bool validated;
  };
  const std::vector<Expect> all = {
      {"h100_8x_nvswitch.yaml", 8, 1, true},   {"a100_8x_nvswitch.yaml", 8, 1, true},
      {"p5_2node_efa.yaml", 8, 2, true},       {"p4de_2node_efa.yaml", 8, 2, true},
      {"a3mega_2node_tcpxo.yaml", 8, 2, true}, {"pcie_2x_nop2p.yaml", 2, 1, true},
      {"gb200_nvl72.yaml", 72, 1, false},      {"b200_2node_800g.yaml", 8, 2, false}};
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(preset(""))) files += e.path().extension() == ".yaml" ? 1 : 0;
  EXPECT_EQ(files, all.size()) << "a preset without its line here";
  for (const auto& e : all) {
    const auto f = host::load_fabric_yaml(preset(e.file));
    ASSERT_TRUE(f.nccl) << e.file;
    EXPECT_EQ(f.nccl->gpus_per_node, e.gpus_per_node) << e.file;
    EXPECT_EQ(f.nccl->nodes, e.nodes) << e.file;
    EXPECT_EQ(f.nccl_validated, e.validated) << e.file;
    const emu::nccl::Model m(*f.nccl);
    EXPECT_TRUE(m.choose(Func::kAllReduce, 1 << 20)) << e.file;
  }
}

TEST(CollectiveBench, TableRowsAreNcclTestsLayoutAndRounding) {
  const auto m = model_of("pcie_2x_nop2p.yaml");
  SweepOptions o;
  o.func = Func::kAllGather;
  o.min_bytes = 4;
  o.max_bytes = 64;
  const auto rows = run_sweep(model_rows(m, o), o, m.system().ranks());
  ASSERT_EQ(rows.size(), 5u);  // 4, 8, 16, 32, 64
  // All-gather rounds the size down to whole elements per rank (2 ranks x 4 B): 4 B is nothing.
  EXPECT_EQ(rows[0].size_bytes, 0u);
  EXPECT_EQ(rows[0].count, 0u);
  EXPECT_EQ(rows[1].size_bytes, 8u);
  EXPECT_EQ(rows[1].count, 1u);  // per rank, as nccl-tests prints it
  // Ring/LL on 2 ranks over PCIe: the preset's call overhead + 6.6 base + 1 step x 1.0 us x the fitted LL
  // hop scale, plus 8 B at LL's algbw: bus min(39, 2 x 2.85 x 0.5) = 2.85 GB/s x the fitted LL efficiency, x 2/1.
  EXPECT_EQ(rows[1].how, "ring/LL");
  ASSERT_TRUE(rows[1].choice);
  const double call = m.system().call_overhead_us;
  const double expected = call + 6.6 + 1.0 * emu::nccl::kFittedHopLatencyScale[0] +
                          8 / (2.85 * emu::nccl::kFittedBandwidthEfficiency[0] * 2 * 1e3);
  EXPECT_NEAR(rows[1].time_us, expected, 1e-6);
  const std::string table = format_table(rows, o, "title");
  EXPECT_NE(table.find("#       size         count      type   redop    root     time   algbw   busbw #wrong"),
            std::string::npos);
  const std::string time = fmt::format("{:7.2f}", expected);
  EXPECT_NE(table.find("\n           8             1     float    none      -1  " + time + "    0.00    0.00    N/A  " +
                       time + "    0.00    0.00    N/A\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("ring/LL"), std::string::npos);
  const std::string csv = sweep_csv(rows, o);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "size_bytes,count,type,redop,time_us,algbw_GBps,busbw_GBps,how");
}

TEST(CollectiveBench, SweepsThatCannotEndAreRefused) {
  const auto m = model_of("a100_8x_nvswitch.yaml");
  SweepOptions o;
  o.min_bytes = 1024;
  o.max_bytes = 8;
  EXPECT_THROW(run_sweep(model_rows(m, o), o, m.system().ranks()), std::invalid_argument);
  o.max_bytes = 1 << 20;
  o.step_factor = 1;
  EXPECT_THROW(run_sweep(model_rows(m, o), o, m.system().ranks()), std::invalid_argument);
  o.step_bytes = 1;
  o.max_bytes = 1'000'000;
  EXPECT_THROW(run_sweep(model_rows(m, o), o, m.system().ranks()), std::invalid_argument);  // more than 10,000 sizes
  EXPECT_THROW(datatype_bytes("float8"), std::invalid_argument);
}

void expect_nccl_error(const std::string& section, uint64_t line, const std::string& needle) {
  test::ScratchDir dir;
  const std::string path = dir.file("system.yaml");
  test::write_bytes(path, "topology:\n  - {type: Switch, npus: 8, bandwidth_gbps: 2400, latency_ns: 500}\n"
                          "  - {type: Switch, npus: 2, bandwidth_gbps: 50, latency_ns: 500}\nnccl:\n" + section);
  try {
    host::load_fabric_yaml(path);
    ADD_FAILURE() << "expected an error for " << section;
  } catch (const traces::TraceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path + ": line " + std::to_string(line) + ": "), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

TEST(CollectiveBench, TheNcclSectionsErrorsNameLineAndKey) {
  const std::string ok = "  intra: nvlink\n  channels: 8\n  channel_GBps: 20\n";
  expect_nccl_error(ok + "  net_channel_GBps: 6\n", 5, "missing key \"nccl.gpu\"");
  expect_nccl_error("  gpu: ampere\n" + ok, 5, "missing key \"nccl.net_channel_GBps\"");
  expect_nccl_error("  gpu: ampre\n" + ok + "  net_channel_GBps: 6\n", 5, "did you mean \"ampere\"");
  expect_nccl_error("  gpu: ampere\n" + ok + "  net_channel_GBps: 6\n  nvls: true\n  nvls_channels: 16\n", 10,
                    "NVLS needs NVSwitch 3rd generation");
  expect_nccl_error("  gpu: ampere\n" + ok + "  net_channel_GBps: 6\n  algorithms: ring,trie\n", 10,
                    "unknown element \"trie\"");
  expect_nccl_error("  gpu: ampere\n" + ok + "  net_channel_GBps: 6\n  protocols: \"LL;alltoall:Simple\"\n", 10,
                    "unknown collective \"alltoall\"");
  expect_nccl_error("  gpu: ampere\n" + ok + "  net_channel_GBps: 6\n  chanels: 4\n", 10,
                    "unknown key \"nccl.chanels\"");
  expect_nccl_error("  gpu: ampere\n" + ok + "  net_channel_GBps: 6\n  hop_latency_scale: 2\n", 10,
                    "expected a list of 3 numbers [LL, LL128, Simple]");
  expect_nccl_error("  gpu: ampere\n" + ok + "  net_channel_GBps: 6\n  bandwidth_efficiency: [1, 1, 1.2]\n", 10,
                    "key \"nccl.bandwidth_efficiency[2]\"");
}

// Every published table against its system's preset: the number of sizes compared is exact, and the errors
// (median and maximum |error| of busbw at >= 64 KiB, median |error| of time below) are the ones docs/nccl.md
// reports, to half a percentage point: a change to the model or a preset that moves them must update the docs.
// The nccl: section's lists as NCCL 2.24 reads NCCL_ALGO / NCCL_PROTO: per collective after ';'.
TEST(CollectiveBench, TheNcclSectionsListsPerCollective) {
  test::ScratchDir dir;
  const std::string path = dir.file("system.yaml");
  test::write_bytes(path, "topology:\n  - {type: Switch, npus: 8, bandwidth_gbps: 2400, latency_ns: 500}\n"
                          "nccl:\n  gpu: ampere\n  intra: nvlink\n  channels: 8\n  channel_GBps: 20\n"
                          "  algorithms: \"ring;allreduce:tree\"\n  protocols: \"^LL128;allreduce:LL128\"\n");
  const auto f = host::load_fabric_yaml(path);
  ASSERT_TRUE(f.nccl);
  using emu::nccl::Algo;
  using emu::nccl::Proto;
  const auto on = [](const auto& set) {
    std::string s;
    for (const bool b : set) s += b ? '1' : '0';
    return s;
  };
  const auto F = [](Func x) { return static_cast<size_t>(x); };
  EXPECT_EQ(on(f.nccl->algos[F(Func::kAllReduce)]), "010000");  // tree
  EXPECT_EQ(on(f.nccl->protos[F(Func::kAllReduce)]), "010");    // LL128
  for (const Func x : {Func::kAllGather, Func::kReduceScatter, Func::kBroadcast, Func::kReduce}) {
    EXPECT_EQ(on(f.nccl->algos[F(x)]), "100000");  // ring
    EXPECT_EQ(on(f.nccl->protos[F(x)]), "101");    // LL, Simple
  }
  const emu::nccl::Model m(*f.nccl);
  const auto c = m.choose(Func::kAllReduce, 1 << 20);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->algo, Algo::kTree);
  EXPECT_EQ(c->proto, Proto::kLL128);
}

TEST(CollectiveBench, ErrorOnEveryCalibrationTableIsTheDocumentedOne) {
  FABEMU_REQUIRE_SHARED(traces);
  const fs::path dir = traces.parent_path() / "calibration" / "nccl-tests";
  if (!fs::exists(dir)) GTEST_SKIP() << dir << " is absent: calibration test skipped";
  struct Case {
    std::string table, system, algo;
    Func func;
    size_t busbw_sizes, time_sizes;
    double busbw_median, busbw_max, time_median;
  };
  const std::vector<Case> cases = {
      {"h100_1n8_allreduce_nvls_azure-ndh100v5.tsv", "h100_8x_nvswitch.yaml", "nvls", Func::kAllReduce, 18, 6,
       0.037, 0.205, 0.563},
      {"a100_1n8_allreduce_azure-nda100v4.tsv", "a100_8x_nvswitch.yaml", "", Func::kAllReduce, 18, 6, 0.074, 0.280,
       0.107},
      {"a100_1n8_allreduce_oci-bmgpu48.tsv", "a100_8x_nvswitch.yaml", "", Func::kAllReduce, 18, 10, 0.073, 0.202, 0.192},
      {"h100_2n16_allreduce_aws-p5-efa.tsv", "p5_2node_efa.yaml", "", Func::kAllReduce, 19, 13, 0.087, 0.563, 0.292},
      {"a100_2n16_allreduce_aws-p4de-efa.tsv", "p4de_2node_efa.yaml", "", Func::kAllReduce, 16, 13, 0.016, 0.230,
       0.234},
      {"h100_2n16_allgather_gcp-a3mega-tcpxo.tsv", "a3mega_2node_tcpxo.yaml", "", Func::kAllGather, 11, 0, 0.028,
       0.145, 0},
      {"rtx2080ti_1n2_allreduce_pcie-nop2p.tsv", "pcie_2x_nop2p.yaml", "", Func::kAllReduce, 15, 13, 0.265, 0.453,
       0.128},
      {"rtx2080ti_1n2_allgather_pcie-nop2p.tsv", "pcie_2x_nop2p.yaml", "", Func::kAllGather, 15, 11, 0.319, 0.511,
       0.151}};
  for (const auto& c : cases) {
    auto f = host::load_fabric_yaml(preset(c.system));
    if (!c.algo.empty()) emu::nccl::apply_algo_list(c.algo, f.nccl->algos);
    const emu::nccl::Model m(*f.nccl);
    SweepOptions o;
    o.func = c.func;
    const auto real = read_nccl_tests((dir / c.table).string());
    const Comparison cmp = compare_with(model_rows(m, o), o, m.system().ranks(), real);
    EXPECT_EQ(cmp.busbw_sizes, c.busbw_sizes) << c.table;
    EXPECT_EQ(cmp.time_sizes, c.time_sizes) << c.table;
    EXPECT_NEAR(cmp.busbw_median, c.busbw_median, 0.005) << c.table;
    EXPECT_NEAR(cmp.busbw_max, c.busbw_max, 0.005) << c.table;
    EXPECT_NEAR(cmp.time_median, c.time_median, 0.005) << c.table;
  }
}

}  // namespace
}  // namespace fabemu::nccl
