#include "traces/validate.h"

#include <fmt/format.h>

#include <deque>
#include <map>
#include <new>
#include <tuple>

#include "traces/attrs.h"
#include "traces/process_groups.h"
#include "traces/resolver.h"

namespace fabemu::traces {
namespace {

struct P2pRecord {
  uint64_t size;
  Location where;
};
struct CollRecord {
  CollectiveType type;
  uint64_t size;
  Location where;
};
using P2pKey = std::tuple<int64_t, int64_t, int64_t>;  // src, dst, tag

// Collects findings, capping each (rank, kind) at a limit and summarising the rest.
class Findings {
 public:
  Findings(ValidationReport& report, size_t cap) : report_(report), cap_(cap) {}
  void add(Severity sev, const std::string& kind, Location where, std::string what) {
    auto& n = counts_[{where.file, kind}];
    ++n;
    (sev == Severity::kError ? report_.errors : report_.warnings)++;
    if (n <= cap_) {
      report_.findings.push_back({sev, std::move(where), std::move(what)});
    } else {
      overflow_[{where.file, kind}] = {sev, where.file, where.rank};
    }
  }
  void finish() {
    for (const auto& [key, info] : overflow_) {
      const auto& [sev, file, rank] = info;
      report_.findings.push_back({sev, {.file = file, .rank = rank},
                                  fmt::format("... and {} more like the above ({})",
                                              counts_[key] - cap_, key.second)});
    }
  }

 private:
  ValidationReport& report_;
  size_t cap_;
  std::map<std::pair<std::string, std::string>, size_t> counts_;
  std::map<std::pair<std::string, std::string>, std::tuple<Severity, std::string, std::optional<int64_t>>> overflow_;
};

const char* problem_kind(DependencyProblem::Kind kind) {
  switch (kind) {
    case DependencyProblem::Kind::kSelf: return "self dependency";
    case DependencyProblem::Kind::kForwardCtrl: return "forward ctrl_dep";
    case DependencyProblem::Kind::kDangling: break;
  }
  return "dangling dependency";
}

// The lenient walk's dependency problems, one warning per kind with its count.
void add_dependency_warnings(Findings& findings, const RankFile& file, const DependencyResolver& resolver) {
  if (const uint64_t fwd = resolver.stats().forward_ctrl_deps; fwd > 0) {
    findings.add(Severity::kWarning, "forward ctrl_deps", {.file = file.path, .rank = file.rank},
                 fmt::format("{} ctrl_deps name a node later in the file (ignored: a ctrl_dep orders a node after "
                             "an earlier one, and these close cycles; --strict makes them errors)",
                             fwd));
  }
  if (const uint64_t self = resolver.stats().self_deps; self > 0) {
    findings.add(Severity::kWarning, "self dependencies", {.file = file.path, .rank = file.rank},
                 fmt::format("{} dependencies name the node itself (ignored; --strict makes them errors)", self));
  }
  if (resolver.stats().dangling_deps > 0) {
    std::string examples;
    for (const auto& d : resolver.dangling_examples()) {
      if (!examples.empty()) examples += ", ";
      examples += fmt::format("node {} {} {}", d.node_id, d.ctrl ? "ctrl_dep" : "data_dep", d.missing_id);
      if (examples.size() > 120) break;
    }
    findings.add(Severity::kWarning, "dangling dependencies", {.file = file.path, .rank = file.rank},
                 fmt::format("{} dependencies name node ids that are not in the file (treated as satisfied; "
                             "--strict makes them errors), e.g. {}",
                             resolver.stats().dangling_deps, examples));
  }
}

// One validation of a workload: pass 1 reads every node on its own and records the communication; pass 2 walks
// the dependencies; then the cross-rank checks (SEND/RECV matching, collective order per process group).
class WorkloadValidator {
 public:
  WorkloadValidator(const std::vector<RankFile>& files, const ValidateOptions& options)
      : files_(files),
        options_(options),
        findings_(report_, options.max_findings_per_kind),
        world_(static_cast<int64_t>(files.size())),
        groups_(world_) {}

