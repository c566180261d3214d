// What both real-time fabrics measure of a run on the wire (the DPDK fabric's DpdkStats, frames on a port;
// the lab's SocketStats, datagrams): the reliability layer's work (reassembly.h), what the receive side
// refused and the fault injection did, how late deliveries were, how steadily the fabric polled. Each
// fabric's stats type derives from WireStats and adds its own. One field list (kWireFields in
// wire_counters.cpp) gives their sum (operator+=) and their JSON; the report lines the two fabrics print
// alike are written here once (wire_*_line).
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "emulator/histogram.h"
#include "emulator/time.h"
#include "host/wire/reassembly.h"

namespace fabemu::host::dpdk {

// The counters: cheap to copy and to sum.
struct WireCounters {
  uint64_t local_messages = 0;        // src == dst: not on the wire
  uint64_t deliveries = 0;            // messages handed to the walker
  // The senders' (SenderStats, summed by add_sent): packets sent again, on NACK or on timeout; of the NACK
  // ones, packets past what their NACK covered, taken as lost for their age (tail-loss probes); NACKed
  // packets not sent again (their last copy left after what the NACK says arrived: still on their way).
  uint64_t retransmissions = 0, nack_retransmissions = 0, timeout_retransmissions = 0;
  uint64_t tail_retransmissions = 0, nacks_in_flight = 0;
  uint64_t acks = 0, nacks = 0;       // feedback frames or datagrams
  // The receivers' (ReceiverStats, add_received): copies of a packet they had, packets below the highest
  // of their message, copies of messages already complete.
  uint64_t rx_duplicates = 0, rx_reordered = 0, rx_stale = 0;
  // Ours but refused: by the fabric (ranks out of range, feedback for no sender) and, where the fabric
  // counts them apart, by its receivers (window, inconsistent). The reports print their sum.
  uint64_t rx_invalid = 0, rx_receiver_invalid = 0;
  uint64_t injected_drops = 0, injected_duplicates = 0, injected_reorders = 0;  // the fault injection's
  uint64_t not_ours = 0;              // frames or datagrams that were not for this run
  uint64_t late = 0, on_time = 0;     // D > 0: messages complete on the wire after / by their modelled time
  // Gaps between the starts of two rounds of polling (wall): the longest, and the stalls (over 100 us).
  uint64_t poll_gap_max_ns = 0, poll_stalls = 0;

  // Every counter of the field list summed (poll_gap_max_ns: the larger kept).
  WireCounters& operator+=(const WireCounters& o) noexcept;
  // A sender's counters added (retransmissions, tail_retransmissions, nacks_in_flight).
  void add_sent(const SenderStats& s) noexcept;
  // A receiver's counters added (rx_duplicates, rx_reordered, rx_stale).
  void add_received(const ReceiverStats& r) noexcept;
  // A fault injection's counts added (injected_*).
  void add_faults(const FaultFilter& f) noexcept;
  // Zeroes the counters that add_sent, add_received and add_faults add, and rx_receiver_invalid: a
  // fabric's sums over its senders and receivers, which its stats() takes afresh (clear_sums, then += the
  // new sums).
  void clear_sums() noexcept;
};

struct WireStats : WireCounters {
  double dilation = 0;                // 0: as fast as possible; D > 0: D times slower than the target
  emu::Duration wall;                 // wall time from the clock's start (the first send) to the last poll
  // Non-empty when the run stopped because nothing arrived for the stall timeout: which message waited,
  // for what, and what else arrived meanwhile.
  std::string stall;
  emu::Duration rto_max;              // the largest retransmission timeout the senders had (adaptive)
  emu::LogHistogram lateness_ns;      // D > 0: emulated ns late, of the late ones
  emu::LogHistogram latency_ns;       // per message on the wire, wall ns (each fabric says from what to what)
  emu::LogHistogram jitter_ns;        // D > 0: |actual - scheduled departure| per paced first transmission
};

// The fields of wire_fields() from the one with JSON key `first` through `last`, in the list's order, as
// lines of a report object (ReportObject::field). Histograms with `detailed` (histogram_json) buckets.
class ReportObject;
void wire_fields_json(ReportObject& o, const WireStats& s, std::string_view first, std::string_view last,
                      bool detailed_histograms);

// A report section's JSON object: "{", a line `    "key": value` each, "  }".
class ReportObject {
 public:
  void field(std::string_view key, const std::string& value);
  std::string close() const { return out_ + "\n  }"; }

 private:
  std::string out_ = "{";
};

// A stats type's own counters as a field list, {JSON key, member} each, and their lines of a report object.
template <class S>
struct CountField {
  std::string_view key;
  uint64_t S::*member;
};
template <class S>
void counts_json(ReportObject& o, const S& s, std::initializer_list<CountField<S>> fields) {
  for (const CountField<S>& f : fields) o.field(f.key, fmt::format("{}", s.*f.member));
}

// {"<name(v)>": count, ...} of the counts by verdict that are not zero, from verdict 1 (0 is "ours").
template <class Name>
std::string verdict_counts_json(std::span<const uint64_t> counts, Name name) {
  std::string out = "{";
  for (size_t v = 1; v < counts.size(); ++v) {
    if (counts[v] == 0) continue;
    out += fmt::format("{}\"{}\": {}", out.size() == 1 ? "" : ", ", name(v), counts[v]);
  }
  return out + "}";
}

// {"not_ect": .., "ect1": .., "ect0": .., "ce": ..} of counts by ECN codepoint (index: Ecn).
std::string ecn_counts_json(const uint64_t (&by_ecn)[4]);

// The lines both fabrics print alike.
std::string wire_time_line(const WireStats& s);      // "  time ...": the dilation and the wall time
std::string wire_stalled_line(const WireStats& s);   // "  stalled ...", "" when the run did not stall
std::string wire_detected_line(const WireStats& s);  // "  detected ...": duplicates, reordered, stale, invalid
std::string wire_injected_line(const WireStats& s);  // "  injected faults ...", "" when none were injected
std::string wire_late_line(const WireStats& s);      // "  late deliveries ..." (D > 0)

// The run's warning about its NACKs, or "": more than kNackWarnShare of its `data_frames` NACKed, with no
// fault injected (which explains them). `nack_delay` says what the delay was and how to set it ("" leaves it
// out). Paced fabrics raise the NACK delay to several frame times (paced_nack_floor), so a clean path sends
// none at any dilation.
inline constexpr double kNackWarnShare = 0.01;
std::string wire_nack_warning(const WireStats& s, uint64_t data_frames, std::string_view fabric,
                              std::string_view nack_delay);

}  // namespace fabemu::host::dpdk
