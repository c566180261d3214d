// Classic pcap, nanosecond variant, in the writer's byte order (readers detect it from the magic).
#include "host/dpdk/pcap_writer.h"

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

namespace fabemu::host::dpdk {

namespace {
constexpr size_t kStdioBuffer = size_t{1} << 20;
struct FileHeader {
  uint32_t magic;
  uint16_t version_major;
  uint16_t version_minor;
  int32_t thiszone;
  uint32_t sigfigs;
  uint32_t snaplen;
  uint32_t linktype;
};
struct RecordHeader {
  uint32_t ts_sec;
  uint32_t ts_nsec;
  uint32_t incl_len;
  uint32_t orig_len;
};
static_assert(sizeof(FileHeader) == 24 && sizeof(RecordHeader) == 16);
}  // namespace

PcapWriter::PcapWriter(const std::string& path, uint32_t snaplen) : path_(path), snaplen_(snaplen) {
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) fail("cannot create");
  // A large buffer: one write(2) per MiB of frames. It must be ours: glibc's setvbuf ignores the size when
  // given no buffer and then writes a block (4 KiB) at a time (3,902 write(2) calls for the 16 MB capture
  // of an 8-rank 1 MB all-reduce, 2026-12-04).
  buffer_ = std::make_unique<char[]>(kStdioBuffer);
  std::setvbuf(file_, buffer_.get(), _IOFBF, kStdioBuffer);
  const FileHeader h{kPcapNanoMagic, 2, 4, 0, 0, snaplen_, kPcapLinkEthernet};
  if (std::fwrite(&h, sizeof h, 1, file_) != 1) fail("cannot write");
}

PcapWriter::~PcapWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void PcapWriter::fail(const char* what) {
  const int err = errno;
  throw std::runtime_error("pcap " + path_ + ": " + what + ": " + (err ? std::strerror(err) : "I/O error"));
}

void PcapWriter::write(std::span<const uint8_t> frame, uint64_t timestamp_ns) {
  if (file_ == nullptr) {
    errno = 0;
    fail("write after close");
  }
  const uint32_t incl = static_cast<uint32_t>(std::min<size_t>(frame.size(), snaplen_));
  const RecordHeader r{static_cast<uint32_t>(timestamp_ns / 1'000'000'000),
                       static_cast<uint32_t>(timestamp_ns % 1'000'000'000), incl,
                       static_cast<uint32_t>(frame.size())};
  if (std::fwrite(&r, sizeof r, 1, file_) != 1 || std::fwrite(frame.data(), 1, incl, file_) != incl) {
    fail("cannot write");
  }
  ++frames_;
}

void PcapWriter::close() {
  if (file_ == nullptr) return;
  std::FILE* f = file_;
  file_ = nullptr;
  errno = 0;
  const bool flushed = std::fflush(f) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!flushed || !closed) fail("cannot flush");
}

namespace {

// A PcapWriter capture read record by record.
class PcapReader {
 public:
  PcapReader(const std::string& path, int64_t shift_ns) : path_(path), shift_ns_(shift_ns) {
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) fail("cannot open");
    std::setvbuf(file_, buffer_.get(), _IOFBF, kStdioBuffer);  // a MiB a read(2), as the writer's
    FileHeader h{};
    if (std::fread(&h, sizeof h, 1, file_) != 1 || h.magic != kPcapNanoMagic || h.linktype != kPcapLinkEthernet) {
      errno = 0;
      fail("not a nanosecond Ethernet pcap file written by fabemu");
    }
    snaplen_ = h.snaplen;
    next();
  }
  ~PcapReader() {
    if (file_ != nullptr) std::fclose(file_);
  }
  PcapReader(const PcapReader&) = delete;
  PcapReader& operator=(const PcapReader&) = delete;

  bool done() const noexcept { return done_; }
  uint64_t time_ns() const noexcept { return time_ns_; }
  uint32_t snaplen() const noexcept { return snaplen_; }
  // Writes the current record to `out` (its time as shifted) and reads the next one.
  void copy_to(std::FILE* out, const std::string& out_path) {
    const RecordHeader r{static_cast<uint32_t>(time_ns_ / 1'000'000'000), static_cast<uint32_t>(time_ns_ % 1'000'000'000),
                         rec_.incl_len, rec_.orig_len};
    if (std::fwrite(&r, sizeof r, 1, out) != 1 ||
        std::fwrite(data_.data(), 1, rec_.incl_len, out) != rec_.incl_len) {
      const int err = errno;
      throw std::runtime_error("pcap " + out_path + ": cannot write: " + (err ? std::strerror(err) : "I/O error"));
    }
    next();
  }

 private:
  void next() {
    const size_t got = std::fread(&rec_, 1, sizeof rec_, file_);
    if (got == 0 && std::feof(file_)) {
      done_ = true;
      return;
    }
    errno = 0;
    if (got != sizeof rec_ || rec_.incl_len > snaplen_ || rec_.ts_nsec >= 1'000'000'000) fail("truncated or damaged record");
    data_.resize(rec_.incl_len);
    if (rec_.incl_len > 0 && std::fread(data_.data(), 1, rec_.incl_len, file_) != rec_.incl_len) {
      fail("truncated record");
    }
    const int64_t t = static_cast<int64_t>(uint64_t{rec_.ts_sec} * 1'000'000'000 + rec_.ts_nsec) + shift_ns_;
    time_ns_ = t < 0 ? 0 : static_cast<uint64_t>(t);
  }
  [[noreturn]] void fail(const char* what) {
    const int err = errno;
    throw std::runtime_error("pcap " + path_ + ": " + what + (err ? std::string(": ") + std::strerror(err) : ""));
  }

  std::string path_;
  int64_t shift_ns_;
  std::unique_ptr<char[]> buffer_ = std::make_unique<char[]>(kStdioBuffer);
  std::FILE* file_ = nullptr;
  uint32_t snaplen_ = 0;
  RecordHeader rec_{};
  std::vector<uint8_t> data_;
  uint64_t time_ns_ = 0;
  bool done_ = false;
};

}  // namespace

uint64_t merge_pcap(const std::string& first, const std::string& second, int64_t second_shift_ns,
                    const std::string& out) {
  PcapReader a(first, 0), b(second, second_shift_ns);
  std::FILE* f = std::fopen(out.c_str(), "wb");
  if (f == nullptr) {
    const int err = errno;
    throw std::runtime_error("pcap " + out + ": cannot create: " + std::strerror(err));
  }
  const auto buffer = std::make_unique<char[]>(kStdioBuffer);  // as PcapWriter's; freed after fclose
  std::setvbuf(f, buffer.get(), _IOFBF, kStdioBuffer);
  uint64_t frames = 0;
  try {
    const FileHeader h{kPcapNanoMagic, 2, 4, 0, 0, std::max(a.snaplen(), b.snaplen()), kPcapLinkEthernet};
    if (std::fwrite(&h, sizeof h, 1, f) != 1) throw std::runtime_error("pcap " + out + ": cannot write");
    for (; !a.done() || !b.done(); ++frames) {
      if (b.done() || (!a.done() && a.time_ns() <= b.time_ns())) {
        a.copy_to(f, out);
      } else {
        b.copy_to(f, out);
      }
    }
  } catch (...) {
    std::fclose(f);
    throw;
  }
  const bool flushed = std::fflush(f) == 0;
  if (std::fclose(f) != 0 || !flushed) throw std::runtime_error("pcap " + out + ": cannot flush");
  return frames;
}

}  // namespace fabemu::host::dpdk
