// The window rings' and bitmaps' helpers that Receiver (reassembly.cpp) and Sender (sender.cpp) share: bits
// in a vector of words, a ring grown to hold an id, an inline bit count, the window check. Internal to
// host/wire.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fabemu::host::dpdk::window {

inline size_t words_for(uint32_t bits) noexcept { return (size_t{bits} + 63) / 64; }
inline void set_bit(std::vector<uint64_t>& v, uint64_t i) noexcept { v[i >> 6] |= uint64_t{1} << (i & 63); }
inline void clear_bit(std::vector<uint64_t>& v, uint64_t i) noexcept { v[i >> 6] &= ~(uint64_t{1} << (i & 63)); }
inline bool get_bit(const std::vector<uint64_t>& v, uint64_t i) noexcept { return (v[i >> 6] >> (i & 63)) & 1; }

// A window ring (Receiver::Source, Sender::Dest: slot_of and done by id & mask) holds the ids base ..
// base + size - 1. It starts at kFirstRing entries and grows to the smallest power of two, at least
// double, that holds id (id - base < window, the window a power of two), its entries moved: a pair with
// few messages in flight keeps a small ring. Made at the window's size (1,024 entries and bits) on a pair's
// first message, they held most of a large all-to-all's memory (host/dpdk/README.md, "Reliability").
inline constexpr uint64_t kFirstRing = 16;
template <class Ring>
void make_room(Ring& r, uint64_t base, uint64_t id, uint32_t none) {
  const uint64_t need = std::bit_ceil(id - base + 1);
  const uint64_t size = r.slot_of.size();
  if (size == 0) {
    const uint64_t n = std::max(kFirstRing, need);
    r.slot_of.assign(n, none);
    r.done.assign(words_for(static_cast<uint32_t>(n)), 0);
    r.mask = n - 1;
    return;
  }
  const uint64_t n = std::max(2 * size, need);
  std::vector<uint32_t> slot_of(n, none);
  std::vector<uint64_t> done(words_for(static_cast<uint32_t>(n)), 0);
  for (uint64_t i = base; i < base + size; ++i) {
    slot_of[i & (n - 1)] = r.slot_of[i & r.mask];
    if (get_bit(r.done, i & r.mask)) set_bit(done, i & (n - 1));
  }
  r.slot_of.swap(slot_of);
  r.done.swap(done);
  r.mask = n - 1;
}
// std::popcount is a libgcc call on baseline x86-64 (no POPCNT): the SWAR count inline.
inline uint32_t bit_count(uint64_t x) noexcept {
  x -= (x >> 1) & 0x5555555555555555ULL;
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
  return static_cast<uint32_t>((x * 0x0101010101010101ULL) >> 56);
}

inline void check_window(uint32_t window, const char* who) {
  if (window == 0 || !std::has_single_bit(window)) {
    throw std::invalid_argument(std::string(who) + ": window " + std::to_string(window) +
                                " must be a power of two");
  }
}

}  // namespace fabemu::host::dpdk::window
