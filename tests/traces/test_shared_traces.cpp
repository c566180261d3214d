// The real traces under ../shared/traces: exact counts from their README, clean validation, and a
// byte-identical JSON round trip. Skipped when ../shared is absent.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/support/test_support.h"
#include "traces/info.h"
#include "traces/json_form.h"
#include "traces/resolver.h"
#include "traces/validate.h"

namespace fabemu::traces {
namespace {
namespace fs = std::filesystem;

TEST(SharedTraces, ChakraPytorchTraceCounts) {
  FABEMU_REQUIRE_SHARED(shared);
  const std::string path = (shared / "mlcommons-chakra" / "chakra.0.et").string();
  const auto files = find_rank_files(path);
  ASSERT_EQ(files.size(), 1u);
  const WorkloadSummary w = summarize_workload(files);
  const RankSummary& r = w.ranks.at(0);
  EXPECT_EQ(r.nodes, 3664u);
  EXPECT_EQ(r.by_type[ChakraProtoMsg::COMP_NODE], 3643u);
  EXPECT_EQ(r.by_type[ChakraProtoMsg::COMM_COLL_NODE], 21u);
  EXPECT_EQ(r.data_edges, 181878u);
  EXPECT_EQ(r.max_parents, 270u);
  EXPECT_EQ(r.untyped_collectives, 14u);  // CPU-side records without comm_type
  EXPECT_EQ(r.schema, "1.0.1");
  uint64_t typed = 0;
  for (const auto& [key, count] : r.collectives) typed += count;
  EXPECT_EQ(typed, 7u);
}

TEST(SharedTraces, ChakraPytorchTraceResolves) {
  FABEMU_REQUIRE_SHARED(shared);
  const std::string path = (shared / "mlcommons-chakra" / "chakra.0.et").string();
  TraceReader reader(path, 0);
  DependencyResolver res(reader);
  std::vector<const Node*> wave;
  while (const Node* n = res.next()) wave.push_back(n);
  std::vector<uint64_t> first;
  for (const Node* n : wave) first.push_back(n->id());
  // The README's "first dependency-free ids 216 and 432" are the first two of these five; all five
  // have one ctrl_dep on the absent id 3 and no data_deps.
  EXPECT_EQ(first, (std::vector<uint64_t>{216, 432, 541, 619, 1634}));
  // The whole graph drains: no cycle once forward ctrl_deps are dropped.
  uint64_t finished = 0;
  while (!wave.empty()) {
    for (const Node* n : wave) res.finish(*n);
    finished += wave.size();
    wave.clear();
    while (const Node* n = res.next()) wave.push_back(n);
  }
  EXPECT_TRUE(res.done());
  EXPECT_EQ(finished, 3664u);
  EXPECT_EQ(res.stats().dangling_deps, 1277u);
  EXPECT_EQ(res.stats().self_deps, 383u);
  EXPECT_EQ(res.stats().forward_ctrl_deps, 554u);
  EXPECT_EQ(res.stats().forward_deps, 53u);
  EXPECT_EQ(res.stats().data_edges, 181878u);

  // Strict mode refuses the dangling dependencies, naming the file and node.
  TraceReader again(path, 0);
  try {
    DependencyResolver strict(again, {.strict = true});
    while (strict.next() != nullptr) {
    }
    FAIL() << "strict mode accepted dangling dependencies";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("chakra.0.et"), std::string::npos) << e.what();
    EXPECT_TRUE(e.where().node_id.has_value());
  }
}

TEST(SharedTraces, ChakraPytorchTraceValidatesWithWarnings) {
  FABEMU_REQUIRE_SHARED(shared);
  const auto files = find_rank_files((shared / "mlcommons-chakra" / "chakra.0.et").string());
  const ValidationReport report = validate_workload(files);
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.errors, 0u);
  ASSERT_EQ(report.ranks.size(), 1u);
  EXPECT_EQ(report.ranks[0].dangling_deps, 1277u);
  EXPECT_EQ(report.ranks[0].first_issuable, (std::vector<uint64_t>{216, 432, 541, 619, 1634}));
  EXPECT_TRUE(report.ranks[0].walked);
  bool dangling_warning = false;
  for (const auto& f : report.findings) {
    dangling_warning |= f.severity == Severity::kWarning && f.what.find("1277 dependencies") != std::string::npos;
  }
  EXPECT_TRUE(dangling_warning);
  // --strict reports every problem (it stopped at the first one: "1 error"), 20 of each kind shown.
  const ValidationReport strict = validate_workload(files, {.strict = true});
  EXPECT_FALSE(strict.ok());
  EXPECT_EQ(strict.errors, 1277u + 383u + 554u);
  EXPECT_EQ(strict.warnings, 1u);  // the CPU-side collectives
  std::vector<std::string> more;
  for (const auto& f : strict.findings) {
    if (f.what.rfind("... and ", 0) == 0) more.push_back(f.what);
  }
  EXPECT_EQ(more, (std::vector<std::string>{"... and 1257 more like the above (dangling dependency)",
                                            "... and 534 more like the above (forward ctrl_dep)",
                                            "... and 363 more like the above (self dependency)"}));
  EXPECT_EQ(strict.findings.size(), 3u * 20 + 3 + 1);
  EXPECT_TRUE(strict.ranks[0].walked);
}

