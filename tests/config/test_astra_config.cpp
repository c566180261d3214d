// ASTRA-sim's network.yml and system.json read unchanged: the shared configuration files with their
// exact values, and bad inputs that must each give one TraceError naming the file, the line (or byte)
// and the key.
#include "host/config/astra_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "traces/error.h"

namespace fabemu::host {
namespace {

namespace fs = std::filesystem;
using emu::CollectiveAlgo;
using emu::CollectiveImpl;
using emu::DimTopology;
using emu::Duration;
using emu::Rate;
using test::ScratchDir;
using test::write_bytes;
using traces::TraceError;

// ../shared/configs/astra-sim, the sibling of the shared traces folder.
std::optional<fs::path> shared_configs_dir() {
  const auto traces = test::shared_traces_dir();
  if (!traces) return std::nullopt;
  const fs::path p = traces->parent_path() / "configs" / "astra-sim";
  if (!fs::is_directory(p)) return std::nullopt;
  return p;
}
#define REQUIRE_SHARED_CONFIGS(var)                                                                  \
  const auto var##_opt = shared_configs_dir();                                                       \
  if (!var##_opt) GTEST_SKIP() << "../shared/configs/astra-sim is absent: shared-config test skipped"; \
  const fs::path var = *var##_opt

using test::error_of;

TraceError yml_error(const ScratchDir& dir, const std::string& text) {
  const std::string path = dir.file("network.yml");
  write_bytes(path, text);
  return error_of([&] { load_network_yml(path); });
}

TraceError json_error(const ScratchDir& dir, const std::string& text, size_t dims = 1) {
  const std::string path = dir.file("system.json");
  write_bytes(path, text);
  return error_of([&] { load_system_json(path, dims); });
}

constexpr const char* kGoodYml = "topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n";

// --- the shared files --------------------------------------------------------------------------------------

TEST(SharedConfigs, EveryFileLoads) {
  REQUIRE_SHARED_CONFIGS(dir);
  int yml = 0;
  int json = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string path = entry.path().string();
    SCOPED_TRACE(path);
    if (entry.path().extension() == ".yml") {
      const auto net = load_network_yml(path);
      EXPECT_EQ(net.dims.size(), 1u);
      EXPECT_EQ(net.source, path);
      ++yml;
    } else if (entry.path().extension() == ".json") {
      const auto sys = load_system_json(path, 1);
      EXPECT_EQ(sys.source, path);
      ++json;
    }
  }
  EXPECT_EQ(yml, 10);
  EXPECT_EQ(json, 3);  // system_ring_4chunks, system_hgx_h100, system_custom_allreduce
}

TEST(SharedConfigs, Ring8ExactValues) {
  REQUIRE_SHARED_CONFIGS(dir);
  const auto net = load_network_yml((dir / "Ring_8npus.yml").string());
  ASSERT_EQ(net.dims.size(), 1u);
  const auto& d = net.dims[0];
  EXPECT_EQ(d.topology, DimTopology::kRing);
  EXPECT_EQ(d.npus, 8);
  EXPECT_EQ(net.total_npus(), 8);
  EXPECT_EQ(d.bandwidth.ps_per_byte_q32(), Rate::from_astra_gbps(50).ps_per_byte_q32());
  EXPECT_EQ(d.bandwidth_gbps, 50.0);
  // 1 MiB at 50 * 2^30 B/s is 19.53125 us, exactly.
  EXPECT_EQ(d.bandwidth.ser(1'048'576).ps(), 19'531'250u);
  EXPECT_EQ(d.latency.ps(), 500'000u);
}

TEST(SharedConfigs, EveryTopologyAndSize) {
  REQUIRE_SHARED_CONFIGS(dir);
  const std::vector<std::pair<std::string, DimTopology>> kinds = {
      {"Ring", DimTopology::kRing}, {"Switch", DimTopology::kSwitch}, {"FullyConnected", DimTopology::kFullyConnected}};
  for (const auto& [name, topology] : kinds) {
    for (const int n : {4, 8, 16}) {
      const auto net = load_network_yml((dir / (name + "_" + std::to_string(n) + "npus.yml")).string());
      ASSERT_EQ(net.dims.size(), 1u);
      EXPECT_EQ(net.dims[0].topology, topology) << name;
      EXPECT_EQ(net.dims[0].npus, n) << name;
      EXPECT_EQ(net.dims[0].bandwidth, Rate::from_astra_gbps(50)) << name;
      EXPECT_EQ(net.dims[0].latency, Duration::from_ns(500)) << name;
    }
  }
}

TEST(SharedConfigs, HgxH100FractionalLatency) {
  REQUIRE_SHARED_CONFIGS(dir);
  const auto net = load_network_yml((dir / "hgx_h100.yml").string());
  ASSERT_EQ(net.dims.size(), 1u);
  EXPECT_EQ(net.dims[0].topology, DimTopology::kSwitch);
  EXPECT_EQ(net.dims[0].npus, 8);
  EXPECT_EQ(net.dims[0].bandwidth, Rate::from_astra_gbps(400));
  EXPECT_EQ(net.dims[0].bandwidth_gbps, 400.0);
  EXPECT_EQ(net.dims[0].latency.ps(), 936'250u);
}

TEST(SharedConfigs, SystemRing4Chunks) {
  REQUIRE_SHARED_CONFIGS(dir);
  const auto sys = load_system_json((dir / "system_ring_4chunks.json").string(), 1);
  EXPECT_EQ(sys.scheduling_policy, emu::SchedulingPolicy::kLifo);
  EXPECT_EQ(sys.endpoint_delay, Duration::from_ns(10));
  EXPECT_EQ(sys.preferred_dataset_splits, 4);
  EXPECT_EQ(sys.active_chunks_per_dimension, 1);
  const std::vector<CollectiveImpl> ring = {CollectiveImpl{CollectiveAlgo::kRing, false, -1}};
  EXPECT_EQ(sys.all_reduce, ring);
  EXPECT_EQ(sys.all_gather, ring);
  EXPECT_EQ(sys.reduce_scatter, ring);
  EXPECT_EQ(sys.all_to_all, ring);
  EXPECT_EQ(sys.collective_optimization, emu::CollectiveOptimization::kLocalBwAware);
  EXPECT_EQ(sys.local_mem_bw_gbps, 1600.0);
  EXPECT_EQ(sys.peak_perf_tflops, 900.0);
  EXPECT_FALSE(sys.roofline_enabled);
  EXPECT_FALSE(sys.replay_only);
  EXPECT_EQ(sys.boost_mode, 0);
  EXPECT_EQ(sys.ignored_keys, std::vector<std::string>{"boost-mode"});
  EXPECT_TRUE(sys.all_reduce_custom.empty());
}

TEST(SharedConfigs, SystemHgxH100) {
  REQUIRE_SHARED_CONFIGS(dir);
  const auto sys = load_system_json((dir / "system_hgx_h100.json").string(), 1);
  EXPECT_EQ(sys.active_chunks_per_dimension, 2);
  EXPECT_EQ(sys.preferred_dataset_splits, 4);
  EXPECT_EQ(sys.local_mem_bw_gbps, 3350.0);
  EXPECT_EQ(sys.peak_perf_tflops, 0.0);  // not given
  EXPECT_FALSE(sys.roofline_enabled);
}

// --- good inputs written here ----------------------------------------------------------------------------

TEST(NetworkYml, MultiDimensionalBlockListsAndExactLatencies) {
  ScratchDir dir;
  const std::string path = dir.file("net.yml");
  write_bytes(path,
              "# two dimensions, block style\n"
              "topology:\n  - Ring\n  - Switch\n"
              "npus_count: [ 4, 16 ]\n"
              "bandwidth: [ 50, 12.5 ]\n"
              "latency: [ 0.001, 1.5e2 ]\n");
  const auto net = load_network_yml(path);
  ASSERT_EQ(net.dims.size(), 2u);
  EXPECT_EQ(net.dims[0].topology, DimTopology::kRing);
  EXPECT_EQ(net.dims[1].topology, DimTopology::kSwitch);
  EXPECT_EQ(net.total_npus(), 64);
  EXPECT_EQ(net.dims[1].bandwidth, Rate::from_astra_gbps(12.5));
  EXPECT_EQ(net.dims[0].latency.ps(), 1u);        // 0.001 ns
  EXPECT_EQ(net.dims[1].latency.ps(), 150'000u);  // 1.5e2 ns
}

TEST(NetworkYml, ZeroLatencyIsAccepted) {
  // ASTRA-sim only requires latency >= 0.
  ScratchDir dir;
  const std::string path = dir.file("net.yml");
  write_bytes(path, "topology: [ FullyConnected ]\nnpus_count: [ 2 ]\nbandwidth: [ 1 ]\nlatency: [ 0 ]\n");
  EXPECT_EQ(load_network_yml(path).dims.at(0).latency, Duration::zero());
}

TEST(SystemJson, DefaultsAreAstraSims) {
  ScratchDir dir;
  const std::string path = dir.file("sys.json");
  write_bytes(path, "{}");
  const auto sys = load_system_json(path, 2);
  EXPECT_EQ(sys.scheduling_policy, emu::SchedulingPolicy::kLifo);
  EXPECT_EQ(sys.endpoint_delay, Duration::from_ns(10));
  EXPECT_EQ(sys.active_chunks_per_dimension, 1);
  EXPECT_EQ(sys.preferred_dataset_splits, 1);
  EXPECT_EQ(sys.collective_optimization, emu::CollectiveOptimization::kBaseline);
  EXPECT_EQ(sys.local_reduction_delay, Duration::from_ns(1));
  EXPECT_TRUE(sys.all_reduce.empty());
  EXPECT_EQ(sys.local_mem_bw_gbps, 0.0);
  EXPECT_TRUE(sys.ignored_keys.empty());
}

TEST(SystemJson, ImplementationVariantsAndShortLists) {
  ScratchDir dir;
  const std::string path = dir.file("sys.json");
  write_bytes(path, R"({
  "scheduling-policy": "FIFO",
  "all-reduce-implementation": ["ring", "halvingDoubling", "doubleBinaryTree"],
  "all-gather-implementation": ["direct4", "oneDirect"],
  "reduce-scatter-implementation": ["oneRing"],
  "all-to-all-implementation": ["direct"],
  "roofline-enabled": 1, "peak-perf": 312.5, "local-mem-bw": 2039,
  "intra-dimension-scheduling": "FIFO", "inter-dimension-scheduling": "baseline",
  "trace-enabled": true, "replay-only": 0, "endpoint-delay": 20.0
})");
  const auto sys = load_system_json(path, 3);
  EXPECT_EQ(sys.scheduling_policy, emu::SchedulingPolicy::kFifo);
  EXPECT_EQ(sys.all_reduce, (std::vector<CollectiveImpl>{{CollectiveAlgo::kRing, false, -1},
                                                         {CollectiveAlgo::kHalvingDoubling, false, -1},
                                                         {CollectiveAlgo::kDoubleBinaryTree, false, -1}}));
  EXPECT_EQ(sys.all_gather, (std::vector<CollectiveImpl>{{CollectiveAlgo::kDirect, false, 4},
                                                         {CollectiveAlgo::kDirect, true, -1}}));
  // Shorter than the 3 dimensions: kept as written (ASTRA-sim spans only the listed dimensions).
  EXPECT_EQ(sys.reduce_scatter, (std::vector<CollectiveImpl>{{CollectiveAlgo::kRing, true, -1}}));
  EXPECT_EQ(sys.all_to_all, (std::vector<CollectiveImpl>{{CollectiveAlgo::kDirect, false, -1}}));
  EXPECT_TRUE(sys.roofline_enabled);
  EXPECT_EQ(sys.peak_perf_tflops, 312.5);
  EXPECT_EQ(sys.endpoint_delay, Duration::from_ns(20));
  EXPECT_EQ(sys.intra_dimension_scheduling, "FIFO");
  EXPECT_EQ(sys.ignored_keys,
            (std::vector<std::string>{"intra-dimension-scheduling", "inter-dimension-scheduling", "trace-enabled"}));
}

TEST(SystemJson, CustomCollectiveAsInAstraSimsExample) {
  ScratchDir dir;
  const std::string path = dir.file("custom.json");
  fs::create_directories(dir.file("examples/custom_ring_allreduce_8npus_1MB"));
  write_bytes(dir.file("examples/custom_ring_allreduce_8npus_1MB/custom_allreduce.0.et"), "");
  write_bytes(path, R"({
  "scheduling-policy": "FIFO",
  "preferred-dataset-splits": 1,
  "all-reduce-implementation-custom": ["examples/custom_ring_allreduce_8npus_1MB/custom_allreduce"],
  "local-mem-bw": 50
})");
  const auto sys = load_system_json(path, 1);
  // Resolved against the system file's folder (custom.0.et exists there).
  EXPECT_EQ(sys.all_reduce_custom,
            fs::path(dir.file("examples/custom_ring_allreduce_8npus_1MB/custom_allreduce")).lexically_normal().string());
  EXPECT_TRUE(sys.all_reduce.empty());
  EXPECT_EQ(sys.preferred_dataset_splits, 1);
}

// ASTRA-sim's form (relative to the working directory) is accepted when the system file's folder has nothing
// there; an .xml names an MSCCL-IR file; when neither resolves, the error names the key and both paths tried.
TEST(SystemJson, CustomPathResolution) {
  ScratchDir dir;
  fs::create_directories(dir.file("sys"));
  write_bytes(dir.file("algo.xml"), "<algo/>");
  const std::string path = dir.file("sys/system.json");
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path());
  write_bytes(path, R"({"all-gather-implementation-custom": ["algo.xml"]})");
  const auto sys = load_system_json(path, 1);
  fs::current_path(cwd);
  EXPECT_EQ(sys.all_gather_custom, "algo.xml");
  write_bytes(path, "{\n\"all-to-all-implementation-custom\": [\"nowhere/impl\"]}");
  const auto e = test::error_of([&] { load_system_json(path, 1); });
  EXPECT_EQ(e.where().line, 2u);
  const std::string what = e.what();
  EXPECT_NE(what.find("key \"all-to-all-implementation-custom\": custom implementation \"nowhere/impl\" not found: "
                      "looked for PREFIX.0.et of the Chakra ET prefix at " +
                      fs::path(dir.file("sys/nowhere/impl")).lexically_normal().string() + " (relative to the system file's folder) and nowhere/impl "
                      "(relative to the working directory, as ASTRA-sim reads it)"),
            std::string::npos)
      << what;
  write_bytes(path, R"({"per-node-custom-implementation": "per_node.yaml"})");
  const auto per_node = test::error_of([&] { load_system_json(path, 1); });
  EXPECT_NE(std::string(per_node.what()).find("\"per-node-custom-implementation\" is not supported"), std::string::npos)
      << per_node.what();
}

// --- bad network.yml -------------------------------------------------------------------------------------

TEST(NetworkYmlErrors, UnknownKeyNamesFileLineKeyAndSuggestion) {
  ScratchDir dir;
  const auto e = yml_error(dir, "topology: [ Ring ]\nnpu_count: [ 8 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n");
  EXPECT_EQ(e.where().file, dir.file("network.yml"));
  EXPECT_EQ(e.where().line, 2u);
  const std::string msg = e.what();
  EXPECT_NE(msg.find(dir.file("network.yml") + ": line 2: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key \"npu_count\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean \"npus_count\"?"), std::string::npos) << msg;
}

TEST(NetworkYmlErrors, ListLengthsDiffer) {
  ScratchDir dir;
  const auto e = yml_error(dir, "topology: [ Ring, Switch ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 50.0 ]\n"
                                "latency: [ 500, 500 ]\n");
  EXPECT_EQ(e.where().line, 3u);
  EXPECT_NE(std::string(e.what()).find("\"bandwidth\" has 1 entries but \"topology\" has 2"), std::string::npos)
      << e.what();
}

TEST(NetworkYmlErrors, NegativeOrZeroBandwidth) {
  ScratchDir dir;
  for (const std::string bw : {"-50.0", "0", ".inf", "fast"}) {
    const auto e = yml_error(dir, "topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ " + bw + " ]\nlatency: [ 500 ]\n");
    EXPECT_EQ(e.where().line, 3u) << bw;
    const std::string msg = e.what();
    EXPECT_NE(msg.find("key \"bandwidth\", dimension 0: \"" + bw + "\" is not a positive number"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("2^30 bytes/s"), std::string::npos) << msg;
  }
}

TEST(NetworkYmlErrors, FractionalPicosecondsLatency) {
  ScratchDir dir;
  const auto e = yml_error(dir, "topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]\nlatency: [ 936.2505 ]\n");
  EXPECT_EQ(e.where().line, 4u);
  EXPECT_NE(std::string(e.what()).find("936.2505 ns is not a whole number of picoseconds"), std::string::npos)
      << e.what();
  const auto neg = yml_error(dir, "topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]\nlatency: [ -1 ]\n");
  EXPECT_NE(std::string(neg.what()).find("-1 is negative"), std::string::npos) << neg.what();
}

TEST(NetworkYmlErrors, UnknownTopologyName) {
  ScratchDir dir;
  const auto e = yml_error(dir, "npus_count: [ 8 ]\ntopology: [ ring ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n");
  EXPECT_EQ(e.where().line, 2u);
  const std::string msg = e.what();
  EXPECT_NE(msg.find("unknown topology \"ring\" (did you mean \"Ring\"?)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Ring, FullyConnected or Switch"), std::string::npos) << msg;
}

TEST(NetworkYmlErrors, MalformedYamlGivesTheLine) {
  ScratchDir dir;
  const auto e = yml_error(dir, "topology: [ Ring ]\nnpus_count: [ 8\nbandwidth: [ 50 ]\n");
  ASSERT_TRUE(e.where().line.has_value());
  EXPECT_GE(*e.where().line, 2u);
  EXPECT_NE(std::string(e.what()).find("invalid YAML"), std::string::npos) << e.what();
}

TEST(NetworkYmlErrors, MissingKey) {
  ScratchDir dir;
  const auto e = yml_error(dir, "topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]\n");
  EXPECT_EQ(e.where().file, dir.file("network.yml"));
  EXPECT_NE(std::string(e.what()).find("missing key \"latency\""), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("latency: [ 500.0 ]"), std::string::npos) << e.what();
}

TEST(NetworkYmlErrors, OtherInvalidInputs) {
  ScratchDir dir;
  const auto one_npu = yml_error(dir, "topology: [ Ring ]\nnpus_count: [ 1 ]\nbandwidth: [ 50 ]\nlatency: [ 5 ]\n");
  EXPECT_NE(std::string(one_npu.what()).find("\"1\" is not an integer from 2 to 2147483647"), std::string::npos)
      << one_npu.what();
  const auto frac_npus = yml_error(dir, "topology: [ Ring ]\nnpus_count: [ 8.5 ]\nbandwidth: [ 50 ]\nlatency: [ 5 ]\n");
  EXPECT_NE(std::string(frac_npus.what()).find("npus_count"), std::string::npos) << frac_npus.what();
  const auto twice = yml_error(dir, std::string(kGoodYml) + "latency: [ 5 ]\n");
  EXPECT_EQ(twice.where().line, 5u);
  EXPECT_NE(std::string(twice.what()).find("\"latency\" appears twice (first on line 4)"), std::string::npos);
  const auto scalar = yml_error(dir, "topology: Ring\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]\nlatency: [ 5 ]\n");
  EXPECT_EQ(scalar.where().line, 1u);
  EXPECT_NE(std::string(scalar.what()).find("topology: [ Ring ]"), std::string::npos) << scalar.what();
  const auto empty = yml_error(dir, "");
  EXPECT_NE(std::string(empty.what()).find("empty file"), std::string::npos) << empty.what();
  const auto no_dims = yml_error(dir, "topology: []\nnpus_count: []\nbandwidth: []\nlatency: []\n");
  EXPECT_EQ(no_dims.where().line, 1u);
  const auto missing_file = error_of([&] { load_network_yml(dir.file("absent.yml")); });
  EXPECT_NE(std::string(missing_file.what()).find("cannot open"), std::string::npos) << missing_file.what();
}

// --- bad system.json -------------------------------------------------------------------------------------

TEST(SystemJsonErrors, UnknownKeyNamesFileLineKeyAndSuggestion) {
  ScratchDir dir;
  const auto e = json_error(dir, "{\n  \"scheduling-policy\": \"LIFO\",\n  \"endpoint_delay\": 10\n}\n");
  EXPECT_EQ(e.where().file, dir.file("system.json"));
  EXPECT_EQ(e.where().line, 3u);
  const std::string msg = e.what();
  EXPECT_NE(msg.find(dir.file("system.json") + ": line 3: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key \"endpoint_delay\" (did you mean \"endpoint-delay\"?)"), std::string::npos) << msg;
}

TEST(SystemJsonErrors, UnknownAlgorithmName) {
  ScratchDir dir;
  const auto e = json_error(dir, "{\"preferred-dataset-splits\": 4,\n\"all-reduce-implementation\": [\"rng\"]}");
  EXPECT_EQ(e.where().line, 2u);
  const std::string msg = e.what();
  EXPECT_NE(msg.find("key \"all-reduce-implementation\", dimension 0: unknown implementation \"rng\" (did you mean "
                     "\"ring\"?)"),
            std::string::npos)
      << msg;
  const auto window = json_error(dir, "{\"all-to-all-implementation\": [\"directX\"]}");
  EXPECT_NE(std::string(window.what()).find("window after \"direct\""), std::string::npos) << window.what();
}

TEST(SystemJsonErrors, MalformedJsonGivesByteOffset) {
  ScratchDir dir;
  const std::string text = "{\n  \"endpoint-delay\": 10,\n}\n";  // trailing comma: '}' at byte 26
  const auto e = json_error(dir, text);
  ASSERT_TRUE(e.where().offset.has_value());
  EXPECT_EQ(*e.where().offset, text.find('}'));
  EXPECT_EQ(e.where().line, 3u);
  EXPECT_NE(std::string(e.what()).find("byte 26: invalid JSON"), std::string::npos) << e.what();
}

TEST(SystemJsonErrors, InvalidValues) {
  ScratchDir dir;
  const auto too_many = json_error(dir, "{\"all-gather-implementation\": [\"ring\", \"ring\"]}", 1);
  EXPECT_NE(std::string(too_many.what()).find("lists 2 implementations but the network has 1 dimension"),
            std::string::npos)
      << too_many.what();
  const auto policy = json_error(dir, "{\"scheduling-policy\": \"lifo\"}");
  EXPECT_NE(std::string(policy.what()).find("unknown value \"lifo\" (did you mean \"LIFO\"?)"), std::string::npos)
      << policy.what();
  const auto frac = json_error(dir, "{\"endpoint-delay\": 10.5}");
  EXPECT_NE(std::string(frac.what()).find("key \"endpoint-delay\": expected an integer from 0 to 18446744073709551 (a whole number of "
                                             "nanoseconds"),
            std::string::npos)
      << frac.what();
  const auto splits = json_error(dir, "{\"preferred-dataset-splits\": 0}");
  EXPECT_NE(std::string(splits.what()).find("\"preferred-dataset-splits\": expected an integer from 1 to 65536"),
            std::string::npos)
      << splits.what();
  const auto bw = json_error(dir, "{\"local-mem-bw\": \"1600\"}");
  EXPECT_NE(std::string(bw.what()).find("got \"1600\""), std::string::npos) << bw.what();
  const auto roofline = json_error(dir, "{\"roofline-enabled\": 1, \"local-mem-bw\": 1600}");
  EXPECT_NE(std::string(roofline.what()).find("needs \"peak-perf\""), std::string::npos) << roofline.what();
  const auto twice = json_error(dir, "{\"endpoint-delay\": 10,\n\"endpoint-delay\": 20}");
  EXPECT_EQ(twice.where().line, 2u);
  EXPECT_NE(std::string(twice.what()).find("appears twice"), std::string::npos) << twice.what();
  const auto custom = json_error(dir, "{\"all-reduce-implementation-custom\": [\"a\", \"b\"]}");
  EXPECT_NE(std::string(custom.what()).find("exactly one Chakra ET prefix"), std::string::npos) << custom.what();
  const auto not_object = json_error(dir, "[1, 2]");
  EXPECT_NE(std::string(not_object.what()).find("expected a JSON object"), std::string::npos) << not_object.what();
  EXPECT_THROW(load_system_json(dir.file("system.json"), 0), std::invalid_argument);
}

// Issue 44 item 9: the network's memory is checked before anything is built, naming the key and the
// memory it would take (10^7 NPUs took 1.3 GB, 10^9 ended in std::bad_alloc naming nothing).
TEST(NetworkYmlErrors, NetworkTooLargeNamesTheKeyAndTheMemory) {
  ScratchDir dir;
  const auto ten_million = yml_error(dir, "topology: [ Ring ]\nnpus_count: [ 10000000 ]\nbandwidth: [ 50 ]\nlatency: [ 5 ]\n");
  EXPECT_EQ(ten_million.where().file, dir.file("network.yml"));
  EXPECT_EQ(ten_million.where().line, 2u);
  EXPECT_NE(std::string(ten_million.what())
                .find("key \"npus_count\": the network has 10000000 NPUs and 20000000 links, which would need about "
                      "1.2 GiB of memory with the analytical model and 1.9 GiB with the packet model (64 and 100 bytes "
                      "per link, measured); fabemu models at most 16777216 links (1.0 to 1.6 GiB)"),
            std::string::npos)
      << ten_million.what();
  const auto billion = yml_error(dir, "topology: [ Ring ]\nnpus_count: [ 1000000000 ]\nbandwidth: [ 50 ]\nlatency: [ 5 ]\n");
  EXPECT_NE(std::string(billion.what()).find("2000000000 links, which would need about 119.2 GiB of memory with the "
                                                 "analytical model and 186.3 GiB with the packet model"), std::string::npos)
      << billion.what();
  const auto too_many = yml_error(dir, "topology: [ Ring ]\nnpus_count: [ 2147483648 ]\nbandwidth: [ 50 ]\nlatency: [ 5 ]\n");
  EXPECT_NE(std::string(too_many.what()).find("key \"npus_count\", dimension 0: \"2147483648\" is not an integer from 2 to "
                                              "2147483647"),
            std::string::npos)
      << too_many.what();
  // The largest ring that fits: 2^23 NPUs, 2^24 links (only counted here, nothing is built).
  const std::string path = dir.file("network.yml");
  write_bytes(path, "topology: [ Ring ]\nnpus_count: [ 8388608 ]\nbandwidth: [ 50 ]\nlatency: [ 5 ]\n");
  EXPECT_EQ(load_network_yml(path).total_npus(), 8388608);
}

// Issue 44 item 10: chunk keys past 2^31 were truncated (2^32+1 ran as 1); every integer key has a range.
TEST(SystemJsonErrors, IntegerKeysAreRangeChecked) {
  ScratchDir dir;
  const auto splits = json_error(dir, "{\n  \"preferred-dataset-splits\": 4294967297\n}");
  EXPECT_EQ(splits.where().file, dir.file("system.json"));
  EXPECT_EQ(splits.where().line, 2u);
  EXPECT_NE(std::string(splits.what())
                .find("key \"preferred-dataset-splits\": expected an integer from 1 to 65536 (chunks per collective); "
                      "got 4294967297"),
            std::string::npos)
      << splits.what();
  const auto active = json_error(dir, "{\"active-chunks-per-dimension\": 2147483648}");
  EXPECT_NE(std::string(active.what())
                .find("key \"active-chunks-per-dimension\": expected an integer from 1 to 65536 (chunks in flight per "
                      "dimension); got 2147483648"),
            std::string::npos)
      << active.what();
  const auto splits_max = json_error(dir, "{\"preferred-dataset-splits\": 2147483647}");
  EXPECT_NE(std::string(splits_max.what()).find("got 2147483647"), std::string::npos) << splits_max.what();
  const auto delay = json_error(dir, "{\"endpoint-delay\": 18446744073709552}");
  EXPECT_NE(std::string(delay.what()).find("key \"endpoint-delay\": expected an integer from 0 to 18446744073709551"),
            std::string::npos)
      << delay.what();
  const auto boost = json_error(dir, "{\"boost-mode\": 2147483648}");
  EXPECT_NE(std::string(boost.what()).find("key \"boost-mode\": expected an integer from 0 to 2147483647"),
            std::string::npos)
      << boost.what();
  const auto flag = json_error(dir, "{\"replay-only\": 2}");
  EXPECT_NE(std::string(flag.what()).find("key \"replay-only\": expected an integer from 0 to 1"), std::string::npos)
      << flag.what();
  const std::string path = dir.file("system.json");
  write_bytes(path, "{\"preferred-dataset-splits\": 65536, \"active-chunks-per-dimension\": 65536}");
  const emu::SystemConfig ok = load_system_json(path, 1);
  EXPECT_EQ(ok.preferred_dataset_splits, 65536);
  EXPECT_EQ(ok.active_chunks_per_dimension, 65536);
}

// Issue 44 item 12: errors that named no file or key.
TEST(SystemJsonErrors, NumberOverflowNamesFileKeyAndLine) {
  ScratchDir dir;
  const auto e = json_error(dir, "{\n  \"endpoint-delay\": 10,\n  \"local-mem-bw\": 1e400\n}\n");
  EXPECT_EQ(e.where().file, dir.file("system.json"));
  EXPECT_EQ(e.where().line, 3u);
  EXPECT_NE(std::string(e.what()).find(dir.file("system.json") + ": line 3: key \"local-mem-bw\": number overflow "
                                                                  "parsing '1e400'"),
            std::string::npos)
      << e.what();
}

// Found by fuzz_system_json (stop 53): a number beyond a double before anything else, then a key that is not
// valid UTF-8. The overflow's handler looked for the key's line by parsing each top-level key, which threw
// nlohmann's parse_error out of the handler instead of the located error.
TEST(SystemJsonErrors, NumberOverflowBeforeAnIllFormedKeyIsALocatedError) {
  ScratchDir dir;
  const auto e = json_error(dir, std::string("22E22222{\n  \"sched\xad\n}\n"));
  EXPECT_EQ(e.where().file, dir.file("system.json"));
  EXPECT_NE(std::string(e.what()).find("number overflow parsing '22E22222'"), std::string::npos) << e.what();
}

TEST(SystemJsonErrors, RatesTooSlowOrFastNameTheKey) {
  ScratchDir dir;
  const auto slow = json_error(dir, "{\n\"local-mem-bw\": 1e-12}");
  EXPECT_EQ(slow.where().line, 2u);
  EXPECT_NE(std::string(slow.what())
                .find("key \"local-mem-bw\": expected a number from 0.001 to 1000000 (GB/s, 10^9 bytes/s"),
            std::string::npos)
      << slow.what();
  const auto fast = json_error(dir, "{\"peak-perf\": 1e300}");
  EXPECT_NE(std::string(fast.what()).find("key \"peak-perf\": expected a number from 0.001 to 1000000 (TFLOPS"),
            std::string::npos)
      << fast.what();
}

}  // namespace
}  // namespace fabemu::host
