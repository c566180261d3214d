// The collectives in flight: one Instance per collective some member has issued and not every member
// has finished, found by its (group, place in the group's file order) key, and one ChunkState per chunk
// some member has started. Slots of both are pooled and reused; an Instance's generation tells a reused
// slot from the collective it held before.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <optional>
#include <vector>

#include "emulator/collective_plan.h"
#include "emulator/custom_collective.h"
#include "emulator/slot_pool.h"
#include "emulator/time.h"
#include "traces/attrs.h"
#include "traces/process_groups.h"

namespace fabemu::emu {

inline constexpr uint32_t kNoSlot = ~uint32_t{0};

struct Instance {
  uint32_t gen = 0;  // incremented each time the slot is reused (ChunkEntry::gen)
  bool live = false;
  traces::CollectiveType type{};
  uint64_t bytes = 0;
  const traces::ProcessGroup* pg = nullptr;  // nullptr: all ranks
  int32_t n = 0;
  CollectivePlan plan;
  // NCCL's semantics: the collective's time from its last member's issue (nccl_semantics.h); else nullopt.
  std::optional<Duration> nccl_time;
  // A custom implementation (system.json's "*-implementation-custom"): its graphs run instead of the plan's
  // algorithm, in one chunk and one phase (walker_custom.cpp); nullptr: the native algorithm.
  const CustomAlgorithm* custom = nullptr;
  uint32_t chunks = 1;
  std::vector<Time> issued;
  std::vector<const traces::Node*> node;
  std::vector<uint32_t> chunks_done;
  std::vector<int32_t> track;
  uint32_t members_issued = 0;
  uint32_t members_done = 0;
  std::vector<uint32_t> chunk_state;  // per chunk: its ChunkState slot, kNoSlot before it starts
  std::vector<uint8_t> queued_phase;  // per chunk: phases queued so far
  int64_t priority = 0;               // comm_priority (scheduling-policy EXPLICIT)
  uint32_t result = 0;                // index in RunResult::collectives
  uint64_t key = 0;
  int32_t first_rank = 0;
  uint64_t first_node_id = 0;
  std::string first_file;
};

// Where each member of a chunk is in the chunk's phases and steps.
struct ChunkState {
  // [global step * members + member]: the members of one step side by side, as a ring's deliveries come.
  std::vector<uint16_t> arrivals;
  std::vector<PhaseSchedule> schedules;  // per phase: its schedule for this chunk (phase_schedule())
  std::vector<uint32_t> step;
  std::vector<uint8_t> phase;
  std::vector<uint8_t> waiting;
  std::vector<Time> start;
  std::vector<Time> begin;  // message-by-message: when the step a member waits in began
  std::vector<uint32_t> sub_started;  // [phase * n + subgroup]
  uint32_t members_done = 0;
};

class CollectiveTable {
 public:
  // A slot for a new collective under `key` (its generation advanced, its vectors left to the caller).
  uint32_t open(uint64_t key) {
    const uint32_t slot = instances_.acquire();
    Instance& I = instances_[slot];
    ++I.gen;
    I.live = true;
    I.key = key;
    live_.emplace(key, slot);
    return slot;
  }
  // The live collective under `key`, kNoSlot when there is none.
  uint32_t find(uint64_t key) const {
    const auto it = live_.find(key);
    return it == live_.end() ? kNoSlot : it->second;
  }
  // Every member has finished it.
  void close(uint32_t slot) {
    Instance& I = instances_[slot];
    live_.erase(I.key);
    I.live = false;
    instances_.release(slot);
  }
  Instance& operator[](uint32_t slot) noexcept { return instances_[slot]; }
  const Instance& operator[](uint32_t slot) const noexcept { return instances_[slot]; }
  // Slots ever used, live or not (see Instance::live).
  size_t size() const noexcept { return instances_.size(); }

  // The state of chunk c, made on first use.
  ChunkState& chunk(Instance& I, uint32_t c) {
    uint32_t& cs = I.chunk_state[c];
    if (cs == kNoSlot) {
      cs = chunks_.acquire();
      reset(chunks_[cs], I, c);
    }
    return chunks_[cs];
  }
  // The state of chunk c, which some member has started.
  ChunkState& started_chunk(const Instance& I, uint32_t c) noexcept { return chunks_[I.chunk_state[c]]; }
  // Every member is done with chunk c.
  void release_chunk(Instance& I, uint32_t c) {
    chunks_.release(I.chunk_state[c]);
    I.chunk_state[c] = kNoSlot;
  }
  // The phase member m of I is in (or about to start) in chunk c.
  uint8_t phase_of(const Instance& I, uint32_t c, int32_t m) const noexcept {
    const uint32_t cs = I.chunk_state[c];
    return cs == kNoSlot ? 0 : chunks_[cs].phase[static_cast<size_t>(m)];
  }

  static int32_t member_rank(const Instance& I, int32_t m) {
    return I.pg == nullptr ? m : static_cast<int32_t>(I.pg->ranks[static_cast<size_t>(m)]);
  }
  // -1: rank is not a member.
  static int32_t member_of(const Instance& I, int32_t rank) {
    if (I.pg == nullptr) return rank;
    const auto& v = I.pg->ranks;
    const auto it = std::lower_bound(v.begin(), v.end(), rank);
    if (it == v.end() || *it != rank) return -1;
    return static_cast<int32_t>(it - v.begin());
  }

 private:
  static void reset(ChunkState& C, const Instance& I, uint32_t c) {
    const auto n = static_cast<size_t>(I.n);
    const auto& phases = I.plan.phases;
    // Closed-form phases never count arrivals: only message-by-message phases need the table.
    const bool messages = std::any_of(phases.begin(), phases.end(), [](const Phase& P) { return !P.closed_form; });
    C.arrivals.assign(messages ? n * I.plan.total_steps : 0, 0);
    C.step.assign(n, 0);
    C.phase.assign(n, 0);
    C.waiting.assign(n, 0);
    C.start.assign(n, Time{});
    C.begin.assign(n, Time{});
    C.sub_started.assign(phases.size() * n, 0);
    C.schedules.clear();  // (keeps its capacity: no allocation once the pool has grown)
    const uint64_t bytes = chunk_share(I.bytes, I.chunks, c);
    for (const Phase& P : phases) C.schedules.push_back(phase_schedule(P, bytes, c));
    C.members_done = 0;
  }

  SlotPool<Instance> instances_;
  std::unordered_map<uint64_t, uint32_t> live_;
  SlotPool<ChunkState> chunks_;
};

}  // namespace fabemu::emu
