// DpdkFabric::stats(): the main lcore's counters, the senders', the receive side's (once its lcores have
// stopped), the pacing per link and the per-collective measurements, as DpdkStats (dpdk_stats.h).
#include <rte_cycles.h>

#include <algorithm>
#include <string_view>

#include "host/dpdk/dpdk_fabric.h"

namespace fabemu::host::dpdk {

namespace {

double rate_gbps(emu::Rate r) {
  const uint64_t raw = r.ps_per_byte_q32();
  return raw == 0 ? 0.0 : 8000.0 * 4294967296.0 / static_cast<double>(raw);
}

}  // namespace

const DpdkStats& DpdkFabric::stats() {
  DpdkStats& s = stats_;
  s.wall = clock_.wall().since_start();
  s.stall = stall_;
  // The receive side's counters: its lcores' own until they have stopped (then only what the completions
  // told this lcore is known).
  const bool rx_readable = !workers_running();
  sum_counters(s, rx_readable);
  pacing_stats(s);
  collective_stats(s, rx_readable);
  // The main lcore's counters plus the transmit lcores' and the receive side's.
  out_ = s;
  transmit_side_stats();
  receive_side_stats(rx_readable);
  return out_;
}

void DpdkFabric::sum_counters(DpdkStats& s, bool rx_readable) const {
  WireCounters sums;
  if (lanes_readable()) {
    for (const auto& lane : lanes_) {
      for (size_t i = 0; i < lane->senders.size(); ++i) sums.add_sent(lane->senders[i].stats());
    }
  }
  s.bytes_completed = completed_bytes_;
  s.messages_completed = completed_messages_;
  if (rx_readable) {
    s.bytes_completed = s.messages_completed = 0;
    for (const auto& path : rx_paths_) {
      const ReceiverStats st = path->receiver_totals();
      sums.add_received(st);
      sums.rx_receiver_invalid += st.invalid + st.out_of_window;
      sums.add_faults(path->faults());
      s.bytes_completed += st.bytes_completed;
      s.messages_completed += st.completed;
    }
  }
  s.clear_sums();
  s += sums;
}

void DpdkFabric::pacing_stats(DpdkStats& s) const {
  s.links.clear();
  s.pacing_ratio = s.pacing_median_ratio = 0;
  s.pacing_periods = s.pacing_disturbed_periods = 0;
  if (!lanes_readable()) return;  // the transmit lcores still run: their links are their own
  std::vector<double> ratios;
  for (const auto& lane : lanes_) ratios.insert(ratios.end(), lane->period_ratios.begin(), lane->period_ratios.end());
  double scheduled_total = 0, actual_total = 0;
  for (size_t l = 0; l < model_.topology().links().size(); ++l) {
    // A link's frames are its source rank's lane's (the other lanes never touch it).
    const TxLane* owner = lanes_[0].get();
    for (const auto& lane : lanes_) {
      if (lane->link_pace[l].frames > 0) owner = lane.get();
    }
    LinkPace lp = owner->link_pace[l];  // the open period is closed in this copy only
    if (lp.frames == 0) continue;
    if (lp.open) close_period(lp, ratios, *owner->stalls);
    DpdkStats::Link out;
    out.link = static_cast<uint32_t>(l);
    out.bytes = lp.bytes;
    out.frames = lp.frames;
    out.target_gbps = rate_gbps(model_.topology().link(static_cast<emu::LinkId>(l)).rate);
    out.busy_periods = lp.busy_periods;
    out.disturbed_periods = lp.disturbed;
    out.spanned_bytes = lp.spanned_bytes;
    out.scheduled_ns = lp.scheduled_ns;
    out.actual_ns = lp.actual_ns;
    if (out.actual_ns > 0) out.ratio = out.scheduled_ns / out.actual_ns;
    scheduled_total += out.scheduled_ns;
    actual_total += out.actual_ns;
    s.pacing_periods += out.busy_periods;
    s.pacing_disturbed_periods += out.disturbed_periods;
    s.links.push_back(out);
  }
  if (actual_total > 0) s.pacing_ratio = scheduled_total / actual_total;
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    s.pacing_median_ratio = median_of_sorted(ratios);
  }
}

