// merge_pcap (pcap_writer.h): two captures written by PcapWriter, one per lcore, merged into one in
// time order with the second moved onto the first's clock.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "host/wire/pcap_writer.h"
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

// The writer's own thread takes full buffers: a capture of many buffers, with only two of them (so that
// write() waits for the file), arrives whole and in order.
TEST(PcapWriter, ManyBuffersOfFramesArriveWholeAndInOrder) {
  fabemu::test::ScratchDir dir;
  const std::string path = dir.file("many.pcap");
  std::vector<std::pair<uint64_t, uint8_t>> want;
  uint64_t bytes = 0;
  {
    fd::PcapWriter w(path, fd::PcapWriterOptions{.buffer_bytes = 2 * fd::kPcapBufferBytes});
    for (uint32_t i = 0; i < 20'000; ++i) {
      const auto tag = static_cast<uint8_t>(i * 7);
      const std::vector<uint8_t> f(60 + (i * 37) % 1441, tag);  // 60 to 1500 bytes
      w.write(f, uint64_t{i} * 1000);
      want.emplace_back(uint64_t{i} * 1000, tag);
      bytes += 16 + f.size();
    }
    EXPECT_EQ(w.frames(), 20'000u);
    w.close();
    EXPECT_EQ(w.waits() == 0, w.waited_ns() == 0) << w.waits() << " waits, " << w.waited_ns() << " ns";
  }
  ASSERT_GT(bytes, 10 * fd::kPcapBufferBytes);  // buffers went round several times
  EXPECT_EQ(records(path), want);
}

// Without close(), the destructor still writes what was captured (errors unreported).
TEST(PcapWriter, DestructorWritesWhatWasCaptured) {
  fabemu::test::ScratchDir dir;
  const std::string path = dir.file("unclosed.pcap");
  write(path, {});
  {
    fd::PcapWriter w(path);
    for (uint8_t t = 1; t <= 3; ++t) w.write(std::vector<uint8_t>(64, t), uint64_t{t});
  }
  EXPECT_EQ(records(path), (std::vector<std::pair<uint64_t, uint8_t>>{{1, 1}, {2, 2}, {3, 3}}));
}

// A write the thread cannot make is reported by the caller's next write() or close(), naming the path;
// nothing waits for ever. The file header is written at once: a file that takes nothing fails there.
// While it lives: files of this process take at most `bytes` (RLIMIT_FSIZE), and SIGXFSZ is ignored, so a
// write past the limit fails with EFBIG instead of killing the test.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) : old_handler_(std::signal(SIGXFSZ, SIG_IGN)) {
    if (::getrlimit(RLIMIT_FSIZE, &before_) != 0) throw std::runtime_error("getrlimit");
    rlimit limit = before_;
    limit.rlim_cur = bytes;
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) throw std::runtime_error("setrlimit");
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &before_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit before_{};
  void (*old_handler_)(int);
};

TEST(PcapWriter, WriteFailureIsReportedNamingThePath) {
  if (::access("/dev/full", W_OK) == 0) {
    try {
      fd::PcapWriter full("/dev/full");
      ADD_FAILURE() << "/dev/full took the file header";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "pcap /dev/full: cannot write: No space left on device");
    }
  }
  // A file that takes 64 KiB (RLIMIT_FSIZE; SIGXFSZ ignored, so write(2) fails with EFBIG instead).
  fabemu::test::ScratchDir dir;
  const std::string path = dir.file("limited.pcap");
  {
    const FileSizeLimit limit(64 * 1024);
    fd::PcapWriter w(path, fd::PcapWriterOptions{.buffer_bytes = 2 * fd::kPcapBufferBytes});
    const std::vector<uint8_t> frame(1484, 1);
    try {
      for (int i = 0; i < 10 * 700; ++i) w.write(frame, uint64_t{1});  // 10 buffers: one write() sees it
      w.close();
      ADD_FAILURE() << "writing beyond the file size limit did not fail";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "pcap " + path + ": cannot write: File too large");
    }
    EXPECT_THROW(w.close(), std::runtime_error);  // the failure stays: close() says it again
  }
}

