// Anonymization: the real PyTorch trace keeps its graph, timing and communication while losing every op
// name, schema and tensor value; and each rule on a small synthetic node.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>

#include "tests/support/test_support.h"
#include "traces/anonymize.h"
#include "traces/attrs.h"
#include "traces/process_groups.h"

namespace fabemu::traces {
namespace {
namespace fs = std::filesystem;
using test::ScratchDir;

bool text_attr(const Attribute& a) {
  return a.value_case() == Attribute::kStringVal || a.value_case() == Attribute::kStringList ||
         a.value_case() == Attribute::kBytesVal || a.value_case() == Attribute::kBytesList;
}

std::string deps(const google::protobuf::RepeatedField<uint64_t>& d) {
  std::string s;
  for (const auto v : d) s += std::to_string(v) + ",";
  return s;
}

TEST(Anonymize, ChakraPytorchTraceKeepsGraphDropsNames) {
  FABEMU_REQUIRE_SHARED(shared);
  const std::string input = (shared / "mlcommons-chakra" / "chakra.0.et").string();
  ScratchDir dir;
  const std::string output = dir.file("anon.0.et");
  const AnonymizeStats stats = anonymize_file(input, output);

  // The original contains op names and devices; the output none of them.
  const std::string before = test::read_bytes(input);
  const std::string after = test::read_bytes(output);
  ASSERT_NE(before.find("aten::"), std::string::npos);
  ASSERT_NE(before.find("cuda:0"), std::string::npos);
  EXPECT_EQ(after.find("aten::"), std::string::npos);
  EXPECT_EQ(after.find("cuda:0"), std::string::npos);
  EXPECT_EQ(after.find("Tensor input"), std::string::npos);  // op_schema text
  EXPECT_EQ(after.find("2023-12-14"), std::string::npos);    // metadata "time"
  EXPECT_LT(after.size(), before.size());

  TraceReader a(input);
  TraceReader b(output);
  // Metadata: only the schema attribute survives.
  EXPECT_EQ(b.metadata().version(), a.metadata().version());
  ASSERT_EQ(b.metadata().attr_size(), 1);
  EXPECT_EQ(b.metadata().attr(0).name(), "schema");
  EXPECT_EQ(b.metadata().attr(0).string_val(), "1.0.1");
  const uint64_t metadata_removed = static_cast<uint64_t>(a.metadata().attr_size() - 1);
  EXPECT_EQ(metadata_removed, 4u);  // pid, time, start_ts, finish_ts

  Node x;
  Node y;
  uint64_t nodes = 0;
  uint64_t expected_removed = metadata_removed;
  uint64_t expected_cleared = 0;
  uint64_t typed_collectives = 0;
  while (a.next(x)) {
    ASSERT_TRUE(b.next(y)) << "output ends early at node " << nodes;
    SCOPED_TRACE(fmt::format("node {}", x.id()));
    ++nodes;
    EXPECT_EQ(y.id(), x.id());
    EXPECT_EQ(y.type(), x.type());
    EXPECT_EQ(deps(y.data_deps()), deps(x.data_deps()));
    EXPECT_EQ(deps(y.ctrl_deps()), deps(x.ctrl_deps()));
    EXPECT_EQ(y.duration_micros(), x.duration_micros());
    EXPECT_EQ(y.start_time_micros(), x.start_time_micros());
    EXPECT_EQ(y.name(), fmt::format("{}_{}", node_type_name(x.type()), x.id()));
    EXPECT_NE(y.name(), x.name());
    // Shapes and types stay, values go.
    EXPECT_EQ(y.has_inputs(), x.has_inputs());
    EXPECT_EQ(y.inputs().shapes(), x.inputs().shapes());
    EXPECT_EQ(y.inputs().types(), x.inputs().types());
    EXPECT_EQ(y.outputs().shapes(), x.outputs().shapes());
    EXPECT_EQ(y.outputs().types(), x.outputs().types());
    EXPECT_EQ(y.inputs().values(), "");
    EXPECT_EQ(y.outputs().values(), "");
    expected_cleared += !x.inputs().values().empty();
    expected_cleared += !x.outputs().values().empty();
    // Communication is unchanged.
    const CommInfo cx = comm_info(x);
    const CommInfo cy = comm_info(y);
    EXPECT_EQ(cy.collective, cx.collective);
    EXPECT_EQ(cy.raw_comm_type, cx.raw_comm_type);
    EXPECT_EQ(cy.size, cx.size);
    EXPECT_EQ(cy.involved_dim, cx.involved_dim);
    EXPECT_EQ(cy.is_cpu_op, cx.is_cpu_op);
    EXPECT_EQ(cy.pg, cx.pg);
    typed_collectives += cy.collective.has_value();
    // Attributes: the non-text ones, in order, without doc strings.
    int k = 0;
    for (const Attribute& attr : x.attr()) {
      if (attr.name() == "op_schema" || (text_attr(attr) && attr.name() != "pg_name")) {
        ++expected_removed;
        continue;
      }
      ASSERT_LT(k, y.attr_size());
      EXPECT_EQ(y.attr(k).name(), attr.name());
      EXPECT_EQ(y.attr(k).value_case(), attr.value_case());
      EXPECT_EQ(y.attr(k).doc_string(), "");
      Attribute expected = attr;
      expected.clear_doc_string();
      EXPECT_EQ(y.attr(k).SerializeAsString(), expected.SerializeAsString());
      ++k;
    }
    EXPECT_EQ(y.attr_size(), k);
  }
  EXPECT_FALSE(b.next(y)) << "output has extra nodes";
  EXPECT_EQ(nodes, 3664u);
  EXPECT_EQ(typed_collectives, 7u);
  EXPECT_EQ(stats.nodes, 3664u);
  EXPECT_EQ(stats.names_replaced, 3664u);
  EXPECT_EQ(stats.attrs_removed, expected_removed);
  EXPECT_GT(stats.attrs_removed, 2000u);  // one op_schema per CPU op
  EXPECT_EQ(stats.values_cleared, expected_cleared);
  EXPECT_GT(stats.values_cleared, 3000u);
}

TEST(Anonymize, GzipOutput) {
  ScratchDir dir;
  test::write_trace(dir.file("in.et"), {test::make_node(5, ChakraProtoMsg::COMP_NODE),
                                        test::make_node(6, ChakraProtoMsg::COMM_SEND_NODE, {5})});
  const AnonymizeStats stats = anonymize_file(dir.file("in.et"), dir.file("out.et.gz"));
  EXPECT_EQ(stats.nodes, 2u);
  EXPECT_EQ(stats.names_replaced, 2u);
  const std::string bytes = test::read_bytes(dir.file("out.et.gz"));
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1fu);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8bu);
  TraceReader r(dir.file("out.et.gz"));
  EXPECT_TRUE(r.compressed());
  EXPECT_EQ(r.metadata().version(), "0.0.4");
  Node n;
  ASSERT_TRUE(r.next(n));
  EXPECT_EQ(n.name(), "COMP_NODE_5");
  ASSERT_TRUE(r.next(n));
  EXPECT_EQ(n.name(), "COMM_SEND_NODE_6");
  ASSERT_EQ(n.data_deps_size(), 1);
  EXPECT_EQ(n.data_deps(0), 5u);
  EXPECT_FALSE(r.next(n));

