// DpdkFabric (dpdk_fabric.h): its making, the walker's messages taken in (send, submit), one round of I/O
// (poll), the drain and the capture's end. The transmit side is dpdk_transmit.cpp, the receive side and the
// delay line dpdk_receive.cpp, the stats dpdk_fabric_stats.cpp.
#include "host/dpdk/dpdk_fabric.h"

#include <rte_launch.h>
#include <rte_lcore.h>

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <utility>

namespace fabemu::host::dpdk {

namespace {

// The pacer's burst allowance: a frame that leaves later than its link's schedule by no more than this
// many full frames keeps the schedule (the frames after it catch up); later than that, the schedule
// restarts from the late departure.
constexpr uint64_t kPacingBurstFrames = 64;
constexpr size_t kMaxStalls = size_t{1} << 20;

}  // namespace

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
  // Paced, the NACK delay spans at least four frame times of the slowest link (a frame not due yet is not
  // lost), and the retransmission timeout at least four partial-ACK intervals.
  opt_.nack_delay = paced_nack_floor(opt_.nack_delay, model_.topology(), payload_, clock_);
  rto_ = RtoEstimator(paced_rto_floor(opt_.rto, model_.topology(), uint64_t{payload_} * kAckEvery, clock_));
  stats_.rto_max = rto_.rto();
  pacing_.size_for(model_.topology());
  stalls_.reserve(1024);  // a stall is a gap of 100 us or more: allocating only past 1,024 of them costs nothing
  if (!clock_.as_fast_as_possible()) {
    ahead_wall_ps_ = opt_.ahead.ps();
    ahead_emulated_ps_ = static_cast<uint64_t>(static_cast<double>(ahead_wall_ps_) / clock_.dilation());
  }
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
  const std::vector<unsigned> tx_lcores = choose_tx_lcores(rx_lcores);
  const auto queues = static_cast<uint16_t>(std::max<size_t>(1, rx_lcores.size()));
  const auto lanes = static_cast<uint16_t>(std::max<size_t>(1, tx_lcores.size()));
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
    // sends on a transmit queue of its own; so does every transmit lane on port A, one per receive path.
    if (p == &ports_.a() && lanes > 1 && p->config().tx_queues < queues * lanes) {
      throw std::invalid_argument(fmt::format(
          "--dpdk-tx-lcore: {} transmit lcores with {} receive path{} need {} transmit queues on {}, which has {}",
          lanes, queues, queues == 1 ? "" : "s", queues * lanes, p->name(), p->config().tx_queues));
    }
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
    // Each transmit lane holds its own frames built and its stash, on its own queues.
    while (n - 1 < (kTxQueueLimit + TxLane::kStash + uint32_t{ports_.a().config().tx_desc} * queues) * lanes +
                       2u * kRxBurst * kRxBursts * queues) {
      n <<= 1;
    }
    const bool other_lcore = ports_.in_process() && (!rx_lcores.empty() || !tx_lcores.empty());
    data_pool_ = ports_.a().zero_pool(n - 1, other_lcore ? Port::Recycle::kOtherLcore : Port::Recycle::kSameLcore);
    split_short_ = opt_.mode == WireMode::kRoceV2;
  }
  {
    SenderConfig c;
    c.payload_per_packet = payload_;
    c.window = opt_.window;
    c.rto = rto_.rto();
    make_lanes(tx_lcores, queues, c);
  }
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
  start_tx_workers();
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
  tx_workers_.clear();  // stops the transmit lcores before anything they use goes
  workers_.clear();  // and the receive lcores
  try {
    close_pcap();  // a run that failed before drain(): its capture still ends up in one file
  } catch (const std::exception&) {
    // Destruction during an error: that error is the one to report.
  }
  // The lanes free the frames they hold (~TxLane).
}

uint32_t DpdkFabric::frames_in_flight(uint32_t npus, uint32_t rx_paths, uint32_t tx_lanes) noexcept {
  constexpr uint32_t kFeedbackPerPoll = kRxBurst * kRxBursts;  // one ACK/NACK per frame received, at most
  constexpr uint32_t kReorderHeld = kRxBurst * kRxBursts;      // held back by --reorder-rate (one round)
  return static_cast<uint32_t>(kTxQueueLimit) * std::max(tx_lanes, 1u) + npus +
         std::max(rx_paths, 1u) * (kFeedbackPerPoll + kReorderHeld);
}

void DpdkFabric::send(const emu::Message& m, emu::Time ready) {
  if (!started_) {
    // Wall time zero is the engine's time zero: the walker's start-up (reading the traces) between the
    // construction and its first message must not count as time the wire already owes (the first
    // frames would leave late and then catch up at the device's rate).
    started_ = true;
    clock_.restart();
    last_poll_ps_ = 0;  // a reading from before zero is later than every one after it for a while
    clock_zero_set_.store(true, std::memory_order_release);
    if (workers_.empty()) rx_paths_[0]->restart_clock();  // one time base for the pcap records
    // The capture's timestamps are the wall clock's dates (README.md, "pcap"): clock_'s zero is now.
    unix_zero_ns_ = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    if (pcap_) pcap_->set_time_origin_ns(unix_zero_ns_);
    if (opt_.live != nullptr) opt_.live->running.store(true, std::memory_order_relaxed);
  }
  model_.send(m, ready);  // validates, and schedules the modelled delivery
  const auto [slot, fresh] = records_.try_emplace(m.id);
  if (!fresh) throw std::logic_error(fmt::format("DpdkFabric::send: message id {} is already in flight", m.id));
  Record& r = slot->second;
  r.src = static_cast<uint32_t>(m.src);
  r.dst = static_cast<uint32_t>(m.dst);
  r.bytes = m.bytes;
  r.local = m.src == m.dst;
  r.arrived = r.local;
  r.flow = m.flow;
  r.ready = ready;
  r.coll = m.coll;
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
    if (!tx_lcores_on() && !lanes_[0]->holding.empty()) send_due_held(*lanes_[0], now.wall.ps());
    return;
  }
  if (!backlog_.empty() || !try_submit(id, r)) backlog_.push_back(id);
}

