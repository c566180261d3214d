// Writes Chakra trace files that Chakra's and ASTRA-sim's readers accept: a varint32 length prefix
// before each message, GlobalMetadata first, never a zero-length message; optionally gzip.
#pragma once

#include <cstdint>
#include <string>

#include "traces/reader.h"

namespace fabemu::traces {

inline constexpr const char* kSchemaVersion = "0.0.4";

class TraceWriter {
 public:
  // Creates (truncates) `path` and writes `metadata` as given, except that an all-default one gets
  // version kSchemaVersion so the message is never empty. `gzip` compresses the whole file. Throws TraceError.
  TraceWriter(const std::string& path, GlobalMetadata metadata, bool gzip = false);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Appends a node. Throws TraceError for a node that would encode to zero bytes or to more than
  // kMaxMessageBytes.
  void write(const Node& node);
  // Flushes and closes; errors (disk full, ...) are thrown here rather than lost in the destructor.
  void close();

  uint64_t nodes_written() const { return nodes_; }
  uint64_t bytes_written() const { return bytes_; }

 private:
  void write_frame(const google::protobuf::MessageLite& message);
  void close_quietly() noexcept;

  std::string path_;
  void* file_ = nullptr;  // FILE* or gzFile
  bool gzip_;
  uint64_t nodes_ = 0;
  uint64_t bytes_ = 0;
  std::string scratch_;
};

// Appends `v` as a protobuf base-128 varint (a frame's length prefix) to `out`.
void append_varint(uint64_t v, std::string& out);

// Appends `message` framed (varint32 length + bytes) to `out`.
void append_frame(const google::protobuf::MessageLite& message, std::string& out);

}  // namespace fabemu::traces