struct Micro {
  const char* coll;
  int ranks;
  ChakraProtoMsg::CollectiveCommType type;
};

TEST(SharedTraces, MicrobenchmarksHaveOneCollectivePerRank) {
  FABEMU_REQUIRE_SHARED(shared);
  int checked = 0;
  for (const Micro m : {Micro{"all_reduce", 4, ChakraProtoMsg::ALL_REDUCE}, Micro{"all_reduce", 8, ChakraProtoMsg::ALL_REDUCE},
                        Micro{"all_reduce", 16, ChakraProtoMsg::ALL_REDUCE}, Micro{"all_gather", 4, ChakraProtoMsg::ALL_GATHER},
                        Micro{"all_gather", 8, ChakraProtoMsg::ALL_GATHER}, Micro{"all_gather", 16, ChakraProtoMsg::ALL_GATHER},
                        Micro{"reduce_scatter", 4, ChakraProtoMsg::REDUCE_SCATTER},
                        Micro{"reduce_scatter", 16, ChakraProtoMsg::REDUCE_SCATTER},
                        Micro{"all_to_all", 4, ChakraProtoMsg::ALL_TO_ALL}, Micro{"all_to_all", 16, ChakraProtoMsg::ALL_TO_ALL}}) {
    const fs::path dir = shared / "astra-sim/examples/workload/microbenchmarks" / m.coll /
                         (std::to_string(m.ranks) + "npus_1MB");
    if (!fs::is_directory(dir)) continue;
    ++checked;
    const auto files = find_rank_files((dir / m.coll).string());
    ASSERT_EQ(files.size(), static_cast<size_t>(m.ranks)) << dir;
    const WorkloadSummary w = summarize_workload(files);
    for (const auto& r : w.ranks) {
      EXPECT_EQ(r.nodes, 1u);
      ASSERT_EQ(r.collectives.size(), 1u);
      EXPECT_EQ(r.collectives.begin()->first, std::make_pair(m.type, uint64_t{1048576}));
    }
    const ValidationReport v = validate_workload(files);
    EXPECT_TRUE(v.ok()) << dir;
    EXPECT_EQ(v.warnings, 0u) << dir;
  }
  EXPECT_GE(checked, 4);
}

