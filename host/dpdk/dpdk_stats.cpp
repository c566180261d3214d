#include "host/dpdk/dpdk_stats.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "host/wire/histogram_format.h"

namespace fabemu::host::dpdk {

double median_of_sorted(const std::vector<double>& v) noexcept {
  const size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : (v[h - 1] + v[h]) / 2;
}

void merge_spans(std::vector<Span>& spans) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.from < b.from; });
  size_t out = 0;
  for (const Span& sp : spans) {
    if (sp.to <= sp.from) continue;
    if (out > 0 && sp.from <= spans[out - 1].to) {
      spans[out - 1].to = std::max(spans[out - 1].to, sp.to);
    } else {
      spans[out++] = sp;
    }
  }
  spans.resize(out);
}

uint64_t covered_within(const std::vector<Span>& merged, uint64_t from, uint64_t to) noexcept {
  if (to <= from) return 0;
  // The first span that ends after `from`, then each up to `to`.
  auto it = std::upper_bound(merged.begin(), merged.end(), from, [](uint64_t t, const Span& sp) { return t < sp.to; });
  uint64_t covered = 0;
  for (; it != merged.end() && it->from < to; ++it) covered += std::min(it->to, to) - std::max(it->from, from);
  return covered;
}

bool started_late(const DpdkStats::Collective& c) noexcept {
  return c.late_start.ps() > c.modelled.ps() / 100;
}

Fidelity fidelity(const DpdkStats& s) noexcept {
  Fidelity f;
  if (s.dilation <= 0 || s.jitter_ns.count() == 0) return f;
  for (const DpdkStats::Collective& c : s.collectives) f.late_collectives += started_late(c);
  f.rate_ratio = s.pacing_ratio;
  f.departure_lateness_ns = static_cast<double>(s.jitter_ns.quantile(0.5)) / s.dilation;
  f.undisturbed_ratio = s.pacing_median_ratio;
  // A ratio of 0 over busy periods is no measurement only when there were none: with periods it is a
  // schedule too short to be kept at all (a dilation so small the target's times round to 0 ps).
  if (s.pacing_ratio <= 0 && s.pacing_periods == 0) {
    f.verdict = Fidelity::Verdict::kUnmeasured;
  } else if (s.pacing_ratio >= kKeptPaceRatio) {
    f.verdict = Fidelity::Verdict::kKeptPace;
  } else {
    f.verdict = Fidelity::Verdict::kFellBehind;
    // No undisturbed period at all (median 0) with periods measured: every one was disturbed.
    const bool all_disturbed = s.pacing_median_ratio <= 0 && s.pacing_disturbed_periods > 0;
    if (s.tx_full > 0 && static_cast<double>(s.tx_full) >= kDeviceFullShare * static_cast<double>(s.tx_flushes)) {
      f.cause = Fidelity::Cause::kDevice;  // frames waited for the device, whatever else happened
    } else {
      f.cause = all_disturbed || s.pacing_median_ratio >= kKeptPaceRatio ? Fidelity::Cause::kStalls
                                                                          : Fidelity::Cause::kSpeed;
    }
  }
  return f;
}

const char* to_string(Fidelity::Cause c) noexcept {
  switch (c) {
    case Fidelity::Cause::kNone: return "none";
    case Fidelity::Cause::kStalls: return "stalls";
    case Fidelity::Cause::kSpeed: return "speed";
    case Fidelity::Cause::kDevice: return "device";
  }
  return "none";
}

const char* to_string(Fidelity::Verdict v) noexcept {
  switch (v) {
    case Fidelity::Verdict::kNotPaced: return "not_paced";
    case Fidelity::Verdict::kUnmeasured: return "unmeasured";
    case Fidelity::Verdict::kKeptPace: return "kept_pace";
    case Fidelity::Verdict::kFellBehind: return "fell_behind";
  }
  return "?";
}

static const char* ecn_label(Ecn e) noexcept {
  switch (e) {
    case Ecn::kNotEct: return "Not-ECT";
    case Ecn::kEct1: return "ECT(1)";
    case Ecn::kEct0: return "ECT(0)";
    case Ecn::kCe: return "CE";
  }
  return "?";
}

