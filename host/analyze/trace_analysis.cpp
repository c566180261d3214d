#include "host/analyze/trace_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "host/analyze/rank_graph.h"
#include "traces/collective_order.h"
#include "traces/process_groups.h"

namespace fabemu::analyze {
namespace {

uint64_t non_negative(std::optional<int64_t> v) { return static_cast<uint64_t>(std::max<int64_t>(0, v.value_or(0))); }

// One pass over the rank files: what each rank does, and each collective's members.
class WorkloadScan {
 public:
  WorkloadScan(const std::vector<traces::RankFile>& files, const AnalyzeOptions& options)
      : files_(files), groups_(static_cast<int64_t>(files.size())) {
    if (options.comm_group_file) groups_.load_file(*options.comm_group_file);
  }

  void run(TraceAnalysis& out) {
    for (const auto& f : files_) out.ranks.push_back(scan_rank(f, out));
    for (auto& I : out.collectives) I.group_size = out.group_ranks[I.pg].size();
  }

 private:
  RankAnalysis scan_rank(const traces::RankFile& file, TraceAnalysis& out) {
    RankAnalysis R{.rank = static_cast<int32_t>(file.rank), .path = file.path};
    traces::TraceReader reader(file.path, file.rank);
    RankGraph graph(false);
    traces::Node node;
    while (reader.next(node)) {
      ++R.nodes;
      graph.add(node);
      switch (node.type()) {
        case ChakraProtoMsg::METADATA_NODE: groups_.add_from_metadata_node(node, reader.last_location()); break;
        case ChakraProtoMsg::COMP_NODE: add_compute(node, R); break;
        case ChakraProtoMsg::COMM_COLL_NODE: add_collective(node, R, out); break;
        case ChakraProtoMsg::COMM_SEND_NODE: add_send(node, R, out); break;
        case ChakraProtoMsg::COMM_RECV_NODE:
          ++R.recvs;
          R.recv_bytes += non_negative(traces::attr_int(node, "comm_size"));
          break;
        default: break;
      }
    }
    Chain chain = graph.longest_chain();
    R.chain_us = chain.duration_us;
    R.chain_ids = std::move(chain.ids);
    return R;
  }

  static void add_compute(const traces::Node& node, RankAnalysis& R) {
    ++R.comp_nodes;
    R.compute_us += node.duration_micros();
    R.num_ops += non_negative(traces::attr_int(node, "num_ops"));
    R.tensor_bytes += non_negative(traces::attr_int(node, "tensor_size"));
  }

  void add_collective(const traces::Node& node, RankAnalysis& R, TraceAnalysis& out) {
    const auto place = order_.place(R.rank, node, groups_);
    if (!place) {
      ++out.untyped_collectives;
      return;
    }
    const traces::CommInfo info = traces::comm_info(node);
    const uint64_t bytes = info.size.value_or(0);
    R.collective_bytes += bytes;
    auto& seqs = instances_[place->pg->name];
    if (seqs.empty()) out.group_ranks[place->pg->name] = place->pg->ranks;
    if (seqs.size() <= place->seq) seqs.resize(place->seq + 1, kNone);
    size_t& slot = seqs[place->seq];
    if (slot == kNone) {
      slot = out.collectives.size();
      CollectiveInstance I;
      I.pg = place->pg->name;
      I.seq = place->seq;
      I.type = *info.collective;
      I.name = node.name();
      I.involved_dim = info.involved_dim;
      out.collectives.push_back(std::move(I));
    }
    CollectiveInstance& I = out.collectives[slot];
    I.mixed_types = I.mixed_types || I.type != *info.collective;
    I.members.push_back({R.rank, node.id(), bytes});
  }

  // A SEND to a peer outside the workload counts for its rank but in no matrix cell (trace validate reports it).
  void add_send(const traces::Node& node, RankAnalysis& R, TraceAnalysis& out) const {
    const traces::CommInfo info = traces::comm_info(node);
    const uint64_t bytes = info.size.value_or(0);
    ++R.sends;
    R.send_bytes += bytes;
    if (!info.dst || *info.dst < 0 || *info.dst >= static_cast<int64_t>(files_.size())) return;
    TrafficCell& cell = out.p2p[{R.rank, static_cast<int32_t>(*info.dst)}];
    cell.bytes += bytes;
    ++cell.messages;
  }

