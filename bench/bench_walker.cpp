// Speed of the rank walker (emulator/walker.h) on ASTRA-sim's scaling cases: 1 MiB ring all-reduces on
// a Ring of N NPUs (50 ASTRA GB/s, 500 ns per link) with the system of system_ring_4chunks.json (4
// splits, 1 active chunk, endpoint 10 ns, local memory 1600 GB/s). README.md says how to run it.
//   BM_AllReduce/ranks:N/closed_form:C   analytical model; C=1 the closed form, C=0 message by message
//   BM_AllReducePacket/ranks:64          packet model (FIFO links, whole messages as ASTRA-sim)
//   BM_Chained/count:K/closed_form:C     K chained all-reduces at N=64: the per-collective cost
// A run is one whole `fabemu run`: walker construction (opening and reading every rank's trace) and
// the walk. Counters: messages = point-to-point messages per CPU second (the closed form counts the
// messages it evaluated), collectives per CPU second, emulated_ns (checked: exactly count x the
// message-by-message time of one all-reduce), vs_astra_pct (deviation from ASTRA-sim's emulated time,
// REFERENCE.md), peak_RSS_MiB as in bench_traces.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "emulator/config.h"
#include "emulator/event_queue.h"
#include "emulator/packet_fabric.h"
#include "emulator/topology.h"
#include "emulator/walker.h"
#include "traces/generate.h"
#include "traces/process_groups.h"

