// A pool of T addressed by 32-bit index: acquire() hands out a free slot (the one released last first)
// or grows the pool by one; release() gives a slot back. A reused slot keeps its old contents, so a
// T holding vectors keeps their capacity: once the pool has grown to its peak, acquiring and releasing
// allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fabemu::emu {

template <typename T>
class SlotPool {
 public:
  // A free slot, its contents as the last holder left them (a new slot: T{}).
  uint32_t acquire() {
    if (free_count_ > 0) return free_[--free_count_];
    slots_.emplace_back();
    free_.push_back(0);  // free_ as long as slots_: release() never grows it
    return static_cast<uint32_t>(slots_.size() - 1);
  }
  // A free slot holding `value`.
  uint32_t acquire(const T& value) {
    const uint32_t slot = acquire();
    slots_[slot] = value;
    return slot;
  }
  // `slot` (acquired, not yet released) is free again.
  void release(uint32_t slot) noexcept { free_[free_count_++] = slot; }

  T& operator[](uint32_t slot) noexcept { return slots_[slot]; }
  const T& operator[](uint32_t slot) const noexcept { return slots_[slot]; }
  // Every slot ever handed out, free or not, in index order.
  size_t size() const noexcept { return slots_.size(); }

 private:
  std::vector<T> slots_;
  // A stack of free slots, the one released last on top (reused first): free_[0, free_count_).
  std::vector<uint32_t> free_;
  size_t free_count_ = 0;
};

}  // namespace fabemu::emu
