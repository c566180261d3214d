// `validate_workload` on small hand-made workloads: each finding is asserted with its place and text.
#include <gtest/gtest.h>

#include "tests/support/test_support.h"
#include "traces/attrs.h"
#include "traces/trace_set.h"
#include "traces/validate.h"

namespace fabemu::traces {
namespace {
using ChakraProtoMsg::COMM_COLL_NODE;
using ChakraProtoMsg::COMM_RECV_NODE;
using ChakraProtoMsg::COMM_SEND_NODE;

void add_int(Node& n, const char* name, int64_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}
void add_str(Node& n, const char* name, const char* v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_string_val(v);
}
Node p2p(uint64_t id, bool send, int64_t peer, int64_t tag, int64_t size) {
  Node n = test::make_node(id, send ? COMM_SEND_NODE : COMM_RECV_NODE);
  add_int(n, send ? "comm_dst" : "comm_src", peer);
  add_int(n, "comm_tag", tag);
  add_int(n, "comm_size", size);
  return n;
}
Node coll(uint64_t id, CollectiveType type, int64_t size, const char* pg = nullptr) {
  Node n = test::make_node(id, COMM_COLL_NODE);
  add_int(n, "comm_type", type);
  add_int(n, "comm_size", size);
  if (pg != nullptr) add_str(n, "pg_name", pg);
  return n;
}

// Errors only, as "rank R: node-id: text" lines for compact assertions.
std::vector<std::string> errors(const ValidationReport& r) {
  std::vector<std::string> out;
  for (const auto& f : r.findings) {
    if (f.severity != Severity::kError) continue;
    out.push_back("rank " + std::to_string(f.where.rank.value_or(-1)) + ": " +
                  (f.where.node_id ? std::to_string(*f.where.node_id) : std::string("-")) + ": " + f.what);
  }
  return out;
}

TEST(Validate, MatchesSendsWithReceives) {
  test::ScratchDir dir;
  const std::string w = dir.file("p");
  test::write_trace(w + ".0.et", {p2p(1, true, 1, 5, 100), p2p(2, true, 1, 6, 100), p2p(3, true, 1, 7, 10)});
  test::write_trace(w + ".1.et", {p2p(1, false, 0, 5, 100), p2p(2, false, 0, 6, 999), p2p(3, false, 0, 8, 10)});
  const auto r = validate_workload(find_rank_files(w));
  EXPECT_EQ(r.errors, 3u);
  const auto e = errors(r);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_NE(e[0].find("rank 0: 2: SEND of 100 bytes to rank 1 tag 6 is matched by a RECV of 999 bytes"), std::string::npos)
      << e[0];
  EXPECT_EQ(e[1], "rank 0: 3: SEND to rank 1 tag 7 (10 bytes) has no matching RECV (src 0, tag 7) on rank 1");
  EXPECT_EQ(e[2], "rank 1: 3: RECV from rank 0 tag 8 (10 bytes) has no matching SEND on rank 0");
}

TEST(Validate, ProcessGroupMembershipAndOrder) {
  test::ScratchDir dir;
  const std::string w = dir.file("g");
  Node md = test::make_node(100, ChakraProtoMsg::METADATA_NODE);
  md.mutable_inputs()->set_values("[{'pg_name': '1', 'ranks': [0, 1]}]");
  // Ranks 0 and 1 form group "1": rank 1 issues one collective more, and in another order.
  test::write_trace(w + ".0.et", {md, coll(1, ChakraProtoMsg::ALL_REDUCE, 64, "1.0"),
                                  coll(2, ChakraProtoMsg::ALL_GATHER, 64, "1")});
  test::write_trace(w + ".1.et", {coll(1, ChakraProtoMsg::ALL_GATHER, 64, "1"), coll(2, ChakraProtoMsg::ALL_REDUCE, 64, "1"),
                                  coll(3, ChakraProtoMsg::BARRIER, 0, "1")});
  // Rank 2 is not a member of "1", and names a group nobody defined.
  test::write_trace(w + ".2.et", {coll(1, ChakraProtoMsg::ALL_REDUCE, 64, "1"), coll(2, ChakraProtoMsg::ALL_REDUCE, 64, "7")});
  const auto r = validate_workload(find_rank_files(w));
  const auto e = errors(r);
  ASSERT_EQ(e.size(), 5u) << ::testing::PrintToString(e);
  EXPECT_EQ(e[0], "rank 2: 1: rank 2 issues a collective in process group \"1\" but is not a member of it");
  EXPECT_EQ(e[1], "rank 2: 2: pg_name \"7\" is not defined by a METADATA_NODE or a comm-group file");
  EXPECT_NE(e[2].find("rank 1: 1: collective #0 of process group \"1\" is ALL_GATHER of 64 bytes here but ALL_REDUCE of 64 bytes on rank 0"),
            std::string::npos)
      << e[2];
  EXPECT_NE(e[3].find("rank 1: 2: collective #1 of process group \"1\" is ALL_REDUCE"), std::string::npos) << e[3];
  EXPECT_EQ(e[4], "rank 1: -: rank 1 issues 3 collectives in process group \"1\" but rank 0 issues 2: they would never all complete");

  // The same group from a comm-group file instead of the METADATA_NODE gives the same verdict.
  test::write_bytes(dir.file("groups.json"), R"({"1": [0, 1]})");
  const auto with_file = validate_workload(find_rank_files(w), {.comm_group_file = dir.file("groups.json")});
  EXPECT_EQ(with_file.errors, 5u);
}

// Issue 44 item 12: a number past a double in the comm-group file escaped as nlohmann's out_of_range,
// naming no file.
TEST(Validate, CommGroupFileNumberOverflowNamesTheFile) {
  test::ScratchDir dir;
  const std::string w = dir.file("o");
  test::write_trace(w + ".0.et", {coll(1, ChakraProtoMsg::ALL_REDUCE, 64)});
  test::write_bytes(dir.file("groups.json"), R"({"1": [0, 1e400]})");
  const auto r = validate_workload(find_rank_files(w), {.comm_group_file = dir.file("groups.json")});
  ASSERT_EQ(r.errors, 1u);
  EXPECT_EQ(r.findings[0].where.file, dir.file("groups.json"));
  EXPECT_NE(r.findings[0].what.find("not valid JSON: [json.exception.out_of_range.406] number overflow parsing '1e400'"),
            std::string::npos)
      << r.findings[0].what;
}

TEST(Validate, MissingAttributesAndStructure) {
  test::ScratchDir dir;
  const std::string w = dir.file("m");
  Node send = test::make_node(1, COMM_SEND_NODE);  // no comm_dst, no comm_size
  Node recv = p2p(2, false, 5, 0, 8);              // peer 5 does not exist
  Node bad_type = coll(3, ChakraProtoMsg::ALL_REDUCE, 8);
  bad_type.mutable_attr(0)->set_int64_val(42);
  Node untagged = test::make_node(4, COMM_SEND_NODE);
  add_int(untagged, "comm_dst", 0);
  add_int(untagged, "comm_size", 8);
  Node self_recv = p2p(5, false, 0, 0, 8);
  test::write_trace(w + ".0.et", {send, recv, bad_type, untagged, self_recv, test::make_node(4, ChakraProtoMsg::COMP_NODE)});
  const auto r = validate_workload(find_rank_files(w));
  const auto e = errors(r);
  ASSERT_EQ(e.size(), 5u) << ::testing::PrintToString(e);
  EXPECT_EQ(e[0], "rank 0: 1: COMM_SEND_NODE lacks comm_dst (receiving rank)");
  EXPECT_EQ(e[1], "rank 0: 1: COMM_SEND_NODE lacks comm_size (bytes)");
  EXPECT_EQ(e[2], "rank 0: 2: comm_src 5 is not a rank of this workload (0..0)");
  EXPECT_EQ(e[3], "rank 0: 3: comm_type 42 is not a collective (0..9, ALL_REDUCE..BARRIER)");
  EXPECT_NE(e[4].find("duplicate node id 4"), std::string::npos) << e[4];
  EXPECT_EQ(r.warnings, 1u);  // the untagged send (matched as tag 0 with the self receive)
}

// Issue 44 item 23: --strict stopped at the first dependency problem ("1 error"). It reports every one,
// the first max_findings_per_kind of each kind shown and the rest counted, and the totals are exact.
TEST(Validate, StrictReportsEveryDependencyProblem) {
  test::ScratchDir dir;
  const std::string w = dir.file("s");
  std::vector<uint64_t> absent;
  for (uint64_t id = 1000; id < 1025; ++id) absent.push_back(id);  // 25 dangling data_deps on node 1
  test::write_trace(w + ".0.et", {test::make_node(1, ChakraProtoMsg::COMP_NODE, absent),
                                  test::make_node(2, ChakraProtoMsg::COMP_NODE, {1, 2}, {2, 3}),  // 2 self deps
                                  test::make_node(3, ChakraProtoMsg::COMP_NODE, {2}, {500})});  // ctrl_dep 500 dangling
  // node 2's ctrl_dep 3 names a later node: a forward ctrl_dep.
  const auto files = find_rank_files(w);
  const ValidationReport lenient = validate_workload(files);
  EXPECT_EQ(lenient.errors, 0u);
  EXPECT_EQ(lenient.warnings, 3u);  // one per kind

  const ValidationReport r = validate_workload(files, {.strict = true});
  EXPECT_EQ(r.errors, 29u);  // 26 dangling + 2 self + 1 forward ctrl_dep
  const auto e = errors(r);
  ASSERT_EQ(e.size(), 20u + 2 + 1 + 1) << ::testing::PrintToString(e);
  EXPECT_EQ(e[0], "rank 0: 1: data_dep 1000 names no node in this file");
  EXPECT_EQ(e[19], "rank 0: 1: data_dep 1019 names no node in this file");
  EXPECT_EQ(e[20], "rank 0: 2: node 2 depends on itself");
  EXPECT_EQ(e[21], "rank 0: 2: node 2 depends on itself");
  EXPECT_EQ(e[22], "rank 0: 2: ctrl_dep 3 names a node later in the file");
  // The 21st to 26th dangling ones (node 1's last five, node 3's ctrl_dep 500) are counted, not shown.
  EXPECT_EQ(e[23], "rank 0: -: ... and 6 more like the above (dangling dependency)");
  EXPECT_EQ(r.ranks[0].dangling_deps, 26u);
  EXPECT_TRUE(r.ranks[0].walked);

  const ValidationReport capped = validate_workload(files, {.strict = true, .max_findings_per_kind = 1});
  EXPECT_EQ(capped.errors, 29u);
  EXPECT_EQ(errors(capped).size(), 1u + 1 + 1 + 1 + 1);  // 1 dangling, 1 self, 1 forward, 2 "more" lines
}

}  // namespace
}  // namespace fabemu::traces
