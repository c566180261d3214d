// Buffered sequential bytes from a trace file, plain or gzip-compressed (detected by content), with
// the uncompressed offset of every byte so errors can point at it. A gzip file may hold several gzip
// members one after the other (as `cat a.gz b.gz` makes; gzip -d reads them all): they are read as one
// stream. Bytes after the last member that are not another member are an error, reported once every
// byte before them has been read (zlib's gzread would drop them without a word).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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
  bool compressed() const { return gz_ != nullptr; }
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
  // Gzip files: inflates up to `room` bytes into `out`; 0 at the end of the last member. Throws TraceError
  // on damaged or truncated data, and on bytes after the last member that are not another one. Bytes of
  // a member that fails are never delivered; those of members completed before it in the same call are,
  // and the error is thrown on the next call.
  size_t inflate_some(uint8_t* out, size_t room);
  // Gzip files: reads more of the compressed file behind the unread input; false at its end.
  bool read_compressed();

  Location at(std::optional<uint64_t> offset = std::nullopt) const;

  std::string path_;
  std::optional<int64_t> rank_;
  struct Inflater;                // zlib's inflate state and the compressed input, for gzip files
  std::unique_ptr<Inflater> gz_;
  int fd_ = -1;                   // the file (plain files are read straight into buf_)
  bool eof_ = false;
  std::optional<uint64_t> size_;
  std::vector<uint8_t> buf_;
  size_t head_ = 0;
  size_t tail_ = 0;
  uint64_t consumed_ = 0;
};

}  // namespace fabemu::traces
