#include <gtest/gtest.h>

#include <set>

#include "tests/support/test_support.h"
#include "traces/resolver.h"

namespace fabemu::traces {
namespace {
using ChakraProtoMsg::COMP_NODE;

// Issues everything in waves (all ready nodes, then finish them all); returns the waves of ids.
std::vector<std::vector<uint64_t>> waves(const std::string& path, ResolverOptions opts = {}) {
  TraceReader r(path);
  DependencyResolver res(r, opts);
  std::vector<std::vector<uint64_t>> out;
  for (;;) {
    std::vector<const Node*> batch;
    while (const Node* n = res.next()) batch.push_back(n);
    if (batch.empty()) {  // nothing in flight and nothing issuable: the end, or a stall
      EXPECT_TRUE(res.done()) << "resolver stalled";
      break;
    }
    out.emplace_back();
    for (const Node* n : batch) out.back().push_back(n->id());
    for (const Node* n : batch) res.finish(*n);
  }
  return out;
}

TEST(Resolver, DiamondInFileOrder) {
  test::ScratchDir dir;
  const std::string p = dir.file("d.0.et");
  //   10 -> 11, 12 -> 13 (data and ctrl edges), plus an independent 20
  test::write_trace(p, {test::make_node(10, COMP_NODE), test::make_node(12, COMP_NODE, {10}),
                        test::make_node(11, COMP_NODE, {}, {10}), test::make_node(20, COMP_NODE),
                        test::make_node(13, COMP_NODE, {11}, {12})});
  using W = std::vector<std::vector<uint64_t>>;
  EXPECT_EQ(waves(p), (W{{10, 20}, {12, 11}, {13}}));
  // Ignoring ctrl_deps, 11 is free at once and 13 waits only on 11.
  EXPECT_EQ(waves(p, {.ctrl_deps = false}), (W{{10, 11, 20}, {12, 13}}));
}

TEST(Resolver, ForwardReferencesAndDanglingDeps) {
  test::ScratchDir dir;
  const std::string p = dir.file("f.0.et");
  // 1 depends on 2 (later in the file) and on 99 (absent); the ctrl_dep on 3 (later) is dropped.
  test::write_trace(p, {test::make_node(1, COMP_NODE, {2, 99}, {3}), test::make_node(2, COMP_NODE),
                        test::make_node(3, COMP_NODE, {1})});
  for (const bool prescan : {true, false}) {
    TraceReader r(p);
    DependencyResolver res(r, {.prescan = prescan});
    const Node* first = res.next();
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->id(), 2u);
    EXPECT_EQ(res.next(), nullptr);
    res.finish(*first);
    const Node* second = res.next();
    ASSERT_NE(second, nullptr);
    EXPECT_EQ(second->id(), 1u);
    res.finish(*second);
    const Node* third = res.next();
    ASSERT_NE(third, nullptr);
    EXPECT_EQ(third->id(), 3u);
    res.finish(*third);
    EXPECT_EQ(res.next(), nullptr);
    EXPECT_TRUE(res.done());
    EXPECT_EQ(res.stats().dangling_deps, 1u);
    EXPECT_EQ(res.stats().forward_deps, 1u);
    EXPECT_EQ(res.stats().forward_ctrl_deps, 1u);
    ASSERT_EQ(res.dangling_examples().size(), 1u);
    EXPECT_EQ(res.dangling_examples()[0].missing_id, 99u);
    EXPECT_FALSE(res.dangling_examples()[0].ctrl);
  }
  TraceReader r(p);
  DependencyResolver strict(r, {.strict = true});
  EXPECT_THROW(strict.next(), TraceError);
}

TEST(Resolver, WindowBoundsMemoryOnLongChains) {
  test::ScratchDir dir;
  const std::string p = dir.file("c.0.et");
  std::vector<Node> nodes;
  for (uint64_t i = 0; i < 5000; ++i) {
    nodes.push_back(test::make_node(i, COMP_NODE, i == 0 ? std::vector<uint64_t>{} : std::vector<uint64_t>{i - 1}));
  }
  test::write_trace(p, nodes);
  TraceReader r(p);
  DependencyResolver res(r, {.window = 64});
  uint64_t expect = 0;
  while (const Node* n = res.next()) {
    EXPECT_EQ(n->id(), expect++);
    res.finish(*n);
  }
  EXPECT_EQ(expect, 5000u);
  EXPECT_TRUE(res.done());
  EXPECT_LE(res.stats().peak_window, 64u);
  EXPECT_EQ(res.stats().window_overflows, 0u);
}

TEST(Resolver, ReadsPastTheWindowInsteadOfDeadlocking) {
  test::ScratchDir dir;
  const std::string p = dir.file("o.0.et");
  // 100 nodes all waiting on the last one, with a window of 8.
  std::vector<Node> nodes;
  for (uint64_t i = 0; i < 100; ++i) nodes.push_back(test::make_node(i, COMP_NODE, {1000}));
  nodes.push_back(test::make_node(1000, COMP_NODE));
  test::write_trace(p, nodes);
  const auto w = waves(p, {.window = 8});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], (std::vector<uint64_t>{1000}));
  EXPECT_EQ(w[1].size(), 100u);
  EXPECT_EQ(w[1].front(), 0u);
  EXPECT_EQ(w[1].back(), 99u);
}

