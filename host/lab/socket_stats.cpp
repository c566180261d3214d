// The socket fabric's report section: SocketStats as text and JSON.
#include "host/lab/socket_stats.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "host/wire/histogram_format.h"
#include "host/lab/datagram.h"

namespace fabemu::lab {

namespace hd = host::dpdk;

namespace {

std::string collectives_json(const std::vector<hd::CollectiveSpans::Span>& spans) {
  std::string out = "[";
  for (const auto& c : spans) {
    out += fmt::format("{}\n    {{\"index\": {}, \"messages\": {}, \"bytes\": {}, \"modelled_ps\": {}, \"measured_ps\": {}, "
                       "\"deviation\": {:.6f}}}",
                       out.size() == 1 ? "" : ",", c.coll, c.messages, c.bytes, c.modelled.ps(), c.measured.ps(),
                       c.deviation);
  }
  return out + (spans.empty() ? "]" : "\n  ]");
}

// "measured vs modelled: 8 collectives, median +1.48%, worst +27.64% (#7)".
std::string collectives_line(const std::vector<hd::CollectiveSpans::Span>& spans) {
  if (spans.empty()) return {};
  std::vector<double> dev;
  for (const auto& c : spans) dev.push_back(c.deviation);
  std::sort(dev.begin(), dev.end());
  const auto worst = std::max_element(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
    return std::fabs(a.deviation) < std::fabs(b.deviation);
  });
  return fmt::format("  measured/modelled   {} collectives (span on the wire / modelled span - 1): median {:+.2f}%, "
                     "worst {:+.2f}% (collective #{})\n",
                     spans.size(), 100 * dev[(dev.size() - 1) / 2], 100 * worst->deviation, worst->coll);
}

}  // namespace

std::string format_socket_stats(const SocketStats& s) {
  std::string out = fmt::format("Socket fabric ({})\n", s.transport) + hd::wire_time_line(s) + hd::wire_stalled_line(s);
  out += fmt::format("  messages            {} sent ({} bytes), {} received ({} bytes), {} local, {} model only, "
                     "{} delivered\n",
                     s.messages_sent, s.bytes_sent, s.messages_received, s.bytes_received, s.local_messages,
                     s.model_only_messages, s.deliveries);
  out += fmt::format("  datagrams sent      {} ({} bytes): {} data, {} retransmitted ({} on NACK, {} on timeout), "
                     "{} ACK, {} NACK received; {} batched per call\n",
                     s.datagrams_tx, s.datagram_bytes_tx, s.data_datagrams, s.retransmissions, s.nack_retransmissions,
                     s.timeout_retransmissions, s.acks, s.nacks, s.batch);
  out += fmt::format("  datagrams received  {} ({} bytes); not ours {}{}\n", s.datagrams_rx, s.datagram_bytes_rx,
                     s.not_ours,
                     s.frames_not_ours == 0 ? std::string()
                                            : fmt::format("; {} other frames on the port", s.frames_not_ours));
  for (size_t v = 1; v < kDatagramVerdictCount; ++v) {
    if (s.not_ours_by_verdict[v] > 0) {
      out += fmt::format("    {:<34}{}\n", to_string(static_cast<DatagramVerdict>(v)), s.not_ours_by_verdict[v]);
    }
  }
  const uint64_t* by = s.frames_by_ecn;
  if (by[1] + by[2] + by[3] + s.frames_dscp_changed > 0) {
    out += fmt::format("  frames by ECN       {} not-ECT, {} ECT(0), {} ECT(1), {} CE (marked on the way); DSCP rewritten on "
                       "{}\n",
                       by[0], by[2], by[1], by[3], s.frames_dscp_changed);
  }
  out += hd::wire_detected_line(s) + hd::wire_injected_line(s);
  if (s.send_errors + s.feedback_dropped > 0) {
    out += fmt::format("  send errors         {}; feedback not queued {}\n", s.send_errors, s.feedback_dropped);
  }
  out += fmt::format("  retransmit timeout  up to {:.3f} ms (adaptive){}\n", static_cast<double>(s.rto_max.ps()) / 1e9,
                     s.rcvbuf_bytes == 0 ? std::string()
                                         : fmt::format("; socket buffers rcv {} / snd {} bytes", s.rcvbuf_bytes,
                                                       s.sndbuf_bytes));
  if (s.dilation > 0) {
    out += hd::wire_late_line(s);
    out += fmt::format("  departure jitter    |actual - scheduled| {} ns over {} datagrams (wall, after sendmmsg)\n",
                       hd::histogram_text(s.jitter_ns), s.jitter_ns.count());
    out += fmt::format("  polling             {} stalls over 100 us, longest gap {} ns\n", s.poll_stalls,
                       s.poll_gap_max_ns);
    out += collectives_line(s.collectives);
  }
  if (s.latency_ns.count() > 0) {
    out += fmt::format("  message latency     {} ns over {} messages (first datagram sent to its last ACK)\n",
                       hd::histogram_text(s.latency_ns), s.latency_ns.count());
  }
  return out;
}

std::string socket_stats_to_json(const SocketStats& s) {
  hd::ReportObject o;
  const auto n = [](uint64_t v) { return fmt::format("{}", v); };
  o.field("transport", fmt::format("\"{}\"", s.transport));
  hd::wire_fields_json(o, s, "dilation", "stall", false);
  hd::counts_json<SocketStats>(o, s, {{"messages_sent", &SocketStats::messages_sent},
                                      {"bytes_sent", &SocketStats::bytes_sent},
                                      {"messages_received", &SocketStats::messages_received},
                                      {"bytes_received", &SocketStats::bytes_received},
                                      {"model_only_messages", &SocketStats::model_only_messages}});
  hd::wire_fields_json(o, s, "local_messages", "deliveries", false);
  hd::counts_json<SocketStats>(o, s, {{"datagrams_tx", &SocketStats::datagrams_tx},
                                      {"datagram_bytes_tx", &SocketStats::datagram_bytes_tx},
                                      {"datagrams_rx", &SocketStats::datagrams_rx},
                                      {"datagram_bytes_rx", &SocketStats::datagram_bytes_rx},
                                      {"data_datagrams", &SocketStats::data_datagrams}});
  hd::wire_fields_json(o, s, "retransmissions", "timeout_retransmissions", false);
  hd::wire_fields_json(o, s, "rto_max_ps", "not_ours", false);
  o.field("not_ours_by_verdict",
          hd::verdict_counts_json(std::span<const uint64_t>(s.not_ours_by_verdict, kDatagramVerdictCount),
                                  [](size_t v) { return to_string(static_cast<DatagramVerdict>(v)); }));
  o.field("frames_not_ours", n(s.frames_not_ours));
  o.field("frames_by_ecn", hd::ecn_counts_json(s.frames_by_ecn));
  hd::counts_json<SocketStats>(o, s, {{"frames_dscp_changed", &SocketStats::frames_dscp_changed},
                                      {"send_errors", &SocketStats::send_errors},
                                      {"feedback_dropped", &SocketStats::feedback_dropped}});
  hd::wire_fields_json(o, s, "late", "jitter_ns", false);
  hd::wire_fields_json(o, s, "poll_gap_max_ns", "poll_stalls", false);
  o.field("rcvbuf_bytes", fmt::format("{}", s.rcvbuf_bytes));
  o.field("sndbuf_bytes", fmt::format("{}", s.sndbuf_bytes));
  o.field("batch", n(s.batch));
  o.field("collectives", collectives_json(s.collectives));
  return o.close();
}

}  // namespace fabemu::lab
