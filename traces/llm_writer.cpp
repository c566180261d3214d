#include "traces/llm_writer.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "traces/error.h"
#include "traces/trace_set.h"
#include "traces/writer.h"

namespace fabemu::traces::llm {
namespace {

std::string attr_suffix(const char* name, const std::string* sval, int64_t ival) {
  Node n;
  auto* a = n.add_attr();
  a->set_name(name);
  if (sval != nullptr) {
    a->set_string_val(*sval);
  } else {
    a->set_int32_val(static_cast<int32_t>(ival));
  }
  return n.SerializeAsString();
}

void write_gzip(const std::string& path, const std::string& data) {
  gzFile f = gzopen(path.c_str(), "wb1");
  if (f == nullptr) throw TraceError({.file = path}, std::string("cannot create: ") + std::strerror(errno));
  bool ok = true;
  for (size_t at = 0; ok && at < data.size();) {
    const auto n = static_cast<unsigned>(std::min<size_t>(data.size() - at, size_t{1} << 30));
    ok = gzwrite(f, data.data() + at, n) == static_cast<int>(n);
    at += n;
  }
  if (gzclose(f) != Z_OK || !ok) throw TraceError({.file = path}, "write failed (disk full?)");
}

nlohmann::json spec_json(const LlmSpec& spec, const Shape& s) {
  const auto& M = spec.model;
  std::vector<std::string> order;
  for (const Axis a : spec.plan.order) order.push_back(axis_name(a));
  return {{"model",
           {{"name", M.name},
            {"layers", M.layers},
            {"hidden", M.hidden},
            {"ffn", M.ffn},
            {"heads", M.heads},
            {"kv_heads", M.kv_heads == 0 ? M.heads : M.kv_heads},
            {"vocab", M.vocab},
            {"seq", M.seq},
            {"gated_ffn", M.gated_ffn},
            {"experts", M.experts},
            {"top_k", s.top_k},
            {"embedding", M.embedding}}},
          {"training",
           {{"micro_batch", spec.train.micro_batch},
            {"global_batch", spec.train.global_batch},
            {"dtype_bytes", spec.train.dtype_bytes}}},
          {"parallel",
           {{"tp", s.tp},
            {"pp", s.pp},
            {"dp", s.dp},
            {"ep", s.ep},
            {"world", s.world},
            {"zero", spec.plan.zero},
            {"sequence_parallel", spec.plan.sequence_parallel},
            {"order", order},
            {"microbatches", s.m}}}};
}

using Suffixes = std::array<std::string, static_cast<size_t>(Patch::kCount)>;

// Writes rank files on several threads, each taking the next rank; the first error stops them all.
class RankWriter {
 public:
  RankWriter(const LlmSpec& spec, const Shape& s, const Groups& groups, const std::vector<StageGraph>& stages,
             const std::vector<std::string>& paths)
      : spec_(spec), s_(s), groups_(groups), stages_(stages), paths_(paths) {
    GlobalMetadata md;
    md.set_version(kSchemaVersion);
    append_frame(md, md_frame_);
  }

  WrittenRanks run() {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const auto jobs = static_cast<unsigned>(std::clamp<int64_t>(spec_.jobs > 0 ? spec_.jobs : hw, 1, s_.world));
    std::vector<std::thread> threads;
    for (unsigned i = 1; i < jobs; ++i) threads.emplace_back([this] { worker(); });
    worker();
    for (auto& th : threads) th.join();
    return {.bytes = bytes_.load(), .nodes = nodes_.load(), .error = error_};
  }

