// The run's timeline in the Chrome / Perfetto trace-event JSON format (open it in ui.perfetto.dev or
// chrome://tracing). Events are written as they arrive; only an output buffer is kept in memory.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "emulator/report.h"

namespace fabemu::emu {

// Layout (docs/report.md): one process per rank (pid = rank + 1, named "rank N"); per rank one thread
// per track (tid = track + 1: "compute" for track 0, "comm stream k" for track k) and "messages"
// threads (tid = kMessagesTid + lane) holding the point-to-point messages sent by the rank, spread
// over as many lanes as needed so that slices on one thread never overlap. Times: "ts" / "dur" in
// microseconds with 6 decimals, i.e. exact picoseconds.
class ChromeTimeline final : public TimelineSink {
 public:
  static constexpr int64_t kMessagesTid = 100000;
  static constexpr int64_t kNetworkPid = 1'000'000'000;  // after every rank's (rank + 1)

  // Writes to the file at `path`; throws std::runtime_error naming the path if it cannot be created.
  explicit ChromeTimeline(const std::string& path);
  // Writes to `out`, which must outlive this object (tests, stdout).
  explicit ChromeTimeline(std::ostream& out);
  ChromeTimeline(const ChromeTimeline&) = delete;
  ChromeTimeline& operator=(const ChromeTimeline&) = delete;
  // Calls finish() if it was not called; errors are swallowed there, so call finish() to see them.
  ~ChromeTimeline() override;

  void node_slice(int32_t rank, int32_t track, const std::string& name, const char* kind, uint64_t node_id,
                  Time start, Time end, uint64_t bytes) override;
  // collective_index == kNoCollective marks a SEND/RECV message (no collective).
  void message_slice(int32_t src, int32_t dst, uint64_t bytes, Time sent, Time delivered,
                     uint64_t collective_index) override;
  // A "C" (counter) event: on rank `rank`'s process, or for rank -1 on the "network" process (pid
  // kNetworkPid).
  void counter(int32_t rank, const std::string& name, Time at, double value) override;

  // Closes the JSON document and flushes it; throws std::runtime_error (naming the path) on a write
  // error. Further slices are ignored.
  void finish();

  // Events written so far: "X" slices plus "M" metadata events.
  uint64_t events() const { return events_; }
  uint64_t slices() const { return slices_; }
  uint64_t counters() const { return counters_; }

  static constexpr uint64_t kNoCollective = UINT64_MAX;

 private:
  void begin();
  void event(const std::string& text);
  void flush_buffer();
  void see_rank(int32_t rank);
  void see_thread(int32_t rank, int64_t tid, const std::string& name);
  [[noreturn]] void write_failed() const;

  std::string path_;  // "" when writing to a caller's stream
  std::unique_ptr<std::ofstream> file_;
  std::ostream* out_ = nullptr;
  std::string buffer_;
  bool finished_ = false;
  uint64_t events_ = 0;
  uint64_t slices_ = 0;
  uint64_t counters_ = 0;
  bool network_seen_ = false;
  // Per rank (index = rank; ranks seen are assumed small, dense non-negative numbers).
  struct RankState {
    bool seen = false;
    std::vector<bool> tracks;                // track k named yet?
    std::vector<uint64_t> message_lane_end;  // per lane: latest end (ps) of a message on it
  };
  std::vector<RankState> ranks_;
  RankState& rank_state(int32_t rank);
};

}  // namespace fabemu::emu
