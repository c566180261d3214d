#include "host/dpdk/dpdk_fabric.h"

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include "host/wire/histogram_format.h"

namespace fabemu::host::dpdk {

namespace {

constexpr uint16_t kBurst = 32;
constexpr size_t kTxQueueLimit = 256;     // frames built and not yet taken (with the mbuf stash): stop building more
constexpr uint32_t kFramesPerSender = 64; // per poll, so that one sender cannot starve the others
// A receiver acknowledges what it has in order every this many packets of a message (a power of two), so
// that a paced message longer than the retransmission timeout is not resent while it is still going out.
constexpr uint32_t kAckEvery = 32;
// The pacer's burst allowance: a frame that leaves later than its link's schedule by no more than this
// many full frames keeps the schedule (the frames after it catch up); later than that, the schedule
// restarts from the late departure.
constexpr uint64_t kPacingBurstFrames = 64;
constexpr size_t kMaxStalls = size_t{1} << 20;

// The median of sorted values: the middle one, or the mean of the two middle ones for an even count
// (not empty).
double median_of_sorted(const std::vector<double>& v) noexcept {
  const size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : (v[h - 1] + v[h]) / 2;
}

double rate_gbps(emu::Rate r) {
  const uint64_t raw = r.ps_per_byte_q32();
  return raw == 0 ? 0.0 : 8000.0 * 4294967296.0 / static_cast<double>(raw);
}

}  // namespace

// --- ports ---------------------------------------------------------------------------------------------

DpdkPorts DpdkPorts::ring(const std::string& name, const PortConfig& cfg, uint16_t queues, RingDevice device,
                          unsigned ring_size) {
  DpdkPorts p;
  p.ring_ = std::make_unique<RingPair>(name, ring_size, SOCKET_ID_ANY, queues, device);
  p.a_ = std::make_unique<Port>(p.ring_->a(), cfg);
  p.b_ = std::make_unique<Port>(p.ring_->b(), cfg);
  std::string dev;
  if (device.delay_ns > 0) dev = fmt::format("{:.3f} us latency", static_cast<double>(device.delay_ns) / 1000.0);
  if (device.bytes_per_sec > 0) {
    dev += fmt::format("{}{:.3f} Gb/s", dev.empty() ? "" : " and ", static_cast<double>(device.bytes_per_sec) * 8 / 1e9);
  }
  if (device.ecn_bytes > 0) dev += fmt::format(" marking ECN-capable frames CE behind {} bytes queued", device.ecn_bytes);
  p.what_ = fmt::format("ring pair net_ring_{0}_a -> net_ring_{0}_b{2}{3}, {1} mbufs per pool", name, cfg.mbufs,
                        queues == 1 ? std::string() : fmt::format(" ({} queues)", queues),
                        dev.empty() ? std::string() : ", a -> b through a device of " + dev);
  return p;
}

DpdkPorts DpdkPorts::memif(const std::string& socket, const PortConfig& cfg) {
  static int counter = 0;
  const int n = counter++;
  DpdkPorts p;
  p.b_ = std::make_unique<Port>(Port::open(fmt::format("net_memif_fs{},role=server,id=0,socket={}", n, socket), cfg));
  // DPDK 22.11's memif crashes now and then in the EAL interrupt thread when the client is probed while
  // that thread is still setting up the server's listening socket (seen in test_dpdk_env's memif test
  // too): let it settle first.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  p.a_ = std::make_unique<Port>(Port::open(fmt::format("net_memif_fc{},role=client,id=0,socket={}", n, socket), cfg));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!(p.a_->link_up() && p.b_->link_up()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!(p.a_->link_up() && p.b_->link_up())) {
    throw std::runtime_error(fmt::format("memif client and server on {} did not connect within 2 s", socket));
  }
  p.what_ = fmt::format("memif client -> server on {}, {} mbufs per pool", socket, cfg.mbufs);
  p.memif_ = true;
  return p;
}

DpdkPorts DpdkPorts::devargs(const std::string& a, const std::string& b, const PortConfig& cfg) {
  DpdkPorts p;
  p.a_ = std::make_unique<Port>(Port::attach_or_open(a, cfg));
  if (!b.empty()) p.b_ = std::make_unique<Port>(Port::attach_or_open(b, cfg));
  p.what_ = (b.empty() ? a + " (loopback)" : a + " -> " + b) + fmt::format(", {} mbufs per pool", cfg.mbufs);
  return p;
}

