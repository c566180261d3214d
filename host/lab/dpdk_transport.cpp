// The lab fabric's DPDK transport: dpdk_transport.h says what it is, host/lab/README.md ("Data planes")
// how.
#include "host/lab/dpdk_transport.h"

#include <pthread.h>
#include <sched.h>

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "host/wire/address_plan.h"
#include "host/dpdk/dpdk_env.h"
#include "host/wire/fabemu_header.h"
#include "host/dpdk/rx_worker.h"
#include "host/lab/datagram.h"

namespace fabemu::lab {

namespace hd = host::dpdk;

namespace {

constexpr uint16_t kBurst = 32;
constexpr uint32_t kLoopSlots = 1024;  // datagrams between two local ranks waiting for receive()

hd::MacAddr to_mac(const rte_ether_addr& a) {
  hd::MacAddr m;
  for (size_t i = 0; i < m.size(); ++i) m[i] = a.addr_bytes[i];
  return m;
}

class DpdkTransport final : public DatagramTransport {
 public:
  DpdkTransport(hd::Port& port, const hd::MacAddr& mac, std::vector<hd::Endpoint> endpoints, std::vector<bool> local,
                uint32_t max_datagram, const LabWire& wire)
      : port_(port),
        mac_(mac),
        mode_(wire.mode),
        dscp_(wire.dscp),
        ecn_(wire.ecn),
        endpoints_(std::move(endpoints)),
        local_(std::move(local)),
        slot_bytes_(max_datagram) {
    const auto ranks = static_cast<uint32_t>(endpoints_.size());
    if (local_.size() != ranks) {
      throw std::invalid_argument(fmt::format("DPDK transport: {} local flags for {} endpoints", local_.size(), ranks));
    }
    hd::check_sender_class(wire.dscp, wire.ecn, "DPDK transport");
    if (max_datagram < kDatagramHeaderBytes ||
        max_datagram - kDatagramHeaderBytes > hd::max_payload_for_mtu(mode_, port_.config().mtu)) {
      throw std::invalid_argument(fmt::format("DPDK transport: datagrams of {} bytes do not fit {} frames of MTU {} on {}",
                                              max_datagram, mode_name(), port_.config().mtu, port_.name()));
    }
    uint16_t lo = UINT16_MAX, hi = 0;
    for (uint32_t r = 0; r < ranks; ++r) {
      if (!by_ip_.emplace(endpoints_[r].ip, r).second) {
        throw std::invalid_argument(
            fmt::format("DPDK transport: ranks {} and {} have the same IP {}", by_ip_[endpoints_[r].ip], r,
                        hd::format_ip(endpoints_[r].ip)));
      }
      if (local_[r]) {
        lo = std::min(lo, endpoints_[r].port);
        hi = std::max(hi, endpoints_[r].port);
      }
    }
    rules_.mode = mode_;
    rules_.port_lo = lo;
    rules_.port_hi = hi;
    loop_.assign(size_t{kLoopSlots} * slot_bytes_, 0);
    loop_entries_.resize(kLoopSlots);
    missing_.reserve(slot_bytes_ / 4);
    scratch_.resize(16384);
    // Frames of an earlier run still queued on the port would carry message ids this run reuses.
    rte_mbuf* pkts[kBurst];
    for (uint16_t n; (n = port_.rx_burst(pkts, kBurst)) > 0;) rte_pktmbuf_free_bulk(pkts, n);
  }

  std::string describe() const override {
    return fmt::format("DPDK {} {}{}{}", port_.name(), hd::format_mac(mac_),
                       mode_ == hd::WireMode::kRoceV2 ? " RoCEv2" : "", hd::class_suffix(dscp_, ecn_));
  }

  std::string address_of(uint32_t rank) const override {
    const hd::Endpoint& e = endpoints_.at(rank);
    return fmt::format("{} {}:{}", hd::format_mac(e.mac), hd::format_ip(e.ip), e.port);
  }

