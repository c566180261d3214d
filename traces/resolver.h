// Dependency resolver for one rank's trace: streams nodes through a bounded window and hands out
// those whose data_deps and ctrl_deps are all finished, in file order, freeing finished nodes.
// This is what the emulator's rank walker pulls from.
//
// Rules for imperfect real traces (each counted in ResolverStats; `strict` makes them errors):
// a dependency on an id absent from the file is satisfied; one on the node itself is dropped; a
// ctrl_dep on a node later in the file is dropped (data_deps on later nodes are waited for).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "traces/id_set.h"
#include "traces/reader.h"

namespace fabemu::traces {

// One dependency the lenient rules set aside (see above): what `strict` would refuse.
struct DependencyProblem {
  enum class Kind { kDangling, kSelf, kForwardCtrl };
  Kind kind;
  Location where;  // the node that has the dependency
  uint64_t dep;    // the id it names
  bool ctrl;       // a ctrl_dep (true) or a data_dep
};
// "data_dep 99 names no node in this file", "node 7 depends on itself", "ctrl_dep 12 names a node
// later in the file": the text strict mode's error gives.
std::string describe(const DependencyProblem& problem);

struct ResolverOptions {
  size_t window = size_t{1} << 14;  // nodes held (read, not yet finished) before reading pauses
  bool ctrl_deps = true;            // wait on ctrl_deps too, as ASTRA-sim's current reader does
  bool strict = false;              // a dependency on an absent id, or on the node itself, is an error
  bool prescan = true;              // index the file's ids (once, when a dependency is neither held nor
                                    // finished) so absent ids are told from later ones; strict implies it
  // Called with every node as it is read, in file order, before it can be handed out by next(): what
  // depends on file order rather than issue order (the order of a group's collectives) is counted here.
  std::function<void(const Node&)> on_load;
  // Not strict: called with every dependency set aside, so a caller can list them all (validate
  // --strict). Strict mode throws at the first one instead.
  std::function<void(const DependencyProblem&)> on_problem;
};

// A dependency naming an id that is not in the file (e.g. a parent the converter filtered out).
struct DanglingDep {
  uint64_t node_id;
  uint64_t missing_id;
  bool ctrl;  // ctrl_deps (true) or data_deps (false)
};

struct ResolverStats {
  uint64_t nodes_loaded = 0;
  uint64_t nodes_finished = 0;
  uint64_t data_edges = 0;
  uint64_t ctrl_edges = 0;
  uint64_t dangling_deps = 0;     // edges to absent ids, treated as satisfied
  uint64_t forward_deps = 0;      // data_deps on ids later in the file (waited for)
  uint64_t forward_ctrl_deps = 0; // ctrl_deps on ids later in the file (dropped: they break cycles)
  uint64_t self_deps = 0;         // edges from a node to itself, ignored
  uint64_t peak_window = 0;       // most nodes held at once
  uint64_t window_overflows = 0;  // nodes read beyond the window to avoid a deadlock
};

class DependencyResolver {
 public:
  // Reads nodes from `reader` (already past its metadata). With `prescan`, the first dependency that
  // is neither held nor finished opens the same file once more to index its ids. Throws TraceError for duplicate ids, cycles, and (strict) dangling or self
  // dependencies, naming file, rank and node.
  explicit DependencyResolver(TraceReader& reader, ResolverOptions options = {});

  // The next issuable node (lowest file position among the ready ones), or nullptr if none is ready
  // until something finishes. The pointer stays valid until finish() of that node. Running out of
  // memory is a TraceError naming the file, rank and node reached.
  const Node* next();
  // Marks an issued node finished: releases its dependents and recycles its storage.
  void finish(const Node& node);

  // Every node of the file read and finished. Becomes true when next() finds the end of the file
  // with nothing left, so drive the walk with next() and ask this when it returns nullptr.
  bool done() const { return eof_ && live_ == 0; }
  size_t in_flight() const { return in_flight_; }
  const ResolverStats& stats() const { return stats_; }
  const std::vector<DanglingDep>& dangling_examples() const { return dangling_examples_; }

 private:
  struct Slot {
    Node node;
    uint64_t offset = 0;  // byte offset of its frame
    bool issued = false;
    std::vector<uint32_t> children;
  };
  // What finish() touches of every child, kept apart from the (large, mostly cold) Slot so that
  // releasing dependents stays in cache.
  struct Hot {
    uint64_t seq = 0;      // position in the file (node index)
    uint32_t pending = 0;  // unfinished parents
  };
  struct ReadyEntry {
    uint64_t seq;
    uint32_t slot;
    bool operator>(const ReadyEntry& o) const { return seq > o.seq; }
  };

  const Node* next_impl();
  void top_up(size_t limit);
  bool load_one();
  void add_dep(uint32_t child, uint64_t dep, bool ctrl);
  void release(uint32_t slot);
  // A dependency the lenient rules drop or satisfy: strict mode's error, or on_problem's call.
  void set_aside(uint32_t child, DependencyProblem problem);
  void resolve_remaining_as_dangling();
  [[noreturn]] void throw_stuck();
  Location where(uint32_t slot) const;

  TraceReader& reader_;
  ResolverOptions options_;
  const IdSet& file_ids();  // every id in the file, indexed on first need (the prescan)

  std::optional<IdSet> file_ids_;
  IdSet finished_;
  IdSlotMap live_ids_;
  std::deque<Slot> slots_;  // stable addresses: Node pointers are handed out
  std::vector<Hot> hot_;    // by slot
  std::vector<uint32_t> free_slots_;
  std::priority_queue<ReadyEntry, std::vector<ReadyEntry>, std::greater<>> ready_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> waiting_on_unread_;
  std::vector<DanglingDep> dangling_examples_;
  ResolverStats stats_;
  uint64_t seq_ = 0;
  size_t live_ = 0;
  size_t in_flight_ = 0;
  bool eof_ = false;
};

}  // namespace fabemu::traces
