#include "emulator/walker.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "emulator/collective.h"
#include "emulator/packet_fabric.h"
#include "emulator/report_json.h"
#include "traces/attrs.h"
#include "traces/error.h"
#include "traces/process_groups.h"
#include "traces/reader.h"
#include "traces/resolver.h"

namespace fabemu::emu {

using traces::CollectiveType;
using traces::Node;
using traces::NodeType;

namespace {

constexpr uint32_t kNone = ~uint32_t{0};
__extension__ using i128 = __int128;  // quiet under -Wpedantic, as detail::u128

enum class ActionKind : uint8_t { kCompDone, kPhaseEnd };

struct Action {
  ActionKind kind;
  int32_t rank;
  uint32_t inst;
  uint32_t chunk;
  int32_t member;  // instance member index; compute stream index for kCompDone
  uint32_t next_free;
};

enum class MsgKind : uint8_t { kColl, kP2p };

struct Msg {
  MsgKind kind;
  uint32_t inst;       // kColl
  uint32_t chunk;      // kColl
  int32_t member;      // kColl: receiving instance member
  uint32_t gstep;      // kColl: receiver's global step
  int32_t src;
  int32_t dst;
  uint64_t bytes;
  Time sent;
  const Node* send_node;  // kP2p
  int64_t tag;            // kP2p
  uint64_t result;        // kColl: collective index, for the timeline
  uint32_t next_free;
};

struct Phase {
  PhaseOp op;
  CollectiveAlgo algo;
  int32_t dim;      // slot pool: the network dimension it runs on
  int32_t n;        // members per subgroup
  bool hier;        // subgroup = ranks along dimension `dim` (default group only); else the whole group
  uint64_t mul, div;  // phase bytes = chunk bytes * mul / div
  uint32_t step_offset;
  uint32_t steps;
  bool closed_form;
};

struct Instance {
  uint32_t gen = 0;  // incremented each time the slot is reused (Entry::gen)
  bool live = false;
  CollectiveType type{};
  uint64_t bytes = 0;
  const traces::ProcessGroup* pg = nullptr;  // nullptr: all ranks
  int32_t n = 0;
  std::vector<Phase> phases;
  uint32_t total_steps = 0;
  uint32_t chunks = 1;
  std::vector<Time> issued;
  std::vector<const Node*> node;
  std::vector<uint32_t> chunks_done;
  std::vector<int32_t> track;
  uint32_t members_issued = 0;
  uint32_t members_done = 0;
  std::vector<uint32_t> chunk_state;
  std::vector<uint8_t> queued_phase;  // per chunk: phases queued so far
  int64_t priority = 0;               // comm_priority (scheduling-policy EXPLICIT)
  uint32_t result = 0;
  uint64_t key = 0;
  int32_t first_rank = 0;
  uint64_t first_node_id = 0;
  std::string first_file;
  uint32_t next_free = kNone;
};

// A chunk's phase waiting for (or holding) the communication streams of one dimension.
struct Entry {
  uint32_t inst;
  uint32_t chunk;
  uint8_t phase;
  // Instance slots are reused once a collective is done: a rank that was not a member of the collective
  // an old entry of `started` names may reach it only after its slot holds another collective, of which
  // it may be a member. The slot's generation tells them apart.
  uint32_t gen;
};

struct DimQueue {
  std::vector<Entry> started;     // phases some rank has started, in order of first start
  size_t base = 0;                // index of started[0] in that order (a prefix is dropped now and then)
  std::deque<Entry> unstarted;    // phases no rank has started yet, in scheduling-policy order
};

struct ChunkState {
  std::vector<uint16_t> arrivals;  // [member * total_steps + global step]
  std::vector<uint32_t> step;
  std::vector<uint8_t> phase;
  std::vector<uint8_t> waiting;
  std::vector<Time> start;
  std::vector<Time> begin;  // message-by-message: when the step a member waits in began
  std::vector<uint32_t> sub_started;  // [phase * n + subgroup]
  uint32_t members_done = 0;
  uint32_t next_free = kNone;
};

// A collective as it was read (file order): its process group (as defined then), the group's index for the
// walker's keys, and its place among the group's collectives in the rank's file.
struct LoadedCollective {
  const traces::ProcessGroup* pg;
  uint32_t group;
  uint64_t seq;
};

struct P2pKey {
  int32_t src, dst;
  int64_t tag;
  bool operator==(const P2pKey&) const = default;
};
struct P2pKeyHash {
  size_t operator()(const P2pKey& k) const noexcept {
    uint64_t h = (static_cast<uint64_t>(static_cast<uint32_t>(k.src)) << 32) ^ static_cast<uint32_t>(k.dst);
    h ^= static_cast<uint64_t>(k.tag) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 31;
    return static_cast<size_t>(h * 0xBF58476D1CE4E5B9ULL);
  }
};
struct PostedRecv {
  int32_t rank;
  const Node* node;
  Time issued;
  uint64_t bytes;
  int32_t track;
};
struct ArrivedMsg {
  uint64_t bytes;
  int32_t src;
  uint64_t send_node_id;
};

PhaseOp flat_op(CollectiveType t) {
  switch (t) {
    case ChakraProtoMsg::REDUCE: return PhaseOp::kReduce;
    case ChakraProtoMsg::GATHER: return PhaseOp::kGather;
    case ChakraProtoMsg::SCATTER: return PhaseOp::kScatter;
    case ChakraProtoMsg::BROADCAST: return PhaseOp::kBroadcast;
    case ChakraProtoMsg::ALL_GATHER: return PhaseOp::kAllGather;
    case ChakraProtoMsg::ALL_TO_ALL: return PhaseOp::kAllToAll;
    case ChakraProtoMsg::REDUCE_SCATTER:
    case ChakraProtoMsg::REDUCE_SCATTER_BLOCK: return PhaseOp::kReduceScatter;
    default: return PhaseOp::kAllReduce;  // ALL_REDUCE, BARRIER
  }
}

}  // namespace

class Walker::Impl final : public EventTarget, public DeliveryListener {
 public:
  Impl(Fabric& fabric, const NetworkConfig& network, std::vector<std::string> files, const traces::ProcessGroups& groups,
       WalkerOptions options)
      : fabric_(fabric), engine_(fabric.engine()), network_(network), groups_(groups), options_(std::move(options)),
        analytical_(options_.closed_form ? fabric.analytical() : nullptr) {
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
    int64_t stride = 1;
    for (const auto& d : network_.dims) {
      strides_.push_back(static_cast<int32_t>(stride));
      stride *= d.npus;
    }
    if (strides_.empty()) strides_.push_back(1);
    // The readers bound these (host/config/README.md, Bounds); a config built in memory is checked here.
    if (options_.system.preferred_dataset_splits > (int64_t{1} << 16)) {
      throw std::invalid_argument(fmt::format("preferred-dataset-splits {}: expected 1 to 65536 chunks per collective",
                                              options_.system.preferred_dataset_splits));
    }
    plan_default_group_span(static_cast<int64_t>(files.size()));
    streams_ = options_.comm_streams > 0 ? options_.comm_streams : std::max<int64_t>(1, options_.system.active_chunks_per_dimension);
    const double tflops = options_.peak_tflops > 0 ? options_.peak_tflops : options_.system.peak_perf_tflops;
    const double mem = options_.mem_bw_gbps > 0 ? options_.mem_bw_gbps : options_.system.local_mem_bw_gbps;
    if (tflops > 0) ops_rate_ = Rate::from_bytes_per_sec(static_cast<uint64_t>(std::llround(tflops * 1e12)));
    if (mem > 0) mem_rate_ = Rate::from_bytes_per_sec(static_cast<uint64_t>(std::llround(mem * 1e9)));
    roofline_ready_ = tflops > 0 && mem > 0;
    if (options_.compute_model == ComputeModel::kRoofline && !roofline_ready_) {
      throw std::invalid_argument("the roofline compute model needs peak-perf (TFLOPS) and local-mem-bw (GB/s)");
    }
    if (options_.system.roofline_enabled && options_.compute_model == ComputeModel::kAuto) {
      if (!roofline_ready_) throw std::invalid_argument("roofline-enabled needs peak-perf and local-mem-bw");
      options_.compute_model = ComputeModel::kRoofline;
    }
    ep_ = options_.system.endpoint_delay;
    dimq_.resize(std::max<size_t>(1, network_.dims.size()));
    const auto& sys = options_.system;
    for (const auto& [name, prefix] : {std::pair{"all-reduce", &sys.all_reduce_custom}, std::pair{"all-gather", &sys.all_gather_custom},
                                       std::pair{"reduce-scatter", &sys.reduce_scatter_custom},
                                       std::pair{"all-to-all", &sys.all_to_all_custom}}) {
      if (!prefix->empty()) {
        algo_warnings_.insert(fmt::format("{}-implementation-custom ({}) is not run: the native algorithm is used",
                                          name, *prefix));
      }
    }
    if (!sys.per_node_custom_implementation.empty()) {
      algo_warnings_.insert(fmt::format("per-node-custom-implementation ({}) is not run: the native algorithms are used",
                                        sys.per_node_custom_implementation));
    }
    ranks_.resize(files.size());
    for (size_t r = 0; r < files.size(); ++r) {
      ranks_[r].path = std::move(files[r]);
      ranks_[r].res.compute_scale = r < options_.compute_scale.size() ? options_.compute_scale[r] : 1.0;
      ranks_[r].free_slots.assign(std::max<size_t>(1, network_.dims.size()), static_cast<int32_t>(streams_));
      ranks_[r].cursor.assign(std::max<size_t>(1, network_.dims.size()), 0);
    }
  }

