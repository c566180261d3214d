// fabemu's own fabric file: a full file read into the exact structs (Rate and Duration to the last bit),
// the fat-tree forms, defaults, and bad inputs that must each give one TraceError naming the file, the
// line and the key.
#include "host/config/fabric_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/topology.h"
#include "tests/support/test_support.h"
#include "traces/error.h"

namespace fabemu::host {
namespace {

using emu::CollectiveAlgo;
using emu::CollectiveImpl;
using emu::DimTopology;
using emu::Duration;
using emu::NetworkDim;
using emu::Rate;
using test::ScratchDir;
using test::write_bytes;
using traces::TraceError;

FabricFile load(const ScratchDir& dir, const std::string& text) {
  const std::string path = dir.file("fabric.yaml");
  write_bytes(path, text);
  return load_fabric_yaml(path);
}

TraceError error_of(const ScratchDir& dir, const std::string& text) {
  const std::string path = dir.file("fabric.yaml");
  write_bytes(path, text);
  try {
    load_fabric_yaml(path);
  } catch (const TraceError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a TraceError for:\n" << text;
  return TraceError({}, "(none)");
}

// The error is at `line` of the scratch file, and its message names the file, the line and `needle`
// (the key, and whatever else the test wants to see).
void expect_error(const ScratchDir& dir, const std::string& text, uint64_t line, const std::vector<std::string>& needles) {
  const TraceError e = error_of(dir, text);
  const std::string msg = e.what();
  EXPECT_EQ(e.where().file, dir.file("fabric.yaml")) << msg;
  EXPECT_EQ(e.where().line, line) << msg;
  EXPECT_NE(msg.find(dir.file("fabric.yaml") + ": line " + std::to_string(line) + ": "), std::string::npos) << msg;
  for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "missing [" << n << "] in: " << msg;
}

constexpr const char* kRing = "topology: [{type: Ring, npus: 8, bandwidth_gbps: 400, latency_ns: 500}]\n";

TEST(FabricFile, FullFileRoundTrips) {
  ScratchDir dir;
  const FabricFile f = load(dir, R"(# fabemu fabric file
topology:
  - {type: Ring, npus: 8, bandwidth_gbps: 400, latency_ns: 500}
  - type: Switch
    npus: 4
    bandwidth_gbps: 100
    latency_ns: 936.25
model: packet
mtu: 4096
collectives:
  all_reduce: [ring, halvingDoubling]
  all_gather: [direct4]
  reduce_scatter: [doubleBinaryTree, ring]
  all_to_all: [oneDirect]
chunks: 4
active_chunks: 2
endpoint_delay_ns: 12.5
local_mem_bw_GBps: 1600
scheduling: FIFO
collective_optimization: localBWAware
roofline: {enabled: true, peak_tflops: 900}
)");
  const std::string path = dir.file("fabric.yaml");
  EXPECT_EQ(f.source, path);
  EXPECT_EQ(f.network.source, path);
  EXPECT_EQ(f.system.source, path);
  EXPECT_EQ(f.model, "packet");
  EXPECT_EQ(f.mtu, 4096u);

  const auto& net = f.network;
  ASSERT_EQ(net.dims.size(), 2u);
  EXPECT_FALSE(net.dims[0].fat_tree.has_value());
  EXPECT_EQ(net.total_npus(), 32);
  const NetworkDim& d0 = net.dims[0];
  EXPECT_EQ(d0.topology, DimTopology::kRing);
  EXPECT_EQ(d0.npus, 8);
  // 400 Gb/s = 50e9 bytes/s = exactly 20 ps per byte; 100 Gb/s = 80 ps per byte.
  EXPECT_EQ(d0.bandwidth.ps_per_byte_q32(), uint64_t{20} << 32);
  EXPECT_EQ(d0.bandwidth, Rate::from_gbps(400));
  EXPECT_EQ(d0.bandwidth_gbps, 400.0);
  EXPECT_EQ(d0.bandwidth_unit, NetworkDim::BandwidthUnit::kGbps);
  EXPECT_EQ(d0.latency.ps(), 500'000u);
  const NetworkDim& d1 = net.dims[1];
  EXPECT_EQ(d1.topology, DimTopology::kSwitch);
  EXPECT_EQ(d1.npus, 4);
  EXPECT_EQ(d1.bandwidth.ps_per_byte_q32(), uint64_t{80} << 32);
  EXPECT_EQ(d1.bandwidth_gbps, 100.0);
  EXPECT_EQ(d1.latency.ps(), 936'250u);

  const auto& sys = f.system;
  EXPECT_EQ(sys.all_reduce, (std::vector<CollectiveImpl>{{CollectiveAlgo::kRing, false, -1},
                                                         {CollectiveAlgo::kHalvingDoubling, false, -1}}));
  EXPECT_EQ(sys.all_gather, (std::vector<CollectiveImpl>{{CollectiveAlgo::kDirect, false, 4}}));
  EXPECT_EQ(sys.reduce_scatter, (std::vector<CollectiveImpl>{{CollectiveAlgo::kDoubleBinaryTree, false, -1},
                                                             {CollectiveAlgo::kRing, false, -1}}));
  EXPECT_EQ(sys.all_to_all, (std::vector<CollectiveImpl>{{CollectiveAlgo::kDirect, true, -1}}));
  EXPECT_EQ(sys.preferred_dataset_splits, 4);
  EXPECT_EQ(sys.active_chunks_per_dimension, 2);
  EXPECT_EQ(sys.endpoint_delay, Duration::from_ps(12'500));
  EXPECT_EQ(sys.local_mem_bw_gbps, 1600.0);
  EXPECT_EQ(sys.scheduling_policy, emu::SchedulingPolicy::kFifo);
  EXPECT_EQ(sys.collective_optimization, emu::CollectiveOptimization::kLocalBwAware);
  EXPECT_TRUE(sys.roofline_enabled);
  EXPECT_EQ(sys.peak_perf_tflops, 900.0);
}

TEST(FabricFile, DefaultsWhenOnlyTheTopologyIsGiven) {
  ScratchDir dir;
  const FabricFile f = load(dir, kRing);
  EXPECT_EQ(f.model, "");
  EXPECT_EQ(f.mtu, 0u);
  const emu::SystemConfig defaults;
  EXPECT_EQ(f.system.endpoint_delay, Duration::from_ns(10));
  EXPECT_EQ(f.system.preferred_dataset_splits, 1);
  EXPECT_EQ(f.system.active_chunks_per_dimension, 1);
  EXPECT_EQ(f.system.scheduling_policy, defaults.scheduling_policy);
  EXPECT_EQ(f.system.collective_optimization, emu::CollectiveOptimization::kBaseline);
  EXPECT_TRUE(f.system.all_reduce.empty());
  EXPECT_FALSE(f.system.roofline_enabled);
  EXPECT_EQ(f.system.local_mem_bw_gbps, 0.0);
}

TEST(FabricFile, FatTreeWithSpines) {
  ScratchDir dir;
  const FabricFile f = load(dir, R"(topology:
  type: FatTree
  hosts_per_leaf: 16
  leaves: 8
  spines: 4
  host_bandwidth_gbps: 400
  host_latency_ns: 500
  spine_bandwidth_gbps: 800
  spine_latency_ns: 700.5
model: analytical
)");
  ASSERT_EQ(f.network.dims.size(), 1u);
  const NetworkDim& d = f.network.dims[0];
  EXPECT_EQ(d.topology, DimTopology::kFatTree);
  EXPECT_EQ(d.npus, 128);
  EXPECT_EQ(d.bandwidth, Rate::from_gbps(400));
  EXPECT_EQ(d.latency, Duration::from_ns(500));
  ASSERT_TRUE(f.network.dims[0].fat_tree.has_value());
  const emu::FatTreeConfig& ft = *f.network.dims[0].fat_tree;
  EXPECT_EQ(ft.hosts_per_leaf, 16);
  EXPECT_EQ(ft.leaves, 8);
  EXPECT_EQ(ft.spines, 4);
  EXPECT_EQ(ft.host_link_rate.ps_per_byte_q32(), uint64_t{20} << 32);
  EXPECT_EQ(ft.spine_link_rate.ps_per_byte_q32(), uint64_t{10} << 32);
  EXPECT_EQ(ft.host_link_latency.ps(), 500'000u);
  EXPECT_EQ(ft.spine_link_latency.ps(), 700'500u);
  EXPECT_EQ(ft.host_gbps, 400.0);
  EXPECT_EQ(ft.spine_gbps, 800.0);
  EXPECT_DOUBLE_EQ(ft.oversubscription(), 2.0);  // 16 * 400 / (4 * 800)
  EXPECT_EQ(f.model, "analytical");
  // The topology the emulator builds from it: 2N + 2LS links.
  const emu::Topology t(f.network);
  EXPECT_EQ(t.npus(), 128);
  EXPECT_EQ(t.links().size(), 2u * 128 + 2u * 8 * 4);
}

TEST(FabricFile, FatTreeFromOversubscriptionAndSpineDefaults) {
  ScratchDir dir;
  // Spine links default to the host links; 16 * 400 / (2 * 400) = 8 spines.
  const FabricFile f = load(dir, R"(topology: {type: FatTree, hosts_per_leaf: 16, leaves: 4, oversubscription: 2,
           host_bandwidth_gbps: 400, host_latency_ns: 250}
)");
  const emu::FatTreeConfig& ft = f.network.dims[0].fat_tree.value();
  EXPECT_EQ(ft.spines, 8);
  EXPECT_EQ(ft.spine_link_rate, Rate::from_gbps(400));
  EXPECT_EQ(ft.spine_link_latency, Duration::from_ps(250'000));
  EXPECT_DOUBLE_EQ(ft.oversubscription(), 2.0);
  // A one-entry list holding the fat-tree is the same network.
  const FabricFile g = load(dir, R"(topology:
  - {type: FatTree, hosts_per_leaf: 16, leaves: 4, spines: 8, host_bandwidth_gbps: 400, host_latency_ns: 250}
)");
  EXPECT_EQ(g.network.dims[0].fat_tree.value().spines, 8);
  EXPECT_EQ(g.network.dims.size(), 1u);
}

// --- errors -------------------------------------------------------------------------------------------

TEST(FabricFileErrors, UnknownKeyNamesFileLineKeyAndSuggestion) {
  ScratchDir dir;
  expect_error(dir, std::string(kRing) + "endpoint_delay: 10\n", 2,
               {"unknown key \"endpoint_delay\"", "did you mean \"endpoint_delay_ns\""});
  // Gigabytes, not gigabits: the key spells the unit, and the lower-case spelling is pointed at it.
  expect_error(dir, std::string(kRing) + "local_mem_bw_gbps: 1600\n", 2,
               {"unknown key \"local_mem_bw_gbps\"", "did you mean \"local_mem_bw_GBps\""});
  expect_error(dir, "topology:\n  - type: Ring\n    npus: 8\n    bandwith_gbps: 400\n    latency_ns: 1\n", 4,
               {"unknown key \"topology[0].bandwith_gbps\"", "did you mean \"bandwidth_gbps\""});
  expect_error(dir, std::string(kRing) + "collectives:\n  allreduce: [ring]\n", 3,
               {"unknown key \"collectives.allreduce\"", "did you mean \"all_reduce\""});
  expect_error(dir, std::string(kRing) + "collectives: {all_reduce: [rnig]}\n", 2,
               {"key \"collectives.all_reduce\", dimension 0", "unknown implementation \"rnig\"",
                "did you mean \"ring\""});
  expect_error(dir, "topology: [{type: ring, npus: 8, bandwidth_gbps: 400, latency_ns: 500}]\n", 1,
               {"key \"topology[0].type\"", "unknown value \"ring\"", "did you mean \"Ring\""});
}

TEST(FabricFileErrors, BadType) {
  ScratchDir dir;
  expect_error(dir, "topology:\n  - type: Ring\n    npus: eight\n    bandwidth_gbps: 400\n    latency_ns: 1\n", 3,
               {"key \"topology[0].npus\"", "expected an integer from 2 to 2147483647", "got \"eight\""});
  expect_error(dir, std::string(kRing) + "mtu: [4096]\n", 2, {"key \"mtu\"", "got a list"});
  expect_error(dir, std::string(kRing) + "roofline: true\n", 2, {"key \"roofline\"", "expected a mapping"});
  expect_error(dir, "topology: 5\n", 1, {"key \"topology\"", "a list of dimensions"});
  expect_error(dir, std::string(kRing) + "model: fast\n", 2, {"key \"model\"", "analytical or packet"});
  expect_error(dir, "topology: [{type: Ring, npus: 8, bandwidth_gbps: 0, latency_ns: 1}]\n", 1,
               {"key \"topology[0].bandwidth_gbps\"", "positive number of gigabits per second"});
}

TEST(FabricFileErrors, NegativeNpus) {
  ScratchDir dir;
  expect_error(dir, "topology:\n  - {type: Switch, npus: -4, bandwidth_gbps: 400, latency_ns: 1}\n", 2,
               {"key \"topology[0].npus\"", "got \"-4\""});
  expect_error(dir, "topology: {type: FatTree, hosts_per_leaf: -2, leaves: 2, spines: 1, host_bandwidth_gbps: 1, "
                    "host_latency_ns: 1}\n",
               1, {"key \"topology.hosts_per_leaf\"", "an integer from 1 to 2147483647 (NPUs per leaf switch)"});
}

// Issue 51 item 4: a fat-tree as one dimension of a product (NVSwitch nodes x a leaf-spine fabric).
TEST(FabricFile, FatTreeAsADimensionOfAProduct) {
  ScratchDir dir;
  const FabricFile f = load(dir,
                            "topology:\n"
                            "  - {type: Switch, npus: 8, bandwidth_gbps: 3600, latency_ns: 250}\n"
                            "  - {type: FatTree, hosts_per_leaf: 4, leaves: 4, spines: 2, host_bandwidth_gbps: 400,\n"
                            "     host_latency_ns: 700, spine_bandwidth_gbps: 800, spine_latency_ns: 600}\n");
  ASSERT_EQ(f.network.dims.size(), 2u);
  EXPECT_EQ(f.network.dims[0].topology, DimTopology::kSwitch);
  EXPECT_FALSE(f.network.dims[0].fat_tree.has_value());
  EXPECT_EQ(f.network.dims[1].topology, DimTopology::kFatTree);
  EXPECT_EQ(f.network.dims[1].npus, 16);
  const emu::FatTreeConfig& ft = f.network.dims[1].fat_tree.value();
  EXPECT_EQ(ft.spines, 2);
  EXPECT_EQ(ft.spine_link_rate, Rate::from_gbps(800));
  EXPECT_EQ(ft.host_link_latency, Duration::from_ps(700'000));
  EXPECT_EQ(f.network.total_npus(), 128);
  // Its keys are located with the dimension's index.
  expect_error(dir,
               "topology:\n"
               "  - {type: Switch, npus: 8, bandwidth_gbps: 3600, latency_ns: 250}\n"
               "  - {type: FatTree, hosts_per_leaf: 4, leaves: 4, host_bandwidth_gbps: 400, host_latency_ns: 1}\n",
               3, {"missing key \"topology[1].spines\"", "oversubscription"});
}

TEST(FabricFileErrors, MissingRequiredKey) {
  ScratchDir dir;
  expect_error(dir, "model: packet\n", 1, {"missing key \"topology\""});
  expect_error(dir, "topology:\n  - {type: Ring, npus: 8, bandwidth_gbps: 400}\n", 2,
               {"missing key \"topology[0].latency_ns\""});
  expect_error(dir, "topology:\n  type: FatTree\n  hosts_per_leaf: 2\n  leaves: 2\n  host_bandwidth_gbps: 1\n"
                    "  host_latency_ns: 1\n",
               2, {"missing key \"topology.spines\"", "oversubscription"});
  expect_error(dir, "topology: {type: FatTree, hosts_per_leaf: 2, leaves: 2, spines: 1, host_latency_ns: 1}\n", 1,
               {"missing key \"topology.host_bandwidth_gbps\""});
}

TEST(FabricFileErrors, OtherInvalidInputs) {
  ScratchDir dir;
  expect_error(dir, std::string(kRing) + "chunks: 2\nchunks: 3\n", 3, {"key \"chunks\" appears twice (first on line 2)"});
  expect_error(dir, std::string(kRing) + "model: analytical\nmtu: 4096\n", 3, {"key \"mtu\"", "model: packet only"});
  expect_error(dir, "topology: [{type: Ring, npus: 8, bandwidth_gbps: 400, latency_ns: 936.2505}]\n", 1,
               {"key \"topology[0].latency_ns\"", "936.2505 ns is not a whole number of picoseconds"});
  expect_error(dir, "topology: [{type: Ring, npus: 8, bandwidth_gbps: 400, latency_ns: -1}]\n", 1,
               {"key \"topology[0].latency_ns\"", "-1 is negative"});
  expect_error(dir, "topology: {type: FatTree, hosts_per_leaf: 3, leaves: 2, oversubscription: 2, "
                    "host_bandwidth_gbps: 400, host_latency_ns: 1}\n",
               1, {"key \"topology.oversubscription\"", "1.5 spines"});
  expect_error(dir, "topology: {type: FatTree, hosts_per_leaf: 2, leaves: 2, spines: 1, oversubscription: 2, "
                    "host_bandwidth_gbps: 400, host_latency_ns: 1}\n",
               1, {"not both"});
  expect_error(dir, "topology: {type: Ring, npus: 8, bandwidth_gbps: 400, latency_ns: 1}\n", 1,
               {"key \"topology.type\"", "write dimensions as a list"});
  expect_error(dir, std::string(kRing) + "collectives: {all_reduce: [ring, ring]}\n", 2,
               {"key \"collectives.all_reduce\"", "at most one per dimension"});
  expect_error(dir, std::string(kRing) + "roofline: {enabled: true, peak_tflops: 900}\n", 2,
               {"key \"roofline.enabled\"", "local_mem_bw_GBps"});
  const TraceError yaml = error_of(dir, "topology: [\n  {type: Ring\n");
  EXPECT_NE(std::string(yaml.what()).find("invalid YAML"), std::string::npos) << yaml.what();
  EXPECT_TRUE(yaml.where().line.has_value());
  const TraceError empty = error_of(dir, "");
  EXPECT_NE(std::string(empty.what()).find("empty file"), std::string::npos) << empty.what();
  try {
    load_fabric_yaml(dir.file("absent.yaml"));
    ADD_FAILURE() << "expected a TraceError";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
}

// Issue 44 items 9, 10 and 12: the network's memory, every integer key's range, and rates the walker
// could not represent are errors naming the file, the line and the key.
TEST(FabricFileErrors, NetworkTooLargeNamesTheKeysAndTheMemory) {
  ScratchDir dir;
  expect_error(dir, "topology:\n  - {type: Ring, npus: 10000000, bandwidth_gbps: 400, latency_ns: 1}\n", 2,
               {"key \"npus\" of the dimensions of \"topology\": the network has 10000000 NPUs and 20000000 links, "
                "which would need about 1.2 GiB of memory with the analytical model and 1.9 GiB with the packet model"});
  expect_error(dir, "topology: {type: FatTree, hosts_per_leaf: 1, leaves: 16384, spines: 4096, host_bandwidth_gbps: 400, "
                    "host_latency_ns: 1}\n",
               1, {"keys \"hosts_per_leaf\", \"leaves\" and \"spines\" of \"topology\": the network has 16384 NPUs and "
                   "134250496 links, which would need about 8.0 GiB of memory with the analytical model and 12.5 GiB"});
}

TEST(FabricFileErrors, IntegerKeysAreRangeChecked) {
  ScratchDir dir;
  expect_error(dir, std::string(kRing) + "chunks: 4294967297\n", 2,
               {"key \"chunks\": expected an integer from 1 to 65536 (chunks per collective); got \"4294967297\""});
  expect_error(dir, std::string(kRing) + "active_chunks: 2147483647\n", 2,
               {"key \"active_chunks\": expected an integer from 1 to 65536 (chunks in flight per dimension)"});
  expect_error(dir, std::string(kRing) + "model: packet\nmtu: 4294967296\n", 3,
               {"key \"mtu\": expected an integer from 1 to 4294967295 (bytes per packet"});
  expect_error(dir, "topology: {type: FatTree, hosts_per_leaf: 2, leaves: 2, spines: 2147483648, host_bandwidth_gbps: "
                    "400, host_latency_ns: 1}\n",
               1, {"key \"topology.spines\": expected an integer from 1 to 2147483647 (spine switches)"});
  const FabricFile ok = load(dir, std::string(kRing) + "chunks: 65536\nactive_chunks: 65536\n");
  EXPECT_EQ(ok.system.preferred_dataset_splits, 65536);
  EXPECT_EQ(ok.system.active_chunks_per_dimension, 65536);
}

TEST(FabricFileErrors, RatesTooSlowOrFastNameTheKey) {
  ScratchDir dir;
  expect_error(dir, std::string(kRing) + "local_mem_bw_GBps: 1e-12\n", 2,
               {"key \"local_mem_bw_GBps\": expected a number from 0.001 to 1000000 (gigabytes per second"});
  expect_error(dir, std::string(kRing) + "local_mem_bw_GBps: 1e400\n", 2, {"key \"local_mem_bw_GBps\"", "got \"1e400\""});
  expect_error(dir, std::string(kRing) + "local_mem_bw_GBps: 1600\nroofline: {enabled: true, peak_tflops: 1e7}\n", 3,
               {"key \"roofline.peak_tflops\": expected a number from 0.001 to 1000000 (TFLOPS"});
}

}  // namespace
}  // namespace fabemu::host
