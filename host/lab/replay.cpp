#include "host/lab/replay.h"

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "emulator/link_results.h"
#include "emulator/packet_fabric.h"
#include "emulator/report_json.h"
#include "emulator/topology.h"
#include "emulator/walker.h"
#include "host/config/run_config.h"
#include "host/wire/address_plan.h"
#include "host/lab/address.h"
#include "host/lab/clock.h"
#include "host/lab/datagram_transport.h"
#include "host/lab/socket_fabric.h"
#include "host/lab/udp_transport.h"
#include "host/lab/live_metrics.h"
#include "traces/process_groups.h"

namespace fabemu::lab {

namespace {

// The packet model with no wire (lab.yaml `fabric: model`): every delivery is paced to the dilated wall
// clock (D > 0) and the stop flag is polled on each, so a stopped run ends at its next delivery.
class PacedModelFabric final : public emu::Fabric, private emu::DeliveryListener {
 public:
  PacedModelFabric(emu::PacketFabric& inner, double dilation, int64_t start_ns, const std::atomic<bool>* stop,
                   LiveMetrics* live, const std::vector<bool>& local)
      : inner_(inner), dilation_(dilation), start_ns_(start_ns), stop_(stop), live_(live), local_(local) {}

  void send(const emu::Message& m, emu::Time ready) override {
    inner_.send(m, ready);
    if (live_ != nullptr && m.src >= 0 && static_cast<size_t>(m.src) < local_.size() && local_[m.src]) {
      LiveMetrics::add(live_->messages_sent, 1);
      LiveMetrics::add(live_->bytes_sent, m.bytes);
    }
  }
  using Fabric::send;
  emu::Engine& engine() override { return inner_.engine(); }
  void set_listener(emu::DeliveryListener* listener) override {
    listener_ = listener;
    inner_.set_listener(listener == nullptr ? nullptr : this);
  }
  bool interrupted() const { return interrupted_; }
  emu::Time interrupted_at() const { return interrupted_at_; }

 private:
  bool stop_requested() const { return stop_ != nullptr && stop_->load(std::memory_order_relaxed); }

  void on_delivered(uint64_t id, emu::Time at) override {
    if (interrupted_) return;  // nothing is delivered after a stop: the walk ends with what is in flight
    if (dilation_ > 0) {
      const auto target = start_ns_ + static_cast<int64_t>(static_cast<double>(at.ps()) / 1000.0 * dilation_);
      for (;;) {
        if (stop_requested()) break;
        const int64_t now = realtime_ns();
        if (now >= target) break;
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(target - now, 10'000'000)));
      }
    }
    if (stop_requested()) {
      interrupted_ = true;
      interrupted_at_ = at;
      return;
    }
    if (live_ != nullptr) live_->emulated_ps.store(static_cast<int64_t>(at.ps()), std::memory_order_relaxed);
    if (listener_ != nullptr) listener_->on_delivered(id, at);
  }

  emu::PacketFabric& inner_;
  double dilation_;
  int64_t start_ns_;
  const std::atomic<bool>* stop_;
  LiveMetrics* live_;
  const std::vector<bool>& local_;
  emu::DeliveryListener* listener_ = nullptr;
  bool interrupted_ = false;
  emu::Time interrupted_at_;
};

// Numbers every slice the replicated model emits (the same sequence on every agent) and keeps those of
// local ranks: node slices of the rank, messages it sent.
class RecordingTimeline final : public emu::TimelineSink {
 public:
  explicit RecordingTimeline(const std::vector<bool>& local) : local_(local), slices_(local.size()) {}

  void node_slice(int32_t rank, int32_t track, const std::string& name, const char* kind, uint64_t node_id,
                  emu::Time start, emu::Time end, uint64_t bytes) override {
    const uint64_t seq = seq_++;
    if (!is_local(rank)) return;
    proto::TimelineSlice& s = slices_[static_cast<size_t>(rank)].emplace_back();
    s.set_seq(seq);
    s.set_rank(rank);
    s.set_track(track);
    s.set_name(name);
    s.set_kind(kind);
    s.set_node_id(node_id);
    s.set_start_ps(start.ps());
    s.set_end_ps(end.ps());
    s.set_bytes(bytes);
  }
  void message_slice(int32_t src, int32_t dst, uint64_t bytes, emu::Time sent, emu::Time delivered,
                     uint64_t collective_index) override {
    const uint64_t seq = seq_++;
    if (!is_local(src)) return;
    proto::TimelineSlice& s = slices_[static_cast<size_t>(src)].emplace_back();
    s.set_seq(seq);
    s.set_message(true);
    s.set_rank(src);
    s.set_track(dst);
    s.set_node_id(collective_index);
    s.set_start_ps(sent.ps());
    s.set_end_ps(delivered.ps());
    s.set_bytes(bytes);
  }
  std::vector<proto::TimelineSlice>& of(size_t rank) { return slices_[rank]; }

