// Reassembly and reliability of the DPDK fabric without any I/O: receiver and sender unit cases, the
// seeded fault filter, and 10,000 messages as real frames (encoded, decoded) through a lossy, reordering,
// duplicating channel where every message must complete exactly once and every retransmission must
// answer exactly one drop.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <queue>
#include <random>
#include <tuple>
#include <span>
#include <vector>

#include "host/wire/address_plan.h"
#include "host/wire/frame.h"
#include "host/wire/reassembly.h"
#include "host/wire/roce.h"
#include "tests/support/sanitizers.h"

namespace fabemu::host::dpdk {
namespace {

using namespace emu::literals;

RxPacket pkt(uint64_t id, uint32_t seq, uint32_t count, uint64_t len = 0, uint32_t src = 0) {
  return RxPacket{src, id, seq, count, len == 0 ? uint64_t{count} * 100 : len, 100, false};
}

TEST(Receiver, CompletesOnceCountsDuplicatesAndReordering) {
  Receiver rx(ReceiverConfig{.sources = 2, .window = 8});
  const Time t = Time::from_us(1);
  EXPECT_EQ(rx.on_packet(pkt(0, 0, 4), t), RxEvent::kAccepted);
  EXPECT_EQ(rx.on_packet(pkt(0, 2, 4), t), RxEvent::kAccepted);
  EXPECT_EQ(rx.on_packet(pkt(0, 2, 4), t), RxEvent::kDuplicate);
  uint32_t miss[8];
  ASSERT_EQ(rx.missing(0, 0, miss), 1u);
  EXPECT_EQ(miss[0], 1u);
  EXPECT_EQ(rx.on_packet(pkt(0, 1, 4), t), RxEvent::kAccepted);  // reordered
  EXPECT_EQ(rx.on_packet(pkt(0, 3, 4), t), RxEvent::kCompleted);
  EXPECT_EQ(rx.on_packet(pkt(0, 3, 4), t), RxEvent::kStale);
  EXPECT_EQ(rx.on_packet(pkt(0, 0, 5), t), RxEvent::kStale);
  EXPECT_EQ(rx.on_packet(pkt(1, 0, 2), t), RxEvent::kAccepted);
  EXPECT_EQ(rx.on_packet(pkt(1, 1, 3), t), RxEvent::kInvalid);  // count differs from its first packet
  EXPECT_EQ(rx.on_packet(pkt(1, 2, 2), t), RxEvent::kInvalid);  // seq >= count
  EXPECT_EQ(rx.on_packet(pkt(0, 0, 1, 0, 2), t), RxEvent::kInvalid);  // unknown source
  EXPECT_EQ(rx.on_packet(pkt(9, 0, 1), t), RxEvent::kOutOfWindow);  // id 9 >= base 1 + window 8
  EXPECT_EQ(rx.on_packet(pkt(3, 0, 1), t), RxEvent::kCompleted);   // ahead of 1 and 2: fine
  EXPECT_EQ(rx.completed_below(0), 1u);
  EXPECT_EQ(rx.on_packet(pkt(2, 0, 1), t), RxEvent::kCompleted);
  EXPECT_EQ(rx.completed_below(0), 1u);  // 1 still open
  EXPECT_EQ(rx.on_packet(pkt(1, 1, 2), t), RxEvent::kCompleted);
  EXPECT_EQ(rx.completed_below(0), 4u);
  const ReceiverStats& s = rx.stats();
  EXPECT_EQ(s.completed, 4u);
  EXPECT_EQ(s.duplicates, 1u);
  EXPECT_EQ(s.stale, 2u);
  EXPECT_EQ(s.reordered, 1u);
  EXPECT_EQ(s.invalid, 3u);
  EXPECT_EQ(s.out_of_window, 1u);
  EXPECT_EQ(s.bytes_completed, 400u + 100 + 100 + 200);
  EXPECT_EQ(rx.active_messages(), 0u);
}

// A message that keeps receiving is NACKed once its first hole is nack_delay old (its NACK acknowledges
// what arrived beyond the hole, which the sender's timeout would otherwise resend), not before; a hole
// that is filled while another opens behind it starts a new age; without a hole it waits until idle.
// The CE-marked packets of a message (ECN: a switch's queue built up on their way) are counted once each,
// duplicates and stale copies not, and reported when it completes, message by message.
TEST(Receiver, CountsTheCeMarkedPacketsOfEachMessage) {
  Receiver rx(ReceiverConfig{.sources = 1, .window = 8});
  const Time t = Time::from_us(1);
  const auto ce = [](RxPacket p) {
    p.ce = true;
    return p;
  };
  EXPECT_EQ(rx.on_packet(ce(pkt(0, 1, 5)), t), RxEvent::kAccepted);
  EXPECT_EQ(rx.on_packet(ce(pkt(0, 1, 5)), t), RxEvent::kDuplicate);  // not counted again
  EXPECT_EQ(rx.on_packet(pkt(1, 0, 2), t), RxEvent::kAccepted);       // another message meanwhile
  EXPECT_EQ(rx.on_packet(ce(pkt(1, 1, 2)), t), RxEvent::kCompleted);
  EXPECT_EQ(rx.completed_ce(), 1u);
  EXPECT_EQ(rx.on_packet(pkt(0, 0, 5), t), RxEvent::kAccepted);
  EXPECT_EQ(rx.on_packet(ce(pkt(0, 3, 5)), t), RxEvent::kAccepted);
  EXPECT_EQ(rx.on_packet(pkt(0, 2, 5), t), RxEvent::kAccepted);
  EXPECT_EQ(rx.on_packet(ce(pkt(0, 4, 5)), t), RxEvent::kCompleted);
  EXPECT_EQ(rx.completed_ce(), 3u);
  EXPECT_EQ(rx.on_packet(ce(pkt(0, 4, 5)), t), RxEvent::kStale);
  EXPECT_EQ(rx.completed_ce(), 3u);
  // A slot reused by a message without CE marks starts from zero.
  EXPECT_EQ(rx.on_packet(pkt(2, 0, 1), t), RxEvent::kCompleted);
  EXPECT_EQ(rx.completed_ce(), 0u);
}

TEST(Receiver, NacksAnOldHoleWhileTheMessageStreams) {
  Receiver rx(ReceiverConfig{.sources = 1, .window = 4, .nack_delay = 10_us});
  NackBatch b;
  rx.on_packet(pkt(0, 0, 100), Time::from_us(0));
  rx.on_packet(pkt(0, 2, 100), Time::from_us(1));  // hole at 1 from 1 us
  uint32_t seq = 3;
  for (uint64_t t = 2; t <= 10; ++t) rx.on_packet(pkt(0, seq++, 100), Time::from_us(t));
  rx.poll_nacks(Time::from_us(10), b);
  EXPECT_TRUE(b.nacks.empty());  // the hole is 9 us old, the message active
  rx.on_packet(pkt(0, seq++, 100), Time::from_us(11));
  rx.poll_nacks(Time::from_us(11), b);
  ASSERT_EQ(b.nacks.size(), 1u);  // 10 us old, though a packet came this very microsecond
  EXPECT_EQ(b.nacks[0].cumulative, 1u);
  EXPECT_EQ(b.nacks[0].missing, 1u);
  EXPECT_EQ(b.seqs[b.nacks[0].first], 1u);
  EXPECT_EQ(b.nacks[0].covered, seq);
  b.clear();
  // Hole 1 filled at 12 us with seq + 1 arrived and seq missing: the new first hole is 0 us old.
  rx.on_packet(pkt(0, seq + 1, 100), Time::from_us(12));
  rx.on_packet(pkt(0, 1, 100), Time::from_us(12));
  for (uint64_t t = 13; t <= 30; ++t) {
    rx.on_packet(pkt(0, seq + 2 + static_cast<uint32_t>(t - 13), 100), Time::from_us(t));
    rx.poll_nacks(Time::from_us(t), b);
    if (t < 22) {
      EXPECT_TRUE(b.nacks.empty()) << t << " us";  // 12 + 10: no earlier (the last NACK: 11 us)
    }
  }
  ASSERT_FALSE(b.nacks.empty());
  EXPECT_EQ(b.nacks[0].cumulative, seq);
  EXPECT_EQ(b.seqs[b.nacks[0].first], seq);
  EXPECT_EQ(rx.stats().nacks, b.nacks.size() + 1);
  // No hole: an active message is not NACKed.
  Receiver rx2(ReceiverConfig{.sources = 1, .window = 4, .nack_delay = 10_us});
  NackBatch b2;
  for (uint32_t i = 0; i < 50; ++i) {
    rx2.on_packet(pkt(0, i, 100), Time::from_us(i));
    rx2.poll_nacks(Time::from_us(i), b2);
  }
  EXPECT_TRUE(b2.nacks.empty());
}

TEST(Receiver, NacksGapsAfterTheDelay) {
  Receiver rx(ReceiverConfig{.sources = 1, .window = 4, .nack_delay = 10_us, .max_missing_per_nack = 3});
  for (uint32_t seq : {0u, 2u, 4u, 6u, 7u, 9u}) rx.on_packet(pkt(0, seq, 20), Time::from_us(1));
  rx.on_packet(pkt(1, 0, 3), Time::from_us(5));
  NackBatch b;
  rx.poll_nacks(Time::from_us(10), b);
  EXPECT_TRUE(b.nacks.empty());  // idle 9 us < 10 us
  rx.poll_nacks(Time::from_us(11), b);
  ASSERT_EQ(b.nacks.size(), 1u);
  const Nack n = b.nacks[0];
  EXPECT_EQ(n.message_id, 0u);
  EXPECT_EQ(n.cumulative, 1u);
  EXPECT_EQ(n.missing, 3u);  // 1, 3, 5 (8 did not fit): covered ends after 5
  EXPECT_EQ(std::vector<uint32_t>(b.seqs.begin() + n.first, b.seqs.begin() + n.first + n.missing),
            (std::vector<uint32_t>{1, 3, 5}));
  EXPECT_EQ(n.covered, 6u);
  b.clear();
  rx.poll_nacks(Time::from_us(15), b);
  ASSERT_EQ(b.nacks.size(), 1u);  // message 1: no gap, an empty list acknowledging seq 0
  EXPECT_EQ(b.nacks[0].message_id, 1u);
  EXPECT_EQ(b.nacks[0].missing, 0u);
  EXPECT_EQ(b.nacks[0].covered, 1u);
  b.clear();
  rx.poll_nacks(Time::from_us(20), b);
  EXPECT_TRUE(b.nacks.empty());  // message 0 NACKed at 11 us: not again before 21 us
  rx.poll_nacks(Time::from_us(21), b);
  EXPECT_EQ(b.nacks.size(), 1u);
  EXPECT_EQ(rx.stats().nacks, 3u);
}

TEST(Sender, SelectiveRepeatTimeoutAndWindow) {
  Sender tx(SenderConfig{.destinations = 2, .payload_per_packet = 1000, .window = 2, .rto = 100_us});
  EXPECT_EQ(tx.submit(1, 3500), 0u);
  EXPECT_EQ(tx.submit(1, 0), 1u);
  EXPECT_FALSE(tx.can_submit(1));
  EXPECT_THROW(tx.submit(1, 1), std::out_of_range);
  EXPECT_THROW(tx.submit(2, 1), std::out_of_range);
  TxPacket p;
  std::vector<TxPacket> sent;
  while (tx.next(Time::from_us(1), p)) sent.push_back(p);
  ASSERT_EQ(sent.size(), 5u);
  EXPECT_EQ(sent[3].seq, 3u);
  EXPECT_EQ(sent[3].offset, 3000u);
  EXPECT_EQ(sent[3].bytes, 500u);
  EXPECT_EQ(sent[4].message_id, 1u);
  EXPECT_EQ(sent[4].count, 1u);
  EXPECT_EQ(sent[4].bytes, 0u);
  EXPECT_EQ(tx.next_timeout(), Time::from_us(101));
  EXPECT_TRUE(tx.on_ack(1, 1, 1));
  EXPECT_TRUE(tx.can_submit(1) == false);  // message 0 still holds the window base
  const uint32_t missing[] = {1};
  EXPECT_FALSE(tx.on_nack(1, 0, 1, 3, missing));  // 0 and 2 arrived, 1 missing, 3 unknown
  ASSERT_TRUE(tx.next(Time::from_us(50), p));
  EXPECT_EQ(p.seq, 1u);
  EXPECT_TRUE(p.retransmit);
  EXPECT_FALSE(tx.next(Time::from_us(50), p));
  ASSERT_TRUE(tx.next(Time::from_us(101), p));  // seq 3 timed out (0 and 2 were acknowledged)
  EXPECT_EQ(p.seq, 3u);
  EXPECT_FALSE(tx.next(Time::from_us(101), p));
  EXPECT_EQ(tx.stats().nack_retransmissions, 1u);
  EXPECT_EQ(tx.stats().timeout_retransmissions, 1u);
  EXPECT_TRUE(tx.on_ack(1, 0, 4));
  EXPECT_FALSE(tx.on_ack(1, 0, 4));  // repeated ACK
  EXPECT_EQ(tx.unacked_messages(), 0u);
  EXPECT_TRUE(tx.can_submit(1));
  EXPECT_EQ(tx.next_timeout(), Time::max());
}

// A pair's window ring starts at 16 entries and grows (entries moved) to what its messages in flight need,
// never past the window: ids, ACKs out of order, completion and stale copies stay right across the growth.
// A submit whose allocations fail (here: a message whose per-packet arrays would take 2 GiB, under an
// address-space limit) throws and changes nothing: the next message gets the id that one would have, and
// the pair's window is whole. Before, the slot and the id were taken first: the pair's window stayed short
// of that id for good (found by review).
TEST(Sender, SubmitThatThrowsLeavesNoHoleInTheIds) {
#if FABEMU_ASAN
  GTEST_SKIP() << "an address-space limit and AddressSanitizer's shadow memory do not mix";
#else
  Sender tx(SenderConfig{.destinations = 1, .payload_per_packet = 1, .window = 2, .rto = 1_ms});
  long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  ASSERT_GT(pages, 0);
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_AS, &before), 0);
  rlimit limit = before;
  limit.rlim_cur = static_cast<rlim_t>(pages) * 4096 + (rlim_t{1} << 30);  // the bit arrays fit, sent_at does not
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &limit), 0);
  bool threw = false;
  try {
    tx.submit(0, uint64_t{1} << 28);
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  ::setrlimit(RLIMIT_AS, &before);
  ASSERT_TRUE(threw);
  EXPECT_EQ(tx.unacked_messages(), 0u);
  EXPECT_EQ(tx.stats().messages, 0u);
  for (uint64_t want = 0; want < 4; ++want) {  // twice round the window of 2
    ASSERT_TRUE(tx.can_submit(0));
    const uint64_t id = tx.submit(0, 1);
    EXPECT_EQ(id, want);
    TxPacket p;
    ASSERT_TRUE(tx.next(Time::zero(), p));
    EXPECT_TRUE(tx.on_ack(0, id, 1));
  }
  EXPECT_TRUE(tx.can_submit(0));
#endif
}