  ValidationReport run() {
    load_comm_group_file();
    for (const RankFile& file : files_) validate_rank(file);
    check_p2p_matching();
    check_collective_order();
    findings_.finish();
    return std::move(report_);
  }

 private:
  void load_comm_group_file() {
    if (!options_.comm_group_file) return;
    try {
      groups_.load_file(*options_.comm_group_file);
    } catch (const TraceError& e) {
      findings_.add(Severity::kError, "comm-group file", e.where(), e.detail());
    }
  }

  void validate_rank(const RankFile& file) {
    RankValidation rv{.rank = file.rank, .path = file.path};
    if (!scan_nodes(file, rv)) {
      report_.ranks.push_back(rv);
      return;
    }
    walk_dependencies(file, rv);
    report_.ranks.push_back(std::move(rv));
  }

  // Pass 1: every node on its own, and the records for the cross-rank checks. False when the rank is unreadable.
  bool scan_nodes(const RankFile& file, RankValidation& rv) {
    try {
      TraceReader reader(file.path, file.rank);
      uint64_t cpu_colls = 0;
      std::optional<Location> first_cpu_coll;
      while (reader.next(node_)) {
        const Location at = reader.last_location();
        const NodeType type = node_.type();
        if (type == ChakraProtoMsg::INVALID_NODE) {
          findings_.add(Severity::kWarning, "invalid node", at, "INVALID_NODE (type 0): ignored when replayed");
        }
        if (type == ChakraProtoMsg::METADATA_NODE) add_process_group(at);
        if (!is_comm(type)) continue;
        const CommInfo c = comm_info(node_);
        if (type != ChakraProtoMsg::COMM_COLL_NODE) {
          record_p2p(file, type, c, at);
        } else if (!c.raw_comm_type && !c.size && c.is_cpu_op) {
          ++cpu_colls;
          if (!first_cpu_coll) first_cpu_coll = at;
        } else {
          record_collective(file, type, c, at);
        }
      }
      rv.nodes = reader.nodes_read();
      if (cpu_colls > 0) {
        findings_.add(Severity::kWarning, "cpu-side collective", *first_cpu_coll,
                      fmt::format("{} CPU-side COMM_COLL_NODEs (is_cpu_op) carry no comm_type/comm_size, e.g. this "
                                  "one; they are host-side records and replay as zero-cost nodes",
                                  cpu_colls));
      }
      return true;
    } catch (const TraceError& e) {
      findings_.add(Severity::kError, "unreadable", e.where(), e.detail());
    } catch (const std::bad_alloc&) {
      findings_.add(Severity::kError, "unreadable", {.file = file.path, .rank = file.rank},
                    "out of memory reading this rank's communication nodes");
    }
    return false;
  }

  void add_process_group(const Location& at) {
    try {
      groups_.add_from_metadata_node(node_, at);
    } catch (const TraceError& e) {
      findings_.add(Severity::kError, "process group", e.where(), e.detail());
    }
  }

  // An error finding when a communication node lacks an attribute it needs.
  void need(bool present, NodeType type, const char* attr, const char* why, const Location& at) {
    if (!present) {
      findings_.add(Severity::kError, std::string("missing ") + attr, at,
                    fmt::format("{} lacks {} ({})", node_type_name(type), attr, why));
    }
  }