 private:
  bool is_local(int32_t rank) const { return rank >= 0 && static_cast<size_t>(rank) < local_.size() && local_[rank]; }
  const std::vector<bool>& local_;
  std::vector<std::vector<proto::TimelineSlice>> slices_;
  uint64_t seq_ = 0;
};

const std::string* find_path(const std::map<std::string, std::string>& paths, const char* role) {
  const auto it = paths.find(role);
  return it == paths.end() ? nullptr : &it->second;
}

// lab.yaml's dscp and ecn as the coordinator sent them; std::invalid_argument for values it cannot have sent.
void traffic_class(const proto::AssignRanks& assign, uint8_t& dscp, host::dpdk::Ecn& ecn) {
  const std::optional<host::dpdk::Ecn> e = host::dpdk::sender_ecn(assign.ecn());
  if (!e) {
    throw std::invalid_argument(fmt::format("AssignRanks: \"{}\" is not an ECN codepoint a sender sets (not-ect, ect0, "
                                            "ect1)",
                                            assign.ecn()));
  }
  host::dpdk::check_sender_class(assign.dscp(), *e, "AssignRanks");
  dscp = static_cast<uint8_t>(assign.dscp());
  ecn = *e;
}

// The local ranks' UDP sockets at the lab.yaml data addresses, sending lab.yaml's traffic class.
std::unique_ptr<UdpTransport> bind_udp(const proto::AssignRanks& assign) {
  const size_t world = assign.world_size();
  std::vector<boost::asio::ip::udp::endpoint> endpoints(world);
  for (const proto::RankAssignment& ra : assign.ranks()) {
    if (ra.rank() >= world) throw std::invalid_argument(fmt::format("rank {} outside the run", ra.rank()));
    const auto ep = parse_endpoint(ra.endpoint());
    endpoints[ra.rank()] = boost::asio::ip::udp::endpoint(ep.address(), ep.port());
  }
  std::vector<bool> local(world, false);
  std::string mine;
  for (const uint32_t r : assign.local_ranks()) {
    local.at(r) = true;
    mine += fmt::format("{}rank {} at {}:{}", mine.empty() ? "" : ", ", r, endpoints[r].address().to_string(),
                        endpoints[r].port());
  }
  SocketFabricOptions o;  // the replay's batch, buffers and datagram size are these defaults
  traffic_class(assign, o.dscp, o.ecn);
  try {
    return std::make_unique<UdpTransport>(std::move(endpoints), local, o.batch, o.socket_buffer_bytes,
                                          SocketFabric::max_datagram(o), o.dscp, o.ecn);
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error(fmt::format("socket fabric: cannot bind the data plane ({}): {}", mine, e.what()));
  }
}

std::unique_ptr<SocketFabric> make_udp_fabric(const ReplayInput& in, const emu::Topology& topology,
                                              const std::vector<bool>& local, SocketFabricOptions o) {
  std::unique_ptr<DatagramTransport> transport;
  if (in.bound != nullptr && *in.bound) {
    transport = std::move(*in.bound);
  } else {
    transport = bind_udp(*in.assign);
  }
  return std::make_unique<SocketFabric>(topology, std::move(transport), local, std::move(o));
}