TEST(Sender, WindowRingGrowsWithTheMessagesInFlight) {
  Sender tx(SenderConfig{.destinations = 2, .payload_per_packet = 1000, .window = 1024, .rto = 1000_us});
  EXPECT_EQ(tx.window_ring(0), 0u);
  EXPECT_EQ(tx.submit(0, 10), 0u);
  EXPECT_EQ(tx.window_ring(0), 16u);
  EXPECT_EQ(tx.window_ring(1), 0u);  // no message to it yet
  for (uint64_t id = 1; id < 100; ++id) ASSERT_EQ(tx.submit(0, 10), id);
  EXPECT_EQ(tx.window_ring(0), 128u);
  TxPacket p;
  uint64_t sent = 0;
  while (tx.next(Time::from_us(1), p)) ++sent;
  ASSERT_EQ(sent, 100u);
  // Every other message first (out of order: done bits), then 30 more messages (the ring grows with those
  // bits in it), then the rest; each completes once.
  for (uint64_t id = 1; id < 100; id += 2) ASSERT_TRUE(tx.on_ack(0, id, 1)) << id;
  for (uint64_t id = 100; id < 130; ++id) ASSERT_EQ(tx.submit(0, 10), id);
  EXPECT_EQ(tx.window_ring(0), 256u);
  while (tx.next(Time::from_us(1), p)) ++sent;
  ASSERT_EQ(sent, 130u);
  for (uint64_t id = 0; id < 100; id += 2) ASSERT_TRUE(tx.on_ack(0, id, 1)) << id;
  for (uint64_t id = 100; id < 130; ++id) ASSERT_TRUE(tx.on_ack(0, id, 1)) << id;
  for (uint64_t id = 0; id < 130; ++id) EXPECT_FALSE(tx.on_ack(0, id, 1)) << id;  // repeated
  EXPECT_EQ(tx.unacked_messages(), 0u);
  // The window's last id in flight at once: the ring grows to the window and no further.
  for (uint64_t id = 130; id < 130 + 1024; ++id) ASSERT_EQ(tx.submit(0, 10), id);
  EXPECT_FALSE(tx.can_submit(0));
  EXPECT_EQ(tx.window_ring(0), 1024u);
  while (tx.next(Time::from_us(2), p)) ++sent;
  ASSERT_EQ(sent, 130u + 1024u);
  for (uint64_t id = 130 + 1023; id >= 130; --id) ASSERT_TRUE(tx.on_ack(0, id, 1)) << id;  // last first
  EXPECT_EQ(tx.unacked_messages(), 0u);
  EXPECT_EQ(tx.submit(0, 10), 130u + 1024u);
}

TEST(Receiver, WindowRingGrowsWithTheMessagesInFlight) {
  Receiver rx(ReceiverConfig{.sources = 2, .window = 1024});
  const Time t = Time::from_us(1);
  EXPECT_EQ(rx.window_ring(0), 0u);
  // Ids 199 .. 0, last first: each completes once; the ring holds 200 ids at once.
  for (uint64_t id = 200; id-- > 0;) {
    ASSERT_EQ(rx.on_packet(RxPacket{0, id, 0, 1, 10, 10}, t), RxEvent::kCompleted) << id;
  }
  EXPECT_EQ(rx.window_ring(0), 256u);
  EXPECT_EQ(rx.completed_below(0), 200u);
  EXPECT_EQ(rx.on_packet(RxPacket{0, 150, 0, 1, 10, 10}, t), RxEvent::kStale);
  // A two-packet message with a hole, then ids up to the window's end past the ring: moved entries keep
  // their state (the hole is still missing, the message completes once).
  EXPECT_EQ(rx.on_packet(RxPacket{0, 200, 1, 2, 20, 10}, t), RxEvent::kAccepted);
  for (uint64_t id = 201; id < 200 + 1024; ++id) {
    ASSERT_EQ(rx.on_packet(RxPacket{0, id, 0, 1, 10, 10}, t), RxEvent::kCompleted) << id;
  }
  EXPECT_EQ(rx.window_ring(0), 1024u);
  EXPECT_EQ(rx.on_packet(RxPacket{0, 200 + 1024, 0, 1, 10, 10}, t), RxEvent::kOutOfWindow);
  uint32_t missing[4];
  ASSERT_EQ(rx.missing(0, 200, missing), 1u);
  EXPECT_EQ(missing[0], 0u);
  EXPECT_EQ(rx.on_packet(RxPacket{0, 200, 0, 2, 20, 10}, t), RxEvent::kCompleted);
  EXPECT_EQ(rx.completed_below(0), 200u + 1024u);
  EXPECT_EQ(rx.on_packet(RxPacket{0, 201, 0, 1, 10, 10}, t), RxEvent::kStale);
  EXPECT_EQ(rx.window_ring(1), 0u);
}

