// WireCounters (host/wire/wire_counters.h), the counters both real-time fabrics share: its operator+= is
// driven by one field list, so a counter added to the struct and not to the list would silently not be
// summed. These tests see every counter through the struct's bytes, whatever the list says.
#include "host/wire/wire_counters.h"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace fabemu::host::dpdk {
namespace {

// WireCounters is a run of uint64_t counters: seen here as an array of them.
constexpr std::size_t kCounters = sizeof(WireCounters) / sizeof(uint64_t);
static_assert(std::is_standard_layout_v<WireCounters> && std::is_trivially_copyable_v<WireCounters> &&
              sizeof(WireCounters) % sizeof(uint64_t) == 0);

using Words = std::array<uint64_t, kCounters>;

WireCounters from_words(const Words& w) {
  WireCounters c;
  std::memcpy(static_cast<void*>(&c), w.data(), sizeof c);  // trivially copyable (asserted above)
  return c;
}

Words words_of(const WireCounters& c) {
  Words w;
  std::memcpy(w.data(), &c, sizeof c);
  return w;
}

// The index of a member among the words.
std::size_t word_of(uint64_t WireCounters::*m) {
  WireCounters c;
  return static_cast<std::size_t>(reinterpret_cast<const char*>(&(c.*m)) - reinterpret_cast<const char*>(&c)) /
         sizeof(uint64_t);
}

TEST(WireCounters, SumAddsEveryCounterAndKeepsTheLongestPollGap) {
  Words a{};
  Words b{};
  for (std::size_t i = 0; i < kCounters; ++i) {
    a[i] = i + 1;
    b[i] = 1000 * (kCounters - i);
  }
  WireCounters sum = from_words(a);
  sum += from_words(b);
  const Words got = words_of(sum);
  const std::size_t gap = word_of(&WireCounters::poll_gap_max_ns);
  for (std::size_t i = 0; i < kCounters; ++i) {
    const uint64_t expected = i == gap ? std::max(a[i], b[i]) : a[i] + b[i];
    EXPECT_EQ(got[i], expected) << "counter " << i << " of " << kCounters << " (poll_gap_max_ns is " << gap << ")";
  }
}

// clear_sums zeroes what add_sent, add_received and add_faults add (and rx_receiver_invalid), nothing else.
TEST(WireCounters, ClearSumsZeroesTheSumsOnly) {
  Words w{};
  for (std::size_t i = 0; i < kCounters; ++i) w[i] = 7 + i;
  WireCounters c = from_words(w);
  c.clear_sums();
  const Words got = words_of(c);
  const std::array sums = {&WireCounters::retransmissions,      &WireCounters::nack_retransmissions,
                           &WireCounters::timeout_retransmissions, &WireCounters::tail_retransmissions,
                           &WireCounters::nacks_in_flight,      &WireCounters::rx_duplicates,
                           &WireCounters::rx_reordered,         &WireCounters::rx_stale,
                           &WireCounters::rx_receiver_invalid,  &WireCounters::injected_drops,
                           &WireCounters::injected_duplicates,  &WireCounters::injected_reorders};
  std::array<bool, kCounters> cleared{};
  for (const auto m : sums) cleared[word_of(m)] = true;
  for (std::size_t i = 0; i < kCounters; ++i) EXPECT_EQ(got[i], cleared[i] ? 0 : w[i]) << "counter " << i;
}

}  // namespace
}  // namespace fabemu::host::dpdk
