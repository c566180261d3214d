// Run diagnostics: the counts that become the report's warnings (COMP nodes without a time, CPU-side
// collective records, algorithms replaced), the timeline's budget of message slices, and the sentences
// that say why a run did not finish (a rank stuck, a collective some members never issued).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "emulator/binned_series.h"
#include "emulator/report.h"
#include "emulator/time.h"
#include "traces/resolver.h"

namespace fabemu::emu {

// Every delivered message of the run passes here: it counts each rank's traffic (the report's per-rank
// sent and received messages and bytes) and, with a timeline, writes its message slices and keeps each
// rank's bytes in flight for a counter track. Slices stop at a limit (a 1024-rank run has hundreds of
// millions of messages); the report then says how many were left out.
class MessageLog {
 public:
  static constexpr uint32_t kCounterBins = 256;  // bins of the bytes-in-flight counters

  // `matrix`: also keep the sender x receiver traffic matrix (matrix()).
  MessageLog(TimelineSink* timeline, uint64_t limit, size_t ranks, bool matrix)
      : timeline_(timeline), limit_(limit), traffic_(ranks),
        matrix_(matrix ? TrafficMatrix(static_cast<uint32_t>(ranks)) : TrafficMatrix()) {
    if (timeline_ != nullptr) in_flight_.emplace(ranks, kCounterBins, 1000);
  }

  // Per rank: what it sent and received, counted when the message was delivered.
  struct Traffic {
    uint64_t sent_messages = 0, sent_bytes = 0;
    uint64_t received_messages = 0, received_bytes = 0;
  };

  // A message from `src` to `dst` (ranks of the workload) was delivered: counted, and a slice written
  // while under the limit (counted as left out after).
  void delivered(int32_t src, int32_t dst, uint64_t bytes, Time sent, Time at, uint64_t coll) {
    count(src, dst, bytes);
    if (timeline_ == nullptr) return;
    in_flight_->add(static_cast<size_t>(src), sent.ps(), at.ps(), bytes);
    if (written_ < limit_) {
      ++written_;
      timeline_->message_slice(src, dst, bytes, sent, at, coll);
    } else {
      ++dropped_;
    }
  }
  // A ring phase evaluated at once: every one of `ranks` sent `steps` messages of `bytes` to the next
  // and received as many from the one before.
  void delivered_ring(const std::vector<int32_t>& ranks, uint64_t steps, uint64_t bytes) {
    if (!matrix_.empty()) {
      for (size_t x = 0; x < ranks.size(); ++x) matrix_.add(ranks[x], ranks[(x + 1) % ranks.size()], steps, steps * bytes);
    }
    for (const int32_t r : ranks) {
      Traffic& t = traffic_[static_cast<size_t>(r)];
      t.sent_messages += steps;
      t.sent_bytes += steps * bytes;
      t.received_messages += steps;
      t.received_bytes += steps * bytes;
    }
  }
  // Whether a closed-form phase of `messages` messages should pass them one by one through delivered()
  // (while the timeline wants them) or all at once through delivered_ring(), its slices counted as left
  // out once the limit is reached.
  bool wanted(uint64_t messages) {
    if (timeline_ == nullptr) return false;
    if (written_ < limit_) return true;
    dropped_ += messages;
    return false;
  }
  uint64_t written() const noexcept { return written_; }
  uint64_t dropped() const noexcept { return dropped_; }
  const Traffic& traffic(size_t rank) const noexcept { return traffic_[rank]; }
  // The sender x receiver matrix; empty unless asked for.
  const TrafficMatrix& matrix() const noexcept { return matrix_; }
  // With a timeline: a "bytes in flight" counter track on every rank that sent something, one value per
  // bin (the bytes of the rank's messages sent and not yet delivered, averaged over the bin), then 0.
  void write_counters() const;

 private:
  void count(int32_t src, int32_t dst, uint64_t bytes) noexcept {
    Traffic& s = traffic_[static_cast<size_t>(src)];
    ++s.sent_messages;
    s.sent_bytes += bytes;
    Traffic& d = traffic_[static_cast<size_t>(dst)];
    ++d.received_messages;
    d.received_bytes += bytes;
    if (!matrix_.empty()) matrix_.add(src, dst, 1, bytes);
  }

  TimelineSink* timeline_;
  uint64_t limit_;
  uint64_t written_ = 0, dropped_ = 0;
  std::vector<Traffic> traffic_;  // index = rank
  TrafficMatrix matrix_;
  std::optional<BinnedSeries> in_flight_;  // with a timeline: byte-picoseconds in flight per rank and bin
};

// Counts kept as the walk goes, each a warning of the report when not zero.
struct RunDiagnostics {
  std::set<std::string> algo_warnings;  // planning: algorithms replaced, placements run flat
  uint64_t cpu_colls = 0;               // COMM_COLL nodes without comm_type
  uint64_t missing_compute = 0;         // COMP nodes that took no time for want of a duration or roofline
  uint64_t roofline_by_duration = 0;    // roofline asked for, duration_micros used (no num_ops/tensor_size)

  // The warnings of the counts above and of `slices`, in the report's order.
  void append_warnings(const MessageLog& slices, std::vector<std::string>& out) const;
};

// A rank whose resolver treated problems in its trace leniently; empty when there were none.
std::string resolver_warning(int32_t rank, const traces::ResolverStats& stats);

// Why rank r did not finish.
std::string describe_stuck_rank(int32_t rank, const std::string& path, uint64_t nodes_walked, size_t held,
                                uint32_t comm_active);

// A collective that not every member issued: `missing` are the ranks that never did.
struct UnfinishedCollective {
  const CollectiveResult* result;
  int32_t first_rank;
  uint64_t first_node_id;
  const std::string* first_file;
  uint32_t members_issued;
  int32_t members;
  std::vector<std::string> missing;
};
std::string describe_unfinished(const UnfinishedCollective& c);

}  // namespace fabemu::emu
