// Classic pcap, nanosecond variant, in the writer's byte order (readers detect it from the magic).
#include "host/wire/pcap_writer.h"

#include "host/wire/flow_templates.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>


#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>
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

namespace {
// A record in the writer's buffers: the pcap record header, then how many of the captured bytes come
// first (`head`, stored) and how many zeros follow them (not stored); the rest of the captured bytes (the
// tail) come after the head. The thread writes the file's record from it: header, head, zeros, tail.
struct MemRecord {
  RecordHeader pcap;
  uint32_t head;
  uint32_t zeros;
};
static_assert(sizeof(MemRecord) == 24);
// A run's record (PcapWriter::write_run): MemRecord with this bit in `head` and the run's frame count below
// it, last_bytes in `zeros`, the time in `pcap` (its lengths unused), then the run's first FrameSpec.
constexpr uint32_t kRunBit = 0x80000000u;
static_assert(std::is_trivially_copyable_v<FrameSpec>);

// write(2) of all n bytes; 0 or the errno of the failure.
int write_all(int fd, const uint8_t* p, size_t n) noexcept {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EIO;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}
}  // namespace

PcapWriter::PcapWriter(const std::string& path, uint32_t snaplen)
    : PcapWriter(path, PcapWriterOptions{.snaplen = snaplen}) {}

