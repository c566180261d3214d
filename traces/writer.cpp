#include "traces/writer.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fabemu::traces {

void append_varint(uint64_t v, std::string& out) {
  while (v >= 0x80u) {
    out.push_back(static_cast<char>((v & 0x7fu) | 0x80u));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void append_frame(const google::protobuf::MessageLite& message, std::string& out) {
  const size_t size = message.ByteSizeLong();
  append_varint(static_cast<uint32_t>(size), out);
  const size_t at = out.size();
  out.resize(at + size);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + at));
}

TraceWriter::TraceWriter(const std::string& path, GlobalMetadata metadata, bool gzip)
    : path_(path), gzip_(gzip) {
  file_ = gzip_ ? static_cast<void*>(gzopen(path.c_str(), "wb6"))
                : static_cast<void*>(std::fopen(path.c_str(), "wb"));
  if (file_ == nullptr) {
    throw TraceError({.file = path}, std::string("cannot create: ") + std::strerror(errno));
  }
  if (metadata.ByteSizeLong() == 0) metadata.set_version(kSchemaVersion);
  try {
    write_frame(metadata);
  } catch (...) {
    close_quietly();
    throw;
  }
}

void TraceWriter::close_quietly() noexcept {
  if (file_ == nullptr) return;
  if (gzip_) {
    gzclose(static_cast<gzFile>(file_));
  } else {
    std::fclose(static_cast<FILE*>(file_));
  }
  file_ = nullptr;
}

TraceWriter::~TraceWriter() { close_quietly(); }

void TraceWriter::write(const Node& node) {
  if (node.ByteSizeLong() == 0) {
    throw TraceError({.file = path_, .node_index = nodes_, .node_id = node.id()},
                     "refusing to write an all-default node (it would encode to zero bytes, which "
                     "other Chakra readers take for the end of the file); set its type");
  }
  write_frame(node);
  ++nodes_;
}

void TraceWriter::write_frame(const google::protobuf::MessageLite& message) {
  if (const size_t size = message.ByteSizeLong(); size > kMaxMessageBytes) {
    throw TraceError({.file = path_, .offset = bytes_},
                     fmt::format("a message of {} bytes is larger than the {} MiB readers accept", size,
                                 kMaxMessageBytes >> 20));
  }
  scratch_.clear();
  append_frame(message, scratch_);
  bool ok = false;
  if (gzip_) {
    ok = gzwrite(static_cast<gzFile>(file_), scratch_.data(), static_cast<unsigned>(scratch_.size())) ==
         static_cast<int>(scratch_.size());
  } else {
    ok = std::fwrite(scratch_.data(), 1, scratch_.size(), static_cast<FILE*>(file_)) == scratch_.size();
  }
  if (!ok) throw TraceError({.file = path_, .offset = bytes_}, "write failed (disk full?)");
  bytes_ += scratch_.size();
}

void TraceWriter::close() {
  if (file_ == nullptr) return;
  const int rc = gzip_ ? gzclose(static_cast<gzFile>(file_)) : std::fclose(static_cast<FILE*>(file_));
  file_ = nullptr;
  if (rc != 0) throw TraceError({.file = path_}, "closing the file failed (disk full?)");
}

}  // namespace fabemu::traces