  // Where the default group's ranks 0..ranks-1 sit on a network of several dimensions: span_[d] ranks
  // along dimension d. They fill whole dimensions from the first, and at most one more in part (4 ranks on
  // 4x2 span [4, 1], 2 ranks [2, 1], 8 ranks [4, 2]); hierarchical collectives of all ranks run over the
  // dimensions they span. Any other placement (6 ranks on 4x2) runs them flat over the ranks (span_ empty).
  void plan_default_group_span(int64_t ranks) {
    if (network_.dims.size() <= 1) return;
    int64_t left = ranks;
    for (const auto& d : network_.dims) {
      if (left >= d.npus && left % d.npus == 0) {
        span_.push_back(static_cast<int32_t>(d.npus));
        left /= d.npus;
      } else if (left < d.npus) {
        span_.push_back(static_cast<int32_t>(left));
        left = 1;
      } else {
        span_.clear();
        algo_warnings_.insert(fmt::format(
            "the workload's {} ranks do not fill whole dimensions of the network: collectives of all ranks run "
            "flat over the ranks instead of dimension by dimension",
            ranks));
        return;
      }
    }
  }

  RunResult run() {
    fabric_.set_listener(this);
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
    for (size_t r = 0; r < ranks_.size(); ++r) pump(static_cast<int32_t>(r));
    engine_.run();
    fabric_.set_listener(nullptr);

    RunResult out = std::move(result_);
    out.npus = static_cast<int32_t>(network_.total_npus());
    for (size_t r = 0; r < ranks_.size(); ++r) {
      auto& R = ranks_[r];
      RankResult rr = R.res;
      rr.rank = static_cast<int32_t>(r);
      rr.finished = R.resolver->done();
      const Duration used = rr.compute_busy + rr.exposed_comm;
      rr.idle = rr.finish.since_start() > used ? rr.finish.since_start() - used : Duration::zero();
      out.ranks.push_back(rr);
      out.total = std::max(out.total, R.res.finish);
      const auto& st = R.resolver->stats();
      if (st.dangling_deps + st.self_deps + st.forward_ctrl_deps > 0) {
        out.warnings.push_back(fmt::format(
            "rank {}: {} dependencies on ids absent from the file treated as done, {} self dependencies and {} "
            "ctrl_deps on later nodes dropped",
            r, st.dangling_deps, st.self_deps, st.forward_ctrl_deps));
      }
      if (!R.resolver->done()) describe_stuck_rank(static_cast<int32_t>(r), out.stuck);
    }
    if (cpu_colls_ > 0) {
      out.warnings.push_back(fmt::format(
          "{} COMM_COLL nodes without comm_type (CPU-side launch records) took no time", cpu_colls_));
    }
    if (missing_compute_ > 0) {
      out.warnings.push_back(fmt::format(
          "{} COMP nodes had no duration_micros and no roofline estimate (no device spec, or no num_ops/tensor_size): "
          "they took no time",
          missing_compute_));
    }
    if (roofline_by_duration_ > 0) {
      out.warnings.push_back(fmt::format(
          "the roofline compute model is asked for, but {} COMP nodes have no num_ops and no tensor_size: they ran "
          "for their duration_micros (an error under --strict)",
          roofline_by_duration_));
    }
    for (const auto& w : algo_warnings_) out.warnings.push_back(w);
    if (message_slices_dropped_ > 0) {
      out.warnings.push_back(fmt::format("the timeline holds the first {} messages; {} more were left out "
                                         "(--timeline-messages)",
                                         message_slices_, message_slices_dropped_));
    }
    for (size_t i = 0; i < instances_.size(); ++i) {
      const Instance& I = instances_[i];
      if (!I.live) continue;
      std::vector<std::string> missing;
      for (int32_t m = 0; m < I.n; ++m) {
        if (I.node[static_cast<size_t>(m)] == nullptr) missing.push_back(std::to_string(member_rank(I, m)));
      }
      const auto& cr = out.collectives[I.result];
      out.stuck.push_back(fmt::format(
          "collective #{} {} of {} bytes in group {} (first issued by rank {} node {} in {}): {} of {} members issued "
          "it{}{}",
          cr.index, cr.type, cr.bytes, cr.group.empty() ? "\"\" (all ranks)" : "\"" + cr.group + "\"", I.first_rank,
          I.first_node_id, I.first_file, I.members_issued, I.n, missing.empty() ? "" : "; never issued by ranks ",
          fmt::format("{}", fmt::join(missing.size() > 16 ? std::vector<std::string>(missing.begin(), missing.begin() + 16)
                                                          : missing,
                                      ", ")) +
              (missing.size() > 16 ? ", ..." : "")));
    }
    for (auto& [key, q] : posted_) {
      for (const auto& p : q) {
        out.stuck.push_back(fmt::format("rank {} ({}): RECV node {} waits for a message from rank {} tag {} "
                                        "({} bytes) that no SEND delivered",
                                        p.rank, ranks_[static_cast<size_t>(p.rank)].path, p.node->id(), key.src,
                                        key.tag, p.bytes));
      }
    }
    for (auto& [key, q] : arrived_) {
      for (const auto& a : q) {
        out.warnings.push_back(fmt::format("SEND node {} of rank {} to rank {} tag {} ({} bytes) was never received",
                                           a.send_node_id, key.src, key.dst, key.tag, a.bytes));
      }
    }
    out.events = engine_.events_run();
    out.reached = std::max(out.total, engine_.now());
    if (!out.stuck.empty()) out.status = RunStatus::kDeadlocked;
    return out;
  }

 private:
  struct RankState {
    std::string path;
    std::unique_ptr<traces::TraceReader> reader;
    std::unique_ptr<traces::DependencyResolver> resolver;
    struct Stream {
      std::deque<const Node*> queue;
      const Node* running = nullptr;
      Time started;
      Duration duration;
    };
    Stream compute[2];  // device, host (is_cpu_op)
    uint32_t comm_active = 0;
    Time last;
    RankResult res;  // what the report says of the rank, kept as the walk goes
    std::vector<uint64_t> group_seq;  // per group_index: collectives read so far (file order)
    // Collectives read and not yet issued: their group and place in the group's file order.
    std::unordered_map<const Node*, LoadedCollective> coll_seq;
    std::vector<int32_t> free_slots;
    std::vector<size_t> cursor;  // per dimension: entries of DimQueue::started before it are done with
    std::vector<uint8_t> comm_tracks;  // timeline: busy communication tracks
    bool pumping = false;
  };