PcapWriter::PcapWriter(const std::string& path, const PcapWriterOptions& options)
    : path_(path),
      snaplen_(options.snaplen),
      stop_on_failure_(options.stop_on_failure) {
  if (uint64_t{snaplen_} + sizeof(MemRecord) > kPcapBufferBytes) {
    throw std::invalid_argument("pcap " + path_ + ": a snap length of " + std::to_string(snaplen_) +
                                " bytes does not fit a capture buffer");
  }
  const size_t n = std::max<size_t>(2, options.buffer_bytes / kPcapBufferBytes);
  buffers_.resize(n);
  full_.reserve(n);  // every buffer fits either queue: hand_off and the thread never allocate
  free_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    // Written once here: without that, each page would be mapped by a fault when a frame first lands on
    // it, on the polling lcore.
    buffers_[i].data = std::make_unique_for_overwrite<uint8_t[]>(kPcapBufferBytes);
    std::memset(buffers_[i].data.get(), 0, kPcapBufferBytes);
    if (i > 0) free_.push(static_cast<uint32_t>(i));
  }
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) fail("cannot create", errno);
  const FileHeader h{kPcapNanoMagic, 2, 4, 0, 0, snaplen_, kPcapLinkEthernet};
  if (const int err = write_all(fd_, reinterpret_cast<const uint8_t*>(&h), sizeof h); err != 0) {
    ::close(fd_);
    fail("cannot write", err);
  }
  try {
    thread_ = std::thread([this, cpus = options.writer_cpus] { run(cpus); });
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

PcapWriter::~PcapWriter() {
  if (!closed_ && thread_.joinable()) {
    const std::lock_guard lock(mutex_);
    if (buffers_[current_].used > 0) full_.push(current_);  // written, as close() would, errors unreported
  }
  stop();
  if (fd_ >= 0) ::close(fd_);
}

std::string PcapWriter::failure(const char* what, int err) const {
  return "pcap " + path_ + ": " + what + ": " + (err ? std::strerror(err) : "I/O error");
}

void PcapWriter::fail(const char* what, int err) { throw std::runtime_error(failure(what, err)); }

std::string PcapWriter::thread_failure() {
  int err = 0;
  {
    const std::lock_guard lock(mutex_);
    err = thread_errno_;
  }
  return failure("cannot write", err);
}

void PcapWriter::fail_from_thread() { throw std::runtime_error(thread_failure()); }

void PcapWriter::note_thread_failure() {
  if (error_.empty()) error_ = thread_failure();
}

std::pair<uint32_t, uint32_t> PcapWriter::stamp(uint64_t timestamp_ns) const noexcept {
  const uint64_t t = timestamp_ns + origin_ns_;
  return {static_cast<uint32_t>(t / 1'000'000'000), static_cast<uint32_t>(t % 1'000'000'000)};
}

void PcapWriter::write(std::span<const uint8_t> frame, uint64_t timestamp_ns) {
  write_zero_body(frame, frame.size(), 0, timestamp_ns);
}

void PcapWriter::write_zero_body(std::span<const uint8_t> frame, size_t zeros_at, size_t zeros,
                                 uint64_t timestamp_ns) {
  if (zeros_at > frame.size() || zeros > frame.size() - zeros_at) {
    throw std::invalid_argument("pcap " + path_ + ": a zero body beyond its frame");
  }
  const uint32_t incl = static_cast<uint32_t>(std::min<size_t>(frame.size(), snaplen_));
  // The captured bytes [0, incl): the head, the zeros, the tail, each cut at incl.
  const auto head = static_cast<uint32_t>(std::min<size_t>(zeros_at, incl));
  const auto zero_end = static_cast<uint32_t>(std::min<size_t>(zeros_at + zeros, incl));
  const uint32_t tail = incl - zero_end;
  const auto [sec, nsec] = stamp(timestamp_ns);
  const MemRecord r{{sec, nsec, incl, static_cast<uint32_t>(frame.size())},
                    head,
                    zero_end - head};
  uint8_t* out = reserve(&r, sizeof r, size_t{head} + tail, 1);
  if (out == nullptr) return;
  std::memcpy(out, frame.data(), head);
  if (tail > 0) std::memcpy(out + head, frame.data() + zero_end, tail);
}

void PcapWriter::write_run(const FrameSpec& first, uint32_t n, uint32_t last_bytes, uint64_t timestamp_ns) {
  const size_t room = frame_bytes(first.mode, first.payload_bytes);
  if (n == 0 || n > kMaxRun || first.hdr.kind != PacketKind::kData || last_bytes > first.payload_bytes ||
      room > size_t{65535} + kEthHeaderBytes) {  // an IP datagram of more than 65,535 bytes
    throw std::invalid_argument("pcap " + path_ + ": write_run of " + std::to_string(n) +
                                " frames: not a run encode_run makes");
  }
  const auto [sec, nsec] = stamp(timestamp_ns);
  const MemRecord r{{sec, nsec, 0, 0},
                    kRunBit | n,
                    last_bytes};
  uint8_t* out = reserve(&r, sizeof r, sizeof(FrameSpec), n);
  if (out == nullptr) return;
  FrameSpec spec = first;
  spec.missing = {};  // a data packet's is empty; no pointer into the caller's memory is kept
  std::memcpy(out, &spec, sizeof spec);
}

uint8_t* PcapWriter::reserve(const void* header, size_t header_bytes, size_t bytes, uint64_t frames) {
  if (closed_) fail("write after close", 0);
  if (failed_.load(std::memory_order_relaxed)) [[unlikely]] {
    if (!stop_on_failure_) fail_from_thread();
    note_thread_failure();
    dropped_ += frames;
    return nullptr;
  }
  if (buffers_[current_].used + header_bytes + bytes > kPcapBufferBytes) hand_off();
  Buffer& b = buffers_[current_];
  uint8_t* out = b.data.get() + b.used;
  // The buffer's lines a few records on, for writing: each is written for the first time since the buffer
  // went round, so it comes from memory (+8-20% pacing ratio with a capture, "pcap"). Past the buffer's end
  // a prefetch is harmless (a hint, no fault).
  __builtin_prefetch(out + 1024, 1);
  __builtin_prefetch(out + 1088, 1);
  __builtin_prefetch(out + 1152, 1);
  std::memcpy(out, header, header_bytes);
  b.used += header_bytes + bytes;
  frames_ += frames;
  return out + header_bytes;
}

void PcapWriter::hand_off() {
  std::unique_lock lock(mutex_);
  full_.push(current_);
  to_thread_.notify_one();
  if (free_.empty()) {
    // Every buffer holds records the file has not taken yet: wait for one (counted).
    const auto from = std::chrono::steady_clock::now();
    to_caller_.wait(lock, [this] { return !free_.empty(); });
    ++waits_;
    waited_ns_ += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - from).count());
  }
  current_ = free_.front();
  free_.pop();
  buffers_[current_].used = 0;
}

