// Bad and hostile trace input: every problem must surface as exactly one TraceError whose message
// names the file and the byte offset, node or rank, and says what is wrong; never a crash, a hang
// or silently wrong nodes. Inputs are made by hand (or written and then damaged) in a ScratchDir.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/test_support.h"
#include "tests/traces/wire_helpers.h"
#include "traces/reader.h"
#include "traces/resolver.h"
#include "traces/trace_set.h"
#include "traces/writer.h"

namespace fabemu::traces {
namespace {

using ChakraProtoMsg::COMM_COLL_NODE;
using ChakraProtoMsg::COMP_NODE;
using ChakraProtoMsg::INVALID_NODE;
using test::make_node;
using test::read_bytes;
using test::ScratchDir;
using test::write_bytes;
using test::write_trace;

using test::field_bytes;
using test::field_varint;
using test::frame;
using test::metadata_frame;
using test::varint;
using test::write_gzip;

// --- running the code under test ------------------------------------------------------------------

// Opens `path` and reads every node; returns how many.
uint64_t read_all(const std::string& path, std::optional<int64_t> rank = std::nullopt) {
  TraceReader reader(path, rank);
  Node node;
  while (reader.next(node)) {
  }
  return reader.nodes_read();
}

// Issues and finishes every node of `path` in order; returns the resolver's stats.
ResolverStats resolve_all(const std::string& path, ResolverOptions options = {},
                          std::vector<uint64_t>* order = nullptr) {
  TraceReader reader(path);
  DependencyResolver resolver(reader, options);
  while (const Node* n = resolver.next()) {
    if (order != nullptr) order->push_back(n->id());
    resolver.finish(*n);
  }
  EXPECT_TRUE(resolver.done()) << path;
  return resolver.stats();
}

// Runs `f`, which must throw exactly one TraceError (any other exception escapes and fails the test).
TraceError expect_trace_error(const std::function<void()>& f) {
  int thrown = 0;
  TraceError caught({}, "no TraceError was thrown");
  try {
    f();
  } catch (const TraceError& e) {
    ++thrown;
    caught = e;
  }
  EXPECT_EQ(thrown, 1) << "expected one TraceError";
  return caught;
}

// Every needle must appear in the message.
void expect_mentions(const TraceError& e, const std::vector<std::string>& needles) {
  const std::string msg = e.what();
  for (const auto& needle : needles) {
    EXPECT_NE(msg.find(needle), std::string::npos) << "missing \"" << needle << "\" in: " << msg;
  }
}

// The message starts with the file and carries the byte offset of the frame at fault.
void expect_at(const TraceError& e, const std::string& path, uint64_t offset) {
  EXPECT_EQ(e.where().file, path);
  EXPECT_EQ(e.where().offset, offset);
  expect_mentions(e, {path + ": ", "byte " + std::to_string(offset)});
  EXPECT_EQ(std::string(e.what()).rfind(path, 0), 0u) << e.what();
}

// Three named COMP nodes framed after the metadata; `offsets` gets each node frame's byte offset.
std::string three_nodes(std::vector<uint64_t>& offsets) {
  std::string bytes = metadata_frame();
  for (uint64_t id = 0; id < 3; ++id) {
    offsets.push_back(bytes.size());
    bytes += frame(make_node(id, COMP_NODE, id == 0 ? std::vector<uint64_t>{} : std::vector<uint64_t>{id - 1}));
  }
  return bytes;
}

// --- framing ----------------------------------------------------------------------------------------

TEST(BadInput, HandFramingMatchesTraceWriter) {
  // The offsets used below assume our hand framing is what TraceWriter writes.
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, {make_node(0, COMP_NODE), make_node(1, COMP_NODE, {0}), make_node(2, COMP_NODE, {1})});
  std::vector<uint64_t> offsets;
  EXPECT_EQ(read_bytes(path), three_nodes(offsets));
  EXPECT_EQ(offsets.front(), 8u);
}

TEST(BadInput, TruncatedInsideNodeBody) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  std::vector<uint64_t> at;
  const std::string good = three_nodes(at);
  write_bytes(path, good.substr(0, at[2] + 3));  // the length prefix and 2 bytes of the last node
  const uint64_t declared = good.size() - at[2] - 1;
  const TraceError e = expect_trace_error([&] { read_all(path); });
  expect_at(e, path, at[2]);
  EXPECT_EQ(e.where().node_index, 2u);
  expect_mentions(e, {"node #2", "truncated", "Node of " + std::to_string(declared) + " bytes",
                      "only 2 bytes remain"});
}

TEST(BadInput, TruncatedInsideGlobalMetadata) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_bytes(path, metadata_frame().substr(0, 4));
  const TraceError e = expect_trace_error([&] { read_all(path, 3); });
  expect_at(e, path, 0);
  expect_mentions(e, {"rank 3", "GlobalMetadata of 7 bytes", "only 3 bytes remain", "truncated"});
}

