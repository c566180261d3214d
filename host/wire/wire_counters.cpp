#include "host/wire/wire_counters.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "host/wire/histogram_format.h"

namespace fabemu::host::dpdk {

namespace {

// One field of WireStats: its JSON key, how it sums, where it is.
struct WireField {
  enum class Kind : uint8_t {
    kCount,     // summed; JSON its value
    kMax,       // the larger kept; JSON its value
    kDuration,  // JSON in ps (not summed: WireStats)
    kHistogram, // JSON histogram_json (not summed: WireStats)
    kReal,      // JSON as fmt's {} (not summed: WireStats)
    kText       // JSON a string, null when empty (not summed: WireStats)
  };
  std::string_view key;
  Kind kind;
  uint64_t WireCounters::*count = nullptr;       // kCount, kMax
  emu::Duration WireStats::*duration = nullptr;  // kDuration
  emu::LogHistogram WireStats::*histogram = nullptr;
  double WireStats::*real = nullptr;
  std::string WireStats::*text = nullptr;
};

constexpr WireField count(std::string_view key, uint64_t WireCounters::*m) {
  return {key, WireField::Kind::kCount, m};
}
constexpr WireField maximum(std::string_view key, uint64_t WireCounters::*m) {
  return {key, WireField::Kind::kMax, m};
}
constexpr WireField duration(std::string_view key, emu::Duration WireStats::*m) {
  return {key, WireField::Kind::kDuration, nullptr, m};
}
constexpr WireField histogram(std::string_view key, emu::LogHistogram WireStats::*m) {
  return {key, WireField::Kind::kHistogram, nullptr, nullptr, m};
}
constexpr WireField real(std::string_view key, double WireStats::*m) {
  return {key, WireField::Kind::kReal, nullptr, nullptr, nullptr, m};
}
constexpr WireField text(std::string_view key, std::string WireStats::*m) {
  return {key, WireField::Kind::kText, nullptr, nullptr, nullptr, nullptr, m};
}

// The field list, in the reports' JSON order (each fabric prints runs of it between fields of its own).
// rx_invalid's JSON is rx_invalid + rx_receiver_invalid (wire_fields_json).
constexpr std::array kWireFields = {
    real("dilation", &WireStats::dilation),
    duration("wall_ps", &WireStats::wall),
    text("stall", &WireStats::stall),
    count("local_messages", &WireCounters::local_messages),
    count("deliveries", &WireCounters::deliveries),
    count("retransmissions", &WireCounters::retransmissions),
    count("nack_retransmissions", &WireCounters::nack_retransmissions),
    count("timeout_retransmissions", &WireCounters::timeout_retransmissions),
    count("tail_retransmissions", &WireCounters::tail_retransmissions),
    count("nacks_in_flight", &WireCounters::nacks_in_flight),
    duration("rto_max_ps", &WireStats::rto_max),
    count("acks", &WireCounters::acks),
    count("nacks", &WireCounters::nacks),
    count("rx_duplicates", &WireCounters::rx_duplicates),
    count("rx_reordered", &WireCounters::rx_reordered),
    count("rx_stale", &WireCounters::rx_stale),
    count("rx_invalid", &WireCounters::rx_invalid),
    count("rx_receiver_invalid", &WireCounters::rx_receiver_invalid),
    count("injected_drops", &WireCounters::injected_drops),
    count("injected_duplicates", &WireCounters::injected_duplicates),
    count("injected_reorders", &WireCounters::injected_reorders),
    count("not_ours", &WireCounters::not_ours),
    count("late", &WireCounters::late),
    count("on_time", &WireCounters::on_time),
    histogram("lateness_ns", &WireStats::lateness_ns),
    histogram("latency_ns", &WireStats::latency_ns),
    histogram("jitter_ns", &WireStats::jitter_ns),
    maximum("poll_gap_max_ns", &WireCounters::poll_gap_max_ns),
    count("poll_stalls", &WireCounters::poll_stalls),
};

size_t index_of(std::string_view key) {
  for (size_t i = 0; i < kWireFields.size(); ++i) {
    if (kWireFields[i].key == key) return i;
  }
  throw std::logic_error(fmt::format("wire_fields_json: no field {}", key));
}

std::string dilation_text(double d) {
  return d == 0 ? std::string("as fast as possible (deliveries at modelled times)")
                : fmt::format("dilation {:g} (emulated = wall / {:g})", d, d);
}

}  // namespace

WireCounters& WireCounters::operator+=(const WireCounters& o) noexcept {
  for (const WireField& f : kWireFields) {
    if (f.kind == WireField::Kind::kCount) {
      this->*f.count += o.*f.count;
    } else if (f.kind == WireField::Kind::kMax) {
      this->*f.count = std::max(this->*f.count, o.*f.count);
    }
  }
  return *this;
}

void WireCounters::add_sent(const SenderStats& s) noexcept {
  retransmissions += s.retransmissions;
  nack_retransmissions += s.nack_retransmissions;
  timeout_retransmissions += s.timeout_retransmissions;
  tail_retransmissions += s.tail_retransmissions;
  nacks_in_flight += s.nacks_in_flight;
}

void WireCounters::add_received(const ReceiverStats& r) noexcept {
  rx_duplicates += r.duplicates;
  rx_reordered += r.reordered;
  rx_stale += r.stale;
}

void WireCounters::add_faults(const FaultFilter& f) noexcept {
  injected_drops += f.dropped();
  injected_duplicates += f.duplicated();
  injected_reorders += f.reordered();
}

void WireCounters::clear_sums() noexcept {
  retransmissions = nack_retransmissions = timeout_retransmissions = tail_retransmissions = nacks_in_flight = 0;
  rx_duplicates = rx_reordered = rx_stale = rx_receiver_invalid = 0;
  injected_drops = injected_duplicates = injected_reorders = 0;
}

void ReportObject::field(std::string_view key, const std::string& value) {
  out_ += fmt::format("{}\n    \"{}\": {}", out_.size() == 1 ? "" : ",", key, value);
}

void wire_fields_json(ReportObject& o, const WireStats& s, std::string_view first, std::string_view last,
                      bool detailed_histograms) {
  for (size_t i = index_of(first), end = index_of(last) + 1; i < end; ++i) {
    const WireField& f = kWireFields[i];
    if (f.count == &WireCounters::rx_receiver_invalid) continue;  // in rx_invalid's
    switch (f.kind) {
      case WireField::Kind::kCount:
      case WireField::Kind::kMax:
        o.field(f.key, fmt::format("{}", f.count == &WireCounters::rx_invalid ? s.rx_invalid + s.rx_receiver_invalid
                                                                           : s.*f.count));
        break;
      case WireField::Kind::kDuration: o.field(f.key, fmt::format("{}", (s.*f.duration).ps())); break;
      case WireField::Kind::kHistogram: o.field(f.key, histogram_json(s.*f.histogram, detailed_histograms)); break;
      case WireField::Kind::kReal: o.field(f.key, fmt::format("{}", s.*f.real)); break;
      case WireField::Kind::kText:
        o.field(f.key, (s.*f.text).empty() ? std::string("null") : nlohmann::json(s.*f.text).dump());
        break;
    }
  }
}

std::string ecn_counts_json(const uint64_t (&by)[4]) {
  return fmt::format("{{\"not_ect\": {}, \"ect1\": {}, \"ect0\": {}, \"ce\": {}}}", by[0], by[1], by[2], by[3]);
}

std::string wire_time_line(const WireStats& s) {
  return fmt::format("  time                {}, wall {:.3f} ms\n", dilation_text(s.dilation),
                     static_cast<double>(s.wall.ps()) / 1e9);
}

std::string wire_stalled_line(const WireStats& s) {
  return s.stall.empty() ? std::string() : fmt::format("  stalled             the run stopped: {}\n", s.stall);
}

std::string wire_detected_line(const WireStats& s) {
  return fmt::format("  detected            {} duplicates, {} reordered, {} stale copies, {} invalid\n", s.rx_duplicates,
                     s.rx_reordered, s.rx_stale, s.rx_invalid + s.rx_receiver_invalid);
}

std::string wire_injected_line(const WireStats& s) {
  if (s.injected_drops + s.injected_duplicates + s.injected_reorders == 0) return {};
  return fmt::format("  injected faults     {} drops, {} duplicates, {} reorders\n", s.injected_drops,
                     s.injected_duplicates, s.injected_reorders);
}

std::string wire_late_line(const WireStats& s) {
  return fmt::format("  late deliveries     {} of {} (wire slower than the target){}\n", s.late, s.late + s.on_time,
                     s.late == 0 ? std::string() : fmt::format(": by {} (emulated ns)", histogram_text(s.lateness_ns)));
}

std::string wire_nack_warning(const WireStats& s, uint64_t data_frames, std::string_view fabric,
                              std::string_view nack_delay) {
  const uint64_t injected = s.injected_drops + s.injected_duplicates + s.injected_reorders;
  if (injected > 0 || static_cast<double>(s.nacks) <= kNackWarnShare * static_cast<double>(data_frames)) return {};
  return fmt::format("{}: {} NACKs for {} data frames ({:.1f}%): frames were lost or reordered on the way, or a "
                     "message's frames arrived further apart than the NACK delay{}; a clean path sends none, and each "
                     "NACK is a frame on the wire",
                     fabric, s.nacks, data_frames,
                     data_frames == 0 ? 100.0 : 100.0 * static_cast<double>(s.nacks) / static_cast<double>(data_frames),
                     nack_delay.empty() ? std::string() : fmt::format(" ({})", nack_delay));
}

}  // namespace fabemu::host::dpdk