void PcapWriter::run(std::vector<unsigned> cpus) {
  pthread_setname_np(pthread_self(), "fabemu-pcap");  // as top -H and /proc show it
  if (!cpus.empty()) {
    // Off the polling lcores' CPUs (a thread starts on its creator's, an lcore's). Best effort: where the
    // set cannot be taken, the thread stays where it was.
    cpu_set_t set;
    CPU_ZERO(&set);
    for (const unsigned c : cpus) {
      if (c < CPU_SETSIZE) CPU_SET(c, &set);
    }
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  // The file's bytes are made here: each record whole (its zeros written out), a MiB a write(2).
  const auto out = std::make_unique<uint8_t[]>(kPcapBufferBytes);
  // Runs (write_run) are encoded again here: the flows' templates (FlowTemplates' cache of 16,384, its
  // slot rebuilt when another flow takes it; ranks up to 2^16 keep a key each) and room for a run's frames.
  FlowTemplates templates(1u << 16);
  std::vector<uint8_t> frames;
  std::unique_lock lock(mutex_);
  for (;;) {
    to_thread_.wait(lock, [this] { return !full_.empty() || stopping_; });
    if (full_.empty()) return;  // stopping, and all written
    const uint32_t i = full_.front();
    full_.pop();
    const bool ok = thread_errno_ == 0;
    lock.unlock();
    int err = 0;
    if (ok) {
      // After a failure the records are dropped (the caller hears of it and stops); the buffer still goes
      // back, so that no write() waits for ever.
      const uint8_t* p = buffers_[i].data.get();
      const uint8_t* const end = p + buffers_[i].used;
      size_t n = 0;
      // The file's record of a frame of incl bytes: room for it in `out` (written out first when full).
      const auto room_for = [&](size_t incl) {
        if (n + sizeof(RecordHeader) + incl > kPcapBufferBytes) {
          err = write_all(fd_, out.get(), n);
          n = 0;
        }
        return err == 0;
      };
      while (p < end && err == 0) {
        MemRecord r;
        std::memcpy(&r, p, sizeof r);
        p += sizeof r;
        if ((r.head & kRunBit) != 0) {
          FrameSpec first;
          std::memcpy(&first, p, sizeof first);
          p += sizeof first;
          const uint32_t count = r.head & ~kRunBit;
          const size_t room = frame_bytes(first.mode, first.payload_bytes);
          if (frames.size() < room * count) {
            try {
              frames.resize(room * count);
            } catch (const std::bad_alloc&) {
              err = ENOMEM;
              break;
            }
          }
          uint8_t* at[kMaxRun];
          uint16_t lens[kMaxRun];
          for (uint32_t k = 0; k < count; ++k) at[k] = frames.data() + k * room;
          // write_run checked what encode_run checks; a refusal here would be a bug, not a bad run.
          if (!encode_run(templates.of(first), first, count, r.zeros, at, room, lens, false)) {
            err = EINVAL;
            break;
          }
          for (uint32_t k = 0; k < count && room_for(std::min<uint32_t>(lens[k], snaplen_)); ++k) {
            const RecordHeader h{r.pcap.ts_sec, r.pcap.ts_nsec, std::min<uint32_t>(lens[k], snaplen_), lens[k]};
            std::memcpy(out.get() + n, &h, sizeof h);
            std::memcpy(out.get() + n + sizeof h, at[k], h.incl_len);
            n += sizeof h + h.incl_len;
          }
          continue;
        }
        const uint32_t incl = r.pcap.incl_len, tail = incl - r.head - r.zeros;
        if (!room_for(incl)) break;
        std::memcpy(out.get() + n, &r.pcap, sizeof r.pcap);
        std::memcpy(out.get() + n + sizeof r.pcap, p, r.head);
        std::memset(out.get() + n + sizeof r.pcap + r.head, 0, r.zeros);
        std::memcpy(out.get() + n + sizeof r.pcap + r.head + r.zeros, p + r.head, tail);
        p += r.head + tail;
        n += sizeof r.pcap + incl;
      }
      if (err == 0 && n > 0) err = write_all(fd_, out.get(), n);
    }
    lock.lock();
    if (err != 0 && thread_errno_ == 0) {
      thread_errno_ = err;
      failed_.store(true, std::memory_order_relaxed);
    }
    free_.push(i);
    to_caller_.notify_one();
  }
}

void PcapWriter::stop() noexcept {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  to_thread_.notify_one();
  thread_.join();
}

void PcapWriter::close() {
  if (closed_) return;
  closed_ = true;
  {
    const std::lock_guard lock(mutex_);
    if (buffers_[current_].used > 0) full_.push(current_);
  }
  stop();  // writes what is queued first
  const int fd = fd_;
  fd_ = -1;
  const bool closed = ::close(fd) == 0;
  const int close_errno = errno;
  if (stop_on_failure_) {
    if (failed_.load(std::memory_order_relaxed)) note_thread_failure();
    if (!closed && error_.empty()) error_ = failure("cannot close", close_errno);
    return;
  }
  if (failed_.load(std::memory_order_relaxed)) fail_from_thread();
  if (!closed) fail("cannot close", close_errno);
}

namespace {

// A PcapWriter capture read record by record.
class PcapReader {
 public:
  PcapReader(const std::string& path, int64_t shift_ns) : path_(path), shift_ns_(shift_ns) {
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) fail("cannot open");
    std::setvbuf(file_, buffer_.get(), _IOFBF, kStdioBuffer);  // a MiB a read(2), as merge_pcap writes
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
  // A MiB a write(2). The buffer must be ours: glibc's setvbuf ignores the size when given no buffer and
  // then writes a block (4 KiB) at a time. Freed after fclose.
  const auto buffer = std::make_unique<char[]>(kStdioBuffer);
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