// Every polling lcore's stalls, wall ps, merged: what each collective's span overlaps.
std::vector<Span> DpdkFabric::stall_spans(bool rx_readable) const {
  std::vector<Span> stalls;
  stalls.reserve(stalls_.size());
  for (const Stall& st : stalls_) stalls.push_back(Span{st.from_ps, st.to_ps});
  if (tx_lcores_on() && lanes_readable()) {
    for (const auto& lane : lanes_) {
      for (const PollStall& st : lane->own_stalls) stalls.push_back(Span{st.from_ps, st.to_ps});
    }
  }
  if (!workers_.empty() && rx_readable) {
    for (const auto& path : rx_paths_) {
      for (const TickSpan& t : path->stalls()) {
        stalls.push_back(Span{clock_.wall_at(t.from).ps(), clock_.wall_at(t.to).ps()});
      }
    }
  }
  merge_spans(stalls);
  return stalls;
}

void DpdkFabric::collective_stats(DpdkStats& s, bool rx_readable) const {
  const std::vector<Span> stalls = coll_spans_.empty() ? std::vector<Span>() : stall_spans(rx_readable);
  s.collectives.clear();
  for (const CollectiveSpans::Span& span : coll_spans_.spans()) {
    const CollExtra& extra = coll_extra_[span.coll];
    DpdkStats::Collective out;
    out.coll = span.coll;
    out.messages = span.messages;
    out.bytes = span.bytes;
    out.modelled = span.modelled;
    out.measured = span.measured;
    out.late_start = emu::Duration::from_ps(extra.late_start_ps);
    out.ce_frames = extra.ce;
    out.deviation = span.deviation;
    if (!stalls.empty() && span.measured.ps() > 0 && clock_.dilation_q16() != 0) {
      // The span on the wall clock (emulated times D), its stalled wall time back to emulated (over D).
      const uint64_t from = clock_.to_wall(emu::Duration::from_ps(span.measured_from_ps)).ps();
      const uint64_t to = clock_.to_wall(emu::Duration::from_ps(span.measured_to_ps)).ps();
      const uint64_t wall = covered_within(stalls, from, to);
      out.stalled = emu::Duration::from_ps(
          static_cast<uint64_t>((emu::detail::u128{wall} << 16) / clock_.dilation_q16()));
    }
    s.collectives.push_back(out);
  }
}

// out_ (stats_ as the main lcore has it): the transmit lcores' counters (once they have stopped), each
// lcore's line, and the frames still held (a run that stopped early: built ahead, never sent).
void DpdkFabric::transmit_side_stats() {
  out_.tx_lcores.clear();
  if (!lanes_readable()) {
    for (const auto& lane : lanes_) out_.tx_lcores.push_back(DpdkStats::TxLcore{lane->lcore, lane->txq_base});
    return;
  }
  for (const auto& lane : lanes_) {
    if (tx_lcores_on()) {
      const DpdkStats& t = lane->own_stats;
      out_.frames_tx += t.frames_tx;
      out_.frame_bytes_tx += t.frame_bytes_tx;
      out_.data_frames += t.data_frames;
      out_.frames_ahead += t.frames_ahead;
      out_.tx_flushes += t.tx_flushes;
      out_.tx_full += t.tx_full;
      out_.rx_invalid += t.rx_invalid;
      out_.jitter_ns.merge(t.jitter_ns);
    }
    uint64_t held_bytes = 0;
    for (const uint32_t si : lane->holding) {
      const Held& h = lane->held[si];
      for (size_t i = h.mbuf_head; i < h.mbufs.size(); ++i) held_bytes += rte_pktmbuf_pkt_len(h.mbufs[i]);
    }
    // Frames built ahead and still held have not been sent.
    out_.frames_tx -= lane->held_frames;
    out_.data_frames -= lane->held_frames;
    out_.frames_ahead -= lane->held_frames;
    out_.frame_bytes_tx -= held_bytes;
    if (tx_lcores_on()) {
      const DpdkStats& t = lane->own_stats;
      out_.tx_lcores.push_back(DpdkStats::TxLcore{
          lane->lcore, lane->txq_base, static_cast<uint16_t>(lane->data.size()), t.frames_tx - lane->held_frames,
          t.frame_bytes_tx - held_bytes, t.data_frames - lane->held_frames, lane->counters.polls, t.tx_flushes,
          t.tx_full, lane->counters.poll_stalls, lane->counters.handed, lane->counters.feedback});
    }
  }
}