// stop_on_failure (the DPDK fabric's choice): the same failure stops the capture without a throw; the
// writes after it are counted as dropped, error() names the path, and close() reports nothing.
TEST(PcapWriter, StopOnFailureDropsTheRestWithoutThrowing) {
  fabemu::test::ScratchDir dir;
  const std::string path = dir.file("stopped.pcap");
  {
    const FileSizeLimit limit(64 * 1024);
    fd::PcapWriter w(path, fd::PcapWriterOptions{.buffer_bytes = 2 * fd::kPcapBufferBytes, .stop_on_failure = true});
    const std::vector<uint8_t> frame(1484, 1);
    EXPECT_NO_THROW(for (int i = 0; i < 10 * 700; ++i) w.write(frame, uint64_t{1}));
    EXPECT_NO_THROW(w.close());
    EXPECT_EQ(w.error(), "pcap " + path + ": cannot write: File too large");
    // The thread fails on the first buffer (1 MiB against a 64 KiB limit); the writes after the lcore has
    // seen it are dropped, the ones before counted as given.
    EXPECT_GT(w.dropped(), 0u);
    EXPECT_EQ(w.frames() + w.dropped(), 7000u);
    EXPECT_LE(std::filesystem::file_size(path), 64u * 1024);
  }
  // Without a failure: no error, nothing dropped.
  fd::PcapWriter ok(dir.file("ok.pcap"), fd::PcapWriterOptions{.stop_on_failure = true});
  ok.write(std::vector<uint8_t>(60, 2), uint64_t{5});
  ok.close();
  EXPECT_EQ(ok.error(), "");
  EXPECT_EQ(ok.dropped(), 0u);
  EXPECT_EQ(ok.frames(), 1u);
}

// The thread runs on the CPUs it is given (off the polling lcores'), under its own name.
TEST(PcapWriter, ThreadRunsOnTheCpusGiven) {
  fabemu::test::ScratchDir dir;
  fd::PcapWriter w(dir.file("cpus.pcap"), fd::PcapWriterOptions{.writer_cpus = {0}});
  std::string allowed;
  for (int attempt = 0; attempt < 200 && allowed.empty(); ++attempt) {
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      if (name != "fabemu-pcap") continue;
      std::ifstream status(task.path() / "status");
      for (std::string line; std::getline(status, line);) {
        if (line.rfind("Cpus_allowed_list:", 0) == 0) allowed = line.substr(line.find_first_not_of(" \t", 18));
      }
    }
    if (allowed.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // not named yet
  }
  EXPECT_EQ(allowed, "0");
  w.close();
}

// write_zero_body: the same file as write() of the same frame, its zeros not read (here: not zeros in the
// frame handed over, yet zeros in the file), cut at the snap length anywhere: in the head, the zeros or
// the tail.
TEST(PcapWriter, ZeroBodyIsCapturedAsZeros) {
  fabemu::test::ScratchDir dir;
  std::vector<uint8_t> frame(300);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>(i + 1);
  std::vector<uint8_t> zeroed = frame;
  std::fill(zeroed.begin() + 100, zeroed.begin() + 296, 0);  // head 100, zeros 196, tail 4 (an ICRC)
  for (const uint32_t snaplen : {65535u, 296u, 150u, 100u, 60u, 298u}) {
    SCOPED_TRACE("snaplen " + std::to_string(snaplen));
    const std::string a = dir.file("a.pcap"), b = dir.file("b.pcap");
    {
      fd::PcapWriter w(a, snaplen);
      w.write_zero_body(frame, 100, 196, 7);
      w.write(frame, 8);  // a whole frame after it
      w.close();
    }
    {
      fd::PcapWriter w(b, snaplen);
      w.write(zeroed, 7);
      w.write(frame, 8);
      w.close();
    }
    std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
    const std::string sa((std::istreambuf_iterator<char>(fa)), std::istreambuf_iterator<char>());
    const std::string sb((std::istreambuf_iterator<char>(fb)), std::istreambuf_iterator<char>());
    EXPECT_EQ(sa.size(), 24u + 2 * 16 + 2 * std::min<size_t>(300, snaplen));
    EXPECT_EQ(sa, sb);
  }
  fd::PcapWriter w(dir.file("c.pcap"));
  EXPECT_THROW(w.write_zero_body(frame, 200, 101, 1), std::invalid_argument);
  EXPECT_THROW(w.write_zero_body(frame, 301, 0, 1), std::invalid_argument);
  w.close();
}

