#include "traces/id_set.h"

#include <algorithm>
#include <bit>

namespace fabemu::traces {

IdSet::Chunk* IdSet::find_chunk(uint64_t key) const {
  if (last_ != nullptr && last_->first == key) return const_cast<Chunk*>(&last_->second);
  auto it = chunks_.find(key);
  if (it == chunks_.end()) return nullptr;
  last_ = &*it;
  return const_cast<Chunk*>(&it->second);
}

bool IdSet::insert(uint64_t id) {
  const uint64_t key = id >> 16;
  const auto low = static_cast<uint16_t>(id & 0xffffu);
  Chunk* chunk = find_chunk(key);
  if (chunk == nullptr) {
    auto [it, inserted] = chunks_.try_emplace(key);
    last_ = &*it;
    chunk = &it->second;
  }
  if (!chunk->bits.empty()) {
    uint64_t& word = chunk->bits[low >> 6];
    const uint64_t mask = uint64_t{1} << (low & 63u);
    if ((word & mask) != 0) return false;
    word |= mask;
  } else {
    auto pos = std::lower_bound(chunk->array.begin(), chunk->array.end(), low);
    if (pos != chunk->array.end() && *pos == low) return false;
    chunk->array.insert(pos, low);
    if (chunk->array.size() > kArrayMax) {  // convert to a bitmap
      chunk->bits.assign(1024, 0);
      for (const uint16_t v : chunk->array) chunk->bits[v >> 6] |= uint64_t{1} << (v & 63u);
      chunk->array = std::vector<uint16_t>();
    }
  }
  ++count_;
  return true;
}

bool IdSet::contains(uint64_t id) const {
  const Chunk* chunk = find_chunk(id >> 16);
  if (chunk == nullptr) return false;
  const auto low = static_cast<uint16_t>(id & 0xffffu);
  if (!chunk->bits.empty()) return (chunk->bits[low >> 6] >> (low & 63u) & 1u) != 0;
  return std::binary_search(chunk->array.begin(), chunk->array.end(), low);
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
