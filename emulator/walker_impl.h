// The rank walker's inside (internal to emulator/): per-rank state, the messages and events it has in
// flight, and the steps of a walk. Its methods live in four files: walker.cpp (set-up, the run loop,
// compute streams, time accounting), walker_p2p.cpp (SEND/RECV), walker_collectives.cpp (a
// collective from issue to its members' ends, message by message or in closed form) and
// walker_custom.cpp (a custom collective implementation's graph on one member). The parts it
// drives own the rest: collective_plan (phases), collective_table (collectives in flight),
// chunk_scheduler (streams per dimension), closed_form, walker_p2p (matching), custom_collective
// (custom implementations' graphs), run_diagnostics.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "emulator/chunk_scheduler.h"
#include "emulator/closed_form.h"
#include "emulator/custom_collective.h"
#include "emulator/nccl_semantics.h"
#include "emulator/collective_plan.h"
#include "emulator/collective_table.h"
#include "emulator/run_diagnostics.h"
#include "emulator/slot_pool.h"
#include "emulator/walker.h"
#include "emulator/walker_p2p.h"
#include "traces/collective_order.h"
#include "traces/error.h"
#include "traces/process_groups.h"
#include "traces/reader.h"
#include "traces/resolver.h"

namespace fabemu::emu {

class Walker::Impl final : public EventTarget, public DeliveryListener, public PhaseStarter {
 public:
  Impl(Fabric& fabric, const NetworkConfig& network, std::vector<std::string> files,
       const traces::ProcessGroups& groups, WalkerOptions options);
  RunResult run();

 private:
  using Node = traces::Node;

  // A collective as it was read (file order): its process group (as defined then), the group's index for
  // the walker's keys, and its place among the group's collectives in the rank's file.
  struct LoadedCollective {
    const traces::ProcessGroup* pg;
    uint32_t group;
    uint64_t seq;
  };

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
    // Collectives read and not yet issued: their group and place in the group's file order.
    std::unordered_map<const Node*, LoadedCollective> coll_seq;
    std::vector<uint8_t> comm_tracks;  // timeline: busy communication tracks
    bool pumping = false;
  };

  enum class ActionKind : uint8_t { kCompDone, kPhaseEnd, kMemberDone, kCustomComp };
  // An event of the walker's own.
  struct Action {
    ActionKind kind;
    int32_t rank;
    uint32_t inst;
    uint32_t chunk;
    int32_t member;  // instance member index; compute stream index for kCompDone
  };
  // kCustomComp: `inst` is the custom run, `chunk` the COMP node's index in its graph.

  // One member's walk of a custom collective's graph (walker_custom.cpp).
  struct CustomRun {
    uint32_t inst = 0;
    int32_t member = 0;
    int32_t rank = 0;
    uint32_t scope = 0;  // P2pKey::scope of its messages
    const CustomMember* plan = nullptr;
    std::vector<uint32_t> waiting;  // per node: dependencies not yet done
    std::vector<uint32_t> ready;    // nodes to issue
    size_t done = 0;
    bool pumping = false;
  };

  enum class MsgKind : uint8_t { kColl, kP2p };
  // A message handed to the fabric, by the id the fabric echoes back.
  struct Msg {
    MsgKind kind;
    uint32_t inst;       // kColl
    uint32_t chunk;      // kColl
    int32_t member;      // kColl: receiving instance member; kP2p: the sender's timeline track
    uint32_t gstep;      // kColl: receiver's global step
    int32_t src;
    int32_t dst;
    uint64_t bytes;
    Time sent;
    const Node* send_node;  // kP2p
    int64_t tag;            // kP2p
    uint32_t run;           // kP2p: the custom collective run of the SEND, kNoRun for the rank's own trace
    uint32_t scope;         // kP2p: P2pKey::scope
    uint64_t result;        // kColl: collective index, for the timeline
  };

  // ---- walker.cpp: set-up, the run, compute, accounting, events
  void set_up_compute_model();
  void check_custom_keys();
  void open_traces();
  WalkProgress progress() const;
  RunResult collect_results();
  void account(RankState& R);
  traces::Location where(int32_t rank, const Node& node) const;
  int32_t take_track(RankState& R);
  void release_track(RankState& R, int32_t track);
  void finish_node(int32_t r, const Node& node, Time start, const char* kind, int32_t track, uint64_t bytes);
  void loaded(int32_t r, const Node& node);
  void pump(int32_t r);
  void dispatch(int32_t r, const Node& node);
  Duration compute_time(const RankState& R, const Node& node);
  void start_compute(int32_t r, int s);
  void compute_done(int32_t r, int s);
  void schedule(Time at, const Action& a) { engine_.at(at, *this, actions_.acquire(a)); }
  void on_event(uint64_t arg) override;
  void on_delivered(uint64_t id, Time) override;

