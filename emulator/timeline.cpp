// Chrome / Perfetto trace-event JSON writer, streaming: events go through a small buffer to the
// stream as they arrive.
#include "emulator/timeline.h"

#include "emulator/report_json.h"

#include <fmt/core.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace fabemu::emu {

namespace {

constexpr size_t kBufferBytes = 1 << 16;

// Picoseconds as microseconds with 6 decimals: exact.
std::string us(uint64_t ps) { return fmt::format("{}.{:06}", ps / 1'000'000, ps % 1'000'000); }

}  // namespace

ChromeTimeline::ChromeTimeline(const std::string& path) : path_(path) {
  file_ = std::make_unique<std::ofstream>(path, std::ios::binary | std::ios::trunc);
  if (!*file_) throw std::runtime_error(fmt::format("{}: cannot create the timeline file", path));
  out_ = file_.get();
  begin();
}

ChromeTimeline::ChromeTimeline(std::ostream& out) : out_(&out) { begin(); }

ChromeTimeline::~ChromeTimeline() {
  try {
    finish();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw; finish() reports errors
  }
}

void ChromeTimeline::begin() {
  buffer_.reserve(kBufferBytes + 1024);
  buffer_ = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"fabemu\",\"time_unit\":\"ts/dur in us, 6 decimals (ps)\"},\n\"traceEvents\":[";
}

void ChromeTimeline::write_failed() const {
  throw std::runtime_error(fmt::format("{}: cannot write the timeline", path_.empty() ? "timeline stream" : path_));
}

void ChromeTimeline::flush_buffer() {
  out_->write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
  if (!*out_) write_failed();
}

void ChromeTimeline::event(const std::string& text) {
  buffer_ += events_ == 0 ? "\n" : ",\n";
  buffer_ += text;
  ++events_;
  if (buffer_.size() >= kBufferBytes) flush_buffer();
}

ChromeTimeline::RankState& ChromeTimeline::rank_state(int32_t rank) {
  if (rank < 0) throw std::out_of_range(fmt::format("ChromeTimeline: negative rank {}", rank));
  const auto i = static_cast<size_t>(rank);
  if (i >= ranks_.size()) ranks_.resize(i + 1);
  return ranks_[i];
}

void ChromeTimeline::see_rank(int32_t rank) {
  RankState& s = rank_state(rank);
  if (s.seen) return;
  s.seen = true;
  const int64_t pid = int64_t{rank} + 1;  // pid 0 is special (swapper) in Perfetto
  event(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":"rank {}"}}}})", pid, rank));
  event(fmt::format(R"({{"name":"process_sort_index","ph":"M","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", pid,
                    rank));
}

void ChromeTimeline::see_thread(int32_t rank, int64_t tid, const std::string& name) {
  const int64_t pid = int64_t{rank} + 1;
  event(fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})", pid, tid,
                    json_quoted(name)));
  event(fmt::format(R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})", pid,
                    tid, tid));
}

void ChromeTimeline::node_slice(int32_t rank, int32_t track, const std::string& name, const char* kind,
                                uint64_t node_id, Time start, Time end, uint64_t bytes) {
  if (finished_) return;
  if (track < 0) throw std::out_of_range(fmt::format("ChromeTimeline: negative track {} on rank {}", track, rank));
  see_rank(rank);
  RankState& s = rank_state(rank);
  const auto t = static_cast<size_t>(track);
  const int64_t tid = int64_t{track} + 1;
  if (t >= s.tracks.size()) s.tracks.resize(t + 1, false);
  if (!s.tracks[t]) {
    s.tracks[t] = true;
    see_thread(rank, tid, track == 0 ? std::string("compute") : fmt::format("comm stream {}", track));
  }
  const std::string k = kind != nullptr ? kind : "";
  const uint64_t dur = end > start ? (end - start).ps() : 0;
  event(fmt::format(
      R"({{"name":{},"cat":{},"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"node_id":{},"bytes":{}}}}})",
      json_quoted(name.empty() ? k : name), json_quoted(k), int64_t{rank} + 1, tid, us(start.ps()), us(dur), node_id, bytes));
  ++slices_;
}

void ChromeTimeline::message_slice(int32_t src, int32_t dst, uint64_t bytes, Time sent, Time delivered,
                                   uint64_t collective_index) {
  if (finished_) return;
  see_rank(src);
  RankState& s = rank_state(src);
  // First lane whose messages all ended by `sent`; a new lane otherwise.
  size_t lane = 0;
  while (lane < s.message_lane_end.size() && s.message_lane_end[lane] > sent.ps()) ++lane;
  if (lane == s.message_lane_end.size()) {
    s.message_lane_end.push_back(0);
    see_thread(src, kMessagesTid + static_cast<int64_t>(lane),
               lane == 0 ? std::string("messages") : fmt::format("messages {}", lane + 1));
  }
  s.message_lane_end[lane] = std::max(s.message_lane_end[lane], delivered.ps());
  const uint64_t dur = delivered > sent ? (delivered - sent).ps() : 0;
  const std::string coll = collective_index == kNoCollective ? "" : fmt::format(",\"collective\":{}", collective_index);
  event(fmt::format(
      R"({{"name":"{}->{}","cat":"message","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"src":{},"dst":{},"bytes":{}{}}}}})",
      src, dst, int64_t{src} + 1, kMessagesTid + static_cast<int64_t>(lane), us(sent.ps()), us(dur), src, dst, bytes,
      coll));
  ++slices_;
}

void ChromeTimeline::counter(int32_t rank, const std::string& name, Time at, double value) {
  if (finished_) return;
  int64_t pid = kNetworkPid;
  if (rank >= 0) {
    see_rank(rank);
    pid = int64_t{rank} + 1;
  } else if (!network_seen_) {
    network_seen_ = true;
    event(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":"network"}}}})", pid));
    event(fmt::format(R"({{"name":"process_sort_index","ph":"M","pid":{},"tid":0,"args":{{"sort_index":-1}}}})", pid));
  }
  event(fmt::format(R"({{"name":{},"ph":"C","pid":{},"ts":{},"args":{{"value":{}}}}})", json_quoted(name), pid,
                    us(at.ps()), value));
  ++counters_;
}

void ChromeTimeline::finish() {
  if (finished_) return;
  finished_ = true;
  buffer_ += "\n]}\n";
  flush_buffer();
  out_->flush();
  if (!*out_) write_failed();
  if (file_) {
    file_->close();
    if (!*file_) write_failed();
  }
}

}  // namespace fabemu::emu
