// Custom collective implementations (system.json's "<coll>-implementation-custom"): for each collective type
// that has one, the SEND/RECV/COMP graph of every member position, read and checked on first use, and compiled
// into what a walk needs (parents per node, children lists, roots). The walker runs a member's graph in place
// of the native algorithm (walker_custom.cpp); docs/custom_collectives.md says how.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "emulator/config.h"
#include "traces/custom_graph.h"
#include "traces/msccl_xml.h"

namespace fabemu::emu {

// One member position's graph, compiled.
struct CustomMember {
  const traces::CustomGraph* graph = nullptr;
  std::vector<uint32_t> parents;      // per node: dependencies
  std::vector<uint32_t> child_begin;  // per node + 1: its children are children[child_begin[i] .. child_begin[i+1])
  std::vector<uint32_t> children;
  std::vector<uint32_t> roots;  // nodes without dependencies, file order
};

struct CustomAlgorithm {
  std::string source;  // the ET prefix or the .xml file
  traces::CustomGraphs graphs;
  std::vector<CustomMember> members;
};

class CustomCollectives {
 public:
  explicit CustomCollectives(const SystemConfig& system);

  // Whether `type` has a custom implementation.
  bool has(traces::CollectiveType type) const {
    const int slot = slot_of(type);
    return slot >= 0 && !source_[static_cast<size_t>(slot)].empty();
  }
  // The implementation of a `type` collective of `bytes` over n members, nullptr when `type` has no custom
  // key; read, checked (traces::check_custom_graphs, and the byte floor of traces::custom_byte_floor) and
  // compiled on first use. `issued_at` names the collective for errors. Throws traces::TraceError.
  const CustomAlgorithm* find(traces::CollectiveType type, int32_t n, uint64_t bytes, const std::string& issued_at);

 private:
  static int slot_of(traces::CollectiveType type);
  std::unique_ptr<CustomAlgorithm> load(int slot, int32_t n, uint64_t bytes);
  void check_floor(const CustomAlgorithm& a, traces::CollectiveType type, int32_t n, uint64_t bytes,
                   const std::string& issued_at) const;

  std::array<std::string, 4> source_;  // all-reduce, all-gather, reduce-scatter, all-to-all
  std::array<std::unique_ptr<traces::MscclAlgo>, 4> xml_;
  // .et: per (slot, n); .xml: per (slot, n, bytes), as its message sizes follow the collective's.
  std::map<std::tuple<int, int32_t, uint64_t>, std::unique_ptr<CustomAlgorithm>> cache_;
  std::set<std::tuple<int, int32_t, uint64_t>> checked_;  // (slot, n, bytes) whose byte floor was checked
};

}  // namespace fabemu::emu
