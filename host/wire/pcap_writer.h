// Optional capture of every frame the DPDK fabric sends or receives (`--pcap FILE`): classic pcap with
// nanosecond timestamps (magic 0xa1b23c4d) and link type Ethernet, readable by tcpdump and Wireshark.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "emulator/time.h"
#include "host/wire/fifo.h"
#include "host/wire/frame.h"

namespace fabemu::host::dpdk {

inline constexpr uint32_t kPcapNanoMagic = 0xa1b23c4d;
inline constexpr uint32_t kPcapLinkEthernet = 1;

struct PcapWriterOptions {
  uint32_t snaplen = 65535;
  // Memory for records not yet written to the file, in buffers of kPcapBufferBytes (at least two): what a
  // burst of capture can run ahead of the file before write() has to wait for it.
  size_t buffer_bytes = size_t{16} << 20;
  // The CPUs the writing thread may run on (empty: the creating thread's): not those of polling lcores.
  std::vector<unsigned> writer_cpus;
  // When the file cannot take what was captured (a full disk, a file size limit): false, the next write()
  // and close() throw (std::runtime_error naming the path); true, the capture stops there and nothing
  // throws: later frames are dropped (dropped()), error() says what failed. A run whose capture fails then
  // still ends and reports (the DPDK fabric's choice).
  bool stop_on_failure = false;
};
inline constexpr size_t kPcapBufferBytes = size_t{1} << 20;

// The file is written by a thread of the writer's own, so that the caller (a polling lcore) never makes
// the write(2) calls: write() puts the record into a buffer in memory (written once when the writer is
// made, so no page fault either) and hands a full buffer to the thread, which makes the file's bytes
// (a MiB a write(2)). A frame's zero body (write_zero_body) is kept as a count, not as bytes: the thread
// writes the zeros. A run of data frames (write_run) is kept as its description: the thread encodes it.
// Only when every buffer is full of records the file has not taken yet does write() wait (waits(),
// waited_ns()): the capture stays complete, and the wait is counted so that the report can say what it
// cost. host/dpdk/README.md, "pcap".
class PcapWriter {
 public:
  // Creates (truncates) `path` and writes the file header; std::runtime_error naming the path.
  explicit PcapWriter(const std::string& path, uint32_t snaplen = 65535);
  PcapWriter(const std::string& path, const PcapWriterOptions& options);
  // Stops the thread and closes without reporting errors; call close() to see them.
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  // Added to every timestamp given after it: the Unix time (ns) of the caller's clock zero, so that a
  // capture on a clock that starts with the run (the DPDK fabric's) carries wall-clock dates. 0 by default.
  void set_time_origin_ns(uint64_t ns) noexcept { origin_ns_ = ns; }
  // One frame (without FCS) seen at `timestamp_ns` (the caller's clock: emulated or wall time). Frames
  // longer than snaplen are cut, their original length kept. std::runtime_error naming the path (a
  // failure of the thread's writes is reported by the next write() or close()).
  void write(std::span<const uint8_t> frame, uint64_t timestamp_ns);
  // A frame whose bytes [zeros_at, zeros_at + zeros) are zeros by construction (a data frame's payload and
  // RoCEv2 pad, which the fabric never writes): the same record in the file, but those bytes are neither
  // read from `frame` nor copied on the caller's lcore (the writing thread writes them out).
  // std::invalid_argument when the range is not within the frame.
  void write_zero_body(std::span<const uint8_t> frame, size_t zeros_at, size_t zeros, uint64_t timestamp_ns);
  // The n data frames of a run of one message that encode_run(first, n, last_bytes) makes (frame.h; what
  // fill_run puts into a transmit burst), each a record at `timestamp_ns`, without their bytes: the record
  // keeps the run's description (about 160 bytes, however many frames), and the writing thread encodes the
  // frames again into the file. Encoding is a function of the description, so the file gets the bytes
  // the caller sent (PcapWriter.RunIsCapturedAsItsFrames). The frames' heads copied on the caller's lcore
  // (write_zero_body) cost it about as much again as the frames themselves ("pcap" in
  // host/dpdk/README.md). std::invalid_argument when n is 0 or above 64, or encode_run refuses the run
  // (not a data packet, last_bytes above first.payload_bytes, too large for an IP datagram).
  void write_run(const FrameSpec& first, uint32_t n, uint32_t last_bytes, uint64_t timestamp_ns);
  static constexpr uint32_t kMaxRun = 64;
  // At emulated time `t` (picoseconds truncated to nanoseconds).
  void write(std::span<const uint8_t> frame, emu::Time t) { write(frame, t.ps() / 1000); }
  // Writes what is left, stops the thread and closes; std::runtime_error naming the path. Further writes
  // are errors.
  void close();
  uint64_t frames() const noexcept { return frames_; }
  // How many times write() waited for a buffer, and for how long in all (steady clock).
  uint64_t waits() const noexcept { return waits_; }
  uint64_t waited_ns() const noexcept { return waited_ns_; }
  const std::string& path() const noexcept { return path_; }
  // With stop_on_failure: what made the capture stop (naming the path; empty while it has not), and the
  // frames given to write() after that, not captured. The records still in memory when the file failed
  // are lost too, so the file holds fewer than frames().
  const std::string& error() const noexcept { return error_; }
  uint64_t dropped() const noexcept { return dropped_; }