std::string format_traffic_class(const DpdkStats& s) {
  const DpdkStats::Settings& g = s.settings;
  const uint64_t* by = s.data_by_ecn;
  const uint64_t data = by[0] + by[1] + by[2] + by[3];
  const auto sent = static_cast<uint8_t>(g.ecn);
  // The default TOS that came back unchanged says nothing: no line.
  if (g.dscp == 0 && g.ecn == Ecn::kNotEct && by[sent] == data && s.dscp_changed == 0) return {};
  std::string arrived = fmt::format("{} {}", by[sent], ecn_label(g.ecn));
  for (const Ecn e : {Ecn::kCe, Ecn::kEct0, Ecn::kEct1, Ecn::kNotEct}) {
    const uint64_t n = by[static_cast<uint8_t>(e)];
    if (e == g.ecn || n == 0) continue;
    arrived += fmt::format(", {} {}", n, ecn_label(e));
    if (e == Ecn::kCe) {
      arrived += fmt::format(" ({:.2f}%: marked by a switch whose queue built up)",
                             100.0 * static_cast<double>(n) / static_cast<double>(data));
    } else if (e == Ecn::kNotEct) {
      arrived += " (their ECN cleared on the way)";
    }
  }
  return fmt::format("  traffic class       sent DSCP {}, {}; data frames received: {}; DSCP rewritten on {}{}\n", g.dscp,
                     ecn_label(g.ecn), arrived, s.dscp_changed,
                     g.ring_device.ecn_bytes == 0 ? std::string()
                                                  : fmt::format(" (the ring pair's device marked {} frames CE)",
                                                                s.ring_ce_marked));
}

