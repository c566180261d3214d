#include "emulator/event_queue.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace fabemu::emu {

namespace {
[[noreturn]] void throw_full() {
  throw std::length_error("EventQueue: more than " + std::to_string(EventQueue::kMaxPending) + " pending events");
}
}  // namespace

void EventQueue::LineFree::operator()(Entry* p) const noexcept {
  ::operator delete(p, std::align_val_t{kLine});
}

EventQueue::EventQueue(std::size_t expected_pending) {
  reserve(expected_pending);
}

void EventQueue::reserve(std::size_t pending) {
  pending = std::min(std::max<std::size_t>(pending, 16), kMaxPending);
  if (pending > capacity_) grow_heap(pending);
  payloads_.reserve(pending);
}

void EventQueue::grow_heap(std::size_t capacity) {
  capacity = std::min(std::max<std::size_t>(capacity, 16), kMaxPending);
  if (capacity <= capacity_) throw_full();  // already holds kMaxPending
  // Round the whole block up to whole cache lines.
  const std::size_t entries = (kHeapOffset + capacity + 3) / 4 * 4;
  auto* block = static_cast<Entry*>(::operator new(entries * sizeof(Entry), std::align_val_t{kLine}));
  if (size_ > 0) std::memcpy(block + kHeapOffset, heap_, size_ * sizeof(Entry));
  storage_.reset(block);
  heap_ = block + kHeapOffset;
  capacity_ = entries - kHeapOffset;
}

uint32_t EventQueue::new_slot(EventTarget& target, uint64_t arg) {
  if (payloads_.size() >= kMaxPending) throw_full();
  payloads_.push_back(Payload{&target, arg});
  return static_cast<uint32_t>(payloads_.size() - 1);
}

void EventQueue::grow_lane(Lane& lane) {
  if (pending_ >= kMaxPending) throw_full();
  std::vector<Entry> ring(std::max<std::size_t>(16, 2 * lane.ring.size()));
  for (std::size_t i = 0; i < lane.count; ++i) ring[i] = lane.ring[(lane.head + i) & (lane.ring.size() - 1)];
  lane.ring = std::move(ring);
  lane.head = 0;
}

void EventQueue::drain_lanes_into_heap() {
  for (Lane& lane : lanes_) {
    for (; lane.count > 0; --lane.count) {
      if (size_ == capacity_) grow_heap(2 * capacity_);
      sift_up(lane.front());
      lane.head = (lane.head + 1) & (lane.ring.size() - 1);
    }
  }
}

void EventQueue::renumber() {
  drain_lanes_into_heap();
  std::vector<std::size_t> order(size_);
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Keys are unique (their sequences are), so this is the current sequence order.
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return heap_[a].key < heap_[b].key; });
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    Entry& e = heap_[order[rank]];
    e.key = (uint64_t{rank} << kSlotBits) | (e.key & kSlotMask);
  }
  next_sequence_ = size_;
}

}  // namespace fabemu::emu