  // And back from gzip to plain.
  anonymize_file(dir.file("out.et.gz"), dir.file("again.et"));
  TraceReader plain(dir.file("again.et"));
  EXPECT_FALSE(plain.compressed());
}

Attribute* add(Node& n, const std::string& name) {
  Attribute* a = n.add_attr();
  a->set_name(name);
  a->set_doc_string("secret doc for " + name);
  return a;
}

TEST(Anonymize, EveryNodeRule) {
  Node n;
  n.set_id(216);
  n.set_name("aten::secret_op(3)");
  n.set_type(ChakraProtoMsg::COMP_NODE);
  n.add_ctrl_deps(3);
  n.add_data_deps(100);
  n.add_data_deps(101);
  n.set_start_time_micros(1234);
  n.set_duration_micros(56);
  n.mutable_inputs()->set_values("[[4, 5, 0, 64, 4, 'cuda:0'], 0.5]");
  n.mutable_inputs()->set_shapes("[[64], []]");
  n.mutable_inputs()->set_types("['Tensor(float)', 'Double']");
  n.mutable_outputs()->set_shapes("[[64]]");  // no values: nothing to clear
  n.mutable_outputs()->set_types("['Tensor(float)']");
  add(n, "op_schema")->set_string_val("aten::secret_op(Tensor self) -> Tensor");
  add(n, "comm_type")->set_int64_val(0);
  add(n, "pg_name")->set_string_val("1.0");
  add(n, "label")->set_string_val("proprietary");
  add(n, "tags")->mutable_string_list()->add_values("a");
  add(n, "blob")->set_bytes_val("\x01\x02");
  add(n, "blobs")->mutable_bytes_list()->add_values("x");
  add(n, "comm_size")->set_uint64_val(1u << 20);
  add(n, "op_schema")->set_int64_val(7);  // removed whatever its type
  add(n, "is_cpu_op")->set_bool_val(true);
  add(n, "involved_dim")->mutable_bool_list()->add_values(true);
  add(n, "num_ops")->set_double_val(2.5e9);
  add(n, "tensor_size")->set_int32_val(4096);
  add(n, "empty");  // a name without a value is kept

  AnonymizeStats stats;
  anonymize_node(n, stats);

  EXPECT_EQ(n.id(), 216u);
  EXPECT_EQ(n.name(), "COMP_NODE_216");
  EXPECT_EQ(n.type(), ChakraProtoMsg::COMP_NODE);
  EXPECT_EQ(deps(n.ctrl_deps()), "3,");
  EXPECT_EQ(deps(n.data_deps()), "100,101,");
  EXPECT_EQ(n.start_time_micros(), 1234u);
  EXPECT_EQ(n.duration_micros(), 56u);
  EXPECT_EQ(n.inputs().values(), "");
  EXPECT_EQ(n.inputs().shapes(), "[[64], []]");
  EXPECT_EQ(n.inputs().types(), "['Tensor(float)', 'Double']");
  EXPECT_EQ(n.outputs().shapes(), "[[64]]");
  EXPECT_EQ(n.outputs().types(), "['Tensor(float)']");

  std::vector<std::string> names;
  for (const Attribute& a : n.attr()) {
    names.push_back(a.name());
    EXPECT_EQ(a.doc_string(), "") << a.name();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"comm_type", "pg_name", "comm_size", "is_cpu_op", "involved_dim",
                                             "num_ops", "tensor_size", "empty"}));
  EXPECT_EQ(n.attr(1).string_val(), "1.0");
  EXPECT_EQ(n.attr(2).uint64_val(), 1u << 20);
  EXPECT_EQ(n.attr(5).double_val(), 2.5e9);
  EXPECT_EQ(n.attr(6).int32_val(), 4096);
  EXPECT_EQ(stats.nodes, 1u);
  EXPECT_EQ(stats.names_replaced, 1u);
  EXPECT_EQ(stats.attrs_removed, 6u);
  EXPECT_EQ(stats.values_cleared, 1u);
  EXPECT_EQ(n.SerializeAsString().find("secret"), std::string::npos);
  EXPECT_EQ(n.SerializeAsString().find("proprietary"), std::string::npos);

  // A second pass changes nothing more.
  const std::string once = n.SerializeAsString();
  anonymize_node(n, stats);
  EXPECT_EQ(n.SerializeAsString(), once);
  EXPECT_EQ(stats.nodes, 2u);
  EXPECT_EQ(stats.names_replaced, 1u);
  EXPECT_EQ(stats.attrs_removed, 6u);
  EXPECT_EQ(stats.values_cleared, 1u);
}