// A NACK passes over words of packets already all acknowledged, and acknowledges everything else it covers
// from the first packet of the next word on (a word boundary at 64 and at 128); only what it lists is
// resent, and a NACK of a message whose packets are mostly acknowledged completes it.
TEST(Sender, NackAfterAcknowledgedWordsAcksTheRest) {
  Sender tx(SenderConfig{.destinations = 1, .payload_per_packet = 100, .window = 2, .rto = 100_us});
  const uint64_t id = tx.submit(0, 200 * 100);
  TxPacket p;
  uint32_t sent = 0;
  while (tx.next(Time::from_us(1), p)) ++sent;
  ASSERT_EQ(sent, 200u);
  EXPECT_FALSE(tx.on_ack(0, id, 64));  // word 0 all acknowledged
  const uint32_t missing[] = {64, 130};
  EXPECT_FALSE(tx.on_nack(0, id, 64, 200, missing));
  ASSERT_TRUE(tx.next(Time::from_us(2), p));
  EXPECT_EQ(p.seq, 64u);
  EXPECT_TRUE(p.retransmit);
  ASSERT_TRUE(tx.next(Time::from_us(2), p));
  EXPECT_EQ(p.seq, 130u);
  EXPECT_FALSE(tx.next(Time::from_us(2), p));
  // 65..127 were acknowledged by the NACK: the next one, listing nothing, leaves only seq 64 and 130 to
  // acknowledge, and a NACK whose own list is empty from 64 on completes the message.
  EXPECT_FALSE(tx.on_nack(0, id, 64, 130, {}));  // 64 now arrived too
  EXPECT_EQ(tx.unacked_messages(), 1u);
  EXPECT_TRUE(tx.on_nack(0, id, 130, 200, {}));  // and 130
  EXPECT_EQ(tx.unacked_messages(), 0u);
  EXPECT_EQ(tx.stats().nack_retransmissions, 2u);
}

// The tail-loss probe (on_nack with `now`, SenderConfig::tail_age): a NACK that does not cover the last
// packet sent resends that one packet once it is tail_age old, and nothing else beyond what the NACK
// covered; not when it is younger, already queued or acknowledged, not when the NACK's list was cut short
// (its last entry is covered - 1), not without `now` or with tail_age max(). The probe's arrival moves the
// receiver's highest packet, and its next NACK lists the holes before it.
TEST(Sender, TailLossProbeResendsTheLastPacketOnceItIsOld) {
  Sender tx(SenderConfig{.destinations = 1, .payload_per_packet = 100, .window = 2, .rto = 10_ms, .tail_age = 300_us});
  const uint64_t id = tx.submit(0, 10 * 100);
  TxPacket p;
  for (uint32_t i = 0; i < 10; ++i) ASSERT_TRUE(tx.next(Time::from_us(i), p));  // seq i sent at i us
  EXPECT_FALSE(tx.next(Time::from_us(10), p));
  // The receiver has 0..5 (seq 6.. lost): covered 6, nothing listed. Seq 9 left at 9 us.
  EXPECT_FALSE(tx.on_nack(0, id, 6, 6, {}, Time::from_us(308)));  // 299 us old: too young
  EXPECT_FALSE(tx.next(Time::from_us(308), p));
  EXPECT_FALSE(tx.on_nack(0, id, 6, 6, {}));  // no `now`: no probe
  EXPECT_FALSE(tx.next(Time::from_us(400), p));
  EXPECT_FALSE(tx.on_nack(0, id, 6, 6, {}, Time::from_us(309)));  // 300 us old: the probe
  ASSERT_TRUE(tx.next(Time::from_us(309), p));
  EXPECT_EQ(p.seq, 9u);
  EXPECT_TRUE(p.retransmit);
  EXPECT_FALSE(tx.next(Time::from_us(309), p));  // 6..8 wait for a NACK that lists them
  EXPECT_EQ(tx.stats().tail_retransmissions, 1u);
  EXPECT_EQ(tx.stats().nack_retransmissions, 1u);
  // next(at) gives exactly `want`, resent, then nothing.
  const auto expect_resent = [&tx, &p](Time at, std::span<const uint32_t> want) {
    for (const uint32_t seq : want) {
      ASSERT_TRUE(tx.next(at, p)) << seq;
      EXPECT_EQ(p.seq, seq);
      EXPECT_TRUE(p.retransmit);
    }
    EXPECT_FALSE(tx.next(at, p));
  };
  // The probe arrived: the next NACK covers up to it and lists 6..8.
  const uint32_t holes[] = {6, 7, 8};
  EXPECT_FALSE(tx.on_nack(0, id, 6, 10, holes, Time::from_us(700)));
  expect_resent(Time::from_us(700), holes);
  EXPECT_EQ(tx.stats().tail_retransmissions, 1u);
  EXPECT_TRUE(tx.on_ack(0, id, 10));

  // A list cut short (its last entry covered - 1) says nothing of what lies beyond: no probe. Nor when the
  // last packet is acknowledged already: the probe is the last one that is not, and only if it is old.
  const uint64_t id2 = tx.submit(0, 10 * 100);
  for (uint32_t i = 0; i < 10; ++i) ASSERT_TRUE(tx.next(Time::from_ms(1), p));
  const uint32_t cut[] = {3, 4};
  EXPECT_FALSE(tx.on_nack(0, id2, 3, 5, cut, Time::from_ms(2)));
  expect_resent(Time::from_ms(2), cut);
  EXPECT_EQ(tx.stats().tail_retransmissions, 1u);
  tx.set_tail_age(Duration::max());
  EXPECT_FALSE(tx.on_nack(0, id2, 5, 5, {}, Time::from_ms(3)));
  EXPECT_FALSE(tx.next(Time::from_ms(3), p));
  tx.set_tail_age(300_us);
  EXPECT_FALSE(tx.on_nack(0, id2, 5, 5, {}, Time::from_ms(3)));
  ASSERT_TRUE(tx.next(Time::from_ms(3), p));
  EXPECT_EQ(p.seq, 9u);
  EXPECT_EQ(tx.stats().tail_retransmissions, 2u);
  // Seq 9 queued already and then sent at 3 ms: a NACK at 3.2 ms finds it too young, and 8 is not the last.
  EXPECT_FALSE(tx.on_nack(0, id2, 5, 5, {}, Time::from_us(3200)));
  EXPECT_FALSE(tx.next(Time::from_us(3200), p));
  EXPECT_EQ(tx.stats().tail_retransmissions, 2u);
}

// A NACK with `now` does not resend a listed packet last sent after the highest packet the NACK says
// arrived while it is younger than the tail age (it is still on its way: a retransmission NACKed again as
// a long message streams); once older, or once a packet sent after it has arrived, it goes again.
TEST(Sender, NackedRetransmissionStillOnItsWayIsNotSentAgain) {
  Sender tx(SenderConfig{.destinations = 1, .payload_per_packet = 100, .window = 2, .rto = 10_ms, .tail_age = 300_us});
  const uint64_t id = tx.submit(0, 12 * 100);
  TxPacket p;
  for (uint32_t i = 0; i < 8; ++i) ASSERT_TRUE(tx.next(Time::from_us(i), p));  // seq i at i us
  const uint32_t two[] = {2};
  EXPECT_FALSE(tx.on_nack(0, id, 2, 8, two, Time::from_us(500)));  // 0..7 but 2 arrived
  ASSERT_TRUE(tx.next(Time::from_us(500), p));
  EXPECT_EQ(p.seq, 2u);  // first sent at 2 us, before seq 7 (7 us): lost
  EXPECT_TRUE(p.retransmit);
  for (uint32_t i = 8; i < 10; ++i) ASSERT_TRUE(tx.next(Time::from_us(510), p));
  // Seq 2 listed again at 600 us; the highest arrived (7) left at 7 us, before the copy of 500 us: the
  // next packet is a new one (10), not 2 (nor a probe of 9, 90 us old).
  EXPECT_FALSE(tx.on_nack(0, id, 2, 8, two, Time::from_us(600)));
  ASSERT_TRUE(tx.next(Time::from_us(600), p));
  EXPECT_EQ(p.seq, 10u);
  EXPECT_FALSE(p.retransmit);
  EXPECT_EQ(tx.stats().nacks_in_flight, 1u);
  // At 800 us the copy is 300 us old: lost as well, sent again (10 is 200 us old: no probe).
  EXPECT_FALSE(tx.on_nack(0, id, 2, 8, two, Time::from_us(800)));
  ASSERT_TRUE(tx.next(Time::from_us(800), p));
  EXPECT_EQ(p.seq, 2u);
  EXPECT_TRUE(p.retransmit);
  // A packet sent after that copy (11 at 810 us) arrived while 2 is still missing: the copy was lost.
  ASSERT_TRUE(tx.next(Time::from_us(810), p));
  EXPECT_EQ(p.seq, 11u);
  EXPECT_FALSE(tx.on_nack(0, id, 2, 12, two, Time::from_us(850)));
  ASSERT_TRUE(tx.next(Time::from_us(850), p));
  EXPECT_EQ(p.seq, 2u);
  EXPECT_FALSE(tx.next(Time::from_us(850), p));
  EXPECT_EQ(tx.stats().nacks_in_flight, 1u);
  EXPECT_EQ(tx.stats().nack_retransmissions, 3u);
  EXPECT_EQ(tx.stats().tail_retransmissions, 0u);
  // Without `now` every listed packet goes (the protocol before the guard).
  EXPECT_FALSE(tx.on_nack(0, id, 2, 12, two));
  ASSERT_TRUE(tx.next(Time::from_us(851), p));
  EXPECT_EQ(p.seq, 2u);
}

// Partial ACKs (a receiver's every kAckEvery packets) pass over the words already all acknowledged
// (low_word): each packet still counts once, repeated and older ACKs change nothing, and only packets sent
// are acknowledged.
TEST(Sender, PartialAcksCountEachPacketOnce) {
  Sender tx(SenderConfig{.destinations = 1, .payload_per_packet = 100, .window = 2, .rto = 100_us});
  const uint64_t id = tx.submit(0, 300 * 100);
  TxPacket p;
  for (uint32_t i = 0; i < 150; ++i) ASSERT_TRUE(tx.next(Time::from_us(1), p));
  for (uint32_t c = 32; c <= 160; c += 32) EXPECT_FALSE(tx.on_ack(0, id, c));  // 160: only 150 were sent
  EXPECT_FALSE(tx.on_ack(0, id, 150));  // repeated
  EXPECT_FALSE(tx.on_ack(0, id, 40));   // older
  EXPECT_FALSE(tx.on_ack(0, id, 300));  // beyond what was sent
  // Nothing of 0..149 is resent after the RTO: the rest goes out, new.
  uint32_t next_seq = 150;
  while (tx.next(Time::from_us(500), p)) {
    EXPECT_FALSE(p.retransmit) << "seq " << p.seq;
    EXPECT_EQ(p.seq, next_seq++);
  }
  EXPECT_EQ(next_seq, 300u);
  EXPECT_FALSE(tx.on_ack(0, id, 192));
  EXPECT_FALSE(tx.on_ack(0, id, 299));  // seq 299 still open
  EXPECT_EQ(tx.unacked_messages(), 1u);
  EXPECT_TRUE(tx.on_ack(0, id, 300));
  EXPECT_EQ(tx.unacked_messages(), 0u);
  EXPECT_EQ(tx.stats().retransmissions, 0u);
}