namespace {

// With transmit lcores: a line per lcore under the `lcores` line.
std::string tx_lcores_text(const DpdkStats& s) {
  std::string out;
  for (const DpdkStats::TxLcore& l : s.tx_lcores) {
    out += fmt::format("    transmit lcore {}  port A queue{} {}{}: {} frames ({} data), {} bytes, {} messages, {} ACK/NACK "
                       "frames, {} rounds, {} bursts ({} not taken whole), {} stalls over 100 us\n",
                       l.lcore, l.queues > 1 ? "s" : "", l.queue,
                       l.queues > 1 ? fmt::format("-{}", l.queue + l.queues - 1) : std::string(), l.frames,
                       l.data_frames, l.bytes, l.messages, l.feedback, l.polls, l.bursts, l.full, l.stalls);
  }
  return out;
}

std::string lcores_text(const DpdkStats& s) {
  if (!s.tx_lcores.empty()) {
    std::string rx = s.rx_lcores.empty() ? std::string("the receive side on the main lcore")
                                         : fmt::format("receive side on {} lcore{}", s.rx_lcores.size(),
                                                       s.rx_lcores.size() > 1 ? "s" : "");
    for (size_t i = 0; i < s.rx_lcores.size(); ++i) {
      rx += fmt::format("{}lcore {} queue {}: {} frames in {} polls", i == 0 ? " (" : "; ", s.rx_lcores[i].lcore,
                        s.rx_lcores[i].queue, s.rx_lcores[i].frames, s.rx_lcores[i].polls);
    }
    if (!s.rx_lcores.empty()) rx += ")";
    return fmt::format("  lcores              main {} (walker, port A's feedback); senders and pacing on {} transmit "
                       "lcore{} (links by source rank mod {}); {}\n",
                       s.main_lcore, s.tx_lcores.size(), s.tx_lcores.size() > 1 ? "s" : "", s.tx_lcores.size(), rx) +
           tx_lcores_text(s);
  }
  if (s.rx_lcores.size() > 1) {
    std::string each;
    for (const DpdkStats::RxLcore& l : s.rx_lcores) {
      each += fmt::format("{}lcore {} on queue {}: {} frames in {} polls", each.empty() ? "" : "; ", l.lcore, l.queue,
                          l.frames, l.polls);
    }
    return fmt::format("  lcores              main {} (walker, senders, pacing, port A); receive side on {} lcores, "
                       "a queue of port B each ({})\n", s.main_lcore, s.rx_lcores.size(), each);
  }
  if (s.rx_lcore >= 0) {
    return fmt::format("  lcores              main {} (walker, senders, pacing, port A); receive side on lcore {} "
                       "({} frames in {} polls)\n", s.main_lcore, s.rx_lcore, s.rx_lcore_frames, s.rx_lcore_polls);
  }
  return fmt::format("  lcores              main {} polls everything\n", s.main_lcore);
}

std::string clocks_text(const DpdkStats& s) {
  std::string out;
  for (const DpdkStats::PortClock& c : s.rx_clocks) {
    const char* checks = c.checksums == "skipped" ? "not checked: an in-process ring pair hands over the sender's own mbufs"
                         : c.checksums == "nic"   ? "checked by the NIC"
                                                  : "checked by fabemu";
    out += fmt::format("  arrival clock       {} {}: {} (RX timestamp offload {}, payload checksums {}), {} of {} "
                       "frames hardware-timestamped\n",
                       c.role, c.port, c.clock, c.offload ? "on" : "not offered", checks, c.hw_timestamped, c.frames);
    if (c.clock == "nic") {
      out += fmt::format("  NIC clock fit       {:.9f} TSC ticks per NIC tick over the last {} samples, farthest "
                         "sample {:.1f} ns from the line\n",
                         c.fit_tsc_per_nic_tick, c.fit_samples, c.fit_max_residual_ns);
    }
  }
  return out;
}

std::string retransmit_text(const DpdkStats& s) {
  std::string out = fmt::format("  retransmit timeout  up to {:.3f} ms (adaptive: SRTT + 4 RTTVAR of the wire latency); a "
                                "lost tail on NACK after {}\n",
                                static_cast<double>(s.rto_max.ps()) / 1e9,
                                s.tail_age_min == emu::Duration{}
                                    ? std::string("the RTO (no message latency measured yet)")
                                    : fmt::format("down to {:.3f} ms", static_cast<double>(s.tail_age_min.ps()) / 1e9));
  for (size_t v = 1; v < kVerdictCount; ++v) {
    if (s.not_ours_by_verdict[v] > 0) {
      out += fmt::format("    {:<48} {}\n", std::string(to_string(static_cast<Verdict>(v))) + ":", s.not_ours_by_verdict[v]);
    }
  }
  return out;
}

// The paced links (D > 0): the pacing's ratios, each link's, the departure jitter, the device's refusals,
// the polling stalls.
std::string pacing_text(const DpdkStats& s) {
  std::string out;
  if (s.pacing_periods == 0) {
    out += fmt::format("  pacing              unmeasured: none of {} first links carried two frames with bytes back to "
                       "back (no span to compare with the target rate)\n",
                       s.links.size());
  } else {
    out += fmt::format("  pacing              achieved / target rate: median {:.5f} over {} undisturbed busy periods, "
                       "{:.5f} over all {} of {} first links ({} disturbed by stalls of the polling thread; "
                       "scheduled / actual wall span of each back-to-back period)\n",
                       s.pacing_median_ratio, s.pacing_periods - s.pacing_disturbed_periods, s.pacing_ratio,
                       s.pacing_periods, s.links.size(), s.pacing_disturbed_periods);
  }
  constexpr size_t kShown = 16;
  for (size_t i = 0; i < s.links.size() && i < kShown; ++i) {
    const DpdkStats::Link& l = s.links[i];
    out += fmt::format("    link #{:<6}{} frames, {} bytes, {} busy periods: target {:.3f} Gb/s, ", l.link, l.frames,
                       l.bytes, l.busy_periods, l.target_gbps);
    out += l.busy_periods == 0
               ? std::string("achieved unmeasured (no two frames back to back)\n")
               : fmt::format("achieved {:.3f} Gb/s (emulated), ratio {:.5f}\n", l.target_gbps * l.ratio, l.ratio);
  }
  if (s.links.size() > kShown) out += fmt::format("    ... {} more links\n", s.links.size() - kShown);
  out += fmt::format("  departure jitter    |actual - scheduled| {} ns over {} frames (wall, TSC after tx_burst); {}\n",
                     histogram_text(s.jitter_ns), s.jitter_ns.count(),
                     s.settings.ahead.ps() == 0
                         ? std::string("none built ahead (--dpdk-ahead 0)")
                         : fmt::format("{} of them built ahead (up to {} us before they were due, held until "
                                       "then: --dpdk-ahead)",
                                       s.frames_ahead, s.settings.ahead.ps() / 1'000'000));
  if (s.tx_full > 0) {
    out += fmt::format("  device full         the transmit queue was full in {} of {} flushes of data frames "
                       "(frames waited for the device)\n",
                       s.tx_full, s.tx_flushes);
  }
  out += fmt::format("  polling             main lcore {} stalls over 100 us, longest gap {} ns{}\n", s.poll_stalls,
                     s.poll_gap_max_ns,
                     s.rx_lcore < 0 ? std::string()
                                    : fmt::format("; receive lcore{} {} stalls, longest gap {} ns",
                                                  s.rx_lcores.size() > 1 ? "s" : "", s.rx_poll_stalls,
                                                  s.rx_poll_gap_max_ns));
  return out;
}

std::string links_text(const DpdkStats& s) {
  if (s.links.empty()) return {};
  if (s.dilation != 0) return pacing_text(s);
  uint64_t frames = 0, bytes = 0;
  for (const DpdkStats::Link& l : s.links) {
    frames += l.frames;
    bytes += l.bytes;
  }
  return fmt::format("  first links         {} carried {} frames ({} message bytes), not paced (D = 0)\n",
                     s.links.size(), frames, bytes);
}

std::string capture_text(const DpdkStats& s) {
  if (s.pcap.empty()) return {};
  std::string out = fmt::format("  capture             {} frames to {}; the polling lcores waited for its writer {} times, "
                                "{:.3f} ms in all\n",
                                s.pcap_frames, s.pcap, s.pcap_waits, static_cast<double>(s.pcap_wait_ns) / 1e6);
  if (!s.pcap_error.empty()) {
    out += fmt::format("  capture failed      {}: the file is incomplete (the frames in memory then are lost too), "
                       "{} frames sent after it were not captured; the run went on\n",
                       s.pcap_error, s.pcap_dropped);
  }
  return out;
}

// A run that fell behind by stalls of its polling lcores: what stalled them, and what to do.
std::string stalls_advice(const DpdkStats& s, const Fidelity& f) {
  const std::string which =
      f.undisturbed_ratio > 0
          ? fmt::format("The busy periods no stall disturbed kept pace (median {:.5f})", f.undisturbed_ratio)
          : fmt::format("Every one of the {} busy periods was disturbed by a stall", s.pacing_disturbed_periods);
  std::string counts = fmt::format("main lcore {} stalls over 100 us, longest {:.3f} ms", s.poll_stalls,
                                   static_cast<double>(s.poll_gap_max_ns) / 1e6);
  if (s.rx_lcore >= 0) {  // there is a receive lcore (else the main lcore's stalls are all there are)
    counts += fmt::format("; receive lcore {}, longest {:.3f} ms", s.rx_poll_stalls,
                          static_cast<double>(s.rx_poll_gap_max_ns) / 1e6);
  }
  if (s.pcap_waits > 0) {
    // The capture's own waits are stalls too: said before the OS is blamed.
    return fmt::format(
        "{}: the polling lcores stalled ({}), {} times waiting for the --pcap capture's writer ({:.3f} ms in "
        "all; the file took frames slower than the wire made them). Capture to a faster file system (e.g. "
        "tmpfs), or raise --dilation above {:g}\n",
        which, counts, s.pcap_waits, static_cast<double>(s.pcap_wait_ns) / 1e6, s.dilation);
  }
  return fmt::format(
      "{}: the OS took the polling lcores' cores ({}). Run nothing else on those cores (e.g. isolcpus=, no "
      "other busy process), or raise --dilation above {:g}\n",
      which, counts, s.dilation);
}

std::string fidelity_text(const DpdkStats& s) {
  const Fidelity f = fidelity(s);
  const std::string carried = fmt::format("their first links carried {:.5f} of their target rate ({} {:g}) and frames left a "
                                          "median {:.1f} ns (emulated) after their scheduled departure",
                                          f.rate_ratio, f.rate_ratio >= kKeptPaceRatio ? ">=" : "<", kKeptPaceRatio,
                                          f.departure_lateness_ns);
  switch (f.verdict) {
    case Fidelity::Verdict::kNotPaced:
      return {};
    case Fidelity::Verdict::kUnmeasured:
      return "  fidelity            unmeasured: no first link carried two frames with bytes back to back, so no rate could "
             "be compared with its target\n";
    case Fidelity::Verdict::kKeptPace:
      return fmt::format("  fidelity            the senders kept pace: {}{}\n", carried,
                         f.late_collectives == 0
                             ? std::string()
                             : fmt::format("; but {} of {} collectives started late (a stall or a cold start set some of "
                                           "their messages back: Measured vs modelled, column late start), so their "
                                           "deviations are partly fabemu's own",
                                           f.late_collectives, s.collectives.size()));
    case Fidelity::Verdict::kFellBehind:
      break;
  }
  std::string out = fmt::format("  fidelity            the senders fell behind: {}; the measured times include {}. ",
                                carried,
                                f.cause == Fidelity::Cause::kDevice ? "the frames' waits for the device"
                                                                    : "fabemu's own delay");
  if (f.cause == Fidelity::Cause::kDevice) {
    return out + fmt::format("The device took the frames slower than the target rate: its transmit queue was full in "
                             "{} of {} flushes, and the frames waited. A lab NIC slower than the target at this "
                             "dilation: raise --dilation above {:g}; the device under test: that is its rate\n",
                             s.tx_full, s.tx_flushes, s.dilation);
  }
  if (f.cause == Fidelity::Cause::kStalls) return out + stalls_advice(s, f);
  return out + fmt::format("Even the busy periods no stall disturbed reached only a median {:.5f} of the target rate: "
                           "raise --dilation above {:g} until this line says they kept pace\n",
                           f.undisturbed_ratio, s.dilation);
}

}  // namespace

