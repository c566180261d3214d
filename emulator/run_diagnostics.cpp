#include "emulator/run_diagnostics.h"

#include <fmt/format.h>

namespace fabemu::emu {

void MessageLog::write_counters() const {
  if (timeline_ == nullptr) return;
  const BinnedSeries& s = *in_flight_;
  const uint32_t bins = s.bins_used();
  const uint64_t w = s.width_ps();
  for (size_t r = 0; r < s.channels(); ++r) {
    if (traffic_[r].sent_messages == 0) continue;
    const auto rank = static_cast<int32_t>(r);
    for (uint32_t b = 0; b < bins; ++b) {
      const double bytes = static_cast<double>(s.value(r, b)) / static_cast<double>(w);
      timeline_->counter(rank, "bytes in flight", Time::from_ps(b * w), bytes);
    }
    timeline_->counter(rank, "bytes in flight", Time::from_ps(bins * w), 0);
  }
}

void RunDiagnostics::append_warnings(const MessageLog& slices, std::vector<std::string>& out) const {
  if (cpu_colls > 0) {
    out.push_back(fmt::format("{} COMM_COLL nodes without comm_type (CPU-side launch records) took no time", cpu_colls));
  }
  if (missing_compute > 0) {
    out.push_back(fmt::format(
        "{} COMP nodes had no duration_micros and no roofline estimate (no device spec, or no num_ops/tensor_size): "
        "they took no time",
        missing_compute));
  }
  if (roofline_by_duration > 0) {
    out.push_back(fmt::format(
        "the roofline compute model is asked for, but {} COMP nodes have no num_ops and no tensor_size: they ran "
        "for their duration_micros (an error under --strict)",
        roofline_by_duration));
  }
  for (const auto& w : algo_warnings) out.push_back(w);
  if (slices.dropped() > 0) {
    out.push_back(fmt::format("the timeline holds the first {} messages; {} more were left out "
                              "(--timeline-messages)",
                              slices.written(), slices.dropped()));
  }
}

std::string resolver_warning(int32_t rank, const traces::ResolverStats& st) {
  if (st.dangling_deps + st.self_deps + st.forward_ctrl_deps == 0) return {};
  return fmt::format(
      "rank {}: {} dependencies on ids absent from the file treated as done, {} self dependencies and {} "
      "ctrl_deps on later nodes dropped",
      rank, st.dangling_deps, st.self_deps, st.forward_ctrl_deps);
}

std::string describe_stuck_rank(int32_t rank, const std::string& path, uint64_t nodes_walked, size_t held,
                                uint32_t comm_active) {
  std::string what;
  if (comm_active > 0) what = fmt::format("{} communication node(s) in flight", comm_active);
  return fmt::format("rank {} ({}) did not finish: {} nodes walked, {} issued and not finished{}{}", rank, path,
                     nodes_walked, held, what.empty() ? "" : "; ", what);
}

std::string describe_unfinished(const UnfinishedCollective& c) {
  const CollectiveResult& cr = *c.result;
  const auto& missing = c.missing;
  return fmt::format(
      "collective #{} {} of {} bytes in group {} (first issued by rank {} node {} in {}): {} of {} members issued "
      "it{}{}",
      cr.index, cr.type, cr.bytes, cr.group.empty() ? "\"\" (all ranks)" : "\"" + cr.group + "\"", c.first_rank,
      c.first_node_id, *c.first_file, c.members_issued, c.members, missing.empty() ? "" : "; never issued by ranks ",
      fmt::format("{}", fmt::join(missing.size() > 16 ? std::vector<std::string>(missing.begin(), missing.begin() + 16)
                                                      : missing,
                                  ", ")) +
          (missing.size() > 16 ? ", ..." : ""));
}

}  // namespace fabemu::emu
