#include "rtl_models/hil_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fabemu::rtl {

namespace dp = host::dpdk;

namespace {
constexpr uint16_t kPort = 47000;            // host/wire's default base port (hil_frame_spec)
constexpr uint32_t kMaxFlows = 1u << kRxFlowAw;

RxConfig rx_config(const HilOptions& o) {
  if (o.npus == 0 || uint64_t{o.npus} * o.npus > kMaxFlows) {
    throw std::invalid_argument("hardware in the loop (model): " + std::to_string(o.npus) +
                                " ranks; the receive path counts 1024 flows (up to 32 ranks)");
  }
  RxConfig c;
  c.port_lo = c.port_hi = kPort;
  c.npus = static_cast<uint16_t>(o.npus);
  c.q32 = hil_ps_per_cycle_q32(o.dilation_q16);
  c.flow_seq = true;
  return c;
}
}  // namespace

HilWireModel::HilWireModel(const HilOptions& options)
    : opt_(options),
      k_(hil_cycles_per_ps_q48(options.dilation_q16)),
      c0_(options.lead_cycles),
      dev_(options.device, options.device_beats),
      rx_(rx_config(options)),
      sent_(std::size_t{options.npus} * options.npus),
      buf_(std::size_t{kHilMaxPayload} + 200) {
  rx_cur_.reserve(buf_.size());
}

void HilWireModel::depart(const hw::msg::Departure& d) {
  if (drained_) throw std::logic_error("hardware in the loop (model): a departure after drain()");
  if (d.src < opt_.npus && d.dst < opt_.npus) ++sent_[d.src * opt_.npus + d.dst];
  const std::size_t n = dp::encode(hil_frame_spec(d, fseq_.next(d.src, d.dst), opt_.dscp, dp::Ecn::kEct0), buf_);
  if (n == 0) throw std::invalid_argument("hardware in the loop (model): departure of message " + std::to_string(d.id) +
                                          " does not make a frame");
  // sched_fg: presented in its cycle, or as soon as the stream is free (late); sent when the MAC takes it.
  const uint64_t sched = hil_tx_cycle(d.time_ps, k_, c0_);
  const uint64_t presented = std::max(sched, next_start_);
  if (presented > sched) ++report_.late_frames;
  const uint64_t first = mac_.ready_from(presented);
  if (first > sched && d.seq == 0) report_.late_starts.push_back(HilLateStart{d.id, first - sched});
  if (first > sched) {
    ++report_.late_measured;
    report_.worst_late_cycles = std::max(report_.worst_late_cycles, first - sched);
  }
  uint64_t c = first;
  for (std::size_t at = 0; at < n; at += kTxLanes, ++c) {
    Beat b;
    b.keep = static_cast<uint32_t>(std::min<std::size_t>(kTxLanes, n - at));
    std::copy_n(buf_.begin() + static_cast<std::ptrdiff_t>(at), b.keep, b.bytes.begin());
    b.last = at + kTxLanes >= n;
    deliver_before(c);
    mac_.take(c, b, n);
    dev_.take(c, b);
  }
  next_start_ = c;
  ++report_.frames_sent;
  if (opt_.keep_frames) frames_.push_back(HilFrame{sched, first, std::vector<uint8_t>(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(n))});
}

void HilWireModel::deliver_before(uint64_t cycle) {
  while (!dev_.empty()) {
    const uint64_t t = std::max(dev_.head_earliest(), rx_next_);
    if (t >= cycle) return;
    const Beat& b = *dev_.offer(t);
    if (rx_cur_.empty()) rx_first_ = t - c0_;
    rx_cur_.insert(rx_cur_.end(), b.bytes.begin(), b.bytes.begin() + b.keep);
    if (b.last) {
      rx_.frame(rx_cur_, rx_first_);
      if (opt_.keep_frames) received_.push_back(HilFrame{0, rx_first_, rx_cur_});
      rx_cur_.clear();
      for (; records_seen_ < rx_.records.size(); ++records_seen_) {
        const RxRecord& r = rx_.records[records_seen_];
        arrivals_.push_back(HilArrival{r.src, r.dst, r.msg, r.frames, r.bytes, r.first, r.last});
      }
    }
    dev_.pop();
    rx_next_ = t + 1;
  }
}

const HilReport& HilWireModel::drain() {
  if (drained_) return report_;
  drained_ = true;
  deliver_before(~uint64_t{0});
  report_.device = dev_.counters();
  report_.rx_ours = rx_.g[0];
  report_.rx_frames = rx_.g[kRxFramesAll];
  report_.rx_negative = rx_.g[kRxEarly];
  report_.rx_records = rx_.g[kRxRecords];
  report_.rx_records_dropped = rx_.g[kRxRecordsDropped];
  for (uint32_t f = 0; f < opt_.npus * opt_.npus; ++f) {
    if (sent_[f] != 0 || rx_.flow(f).frames != 0) report_.flows.push_back(hil_flow(f, sent_[f], rx_.flow(f)));
  }
  report_.histogram.assign(emu::LogHistogram::kBuckets, 0);
  rx_.hist.for_each_bucket(
      [&](uint64_t lo, uint64_t, uint64_t n) { report_.histogram[emu::LogHistogram::bucket_of(lo)] = n; });
  report_.cycles = std::max(rx_next_, next_start_);
  report_.c0 = c0_;
  report_.arrivals = arrivals_;
  return report_;
}

HilModelCard::HilModelCard(std::span<const hw::sched::LinkEntry> links, uint32_t mtu, const HilOptions& options)
    : card_(links, mtu), wire_(options), mtu_(mtu) {
  if (mtu > kHilMaxPayload) {
    throw std::invalid_argument("hardware in the loop (model): MTU " + std::to_string(mtu) +
                                " bytes, more than a frame carries (" + std::to_string(kHilMaxPayload) + ")");
  }
}

void HilModelCard::push(const hw::msg::MsgDesc& d) {
  if ((d.bytes + mtu_ - 1) / mtu_ >= (uint64_t{1} << 32)) {
    throw std::invalid_argument("hardware in the loop (model): message " + std::to_string(d.id) + " of " +
                                std::to_string(d.bytes) + " bytes is 2^32 packets or more at MTU " +
                                std::to_string(mtu_) + " (a frame's count is 32 bits)");
  }
  card_.push(d);
}

void HilModelCard::advance(uint64_t w) {
  card_.advance(w);
  to_wire();
}

void HilModelCard::to_wire() {
  released_.clear();
  card_.take_departures(released_);
  for (const hw::msg::Departure& d : released_) wire_.depart(d);
  deps_.insert(deps_.end(), released_.begin(), released_.end());
}

std::size_t HilModelCard::take_departures(std::vector<hw::msg::Departure>& out) {
  return move_all(deps_, out);
}

const HilReport& HilModelCard::drain() {
  card_.advance(~uint64_t{0});
  to_wire();
  return wire_.drain();
}

}  // namespace fabemu::rtl