std::string format_dpdk_stats(const DpdkStats& s) {
  std::string out = "DPDK\n" + wire_time_line(s);
  out += fmt::format("  messages            {} on the wire ({} bytes), {} local; {} reassembled ({} bytes), {} delivered\n",
                     s.messages, s.message_bytes, s.local_messages, s.messages_completed, s.bytes_completed,
                     s.deliveries);
  out += fmt::format("  frames sent         {} ({} bytes): {} data, {} retransmitted ({} on NACK, {} of them tail-loss "
                     "probes; {} on timeout), {} ACK, {} NACK\n",
                     s.frames_tx, s.frame_bytes_tx, s.data_frames, s.retransmissions, s.nack_retransmissions,
                     s.tail_retransmissions, s.timeout_retransmissions, s.acks, s.nacks);
  out += fmt::format("  frames received     {} ({} bytes); not ours {}\n", s.frames_rx, s.frame_bytes_rx, s.not_ours);
  out += format_traffic_class(s);
  out += wire_stalled_line(s);
  out += lcores_text(s);
  out += clocks_text(s);
  out += retransmit_text(s);
  out += wire_detected_line(s);
  out += wire_injected_line(s);
  if (s.dilation > 0) out += wire_late_line(s);
  out += links_text(s);
  if (s.latency_ns.count() > 0) {
    out += fmt::format("  wire latency        {} ns (wall) over {} messages (first frame taken by the device to last frame "
                       "received, TSC after tx_burst and rx_burst: "
                       "{} by the NIC's clock, {} by the TSC)\n",
                       histogram_text(s.latency_ns), s.latency_ns.count(), s.nic_arrivals,
                       s.latency_ns.count() - std::min(s.latency_ns.count(), s.nic_arrivals));
  }
  out += capture_text(s);
  out += fidelity_text(s);
  return out;
}

