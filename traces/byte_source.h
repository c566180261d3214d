// Buffered sequential bytes from a trace file, plain or gzip-compressed (detected by content), with
// the uncompressed offset of every byte so errors can point at it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "traces/error.h"

namespace fabemu::traces {

class ByteSource {
 public:
  // Opens `path`; throws TraceError naming the file when it cannot be opened or read.
  ByteSource(std::string path, std::optional<int64_t> rank = std::nullopt);
  ~ByteSource();
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  const std::string& path() const { return path_; }
  bool compressed() const { return compressed_; }
  // Uncompressed size, known up front for plain files only.
  std::optional<uint64_t> size() const { return size_; }
  // Uncompressed offset of the next unread byte.
  uint64_t offset() const { return consumed_; }

  // Makes `n` contiguous bytes available and returns them, or nullptr when the input ends first
  // (then available() tells how many remain). Throws TraceError on a read or decompression error.
  const uint8_t* peek(size_t n);
  size_t available() const { return tail_ - head_; }
  void consume(size_t n) {
    head_ += n;
    consumed_ += n;
  }
  // Reads one byte; false at end of input.
  bool get(uint8_t& byte) {
    if (head_ == tail_ && !fill(1)) return false;
    byte = buf_[head_];
    consume(1);
    return true;
  }

 private:
  bool fill(size_t want);  // ensures `want` bytes buffered unless at EOF; returns whether it did

  Location at(std::optional<uint64_t> offset = std::nullopt) const;
  std::string zlib_error() const;

  std::string path_;
  std::optional<int64_t> rank_;
  void* gz_ = nullptr;  // gzFile, for gzip files
  int fd_ = -1;         // plain files are read directly (no zlib buffers: thousands of ranks stay small)
  bool compressed_ = false;
  bool eof_ = false;
  std::optional<uint64_t> size_;
  std::vector<uint8_t> buf_;
  size_t head_ = 0;
  size_t tail_ = 0;
  uint64_t consumed_ = 0;
};

}  // namespace fabemu::traces