// out_ (stats_ as the main lcore has it): the receive lcores, the arrival clocks and the receive paths'
// counters.
void DpdkFabric::receive_side_stats(bool rx_readable) {
  out_.rx_lcore = rx_lcore();
  out_.rx_lcores.clear();
  out_.rx_clocks.clear();
  out_.ring_ce_marked = ports_.ring_pair() != nullptr ? ports_.ring_pair()->ce_marked() : 0;
  const bool two_ports = &ports_.a() != &ports_.b();
  DpdkStats::PortClock b;
  b.port = ports_.b().name();
  b.role = two_ports ? "data (B)" : "data and ACK/NACK (A = B)";
  b.clock = rx_paths_[0]->clock_name();
  b.offload = ports_.b().rx_timestamp_offload();
  b.checksum_offload = ports_.b().rx_checksum_offload();
  const auto checksums_of = [this](const Port& p) -> const char* {
    return !rules_.verify_udp_checksum ? "skipped" : p.rx_checksum_offload() ? "nic" : "fabemu";
  };
  b.checksums = checksums_of(ports_.b());
  if (rx_readable) {
    out_.nic_arrivals = 0;
    std::fill(std::begin(out_.data_by_ecn), std::end(out_.data_by_ecn), uint64_t{0});
    out_.dscp_changed = 0;
    out_.rx_lcore_frames = out_.rx_lcore_polls = out_.rx_poll_stalls = out_.rx_poll_gap_max_ns = 0;
    for (size_t q = 0; q < rx_paths_.size(); ++q) {
      const RxPathStats& r = rx_paths_[q]->stats();
      out_.frames_rx += r.frames_rx;
      out_.frame_bytes_rx += r.frame_bytes_rx;
      out_.frames_tx += r.frames_tx;
      out_.frame_bytes_tx += r.frame_bytes_tx;
      out_.acks += r.acks;
      out_.nacks += r.nacks;
      out_.not_ours += r.not_ours;
      for (size_t v = 0; v < kVerdictCount; ++v) out_.not_ours_by_verdict[v] += r.not_ours_by_verdict[v];
      out_.rx_invalid += r.rx_invalid;
      out_.nic_arrivals += r.nic_arrivals;
      for (size_t e = 0; e < 4; ++e) out_.data_by_ecn[e] += r.data_by_ecn[e];
      out_.dscp_changed += r.dscp_changed;
      if (!workers_.empty()) {
        out_.rx_lcore_frames += r.frames_rx;
        out_.rx_lcore_polls += r.polls;
        out_.rx_poll_stalls += r.poll_stalls;
        out_.rx_poll_gap_max_ns = std::max(out_.rx_poll_gap_max_ns, r.poll_gap_max_ns);
        out_.rx_lcores.push_back(DpdkStats::RxLcore{workers_[q]->lcore(), rx_paths_[q]->queue(), r.frames_rx, r.polls});
      }
      b.frames += r.frames_rx;
      b.hw_timestamped += r.hw_timestamped;
    }
  }
  if (!rx_readable) {  // the lcores still run: their counters are their own
    for (size_t q = 0; q < workers_.size(); ++q) {
      out_.rx_lcores.push_back(DpdkStats::RxLcore{workers_[q]->lcore(), rx_paths_[q]->queue(), 0, 0});
    }
  }
  if (rx_readable && rx_paths_[0]->clock_name() == std::string_view("nic")) {
    const ClockFit& fit = rx_paths_[0]->clock_fit();
    b.fit_samples = fit.samples();
    b.fit_tsc_per_nic_tick = fit.slope();
    for (const auto& path : rx_paths_) {
      b.fit_max_residual_ns = std::max(b.fit_max_residual_ns, path->clock_fit().max_residual() * 1e9 /
                                                                  static_cast<double>(rte_get_tsc_hz()));
    }
  }
  out_.rx_clocks.push_back(b);
  if (two_ports) {
    DpdkStats::PortClock a;
    a.port = ports_.a().name();
    a.role = "ACK/NACK (A)";
    a.clock = "tsc";  // feedback arrivals are not timed
    a.offload = ports_.a().rx_timestamp_offload();
    a.checksum_offload = ports_.a().rx_checksum_offload();
    a.checksums = checksums_of(ports_.a());
    a.frames = stats_.frames_rx;
    a.hw_timestamped = a_hw_timestamped_;
    out_.rx_clocks.push_back(a);
  }
}

RealtimeFabric::ReportSection DpdkFabric::report_section() {
  const DpdkStats& st = stats();
  return {"dpdk", dpdk_stats_to_json(st), format_dpdk_stats(st)};
}

}  // namespace fabemu::host::dpdk
