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
class Topology {
 public:
  // Throws std::invalid_argument for an empty network, a dimension with fewer than 1 NPU, or a network
  // too large for 32-bit node and link ids.
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
  std::span<LinkId> route(int32_t src, int32_t dst, std::span<LinkId> out) const noexcept;
  // The same in a new vector, for cold paths and tests.
  std::vector<LinkId> route(int32_t src, int32_t dst) const;
  // Number of links on route(src, dst), without walking it.
  std::size_t hops(int32_t src, int32_t dst) const noexcept;

 private:
  struct Dim {
    DimTopology kind;
    int32_t n;           // NPUs along the dimension
    int32_t stride;      // id distance between neighbours along it: prod of lower dimensions' npus
    LinkId link_base;    // index of the dimension's first link
    int32_t switch_base; // node id of the dimension's first switch (Switch only)
  };
  // The ring link leaving `npu` along `d`, clockwise (towards coordinate + 1) or counter-clockwise.
  LinkId ring_link(const Dim& d, int32_t npu, bool cw) const noexcept;

  int32_t npus_ = 0;
  int32_t nodes_ = 0;
  std::size_t max_hops_ = 0;
  std::vector<Dim> dims_;
  std::vector<Link> links_;
};

// The topology a network.yml describes.
inline Topology build_topology(const NetworkConfig& config) { return Topology(config); }

}  // namespace fabemu::emu