TEST(SharedTraces, CustomRingAllReduceMatchesEverySend) {
  FABEMU_REQUIRE_SHARED(shared);
  const auto files = find_rank_files(
      (shared / "astra-sim/examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce").string());
  ASSERT_EQ(files.size(), 8u);
  const WorkloadSummary w = summarize_workload(files);
  for (const auto& r : w.ranks) {
    EXPECT_EQ(r.nodes, 35u);
    EXPECT_EQ(r.by_type[ChakraProtoMsg::COMM_SEND_NODE], 14u);
    EXPECT_EQ(r.by_type[ChakraProtoMsg::COMM_RECV_NODE], 14u);
    EXPECT_EQ(r.by_type[ChakraProtoMsg::COMP_NODE], 7u);
    EXPECT_EQ(r.send_bytes, 14u * 131072u);
    EXPECT_EQ(r.compute_micros, 49u);
  }
  const ValidationReport v = validate_workload(files);
  EXPECT_TRUE(v.ok());
  EXPECT_EQ(v.errors, 0u);
  for (const auto& f : v.findings) ADD_FAILURE() << to_string(f);
}

TEST(SharedTraces, TwoDimensionalDemoCarriesInvolvedDim) {
  FABEMU_REQUIRE_SHARED(shared);
  const auto files = find_rank_files((shared / "astra-sim-tutorials/demo1/allreduce").string());
  ASSERT_EQ(files.size(), 8u);
  TraceReader r(files[3].path, 3);
  Node n;
  ASSERT_TRUE(r.next(n));
  const CommInfo c = comm_info(n);
  EXPECT_EQ(c.collective, ChakraProtoMsg::ALL_REDUCE);
  EXPECT_EQ(c.size, 1048576u);
  EXPECT_EQ(c.involved_dim, (std::vector<bool>{true, true}));
  EXPECT_TRUE(validate_workload(files).ok());
}

TEST(SharedTraces, ResnetTextConversionsCounts) {
  FABEMU_REQUIRE_SHARED(shared);
  for (const int n : {64, 256, 1024}) {
    const fs::path dir = shared / "astra-sim-text" / ("resnet50_dp_N" + std::to_string(n));
    if (!fs::is_directory(dir)) continue;
    const auto files = find_rank_files((dir / "resnet50").string());
    ASSERT_EQ(files.size(), static_cast<size_t>(n));
    // Every rank: 161 COMP + 54 ALL_REDUCE; ids continue across ranks (215 per rank).
    for (const size_t rank : {size_t{0}, files.size() - 1}) {
      const WorkloadSummary w = summarize_workload({files[rank]});
      EXPECT_EQ(w.ranks[0].by_type[ChakraProtoMsg::COMP_NODE], 161u);
      EXPECT_EQ(w.ranks[0].by_type[ChakraProtoMsg::COMM_COLL_NODE], 54u);
      TraceReader r(files[rank].path);
      Node first;
      ASSERT_TRUE(r.next(first));
      EXPECT_EQ(first.id(), rank * 215u);
    }
  }
  const fs::path n64 = shared / "astra-sim-text/resnet50_dp_N64/resnet50";
  const ValidationReport v = validate_workload(find_rank_files(n64.string()));
  EXPECT_TRUE(v.ok());
  EXPECT_EQ(v.warnings, 0u);
}

TEST(SharedTraces, JsonRoundTripIsByteIdenticalForEveryFile) {
  FABEMU_REQUIRE_SHARED(shared);
  test::ScratchDir scratch;
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(shared)) {
    if (entry.path().extension() != ".et") continue;
    // One rank of each large folder is enough; all of the small ones.
    const std::string name = entry.path().filename().string();
    if (entry.path().string().find("resnet50_dp_N") != std::string::npos && name != "resnet50.0.et") continue;
    std::ostringstream json;
    write_json(entry.path().string(), json);
    test::write_bytes(scratch.file("t.json"), json.str());
    write_et_from_json(scratch.file("t.json"), scratch.file("t.et"));
    EXPECT_EQ(test::read_bytes(scratch.file("t.et")), test::read_bytes(entry.path().string())) << entry.path();
    ++files;
  }
  EXPECT_GT(files, 100);
}

}  // namespace
}  // namespace fabemu::traces