// lab.yaml `fabric: dpdk`: rank r receives at lab_dpdk_endpoint(r, MAC of its agent's port); the lab file's
// `data` addresses are not used.
std::unique_ptr<SocketFabric> make_dpdk_fabric(const ReplayInput& in, const emu::Topology& topology,
                                               const std::vector<bool>& local, SocketFabricOptions o) {
  const proto::AssignRanks& assign = *in.assign;
  const size_t world = assign.world_size();
  if (in.data_port == nullptr) {
    throw std::invalid_argument("lab fabric dpdk: this agent has no DPDK port (start it with --dpdk-device)");
  }
  std::vector<host::dpdk::Endpoint> endpoints(world);
  for (const proto::RankAssignment& ra : assign.ranks()) {
    if (ra.rank() >= world) throw std::invalid_argument(fmt::format("rank {} outside the run", ra.rank()));
    const auto mac = in.agent_macs.find(ra.agent());
    if (mac == in.agent_macs.end() || mac->second.size() != std::tuple_size_v<host::dpdk::MacAddr>) {
      throw std::invalid_argument(fmt::format("rank {}: Start carries no 6-byte MAC for its agent \"{}\"", ra.rank(),
                                              ra.agent()));
    }
    host::dpdk::MacAddr bytes{};
    std::copy(mac->second.begin(), mac->second.end(), bytes.begin());
    endpoints[ra.rank()] = lab_dpdk_endpoint(ra.rank(), bytes);
  }
  std::string mine;
  for (const uint32_t r : assign.local_ranks()) {
    mine += fmt::format("{}rank {} at {}/{}", mine.empty() ? "" : ", ", r, host::dpdk::format_mac(endpoints[r].mac),
                        host::dpdk::format_ip(endpoints[r].ip));
  }
  spdlog::info("lab dpdk fabric: {}: {}", in.data_port->describe(), mine);
  // open() refuses datagrams that cannot fit a frame of the port's MTU (a payload of 1400: 20 + 8 + 60 + 1400
  // bytes of IPv4, UDP, header and data fill 1488 of a 1500-byte MTU). RoCEv2 frames carry 16 bytes more
  // (BTH, ICRC): 1396 message bytes per packet, the same on every agent (it comes from the run's wire).
  const bool roce = assign.wire() == "roce";
  const host::dpdk::WireMode mode = roce ? host::dpdk::WireMode::kRoceV2 : host::dpdk::WireMode::kFabemu;
  if (roce) {
    o.payload = std::min<uint32_t>(o.payload, static_cast<uint32_t>(host::dpdk::max_payload_for_mtu(mode, 1500)));
  }
  const uint32_t max_datagram = SocketFabric::max_datagram(o);
  LabWire wire;
  wire.mode = mode;
  traffic_class(assign, wire.dscp, wire.ecn);
  std::unique_ptr<DatagramTransport> transport;
  try {
    transport = in.data_port->open(std::move(endpoints), local, max_datagram, wire);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("dpdk fabric: cannot open the data plane on {} ({}): {}",
                                         in.data_port->describe(), mine, e.what()));
  }
  return std::make_unique<SocketFabric>(topology, std::move(transport), local, std::move(o));
}

// The ranks this agent walks for.
std::vector<bool> local_ranks(const proto::AssignRanks& assign) {
  std::vector<bool> local(assign.world_size(), false);
  for (const uint32_t r : assign.local_ranks()) local.at(r) = true;
  return local;
}

emu::WalkerOptions walker_options(const proto::RunSpec& spec, const ReplayConfig& config,
                                  RecordingTimeline& timeline) {
  emu::WalkerOptions opt;
  opt.system = config.system;
  opt.comm_streams = spec.comm_streams();
  if (!spec.compute_model().empty()) opt.compute_model = host::parse_compute_model(spec.compute_model(), "compute_model");
  opt.peak_tflops = spec.peak_tflops();
  opt.mem_bw_gbps = spec.mem_bw_gbps();
  opt.compute_scale.assign(spec.compute_scale().begin(), spec.compute_scale().end());
  opt.closed_form = spec.closed_form();
  opt.strict = spec.strict();
  opt.hierarchical_groups = !spec.flat_groups();
  if (spec.timeline()) {
    opt.timeline = &timeline;
    opt.timeline_message_limit = spec.timeline_messages();
  }
  return opt;
}

// The run's fabric: the paced packet model (`fabric: model`), or the socket fabric over kernel UDP sockets
// (`socket`) or the agent's DPDK port (`dpdk`). One of `paced` and `socket` is set.
struct ReplayFabric {
  std::unique_ptr<emu::PacketFabric> model_packet;
  std::unique_ptr<PacedModelFabric> paced;
  std::unique_ptr<SocketFabric> socket;
  emu::Fabric* fabric = nullptr;
  const emu::PacketFabric* packet = nullptr;  // the packet model inside: its links are the report's
};