TEST(Anonymize, OutputValuesAndUnnamedNodes) {
  Node n;
  n.set_id(0);
  n.set_type(ChakraProtoMsg::COMM_RECV_NODE);
  n.mutable_outputs()->set_values("[[1, 2, 0, 8, 4, 'cuda:3']]");
  AnonymizeStats stats;
  anonymize_node(n, stats);
  EXPECT_EQ(n.name(), "COMM_RECV_NODE_0");
  EXPECT_TRUE(n.has_outputs());
  EXPECT_EQ(n.outputs().values(), "");
  EXPECT_FALSE(n.has_inputs());
  EXPECT_EQ(stats.names_replaced, 1u);
  EXPECT_EQ(stats.values_cleared, 1u);
}

TEST(Anonymize, MetadataKeepsVersionAndSchema) {
  GlobalMetadata md;
  md.set_version("0.0.4");
  Attribute* pid = md.add_attr();
  pid->set_name("pid");
  pid->set_uint64_val(114598);
  Attribute* schema = md.add_attr();
  schema->set_name("schema");
  schema->set_string_val("1.0.1");
  schema->set_doc_string("collected on host secret-box");
  Attribute* input = md.add_attr();
  input->set_name("input_file");
  input->set_string_val("DATA\n1\nsecret_layer ...");
  anonymize_metadata(md);
  EXPECT_EQ(md.version(), "0.0.4");
  ASSERT_EQ(md.attr_size(), 1);
  EXPECT_EQ(md.attr(0).name(), "schema");
  EXPECT_EQ(md.attr(0).string_val(), "1.0.1");
  EXPECT_EQ(md.attr(0).doc_string(), "");
}