// next_work: `now` while something is queued, else the first timer's expiry; never later than a packet
// next() would give. A seeded walk of submits, sends, ACKs, NACKs and RTO changes: at every step a copy of
// the sender asked 1 ps before next_work gives nothing.
TEST(Sender, NextWorkIsNeverLaterThanAPacket) {
  Sender tx(SenderConfig{.destinations = 3, .payload_per_packet = 100, .window = 8, .rto = 50_us});
  EXPECT_EQ(tx.next_work(Time::from_us(1)), Time::max());  // nothing submitted, no timer
  const uint64_t id = tx.submit(0, 300);
  EXPECT_EQ(tx.next_work(Time::from_us(1)), Time::from_us(1));  // new packets
  TxPacket p;
  while (tx.next(Time::from_us(1), p)) {
  }
  EXPECT_EQ(tx.next_work(Time::from_us(2)), Time::from_us(51));  // the message's timer
  EXPECT_EQ(tx.next_work(Time::from_us(60)), Time::from_us(60));  // expired: due now
  const uint32_t missing[] = {1};
  EXPECT_FALSE(tx.on_nack(0, id, 1, 3, missing));
  EXPECT_EQ(tx.next_work(Time::from_us(3)), Time::from_us(3));  // a NACKed packet queued
  tx.set_rto(10_us);
  ASSERT_TRUE(tx.next(Time::from_us(3), p));
  EXPECT_TRUE(p.retransmit);
  EXPECT_LE(tx.next_work(Time::from_us(4)), Time::from_us(13));  // the shorter RTO brings the timer forward
  {
    // A timer re-armed after a check (timeouts resent): the only one left.
    Sender one(SenderConfig{.destinations = 1, .payload_per_packet = 100, .window = 2, .rto = 50_us});
    one.submit(0, 300);
    while (one.next(Time::from_us(1), p)) {
    }
    int resent = 0;
    while (one.next(Time::from_us(60), p)) resent += p.retransmit ? 1 : 0;
    EXPECT_EQ(resent, 3);
    EXPECT_EQ(one.next_work(Time::from_us(61)), Time::from_us(110));
  }

  std::mt19937_64 rng(7);
  std::vector<std::pair<uint32_t, uint64_t>> live;  // (dst, id) submitted and not yet fully ACKed
  Time now = Time::from_us(10);
  for (int step = 0; step < 4000; ++step) {
    switch (rng() % 6) {
      case 0:
      case 1: {
        const auto dst = static_cast<uint32_t>(rng() % 3);
        if (tx.can_submit(dst)) live.emplace_back(dst, tx.submit(dst, rng() % 2000));
        break;
      }
      case 2:
        for (int k = static_cast<int>(rng() % 8); k > 0 && tx.next(now, p); --k) {
        }
        break;
      case 3:
        if (!live.empty()) {
          const size_t i = rng() % live.size();
          if (tx.on_ack(live[i].first, live[i].second, static_cast<uint32_t>(rng() % 25))) {
            live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
          }
        }
        break;
      case 4:
        if (!live.empty()) {
          const size_t i = rng() % live.size();
          const uint32_t miss[] = {static_cast<uint32_t>(rng() % 20)};
          if (tx.on_nack(live[i].first, live[i].second, 0, 20, miss)) {
            live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
          }
        }
        break;
      default:
        now = now + Duration::from_ps(rng() % 30'000'000);  // up to 30 us
        if (rng() % 50 == 0) tx.set_rto(Duration::from_ps((5 + rng() % 60) * 1'000'000));
        break;
    }
    const Time w = tx.next_work(now);
    ASSERT_GE(w, now) << "step " << step;
    if (w > now && w != Time::max()) {
      Sender copy = tx;
      ASSERT_FALSE(copy.next(w - 1_ps, p)) << "step " << step << ": next_work " << w.ps() << " ps, but seq "
                                           << p.seq << " of message " << p.message_id << " was due earlier";
    }
    if (w == Time::max()) {
      Sender copy = tx;
      ASSERT_FALSE(copy.next(now + Duration::from_ps(uint64_t{1} << 50), p)) << "step " << step;
    }
  }
  EXPECT_GT(tx.stats().timeout_retransmissions, 0u);
  EXPECT_GT(tx.stats().nack_retransmissions, 0u);
}

TEST(Sender, CookieOnEveryPacketOfItsMessage) {
  Sender tx(SenderConfig{.destinations = 2, .payload_per_packet = 100, .window = 4, .rto = 100_us});
  EXPECT_EQ(tx.submit(0, 250, 0xC0FFEE), 0u);  // 3 packets
  EXPECT_EQ(tx.submit(1, 100, 77), 0u);        // 1 packet
  EXPECT_EQ(tx.submit(0, 0), 1u);              // default cookie 0
  TxPacket p;
  std::vector<TxPacket> sent;
  while (tx.next(Time::from_us(1), p)) sent.push_back(p);
  ASSERT_EQ(sent.size(), 5u);
  for (const TxPacket& q : sent) {
    const uint64_t want = q.dst == 1 ? 77 : q.message_id == 0 ? 0xC0FFEE : 0;
    EXPECT_EQ(q.cookie, want) << "dst " << q.dst << " message " << q.message_id << " seq " << q.seq;
  }
  // Retransmissions carry it too: on NACK and on timeout.
  const uint32_t missing[] = {1};
  EXPECT_FALSE(tx.on_nack(0, 0, 1, 3, missing));
  ASSERT_TRUE(tx.next(Time::from_us(2), p));
  EXPECT_TRUE(p.retransmit);
  EXPECT_EQ(p.seq, 1u);
  EXPECT_EQ(p.cookie, 0xC0FFEEu);
  EXPECT_TRUE(tx.on_ack(0, 1, 1));
  ASSERT_TRUE(tx.next(Time::from_us(101), p));  // message 1 of dst 1 timed out
  EXPECT_TRUE(p.retransmit);
  EXPECT_EQ(p.dst, 1u);
  EXPECT_EQ(p.cookie, 77u);
  // A slot reused by a later message takes that message's cookie.
  EXPECT_TRUE(tx.on_ack(1, 0, 1));
  EXPECT_EQ(tx.submit(1, 1, 5), 1u);
  ASSERT_TRUE(tx.next(Time::from_us(101), p));  // before seq 1's second timeout (at 102)
  EXPECT_EQ(p.dst, 1u);
  EXPECT_EQ(p.message_id, 1u);
  EXPECT_FALSE(p.retransmit);
  EXPECT_EQ(p.cookie, 5u);
}

// A sender that learns its destinations as it goes (the DPDK fabric's, one per first link): an added
// destination has its own ids and window from 0, and the others keep theirs.
TEST(Sender, AddedDestinationsHaveTheirOwnIdsAndWindows) {
  Sender tx(SenderConfig{.destinations = 1, .payload_per_packet = 100, .window = 2, .rto = 100_us});
  EXPECT_EQ(tx.destinations(), 1u);
  EXPECT_EQ(tx.submit(0, 100), 0u);
  EXPECT_EQ(tx.submit(0, 100), 1u);
  EXPECT_FALSE(tx.can_submit(0));  // window 2 full
  EXPECT_FALSE(tx.can_submit(1));  // not yet a destination
  EXPECT_THROW(tx.submit(1, 100), std::out_of_range);
  EXPECT_EQ(tx.add_destination(), 1u);
  EXPECT_EQ(tx.destinations(), 2u);
  EXPECT_TRUE(tx.can_submit(1));
  EXPECT_EQ(tx.submit(1, 250), 0u);  // 3 packets, ids from 0
  EXPECT_FALSE(tx.can_submit(0));
  TxPacket p;
  std::vector<TxPacket> sent;
  while (tx.next(Time::from_us(1), p)) sent.push_back(p);
  ASSERT_EQ(sent.size(), 5u);
  EXPECT_EQ(sent[2].dst, 1u);
  EXPECT_EQ(sent[2].message_id, 0u);
  EXPECT_EQ(sent[4].seq, 2u);
  EXPECT_TRUE(tx.on_ack(1, 0, 3));
  EXPECT_FALSE(tx.on_ack(1, 0, 3));  // repeated
  EXPECT_EQ(tx.unacked_messages(), 2u);
  EXPECT_TRUE(tx.on_ack(0, 0, 1));
  EXPECT_TRUE(tx.can_submit(0));
  EXPECT_EQ(tx.add_destination(), 2u);
  EXPECT_EQ(tx.submit(2, 0), 0u);
}

// The fabrics' senders per first link: one per link, a pair keeps the sender of its first message's
// link, destinations numbered in order of arrival, the same with a map of pairs (beyond 256 ranks), and
// an RTO change reaches the senders made later too.
TEST(LinkSenders, OnePerFirstLinkAndPairsStay) {
  for (const uint32_t npus : {8u, 300u}) {
    SCOPED_TRACE(testing::Message() << npus << " ranks");
    LinkSenders ls(npus, 10, SenderConfig{.destinations = 99, .payload_per_packet = 100, .window = 4, .rto = 100_us});
    EXPECT_EQ(ls.size(), 0u);
    EXPECT_EQ(ls.find(0, 1).sender, ~0u);
    const LinkSenders::Pair a = ls.of(0, 1, 3);  // rank 0's link 3
    const LinkSenders::Pair b = ls.of(0, 2, 3);  // the same link: the same sender, its destination 1
    const LinkSenders::Pair c = ls.of(0, 5, 4);  // another link of rank 0: another sender
    const LinkSenders::Pair d = ls.of(0, 1, 4);  // the pair keeps its sender, whatever this message's link
    EXPECT_EQ(a.sender, 0u);
    EXPECT_EQ(a.dst, 0u);
    EXPECT_EQ(b.sender, 0u);
    EXPECT_EQ(b.dst, 1u);
    EXPECT_EQ(c.sender, 1u);
    EXPECT_EQ(c.dst, 0u);
    EXPECT_EQ(d.sender, a.sender);
    EXPECT_EQ(d.dst, a.dst);
    ASSERT_EQ(ls.size(), 2u);
    EXPECT_EQ(ls.src(0), 0u);
    EXPECT_EQ(ls.dst(0, 1), 2u);
    EXPECT_EQ(ls.dst(1, 0), 5u);
    EXPECT_EQ(ls[0].destinations(), 2u);
    EXPECT_EQ(ls[1].destinations(), 1u);
    EXPECT_EQ(ls.find(0, 2).dst, 1u);
    EXPECT_EQ(ls.find(2, 0).sender, ~0u);
    ls.set_rto(250_us);
    EXPECT_EQ(ls[0].rto(), 250_us);
    const LinkSenders::Pair e = ls.of(7, 0, 9);
    EXPECT_EQ(ls[e.sender].rto(), 250_us);
    EXPECT_EQ(ls.src(e.sender), 7u);
    EXPECT_THROW(ls.of(1, 0, 10), std::out_of_range);  // not a link
    // The senders work with their own destination numbers.
    EXPECT_EQ(ls[0].submit(b.dst, 150), 0u);
    TxPacket p;
    ASSERT_TRUE(ls[0].next(Time::from_us(1), p));
    EXPECT_EQ(ls.dst(0, p.dst), 2u);
  }
}