  // ---- accounting -----------------------------------------------------------------------------------
  void account(RankState& R) {
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

  traces::Location where(int32_t rank, const Node& node) const {
    return traces::Location{.file = ranks_[static_cast<size_t>(rank)].path, .rank = rank, .line = std::nullopt,
                            .offset = std::nullopt, .node_index = std::nullopt, .node_id = node.id()};
  }

  int32_t take_track(RankState& R) {
    for (size_t i = 0; i < R.comm_tracks.size(); ++i) {
      if (R.comm_tracks[i] == 0) {
        R.comm_tracks[i] = 1;
        return static_cast<int32_t>(i + 1);
      }
    }
    R.comm_tracks.push_back(1);
    return static_cast<int32_t>(R.comm_tracks.size());
  }
  void release_track(RankState& R, int32_t track) {
    if (track >= 1) R.comm_tracks[static_cast<size_t>(track - 1)] = 0;
  }

  // Marks `node` finished on rank r at now(); `start` and `kind` are for the timeline.
  void finish_node(int32_t r, const Node& node, Time start, const char* kind, int32_t track, uint64_t bytes) {
    RankState& R = ranks_[static_cast<size_t>(r)];
    if (options_.timeline != nullptr && track >= 0) {
      options_.timeline->node_slice(r, track, node.name(), kind, node.id(), start, engine_.now(), bytes);
    }
    R.res.finish = engine_.now();
    R.resolver->finish(node);
    pump(r);
  }

  // ---- walking --------------------------------------------------------------------------------------
  // Every node as its rank's resolver reads it, in file order. Process groups are defined in file order,
  // and the members of a group match their collectives in file order (the order the program launched
  // them, NCCL's matching rule), not in the order their dependencies let them issue: the k-th collective
  // of a group in each member's file is the group's k-th collective. `fabemu trace validate` checks the
  // same rule.
  void loaded(int32_t r, const Node& node) {
    if (node.type() == ChakraProtoMsg::METADATA_NODE) {
      groups_.add_from_metadata_node(node, where(r, node));
      return;
    }
    if (node.type() != ChakraProtoMsg::COMM_COLL_NODE) return;
    // Only what the matching needs (comm_info reads every attribute, issue_collective does that once).
    const auto type = traces::attr_int(node, "comm_type");
    if (!type || !ChakraProtoMsg::CollectiveCommType_IsValid(static_cast<int>(*type))) return;  // issue says why
    const traces::ProcessGroup* pg = groups_.find(traces::attr_string(node, "pg_name").value_or(""));
    if (pg == nullptr) return;  // issue_collective says why
    RankState& R = ranks_[static_cast<size_t>(r)];
    const uint32_t g = group_index(pg->name);
    if (R.group_seq.size() <= g) R.group_seq.resize(g + 1, 0);
    R.coll_seq.emplace(&node, LoadedCollective{pg, g, R.group_seq[g]++});
  }

  void pump(int32_t r) {
    RankState& R = ranks_[static_cast<size_t>(r)];
    if (R.pumping) return;
    R.pumping = true;
    while (const Node* node = R.resolver->next()) dispatch(r, *node);
    R.pumping = false;
  }

  void dispatch(int32_t r, const Node& node) {
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

  Duration compute_time(const RankState& R, const Node& node) {
    Duration d = Duration::from_us(node.duration_micros());
    const bool want_roof = options_.compute_model == ComputeModel::kRoofline ||
                           (options_.compute_model == ComputeModel::kAuto && node.duration_micros() == 0);
    if (want_roof && roofline_ready_) {
      const auto ops = traces::attr_int(node, "num_ops");
      const auto bytes = traces::attr_int(node, "tensor_size");
      if (ops || bytes) {
        const Duration t_ops = ops_rate_.ser(static_cast<uint64_t>(std::max<int64_t>(0, ops.value_or(0))));
        const Duration t_mem = mem_rate_.ser(static_cast<uint64_t>(std::max<int64_t>(0, bytes.value_or(0))));
        d = std::max(t_ops, t_mem);
      } else if (node.duration_micros() == 0) {
        ++missing_compute_;
      } else if (options_.compute_model == ComputeModel::kRoofline) {
        if (options_.strict) {
          throw traces::TraceError(where(static_cast<int32_t>(&R - ranks_.data()), node),
                                   "the roofline compute model is asked for, but this COMP node has no num_ops and no "
                                   "tensor_size (--strict; without it the node runs for its duration_micros)");
        }
        ++roofline_by_duration_;
      }
    } else if (node.duration_micros() == 0 && options_.compute_model != ComputeModel::kDuration &&
               (traces::find_attr(node, "num_ops") != nullptr || traces::find_attr(node, "tensor_size") != nullptr)) {
      ++missing_compute_;
    }
    if (R.res.compute_scale != 1.0) {
      d = Duration::from_ps(static_cast<uint64_t>(std::llround(static_cast<double>(d.ps()) * R.res.compute_scale)));
    }
    return d;
  }

  void start_compute(int32_t r, int s) {
    RankState& R = ranks_[static_cast<size_t>(r)];
    auto& S = R.compute[s];
    account(R);
    S.running = S.queue.front();
    S.queue.pop_front();
    S.started = engine_.now();
    S.duration = compute_time(R, *S.running);
    if (s == 0) R.res.device_compute += S.duration;
    schedule(engine_.now() + S.duration, Action{ActionKind::kCompDone, r, 0, 0, s, kNone});
  }

  void compute_done(int32_t r, int s) {
    RankState& R = ranks_[static_cast<size_t>(r)];
    auto& S = R.compute[s];
    account(R);
    const Node* node = S.running;
    const Time started = S.started;
    S.running = nullptr;
    if (!S.queue.empty()) start_compute(r, s);
    finish_node(r, *node, started, s == 0 ? "compute" : "host", 0, 0);
  }

  // ---- point to point -------------------------------------------------------------------------------
  void issue_send(int32_t r, const Node& node) {
    const auto info = traces::comm_info(node);
    if (!info.dst || *info.dst < 0 || *info.dst >= static_cast<int64_t>(ranks_.size())) {
      throw traces::TraceError(where(r, node), info.dst ? fmt::format("SEND to rank {}, which is not in the workload "
                                                                      "(ranks 0..{})", *info.dst, ranks_.size() - 1)
                                                        : std::string("SEND without comm_dst"));
    }
    RankState& R = ranks_[static_cast<size_t>(r)];
    account(R);
    ++R.comm_active;
    const uint32_t id = new_msg();
    Msg& M = msgs_[id];
    M.kind = MsgKind::kP2p;
    M.src = r;
    M.dst = static_cast<int32_t>(*info.dst);
    M.bytes = info.size.value_or(0);
    M.sent = engine_.now();
    M.send_node = &node;
    M.tag = info.tag.value_or(0);
    M.member = options_.timeline != nullptr ? take_track(R) : -1;
    ++result_.p2p.sends;
    result_.p2p.bytes += M.bytes;
    ++result_.messages;
    result_.message_bytes += M.bytes;
    fabric_.send(Message{id, M.src, M.dst, M.bytes, static_cast<uint64_t>(M.tag)});
  }

  void issue_recv(int32_t r, const Node& node) {
    const auto info = traces::comm_info(node);
    if (!info.src || *info.src < 0 || *info.src >= static_cast<int64_t>(ranks_.size())) {
      throw traces::TraceError(where(r, node), info.src ? fmt::format("RECV from rank {}, which is not in the "
                                                                      "workload (ranks 0..{})", *info.src,
                                                                      ranks_.size() - 1)
                                                        : std::string("RECV without comm_src"));
    }
    RankState& R = ranks_[static_cast<size_t>(r)];
    account(R);
    ++R.comm_active;
    const P2pKey key{static_cast<int32_t>(*info.src), r, info.tag.value_or(0)};
    const uint64_t bytes = info.size.value_or(0);
    auto it = arrived_.find(key);
    if (it != arrived_.end() && !it->second.empty()) {
      const ArrivedMsg a = it->second.front();
      it->second.pop_front();
      if (it->second.empty()) arrived_.erase(it);
      check_sizes(r, node, bytes, a);
      account(R);
      --R.comm_active;
      finish_node(r, node, engine_.now(), "recv", options_.timeline != nullptr ? 0 : -1, bytes);
      return;
    }
    posted_[key].push_back(PostedRecv{r, &node, engine_.now(), bytes, options_.timeline != nullptr ? take_track(R) : -1});
  }

  void check_sizes(int32_t r, const Node& recv, uint64_t want, const ArrivedMsg& a) {
    if (info_size_known(recv) && want != a.bytes) {
      throw traces::TraceError(where(r, recv), fmt::format("RECV of {} bytes from rank {} matched SEND node {} of "
                                                           "rank {}, which sends {} bytes",
                                                           want, a.src, a.send_node_id, a.src, a.bytes));
    }
  }
  static bool info_size_known(const Node& n) { return traces::find_attr(n, "comm_size") != nullptr; }

  void p2p_delivered(uint32_t id) {
    Msg M = msgs_[id];
    free_msg(id);
    // The SEND completes when its message is delivered.
    RankState& S = ranks_[static_cast<size_t>(M.src)];
    account(S);
    --S.comm_active;
    if (options_.timeline != nullptr) {
      if (take_message_slice()) options_.timeline->message_slice(M.src, M.dst, M.bytes, M.sent, engine_.now(), ~uint64_t{0});
      release_track(S, M.member);
    }
    const P2pKey key{M.src, M.dst, M.tag};
    const ArrivedMsg a{M.bytes, M.src, M.send_node->id()};
    auto it = posted_.find(key);
    const Node* send_node = M.send_node;
    if (it != posted_.end() && !it->second.empty()) {
      const PostedRecv p = it->second.front();
      it->second.pop_front();
      if (it->second.empty()) posted_.erase(it);
      check_sizes(p.rank, *p.node, p.bytes, a);
      RankState& D = ranks_[static_cast<size_t>(p.rank)];
      account(D);
      --D.comm_active;
      if (options_.timeline != nullptr) release_track(D, p.track);
      finish_node(M.src, *send_node, M.sent, "send", M.member, M.bytes);
      finish_node(p.rank, *p.node, p.issued, "recv", p.track, p.bytes);
      return;
    }
    arrived_[key].push_back(a);
    finish_node(M.src, *send_node, M.sent, "send", M.member, M.bytes);
  }

  // ---- collectives ----------------------------------------------------------------------------------
  const std::vector<CollectiveImpl>& impls(PhaseOp op) const {
    const auto& s = options_.system;
    switch (op) {
      case PhaseOp::kAllGather:
      case PhaseOp::kGather:
      case PhaseOp::kScatter: return s.all_gather;
      case PhaseOp::kReduceScatter: return s.reduce_scatter;
      case PhaseOp::kAllToAll: return s.all_to_all;
      default: return s.all_reduce;
    }
  }

  void note_algo(PhaseOp op, CollectiveAlgo wanted, int32_t n) {
    std::string why;
    PhaseSchedule::resolve_algo(op, wanted, n, &why);
    if (!why.empty()) algo_warnings_.insert(fmt::format("{} over {} ranks: {}", phase_op_name(op), n, why));
  }

  void add_phase(Instance& I, PhaseOp op, CollectiveAlgo algo, int32_t dim, int32_t n, bool hier, uint64_t mul,
                 uint64_t div) {
    note_algo(op, algo, n);
    PhaseSchedule s(op, algo, n, 0);
    const bool cf = analytical_ != nullptr && s.step_synchronous() &&
                    (op == PhaseOp::kAllReduce || op == PhaseOp::kReduceScatter || op == PhaseOp::kAllGather ||
                     op == PhaseOp::kAllToAll);
    I.phases.push_back(Phase{op, s.algo(), dim, n, hier, mul, div, I.total_steps, s.steps(), cf});
    I.total_steps += s.steps();
  }

  void build_phases(Instance& I, const traces::CommInfo& info) {
    I.phases.clear();
    I.total_steps = 0;
    const PhaseOp op = flat_op(I.type);
    const auto& list = impls(op);
    if (list.empty()) {
      algo_warnings_.insert(fmt::format("no {} implementation configured: using ring", phase_op_name(op)));
    }
    const CollectiveImpl first = list.empty() ? CollectiveImpl{} : list.front();
    const bool hier_op = op == PhaseOp::kAllReduce || op == PhaseOp::kReduceScatter || op == PhaseOp::kAllGather ||
                         op == PhaseOp::kAllToAll;
    std::vector<int32_t> dims;
    if (I.pg == nullptr && hier_op && !span_.empty() && !first.all_dims) {
      for (size_t d = 0; d < span_.size(); ++d) {
        const bool involved = !info.involved_dim || (d < info.involved_dim->size() && (*info.involved_dim)[d]);
        const bool configured = list.empty() || d < list.size();
        if (involved && configured && span_[d] > 1) dims.push_back(static_cast<int32_t>(d));
      }
    }
    auto algo_of = [&](int32_t d) {
      return d < static_cast<int32_t>(list.size()) ? list[static_cast<size_t>(d)].algo : first.algo;
    };
    // Members per subgroup along dimension d: the ranks the workload puts there (fewer than the
    // dimension's NPUs when the network has idle NPUs).
    auto npus = [&](int32_t d) { return span_[static_cast<size_t>(d)]; };
    if (dims.size() <= 1 || I.type == ChakraProtoMsg::BARRIER) {
      // Flat: one phase over the whole group (or the single involved dimension).
      if (dims.size() == 1) {
        add_phase(I, op, algo_of(dims[0]), dims[0], npus(dims[0]), true, 1, 1);
      } else {
        add_phase(I, op, first.algo, 0, I.n, false, 1, 1);
      }
      return;
    }
    // All-gather runs from the last dimension to the first, the mirror of reduce-scatter (ASTRA-sim's
    // order: the least data crosses the outer, slower dimensions); every other collective first to last.
    if (op == PhaseOp::kAllGather) std::reverse(dims.begin(), dims.end());
    const bool local_bw = options_.system.collective_optimization == CollectiveOptimization::kLocalBwAware;
    uint64_t div = 1, mul = 1;
    switch (op) {
      case PhaseOp::kAllReduce:
        if (local_bw) {
          for (size_t j = 0; j + 1 < dims.size(); ++j) {
            add_phase(I, PhaseOp::kReduceScatter, algo_of(dims[j]), dims[j], npus(dims[j]), true, 1, div);
            div *= static_cast<uint64_t>(npus(dims[j]));
          }
          add_phase(I, PhaseOp::kAllReduce, algo_of(dims.back()), dims.back(), npus(dims.back()), true, 1, div);
          for (size_t j = dims.size() - 1; j-- > 0;) {
            add_phase(I, PhaseOp::kAllGather, algo_of(dims[j]), dims[j], npus(dims[j]), true, 1, div);
            div /= static_cast<uint64_t>(npus(dims[j]));
          }
        } else {
          for (int32_t d : dims) add_phase(I, PhaseOp::kAllReduce, algo_of(d), d, npus(d), true, 1, 1);
        }
        break;
      case PhaseOp::kReduceScatter:
        for (int32_t d : dims) {
          add_phase(I, op, algo_of(d), d, npus(d), true, 1, div);
          div *= static_cast<uint64_t>(npus(d));
        }
        break;
      case PhaseOp::kAllGather:
        for (int32_t d : dims) {
          add_phase(I, op, algo_of(d), d, npus(d), true, mul, 1);
          mul *= static_cast<uint64_t>(npus(d));
        }
        break;
      default:
        for (int32_t d : dims) add_phase(I, op, algo_of(d), d, npus(d), true, 1, 1);
        break;
    }
  }

  int32_t member_rank(const Instance& I, int32_t m) const {
    return I.pg == nullptr ? m : static_cast<int32_t>(I.pg->ranks[static_cast<size_t>(m)]);
  }
  int32_t member_of(const Instance& I, int32_t rank) const {
    if (I.pg == nullptr) return rank;
    const auto& v = I.pg->ranks;
    const auto it = std::lower_bound(v.begin(), v.end(), rank);
    if (it == v.end() || *it != rank) return -1;
    return static_cast<int32_t>(it - v.begin());
  }

  uint64_t chunk_bytes(const Instance& I, uint32_t c) const {
    return I.bytes / I.chunks + (c < I.bytes % I.chunks ? 1 : 0);
  }
  uint64_t phase_bytes(const Instance& I, const Phase& P, uint32_t c) const {
    return chunk_bytes(I, c) * P.mul / P.div;
  }
  PhaseSchedule schedule_of(const Instance& I, const Phase& P, uint32_t c) const {
    return PhaseSchedule(P.op, P.algo, P.n, phase_bytes(I, P, c), 0, static_cast<int>(c & 1));
  }
  // Position of instance member m in phase P, and the instance member of phase position x.
  int32_t phase_index(const Phase& P, int32_t m) const {
    if (!P.hier) return m;
    const auto d = static_cast<size_t>(P.dim);
    return (m / strides_[d]) % P.n;
  }
  int32_t phase_member(const Phase& P, int32_t m, int32_t x) const {
    if (!P.hier) return x;
    const auto d = static_cast<size_t>(P.dim);
    return m - phase_index(P, m) * strides_[d] + x * strides_[d];
  }
  int32_t subgroup_of(const Phase& P, int32_t m) const { return P.hier ? phase_member(P, m, 0) : 0; }

  uint32_t group_index(const std::string& name) {
    auto it = group_ids_.find(name);
    if (it != group_ids_.end()) return it->second;
    const auto id = static_cast<uint32_t>(group_ids_.size());
    group_ids_.emplace(name, id);
    return id;
  }

  void issue_collective(int32_t r, const Node& node) {
    RankState& R = ranks_[static_cast<size_t>(r)];
    const auto info = traces::comm_info(node);
    if (!info.collective) {
      if (info.raw_comm_type) {
        throw traces::TraceError(where(r, node), fmt::format("COMM_COLL_NODE with unknown comm_type {}",
                                                             *info.raw_comm_type));
      }
      ++cpu_colls_;
      finish_node(r, node, engine_.now(), "comm", -1, 0);
      return;
    }
    // The group and the place in its file order were found when the node was read (loaded()).
    const auto seq_it = R.coll_seq.find(&node);
    if (seq_it == R.coll_seq.end()) {
      throw traces::TraceError(
          where(r, node),
          groups_.find(info.pg) == nullptr
              ? fmt::format("pg_name \"{}\" names no process group (none in the trace's METADATA_NODEs or the "
                            "comm-group file)",
                            info.pg)
              : fmt::format("pg_name \"{}\" names a group that a METADATA_NODE later in the file defines: define "
                            "process groups before the collectives that use them",
                            info.pg));
    }
    const LoadedCollective loaded_as = seq_it->second;
    R.coll_seq.erase(seq_it);
    const traces::ProcessGroup* pg = loaded_as.pg;
    const bool all = pg->ranks.empty() || pg->ranks.size() == ranks_.size();
    const uint64_t seq = loaded_as.seq;
    const uint64_t key = (static_cast<uint64_t>(loaded_as.group) << 40) | seq;
    const CollectiveType type = *info.collective;
    const uint64_t bytes = info.size.value_or(0);

    uint32_t slot;
    auto found = live_.find(key);
    if (found == live_.end()) {
      slot = new_instance();
      Instance& I = instances_[slot];
      I.live = true;
      I.type = type;
      I.bytes = bytes;
      I.pg = all ? nullptr : pg;
      I.n = all ? static_cast<int32_t>(ranks_.size()) : static_cast<int32_t>(pg->ranks.size());
      I.chunks = (bytes == 0 || type == ChakraProtoMsg::BARRIER)
                     ? 1u
                     : static_cast<uint32_t>(std::max<int64_t>(1, options_.system.preferred_dataset_splits));
      if (I.chunks > bytes && bytes > 0) I.chunks = static_cast<uint32_t>(bytes);
      if (type == ChakraProtoMsg::BARRIER) I.bytes = 0;
      build_phases(I, info);
      const auto n = static_cast<size_t>(I.n);
      I.issued.assign(n, Time{});
      I.node.assign(n, nullptr);
      I.chunks_done.assign(n, 0);
      if (options_.timeline != nullptr) I.track.assign(n, -1);
      I.members_issued = 0;
      I.members_done = 0;
      I.chunk_state.assign(I.chunks, kNone);
      I.key = key;
      I.first_rank = r;
      I.first_node_id = node.id();
      I.first_file = R.path;
      I.result = static_cast<uint32_t>(result_.collectives.size());
      CollectiveResult cr;
      cr.index = I.result;
      cr.type = traces::collective_name(type);
      cr.group = pg->name;
      cr.name = node.name();
      cr.node_id = node.id();
      cr.bytes = bytes;
      cr.members = I.n;
      std::string algos;
      for (const auto& P : I.phases) {
        if (!algos.empty()) algos += "+";
        algos += algo_name(P.algo);
      }
      cr.algorithm = algos;
      cr.chunks = I.chunks;
      cr.issued_first = engine_.now();
      result_.collectives.push_back(std::move(cr));
      live_.emplace(key, slot);
    } else {
      slot = found->second;
      const Instance& I = instances_[slot];
      if (I.type != type || I.bytes != (type == ChakraProtoMsg::BARRIER ? 0 : bytes)) {
        throw traces::TraceError(
            where(r, node),
            fmt::format("collective #{} of group \"{}\" on this rank is {} of {} bytes, but rank {} issued it as "
                        "{} of {} bytes (node {} in {}): members must issue the same collectives in the same order",
                        seq, pg->name, traces::collective_name(type), bytes, I.first_rank,
                        traces::collective_name(I.type), I.bytes, I.first_node_id, I.first_file));
      }
    }
    Instance& I = instances_[slot];
    const int32_t m = member_of(I, r);
    if (m < 0) {
      throw traces::TraceError(where(r, node), fmt::format("rank {} issues a collective of group \"{}\", which it is "
                                                           "not a member of",
                                                           r, pg->name));
    }
    I.node[static_cast<size_t>(m)] = &node;
    I.issued[static_cast<size_t>(m)] = engine_.now();
    if (options_.timeline != nullptr) I.track[static_cast<size_t>(m)] = take_track(R);
    ++I.members_issued;
    result_.collectives[I.result].issued_last = engine_.now();
    account(R);
    ++R.comm_active;
    if (I.members_issued < static_cast<uint32_t>(I.n)) return;
    // Every member has issued it: its chunks join the first phase's dimension queue, newest collective
    // first under LIFO, and every member is offered them.
    const auto d = static_cast<size_t>(I.phases.front().dim);
    I.queued_phase.assign(I.chunks, 1);
    auto& q = dimq_[d].unstarted;
    const SchedulingPolicy policy = options_.system.scheduling_policy;
    if (policy == SchedulingPolicy::kLifo) {
      for (uint32_t c = I.chunks; c-- > 0;) q.push_front(Entry{slot, c, 0, I.gen});
    } else if (policy == SchedulingPolicy::kExplicit) {
      // Higher comm_priority first; equal priorities in issue order.
      I.priority = info.priority.value_or(0);
      auto at = std::find_if(q.begin(), q.end(), [&](const Entry& e) {
        return e.phase == 0 && instances_[e.inst].priority < I.priority;
      });
      for (uint32_t c = 0; c < I.chunks; ++c) at = std::next(q.insert(at, Entry{slot, c, 0, I.gen}));
    } else {
      for (uint32_t c = 0; c < I.chunks; ++c) q.push_back(Entry{slot, c, 0, I.gen});
    }
    for (int32_t mm = 0; mm < I.n; ++mm) dispatch_slots(member_rank(I, mm), static_cast<int32_t>(d));
  }

  // Chunk phases start on every rank in ONE order per dimension, so ranks never wait on each other in
  // a cycle (each holding a stream for a chunk the other has not started): a phase some rank has
  // started ("started", in the order of first start) must be started next by every other member; only
  // then may a rank take a phase nobody has started ("unstarted", in scheduling-policy order). This is
  // ASTRA-sim's rule too: it schedules streams on all NPUs at once.
  bool ready_for(int32_t r, const Entry& e) {
    Instance& I = instances_[e.inst];
    if (I.gen != e.gen) return false;
    const int32_t m = member_of(I, r);
    if (m < 0) return false;
    const uint32_t cs = I.chunk_state[e.chunk];
    const uint8_t at = cs == kNone ? 0 : chunks_[cs].phase[static_cast<size_t>(m)];
    return at == e.phase;
  }

  void dispatch_slots(int32_t r, int32_t dim) {
    RankState& R = ranks_[static_cast<size_t>(r)];
    auto& Q = dimq_[static_cast<size_t>(dim)];
    auto& free = R.free_slots[static_cast<size_t>(dim)];
    size_t& cur = R.cursor[static_cast<size_t>(dim)];
    while (free > 0) {
      // Phases others have started, in order: this rank's next one must be the first it takes part in.
      bool waiting = false, took = false;
      while (cur < Q.base + Q.started.size()) {
        const Entry e = Q.started[cur - Q.base];
        if (instances_[e.inst].gen != e.gen || member_of(instances_[e.inst], r) < 0) {
          ++cur;
          continue;
        }
        if (!ready_for(r, e)) {
          waiting = true;  // its previous phase (on another dimension) is not done here yet
          break;
        }
        ++cur;
        --free;
        start_phase(r, e.inst, e.chunk);
        took = true;
        break;
      }
      if (waiting) return;
      if (took || cur < Q.base + Q.started.size()) continue;
      // Nothing started is pending here: take the first unstarted phase this rank can start now.
      auto it = std::find_if(Q.unstarted.begin(), Q.unstarted.end(), [&](const Entry& e) { return ready_for(r, e); });
      if (it == Q.unstarted.end()) return;
      const Entry e = *it;
      Q.unstarted.erase(it);
      Q.started.push_back(e);
      ++cur;
      --free;
      compact(Q, dim);
      start_phase(r, e.inst, e.chunk);
      // The other members find it in `started`.
      Instance& I = instances_[e.inst];
      for (int32_t mm = 0; mm < I.n; ++mm) {
        const int32_t other = member_rank(I, mm);
        if (other != r) dispatch_slots(other, dim);
      }
      return;
    }
  }

  // Drops the prefix of `started` that every rank has passed, now and then.
  void compact(DimQueue& Q, int32_t dim) {
    if (Q.started.size() < 4096) return;
    size_t low = Q.base + Q.started.size();
    for (auto& R : ranks_) {
      size_t& cur = R.cursor[static_cast<size_t>(dim)];
      cur = std::max(cur, Q.base);
      low = std::min(low, cur);
    }
    if (low - Q.base < Q.started.size() / 2) return;
    Q.started.erase(Q.started.begin(), Q.started.begin() + static_cast<std::ptrdiff_t>(low - Q.base));
    Q.base = low;
  }

  ChunkState& chunk_state(Instance& I, uint32_t c) {
    uint32_t& cs = I.chunk_state[c];
    if (cs == kNone) {
      if (free_chunk_ != kNone) {
        cs = free_chunk_;
        free_chunk_ = chunks_[cs].next_free;
      } else {
        cs = static_cast<uint32_t>(chunks_.size());
        chunks_.emplace_back();
      }
      ChunkState& C = chunks_[cs];
      const auto n = static_cast<size_t>(I.n);
      // Closed-form phases never count arrivals: only message-by-message phases need the table.
      const bool messages = std::any_of(I.phases.begin(), I.phases.end(), [](const Phase& P) { return !P.closed_form; });
      C.arrivals.assign(messages ? n * I.total_steps : 0, 0);
      C.step.assign(n, 0);
      C.phase.assign(n, 0);
      C.waiting.assign(n, 0);
      C.start.assign(n, Time{});
      C.begin.assign(n, Time{});
      C.sub_started.assign(I.phases.size() * n, 0);
      C.members_done = 0;
    }
    return chunks_[cs];
  }

  void start_phase(int32_t r, uint32_t inst, uint32_t chunk) {
    Instance& I = instances_[inst];
    const int32_t m = member_of(I, r);
    ChunkState& C = chunk_state(I, chunk);
    const auto mi = static_cast<size_t>(m);
    const Phase& P = I.phases[C.phase[mi]];
    C.step[mi] = 0;
    C.start[mi] = engine_.now();
    if (P.closed_form) {
      const auto sub = static_cast<size_t>(C.phase[mi]) * static_cast<size_t>(I.n) +
                       static_cast<size_t>(subgroup_of(P, m));
      if (++C.sub_started[sub] == static_cast<uint32_t>(P.n)) evaluate_closed_form(inst, chunk, C, P, m);
      return;
    }
    if (P.steps == 0) {
      phase_end(r, inst, chunk, m);
      return;
    }
    step_begin(r, inst, chunk, m, engine_.now() + ep_);
  }

  Duration reduce_time(uint64_t bytes) const { return mem_rate_.ser(3 * bytes); }

  // Message slices in the timeline stop at options_.timeline_message_limit (a 1024-rank run has
  // hundreds of millions of messages); the report then says how many were left out.
  bool take_message_slice() {
    if (message_slices_ < options_.timeline_message_limit) {
      ++message_slices_;
      return true;
    }
    ++message_slices_dropped_;
    return false;
  }
  // Whether a ring phase evaluated in closed form should write its messages (message by message, each
  // through take_message_slice, up to the limit) or skip them all (the tight loop) once the limit is reached.
  bool message_slices_wanted(const Phase& P, const PhaseSchedule& S) {
    if (options_.timeline == nullptr) return false;
    if (message_slices_ < options_.timeline_message_limit) return true;
    message_slices_dropped_ += static_cast<uint64_t>(P.n) * S.steps();
    return false;
  }

  uint64_t flow_of(const Instance& I, uint32_t chunk) const { return (static_cast<uint64_t>(I.result) << 20) ^ chunk; }

  // Member m begins its current step at `t` (>= now): its sends are handed to the fabric with ready
  // time t, so a step needs no event of its own; steps whose receives are all in are taken at once.
  // The member then waits for a delivery, or its phase ends at the last step's end (an event if later).
  void step_begin(int32_t r, uint32_t inst, uint32_t chunk, int32_t m, Time t) {
    Instance& I = instances_[inst];
    ChunkState& C = chunks_[I.chunk_state[chunk]];
    const auto mi = static_cast<size_t>(m);
    const Phase& P = I.phases[C.phase[mi]];
    const PhaseSchedule S = schedule_of(I, P, chunk);
    const int32_t x = phase_index(P, m);
    CollectiveResult& cr = result_.collectives[I.result];
    for (;;) {
      const uint32_t s = C.step[mi];
      if (s == P.steps) {
        if (t == engine_.now()) {
          phase_end(r, inst, chunk, m);
        } else {
          schedule(t, Action{ActionKind::kPhaseEnd, r, inst, chunk, m, kNone});
        }
        return;
      }
      const uint32_t ns = S.num_sends(x, s);
      for (uint32_t k = 0; k < ns; ++k) {
        const ScheduledSend sd = S.send(x, s, k);
        const int32_t peer = phase_member(P, m, sd.peer);
        const uint32_t id = new_msg();
        Msg& M = msgs_[id];
        M.kind = MsgKind::kColl;
        M.inst = inst;
        M.chunk = chunk;
        M.member = peer;
        M.gstep = P.step_offset + sd.recv_step;
        M.src = r;
        M.dst = member_rank(I, peer);
        M.bytes = sd.bytes;
        M.sent = t;
        M.result = I.result;
        ++cr.messages;
        cr.message_bytes += sd.bytes;
        ++result_.messages;
        result_.message_bytes += sd.bytes;
        fabric_.send(Message{id, M.src, M.dst, M.bytes, flow_of(I, chunk), static_cast<uint32_t>(I.result)}, t);
      }
      const uint32_t nr = S.num_recvs(x, s);
      if (nr == 0) {
        ++C.step[mi];
        continue;
      }
      // Receives counted so far arrived at or before now <= t, so the step ends at t + ep + reduction.
      if (C.arrivals[mi * I.total_steps + P.step_offset + s] >= nr) {
        ++C.step[mi];
        t = t + ep_ + reduce_time(S.reduce_bytes(x, s));
        continue;
      }
      C.waiting[mi] = 1;
      C.begin[mi] = t;
      return;
    }
  }

  void coll_delivered(uint32_t id) {
    const Msg M = msgs_[id];
    free_msg(id);
    if (options_.timeline != nullptr && take_message_slice()) {
      options_.timeline->message_slice(M.src, M.dst, M.bytes, M.sent, engine_.now(), M.result);
    }
    Instance& I = instances_[M.inst];
    ChunkState& C = chunks_[I.chunk_state[M.chunk]];
    const auto mi = static_cast<size_t>(M.member);
    const uint16_t got = ++C.arrivals[mi * I.total_steps + M.gstep];
    if (C.waiting[mi] == 0) return;
    const Phase& P = I.phases[C.phase[mi]];
    const uint32_t s = C.step[mi];
    if (P.step_offset + s != M.gstep) return;
    const PhaseSchedule S = schedule_of(I, P, M.chunk);
    const int32_t x = phase_index(P, M.member);
    if (got < S.num_recvs(x, s)) return;
    C.waiting[mi] = 0;
    ++C.step[mi];
    const Time end = std::max(C.begin[mi], engine_.now()) + ep_ + reduce_time(S.reduce_bytes(x, s));
    step_begin(M.dst, M.inst, M.chunk, M.member, end);
  }

  // All members of a subgroup have started phase P of a chunk: their whole schedule in one pass.
  // begin[x] is when position x begins its current step (sends leave then); a step with receives ends
  // at max(begin, last arrival) + endpoint delay + reduction, one without ends at once: exactly what
  // step_begin / coll_delivered do event by event.
  void evaluate_closed_form(uint32_t inst, uint32_t chunk, ChunkState& C, const Phase& P, int32_t any_member) {
    Instance& I = instances_[inst];
    const PhaseSchedule S = schedule_of(I, P, chunk);
    const auto n = static_cast<size_t>(P.n);
    begin_.resize(n);
    arrive_.resize(n);
    rank_of_.resize(n);
    member_at_.resize(n);
    for (size_t x = 0; x < n; ++x) {
      const int32_t m = phase_member(P, any_member, static_cast<int32_t>(x));
      member_at_[x] = m;
      rank_of_[x] = member_rank(I, m);
      begin_[x] = C.start[static_cast<size_t>(m)] + (P.steps > 0 ? ep_ : Duration::zero());
    }
    CollectiveResult& cr = result_.collectives[I.result];
    const uint64_t flow = flow_of(I, chunk);
    uint64_t messages = 0, bytes = 0;
    if (P.algo == CollectiveAlgo::kRing && !message_slices_wanted(P, S)) {
      ring_closed_form(S, P, flow, messages, bytes);
    } else {
      general_closed_form(I, S, P, flow, messages, bytes);
    }
    cr.messages += messages;
    cr.message_bytes += bytes;
    result_.messages += messages;
    result_.message_bytes += bytes;
    ++result_.collectives_closed_form;
    for (size_t x = 0; x < n; ++x) {
      schedule(begin_[x], Action{ActionKind::kPhaseEnd, rank_of_[x], inst, chunk, member_at_[x], kNone});
    }
  }

  // The ring (every step: position x sends the same size to x+1 and receives from x-1) in a tight
  // loop: the message delays of the n ring edges are computed once, not once per step.
  void ring_closed_form(const PhaseSchedule& S, const Phase& P, uint64_t flow, uint64_t& messages, uint64_t& bytes) {
    const size_t n = static_cast<size_t>(P.n);
    const uint64_t msg = S.send(0, 0, 0).bytes;
    edge_ps_.resize(n);
    for (size_t x = 0; x < n; ++x) {
      edge_ps_[x] = analytical_->delay(Message{0, rank_of_[x], rank_of_[(x + 1) % n], msg, flow}).ps();
    }
    begin_ps_.resize(n);
    for (size_t x = 0; x < n; ++x) begin_ps_[x] = begin_[x].ps();
    uint64_t* b = begin_ps_.data();
    const uint64_t* d = edge_ps_.data();
    const uint64_t ep = ep_.ps();
    messages = static_cast<uint64_t>(P.steps) * n;
    bytes = messages * msg;
    if (std::all_of(edge_ps_.begin(), edge_ps_.end(), [&](uint64_t v) { return v == edge_ps_[0]; })) {
      ring_uniform_closed_form(S, P.steps);
      return;
    }
    for (uint32_t s = 0; s < P.steps; ++s) {
      const uint64_t after = ep + reduce_time(S.reduce_bytes(0, s)).ps();
      // new b[x] = max(b[x], b[x-1] + d[x-1]) + after, from the old b[x-1]: walk downwards.
      const uint64_t last_arrival = b[n - 1] + d[n - 1];
      for (size_t x = n - 1; x > 0; --x) b[x] = std::max(b[x], b[x - 1] + d[x - 1]) + after;
      b[0] = std::max(b[0], last_arrival) + after;
    }
    for (size_t x = 0; x < n; ++x) begin_[x] = Time::from_ps(b[x]);
  }

  // The same recurrence when every ring edge has the same delay d, in O(n) instead of O(n x steps).
  // Unrolling b_x(s+1) = max(b_x(s), b_{x-1}(s) + d) + a_s (a_s added to every position alike) gives
  //   b_x(S) = sum_{s<S} a_s + max_{0 <= j <= S} (b_{x-j}(0) + j d)    (positions mod n);
  // j and j + n name the same start, the larger j adding a whole lap (n d >= 0), so only the last n
  // values of j count: j in [max(0, S-n+1), S]. With y = x - j (not reduced mod n) the term is
  // x d + f(y), f(y) = b_{y mod n}(0) - y d, and as x goes 0..n-1 the window of y slides by one: a
  // sliding-window maximum (monotonic deque). Exact integer arithmetic, so the result equals the
  // step-by-step loop to the picosecond.
  void ring_uniform_closed_form(const PhaseSchedule& S, uint32_t steps) {
    const auto n = static_cast<int64_t>(begin_ps_.size());
    const auto d = static_cast<i128>(edge_ps_[0]);
    uint64_t total_after = 0;
    for (uint32_t s = 0; s < steps; ++s) total_after += ep_.ps() + reduce_time(S.reduce_bytes(0, s)).ps();
    const auto st = static_cast<int64_t>(steps);
    const int64_t lo = std::max<int64_t>(0, st - n + 1);
    auto f = [&](int64_t y) {
      const int64_t k = ((y % n) + n) % n;
      return static_cast<i128>(begin_ps_[static_cast<size_t>(k)]) - static_cast<i128>(y) * d;
    };
    // window for x: y in [x - st, x - lo]
    window_.clear();
    window_head_ = 0;
    auto push = [&](int64_t y) {
      const i128 v = f(y);
      while (window_.size() > window_head_ && window_.back().second <= v) window_.pop_back();
      window_.emplace_back(y, v);
    };
    for (int64_t y = -st; y <= -lo; ++y) push(y);
    for (int64_t x = 0; x < n; ++x) {
      if (x > 0) push(x - lo);
      while (window_[window_head_].first < x - st) ++window_head_;
      const i128 best = window_[window_head_].second + static_cast<i128>(x) * d;
      begin_[static_cast<size_t>(x)] = Time::from_ps(static_cast<uint64_t>(best) + total_after);
    }
  }

  void general_closed_form(const Instance& I, const PhaseSchedule& S, const Phase& P, uint64_t flow, uint64_t& messages,
                           uint64_t& bytes) {
    const auto n = static_cast<size_t>(P.n);
    for (uint32_t s = 0; s < P.steps; ++s) {
      for (size_t x = 0; x < n; ++x) arrive_[x] = begin_[x];
      for (size_t x = 0; x < n; ++x) {
        const auto xi = static_cast<int32_t>(x);
        const uint32_t ns = S.num_sends(xi, s);
        for (uint32_t k = 0; k < ns; ++k) {
          const ScheduledSend sd = S.send(xi, s, k);
          const auto peer = static_cast<size_t>(sd.peer);
          const Time at = begin_[x] + analytical_->delay(Message{0, rank_of_[x], rank_of_[peer], sd.bytes, flow});
          if (options_.timeline != nullptr && take_message_slice()) {
            options_.timeline->message_slice(rank_of_[x], rank_of_[peer], sd.bytes, begin_[x], at, I.result);
          }
          arrive_[peer] = std::max(arrive_[peer], at);
          ++messages;
          bytes += sd.bytes;
        }
      }
      for (size_t x = 0; x < n; ++x) {
        const auto xi = static_cast<int32_t>(x);
        if (S.num_recvs(xi, s) > 0) begin_[x] = arrive_[x] + ep_ + reduce_time(S.reduce_bytes(xi, s));
      }
    }
  }

  void phase_end(int32_t r, uint32_t inst, uint32_t chunk, int32_t m) {
    Instance& I = instances_[inst];
    ChunkState& C = chunks_[I.chunk_state[chunk]];
    const auto mi = static_cast<size_t>(m);
    const int32_t dim = I.phases[C.phase[mi]].dim;
    RankState& R = ranks_[static_cast<size_t>(r)];
    ++R.free_slots[static_cast<size_t>(dim)];
    ++C.phase[mi];
    if (C.phase[mi] < I.phases.size()) {
      const uint8_t next = C.phase[mi];
      const int32_t next_dim = I.phases[next].dim;
      if (I.queued_phase[chunk] <= next) {  // the first member to get here queues the next phase
        I.queued_phase[chunk] = static_cast<uint8_t>(next + 1);
        dimq_[static_cast<size_t>(next_dim)].unstarted.push_back(Entry{inst, chunk, next, I.gen});
      }
      dispatch_slots(r, next_dim);
      if (next_dim != dim) dispatch_slots(r, dim);
      return;
    }
    // The chunk is done on this member.
    if (++C.members_done == static_cast<uint32_t>(I.n)) {
      C.next_free = free_chunk_;
      free_chunk_ = I.chunk_state[chunk];
      I.chunk_state[chunk] = kNone;
    }
    if (++I.chunks_done[mi] == I.chunks) member_done(r, inst, m);
    dispatch_slots(r, dim);
  }

  void member_done(int32_t r, uint32_t inst, int32_t m) {
    Instance& I = instances_[inst];
    const auto mi = static_cast<size_t>(m);
    const Node* node = I.node[mi];
    const Time issued = I.issued[mi];
    const int32_t track = options_.timeline != nullptr ? I.track[mi] : -1;
    RankState& R = ranks_[static_cast<size_t>(r)];
    account(R);
    --R.comm_active;
    if (options_.timeline != nullptr) release_track(R, track);
    CollectiveResult& cr = result_.collectives[I.result];
    const uint64_t bytes = I.bytes;
    if (++I.members_done == static_cast<uint32_t>(I.n)) {
      cr.finished = engine_.now();
      compute_bandwidths(cr);
      live_.erase(I.key);
      I.live = false;
      I.next_free = free_inst_;
      free_inst_ = inst;
    }
    finish_node(r, *node, issued, "collective", track, bytes);
  }

  // ---- pools and events -----------------------------------------------------------------------------
  uint32_t new_instance() {
    if (free_inst_ != kNone) {
      const uint32_t s = free_inst_;
      free_inst_ = instances_[s].next_free;
      ++instances_[s].gen;
      return s;
    }
    instances_.emplace_back();
    return static_cast<uint32_t>(instances_.size() - 1);
  }
  uint32_t new_msg() {
    if (free_msg_ != kNone) {
      const uint32_t s = free_msg_;
      free_msg_ = msgs_[s].next_free;
      return s;
    }
    msgs_.emplace_back();
    return static_cast<uint32_t>(msgs_.size() - 1);
  }
  void free_msg(uint32_t id) {
    msgs_[id].next_free = free_msg_;
    free_msg_ = id;
  }
  void schedule(Time at, const Action& a) {
    uint32_t s;
    if (free_action_ != kNone) {
      s = free_action_;
      free_action_ = actions_[s].next_free;
      actions_[s] = a;
    } else {
      s = static_cast<uint32_t>(actions_.size());
      actions_.push_back(a);
    }
    engine_.at(at, *this, s);
  }

  void on_event(uint64_t arg) override {
    const auto s = static_cast<uint32_t>(arg);
    const Action a = actions_[s];
    actions_[s].next_free = free_action_;
    free_action_ = s;
    switch (a.kind) {
      case ActionKind::kCompDone: compute_done(a.rank, a.member); break;
      case ActionKind::kPhaseEnd: phase_end(a.rank, a.inst, a.chunk, a.member); break;
    }
  }

  void on_delivered(uint64_t id, Time) override {
    const auto slot = static_cast<uint32_t>(id);
    if (msgs_[slot].kind == MsgKind::kColl) {
      coll_delivered(slot);
    } else {
      p2p_delivered(slot);
    }
  }

  void describe_stuck_rank(int32_t r, std::vector<std::string>& out) const {
    const RankState& R = ranks_[static_cast<size_t>(r)];
    std::string what;
    if (R.comm_active > 0) what = fmt::format("{} communication node(s) in flight", R.comm_active);
    const size_t held = R.resolver->in_flight();
    out.push_back(fmt::format("rank {} ({}) did not finish: {} nodes walked, {} issued and not finished{}{}", r,
                              R.path, R.res.nodes, held, what.empty() ? "" : "; ", what));
  }

  Fabric& fabric_;
  Engine& engine_;
  NetworkConfig network_;
  traces::ProcessGroups groups_;
  WalkerOptions options_;
  const AnalyticalFabric* analytical_;  // the fabric's closed-form capability, when options_.closed_form
  std::vector<int32_t> strides_;
  std::vector<int32_t> span_;  // plan_default_group_span
  int64_t streams_ = 1;
  Rate ops_rate_ = Rate::from_ps_per_byte_q32(0);
  Rate mem_rate_ = Rate::from_ps_per_byte_q32(0);
  bool roofline_ready_ = false;
  Duration ep_;

  std::vector<RankState> ranks_;
  RunResult result_;
  std::vector<Instance> instances_;
  uint32_t free_inst_ = kNone;
  std::unordered_map<uint64_t, uint32_t> live_;
  std::map<std::string, uint32_t> group_ids_;
  std::vector<ChunkState> chunks_;
  uint32_t free_chunk_ = kNone;
  std::vector<DimQueue> dimq_;
  std::vector<Msg> msgs_;
  uint32_t free_msg_ = kNone;
  std::vector<Action> actions_;
  uint32_t free_action_ = kNone;
  std::unordered_map<P2pKey, std::deque<PostedRecv>, P2pKeyHash> posted_;
  std::unordered_map<P2pKey, std::deque<ArrivedMsg>, P2pKeyHash> arrived_;
  std::set<std::string> algo_warnings_;
  uint64_t cpu_colls_ = 0;
  uint64_t missing_compute_ = 0;
  uint64_t roofline_by_duration_ = 0;  // roofline asked for, duration_micros used (no num_ops/tensor_size)
  uint64_t message_slices_ = 0, message_slices_dropped_ = 0;
  // closed-form scratch
  std::vector<Time> begin_, arrive_;
  std::vector<int32_t> rank_of_, member_at_;
  std::vector<uint64_t> begin_ps_, edge_ps_;
  std::vector<std::pair<int64_t, i128>> window_;
  size_t window_head_ = 0;

};

Walker::Walker(Fabric& fabric, const NetworkConfig& network, std::vector<std::string> rank_files,
               const traces::ProcessGroups& groups, WalkerOptions options)
    : impl_(std::make_unique<Impl>(fabric, network, std::move(rank_files), groups, std::move(options))) {}

Walker::~Walker() = default;

RunResult Walker::run() {
  return impl_->run();
}

}  // namespace fabemu::emu