TEST(BadInput, TruncatedInsideLengthPrefix) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  Node big = make_node(1, COMP_NODE);
  big.set_name(std::string(300, 'x'));  // body > 127 bytes: a 2-byte length prefix
  const std::string good = metadata_frame() + frame(make_node(0, COMP_NODE)) + frame(big);
  const uint64_t at = metadata_frame().size() + frame(make_node(0, COMP_NODE)).size();
  ASSERT_GE(static_cast<uint8_t>(good[at]), 0x80u);
  write_bytes(path, good.substr(0, at + 1));
  const TraceError e = expect_trace_error([&] { read_all(path); });
  expect_at(e, path, at);
  expect_mentions(e, {"node #1", "ends inside the length prefix of a Node", "truncated"});
}

TEST(BadInput, CorruptVarintLengthPrefix) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  // Six continuation bytes: no varint32 is that long.
  write_bytes(path, metadata_frame() + frame(make_node(0, COMP_NODE)) + std::string(6, '\xff') + "\x01");
  const uint64_t at = metadata_frame().size() + frame(make_node(0, COMP_NODE)).size();
  const TraceError e = expect_trace_error([&] { read_all(path); });
  expect_at(e, path, at);
  expect_mentions(e, {"node #1", "corrupt length prefix", "varint longer than 5 bytes"});
}

TEST(BadInput, CorruptVarintAsFirstMessage) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_bytes(path, std::string(10, '\x80'));
  const TraceError e = expect_trace_error([&] { read_all(path); });
  expect_at(e, path, 0);
  expect_mentions(e, {"corrupt length prefix of a GlobalMetadata", "varint longer than 5 bytes"});
}

TEST(BadInput, MetadataErrorsDoNotNameANode) {
  // The GlobalMetadata is not a node: "node #0" would send the user to the first Node instead.
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_bytes(path, metadata_frame().substr(0, 4));
  const TraceError e = expect_trace_error([&] { read_all(path); });
  expect_at(e, path, 0);
  expect_mentions(e, {"GlobalMetadata"});
  EXPECT_FALSE(e.where().node_index) << "regression: framing errors in the GlobalMetadata frame carry node_index 0 "
                    "(read_frame passes nodes_read_ for every frame), so the message says 'node #0'. Got: "
                 << e.what();
  EXPECT_EQ(std::string(e.what()).find("node #"), std::string::npos) << e.what();
}

TEST(BadInput, LengthLargerThanFile) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_bytes(path, metadata_frame() + varint(1000) + std::string(10, '\x08'));
  const TraceError e = expect_trace_error([&] { read_all(path); });
  expect_at(e, path, 8);
  expect_mentions(e, {"node #0", "Node of 1000 bytes is declared", "only 10 bytes remain", "truncated"});
}

TEST(BadInput, LengthLargerThanGzipFile) {
  // The uncompressed size of a gzip file is unknown up front: the reader finds out by trying.
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_gzip(path, metadata_frame() + varint(50u << 20) + std::string(10, '\x08'));
  const TraceError e = expect_trace_error([&] { read_all(path); });
  expect_at(e, path, 8);
  expect_mentions(e, {"Node of 52428800 bytes is declared", "only 10 bytes remain", "truncated"});
}

TEST(BadInput, HugeLengthIsRejectedBeforeAllocating) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  for (const uint64_t len : {uint64_t{kMaxMessageBytes} + 1, uint64_t{300} << 20, (uint64_t{1} << 35) - 1}) {
    write_bytes(path, metadata_frame() + varint(len) + std::string(16, '\x08'));
    const TraceError e = expect_trace_error([&] { read_all(path); });
    expect_at(e, path, 8);
    expect_mentions(e, {"a Node of " + std::to_string(len) + " bytes is declared", "64 MiB limit"});
  }
}

// --- message contents -------------------------------------------------------------------------------

TEST(BadInput, UnknownNodeType) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  // id 5, name "x", type 42
  write_bytes(path, metadata_frame() + frame(make_node(4, COMP_NODE)) +
                        frame(field_varint(1, 5) + field_bytes(2, "x") + field_varint(3, 42)));
  const uint64_t at = 8 + frame(make_node(4, COMP_NODE)).size();
  const TraceError e = expect_trace_error([&] { read_all(path, 0); });
  expect_at(e, path, at);
  EXPECT_EQ(e.where().node_id, 5u);
  expect_mentions(e, {"rank 0", "node #1 (id 5)", "unknown node type 42"});
}