  void record_collective(const RankFile& file, NodeType type, const CommInfo& c, const Location& at) {
    if (c.raw_comm_type && !c.collective) {
      findings_.add(Severity::kError, "bad comm_type", at,
                    fmt::format("comm_type {} is not a collective (0..9, ALL_REDUCE..BARRIER)", *c.raw_comm_type));
      return;
    }
    need(c.raw_comm_type.has_value(), type, "comm_type", "which collective", at);
    need(c.size.has_value(), type, "comm_size", "bytes per rank", at);
    if (!c.collective || !c.size) return;
    const ProcessGroup* pg = groups_.find(c.pg);
    if (pg == nullptr) {
      findings_.add(Severity::kError, "unknown process group", at,
                    fmt::format("pg_name \"{}\" is not defined by a METADATA_NODE or a comm-group file", c.pg));
      return;
    }
    if (!std::binary_search(pg->ranks.begin(), pg->ranks.end(), file.rank)) {
      findings_.add(Severity::kError, "not a member", at,
                    fmt::format("rank {} issues a collective in process group \"{}\" but is not a member of it",
                                file.rank, c.pg));
      return;
    }
    colls_[pg->name][file.rank].push_back({*c.collective, *c.size, at});
  }

  void record_p2p(const RankFile& file, NodeType type, const CommInfo& c, const Location& at) {
    const bool send = type == ChakraProtoMsg::COMM_SEND_NODE;
    const auto peer = send ? c.dst : c.src;
    need(peer.has_value(), type, send ? "comm_dst" : "comm_src", send ? "receiving rank" : "sending rank", at);
    need(c.size.has_value(), type, "comm_size", "bytes", at);
    if (!peer || !c.size) return;
    if (*peer < 0 || *peer >= world_) {
      findings_.add(Severity::kError, "peer out of range", at,
                    fmt::format("{} {} is not a rank of this workload (0..{})", send ? "comm_dst" : "comm_src", *peer,
                                world_ - 1));
      return;
    }
    if (!c.tag) {
      findings_.add(Severity::kWarning, "missing comm_tag", at, "no comm_tag: matched as tag 0");
    }
    const int64_t tag = c.tag.value_or(0);
    if (send) {
      sends_[{file.rank, *peer, tag}].push_back({*c.size, at});
    } else {
      recvs_[{*peer, file.rank, tag}].push_back({*c.size, at});
    }
  }

  // Pass 2: the dependency walk (duplicates, dangling dependencies, cycles). The resolver is never
  // strict here, so that every problem is found: --strict makes each one an error finding (the first
  // few of each kind shown, all counted), else each kind is one warning with its count.
  void walk_dependencies(const RankFile& file, RankValidation& rv) {
    try {
      TraceReader reader(file.path, file.rank);
      ResolverOptions resolver_options{.ctrl_deps = options_.ctrl_deps, .prescan = true};
      if (options_.strict) {
        resolver_options.on_problem = [this](const DependencyProblem& p) {
          findings_.add(Severity::kError, problem_kind(p.kind), p.where, describe(p));
        };
      }
      DependencyResolver resolver(reader, std::move(resolver_options));
      std::vector<const Node*> batch;
      bool first = true;
      while (!resolver.done()) {
        batch.clear();
        while (const Node* n = resolver.next()) batch.push_back(n);
        if (first) {
          for (const Node* n : batch) rv.first_issuable.push_back(n->id());
          first = false;
        }
        for (const Node* n : batch) resolver.finish(*n);
      }
      rv.dangling_deps = resolver.stats().dangling_deps;
      rv.walked = true;
      // Strict: each problem is an error finding already.
      if (!options_.strict) add_dependency_warnings(findings_, file, resolver);
    } catch (const TraceError& e) {
      findings_.add(Severity::kError, "dependencies", e.where(), e.detail());
    } catch (const std::bad_alloc&) {
      findings_.add(Severity::kError, "dependencies", {.file = file.path, .rank = file.rank},
                    "out of memory walking this rank's dependencies");
    }
  }

