#include "tests/dpdk/fabric_test_support.h"

#include "traces/generate.h"
#include "traces/trace_set.h"

namespace fabemu::test {

using namespace emu;
using namespace emu::walker_test;

WalkerOptions Workload::options() const {
  WalkerOptions o;
  o.system = sys;
  return o;
}

RunResult walk(Fabric& fabric, const Workload& w) {
  traces::ProcessGroups groups(static_cast<int64_t>(w.files.size()));
  Walker walker(fabric, w.net, w.files, groups, w.options(), nullptr);
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

host::dpdk::FaultConfig injected_faults() {
  host::dpdk::FaultConfig f;
  f.drop_rate = 0.01;
  f.reorder_rate = 0.05;
  f.duplicate_rate = 0.01;
  f.seed = 7;
  return f;
}

}  // namespace fabemu::test
