// ASTRA-sim's two configuration files as plain data: the network (network.yml, one entry per
// dimension) and the system layer (system.json: collective algorithms, chunking, delays). Filled by
// fabemu::host::load_network_yml / load_system_json (host/config); every key, unit and default is
// listed in host/config/README.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/time.h"

namespace fabemu::emu {

// The building block of one network dimension, named as in ASTRA-sim's analytical backend, plus
// fabemu's two-level fat-tree (leaf-spine; see FatTreeConfig).
enum class DimTopology { kRing, kFullyConnected, kSwitch, kFatTree };

// A two-level fat-tree (leaf-spine): `leaves` leaf switches with `hosts_per_leaf` NPUs each, every
// leaf joined to every one of `spines` spine switches by one link each way. The NPU at coordinate c along
// the dimension hangs off leaf c / hosts_per_leaf. Cross-leaf traffic picks its spine by ECMP on (src, dst,
// flow). A network's only dimension, or one dimension of a product (e.g. 8 GPUs on NVSwitch x a fat-tree
// between the nodes: one fat-tree per position along the other dimensions, a rail). Its NetworkDim has
// topology kFatTree, npus = hosts_per_leaf * leaves and this description (its bandwidth / latency are the
// host links'; the Topology reads the rates and latencies from here).
struct FatTreeConfig {
  int32_t hosts_per_leaf = 0;
  int32_t leaves = 0;
  int32_t spines = 0;
  Rate host_link_rate = Rate::from_ps_per_byte_q32(0);  // NPU <-> leaf, each way
  Duration host_link_latency;
  Rate spine_link_rate = Rate::from_ps_per_byte_q32(0);  // leaf <-> spine, each way
  Duration spine_link_latency;
  double host_gbps = 0;   // as written (gigabits/s), for reports
  double spine_gbps = 0;  // as written (gigabits/s), for reports
  // Leaf down-link capacity over up-link capacity: (hosts_per_leaf * host rate) / (spines * spine rate);
  // 1 = non-blocking, 2 = 2:1 oversubscribed. Computed from the exact Q32.32 rates.
  double oversubscription() const {
    const auto host = static_cast<double>(host_link_rate.ps_per_byte_q32());
    const auto spine = static_cast<double>(spine_link_rate.ps_per_byte_q32());
    if (host == 0 || spines == 0) return 0;
    return static_cast<double>(hosts_per_leaf) * spine / (static_cast<double>(spines) * host);
  }
};

struct NetworkDim {
  DimTopology topology = DimTopology::kRing;
  int64_t npus = 0;  // NPUs along this dimension; ASTRA-sim requires at least 2
  // Per link, exact Q32.32 ps/byte.
  Rate bandwidth = Rate::from_ps_per_byte_q32(0);
  // As written in the file, for reports; its unit is bandwidth_unit's. `bandwidth` is what counts.
  double bandwidth_gbps = 0;
  Duration latency;           // per link, exact: 936.25 ns is 936'250 ps
  // The unit of bandwidth_gbps. kAstraGBps: ASTRA-sim "GB/s" = 2^30 bytes/s (network.yml); kGbps:
  // gigabits/s = 10^9 bits/s (fabemu's fabric file, Rate::from_gbps).
  enum class BandwidthUnit { kAstraGBps, kGbps };
  BandwidthUnit bandwidth_unit = BandwidthUnit::kAstraGBps;
  // Set exactly when topology is kFatTree.
  std::optional<FatTreeConfig> fat_tree;
};

struct NetworkConfig {
  std::vector<NetworkDim> dims;  // dimension 0 first, as listed in the file
  // Product of the per-dimension NPU counts: the number of ranks the network holds.
  int64_t total_npus() const {
    int64_t n = dims.empty() ? 0 : 1;
    for (const auto& d : dims) n *= d.npus;
    return n;
  }
  std::string source;  // the file it was read from
};

// A collective algorithm of ASTRA-sim's native collectives.
enum class CollectiveAlgo { kRing, kDirect, kHalvingDoubling, kDoubleBinaryTree };

// Order in which ready collectives start ("scheduling-policy"): newest first, oldest first, or by the
// trace's comm_priority (higher first, equal priorities oldest first).
enum class SchedulingPolicy : uint8_t { kLifo, kFifo, kExplicit };

// "collective-optimization": baseline (every dimension runs the whole collective) or localBWAware
// (multi-dimensional all-reduce = reduce-scatter up the dimensions, all-reduce on the last, all-gather
// back down). Only multi-dimensional all-reduce differs.
enum class CollectiveOptimization : uint8_t { kBaseline, kLocalBwAware };

// The spellings of the system files ("LIFO", "FIFO", "EXPLICIT"; "baseline", "localBWAware"), which the
// readers have checked; anything else gives the first value.
inline SchedulingPolicy scheduling_policy_named(std::string_view name) {
  if (name == "FIFO") return SchedulingPolicy::kFifo;
  if (name == "EXPLICIT") return SchedulingPolicy::kExplicit;
  return SchedulingPolicy::kLifo;
}
inline CollectiveOptimization collective_optimization_named(std::string_view name) {
  return name == "localBWAware" ? CollectiveOptimization::kLocalBwAware : CollectiveOptimization::kBaseline;
}

// One entry of an "*-implementation" list: the algorithm used on one dimension.
struct CollectiveImpl {
  CollectiveAlgo algo = CollectiveAlgo::kRing;
  // ASTRA-sim's "oneRing" / "oneDirect" / "oneHalvingDoubling": a single logical ring over ALL NPUs
  // of the network instead of this dimension only; ASTRA-sim builds no dimension after this entry.
  bool all_dims = false;
  // "directN" / "oneDirectN": at most N messages of the direct algorithm in flight; -1 = no limit.
  int64_t direct_window = -1;
  friend bool operator==(const CollectiveImpl&, const CollectiveImpl&) = default;
};

// The system layer of ASTRA-sim 2.x (astra-sim/system/Sys.cc, Sys::initialize_sys and the
// Sys constructor; collectives in astraccl/CollectiveImplLookup.cc). Defaults are ASTRA-sim's
// where it has a usable one; host/config/README.md says where it has none.
struct SystemConfig {
  // ASTRA-sim leaves the member uninitialized; its zero value is LIFO.
  SchedulingPolicy scheduling_policy = SchedulingPolicy::kLifo;
  // Per message, at each end ("endpoint-delay", whole ns; ASTRA-sim's default is 10 cycles = 10 ns).
  Duration endpoint_delay = Duration::from_ns(10);
  // Chunks of a collective in flight per dimension at once.
  int64_t active_chunks_per_dimension = 1;
  // Chunks a collective is cut into. ASTRA-sim's member defaults to 0 and it divides by it, so a
  // file without the key crashes ASTRA-sim; 1 (no split) is the only value that gives a result.
  int64_t preferred_dataset_splits = 1;
  // Per dimension, dimension 0 first. A list may be shorter than the number of dimensions: ASTRA-sim
  // then builds the collective over the first dimensions only (later ones take no part; it does NOT
  // repeat the last entry). Empty = not given (ASTRA-sim fails only when such a collective runs).
  std::vector<CollectiveImpl> all_reduce, all_gather, reduce_scatter, all_to_all;
  // ASTRA-sim leaves it uninitialized; zero is baseline.
  CollectiveOptimization collective_optimization = CollectiveOptimization::kBaseline;
  // Custom collectives ("*-implementation-custom"): the Chakra ET prefix of a hand-written
  // algorithm (rank r reads PREFIX.r.et) that replaces the native one; empty = none. Paths as written
  // (ASTRA-sim resolves them against its working directory).
  std::string all_reduce_custom, all_gather_custom, reduce_scatter_custom, all_to_all_custom;
  // "per-node-custom-implementation": a YAML file mapping trace node ids to ET prefixes; empty = none.
  std::string per_node_custom_implementation;
  // Local memory bandwidth in GB/s where GB = 10^9 bytes (ASTRA-sim multiplies by 1e9), i.e.
  // bytes per ns: local reductions and the roofline use it. 0 = not given.
  double local_mem_bw_gbps = 0;
  // Roofline compute model: COMP nodes take time from num_ops / tensor_size instead of
  // duration_micros. Needs peak_perf_tflops and local_mem_bw_gbps.
  bool roofline_enabled = false;
  // Peak compute in TFLOPS, 10^12 floating-point operations per second. 0 = not given.
  double peak_perf_tflops = 0;
  // Every node (communication too) takes its recorded duration_micros; nothing is simulated.
  bool replay_only = false;
  // Fixed cost of one local reduction ("local-reduction-delay", whole ns, ASTRA-sim default 1); used
  // by ASTRA-sim's LogGP memory-bus model only (model_shared_bus).
  Duration local_reduction_delay = Duration::from_ns(1);
  // ASTRA-sim's LogGP model of the NPU-memory bus ("model-shared-bus" and "L", "o", "g", "G", in
  // cycles = ns, G in ns per byte), off by default.
  bool model_shared_bus = false;
  double loggp_L = 0, loggp_o = 0, loggp_g = 0, loggp_G = 0;
  // Recorded, never used: ASTRA-sim 2.x does not read these keys (1.x did); kept for reports.
  int64_t boost_mode = 0;
  std::string intra_dimension_scheduling, inter_dimension_scheduling;
  // Keys present in the file that change nothing in a run (logging and memory-trace outputs of
  // ASTRA-sim, keys of ASTRA-sim 1.x), in file order, so a report can list them.
  std::vector<std::string> ignored_keys;
  std::string source;  // the file it was read from
};

}  // namespace fabemu::emu
