// A collective from issue to its members' ends: matching the members' nodes by (group, file order),
// planning it (collective_plan), queueing its chunks (chunk_scheduler), then each chunk's phases on each
// member: message by message (a step's sends handed to the fabric, its receives counted as they are
// delivered) or, on a fabric with the closed-form capability, a whole phase at once (closed_form).
#include <fmt/format.h>

#include <algorithm>

#include "emulator/report_json.h"
#include "emulator/walker_impl.h"
#include "traces/attrs.h"

namespace fabemu::emu {

uint32_t Walker::Impl::group_index(const std::string& name) {
  auto it = group_ids_.find(name);
  if (it != group_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(group_ids_.size());
  group_ids_.emplace(name, id);
  return id;
}

void Walker::Impl::issue_collective(int32_t r, const Node& node) {
  RankState& R = ranks_[static_cast<size_t>(r)];
  const auto info = traces::comm_info(node);
  if (!info.collective) {
    if (info.raw_comm_type) {
      throw traces::TraceError(where(r, node), fmt::format("COMM_COLL_NODE with unknown comm_type {}",
                                                           *info.raw_comm_type));
    }
    ++diagnostics_.cpu_colls;
    finish_node(r, node, engine_.now(), "comm", -1, 0);
    return;
  }
  const LoadedCollective lc = loaded_as(r, node, info);
  const uint64_t key = (static_cast<uint64_t>(lc.group) << 40) | lc.seq;
  uint32_t slot = collectives_.find(key);
  if (slot == kNoSlot) {
    slot = open_collective(r, node, info, lc, key);
  } else {
    check_same_collective(r, node, collectives_[slot], lc, info);
  }
  Instance& I = collectives_[slot];
  const int32_t m = CollectiveTable::member_of(I, r);
  if (m < 0) {
    throw traces::TraceError(where(r, node), fmt::format("rank {} issues a collective of group \"{}\", which it is "
                                                         "not a member of",
                                                         r, lc.pg->name));
  }
  I.node[static_cast<size_t>(m)] = &node;
  I.issued[static_cast<size_t>(m)] = engine_.now();
  if (options_.timeline != nullptr) I.track[static_cast<size_t>(m)] = take_track(R);
  ++I.members_issued;
  result_.collectives[I.result].issued_last = engine_.now();
  account(R);
  ++R.comm_active;
  if (I.members_issued < static_cast<uint32_t>(I.n)) return;
  if (I.nccl_time) {
    // NCCL's semantics: the collectives of one communicator run one after another on its stream; every member
    // ends once the model's time has passed from the later of now and the stream's previous collective's end.
    if (nccl_stream_free_.size() <= lc.group) nccl_stream_free_.resize(lc.group + 1, Time{});
    Time& free = nccl_stream_free_[lc.group];
    const Time end = std::max(engine_.now(), free) + *I.nccl_time;
    free = end;
    for (int32_t k = 0; k < I.n; ++k) {
      schedule(end, Action{ActionKind::kMemberDone, CollectiveTable::member_rank(I, k), slot, 0, k});
    }
    return;
  }
  // Every member has issued it: its chunks join the first phase's dimension queue.
  I.priority = info.priority.value_or(0);
  scheduler_.enqueue_collective(slot, options_.system.scheduling_policy);
}

// The group and the place in its file order, found when the node was read (loaded()).
Walker::Impl::LoadedCollective Walker::Impl::loaded_as(int32_t r, const Node& node, const traces::CommInfo& info) {
  RankState& R = ranks_[static_cast<size_t>(r)];
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
  const LoadedCollective lc = seq_it->second;
  R.coll_seq.erase(seq_it);
  return lc;
}

// The grid of a collective's members: the default group's, or a smaller group's (computed once per group).
const MemberGrid* Walker::Impl::grid_of(const traces::ProcessGroup* pg) {
  if (pg == nullptr) return &default_grid_;
  if (!options_.hierarchical_groups) return nullptr;
  auto it = group_grids_.find(pg);
  if (it == group_grids_.end()) {
    it = group_grids_.emplace(pg, group_grid(network_, pg->name, pg->ranks, diagnostics_.algo_warnings)).first;
  }
  return &it->second;
}

// The first member to issue a collective makes its instance, its plan and its report entry.
uint32_t Walker::Impl::open_collective(int32_t r, const Node& node, const traces::CommInfo& info,
                                       const LoadedCollective& lc, uint64_t key) {
  const traces::ProcessGroup* pg = lc.pg;
  const bool all = pg->ranks.empty() || pg->ranks.size() == ranks_.size();
  const traces::CollectiveType type = *info.collective;
  const uint64_t bytes = info.size.value_or(0);
  const uint32_t slot = collectives_.open(key);
  Instance& I = collectives_[slot];
  I.type = type;
  I.bytes = type == ChakraProtoMsg::BARRIER ? 0 : bytes;
  I.pg = all ? nullptr : pg;
  I.n = all ? static_cast<int32_t>(ranks_.size()) : static_cast<int32_t>(pg->ranks.size());
  I.chunks = collective_chunks(type, bytes, options_.system.preferred_dataset_splits);
  I.nccl_time.reset();
  I.custom = customs_.has(type) ? customs_.find(type, I.n, I.bytes,
                                                fmt::format("node {} of rank {} in {}", node.id(), r,
                                                            ranks_[static_cast<size_t>(r)].path))
                                 : nullptr;
  std::optional<nccl::Choice> nccl_choice;
  if (nccl_ && I.custom == nullptr) {
    static const std::vector<int64_t> kAllRanks;
    nccl_choice = nccl_->choose(type, bytes, all ? kAllRanks : pg->ranks, I.n, diagnostics_.algo_warnings);
    if (nccl_choice) I.nccl_time = nccl_choice->time;
  }
  if (I.custom != nullptr) {
    // ASTRA-sim's rule: the whole collective in one chunk (preferred-dataset-splits does not apply), its graph
    // in one phase that holds a communication stream of the first dimension.
    I.chunks = 1;
    I.plan.phases.assign(1, Phase{PhaseOp{}, CollectiveAlgo::kRing, 0, I.n, 0, 1, 1, 0, 0, false});
    I.plan.total_steps = 0;
  } else if (I.nccl_time) {
    I.plan.phases.clear();
    I.plan.total_steps = 0;
  } else {
    plan_collective(CollectiveRequest{type, I.n, grid_of(all ? nullptr : pg), &info.involved_dim}, plan_, I.plan,
                    diagnostics_.algo_warnings);
  }
  const auto n = static_cast<size_t>(I.n);
  I.issued.assign(n, Time{});
  I.node.assign(n, nullptr);
  I.chunks_done.assign(n, 0);
  if (options_.timeline != nullptr) I.track.assign(n, -1);
  I.members_issued = 0;
  I.members_done = 0;
  I.chunk_state.assign(I.chunks, kNoSlot);
  I.first_rank = r;
  I.first_node_id = node.id();
  I.first_file = ranks_[static_cast<size_t>(r)].path;
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
  for (const auto& P : I.plan.phases) {
    if (!algos.empty()) algos += "+";
    algos += algo_name(P.algo);
  }
  cr.algorithm = I.custom != nullptr ? "custom" : algos;
  cr.chunks = I.chunks;
  if (I.nccl_time) {  // what NCCL's tuner picked, for the report and the summary
    cr.algorithm = fmt::format("nccl:{}/{}", nccl::algo_name(nccl_choice->algo), nccl::proto_name(nccl_choice->proto));
    cr.chunks = 1;
  }
  cr.issued_first = engine_.now();
  result_.collectives.push_back(std::move(cr));
  return slot;
}

void Walker::Impl::check_same_collective(int32_t r, const Node& node, const Instance& I, const LoadedCollective& lc,
                                         const traces::CommInfo& info) {
  const traces::CollectiveType type = *info.collective;
  const uint64_t bytes = info.size.value_or(0);
  if (I.type != type || I.bytes != (type == ChakraProtoMsg::BARRIER ? 0 : bytes)) {
    throw traces::TraceError(
        where(r, node),
        fmt::format("collective #{} of group \"{}\" on this rank is {} of {} bytes, but rank {} issued it as "
                    "{} of {} bytes (node {} in {}): members must issue the same collectives in the same order",
                    lc.seq, lc.pg->name, traces::collective_name(type), bytes, I.first_rank,
                    traces::collective_name(I.type), I.bytes, I.first_node_id, I.first_file));
  }
}

// Rank r has taken a stream for its current phase of `chunk`.
void Walker::Impl::start_phase(int32_t r, uint32_t inst, uint32_t chunk) {
  Instance& I = collectives_[inst];
  const int32_t m = CollectiveTable::member_of(I, r);
  ChunkState& C = collectives_.chunk(I, chunk);
  const auto mi = static_cast<size_t>(m);
  const Phase& P = I.plan.phases[C.phase[mi]];
  C.step[mi] = 0;
  C.start[mi] = engine_.now();
  if (I.custom != nullptr) {
    start_custom(r, inst, m);
    return;
  }
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
  step_begin(r, inst, chunk, m, engine_.now() + costs_.endpoint_delay);
}

// Member m begins its current step at `t` (>= now): its sends are handed to the fabric with ready
// time t, so a step needs no event of its own; steps whose receives are all in are taken at once.
// The member then waits for a delivery, or its phase ends at the last step's end (an event if later).
void Walker::Impl::step_begin(int32_t r, uint32_t inst, uint32_t chunk, int32_t m, Time t) {
  Instance& I = collectives_[inst];
  ChunkState& C = collectives_.started_chunk(I, chunk);
  const auto mi = static_cast<size_t>(m);
  const Phase& P = I.plan.phases[C.phase[mi]];
  const PhaseSchedule& S = C.schedules[C.phase[mi]];
  const int32_t x = phase_index(P, m);
  CollectiveResult& cr = result_.collectives[I.result];
  for (;;) {
    const uint32_t s = C.step[mi];
    if (s == P.steps) {
      if (t == engine_.now()) {
        phase_end(r, inst, chunk, m);
      } else {
        schedule(t, Action{ActionKind::kPhaseEnd, r, inst, chunk, m});
      }
      return;
    }
    const uint32_t ns = S.num_sends(x, s);
    for (uint32_t k = 0; k < ns; ++k) {
      const ScheduledSend sd = S.send(x, s, k);
      const int32_t peer = phase_member(P, m, sd.peer);
      const uint32_t id = msgs_.acquire();
      Msg& M = msgs_[id];
      M.kind = MsgKind::kColl;
      M.inst = inst;
      M.chunk = chunk;
      M.member = peer;
      M.gstep = P.step_offset + sd.recv_step;
      M.src = r;
      M.dst = CollectiveTable::member_rank(I, peer);
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
    if (C.arrivals[(P.step_offset + s) * static_cast<size_t>(I.n) + mi] >= nr) {
      ++C.step[mi];
      t = t + costs_.after_step(S.reduce_bytes(x, s));
      continue;
    }
    C.waiting[mi] = 1;
    C.begin[mi] = t;
    return;
  }
}

void Walker::Impl::coll_delivered(uint32_t id) {
  const Msg M = msgs_[id];
  msgs_.release(id);
  message_log_.delivered(M.src, M.dst, M.bytes, M.sent, engine_.now(), M.result);
  Instance& I = collectives_[M.inst];
  ChunkState& C = collectives_.started_chunk(I, M.chunk);
  const auto mi = static_cast<size_t>(M.member);
  const uint16_t got = ++C.arrivals[M.gstep * static_cast<size_t>(I.n) + mi];
  if (C.waiting[mi] == 0) return;
  const Phase& P = I.plan.phases[C.phase[mi]];
  const uint32_t s = C.step[mi];
  if (P.step_offset + s != M.gstep) return;
  const PhaseSchedule& S = C.schedules[C.phase[mi]];
  const int32_t x = phase_index(P, M.member);
  if (got < S.num_recvs(x, s)) return;
  C.waiting[mi] = 0;
  ++C.step[mi];
  const Time end = std::max(C.begin[mi], engine_.now()) + costs_.after_step(S.reduce_bytes(x, s));
  step_begin(M.dst, M.inst, M.chunk, M.member, end);
}

// All members of a subgroup have started phase P of a chunk: their whole schedule in one pass, each
// member's phase end an event.
void Walker::Impl::evaluate_closed_form(uint32_t inst, uint32_t chunk, ChunkState& C, const Phase& P,
                                        int32_t any_member) {
  Instance& I = collectives_[inst];
  const PhaseSchedule S = schedule_of(I, P, chunk);
  const auto n = static_cast<size_t>(P.n);
  ClosedForm& cf = *closed_form_;
  cf.resize(n);
  member_at_.resize(n);
  for (size_t x = 0; x < n; ++x) {
    const int32_t m = phase_member(P, any_member, static_cast<int32_t>(x));
    member_at_[x] = m;
    const Time begin = C.start[static_cast<size_t>(m)] + (P.steps > 0 ? costs_.endpoint_delay : Duration::zero());
    cf.set_position(x, CollectiveTable::member_rank(I, m), begin);
  }
  const ClosedForm::Totals totals = cf.run(S, P, flow_of(I, chunk), I.result, message_log_);
  CollectiveResult& cr = result_.collectives[I.result];
  cr.messages += totals.messages;
  cr.message_bytes += totals.bytes;
  result_.messages += totals.messages;
  result_.message_bytes += totals.bytes;
  ++result_.collectives_closed_form;
  for (size_t x = 0; x < n; ++x) {
    schedule(cf.end(x), Action{ActionKind::kPhaseEnd, cf.rank(x), inst, chunk, member_at_[x]});
  }
}

// Member m has ended its current phase of `chunk`: its stream is free, and its next phase (or the
// chunk's end, and perhaps the collective's end on it) follows.
void Walker::Impl::phase_end(int32_t r, uint32_t inst, uint32_t chunk, int32_t m) {
  Instance& I = collectives_[inst];
  ChunkState& C = collectives_.started_chunk(I, chunk);
  const auto mi = static_cast<size_t>(m);
  const int32_t dim = I.plan.phases[C.phase[mi]].dim;
  scheduler_.release_stream(r, dim);
  ++C.phase[mi];
  if (C.phase[mi] < I.plan.phases.size()) {
    const uint8_t next = C.phase[mi];
    const int32_t next_dim = I.plan.phases[next].dim;
    scheduler_.enqueue_phase_once(inst, chunk, next);
    scheduler_.dispatch(r, next_dim);
    if (next_dim != dim) scheduler_.dispatch(r, dim);
    return;
  }
  // The chunk is done on this member.
  if (++C.members_done == static_cast<uint32_t>(I.n)) collectives_.release_chunk(I, chunk);
  if (++I.chunks_done[mi] == I.chunks) member_done(r, inst, m);
  scheduler_.dispatch(r, dim);
}

void Walker::Impl::member_done(int32_t r, uint32_t inst, int32_t m) {
  Instance& I = collectives_[inst];
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
    collectives_.close(inst);
  }
  finish_node(r, *node, issued, "collective", track, bytes);
}

void Walker::Impl::describe_unfinished_collectives(RunResult& out) const {
  for (uint32_t i = 0; i < collectives_.size(); ++i) {
    const Instance& I = collectives_[i];
    if (!I.live) continue;
    std::vector<std::string> missing;
    for (int32_t m = 0; m < I.n; ++m) {
      if (I.node[static_cast<size_t>(m)] == nullptr) missing.push_back(std::to_string(CollectiveTable::member_rank(I, m)));
    }
    out.stuck.push_back(describe_unfinished(UnfinishedCollective{&out.collectives[I.result], I.first_rank,
                                                                 I.first_node_id, &I.first_file, I.members_issued,
                                                                 I.n, std::move(missing)}));
  }
}

}  // namespace fabemu::emu
