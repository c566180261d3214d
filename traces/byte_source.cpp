#include "traces/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "traces/error.h"

namespace fabemu::traces {
namespace {
// Plain files: 16 KiB, so one reader per rank stays small at thousands of ranks. Gzip files: 1 MiB of
// decoded bytes a fill, so zlib checks a damaged block before we parse the garbage it decoded (a call
// that fails delivers nothing), and the error says the gzip data is damaged; their compressed input is
// read 64 KiB at a time.
constexpr size_t kPlainBufferBytes = size_t{1} << 14;
constexpr size_t kGzipBufferBytes = size_t{1} << 20;
constexpr size_t kGzipInputBytes = size_t{1} << 16;
}  // namespace

struct ByteSource::Inflater {
  Inflater() = default;
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  ~Inflater() {
    if (ready) inflateEnd(&zs);
  }
  z_stream zs{};
  bool ready = false;        // inflateInit2 succeeded: inflateEnd is due
  std::vector<uint8_t> in;   // compressed bytes; the unread ones are zs.next_in .. + zs.avail_in
  uint64_t file_read = 0;    // compressed bytes read from the file so far
  bool file_end = false;     // the file has no more bytes
  bool member_end = false;   // the last member inflated has ended (Z_STREAM_END)
  // An error found after bytes of whole members (their CRC checked) were inflated in the same call: those
  // are delivered first, and the next call throws it (with the offset where they end).
  std::string pending;
  uint64_t compressed_offset() const { return file_read - zs.avail_in; }
};

ByteSource::ByteSource(std::string path, std::optional<int64_t> rank) : path_(std::move(path)), rank_(rank) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path_, ec)) {
    throw TraceError(at(), std::filesystem::exists(path_, ec) ? "not a regular file"
                                                                         : "file does not exist");
  }
  bool gzip = false;  // by content: the gzip magic
  {
    std::ifstream probe(path_, std::ios::binary);
    unsigned char magic[2] = {0, 0};
    probe.read(reinterpret_cast<char*>(magic), 2);
    gzip = probe.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  }
  if (!gzip) {
    size_ = std::filesystem::file_size(path_, ec);
    if (ec) throw TraceError(at(), "cannot read the file size: " + ec.message());
  }
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw TraceError(at(), std::string("cannot open: ") + std::strerror(errno));
  if (gzip) {
    gz_ = std::make_unique<Inflater>();
    // 16 + 15: a gzip wrapper (header, CRC-32 and length checked at each member's end), a 32 KiB window.
    if (inflateInit2(&gz_->zs, 16 + MAX_WBITS) != Z_OK) {
      ::close(fd_);
      throw TraceError(at(), "cannot start zlib's inflate: out of memory");
    }
    gz_->ready = true;
    gz_->in.resize(kGzipInputBytes);
    gz_->zs.next_in = gz_->in.data();
  }
  buf_.resize(gzip ? kGzipBufferBytes : kPlainBufferBytes);
}

ByteSource::~ByteSource() {
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
    if (gz_ != nullptr) {
      // An error is due after what is buffered: it is raised only once that has been read.
      if (!gz_->pending.empty() && tail_ >= want) break;
      const size_t got = inflate_some(buf_.data() + tail_, room);
      if (got == 0) {
        eof_ = true;
        break;
      }
      tail_ += got;
      continue;
    }
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
  }
  return available() >= want;
}

bool ByteSource::read_compressed() {
  Inflater& z = *gz_;
  if (z.file_end) return false;
  // The unread input to the front, then the file's next bytes behind it.
  const size_t left = z.zs.avail_in;
  if (left > 0 && z.zs.next_in != z.in.data()) std::memmove(z.in.data(), z.zs.next_in, left);
  z.zs.next_in = z.in.data();
  for (;;) {
    const ssize_t got = ::read(fd_, z.in.data() + left, z.in.size() - left);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw TraceError(at(consumed_ + available()), std::string("read failed: ") + std::strerror(errno));
    }
    if (got == 0) {
      z.file_end = true;
      return false;
    }
    z.zs.avail_in = static_cast<uInt>(left + static_cast<size_t>(got));
    z.file_read += static_cast<uint64_t>(got);
    return true;
  }
}

size_t ByteSource::inflate_some(uint8_t* out, size_t room) {
  Inflater& z = *gz_;
  if (!z.pending.empty()) throw TraceError(at(consumed_ + available()), z.pending);
  z_stream& zs = z.zs;
  zs.next_out = out;
  zs.avail_out = static_cast<uInt>(std::min<size_t>(room, UINT32_MAX));
  const uInt out_start = zs.avail_out;
  uInt whole = 0;  // output bytes of this call up to the end of the last member it completed
  // The bytes of members completed in this call are delivered and `why` thrown on the next call; without
  // any, `why` is thrown now (the bytes of a member that fails are never delivered).
  const auto fail = [&](std::string why) -> size_t {
    if (whole == 0) throw TraceError(at(consumed_ + available()), why);
    z.pending = std::move(why);
    return whole;
  };
  const auto zlib_says = [&zs](int rc) {
    return std::string(zs.msg != nullptr ? zs.msg : rc == Z_MEM_ERROR ? "out of memory" : "error " + std::to_string(rc));
  };
  while (zs.avail_out > 0) {
    if (z.member_end) {
      // Between members: the next one starts with the gzip magic; anything else ends the file badly.
      while (zs.avail_in < 2 && read_compressed()) {
      }
      if (zs.avail_in == 0) break;  // the end of the file: done
      if (zs.avail_in < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b) {
        struct stat st{};
        const uint64_t size = ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
        const uint64_t from = z.compressed_offset();
        // What this call inflated (the end of the member before) is delivered first; when it inflated
        // nothing (that member ended in the call before), the error is thrown now.
        return fail("the gzip data ends at compressed byte " + std::to_string(from) + " of " + std::to_string(size) +
                    ", and the " + std::to_string(size > from ? size - from : 0) +
                    " bytes after it are not gzip data (appended to the file, or damaged): refusing to ignore them");
      }
      if (inflateReset(&zs) != Z_OK) return fail("cannot restart zlib's inflate: " + zlib_says(Z_STREAM_ERROR));
      z.member_end = false;
    }
    if (zs.avail_in == 0 && !read_compressed()) {
      return fail("the gzip stream is damaged or truncated after this uncompressed byte (zlib: unexpected end of file)");
    }
    const int rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      z.member_end = true;
      whole = out_start - zs.avail_out;
    } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && zs.avail_in == 0)) {
      // Z_BUF_ERROR with no input left: no progress without more (read above on the next turn). Anything else: the data
      // is damaged (Z_DATA_ERROR: a bad block, CRC or length; Z_NEED_DICT) or zlib failed (Z_MEM_ERROR).
      return fail("the gzip data is damaged after this uncompressed byte (zlib: " + zlib_says(rc) + ")");
    }
  }
  return out_start - zs.avail_out;
}

Location ByteSource::at(std::optional<uint64_t> offset) const {
  return Location{.file = path_, .rank = rank_, .offset = offset};
}

const uint8_t* ByteSource::peek(size_t n) {
  if (available() < n && !fill(n)) return nullptr;
  return buf_.data() + head_;
}

}  // namespace fabemu::traces