  // Every SEND has its RECV: match in issue order per (src, dst, tag).
  void check_p2p_matching() {
    for (auto& [key, queue] : sends_) {
      const auto& [src, dst, tag] = key;
      auto& matches = recvs_[key];
      for (size_t i = 0; i < queue.size(); ++i) {
        if (i >= matches.size()) {
          findings_.add(Severity::kError, "unmatched send", queue[i].where,
                        fmt::format("SEND to rank {} tag {} ({} bytes) has no matching RECV (src {}, tag {}) on rank {}",
                                    dst, tag, queue[i].size, src, tag, dst));
        } else if (matches[i].size != queue[i].size) {
          findings_.add(Severity::kError, "size mismatch", queue[i].where,
                        fmt::format("SEND of {} bytes to rank {} tag {} is matched by a RECV of {} bytes at {}",
                                    queue[i].size, dst, tag, matches[i].size, to_string(matches[i].where)));
        }
      }
      for (size_t i = queue.size(); i < matches.size(); ++i) unmatched_recv(key, matches[i]);
    }
    for (auto& [key, queue] : recvs_) {
      if (sends_.count(key) != 0) continue;
      for (const auto& r : queue) unmatched_recv(key, r);
    }
  }

  void unmatched_recv(const P2pKey& key, const P2pRecord& r) {
    const auto& [src, dst, tag] = key;
    findings_.add(Severity::kError, "unmatched recv", r.where,
                  fmt::format("RECV from rank {} tag {} ({} bytes) has no matching SEND on rank {}", src, tag, r.size,
                              src));
  }

  // Members of each process group issue the same collectives in the same order with the same sizes.
  void check_collective_order() {
    for (const auto& [pg_name, per_rank] : colls_) {
      const ProcessGroup* pg = groups_.find(pg_name);
      if (pg == nullptr) continue;
      const std::string pg_label =
          pg_name.empty() ? "default group" : fmt::format("process group \"{}\"", pg_name);
      const int64_t ref_rank = pg->ranks.front();
      for (const int64_t member : pg->ranks) {
        if (member != ref_rank) compare_collectives(pg_label, per_rank, ref_rank, member);
      }
    }
  }

  void compare_collectives(const std::string& pg_label, const std::map<int64_t, std::vector<CollRecord>>& per_rank,
                           int64_t ref_rank, int64_t member) {
    static const std::vector<CollRecord> kNone;
    const auto ref_it = per_rank.find(ref_rank);
    const auto& ref = ref_it == per_rank.end() ? kNone : ref_it->second;
    const auto it = per_rank.find(member);
    const auto& seq = it == per_rank.end() ? kNone : it->second;
    const size_t common = std::min(seq.size(), ref.size());
    for (size_t i = 0; i < common; ++i) {
      if (seq[i].type != ref[i].type || seq[i].size != ref[i].size) {
        findings_.add(Severity::kError, "collective mismatch", seq[i].where,
                      fmt::format("collective #{} of {} is {} of {} bytes here but {} of {} bytes on rank {} ({})", i,
                                  pg_label, collective_name(seq[i].type), seq[i].size, collective_name(ref[i].type),
                                  ref[i].size, ref_rank, to_string(ref[i].where)));
      }
    }
    if (seq.size() != ref.size()) {
      findings_.add(Severity::kError, "collective count",
                    {.file = files_[static_cast<size_t>(member)].path, .rank = member},
                    fmt::format("rank {} issues {} collectives in {} but rank {} issues {}: they would never all "
                                "complete",
                                member, seq.size(), pg_label, ref_rank, ref.size()));
    }
  }

  const std::vector<RankFile>& files_;
  const ValidateOptions& options_;
  ValidationReport report_;
  Findings findings_;
  const int64_t world_;
  ProcessGroups groups_;
  std::map<P2pKey, std::deque<P2pRecord>> sends_;
  std::map<P2pKey, std::deque<P2pRecord>> recvs_;
  // pg -> rank -> collectives in file order
  std::map<std::string, std::map<int64_t, std::vector<CollRecord>>> colls_;
  Node node_;
};

}  // namespace

ValidationReport validate_workload(const std::vector<RankFile>& files, const ValidateOptions& options) {
  return WorkloadValidator(files, options).run();
}

}  // namespace fabemu::traces