  // ---- walker_p2p.cpp (run: kNoRun for the rank's own trace, else the custom run the node belongs to)
  void issue_send(int32_t r, const Node& node, uint32_t run = kNoRun);
  void issue_recv(int32_t r, const Node& node, uint32_t run = kNoRun);
  int32_t p2p_peer(int32_t r, const Node& node, uint32_t run, bool send) const;
  void check_sizes(int32_t r, const Node& recv, uint64_t want, const ArrivedMsg& a);
  void p2p_delivered(uint32_t id);

  // ---- walker_custom.cpp
  void start_custom(int32_t r, uint32_t inst, int32_t m);
  void custom_pump(uint32_t run);
  void custom_issue(uint32_t run, uint32_t i);
  void custom_done(uint32_t run, const Node& node);
  int32_t custom_peer(uint32_t run, int64_t position) const;
  void p2p_node_done(int32_t r, uint32_t run, const Node& node, Time start, const char* kind, int32_t track,
                     uint64_t bytes);

  // ---- walker_collectives.cpp
  uint32_t group_index(const std::string& name);
  void issue_collective(int32_t r, const Node& node);
  LoadedCollective loaded_as(int32_t r, const Node& node, const traces::CommInfo& info);
  const MemberGrid* grid_of(const traces::ProcessGroup* pg);
  uint32_t open_collective(int32_t r, const Node& node, const traces::CommInfo& info, const LoadedCollective& lc,
                           uint64_t key);
  void check_same_collective(int32_t r, const Node& node, const Instance& I, const LoadedCollective& lc,
                             const traces::CommInfo& info);
  void start_phase(int32_t r, uint32_t inst, uint32_t chunk) override;
  void step_begin(int32_t r, uint32_t inst, uint32_t chunk, int32_t m, Time t);
  void coll_delivered(uint32_t id);
  void evaluate_closed_form(uint32_t inst, uint32_t chunk, ChunkState& C, const Phase& P, int32_t any_member);
  void phase_end(int32_t r, uint32_t inst, uint32_t chunk, int32_t m);
  void member_done(int32_t r, uint32_t inst, int32_t m);
  void describe_unfinished_collectives(RunResult& out) const;

  static uint64_t chunk_bytes(const Instance& I, uint32_t c) { return chunk_share(I.bytes, I.chunks, c); }
  static PhaseSchedule schedule_of(const Instance& I, const Phase& P, uint32_t c) {
    return phase_schedule(P, chunk_bytes(I, c), c);
  }
  static uint64_t flow_of(const Instance& I, uint32_t chunk) {
    return (static_cast<uint64_t>(I.result) << 20) ^ chunk;
  }

  Fabric& fabric_;
  Engine& engine_;
  NetworkConfig network_;
  traces::ProcessGroups groups_;
  WalkerOptions options_;
  PlanContext plan_;
  MemberGrid default_grid_;  // default_group_grid()
  std::unordered_map<const traces::ProcessGroup*, MemberGrid> group_grids_;  // group_grid(), as groups are met
  Rate ops_rate_ = Rate::from_ps_per_byte_q32(0);
  bool roofline_ready_ = false;
  StepCosts costs_;

  std::vector<RankState> ranks_;
  RunResult result_;
  CollectiveTable collectives_;
  std::map<std::string, uint32_t> group_ids_;
  traces::CollectiveOrder collective_order_;  // each collective's place in its group's file order
  ChunkScheduler scheduler_;
  std::optional<ClosedForm> closed_form_;  // with an AnalyticalFabric and options.closed_form
  std::optional<nccl::Semantics> nccl_;    // with options.nccl
  std::vector<Time> nccl_stream_free_;     // NCCL semantics: when each group's stream is free (by group index)
  std::vector<int32_t> member_at_;         // closed form: the instance member at each position
  SlotPool<Msg> msgs_;
  SlotPool<Action> actions_;
  P2pMatcher p2p_;
  CustomCollectives customs_;
  SlotPool<CustomRun> runs_;
  RunDiagnostics diagnostics_;
  MessageLog message_log_;
};

}  // namespace fabemu::emu
