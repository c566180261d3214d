#include "traces/resolver.h"

#include <fmt/format.h>

#include <algorithm>
#include <new>
#include <stdexcept>

namespace fabemu::traces {

DependencyResolver::DependencyResolver(TraceReader& reader, ResolverOptions options)
    : reader_(reader), options_(options) {
  if (options_.window == 0) options_.window = 1;
  if (options_.strict) options_.prescan = true;  // strictness needs to know which ids exist
}

const IdSet& DependencyResolver::file_ids() {
  if (!file_ids_) {
    TraceReader scan(reader_.path(), reader_.rank());
    IdSet ids;
    uint64_t id = 0;
    while (scan.next_id(id)) ids.insert(id);
    file_ids_ = std::move(ids);
  }
  return *file_ids_;
}

Location DependencyResolver::where(uint32_t slot) const {
  return reader_.location_at(slots_[slot].offset, hot_[slot].seq, slots_[slot].node.id());
}

const Node* DependencyResolver::next() {
  try {
    return next_impl();
  } catch (const std::bad_alloc&) {
    throw TraceError(reader_.location_at(reader_.bytes_read(), reader_.nodes_read()),
                     fmt::format("out of memory holding this rank's dependency graph ({} nodes held, {} read)", live_,
                                 reader_.nodes_read()));
  }
}

const Node* DependencyResolver::next_impl() {
  top_up(options_.window);
  if (ready_.empty() && in_flight_ == 0 && live_ > 0) {
    // Everything held is blocked on nodes further on: read past the window rather than deadlock.
    while (ready_.empty() && !eof_) {
      const uint64_t before = stats_.nodes_loaded;
      top_up(live_ + 1);
      stats_.window_overflows += stats_.nodes_loaded - before;
    }
    if (ready_.empty()) throw_stuck();
  }
  if (ready_.empty()) return nullptr;
  const uint32_t slot = ready_.top().slot;
  ready_.pop();
  Slot& s = slots_[slot];
  s.issued = true;
  ++in_flight_;
  return &s.node;
}

void DependencyResolver::finish(const Node& node) {
  const uint32_t slot = live_ids_.find(node.id());
  if (slot == IdSlotMap::kNone || &slots_[slot].node != &node || !slots_[slot].issued) {
    throw std::logic_error(fmt::format("DependencyResolver::finish: node {} was not issued", node.id()));
  }
  Slot& s = slots_[slot];
  for (const uint32_t child : s.children) {
    Hot& c = hot_[child];
    if (--c.pending == 0) ready_.push({c.seq, child});
  }
  finished_.insert(s.node.id());
  live_ids_.erase(s.node.id());
  --in_flight_;
  ++stats_.nodes_finished;
  release(slot);
}

void DependencyResolver::release(uint32_t slot) {
  slots_[slot].children.clear();
  free_slots_.push_back(slot);
  --live_;
}

void DependencyResolver::top_up(size_t limit) {
  while (!eof_ && live_ < limit) {
    if (!load_one()) {
      eof_ = true;
      resolve_remaining_as_dangling();
    }
  }
}

bool DependencyResolver::load_one() {
  uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
    hot_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  Slot& s = slots_[slot];
  if (!reader_.next(s.node)) {
    free_slots_.push_back(slot);
    return false;
  }
  ++live_;
  hot_[slot] = Hot{seq_++, 0};
  s.offset = reader_.last_offset();
  s.issued = false;
  ++stats_.nodes_loaded;
  stats_.peak_window = std::max<uint64_t>(stats_.peak_window, live_);
  if (options_.on_load) options_.on_load(s.node);

  const uint64_t id = s.node.id();
  if (live_ids_.find(id) != IdSlotMap::kNone || finished_.contains(id)) {
    throw TraceError(where(slot), fmt::format("duplicate node id {}: an earlier node has the same id", id));
  }
  live_ids_.insert(id, slot);
  for (const uint64_t dep : s.node.data_deps()) add_dep(slot, dep, false);
  stats_.data_edges += static_cast<uint64_t>(s.node.data_deps_size());
  if (options_.ctrl_deps) {
    for (const uint64_t dep : s.node.ctrl_deps()) add_dep(slot, dep, true);
  }
  stats_.ctrl_edges += static_cast<uint64_t>(s.node.ctrl_deps_size());
  if (!waiting_on_unread_.empty()) {
    if (auto it = waiting_on_unread_.find(id); it != waiting_on_unread_.end()) {
      s.children.insert(s.children.end(), it->second.begin(), it->second.end());
      waiting_on_unread_.erase(it);
    }
  }
  if (hot_[slot].pending == 0) ready_.push({hot_[slot].seq, slot});
  return true;
}

void DependencyResolver::add_dep(uint32_t child, uint64_t dep, bool ctrl) {
  const Slot& c = slots_[child];
  using Kind = DependencyProblem::Kind;
  if (dep == c.node.id()) {
    // Real PyTorch-collected traces carry these (383 ctrl_deps in Chakra's own feeder test trace): a
    // node cannot wait on itself, so the edge is dropped and counted.
    set_aside(child, {Kind::kSelf, {}, dep, ctrl});
    ++stats_.self_deps;
    return;
  }
  if (const uint32_t parent = live_ids_.find(dep); parent != IdSlotMap::kNone) {
    slots_[parent].children.push_back(child);
    ++hot_[child].pending;
    return;
  }
  if (finished_.contains(dep)) return;
  const bool later_in_file = !options_.prescan || file_ids().contains(dep);
  if (ctrl && later_in_file) {
    // A ctrl_dep orders a node after one executed before it, so it names an earlier node. Chakra's
    // PyTorch converter also writes ctrl_deps from a CPU op to the GPU kernel it launches (later in
    // the file, the reverse of the real order); honouring them closes cycles (417 in Chakra's own
    // test trace), so they are dropped and counted.
    set_aside(child, {Kind::kForwardCtrl, {}, dep, true});
    ++stats_.forward_ctrl_deps;
    return;
  }
  if (later_in_file) {
    // Later in the file (or, without a prescan, not known yet): wait until it is read.
    waiting_on_unread_[dep].push_back(child);
    ++hot_[child].pending;
    ++stats_.forward_deps;
    return;
  }
  set_aside(child, {Kind::kDangling, {}, dep, ctrl});
  ++stats_.dangling_deps;
  if (dangling_examples_.size() < 16) dangling_examples_.push_back({c.node.id(), dep, ctrl});
}

std::string describe(const DependencyProblem& problem) {
  switch (problem.kind) {
    case DependencyProblem::Kind::kSelf:
      return fmt::format("node {} depends on itself", problem.dep);
    case DependencyProblem::Kind::kForwardCtrl:
      return fmt::format("ctrl_dep {} names a node later in the file", problem.dep);
    case DependencyProblem::Kind::kDangling:
      break;
  }
  return fmt::format("{} {} names no node in this file", problem.ctrl ? "ctrl_dep" : "data_dep", problem.dep);
}

void DependencyResolver::set_aside(uint32_t child, DependencyProblem problem) {
  if (!options_.strict && !options_.on_problem) return;
  problem.where = where(child);
  if (options_.strict) throw TraceError(problem.where, describe(problem));
  options_.on_problem(problem);
}

void DependencyResolver::resolve_remaining_as_dangling() {
  // Only without a prescan can ids still be waited on at the end: they are not in the file.
  for (auto& [dep, waiters] : waiting_on_unread_) {
    for (const uint32_t child : waiters) {
      const Slot& c = slots_[child];
      set_aside(child, {DependencyProblem::Kind::kDangling, {}, dep, false});
      --stats_.forward_deps;
      ++stats_.dangling_deps;
      // Only data_deps wait here: unread ctrl_deps are dropped when they are met.
      if (dangling_examples_.size() < 16) dangling_examples_.push_back({c.node.id(), dep, false});
      if (--hot_[child].pending == 0) ready_.push({hot_[child].seq, child});
    }
  }
  waiting_on_unread_.clear();
}

void DependencyResolver::throw_stuck() {
  // Every remaining node waits on another remaining node: walk parent links to show one cycle.
  uint32_t start = IdSlotMap::kNone;
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (live_ids_.find(s.node.id()) == i && !s.issued &&
        (start == IdSlotMap::kNone || hot_[i].seq < hot_[start].seq)) {
      start = i;
    }
  }
  std::vector<uint32_t> path;
  std::vector<uint64_t> ids;
  uint32_t cur = start;
  while (cur != IdSlotMap::kNone && std::find(path.begin(), path.end(), cur) == path.end()) {
    path.push_back(cur);
    const Node& n = slots_[cur].node;
    uint32_t parent = IdSlotMap::kNone;
    auto pick = [&](const auto& deps) {
      for (const uint64_t d : deps) {
        const uint32_t p = live_ids_.find(d);
        if (p != IdSlotMap::kNone && parent == IdSlotMap::kNone) parent = p;
      }
    };
    pick(n.data_deps());
    if (options_.ctrl_deps) pick(n.ctrl_deps());
    cur = parent;
  }
  std::string chain;
  if (cur != IdSlotMap::kNone) {
    auto it = std::find(path.begin(), path.end(), cur);
    for (auto p = it; p != path.end(); ++p) chain += fmt::format("{} <- ", slots_[*p].node.id());
    chain += std::to_string(slots_[cur].node.id());
  }
  throw TraceError(where(start),
                   fmt::format("dependency cycle: {} nodes can never be issued{}", live_ - in_flight_,
                               chain.empty() ? std::string() : "; cycle (node <- parent): " + chain));
}

}  // namespace fabemu::traces
