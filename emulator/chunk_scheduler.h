// The per-dimension chunk scheduler: each rank has a few communication streams per network dimension
// (active chunks per dimension); a chunk's phase holds one from its start to its end. Phases start on
// every rank in ONE order per dimension, so ranks never wait on each other in a cycle (each holding a
// stream for a chunk the other has not started): a phase some rank has started must be started next by
// every other member; only then may a rank take a phase nobody has started, in scheduling-policy order.
// This is ASTRA-sim's rule too: it schedules streams on all NPUs at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "emulator/collective_table.h"
#include "emulator/config.h"

namespace fabemu::emu {

// A chunk's phase waiting for (or holding) the communication streams of one dimension.
struct ChunkEntry {
  uint32_t inst;
  uint32_t chunk;
  uint8_t phase;
  // Instance slots are reused once a collective is done: a rank that was not a member of the collective
  // an old entry of `started` names may reach it only after its slot holds another collective, of which
  // it may be a member. The slot's generation tells them apart.
  uint32_t gen;
};

// Told to start a chunk's phase on a rank that has taken a stream for it.
class PhaseStarter {
 public:
  virtual void start_phase(int32_t rank, uint32_t inst, uint32_t chunk) = 0;

 protected:
  PhaseStarter() = default;
  PhaseStarter(const PhaseStarter&) = default;
  PhaseStarter& operator=(const PhaseStarter&) = default;
  ~PhaseStarter() = default;
};

class ChunkScheduler {
 public:
  // `streams`: streams per rank and dimension.
  ChunkScheduler(CollectiveTable& table, PhaseStarter& starter, size_t dims, size_t ranks, int64_t streams);

  // Every member has issued collective `inst`: its chunks join its first phase's queue (in `policy`
  // order; EXPLICIT by Instance::priority) and every member is offered them.
  void enqueue_collective(uint32_t inst, SchedulingPolicy policy);
  // A member has finished the phase before `phase` of a chunk: the first to do so queues `phase`.
  void enqueue_phase_once(uint32_t inst, uint32_t chunk, uint8_t phase);
  // `rank` gives back the stream a phase on `dim` held.
  void release_stream(int32_t rank, int32_t dim) { ++free_streams_[at(rank, dim)]; }
  // Starts on `rank` the phases of `dim` it may start now, while it has free streams there.
  void dispatch(int32_t rank, int32_t dim);

 private:
  struct DimQueue {
    std::vector<ChunkEntry> started;  // phases some rank has started, in order of first start
    size_t base = 0;                  // index of started[0] in that order (a prefix is dropped now and then)
    std::deque<ChunkEntry> unstarted;  // phases no rank has started yet, in scheduling-policy order
  };

  size_t at(int32_t rank, int32_t dim) const noexcept {
    return static_cast<size_t>(rank) * dims_ + static_cast<size_t>(dim);
  }
  bool is_member(int32_t rank, const ChunkEntry& e) const;
  bool ready_for(int32_t rank, const ChunkEntry& e) const;
  void compact(DimQueue& Q, int32_t dim);

  CollectiveTable& table_;
  PhaseStarter& starter_;
  size_t dims_;
  size_t ranks_;
  std::vector<DimQueue> queues_;
  std::vector<int32_t> free_streams_;  // [rank * dims + dim]
  std::vector<size_t> cursor_;         // [rank * dims + dim]: entries of started before it are done with
};

}  // namespace fabemu::emu
