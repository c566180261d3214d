#include <gtest/gtest.h>

#include "tests/support/test_support.h"
#include "traces/attrs.h"
#include "traces/process_groups.h"

namespace fabemu::traces {
namespace {

Node with_attr(const std::string& name, auto setter) {
  Node n = test::make_node(1, ChakraProtoMsg::COMM_COLL_NODE);
  auto* a = n.add_attr();
  a->set_name(name);
  setter(*a);
  return n;
}

TEST(Attrs, ReadsEveryIntegerSlot) {
  EXPECT_EQ(attr_int(with_attr("x", [](Attribute& a) { a.set_int32_val(-7); }), "x"), -7);
  EXPECT_EQ(attr_int(with_attr("x", [](Attribute& a) { a.set_int64_val(1LL << 40); }), "x"), 1LL << 40);
  EXPECT_EQ(attr_int(with_attr("x", [](Attribute& a) { a.set_uint32_val(4000000000u); }), "x"), 4000000000LL);
  EXPECT_EQ(attr_int(with_attr("x", [](Attribute& a) { a.set_uint64_val(1048576); }), "x"), 1048576);
  EXPECT_EQ(attr_int(with_attr("x", [](Attribute& a) { a.set_sint32_val(-3); }), "x"), -3);
  EXPECT_EQ(attr_int(with_attr("x", [](Attribute& a) { a.set_sint64_val(-5); }), "x"), -5);
  EXPECT_EQ(attr_int(with_attr("x", [](Attribute& a) { a.set_fixed32_val(9); }), "x"), 9);
  EXPECT_EQ(attr_int(with_attr("x", [](Attribute& a) { a.set_fixed64_val(11); }), "x"), 11);
  EXPECT_EQ(attr_int(with_attr("x", [](Attribute& a) { a.set_sfixed32_val(-13); }), "x"), -13);
  EXPECT_EQ(attr_int(with_attr("x", [](Attribute& a) { a.set_sfixed64_val(-17); }), "x"), -17);
  EXPECT_EQ(attr_int(with_attr("x", [](Attribute& a) { a.set_bool_val(true); }), "x"), 1);
  EXPECT_EQ(attr_int(with_attr("x", [](Attribute& a) { a.set_double_val(64.0); }), "x"), 64);
  EXPECT_EQ(attr_int(with_attr("x", [](Attribute& a) { a.set_string_val("1.0"); }), "x"), 1);
  EXPECT_FALSE(attr_int(with_attr("x", [](Attribute& a) { a.set_double_val(1.5); }), "x"));
  EXPECT_FALSE(attr_int(with_attr("x", [](Attribute& a) { a.set_string_val("abc"); }), "x"));
  EXPECT_FALSE(attr_int(with_attr("x", [](Attribute& a) { a.set_uint64_val(UINT64_MAX); }), "x"));
  EXPECT_FALSE(attr_int(with_attr("x", [](Attribute& a) { a.set_int64_val(1); }), "y"));
}

TEST(Attrs, PgNameQuirks) {
  EXPECT_EQ(normalize_pg_name(""), "");
  EXPECT_EQ(normalize_pg_name("0"), "0");
  EXPECT_EQ(normalize_pg_name("0.0"), "0");
  EXPECT_TRUE(is_default_pg_name(""));
  EXPECT_TRUE(is_default_pg_name("0.0"));
  EXPECT_FALSE(is_default_pg_name("1"));
  EXPECT_EQ(normalize_pg_name("1.0"), "1");
  EXPECT_EQ(normalize_pg_name("12"), "12");
  EXPECT_EQ(normalize_pg_name("1.5"), "1.5");
  EXPECT_EQ(normalize_pg_name("tp_group"), "tp_group");
  const Node n = with_attr("pg_name", [](Attribute& a) { a.set_string_val("3.0"); });
  EXPECT_EQ(comm_info(n).pg, "3");
}

TEST(Attrs, CommTypeIgnoredOnSendRecv) {
  Node send = test::make_node(1, ChakraProtoMsg::COMM_SEND_NODE);
  auto add = [&](const char* name, int64_t v) {
    auto* a = send.add_attr();
    a->set_name(name);
    a->set_int64_val(v);
  };
  add("comm_type", 5);  // the NodeType number, as ASTRA-sim's custom collectives write it
  add("comm_size", 131072);
  auto* dst = send.add_attr();
  dst->set_name("comm_dst");
  dst->set_int32_val(3);
  const CommInfo c = comm_info(send);
  EXPECT_FALSE(c.collective.has_value());
  EXPECT_EQ(c.raw_comm_type, 5);
  EXPECT_EQ(c.size, 131072u);
  EXPECT_EQ(c.dst, 3);
  EXPECT_FALSE(c.src.has_value());

  Node coll = with_attr("comm_type", [](Attribute& a) { a.set_int64_val(7); });
  EXPECT_EQ(comm_info(coll).collective, ChakraProtoMsg::REDUCE_SCATTER);
}

TEST(Attrs, InvolvedDimFromBoolOrIntList) {
  const Node b = with_attr("involved_dim", [](Attribute& a) {
    a.mutable_bool_list()->add_values(true);
    a.mutable_bool_list()->add_values(false);
  });
  EXPECT_EQ(comm_info(b).involved_dim, (std::vector<bool>{true, false}));
  const Node i = with_attr("involved_dim", [](Attribute& a) {
    a.mutable_int32_list()->add_values(0);
    a.mutable_int32_list()->add_values(1);
  });
  EXPECT_EQ(comm_info(i).involved_dim, (std::vector<bool>{false, true}));
  EXPECT_FALSE(comm_info(test::make_node(2, ChakraProtoMsg::COMM_COLL_NODE)).involved_dim.has_value());
}

TEST(Attrs, CollectiveNames) {
  EXPECT_EQ(collective_from_name("all_reduce"), ChakraProtoMsg::ALL_REDUCE);
  EXPECT_EQ(collective_from_name("REDUCE_SCATTER_BLOCK"), ChakraProtoMsg::REDUCE_SCATTER_BLOCK);
  EXPECT_FALSE(collective_from_name("allreduce"));
  EXPECT_STREQ(collective_name(ChakraProtoMsg::BARRIER), "BARRIER");
  EXPECT_STREQ(node_type_name(ChakraProtoMsg::COMM_RECV_NODE), "COMM_RECV_NODE");
}

TEST(ProcessGroups, PythonLiteralToJson) {
  EXPECT_EQ(python_literal_to_json("[{'a': True, 'b': None, 'c': (1, 2), 'd': 'it\\'s \"x\"'}]"),
            R"([{"a": true, "b": null, "c": [1, 2], "d": "it's \"x\""}])");
  // Words inside names or strings stay as they are.
  EXPECT_EQ(python_literal_to_json("{'t': 'NoneType', 'u': NoneType, 'v': 'True'}"),
            R"({"t": "NoneType", "u": NoneType, "v": "True"})");
}

// Issue 44 item 4: a comm-group file numbering its groups from 0 defines a group "0"; collectives
// without pg_name still run on all ranks, and "0" means the file's group.
TEST(ProcessGroups, GroupZeroOfAFileIsNotTheDefaultGroup) {
  ProcessGroups groups(4);
  test::ScratchDir dir;
  test::write_bytes(dir.file("groups.json"), R"({"0": [0, 1], "1": [2, 3]})");
  groups.load_file(dir.file("groups.json"));
  EXPECT_EQ(groups.find("")->ranks, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(groups.find("")->name, "");
  EXPECT_EQ(groups.find("0")->ranks, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(groups.find("0.0")->name, "0");
  // Without a definition, or defined as all ranks (PyTorch's WORLD), "0" is the default group.
  ProcessGroups plain(4);
  EXPECT_EQ(plain.find("0"), plain.find(""));
  plain.add("0", {}, {.file = "meta"});
  EXPECT_EQ(plain.find("0"), plain.find(""));
  // "" cannot be redefined as fewer ranks.
  test::write_bytes(dir.file("empty_name.json"), R"({"": [0, 1]})");
  try {
    plain.load_file(dir.file("empty_name.json"));
    FAIL() << "a group \"\" of two ranks was accepted";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("empty_name.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("default group of all ranks"), std::string::npos) << e.what();
  }
}

TEST(ProcessGroups, FromMetadataNodeAndFile) {
  ProcessGroups groups(8);
  Node md = test::make_node(0, ChakraProtoMsg::METADATA_NODE);
  md.mutable_inputs()->set_values(
      "[{'pg_name': '0', 'pg_desc': 'default_pg', 'ranks': [], 'group_size': 8}, "
      "{'pg_name': '1.0', 'pg_desc': \"tp's\", 'ranks': [0, 1, 2, 3], 'group_size': 4, 'flag': True}]");
  EXPECT_EQ(groups.add_from_metadata_node(md, {.file = "x.0.et"}), 2u);
  ASSERT_NE(groups.find("1"), nullptr);
  EXPECT_EQ(groups.find("1.0")->ranks, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(groups.find("")->ranks.size(), 8u);
  EXPECT_EQ(groups.find("7"), nullptr);

  test::ScratchDir dir;
  test::write_bytes(dir.file("groups.json"), R"({"1": [3, 2, 1, 0], "2": [4, 5, 6, 7]})");
  groups.load_file(dir.file("groups.json"));  // same members for "1": accepted
  EXPECT_EQ(groups.find("2")->ranks, (std::vector<int64_t>{4, 5, 6, 7}));

  test::write_bytes(dir.file("bad.json"), R"({"1": [0, 1]})");
  try {
    groups.load_file(dir.file("bad.json"));
    FAIL() << "conflicting definition accepted";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("x.0.et"), std::string::npos) << e.what();
  }
  test::write_bytes(dir.file("range.json"), R"({"9": [0, 8]})");
  EXPECT_THROW(groups.load_file(dir.file("range.json")), TraceError);
  test::write_bytes(dir.file("syntax.json"), R"({"9": [0, )");
  EXPECT_THROW(groups.load_file(dir.file("syntax.json")), TraceError);
}

}  // namespace
}  // namespace fabemu::traces
