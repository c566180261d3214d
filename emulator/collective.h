// Collective algorithms as point-to-point schedules: for each member of a group, a sequence of steps;
// at the start of a step a member sends its messages, then waits for the step's receives, then spends
// endpoint delay (and, in reducing steps, the local reduction) before its next step. Every model
// (message by message, closed form, DPDK, FPGA) runs these same schedules.
//
// Message sizes follow ASTRA-sim's native collectives (astraccl/native_collectives), so results agree
// with its analytical backends: ring all-reduce sends c/n per step for 2(n-1) steps, ring all-gather
// sends the member's whole input c for n-1 steps, ring all-to-all relays c/n for n(n-1)/2 steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emulator/config.h"
#include "emulator/time.h"

namespace fabemu::emu {

// What one phase of a collective does (a multi-dimensional collective is several phases).
enum class PhaseOp : uint8_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kAllToAll,
  kBroadcast,
  kReduce,
  kGather,
  kScatter,
};

const char* phase_op_name(PhaseOp op);
const char* algo_name(CollectiveAlgo algo);

struct ScheduledSend {
  int32_t peer;       // member index
  uint64_t bytes;
  uint32_t recv_step; // the step of the PEER whose receives this message counts towards
};

// The schedule of one phase over `n` members for one chunk of `bytes` (the phase's per-member input).
// Pure arithmetic: no allocation, any member and step can be asked in any order.
class PhaseSchedule {
 public:
  // `tree` picks one of the two trees of the double binary tree (chunk parity). Algorithms that do not
  // apply (halving-doubling over a non-power-of-two group, double binary tree outside all-reduce,
  // broadcast and reduce) are replaced as resolve_algo() says.
  PhaseSchedule(PhaseOp op, CollectiveAlgo algo, int32_t n, uint64_t bytes, int32_t root = 0, int tree = 0);

  PhaseOp op() const noexcept { return op_; }
  CollectiveAlgo algo() const noexcept { return algo_; }
  int32_t members() const noexcept { return n_; }
  uint64_t bytes() const noexcept { return bytes_; }
  uint32_t steps() const noexcept { return steps_; }

  uint32_t num_sends(int32_t member, uint32_t step) const noexcept;
  // k < num_sends(member, step).
  ScheduledSend send(int32_t member, uint32_t step, uint32_t k) const noexcept;
  uint32_t num_recvs(int32_t member, uint32_t step) const noexcept;
  // Bytes reduced after the step's receives (the size of one received message; reductions of earlier
  // arrivals overlap the wait for later ones), 0 when the step does not reduce.
  uint64_t reduce_bytes(int32_t member, uint32_t step) const noexcept;
  // Every member's message of a step lands on the peer's SAME step (ring, direct, halving-doubling):
  // what the closed-form evaluation needs.
  bool step_synchronous() const noexcept;

  // The algorithm actually used for `op` over `n` members when `wanted` is asked for, and why it
  // differs (empty when it does not).
  static CollectiveAlgo resolve_algo(PhaseOp op, CollectiveAlgo wanted, int32_t n, std::string* why = nullptr);

 private:
  int32_t rel(int32_t member) const noexcept { return (member - root_ + n_) % n_; }
  int32_t abs(int32_t rel_index) const noexcept { return (rel_index + root_) % n_; }
  int32_t tree_pos(int32_t member) const noexcept { return tree_ == 0 ? member : n_ - 1 - member; }
  int32_t tree_member(int32_t pos) const noexcept { return tree_ == 0 ? pos : n_ - 1 - pos; }
  uint32_t tree_children(int32_t pos) const noexcept;

  PhaseOp op_;
  CollectiveAlgo algo_;
  int32_t n_;
  uint64_t bytes_;
  int32_t root_;
  int tree_;
  uint32_t steps_ = 0;
  uint32_t lg_ = 0;  // ceil(log2 n)
};

}  // namespace fabemu::emu