std::string format_measured_vs_modelled(const DpdkStats& s, const emu::RunResult& result, size_t top) {
  if (s.collectives.empty()) return {};
  std::vector<double> dev;
  dev.reserve(s.collectives.size());
  for (const DpdkStats::Collective& c : s.collectives) dev.push_back(c.deviation);
  std::sort(dev.begin(), dev.end());
  std::string out = "Measured vs modelled (per collective: last real arrival vs last modelled delivery, emulated time)\n";
  out += fmt::format("  {} collectives: deviation median {:+.3f}%, min {:+.3f}%, max {:+.3f}%\n", dev.size(),
                     100 * median_of_sorted(dev), 100 * dev.front(), 100 * dev.back());
  std::vector<const DpdkStats::Collective*> order;
  for (const DpdkStats::Collective& c : s.collectives) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [](const DpdkStats::Collective* a, const DpdkStats::Collective* b) {
    return std::abs(a->deviation) > std::abs(b->deviation);
  });
  size_t stalled = 0;
  for (const DpdkStats::Collective& c : s.collectives) stalled += c.stalled.ps() > 0;
  if (stalled > 0) {
    out += fmt::format("  {} of {} collectives overlapped stalls of a polling lcore (column stalled): a deviation of "
                       "that order may be fabemu's own, not the path's\n",
                       stalled, s.collectives.size());
  }
  // A late start of more than 1% of the modelled span is a deviation of that order that fabemu caused.
  size_t late = 0;
  for (const DpdkStats::Collective& c : s.collectives) late += started_late(c);
  if (late > 0) {
    out += fmt::format("  {} of {} collectives had a message leave later than its modelled departure by more than 1% of "
                       "the modelled span (column late start): that much of the deviation is fabemu's own (a cold "
                       "start, a stall, senders behind), not the path's\n",
                       late, s.collectives.size());
  }
  // CE-marked data frames per collective, when a device marked any: where its queues built.
  bool ce = false;
  for (const DpdkStats::Collective& c : s.collectives) ce = ce || c.ce_frames > 0;
  if (ce) {
    out += "  column CE: the collective's data frames that arrived marked CE (ECN: a switch's queue built up on "
           "their way)\n";
  }
  out += fmt::format("  {:<6} {:<16} {:<28} {:>10} {:>16} {:>16} {:>10} {:>14} {:>16}{}\n", "index", "type", "name",
                     "messages", "modelled (ns)", "measured (ns)", "deviation", "stalled (ns)", "late start (ns)",
                     ce ? fmt::format(" {:>10}", "CE") : std::string());
  for (size_t i = 0; i < order.size() && i < top; ++i) {
    const DpdkStats::Collective& c = *order[i];
    std::string type = "?", name = "?";
    if (c.coll < result.collectives.size()) {
      type = result.collectives[c.coll].type;
      name = result.collectives[c.coll].name;
    }
    if (name.size() > 28) name = name.substr(0, 25) + "...";
    out += fmt::format("  {:<6} {:<16} {:<28} {:>10} {:>16.3f} {:>16.3f} {:>+9.3f}% {:>14.3f} {:>16.3f}{}\n", c.coll,
                       type, name, c.messages, static_cast<double>(c.modelled.ps()) / 1000.0,
                       static_cast<double>(c.measured.ps()) / 1000.0, 100 * c.deviation,
                       static_cast<double>(c.stalled.ps()) / 1000.0, static_cast<double>(c.late_start.ps()) / 1000.0,
                       ce ? fmt::format(" {:>10}", c.ce_frames) : std::string());
  }
  if (order.size() > top) out += fmt::format("  ... {} more (all in the JSON report)\n", order.size() - top);
  return out;
}

