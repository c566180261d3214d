// Streaming reader of one Chakra execution-trace file (`<prefix>.<rank>.et`, plain or gzip):
// the GlobalMetadata first, then one Node at a time. Holds one message in memory, never the file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "traces/byte_source.h"
#include "traces/error.h"
#include "traces/et_def.pb.h"

namespace fabemu::traces {

using Node = ChakraProtoMsg::Node;
using GlobalMetadata = ChakraProtoMsg::GlobalMetadata;

// Bounds on one message and one node's content, so that a small (gzip) file cannot make the reader
// allocate without limit: each is thousands of times what real traces hold (the largest in
// ../shared/traces, PyTorch-collected chakra.0.et, in brackets), and traces/README.md, "Limits", lists
// them. A node beyond one is an error naming the file, rank and node; nothing is allocated for it first.
// Largest single message [20,074 bytes]: a guard against corrupt length prefixes and hostile files.
inline constexpr uint32_t kMaxMessageBytes = 64u << 20;
// data_deps, and ctrl_deps, of one node [270 data_deps, 1 ctrl_dep]: 8 MiB each once read.
inline constexpr uint64_t kMaxDepsPerNode = uint64_t{1} << 20;
// A node's name and each attribute's name, in bytes [567].
inline constexpr uint64_t kMaxNameBytes = uint64_t{1} << 16;
// Attributes of one node [8].
inline constexpr uint64_t kMaxAttrsPerNode = uint64_t{1} << 12;
// Values in all the list attributes of one node together [2]: 32 MiB once read.
inline constexpr uint64_t kMaxAttrValuesPerNode = uint64_t{1} << 22;

class TraceReader {
 public:
  // Opens the file and reads its GlobalMetadata. `rank` (when known) goes into every error message.
  // Throws TraceError: missing/empty file, bad framing, old (pre-Oct-2023) schema, a text file (JSON, an
  // ASTRA-sim text workload: the message says how to convert it), ...
  explicit TraceReader(const std::string& path, std::optional<int64_t> rank = std::nullopt);
  // Reads the next node into `node`; false at the end of the file. After a TraceError every call
  // throws it again: a damaged file is never read on from the middle of a frame.

  const GlobalMetadata& metadata() const { return metadata_; }
  const std::string& path() const { return source_.path(); }
  std::optional<int64_t> rank() const { return rank_; }
  bool compressed() const { return source_.compressed(); }

  bool next(Node& node);  // reuses `node`'s storage

  // Reads only the id of the next node (skipping the rest of the message, much faster than next());
  // false at the end of the file. Framing errors are thrown as by next().
  bool next_id(uint64_t& id);

  // Nodes read so far, and the uncompressed bytes consumed.
  uint64_t nodes_read() const { return nodes_read_; }
  uint64_t bytes_read() const { return source_.offset(); }
  // Location of the node returned last (for messages about it).
  Location last_location() const;
  uint64_t last_offset() const { return last_offset_; }
  Location location_at(uint64_t offset, std::optional<uint64_t> node_index = std::nullopt,
                       std::optional<uint64_t> node_id = std::nullopt) const;

 private:
  // Reads one length-prefixed message body; returns nullptr at a clean end of file.
  const uint8_t* read_frame(uint32_t& length, uint64_t& frame_offset, const char* what,
                            std::optional<uint64_t> node_index);
  void read_metadata();
  // `e`, or when the file is no Chakra trace at all (JSON, an ASTRA-sim text workload, any text), an
  // error that says what it is and what to do.
  TraceError as_non_trace(const TraceError& e) const;
  [[noreturn]] void fail(const TraceError& error);
  std::string out_of_memory_text() const;
  bool next_impl(Node& node);
  bool next_id_impl(uint64_t& id);

  ByteSource source_;
  std::optional<int64_t> rank_;
  GlobalMetadata metadata_;
  uint64_t nodes_read_ = 0;
  uint64_t last_offset_ = 0;
  uint64_t last_id_ = 0;
  std::optional<TraceError> failed_;  // a reader that threw keeps throwing the same error
};

}  // namespace fabemu::traces