// Cumulative ACKs across bitmap words never acknowledge packets not yet sent.
TEST(Sender, CumulativeAckCoversOnlySentPackets) {
  Sender tx(SenderConfig{.destinations = 1, .payload_per_packet = 10, .window = 2, .rto = 100_us});
  EXPECT_EQ(tx.submit(0, 1300), 0u);  // 130 packets: three bitmap words
  TxPacket p;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(tx.next(Time::from_us(1), p));
  EXPECT_FALSE(tx.on_ack(0, 0, 70));
  EXPECT_FALSE(tx.on_ack(0, 0, 120));  // 100..119 were never sent: not acknowledged
  EXPECT_FALSE(tx.on_ack(0, 0, 130));
  std::vector<uint32_t> rest;
  while (tx.next(Time::from_us(2), p)) rest.push_back(p.seq);
  ASSERT_EQ(rest.size(), 30u);
  EXPECT_EQ(rest.front(), 100u);
  EXPECT_EQ(rest.back(), 129u);
  EXPECT_FALSE(tx.next(Time::from_us(101), p));  // 0..99 acknowledged: no timeout
  EXPECT_TRUE(tx.on_ack(0, 0, 130));
  EXPECT_EQ(tx.stats().retransmissions, 0u);
  EXPECT_EQ(tx.unacked_messages(), 0u);
}

// One timer per message, yet per-packet timeouts: 100 packets sent one per microsecond, never
// acknowledged, are each resent exactly at their own send time + RTO, once per RTO, in order.
TEST(Sender, PerMessageTimerResendsEachPacketAtItsOwnTimeout) {
  Sender tx(SenderConfig{.destinations = 2, .payload_per_packet = 10, .window = 4, .rto = 100_us});
  EXPECT_EQ(tx.submit(1, 1000), 0u);  // 100 packets
  TxPacket p;
  std::vector<Time> first(100), second(100);
  std::vector<int> resent(100, 0);
  for (uint64_t us = 1; us <= 260; ++us) {
    const Time now = Time::from_us(us);
    // At most one new packet per microsecond; retransmissions come first and are all taken.
    int fresh = 0;
    while (fresh == 0 && tx.next(now, p)) {
      if (!p.retransmit) {
        first[p.seq] = now;
        ++fresh;
        continue;
      }
      ASSERT_LT(p.seq, 100u);
      ++resent[p.seq];
      if (resent[p.seq] == 1) second[p.seq] = now;
    }
  }
  for (uint32_t seq = 0; seq < 100; ++seq) {
    EXPECT_EQ(first[seq], Time::from_us(1 + seq)) << seq;
    EXPECT_EQ(second[seq], Time::from_us(101 + seq)) << seq;  // exactly its own RTO
    EXPECT_EQ(resent[seq], seq + 201 <= 260 ? 2 : 1) << seq;  // and again one RTO later
  }
  EXPECT_EQ(tx.stats().timeout_retransmissions, 100u + 60u);
  EXPECT_TRUE(tx.on_ack(1, 0, 100));
  EXPECT_EQ(tx.next_timeout(), Time::max());
}

// A lost middle packet of a 100-packet message: the NACK acknowledges the others and resends it; when
// that copy is lost too, it is resent exactly once per RTO after it, and nothing else is ever resent.
TEST(Sender, LostMiddlePacketResentOnceAfterTheRto) {
  Sender tx(SenderConfig{.destinations = 1, .payload_per_packet = 10, .window = 2, .rto = 100_us});
  EXPECT_EQ(tx.submit(0, 1000), 0u);
  TxPacket p;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(tx.next(Time::from_us(1), p));
  EXPECT_FALSE(tx.next(Time::from_us(1), p));
  EXPECT_FALSE(tx.on_ack(0, 0, 50));  // partial ACK: 0..49
  const uint32_t missing[] = {50};
  EXPECT_FALSE(tx.on_nack(0, 0, 50, 100, missing));  // 51..99 arrived, 50 is missing
  std::vector<std::pair<uint64_t, TxPacket>> resent;
  for (uint64_t us = 20; us <= 300; ++us) {
    while (tx.next(Time::from_us(us), p)) resent.emplace_back(us, p);
  }
  ASSERT_EQ(resent.size(), 3u);
  EXPECT_EQ(resent[0].first, 20u);  // the NACK's retransmission, at the first chance
  EXPECT_EQ(resent[1].first, 120u);  // that copy's RTO
  EXPECT_EQ(resent[2].first, 220u);
  for (const auto& [us, q] : resent) {
    EXPECT_EQ(q.seq, 50u) << us;
    EXPECT_TRUE(q.retransmit);
    EXPECT_EQ(q.offset, 500u);
  }
  EXPECT_EQ(tx.stats().nack_retransmissions, 1u);
  EXPECT_EQ(tx.stats().timeout_retransmissions, 2u);
  EXPECT_TRUE(tx.on_ack(0, 0, 100));
  EXPECT_EQ(tx.unacked_messages(), 0u);
  EXPECT_EQ(tx.next_timeout(), Time::max());
  EXPECT_FALSE(tx.next(Time::from_us(1000), p));
}

// ACKs release messages: an acknowledged message is never resent, and a later message in its slot
// does not inherit its timer (it times out one RTO after its own transmission).
TEST(Sender, AckReleasesAndSlotReuseStartsAFreshTimer) {
  Sender tx(SenderConfig{.destinations = 3, .payload_per_packet = 100, .window = 2, .rto = 100_us});
  EXPECT_EQ(tx.submit(1, 250), 0u);  // 3 packets
  EXPECT_EQ(tx.submit(2, 0), 0u);    // 1 packet
  TxPacket p;
  while (tx.next(Time::from_us(1), p)) {
  }
  EXPECT_EQ(tx.next_timeout(), Time::from_us(101));
  EXPECT_TRUE(tx.on_ack(2, 0, 1));
  EXPECT_FALSE(tx.on_ack(1, 0, 2));  // partial: 0 and 1
  EXPECT_EQ(tx.unacked_messages(), 1u);
  EXPECT_EQ(tx.submit(2, 50), 1u);  // reuses the released slot
  ASSERT_TRUE(tx.next(Time::from_us(60), p));
  EXPECT_EQ(p.dst, 2u);
  EXPECT_FALSE(p.retransmit);
  // At 101: only seq 2 of dst 1's message (the ACK covered 0 and 1; dst 2's first message is gone).
  ASSERT_TRUE(tx.next(Time::from_us(101), p));
  EXPECT_EQ(p.dst, 1u);
  EXPECT_EQ(p.seq, 2u);
  EXPECT_TRUE(p.retransmit);
  EXPECT_FALSE(tx.next(Time::from_us(159), p));
  ASSERT_TRUE(tx.next(Time::from_us(160), p));  // dst 2's second message: its own RTO
  EXPECT_EQ(p.dst, 2u);
  EXPECT_EQ(p.message_id, 1u);
  EXPECT_TRUE(p.retransmit);
  EXPECT_TRUE(tx.on_ack(1, 0, 3));
  EXPECT_TRUE(tx.on_ack(2, 1, 1));
  EXPECT_FALSE(tx.next(Time::from_us(1000), p));
  EXPECT_EQ(tx.stats().timeout_retransmissions, 2u);
  EXPECT_EQ(tx.stats().messages_acked, 3u);
  EXPECT_EQ(tx.next_timeout(), Time::max());
}

// Per message in flight (destination, id): which of its packets the receiver holds.
using Held = std::map<std::pair<uint32_t, uint64_t>, std::vector<bool>>;

// Feedback for about one message in three of `held`: the ACK of a complete one, else (at random) a partial
// ACK or a NACK listing the missing packets below the highest held. `ack(dst, id, cumulative)` and
// `nack(dst, id, cumulative, covered, missing)` return whether that completed the message (then erased).
template <class Ack, class Nack>
void random_feedback(Held& held, std::mt19937_64& rng, Ack ack, Nack nack) {
  for (auto it = held.begin(); it != held.end();) {
    if (rng() % 3 != 0) {
      ++it;
      continue;
    }
    const auto [dst, id] = it->first;
    const std::vector<bool>& got = it->second;
    const auto count = static_cast<uint32_t>(got.size());
    uint32_t cumulative = 0;
    while (cumulative < count && got[cumulative]) ++cumulative;
    bool done;
    if (cumulative == count || rng() % 2 == 0) {
      done = ack(dst, id, cumulative);
    } else {
      uint32_t covered = count;
      while (covered > cumulative && !got[covered - 1]) --covered;
      std::vector<uint32_t> missing;
      for (uint32_t q = cumulative; q < covered; ++q) {
        if (!got[q]) missing.push_back(q);
      }
      done = nack(dst, id, cumulative, covered, missing);
    }
    it = done ? held.erase(it) : std::next(it);
  }
}