DpdkPorts::~DpdkPorts() {
  if (memif_ && a_ && b_) {
    a_.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b_.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string DpdkPorts::describe() const { return what_; }

// --- the fabric ----------------------------------------------------------------------------------------

DpdkFabric::DpdkFabric(emu::Topology topology, AddressPlan plan, DpdkPorts& ports, DpdkFabricOptions options)
    : engine_(1 << 16),
      model_(engine_, std::move(topology), options.model_mtu),
      plan_(std::move(plan)),
      ports_(ports),
      opt_(std::move(options)),
      clock_(opt_.dilation),
      rules_(plan_.decode_rules(opt_.mode)),
      npus_(static_cast<uint32_t>(model_.topology().npus())),
      payload_(static_cast<uint32_t>(max_payload_for_mtu(opt_.mode, opt_.wire_mtu))) {
  if (!Eal::running()) throw std::logic_error("DpdkFabric: EAL is not running");
  if (plan_.size() < npus_) {
    throw std::invalid_argument(
        fmt::format("the address plan has {} ranks, the topology {} NPUs", plan_.size(), npus_));
  }
  if (payload_ == 0) throw std::invalid_argument(fmt::format("--wire-mtu {}: too small for a frame", opt_.wire_mtu));
  check_sender_class(opt_.dscp, opt_.ecn, "DPDK fabric (--wire-dscp, --wire-ecn)");
  if (opt_.checksums == DpdkFabricOptions::Checksums::kAuto && ports_.in_process()) {
    rules_.verify_udp_checksum = false;
    rules_.verify_icrc = false;
  }
  for (Port* p : {&ports_.a(), &ports_.b()}) {
    const size_t room = rte_pktmbuf_data_room_size(p->pool()) - RTE_PKTMBUF_HEADROOM;
    if (frame_bytes(opt_.mode, payload_) > room) {
      throw std::invalid_argument(fmt::format("--wire-mtu {}: frames of {} bytes do not fit the mbufs of {} ({} bytes)",
                                              opt_.wire_mtu, frame_bytes(opt_.mode, payload_), p->name(), room));
    }
  }
  model_.set_listener(this);
  // The retransmission timeout covers at least four partial-ACK intervals of the slowest link, paced.
  rto_ = RtoEstimator(paced_rto_floor(opt_.rto, model_.topology(), uint64_t{payload_} * kAckEvery, clock_));
  stats_.rto_max = rto_.rto();
  {
    SenderConfig c;
    c.payload_per_packet = payload_;
    c.window = opt_.window;
    c.rto = rto_.rto();
    senders_ = LinkSenders(npus_, model_.topology().links().size(), c);
  }
  pacing_.size_for(model_.topology());
  stalls_.reserve(1024);  // a stall is a gap of 100 us or more: allocating only past 1,024 of them costs nothing
  pace_slot_.assign(model_.topology().links().size(), LinkSlot{});
  if (!clock_.as_fast_as_possible()) {
    ahead_wall_ps_ = opt_.ahead.ps();
    ahead_emulated_ps_ = static_cast<uint64_t>(static_cast<double>(ahead_wall_ps_) / clock_.dilation());
  }
  paced_.resize(kFramesPerSender);  // a next_runs call gives at most that many (its room)
  burst_ps_.reserve(model_.topology().links().size());
  for (const emu::Link& l : model_.topology().links()) {
    burst_ps_.push_back(clock_.to_wall(l.rate.ser(uint64_t{payload_} * kPacingBurstFrames)).ps());
  }
  // Data frames come from port A's zeroed pool: their payload (zeros) is never written (Port::zero_pool).
  // RoCEv2 frames end with an ICRC, which in a shorter frame lies where a full frame's payload does: only
  // full frames (payload_ bytes) come from it, the shorter ones from port A's pool (short_stash_).
  // Its size: what the transmit side holds (built, the stash, the device's ring) and the receive side
  // takes per poll (every burst, and as many held back by reordering), as 2^n - 1: 2,047 by default,
  // half of port A's pool (creating a pool is most of the start-up on a machine without hugepages).
  // On a ring pair with a receive lcore, that lcore frees the very mbufs sent: a pool without lcore
  // caches (Port::Recycle), so that an mbuf comes back to the sender after the pool's other ones, not
  // while the receive lcore still holds its lines: 4-20% less wall on the 256 MB all_to_all, less
  // departure lateness when paced (host/dpdk/PERFORMANCE.md, "End to end", "Data frames recycled oldest first").
  const std::vector<unsigned> rx_lcores = choose_rx_lcores();
  const auto queues = static_cast<uint16_t>(std::max<size_t>(1, rx_lcores.size()));
  if (queues > 1) {
    // Every frame of a pair must reach the one path that holds the pair's state. net_af_packet's queues
    // are a PACKET_FANOUT group with PACKET_FANOUT_FLAG_ROLLOVER: a frame whose socket's ring is full goes
    // to another queue, whose path then ACKs/NACKs packets the owning path never got (the sender frees
    // them, the owner NACKs them forever: a livelock the stall timeout does not catch, NACKs being ours).
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(ports_.b().id(), &info) == 0 && info.driver_name != nullptr &&
        std::string_view(info.driver_name) == "net_af_packet") {
      throw std::invalid_argument(fmt::format(
          "{} receive lcores on {}: net_af_packet spreads frames over its queues (qpairs=) by the kernel's fanout "
          "hash with rollover, which moves a flow's frames to another queue whenever one fills, and a pair's "
          "frames must all reach one receive lcore; use one receive lcore (qpairs=1) on af_packet, or a NIC with RSS",
          queues, ports_.b().name()));
    }
  }
  for (Port* p : {&ports_.a(), &ports_.b()}) {
    // Every receive queue is some path's (a frame on a queue nobody polls would be lost), and every path
    // sends on a transmit queue of its own.
    if (p->config().rx_queues != queues || p->config().tx_queues < queues) {
      throw std::invalid_argument(fmt::format(
          "{} receive path{} need{} {} receive and transmit queue{} on each port; {} has {} receive and {} "
          "transmit (fabemu run sets them from --dpdk-rx-lcore)",
          queues, queues == 1 ? "" : "s", queues == 1 ? "s" : "", queues, queues == 1 ? "" : "s", p->name(),
          p->config().rx_queues, p->config().tx_queues));
    }
  }
  {
    uint32_t n = 1;
    while (n - 1 < kTxQueueLimit + kTxStash + uint32_t{ports_.a().config().tx_desc} * queues +
                       2u * kRxBurst * kRxBursts * queues) {
      n <<= 1;
    }
    data_pool_ = ports_.a().zero_pool(n - 1, ports_.in_process() && !rx_lcores.empty() ? Port::Recycle::kOtherLcore
                                                                                      : Port::Recycle::kSameLcore);
    split_short_ = opt_.mode == WireMode::kRoceV2;
  }
  tx_data_.resize(queues);
  tx_paced_.resize(queues);
  tx_firsts_.resize(queues);
  templates_ = FlowTemplates(npus_);
  link_pace_.resize(model_.topology().links().size());
  PcapWriterOptions capture_options;
  capture_options.writer_cpus = Eal::cpus_without_lcores();  // the capture's writes off the polling lcores' CPUs
  capture_options.stop_on_failure = true;  // a capture the disk cannot take never costs the run (close_pcap)
  if (!opt_.pcap.empty()) pcap_ = std::make_unique<PcapWriter>(opt_.pcap, capture_options);
  scratch_.resize(16384);
  stats_.dilation = opt_.dilation;
  stats_.settings = DpdkStats::Settings{opt_.mode,         opt_.wire_mtu,      opt_.window,
                                        opt_.rto,          opt_.nack_delay,    opt_.stall_timeout,
                                        opt_.faults,       opt_.checksums == DpdkFabricOptions::Checksums::kOn,
                                        opt_.dscp,         opt_.ecn,
                                        ports_.ring_pair() != nullptr ? ports_.ring_pair()->device() : RingDevice{},
                                        opt_.ahead};
  stats_.main_lcore = rte_get_main_lcore();
  RxPathConfig rc;
  rc.npus = npus_;
  rc.mode = opt_.mode;
  rc.plan = &plan_;
  rc.rules = rules_;
  rc.window = opt_.window;
  rc.nack_delay = opt_.nack_delay;
  rc.faults = opt_.faults;
  rc.dscp = opt_.dscp;
  rc.ecn = opt_.ecn;
  for (uint16_t q = 0; q < queues; ++q) {
    PcapWriter* capture = pcap_.get();
    if (pcap_ && !rx_lcores.empty()) {
      rx_pcaps_.push_back(std::make_unique<PcapWriter>(
          queues == 1 ? opt_.pcap + ".rx-lcore" : fmt::format("{}.rx-lcore{}", opt_.pcap, rx_lcores[q]),
          capture_options));
      capture = rx_pcaps_.back().get();
    }
    // Each path draws its own faults: path 0 as the one path of a run without several (the same seed).
    rc.faults.seed = opt_.faults.seed + uint64_t{q} * 0x9E3779B97F4A7C15ull;
    rx_paths_.push_back(std::make_unique<RxPath>(rc, ports_.b(), capture, q));
  }
  // From here on each queue of port B is its receive lcore's alone.
  for (size_t q = 0; q < rx_lcores.size(); ++q) {
    workers_.push_back(std::make_unique<RxWorker>(*rx_paths_[q], rx_lcores[q]));
  }
}

std::vector<unsigned> DpdkFabric::choose_rx_lcores() const {
  const bool two_ports = &ports_.a() != &ports_.b();
  const auto check = [&](unsigned id, const char* what) {
    if (!two_ports) {
      throw std::invalid_argument(fmt::format("{} {}: the receive side needs a port of its own (data A -> B, "
                                              "two devices); {} loops frames back", what, id, ports_.describe()));
    }
    if (id >= RTE_MAX_LCORE || !rte_lcore_is_enabled(id) || id == rte_get_main_lcore() ||
        rte_eal_get_lcore_state(id) != WAIT) {
      throw std::invalid_argument(fmt::format("{} {}: not an idle worker lcore of EAL (main lcore {}, {} lcores "
                                              "enabled; give EAL e.g. -l 0-1, or --lcores 0@0,1@1,2@1 for more "
                                              "lcores than cores)",
                                              what, id, rte_get_main_lcore(), rte_lcore_count()));
    }
  };
  if (!opt_.rx_lcores.empty()) {
    std::vector<unsigned> ids;
    for (const unsigned id : opt_.rx_lcores) {
      check(id, "receive lcore");
      if (std::find(ids.begin(), ids.end(), id) != ids.end()) {
        throw std::invalid_argument(fmt::format("receive lcore {} is listed twice", id));
      }
      ids.push_back(id);
    }
    return ids;
  }
  if (opt_.rx_lcore == DpdkFabricOptions::kRxLcoreOff) return {};
  if (opt_.rx_lcore == DpdkFabricOptions::kRxLcoreAuto) {
    if (!two_ports) return {};
    const std::vector<unsigned> idle = Eal::idle_worker_lcores();
    if (idle.empty()) return {};
    return {idle.front()};
  }
  if (opt_.rx_lcore < 0) {
    throw std::invalid_argument(fmt::format("RX lcore {}: expected an lcore id, auto or off", opt_.rx_lcore));
  }
  const auto id = static_cast<unsigned>(opt_.rx_lcore);
  check(id, "RX lcore");
  return {id};
}

bool DpdkFabric::workers_running() const noexcept {
  for (const auto& w : workers_) {
    if (!w->joined()) return true;
  }
  return false;
}

DpdkFabric::~DpdkFabric() {
  workers_.clear();  // stops the receive lcores before anything they use goes
  try {
    close_pcap();  // a run that failed before drain(): its capture still ends up in one file
  } catch (const std::exception&) {
    // Destruction during an error: that error is the one to report.
  }
  for (const auto& q : tx_data_) {
    for (rte_mbuf* m : q) rte_pktmbuf_free(m);
  }
  for (const Held& h : held_) {
    for (size_t i = h.mbuf_head; i < h.mbufs.size(); ++i) rte_pktmbuf_free(h.mbufs[i]);
  }
  if (stash_next_ < stash_n_) rte_pktmbuf_free_bulk(tx_stash_ + stash_next_, stash_n_ - stash_next_);
  if (short_n_ > 0) rte_pktmbuf_free_bulk(short_stash_, short_n_);
}

uint32_t DpdkFabric::frames_in_flight(uint32_t npus, uint32_t rx_paths) noexcept {
  constexpr uint32_t kFeedbackPerPoll = kRxBurst * kRxBursts;  // one ACK/NACK per frame received, at most
  constexpr uint32_t kReorderHeld = kRxBurst * kRxBursts;      // held back by --reorder-rate (one round)
  return static_cast<uint32_t>(kTxQueueLimit) + npus + std::max(rx_paths, 1u) * (kFeedbackPerPoll + kReorderHeld);
}

void DpdkFabric::send(const emu::Message& m, emu::Time ready) {
  if (!started_) {
    // Wall time zero is the engine's time zero: the walker's start-up (reading the traces) between the
    // construction and its first message must not count as time the wire already owes (the first
    // frames would leave late and then catch up at the device's rate).
    started_ = true;
    clock_.restart();
    if (workers_.empty()) rx_paths_[0]->restart_clock();  // one time base for the pcap records
  }
  model_.send(m, ready);  // validates, and schedules the modelled delivery
  Record r;
  r.src = static_cast<uint32_t>(m.src);
  r.dst = static_cast<uint32_t>(m.dst);
  r.bytes = m.bytes;
  r.local = m.src == m.dst;
  r.arrived = r.local;
  r.flow = m.flow;
  r.ready = ready;
  r.coll = m.coll;
  if (!records_.emplace(m.id, r).second) {
    throw std::logic_error(fmt::format("DpdkFabric::send: message id {} is already in flight", m.id));
  }
  if (r.local) {
    ++stats_.local_messages;
    return;
  }
  if (ready == engine_.now()) {
    submit(m.id);
  } else {
    engine_.at(ready, *this, m.id);  // does not touch the walker: the model's events keep their order
  }
}

void DpdkFabric::on_event(uint64_t id) { submit(id); }

void DpdkFabric::submit(uint64_t id) {
  Record& r = records_.at(id);
  const MessagePacing::FirstHop hop = pacing_.book(model_.topology(), r.src, r.dst, r.flow, r.bytes, engine_.now());
  r.first_link = hop.link;
  r.depart = hop.depart;
  r.rate = hop.rate;
  ++stats_.messages;
  stats_.message_bytes += r.bytes;
  if (!clock_.as_fast_as_possible()) {
    const TscClock::Reading now = clock_.read();
    r.handed = now.emulated;
    pacing_.wait(r.depart, id);
    // The walker hands over a collective's messages in a row, for microseconds: frames built ahead that
    // came due meanwhile leave between two of them (the clock was read anyway).
    if (!holding_.empty()) send_due_held(now.wall.ps());
    return;
  }
  if (!backlog_.empty() || !try_submit(id, r)) backlog_.push_back(id);
}

bool DpdkFabric::try_submit(uint64_t id, Record& r) {
  const LinkSenders::Pair ps = senders_.of(r.src, r.dst, r.first_link);
  if (ps.sender >= tx_next_work_.size()) tx_next_work_.resize(senders_.size(), 0);
  Sender& s = senders_[ps.sender];
  if (!s.can_submit(ps.dst)) return false;
  tx_next_work_[ps.sender] = 0;
  // Every packet carries the record's address (no lookup per frame).
  r.wire_id = s.submit(ps.dst, r.bytes, reinterpret_cast<uintptr_t>(&r));
  r.submitted = true;
  by_wire_[pair_key(r.src, r.dst, r.wire_id, npus_)] = id;
  return true;
}

void DpdkFabric::on_delivered(uint64_t id, emu::Time at) {
  const auto it = records_.find(id);
  if (it == records_.end()) throw std::logic_error(fmt::format("DpdkFabric: unknown message {} delivered", id));
  Record& r = it->second;
  // The delay line: the wire must have brought every packet, and (dilated) the wall clock must have
  // reached the modelled time.
  // Progress: a message completed or an ACK came back (ACKs also acknowledge a long message's packets as
  // they arrive, every kAckEvery of them). NACKs alone are not: a device that always drops some frames
  // (frames longer than its MTU, a flow it blocks) makes the receiver ask for them again and again, and
  // the run would wait for ever.
  // One clock reading a round: the wait's test, the stall timeout and the next round's poll (a TSC read
  // costs about 24 ns on a KVM guest; the round read it six times before).
  TscClock::Reading reading = clock_.read();
  emu::Time last_progress = reading.wall;
  uint64_t progress = progress_;
  const uint64_t nacks_before = nacks_in_;
  // Build-ahead: the walker goes on once the wire has brought the message and the dilated clock is within
  // opt_.ahead of the modelled delivery, so that what it hands over next is booked before it is due.
  const emu::Time until = emu::Time::from_ps(at.ps() > ahead_emulated_ps_ ? at.ps() - ahead_emulated_ps_ : 0);
  while (!r.arrived || reading.emulated < until) {  // emulated: Time::max() as fast as possible
    if (Eal::stop_requested()) {
      interrupted_ = true;
      engine_.stop();
      return;
    }
    poll(reading);
    reading = clock_.read();
    // A held frame due within kSpinPs: wait for it here and send it then, rather than a poll round later.
    if (!holding_.empty() && reading.wall.ps() + kSpinPs >= next_release_ps_) {
      while (reading.wall.ps() < next_release_ps_) reading = clock_.read();
      send_due_held(reading.wall.ps());
    }
    const emu::Time now = reading.wall;
    if (progress_ != progress || r.arrived) {
      progress = progress_;
      last_progress = now;
    } else if (now - last_progress > opt_.stall_timeout) {
      // The run stops here, as on SIGINT: the walker reports what had finished and what had not, and
      // the DPDK section what went on the wire, then the CLI fails with this reason. Frames that are not
      // ours kept arriving meanwhile (the main lcore's counts; the receive lcore's are its own until it
      // stops): a device that makes frames of its own, or someone else's traffic.
      const uint64_t foreign = stats_.not_ours + (workers_.empty() ? rx_paths_[0]->stats().not_ours : 0);
      const uint64_t nacks = nacks_in_ - nacks_before;
      stall_ = fmt::format(
          "message {} ({} bytes, rank {} -> {}) was due at {} ps but {} on {} for {} ms{}{}",
          id, r.bytes, r.src, r.dst, at.ps(),
          nacks == 0 ? std::string("nothing of ours arrived")
                     : fmt::format("no message completed and no ACK came back ({} NACKs asked for packets that never "
                                   "arrived: does the device drop some frames, e.g. frames longer than its MTU? "
                                   "--wire-mtu is {})",
                                   nacks, opt_.wire_mtu),
          ports_.describe(), opt_.stall_timeout.ps() / 1'000'000'000,
          foreign == 0 ? std::string()
                       : fmt::format(" ({} frames that are not fabemu's arrived in this run: does the device "
                                     "bring back the frames sent to it?)",
                                     foreign),
          describe_drops(opt_.faults, "frames"));
      engine_.stop();
      return;
    }
  }
  if (!r.local && !clock_.as_fast_as_possible()) {
    if (r.arrived_emulated > at) {
      ++stats_.late;
      stats_.lateness_ns.record((r.arrived_emulated - at).ps() / 1000);
    } else {
      ++stats_.on_time;
    }
    if (r.coll != emu::Message::kNoCollective) {
      if (r.coll >= coll_acc_.size()) coll_acc_.resize(std::max<size_t>(r.coll + 1, coll_acc_.size() * 2));
      CollAcc& c = coll_acc_[r.coll];
      ++c.messages;
      c.bytes += r.bytes;
      c.first_ready_ps = std::min(c.first_ready_ps, r.ready.ps());
      c.first_start_ps = std::min(c.first_start_ps, std::max(r.ready, r.handed).ps());
      c.modelled_end_ps = std::max(c.modelled_end_ps, at.ps());
      c.measured_end_ps = std::max(c.measured_end_ps, r.arrived_emulated.ps());
      c.ce += r.ce;
      if (r.tx_ticks != 0) {
        // Late against what the message could do: not before its modelled departure, nor before the
        // walker handed it over (a walker that waited for the wire is the wire's delay, not fabemu's).
        const emu::Time left = clock_.emulated_at(r.tx_ticks);
        const emu::Time from = std::max(r.depart, r.handed);
        if (left > from) c.late_start_ps = std::max(c.late_start_ps, (left - from).ps());
      }
    }
  }
  records_.erase(it);
  ++stats_.deliveries;
  if (listener_ != nullptr) listener_->on_delivered(id, at);
}

void DpdkFabric::close_pcap() {
  if (!pcap_) return;
  // A capture that fails (its writers stop on failure, capture_options) is reported in the stats, never
  // thrown: the run and its report matter more than the file.
  const auto note = [this](const std::string& e) {
    if (stats_.pcap_error.empty()) stats_.pcap_error = e;
  };
  const auto close_one = [&](PcapWriter& w) {
    try {
      w.close();
    } catch (const std::exception& e) {
      note(e.what());
    }
    if (!w.error().empty()) note(w.error());
    stats_.pcap_frames += w.frames();
    stats_.pcap_waits += w.waits();
    stats_.pcap_wait_ns += w.waited_ns();
    stats_.pcap_dropped += w.dropped();
  };
  // The receive lcores have stopped (drain(), or the run failed before them): their writers' counters
  // are this lcore's to read.
  stats_.pcap = opt_.pcap;
  stats_.pcap_frames = stats_.pcap_waits = stats_.pcap_wait_ns = stats_.pcap_dropped = 0;
  close_one(*pcap_);
  for (const auto& w : rx_pcaps_) close_one(*w);
  // Only once the receive lcores have stopped: their captures are complete. Each one's records are on its
  // RxPath's clock (zero at construction), the main lcore's on clock_ (zero at the first send); merged one
  // at a time into the main lcore's file, which stays on clock_. Not after a failure: each file keeps
  // what it holds, and the error says where they are.
  for (size_t q = 0; q < rx_pcaps_.size() && stats_.pcap_error.empty(); ++q) {
    PcapWriter& w = *rx_pcaps_[q];
    const uint64_t main0 = clock_.start_ticks(), rx0 = rx_paths_[q]->clock().start_ticks();
    const int64_t shift = main0 >= rx0 ? -static_cast<int64_t>(clock_.ticks_to_ns(main0 - rx0))
                                       : static_cast<int64_t>(clock_.ticks_to_ns(rx0 - main0));
    const std::string merged = opt_.pcap + ".merging";
    try {
      merge_pcap(opt_.pcap, w.path(), shift, merged);
      std::filesystem::rename(merged, opt_.pcap);
      std::filesystem::remove(w.path());
    } catch (const std::exception& e) {
      std::error_code ec;
      std::filesystem::remove(merged, ec);
      note(e.what());
    }
  }
  if (!stats_.pcap_error.empty() && !rx_pcaps_.empty()) {
    stats_.pcap_error += fmt::format("; the receive lcores' frames are in {}.rx-lcore*, not merged", opt_.pcap);
  }
  rx_pcaps_.clear();
  pcap_.reset();
}

// --- I/O -----------------------------------------------------------------------------------------------

bool DpdkFabric::poll() { return poll(clock_.read()); }

bool DpdkFabric::poll(const TscClock::Reading& reading) {
  {
    // Stalls of the polling thread (OS preemption, a slow walker step): frames due meanwhile leave late.
    const uint64_t now = reading.wall.ps();
    if (last_poll_ps_ != 0 && now > last_poll_ps_) {
      const uint64_t gap_ns = (now - last_poll_ps_) / 1000;
      stats_.poll_gap_max_ns = std::max(stats_.poll_gap_max_ns, gap_ns);
      if (gap_ns > kPollStallNs) {
        ++stats_.poll_stalls;
        if (stalls_.size() < kMaxStalls) stalls_.push_back(Stall{last_poll_ps_, now});
      }
    }
    last_poll_ps_ = now;
  }
  if (pacing_.waiting()) {
    // Handed to their senders up to opt_.ahead before their departure (build-ahead).
    const emu::Time emulated = reading.emulated + emu::Duration::from_ps(ahead_emulated_ps_);
    // Due messages join the backlog behind those already waiting; the loop below submits them in order.
    for (uint64_t id; pacing_.pop_due(emulated, id);) backlog_.push_back(id);
  }
  if (!backlog_.empty()) {
    size_t kept = 0;
    for (size_t i = 0; i < backlog_.size(); ++i) {
      const uint64_t id = backlog_[i];
      Record& r = records_.at(id);
      // A pair whose window is full waits, and the other pairs go on (a message waiting for one pair's
      // window held back every later message of every pair: frames left late on idle links). The pair's
      // order holds: its window only fills within this loop (no ACK is taken meanwhile), so its later
      // messages find it full too. (DpdkFabric.AFullWindowHoldsBackOnlyItsOwnPair)
      if (!try_submit(id, r)) backlog_[kept++] = id;
    }
    backlog_.resize(kept);
  }
  transmit(reading);
  rx_any_ = false;
  if (!workers_.empty()) {
    for (const auto& w : workers_) {
      if (w->done() && !w->joined()) w->join();  // rethrows a failure of the receive lcore
    }
    take_completions();
    receive(ports_.a());
  } else {
    // The receive side inline: frames built ahead that came due while it worked (a wave of arrivals takes
    // it microseconds: reassembly, the ACKs) leave when it is done with them, not a round later.
    if (rx_paths_[0]->poll(*this, engine_.now().ps(), reading.ticks)) {
      rx_any_ = true;
      if (!holding_.empty()) send_due_held(clock_.wall().ps());
    }
    if (&ports_.a() != &ports_.b()) receive(ports_.a());
  }
  return rx_any_;
}

void DpdkFabric::take_completions() {
  RxCompletion* const c = completions_.data();
  const auto max = static_cast<unsigned>(completions_.size());
  for (const auto& w : workers_) {
    for (;;) {
      const unsigned n = w->take(c, max);
      for (unsigned i = 0; i < n; ++i) completed(c[i]);
      if (n > 0) rx_any_ = true;
      if (n < max) break;
    }
  }
}

void DpdkFabric::completed(const RxCompletion& c) {
  const auto w = by_wire_.find(pair_key(c.src, c.dst, c.wire_id, npus_));
  if (w == by_wire_.end()) return;
  ++progress_;
  Record& r = records_.at(w->second);
  r.arrived = true;
  r.rx_ticks = c.rx_ticks;
  r.ce = c.ce;
  r.arrived_emulated = clock_.emulated_at(c.rx_ticks);
  const uint64_t lat_ns = c.rx_ticks > r.tx_ticks ? clock_.ticks_to_ns(c.rx_ticks - r.tx_ticks) : 0;
  stats_.latency_ns.record(lat_ns);
  if (!r.retransmitted) adapt_rto(lat_ns);  // Karn's rule: a retransmission makes the sample ambiguous
  ++completed_messages_;
  completed_bytes_ += r.bytes;
  by_wire_.erase(w);
  // A wave of arrivals keeps this lcore for microseconds (the receive side inline, or many completions
  // taken at once): every 4 completions, frames built ahead that came due meanwhile leave.
  if (!holding_.empty() && (completed_messages_ & 3) == 0) send_due_held(clock_.wall().ps());
}

uint16_t DpdkFabric::build(rte_mbuf* m, const FrameSpec& spec) {
  const uint16_t len = fill_mbuf(m, flow_template(spec), spec);
  if (len == 0) {
    rte_pktmbuf_free(m);
    throw std::logic_error("DpdkFabric: a frame does not fit its mbuf");
  }
  if (pcap_) pcap_->write(mbuf_bytes(m), clock_.wall().ps() / 1000);
  ++stats_.frames_tx;
  stats_.frame_bytes_tx += len;
  return len;
}

uint64_t DpdkFabric::build_run(rte_mbuf* const* ms, uint32_t n, const FrameSpec& spec, uint32_t last_bytes,
                               bool payload_zero) {
  const uint64_t bytes = fill_run(ms, n, flow_template(spec), spec, last_bytes, payload_zero);
  if (bytes == 0) {
    rte_pktmbuf_free_bulk(const_cast<rte_mbuf**>(ms), n);
    throw std::logic_error("DpdkFabric: a frame does not fit its mbuf");
  }
  if (pcap_ && n > 1) {
    // A run is captured by its description, encoded again by the writing thread (PcapWriter::write_run):
    // the lcore writes about 160 bytes for the run instead of each frame's head.
    pcap_->write_run(spec, n, last_bytes, clock_.wall().ps() / 1000);
  } else if (pcap_) {
    // A data frame's payload (and RoCEv2 pad) is zeros: captured as such, not read back (PcapWriter).
    const uint64_t ns = clock_.wall().ps() / 1000;
    const bool roce = spec.mode == WireMode::kRoceV2;
    const size_t head = kEthHeaderBytes + kIpv4HeaderBytes + kUdpHeaderBytes + (roce ? kBthBytes : 0) +
                        kFabemuHeaderBytes;
    const size_t tail = roce ? kIcrcBytes : 0;
    for (uint32_t i = 0; i < n; ++i) {
      const std::span<const uint8_t> f = mbuf_bytes(ms[i]);
      const size_t body = f.size() > head + tail ? f.size() - head - tail : 0;
      pcap_->write_zero_body(f, std::min(head, f.size()), body, ns);
    }
  }
  stats_.frames_tx += n;
  stats_.frame_bytes_tx += bytes;
  return bytes;
}

rte_mbuf* DpdkFabric::frame(Port& port, const FrameSpec& spec) {
  rte_mbuf* m = rte_pktmbuf_alloc(port.pool());
  if (m == nullptr) return nullptr;
  build(m, spec);
  return m;
}

bool DpdkFabric::refill_stash() {
  stash_next_ = stash_n_ = 0;
  if (take_frames(data_pool_, tx_stash_, kTxStash)) {
    stash_n_ = kTxStash;
    return true;
  }
  // Fewer than a stash left in the pool (and the lcore cache): one at a time.
  rte_mbuf* m = rte_pktmbuf_alloc(data_pool_);
  if (m == nullptr) return false;
  tx_stash_[0] = m;
  stash_n_ = 1;
  return true;
}

bool DpdkFabric::refill_short() {
  const unsigned want = kShortStash - short_n_;
  if (want == 0) return true;
  if (take_frames(ports_.a().pool(), short_stash_ + short_n_, want)) {
    short_n_ = kShortStash;
    return true;
  }
  return false;  // port A's pool is (nearly) empty: next poll
}

void DpdkFabric::retransmitted(uint32_t src, uint32_t dst, uint64_t wire_id) {
  // Karn's rule: the message's round trip is no RTT sample any more (until reassembled).
  const auto w = by_wire_.find(pair_key(src, dst, wire_id, npus_));
  if (w != by_wire_.end()) records_.at(w->second).retransmitted = true;
}

void DpdkFabric::set_destination(FrameSpec& spec, uint32_t src, uint32_t dst) const {
  spec.dst = plan_.at(dst);
  if (opt_.mode == WireMode::kRoceV2) spec.src.port = flow_source_port(uint64_t{src} << 32 | dst);
  spec.bth.dest_qp = dst + 1;
}

// Pacing (pace_frames, link_pacer.h): a first transmission leaves no earlier than the modelled departure of
// its bytes, and no earlier than its link's rate allows after the frame before. The frames of a run that
// are due by now leave in this poll; the rest of the run is not taken from the Sender: it stays there,
// unsent and untimed, until it is due (RunGate).
uint32_t DpdkFabric::pace_run(const TxRun& r) {
  const Record& rec = *reinterpret_cast<const Record*>(static_cast<uintptr_t>(r.cookie));
  const uint32_t link = rec.first_link;
  const Paced got = pace_frames(clock_, link, rec.depart, rec.rate, r, burst_ps_[link], pace_slot_[link],
                                pace_now_ps_, false, paced_.data() + paced_n_, pace_ahead_ps_);
  paced_n_ += got.runs;
  return got.frames;
}

void DpdkFabric::transmit(const TscClock::Reading& now) {
  // With pacing (dilation > 0) the Sender gives only the new packets that are due (pace_run); without
  // it, all of them. Either way a run of one message at a time (Sender::next_runs, fill_run).
  const bool paced = !clock_.as_fast_as_possible();
  // The round's clock reading for the pacing's now and the frames' stamp (the emulated time of the same
  // instant).
  const emu::Time wall = now.wall;
  const emu::Time stamp = paced ? now.emulated : engine_.now();
  pace_now_ps_ = wall.ps();
  const RunGate gate =
      paced ? RunGate{[](void* self, const TxRun& r) { return static_cast<DpdkFabric*>(self)->pace_run(r); }, this}
            : RunGate{};
  FrameSpec spec;
  spec.mode = opt_.mode;
  spec.dscp = opt_.dscp;
  spec.ecn = opt_.ecn;
  // Frames built ahead that are due now leave first, before this round builds any (build-ahead).
  if (!holding_.empty()) send_due_held(wall.ps());
  if (held_.size() < senders_.size()) held_.resize(senders_.size());
  size_t built = tx_built();
  for (uint32_t si = 0; si < senders_.size(); ++si) {
    // Nothing before its next work (Sender::next_work): most senders, most polls. Their own lines stay
    // untouched (an idle sender's next_runs read its timers and queues, cold in a polling loop).
    if (tx_next_work_[si] > wall.ps()) continue;
    Sender& s = senders_[si];
    const uint32_t src = senders_.src(si);
    const size_t txq = txq_of(si);
    std::vector<rte_mbuf*>& out = tx_data_[txq];
    PacedQueue& out_paced = tx_paced_[txq];
    spec.src = plan_.at(src);
    uint32_t spec_dst = ~0u;
    std::array<TxRun, kShortStash>& runs = tx_runs_;
    Held& held = held_[si];
    // Build-ahead while this sender and all hold fewer than their limits; else only frames due now.
    pace_ahead_ps_ = !tx_behind_ && held.frames() < kHeldMax && held_frames_ < kHeldTotalMax ? ahead_wall_ps_ : 0;
    uint32_t budget = kFramesPerSender;  // per poll, so that one sender cannot starve the others
    // The stash's mbufs count in kTxQueueLimit (frames_in_flight) with the frames built. The sender is
    // asked for no more packets than the stash has mbufs for: every packet taken leaves in this poll.
    while (budget > 0 && built + kTxStash < kTxQueueLimit) {
      if (stash_next_ == stash_n_ && !refill_stash()) break;  // pool empty: next poll
      // A shorter frame for each run that may end in one (split_short_).
      if (split_short_ && !refill_short()) break;
      const size_t room = std::min<size_t>(
          {budget, kTxQueueLimit - kTxStash - built, size_t{stash_n_} - stash_next_});
      paced_n_ = 0;
      const Sender::Runs got = s.next_runs(wall, runs, room, gate);
      size_t paced_next = 0;  // paced_ holds the PacedRuns of the first transmissions' frames, in order
      for (size_t ri = 0; ri < got.runs; ++ri) {
        const TxRun& r = runs[ri];
        const uint32_t k = r.n;
        const uint32_t dst = senders_.dst(si, r.dst);  // r.dst is the destination's number in this sender
        // A first transmission's cookie is its record (retransmissions are neither paced nor counted as
        // data frames).
        Record* rec = r.retransmit ? nullptr : reinterpret_cast<Record*>(static_cast<uintptr_t>(r.cookie));
        if (r.retransmit) [[unlikely]] retransmitted(src, dst, r.message_id);
        if (dst != spec_dst) set_destination(spec, src, spec_dst = dst);
        spec.ip_id = static_cast<uint16_t>(ip_id_);
        spec.hdr = FabemuHeader{PacketKind::kData, r.retransmit ? kFlagRetransmit : uint16_t{0}, src, dst,
                                r.message_id, r.seq, r.count, r.message_length, r.offset, stamp.ps()};
        spec.payload_bytes = r.bytes;
        const uint32_t last = r.last_bytes;
        // The run's full frames from the stash (the zero pool); a shorter last frame too, unless it must
        // not be written there (split_short_: from short_stash_, its payload written).
        const uint32_t full = split_short_ && last != payload_ ? k - 1 : k;
        // A first transmission waits in the sender's hold when it is not due yet, or when frames built
        // before it wait there (its link's order); a retransmission leaves at once.
        size_t run_paced = paced_next;  // this run's PacedRuns: paced_[paced_next, run_paced)
        bool hold = false;
        if (paced && rec != nullptr) {
          for (uint32_t f = 0; f < k; ++run_paced) {
            const PacedRun& pr = paced_[run_paced];
            hold = hold || pr.paced_ps + uint64_t{pr.n - 1} * pr.frame_ps > pace_now_ps_;
            f += pr.n;
          }
          hold = hold || held.frames() > 0;
          if (hold) {
            // Its header's transmit time is its departure, not the time it was built. (A capture records
            // it when built, so that the file stays in time order: up to opt_.ahead early.)
            spec.hdr.tx_time_ps = std::max(stamp.ps(), wall_to_emulated_ps(paced_[paced_next].paced_ps));
          }
        }
        std::vector<rte_mbuf*>& dest = hold ? held.mbufs : out;
        const size_t first_index = dest.size();
        rte_mbuf* const* ms = tx_stash_ + stash_next_;
        stash_next_ = static_cast<uint16_t>(stash_next_ + full);  // taken: build_run frees them if it throws
        if (full > 0) build_run(ms, full, spec, full == k ? last : r.bytes, true);
        dest.insert(dest.end(), ms, ms + full);
        if (full < k) {
          rte_mbuf* m = short_stash_[--short_n_];
          build_run(&m, 1, run_frame(spec, k - 1, k, last), last, false);
          dest.push_back(m);
        }
        ip_id_ += k;
        budget -= k;
        built += k;
        if (hold) {
          if (held.frames() == k) {  // it held none before
            holding_.push_back(si);
            next_release_ps_ = std::min(next_release_ps_, paced_[paced_next].paced_ps);
          }
          held_frames_ += k;
          stats_.frames_ahead += k;
          if (r.seq == 0) held.firsts.emplace_back(first_index, rec);
          held.runs.insert(held.runs.end(), paced_.begin() + static_cast<std::ptrdiff_t>(paced_next),
                           paced_.begin() + static_cast<std::ptrdiff_t>(run_paced));
          paced_next = run_paced;
          stats_.data_frames += k;
          continue;
        }
        if (rec != nullptr) {
          stats_.data_frames += k;
          if (r.seq == 0) tx_firsts_[txq].add(first_index, rec);  // stamped as it leaves (flush)
          if (paced) {  // the link's frames and bytes are counted as they leave (flush)
            // Behind the schedule by more than the ahead time: no more building ahead (the lcore has no
            // time to spare: the holds would only cost it) until a run leaves within a quarter of it.
            const uint64_t sched = paced_[paced_next].scheduled_ps;
            if (pace_now_ps_ > sched + ahead_wall_ps_) {
              tx_behind_ = ahead_wall_ps_ > 0;
            } else if (pace_now_ps_ < sched + ahead_wall_ps_ / 4) {
              tx_behind_ = false;
            }
            for (uint32_t f = 0; f < k; ++paced_next) {  // the run's PacedRuns: k frames
              f += paced_[paced_next].n;
              out_paced.push(paced_[paced_next]);
            }
          } else {
            // Nothing is scheduled without pacing: a link's frames and bytes are counted as they are
            // built, as frames_tx is (every frame built leaves before the run ends).
            LinkPace& lp = link_pace_[rec->first_link];
            lp.frames += k;
            lp.bytes += uint64_t{k - 1} * r.bytes + last;
          }
        } else if (paced) {
          out_paced.push_unpaced(k);  // a retransmission
        }
      }
      // Fewer than asked for and room for more runs: the sender has nothing more to send now.
      if (got.packets < room && got.runs < runs.size()) break;
    }
    tx_next_work_[si] = s.next_work(wall).ps();
  }
  // Frames held that came due while this round built (it may have built for a while).
  if (!holding_.empty()) send_due_held(clock_.wall().ps());
  flush_all(paced);
}

void DpdkFabric::flush_all(bool paced) {
  for (size_t q = 0; q < tx_data_.size(); ++q) {
    flush(ports_.a(), static_cast<uint16_t>(q), tx_data_[q], tx_firsts_[q], paced ? &tx_paced_[q] : nullptr);
  }
}

void DpdkFabric::send_due_held(uint64_t now_ps) {
  bool any = false;
  size_t kept = 0;
  next_release_ps_ = ~uint64_t{0};
  for (const uint32_t si : holding_) {
    Held& h = held_[si];
    const size_t txq = txq_of(si);
    std::vector<rte_mbuf*>& out = tx_data_[txq];
    PacedQueue& out_paced = tx_paced_[txq];
    FirstFrames<Record>& firsts = tx_firsts_[txq];
    // The due frames: whole runs, then the due front of the next one.
    size_t frames = 0;
    while (h.run_head < h.runs.size()) {
      PacedRun& pr = h.runs[h.run_head];
      if (pr.paced_ps > now_ps) break;
      const uint64_t due = (now_ps - pr.paced_ps) / std::max<uint64_t>(pr.frame_ps, 1) + 1;
      if (due < pr.n) {
        out_paced.push(pr.take_front(clock_, static_cast<uint32_t>(due)));
        frames += due;
        break;
      }
      out_paced.push(pr);
      frames += pr.n;
      ++h.run_head;
    }
    if (frames > 0) {
      any = true;
      const size_t base = out.size();
      const auto from = h.mbufs.begin() + static_cast<std::ptrdiff_t>(h.mbuf_head);
      out.insert(out.end(), from, from + static_cast<std::ptrdiff_t>(frames));
      const size_t end = h.mbuf_head + frames;
      for (; h.first_head < h.firsts.size() && h.firsts[h.first_head].first < end; ++h.first_head) {
        firsts.add(base + (h.firsts[h.first_head].first - h.mbuf_head), h.firsts[h.first_head].second);
      }
      h.mbuf_head = end;
      held_frames_ -= frames;
    }
    if (h.frames() == 0) {  // emptied: its room is reused from the start
      h.mbufs.clear();
      h.runs.clear();
      h.firsts.clear();
      h.mbuf_head = h.run_head = h.first_head = 0;
    } else {
      holding_[kept++] = si;
      next_release_ps_ = std::min(next_release_ps_, h.runs[h.run_head].paced_ps);
    }
  }
  holding_.resize(kept);
  if (any) flush_all(true);
}

void DpdkFabric::flush(Port& port, uint16_t txq, std::vector<rte_mbuf*>& queue, FirstFrames<Record>& firsts,
                       PacedQueue* paced) {
  if (queue.empty()) return;
  const size_t given = queue.size();
  const size_t sent = send_bursts(port, txq, queue, kBurst, [&](size_t from, uint16_t took) {
    // Sent now: the actual departure of these frames (after tx_burst returned them as taken), one reading
    // for the messages' send times and the pacing's departures.
    const uint64_t ticks = clock_.ticks();
    firsts.taken(from, took, [ticks](Record& r) { r.tx_ticks = ticks; });
    if (paced == nullptr) return;
    paced->departed(
        clock_, took, clock_.wall_at(ticks).ps(), stats_.jitter_ns,
        [this](uint32_t link) -> LinkPace& { return link_pace_[link]; },
        [this](LinkPace& lp) { close_period(lp, period_ratios_); });
  });
  firsts.erased(sent);
  if (paced != nullptr) paced->compact();
  ++stats_.tx_flushes;
  stats_.tx_full += sent < given;
}

void DpdkFabric::close_period(LinkPace& lp, std::vector<double>& ratios) const {
  double sched = 0, act = 0;
  if (!lp.close(sched, act)) return;
  // Disturbed: the polling thread stalled within the period.
  const auto it = std::lower_bound(stalls_.begin(), stalls_.end(), lp.start_ps,
                                   [](const Stall& st, uint64_t t) { return st.to_ps < t; });
  if (it != stalls_.end() && it->from_ps <= lp.last_actual_ps) {
    ++lp.disturbed;
    return;
  }
  if (act > 0) ratios.push_back(sched / act);
}

// RFC 6298's estimator (RtoEstimator) on the wire latency of whole messages (first frame sent to
// reassembled: it covers the device queues and the kernel path of af_packet, where a fixed RTO gives
// spurious retransmissions): the senders' RTO follows SRTT + 4 RTTVAR, never below the configured (or
// pacing-scaled) floor nor above one second.
void DpdkFabric::adapt_rto(uint64_t sample_ns) {
  if (rto_.sample(sample_ns)) {  // only a change of more than 1/8 reaches the senders
    senders_.set_rto(rto_.rto());
    std::fill(tx_next_work_.begin(), tx_next_work_.end(), 0);  // a shorter RTO brings timers forward
    stats_.rto_max = rto_.max();
  }
  // Tail-loss recovery (Sender::on_nack): a packet beyond what a NACK covers is lost once it is older
  // than whole messages take, first frame sent to reassembled (SRTT + 4 RTTVAR, without the RTO's floor:
  // that floor is there for queues no message of this run has met), at least the NACK delay, at most the
  // RTO. A whole message takes at least as long as its last packet, so a packet older than that has not
  // just been slow in a queue.
  if (const auto tail = rto_.next_tail_age(opt_.nack_delay)) {
    senders_.set_tail_age(*tail);
    stats_.tail_age_min = rto_.tail_age_min();
  }
}

void DpdkFabric::receive(Port& port) {
  // Port A carries the feedback only: a data frame there is invalid (data frames are port B's). Each of
  // its queues (one per receive path).
  for (uint16_t q = 0; q < port.config().rx_queues; ++q) {
    const bool any = receive_round(port, q, rules_, scratch_, stats_, a_hw_timestamped_,
                                   [&](rte_mbuf* m, const DecodedFrame& f, bool, uint64_t, uint64_t) {
      if (f.hdr.kind == PacketKind::kData) {
        ++stats_.rx_invalid;
      } else {
        handle(f);
      }
      rte_pktmbuf_free(m);
    });
    if (any) rx_any_ = true;
  }
}

void DpdkFabric::handle(const DecodedFrame& f) {
  const FabemuHeader& h = f.hdr;
  if (h.src_rank >= npus_ || h.dst_rank >= npus_) {
    ++stats_.rx_invalid;
    return;
  }
  // Feedback from receiver h.src_rank to sender h.dst_rank.
  const LinkSenders::Pair ps = senders_.find(h.dst_rank, h.src_rank);
  if (ps.sender == ~0u) {
    ++stats_.rx_invalid;
    return;
  }
  Sender& s = senders_[ps.sender];
  if (h.kind == PacketKind::kAck) {
    s.on_ack(ps.dst, h.message_id, h.seq);
    ++progress_;
  } else {
    ++nacks_in_;
    missing_.resize(f.missing_count());
    for (size_t i = 0; i < missing_.size(); ++i) missing_[i] = f.missing(i);
    s.on_nack(ps.dst, h.message_id, h.seq, static_cast<uint32_t>(h.offset), missing_, clock_.wall());
    tx_next_work_[ps.sender] = 0;  // retransmissions queued
  }
}

bool DpdkFabric::drain(emu::Duration limit) {
  const emu::Time start = clock_.wall();
  const auto busy = [&] {
    if (tx_built() > 0 || !backlog_.empty() || pacing_.waiting()) return true;
    if (workers_.empty() && !rx_paths_[0]->idle()) return true;
    for (size_t i = 0; i < senders_.size(); ++i) {
      if (senders_[i].unacked_messages() > 0) return true;
    }
    return false;
  };
  bool done = true;
  while (busy()) {
    // After a stall nothing is waited for: the device brought nothing back for the stall timeout.
    if (clock_.wall() - start > limit || Eal::stop_requested() || stalled()) {
      done = false;
      break;
    }
    poll();
  }
  if (workers_running()) {
    // The receive lcores stop once their queues have been quiet for 2 ms (late re-ACKs sent), or at the
    // limit; meanwhile this lcore keeps taking their completions and ACKs. Then their counters may be read.
    const emu::Duration spent = clock_.wall() - start;
    const uint64_t left_ns = spent < limit ? (limit - spent).ps() / 1000 : 0;
    const uint64_t deadline = rte_rdtsc() + clock_.hz() / 1'000'000 * (left_ns / 1000 + 1);
    for (const auto& w : workers_) {
      if (!w->joined()) w->request_stop(2'000'000, deadline);
    }
    const auto all_done = [this] {
      for (const auto& w : workers_) {
        if (!w->done()) return false;
      }
      return true;
    };
    while (!all_done()) poll();
    for (const auto& w : workers_) {
      if (!w->joined()) w->join();
    }
    take_completions();
  }
  // Then until the ports are quiet (late re-ACKs), so that no frame of this run is left for another.
  emu::Time quiet_since = clock_.wall();
  while (clock_.wall() - quiet_since < emu::Duration::from_ms(2) && clock_.wall() - start <= limit) {
    if (poll()) quiet_since = clock_.wall();
  }
  close_pcap();
  return done;
}

const DpdkStats& DpdkFabric::stats() {
  DpdkStats& s = stats_;
  s.wall = clock_.wall().since_start();
  s.stall = stall_;
  s.retransmissions = s.nack_retransmissions = s.timeout_retransmissions = s.tail_retransmissions = 0;
  s.nacks_in_flight = 0;
  for (size_t i = 0; i < senders_.size(); ++i) {
    const SenderStats& st = senders_[i].stats();
    s.retransmissions += st.retransmissions;
    s.nack_retransmissions += st.nack_retransmissions;
    s.timeout_retransmissions += st.timeout_retransmissions;
    s.tail_retransmissions += st.tail_retransmissions;
    s.nacks_in_flight += st.nacks_in_flight;
  }
  // The receive side's counters: its lcores' own until they have stopped (then only what the completions
  // told this lcore is known).
  const bool rx_readable = !workers_running();
  s.rx_duplicates = s.rx_reordered = s.rx_stale = 0;
  s.rx_receiver_invalid = 0;
  s.bytes_completed = completed_bytes_;
  s.messages_completed = completed_messages_;
  s.injected_drops = s.injected_duplicates = s.injected_reorders = 0;
  if (rx_readable) {
    s.bytes_completed = s.messages_completed = 0;
    for (const auto& path : rx_paths_) {
      const ReceiverStats st = path->receiver_totals();
      s.rx_duplicates += st.duplicates;
      s.rx_reordered += st.reordered;
      s.rx_stale += st.stale;
      s.rx_receiver_invalid += st.invalid + st.out_of_window;
      s.bytes_completed += st.bytes_completed;
      s.messages_completed += st.completed;
      s.injected_drops += path->faults().dropped();
      s.injected_duplicates += path->faults().duplicated();
      s.injected_reorders += path->faults().reordered();
    }
  }
  s.links.clear();
  s.pacing_ratio = s.pacing_median_ratio = 0;
  s.pacing_periods = s.pacing_disturbed_periods = 0;
  std::vector<double> ratios = period_ratios_;
  double scheduled_total = 0, actual_total = 0;
  for (size_t l = 0; l < link_pace_.size(); ++l) {
    LinkPace lp = link_pace_[l];  // the open period is closed in this copy only
    if (lp.frames == 0) continue;
    if (lp.open) close_period(lp, ratios);
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
  // Every polling lcore's stalls, wall ps, merged: what each collective's span overlaps.
  std::vector<Span> stalls;
  if (!coll_acc_.empty()) {
    stalls.reserve(stalls_.size());
    for (const Stall& st : stalls_) stalls.push_back(Span{st.from_ps, st.to_ps});
    if (!workers_.empty() && rx_readable) {
      for (const auto& path : rx_paths_) {
        for (const TickSpan& t : path->stalls()) {
          stalls.push_back(Span{clock_.wall_at(t.from).ps(), clock_.wall_at(t.to).ps()});
        }
      }
    }
    merge_spans(stalls);
  }
  s.collectives.clear();
  for (size_t c = 0; c < coll_acc_.size(); ++c) {
    const CollAcc& a = coll_acc_[c];
    if (a.messages == 0) continue;
    DpdkStats::Collective out;
    out.coll = static_cast<uint32_t>(c);
    out.messages = a.messages;
    out.bytes = a.bytes;
    out.modelled = emu::Duration::from_ps(a.modelled_end_ps - a.first_ready_ps);
    // Measured from the collective's real start: a collective the walker could only start late (it waited
    // for an earlier one's late frames) is measured for its own time on the wire, not for what it inherited.
    out.measured = emu::Duration::from_ps(a.measured_end_ps > a.first_start_ps ? a.measured_end_ps - a.first_start_ps : 0);
    out.late_start = emu::Duration::from_ps(a.late_start_ps);
    out.ce_frames = a.ce;
    out.deviation = out.modelled.ps() == 0 ? 0.0
                                           : static_cast<double>(out.measured.ps()) / static_cast<double>(out.modelled.ps()) - 1.0;
    if (!stalls.empty() && a.measured_end_ps > a.first_start_ps && clock_.dilation_q16() != 0) {
      // The span on the wall clock (emulated times D), its stalled wall time back to emulated (over D).
      const uint64_t from = clock_.to_wall(emu::Duration::from_ps(a.first_start_ps)).ps();
      const uint64_t to = clock_.to_wall(emu::Duration::from_ps(a.measured_end_ps)).ps();
      const uint64_t wall = covered_within(stalls, from, to);
      out.stalled = emu::Duration::from_ps(
          static_cast<uint64_t>((emu::detail::u128{wall} << 16) / clock_.dilation_q16()));
    }
    s.collectives.push_back(out);
  }
  // The main lcore's counters plus the receive side's.
  out_ = s;
  // Frames built ahead and still held (a run that stopped early) have not been sent.
  out_.frames_tx -= held_frames_;
  out_.data_frames -= held_frames_;
  out_.frames_ahead -= held_frames_;
  for (const uint32_t si : holding_) {
    const Held& h = held_[si];
    for (size_t i = h.mbuf_head; i < h.mbufs.size(); ++i) out_.frame_bytes_tx -= rte_pktmbuf_pkt_len(h.mbufs[i]);
  }
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
    a.frames = s.frames_rx;
    a.hw_timestamped = a_hw_timestamped_;
    out_.rx_clocks.push_back(a);
  }
  return out_;
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

std::string format_dpdk_stats(const DpdkStats& s) {
  std::string out = "DPDK\n";
  out += fmt::format("  time                {}, wall {:.3f} ms\n",
                     s.dilation == 0 ? std::string("as fast as possible (deliveries at modelled times)")
                                     : fmt::format("dilation {:g} (emulated = wall / {:g})", s.dilation, s.dilation),
                     static_cast<double>(s.wall.ps()) / 1e9);
  out += fmt::format("  messages            {} on the wire ({} bytes), {} local; {} reassembled ({} bytes), {} delivered\n",
                     s.messages, s.message_bytes, s.local_messages, s.messages_completed, s.bytes_completed,
                     s.deliveries);
  out += fmt::format("  frames sent         {} ({} bytes): {} data, {} retransmitted ({} on NACK, {} of them tail-loss "
                     "probes; {} on timeout), {} ACK, {} NACK\n",
                     s.frames_tx, s.frame_bytes_tx, s.data_frames, s.retransmissions, s.nack_retransmissions,
                     s.tail_retransmissions, s.timeout_retransmissions, s.acks, s.nacks);
  out += fmt::format("  frames received     {} ({} bytes); not ours {}\n", s.frames_rx, s.frame_bytes_rx, s.not_ours);
  out += format_traffic_class(s);
  if (!s.stall.empty()) out += fmt::format("  stalled             the run stopped: {}\n", s.stall);
  if (s.rx_lcores.size() > 1) {
    std::string each;
    for (const DpdkStats::RxLcore& l : s.rx_lcores) {
      each += fmt::format("{}lcore {} on queue {}: {} frames in {} polls", each.empty() ? "" : "; ", l.lcore, l.queue,
                          l.frames, l.polls);
    }
    out += fmt::format("  lcores              main {} (walker, senders, pacing, port A); receive side on {} lcores, "
                       "a queue of port B each ({})\n", s.main_lcore, s.rx_lcores.size(), each);
  } else if (s.rx_lcore >= 0) {
    out += fmt::format("  lcores              main {} (walker, senders, pacing, port A); receive side on lcore {} "
                       "({} frames in {} polls)\n", s.main_lcore, s.rx_lcore, s.rx_lcore_frames, s.rx_lcore_polls);
  } else {
    out += fmt::format("  lcores              main {} polls everything\n", s.main_lcore);
  }
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
  out += fmt::format("  retransmit timeout  up to {:.3f} ms (adaptive: SRTT + 4 RTTVAR of the wire latency); a lost tail "
                     "on NACK after {}\n",
                     static_cast<double>(s.rto_max.ps()) / 1e9,
                     s.tail_age_min == emu::Duration{}
                         ? std::string("the RTO (no message latency measured yet)")
                         : fmt::format("down to {:.3f} ms", static_cast<double>(s.tail_age_min.ps()) / 1e9));
  for (size_t v = 1; v < kVerdictCount; ++v) {
    if (s.not_ours_by_verdict[v] > 0) {
      out += fmt::format("    {:<48} {}\n", std::string(to_string(static_cast<Verdict>(v))) + ":", s.not_ours_by_verdict[v]);
    }
  }
  out += fmt::format("  detected            {} duplicates, {} reordered, {} stale copies, {} invalid\n", s.rx_duplicates,
                     s.rx_reordered, s.rx_stale, s.rx_invalid + s.rx_receiver_invalid);
  if (s.injected_drops + s.injected_duplicates + s.injected_reorders > 0) {
    out += fmt::format("  injected faults     {} drops, {} duplicates, {} reorders\n", s.injected_drops,
                       s.injected_duplicates, s.injected_reorders);
  }
  if (s.dilation > 0) {
    out += fmt::format("  late deliveries     {} of {} (wire slower than the target){}\n", s.late, s.late + s.on_time,
                       s.late == 0 ? std::string()
                                   : fmt::format(": by {} (emulated ns)", histogram_text(s.lateness_ns)));
  }
  if (!s.links.empty()) {
    if (s.dilation == 0) {
      uint64_t frames = 0, bytes = 0;
      for (const DpdkStats::Link& l : s.links) {
        frames += l.frames;
        bytes += l.bytes;
      }
      out += fmt::format("  first links         {} carried {} frames ({} message bytes), not paced (D = 0)\n",
                         s.links.size(), frames, bytes);
    } else {
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
    }
  }
  if (s.latency_ns.count() > 0) {
    out += fmt::format("  wire latency        {} ns (wall) over {} messages (first frame taken by the device to last frame "
                       "received, TSC after tx_burst and rx_burst: "
                       "{} by the NIC's clock, {} by the TSC)\n",
                       histogram_text(s.latency_ns), s.latency_ns.count(), s.nic_arrivals,
                       s.latency_ns.count() - std::min(s.latency_ns.count(), s.nic_arrivals));
  }
  if (!s.pcap.empty()) {
    out += fmt::format("  capture             {} frames to {}; the polling lcores waited for its writer {} times, "
                       "{:.3f} ms in all\n",
                       s.pcap_frames, s.pcap, s.pcap_waits, static_cast<double>(s.pcap_wait_ns) / 1e6);
    if (!s.pcap_error.empty()) {
      out += fmt::format("  capture failed      {}: the file is incomplete (the frames in memory then are lost too), "
                         "{} frames sent after it were not captured; the run went on\n",
                         s.pcap_error, s.pcap_dropped);
    }
  }
  const Fidelity f = fidelity(s);
  const std::string carried = fmt::format("their first links carried {:.5f} of their target rate ({} {:g}) and frames left a "
                                          "median {:.1f} ns (emulated) after their scheduled departure",
                                          f.rate_ratio, f.rate_ratio >= kKeptPaceRatio ? ">=" : "<", kKeptPaceRatio,
                                          f.departure_lateness_ns);
  switch (f.verdict) {
    case Fidelity::Verdict::kNotPaced:
      break;
    case Fidelity::Verdict::kUnmeasured:
      out += "  fidelity            unmeasured: no first link carried two frames with bytes back to back, so no rate could be "
             "compared with its target\n";
      break;
    case Fidelity::Verdict::kKeptPace:
      out += fmt::format("  fidelity            the senders kept pace: {}{}\n", carried,
                         f.late_collectives == 0
                             ? std::string()
                             : fmt::format("; but {} of {} collectives started late (a stall or a cold start set some of "
                                           "their messages back: Measured vs modelled, column late start), so their "
                                           "deviations are partly fabemu's own",
                                           f.late_collectives, s.collectives.size()));
      break;
    case Fidelity::Verdict::kFellBehind:
      out += fmt::format("  fidelity            the senders fell behind: {}; the measured times include {}. ", carried,
                         f.cause == Fidelity::Cause::kDevice ? "the frames' waits for the device"
                                                             : "fabemu's own delay");
      if (f.cause == Fidelity::Cause::kDevice) {
        out += fmt::format("The device took the frames slower than the target rate: its transmit queue was full in "
                           "{} of {} flushes, and the frames waited. A lab NIC slower than the target at this "
                           "dilation: raise --dilation above {:g}; the device under test: that is its rate\n",
                           s.tx_full, s.tx_flushes, s.dilation);
      } else if (f.cause == Fidelity::Cause::kStalls) {
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
          out += fmt::format(
              "{}: the polling lcores stalled ({}), {} times waiting for the --pcap capture's writer ({:.3f} ms in "
              "all; the file took frames slower than the wire made them). Capture to a faster file system (e.g. "
              "tmpfs), or raise --dilation above {:g}\n",
              which, counts, s.pcap_waits, static_cast<double>(s.pcap_wait_ns) / 1e6, s.dilation);
        } else {
          out += fmt::format(
              "{}: the OS took the polling lcores' cores ({}). Run nothing else on those cores (e.g. isolcpus=, no "
              "other busy process), or raise --dilation above {:g}\n",
              which, counts, s.dilation);
        }
      } else {
        out += fmt::format("Even the busy periods no stall disturbed reached only a median {:.5f} of the target rate: "
                           "raise --dilation above {:g} until this line says they kept pace\n",
                           f.undisturbed_ratio, s.dilation);
      }
      break;
  }
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

std::string dpdk_stats_to_json(const DpdkStats& s) {
  std::string o = "{\n";
  const auto kv = [&](const char* k, const std::string& v, bool last = false) {
    o += fmt::format("    \"{}\": {}{}\n", k, v, last ? "" : ",");
  };
  const auto num = [](double v) { return std::isfinite(v) ? fmt::format("{:.6f}", v) : std::string("null"); };
  kv("dilation", fmt::format("{}", s.dilation));
  {
    const DpdkStats::Settings& g = s.settings;
    kv("settings",
       fmt::format("{{\"mode\": \"{}\", \"wire_mtu\": {}, \"window\": {}, \"rto_us\": {}, \"nack_delay_us\": {}, "
                   "\"stall_timeout_ms\": {}, \"drop_rate\": {}, \"reorder_rate\": {}, \"duplicate_rate\": {}, "
                   "\"fault_seed\": {}, \"verify_checksums\": \"{}\", \"dscp\": {}, \"ecn\": \"{}\", "
                   "\"ring_delay_ns\": {}, \"ring_bytes_per_sec\": {}, \"ring_ecn_bytes\": {}, \"ahead_us\": {}}}",
                   g.mode == WireMode::kRoceV2 ? "roce" : "fabemu", g.wire_mtu, g.window, g.rto.ps() / 1'000'000,
                   g.nack_delay.ps() / 1'000'000, g.stall_timeout.ps() / 1'000'000'000, num(g.faults.drop_rate),
                   num(g.faults.reorder_rate), num(g.faults.duplicate_rate), g.faults.seed,
                   g.verify_checksums_on ? "on" : "auto", g.dscp, to_string(g.ecn), g.ring_device.delay_ns,
                   g.ring_device.bytes_per_sec, g.ring_device.ecn_bytes, g.ahead.ps() / 1'000'000));
  }
  kv("wall_ps", fmt::format("{}", s.wall.ps()));
  kv("messages", fmt::format("{}", s.messages));
  kv("local_messages", fmt::format("{}", s.local_messages));
  kv("message_bytes", fmt::format("{}", s.message_bytes));
  kv("messages_completed", fmt::format("{}", s.messages_completed));
  kv("bytes_completed", fmt::format("{}", s.bytes_completed));
  kv("deliveries", fmt::format("{}", s.deliveries));
  kv("frames_tx", fmt::format("{}", s.frames_tx));
  kv("frame_bytes_tx", fmt::format("{}", s.frame_bytes_tx));
  kv("frames_rx", fmt::format("{}", s.frames_rx));
  kv("frame_bytes_rx", fmt::format("{}", s.frame_bytes_rx));
  kv("stall", s.stall.empty() ? std::string("null") : nlohmann::json(s.stall).dump());
  kv("main_lcore", fmt::format("{}", s.main_lcore));
  kv("rx_lcore", fmt::format("{}", s.rx_lcore));
  kv("rx_lcore_frames", fmt::format("{}", s.rx_lcore_frames));
  kv("rx_lcore_polls", fmt::format("{}", s.rx_lcore_polls));
  std::string lcores = "[";
  for (size_t i = 0; i < s.rx_lcores.size(); ++i) {
    const DpdkStats::RxLcore& l = s.rx_lcores[i];
    lcores += fmt::format("{}{{\"lcore\": {}, \"queue\": {}, \"frames\": {}, \"polls\": {}}}", i == 0 ? "" : ", ",
                          l.lcore, l.queue, l.frames, l.polls);
  }
  kv("rx_lcores", lcores + "]");
  kv("nic_arrivals", fmt::format("{}", s.nic_arrivals));
  kv("data_by_ecn", fmt::format("{{\"not_ect\": {}, \"ect1\": {}, \"ect0\": {}, \"ce\": {}}}", s.data_by_ecn[0],
                                s.data_by_ecn[1], s.data_by_ecn[2], s.data_by_ecn[3]));
  kv("dscp_changed", fmt::format("{}", s.dscp_changed));
  kv("ring_ce_marked", fmt::format("{}", s.ring_ce_marked));
  std::string clocks = "[";
  for (size_t i = 0; i < s.rx_clocks.size(); ++i) {
    const DpdkStats::PortClock& c = s.rx_clocks[i];
    clocks += fmt::format("{}{{\"port\": \"{}\", \"role\": \"{}\", \"clock\": \"{}\", \"offload\": {}, "
                          "\"checksum_offload\": {}, \"checksums\": \"{}\", \"frames\": {}, \"hw_timestamped\": {}, "
                          "\"fit_samples\": {}, \"fit_tsc_per_nic_tick\": {:.9f}, \"fit_max_residual_ns\": {:.1f}}}",
                          i == 0 ? "" : ", ", c.port, c.role, c.clock, c.offload, c.checksum_offload, c.checksums,
                          c.frames, c.hw_timestamped, c.fit_samples, c.fit_tsc_per_nic_tick, c.fit_max_residual_ns);
  }
  kv("rx_clocks", clocks + "]");
  kv("data_frames", fmt::format("{}", s.data_frames));
  kv("retransmissions", fmt::format("{}", s.retransmissions));
  kv("nack_retransmissions", fmt::format("{}", s.nack_retransmissions));
  kv("timeout_retransmissions", fmt::format("{}", s.timeout_retransmissions));
  kv("tail_retransmissions", fmt::format("{}", s.tail_retransmissions));
  kv("tail_age_min_ps", fmt::format("{}", s.tail_age_min.ps()));
  kv("nacks_in_flight", fmt::format("{}", s.nacks_in_flight));
  kv("rto_max_ps", fmt::format("{}", s.rto_max.ps()));
  kv("acks", fmt::format("{}", s.acks));
  kv("nacks", fmt::format("{}", s.nacks));
  kv("rx_duplicates", fmt::format("{}", s.rx_duplicates));
  kv("rx_reordered", fmt::format("{}", s.rx_reordered));
  kv("rx_stale", fmt::format("{}", s.rx_stale));
  kv("rx_invalid", fmt::format("{}", s.rx_invalid + s.rx_receiver_invalid));
  kv("injected_drops", fmt::format("{}", s.injected_drops));
  kv("injected_duplicates", fmt::format("{}", s.injected_duplicates));
  kv("injected_reorders", fmt::format("{}", s.injected_reorders));
  std::string verdicts = "{";
  bool first = true;
  for (size_t v = 1; v < kVerdictCount; ++v) {
    if (s.not_ours_by_verdict[v] == 0) continue;
    verdicts += fmt::format("{}\"{}\": {}", first ? "" : ", ", to_string(static_cast<Verdict>(v)), s.not_ours_by_verdict[v]);
    first = false;
  }
  kv("not_ours", fmt::format("{}", s.not_ours));
  kv("not_ours_by_verdict", verdicts + "}");
  kv("late", fmt::format("{}", s.late));
  kv("on_time", fmt::format("{}", s.on_time));
  kv("lateness_ns", histogram_json(s.lateness_ns, true));
  kv("latency_ns", histogram_json(s.latency_ns, true));
  kv("jitter_ns", histogram_json(s.jitter_ns, true));
  kv("frames_ahead", fmt::format("{}", s.frames_ahead));
  kv("poll_gap_max_ns", fmt::format("{}", s.poll_gap_max_ns));
  kv("poll_stalls", fmt::format("{}", s.poll_stalls));
  kv("tx_flushes", fmt::format("{}", s.tx_flushes));
  kv("tx_full", fmt::format("{}", s.tx_full));
  kv("rx_poll_gap_max_ns", fmt::format("{}", s.rx_poll_gap_max_ns));
  kv("rx_poll_stalls", fmt::format("{}", s.rx_poll_stalls));
  kv("pcap", s.pcap.empty()
                 ? std::string("null")
                 : fmt::format("{{\"path\": {}, \"frames\": {}, \"waits\": {}, \"wait_ns\": {}, \"error\": {}, "
                               "\"dropped\": {}}}",
                               nlohmann::json(s.pcap).dump(), s.pcap_frames, s.pcap_waits, s.pcap_wait_ns,
                               s.pcap_error.empty() ? std::string("null") : nlohmann::json(s.pcap_error).dump(),
                               s.pcap_dropped));
  // No busy period: nothing was compared with the target rate (null, not a ratio of 0).
  kv("pacing_ratio", s.pacing_periods == 0 ? "null" : num(s.pacing_ratio));
  kv("pacing_median_ratio", s.pacing_periods == 0 ? "null" : num(s.pacing_median_ratio));
  {
    const Fidelity f = fidelity(s);
    kv("fidelity", fmt::format("{{\"verdict\": \"{}\", \"cause\": \"{}\", \"kept_pace_ratio\": {}, \"rate_ratio\": {}, "
                               "\"undisturbed_median_ratio\": {}, \"median_departure_lateness_ns\": {}, "
                               "\"late_collectives\": {}}}",
                               to_string(f.verdict), to_string(f.cause), num(kKeptPaceRatio), num(f.rate_ratio),
                               num(f.undisturbed_ratio), num(f.departure_lateness_ns), f.late_collectives));
  }
  kv("pacing_periods", fmt::format("{}", s.pacing_periods));
  kv("pacing_disturbed_periods", fmt::format("{}", s.pacing_disturbed_periods));
  std::string links = "[";
  for (size_t i = 0; i < s.links.size(); ++i) {
    const DpdkStats::Link& l = s.links[i];
    links += fmt::format(
        "{}\n      {{\"link\": {}, \"frames\": {}, \"bytes\": {}, \"target_gbps\": {}, \"achieved_gbps\": {}, "
        "\"ratio\": {}, \"busy_periods\": {}, \"disturbed_periods\": {}}}",
        i == 0 ? "" : ",", l.link, l.frames, l.bytes, num(l.target_gbps),
        l.busy_periods == 0 ? "null" : num(l.target_gbps * l.ratio), l.busy_periods == 0 ? "null" : num(l.ratio),
        l.busy_periods, l.disturbed_periods);
  }
  kv("links", links + (s.links.empty() ? "]" : "\n    ]"));
  std::string colls = "[";
  for (size_t i = 0; i < s.collectives.size(); ++i) {
    const DpdkStats::Collective& c = s.collectives[i];
    colls += fmt::format("{}\n      {{\"index\": {}, \"messages\": {}, \"bytes\": {}, \"modelled_ps\": {}, "
                         "\"measured_ps\": {}, \"deviation\": {}, \"stalled_ps\": {}, \"late_start_ps\": {}, "
                         "\"ce_frames\": {}}}",
                         i == 0 ? "" : ",", c.coll, c.messages, c.bytes, c.modelled.ps(), c.measured.ps(), num(c.deviation),
                         c.stalled.ps(), c.late_start.ps(), c.ce_frames);
  }
  kv("collectives", colls + (s.collectives.empty() ? "]" : "\n    ]"), true);
  o += "  }";
  return o;
}

}  // namespace fabemu::host::dpdk
