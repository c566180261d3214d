// WireCounters (host/wire/wire_counters.h), the counters both real-time fabrics share: its operator+= is
// driven by one field list, so a counter added to the struct and not to the list would silently not be
// summed. These tests see every counter through the struct's bytes, whatever the list says.
#include "host/wire/wire_counters.h"

#include "host/wire/collective_spans.h"

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

// Measured vs modelled per collective (host/wire/collective_spans.h), the DPDK and socket fabrics' one
// implementation: spans from hand-made deliveries.
TEST(CollectiveSpans, SpansFromTheirMessages) {
  using fabemu::host::dpdk::CollectiveSpans;
  const auto t = [](uint64_t ps) { return fabemu::emu::Time::from_ps(ps); };
  CollectiveSpans spans;
  EXPECT_TRUE(spans.empty());
  // Collective 2: ready at 100 and 150, handed over at 120 (late) and 140 (before its ready time: counts
  // from 150); modelled deliveries 1,100 and 1,000; real arrivals 1,400 and 1,620.
  spans.add(2, 1000, t(100), t(120), t(1100), t(1400));
  spans.add(2, 500, t(150), t(140), t(1000), t(1620));
  // Collective 5: its one message's arrival stamp is before its real start (clocks of two processes): a
  // measured span of 0, never a wrapped one.
  spans.add(5, 8, t(10), t(50), t(20), t(40));
  const auto s = spans.spans();
  ASSERT_EQ(s.size(), 2u);  // collectives 0, 1, 3, 4 had no wire message
  EXPECT_EQ(s[0].coll, 2u);
  EXPECT_EQ(s[0].messages, 2u);
  EXPECT_EQ(s[0].bytes, 1500u);
  EXPECT_EQ(s[0].modelled.ps(), 1000u);  // 100 .. 1,100
  EXPECT_EQ(s[0].measured.ps(), 1500u);  // 120 .. 1,620
  EXPECT_EQ(s[0].measured_from_ps, 120u);
  EXPECT_EQ(s[0].measured_to_ps, 1620u);
  EXPECT_DOUBLE_EQ(s[0].deviation, 0.5);
  EXPECT_EQ(s[1].coll, 5u);
  EXPECT_EQ(s[1].modelled.ps(), 10u);
  EXPECT_EQ(s[1].measured.ps(), 0u);
  EXPECT_DOUBLE_EQ(s[1].deviation, -1.0);
}
