// Compact sets and maps of node ids: a chunked id set (about one bit per id for dense or strided
// ids) and an open-addressing id -> slot map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace fabemu::traces {

// A set of 64-bit node ids stored in chunks of 2^16 consecutive ids (Roaring-style): a chunk holds a
// sorted array of the low 16 bits while it has few members and a 8 KiB bitmap once it has many. Memory
// follows the ids' density (dense or strided ids: about one bit each), not a map node per id.
class IdSet {
 public:
  // Adds `id`; returns false when it was already present.
  bool insert(uint64_t id);
  bool contains(uint64_t id) const;
  uint64_t size() const { return count_; }
  size_t chunks() const { return chunks_.size(); }
  void clear() {
    chunks_.clear();
    last_ = nullptr;
    count_ = 0;
  }

 private:
  static constexpr size_t kArrayMax = 4096;  // beyond this an array is larger than the bitmap
  struct Chunk {
    std::vector<uint16_t> array;  // sorted, while small
    std::vector<uint64_t> bits;   // 1024 words once large
  };
  Chunk* find_chunk(uint64_t key) const;

  std::map<uint64_t, Chunk> chunks_;  // id >> 16 -> chunk
  mutable const std::pair<const uint64_t, Chunk>* last_ = nullptr;  // cache: ids arrive in runs
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