namespace fabemu::bench {
namespace {
using fabemu::bench::peak_rss_mib;
using fabemu::bench::reset_peak_rss;
namespace fs = std::filesystem;

constexpr uint64_t kMiB = uint64_t{1} << 20;
// Bump when what is generated changes, so cached workloads are made anew.
constexpr const char* kStamp = "fabemu_bench_walker v1";

// ASTRA-sim's Ring_<N>npus.yml: one Ring dimension, 50 GB/s (2^30 bytes/s), 500 ns.
emu::NetworkConfig ring_network(int64_t npus) {
  emu::NetworkConfig net;
  emu::NetworkDim d;
  d.topology = emu::DimTopology::kRing;
  d.npus = npus;
  d.bandwidth = emu::Rate::from_astra_gbps(50);
  d.bandwidth_gbps = 50;
  d.latency = emu::Duration::from_ns(500);
  net.dims.push_back(d);
  return net;
}

// system_ring_4chunks.json.
emu::SystemConfig ring_4chunks_system() {
  emu::SystemConfig s;
  s.scheduling_policy = emu::SchedulingPolicy::kLifo;
  s.endpoint_delay = emu::Duration::from_ns(10);
  s.active_chunks_per_dimension = 1;
  s.preferred_dataset_splits = 4;
  s.all_reduce = s.all_gather = s.reduce_scatter = s.all_to_all = {emu::CollectiveImpl{}};
  s.collective_optimization = emu::CollectiveOptimization::kLocalBwAware;
  s.local_mem_bw_gbps = 1600;
  s.peak_perf_tflops = 900;
  return s;
}

// The rank files of `count` chained 1 MiB all-reduces over `ranks` ranks, generated on first use into
// the build tree and reused afterwards (a stamp file, written last, marks a complete set).
std::optional<std::vector<std::string>> ensure_workload(benchmark::State& state, int64_t ranks, int64_t count) {
  static std::set<std::string> checked;
  const fs::path dir = fs::path(FABEMU_BENCH_DATA_DIR) / "walker" /
                       ("all_reduce_1MB_N" + std::to_string(ranks) + "_K" + std::to_string(count));
  const std::string prefix = (dir / "all_reduce").string();
  const fs::path stamp = dir / "complete";
  traces::CollectiveSpec spec;
  spec.type = ChakraProtoMsg::ALL_REDUCE;
  spec.ranks = ranks;
  spec.size_bytes = kMiB;
  spec.count = count;
  try {
    if (checked.insert(prefix).second) {
      std::string line;
      std::ifstream in(stamp);
      if (!std::getline(in, line) || line != kStamp) {
        fs::remove_all(dir);
        std::fprintf(stderr, "generating %s.<0..%lld>.et (once)...\n", prefix.c_str(), static_cast<long long>(ranks - 1));
        traces::generate_collective(spec, prefix);
        std::ofstream(stamp) << kStamp << '\n';
      }
    }
  } catch (const std::exception& e) {
    checked.erase(prefix);
    state.SkipWithError(e.what());
    return std::nullopt;
  }
  std::vector<std::string> paths;
  for (int64_t r = 0; r < ranks; ++r) paths.push_back(prefix + "." + std::to_string(r) + ".et");
  return paths;
}

enum class Model { kAnalytical, kPacket };

// One whole run, as `fabemu run` wires it.
emu::RunResult run_once(const std::vector<std::string>& paths, int64_t ranks, Model model, bool closed_form) {
  const emu::NetworkConfig network = ring_network(ranks);
  emu::WalkerOptions opt;
  opt.system = ring_4chunks_system();
  opt.closed_form = closed_form;
  emu::Engine engine(1 << 16);
  emu::Topology topology(network);
  std::unique_ptr<emu::Fabric> fabric;
  if (model == Model::kPacket) {
    fabric = std::make_unique<emu::PacketFabric>(engine, topology, ~uint32_t{0});
  } else {
    fabric = std::make_unique<emu::AnalyticalFabric>(engine, topology);
  }
  traces::ProcessGroups groups(ranks);
  emu::Walker walker(*fabric, network, paths, groups, opt);
  return walker.run();
}

// ASTRA-sim's emulated time of one 1 MiB all-reduce (REFERENCE.md, analytical, congestion-unaware).
// fabemu keeps ps and does not floor each message and reduction to whole ns as ASTRA-sim does, so it
// is slightly longer (N=64: 297,467.536 ns); the deviation is reported as a counter.
double astra_ns(int64_t ranks) {
  switch (ranks) {
    case 64: return 296'896;
    case 256: return 1'079'200;
    case 1024: return 4'206'616;
    default: return 0;
  }
}

// The emulated time of ONE all-reduce over `ranks` ranks, message by message on the analytical model
// (computed once per N): every case must give exactly `count` times it, whatever the path or model.
std::optional<uint64_t> reference_ps(benchmark::State& state, int64_t ranks) {
  static std::map<int64_t, uint64_t> known;
  if (auto it = known.find(ranks); it != known.end()) return it->second;
  const auto paths = ensure_workload(state, ranks, 1);
  if (!paths) return std::nullopt;
  const emu::RunResult r = run_once(*paths, ranks, Model::kAnalytical, false);
  return known[ranks] = r.total.ps();
}

void run_case(benchmark::State& state, int64_t ranks, int64_t count, Model model, bool closed_form) {
  const std::optional<uint64_t> one = reference_ps(state, ranks);
  const auto paths = ensure_workload(state, ranks, count);
  if (!one || !paths) return;
  reset_peak_rss();
  uint64_t messages = 0, events = 0, collectives = 0, closed = 0;
  uint64_t emulated_ps = 0;
  for (auto _ : state) {
    emu::RunResult r = run_once(*paths, ranks, model, closed_form);
    if (!r.stuck.empty()) {
      state.SkipWithError(("the workload deadlocked: " + r.stuck.front()).c_str());
      return;
    }
    messages += r.messages;
    events += r.events;
    collectives += r.collectives.size();
    closed = r.collectives_closed_form;
    emulated_ps = r.total.ps();
  }
  if (emulated_ps != static_cast<uint64_t>(count) * *one) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "emulated time %llu ps, expected %lld x %llu ps (one all-reduce, message by message)",
                  static_cast<unsigned long long>(emulated_ps), static_cast<long long>(count),
                  static_cast<unsigned long long>(*one));
    state.SkipWithError(msg);
    return;
  }
  state.counters["messages"] = benchmark::Counter(static_cast<double>(messages), benchmark::Counter::kIsRate);
  state.counters["collectives"] = benchmark::Counter(static_cast<double>(collectives), benchmark::Counter::kIsRate);
  state.counters["msgs_per_run"] = static_cast<double>(messages) / static_cast<double>(state.iterations());
  state.counters["events_per_run"] = static_cast<double>(events) / static_cast<double>(state.iterations());
  state.counters["closed_form_phases"] = static_cast<double>(closed);
  state.counters["emulated_ns"] = static_cast<double>(emulated_ps) / 1000.0;
  state.counters["peak_RSS_MiB"] = peak_rss_mib();
  if (const double astra = astra_ns(ranks) * static_cast<double>(count); astra > 0) {
    state.counters["vs_astra_pct"] = (static_cast<double>(emulated_ps) / 1000.0 - astra) * 100.0 / astra;
  }
}

void BM_AllReduce(benchmark::State& state) {
  run_case(state, state.range(0), 1, Model::kAnalytical, state.range(1) != 0);
}
BENCHMARK(BM_AllReduce)
    ->ArgNames({"ranks", "closed_form"})
    ->ArgsProduct({{64, 256, 1024}, {1, 0}})
    ->Unit(benchmark::kMillisecond);

void BM_AllReducePacket(benchmark::State& state) {
  run_case(state, state.range(0), 1, Model::kPacket, false);
}
BENCHMARK(BM_AllReducePacket)->ArgNames({"ranks"})->Arg(64)->Unit(benchmark::kMillisecond);

void BM_Chained(benchmark::State& state) {
  run_case(state, 64, state.range(0), Model::kAnalytical, state.range(1) != 0);
}
BENCHMARK(BM_Chained)
    ->ArgNames({"count", "closed_form"})
    ->Args({10, 1})
    ->Args({100, 1})
    ->Args({1000, 1})
    ->Args({10, 0})
    ->Args({100, 0})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fabemu::bench

// The walker keeps every rank's trace open: raise the soft file limit to the hard one for N=1024.
int main(int argc, char** argv) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
