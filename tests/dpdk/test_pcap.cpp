// merge_pcap (pcap_writer.h): two captures written by PcapWriter, one per lcore, merged into one in
// time order with the second moved onto the first's clock.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "host/dpdk/pcap_writer.h"
#include "tests/support/test_support.h"

namespace fd = fabemu::host::dpdk;

namespace {

// (timestamp ns, first byte of the frame) of every record of a capture.
std::vector<std::pair<uint64_t, uint8_t>> records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::pair<uint64_t, uint8_t>> out;
  EXPECT_GE(b.size(), 24u);
  uint32_t magic = 0;
  std::memcpy(&magic, b.data(), 4);
  EXPECT_EQ(magic, fd::kPcapNanoMagic);
  size_t pos = 24;
  while (pos + 16 <= b.size()) {
    uint32_t sec = 0, nsec = 0, incl = 0, orig = 0;
    std::memcpy(&sec, &b[pos], 4);
    std::memcpy(&nsec, &b[pos + 4], 4);
    std::memcpy(&incl, &b[pos + 8], 4);
    std::memcpy(&orig, &b[pos + 12], 4);
    EXPECT_EQ(incl, orig);
    pos += 16;
    EXPECT_LE(pos + incl, b.size());
    out.emplace_back(uint64_t{sec} * 1'000'000'000 + nsec, b[pos]);
    pos += incl;
  }
  EXPECT_EQ(pos, b.size());
  return out;
}

void write(const std::string& path, const std::vector<std::pair<uint64_t, uint8_t>>& frames) {
  fd::PcapWriter w(path);
  for (const auto& [t, tag] : frames) {
    const std::vector<uint8_t> f(60 + tag, tag);  // lengths differ: the records move whole
    w.write(f, t);
  }
  w.close();
}

TEST(MergePcap, InterleavesInTimeOrderOnTheFirstsClock) {
  fabemu::test::ScratchDir dir;
  const std::string a = dir.file("a.pcap"), b = dir.file("b.pcap"), out = dir.file("out.pcap");
  write(a, {{1000, 1}, {3000, 2}, {3000, 3}, {2'000'000'005, 4}});
  // b's clock started 500 ns before a's: 500 -> 0, 1500 -> 1000 (after a's frame at 1000), 3600 -> 3100.
  write(b, {{200, 11}, {1500, 12}, {3600, 13}, {5'000'000'000, 14}});
  EXPECT_EQ(fd::merge_pcap(a, b, -500, out), 8u);
  const std::vector<std::pair<uint64_t, uint8_t>> want = {
      {0, 11}, {1000, 1}, {1000, 12}, {3000, 2}, {3000, 3}, {3100, 13}, {2'000'000'005, 4}, {4'999'999'500, 14}};
  EXPECT_EQ(records(out), want);
}

TEST(MergePcap, EmptyCapturesAndPositiveShift) {
  fabemu::test::ScratchDir dir;
  const std::string a = dir.file("a.pcap"), b = dir.file("b.pcap"), out = dir.file("out.pcap");
  write(a, {});
  write(b, {{7, 5}});
  EXPECT_EQ(fd::merge_pcap(a, b, 1'000'000'000, out), 1u);
  EXPECT_EQ(records(out), (std::vector<std::pair<uint64_t, uint8_t>>{{1'000'000'007, 5}}));
  write(b, {});
  EXPECT_EQ(fd::merge_pcap(a, b, 0, out), 0u);
  EXPECT_TRUE(records(out).empty());
}

TEST(MergePcap, DamagedOrMissingInputNamesTheFile) {
  fabemu::test::ScratchDir dir;
  const std::string a = dir.file("a.pcap"), b = dir.file("b.pcap"), out = dir.file("out.pcap");
  write(a, {{1, 1}, {2, 2}});
  write(b, {{1, 3}});
  // Cut b in the middle of its record.
  std::ifstream in(b, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  std::ofstream(b, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 10);
  try {
    fd::merge_pcap(a, b, 0, out);
    ADD_FAILURE() << "a truncated capture was merged";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(b), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  std::ofstream(b, std::ios::binary | std::ios::trunc) << "not a pcap file at all, longer than 24 bytes";
  EXPECT_THROW(fd::merge_pcap(a, b, 0, out), std::runtime_error);
  EXPECT_THROW(fd::merge_pcap(a, dir.file("missing.pcap"), 0, out), std::runtime_error);
}


// A MiB a write(2), not a block: glibc's stdio, given a buffer size without a buffer, used 4 KiB blocks
// (3,902 write calls for a 16 MB capture). /proc/self/io counts the process's write calls.
TEST(PcapWriter, WritesAMebibyteAtATime) {
  const auto write_calls = [] {
    std::ifstream io("/proc/self/io");
    for (std::string key; io >> key;) {
      uint64_t v = 0;
      io >> v;
      if (key == "syscw:") return std::optional<uint64_t>(v);
    }
    return std::optional<uint64_t>();
  };
  if (!write_calls()) GTEST_SKIP() << "/proc/self/io is not readable here: write calls not counted";
  fabemu::test::ScratchDir dir;
  const std::string path = dir.file("big.pcap");
  const std::vector<uint8_t> frame(1484, 0xAB);  // a record of 1,500 bytes
  const uint64_t before = *write_calls();
  {
    fd::PcapWriter w(path);
    for (int i = 0; i < 8 * 700; ++i) w.write(frame, uint64_t{1});  // 8.4 MB
    w.close();
  }
  const uint64_t calls = *write_calls() - before;
  EXPECT_GE(calls, 8u);
  EXPECT_LE(calls, 12u);  // 9 MiB-sized writes or so, not 2,000 blocks
  EXPECT_EQ(records(path).size(), 8u * 700);
  // merge_pcap writes the same way (and reads a MiB at a time).
  const std::string merged = dir.file("merged.pcap");
  write(dir.file("empty.pcap"), {});
  const uint64_t before_merge = *write_calls();
  EXPECT_EQ(fd::merge_pcap(path, dir.file("empty.pcap"), 0, merged), 8u * 700);
  EXPECT_LE(*write_calls() - before_merge, 12u);
}

}  // namespace