TEST(BadInput, NegativeNodeType) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_bytes(path, metadata_frame() + frame(field_varint(1, 9) + field_varint(3, static_cast<uint64_t>(-1))));
  const TraceError e = expect_trace_error([&] { read_all(path); });
  expect_at(e, path, 8);
  expect_mentions(e, {"node #0 (id 9)", "unknown node type -1"});
}

TEST(BadInput, NonUtf8NameIsExplained) {
  // proto3 `string` fields must be UTF-8; a converter that wrote Latin-1 names makes the parse fail.
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_bytes(path, metadata_frame() + frame(field_varint(1, 4) + field_bytes(2, "caf\xe9") + field_varint(3, 4)));
  const TraceError e = expect_trace_error([&] { read_all(path); });
  expect_at(e, path, 8);
  expect_mentions(e, {"node #0", "not a valid Node"});
  EXPECT_FALSE(std::string(e.what()).find("UTF-8") == std::string::npos) << "regression (unclear message): a Node whose name is not UTF-8 is reported as 'not a "
                    "valid Node message ...; the file is corrupt' without saying which field or why (only "
                    "libprotobuf's own stderr log says 'invalid UTF-8'). Got: "
                 << e.what();
}

// A node of the pre-October-2023 proto2 layout (no GlobalMetadata in those files).
std::string old_node(uint64_t id, uint64_t type, const std::vector<uint64_t>& parents, bool comm) {
  std::string b = field_varint(1, id) + field_bytes(2, "aten::conv2d_" + std::to_string(id)) + field_varint(3, type);
  for (const uint64_t p : parents) b += field_varint(4, p);  // repeated, unpacked
  b += field_varint(6, 4096);                               // tensor_size
  b += field_varint(7, 17);                                 // simulated_run_time
  if (!comm) return b + field_varint(12, 1000000);          // num_ops
  b += field_varint(13, 0);                                 // comm_type
  for (const bool d : {true, false, true}) b += field_varint(14, d ? 1 : 0);  // involved_dim, unpacked
  b += field_varint(16, 0) + field_varint(17, 1) + field_varint(18, 1 << 20) + field_varint(19, 7);
  return b;
}

TEST(BadInput, OldSchemaFile) {
  ScratchDir dir;
  const std::string path = dir.file("old.0.et");
  write_bytes(path, frame(old_node(0, 4, {}, false)) + frame(old_node(1, 4, {0}, false)) +
                        frame(old_node(2, 7, {0, 1}, true)));
  const TraceError e = expect_trace_error([&] { read_all(path, 0); });
  expect_at(e, path, 0);
  expect_mentions(e, {"rank 0", "GlobalMetadata", "looks like a trace written before October 2023",
                      "old proto2 numbering"});
}

TEST(BadInput, OldSchemaFileWithoutName) {
  // Without the name, the first message parses as a GlobalMetadata with unknown fields.
  ScratchDir dir;
  const std::string path = dir.file("old.0.et");
  write_bytes(path, frame(field_varint(1, 0) + field_varint(3, 4) + field_varint(7, 17)));
  const TraceError e = expect_trace_error([&] { read_all(path); });
  expect_at(e, path, 0);
  expect_mentions(e, {"not a GlobalMetadata (field 1 with wire type varint)", "before October 2023"});
}

TEST(BadInput, OldSchemaNodesAfterCurrentMetadata) {
  // Someone prepended a current GlobalMetadata to old nodes: the old-only fields give it away.
  ScratchDir dir;
  const std::string path = dir.file("old.0.et");
  write_bytes(path, metadata_frame() + frame(old_node(0, 7, {}, true)));
  const TraceError e = expect_trace_error([&] { read_all(path); });
  expect_at(e, path, 8);
  EXPECT_EQ(e.where().node_id, 0u);
  expect_mentions(e, {"node #0 (id 0)", "field 13 with wire type varint", "before October 2023"});  // comm_type
}

TEST(BadInput, UnknownFieldWireTypeIsNamedCorrectly) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  // Unknown field 11, length-delimited.
  write_bytes(path, metadata_frame() + frame(field_varint(1, 3) + field_bytes(11, "abc")));
  const TraceError e = expect_trace_error([&] { read_all(path); });
  expect_at(e, path, 8);
  const std::string msg = e.what();
  EXPECT_FALSE(msg.find("field 11 with wire type group start") != std::string::npos) << "regression: reader.cpp describe_unknown() maps UnknownField::Type through "
                    "{0,1,2,3,5}, but the enum order is VARINT, FIXED32, FIXED64, LENGTH_DELIMITED, "
                    "GROUP (table should be {0,5,1,2,3}); a length-delimited field is called 'group "
                    "start'. Got: "
                 << msg;
  expect_mentions(e, {"node #0 (id 3)", "field 11 with wire type length-delimited", "before October 2023"});
}

// --- files and prefixes -----------------------------------------------------------------------------