namespace {

std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{:.6f}", v) : std::string("null"); }

std::string settings_json(const DpdkStats::Settings& g) {
  return fmt::format("{{\"mode\": \"{}\", \"wire_mtu\": {}, \"window\": {}, \"rto_us\": {}, \"nack_delay_us\": {}, "
                     "\"stall_timeout_ms\": {}, \"drop_rate\": {}, \"reorder_rate\": {}, \"duplicate_rate\": {}, "
                     "\"fault_seed\": {}, \"verify_checksums\": \"{}\", \"dscp\": {}, \"ecn\": \"{}\", "
                     "\"ring_delay_ns\": {}, \"ring_bytes_per_sec\": {}, \"ring_ecn_bytes\": {}, \"ahead_us\": {}}}",
                     g.mode == WireMode::kRoceV2 ? "roce" : "fabemu", g.wire_mtu, g.window, g.rto.ps() / 1'000'000,
                     g.nack_delay.ps() / 1'000'000, g.stall_timeout.ps() / 1'000'000'000, json_number(g.faults.drop_rate),
                     json_number(g.faults.reorder_rate), json_number(g.faults.duplicate_rate), g.faults.seed,
                     g.verify_checksums_on ? "on" : "auto", g.dscp, to_string(g.ecn), g.ring_device.delay_ns,
                     g.ring_device.bytes_per_sec, g.ring_device.ecn_bytes, g.ahead.ps() / 1'000'000);
}

// A JSON array of one object per element of `v` (object(x): its text), inline ("[a, b]") or one a line.
template <class T, class Object>
std::string json_array(const std::vector<T>& v, bool lines, Object object) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    out += i == 0 ? "" : lines ? "," : ", ";
    if (lines) out += "\n      ";
    out += object(v[i]);
  }
  return out + (lines && !v.empty() ? "\n    ]" : "]");
}