// next_burst(now, k packets) against k calls of next(now) on a twin sender fed the same calls: random
// submissions, losses (timeouts), partial ACKs, NACKs with lists, time steps below and above the RTO,
// bursts of 1 to 64, and a stretch with an RTO of 0 (a packet is due again as soon as it is sent). The
// packets, their order, the counters and the timers must be the same call for call.
TEST(Sender, NextBurstGivesTheSequenceOfRepeatedNext) {
  const SenderConfig cfg{.destinations = 4, .payload_per_packet = 100, .window = 8, .rto = 100_us};
  Sender one(cfg), burst(cfg), runs(cfg);  // runs: next_runs, the runs expanded packet by packet
  std::mt19937_64 rng(99);
  std::vector<TxRun> rb(64);
  Held held;
  std::vector<TxPacket> a, b(64);
  uint64_t now_ps = Time::from_us(1).ps(), packets = 0, retransmissions = 0;
  for (int step = 0; step < 4000; ++step) {
    SCOPED_TRACE(testing::Message() << "step " << step);
    if (step == 2500) {  // an RTO of 0 for a while, then back
      one.set_rto(Duration::zero());
      burst.set_rto(Duration::zero());
      runs.set_rto(Duration::zero());
    } else if (step == 2600) {
      one.set_rto(100_us);
      burst.set_rto(100_us);
      runs.set_rto(100_us);
    }
    for (int k = static_cast<int>(rng() % 3); k > 0; --k) {
      const auto dst = static_cast<uint32_t>(rng() % cfg.destinations);
      if (!one.can_submit(dst)) continue;
      const uint64_t bytes = rng() % 1001;
      const uint64_t cookie = rng();
      const uint64_t id = one.submit(dst, bytes, cookie);
      ASSERT_EQ(burst.submit(dst, bytes, cookie), id);
      ASSERT_EQ(runs.submit(dst, bytes, cookie), id);
      held[{dst, id}].assign(std::max<uint64_t>(1, (bytes + 99) / 100), false);
    }
    const Time now = Time::from_ps(now_ps);
    const size_t want = std::array<size_t, 6>{1, 2, 3, 7, 32, 64}[rng() % 6];
    a.clear();
    for (TxPacket p; a.size() < want && one.next(now, p);) a.push_back(p);
    ASSERT_EQ(burst.next_burst(now, std::span<TxPacket>(b.data(), want)), a.size());
    const Sender::Runs taken = runs.next_runs(now, rb, want);
    ASSERT_EQ(taken.packets, a.size());
    std::vector<TxPacket> c;
    for (size_t r = 0; r < taken.runs; ++r) {
      const TxRun& run = rb[r];
      ASSERT_GE(run.n, 1u);
      ASSERT_TRUE(!run.retransmit || run.n == 1);
      if (r > 0 && !run.retransmit && !rb[r - 1].retransmit) {  // adjacent fresh runs are of other messages
        ASSERT_FALSE(run.dst == rb[r - 1].dst && run.message_id == rb[r - 1].message_id);
      }
      for (uint32_t i = 0; i < run.n; ++i) c.push_back(run.packet(i));
    }
    ASSERT_EQ(c.size(), a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE(testing::Message() << "packet " << i);
      const TxPacket& x = a[i];
      const TxPacket& y = b[i];
      const TxPacket& z = c[i];
      ASSERT_EQ(std::tie(x.dst, x.message_id, x.seq, x.count, x.message_length, x.offset, x.bytes, x.retransmit,
                         x.cookie),
                std::tie(y.dst, y.message_id, y.seq, y.count, y.message_length, y.offset, y.bytes, y.retransmit,
                         y.cookie));
      ASSERT_EQ(std::tie(x.dst, x.message_id, x.seq, x.count, x.message_length, x.offset, x.bytes, x.retransmit,
                         x.cookie),
                std::tie(z.dst, z.message_id, z.seq, z.count, z.message_length, z.offset, z.bytes, z.retransmit,
                         z.cookie));
      (x.retransmit ? retransmissions : packets)++;
      const auto it = held.find({x.dst, x.message_id});
      if (it != held.end() && rng() % 5 != 0) it->second[x.seq] = true;  // 1 in 5 lost
    }
    // Feedback for some messages: the ACK of a complete one, else a partial ACK or a NACK.
    random_feedback(
        held, rng,
        [&](uint32_t dst, uint64_t id, uint32_t cumulative) {
          const bool done = one.on_ack(dst, id, cumulative);
          EXPECT_EQ(burst.on_ack(dst, id, cumulative), done);
          EXPECT_EQ(runs.on_ack(dst, id, cumulative), done);
          return done;
        },
        [&](uint32_t dst, uint64_t id, uint32_t cumulative, uint32_t covered, const std::vector<uint32_t>& missing) {
          const bool done = one.on_nack(dst, id, cumulative, covered, missing);
          EXPECT_EQ(burst.on_nack(dst, id, cumulative, covered, missing), done);
          EXPECT_EQ(runs.on_nack(dst, id, cumulative, covered, missing), done);
          return done;
        });
    if (HasFailure()) return;
    for (Sender* twin : {&burst, &runs}) {
      ASSERT_EQ(one.next_timeout(), twin->next_timeout());
      ASSERT_EQ(one.unacked_messages(), twin->unacked_messages());
      const SenderStats& x = one.stats();
      const SenderStats& y = twin->stats();
      ASSERT_EQ(std::tie(x.messages, x.messages_acked, x.packets, x.retransmissions, x.nack_retransmissions,
                         x.timeout_retransmissions, x.timer_checks),
                std::tie(y.messages, y.messages_acked, y.packets, y.retransmissions, y.nack_retransmissions,
                         y.timeout_retransmissions, y.timer_checks));
    }
    // Time: mostly below the RTO, sometimes past it, sometimes not at all.
    const uint64_t r = rng() % 8;
    now_ps += r == 0 ? 0 : r < 6 ? Time::from_us(rng() % 30).ps() : Time::from_us(100 + rng() % 100).ps();
  }
  // The scenario reached every path: bursts of new packets, NACK and timeout retransmissions, completions.
  EXPECT_GT(packets, 5000u);
  EXPECT_GT(one.stats().nack_retransmissions, 200u);
  EXPECT_GT(one.stats().timeout_retransmissions, 200u);
  EXPECT_GT(one.stats().messages_acked, 1000u);
  EXPECT_EQ(retransmissions, one.stats().retransmissions);
}

// next_runs' limits and fields, exactly: runs end where a message, the packet limit or the run buffer does.
TEST(Sender, RunsStopAtEitherLimit) {
  Sender s(SenderConfig{.destinations = 3, .payload_per_packet = 100, .window = 8, .rto = 100_us});
  for (uint32_t d = 0; d < 3; ++d) s.submit(d, 450, 10 + d);  // 5 packets each, the last of 50 bytes
  const Time now = Time::from_us(1);
  std::array<TxRun, 2> rb;
  Sender::Runs got = s.next_runs(now, rb, 3);  // the packet limit splits the first message
  ASSERT_EQ(got.runs, 1u);
  ASSERT_EQ(got.packets, 3u);
  EXPECT_EQ(std::tie(rb[0].dst, rb[0].message_id, rb[0].seq, rb[0].n, rb[0].count, rb[0].offset, rb[0].bytes,
                     rb[0].last_bytes, rb[0].cookie),
            std::make_tuple(0u, uint64_t{0}, 0u, 3u, 5u, uint64_t{0}, 100u, 100u, uint64_t{10}));
  got = s.next_runs(now, rb, 100);  // the buffer's two runs: the rest of message 0, all of message 1
  ASSERT_EQ(got.runs, 2u);
  ASSERT_EQ(got.packets, 7u);
  EXPECT_EQ(std::tie(rb[0].dst, rb[0].seq, rb[0].n, rb[0].offset, rb[0].bytes, rb[0].last_bytes),
            std::make_tuple(0u, 3u, 2u, uint64_t{300}, 100u, 50u));
  EXPECT_EQ(rb[0].packet(1).bytes, 50u);
  EXPECT_EQ(rb[0].packet(1).offset, 400u);
  EXPECT_EQ(rb[0].from(1).packet(0).seq, 4u);
  EXPECT_EQ(std::tie(rb[1].dst, rb[1].seq, rb[1].n, rb[1].last_bytes, rb[1].cookie),
            std::make_tuple(1u, 0u, 5u, 50u, uint64_t{11}));
  got = s.next_runs(now, rb, 100);
  ASSERT_EQ(got.runs, 1u);
  ASSERT_EQ(got.packets, 5u);
  EXPECT_EQ(s.next_runs(now, rb, 100).packets, 0u);  // nothing left to send now
  EXPECT_EQ(s.stats().packets, 15u);
  // One lost packet, NACKed: its retransmission is a run of one, flagged.
  s.on_nack(2, 0, 0, 5, std::vector<uint32_t>{4});
  got = s.next_runs(now, rb, 100);
  ASSERT_EQ(got.runs, 1u);
  EXPECT_EQ(std::tie(rb[0].dst, rb[0].seq, rb[0].n, rb[0].bytes, rb[0].last_bytes, rb[0].retransmit),
            std::make_tuple(2u, 4u, 1u, 50u, 50u, true));
}