TEST(BadInput, MissingRankFile) {
  ScratchDir dir;
  const std::string prefix = dir.file("job");
  write_trace(rank_file_path(prefix, 0), {make_node(0, COMP_NODE)});
  write_trace(rank_file_path(prefix, 2), {make_node(0, COMP_NODE)});
  const TraceError e = expect_trace_error([&] { find_rank_files(prefix); });
  EXPECT_EQ(e.where().file, prefix + ".1.et");
  EXPECT_EQ(e.where().rank, 1);
  expect_mentions(e, {prefix + ".1.et", "rank 1", "missing rank file"});
}

TEST(BadInput, NonExistentPrefix) {
  ScratchDir dir;
  const std::string prefix = dir.file("nothing");
  const TraceError e = expect_trace_error([&] { find_rank_files(prefix); });
  EXPECT_EQ(e.where().file, prefix);
  expect_mentions(e, {"no trace files found", prefix + ".0.et"});

  const std::string in_missing_dir = dir.file("no/such/dir/job");
  expect_mentions(expect_trace_error([&] { find_rank_files(in_missing_dir); }),
                  {in_missing_dir, "no trace files found"});

  const TraceError r = expect_trace_error([&] { TraceReader reader(prefix + ".0.et"); });
  EXPECT_EQ(r.where().file, prefix + ".0.et");
  expect_mentions(r, {prefix + ".0.et", "does not exist"});
}

TEST(BadInput, EmptyFile) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_bytes(path, "");
  const TraceError e = expect_trace_error([&] { read_all(path, 2); });
  expect_at(e, path, 0);
  expect_mentions(e, {"rank 2", "empty file"});
}

TEST(BadInput, ErrorsFromTheByteLayerNameTheRank) {
  // reader.h: "`rank` (when known) goes into every error message".
  ScratchDir dir;
  const std::string missing = dir.file("t.5.et");
  const TraceError e = expect_trace_error([&] { TraceReader reader(missing, 5); });
  expect_mentions(e, {missing, "does not exist"});
  EXPECT_FALSE(!e.where().rank) << "regression: errors thrown by ByteSource (missing file, gzip damage, read errors) "
                    "carry no rank although TraceReader was given one; TraceReader should catch and "
                    "rethrow them with location_at(). Got: "
                 << e.what();
  expect_mentions(e, {"rank 5"});
}

// --- gzip -------------------------------------------------------------------------------------------

std::vector<Node> many_nodes(uint64_t count) {
  std::vector<Node> nodes;
  for (uint64_t id = 0; id < count; ++id) {
    Node n = make_node(id, id % 50 == 49 ? COMM_COLL_NODE : COMP_NODE,
                       id == 0 ? std::vector<uint64_t>{} : std::vector<uint64_t>{id - 1});
    n.set_duration_micros(id * 7919 % 1000);
    nodes.push_back(std::move(n));
  }
  return nodes;
}

TEST(BadInput, GoodGzipReadsLikePlain) {
  ScratchDir dir;
  const std::string plain = dir.file("p.0.et");
  const std::string gz = dir.file("g.0.et");
  write_trace(plain, many_nodes(3000));
  write_trace(gz, many_nodes(3000), true);
  ASSERT_EQ(static_cast<uint8_t>(read_bytes(gz)[0]), 0x1fu);
  TraceReader a(plain);
  TraceReader b(gz);
  EXPECT_FALSE(a.compressed());
  EXPECT_TRUE(b.compressed());
  EXPECT_EQ(a.metadata().SerializeAsString(), b.metadata().SerializeAsString());
  Node na;
  Node nb;
  uint64_t count = 0;
  for (;;) {
    const bool more_a = a.next(na);
    const bool more_b = b.next(nb);
    ASSERT_EQ(more_a, more_b) << "at node " << count;
    if (!more_a) break;
    ASSERT_EQ(na.SerializeAsString(), nb.SerializeAsString()) << "at node " << count;
    EXPECT_EQ(a.last_location().offset, b.last_location().offset);
    ++count;
  }
  EXPECT_EQ(count, 3000u);
  EXPECT_EQ(a.bytes_read(), b.bytes_read());
  EXPECT_EQ(a.bytes_read(), read_bytes(plain).size());
}

TEST(BadInput, GzipTruncated) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, many_nodes(5000), true);
  const std::string gz = read_bytes(path);
  ASSERT_GT(gz.size(), 1000u);
  for (const size_t keep : {gz.size() / 2, gz.size() - 4, size_t{20}}) {
    SCOPED_TRACE("kept " + std::to_string(keep) + " of " + std::to_string(gz.size()) + " bytes");
    write_bytes(path, gz.substr(0, keep));
    const TraceError e = expect_trace_error([&] { read_all(path); });
    EXPECT_EQ(e.where().file, path);
    EXPECT_TRUE(e.where().offset.has_value());
    expect_mentions(e, {path + ": byte ", "gzip", "truncated"});
  }
}