std::string rx_lcores_json(const DpdkStats& s) {
  return json_array(s.rx_lcores, false, [](const DpdkStats::RxLcore& l) {
    return fmt::format("{{\"lcore\": {}, \"queue\": {}, \"frames\": {}, \"polls\": {}}}", l.lcore, l.queue, l.frames,
                       l.polls);
  });
}

std::string tx_lcores_json(const DpdkStats& s) {
  return json_array(s.tx_lcores, false, [](const DpdkStats::TxLcore& l) {
    return fmt::format("{{\"lcore\": {}, \"queue\": {}, \"queues\": {}, \"frames\": {}, \"bytes\": {}, "
                       "\"data_frames\": {}, \"messages\": {}, \"feedback\": {}, \"polls\": {}, \"bursts\": {}, "
                       "\"bursts_not_whole\": {}, \"stalls\": {}}}",
                       l.lcore, l.queue, l.queues, l.frames, l.bytes, l.data_frames, l.messages, l.feedback, l.polls,
                       l.bursts, l.full, l.stalls);
  });
}

std::string rx_clocks_json(const DpdkStats& s) {
  return json_array(s.rx_clocks, false, [](const DpdkStats::PortClock& c) {
    return fmt::format("{{\"port\": \"{}\", \"role\": \"{}\", \"clock\": \"{}\", \"offload\": {}, "
                       "\"checksum_offload\": {}, \"checksums\": \"{}\", \"frames\": {}, \"hw_timestamped\": {}, "
                       "\"fit_samples\": {}, \"fit_tsc_per_nic_tick\": {:.9f}, \"fit_max_residual_ns\": {:.1f}}}",
                       c.port, c.role, c.clock, c.offload, c.checksum_offload, c.checksums, c.frames, c.hw_timestamped,
                       c.fit_samples, c.fit_tsc_per_nic_tick, c.fit_max_residual_ns);
  });
}

std::string pcap_json(const DpdkStats& s) {
  if (s.pcap.empty()) return "null";
  return fmt::format("{{\"path\": {}, \"frames\": {}, \"waits\": {}, \"wait_ns\": {}, \"error\": {}, \"dropped\": {}}}",
                     nlohmann::json(s.pcap).dump(), s.pcap_frames, s.pcap_waits, s.pcap_wait_ns,
                     s.pcap_error.empty() ? std::string("null") : nlohmann::json(s.pcap_error).dump(), s.pcap_dropped);
}

std::string fidelity_json(const DpdkStats& s) {
  const Fidelity f = fidelity(s);
  return fmt::format("{{\"verdict\": \"{}\", \"cause\": \"{}\", \"kept_pace_ratio\": {}, \"rate_ratio\": {}, "
                     "\"undisturbed_median_ratio\": {}, \"median_departure_lateness_ns\": {}, "
                     "\"late_collectives\": {}}}",
                     to_string(f.verdict), to_string(f.cause), json_number(kKeptPaceRatio), json_number(f.rate_ratio),
                     json_number(f.undisturbed_ratio), json_number(f.departure_lateness_ns), f.late_collectives);
}

std::string links_json(const DpdkStats& s) {
  return json_array(s.links, true, [](const DpdkStats::Link& l) {
    return fmt::format("{{\"link\": {}, \"frames\": {}, \"bytes\": {}, \"target_gbps\": {}, \"achieved_gbps\": {}, "
                       "\"ratio\": {}, \"busy_periods\": {}, \"disturbed_periods\": {}}}",
                       l.link, l.frames, l.bytes, json_number(l.target_gbps),
                       l.busy_periods == 0 ? "null" : json_number(l.target_gbps * l.ratio),
                       l.busy_periods == 0 ? "null" : json_number(l.ratio), l.busy_periods, l.disturbed_periods);
  });
}