  static constexpr size_t kNone = std::numeric_limits<size_t>::max();
  const std::vector<traces::RankFile>& files_;
  traces::ProcessGroups groups_;
  traces::CollectiveOrder order_;
  std::map<std::string, std::vector<size_t>> instances_;  // group -> seq -> index into collectives
};

// The size most members have (ties: the smaller), the spread, and who differs from it.
void finish_instance(CollectiveInstance& I) {
  std::map<uint64_t, size_t> counts;
  std::vector<double> values;
  for (const auto& m : I.members) {
    ++counts[m.bytes];
    values.push_back(static_cast<double>(m.bytes));
  }
  size_t most = 0;
  for (const auto& [bytes, n] : counts) {
    if (n > most) {
      most = n;
      I.typical_bytes = bytes;
    }
  }
  I.bytes = spread_of(values);
  if (I.bytes.max_rank >= 0) I.bytes.max_rank = I.members[static_cast<size_t>(I.bytes.max_rank)].rank;
  for (const auto& m : I.members) {
    if (m.bytes != I.typical_bytes) I.deviating.push_back(m);
  }
}

// Worse first: the larger CV, then the larger max/mean, then members missing, then group and seq.
bool worse(const CollectiveInstance& a, const CollectiveInstance& b) {
  if (a.bytes.cv != b.bytes.cv) return a.bytes.cv > b.bytes.cv;
  if (a.max_over_mean() != b.max_over_mean()) return a.max_over_mean() > b.max_over_mean();
  const size_t missing_a = a.group_size - a.members.size(), missing_b = b.group_size - b.members.size();
  if (missing_a != missing_b) return missing_a > missing_b;
  return std::tie(a.pg, a.seq) < std::tie(b.pg, b.seq);
}

void add_to_summary(CollectiveSummary& s, const CollectiveInstance& I, size_t index) {
  ++s.instances;
  if (!I.balanced()) ++s.imbalanced;
  for (const auto& m : I.members) s.bytes += m.bytes;
  if (s.worst_instance < 0 || I.bytes.cv > s.worst_cv) {
    s.worst_cv = I.bytes.cv;
    s.worst_instance = static_cast<int64_t>(index);
  }
}

void summarize(TraceAnalysis& out) {
  std::map<std::string, CollectiveSummary> by_group, by_type;
  for (size_t i = 0; i < out.collectives.size(); ++i) {
    CollectiveInstance& I = out.collectives[i];
    finish_instance(I);
    if (!I.balanced()) out.worst_first.push_back(i);
    auto& g = by_group[I.pg];
    g.key = I.pg;
    g.ranks = I.group_size;
    add_to_summary(g, I, i);
    auto& t = by_type[traces::collective_name(I.type)];
    t.key = traces::collective_name(I.type);
    add_to_summary(t, I, i);
  }
  std::sort(out.worst_first.begin(), out.worst_first.end(),
            [&](size_t a, size_t b) { return worse(out.collectives[a], out.collectives[b]); });
  for (auto& [k, s] : by_group) out.by_group.push_back(std::move(s));
  for (auto& [k, s] : by_type) out.by_type.push_back(std::move(s));
}

void spread_per_rank(TraceAnalysis& out) {
  auto spread = [&](auto field) {
    std::vector<double> v;
    for (const auto& r : out.ranks) v.push_back(static_cast<double>(r.*field));
    return spread_of(v);
  };
  out.compute_us = spread(&RankAnalysis::compute_us);
  out.num_ops = spread(&RankAnalysis::num_ops);
  out.tensor_bytes = spread(&RankAnalysis::tensor_bytes);
  out.collective_bytes = spread(&RankAnalysis::collective_bytes);
  out.chain_us = spread(&RankAnalysis::chain_us);
}

}  // namespace

Spread spread_of(const std::vector<double>& values) {
  Spread s;
  if (values.empty()) return s;
  s.min = s.max = values.front();
  s.max_rank = 0;
  double sum = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    sum += values[i];
    s.min = std::min(s.min, values[i]);
    if (values[i] > s.max) {
      s.max = values[i];
      s.max_rank = static_cast<int64_t>(i);
    }
  }
  s.mean = sum / static_cast<double>(values.size());
  double squares = 0;
  for (const double v : values) squares += (v - s.mean) * (v - s.mean);
  // Equal values give exactly 0 (no rounding residue) so that "perfect balance" reads as CV 0.
  s.cv = (s.mean > 0 && s.min != s.max) ? std::sqrt(squares / static_cast<double>(values.size())) / s.mean : 0.0;
  return s;
}

TraceAnalysis analyze_workload(const std::string& prefix, const std::vector<traces::RankFile>& files,
                               const AnalyzeOptions& options) {
  TraceAnalysis out;
  out.prefix = prefix;
  WorkloadScan scan(files, options);
  scan.run(out);
  summarize(out);
  spread_per_rank(out);
  return out;
}

}  // namespace fabemu::analyze
