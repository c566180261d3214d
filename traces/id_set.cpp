#include "traces/id_set.h"

#include <bit>

namespace fabemu::traces {

bool IdIntervalSet::insert(uint64_t id) {
  // First run starting after id; the one before it (if any) may contain or touch id.
  auto next = runs_.upper_bound(id);
  if (next != runs_.begin()) {
    auto prev = std::prev(next);
    if (id < prev->second) return false;
    if (id == prev->second) {
      prev->second = id + 1;
      if (next != runs_.end() && next->first == prev->second) {
        prev->second = next->second;
        runs_.erase(next);
      }
      ++count_;
      return true;
    }
  }
  if (next != runs_.end() && next->first == id + 1) {
    const uint64_t end = next->second;
    runs_.erase(next);
    runs_.emplace(id, end);
  } else {
    runs_.emplace_hint(next, id, id + 1);
  }
  ++count_;
  return true;
}

bool IdIntervalSet::contains(uint64_t id) const {
  auto next = runs_.upper_bound(id);
  if (next == runs_.begin()) return false;
  return id < std::prev(next)->second;
}

void IdSlotMap::rehash(size_t capacity) {
  std::vector<Entry> old = std::move(table_);
  table_.assign(capacity, Entry{0, kNone});
  mask_ = capacity - 1;
  shift_ = 64 - std::countr_zero(capacity);
  size_ = 0;
  for (const Entry& e : old) {
    if (e.slot != kNone) insert(e.id, e.slot);
  }
}

void IdSlotMap::insert(uint64_t id, uint32_t slot) {
  if ((size_ + 1) * 2 > table_.size()) rehash(table_.size() * 2);
  for (size_t i = index(id);; i = (i + 1) & mask_) {
    Entry& e = table_[i];
    if (e.slot == kNone) {
      e = Entry{id, slot};
      ++size_;
      return;
    }
    if (e.id == id) {
      e.slot = slot;
      return;
    }
  }
}

void IdSlotMap::erase(uint64_t id) {
  size_t i = index(id);
  for (;; i = (i + 1) & mask_) {
    if (table_[i].slot == kNone) return;
    if (table_[i].id == id) break;
  }
  // Backward-shift: pull later entries of the probe run into the hole when their home allows it.
  size_t hole = i;
  for (size_t j = (hole + 1) & mask_; table_[j].slot != kNone; j = (j + 1) & mask_) {
    const size_t home = index(table_[j].id);
    const bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      table_[hole] = table_[j];
      hole = j;
    }
  }
  table_[hole].slot = kNone;
  --size_;
}

}  // namespace fabemu::traces
