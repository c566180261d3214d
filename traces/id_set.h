// Compact sets and maps of node ids: an interval set (a run of consecutive ids costs one entry, so
// the usual sequentially numbered trace needs O(1) memory) and an open-addressing id -> slot map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace fabemu::traces {

class IdIntervalSet {
 public:
  // Adds `id`; returns false when it was already present.
  bool insert(uint64_t id);
  bool contains(uint64_t id) const;
  uint64_t size() const { return count_; }
  size_t intervals() const { return runs_.size(); }
  void clear() {
    runs_.clear();
    count_ = 0;
  }

 private:
  std::map<uint64_t, uint64_t> runs_;  // start -> end (exclusive), disjoint and non-adjacent
  uint64_t count_ = 0;
};

// Linear-probing hash map from node id to a 32-bit slot, with backward-shift deletion (no
// tombstones). No allocation once it has grown to the window size.
class IdSlotMap {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  IdSlotMap() { rehash(64); }
  uint32_t find(uint64_t id) const {
    for (size_t i = index(id);; i = (i + 1) & mask_) {
      const Entry& e = table_[i];
      if (e.slot == kNone) return kNone;
      if (e.id == id) return e.slot;
    }
  }
  // Inserts or overwrites.
  void insert(uint64_t id, uint32_t slot);
  void erase(uint64_t id);
  size_t size() const { return size_; }

 private:
  struct Entry {
    uint64_t id;
    uint32_t slot;
  };
  size_t index(uint64_t id) const {
    return static_cast<size_t>((id * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }
  void rehash(size_t capacity);

  std::vector<Entry> table_;
  size_t mask_ = 0;
  int shift_ = 0;
  size_t size_ = 0;
};

}  // namespace fabemu::traces
