#include "tests/dpdk/fabric_test_support.h"

#include <filesystem>

#include "host/config/astra_config.h"
#include "traces/generate.h"
#include "traces/trace_set.h"

namespace fabemu::test {

namespace fs = std::filesystem;
using namespace emu;
using namespace emu::walker_test;

WalkerOptions Workload::options() const {
  WalkerOptions o;
  o.system = sys;
  return o;
}

RunResult walk(Fabric& fabric, const Workload& w) {
  traces::ProcessGroups groups(static_cast<int64_t>(w.files.size()));
  Walker walker(fabric, w.net, w.files, groups, w.options());
  return walker.run();
}

Workload generated_all_reduce(const ScratchDir& dir, uint64_t bytes) {
  Workload w;
  w.net = network({dim(DimTopology::kRing, 8)});
  w.sys = system_config(CollectiveAlgo::kRing, 4, 1);
  traces::CollectiveSpec spec;
  spec.type = ChakraProtoMsg::ALL_REDUCE;
  spec.ranks = 8;
  spec.size_bytes = bytes;
  w.files = traces::generate_collective(spec, dir.file("allreduce"));
  return w;
}

emu::NetworkDim dim_at(emu::DimTopology kind, int64_t npus, uint64_t bytes_per_sec) {
  emu::NetworkDim d = dim(kind, npus);
  d.bandwidth = emu::Rate::from_bytes_per_sec(bytes_per_sec);
  d.bandwidth_gbps = static_cast<double>(bytes_per_sec) / 1073741824.0;  // ASTRA-sim's GB/s are GiB/s
  return d;
}

Workload parallel_links_all_to_all(const ScratchDir& dir, uint32_t collectives) {
  Workload w;
  w.net = network({dim_at(DimTopology::kFullyConnected, 4, 31'250'000)});
  w.sys = system_config(CollectiveAlgo::kDirect, 1, 1);
  traces::CollectiveSpec spec;
  spec.type = ChakraProtoMsg::ALL_TO_ALL;
  spec.ranks = 4;
  spec.size_bytes = uint64_t{4} << 20;  // 1 MiB to each rank
  spec.count = collectives;
  w.files = traces::generate_collective(spec, dir.file("alltoall4"));
  return w;
}

host::dpdk::FaultConfig injected_faults() {
  host::dpdk::FaultConfig f;
  f.drop_rate = 0.01;
  f.reorder_rate = 0.05;
  f.duplicate_rate = 0.01;
  f.seed = 7;
  return f;
}

std::optional<Workload> shared_microbenchmark(const std::string& coll, int n) {
  const auto traces_dir = shared_traces_dir();
  if (!traces_dir) return std::nullopt;
  const fs::path configs = traces_dir->parent_path() / "configs" / "astra-sim";
  const fs::path prefix = *traces_dir / "astra-sim/examples/workload/microbenchmarks" / coll /
                          (std::to_string(n) + "npus_1MB") / coll;
  if (!fs::exists(prefix.string() + ".0.et")) return std::nullopt;
  Workload w;
  w.net = host::load_network_yml((configs / ("Ring_" + std::to_string(n) + "npus.yml")).string());
  w.sys = host::load_system_json((configs / "system_ring_4chunks.json").string(), 1);
  for (const auto& f : traces::find_rank_files(prefix.string())) w.files.push_back(f.path);
  return w;
}

}  // namespace fabemu::test