TEST(BadInput, GzipCorruptInTheMiddle) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, many_nodes(5000), true);
  std::string gz = read_bytes(path);
  for (size_t i = gz.size() / 2; i < gz.size() / 2 + 32; ++i) gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  write_bytes(path, gz);
  const TraceError e = expect_trace_error([&] { read_all(path); });
  EXPECT_EQ(e.where().file, path);
  EXPECT_TRUE(e.where().offset.has_value());
  const std::string msg = e.what();
  expect_mentions(e, {path + ": byte "});
  EXPECT_FALSE(msg.find("gzip") == std::string::npos) << "regression: a corrupt gzip stream is reported as 'read failed: <zlib message>' "
                    "(byte_source.cpp, gzread() < 0 branch) without saying the gzip data is damaged, and at 'byte 0' when zlib discards the whole decoded block on a CRC mismatch. Got: "
                 << msg;
  expect_mentions(e, {"gzip", "damaged"});
}

// The compressed bytes of `bytes` as one gzip member (what gzip writes), at level 6.
std::string gzip_member(const std::string& bytes) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, bytes.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Reads `path` node by node until its end or an error; returns the nodes read before it, the error in
// `error` ("" when none).
uint64_t read_until_error(const std::string& path, std::string& error) {
  TraceReader reader(path);
  Node node;
  try {
    while (reader.next(node)) {
    }
  } catch (const TraceError& e) {
    error = e.what();
  }
  return reader.nodes_read();
}

TEST(BadInput, GzipTrailingDataIsNotIgnored) {
  // Bytes after the end of the gzip stream (here: plain node frames appended to a .gz trace). zlib's
  // gzread drops them without a word; the reader reads every node of the stream, then fails naming the
  // file, where the gzip data ends and how many bytes follow.
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, many_nodes(10), true);
  const std::string gz = read_bytes(path);
  const std::string tail = frame(make_node(10, COMP_NODE, {9})) + frame(make_node(11, COMP_NODE, {10}));
  write_bytes(path, gz + tail);
  std::string error;
  EXPECT_EQ(read_until_error(path, error), 10u) << "the stream's nodes come first";
  const TraceError e = expect_trace_error([&] { read_all(path); });
  EXPECT_EQ(e.where().file, path);
  expect_mentions(e, {path + ": byte ", "compressed byte " + std::to_string(gz.size()) + " of " +
                                            std::to_string(gz.size() + tail.size()),
                      std::to_string(tail.size()) + " bytes after it are not gzip data"});
  // One stray byte (too short for a gzip magic) is refused the same way.
  write_bytes(path, gz + std::string(1, '\0'));
  expect_mentions(expect_trace_error([&] { read_all(path); }), {"the 1 bytes after it are not gzip data"});
}