 private:
  void worker() {
    std::string buf;
    Suffixes suffix;
    try {
      for (int64_t r = next_++; r < s_.world; r = next_++) {
        if (failed_) return;
        write_rank(r, buf, suffix);
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      failed_ = true;
    }
  }

  void write_rank(int64_t r, std::string& buf, Suffixes& suffix) {
    const auto ru = static_cast<size_t>(r);
    const nlohmann::json declared = rank_suffixes(r, suffix);
    const StageGraph& graph = stages_[static_cast<size_t>(groups_.coord(r, Axis::kPp))];
    buf.clear();
    buf += md_frame_;
    uint64_t n = 0;
    if (!declared.empty()) {
      Node meta;
      meta.set_id(0);
      meta.set_name("process_groups");
      meta.set_type(ChakraProtoMsg::METADATA_NODE);
      meta.mutable_inputs()->set_values(declared.dump());
      append_frame(meta, buf);
      ++n;
    }
    for (const TNode& node : graph.nodes) {
      const std::string& tail = suffix[static_cast<size_t>(node.patch)];
      append_varint(node.body.size() + tail.size(), buf);
      buf += node.body;
      buf += tail;
    }
    n += graph.nodes.size();
    if (spec_.gzip) {
      write_gzip(paths_[ru], buf);
      bytes_ += static_cast<uint64_t>(std::filesystem::file_size(paths_[ru]));
    } else {
      write_text(paths_[ru], buf);
      bytes_ += buf.size();
    }
    nodes_ += n;
  }

  // Per-rank attributes, serialized once per rank: its groups' pg_name and its pipeline peers. Returns the
  // groups the rank declares in its METADATA_NODE.
  nlohmann::json rank_suffixes(int64_t r, Suffixes& suffix) const {
    const auto ru = static_cast<size_t>(r);
    const int64_t stage = groups_.coord(r, Axis::kPp);
    const int64_t pp_stride = groups_.stride[static_cast<size_t>(Axis::kPp)];
    nlohmann::json declared = nlohmann::json::array();
    for (int k = 0; k < kKinds; ++k) {
      if (!groups_.exists[static_cast<size_t>(k)]) continue;
      const auto id = static_cast<size_t>(groups_.of_rank[static_cast<size_t>(k)][ru]);
      suffix[static_cast<size_t>(k) + 1] = attr_suffix("pg_name", &groups_.names[id], 0);
      declared.push_back({{"pg_name", groups_.names[id]},
                          {"pg_desc", kKindNames[k]},
                          {"backend_config", "cuda:nccl"},
                          {"ranks", groups_.members[id]},
                          {"group_size", groups_.members[id].size()}});
    }
    if (stage > 0) {
      suffix[static_cast<size_t>(Patch::kSendPrev)] = attr_suffix("comm_dst", nullptr, r - pp_stride);
      suffix[static_cast<size_t>(Patch::kRecvPrev)] = attr_suffix("comm_src", nullptr, r - pp_stride);
    }
    if (stage < s_.pp - 1) {
      suffix[static_cast<size_t>(Patch::kSendNext)] = attr_suffix("comm_dst", nullptr, r + pp_stride);
      suffix[static_cast<size_t>(Patch::kRecvNext)] = attr_suffix("comm_src", nullptr, r + pp_stride);
    }
    return declared;
  }

  const LlmSpec& spec_;
  const Shape& s_;
  const Groups& groups_;
  const std::vector<StageGraph>& stages_;
  const std::vector<std::string>& paths_;
  std::string md_frame_;
  std::atomic<int64_t> next_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> nodes_{0};
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
  std::mutex error_mutex_;
};

}  // namespace

WrittenRanks write_rank_files(const LlmSpec& spec, const Shape& s, const Groups& groups,
                              const std::vector<StageGraph>& stages, const std::vector<std::string>& paths) {
  return RankWriter(spec, s, groups, stages, paths).run();
}

void write_comm_groups(const Groups& groups, const std::string& path) {
  nlohmann::json cg = nlohmann::json::object();
  for (size_t i = 0; i < groups.names.size(); ++i) cg[groups.names[i]] = groups.members[i];
  write_text(path, cg.dump() + "\n");
}

void write_plan(const LlmSpec& spec, const Shape& s, const LlmFigures& figures, const Groups& groups,
                const WrittenRanks& written, const std::string& path) {
  nlohmann::json by_kind = nlohmann::json::object();
  for (size_t i = 0; i < groups.names.size(); ++i) by_kind[kKindNames[groups.kinds[i]]].push_back(groups.names[i]);
  nlohmann::json plan = spec_json(spec, s);
  plan["figures"] = {{"params", figures.params},
                     {"active_params", figures.active_params},
                     {"tokens_per_iteration", figures.tokens},
                     {"flops_per_token", figures.flops_per_token},
                     {"flops_per_iteration", static_cast<double>(figures.flops_per_token) *
                                                 static_cast<double>(figures.tokens)},
                     {"stage_dense_params_per_rank", figures.stage_dense_params},
                     {"stage_expert_params_per_rank", figures.stage_expert_params}};
  plan["groups_by_kind"] = by_kind;
  plan["output"] = {{"rank_files", s.world}, {"nodes", written.nodes}, {"bytes", written.bytes}};
  write_text(path, plan.dump(2) + "\n");
}

}  // namespace fabemu::traces::llm
