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

}  // namespace

ValidationReport validate_workload(const std::vector<RankFile>& files, const ValidateOptions& options) {
  ValidationReport report;
  Findings findings(report, options.max_findings_per_kind);
  const auto world = static_cast<int64_t>(files.size());
  ProcessGroups groups(world);
  if (options.comm_group_file) {
    try {
      groups.load_file(*options.comm_group_file);
    } catch (const TraceError& e) {
      findings.add(Severity::kError, "comm-group file", e.where(), e.detail());
    }
  }

  std::map<P2pKey, std::deque<P2pRecord>> sends;
  std::map<P2pKey, std::deque<P2pRecord>> recvs;
  // pg -> rank -> collectives in file order
  std::map<std::string, std::map<int64_t, std::vector<CollRecord>>> colls;

  Node node;
  for (const RankFile& file : files) {
    RankValidation rv{.rank = file.rank, .path = file.path};
    // Pass 1: every node on its own, and the records for the cross-rank checks.
    try {
      TraceReader reader(file.path, file.rank);
      uint64_t cpu_colls = 0;
      std::optional<Location> first_cpu_coll;
      while (reader.next(node)) {
        const Location at = reader.last_location();
        const NodeType type = node.type();
        if (type == ChakraProtoMsg::INVALID_NODE) {
          findings.add(Severity::kWarning, "invalid node", at, "INVALID_NODE (type 0): ignored when replayed");
        }
        if (type == ChakraProtoMsg::METADATA_NODE) {
          try {
            groups.add_from_metadata_node(node, at);
          } catch (const TraceError& e) {
            findings.add(Severity::kError, "process group", e.where(), e.detail());
          }
        }
        if (!is_comm(type)) continue;
        const CommInfo c = comm_info(node);
        auto need = [&](bool present, const char* attr, const char* why) {
          if (!present) {
            findings.add(Severity::kError, std::string("missing ") + attr, at,
                         fmt::format("{} lacks {} ({})", node_type_name(type), attr, why));
          }
        };
        if (type == ChakraProtoMsg::COMM_COLL_NODE) {
          if (!c.raw_comm_type && !c.size && c.is_cpu_op) {
            ++cpu_colls;
            if (!first_cpu_coll) first_cpu_coll = at;
            continue;
          }
          if (c.raw_comm_type && !c.collective) {
            findings.add(Severity::kError, "bad comm_type", at,
                         fmt::format("comm_type {} is not a collective (0..9, ALL_REDUCE..BARRIER)", *c.raw_comm_type));
            continue;
          }
          need(c.raw_comm_type.has_value(), "comm_type", "which collective");
          need(c.size.has_value(), "comm_size", "bytes per rank");
          if (!c.collective || !c.size) continue;
          const ProcessGroup* pg = groups.find(c.pg);
          if (pg == nullptr) {
            findings.add(Severity::kError, "unknown process group", at,
                         fmt::format("pg_name \"{}\" is not defined by a METADATA_NODE or a comm-group file", c.pg));
            continue;
          }
          if (!std::binary_search(pg->ranks.begin(), pg->ranks.end(), file.rank)) {
            findings.add(Severity::kError, "not a member", at,
                         fmt::format("rank {} issues a collective in process group \"{}\" but is not a member of it",
                                     file.rank, c.pg));
            continue;
          }
          colls[pg->name][file.rank].push_back({*c.collective, *c.size, at});
        } else {
          const bool send = type == ChakraProtoMsg::COMM_SEND_NODE;
          const auto peer = send ? c.dst : c.src;
          need(peer.has_value(), send ? "comm_dst" : "comm_src", send ? "receiving rank" : "sending rank");
          need(c.size.has_value(), "comm_size", "bytes");
          if (!peer || !c.size) continue;
          if (*peer < 0 || *peer >= world) {
            findings.add(Severity::kError, "peer out of range", at,
                         fmt::format("{} {} is not a rank of this workload (0..{})", send ? "comm_dst" : "comm_src",
                                     *peer, world - 1));
            continue;
          }
          if (!c.tag) {
            findings.add(Severity::kWarning, "missing comm_tag", at, "no comm_tag: matched as tag 0");
          }
          const int64_t tag = c.tag.value_or(0);
          if (send) {
            sends[{file.rank, *peer, tag}].push_back({*c.size, at});
          } else {
            recvs[{*peer, file.rank, tag}].push_back({*c.size, at});
          }
        }
      }
      rv.nodes = reader.nodes_read();
      if (cpu_colls > 0) {
        findings.add(Severity::kWarning, "cpu-side collective", *first_cpu_coll,
                     fmt::format("{} CPU-side COMM_COLL_NODEs (is_cpu_op) carry no comm_type/comm_size, e.g. this "
                                 "one; they are host-side records and replay as zero-cost nodes",
                                 cpu_colls));
      }
    } catch (const TraceError& e) {
      findings.add(Severity::kError, "unreadable", e.where(), e.detail());
      report.ranks.push_back(rv);
      continue;
    } catch (const std::bad_alloc&) {
      findings.add(Severity::kError, "unreadable", {.file = file.path, .rank = file.rank},
                   "out of memory reading this rank's communication nodes");
      report.ranks.push_back(rv);
      continue;
    }
    // Pass 2: the dependency walk (duplicates, dangling dependencies, cycles). The resolver is never
    // strict here, so that every problem is found: --strict makes each one an error finding (the first
    // few of each kind shown, all counted), else each kind is one warning with its count.
    try {
      TraceReader reader(file.path, file.rank);
      ResolverOptions resolver_options{.ctrl_deps = options.ctrl_deps, .prescan = true};
      if (options.strict) {
        resolver_options.on_problem = [&findings](const DependencyProblem& p) {
          findings.add(Severity::kError, problem_kind(p.kind), p.where, describe(p));
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
      if (!options.strict) add_dependency_warnings(findings, file, resolver);
    } catch (const TraceError& e) {
      findings.add(Severity::kError, "dependencies", e.where(), e.detail());
    } catch (const std::bad_alloc&) {
      findings.add(Severity::kError, "dependencies", {.file = file.path, .rank = file.rank},
                   "out of memory walking this rank's dependencies");
    }
    report.ranks.push_back(std::move(rv));
  }

  // Every SEND has its RECV: match in issue order per (src, dst, tag).
  for (auto& [key, queue] : sends) {
    const auto& [src, dst, tag] = key;
    auto& matches = recvs[key];
    for (size_t i = 0; i < queue.size(); ++i) {
      if (i >= matches.size()) {
        findings.add(Severity::kError, "unmatched send", queue[i].where,
                     fmt::format("SEND to rank {} tag {} ({} bytes) has no matching RECV (src {}, tag {}) on rank {}",
                                 dst, tag, queue[i].size, src, tag, dst));
      } else if (matches[i].size != queue[i].size) {
        findings.add(Severity::kError, "size mismatch", queue[i].where,
                     fmt::format("SEND of {} bytes to rank {} tag {} is matched by a RECV of {} bytes at {}",
                                 queue[i].size, dst, tag, matches[i].size, to_string(matches[i].where)));
      }
    }
    for (size_t i = queue.size(); i < matches.size(); ++i) {
      findings.add(Severity::kError, "unmatched recv", matches[i].where,
                   fmt::format("RECV from rank {} tag {} ({} bytes) has no matching SEND on rank {}", src, tag,
                               matches[i].size, src));
    }
  }
  for (auto& [key, queue] : recvs) {
    if (sends.count(key) != 0) continue;
    const auto& [src, dst, tag] = key;
    for (const auto& r : queue) {
      findings.add(Severity::kError, "unmatched recv", r.where,
                   fmt::format("RECV from rank {} tag {} ({} bytes) has no matching SEND on rank {}", src, tag, r.size,
                               src));
    }
  }

  // Members of each process group issue the same collectives in the same order with the same sizes.
  for (const auto& [pg_name, per_rank] : colls) {
    const ProcessGroup* pg = groups.find(pg_name);
    if (pg == nullptr) continue;
    const int64_t ref_rank = pg->ranks.front();
    static const std::vector<CollRecord> kNone;
    const auto ref_it = per_rank.find(ref_rank);
    const auto& ref = ref_it == per_rank.end() ? kNone : ref_it->second;
    const std::string pg_label = pg_name.empty() ? "default group" : fmt::format("process group \"{}\"", pg_name);
    for (const int64_t member : pg->ranks) {
      if (member == ref_rank) continue;
      const auto it = per_rank.find(member);
      const auto& seq = it == per_rank.end() ? kNone : it->second;
      const size_t common = std::min(seq.size(), ref.size());
      for (size_t i = 0; i < common; ++i) {
        if (seq[i].type != ref[i].type || seq[i].size != ref[i].size) {
          findings.add(Severity::kError, "collective mismatch", seq[i].where,
                       fmt::format("collective #{} of {} is {} of {} bytes here but {} of {} bytes on rank {} ({})", i,
                                   pg_label, collective_name(seq[i].type), seq[i].size, collective_name(ref[i].type),
                                   ref[i].size, ref_rank, to_string(ref[i].where)));
        }
      }
      if (seq.size() != ref.size()) {
        findings.add(Severity::kError, "collective count",
                     {.file = files[static_cast<size_t>(member)].path, .rank = member},
                     fmt::format("rank {} issues {} collectives in {} but rank {} issues {}: they would never all "
                                 "complete",
                                 member, seq.size(), pg_label, ref_rank, ref.size()));
      }
    }
  }
  findings.finish();
  return report;
}

}  // namespace fabemu::traces
