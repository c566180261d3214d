#include <gtest/gtest.h>

#include <sstream>

#include "tests/support/test_support.h"
#include "traces/json_form.h"
#include "traces/reader.h"
#include "traces/trace_set.h"
#include "traces/writer.h"

namespace fabemu::traces {
namespace {

TEST(Writer, FramesAreLengthPrefixedAndNeverEmpty) {
  test::ScratchDir dir;
  const std::string path = dir.file("w.0.et");
  {
    TraceWriter w(path, {});
    Node n = test::make_node(0, ChakraProtoMsg::COMP_NODE);
    n.clear_name();
    w.write(n);  // id 0, type COMP: 2 bytes
    w.close();
  }
  // metadata: 07 0a 05 "0.0.4"; node: 02 18 04
  EXPECT_EQ(test::read_bytes(path), std::string("\x07\x0a\x05" "0.0.4" "\x02\x18\x04", 11));

  TraceWriter w(dir.file("e.0.et"), {});
  EXPECT_THROW(w.write(Node()), TraceError);
}

TEST(Reader, RoundTripsPlainAndGzip) {
  test::ScratchDir dir;
  std::vector<Node> nodes;
  for (uint64_t i = 0; i < 1000; ++i) {
    Node n = test::make_node(i, i % 10 == 9 ? ChakraProtoMsg::COMM_COLL_NODE : ChakraProtoMsg::COMP_NODE,
                             i == 0 ? std::vector<uint64_t>{} : std::vector<uint64_t>{i - 1});
    n.set_duration_micros(i * 3);
    nodes.push_back(n);
  }
  for (const bool gz : {false, true}) {
    const std::string path = dir.file(gz ? "t.0.et.gz" : "t.0.et");
    test::write_trace(path, nodes, gz);
    TraceReader r(path, 0);
    EXPECT_EQ(r.compressed(), gz);
    EXPECT_EQ(r.metadata().version(), "0.0.4");
    Node n;
    uint64_t i = 0;
    while (r.next(n)) {
      ASSERT_LT(i, nodes.size());
      EXPECT_EQ(n.SerializeAsString(), nodes[i].SerializeAsString()) << "node " << i;
      ++i;
    }
    EXPECT_EQ(i, 1000u);
    EXPECT_EQ(r.nodes_read(), 1000u);
  }
}

TEST(Reader, NextIdSkipsBodies) {
  test::ScratchDir dir;
  const std::string path = dir.file("ids.0.et");
  std::vector<Node> nodes;
  for (uint64_t id : {5u, 300u, 0u, 70000u}) {
    Node n = test::make_node(id, ChakraProtoMsg::COMP_NODE, {1, 2, 3});
    auto* a = n.add_attr();
    a->set_name("num_ops");
    a->set_fixed64_val(42);
    nodes.push_back(n);
  }
  test::write_trace(path, nodes);
  TraceReader r(path);
  std::vector<uint64_t> ids;
  uint64_t id = 0;
  while (r.next_id(id)) ids.push_back(id);
  EXPECT_EQ(ids, (std::vector<uint64_t>{5, 300, 0, 70000}));
}

TEST(TraceSet, FindsRankFilesInOrder) {
  test::ScratchDir dir;
  for (int r : {2, 0, 10, 1, 3, 4, 5, 6, 7, 8, 9}) test::write_trace(dir.file("w." + std::to_string(r) + ".et"), {});
  test::write_trace(dir.file("w.x.et"), {});
  test::write_trace(dir.file("other.0.et"), {});
  const auto files = find_rank_files(dir.file("w"));
  ASSERT_EQ(files.size(), 11u);
  for (size_t i = 0; i < files.size(); ++i) EXPECT_EQ(files[i].rank, static_cast<int64_t>(i));
  EXPECT_EQ(files[10].path, dir.file("w.10.et"));
  // A single file names a one-rank workload, its rank taken from the name.
  const auto one = find_rank_files(dir.file("w.3.et"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].rank, 3);
  // A folder with several workloads names them; one with a single workload stands for it.
  try {
    find_rank_files(dir.path().string());
    FAIL() << "ambiguous folder accepted";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("several workloads (other, w)"), std::string::npos) << e.what();
  }
  std::filesystem::create_directories(dir.path() / "solo");
  test::write_trace((dir.path() / "solo" / "x.0.et").string(), {});
  test::write_trace((dir.path() / "solo" / "x.1.et.gz").string(), {}, true);
  const auto solo = find_rank_files((dir.path() / "solo").string());
  ASSERT_EQ(solo.size(), 2u);
  EXPECT_EQ(solo[1].path, (dir.path() / "solo" / "x.1.et.gz").string());
}

TEST(JsonForm, RoundTripIsByteIdentical) {
  test::ScratchDir dir;
  std::vector<Node> nodes;
  Node a = test::make_node(7, ChakraProtoMsg::COMM_COLL_NODE, {1}, {2, 3});
  a.set_start_time_micros(100);
  a.set_duration_micros(UINT64_MAX);
  a.mutable_inputs()->set_values("[[1, 2]]");
  a.mutable_outputs()->set_shapes("[[4, 4]]");
  auto* d = a.add_attr();
  d->set_name("d");
  d->set_double_val(0.1);
  auto* f = a.add_attr();
  f->set_name("f");
  f->set_float_val(3.3f);
  auto* b = a.add_attr();
  b->set_name("b");
  b->set_bytes_val(std::string("\x00\xff", 2));
  auto* l = a.add_attr();
  l->set_name("l");
  l->mutable_sint64_list()->add_values(-9);
  auto* z = a.add_attr();
  z->set_name("z");
  z->set_bool_val(false);
  nodes.push_back(a);
  const std::string et = dir.file("j.0.et");
  test::write_trace(et, nodes);
  std::ostringstream json;
  EXPECT_EQ(write_json(et, json), 1u);
  test::write_bytes(dir.file("j.json"), json.str());
  EXPECT_EQ(write_et_from_json(dir.file("j.json"), dir.file("back.et")), 1u);
  EXPECT_EQ(test::read_bytes(dir.file("back.et")), test::read_bytes(et));
  EXPECT_NE(json.str().find("\"COMM_COLL_NODE\""), std::string::npos) << json.str();

  test::write_bytes(dir.file("bad.json"), json.str() + "{\"id\": \"x\"}\n");
  try {
    write_et_from_json(dir.file("bad.json"), dir.file("bad.et"));
    FAIL() << "bad JSON accepted";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.where().line, 3u) << e.what();
  }
}

}  // namespace
}  // namespace fabemu::traces
