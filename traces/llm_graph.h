// Internal to the LLM generator (traces/llm*.cpp): the process groups of a plan, and one pipeline stage's node
// graph, built once and shared by every rank of the stage.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "traces/attrs.h"
#include "traces/llm.h"
#include "traces/llm_shape.h"

namespace fabemu::traces::llm {

// ---- process groups and placement
enum Kind : uint8_t { kTpGroup, kDpGroup, kEdpGroup, kEpGroup, kKinds };
inline constexpr const char* kKindNames[kKinds] = {"tp", "dp", "edp", "ep"};

struct Groups {
  std::array<bool, kKinds> exists{};
  std::array<std::vector<int32_t>, kKinds> of_rank;  // group number (index into names/members)
  std::vector<std::string> names;                    // "1", "2", ...
  std::vector<Kind> kinds;
  std::vector<std::vector<int64_t>> members;
  std::array<int64_t, kAxes> stride{};
  std::array<int64_t, kAxes> size{};
  int64_t coord(int64_t rank, Axis a) const {
    const auto i = static_cast<size_t>(a);
    return rank / stride[i] % size[i];
  }
};

Groups make_groups(const Shape& s, const ParallelPlan& plan);

// ---- one stage's graph, shared by every rank of the stage
// Per-rank parts (pg_name, peers) are appended to the serialized node as one more `attr` field: protobuf
// concatenation of fields is a valid message, so a rank's file is the stage's bytes plus short suffixes.
enum class Patch : uint8_t { kNone, kTp, kDp, kEdp, kEp, kSendPrev, kSendNext, kRecvPrev, kRecvNext, kCount };

struct TNode {
  std::string body;
  Patch patch = Patch::kNone;
};

class StageGraph {
 public:
  std::vector<TNode> nodes;

  uint64_t comp(const std::string& name, uint64_t ops, uint64_t bytes, std::vector<uint64_t> deps);
  uint64_t coll(const std::string& name, CollectiveType type, uint64_t bytes, Patch group, std::vector<uint64_t> deps);
  uint64_t p2p(const std::string& name, bool send, uint64_t bytes, int64_t tag, Patch peer,
               std::vector<uint64_t> deps);

 private:
  Node start(const std::string& name, NodeType type, std::vector<uint64_t> deps);
  uint64_t finish(const Node& n, Patch patch);
  uint64_t next_id_ = 1;
};

// The graph of pipeline stage `stage` (identical for all ranks of that stage): its micro-batches in the
// 1F1B order, then the optimizer step (llm_stage.cpp).
StageGraph build_stage(const LlmSpec& spec, const Shape& s, const Groups& g, int64_t stage);

}  // namespace fabemu::traces::llm