ReplayFabric make_replay_fabric(const ReplayInput& in, emu::Engine& engine, const emu::Topology& topology,
                                const std::vector<bool>& local) {
  const proto::AssignRanks& assign = *in.assign;
  const proto::RunSpec& spec = assign.spec();
  const uint32_t model_mtu = spec.mtu() == 0 ? ~uint32_t{0} : spec.mtu();
  ReplayFabric f;
  if (assign.fabric_config() == "model") {
    f.model_packet = std::make_unique<emu::PacketFabric>(engine, topology, model_mtu);
    f.paced = std::make_unique<PacedModelFabric>(*f.model_packet, spec.dilation(), in.start_realtime_ns, in.stop,
                                                 in.live, local);
    f.fabric = f.paced.get();
    f.packet = f.model_packet.get();
  } else if (assign.fabric_config() == "socket" || assign.fabric_config() == "dpdk") {
    // The same fabric over either transport: kernel UDP sockets, or the agent's DPDK port.
    SocketFabricOptions o;
    o.model_mtu = model_mtu;
    o.dilation = spec.dilation();
    if (spec.stall_timeout_ms() != 0) o.stall_timeout = emu::Duration::from_ms(spec.stall_timeout_ms());
    o.start_realtime_ns = in.start_realtime_ns;
    const std::atomic<bool>* stop = in.stop;
    o.stop_requested = [stop] { return stop != nullptr && stop->load(std::memory_order_relaxed); };
    o.live = in.live;
    if (assign.fabric_config() == "socket") {
      f.socket = make_udp_fabric(in, topology, local, std::move(o));
    } else {
      f.socket = make_dpdk_fabric(in, topology, local, std::move(o));
    }
    f.fabric = f.socket.get();
    f.packet = &f.socket->model();
  } else {
    throw std::invalid_argument(fmt::format("lab fabric \"{}\" is not available on this agent", assign.fabric_config()));
  }
  return f;
}

// The agreed start: every agent begins its walk at the same instant (sleep, then spin the last 2 ms).
void wait_for_start(const ReplayInput& in) {
  for (;;) {
    if (in.stop != nullptr && in.stop->load()) break;
    const int64_t now = realtime_ns();
    if (now >= in.start_realtime_ns) break;
    const int64_t left = in.start_realtime_ns - now;
    if (left > 2'000'000) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left - 1'000'000, 10'000'000)));
    } else {
      std::this_thread::yield();
    }
  }
}

// What did not finish, as warnings: this agent speaks for its own ranks (every agent replays every rank,
// so the others' ranks are theirs to report) and for the collectives.
void unfinished_as_warnings(emu::RunResult& result, const std::vector<bool>& local, const char* prefix) {
  for (auto& s : result.stuck) {
    unsigned rank = 0;
    if (std::sscanf(s.c_str(), "rank %u (", &rank) == 1 && (rank >= local.size() || !local[rank])) continue;
    result.warnings.push_back(prefix + s);
  }
  result.stuck.clear();
}

// How the walk ended, beside its result.
struct RunEnd {
  bool interrupted = false;  // stopped by the coordinator
  std::string stall;         // the wire stalled (a dead peer): why
  std::string socket_json;   // the socket fabric's statistics
  std::string socket_text;
};

// The end of the walk in the result's warnings (a stop, a stall, unacknowledged messages), the link
// results, and the socket fabric's statistics; warnings name the user's files.
RunEnd finish_run(const ReplayInput& in, ReplayFabric& f, const std::vector<bool>& local, emu::RunResult& result) {
  RunEnd end;
  end.interrupted = f.paced ? f.paced->interrupted() : f.socket->interrupted();
  if (end.interrupted) {
    const emu::Time at = f.paced ? f.paced->interrupted_at() : f.socket->engine().now();
    result.warnings.push_back(
        fmt::format("run interrupted (stopped by the coordinator) at {} ps of emulated time", at.ps()));
    unfinished_as_warnings(result, local, "interrupted: ");
  }
  // A dead peer (nothing arrived for the stall timeout): the walk stopped there; what finished is reported.
  end.stall = f.socket && f.socket->stalled() ? f.socket->stall_reason() : std::string();
  if (!end.stall.empty()) {
    result.warnings.push_back(fmt::format("run stopped at {} ps of emulated time: the wire stalled: {}",
                                          f.socket->engine().now().ps(), end.stall));
    unfinished_as_warnings(result, local, "stopped: ");
  }
  if (f.socket) {
    if (!end.interrupted && !f.socket->drain() && end.stall.empty()) {
      result.warnings.push_back("socket fabric: some messages were not acknowledged at the end");
    }
    host::dpdk::RealtimeFabric::ReportSection section = f.socket->report_section();
    end.socket_json = std::move(section.json);
    end.socket_text = std::move(section.text);
  }
  result.links = emu::link_results(*f.packet, result.total);
  for (std::string& w : result.warnings) w = name_user_files(std::move(w), in.trace_paths, in.trace_names);
  return end;
}

