// ASTRA-sim 1.0 text workloads -> Chakra: byte-identical to Chakra's own converter on the shared ResNet-50
// conversions, node ids / names / deps of every parallelism type as text_converter.py builds them, and
// errors that name the file and line.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <stdexcept>

#include "tests/support/test_support.h"
#include "traces/astra_text.h"
#include "traces/attrs.h"
#include "traces/trace_set.h"

namespace fabemu::traces {
namespace {
namespace fs = std::filesystem;
using test::ScratchDir;

// "id TYPE name [deps]" plus " t=<duration>" for COMP nodes and " c=<comm_type>/<comm_size>" for
// collectives, checking on the way that they carry nothing else.
std::string summary(const Node& n) {
  std::string s = fmt::format("{} {} [{}]", n.id(), n.name(), fmt::join(n.data_deps(), ","));
  EXPECT_EQ(n.ctrl_deps_size(), 0) << s;
  EXPECT_FALSE(n.has_inputs()) << s;
  if (n.type() == ChakraProtoMsg::COMP_NODE) {
    EXPECT_EQ(n.attr_size(), 0) << s;
    s += fmt::format(" t={}", n.duration_micros());
  } else {
    EXPECT_EQ(n.type(), ChakraProtoMsg::COMM_COLL_NODE) << s;
    EXPECT_EQ(n.duration_micros(), 0u) << s;
    EXPECT_EQ(n.attr_size(), 2) << s;
    EXPECT_EQ(n.attr(0).name(), "comm_type");
    EXPECT_EQ(n.attr(0).value_case(), Attribute::kInt64Val);
    EXPECT_EQ(n.attr(1).name(), "comm_size");
    EXPECT_EQ(n.attr(1).value_case(), Attribute::kInt64Val);
    s += fmt::format(" c={}/{}", n.attr(0).int64_val(), n.attr(1).int64_val());
  }
  return s;
}

std::vector<std::string> summaries(const std::string& path) {
  std::vector<std::string> out;
  for (const Node& n : test::read_nodes(path)) out.push_back(summary(n));
  return out;
}

// Writes `text` to a workload file and converts it.
std::vector<std::string> convert_text(const ScratchDir& dir, const std::string& text, int64_t npus, int64_t passes,
                                      const std::string& name = "w") {
  const std::string input = dir.file(name + ".txt");
  test::write_bytes(input, text);
  return convert_astra_text(input, dir.file(name), {.num_npus = npus, .num_passes = passes});
}

// Layer columns: name reserved fwd_t fwd_type fwd_size ig_t ig_type ig_size wg_t wg_type wg_size update
const std::string kThreeLayers =
    "A -1 10 NONE 0 20 NONE 0 30 ALLREDUCE 100 1\n"
    "B -1 11 ALLGATHER 200 21 REDUCESCATTER 300 31 ALLTOALL 400 1\n"
    "C -1 12 NONE 0 22 NONE 0 32 ALLREDUCE 500 1\n";

// ------------------------------------------------------------------------------------------------
// Golden: the shared ResNet-50 conversions made with `chakra_converter Text`.

TEST(AstraText, ResNet50N64ByteIdenticalToChakraConverter) {
  FABEMU_REQUIRE_SHARED(shared);
  const fs::path text_dir = shared / "astra-sim-text";
  ScratchDir dir;
  const auto paths = convert_astra_text((text_dir / "Resnet50_DataParallel.txt").string(), dir.file("resnet50"),
                                        {.num_npus = 64, .num_passes = 1});
  ASSERT_EQ(paths.size(), 64u);
  for (int64_t rank = 0; rank < 64; ++rank) {
    EXPECT_EQ(paths[static_cast<size_t>(rank)], rank_file_path(dir.file("resnet50"), rank));
    const std::string expected =
        test::read_bytes((text_dir / "resnet50_dp_N64" / fmt::format("resnet50.{}.et", rank)).string());
    ASSERT_FALSE(expected.empty()) << "rank " << rank;
    const std::string got = test::read_bytes(paths[static_cast<size_t>(rank)]);
    EXPECT_EQ(got.size(), expected.size()) << "rank " << rank;
    EXPECT_TRUE(got == expected) << "rank " << rank << " differs from Chakra's conversion";
  }
  // What is inside (the README's description): 161 COMP + 54 ALL_REDUCE per rank, ids running on.
  const auto rank1 = test::read_nodes(paths[1]);
  ASSERT_EQ(rank1.size(), 215u);
  EXPECT_EQ(rank1.front().id(), 215u);
  EXPECT_EQ(rank1.back().id(), 429u);
  EXPECT_EQ(rank1.front().name(), "COMP_NODE_conv1_FWD");
  EXPECT_EQ(rank1.front().duration_micros(), 13003u);
  size_t comp = 0;
  size_t allreduce = 0;
  for (const Node& n : rank1) {
    comp += n.type() == ChakraProtoMsg::COMP_NODE;
    allreduce += comm_info(n).collective == ChakraProtoMsg::ALL_REDUCE;
  }
  EXPECT_EQ(comp, 161u);
  EXPECT_EQ(allreduce, 54u);
  // The metadata: no version, the schema string and the whole input with "\r\n" turned into "\n".
  TraceReader r(paths[0]);
  EXPECT_EQ(r.metadata().version(), "");
  ASSERT_EQ(r.metadata().attr_size(), 2);
  EXPECT_EQ(r.metadata().attr(0).name(), "schema");
  EXPECT_EQ(r.metadata().attr(0).string_val(), "1.0.2-chakra.0.0.4");
  EXPECT_EQ(r.metadata().attr(1).name(), "input_file");
  std::string input = test::read_bytes((text_dir / "Resnet50_DataParallel.txt").string());
  ASSERT_NE(input.find("\r\n"), std::string::npos);
  std::string normalized;
  for (char c : input) {
    if (c != '\r') normalized.push_back(c);
  }
  EXPECT_EQ(r.metadata().attr(1).string_val(), normalized);
}

TEST(AstraText, ResNet50N256SpotCheck) {
  FABEMU_REQUIRE_SHARED(shared);
  const fs::path text_dir = shared / "astra-sim-text";
  ScratchDir dir;
  const auto paths = convert_astra_text((text_dir / "Resnet50_DataParallel.txt").string(), dir.file("resnet50"),
                                        {.num_npus = 256, .num_passes = 1});
  ASSERT_EQ(paths.size(), 256u);
  for (const int rank : {0, 255}) {
    const std::string expected =
        test::read_bytes((text_dir / "resnet50_dp_N256" / fmt::format("resnet50.{}.et", rank)).string());
    ASSERT_FALSE(expected.empty());
    EXPECT_TRUE(test::read_bytes(paths[static_cast<size_t>(rank)]) == expected) << "rank " << rank;
  }
  EXPECT_EQ(test::read_nodes(paths[255]).front().id(), 255u * 215u);
}

// ------------------------------------------------------------------------------------------------
// Each parallelism type on a small workload; the expected graphs follow text_converter.py line by line.

TEST(AstraText, DataParallelGraph) {
  ScratchDir dir;
  const auto paths = convert_text(dir, "DATA\n3\n" + kThreeLayers, 2, 1);
  ASSERT_EQ(paths.size(), 2u);
  const std::vector<std::string> rank0 = {
      "0 COMP_NODE_A_FWD [] t=10",
      "1 COMP_NODE_B_FWD [0] t=11",
      "2 COMP_NODE_C_FWD [1] t=12",
      "3 COMP_NODE_C_BWD_WG [2] t=32",
      "4 COMM_COLL_NODE_C_ALLREDUCE [3] c=0/500",
      "5 COMP_NODE_C_BWD_IG [3] t=22",
      "6 COMP_NODE_B_BWD_WG [5] t=31",
      "7 COMM_COLL_NODE_B_ALLTOALL [6] c=6/400",
      "8 COMP_NODE_B_BWD_IG [6] t=21",
      "9 COMP_NODE_A_BWD_WG [8] t=30",
      "10 COMM_COLL_NODE_A_ALLREDUCE [9] c=0/100",
  };
  EXPECT_EQ(summaries(paths[0]), rank0);
  // Rank 1: the same graph, ids continuing at 11 (the converter does not reset its counter).
  const std::vector<std::string> rank1 = {
      "11 COMP_NODE_A_FWD [] t=10",
      "12 COMP_NODE_B_FWD [11] t=11",
      "13 COMP_NODE_C_FWD [12] t=12",
      "14 COMP_NODE_C_BWD_WG [13] t=32",
      "15 COMM_COLL_NODE_C_ALLREDUCE [14] c=0/500",
      "16 COMP_NODE_C_BWD_IG [14] t=22",
      "17 COMP_NODE_B_BWD_WG [16] t=31",
      "18 COMM_COLL_NODE_B_ALLTOALL [17] c=6/400",
      "19 COMP_NODE_B_BWD_IG [17] t=21",
      "20 COMP_NODE_A_BWD_WG [19] t=30",
      "21 COMM_COLL_NODE_A_ALLREDUCE [20] c=0/100",
  };
  EXPECT_EQ(summaries(paths[1]), rank1);
}

TEST(AstraText, DataParallelSecondPassWaitsForWeightGradientComm) {
  ScratchDir dir;
  const auto paths = convert_text(dir, "DATA\n3\n" + kThreeLayers, 1, 2);
  const auto s = summaries(paths[0]);
  ASSERT_EQ(s.size(), 22u);
  // Forward of pass 2: previous layer first, then the layer's all-reduce of pass 1.
  EXPECT_EQ(s[11], "11 COMP_NODE_A_FWD [10] t=10");
  EXPECT_EQ(s[12], "12 COMP_NODE_B_FWD [11,7] t=11");
  EXPECT_EQ(s[13], "13 COMP_NODE_C_FWD [12,4] t=12");
  EXPECT_EQ(s[14], "14 COMP_NODE_C_BWD_WG [13] t=32");
  EXPECT_EQ(s[21], "21 COMM_COLL_NODE_A_ALLREDUCE [20] c=0/100");
}

TEST(AstraText, ModelParallelGraph) {
  ScratchDir dir;
  const auto paths = convert_text(dir, "MODEL\n3\n" + kThreeLayers, 1, 2);
  const auto s = summaries(paths[0]);
  const std::vector<std::string> pass1 = {
      "0 COMP_NODE_A_FWD [] t=10",
      "1 COMM_COLL_NODE_A_NONE [0] c=0/0",
      "2 COMP_NODE_B_FWD [1] t=11",
      "3 COMM_COLL_NODE_B_ALLGATHER [2] c=2/200",
      "4 COMP_NODE_C_FWD [3] t=12",
      "5 COMM_COLL_NODE_C_NONE [4] c=0/0",
      "6 COMP_NODE_C_BWD_IG [5] t=22",
      "7 COMM_COLL_NODE_C_NONE [6] c=0/0",
      "8 COMP_NODE_C_BWD_WG [6] t=32",
      "9 COMP_NODE_B_BWD_IG [8,7] t=21",
      "10 COMM_COLL_NODE_B_REDUCESCATTER [9] c=7/300",
      "11 COMP_NODE_B_BWD_WG [9] t=31",
      "12 COMP_NODE_A_BWD_IG [11,10] t=20",
      "13 COMP_NODE_A_BWD_WG [12] t=30",
  };
  ASSERT_EQ(s.size(), 28u);
  EXPECT_EQ(std::vector<std::string>(s.begin(), s.begin() + 14), pass1);
  // Pass 2: the previous layer's forward comm first, then the layer's weight-gradient compute of pass 1.
  EXPECT_EQ(s[14], "14 COMP_NODE_A_FWD [13] t=10");
  EXPECT_EQ(s[16], "16 COMP_NODE_B_FWD [15,11] t=11");
  EXPECT_EQ(s[18], "18 COMP_NODE_C_FWD [17,8] t=12");
}

TEST(AstraText, HybridDataModelGraph) {
  ScratchDir dir;
  const auto paths = convert_text(dir, "HYBRID_DATA_MODEL\n3\n" + kThreeLayers, 1, 2);
  const auto s = summaries(paths[0]);
  const std::vector<std::string> pass1 = {
      "0 COMP_NODE_A_FWD [] t=10",
      "1 COMM_COLL_NODE_A_NONE [0] c=0/0",
      "2 COMP_NODE_B_FWD [1] t=11",
      "3 COMM_COLL_NODE_B_ALLGATHER [2] c=2/200",
      "4 COMP_NODE_C_FWD [3] t=12",
      "5 COMM_COLL_NODE_C_NONE [4] c=0/0",
      "6 COMP_NODE_C_BWD_IG [5] t=22",
      "7 COMM_COLL_NODE_C_IG_COMM__NONE [6] c=0/0",
      "8 COMP_NODE_C_BWD_WG [6] t=32",
      "9 COMM_COLL_NODE_C_ALLREDUCE [8] c=0/500",
      "10 COMP_NODE_B_BWD_IG [8,7] t=21",
      "11 COMM_COLL_NODE_B_IG_COMM__REDUCESCATTER [10] c=7/300",
      "12 COMP_NODE_B_BWD_WG [10] t=31",
      "13 COMM_COLL_NODE_B_ALLTOALL [12] c=6/400",
      "14 COMP_NODE_A_BWD_IG [12,11] t=20",
      "15 COMP_NODE_A_BWD_WG [14] t=30",
      "16 COMM_COLL_NODE_A_ALLREDUCE [15] c=0/100",
  };
  ASSERT_EQ(s.size(), 34u);
  EXPECT_EQ(std::vector<std::string>(s.begin(), s.begin() + 17), pass1);
  // Pass 2: the layer's weight-gradient comm of pass 1 first, then the previous layer's forward comm.
  EXPECT_EQ(s[17], "17 COMP_NODE_A_FWD [16] t=10");
  EXPECT_EQ(s[19], "19 COMP_NODE_B_FWD [13,18] t=11");
  EXPECT_EQ(s[21], "21 COMP_NODE_C_FWD [9,20] t=12");
}

TEST(AstraText, HybridModelDataGraph) {
  ScratchDir dir;
  const auto paths = convert_text(dir, "HYBRID_MODEL_DATA\n3\n" + kThreeLayers, 2, 1);
  const auto s = summaries(paths[0]);
  ASSERT_EQ(s.size(), 17u);
  // As HYBRID_DATA_MODEL, but the input-gradient comm nodes are named after the layer alone.
  EXPECT_EQ(s[7], "7 COMM_COLL_NODE_C_NONE [6] c=0/0");
  EXPECT_EQ(s[10], "10 COMP_NODE_B_BWD_IG [8,7] t=21");
  EXPECT_EQ(s[11], "11 COMM_COLL_NODE_B_REDUCESCATTER [10] c=7/300");
  EXPECT_EQ(s[16], "16 COMM_COLL_NODE_A_ALLREDUCE [15] c=0/100");
  // Rank 1 starts over (weight-gradient comm state is reset per rank) with ids from 17.
  const auto r1 = summaries(paths[1]);
  ASSERT_EQ(r1.size(), 17u);
  EXPECT_EQ(r1[0], "17 COMP_NODE_A_FWD [] t=10");
  EXPECT_EQ(r1[2], "19 COMP_NODE_B_FWD [18] t=11");
}

TEST(AstraText, MicroGraph) {
  ScratchDir dir;
  const auto paths = convert_text(dir, "MICRO\n3\n" + kThreeLayers, 2, 2);
  // Only the weight-gradient collectives, without dependencies, `passes` times per rank.
  const std::vector<std::string> rank1 = {
      "6 COMM_COLL_NODE_A_ALLREDUCE [] c=0/100",   "7 COMM_COLL_NODE_B_ALLTOALL [] c=6/400",
      "8 COMM_COLL_NODE_C_ALLREDUCE [] c=0/500",   "9 COMM_COLL_NODE_A_ALLREDUCE [] c=0/100",
      "10 COMM_COLL_NODE_B_ALLTOALL [] c=6/400",   "11 COMM_COLL_NODE_C_ALLREDUCE [] c=0/500",
  };
  EXPECT_EQ(summaries(paths[1]), rank1);
  EXPECT_EQ(summaries(paths[0]).size(), 6u);
}

const std::string kDlrmLayers =
    "E -1 10 ALLTOALL 64 20 ALLTOALL 64 30 NONE 0 1\n"
    "M1 -1 11 NONE 0 21 NONE 0 31 ALLREDUCE 100 1\n"
    "T1 -1 12 NONE 0 22 NONE 0 32 ALLREDUCE 200 1\n"
    "T2 -1 13 NONE 0 23 NONE 0 33 ALLREDUCE 300 1\n";

TEST(AstraText, HybridDlrmGraph) {
  ScratchDir dir;
  const auto paths = convert_text(dir, "HYBRID_DLRM 1\n4\n" + kDlrmLayers, 2, 2);
  const auto s = summaries(paths[0]);
  const std::vector<std::string> pass1 = {
      "0 COMP_NODE_E_FWD [] t=10",
      "1 COMM_COLL_NODE_E_ALLTOALL [0] c=6/64",    // only ALLTOALL forward comms exist
      "2 COMP_NODE_M1_FWD [0,1] t=11",             // the last bottom layer waits for the embedding all-to-all
      "3 COMP_NODE_T1_FWD [2] t=12",
      "4 COMP_NODE_T2_FWD [3] t=13",
      "5 COMP_NODE_T2_BWD_WG [4] t=33",
      "6 COMM_COLL_NODE_T2_ALLREDUCE [5] c=0/300",
      "7 COMP_NODE_T2_BWD_IG [5] t=23",
      "8 COMP_NODE_T1_BWD_WG [7] t=32",
      "9 COMM_COLL_NODE_T1_ALLREDUCE [8] c=0/200",
      "10 COMP_NODE_T1_BWD_IG [8] t=22",
      "11 COMM_COLL_NODE_E_ALLTOALL [10] c=6/64",  // layer 0's input-gradient all-to-all, after layer lbl+1
      "12 COMP_NODE_M1_BWD_WG [10] t=31",
      "13 COMM_COLL_NODE_M1_ALLREDUCE [12] c=0/100",
      "14 COMP_NODE_M1_BWD_IG [12] t=21",
      "15 COMP_NODE_E_BWD_WG [14,11] t=30",        // no weight-gradient comm for a NONE type
  };
  ASSERT_EQ(s.size(), 32u);
  EXPECT_EQ(std::vector<std::string>(s.begin(), s.begin() + 16), pass1);
  // Pass 2: weight-gradient comm of pass 1, else its compute; previous forward; the all-to-all.
  EXPECT_EQ(s[16], "16 COMP_NODE_E_FWD [15] t=10");
  EXPECT_EQ(s[17], "17 COMM_COLL_NODE_E_ALLTOALL [16] c=6/64");
  EXPECT_EQ(s[18], "18 COMP_NODE_M1_FWD [13,16,17] t=11");
  EXPECT_EQ(s[19], "19 COMP_NODE_T1_FWD [9,18] t=12");
  // Rank 1: backward state reset, ids from 32.
  const auto r1 = summaries(paths[1]);
  ASSERT_EQ(r1.size(), 32u);
  EXPECT_EQ(r1[0], "32 COMP_NODE_E_FWD [] t=10");
  EXPECT_EQ(r1[2], "34 COMP_NODE_M1_FWD [32,33] t=11");

  // HYBRID_DLRM_ENHANCED is converted the same way.
  const auto enhanced = convert_text(dir, "HYBRID_DLRM_ENHANCED 1\n4\n" + kDlrmLayers, 2, 2, "enh");
  EXPECT_EQ(summaries(enhanced[0]), s);
  EXPECT_EQ(summaries(enhanced[1]), r1);
}

TEST(AstraText, TextDetails) {
  ScratchDir dir;
  // CRLF and lone CR line ends, tabs, extra columns, Python int() forms ("+5", "1_000") as Chakra reads
  // them; blank lines are skipped (Chakra's converter stops at them with an IndexError).
  const std::string text = "MICRO extra words\r\n2\r\n\r\nA\t-1 1 NONE 0 1 NONE 0 1 ALLGATHER 1_000 x extra\r"
                           "  B -1 1 NONE 0 1 NONE 0 1 REDUCESCATTER +5 1  \n\n";
  const auto paths = convert_text(dir, text, 1, 1);
  EXPECT_EQ(summaries(paths[0]), (std::vector<std::string>{"0 COMM_COLL_NODE_A_ALLGATHER [] c=2/1000",
                                                            "1 COMM_COLL_NODE_B_REDUCESCATTER [] c=7/5"}));
  TraceReader r(paths[0]);
  EXPECT_EQ(r.metadata().attr(1).string_val(),
            "MICRO extra words\n2\n\nA\t-1 1 NONE 0 1 NONE 0 1 ALLGATHER 1_000 x extra\n"
            "  B -1 1 NONE 0 1 NONE 0 1 REDUCESCATTER +5 1  \n\n");
}

TEST(AstraText, ZeroLayersGiveMetadataOnlyFiles) {
  ScratchDir dir;
  const auto paths = convert_text(dir, "DATA\n0\n", 3, 1);
  ASSERT_EQ(paths.size(), 3u);
  for (const auto& p : paths) EXPECT_TRUE(test::read_nodes(p).empty());
}

TEST(AstraText, CreatesOutputDirectory) {
  ScratchDir dir;
  test::write_bytes(dir.file("w.txt"), "MICRO\n1\n" + kThreeLayers.substr(0, kThreeLayers.find('\n') + 1));
  const auto paths = convert_astra_text(dir.file("w.txt"), dir.file("out/sub/w"), {.num_npus = 2});
  EXPECT_EQ(paths, (std::vector<std::string>{dir.file("out/sub/w.0.et"), dir.file("out/sub/w.1.et")}));
  EXPECT_EQ(summaries(paths[1]), (std::vector<std::string>{"1 COMM_COLL_NODE_A_ALLREDUCE [] c=0/100"}));
}

// ------------------------------------------------------------------------------------------------
// Bad input: TraceError naming the file and the line.

struct BadCase {
  const char* what;
  std::string text;
  uint64_t line;
  const char* message_part;
};

TEST(AstraText, BadInputNamesFileAndLine) {
  const std::string good = "A -1 10 NONE 0 20 NONE 0 30 ALLREDUCE 100 1\n";
  const std::vector<BadCase> cases = {
      {"unknown parallelism", "PIPELINE\n1\n" + good, 1, "unsupported parallelism type \"PIPELINE\""},
      {"empty file", "", 1, "empty file"},
      {"blank first line", "\n1\n" + good, 1, "blank"},
      {"dlrm without index", "HYBRID_DLRM\n1\n" + good, 1, "last bottom-MLP layer"},
      {"dlrm bad index", "HYBRID_DLRM x\n1\n" + good, 1, "\"x\" is not an integer"},
      {"missing count", "DATA\n", 2, "number of layers"},
      {"non-numeric count", "DATA\nfifty\n" + good, 2, "\"fifty\" is not an integer"},
      {"negative count", "DATA\n-1\n", 2, "negative"},
      {"non-numeric compute", "DATA\n2\n" + good + "B -1 1O NONE 0 20 NONE 0 30 ALLREDUCE 100 1\n", 4,
       "column 3 (forward compute time): \"1O\" is not an integer"},
      {"non-numeric size", "DATA\n1\nA -1 10 NONE 0 20 NONE 0 30 ALLREDUCE 1MB 1\n", 3,
       "column 11 (weight-gradient comm size): \"1MB\""},
      {"float time", "DATA\n1\nA -1 10 NONE 0 20.5 NONE 0 30 ALLREDUCE 100 1\n", 3, "column 6"},
      {"negative time", "DATA\n1\nA -1 10 NONE 0 20 NONE 0 -30 ALLREDUCE 100 1\n", 3, "negative"},
      {"negative size", "DATA\n1\nA -1 10 NONE -4 20 NONE 0 30 ALLREDUCE 100 1\n", 3, "negative"},
      {"too large", "DATA\n1\nA -1 10 NONE 0 20 NONE 0 30 ALLREDUCE 9223372036854775808 1\n", 3,
       "column 11 (weight-gradient comm size): \"9223372036854775808\" is out of range"},
      {"too few columns", "DATA\n2\n" + good + "\nB -1 10 NONE 0 20 NONE 0 30 ALLREDUCE 100\n", 5,
       "has 12 columns"},
      {"fewer layers than declared", "DATA\n3\n" + good + good, 2, "declares 3 layers but the file has 2"},
      {"more layers than declared", "DATA\n1\n" + good + good, 4, "declares 1 layers but there are more"},
      {"not utf-8", "DATA\n1\nA\xff -1 10 NONE 0 20 NONE 0 30 ALLREDUCE 100 1\n", 3, "not valid UTF-8"},
      {"dlrm index 0", "HYBRID_DLRM 0\n1\nE -1 10 ALLTOALL 64 20 ALLTOALL 64 30 NONE 0 1\n", 3,
       "comes after it"},
      {"dlrm first layer not alltoall", "HYBRID_DLRM 1\n2\n" + good + good, 4,
       "has forward comm type \"NONE\""},
      {"dlrm index -1", "HYBRID_DLRM -1\n1\n" + good, 1, "leaves no layer"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    ScratchDir dir;
    const std::string input = dir.file("bad.txt");
    test::write_bytes(input, c.text);
    try {
      convert_astra_text(input, dir.file("out"), {.num_npus = 2});
      ADD_FAILURE() << "accepted";
    } catch (const TraceError& e) {
      EXPECT_EQ(e.where().file, input);
      EXPECT_EQ(e.where().line, c.line) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(fmt::format("bad.txt: line {}: ", c.line)), std::string::npos)
          << e.what();
    }
    // Nothing half-written is left behind.
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1) << "only bad.txt";
  }
}

TEST(AstraText, MissingFile) {
  ScratchDir dir;
  try {
    convert_astra_text(dir.file("nope.txt"), dir.file("out"), {});
    FAIL() << "accepted a missing file";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.where().file, dir.file("nope.txt"));
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.file("out.0.et")));
}

TEST(AstraText, OptionsOutOfRange) {
  ScratchDir dir;
  test::write_bytes(dir.file("w.txt"), "DATA\n0\n");
  EXPECT_THROW(convert_astra_text(dir.file("w.txt"), dir.file("w"), {.num_npus = 0}), std::invalid_argument);
  EXPECT_THROW(convert_astra_text(dir.file("w.txt"), dir.file("w"), {.num_npus = 1, .num_passes = 0}),
               std::invalid_argument);
}

}  // namespace
}  // namespace fabemu::traces