// A gate (a pacer) cuts runs exactly: the packets it lets through are given and timed, the rest of the
// message and the messages behind it are not taken (no send time, no timer) and come later; a
// retransmission is never gated.
TEST(Sender, AGateCutsRunsAndHoldsBackTheRest) {
  Sender s(SenderConfig{.destinations = 2, .payload_per_packet = 100, .window = 8, .rto = 100_us});
  s.submit(0, 450, 7);  // 5 packets, the last of 50 bytes
  s.submit(1, 100, 8);  // 1 packet
  struct Gate {
    std::vector<uint32_t> allow;  // per call
    std::vector<TxRun> seen;
  } g;
  const RunGate gate{[](void* ctx, const TxRun& r) {
                       auto& self = *static_cast<Gate*>(ctx);
                       self.seen.push_back(r);
                       const uint32_t k = self.allow.front();
                       self.allow.erase(self.allow.begin());
                       return k;
                     },
                     &g};
  std::array<TxRun, 4> rb;
  g.allow = {0};
  Sender::Runs got = s.next_runs(Time::from_us(1), rb, 100, gate);  // nothing due: nothing taken
  EXPECT_EQ(got.runs, 0u);
  EXPECT_EQ(got.packets, 0u);
  ASSERT_EQ(g.seen.size(), 1u);  // offered once: the whole message
  EXPECT_EQ(std::tie(g.seen[0].dst, g.seen[0].seq, g.seen[0].n, g.seen[0].bytes, g.seen[0].last_bytes),
            std::make_tuple(0u, 0u, 5u, 100u, 50u));
  EXPECT_EQ(s.stats().packets, 0u);
  EXPECT_EQ(s.next_timeout(), Time::max());  // nothing sent, nothing timed
  g.allow = {2};
  got = s.next_runs(Time::from_us(10), rb, 100, gate);  // two due: a run of two, then the call ends
  ASSERT_EQ(got.runs, 1u);
  EXPECT_EQ(got.packets, 2u);
  EXPECT_EQ(std::tie(rb[0].dst, rb[0].seq, rb[0].n, rb[0].bytes, rb[0].last_bytes, rb[0].cookie),
            std::make_tuple(0u, 0u, 2u, 100u, 100u, uint64_t{7}));
  EXPECT_EQ(g.seen.size(), 2u);  // message 1, behind, was not offered
  EXPECT_EQ(s.stats().packets, 2u);
  EXPECT_EQ(s.next_timeout(), Time::from_us(110));
  g.allow = {3, 1};
  got = s.next_runs(Time::from_us(20), rb, 100, gate);  // the rest of message 0, then message 1
  ASSERT_EQ(got.runs, 2u);
  EXPECT_EQ(got.packets, 4u);
  EXPECT_EQ(std::tie(g.seen[2].seq, g.seen[2].n), std::make_tuple(2u, 3u));
  EXPECT_EQ(std::tie(rb[0].seq, rb[0].n, rb[0].offset, rb[0].bytes, rb[0].last_bytes),
            std::make_tuple(2u, 3u, uint64_t{200}, 100u, 50u));
  EXPECT_EQ(std::tie(rb[1].dst, rb[1].seq, rb[1].n, rb[1].last_bytes), std::make_tuple(1u, 0u, 1u, 100u));
  EXPECT_EQ(s.stats().packets, 6u);
  // Packets 0-1 of message 0 sent at 10 us time out at 110 us; 2-4 (20 us) not yet: the retransmissions
  // go without the gate, which is not called (no new packet is waiting).
  ASSERT_TRUE(s.on_ack(1, 0, 1));
  const size_t offered = g.seen.size();
  got = s.next_runs(Time::from_us(110), rb, 100, gate);
  ASSERT_EQ(got.runs, 2u);
  EXPECT_EQ(std::tie(rb[0].seq, rb[0].n, rb[0].retransmit), std::make_tuple(0u, 1u, true));
  EXPECT_EQ(std::tie(rb[1].seq, rb[1].n, rb[1].retransmit), std::make_tuple(1u, 1u, true));
  EXPECT_EQ(g.seen.size(), offered);
  EXPECT_EQ(s.stats().timeout_retransmissions, 2u);
}

// A gated sender gives, call for call, the packets next_burst(now, as many as asked for) would give cut at
// the first new packet the gate holds back, with the effects of next_burst asked for just those (its twin,
// a copy taken before the call) but for timer checks: a random gate, losses, ACKs and NACKs.
TEST(Sender, GatedRunsAreNextBurstCutShort) {
  const SenderConfig cfg{.destinations = 3, .payload_per_packet = 100, .window = 8, .rto = 100_us};
  Sender gated(cfg);
  std::mt19937_64 rng(7);
  const RunGate gate{[](void* ctx, const TxRun& r) {
                       auto& g = *static_cast<std::mt19937_64*>(ctx);
                       return g() % 3 == 0 ? 0u : static_cast<uint32_t>(1 + g() % r.n);
                     },
                     &rng};
  Held held;
  std::vector<TxRun> rb(16);
  std::vector<TxPacket> full(64), b(64);
  uint64_t now_ps = Time::from_us(1).ps(), cut = 0, nothing = 0;
  for (int step = 0; step < 3000; ++step) {
    SCOPED_TRACE(testing::Message() << "step " << step);
    for (int k = static_cast<int>(rng() % 3); k > 0; --k) {
      const auto dst = static_cast<uint32_t>(rng() % cfg.destinations);
      if (!gated.can_submit(dst)) continue;
      const uint64_t bytes = rng() % 1001;
      const uint64_t id = gated.submit(dst, bytes, step);
      held[{dst, id}].assign(std::max<uint64_t>(1, (bytes + 99) / 100), false);
    }
    const Time now = Time::from_ps(now_ps);
    const size_t want = 1 + rng() % 40;
    const Sender before = gated;
    Sender probe = before;
    const size_t ungated = probe.next_burst(now, std::span<TxPacket>(full.data(), want));
    const Sender::Runs got = gated.next_runs(now, rb, want, gate);
    ASSERT_LE(got.packets, ungated);
    cut += got.packets < ungated && got.runs < rb.size();
    nothing += ungated > 0 && got.packets == 0;
    size_t i = 0;
    for (size_t r = 0; r < got.runs; ++r) {
      for (uint32_t j = 0; j < rb[r].n; ++j, ++i) {
        const TxPacket x = rb[r].packet(j);
        const TxPacket& y = full[i];
        ASSERT_EQ(std::tie(x.dst, x.message_id, x.seq, x.offset, x.bytes, x.retransmit, x.cookie),
                  std::tie(y.dst, y.message_id, y.seq, y.offset, y.bytes, y.retransmit, y.cookie));
        const auto it = held.find({x.dst, x.message_id});
        if (it != held.end() && rng() % 6 != 0) it->second[x.seq] = true;  // 1 in 6 lost
      }
    }
    ASSERT_EQ(i, got.packets);
    if (got.packets > 0) {  // the effects of next_burst asked for those packets
      Sender twin = before;
      ASSERT_EQ(twin.next_burst(now, std::span<TxPacket>(b.data(), got.packets)), got.packets);
      const SenderStats& x = gated.stats();
      const SenderStats& y = twin.stats();
      ASSERT_EQ(std::tie(x.packets, x.retransmissions, x.nack_retransmissions, x.timeout_retransmissions),
                std::tie(y.packets, y.retransmissions, y.nack_retransmissions, y.timeout_retransmissions));
      // Asked for more, the gated call may have checked timers once more (and found nothing due): a timer
      // restarted from its earliest unacknowledged packet, never earlier than the twin's.
      ASSERT_GE(x.timer_checks, y.timer_checks);
      ASSERT_GE(gated.next_timeout(), twin.next_timeout());
    } else {
      ASSERT_EQ(gated.stats().packets, before.stats().packets);  // nothing new was taken
    }
    random_feedback(
        held, rng, [&](uint32_t dst, uint64_t id, uint32_t cumulative) { return gated.on_ack(dst, id, cumulative); },
        [&](uint32_t dst, uint64_t id, uint32_t cumulative, uint32_t covered, const std::vector<uint32_t>& missing) {
          return gated.on_nack(dst, id, cumulative, covered, missing);
        });
    const uint64_t r = rng() % 8;
    now_ps += r == 0 ? 0 : r < 6 ? Time::from_us(rng() % 30).ps() : Time::from_us(100 + rng() % 100).ps();
  }
  // Every path was taken: cut runs, calls cut to nothing, completions, both kinds of retransmission.
  EXPECT_GT(cut, 500u);
  EXPECT_GT(nothing, 300u);
  EXPECT_GT(gated.stats().messages_acked, 1000u);
  EXPECT_GT(gated.stats().nack_retransmissions, 100u);
  EXPECT_GT(gated.stats().timeout_retransmissions, 100u);
}

// A stall's reason names the injected drops, for either fabric's unit.
TEST(FaultFilter, DescribeDropsForAStallsReason) {
  FaultConfig c;
  c.reorder_rate = 0.5;  // not drops: not named
  EXPECT_EQ(describe_drops(c, "frames"), "");
  c.drop_rate = 0.25;
  EXPECT_EQ(describe_drops(c, "datagrams"),
            " (--drop-rate 0.25: the fault injection drops that fraction of the data datagrams that arrive)");
  c.drop_rate = 1;
  EXPECT_EQ(describe_drops(c, "frames"),
            " (--drop-rate 1: the fault injection drops all of the data frames that arrive)");
}