 private:
  std::string failure(const char* what, int err) const;
  std::string thread_failure();  // the thread's write failure, as failure() words it
  // stop_on_failure: the thread's failure into error_ (once).
  void note_thread_failure();
  struct Buffer {
    std::unique_ptr<uint8_t[]> data;
    size_t used = 0;
  };
  // A record's header into the current buffer with `bytes` after it (handing the buffer off first when
  // it has no room); returns where those bytes go. nullptr when the capture has stopped (stop_on_failure:
  // `frames` counted as dropped).
  uint8_t* reserve(const void* header, size_t header_bytes, size_t bytes, uint64_t frames);
  [[noreturn]] void fail(const char* what, int err);
  [[noreturn]] void fail_from_thread();
  void hand_off();      // the current buffer to the thread, a free one in its place
  void run(std::vector<unsigned> cpus);  // the thread
  void stop() noexcept;  // the thread's end (what is queued is written first)

  std::string path_;
  uint32_t snaplen_;
  int fd_ = -1;
  bool closed_ = false;
  bool stop_on_failure_ = false;
  // A pcap record's seconds and nanoseconds for `timestamp_ns` on the caller's clock (+ origin_ns_).
  std::pair<uint32_t, uint32_t> stamp(uint64_t timestamp_ns) const noexcept;
  uint64_t origin_ns_ = 0;
  uint64_t frames_ = 0, waits_ = 0, waited_ns_ = 0, dropped_ = 0;
  std::string error_;
  std::vector<Buffer> buffers_;
  uint32_t current_ = 0;

  std::mutex mutex_;
  std::condition_variable to_thread_, to_caller_;
  detail::Ring<uint32_t> full_, free_;  // under mutex_; reserved for every buffer (no allocation)
  bool stopping_ = false;       // under mutex_
  int thread_errno_ = 0;        // under mutex_: the thread's first failure (0: none)
  std::atomic<bool> failed_{false};
  std::thread thread_;
};

// Merges two captures PcapWriter wrote (each in time order; one per lcore) into `out`, in time order
// (ties: `first`'s frame first). `second`'s timestamps are moved by `second_shift_ns` first (its clock's
// zero relative to first's; a record that would come before zero is put at zero). Returns the frames
// written. std::runtime_error naming the file that cannot be read or written, or is not such a capture.
uint64_t merge_pcap(const std::string& first, const std::string& second, int64_t second_shift_ns,
                    const std::string& out);

}  // namespace fabemu::host::dpdk
