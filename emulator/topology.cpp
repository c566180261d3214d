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
  size.npus = 1;
  for (const NetworkDim& d : config.dims) size.npus = mul_sat(size.npus, std::max<int64_t>(0, d.npus));
  for (const NetworkDim& d : config.dims) {
    const int64_t n = d.npus;
    if (n < 2 && d.topology != DimTopology::kFatTree) continue;
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
      case DimTopology::kFatTree: {
        if (!d.fat_tree || n < 1) break;
        const int64_t leaves = std::max(0, d.fat_tree->leaves);
        const int64_t spines = std::max(0, d.fat_tree->spines);
        const int64_t groups = size.npus / n;
        size.links = add_sat(size.links, add_sat(mul_sat(2, size.npus), mul_sat(groups, mul_sat(2, mul_sat(leaves, spines)))));
        size.switches = add_sat(size.switches, mul_sat(groups, add_sat(leaves, spines)));
        break;
      }
    }
  }
  return size;
}

namespace {

// A FatTree dimension agrees with its description; no other dimension has one.
void check_fat_tree(const NetworkConfig& config, std::size_t i) {
  const NetworkDim& d = config.dims[i];
  const std::string which = "dimension " + std::to_string(i);
  if (d.topology != DimTopology::kFatTree) {
    if (d.fat_tree) bad_network(config, which + " has a fat-tree description but is not of topology FatTree");
    return;
  }
  if (!d.fat_tree) bad_network(config, which + " is a FatTree dimension without its fat-tree description");
  const FatTreeConfig& ft = *d.fat_tree;
  if (ft.hosts_per_leaf < 1 || ft.leaves < 1 || ft.spines < 1) {
    bad_network(config, which + ": fat-tree needs hosts_per_leaf, leaves and spines >= 1 (has " +
                            std::to_string(ft.hosts_per_leaf) + ", " + std::to_string(ft.leaves) + ", " +
                            std::to_string(ft.spines) + ")");
  }
  const int64_t n = int64_t{ft.hosts_per_leaf} * ft.leaves;
  if (d.npus != n) {
    bad_network(config, which + ": fat-tree dimension has " + std::to_string(d.npus) +
                            " NPUs but hosts_per_leaf * leaves = " + std::to_string(n));
  }
}

}  // namespace

int32_t Topology::group_of(const Dim& d, int32_t npu) noexcept {
  return npu % d.stride + (npu / (d.stride * d.n)) * d.stride;
}

int32_t Topology::spine_of(const Dim& d, int32_t a, int32_t b, uint64_t flow) const noexcept {
  const uint64_t pair = (uint64_t{static_cast<uint32_t>(a)} << 32) | static_cast<uint32_t>(b);
  return static_cast<int32_t>(mix64(mix64(pair) ^ flow) % static_cast<uint64_t>(d.spines));
}

int32_t Topology::ecmp_spine(int32_t a, int32_t b, uint64_t flow) const noexcept {
  assert(is_fat_tree());
  return spine_of(dims_[static_cast<std::size_t>(fat_tree_dim_)], a, b, flow);
}

void Topology::add_fat_tree_links(const Dim& d, const FatTreeConfig& ft, int32_t dim) {
  const int32_t per_group = d.leaves + d.spines;
  for (int32_t p = 0; p < npus_; ++p) {
    const int32_t leaf = d.switch_base + group_of(d, p) * per_group + coord(p, d.stride, d.n) / d.hosts_per_leaf;
    links_.push_back(Link{p, leaf, ft.host_link_rate, ft.host_link_latency, dim, LinkTier::kLeaf});
    links_.push_back(Link{leaf, p, ft.host_link_rate, ft.host_link_latency, dim, LinkTier::kLeaf});
  }
  const int32_t groups = npus_ / d.n;
  for (int32_t g = 0; g < groups; ++g) {
    for (int32_t l = 0; l < d.leaves; ++l) {
      for (int32_t sp = 0; sp < d.spines; ++sp) {
        const int32_t leaf = d.switch_base + g * per_group + l;
        const int32_t spine = d.switch_base + g * per_group + d.leaves + sp;
        links_.push_back(Link{leaf, spine, ft.spine_link_rate, ft.spine_link_latency, dim, LinkTier::kSpine});
        links_.push_back(Link{spine, leaf, ft.spine_link_rate, ft.spine_link_latency, dim, LinkTier::kSpine});
      }
    }
  }
}

std::size_t Topology::fat_tree_route(const Dim& d, int32_t cur, int32_t next, uint64_t flow, std::span<LinkId> out,
                                     std::size_t h) const noexcept {
  const int32_t ls = coord(cur, d.stride, d.n) / d.hosts_per_leaf;
  const int32_t ld = coord(next, d.stride, d.n) / d.hosts_per_leaf;
  if (ls == ld) {
    assert(h + 2 <= out.size());
    out[h++] = d.link_base + 2 * static_cast<LinkId>(cur);
    out[h++] = d.link_base + 2 * static_cast<LinkId>(next) + 1;
    return h;
  }
  assert(h + 4 <= out.size());
  const auto spines = static_cast<LinkId>(d.spines);
  const auto sp = static_cast<LinkId>(spine_of(d, cur, next, flow));
  const LinkId group_base = d.link_base + 2 * static_cast<LinkId>(npus_) +
                            static_cast<LinkId>(group_of(d, cur)) * 2 * static_cast<LinkId>(d.leaves) * spines;
  out[h++] = d.link_base + 2 * static_cast<LinkId>(cur);
  out[h++] = group_base + 2 * (static_cast<LinkId>(ls) * spines + sp);
  out[h++] = group_base + 2 * (static_cast<LinkId>(ld) * spines + sp) + 1;
  out[h++] = d.link_base + 2 * static_cast<LinkId>(next) + 1;
  return h;
}

Topology::Topology(const NetworkConfig& config) {
  if (config.dims.empty()) bad_network(config, "has no dimension");
  for (std::size_t i = 0; i < config.dims.size(); ++i) check_fat_tree(config, i);
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
    if (nd.topology == DimTopology::kFatTree) {
      // A fat-tree of one host still has its leaf and spine (a network that is one fat-tree is built whole).
      const FatTreeConfig& ft = *nd.fat_tree;
      d.hosts_per_leaf = ft.hosts_per_leaf;
      d.leaves = ft.leaves;
      d.spines = ft.spines;
      const int64_t groups = total / n;
      links = add_sat(links, add_sat(2 * total, mul_sat(groups, mul_sat(2, mul_sat(ft.leaves, ft.spines)))));
      switches = add_sat(switches, mul_sat(groups, int64_t{ft.leaves} + ft.spines));
      max_hops_ += ft.leaves > 1 ? 4 : (n > 1 ? 2 : 0);
      if (fat_tree_dim_ < 0) fat_tree_dim_ = static_cast<int32_t>(dims_.size());
    } else if (n > 1) {
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
        case DimTopology::kFatTree:  // above
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
    if (d.kind == DimTopology::kFatTree) {
      assert(links_.size() == d.link_base);
      add_fat_tree_links(d, *nd.fat_tree, dim);
      continue;
    }
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
          const int32_t sw = d.switch_base + group_of(d, p);
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
      case DimTopology::kFatTree: {
        const int32_t next = cur + (cd - cs) * d.stride;
        h = fat_tree_route(d, cur, next, flow, out, h);
        cur = next;
        break;
      }
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
        h += cs / d.hosts_per_leaf == cd / d.hosts_per_leaf ? 2 : 4;
        break;
    }
  }
  return h;
}

}  // namespace fabemu::emu