TEST(BadInput, GzipTrailingDataAfterAStreamThatFillsTheBufferExactly) {
  // The reader inflates 1 MiB at a time: a stream of exactly that many bytes ends as a call fills its
  // output, and the bytes after it are found by the next call, which has inflated nothing. They must
  // still be an error, not the end of the file.
  constexpr size_t kMiB = size_t{1} << 20;
  std::string bytes = metadata_frame();
  uint64_t id = 0;
  while (bytes.size() < kMiB - 70'000) {
    Node n = make_node(id, COMP_NODE, id == 0 ? std::vector<uint64_t>{} : std::vector<uint64_t>{id - 1});
    n.set_name(std::string(60'000, 'n'));
    bytes += frame(n);
    ++id;
  }
  // The last node's name makes the total exactly 1 MiB (its length prefix grows with it: found by trying).
  for (size_t name = 0;; ++name) {
    Node n = make_node(id, COMP_NODE, {id - 1});
    n.set_name(std::string(name, 'n'));
    const std::string f = frame(n);
    if (bytes.size() + f.size() == kMiB) {
      bytes += f;
      break;
    }
    ASSERT_LT(bytes.size() + f.size(), kMiB);
  }
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_bytes(path, gzip_member(bytes) + "garbage");
  std::string error;
  EXPECT_EQ(read_until_error(path, error), id + 1);
  EXPECT_NE(error.find("the 7 bytes after it are not gzip data"), std::string::npos) << error;
  EXPECT_NE(error.find(path + ": byte " + std::to_string(kMiB)), std::string::npos) << error;
}

TEST(BadInput, GzipMembersOneAfterAnotherAreOneStream) {
  // `cat a.gz b.gz` (gzip -d reads both): the nodes of every member, in order, and the offsets run on.
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, many_nodes(10), true);
  const std::string more = frame(make_node(10, COMP_NODE, {9})) + frame(make_node(11, COMP_NODE, {10}));
  write_bytes(path, read_bytes(path) + gzip_member(more) + gzip_member(""));
  std::string error;
  EXPECT_EQ(read_until_error(path, error), 12u);
  EXPECT_EQ(error, "");
  // A second member cut short is reported as truncated, after the first member's nodes.
  const std::string second = gzip_member(more);
  write_trace(path, many_nodes(10), true);
  write_bytes(path, read_bytes(path) + second.substr(0, second.size() - 6));
  EXPECT_EQ(read_until_error(path, error), 10u);
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
  EXPECT_NE(error.find(path), std::string::npos) << error;
}

// --- garbage ----------------------------------------------------------------------------------------

// Reads `path` to its end and, if that worked, resolves it; returns whether it was clean. Anything
// but a TraceError escapes as a test failure.
bool survives(const std::string& path, int64_t rank, std::string& error) {
  try {
    read_all(path, rank);
    for (const bool prescan : {true, false}) {
      TraceReader reader(path, rank);
      DependencyResolver resolver(reader, {.window = 4, .prescan = prescan});
      while (const Node* n = resolver.next()) resolver.finish(*n);
      EXPECT_TRUE(resolver.done());
    }
    return true;
  } catch (const TraceError& e) {
    error = e.what();
    EXPECT_EQ(e.where().file, path) << error;
    EXPECT_TRUE(e.where().offset.has_value()) << error;
    return false;
  }
}

TEST(BadInput, SeededGarbageIsReadOrRejectedNeverCrashes) {
  ScratchDir dir;
  const std::string path = dir.file("g.0.et");
  const std::string good_plain = [&] {
    std::vector<Node> nodes = many_nodes(40);
    nodes[7].add_ctrl_deps(3);
    write_trace(path, nodes);
    return read_bytes(path);
  }();
  write_trace(path, many_nodes(40), true);
  const std::string good_gz = read_bytes(path);

  int clean = 0;
  int rejected = 0;
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    std::mt19937_64 rng(seed);
    auto byte = [&] { return static_cast<char>(rng() & 0xffu); };
    auto below = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    std::string bytes;
    switch (seed % 5) {
      case 0:  // pure noise
        for (size_t i = below(512); i > 0; --i) bytes.push_back(byte());
        break;
      case 1:  // a valid metadata, then noise
        bytes = metadata_frame();
        for (size_t i = below(512); i > 0; --i) bytes.push_back(byte());
        break;
      case 2:  // a valid trace with a few bytes changed and maybe cut
        bytes = good_plain;
        for (size_t i = 1 + below(6); i > 0; --i) bytes[below(bytes.size())] = byte();
        if (rng() % 3 == 0) bytes.resize(below(bytes.size()));
        break;
      case 3:  // a valid gzip trace with bytes changed (past the magic) and maybe cut
        bytes = good_gz;
        for (size_t i = 1 + below(4); i > 0; --i) bytes[2 + below(bytes.size() - 2)] = byte();
        if (rng() % 3 == 0) bytes.resize(2 + below(bytes.size() - 2));
        break;
      default:  // gzip magic then noise, or a valid gzip stream of a metadata then noise
        bytes = rng() % 2 == 0 ? std::string("\x1f\x8b") : metadata_frame();
        for (size_t i = below(512); i > 0; --i) bytes.push_back(byte());
        break;
    }
    if (seed % 5 == 4 && bytes[0] != '\x1f') {
      write_gzip(path, bytes);
    } else {
      write_bytes(path, bytes);
    }
    std::string error;
    SCOPED_TRACE("seed " + std::to_string(seed));
    if (survives(path, seed, error)) {
      ++clean;
    } else {
      ++rejected;
      // "FILE: rank R: byte B: ..." (ByteSource errors lack the rank: see ErrorsFromTheByteLayerNameTheRank).
      EXPECT_TRUE(error.rfind(path + ": rank " + std::to_string(seed) + ": byte ", 0) == 0 ||
                  error.rfind(path + ": byte ", 0) == 0)
          << error;
    }
  }
  // The mix must exercise both outcomes, or it tests nothing.
  EXPECT_GT(clean, 0);
  EXPECT_GT(rejected, 100);
}

// --- zero-length frames -----------------------------------------------------------------------------

TEST(BadInput, ZeroLengthFrameInTheMiddleIsANode) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_bytes(path, metadata_frame() + frame(make_node(1, COMP_NODE)) + std::string(1, '\0') +
                        frame(make_node(2, COMP_NODE, {1})));
  TraceReader reader(path);
  Node n;
  std::vector<std::pair<uint64_t, int>> seen;
  while (reader.next(n)) seen.emplace_back(n.id(), static_cast<int>(n.type()));
  const std::vector<std::pair<uint64_t, int>> want = {{1, COMP_NODE}, {0, INVALID_NODE}, {2, COMP_NODE}};
  EXPECT_EQ(seen, want);

  std::vector<uint64_t> order;
  resolve_all(path, {}, &order);
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 0, 2}));
}

