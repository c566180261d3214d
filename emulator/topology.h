// The target network as a directed graph of endpoints (NPUs 0..N-1) and switches joined by links, with
// one deterministic route per (src, dst): what the software fabrics carry packets over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "emulator/config.h"
#include "emulator/time.h"

namespace fabemu::emu {

using LinkId = uint32_t;

// A one-way link: packets go from `from` to `to` at `rate`, and each reaches `to` `latency` after its
// last byte left `from`.
struct Link {
  int32_t from;
  int32_t to;
  Rate rate;
  Duration latency;
  int32_t dim;  // the network dimension the link belongs to (network.yml order)
};

// What a network's Topology holds, computed from the config alone (nothing is built). Saturates at
// INT64_MAX, so any config can be measured before it is built.
struct TopologySize {
  int64_t npus = 0;
  int64_t switches = 0;
  int64_t links = 0;
};
TopologySize topology_size(const NetworkConfig& config) noexcept;

// The most links a Topology is built with. A link costs kTopologyBytesPerLink bytes whether or not the
// workload uses it (its Link here, and a LinkState and LinkStats in the packet fabric: 32 + 16 + 16; a
// 10^7-NPU ring, 2 * 10^7 links, was measured at 1.3 GB), so 2^24 links is 1 GiB: a ring of 8 million
// NPUs, a 3D torus of 2.7 million, a fat-tree of 8 million hosts; 500 times the largest published
// ASTRA-sim run (16,384 NPUs). The config readers check it with the key's name; the constructor too.
inline constexpr int64_t kMaxTopologyLinks = int64_t{1} << 24;
inline constexpr int64_t kTopologyBytesPerLink = 64;

// Products of Ring / FullyConnected / Switch dimensions, as ASTRA-sim's network.yml describes them.
//
// NPU ids follow ASTRA-sim: id = sum_d coord_d * prod_{e<d} npus_e (dimension 0 varies fastest).
// Switches get node ids N, N+1, ... (dimension by dimension, then group by group).
// Routing is dimension-ordered, lowest dimension first (deadlock-free on products, and what ASTRA-sim's
// hierarchical collectives assume). Within a dimension:
//   Ring:           the shorter way round; a tie goes clockwise (increasing coordinate).
//   FullyConnected: the direct link (1 hop).
//   Switch:         up to the group's switch, down to the peer (2 hops).
// Routes are computed on the fly from index arithmetic (links are laid out so that a link's index is a
// formula of its endpoints), so a route costs no memory per pair and no allocation per call.
//
// Or a two-level fat-tree (NetworkConfig::fat_tree, the network's only dimension): NPUs 0..N-1, then
// the leaf switches N..N+L-1, then the spines N+L..N+L+S-1. Links (all dim 0):
//   2h, 2h+1                    NPU h -> its leaf, its leaf -> NPU h  (host rate / latency)
//   2N + 2(l*S + s), ... + 1    leaf l -> spine s, spine s -> leaf l  (spine rate / latency)
// so 2N + 2LS links. Same leaf: 2 hops (up, down). Across leaves: 4 hops, through the spine
// ecmp_spine(src, dst, flow), a fixed hash: one flow always takes one spine, many flows spread.
class Topology {
 public:
  // Throws std::invalid_argument for an empty network, a dimension with fewer than 1 NPU, a network
  // too large for 32-bit node and link ids or with more than kMaxTopologyLinks links, or a fat-tree that is not the network's only dimension
  // (or whose dimension and FatTreeConfig disagree).
  explicit Topology(const NetworkConfig& config);

  int32_t npus() const noexcept { return npus_; }
  // NPUs plus switches.
  int32_t nodes() const noexcept { return nodes_; }
  const std::vector<Link>& links() const noexcept { return links_; }
  const Link& link(LinkId id) const noexcept { return links_[id]; }
  // The longest route of the topology, in hops: a buffer this large holds any route.
  std::size_t max_hops() const noexcept { return max_hops_; }

  // Writes the route from NPU `src` to NPU `dst` into `out` (first link first) and returns the filled
  // prefix; src == dst gives an empty route. Preconditions (asserted): 0 <= src, dst < npus(),
  // out.size() >= hops(src, dst) (max_hops() always suffices).
  // The route of flow 0.
  std::span<LinkId> route(int32_t src, int32_t dst, std::span<LinkId> out) const noexcept {
    return route(src, dst, 0, out);
  }
  // The route of flow `flow` (the ECMP key, Message::flow). Only a fat-tree has several paths; every
  // other topology ignores `flow`. Same preconditions, no allocation.
  std::span<LinkId> route(int32_t src, int32_t dst, uint64_t flow, std::span<LinkId> out) const noexcept;
  // The same in a new vector, for cold paths and tests.
  std::vector<LinkId> route(int32_t src, int32_t dst) const { return route(src, dst, uint64_t{0}); }
  std::vector<LinkId> route(int32_t src, int32_t dst, uint64_t flow) const;
  // Number of links on route(src, dst) (the same for every flow), without walking it.
  std::size_t hops(int32_t src, int32_t dst) const noexcept;

  // True for a fat-tree network (NetworkConfig::fat_tree).
  bool is_fat_tree() const noexcept { return fat_tree_.spines > 0; }
  // Fat-tree only: the spine (0-based, not a node id) that flow `flow` from src to dst crosses, when
  // they are on different leaves: a splitmix64 finalizer of (src, dst, flow), mod the spine count.
  // Deterministic across runs and platforms.
  int32_t ecmp_spine(int32_t src, int32_t dst, uint64_t flow) const noexcept;

 private:
  struct Dim {
    DimTopology kind;
    int32_t n;           // NPUs along the dimension
    int32_t stride;      // id distance between neighbours along it: prod of lower dimensions' npus
    LinkId link_base;    // index of the dimension's first link
    int32_t switch_base; // node id of the dimension's first switch (Switch only)
  };
  // The fat-tree constructor's body (config.fat_tree or a kFatTree dimension present).
  void build_fat_tree(const NetworkConfig& config);
  // The ring link leaving `npu` along `d`, clockwise (towards coordinate + 1) or counter-clockwise.
  LinkId ring_link(const Dim& d, int32_t npu, bool cw) const noexcept;

  struct FatTree {
    int32_t hosts_per_leaf = 0;
    int32_t leaves = 0;
    int32_t spines = 0;  // 0: not a fat-tree
    LinkId spine_link_base = 0;
  };

  int32_t npus_ = 0;
  int32_t nodes_ = 0;
  FatTree fat_tree_;
  std::size_t max_hops_ = 0;
  std::vector<Dim> dims_;
  std::vector<Link> links_;
};

// The topology a network.yml describes.
inline Topology build_topology(const NetworkConfig& config) { return Topology(config); }

}  // namespace fabemu::emu
