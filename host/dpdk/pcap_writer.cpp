// Classic pcap, nanosecond variant, in the writer's byte order (readers detect it from the magic).
#include "host/dpdk/pcap_writer.h"

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace fabemu::host::dpdk {

namespace {
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
  // A large buffer: one write(2) per ~1 MiB of frames, not per frame.
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
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

}  // namespace fabemu::host::dpdk