  uint32_t send(uint32_t from, std::span<const TxDatagram> batch) override {
    uint32_t done = 0;  // datagrams taken, a prefix of `batch`
    uint16_t n = 0;     // frames built in tx_, for the datagrams right after the first `done`
    // Hands tx_[0, n) to the port; true when it took all of them (the rest are freed: offered again later).
    const auto flush = [&] {
      const uint16_t took = n > 0 ? port_.tx_burst(tx_, n) : 0;
      done += took;
      const bool all = took == n;
      if (!all) rte_pktmbuf_free_bulk(tx_ + took, n - took);
      n = 0;
      return all;
    };
    for (const TxDatagram& d : batch) {
      if (local_.at(d.to)) {
        // Between two ranks of this host: the port cannot send a frame to itself.
        if (!flush() || loop_n_ == kLoopSlots) return done;
        const uint32_t slot = (loop_head_ + loop_n_) % kLoopSlots;
        std::memcpy(loop_.data() + size_t{slot} * slot_bytes_, d.data, std::min<size_t>(d.len, slot_bytes_));
        loop_entries_[slot] = LoopEntry{d.to, static_cast<uint32_t>(std::min<size_t>(d.len, slot_bytes_))};
        ++loop_n_;
        ++done;
        continue;
      }
      if (n == kBurst && !flush()) return done;
      rte_mbuf* m = rte_pktmbuf_alloc(port_.pool());
      if (m == nullptr) {  // the pool is empty: the device still holds frames; again next round
        flush();
        return done;
      }
      if (!build(m, from, d)) {
        // Not a datagram the fabric can have built: given up (counted), in order with the others.
        rte_pktmbuf_free(m);
        if (!flush()) return done;
        ++stats_.send_errors;
        ++done;
        continue;
      }
      tx_[n++] = m;
    }
    flush();
    return done;
  }

  void receive(DatagramSink& sink) override {
    // Local pairs first: in the order they were sent, as a socket would deliver them. The sink may send
    // (an ACK to a local rank): the slot is released only after the call, so that a push cannot reuse it.
    for (uint32_t k = loop_n_; k > 0; --k) {
      const LoopEntry e = loop_entries_[loop_head_];
      sink.datagram(e.to, {loop_.data() + size_t{loop_head_} * slot_bytes_, e.len}, false);
      loop_head_ = (loop_head_ + 1) % kLoopSlots;
      --loop_n_;
    }
    // The DPDK fabric's receive loop: a frame decode() refuses (another protocol, damage) is counted in
    // rx_.not_ours and freed there; one of ours must also be for a local rank at this host's MAC (the
    // bridge floods frames for other ports before it learns their MACs).
    hd::receive_round(port_, 0, rules_, scratch_, rx_, hw_timestamped_,
                      [&](rte_mbuf* m, const hd::DecodedFrame& f, bool, uint64_t, uint64_t) {
      const auto it = by_ip_.find(f.dst.ip);
      if (it == by_ip_.end() || !local_[it->second] || f.dst.mac != endpoints_[it->second].mac) {
        ++rx_.not_ours;
      } else {
        // The UDP payload is the datagram: the fabemu header right before the message bytes.
        ++stats_.frames_by_ecn[static_cast<uint8_t>(f.ecn)];
        stats_.frames_dscp_changed += f.dscp != dscp_;
        sink.datagram(it->second, {f.payload.data() - kDatagramHeaderBytes, kDatagramHeaderBytes + f.payload_bytes},
                      false);
      }
      rte_pktmbuf_free(m);
    });
    stats_.frames_not_ours = rx_.not_ours;
  }

  TransportStats stats() const override { return stats_; }

 private:
  struct LoopEntry {
    uint32_t to = 0, len = 0;
  };

  const char* mode_name() const noexcept { return mode_ == hd::WireMode::kRoceV2 ? "RoCEv2" : "fabemu-mode"; }

  // The frame of datagram `d` from local rank `from`: the DPDK fabric's frame of the same header and
  // payload in mode_ (its flow's template), so that what follows the UDP header (fabemu mode) or the BTH
  // (RoCEv2, up to the pad and ICRC) is `d` byte for byte.
  bool build(rte_mbuf* m, uint32_t from, const TxDatagram& d) {
    hd::FrameSpec spec;
    if (d.len < kDatagramHeaderBytes ||
        hd::parse_fabemu_header({d.data, d.len}, spec.hdr) != hd::HeaderVerdict::kOk) {
      return false;
    }
    const uint32_t payload = d.len - static_cast<uint32_t>(kDatagramHeaderBytes);
    spec.mode = mode_;
    spec.dscp = dscp_;
    spec.ecn = ecn_;
    spec.src = endpoints_.at(from);
    spec.dst = endpoints_.at(d.to);
    if (mode_ == hd::WireMode::kRoceV2) {
      // As the DPDK fabric's frames: a UDP source port per flow (ECMP), one queue pair per destination,
      // SEND opcodes and PSNs by packet for data, SEND Only for feedback.
      const bool data = spec.hdr.kind == hd::PacketKind::kData;
      spec.src.port = hd::flow_source_port(uint64_t{from} << 32 | d.to);
      spec.bth.dest_qp = d.to + 1;
      spec.bth.opcode = data ? hd::rc_send_opcode(spec.hdr.seq, spec.hdr.count) : hd::kRcSendOnly;
      spec.bth.psn = data ? spec.hdr.seq & 0xFFFFFF : 0;
      spec.bth.ack_req = data && spec.hdr.seq + 1 == spec.hdr.count;
    }
    spec.ip_id = static_cast<uint16_t>(ip_id_++);
    spec.payload_bytes = payload;
    if (spec.hdr.kind == hd::PacketKind::kNack) {
      missing_.resize(payload / 4);
      for (size_t i = 0; i < missing_.size(); ++i) {
        missing_[i] = hd::load_be32(d.data + kDatagramHeaderBytes + 4 * i);
      }
      spec.missing = missing_;
    }
    auto t = templates_.find(uint64_t{from} << 32 | d.to);
    if (t == templates_.end()) t = templates_.emplace(uint64_t{from} << 32 | d.to, hd::FrameTemplate(spec)).first;
    return hd::fill_mbuf(m, t->second, spec) != 0;
  }

