// The socket fabric's making, the walker's messages, the delay line and the drain: host/lab/socket_fabric.h
// says what it is, host/lab/README.md ("Socket fabric") how; the rounds of I/O are socket_wire.cpp.
#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "host/lab/socket_fabric_impl.h"

namespace fabemu::lab {

// --- construction --------------------------------------------------------------------------------------

SocketFabric::Impl::Impl(emu::Topology topology, std::unique_ptr<DatagramTransport> transport, UdpTransport* udp,
                         std::vector<bool> local, SocketFabricOptions o)
    : engine_(1 << 16),
      model_(engine_, std::move(topology), o.model_mtu),
      opt_(std::move(o)),
      npus_(static_cast<uint32_t>(model_.topology().npus())),
      transport_(std::move(transport)),
      udp_(udp),
      local_(std::move(local)),
      clock_(opt_.dilation),
      slot_bytes_(slot_bytes(opt_)),
      faults_(opt_.faults),
      rto_(opt_.rto) {
  if (local_.size() != npus_) {
    throw std::invalid_argument(fmt::format("socket fabric: {} local flags for {} NPUs", local_.size(), npus_));
  }
  model_.set_listener(this);
  // Paced, at least four frame times of the slowest link for the NACK delay and four partial-ACK intervals
  // for the retransmission timeout (as the DPDK fabric).
  opt_.nack_delay = hd::paced_nack_floor(opt_.nack_delay, model_.topology(), opt_.payload, clock_);
  rto_ = hd::RtoEstimator(hd::paced_rto_floor(opt_.rto, model_.topology(), uint64_t{opt_.payload} * kAckEvery, clock_));
  if (opt_.start_realtime_ns != 0) {
    clock_.start_at_realtime(opt_.start_realtime_ns);
    started_ = true;
  }
  sock_of_.assign(npus_, -1);
  for (uint32_t r = 0; r < npus_; ++r) {
    if (!local_[r]) continue;
    auto so = std::make_unique<Sock>();
    so->rank = r;
    for (Queue* q : {&so->data, &so->feedback}) {
      q->buf.assign(size_t{opt_.batch} * slot_bytes_, 0);
      q->entries.resize(opt_.batch);
    }
    sock_of_[r] = static_cast<int32_t>(socks_.size());
    socks_.push_back(std::move(so));
  }
  tx_batch_.resize(opt_.batch);
  {
    hd::SenderConfig c;
    c.payload_per_packet = opt_.payload;
    c.window = opt_.window;
    c.rto = rto_.rto();
    senders_ = hd::LinkSenders(npus_, model_.topology().links().size(), c);
  }
  receivers_.resize(npus_);
  pacing_.size_for(model_.topology());
  pace_next_ps_.assign(model_.topology().links().size(), 0);
  published_.link_bytes.assign(model_.topology().links().size(), 0);
  stats_.dilation = opt_.dilation;
  stats_.batch = opt_.batch;
  stats_.rto_max = rto_.rto();
  stats_.transport = transport_->describe();
}

void SocketFabric::Impl::set_remote_endpoint(uint32_t rank, const udp::endpoint& ep) {
  if (udp_ == nullptr) throw std::logic_error(fmt::format("socket fabric over {}: no UDP endpoints", transport_->describe()));
  if (!records_.empty()) throw std::logic_error("socket fabric: endpoints cannot change once the run has started");
  udp_->set_remote_endpoint(rank, ep);
}

hd::Receiver& SocketFabric::Impl::receiver(uint32_t dst) {
  return hd::endpoint_of(receivers_, active_receivers_, dst, [&] {
    hd::ReceiverConfig c;
    c.sources = npus_;
    c.window = opt_.window;
    c.nack_delay = opt_.nack_delay;
    c.max_missing_per_nack = kMaxMissingPerNack;
    return c;
  });
}

// --- the model's side ----------------------------------------------------------------------------------

void SocketFabric::Impl::send(const emu::Message& m, emu::Time ready) {
  if (!started_) {
    // Wall time zero is the first send(), not the construction: reading the traces does not count.
    started_ = true;
    clock_.restart();
  }
  if (opt_.live != nullptr) opt_.live->running.store(true, std::memory_order_relaxed);
  model_.send(m, ready);  // validates, and schedules the modelled delivery
  Record r;
  r.walker_id = m.id;
  r.src = static_cast<uint32_t>(m.src);
  r.dst = static_cast<uint32_t>(m.dst);
  r.bytes = m.bytes;
  r.flow = m.flow;
  r.coll = m.coll;
  r.ready = ready;
  r.handed = clock_.as_fast_as_possible() ? engine_.now() : clock_.emulated();
  r.src_local = local_[r.src];
  r.dst_local = local_[r.dst];
  const uint64_t key = next_key_++;
  if (!by_walker_.emplace(m.id, key).second) {
    throw std::logic_error(fmt::format("socket fabric: message id {} is already in flight", m.id));
  }
  Record& rec = records_.emplace(key, r).first->second;
  if (r.src == r.dst) {
    ++stats_.local_messages;
    rec.arrived = rec.acked = true;
  } else if (!r.src_local && !r.dst_local) {
    ++stats_.model_only_messages;
    rec.arrived = rec.acked = true;
  } else {
    // Always an event, even when ready == now: every process with an end of this message then gives
    // the messages of a pair their wire ids in the same order, (ready, send order).
    engine_.at(ready, *this, key);
  }
}

void SocketFabric::Impl::on_event(uint64_t id) {
  const auto it = records_.find(id);
  if (it == records_.end() || it->second.numbered) return;  // numbered already (see on_delivered)
  Record& r = it->second;
  r.numbered = true;
  const uint64_t p = pair(r.src, r.dst);
  r.wire_id = next_wire_[p]++;
  const WireKey key{p, r.wire_id};
  if (r.dst_local) {
    if (early_.erase(key) > 0) {
      r.arrived = true;
      r.arrived_emulated = clock_.emulated();
    } else {
      rx_wait_.emplace(key, id);
    }
  } else {
    r.arrived = true;
  }
  if (!r.src_local) {
    r.acked = true;
    return;
  }
  tx_wait_.emplace(key, id);
  ++stats_.messages_sent;
  stats_.bytes_sent += r.bytes;
  const hd::MessagePacing::FirstHop hop = pacing_.book(model_.topology(), r.src, r.dst, r.flow, r.bytes, engine_.now());
  r.first_link = hop.link;
  r.depart = hop.depart;
  r.rate = hop.rate;
  if (!clock_.as_fast_as_possible()) {
    pacing_.wait(r.depart, id);
    return;
  }
  if (!backlog_.empty() || !try_submit(id, r)) backlog_.push_back(id);
}

bool SocketFabric::Impl::try_submit(uint64_t id, Record& r) {
  const hd::LinkSenders::Pair ps = senders_.of(r.src, r.dst, r.first_link);
  if (held_.size() < senders_.size()) held_.resize(senders_.size());
  hd::Sender& s = senders_[ps.sender];
  uint64_t& next = next_submit_[pair(r.src, r.dst)];
  // The Sender numbers a pair's messages in submission order: it must be the wire id order.
  if (r.wire_id != next || !s.can_submit(ps.dst)) return false;
  const uint64_t got = s.submit(ps.dst, r.bytes, id);
  if (got != r.wire_id) throw std::logic_error("socket fabric: the Sender's message ids diverged from the model's");
  ++next;
  return true;
}

void SocketFabric::Impl::on_delivered(uint64_t id, emu::Time at) {
  const auto w = by_walker_.find(id);
  if (w == by_walker_.end()) throw std::logic_error(fmt::format("socket fabric: unknown message {} delivered", id));
  const uint64_t key = w->second;
  by_walker_.erase(w);
  const auto it = records_.find(key);
  Record& r = it->second;
  // A message delivered at its ready time (zero bytes, zero latency) may come before its own ready-time
  // event: numbered here then, the same way in every process.
  if (!r.numbered && (r.src_local || r.dst_local) && r.src != r.dst) on_event(key);
  const auto wire_done = [&r] { return r.dst_local ? r.arrived : r.acked; };
  int64_t last_progress = clock_.since_start_ns();
  while (!wire_done() || (!clock_.as_fast_as_possible() && clock_.emulated() < at)) {
    if (stop_requested()) {
      interrupted_ = true;
      engine_.stop();
      return;
    }
    const bool got = poll();
    const int64_t now = clock_.since_start_ns();
    if (got || wire_done()) {
      last_progress = now;
    } else if (now - last_progress > static_cast<int64_t>(opt_.stall_timeout.ps() / 1000)) {
      // The run stops here, as on a stop request: the walker reports what had finished and what had not,
      // the "socket" section what went on the wire, and the caller fails with this reason (stalled()).
      const uint32_t peer = r.dst_local ? r.src : r.dst;
      stall_ = fmt::format(
          "message {} ({} bytes, rank {} -> {}) was delivered by the model at {} ps, but for {} ms nothing arrived "
          "for it: it waits for {} from rank {} at {}{}",
          id, r.bytes, r.src, r.dst, at.ps(), opt_.stall_timeout.ps() / 1'000'000'000,
          r.dst_local ? "its datagrams" : "its ACKs", peer, transport_->address_of(peer),
          hd::describe_drops(opt_.faults, "datagrams"));
      engine_.stop();
      return;
    }
  }
  if (r.src != r.dst && r.dst_local && !clock_.as_fast_as_possible()) {
    if (r.arrived_emulated > at) {
      ++stats_.late;
      stats_.lateness_ns.record((r.arrived_emulated - at).ps() / 1000);
    } else {
      ++stats_.on_time;
    }
    if (r.coll != emu::Message::kNoCollective) coll_spans_.add(r.coll, r.bytes, r.ready, r.handed, at, r.arrived_emulated);
  }
  r.delivered = true;
  ++stats_.deliveries;
  if (opt_.live != nullptr) opt_.live->emulated_ps.store(static_cast<int64_t>(at.ps()), std::memory_order_relaxed);
  finish_if_done(it);
  if (listener_ != nullptr) listener_->on_delivered(id, at);
}

// A record goes once the walker has it and, with a local source, its last ACK came.
void SocketFabric::Impl::finish_if_done(std::unordered_map<uint64_t, Record>::iterator it) {
  if (it->second.delivered && it->second.acked) records_.erase(it);
}

// --- after the walk ------------------------------------------------------------------------------------

bool SocketFabric::Impl::drain(emu::Duration limit) {
  // After a stall nothing is waited for: a peer brought nothing for the stall timeout.
  if (stalled()) return false;
  const int64_t start = clock_.since_start_ns();
  const auto limit_ns = static_cast<int64_t>(limit.ps() / 1000);
  const auto busy = [&] {
    if (!backlog_.empty() || pacing_.waiting()) return true;
    for (const auto& so : socks_) {
      if (so->data.n > 0 || so->feedback.n > 0) return true;
    }
    for (size_t i = 0; i < senders_.size(); ++i) {
      if (senders_[i].unacked_messages() > 0 || held_[i]) return true;
    }
    return false;
  };
  bool done = true;
  while (busy()) {
    if (clock_.since_start_ns() - start > limit_ns || stop_requested()) {
      done = false;
      break;
    }
    poll();
  }
  // Then until the sockets are quiet (late re-ACKs), so that nothing of this run is left for another.
  int64_t quiet_since = clock_.since_start_ns();
  while (clock_.since_start_ns() - quiet_since < 2'000'000 && clock_.since_start_ns() - start <= limit_ns) {
    if (poll()) quiet_since = clock_.since_start_ns();
  }
  if (opt_.live != nullptr) {
    publish();
    opt_.live->running.store(false, std::memory_order_relaxed);
  }
  return done;
}

void SocketFabric::Impl::serve(const std::function<bool()>& until) {
  while (!until() && !stop_requested()) poll();
  if (opt_.live != nullptr) publish();
}

// --- the public face -----------------------------------------------------------------------------------

namespace {
void check_options(const SocketFabricOptions& o) {
  if (o.payload == 0 || o.payload > 65507 - kDatagramHeaderBytes) {
    throw std::invalid_argument(fmt::format("socket fabric: payload {}: expected 1..{}", o.payload,
                                            65507 - kDatagramHeaderBytes));
  }
  if (o.batch == 0 || o.batch > 1024) {
    throw std::invalid_argument(fmt::format("socket fabric: batch {}: expected 1..1024", o.batch));
  }
  if (o.window == 0 || (o.window & (o.window - 1)) != 0) {
    throw std::invalid_argument(fmt::format("socket fabric: window {} must be a power of two", o.window));
  }
  if (o.stall_timeout.ps() == 0) throw std::invalid_argument("socket fabric: zero stall timeout");
  hd::check_sender_class(o.dscp, o.ecn, "socket fabric");
}

std::unique_ptr<UdpTransport> udp_transport(std::vector<udp::endpoint> endpoints, const std::vector<bool>& local,
                                            const emu::Topology& topology, const SocketFabricOptions& o) {
  check_options(o);
  if (endpoints.size() != static_cast<size_t>(topology.npus())) {
    throw std::invalid_argument(
        fmt::format("socket fabric: {} endpoints for {} NPUs", endpoints.size(), topology.npus()));
  }
  return std::make_unique<UdpTransport>(std::move(endpoints), local, o.batch, o.socket_buffer_bytes,
                                        static_cast<uint32_t>(SocketFabric::Impl::slot_bytes(o)), o.dscp, o.ecn);
}
}  // namespace

SocketFabric::SocketFabric(emu::Topology topology, std::vector<udp::endpoint> endpoints, std::vector<bool> local,
                           SocketFabricOptions options) {
  auto udp = udp_transport(std::move(endpoints), local, topology, options);
  UdpTransport* raw = udp.get();
  impl_ = std::make_unique<Impl>(std::move(topology), std::move(udp), raw, std::move(local), std::move(options));
}

SocketFabric::SocketFabric(emu::Topology topology, std::unique_ptr<DatagramTransport> transport,
                           std::vector<bool> local, SocketFabricOptions options) {
  check_options(options);
  if (!transport) throw std::invalid_argument("socket fabric: no transport");
  impl_ = std::make_unique<Impl>(std::move(topology), std::move(transport), nullptr, std::move(local),
                                 std::move(options));
}
SocketFabric::~SocketFabric() = default;
uint32_t SocketFabric::max_datagram(const SocketFabricOptions& options) noexcept {
  return static_cast<uint32_t>(Impl::slot_bytes(options));
}
void SocketFabric::send(const emu::Message& m, emu::Time ready) { impl_->send(m, ready); }
emu::Engine& SocketFabric::engine() { return impl_->engine(); }
void SocketFabric::set_listener(emu::DeliveryListener* listener) { impl_->set_listener(listener); }
bool SocketFabric::drain(emu::Duration limit) { return impl_->drain(limit); }
void SocketFabric::serve(const std::function<bool()>& until) { impl_->serve(until); }
bool SocketFabric::interrupted() const noexcept { return impl_->interrupted(); }
bool SocketFabric::stalled() const noexcept { return impl_->stalled(); }
const std::string& SocketFabric::stall_reason() const noexcept { return impl_->stall_reason(); }
host::dpdk::RealtimeFabric::ReportSection SocketFabric::report_section() {
  return {"socket", socket_stats_to_json(stats()), format_socket_stats(stats())};
}
const emu::PacketFabric& SocketFabric::model() const noexcept { return impl_->model(); }
emu::PacketFabric& SocketFabric::mutable_model() noexcept { return impl_->mutable_model(); }
const SocketStats& SocketFabric::stats() { return impl_->stats(); }
const std::vector<udp::endpoint>& SocketFabric::endpoints() const noexcept { return impl_->endpoints(); }
void SocketFabric::set_remote_endpoint(uint32_t rank, const udp::endpoint& endpoint) {
  impl_->set_remote_endpoint(rank, endpoint);
}

}  // namespace fabemu::lab
