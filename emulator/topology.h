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

// Where a link sits in a fat-tree dimension: NPU <-> leaf, or leaf <-> spine; kNone elsewhere.
enum class LinkTier : uint8_t { kNone, kLeaf, kSpine };
inline const char* link_tier_name(LinkTier t) noexcept {
  return t == LinkTier::kLeaf ? "leaf" : t == LinkTier::kSpine ? "spine" : "";
}

// A one-way link: packets go from `from` to `to` at `rate`, and each reaches `to` `latency` after its
// last byte left `from`.
struct Link {
  int32_t from;
  int32_t to;
  Rate rate;
  Duration latency;
  int32_t dim;  // the network dimension the link belongs to (network.yml order)
  LinkTier tier = LinkTier::kNone;
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

// Products of Ring / FullyConnected / Switch / FatTree dimensions (the first three as ASTRA-sim's
// network.yml describes them).
//
// NPU ids follow ASTRA-sim: id = sum_d coord_d * prod_{e<d} npus_e (dimension 0 varies fastest).
// Switches get node ids N, N+1, ... (dimension by dimension, then group by group).
// Routing is dimension-ordered, lowest dimension first (deadlock-free on products, and what ASTRA-sim's
// hierarchical collectives assume). Within a dimension:
//   Ring:           the shorter way round; a tie goes clockwise (increasing coordinate).
//   FullyConnected: the direct link (1 hop).
//   Switch:         up to the group's switch, down to the peer (2 hops).
//   FatTree:        a two-level leaf-spine fat-tree per group (FatTreeConfig): same leaf, 2 hops (up,
//                   down); across leaves 4 hops, through the spine ecmp_spine(a, b, flow) of the NPUs a
//                   and b where the route enters and leaves the dimension, a fixed hash: one flow always
//                   takes one spine, many flows spread.
// A group is the NPUs that differ in this dimension's coordinate only (one switch, or one fat-tree, each).
// Routes are computed on the fly from index arithmetic (links are laid out so that a link's index is a
// formula of its endpoints), so a route costs no memory per pair and no allocation per call.
//
// A FatTree dimension of n = hosts_per_leaf * leaves NPUs in a network of N NPUs has N / n groups; group g
// has L leaf switches and then S spines, at node ids switch_base + g(L + S) + l and + L + s. Its links, from
// the dimension's first link: 2p, 2p + 1 (NPU p -> its leaf, back; host rate / latency), then from 2N on,
// per group 2LS: 2(l*S + s), + 1 (leaf l -> spine s, back; spine rate / latency). A network that is a
// single fat-tree thus has NPUs 0..N-1, leaves N..N+L-1, spines N+L..N+L+S-1, links 2h, 2h+1 and
// 2N + 2(l*S + s), + 1.
class Topology {
 public:
  // Throws std::invalid_argument for an empty network, a dimension with fewer than 1 NPU, a network
  // too large for 32-bit node and link ids or with more than kMaxTopologyLinks links, or a FatTree dimension
  // whose FatTreeConfig is missing or disagrees with it (or a FatTreeConfig on another kind of dimension).
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

  // True when a dimension is a fat-tree.
  bool is_fat_tree() const noexcept { return fat_tree_dim_ >= 0; }
  // The spine (0-based within its fat-tree, not a node id) that flow `flow` crosses from NPU a to NPU b of
  // the first fat-tree dimension (a and b differ in its coordinate only, on different leaves): a splitmix64
  // finalizer of (a, b, flow), mod the spine count. Deterministic across runs and platforms. Asserts
  // is_fat_tree().
  int32_t ecmp_spine(int32_t a, int32_t b, uint64_t flow) const noexcept;

 private:
  struct Dim {
    DimTopology kind;
    int32_t n;           // NPUs along the dimension
    int32_t stride;      // id distance between neighbours along it: prod of lower dimensions' npus
    LinkId link_base;    // index of the dimension's first link
    int32_t switch_base; // node id of the dimension's first switch (Switch, FatTree)
    // FatTree only: per group, leaves of hosts_per_leaf NPUs and spines.
    int32_t hosts_per_leaf = 0;
    int32_t leaves = 0;
    int32_t spines = 0;
  };
  // The group of `npu` along `d`: the NPUs that differ from it in this coordinate only, numbered 0, 1, ...
  static int32_t group_of(const Dim& d, int32_t npu) noexcept;
  // The ring link leaving `npu` along `d`, clockwise (towards coordinate + 1) or counter-clockwise.
  LinkId ring_link(const Dim& d, int32_t npu, bool cw) const noexcept;
  // The links of a FatTree dimension, in the layout above.
  void add_fat_tree_links(const Dim& d, const FatTreeConfig& ft, int32_t dim);
  // The route across FatTree dimension `d` from `cur` to `next` (which differ in its coordinate only).
  std::size_t fat_tree_route(const Dim& d, int32_t cur, int32_t next, uint64_t flow, std::span<LinkId> out,
                             std::size_t h) const noexcept;
  int32_t spine_of(const Dim& d, int32_t a, int32_t b, uint64_t flow) const noexcept;

  int32_t npus_ = 0;
  int32_t nodes_ = 0;
  int32_t fat_tree_dim_ = -1;  // the first FatTree dimension, -1: none
  std::size_t max_hops_ = 0;
  std::vector<Dim> dims_;
  std::vector<Link> links_;
};

// The topology a network.yml describes.
inline Topology build_topology(const NetworkConfig& config) { return Topology(config); }

}  // namespace fabemu::emu
