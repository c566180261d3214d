// The FrameTemplate of each flow (src rank -> dst rank) a sender frames: what DpdkFabric uses for data
// frames and RxPath for ACK/NACK frames. Up to kDenseFlows flows (256 ranks) every flow keeps its own,
// made on first use. Beyond, a direct-mapped cache of kCachedFlows templates: a flow whose slot another
// flow holds rebuilds the template there (a header image, two sums and a short CRC: the cost of one
// frame's encode), so memory stays bounded (about 13 MB) and no flow falls back to encoding whole frames.
// A map of one template per flow, each its own allocation, cost most of the main lcore's page faults on a
// 512-rank all-to-all, and encoded the frames of the flows beyond it whole (the measurement:
// host/dpdk/README.md, "Fast framing").
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "host/wire/frame.h"

namespace fabemu::host::dpdk {

class FlowTemplates {
 public:
  static constexpr uint64_t kDenseFlows = 65536;
  static constexpr uint64_t kCachedFlows = 16384;  // a power of two

  FlowTemplates() : FlowTemplates(0) {}
  explicit FlowTemplates(uint32_t npus)
      : npus_(npus), dense_(uint64_t{npus} * npus <= kDenseFlows),
        slots_(dense_ ? uint64_t{npus} * npus : kCachedFlows) {}

  // The template for spec's flow (spec.hdr.src_rank -> dst_rank, both below npus), matching spec.
  FrameTemplate& of(const FrameSpec& spec) {
    const uint64_t key = uint64_t{spec.hdr.src_rank} * npus_ + spec.hdr.dst_rank;
    std::unique_ptr<FrameTemplate>& t = slots_[dense_ ? key : key & (kCachedFlows - 1)];
    if (!t) [[unlikely]] {
      t = std::make_unique<FrameTemplate>(spec);
    } else if (!t->matches(spec)) [[unlikely]] {
      *t = FrameTemplate(spec);  // another flow held the slot (or this flow's addresses changed)
      ++rebuilds_;
    }
    return *t;
  }
  // Templates rebuilt for another flow than the one in their slot.
  uint64_t rebuilds() const noexcept { return rebuilds_; }
  size_t slots() const noexcept { return slots_.size(); }
  size_t made() const noexcept {
    size_t n = 0;
    for (const auto& t : slots_) n += t != nullptr;
    return n;
  }

 private:
  uint32_t npus_;
  bool dense_;
  std::vector<std::unique_ptr<FrameTemplate>> slots_;
  uint64_t rebuilds_ = 0;
};

}  // namespace fabemu::host::dpdk