TEST(BadInput, ZeroLengthFrameAtTheEndIsANode) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_bytes(path, metadata_frame() + frame(make_node(1, COMP_NODE)) + std::string(1, '\0'));
  EXPECT_EQ(read_all(path), 2u);
}

TEST(BadInput, WriterRefusesAnAllDefaultNode) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  TraceWriter writer(path, {});
  const TraceError e = expect_trace_error([&] { writer.write(Node{}); });
  expect_mentions(e, {path, "all-default node", "zero bytes"});
}

// --- dependency resolver ----------------------------------------------------------------------------

TEST(BadInput, DuplicateNodeIds) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, {make_node(1, COMP_NODE), make_node(2, COMP_NODE, {1}), make_node(1, COMP_NODE)});
  const uint64_t at = 8 + frame(make_node(1, COMP_NODE)).size() + frame(make_node(2, COMP_NODE, {1})).size();
  for (const size_t window : {size_t{1}, size_t{1} << 16}) {  // first copy finished / still held
    SCOPED_TRACE("window " + std::to_string(window));
    const TraceError e = expect_trace_error([&] { resolve_all(path, {.window = window}); });
    expect_at(e, path, at);
    EXPECT_EQ(e.where().node_id, 1u);
    expect_mentions(e, {"node #2 (id 1)", "duplicate node id 1"});
  }
}

TEST(BadInput, DependencyCycle) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, {make_node(5, COMP_NODE), make_node(10, COMP_NODE, {11}), make_node(11, COMP_NODE, {10})});
  for (const bool prescan : {true, false}) {
    SCOPED_TRACE(prescan ? "prescan" : "no prescan");
    const TraceError e = expect_trace_error([&] { resolve_all(path, {.prescan = prescan}); });
    EXPECT_EQ(e.where().file, path);
    EXPECT_EQ(e.where().node_id, 10u);
    expect_mentions(e, {"node #1 (id 10)", "dependency cycle", "2 nodes can never be issued", "10 <- 11 <- 10"});
  }
}

TEST(BadInput, DependencyCycleThroughCtrlDeps) {
  // 1 waits (data) on 2, and 2 waits (ctrl, backwards) on 1.
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, {make_node(1, COMP_NODE, {2}), make_node(2, COMP_NODE, {}, {1})});
  const TraceError e = expect_trace_error([&] { resolve_all(path); });
  EXPECT_EQ(e.where().node_id, 1u);
  expect_mentions(e, {path + ": byte 8: node #0 (id 1)", "dependency cycle", "1 <- 2 <- 1"});
  // Ignoring ctrl_deps breaks the cycle.
  std::vector<uint64_t> order;
  resolve_all(path, {.ctrl_deps = false}, &order);
  EXPECT_EQ(order, (std::vector<uint64_t>{2, 1}));
}

TEST(BadInput, ForwardCtrlDepIsDroppedNotACycle) {
  // Chakra's converter writes ctrl_deps from a CPU op to the kernel it launches, later in the file.
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, {make_node(1, COMP_NODE, {}, {2}), make_node(2, COMP_NODE, {1})});
  std::vector<uint64_t> order;
  const ResolverStats stats = resolve_all(path, {}, &order);
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(stats.forward_ctrl_deps, 1u);
  const TraceError e = expect_trace_error([&] { resolve_all(path, {.strict = true}); });
  expect_at(e, path, 8);
  EXPECT_EQ(e.where().node_id, 1u);
  expect_mentions(e, {"node #0 (id 1)", "ctrl_dep 2 names a node later in the file"});
}

TEST(BadInput, SelfDependency) {
  // Real PyTorch traces carry self edges: dropped and counted, an error only when strict.
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, {make_node(6, COMP_NODE), make_node(7, COMP_NODE, {6, 7}), make_node(8, COMP_NODE, {}, {8})});
  const TraceError e = expect_trace_error([&] { resolve_all(path, {.strict = true}); });
  expect_at(e, path, 8 + frame(make_node(6, COMP_NODE)).size());
  EXPECT_EQ(e.where().node_id, 7u);
  expect_mentions(e, {"node #1 (id 7)", "node 7 depends on itself"});

  std::vector<uint64_t> order;
  const ResolverStats stats = resolve_all(path, {}, &order);
  EXPECT_EQ(order, (std::vector<uint64_t>{6, 7, 8}));
  EXPECT_EQ(stats.self_deps, 2u);
}