  hd::Port& port_;
  hd::MacAddr mac_;
  hd::WireMode mode_;
  uint8_t dscp_;
  hd::Ecn ecn_;
  std::vector<hd::Endpoint> endpoints_;
  std::vector<bool> local_;
  size_t slot_bytes_;
  hd::DecodeRules rules_;
  std::unordered_map<uint32_t, uint32_t> by_ip_;       // IP -> rank
  std::unordered_map<uint64_t, hd::FrameTemplate> templates_;  // per flow (from << 32 | to), built once
  rte_mbuf* tx_[kBurst] = {};
  std::vector<uint8_t> loop_;                           // kLoopSlots slots of slot_bytes_, a ring
  std::vector<LoopEntry> loop_entries_;
  uint32_t loop_head_ = 0, loop_n_ = 0;
  std::vector<uint32_t> missing_;
  std::vector<uint8_t> scratch_;
  uint64_t ip_id_ = 0;
  TransportStats stats_;
  struct RxCounters {  // what receive_round counts
    uint64_t frames_rx = 0, frame_bytes_rx = 0, not_ours = 0;
    uint64_t not_ours_by_verdict[hd::kVerdictCount] = {};
  } rx_;
  uint64_t hw_timestamped_ = 0;
};

class DpdkLabPort final : public LabDataPort {
 public:
  explicit DpdkLabPort(hd::Port port) : port_(std::move(port)), mac_(to_mac(port_.mac())) {
    if (mac_ == hd::MacAddr{}) {
      // Virtual devices without an address (the ring PMD): a random locally administered unicast one,
      // set on the device where it takes it. Frames are matched to it in software either way.
      rte_ether_addr a;
      rte_eth_random_addr(a.addr_bytes);
      (void)rte_eth_dev_default_mac_addr_set(port_.id(), &a);
      mac_ = to_mac(a);
    }
  }
  hd::MacAddr mac() const override { return mac_; }
  std::string describe() const override {
    const uint32_t speed = port_.link_speed_mbps();
    return fmt::format("DPDK port {} ({}), MAC {}, MTU {}, link {}", port_.id(), port_.name(), hd::format_mac(mac()),
                       port_.config().mtu, speed == 0 ? std::string("speed unknown") : fmt::format("{} Mb/s", speed));
  }
  std::unique_ptr<DatagramTransport> open(std::vector<hd::Endpoint> endpoints, std::vector<bool> local,
                                          uint32_t max_datagram, const LabWire& wire) override {
    return std::make_unique<DpdkTransport>(port_, mac_, std::move(endpoints), std::move(local), max_datagram, wire);
  }

 private:
  hd::Port port_;
  hd::MacAddr mac_;
};

}  // namespace

std::unique_ptr<LabDataPort> open_lab_data_port(const std::string& devargs, const std::vector<std::string>& eal_args) {
  if (!hd::Eal::running()) {
    // rte_eal_init pins the calling thread to the main lcore's CPU, and threads it starts later inherit
    // that: the agent's io thread and run thread would share one CPU. Undo it for this thread.
    cpu_set_t saved;
    CPU_ZERO(&saved);
    const bool have = pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) == 0;
    hd::Eal::start(eal_args);
    if (have) (void)pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
  }
  hd::PortConfig cfg;
  cfg.promiscuous = false;  // frames come addressed to this port's MAC
  try {
    return std::make_unique<DpdkLabPort>(hd::Port::attach_or_open(devargs, cfg));
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("DPDK device \"{}\": {}", devargs, e.what()));
  }
}

}  // namespace fabemu::lab
