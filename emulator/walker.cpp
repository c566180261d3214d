// The Walker facade and the run loop: set-up, reading the traces rank by rank through their dependency
// resolvers, compute streams, time accounting and the walker's own events. Collectives and SEND/RECV
// are in walker_collectives.cpp and walker_p2p.cpp (see walker_impl.h for the whole map).
#include "emulator/walker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "emulator/walker_impl.h"
#include "traces/attrs.h"

namespace fabemu::emu {

namespace {

int64_t comm_streams(const WalkerOptions& o) {
  return o.comm_streams > 0 ? o.comm_streams : std::max<int64_t>(1, o.system.active_chunks_per_dimension);
}

}  // namespace

Walker::Impl::Impl(Fabric& fabric, const NetworkConfig& network, std::vector<std::string> files,
                   const traces::ProcessGroups& groups, WalkerOptions options)
    : fabric_(fabric),
      engine_(fabric.engine()),
      network_(network),
      groups_(groups),
      options_(std::move(options)),
      scheduler_(collectives_, *this, network_.dims.size(), files.size(), comm_streams(options_)),
      customs_(options_.system),
      message_log_(options_.timeline, options_.timeline_message_limit, files.size(), options_.traffic_matrix) {
  const int64_t npus = network_.total_npus();
  if (static_cast<int64_t>(files.size()) > npus) {
    throw std::invalid_argument(fmt::format("the workload has {} ranks but the network ({}) has only {} NPUs",
                                            files.size(), network_.source.empty() ? "network" : network_.source,
                                            npus));
  }
  if (groups_.world_size() != static_cast<int64_t>(files.size())) {
    throw std::invalid_argument(fmt::format("process groups are for {} ranks, the workload has {}",
                                            groups_.world_size(), files.size()));
  }
  // The readers bound these (host/config/README.md, Bounds); a config built in memory is checked here.
  if (options_.system.preferred_dataset_splits > (int64_t{1} << 16)) {
    throw std::invalid_argument(fmt::format("preferred-dataset-splits {}: expected 1 to 65536 chunks per collective",
                                            options_.system.preferred_dataset_splits));
  }
  plan_.system = &options_.system;
  default_grid_ = default_group_grid(network_, static_cast<int64_t>(files.size()), diagnostics_.algo_warnings);
  set_up_compute_model();
  costs_.endpoint_delay = options_.system.endpoint_delay;
  check_custom_keys();
  ranks_.resize(files.size());
  for (size_t r = 0; r < files.size(); ++r) {
    ranks_[r].path = std::move(files[r]);
    ranks_[r].res.compute_scale = r < options_.compute_scale.size() ? options_.compute_scale[r] : 1.0;
  }
  // The fabric's closed-form capability: congestion-unaware delivery times, a function of the message.
  if (const AnalyticalFabric* analytical = fabric_.analytical(); analytical != nullptr && options_.closed_form) {
    closed_form_.emplace(*analytical, costs_);
  }
  plan_.closed_form = closed_form_.has_value();
  if (options_.nccl) nccl_.emplace(*options_.nccl);
}

void Walker::Impl::set_up_compute_model() {
  const double tflops = options_.peak_tflops > 0 ? options_.peak_tflops : options_.system.peak_perf_tflops;
  const double mem = options_.mem_bw_gbps > 0 ? options_.mem_bw_gbps : options_.system.local_mem_bw_gbps;
  if (tflops > 0) ops_rate_ = Rate::from_bytes_per_sec(static_cast<uint64_t>(std::llround(tflops * 1e12)));
  if (mem > 0) costs_.mem_rate = Rate::from_bytes_per_sec(static_cast<uint64_t>(std::llround(mem * 1e9)));
  roofline_ready_ = tflops > 0 && mem > 0;
  if (options_.compute_model == ComputeModel::kRoofline && !roofline_ready_) {
    throw std::invalid_argument("the roofline compute model needs peak-perf (TFLOPS) and local-mem-bw (GB/s)");
  }
  if (options_.system.roofline_enabled && options_.compute_model == ComputeModel::kAuto) {
    if (!roofline_ready_) throw std::invalid_argument("roofline-enabled needs peak-perf and local-mem-bw");
    options_.compute_model = ComputeModel::kRoofline;
  }
}

// The per-collective-type keys run (walker_custom.cpp); ASTRA-sim's per-node key is not supported.
void Walker::Impl::check_custom_keys() {
  const auto& sys = options_.system;
  if (!sys.per_node_custom_implementation.empty()) {
    throw std::invalid_argument(fmt::format(
        "per-node-custom-implementation ({}) is not supported: name a custom implementation per collective type "
        "(\"all-reduce-implementation-custom\", ...; docs/custom_collectives.md)",
        sys.per_node_custom_implementation));
  }
}

RunResult Walker::Impl::run() {
  fabric_.set_listener(this);
  open_traces();
  for (size_t r = 0; r < ranks_.size(); ++r) pump(static_cast<int32_t>(r));
  if (options_.progress == nullptr) {
    engine_.run();
  } else {
    while (engine_.run_some(Walker::kProgressEvents)) options_.progress->progress(progress());
  }
  fabric_.set_listener(nullptr);
  return collect_results();
}

WalkProgress Walker::Impl::progress() const {
  WalkProgress p;
  p.now = engine_.now();
  p.ranks = ranks_.size();
  p.events = engine_.events_run();
  for (const RankState& R : ranks_) {
    p.nodes_done += R.res.nodes;
    if (R.resolver->done()) ++p.ranks_finished;
  }
  return p;
}

void Walker::Impl::open_traces() {
  traces::ResolverOptions ropt;
  ropt.strict = options_.strict;
  ropt.window = options_.resolver_window != 0
                    ? options_.resolver_window
                    : std::clamp<size_t>((size_t{1} << 20) / std::max<size_t>(1, ranks_.size()), 64, size_t{1} << 14);
  for (size_t r = 0; r < ranks_.size(); ++r) {
    auto& R = ranks_[r];
    R.reader = std::make_unique<traces::TraceReader>(R.path, static_cast<int64_t>(r));
    ropt.on_load = [this, r](const Node& node) { loaded(static_cast<int32_t>(r), node); };
    R.resolver = std::make_unique<traces::DependencyResolver>(*R.reader, ropt);
  }
}

RunResult Walker::Impl::collect_results() {
  RunResult out = std::move(result_);
  out.npus = static_cast<int32_t>(network_.total_npus());
  for (size_t r = 0; r < ranks_.size(); ++r) {
    auto& R = ranks_[r];
    RankResult rr = R.res;
    rr.rank = static_cast<int32_t>(r);
    rr.finished = R.resolver->done();
    const MessageLog::Traffic& traffic = message_log_.traffic(r);
    rr.sent_messages = traffic.sent_messages;
    rr.sent_bytes = traffic.sent_bytes;
    rr.received_messages = traffic.received_messages;
    rr.received_bytes = traffic.received_bytes;
    const Duration used = rr.compute_busy + rr.exposed_comm;
    rr.idle = rr.finish.since_start() > used ? rr.finish.since_start() - used : Duration::zero();
    out.ranks.push_back(rr);
    out.total = std::max(out.total, R.res.finish);
    std::string lenient = resolver_warning(static_cast<int32_t>(r), R.resolver->stats());
    if (!lenient.empty()) out.warnings.push_back(std::move(lenient));
    if (!R.resolver->done()) {
      out.stuck.push_back(describe_stuck_rank(static_cast<int32_t>(r), R.path, R.res.nodes, R.resolver->in_flight(),
                                              R.comm_active));
    }
  }
  out.traffic = message_log_.matrix();
  diagnostics_.append_warnings(message_log_, out.warnings);
  message_log_.write_counters();
  describe_unfinished_collectives(out);
  p2p_.describe_unmatched([this](int32_t r) -> const std::string& { return ranks_[static_cast<size_t>(r)].path; },
                          out.stuck, out.warnings);
  out.events = engine_.events_run();
  out.reached = std::max(out.total, engine_.now());
  if (!out.stuck.empty()) out.status = RunStatus::kDeadlocked;
  return out;
}

// ---- accounting -------------------------------------------------------------------------------------
void Walker::Impl::account(RankState& R) {
  const Time now = engine_.now();
  const Duration d = now - R.last;
  const bool computing = R.compute[0].running != nullptr || R.compute[1].running != nullptr;
  if (computing) R.res.compute_busy += d;
  if (R.comm_active > 0) {
    R.res.comm_busy += d;
    if (!computing) R.res.exposed_comm += d;
  }
  R.last = now;
}

traces::Location Walker::Impl::where(int32_t rank, const Node& node) const {
  return traces::Location{.file = ranks_[static_cast<size_t>(rank)].path, .rank = rank, .line = std::nullopt,
                          .offset = std::nullopt, .node_index = std::nullopt, .node_id = node.id()};
}

int32_t Walker::Impl::take_track(RankState& R) {
  for (size_t i = 0; i < R.comm_tracks.size(); ++i) {
    if (R.comm_tracks[i] == 0) {
      R.comm_tracks[i] = 1;
      return static_cast<int32_t>(i + 1);
    }
  }
  R.comm_tracks.push_back(1);
  return static_cast<int32_t>(R.comm_tracks.size());
}

void Walker::Impl::release_track(RankState& R, int32_t track) {
  if (track >= 1) R.comm_tracks[static_cast<size_t>(track - 1)] = 0;
}

// Marks `node` finished on rank r at now(); `start` and `kind` are for the timeline.
void Walker::Impl::finish_node(int32_t r, const Node& node, Time start, const char* kind, int32_t track,
                               uint64_t bytes) {
  RankState& R = ranks_[static_cast<size_t>(r)];
  if (options_.timeline != nullptr && track >= 0) {
    options_.timeline->node_slice(r, track, node.name(), kind, node.id(), start, engine_.now(), bytes);
  }
  R.res.finish = engine_.now();
  R.resolver->finish(node);
  pump(r);
}

// ---- walking ----------------------------------------------------------------------------------------
// Every node as its rank's resolver reads it, in file order. Process groups are defined in file order,
// and the members of a group match their collectives in file order (the order the program launched
// them, NCCL's matching rule), not in the order their dependencies let them issue: the k-th collective
// of a group in each member's file is the group's k-th collective. `fabemu trace validate` checks the
// same rule.
void Walker::Impl::loaded(int32_t r, const Node& node) {
  if (node.type() == ChakraProtoMsg::METADATA_NODE) {
    groups_.add_from_metadata_node(node, where(r, node));
    return;
  }
  // A node it does not place (no valid comm_type, an unknown group): issue_collective says why.
  const auto place = collective_order_.place(r, node, groups_);
  if (!place) return;
  ranks_[static_cast<size_t>(r)].coll_seq.emplace(
      &node, LoadedCollective{place->pg, group_index(place->pg->name), place->seq});
}

void Walker::Impl::pump(int32_t r) {
  RankState& R = ranks_[static_cast<size_t>(r)];
  if (R.pumping) return;
  R.pumping = true;
  while (const Node* node = R.resolver->next()) dispatch(r, *node);
  R.pumping = false;
}

void Walker::Impl::dispatch(int32_t r, const Node& node) {
  RankState& R = ranks_[static_cast<size_t>(r)];
  ++R.res.nodes;
  switch (node.type()) {
    case ChakraProtoMsg::COMP_NODE: {
      ++R.res.comp_nodes;
      const auto cpu = traces::attr_bool(node, "is_cpu_op");
      const int s = cpu.value_or(false) ? 1 : 0;
      auto& S = R.compute[s];
      S.queue.push_back(&node);
      if (S.running == nullptr) start_compute(r, s);
      return;
    }
    case ChakraProtoMsg::COMM_COLL_NODE:
      ++R.res.comm_nodes;
      issue_collective(r, node);
      return;
    case ChakraProtoMsg::COMM_SEND_NODE:
      ++R.res.comm_nodes;
      issue_send(r, node);
      return;
    case ChakraProtoMsg::COMM_RECV_NODE:
      ++R.res.comm_nodes;
      issue_recv(r, node);
      return;
    default:  // METADATA_NODEs were read when loaded
      finish_node(r, node, engine_.now(), "other", -1, 0);
      return;
  }
}

// ---- compute streams --------------------------------------------------------------------------------
Duration Walker::Impl::compute_time(const RankState& R, const Node& node) {
  Duration d = Duration::from_us(node.duration_micros());
  const bool want_roof = options_.compute_model == ComputeModel::kRoofline ||
                         (options_.compute_model == ComputeModel::kAuto && node.duration_micros() == 0);
  if (want_roof && roofline_ready_) {
    const auto ops = traces::attr_int(node, "num_ops");
    const auto bytes = traces::attr_int(node, "tensor_size");
    if (ops || bytes) {
      const Duration t_ops = ops_rate_.ser(static_cast<uint64_t>(std::max<int64_t>(0, ops.value_or(0))));
      const Duration t_mem = costs_.mem_rate.ser(static_cast<uint64_t>(std::max<int64_t>(0, bytes.value_or(0))));
      d = std::max(t_ops, t_mem);
    } else if (node.duration_micros() == 0) {
      ++diagnostics_.missing_compute;
    } else if (options_.compute_model == ComputeModel::kRoofline) {
      if (options_.strict) {
        throw traces::TraceError(where(static_cast<int32_t>(&R - ranks_.data()), node),
                                 "the roofline compute model is asked for, but this COMP node has no num_ops and no "
                                 "tensor_size (--strict; without it the node runs for its duration_micros)");
      }
      ++diagnostics_.roofline_by_duration;
    }
  } else if (node.duration_micros() == 0 && options_.compute_model != ComputeModel::kDuration &&
             (traces::find_attr(node, "num_ops") != nullptr || traces::find_attr(node, "tensor_size") != nullptr)) {
    ++diagnostics_.missing_compute;
  }
  if (R.res.compute_scale != 1.0) {
    d = Duration::from_ps(static_cast<uint64_t>(std::llround(static_cast<double>(d.ps()) * R.res.compute_scale)));
  }
  return d;
}

void Walker::Impl::start_compute(int32_t r, int s) {
  RankState& R = ranks_[static_cast<size_t>(r)];
  auto& S = R.compute[s];
  account(R);
  S.running = S.queue.front();
  S.queue.pop_front();
  S.started = engine_.now();
  S.duration = compute_time(R, *S.running);
  if (s == 0) R.res.device_compute += S.duration;
  schedule(engine_.now() + S.duration, Action{ActionKind::kCompDone, r, 0, 0, s});
}

void Walker::Impl::compute_done(int32_t r, int s) {
  RankState& R = ranks_[static_cast<size_t>(r)];
  auto& S = R.compute[s];
  account(R);
  const Node* node = S.running;
  const Time started = S.started;
  S.running = nullptr;
  if (!S.queue.empty()) start_compute(r, s);
  finish_node(r, *node, started, s == 0 ? "compute" : "host", 0, 0);
}

// ---- events -----------------------------------------------------------------------------------------
void Walker::Impl::on_event(uint64_t arg) {
  const auto s = static_cast<uint32_t>(arg);
  const Action a = actions_[s];
  actions_.release(s);
  switch (a.kind) {
    case ActionKind::kCompDone: compute_done(a.rank, a.member); break;
    case ActionKind::kPhaseEnd: phase_end(a.rank, a.inst, a.chunk, a.member); break;
    case ActionKind::kMemberDone: member_done(a.rank, a.inst, a.member); break;
    case ActionKind::kCustomComp: custom_done(a.inst, runs_[a.inst].plan->graph->nodes[a.chunk]); break;
  }
}

void Walker::Impl::on_delivered(uint64_t id, Time) {
  const auto slot = static_cast<uint32_t>(id);
  if (msgs_[slot].kind == MsgKind::kColl) {
    coll_delivered(slot);
  } else {
    p2p_delivered(slot);
  }
}

// ---- the facade -------------------------------------------------------------------------------------
Walker::Walker(Fabric& fabric, const NetworkConfig& network, std::vector<std::string> rank_files,
               const traces::ProcessGroups& groups, WalkerOptions options)
    : impl_(std::make_unique<Impl>(fabric, network, std::move(rank_files), groups, std::move(options))) {}

Walker::~Walker() = default;

RunResult Walker::run() {
  return impl_->run();
}

}  // namespace fabemu::emu
