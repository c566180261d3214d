// Run diagnostics: the counts that become the report's warnings (COMP nodes without a time, CPU-side
// collective records, algorithms replaced), the timeline's budget of message slices, and the sentences
// that say why a run did not finish (a rank stuck, a collective some members never issued).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "emulator/report.h"
#include "emulator/time.h"
#include "traces/resolver.h"

namespace fabemu::emu {

// Message slices in the timeline stop at a limit (a 1024-rank run has hundreds of millions of
// messages); the report then says how many were left out.
class MessageSlices {
 public:
  MessageSlices(TimelineSink* timeline, uint64_t limit) : timeline_(timeline), limit_(limit) {}

  bool enabled() const noexcept { return timeline_ != nullptr; }
  // Writes one message slice while under the limit; counts it as left out after.
  void write(int32_t src, int32_t dst, uint64_t bytes, Time sent, Time delivered, uint64_t coll) {
    if (timeline_ == nullptr) return;
    if (written_ < limit_) {
      ++written_;
      timeline_->message_slice(src, dst, bytes, sent, delivered, coll);
    } else {
      ++dropped_;
    }
  }
  // Whether a closed-form phase of `messages` messages should write them (one by one, through write())
  // or skip them all, counted as left out, once the limit is reached.
  bool wanted(uint64_t messages) {
    if (timeline_ == nullptr) return false;
    if (written_ < limit_) return true;
    dropped_ += messages;
    return false;
  }
  uint64_t written() const noexcept { return written_; }
  uint64_t dropped() const noexcept { return dropped_; }

 private:
  TimelineSink* timeline_;
  uint64_t limit_;
  uint64_t written_ = 0, dropped_ = 0;
};

// Counts kept as the walk goes, each a warning of the report when not zero.
struct RunDiagnostics {
  std::set<std::string> algo_warnings;  // planning: algorithms replaced, placements run flat
  uint64_t cpu_colls = 0;               // COMM_COLL nodes without comm_type
  uint64_t missing_compute = 0;         // COMP nodes that took no time for want of a duration or roofline
  uint64_t roofline_by_duration = 0;    // roofline asked for, duration_micros used (no num_ops/tensor_size)

  // The warnings of the counts above and of `slices`, in the report's order.
  void append_warnings(const MessageSlices& slices, std::vector<std::string>& out) const;
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