// write_run: the same file as write() of each frame encode_run makes of the run, in both wire modes, for
// runs of every length a burst gives (full frames, a shorter last one, a message's only frame), flows
// taking turns (sharing the thread's FlowTemplates slots, so templates are rebuilt), message ids and
// offsets past 2^32, RoCEv2 PSNs past 2^24, frames cut by the snap length; between plain records.
TEST(PcapWriter, RunIsCapturedAsItsFrames) {
  fabemu::test::ScratchDir dir;
  for (const fd::WireMode mode : {fd::WireMode::kFabemu, fd::WireMode::kRoceV2}) {
    for (const uint32_t snaplen : {65535u, 1000u, 90u}) {
      SCOPED_TRACE(std::string(mode == fd::WireMode::kRoceV2 ? "RoCEv2" : "fabemu") + ", snaplen " +
                   std::to_string(snaplen));
      const std::string a = dir.file("a.pcap"), b = dir.file("b.pcap");
      fd::PcapWriter by_run(a, snaplen), by_frame(b, snaplen);
      std::mt19937_64 rng(7);
      std::vector<uint8_t> room(fd::PcapWriter::kMaxRun * 9100);
      uint64_t frames = 0;
      for (int i = 0; i < 300; ++i) {
        fd::FrameSpec s;
        s.mode = mode;
        const auto src = static_cast<uint32_t>(rng() % 100), dst = static_cast<uint32_t>(rng() % 100);
        s.src = fd::Endpoint{{0x02, 0, 0, 0, 0, static_cast<uint8_t>(src)}, 0xC6120000u + src, 47000};
        s.dst = fd::Endpoint{{0x02, 0, 0, 0, 1, static_cast<uint8_t>(dst)}, 0xC6130000u + dst, 47001};
        s.ip_id = static_cast<uint16_t>(rng());
        s.dscp = static_cast<uint8_t>(rng() % 64);
        s.payload_bytes = std::vector<uint32_t>{1, 64, 1024, 1442, 8972}[rng() % 5];
        const auto n = static_cast<uint32_t>(1 + rng() % fd::PcapWriter::kMaxRun);
        const uint32_t count = n + static_cast<uint32_t>(rng() % 3);
        const uint32_t seq = static_cast<uint32_t>(rng() % 2) * ((1u << 24) - 2);  // PSNs that wrap
        const uint32_t last = rng() % 2 ? s.payload_bytes : 1 + static_cast<uint32_t>(rng() % s.payload_bytes);
        const uint64_t id = (uint64_t{rng() % 3} << 32) + rng() % 1000;
        s.hdr = fd::FabemuHeader{fd::PacketKind::kData, 0, src, dst, id, seq, seq + count,
                                 uint64_t{seq + count} * s.payload_bytes, uint64_t{seq} * s.payload_bytes,
                                 rng() >> 20};
        s.bth.dest_qp = dst + 1;
        const uint64_t ns = 1'000'000'000ull * i + rng() % 1'000'000'000;
        by_run.write_run(s, n, last, ns);
        fd::FrameTemplate t(s);
        std::vector<uint8_t*> at(n);
        std::vector<uint16_t> lens(n);
        for (uint32_t k = 0; k < n; ++k) at[k] = room.data() + k * 9100;
        ASSERT_TRUE(fd::encode_run(t, s, n, last, at.data(), 9100, lens.data(), false));
        for (uint32_t k = 0; k < n; ++k) by_frame.write(std::span<const uint8_t>(at[k], lens[k]), ns);
        frames += n;
        // A plain record between runs.
        const std::vector<uint8_t> other(70 + i % 50, static_cast<uint8_t>(i));
        by_run.write(other, ns + 1);
        by_frame.write(other, ns + 1);
      }
      EXPECT_EQ(by_run.frames(), frames + 300);
      EXPECT_EQ(by_frame.frames(), frames + 300);
      by_run.close();
      by_frame.close();
      std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
      const std::string sa((std::istreambuf_iterator<char>(fa)), std::istreambuf_iterator<char>());
      const std::string sb((std::istreambuf_iterator<char>(fb)), std::istreambuf_iterator<char>());
      EXPECT_GT(sa.size(), 24u + 16 * (frames + 300));
      EXPECT_TRUE(sa == sb) << "the run records differ from the frames (" << sa.size() << " and " << sb.size()
                            << " bytes)";
    }
  }
  fd::PcapWriter w(dir.file("c.pcap"));
  fd::FrameSpec s;
  s.payload_bytes = 100;
  EXPECT_THROW(w.write_run(s, 0, 100, 1), std::invalid_argument);
  EXPECT_THROW(w.write_run(s, fd::PcapWriter::kMaxRun + 1, 100, 1), std::invalid_argument);
  EXPECT_THROW(w.write_run(s, 2, 101, 1), std::invalid_argument);  // a last frame longer than the others
  s.hdr.kind = fd::PacketKind::kAck;
  EXPECT_THROW(w.write_run(s, 2, 100, 1), std::invalid_argument);
  EXPECT_EQ(w.frames(), 0u);
  w.close();
}

}  // namespace
