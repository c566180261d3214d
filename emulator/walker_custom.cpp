// A custom collective implementation on one member: its graph (custom_collective.h) walked as a rank's own
// trace is, each node issued once its dependencies are done; its SENDs and RECVs through walker_p2p.cpp,
// matched within the collective (P2pKey::scope) and with member positions turned into ranks; its COMP nodes
// as delays of their duration (ASTRA-sim's CustomAlgorithm: a reduction, not the rank's compute stream).
// The member's one phase of the collective ends when its whole graph is done.
#include <fmt/format.h>

#include "emulator/walker_impl.h"

namespace fabemu::emu {

void Walker::Impl::start_custom(int32_t r, uint32_t inst, int32_t m) {
  const Instance& I = collectives_[inst];
  const CustomMember& plan = I.custom->members[static_cast<size_t>(m)];
  const uint32_t run = runs_.acquire();
  CustomRun& U = runs_[run];
  U.inst = inst;
  U.member = m;
  U.rank = r;
  U.scope = I.result + 1;
  U.plan = &plan;
  U.waiting.assign(plan.parents.begin(), plan.parents.end());
  U.ready.assign(plan.roots.rbegin(), plan.roots.rend());  // a stack: the first in file order on top
  U.done = 0;
  U.pumping = false;
  custom_pump(run);
}

// Issues the run's ready nodes; a node that completes at once readies its children, which this loop takes
// too. The run ends here, once, when its last node is done. (runs_ may grow inside: no reference is kept.)
void Walker::Impl::custom_pump(uint32_t run) {
  if (runs_[run].pumping) return;
  runs_[run].pumping = true;
  while (!runs_[run].ready.empty()) {
    const uint32_t i = runs_[run].ready.back();
    runs_[run].ready.pop_back();
    custom_issue(run, i);
  }
  CustomRun& U = runs_[run];
  U.pumping = false;
  if (U.done < U.plan->parents.size()) return;
  const int32_t r = U.rank;
  const uint32_t inst = U.inst;
  const int32_t m = U.member;
  runs_.release(run);
  phase_end(r, inst, 0, m);
}

void Walker::Impl::custom_issue(uint32_t run, uint32_t i) {
  const CustomRun& U = runs_[run];
  const Node& node = U.plan->graph->nodes[i];
  const int32_t r = U.rank;
  switch (node.type()) {
    case ChakraProtoMsg::COMM_SEND_NODE:
      issue_send(r, node, run);
      return;
    case ChakraProtoMsg::COMM_RECV_NODE:
      issue_recv(r, node, run);
      return;
    case ChakraProtoMsg::COMP_NODE:
      if (node.duration_micros() > 0) {
        schedule(engine_.now() + Duration::from_us(node.duration_micros()),
                 Action{ActionKind::kCustomComp, r, run, i, U.member});
        return;
      }
      custom_done(run, node);
      return;
    default:
      custom_done(run, node);
      return;
  }
}

void Walker::Impl::custom_done(uint32_t run, const Node& node) {
  CustomRun& U = runs_[run];
  const CustomMember& P = *U.plan;
  const auto i = static_cast<size_t>(&node - P.graph->nodes.data());
  ++U.done;
  for (uint32_t k = P.child_begin[i + 1]; k > P.child_begin[i]; --k) {  // pushed backwards: taken in file order
    const uint32_t c = P.children[k - 1];
    if (--U.waiting[c] == 0) U.ready.push_back(c);
  }
  custom_pump(run);
}

int32_t Walker::Impl::custom_peer(uint32_t run, int64_t position) const {
  const Instance& I = collectives_[runs_[run].inst];
  return CollectiveTable::member_rank(I, static_cast<int32_t>(position));
}

// A SEND or RECV node of the rank's own trace (run == kNoRun) or of a custom run is done.
void Walker::Impl::p2p_node_done(int32_t r, uint32_t run, const Node& node, Time start, const char* kind,
                                 int32_t track, uint64_t bytes) {
  if (run == kNoRun) {
    finish_node(r, node, start, kind, track, bytes);
  } else {
    custom_done(run, node);
  }
}

}  // namespace fabemu::emu
