#include "traces/byte_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "traces/error.h"

namespace fabemu::traces {
namespace {
// Plain files: 16 KiB, so one reader per rank stays small at thousands of ranks and zlib's buffers
// (in: 1x, out: 2x this) stay under malloc's mmap threshold (opening and closing thousands then costs
// no page-table churn). Gzip files: 1 MiB, so zlib checks a damaged block's CRC before we parse
// the garbage it decoded, and the error says the gzip data is damaged.
constexpr size_t kPlainBufferBytes = size_t{1} << 14;
constexpr size_t kGzipBufferBytes = size_t{1} << 20;

gzFile as_gz(void* p) { return static_cast<gzFile>(p); }
}  // namespace

ByteSource::ByteSource(std::string path, std::optional<int64_t> rank) : path_(std::move(path)), rank_(rank) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path_, ec)) {
    throw TraceError(at(), std::filesystem::exists(path_, ec) ? "not a regular file"
                                                                         : "file does not exist");
  }
  {
    std::ifstream probe(path_, std::ios::binary);
    unsigned char magic[2] = {0, 0};
    probe.read(reinterpret_cast<char*>(magic), 2);
    compressed_ = probe.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  }
  if (!compressed_) {
    size_ = std::filesystem::file_size(path_, ec);
    if (ec) throw TraceError(at(), "cannot read the file size: " + ec.message());
  }
  const size_t buffer = compressed_ ? kGzipBufferBytes : kPlainBufferBytes;
  if (compressed_) {
    gz_ = gzopen(path_.c_str(), "rb");
    if (gz_ == nullptr) throw TraceError(at(), std::string("cannot open: ") + std::strerror(errno));
    gzbuffer(as_gz(gz_), static_cast<unsigned>(buffer));
  } else {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw TraceError(at(), std::string("cannot open: ") + std::strerror(errno));
  }
  buf_.resize(buffer);
}

ByteSource::~ByteSource() {
  if (gz_ != nullptr) gzclose(as_gz(gz_));
  if (fd_ >= 0) ::close(fd_);
}

bool ByteSource::fill(size_t want) {
  if (available() >= want) return true;
  if (eof_) return false;
  // Move the unread tail to the front, grow if one message is larger than the buffer.
  if (head_ > 0) {
    std::memmove(buf_.data(), buf_.data() + head_, available());
    tail_ -= head_;
    head_ = 0;
  }
  if (want > buf_.size()) buf_.resize(std::max(want, buf_.size() * 2));
  while (tail_ < want || tail_ < buf_.size() / 2) {
    const size_t room = std::min<size_t>(buf_.size() - tail_, size_t{1} << 30);
    if (room == 0) break;
    if (fd_ >= 0) {
      const ssize_t got = ::read(fd_, buf_.data() + tail_, room);
      if (got < 0) {
        if (errno == EINTR) continue;
        throw TraceError(at(consumed_ + available()), std::string("read failed: ") + std::strerror(errno));
      }
      if (got == 0) {
        eof_ = true;
        break;
      }
      tail_ += static_cast<size_t>(got);
      continue;
    }
    const int got = gzread(as_gz(gz_), buf_.data() + tail_, static_cast<unsigned>(room));
    if (got < 0) {
      throw TraceError(at(consumed_ + available()),
                       compressed_ ? "the gzip data is damaged after this uncompressed byte (zlib: " + zlib_error() + ")"
                                   : "read failed: " + zlib_error());
    }
    if (got == 0) {
      int code = 0;
      gzerror(as_gz(gz_), &code);
      if (code != Z_OK) {
        throw TraceError(at(consumed_ + available()),
                         "the gzip stream is damaged or truncated after this uncompressed byte (zlib: " +
                             zlib_error() + ")");
      }
      eof_ = true;
      break;
    }
    tail_ += static_cast<size_t>(got);
  }
  return available() >= want;
}

Location ByteSource::at(std::optional<uint64_t> offset) const {
  return Location{.file = path_, .rank = rank_, .offset = offset};
}

// zlib's message without the "path: " it puts in front.
std::string ByteSource::zlib_error() const {
  int code = 0;
  const char* raw = gzerror(as_gz(gz_), &code);
  std::string msg = raw != nullptr ? raw : "unknown error";
  if (msg.rfind(path_ + ": ", 0) == 0) msg.erase(0, path_.size() + 2);
  return msg;
}

const uint8_t* ByteSource::peek(size_t n) {
  if (available() < n && !fill(n)) return nullptr;
  return buf_.data() + head_;
}

}  // namespace fabemu::traces