TEST(Anonymize, MetadataNodeKeepsProcessGroupMembership) {
  Node n;
  n.set_id(1);
  n.set_name("[pytorch|profiler|execution_trace|process]");
  n.set_type(ChakraProtoMsg::METADATA_NODE);
  n.mutable_inputs()->set_values(
      "[{'pg_name': '0', 'pg_desc': 'default_pg', 'backend_config': 'cuda:nccl', 'ranks': [], 'group_size': 4}, "
      "{'pg_name': '1', 'pg_desc': 'secret_tp_group', 'backend_config': 'cuda:nccl', 'ranks': [0, 1], "
      "'group_size': 2}]");
  n.mutable_inputs()->set_types("['GenericList[Dict]']");
  AnonymizeStats stats;
  anonymize_node(n, stats);
  EXPECT_EQ(n.name(), "METADATA_NODE_1");
  EXPECT_EQ(n.inputs().values(),
            "[{\"group_size\":4,\"pg_name\":\"0\",\"ranks\":[]},{\"group_size\":2,\"pg_name\":\"1\",\"ranks\":[0,1]}]");
  EXPECT_EQ(n.inputs().types(), "['GenericList[Dict]']");
  EXPECT_EQ(stats.values_cleared, 1u);
  // The reduced list still defines the groups.
  ProcessGroups groups(4);
  EXPECT_EQ(groups.add_from_metadata_node(n, {}), 2u);
  ASSERT_NE(groups.find("1"), nullptr);
  EXPECT_EQ(groups.find("1")->ranks, (std::vector<int64_t>{0, 1}));

  // Other METADATA_NODE values, and unreadable group lists, are cleared.
  Node other;
  other.set_type(ChakraProtoMsg::METADATA_NODE);
  other.mutable_inputs()->set_values("['some secret text']");
  anonymize_node(other, stats);
  EXPECT_EQ(other.inputs().values(), "");
  Node broken;
  broken.set_type(ChakraProtoMsg::METADATA_NODE);
  broken.mutable_inputs()->set_values("[{'pg_name': 'secret' ");
  anonymize_node(broken, stats);
  EXPECT_EQ(broken.inputs().values(), "");
  EXPECT_EQ(stats.values_cleared, 3u);
  // On other node types a value mentioning pg_name is cleared like any other.
  Node comp;
  comp.set_type(ChakraProtoMsg::COMP_NODE);
  comp.mutable_inputs()->set_values("[{'pg_name': '1', 'ranks': [0]}]");
  anonymize_node(comp, stats);
  EXPECT_EQ(comp.inputs().values(), "");
}

TEST(Anonymize, RefusesToOverwriteItsInput) {
  ScratchDir dir;
  test::write_trace(dir.file("t.et"), {test::make_node(1, ChakraProtoMsg::COMP_NODE)});
  const std::string original = test::read_bytes(dir.file("t.et"));
  try {
    anonymize_file(dir.file("t.et"), dir.file("t.et"));
    FAIL() << "overwrote its input";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("the output is the input"), std::string::npos) << e.what();
  }
  // Also through another spelling of the same path.
  EXPECT_THROW(anonymize_file(dir.file("t.et"), (dir.path() / "." / "t.et").string()), TraceError);
  EXPECT_EQ(test::read_bytes(dir.file("t.et")), original);
}

TEST(Anonymize, BadInputIsATraceErrorAndLeavesNoOutput) {
  ScratchDir dir;
  EXPECT_THROW(anonymize_file(dir.file("missing.et"), dir.file("out.et")), TraceError);
  EXPECT_FALSE(fs::exists(dir.file("out.et")));
  // A file cut inside its second node: the error names the input, the partial output is removed.
  test::write_trace(dir.file("t.et"), {test::make_node(1, ChakraProtoMsg::COMP_NODE),
                                       test::make_node(2, ChakraProtoMsg::COMP_NODE, {1})});
  std::string bytes = test::read_bytes(dir.file("t.et"));
  bytes.resize(bytes.size() - 3);
  test::write_bytes(dir.file("cut.et"), bytes);
  try {
    anonymize_file(dir.file("cut.et"), dir.file("out.et"));
    FAIL() << "accepted a truncated file";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.where().file, dir.file("cut.et"));
  }
  EXPECT_FALSE(fs::exists(dir.file("out.et")));
}

}  // namespace
}  // namespace fabemu::traces
