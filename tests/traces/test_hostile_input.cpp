// Hostile trace input (issue 44, items 11 and 22): small files whose content would take unbounded memory
// are refused, located, before anything is allocated for them; files that are no Chakra trace at all
// (JSON, an ASTRA-sim text workload, any text) are named for what they are. Every input is built here.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "tests/traces/wire_helpers.h"
#include "traces/json_form.h"
#include "traces/reader.h"
#include "traces/trace_set.h"
#include "traces/validate.h"

namespace fabemu::traces {
namespace {

using test::field_bytes;
using test::field_varint;
using test::frame;
using test::metadata_frame;
using test::ScratchDir;
using test::varint;
using test::write_bytes;
using test::write_gzip;

// The message of the TraceError that reading every node of `path` throws ("" if none is thrown).
std::string read_error(const std::string& path, std::optional<int64_t> rank = std::nullopt) {
  try {
    TraceReader reader(path, rank);
    Node node;
    while (reader.next(node)) {
    }
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

void expect_all(const std::string& msg, const std::vector<std::string>& needles) {
  EXPECT_FALSE(msg.empty()) << "no TraceError was thrown";
  for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "missing [" << n << "] in: " << msg;
}

// A gzip trace whose node #0 (id 7) has one length-delimited field `field` of `n` bytes `fill`: data_deps
// (5) of 1-byte varints, or a name (2). Written in 1 MiB pieces: the uncompressed file is never in memory.
// Returns the size of the Node message.
uint64_t write_gzip_big_node(const std::string& path, uint32_t field, uint64_t n, char fill) {
  gzFile f = gzopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  const std::string head = field_varint(1, 7) + field_varint(3, 4) + varint(uint64_t{field} << 3 | 2) + varint(n);
  const std::string start = metadata_frame() + varint(head.size() + n) + head;
  EXPECT_EQ(gzwrite(f, start.data(), static_cast<unsigned>(start.size())), static_cast<int>(start.size()));
  const std::string piece(size_t{1} << 20, fill);
  for (uint64_t left = n; left > 0;) {
    const auto k = static_cast<unsigned>(std::min<uint64_t>(left, piece.size()));
    EXPECT_EQ(gzwrite(f, piece.data(), k), static_cast<int>(k));
    left -= k;
  }
  EXPECT_EQ(gzclose(f), Z_OK);
  return head.size() + n;
}

// A Node with id 7 and the given extra fields (COMP_NODE).
std::string node_body(const std::string& extra) { return field_varint(1, 7) + field_varint(3, 4) + extra; }

// --- item 11: bounds on one node ----------------------------------------------------------------------

TEST(HostileInput, GzipNodeWithHundredMillionDepsIsRefusedBeforeAllocating) {
  // The file: 204 KB of gzip, one node of 209,715,200 data_deps; validate took 3.95 GB. Here 10^8.
  ScratchDir dir;
  const std::string path = dir.file("h.0.et.gz");
  const uint64_t bytes = write_gzip_big_node(path, 5, 100'000'000, '\x01');
  EXPECT_LT(test::read_bytes(path).size(), 200'000u);
  const std::string msg = read_error(path, 0);
  expect_all(msg, {path + ": rank 0: byte 8: node #0: a Node of " + std::to_string(bytes) + " bytes is declared: "
                                                                                              "more than the 64 MiB limit"});
  // validate reports it as a finding naming the file, and goes on.
  const ValidationReport report = validate_workload(find_rank_files(path));
  EXPECT_EQ(report.errors, 1u);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_NE(to_string(report.findings[0]).find("h.0.et.gz: rank 0: byte 8: node #0: a Node of"), std::string::npos)
      << to_string(report.findings[0]);
}

TEST(HostileInput, GzipNodeWithHugeNameIsRefused) {
  // The other file: 255 KB of gzip with one 250 MB name took 782 MB per rank.
  ScratchDir dir;
  const std::string path = dir.file("n.0.et.gz");
  const uint64_t bytes = write_gzip_big_node(path, 2, 250'000'000, 'a');
  EXPECT_LT(test::read_bytes(path).size(), 300'000u);
  expect_all(read_error(path, 2), {path + ": rank 2: byte 8: node #0: a Node of " + std::to_string(bytes) +
                                   " bytes is declared: more than the 64 MiB limit"});
}

TEST(HostileInput, DependenciesPerNodeAreBounded) {
  ScratchDir dir;
  const std::string path = dir.file("d.0.et");
  const std::string ok_node = frame(field_varint(1, 1) + field_varint(3, 4));
  // 2^20 data_deps is the most a node may have; one more is refused, naming the node (#1, id 7).
  const std::string at_limit = node_body(field_bytes(5, std::string(kMaxDepsPerNode, '\x01')));
  write_bytes(path, metadata_frame() + ok_node + frame(at_limit));
  EXPECT_EQ(read_error(path), "");
  const std::string over = node_body(field_bytes(5, std::string(kMaxDepsPerNode + 1, '\x01')));
  write_bytes(path, metadata_frame() + ok_node + frame(over));
  expect_all(read_error(path, 0),
             {path + ": rank 0: byte " + std::to_string(8 + ok_node.size()) + ": node #1 (id 7): the Node has 1048577 "
                                                                                "data_deps: a node may have at most 1048576"});
  // ctrl_deps, unpacked (one varint field each), are counted too.
  std::string ctrl;
  for (uint64_t i = 0; i <= kMaxDepsPerNode; ++i) ctrl += field_varint(4, 1);
  write_bytes(path, metadata_frame() + frame(node_body(ctrl)));
  expect_all(read_error(path), {"node #0 (id 7): the Node has 1048577 ctrl_deps: a node may have at most 1048576"});
}

TEST(HostileInput, NamesAttributesAndListValuesAreBounded) {
  ScratchDir dir;
  const std::string path = dir.file("a.0.et");
  write_bytes(path, metadata_frame() + frame(node_body(field_bytes(2, std::string(kMaxNameBytes, 'n')))));
  EXPECT_EQ(read_error(path), "");
  write_bytes(path, metadata_frame() + frame(node_body(field_bytes(2, std::string(kMaxNameBytes + 1, 'n')))));
  expect_all(read_error(path), {"node #0 (id 7): the Node has a name of 65537 bytes: a node name may have at most 65536 "
                                "bytes"});

  const std::string attr = field_bytes(10, field_bytes(1, "comm_size") + field_varint(9, 1));
  std::string attrs;
  for (uint64_t i = 0; i <= kMaxAttrsPerNode; ++i) attrs += attr;
  write_bytes(path, metadata_frame() + frame(node_body(attrs)));
  expect_all(read_error(path), {"node #0 (id 7): the Node has 4097 attributes: a node may have at most 4096"});

  write_bytes(path, metadata_frame() + frame(node_body(field_bytes(10, field_bytes(1, std::string(70'000, 'x'))))));
  expect_all(read_error(path), {"the Node has an attribute name of 70000 bytes: a name may have at most 65536 bytes"});

  // An int64_list (field 10 of AttributeProto), packed, and a double_list (8 bytes a value).
  const std::string ints = field_bytes(10, field_bytes(1, "l") + field_bytes(10, field_bytes(1, std::string(kMaxAttrValuesPerNode + 1, '\x02'))));
  write_bytes(path, metadata_frame() + frame(node_body(ints)));
  expect_all(read_error(path), {"the Node has 4194305 values in list attributes: a node may have at most 4194304 in all"});
  const std::string doubles = field_bytes(10, field_bytes(4, field_bytes(1, std::string(8 * 1000, '\0'))));
  write_bytes(path, metadata_frame() + frame(node_body(doubles)));
  EXPECT_EQ(read_error(path), "");
}

// --- item 22: files that are no Chakra trace ------------------------------------------------------------

TEST(HostileInput, JsonLinesTraceIsNamedWithTheConversion) {
  ScratchDir dir;
  const std::string et = dir.file("w.0.et");
  test::write_trace(et, {test::make_node(1, ChakraProtoMsg::COMP_NODE)});
  const std::string json = dir.file("j.0.et");
  {
    std::ofstream out(json);
    write_json(et, out);
  }
  expect_all(read_error(json, 0),
             {json + ": rank 0: byte 0: not a Chakra trace: it looks like a JSON Lines trace (fabemu's JSON form, the "
                     "GlobalMetadata on line 1); convert it first: fabemu trace convert --from json " + json + " OUT.et"});
  // Gzip'd, and other JSON (a system.json given as a workload).
  write_gzip(dir.file("g.0.et.gz"), test::read_bytes(json));
  expect_all(read_error(dir.file("g.0.et.gz")), {"not a Chakra trace: it looks like a JSON Lines trace"});
  write_bytes(json, "{\n  \"endpoint-delay\": 10\n}\n");
  expect_all(read_error(json), {"not a Chakra trace: it is JSON, and a Chakra trace is binary"});
}

TEST(HostileInput, AstraSimTextWorkloadIsNamedWithTheConversion) {
  ScratchDir dir;
  const std::string path = dir.file("resnet.txt");
  write_bytes(path, "DATA\n1\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 10\n");
  expect_all(read_error(path),
             {path + ": byte 0: not a Chakra trace: it looks like an ASTRA-sim text workload (line 1 names the parallelism, "
                     "\"DATA\"); convert it first: fabemu trace convert --from astra-text " + path + " OUT --ranks N"});
  write_bytes(path, "HYBRID_DLRM 3\n1\n");
  expect_all(read_error(path), {"it looks like an ASTRA-sim text workload"});
}

TEST(HostileInput, OtherTextIsNotATrace) {
  ScratchDir dir;
  const std::string path = dir.file("passwd");
  write_bytes(path, "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n");
  expect_all(read_error(path), {path + ": byte 0: not a Chakra trace: it is a text file (it starts \"root:x:0:0:root:/root:/bin/"
                                       "bash\"), and a Chakra trace is binary"});
  // Binary that is no protobuf keeps the framing error; an old-schema file keeps its hint (test_bad_input).
  write_bytes(path, std::string(10, '\x80'));
  expect_all(read_error(path), {"corrupt length prefix of a GlobalMetadata"});
}

}  // namespace
}  // namespace fabemu::traces
