// The 36 shared ASTRA-sim microbenchmark runs the FPGA fabrics are held to the software packet model on:
// 4 collectives x 4, 8 and 16 NPUs x Ring, Switch and FullyConnected networks, with the ring system of 4
// chunks (../shared/traces, ../shared/configs/astra-sim).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "emulator/config.h"
#include "emulator/event_queue.h"
#include "emulator/link_results.h"
#include "emulator/packet_fabric.h"
#include "emulator/topology.h"
#include "emulator/walker.h"
#include "host/config/astra_config.h"
#include "traces/trace_set.h"

namespace fabemu::fpga_test {

struct Microbenchmark {
  std::string what;                // "all_reduce 8npus Ring"
  std::vector<std::string> files;  // one per rank (empty when the shared traces lack it: the caller asserts)
  int npus = 0;
  emu::NetworkConfig network;
};

inline std::vector<Microbenchmark> shared_microbenchmarks(const std::filesystem::path& traces_dir) {
  const std::filesystem::path cfg = traces_dir.parent_path() / "configs" / "astra-sim";
  std::vector<Microbenchmark> out;
  for (const int n : {4, 8, 16}) {
    for (const char* coll : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}) {
      for (const char* topo : {"Ring", "Switch", "FullyConnected"}) {
        const std::string npus = std::to_string(n) + "npus";
        Microbenchmark mb;
        mb.what = std::string(coll) + " " + npus + " " + topo;
        mb.npus = n;
        const auto prefix = traces_dir / "astra-sim/examples/workload/microbenchmarks" / coll / (npus + "_1MB") / coll;
        for (const auto& f : traces::find_rank_files(prefix.string())) mb.files.push_back(f.path);
        mb.network = host::load_network_yml((cfg / (std::string(topo) + "_" + npus + ".yml")).string());
        out.push_back(std::move(mb));
      }
    }
  }
  return out;
}

inline emu::SystemConfig microbenchmark_system(const std::filesystem::path& traces_dir) {
  return host::load_system_json((traces_dir.parent_path() / "configs/astra-sim/system_ring_4chunks.json").string(), 1);
}

// Walks `mb` over the fabric `make(engine, topology)` returns (a std::unique_ptr), calls `after(fabric)`
// once the walk is done (an FPGA fabric's finish() and counters) and returns the report with the fabric's
// link results.
template <class Make, class After>
emu::RunResult walk_microbenchmark(const Microbenchmark& mb, const emu::SystemConfig& sys, Make make, After after) {
  emu::Engine engine(1 << 12);
  const emu::Topology topology(mb.network);
  auto fabric = make(engine, topology);
  emu::WalkerOptions o;
  o.system = sys;
  const traces::ProcessGroups groups(mb.npus);
  emu::RunResult r = emu::Walker(*fabric, mb.network, mb.files, groups, std::move(o)).run();
  after(*fabric);
  r.links = emu::link_results(*fabric, r.total);
  return r;
}

// The software packet model (MTU 4096) on `mb`: the report the FPGA fabrics are held to.
inline emu::RunResult walk_packet_model(const Microbenchmark& mb, const emu::SystemConfig& sys) {
  return walk_microbenchmark(
      mb, sys, [](emu::Engine& e, const emu::Topology& t) { return std::make_unique<emu::PacketFabric>(e, t, 4096); },
      [](emu::PacketFabric&) {});
}

}  // namespace fabemu::fpga_test
