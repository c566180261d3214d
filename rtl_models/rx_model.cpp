#include "rtl_models/rx_model.h"

namespace fabemu::rtl {

namespace dp = host::dpdk;

RxModel::RxModel(const RxConfig& c)
    : cfg_(c), st_(std::size_t{1} << kRxFlowAw), flows_(std::size_t{1} << kRxFlowAw) {
  rules_.mode = c.roce ? dp::WireMode::kRoceV2 : dp::WireMode::kFabemu;
  rules_.port_lo = c.port_lo;
  rules_.port_hi = c.port_hi;
  rules_.verify_icrc = false;   // sched_rx checks the UDP checksum, not the ICRC
}

dp::Verdict RxModel::frame(std::span<const uint8_t> f, uint64_t cycle) {
  dp::DecodedFrame d;
  const dp::Verdict v = dp::decode(f, rules_, d);
  ++g[static_cast<std::size_t>(v)];
  ++g[kRxFramesAll];
  last_latency_.reset();
  last_flow_.reset();
  if (v != dp::Verdict::kOurs) return v;
  const uint64_t arr = rx_arrival_ps(cycle, cfg_.q32);
  if (arr < d.hdr.tx_time_ps) {
    ++g[kRxEarly];
  } else {
    hist.record(arr - d.hdr.tx_time_ps);
    last_latency_ = arr - d.hdr.tx_time_ps;
  }
  if (d.hdr.kind != dp::PacketKind::kData) {
    ++g[kRxFeedback];
    return v;
  }
  const uint64_t src = d.hdr.src_rank, dst = d.hdr.dst_rank;
  if (src >= cfg_.npus || dst >= cfg_.npus || src * cfg_.npus + dst >= (uint64_t{1} << kRxFlowAw)) {
    ++g[kRxOutOfRange];
    return v;
  }
  const auto idx = static_cast<uint32_t>(src * cfg_.npus + dst);
  RxFlowCounters& c = flows_[idx];
  State& s = st_[idx];
  last_flow_ = idx;
  if (c.frames == 0) touched_.push_back(idx);
  ++c.frames;
  c.payload += d.payload_bytes;
  c.wire += f.size();
  c.ce += d.ecn == dp::Ecn::kCe;
  const uint32_t seq = d.hdr.seq;
  // By flow sequence (sched_rx_flow, cfg_flow_seq): the IPv4 id against the flow's next expected one, mod 2^16.
  const auto gap = static_cast<uint16_t>(d.ip_id - s.flow_expected);
  const bool behind = cfg_.flow_seq && gap >= 0x8000;
  const bool same = s.active && d.hdr.message_id == s.msg;
  const bool newm = cfg_.flow_seq ? !behind && !same : !s.active || d.hdr.message_id > s.msg;
  const bool stale = cfg_.flow_seq ? behind && !same : s.active && d.hdr.message_id < s.msg;
  if (cfg_.flow_seq) {
    if (behind) {
      ++c.reordered;
      --c.lost;  // counted lost when its gap was seen
    } else {
      c.lost += gap;
      s.flow_expected = static_cast<uint16_t>(d.ip_id + 1);
    }
  }
  if (newm) {
    const uint32_t tail = s.active && s.frames < s.count ? s.count - s.expected : 0;
    if (!cfg_.flow_seq) c.lost += uint64_t{tail} + seq;
    s = State{true, d.hdr.message_id, d.hdr.count, seq + 1, 1, d.payload_bytes, cycle, s.flow_expected};
  } else if (stale) {
    if (!cfg_.flow_seq) ++c.reordered;
    return v;
  } else {
    if (seq >= s.expected) {
      if (!cfg_.flow_seq) c.lost += seq - s.expected;
      s.expected = seq + 1;
    } else if (!cfg_.flow_seq) {
      ++c.reordered;
    }
    ++s.frames;
    s.bytes += d.payload_bytes;
  }
  if (s.frames == s.count) {
    records.push_back(RxRecord{static_cast<uint32_t>(src), static_cast<uint32_t>(dst), s.frames, s.msg, s.bytes,
                               s.first, cycle});
    ++g[kRxRecords];
  }
  return v;
}

}  // namespace fabemu::rtl
