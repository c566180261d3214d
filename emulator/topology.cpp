#include "emulator/topology.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <stdexcept>
#include <string>

namespace fabemu::emu {

namespace {

[[noreturn]] void bad_network(const NetworkConfig& config, const std::string& why) {
  throw std::invalid_argument("network " + (config.source.empty() ? std::string("(in memory)") : config.source) +
                              ": " + why);
}

// The memory bound (kMaxTopologyLinks), for configs built in memory; the readers check it first.
void check_links(const NetworkConfig& config, int64_t links) {
  if (links > kMaxTopologyLinks) {
    bad_network(config, "has " + std::to_string(links) + " links, more than the " + std::to_string(kMaxTopologyLinks) +
                            " fabemu models (" + std::to_string(kTopologyBytesPerLink) + " bytes each)");
  }
}

int32_t coord(int32_t npu, int32_t stride, int32_t n) noexcept { return (npu / stride) % n; }

// Steps from ring position cs to cd the shorter way; a tie goes clockwise (increasing index).
struct RingPath {
  int32_t steps;
  bool cw;
};
RingPath ring_path(int32_t cs, int32_t cd, int32_t n) noexcept {
  const int32_t cw_steps = (cd - cs + n) % n;
  return cw_steps <= n - cw_steps ? RingPath{cw_steps, true} : RingPath{n - cw_steps, false};
}

// splitmix64's finalizer: every input bit flips about half of the output bits.
constexpr uint64_t mix64(uint64_t z) noexcept {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// a * b and a + b, saturating at INT64_MAX (operands >= 0).
int64_t mul_sat(int64_t a, int64_t b) noexcept {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}
int64_t add_sat(int64_t a, int64_t b) noexcept {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

}  // namespace

TopologySize topology_size(const NetworkConfig& config) noexcept {
  TopologySize size;
  if (config.dims.empty()) return size;
  if (config.fat_tree) {
    const FatTreeConfig& ft = *config.fat_tree;
    size.npus = mul_sat(std::max(0, ft.hosts_per_leaf), std::max(0, ft.leaves));
    size.switches = add_sat(std::max(0, ft.leaves), std::max(0, ft.spines));
    size.links = add_sat(mul_sat(2, size.npus), mul_sat(2, mul_sat(std::max(0, ft.leaves), std::max(0, ft.spines))));
    return size;
  }
  size.npus = 1;
  for (const NetworkDim& d : config.dims) size.npus = mul_sat(size.npus, std::max<int64_t>(0, d.npus));
  for (const NetworkDim& d : config.dims) {
    const int64_t n = d.npus;
    if (n < 2) continue;
    switch (d.topology) {
      case DimTopology::kRing:
        size.links = add_sat(size.links, mul_sat(size.npus, n == 2 ? 1 : 2));
        break;
      case DimTopology::kFullyConnected:
        size.links = add_sat(size.links, mul_sat(size.npus, n - 1));
        break;
      case DimTopology::kSwitch:
        size.links = add_sat(size.links, mul_sat(size.npus, 2));
        size.switches = add_sat(size.switches, size.npus / n);
        break;
      case DimTopology::kFatTree:
        break;
    }
  }
  return size;
}

void Topology::build_fat_tree(const NetworkConfig& config) {
  const std::string only =
      "a fat-tree is supported only as the ONLY dimension of a network (one dimension of topology "
      "FatTree, npus = hosts_per_leaf * leaves, with NetworkConfig::fat_tree set)";
  if (!config.fat_tree) bad_network(config, "has a FatTree dimension but no fat-tree description; " + only);
  if (config.dims.size() != 1 || config.dims[0].topology != DimTopology::kFatTree) {
    bad_network(config, "has " + std::to_string(config.dims.size()) + " dimensions with a fat-tree; " + only);
  }
  const FatTreeConfig& ft = *config.fat_tree;
  if (ft.hosts_per_leaf < 1 || ft.leaves < 1 || ft.spines < 1) {
    bad_network(config, "fat-tree needs hosts_per_leaf, leaves and spines >= 1 (has " +
                            std::to_string(ft.hosts_per_leaf) + ", " + std::to_string(ft.leaves) + ", " +
                            std::to_string(ft.spines) + ")");
  }
  constexpr int64_t kMaxIds = std::numeric_limits<int32_t>::max();
  const int64_t n = int64_t{ft.hosts_per_leaf} * ft.leaves;
  if (config.dims[0].npus != n) {
    bad_network(config, "fat-tree dimension has " + std::to_string(config.dims[0].npus) +
                            " NPUs but hosts_per_leaf * leaves = " + std::to_string(n));
  }
  const int64_t links = 2 * n + 2 * int64_t{ft.leaves} * ft.spines;
  if (n + ft.leaves + ft.spines > kMaxIds || links > std::numeric_limits<LinkId>::max()) {
    bad_network(config, "fat-tree has too many NPUs, switches or links for 32-bit ids");
  }
  assert(topology_size(config).links == links);
  check_links(config, links);
  npus_ = static_cast<int32_t>(n);
  nodes_ = static_cast<int32_t>(n + ft.leaves + ft.spines);
  fat_tree_ = FatTree{ft.hosts_per_leaf, ft.leaves, ft.spines, static_cast<LinkId>(2 * n)};
  max_hops_ = ft.leaves > 1 ? 4 : (n > 1 ? 2 : 0);
  links_.reserve(static_cast<std::size_t>(links));
  for (int32_t h = 0; h < npus_; ++h) {
    const int32_t leaf = npus_ + h / ft.hosts_per_leaf;
    links_.push_back(Link{h, leaf, ft.host_link_rate, ft.host_link_latency, 0});
    links_.push_back(Link{leaf, h, ft.host_link_rate, ft.host_link_latency, 0});
  }
  for (int32_t l = 0; l < ft.leaves; ++l) {
    for (int32_t sp = 0; sp < ft.spines; ++sp) {
      const int32_t leaf = npus_ + l;
      const int32_t spine = npus_ + ft.leaves + sp;
      links_.push_back(Link{leaf, spine, ft.spine_link_rate, ft.spine_link_latency, 0});
      links_.push_back(Link{spine, leaf, ft.spine_link_rate, ft.spine_link_latency, 0});
    }
  }
  assert(links_.size() == static_cast<std::size_t>(links));
}

int32_t Topology::ecmp_spine(int32_t src, int32_t dst, uint64_t flow) const noexcept {
  assert(is_fat_tree());
  const uint64_t pair = (uint64_t{static_cast<uint32_t>(src)} << 32) | static_cast<uint32_t>(dst);
  return static_cast<int32_t>(mix64(mix64(pair) ^ flow) % static_cast<uint64_t>(fat_tree_.spines));
}

Topology::Topology(const NetworkConfig& config) {
  if (config.dims.empty()) bad_network(config, "has no dimension");
  for (const NetworkDim& d : config.dims) {
    if (d.topology == DimTopology::kFatTree || config.fat_tree) {
      build_fat_tree(config);
      return;
    }
  }
  // Sizes are checked in 64 bits before anything is built, so that ids fit their 32-bit types.
  constexpr int64_t kMaxIds = std::numeric_limits<int32_t>::max();
  int64_t total = 1;
  for (std::size_t i = 0; i < config.dims.size(); ++i) {
    const int64_t n = config.dims[i].npus;
    if (n < 1) bad_network(config, "dimension " + std::to_string(i) + " has " + std::to_string(n) + " NPUs");
    total *= n;
    if (total > kMaxIds) bad_network(config, "has more than 2^31 NPUs");
  }
  npus_ = static_cast<int32_t>(total);
  int64_t links = 0;
  int64_t switches = 0;
  int64_t stride = 1;
  for (const NetworkDim& nd : config.dims) {
    const int64_t n = nd.npus;
    Dim d{nd.topology, static_cast<int32_t>(n), static_cast<int32_t>(stride), static_cast<LinkId>(links),
          static_cast<int32_t>(total + switches)};
    if (n > 1) {
      switch (nd.topology) {
        case DimTopology::kRing:
          // Two NPUs have one neighbour each way; a larger ring has a clockwise and a counter-clockwise link.
          links += total * (n == 2 ? 1 : 2);
          max_hops_ += static_cast<std::size_t>(n / 2);
          break;
        case DimTopology::kFullyConnected:
          links += total * (n - 1);
          max_hops_ += 1;
          break;
        case DimTopology::kSwitch:
          links += total * 2;
          switches += total / n;
          max_hops_ += 2;
          break;
        case DimTopology::kFatTree:  // handled by build_fat_tree
          break;
      }
    }
    if (links > std::numeric_limits<LinkId>::max() || total + switches > kMaxIds) {
      bad_network(config, "has too many links or switches for 32-bit ids");
    }
    dims_.push_back(d);
    stride *= n;
  }
  assert(topology_size(config).links == links);
  check_links(config, links);
  nodes_ = static_cast<int32_t>(total + switches);

  links_.reserve(static_cast<std::size_t>(links));
  for (std::size_t di = 0; di < dims_.size(); ++di) {
    const Dim& d = dims_[di];
    const NetworkDim& nd = config.dims[di];
    const auto dim = static_cast<int32_t>(di);
    if (d.n == 1) continue;
    assert(links_.size() == d.link_base);
    // The order below is the one ring_link() / route() compute indexes from.
    for (int32_t p = 0; p < npus_; ++p) {
      const int32_t c = coord(p, d.stride, d.n);
      switch (d.kind) {
        case DimTopology::kRing: {
          const int32_t next = c + 1 == d.n ? p - (d.n - 1) * d.stride : p + d.stride;
          const int32_t prev = c == 0 ? p + (d.n - 1) * d.stride : p - d.stride;
          links_.push_back(Link{p, next, nd.bandwidth, nd.latency, dim});
          if (d.n > 2) links_.push_back(Link{p, prev, nd.bandwidth, nd.latency, dim});
          break;
        }
        case DimTopology::kFullyConnected:
          for (int32_t j = 0; j < d.n; ++j) {
            if (j != c) links_.push_back(Link{p, p + (j - c) * d.stride, nd.bandwidth, nd.latency, dim});
          }
          break;
        case DimTopology::kSwitch: {
          // The group: the NPUs that differ from p in this coordinate only.
          const int32_t group = p % d.stride + (p / (d.stride * d.n)) * d.stride;
          const int32_t sw = d.switch_base + group;
          links_.push_back(Link{p, sw, nd.bandwidth, nd.latency, dim});
          links_.push_back(Link{sw, p, nd.bandwidth, nd.latency, dim});
          break;
        }
        case DimTopology::kFatTree:
          break;
      }
    }
  }
  assert(links_.size() == static_cast<std::size_t>(links));
}

LinkId Topology::ring_link(const Dim& d, int32_t npu, bool cw) const noexcept {
  const auto p = static_cast<LinkId>(npu);
  return d.n == 2 ? d.link_base + p : d.link_base + 2 * p + (cw ? 0 : 1);
}

std::span<LinkId> Topology::route(int32_t src, int32_t dst, uint64_t flow, std::span<LinkId> out) const noexcept {
  assert(src >= 0 && src < npus_ && dst >= 0 && dst < npus_);
  if (is_fat_tree()) {
    if (src == dst) return out.first(0);
    const FatTree& ft = fat_tree_;
    const int32_t ls = src / ft.hosts_per_leaf;
    const int32_t ld = dst / ft.hosts_per_leaf;
    if (ls == ld) {
      assert(out.size() >= 2);
      out[0] = 2 * static_cast<LinkId>(src);
      out[1] = 2 * static_cast<LinkId>(dst) + 1;
      return out.first(2);
    }
    assert(out.size() >= 4);
    const auto sp = static_cast<LinkId>(ecmp_spine(src, dst, flow));
    const auto spines = static_cast<LinkId>(ft.spines);
    out[0] = 2 * static_cast<LinkId>(src);
    out[1] = ft.spine_link_base + 2 * (static_cast<LinkId>(ls) * spines + sp);
    out[2] = ft.spine_link_base + 2 * (static_cast<LinkId>(ld) * spines + sp) + 1;
    out[3] = 2 * static_cast<LinkId>(dst) + 1;
    return out.first(4);
  }
  std::size_t h = 0;
  int32_t cur = src;
  for (const Dim& d : dims_) {
    const int32_t cs = coord(cur, d.stride, d.n);
    const int32_t cd = coord(dst, d.stride, d.n);
    if (cs == cd) continue;
    switch (d.kind) {
      case DimTopology::kRing: {
        const auto [steps, cw] = ring_path(cs, cd, d.n);
        int32_t c = cs;
        for (int32_t s = steps; s > 0; --s) {
          assert(h < out.size());
          out[h++] = ring_link(d, cur, cw);
          const int32_t nc = cw ? (c + 1 == d.n ? 0 : c + 1) : (c == 0 ? d.n - 1 : c - 1);
          cur += (nc - c) * d.stride;
          c = nc;
        }
        break;
      }
      case DimTopology::kFullyConnected:
        assert(h < out.size());
        out[h++] = d.link_base + static_cast<LinkId>(cur) * static_cast<LinkId>(d.n - 1) +
                   static_cast<LinkId>(cd < cs ? cd : cd - 1);
        cur += (cd - cs) * d.stride;
        break;
      case DimTopology::kSwitch:
        assert(h + 1 < out.size());
        out[h++] = d.link_base + 2 * static_cast<LinkId>(cur);
        cur += (cd - cs) * d.stride;
        out[h++] = d.link_base + 2 * static_cast<LinkId>(cur) + 1;
        break;
      case DimTopology::kFatTree:
        break;
    }
  }
  assert(cur == dst);
  return out.first(h);
}

std::vector<LinkId> Topology::route(int32_t src, int32_t dst, uint64_t flow) const {
  std::vector<LinkId> r(hops(src, dst));
  route(src, dst, flow, r);
  return r;
}

std::size_t Topology::hops(int32_t src, int32_t dst) const noexcept {
  assert(src >= 0 && src < npus_ && dst >= 0 && dst < npus_);
  if (is_fat_tree()) {
    if (src == dst) return 0;
    return src / fat_tree_.hosts_per_leaf == dst / fat_tree_.hosts_per_leaf ? 2 : 4;
  }
  std::size_t h = 0;
  for (const Dim& d : dims_) {
    const int32_t cs = coord(src, d.stride, d.n);
    const int32_t cd = coord(dst, d.stride, d.n);
    if (cs == cd) continue;
    switch (d.kind) {
      case DimTopology::kRing: {
        h += static_cast<std::size_t>(ring_path(cs, cd, d.n).steps);
        break;
      }
      case DimTopology::kFullyConnected:
        h += 1;
        break;
      case DimTopology::kSwitch:
        h += 2;
        break;
      case DimTopology::kFatTree:
        break;
    }
  }
  return h;
}

}  // namespace fabemu::emu
