// Framing, HMAC, token files, addresses and the clock estimate of the lab control plane.
#include <fcntl.h>
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "host/lab/address.h"
#include "host/lab/auth.h"
#include "host/lab/clock.h"
#include "host/lab/digest.h"
#include "host/lab/error.h"
#include "host/lab/framing.h"

namespace fabemu::lab {
namespace {

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

// A Hello whose serialized size is exactly `size` bytes (size >= 5): the nonce fills it, an optional
// version field absorbs the steps of the varint lengths.
proto::Envelope envelope_of_size(std::size_t size) {
  for (const std::uint32_t version : {0u, 1u, 200u}) {
    proto::Envelope e;
    e.mutable_hello()->set_version(version);
    for (std::size_t nonce = size > 16 ? size - 16 : 0; nonce <= size; ++nonce) {
      e.mutable_hello()->set_nonce(std::string(nonce, 'x'));
      if (e.ByteSizeLong() == size) return e;
      if (e.ByteSizeLong() > size) break;
    }
  }
  throw std::logic_error("no envelope of that size");
}

TEST(LabFraming, HeaderIsBigEndian) {
  EXPECT_EQ(encode_header(0x01020304u), (std::array<std::uint8_t, 4>{1, 2, 3, 4}));
  EXPECT_EQ(decode_header({0xff, 0, 0, 0x10}), 0xff000010u);
}

TEST(LabFraming, RoundTripAtBoundarySizes) {
  for (const std::size_t size : {std::size_t{5}, std::size_t{127}, std::size_t{128}, std::size_t{65535},
                                 kPreAuthMaxFrameBytes, kPreAuthMaxFrameBytes + 1}) {
    SCOPED_TRACE(size);
    const proto::Envelope e = envelope_of_size(size);
    const std::string frame = encode_frame(e, size);  // exactly at the limit: accepted
    ASSERT_EQ(frame.size(), kHeaderBytes + size);
    EXPECT_THROW(encode_frame(e, size - 1), LabError);
    // Every proper prefix needs more; the whole frame decodes; one byte less of limit is too large.
    for (const std::size_t cut : {std::size_t{0}, std::size_t{3}, std::size_t{4}, frame.size() - 1}) {
      proto::Envelope out;
      EXPECT_EQ(decode_frame(std::string_view(frame).substr(0, cut), size, out).status, DecodeStatus::kNeedMore);
    }
    proto::Envelope out;
    const DecodeResult ok = decode_frame(frame, size, out);
    ASSERT_EQ(ok.status, DecodeStatus::kFrame);
    EXPECT_EQ(ok.consumed, frame.size());
    EXPECT_EQ(out.hello().nonce(), e.hello().nonce());
    const DecodeResult big = decode_frame(frame, size - 1, out);
    EXPECT_EQ(big.status, DecodeStatus::kTooLarge);
    EXPECT_EQ(big.length, size);
  }
}

TEST(LabFraming, ConsecutiveFramesAndEmptyPayload) {
  proto::Envelope a;
  a.mutable_heartbeat()->set_seq(7);
  proto::Envelope empty;
  const std::string stream = encode_frame(a) + encode_frame(empty) + encode_frame(a);
  std::string_view rest = stream;
  std::vector<std::string_view> names;
  while (!rest.empty()) {
    proto::Envelope out;
    const DecodeResult r = decode_frame(rest, kDefaultMaxFrameBytes, out);
    ASSERT_EQ(r.status, DecodeStatus::kFrame);
    names.push_back(body_name(out));
    rest.remove_prefix(r.consumed);
  }
  EXPECT_EQ(names, (std::vector<std::string_view>{"heartbeat", "empty", "heartbeat"}));
}

TEST(LabFraming, MalformedPayload) {
  const std::string frame = std::string("\0\0\0\3", 4) + "\xff\xff\xff";
  proto::Envelope out;
  EXPECT_EQ(decode_frame(frame, 100, out).status, DecodeStatus::kMalformed);
}

// RFC 4231, test cases 1 and 2.
TEST(LabAuth, HmacSha256KnownAnswers) {
  EXPECT_EQ(hex(hmac_sha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(LabAuth, ProofsDependOnTokenNoncesAndRole) {
  const std::string c = random_nonce();
  const std::string a = random_nonce();
  ASSERT_EQ(c.size(), kNonceBytes);
  EXPECT_NE(c, a);
  const std::string proof = auth_mac("token", c, a, proto::ROLE_COORDINATOR);
  EXPECT_EQ(proof.size(), kMacBytes);
  EXPECT_TRUE(macs_equal(proof, auth_mac("token", c, a, proto::ROLE_COORDINATOR)));
  EXPECT_FALSE(macs_equal(proof, auth_mac("token", c, a, proto::ROLE_AGENT)));
  EXPECT_FALSE(macs_equal(proof, auth_mac("tokeN", c, a, proto::ROLE_COORDINATOR)));
  EXPECT_FALSE(macs_equal(proof, auth_mac("token", a, c, proto::ROLE_COORDINATOR)));
  EXPECT_FALSE(macs_equal(proof, proof.substr(1)));
}

class TokenFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("fabemu_lab_token_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& content, mode_t mode) {
    const auto path = (dir_ / name).string();
    std::ofstream(path) << content;
    ::chmod(path.c_str(), mode);
    return path;
  }
  // read_token_file's error for `path`, or "no error".
  static std::string message(const std::string& path) {
    try {
      read_token_file(path);
    } catch (const LabError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  }
  std::filesystem::path dir_;
};

TEST_F(TokenFile, ReadsTokenWithoutTrailingNewline) {
  EXPECT_EQ(read_token_file(write("ok", "s3cret token\n", 0600)), "s3cret token");
}

TEST_F(TokenFile, RejectsMissingEmptyAndWorldReadable) {
  EXPECT_NE(message((dir_ / "missing").string()).find("does not exist"), std::string::npos);
  EXPECT_NE(message(write("empty", " \n", 0600)).find("is empty"), std::string::npos);
  EXPECT_NE(message(write("open", "tok", 0644)).find("chmod 600"), std::string::npos);
}

// Issue 44 item 14: group bits (640, 660) were accepted, a FIFO blocked start-up for ever, a directory was
// reported as "is empty". Each is refused with the file's name and what it is, without opening it.
TEST_F(TokenFile, RejectsGroupAccessFifoAndDirectoryNamingTheFile) {
  for (const mode_t mode : {0640, 0660, 0620, 0604}) {
    const std::string path = write(fmt::format("group{:o}", mode), "tok", mode);
    EXPECT_EQ(message(path), fmt::format("token file {} is accessible by its group or other users (mode {:o}): "
                                         "chmod 600 it", path, mode));
  }
  EXPECT_EQ(read_token_file(write("owner-only", "tok", 0400)), "tok");
  const std::string directory = (dir_ / "a-directory").string();
  std::filesystem::create_directory(directory);
  ::chmod(directory.c_str(), 0700);
  EXPECT_EQ(message(directory), fmt::format("token file {} is a directory, not a regular file", directory));
  const std::string fifo = (dir_ / "a-fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto result = std::async(std::launch::async, [&] { return message(fifo); });
  if (result.wait_for(std::chrono::seconds(5)) == std::future_status::timeout) {
    ADD_FAILURE() << "reading the FIFO token file blocks";
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // lets the blocked reader see end of file
    if (fd >= 0) ::close(fd);
  }
  EXPECT_EQ(result.get(), fmt::format("token file {} is a FIFO, not a regular file", fifo));
}

// Failed authentications of one peer address wait 100, 200, 400 ... ms, at most 32 x 100 ms; another
// address starts at 100 ms; a success or 60 s without a failure forgets the count.
TEST(AuthFailureDelay, GrowsPerPeerAndIsForgotten) {
  using std::chrono::milliseconds;
  AuthFailureDelay delay(milliseconds(100));
  const auto t0 = AuthFailureDelay::Clock::now();
  std::vector<long> got;
  for (int i = 0; i < 8; ++i) got.push_back(delay.fail("10.0.0.1", t0).count());
  EXPECT_EQ(got, (std::vector<long>{100, 200, 400, 800, 1600, 3200, 3200, 3200}));
  EXPECT_EQ(delay.fail("10.0.0.2", t0).count(), 100);
  EXPECT_EQ(delay.fail("10.0.0.1", t0 + std::chrono::seconds(61)).count(), 100);
  delay.succeed("10.0.0.1");
  EXPECT_EQ(delay.fail("10.0.0.1", t0 + std::chrono::seconds(62)).count(), 100);
  EXPECT_EQ(delay.peers(), 2u);
}

// Issue 44 item 15: sha256_file hashed /dev/zero for ever. A device, a FIFO or a directory is refused
// before a byte is read (run on a detached thread, so that the old behaviour fails instead of hanging).
TEST(Sha256File, RefusesWhatIsNotARegularFileNamingIt) {
  const auto dir = std::filesystem::temp_directory_path() / ("fabemu_lab_digest_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/dev/zero", "/dev/zero: is a character device, not a regular file: a trace must be a regular file"},
      {fifo, fifo + ": is a FIFO, not a regular file: a trace must be a regular file"},
      {dir.string(), dir.string() + ": is a directory, not a regular file: a trace must be a regular file"}};
  for (const auto& [path, expected] : cases) {
    auto message = std::make_shared<std::promise<std::string>>();
    std::thread([message, path = path] {
      try {
        sha256_file(path);
        message->set_value("no error");
      } catch (const LabError& e) {
        message->set_value(e.what());
      }
    }).detach();
    auto result = message->get_future();
    if (result.wait_for(std::chrono::seconds(5)) == std::future_status::timeout) {
      ADD_FAILURE() << path << ": still hashing after 5 s";
      continue;
    }
    EXPECT_EQ(result.get(), expected);
  }
  // A regular file: its digest and size.
  const std::string file = (dir / "trace").string();
  std::ofstream(file) << "abc";
  std::uint64_t bytes = 0;
  EXPECT_EQ(to_hex(sha256_file(file, nullptr, &bytes)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(bytes, 3u);
  std::filesystem::remove_all(dir);
}

TEST(Sha256File, StopsWhenCancelled) {
  const auto path = std::filesystem::temp_directory_path() / ("fabemu_lab_cancel_" + std::to_string(::getpid()));
  std::ofstream(path.string()) << "";
  std::filesystem::resize_file(path, std::uint64_t{1} << 30);
  std::atomic<bool> cancel{true};
  try {
    sha256_file(path.string(), &cancel);
    ADD_FAILURE() << "not cancelled";
  } catch (const LabError& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ": hashing cancelled after 0 of 1073741824 bytes");
  }
  std::filesystem::remove(path);
}

TEST(LabAddress, ParsesAndRejects) {
  EXPECT_EQ(to_string(parse_endpoint("127.0.0.1:0")), "127.0.0.1:0");
  EXPECT_EQ(to_string(parse_endpoint("[::1]:7000")), "[::1]:7000");
  EXPECT_EQ(parse_endpoint("10.1.2.3:65535").port(), 65535);
  for (const char* bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "localhost:1", "1.2.3.4:x"}) {
    EXPECT_THROW(parse_endpoint(bad), LabError) << bad;
  }
}

TEST(LabClock, MinimumDelaySampleWins) {
  // Agent 1000 ns ahead; the second sample has 200 ns of path asymmetry but the least delay wins.
  const std::vector<ClockSample> samples = {
      {0, 1500, 1600, 1200},      // delay 1100, offset ((1500)+(400))/2 = 950
      {10000, 11100, 11150, 10250},  // delay 200, offset (1100 + 900)/2 = 1000
      {20000, 21400, 21500, 20900},  // delay 800
  };
  const ClockEstimate e = estimate_clock(samples);
  EXPECT_EQ(e.delay_ns, 200);
  EXPECT_EQ(e.offset_ns, 1000);
  EXPECT_EQ(e.samples, 3u);
  EXPECT_THROW(estimate_clock({}), std::invalid_argument);
}

}  // namespace
}  // namespace fabemu::lab