std::string collectives_json(const DpdkStats& s) {
  return json_array(s.collectives, true, [](const DpdkStats::Collective& c) {
    return fmt::format("{{\"index\": {}, \"messages\": {}, \"bytes\": {}, \"modelled_ps\": {}, \"measured_ps\": {}, "
                       "\"deviation\": {}, \"stalled_ps\": {}, \"late_start_ps\": {}, \"ce_frames\": {}}}",
                       c.coll, c.messages, c.bytes, c.modelled.ps(), c.measured.ps(), json_number(c.deviation),
                       c.stalled.ps(), c.late_start.ps(), c.ce_frames);
  });
}

}  // namespace

std::string dpdk_stats_to_json(const DpdkStats& s) {
  ReportObject o;
  const auto n = [](uint64_t v) { return fmt::format("{}", v); };
  wire_fields_json(o, s, "dilation", "dilation", true);
  o.field("settings", settings_json(s.settings));
  wire_fields_json(o, s, "wall_ps", "wall_ps", true);
  o.field("messages", n(s.messages));
  wire_fields_json(o, s, "local_messages", "local_messages", true);
  counts_json<DpdkStats>(o, s, {{"message_bytes", &DpdkStats::message_bytes},
                                {"messages_completed", &DpdkStats::messages_completed},
                                {"bytes_completed", &DpdkStats::bytes_completed}});
  wire_fields_json(o, s, "deliveries", "deliveries", true);
  counts_json<DpdkStats>(o, s, {{"frames_tx", &DpdkStats::frames_tx},
                                {"frame_bytes_tx", &DpdkStats::frame_bytes_tx},
                                {"frames_rx", &DpdkStats::frames_rx},
                                {"frame_bytes_rx", &DpdkStats::frame_bytes_rx}});
  wire_fields_json(o, s, "stall", "stall", true);
  o.field("main_lcore", n(s.main_lcore));
  o.field("rx_lcore", fmt::format("{}", s.rx_lcore));
  counts_json<DpdkStats>(o, s, {{"rx_lcore_frames", &DpdkStats::rx_lcore_frames},
                                {"rx_lcore_polls", &DpdkStats::rx_lcore_polls}});
  o.field("rx_lcores", rx_lcores_json(s));
  // Only with transmit lcores (a run without them keeps its report byte for byte).
  if (!s.tx_lcores.empty()) o.field("tx_lcores", tx_lcores_json(s));
  o.field("nic_arrivals", n(s.nic_arrivals));
  o.field("data_by_ecn", ecn_counts_json(s.data_by_ecn));
  o.field("dscp_changed", n(s.dscp_changed));
  o.field("ring_ce_marked", n(s.ring_ce_marked));
  o.field("rx_clocks", rx_clocks_json(s));
  o.field("data_frames", n(s.data_frames));
  wire_fields_json(o, s, "retransmissions", "tail_retransmissions", true);
  o.field("tail_age_min_ps", n(s.tail_age_min.ps()));
  wire_fields_json(o, s, "nacks_in_flight", "not_ours", true);
  o.field("not_ours_by_verdict", verdict_counts_json(s.not_ours_by_verdict,
                                                     [](size_t v) { return to_string(static_cast<Verdict>(v)); }));
  wire_fields_json(o, s, "late", "jitter_ns", true);
  o.field("frames_ahead", n(s.frames_ahead));
  wire_fields_json(o, s, "poll_gap_max_ns", "poll_stalls", true);
  counts_json<DpdkStats>(o, s, {{"tx_flushes", &DpdkStats::tx_flushes},
                                {"tx_full", &DpdkStats::tx_full},
                                {"rx_poll_gap_max_ns", &DpdkStats::rx_poll_gap_max_ns},
                                {"rx_poll_stalls", &DpdkStats::rx_poll_stalls}});
  o.field("pcap", pcap_json(s));
  // No busy period: nothing was compared with the target rate (null, not a ratio of 0).
  o.field("pacing_ratio", s.pacing_periods == 0 ? "null" : json_number(s.pacing_ratio));
  o.field("pacing_median_ratio", s.pacing_periods == 0 ? "null" : json_number(s.pacing_median_ratio));
  o.field("fidelity", fidelity_json(s));
  counts_json<DpdkStats>(o, s, {{"pacing_periods", &DpdkStats::pacing_periods},
                                {"pacing_disturbed_periods", &DpdkStats::pacing_disturbed_periods}});
  o.field("links", links_json(s));
  o.field("collectives", collectives_json(s));
  return o.close();
}

}  // namespace fabemu::host::dpdk