TEST(Resolver, CycleIsReportedWithItsNodes) {
  test::ScratchDir dir;
  const std::string p = dir.file("cy.0.et");
  test::write_trace(p, {test::make_node(1, COMP_NODE), test::make_node(2, COMP_NODE, {1, 4}),
                        test::make_node(3, COMP_NODE, {2}), test::make_node(4, COMP_NODE, {3})});
  TraceReader r(p, 0);
  DependencyResolver res(r);
  const Node* n = res.next();
  ASSERT_NE(n, nullptr);
  res.finish(*n);
  try {
    res.next();
    FAIL() << "cycle not detected";
  } catch (const TraceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cy.0.et"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2 <- 4 <- 3 <- 2"), std::string::npos) << msg;
  }
}

TEST(IdSlotMap, InsertFindEraseUnderChurn) {
  IdSlotMap m;
  std::vector<uint64_t> live;
  uint64_t next = 1;
  for (int round = 0; round < 20000; ++round) {
    const uint64_t id = next++ * 7919;
    m.insert(id, static_cast<uint32_t>(round));
    live.push_back(id);
    if (round % 3 != 0) {
      const size_t victim = (static_cast<size_t>(round) * 31) % live.size();
      m.erase(live[victim]);
      EXPECT_EQ(m.find(live[victim]), IdSlotMap::kNone);
      live.erase(live.begin() + static_cast<long>(victim));
    }
  }
  EXPECT_EQ(m.size(), live.size());
  for (const uint64_t id : live) EXPECT_NE(m.find(id), IdSlotMap::kNone);
}

TEST(IdSet, AgreesWithAReferenceSetAcrossArrayAndBitmapChunks) {
  IdSet s;
  std::set<uint64_t> ref;
  uint64_t x = 12345;
  auto step = [&] {  // xorshift: ids spread over a few chunks, some dense enough to become bitmaps
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int i = 0; i < 60000; ++i) {
    const uint64_t id = (step() % 3) * 65536 + step() % 20000;
    EXPECT_EQ(s.insert(id), ref.insert(id).second);
  }
  for (const uint64_t id : {uint64_t{0}, UINT64_MAX, UINT64_MAX - 1, uint64_t{1} << 40}) {
    EXPECT_EQ(s.insert(id), ref.insert(id).second);
  }
  EXPECT_FALSE(s.insert(UINT64_MAX));
  EXPECT_EQ(s.size(), ref.size());
  for (uint64_t id = 0; id < 4 * 65536; ++id) ASSERT_EQ(s.contains(id), ref.count(id) == 1) << id;
  EXPECT_TRUE(s.contains(UINT64_MAX));
  EXPECT_FALSE(s.contains(UINT64_MAX - 2));
}

}  // namespace
}  // namespace fabemu::traces
