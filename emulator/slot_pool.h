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
    if (!free_.empty()) {
      const uint32_t slot = free_.back();
      free_.pop_back();
      return slot;
    }
    slots_.emplace_back();
    free_.reserve(slots_.capacity());
    return static_cast<uint32_t>(slots_.size() - 1);
  }
  // A free slot holding `value`.
  uint32_t acquire(const T& value) {
    const uint32_t slot = acquire();
    slots_[slot] = value;
    return slot;
  }
  void release(uint32_t slot) { free_.push_back(slot); }

  T& operator[](uint32_t slot) noexcept { return slots_[slot]; }
  const T& operator[](uint32_t slot) const noexcept { return slots_[slot]; }
  // Every slot ever handed out, free or not, in index order.
  size_t size() const noexcept { return slots_.size(); }

 private:
  std::vector<T> slots_;
  std::vector<uint32_t> free_;  // LIFO: the slot released last is reused first
};

}  // namespace fabemu::emu