// One RankResult per local rank (several when its timeline slices fill more than one frame); `result`
// keeps only the local ranks.
void pack_rank_results(emu::RunResult& result, RecordingTimeline& timeline, const std::vector<bool>& local,
                       ReplayOutput& out) {
  std::vector<emu::RankResult> own;
  for (const emu::RankResult& k : result.ranks) {
    if (k.rank < 0 || static_cast<size_t>(k.rank) >= local.size() || !local[static_cast<size_t>(k.rank)]) continue;
    own.push_back(k);
    emu::RunResult one;
    one.npus = result.npus;
    one.ranks.push_back(k);
    std::vector<proto::TimelineSlice>& slices = timeline.of(static_cast<size_t>(k.rank));
    size_t next = 0;
    do {
      proto::RankResult& rr = out.ranks.emplace_back();
      rr.set_rank(static_cast<uint32_t>(k.rank));
      rr.set_ok(true);
      if (next == 0) rr.set_report_json(emu::report_to_json(one));
      const size_t end = std::min(slices.size(), next + kSlicesPerFrame);
      for (size_t i = next; i < end; ++i) *rr.add_slices() = std::move(slices[i]);
      next = end;
      rr.set_more(next < slices.size());
    } while (next < slices.size());
  }
  result.ranks = std::move(own);
}

}  // namespace

ReplayConfig load_replay_config(const proto::RunSpec& spec, const std::map<std::string, std::string>& paths) {
  (void)spec;
  const std::string* fabric = find_path(paths, "fabric");
  const std::string* network = find_path(paths, "network");
  if (fabric == nullptr && network == nullptr) {
    throw std::invalid_argument("the run names neither a fabric file nor a network file");
  }
  const std::string* system = find_path(paths, "system");
  host::RunConfig c = host::load_run_config(fabric != nullptr ? *fabric : std::string(),
                                            network != nullptr ? *network : std::string(),
                                            system != nullptr ? *system : std::string());
  return ReplayConfig{std::move(c.network), std::move(c.system)};
}

std::unique_ptr<DatagramTransport> bind_udp_data_plane(const proto::AssignRanks& assign) { return bind_udp(assign); }

std::string name_user_files(std::string text, const std::vector<std::string>& paths,
                            const std::vector<std::string>& names) {
  for (size_t r = 0; r < paths.size() && r < names.size(); ++r) {
    if (paths[r].empty() || names[r].empty() || paths[r] == names[r]) continue;
    for (size_t at = text.find(paths[r]); at != std::string::npos; at = text.find(paths[r], at + names[r].size())) {
      text.replace(at, paths[r].size(), names[r]);
    }
  }
  return text;
}

void replay(const ReplayInput& in, const std::function<void(ReplayOutput&&)>& deliver) {
  const proto::AssignRanks& assign = *in.assign;
  const proto::RunSpec& spec = assign.spec();
  const size_t world = assign.world_size();
  if (in.trace_paths.size() != world) {
    throw std::invalid_argument(fmt::format("{} trace files for a run of {} ranks", in.trace_paths.size(), world));
  }
  const std::vector<bool> local = local_ranks(assign);
  const ReplayConfig config = load_replay_config(spec, in.config_paths);
  traces::ProcessGroups groups(static_cast<int64_t>(world));
  if (const std::string* g = find_path(in.config_paths, "comm_groups")) groups.load_file(*g);
  RecordingTimeline timeline(local);
  const emu::WalkerOptions opt = walker_options(spec, config, timeline);

  emu::Engine engine(1 << 16);
  emu::Topology topology(config.network);
  ReplayFabric f = make_replay_fabric(in, engine, topology, local);
  emu::Walker walker(*f.fabric, config.network, in.trace_paths, groups, opt);

  wait_for_start(in);
  if (in.live != nullptr) in.live->running.store(true);
  const int64_t started = realtime_ns();
  emu::RunResult result = walker.run();
  const int64_t ended = realtime_ns();
  if (in.live != nullptr) in.live->running.store(false);
  const RunEnd end = finish_run(in, f, local, result);

  ReplayOutput out;
  pack_rank_results(result, timeline, local, out);
  out.done.set_run_id(assign.run_id());
  out.done.set_report_json(emu::report_to_json(result));
  out.done.set_interrupted(end.interrupted);
  out.done.set_stall(end.stall);
  out.done.set_socket_json(end.socket_json);
  out.done.set_socket_text(end.socket_text);
  out.done.set_started_ns(started);
  out.done.set_wall_ns(ended - started);
  deliver(std::move(out));
  // Peers may still need our ACKs (or retransmissions) to finish: serve until the coordinator's Stop.
  if (f.socket && !end.interrupted) f.socket->serve([] { return false; });
}

}  // namespace fabemu::lab
