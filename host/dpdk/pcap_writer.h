// Optional capture of every frame the DPDK fabric sends or receives (`--pcap FILE`): classic pcap with
// nanosecond timestamps (magic 0xa1b23c4d) and link type Ethernet, readable by tcpdump and Wireshark.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>

#include "emulator/time.h"

namespace fabemu::host::dpdk {

inline constexpr uint32_t kPcapNanoMagic = 0xa1b23c4d;
inline constexpr uint32_t kPcapLinkEthernet = 1;

class PcapWriter {
 public:
  // Creates (truncates) `path` and writes the file header; std::runtime_error naming the path.
  explicit PcapWriter(const std::string& path, uint32_t snaplen = 65535);
  // Closes without reporting errors; call close() to see them.
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  // One frame (without FCS) seen at `timestamp_ns` (the caller's clock: emulated or wall time). Frames
  // longer than snaplen are cut, their original length kept. std::runtime_error naming the path.
  void write(std::span<const uint8_t> frame, uint64_t timestamp_ns);
  // At emulated time `t` (picoseconds truncated to nanoseconds).
  void write(std::span<const uint8_t> frame, emu::Time t) { write(frame, t.ps() / 1000); }
  // Flushes and closes; std::runtime_error naming the path. Further writes are errors.
  void close();
  uint64_t frames() const noexcept { return frames_; }
  const std::string& path() const noexcept { return path_; }

 private:
  [[noreturn]] void fail(const char* what);
  std::string path_;
  std::unique_ptr<char[]> buffer_;  // stdio's (setvbuf): before file_, so that it outlives the FILE
  std::FILE* file_ = nullptr;
  uint32_t snaplen_;
  uint64_t frames_ = 0;
};

// Merges two captures PcapWriter wrote (each in time order; one per lcore) into `out`, in time order
// (ties: `first`'s frame first). `second`'s timestamps are moved by `second_shift_ns` first (its clock's
// zero relative to first's; a record that would come before zero is put at zero). Returns the frames
// written. std::runtime_error naming the file that cannot be read or written, or is not such a capture.
uint64_t merge_pcap(const std::string& first, const std::string& second, int64_t second_shift_ns,
                    const std::string& out);

}  // namespace fabemu::host::dpdk