bool DpdkFabric::try_submit(uint64_t id, Record& r) {
  if (tx_lcores_on()) return hand_over(id, r);
  TxLane& lane = *lanes_[0];
  const LinkSenders::Pair ps = lane.senders.of(r.src, r.dst, r.first_link);
  if (ps.sender >= lane.next_work.size()) lane.next_work.resize(lane.senders.size(), 0);
  Sender& s = lane.senders[ps.sender];
  if (!s.can_submit(ps.dst)) return false;
  lane.next_work[ps.sender] = 0;
  // Every packet carries the record's address (no lookup per frame).
  r.wire_id = s.submit(ps.dst, r.bytes, reinterpret_cast<uintptr_t>(&r));
  r.submitted = true;
  by_wire_[pair_key(r.src, r.dst, r.wire_id, npus_)] = id;
  return true;
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
    // The receive lcore's records moved onto clock_, then to the date of clock_'s zero as the main file's.
    const int64_t shift = (main0 >= rx0 ? -static_cast<int64_t>(clock_.ticks_to_ns(main0 - rx0))
                                        : static_cast<int64_t>(clock_.ticks_to_ns(rx0 - main0))) +
                          static_cast<int64_t>(unix_zero_ns_);
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
      if (!try_submit(id, r)) {
        // A transmit lcore's full ring: this and every later message wait, in order.
        if (tx_lcores_on()) {
          kept = static_cast<size_t>(std::copy(backlog_.begin() + static_cast<std::ptrdiff_t>(i), backlog_.end(),
                                               backlog_.begin() + static_cast<std::ptrdiff_t>(kept)) -
                                     backlog_.begin());
          break;
        }
        backlog_[kept++] = id;
      }
    }
    backlog_.resize(kept);
  }
  if (tx_lcores_on()) {
    take_notices();
  } else {
    transmit(*lanes_[0], reading);
  }
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
      if (!tx_lcores_on() && !lanes_[0]->holding.empty()) send_due_held(*lanes_[0], clock_.wall().ps());
    }
    if (&ports_.a() != &ports_.b()) receive(ports_.a());
  }
  if (opt_.live != nullptr && reading.wall.ps() - last_publish_ps_ >= kPublishPs) publish(reading.wall.ps());
  return rx_any_;
}

void DpdkFabric::publish(uint64_t wall_ps) {
  // The main lcore's own counters: what it sent, the completions it took (the receive lcores' messages
  // included), its frames; the receive side's frames when this lcore may read them (inline, or once the
  // receive lcores have stopped); the senders' retransmissions; the model's clock and link bytes.
  last_publish_ps_ = wall_ps;
  LiveMetrics& m = *opt_.live;
  const auto set = [](std::atomic<uint64_t>& c, uint64_t v) { c.store(v, std::memory_order_relaxed); };
  uint64_t retransmissions = 0;
  if (lanes_readable()) {
    for (const auto& lane : lanes_) {
      for (size_t i = 0; i < lane->senders.size(); ++i) retransmissions += lane->senders[i].stats().retransmissions;
    }
  }
  uint64_t frames_tx = stats_.frames_tx, frames_rx = stats_.frames_rx, not_ours = stats_.not_ours;
  if (!workers_running()) {
    for (const auto& path : rx_paths_) {
      frames_tx += path->stats().frames_tx;
      frames_rx += path->stats().frames_rx;
      not_ours += path->stats().not_ours;
    }
  }
  set(m.messages_sent, stats_.messages);
  set(m.bytes_sent, stats_.message_bytes);
  set(m.messages_received, completed_messages_);
  set(m.bytes_received, completed_bytes_);
  set(m.frames_sent, frames_tx);
  set(m.frames_received, frames_rx);
  set(m.retransmissions, retransmissions);
  set(m.not_ours, not_ours);
  m.emulated_ps.store(static_cast<int64_t>(engine_.now().ps()), std::memory_order_relaxed);
  const size_t links = std::min(m.link_bytes.size(), model_.topology().links().size());
  for (size_t l = 0; l < links; ++l) set(m.link_bytes[l], model_.link_stats(static_cast<emu::LinkId>(l)).bytes);
  m.link_count.store(links, std::memory_order_relaxed);
}

bool DpdkFabric::drain(emu::Duration limit) {
  const emu::Time start = clock_.wall();
  const auto busy = [&] {
    if (tx_built() > 0 || !backlog_.empty() || pacing_.waiting()) return true;
    if (workers_.empty() && !rx_paths_[0]->idle()) return true;
    if (tx_lcores_on()) return !lanes_settled();
    const TxLane& lane = *lanes_[0];
    for (size_t i = 0; i < lane.senders.size(); ++i) {
      if (lane.senders[i].unacked_messages() > 0) return true;
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
  join_tx_workers();  // settled (or the run stops): their counters may be read
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
  if (opt_.live != nullptr) {  // the run's final counters, then not running
    publish(clock_.wall().ps());
    opt_.live->running.store(false, std::memory_order_relaxed);
  }
  close_pcap();
  return done;
}

}  // namespace fabemu::host::dpdk