TEST(FaultFilter, SeededAndCalibrated) {
  const FaultConfig cfg{.drop_rate = 0.01, .duplicate_rate = 0.01, .reorder_rate = 0.05, .seed = 42};
  FaultFilter a(cfg), b(cfg);
  for (int i = 0; i < 1'000'000; ++i) {
    const FaultDecision x = a.next(), y = b.next();
    ASSERT_EQ(std::tie(x.drop, x.duplicate, x.reorder), std::tie(y.drop, y.duplicate, y.reorder));
  }
  EXPECT_NEAR(static_cast<double>(a.dropped()), 10'000, 500);      // 5 sigma is ~500
  EXPECT_NEAR(static_cast<double>(a.duplicated()), 9'900, 500);
  EXPECT_NEAR(static_cast<double>(a.reordered()), 49'500, 1'100);
  EXPECT_THROW(FaultFilter(FaultConfig{.drop_rate = 1.5}), std::invalid_argument);
  EXPECT_THROW(FaultFilter(FaultConfig{.reorder_rate = -0.1}), std::invalid_argument);
  FaultFilter all(FaultConfig{.drop_rate = 1.0});
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(all.next().drop);
  // No rate: no fault and no draw (uniform() continues from the seed as on a fresh filter); a rate that
  // rounds to 0 (below 2^-33) is none.
  FaultFilter none(FaultConfig{.seed = 9}), fresh(FaultConfig{.seed = 9});
  FaultFilter tiny(FaultConfig{.drop_rate = 1e-11, .seed = 9});
  for (int i = 0; i < 1000; ++i) {
    const FaultDecision d = none.next(), t = tiny.next();
    ASSERT_FALSE(d.drop || d.duplicate || d.reorder || t.drop || t.duplicate || t.reorder);
  }
  EXPECT_EQ(none.seen(), 1000u);
  EXPECT_EQ(none.dropped() + none.duplicated() + none.reordered(), 0u);
  EXPECT_EQ(none.uniform(1'000'000), fresh.uniform(1'000'000));
  EXPECT_EQ(tiny.uniform(1'000'000), FaultFilter(FaultConfig{.seed = 9}).uniform(1'000'000));
  // One rate set: every packet draws (the drop decision at 0.5 differs from packet to packet).
  FaultFilter half(FaultConfig{.drop_rate = 0.5, .seed = 9});
  for (int i = 0; i < 1000; ++i) half.next();
  EXPECT_NEAR(static_cast<double>(half.dropped()), 500, 80);
}

// --- 10,000 messages over a faulty channel ---

struct Scenario {
  WireMode mode = WireMode::kFabemu;
  double feedback_drop = 0;
};

struct Outcome {
  uint64_t messages = 0, data_drops = 0, injected_dups = 0, injected_reorders = 0;
  uint64_t retransmissions = 0, receiver_dups = 0, receiver_stale = 0, receiver_reordered = 0;
  uint64_t transmissions = 0, arrivals = 0;
};

Outcome run_lossy(const Scenario& sc) {
  constexpr uint32_t kRanks = 4;
  constexpr uint64_t kMessages = 10'000;
  constexpr uint32_t kPayload = 1024;
  const Duration latency = 5_us;
  std::vector<Sender> tx;
  std::vector<Receiver> rx;
  for (uint32_t r = 0; r < kRanks; ++r) {
    tx.emplace_back(SenderConfig{.destinations = kRanks, .payload_per_packet = kPayload, .window = 1024, .rto = 400_us});
    rx.emplace_back(ReceiverConfig{.sources = kRanks, .window = 1024, .nack_delay = 50_us});
  }
  FaultFilter data_faults(FaultConfig{.drop_rate = 0.01, .duplicate_rate = 0.01, .reorder_rate = 0.05, .seed = 7});
  FaultFilter fb_faults(FaultConfig{.drop_rate = sc.feedback_drop, .seed = 8});

  // Every message submitted up front; expected completions keyed by (src, dst, id).
  std::mt19937_64 rng(99);
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, uint64_t> length_of;
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, int> completions;
  uint64_t bytes_submitted = 0;
  for (uint64_t m = 0; m < kMessages; ++m) {
    const auto src = static_cast<uint32_t>(m % kRanks);
    const auto dst = static_cast<uint32_t>((src + 1 + rng() % (kRanks - 1)) % kRanks);
    const uint64_t len = rng() % 3 == 0 ? rng() % 200 : rng() % 20'000;
    const uint64_t id = tx[src].submit(dst, len);
    length_of[{src, dst, id}] = len;
    bytes_submitted += len;
  }

  // The channel: arrivals ordered by (time, insertion).
  // The channel carries real frames (encode on send, decode on arrival), ordered by (time, insertion).
  const AddressPlan plan = AddressPlan::make_default(kRanks);
  const DecodeRules rules = plan.decode_rules(sc.mode);
  struct Arrival {
    Time at;
    uint64_t order;
    std::vector<uint8_t> frame;
    bool operator>(const Arrival& o) const { return std::tie(at, order) > std::tie(o.at, o.order); }
  };
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> wire;
  uint64_t order = 0;
  Outcome out;
  std::vector<uint8_t> buf(9000);
  const auto frame_of = [&](const FrameSpec& spec) {
    const size_t n = encode(spec, buf);
    EXPECT_GT(n, 0u);
    return std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n));
  };
  const auto spec_for = [&](uint32_t from, uint32_t to, const FabemuHeader& h) {
    FrameSpec spec;
    spec.mode = sc.mode;
    spec.src = plan.at(from);
    spec.dst = plan.at(to);
    spec.hdr = h;
    spec.bth.opcode = rc_send_opcode(h.seq, h.count);
    spec.bth.psn = h.seq & 0xFFFFFF;
    return spec;
  };
  const auto feedback = [&](Time now, uint32_t from, uint32_t to, uint64_t id, bool nack, uint32_t count,
                            uint32_t cum, uint32_t covered, std::span<const uint32_t> missing) {
    if (fb_faults.next().drop) return;
    FrameSpec spec = spec_for(from, to,
                              FabemuHeader{nack ? PacketKind::kNack : PacketKind::kAck, 0, from, to, id, cum, count, 0,
                                           covered, now.ps()});
    spec.bth.opcode = kRcSendOnly;
    spec.missing = missing;
    wire.push(Arrival{now + latency, order++, frame_of(spec)});
  };

  Time now = Time::zero();
  NackBatch batch;
  const uint64_t total_packets = [&] {
    uint64_t n = 0;
    for (const auto& [k, len] : length_of) n += len == 0 ? 1 : (len + kPayload - 1) / kPayload;
    return n;
  }();
  for (int step = 0; step < 200'000; ++step) {
    now = Time::from_us(static_cast<uint64_t>(step));
    // Each sender puts up to 4 packets per microsecond on the wire.
    for (uint32_t r = 0; r < kRanks; ++r) {
      TxPacket p;
      for (int k = 0; k < 4 && tx[r].next(now, p); ++k) {
        ++out.transmissions;
        const FaultDecision d = data_faults.next();
        if (d.drop) continue;
        FrameSpec spec = spec_for(r, p.dst,
                                  FabemuHeader{PacketKind::kData, p.retransmit ? kFlagRetransmit : uint16_t{0}, r,
                                               p.dst, p.message_id, p.seq, p.count, p.message_length, p.offset,
                                               now.ps()});
        spec.payload_bytes = p.bytes;
        const Duration extra = d.reorder ? Duration::from_ns(3'000 + data_faults.uniform(17'000)) : 0_ps;
        std::vector<uint8_t> f = frame_of(spec);
        if (d.duplicate) wire.push(Arrival{now + latency + extra + 1_us, order++, f});
        wire.push(Arrival{now + latency + extra, order++, std::move(f)});
      }
    }
    while (!wire.empty() && wire.top().at <= now) {
      const Arrival a = wire.top();
      wire.pop();
      DecodedFrame d;
      const Verdict v = decode(a.frame, rules, d);
      EXPECT_EQ(v, Verdict::kOurs) << to_string(v);
      if (v != Verdict::kOurs) continue;
      const FabemuHeader& h = d.hdr;
      EXPECT_EQ(plan.rank_of_ip(d.src.ip), h.src_rank);
      EXPECT_EQ(plan.rank_of_ip(d.dst.ip), h.dst_rank);
      if (h.kind == PacketKind::kData) {
        ++out.arrivals;
        const RxPacket rp{h.src_rank, h.message_id, h.seq, h.count, h.message_length, d.payload_bytes,
                          (h.flags & kFlagRetransmit) != 0};
        const RxEvent e = rx[h.dst_rank].on_packet(rp, now);
        if (e == RxEvent::kCompleted) ++completions[{h.src_rank, h.dst_rank, h.message_id}];
        if (e == RxEvent::kCompleted || e == RxEvent::kStale) {
          feedback(now, h.dst_rank, h.src_rank, h.message_id, false, h.count, h.count, h.count, {});
        }
      } else if (h.kind == PacketKind::kNack) {
        std::vector<uint32_t> missing(d.missing_count());
        for (size_t i = 0; i < missing.size(); ++i) missing[i] = d.missing(i);
        tx[h.dst_rank].on_nack(h.src_rank, h.message_id, h.seq, static_cast<uint32_t>(h.offset), missing);
      } else {
        tx[h.dst_rank].on_ack(h.src_rank, h.message_id, h.seq);
      }
    }
    for (uint32_t r = 0; r < kRanks; ++r) {
      batch.clear();
      rx[r].poll_nacks(now, batch);
      for (const Nack& n : batch.nacks) {
        feedback(now, r, n.src, n.message_id, true, n.count, n.cumulative, n.covered,
                 std::span<const uint32_t>(batch.seqs).subspan(n.first, n.missing));
      }
    }
    bool idle = wire.empty();
    for (uint32_t r = 0; r < kRanks && idle; ++r) idle = tx[r].unacked_messages() == 0;
    if (idle) break;
  }

  // Every message completed exactly once, every byte accounted for.
  EXPECT_EQ(completions.size(), length_of.size());
  for (const auto& [key, n] : completions) EXPECT_EQ(n, 1);
  uint64_t bytes_completed = 0, accepted = 0;
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_EQ(tx[r].unacked_messages(), 0u) << "sender " << r;
    EXPECT_EQ(rx[r].active_messages(), 0u) << "receiver " << r;
    EXPECT_EQ(rx[r].stats().invalid + rx[r].stats().out_of_window, 0u);
    bytes_completed += rx[r].stats().bytes_completed;
    accepted += rx[r].stats().accepted;
    out.messages += rx[r].stats().completed;
    out.retransmissions += tx[r].stats().retransmissions;
    out.receiver_dups += rx[r].stats().duplicates;
    out.receiver_stale += rx[r].stats().stale;
    out.receiver_reordered += rx[r].stats().reordered;
  }
  EXPECT_EQ(out.messages, kMessages);
  EXPECT_EQ(bytes_completed, bytes_submitted);
  EXPECT_EQ(accepted, total_packets);
  out.data_drops = data_faults.dropped();
  out.injected_dups = data_faults.duplicated();
  out.injected_reorders = data_faults.reordered();
  // Conservation: each transmission was dropped or arrived (plus injected copies), each arrival was
  // accepted once or dropped as a duplicate / stale copy.
  EXPECT_EQ(out.transmissions, total_packets + out.retransmissions);
  EXPECT_EQ(out.arrivals, out.transmissions - out.data_drops + out.injected_dups);
  EXPECT_EQ(out.arrivals, accepted + out.receiver_dups + out.receiver_stale);
  return out;
}

TEST(Reliability, TenThousandMessagesLossyChannel) {
  const Outcome o = run_lossy(Scenario{});
  EXPECT_GT(o.data_drops, 0u);
  EXPECT_GT(o.retransmissions, 0u);
  // Lossless feedback, and NACK delay / RTO above the channel's reordering: no spurious retransmission,
  // so every retransmission recovers exactly one dropped packet (including dropped retransmissions).
  EXPECT_EQ(o.retransmissions, o.data_drops);
  EXPECT_EQ(o.receiver_dups + o.receiver_stale, o.injected_dups);
  EXPECT_GT(o.receiver_reordered, 0u);
  EXPECT_LE(o.receiver_reordered, o.injected_reorders);
  std::printf("transmissions %llu, drops %llu, retransmissions %llu, duplicates %llu, reordered %llu of %llu held back\n",
              static_cast<unsigned long long>(o.transmissions),
              static_cast<unsigned long long>(o.data_drops), static_cast<unsigned long long>(o.retransmissions),
              static_cast<unsigned long long>(o.injected_dups),
              static_cast<unsigned long long>(o.receiver_reordered),
              static_cast<unsigned long long>(o.injected_reorders));
}

TEST(Reliability, LossyFeedbackStillCompletes) {
  // RoCEv2 frames, and ACKs and NACKs lost too: timeouts then resend packets that had arrived (counted
  // as duplicates or stale copies), but every message still completes exactly once (checked in run_lossy).
  const Outcome o = run_lossy(Scenario{.mode = WireMode::kRoceV2, .feedback_drop = 0.02});
  EXPECT_GT(o.retransmissions, o.data_drops);
}

}  // namespace
}  // namespace fabemu::host::dpdk
