#include "emulator/chunk_scheduler.h"

#include <algorithm>
#include <iterator>

namespace fabemu::emu {

ChunkScheduler::ChunkScheduler(CollectiveTable& table, PhaseStarter& starter, size_t dims, size_t ranks,
                               int64_t streams)
    : table_(table),
      starter_(starter),
      dims_(std::max<size_t>(1, dims)),
      ranks_(ranks),
      queues_(dims_),
      free_streams_(ranks * dims_, static_cast<int32_t>(streams)),
      cursor_(ranks * dims_, 0) {}

void ChunkScheduler::enqueue_collective(uint32_t inst, SchedulingPolicy policy) {
  Instance& I = table_[inst];
  const int32_t dim = I.plan.phases.front().dim;
  I.queued_phase.assign(I.chunks, 1);
  auto& q = queues_[static_cast<size_t>(dim)].unstarted;
  if (policy == SchedulingPolicy::kLifo) {
    for (uint32_t c = I.chunks; c-- > 0;) q.push_front(ChunkEntry{inst, c, 0, I.gen});
  } else if (policy == SchedulingPolicy::kExplicit) {
    // Higher comm_priority first; equal priorities in issue order.
    auto pos = std::find_if(q.begin(), q.end(), [&](const ChunkEntry& e) {
      return e.phase == 0 && table_[e.inst].priority < I.priority;
    });
    for (uint32_t c = 0; c < I.chunks; ++c) pos = std::next(q.insert(pos, ChunkEntry{inst, c, 0, I.gen}));
  } else {
    for (uint32_t c = 0; c < I.chunks; ++c) q.push_back(ChunkEntry{inst, c, 0, I.gen});
  }
  for (int32_t m = 0; m < table_[inst].n; ++m) dispatch(CollectiveTable::member_rank(table_[inst], m), dim);
}

void ChunkScheduler::enqueue_phase_once(uint32_t inst, uint32_t chunk, uint8_t phase) {
  Instance& I = table_[inst];
  if (I.queued_phase[chunk] > phase) return;
  I.queued_phase[chunk] = static_cast<uint8_t>(phase + 1);
  const auto dim = static_cast<size_t>(I.plan.phases[phase].dim);
  queues_[dim].unstarted.push_back(ChunkEntry{inst, chunk, phase, I.gen});
}

bool ChunkScheduler::is_member(int32_t rank, const ChunkEntry& e) const {
  const Instance& I = table_[e.inst];
  return I.gen == e.gen && CollectiveTable::member_of(I, rank) >= 0;
}

bool ChunkScheduler::ready_for(int32_t rank, const ChunkEntry& e) const {
  const Instance& I = table_[e.inst];
  if (I.gen != e.gen) return false;
  const int32_t m = CollectiveTable::member_of(I, rank);
  if (m < 0) return false;
  return table_.phase_of(I, e.chunk, m) == e.phase;
}

void ChunkScheduler::dispatch(int32_t rank, int32_t dim) {
  DimQueue& Q = queues_[static_cast<size_t>(dim)];
  int32_t& free = free_streams_[at(rank, dim)];
  size_t& cur = cursor_[at(rank, dim)];
  while (free > 0) {
    // Phases others have started, in order: this rank's next one must be the first it takes part in.
    bool waiting = false, took = false;
    while (cur < Q.base + Q.started.size()) {
      const ChunkEntry e = Q.started[cur - Q.base];
      if (!is_member(rank, e)) {
        ++cur;
        continue;
      }
      if (!ready_for(rank, e)) {
        waiting = true;  // its previous phase (on another dimension) is not done here yet
        break;
      }
      ++cur;
      --free;
      starter_.start_phase(rank, e.inst, e.chunk);
      took = true;
      break;
    }
    if (waiting) return;
    if (took || cur < Q.base + Q.started.size()) continue;
    // Nothing started is pending here: take the first unstarted phase this rank can start now.
    auto it = std::find_if(Q.unstarted.begin(), Q.unstarted.end(),
                           [&](const ChunkEntry& e) { return ready_for(rank, e); });
    if (it == Q.unstarted.end()) return;
    const ChunkEntry e = *it;
    Q.unstarted.erase(it);
    Q.started.push_back(e);
    ++cur;
    --free;
    compact(Q, dim);
    starter_.start_phase(rank, e.inst, e.chunk);
    // The other members find it in `started`. (table_[e.inst] each time: a dispatch may issue a new
    // collective, which may grow the table.)
    for (int32_t m = 0; m < table_[e.inst].n; ++m) {
      const int32_t other = CollectiveTable::member_rank(table_[e.inst], m);
      if (other != rank) dispatch(other, dim);
    }
    return;
  }
}

// Drops the prefix of `started` that every rank has passed, now and then.
void ChunkScheduler::compact(DimQueue& Q, int32_t dim) {
  if (Q.started.size() < 4096) return;
  size_t low = Q.base + Q.started.size();
  for (size_t r = 0; r < ranks_; ++r) {
    size_t& cur = cursor_[r * dims_ + static_cast<size_t>(dim)];
    cur = std::max(cur, Q.base);
    low = std::min(low, cur);
  }
  if (low - Q.base < Q.started.size() / 2) return;
  Q.started.erase(Q.started.begin(), Q.started.begin() + static_cast<std::ptrdiff_t>(low - Q.base));
  Q.base = low;
}

}  // namespace fabemu::emu