TEST(BadInput, DanglingDependencyStrictIsAnError) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, {make_node(1, COMP_NODE), make_node(2, COMP_NODE, {1, 99})});
  const TraceError e = expect_trace_error([&] { resolve_all(path, {.strict = true}); });
  expect_at(e, path, 8 + frame(make_node(1, COMP_NODE)).size());
  EXPECT_EQ(e.where().node_id, 2u);
  expect_mentions(e, {"node #1 (id 2)", "data_dep 99 names no node in this file"});

  // Without the prescan the absent id is only known at the end of the file.
  const TraceError late = expect_trace_error([&] { resolve_all(path, {.strict = true, .prescan = false}); });
  EXPECT_EQ(late.where().node_id, 2u);
  expect_mentions(late, {path, "node #1 (id 2)", "99 names no node in this file"});
}

TEST(BadInput, DanglingDependencyLenientIsCountedAndSatisfied) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, {make_node(1, COMP_NODE, {98}), make_node(2, COMP_NODE, {1, 99}), make_node(3, COMP_NODE, {}, {97})});
  for (const bool prescan : {true, false}) {
    SCOPED_TRACE(prescan ? "prescan" : "no prescan");
    TraceReader reader(path);
    DependencyResolver resolver(reader, {.prescan = prescan});
    std::vector<uint64_t> order;
    while (const Node* n = resolver.next()) {
      order.push_back(n->id());
      resolver.finish(*n);
    }
    EXPECT_TRUE(resolver.done());
    EXPECT_EQ(order, (std::vector<uint64_t>{1, 2, 3}));
    EXPECT_EQ(resolver.stats().forward_deps, 0u);
    // Without the prescan an unseen ctrl_dep cannot be told from a forward one: dropped as forward.
    EXPECT_EQ(resolver.stats().dangling_deps, prescan ? 3u : 2u);
    EXPECT_EQ(resolver.stats().forward_ctrl_deps, prescan ? 0u : 1u);
    EXPECT_EQ(resolver.dangling_examples().size(), prescan ? 3u : 2u);
  }
}

TEST(BadInput, DanglingCtrlDepStrictWithoutPrescan) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, {make_node(1, COMP_NODE), make_node(2, COMP_NODE, {1}, {97})});
  const TraceError with_prescan = expect_trace_error([&] { resolve_all(path, {.strict = true}); });
  expect_mentions(with_prescan, {path, "node #1 (id 2)", "ctrl_dep 97 names no node in this file"});

  std::string error;
  try {
    resolve_all(path, {.strict = true, .prescan = false});
  } catch (const TraceError& e) {
    error = e.what();
  }
  EXPECT_FALSE(error.empty()) << "regression: with strict = true and prescan = false, a ctrl_dep on an id absent "
                    "from the file is counted in forward_ctrl_deps and dropped (add_dep: 'strict && "
                    "file_ids_'), so strict mode accepts it silently; it should be kept until the end "
                    "of the file and reported like a data_dep";
  EXPECT_NE(error.find("97 names no node in this file"), std::string::npos) << error;
}

TEST(BadInput, DanglingExamplesTellDataFromCtrl) {
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  write_trace(path, {make_node(1, COMP_NODE, {99})});
  TraceReader reader(path);
  DependencyResolver resolver(reader, {.prescan = false});
  while (const Node* n = resolver.next()) resolver.finish(*n);
  ASSERT_EQ(resolver.dangling_examples().size(), 1u);
  const DanglingDep d = resolver.dangling_examples()[0];
  EXPECT_EQ(d.node_id, 1u);
  EXPECT_EQ(d.missing_id, 99u);
  EXPECT_FALSE(d.ctrl) << "regression: without prescan, resolve_remaining_as_dangling() records every "
                    "dangling dependency with ctrl = true, even a data_dep";
  EXPECT_FALSE(d.ctrl);
}

TEST(BadInput, LargestIdsAreTracked) {
  // Ids are uint64; the interval set stores [start, end) and end = id + 1 overflows at UINT64_MAX.
  ScratchDir dir;
  const std::string path = dir.file("t.0.et");
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  write_trace(path, {make_node(kMax, COMP_NODE), make_node(1, COMP_NODE, {kMax})});
  ResolverStats stats;
  std::string error;
  try {
    stats = resolve_all(path, {.window = 1, .strict = true});
  } catch (const TraceError& e) {
    error = e.what();
  }
  EXPECT_FALSE(!error.empty() || stats.dangling_deps != 0) << "regression: IdIntervalSet::insert(UINT64_MAX) stores the run [MAX, 0) so "
                    "contains(MAX) is false; a finished node with id 2^64-1 (or 2^64-2 then 2^64-1) "
                    "is forgotten: dependencies on it are called dangling and duplicates go unseen. "
                    "Got: "
                 << error;
  EXPECT_EQ(stats.nodes_finished, 2u);
}

}  // namespace
}  // namespace fabemu::traces
