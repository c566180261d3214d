// The DPDK fabric's wire format, address plan and pcap capture: golden frames (built independently by a
// Python struct + zlib script, see README.md) with every checksum recomputed here by reference routines,
// round trips of random fields, each reason a frame is not ours, the address plan's edges and YAML
// errors, and a pcap file read back.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "host/wire/address_plan.h"
#include "host/wire/checksum.h"
#include "host/wire/crc.h"
#include "host/wire/flow_templates.h"
#include "host/wire/frame.h"
#include "host/wire/pcap_writer.h"
#include "host/wire/roce.h"
#include "tests/support/test_support.h"
#include "traces/error.h"

namespace fabemu::host::dpdk {
namespace {

using Bytes = std::vector<uint8_t>;

// --- reference routines, deliberately naive and separate from host/wire ---

uint32_t ref_crc32(const Bytes& data, uint32_t crc = 0) {
  uint32_t c = ~crc;
  for (uint8_t b : data) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
  }
  return ~c;
}

// RFC 1071: the 16-bit ones'-complement sum of `data` (odd byte padded), folded.
uint32_t ref_sum(const Bytes& data) {
  uint32_t s = 0;
  for (size_t i = 0; i < data.size(); i += 2) {
    s += static_cast<uint32_t>(data[i] << 8) + (i + 1 < data.size() ? data[i + 1] : 0);
    s = (s & 0xFFFF) + (s >> 16);
  }
  return s;
}

uint16_t be16(const Bytes& f, size_t at) { return static_cast<uint16_t>(f[at] << 8 | f[at + 1]); }
Bytes slice(const Bytes& f, size_t from, size_t n) { return Bytes(f.begin() + from, f.begin() + from + n); }

Bytes from_hex(const std::string& hex) {
  Bytes out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// True when the IPv4 header checksum of frame f verifies.
bool ip_ok(const Bytes& f) { return ref_sum(slice(f, 14, 20)) == 0xFFFF; }
// The UDP checksum of frame f recomputed from scratch over the pseudo-header.
uint16_t ref_udp_checksum(Bytes f) {
  const size_t udp_len = be16(f, 38);
  f[40] = f[41] = 0;
  Bytes pseudo = slice(f, 26, 8);  // source and destination IP
  pseudo.insert(pseudo.end(), {0, 17, static_cast<uint8_t>(udp_len >> 8), static_cast<uint8_t>(udp_len)});
  const Bytes udp = slice(f, 34, udp_len);
  pseudo.insert(pseudo.end(), udp.begin(), udp.end());
  const auto c = static_cast<uint16_t>(~ref_sum(pseudo));
  return c == 0 ? 0xFFFF : c;
}
void fix_udp(Bytes& f) {
  const uint16_t c = ref_udp_checksum(f);
  f[40] = static_cast<uint8_t>(c >> 8);
  f[41] = static_cast<uint8_t>(c);
}
void fix_ip(Bytes& f) {
  f[24] = f[25] = 0;
  const auto c = static_cast<uint16_t>(~ref_sum(slice(f, 14, 20)));
  f[24] = static_cast<uint8_t>(c >> 8);
  f[25] = static_cast<uint8_t>(c);
}
// ICRC per IBTA A17 from scratch: 8 x 0xFF, masked IP/UDP/BTH, the rest, little-endian on the wire.
uint32_t ref_icrc(const Bytes& f) {
  Bytes m(8, 0xFF);
  Bytes rest = slice(f, 14, f.size() - 14 - 4);
  rest[1] = 0xFF;
  rest[8] = 0xFF;
  rest[10] = rest[11] = 0xFF;
  rest[26] = rest[27] = 0xFF;
  rest[32] = 0xFF;
  m.insert(m.end(), rest.begin(), rest.end());
  return ref_crc32(m);
}
void fix_icrc(Bytes& f) {
  const uint32_t c = ref_icrc(f);
  for (int i = 0; i < 4; ++i) f[f.size() - 4 + i] = static_cast<uint8_t>(c >> (8 * i));
}

FrameSpec golden_spec(WireMode mode) {
  FrameSpec s;
  s.mode = mode;
  s.src = Endpoint{{0x02, 0xfe, 0, 0, 0, 1}, 0xC6120002, mode == WireMode::kRoceV2 ? uint16_t{0xC123} : uint16_t{47000}};
  s.dst = Endpoint{{0x02, 0xfe, 0, 0, 0, 2}, 0xC6120003, 47000};
  s.ip_id = 0x1234;
  s.hdr = FabemuHeader{PacketKind::kData, 0, 1, 2, 0x0102030405060708, 3, 10, 10000, 3000, 123456789000};
  s.bth = Bth{rc_send_opcode(3, 10), false, true, 0, 0xFFFF, 0x12345, true, 0xABCDEF};
  s.payload_bytes = 7;
  return s;
}

// tools: python3 (struct, zlib) in README.md "Golden frames".
const char* kGoldenFabemu =
    "02fe0000000202fe0000000108004500005f1234400040119c30c6120002c612"
    "0003b798b798004bcc5846454d55010100000000000100000002010203040506"
    "0708000000030000000a00000000000027100000000000000bb80000001cbe99"
    "1a08457641e800000000000000";
const char* kGoldenRoce =
    "02fe0000000202fe000000010800450000701234400040119c1fc6120002c612"
    "0003c12312b7005c1f700150ffff0001234580abcdef46454d55010100000000"
    "0001000000020102030405060708000000030000000a00000000000027100000"
    "000000000bb80000001cbe991a08457641e800000000000000007ba75944";

Bytes encode_bytes(const FrameSpec& s) {
  Bytes buf(70000);
  const size_t n = encode(s, buf);
  buf.resize(n);
  return buf;
}

const DecodeRules kFabemuRules{WireMode::kFabemu, 47000, 47000};
const DecodeRules kRoceRules{WireMode::kRoceV2, 0, 0};

// The RFC 1071 sum (headers big-endian word by word, payloads of 64 bytes and more by little-endian
// words and a byte swap) against the definition, 16-bit big-endian words with end-around carry: every
// length 0..3000 at every start alignment 0..15, random bytes, all-0xFF and all-zero data.
TEST(OnesComplementSum, EqualsTheDefinitionAtEveryLengthAndAlignment) {
  std::mt19937 rng(1071);
  std::vector<uint8_t> buf(3000 + 16);
  const auto reference = [](const uint8_t* p, size_t n, uint32_t initial) {
    uint64_t s = initial;
    for (size_t i = 0; i + 1 < n; i += 2) s += uint32_t{p[i]} << 8 | p[i + 1];
    if (n % 2) s += uint32_t{p[n - 1]} << 8;
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return static_cast<uint16_t>(s);
  };
  // Every engine this CPU runs (the best one is what the process starts with), back to the best after.
  const SumEngine best = best_sum_engine();
  EXPECT_EQ(sum_engine(), best);
  int engines = 0;
  for (const SumEngine e : {SumEngine::kPortable, SumEngine::kSse2, SumEngine::kAvx2}) {
    if (!set_sum_engine(e)) continue;
    ++engines;
    for (const int fill : {-1, 0x00, 0xFF}) {
      for (uint8_t& b : buf) b = fill < 0 ? static_cast<uint8_t>(rng()) : static_cast<uint8_t>(fill);
      for (size_t n = 0; n <= 3000; n += (n < 200 ? 1 : 7)) {
        for (size_t off = 0; off < 16; off += (n < 200 ? 1 : 5)) {
          const uint32_t initial = n % 3 == 0 ? 0 : static_cast<uint32_t>(rng() & 0x3FFFF);
          ASSERT_EQ(ones_complement_sum({buf.data() + off, n}, initial), reference(buf.data() + off, n, initial))
              << "engine " << static_cast<int>(e) << " length " << n << " offset " << off << " fill " << fill
              << " initial " << initial;
        }
      }
    }
  }
  ASSERT_TRUE(set_sum_engine(best));
  EXPECT_GE(engines, 1);
  EXPECT_TRUE(set_sum_engine(SumEngine::kPortable) && set_sum_engine(best)) << "the portable engine runs everywhere";
#if defined(__x86_64__)
  EXPECT_GE(engines, 2) << "SSE2 is part of x86-64";
#endif
}

// Long spans: the AVX2 engine's accumulators are widened every 16384 iterations (1 MiB); all-ones data
// is the worst case for their 32-bit lanes.
TEST(OnesComplementSum, LongSpansOfOnesEveryEngine) {
  std::vector<uint8_t> ones((3u << 20) + 62, 0xFF);
  const SumEngine best = best_sum_engine();
  for (const SumEngine e : {SumEngine::kPortable, SumEngine::kSse2, SumEngine::kAvx2}) {
    if (!set_sum_engine(e)) continue;
    for (const size_t n : {size_t{1} << 20, (size_t{1} << 20) + 64, ones.size()}) {
      // Every 16-bit word is 0xFFFF, ones'-complement zero: the folded sum of any number of them is 0xFFFF.
      EXPECT_EQ(ones_complement_sum({ones.data(), n}), 0xFFFF) << "engine " << static_cast<int>(e) << " length " << n;
    }
    std::vector<uint8_t> ramp(ones.size());
    for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<uint8_t>(i * 131 + (i >> 16));
    uint64_t want = 0;
    for (size_t i = 0; i + 1 < ramp.size(); i += 2) want += uint32_t{ramp[i]} << 8 | ramp[i + 1];
    while (want >> 16) want = (want & 0xFFFF) + (want >> 16);
    EXPECT_EQ(ones_complement_sum(ramp), want) << "engine " << static_cast<int>(e);
  }
  ASSERT_TRUE(set_sum_engine(best));
}

// The header CRC by either engine is CRC-32 over the header's first 56 bytes, whatever they hold.
TEST(Crc32, FabemuHeaderCrcEveryEngine) {
  std::mt19937_64 rng(56);
  Bytes h(kFabemuHeaderBytes);
  for (int round = 0; round < 20000; ++round) {
    for (auto& b : h) b = static_cast<uint8_t>(round % 3 == 0 ? 0xFF : rng());
    if (round % 5 == 0) std::fill(h.begin(), h.end(), uint8_t{0});
    if (round % 7 == 0) h[static_cast<size_t>(rng() % 56)] ^= static_cast<uint8_t>(1u << (rng() % 8));
    const uint32_t want = crc32_update(0, {h.data(), 56});
    ASSERT_EQ(fabemu_header_crc(h.data(), CrcEngine::kTable), want) << "round " << round;
    ASSERT_EQ(fabemu_header_crc(h.data(), CrcEngine::kClmul), want) << "round " << round;
    ASSERT_EQ(fabemu_header_crc(h.data()), want) << "round " << round;
  }
  EXPECT_EQ(fabemu_header_crc(Bytes(56, 0).data()), 0xD3C8A549u) << "CRC-32 of 56 zero bytes (zlib)";
}

TEST(Crc32, KnownCheckValues) {
  const std::string s = "123456789";
  const Bytes b(s.begin(), s.end());
  EXPECT_EQ(crc32_update(0, b), 0xCBF43926u);
  EXPECT_EQ(ref_crc32(b), 0xCBF43926u);
  Bytes big(10007);
  std::mt19937_64 rng(7);
  for (auto& x : big) x = static_cast<uint8_t>(rng());
  EXPECT_EQ(crc32_update(0, big), ref_crc32(big));
  EXPECT_EQ(crc32_update(crc32_update(0, slice(big, 0, 5000)), slice(big, 5000, 5007)), ref_crc32(big));
}

// The folded CRC (kClmul, 64 bytes or more) against the byte tables and a bit-by-bit reference: every
// length from 0 to 300 and random ones up to 9 KiB, random contents and starting registers, misaligned
// starts; zlib's values for two 1 KiB-class buffers; and a frame's ICRC by both engines.
TEST(Crc32, FoldedEqualsTables) {
  if (best_crc_engine() != CrcEngine::kClmul) GTEST_SKIP() << "this CPU has no PCLMULQDQ: kTable only";
  std::mt19937_64 rng(64);
  Bytes buf(9300);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (int round = 0; round < 3000; ++round) {
    const size_t n = round <= 300 ? static_cast<size_t>(round) : rng() % 9200;
    const size_t at = rng() % 64;
    const auto crc = static_cast<uint32_t>(rng());
    const std::span<const uint8_t> d(buf.data() + at, n);
    const uint32_t table = crc32_update(crc, d, CrcEngine::kTable);
    ASSERT_EQ(crc32_update(crc, d, CrcEngine::kClmul), table) << "length " << n << ", offset " << at;
    if (round % 50 == 0) {
      ASSERT_EQ(table, ref_crc32(Bytes(d.begin(), d.end()), crc)) << "length " << n;
    }
  }
  Bytes ramp(1000);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<uint8_t>(i * 31 % 251);
  EXPECT_EQ(crc32_update(0, ramp, CrcEngine::kClmul), 0xB403841Fu) << "zlib.crc32";
  EXPECT_EQ(crc32_update(0, Bytes(1024, 0), CrcEngine::kClmul), 0xEFB5AF2Eu) << "zlib.crc32 of 1 KiB of zeros";
  // A RoCEv2 frame of 1 KiB: the ICRC by both engines, and the one its encoder wrote.
  FrameSpec spec = golden_spec(WireMode::kRoceV2);
  spec.payload_bytes = 1024;
  const Bytes f = encode_bytes(spec);
  const auto body = std::span<const uint8_t>(f).first(f.size() - kIcrcBytes);
  const uint32_t icrc = roce_icrc(body, CrcEngine::kTable);
  EXPECT_EQ(roce_icrc(body, CrcEngine::kClmul), icrc);
  EXPECT_EQ(uint32_t{f[f.size() - 4]} | uint32_t{f[f.size() - 3]} << 8 | uint32_t{f[f.size() - 2]} << 16 |
                uint32_t{f[f.size() - 1]} << 24,
            icrc);
}

TEST(Wire, GoldenFabemuFrame) {
  const Bytes f = encode_bytes(golden_spec(WireMode::kFabemu));
  ASSERT_EQ(f, from_hex(kGoldenFabemu));
  EXPECT_EQ(f.size(), 109u);
  EXPECT_EQ(f.size(), frame_bytes(WireMode::kFabemu, 7));
  EXPECT_TRUE(ip_ok(f));
  EXPECT_EQ(be16(f, 24), 0x9c30);
  EXPECT_EQ(be16(f, 40), ref_udp_checksum(f));
  EXPECT_EQ(be16(f, 40), 0xcc58);
  // Header CRC over bytes 0..55 of the fabemu header (frame offset 42).
  const uint32_t hcrc = uint32_t{be16(f, 98)} << 16 | be16(f, 100);
  EXPECT_EQ(hcrc, ref_crc32(slice(f, 42, 56)));
  DecodedFrame d;
  ASSERT_EQ(decode(f, kFabemuRules, d), Verdict::kOurs);
  EXPECT_EQ(d.hdr, golden_spec(WireMode::kFabemu).hdr);
  EXPECT_EQ(d.payload_bytes, 7u);
}

TEST(Wire, GoldenRoceV2Frame) {
  const Bytes f = encode_bytes(golden_spec(WireMode::kRoceV2));
  ASSERT_EQ(f, from_hex(kGoldenRoce));
  EXPECT_EQ(f.size(), 126u);
  EXPECT_EQ(be16(f, 36), 4791);
  EXPECT_EQ(f[42], kRcSendMiddle);
  EXPECT_EQ(f[43], 0x50);  // M, pad count 1 (7 payload bytes + 1), TVer 0
  EXPECT_TRUE(ip_ok(f));
  EXPECT_EQ(be16(f, 40), ref_udp_checksum(f));
  const uint32_t icrc = f[122] | f[123] << 8 | f[124] << 16 | uint32_t{f[125]} << 24;
  EXPECT_EQ(icrc, ref_icrc(f));
  EXPECT_EQ(icrc, 0x4459a77bu);
  EXPECT_EQ(roce_icrc(std::span<const uint8_t>(f).first(f.size() - 4)), icrc);
  DecodedFrame d;
  ASSERT_EQ(decode(f, kRoceRules, d), Verdict::kOurs);
  EXPECT_EQ(d.bth, golden_spec(WireMode::kRoceV2).bth);
  EXPECT_EQ(d.pad_count, 1);
  EXPECT_EQ(d.payload_bytes, 7u);
}

// A RoCEv2 CNP captured on a ConnectX-4 Lx (published with scapy's RoCE tests, test/contrib/roce.uts):
// the ICRC the NIC computed must be the one roce_icrc() computes. The frame is RDMA but not ours.
TEST(Wire, IcrcMatchesAConnectX4Capture) {
  const Bytes f = from_hex(
      "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a00"
      "1201000012b7002800008100ffff400001180000000000000000000000000000"
      "00000000000082fd002a");
  ASSERT_EQ(f.size(), 74u);
  EXPECT_EQ(roce_icrc(std::span<const uint8_t>(f).first(70)), 0x2a00fd82u);  // bytes 82 fd 00 2a
  EXPECT_EQ(ref_icrc(f), 0x2a00fd82u);
  DecodedFrame d;
  EXPECT_EQ(decode(f, kRoceRules, d), Verdict::kBadBth);  // opcode 0x81 (CNP) is not one we send
}

TEST(Wire, SizesAndMtu) {
  EXPECT_EQ(max_payload_for_mtu(WireMode::kFabemu, 1500), 1412u);
  EXPECT_EQ(max_payload_for_mtu(WireMode::kRoceV2, 1500), 1396u);
  EXPECT_EQ(max_payload_for_mtu(WireMode::kFabemu, 80), 0u);
  EXPECT_EQ(frame_bytes(WireMode::kFabemu, 1412), 1514u);
  EXPECT_EQ(frame_bytes(WireMode::kRoceV2, 1396), 1514u);
  EXPECT_EQ(frame_bytes(WireMode::kFabemu, 0), 102u);
  FrameSpec s = golden_spec(WireMode::kFabemu);
  Bytes small(108);
  EXPECT_EQ(encode(s, small), 0u);  // one byte short
  s.payload_bytes = 65535;
  Bytes huge(70000);
  EXPECT_EQ(encode(s, huge), 0u);  // IP datagram > 65535
  s.payload_bytes = static_cast<uint32_t>(max_payload_for_mtu(WireMode::kFabemu, 65535));
  EXPECT_EQ(encode(s, huge), 65535u + 14);
}

TEST(Wire, RoceOpcodes) {
  EXPECT_EQ(rc_send_opcode(0, 1), kRcSendOnly);
  EXPECT_EQ(rc_send_opcode(0, 3), kRcSendFirst);
  EXPECT_EQ(rc_send_opcode(1, 3), kRcSendMiddle);
  EXPECT_EQ(rc_send_opcode(2, 3), kRcSendLast);
  EXPECT_GE(flow_source_port(1), 0xC000);
  EXPECT_NE(flow_source_port(1), flow_source_port(2));
}

TEST(Wire, RandomRoundTrip) {
  std::mt19937_64 rng(12345);
  Bytes buf(9200);  // the largest frame: a RoCEv2 one of 9000 payload bytes, 9118 bytes
  std::vector<uint32_t> missing;
  for (int i = 0; i < 4000; ++i) {
    FrameSpec s;
    s.mode = (i & 1) ? WireMode::kRoceV2 : WireMode::kFabemu;
    for (auto& b : s.src.mac) b = static_cast<uint8_t>(rng());
    for (auto& b : s.dst.mac) b = static_cast<uint8_t>(rng());
    s.src.ip = static_cast<uint32_t>(rng());
    s.dst.ip = static_cast<uint32_t>(rng());
    s.src.port = static_cast<uint16_t>(rng());
    s.dst.port = s.mode == WireMode::kRoceV2 ? kRoceV2Port : static_cast<uint16_t>(47000 + rng() % 8);
    s.ip_id = static_cast<uint16_t>(rng());
    s.dscp = static_cast<uint8_t>(rng() & 0x3F);
    s.ecn = static_cast<Ecn>(rng() & 3);  // CE too: what decode reads of a frame a switch marked
    const int kind = static_cast<int>(rng() % 3);
    s.hdr.kind = kind == 0 ? PacketKind::kData : kind == 1 ? PacketKind::kAck : PacketKind::kNack;
    s.hdr.flags = static_cast<uint16_t>(rng());
    s.hdr.src_rank = static_cast<uint32_t>(rng());
    s.hdr.dst_rank = static_cast<uint32_t>(rng());
    s.hdr.message_id = rng();
    s.hdr.count = static_cast<uint32_t>(rng() % 100000) + 1;
    s.hdr.seq = static_cast<uint32_t>(rng() % s.hdr.count);
    s.hdr.tx_time_ps = rng();
    s.payload_bytes = 0;
    missing.clear();
    if (s.hdr.kind == PacketKind::kData) {
      s.payload_bytes = static_cast<uint32_t>(rng() % 9001);
      s.hdr.message_length = s.payload_bytes + rng() % (uint64_t{1} << 40);
      s.hdr.offset = rng() % (s.hdr.message_length - s.payload_bytes + 1);
    } else {
      s.hdr.message_length = rng();
      s.hdr.offset = rng() % (s.hdr.count + 1);
      if (s.hdr.kind == PacketKind::kNack) missing.resize(rng() % 300);
      for (auto& m : missing) m = static_cast<uint32_t>(rng());
    }
    s.missing = missing;
    s.bth = Bth{rc_send_opcode(s.hdr.seq, s.hdr.count), (rng() & 1) != 0, (rng() & 1) != 0, 0,
                static_cast<uint16_t>(rng()), static_cast<uint32_t>(rng() & 0xFFFFFF), (rng() & 1) != 0,
                static_cast<uint32_t>(rng() & 0xFFFFFF)};
    const size_t n = encode(s, buf);
    const size_t payload = s.hdr.kind == PacketKind::kNack ? missing.size() * 4 : s.payload_bytes;
    ASSERT_EQ(n, frame_bytes(s.mode, payload)) << "iteration " << i;
    const Bytes f(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n));
    ASSERT_TRUE(ip_ok(f));
    ASSERT_EQ(be16(f, 40), ref_udp_checksum(f)) << "iteration " << i;
    if (s.mode == WireMode::kRoceV2) {
      ASSERT_EQ(f[n - 4] | f[n - 3] << 8 | f[n - 2] << 16 | uint32_t{f[n - 1]} << 24, ref_icrc(f)) << "iteration " << i;
    }
    DecodedFrame d;
    const DecodeRules rules = s.mode == WireMode::kRoceV2 ? kRoceRules : DecodeRules{WireMode::kFabemu, 47000, 47007};
    ASSERT_EQ(decode(f, rules, d), Verdict::kOurs) << "iteration " << i;
    EXPECT_EQ(d.src, s.src);
    EXPECT_EQ(d.dst, s.dst);
    EXPECT_EQ(d.ip_id, s.ip_id);
    EXPECT_EQ(d.dscp, s.dscp);
    EXPECT_EQ(d.ecn, s.ecn);
    EXPECT_EQ(f[15], tos_byte(s.dscp, s.ecn));
    EXPECT_EQ(d.hdr, s.hdr);
    EXPECT_EQ(d.payload_bytes, payload);
    if (s.mode == WireMode::kRoceV2) {
      EXPECT_EQ(d.bth, s.bth);
    }
    ASSERT_EQ(d.missing_count(), missing.size());
    for (size_t k = 0; k < missing.size(); ++k) ASSERT_EQ(d.missing(k), missing[k]);
    // decode writes every field of its output (receive_round reuses one DecodedFrame for a whole round):
    // into one that holds another frame's junk it gives the same.
    static_assert(std::is_trivially_copyable_v<DecodedFrame>);
    DecodedFrame j;
    std::array<uint8_t, sizeof(DecodedFrame)> junk;
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    std::memcpy(static_cast<void*>(&j), junk.data(), sizeof j);
    ASSERT_EQ(decode(f, rules, j), Verdict::kOurs) << "iteration " << i;
    const auto fields = [](const DecodedFrame& x) {
      return std::tuple(x.src, x.dst, x.ip_id, x.dscp, x.ecn, x.hdr, x.bth, x.pad_count, x.payload_bytes,
                        x.payload.data(), x.payload.size());
    };
    EXPECT_TRUE(fields(j) == fields(d)) << "iteration " << i;
  }
}

// --- per-flow templates: every frame byte for byte the one encode(spec) writes ---

TEST(FrameTemplate, GoldenFramesFromTemplates) {
  for (const WireMode mode : {WireMode::kFabemu, WireMode::kRoceV2}) {
    const FrameSpec s = golden_spec(mode);
    FrameTemplate t(s);
    EXPECT_TRUE(t.matches(s));
    EXPECT_EQ(t.mode(), mode);
    Bytes buf(200);
    const size_t n = encode(t, s, buf);
    buf.resize(n);
    EXPECT_EQ(buf, from_hex(mode == WireMode::kFabemu ? kGoldenFabemu : kGoldenRoce));
  }
}

// FlowTemplates: every flow its own template up to 256 ranks; beyond, flows that share a slot of the
// 16,384 take turns, the template rebuilt for each, and every frame equals encode(spec) whole either way.
TEST(FlowTemplates, FlowsSharingASlotTakeTurnsAndFramesStayExact) {
  for (const WireMode mode : {WireMode::kFabemu, WireMode::kRoceV2}) {
    SCOPED_TRACE(mode == WireMode::kFabemu ? "fabemu" : "roce");
    const auto frame_of = [mode](uint32_t src, uint32_t dst, uint64_t id) {
      FrameSpec s;
      s.mode = mode;
      s.src = default_endpoint(src);
      s.dst = default_endpoint(dst);
      s.hdr.src_rank = src;
      s.hdr.dst_rank = dst;
      s.hdr.message_id = id;
      s.hdr.count = 4;
      s.hdr.seq = static_cast<uint32_t>(id % 4);
      s.hdr.offset = s.hdr.seq * 256;
      s.hdr.message_length = 1024;
      s.payload_bytes = 256;
      s.ip_id = static_cast<uint16_t>(id);
      return s;
    };
    const auto expect_exact = [](FlowTemplates& ft, const FrameSpec& s) {
      std::vector<uint8_t> a(2048), b(2048);
      const size_t na = encode(ft.of(s), s, a), nb = encode(s, b);
      ASSERT_GT(nb, 0u);
      ASSERT_EQ(na, nb);
      EXPECT_EQ(std::memcmp(a.data(), b.data(), na), 0) << "flow " << s.hdr.src_rank << " -> " << s.hdr.dst_rank;
    };
    FlowTemplates dense(256);
    EXPECT_EQ(dense.slots(), 65536u);
    for (uint32_t i = 0; i < 2000; ++i) expect_exact(dense, frame_of(i % 256, (i * 7 + 1) % 256, i));
    EXPECT_EQ(dense.rebuilds(), 0u);

    FlowTemplates cached(512);
    EXPECT_EQ(cached.slots(), FlowTemplates::kCachedFlows);
    // (0 -> 1) and (32 -> 1): keys 1 and 16,385, the same slot; (1 -> 2) another slot.
    for (uint64_t id = 0; id < 12; ++id) {
      expect_exact(cached, frame_of(0, 1, id));
      expect_exact(cached, frame_of(32, 1, id));
      expect_exact(cached, frame_of(1, 2, id));
    }
    EXPECT_EQ(cached.rebuilds(), 23u);  // every turn of the shared slot but the first
    EXPECT_EQ(cached.made(), 2u);
    // Every flow of 512 ranks: never more templates than slots.
    for (uint32_t src = 0; src < 512; ++src) {
      for (uint32_t dst = 0; dst < 512; ++dst) expect_exact(cached, frame_of(src, dst, src + dst));
    }
    EXPECT_EQ(cached.made(), FlowTemplates::kCachedFlows);
  }
}

TEST(FrameTemplate, MatchesOnlyItsFlow) {
  const FrameSpec s = golden_spec(WireMode::kFabemu);
  const FrameTemplate t(s);
  FrameSpec o = s;
  o.hdr.seq = 9;  // per-frame fields do not matter
  o.ip_id = 1;
  o.payload_bytes = 1000;
  EXPECT_TRUE(t.matches(o));
  // Every bit of either MAC (mac_equal compares them as a 4- and a 2-byte word).
  for (size_t byte = 0; byte < 6; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      o = s;
      o.src.mac[byte] ^= static_cast<uint8_t>(1 << bit);
      EXPECT_FALSE(t.matches(o)) << "src byte " << byte << " bit " << bit;
      EXPECT_FALSE(o.src == s.src);
      o = s;
      o.dst.mac[byte] ^= static_cast<uint8_t>(1 << bit);
      EXPECT_FALSE(t.matches(o)) << "dst byte " << byte << " bit " << bit;
      EXPECT_FALSE(o.dst == s.dst);
    }
  }
  o = s;
  EXPECT_TRUE(o.src == s.src && o.dst == s.dst);
  o = s;
  o.dst.ip ^= 1;
  EXPECT_FALSE(t.matches(o));
  o = s;
  o.src.port ^= 1;
  EXPECT_FALSE(t.matches(o));
  o = s;
  o.dst.port ^= 1;
  EXPECT_FALSE(t.matches(o));
  o = s;
  o.dscp = 5;
  EXPECT_FALSE(t.matches(o));
  o = s;
  o.ecn = Ecn::kEct0;  // another TOS byte: another flow
  EXPECT_FALSE(t.matches(o));
  const FrameTemplate te(o);
  EXPECT_TRUE(te.matches(o));
  EXPECT_FALSE(te.matches(s));
  o = s;
  o.mode = WireMode::kRoceV2;
  EXPECT_FALSE(t.matches(o));
  const FrameSpec r = golden_spec(WireMode::kRoceV2);
  const FrameTemplate tr(r);
  o = r;
  o.dst.port = 1234;  // RoCEv2 always sends to 4791
  EXPECT_TRUE(tr.matches(o));
}

TEST(FrameTemplate, SizeLimitsAsEncode) {
  FrameSpec s = golden_spec(WireMode::kFabemu);
  FrameTemplate t(s);
  Bytes small(108);
  EXPECT_EQ(encode(t, s, small), 0u);  // one byte short
  Bytes huge(70000);
  s.payload_bytes = 65535;
  EXPECT_EQ(encode(t, s, huge), 0u);  // IP datagram > 65535
  s.payload_bytes = static_cast<uint32_t>(max_payload_for_mtu(WireMode::kFabemu, 65535));
  ASSERT_EQ(encode(t, s, huge), 65535u + 14);
  EXPECT_EQ(Bytes(huge.begin(), huge.begin() + 65549), encode_bytes(s));
}

// The CRC engines a test runs encode(FrameTemplate&) with: the portable one always, PCLMULQDQ where the
// CPU has it.
std::vector<CrcEngine> engines() {
  std::vector<CrcEngine> e{CrcEngine::kTable};
  if (best_crc_engine() == CrcEngine::kClmul) e.push_back(CrcEngine::kClmul);
  return e;
}
const char* engine_name(CrcEngine e) { return e == CrcEngine::kClmul ? "clmul" : "table"; }

// Random flows, each sending messages of several packets (the header-CRC and zero-run caches hit, miss
// and are invalidated by every field they depend on), interleaved with ACKs, NACKs and retransmissions.
void random_specs_same_bytes_as_encode(CrcEngine engine) {
  SCOPED_TRACE(engine_name(engine));
  std::mt19937_64 rng(4242);
  Bytes want(9200), got(9200);
  std::vector<uint32_t> missing;
  uint64_t frames = 0;
  for (int flow = 0; flow < 120; ++flow) {
    FrameSpec s;
    s.mode = (flow & 1) ? WireMode::kRoceV2 : WireMode::kFabemu;
    for (auto& b : s.src.mac) b = static_cast<uint8_t>(rng());
    for (auto& b : s.dst.mac) b = static_cast<uint8_t>(rng());
    s.src.ip = static_cast<uint32_t>(rng());
    s.dst.ip = static_cast<uint32_t>(rng());
    s.src.port = static_cast<uint16_t>(rng());
    s.dst.port = static_cast<uint16_t>(rng());
    s.dscp = static_cast<uint8_t>(rng());  // bits above 6 are dropped by both
    s.ecn = static_cast<Ecn>(rng() & 3);
    FrameTemplate t(s);
    ASSERT_TRUE(t.matches(s));
    ASSERT_TRUE(t.set_crc_engine(engine));
    const uint32_t per_packet = static_cast<uint32_t>(rng() % 2) == 0 ? 1024 : static_cast<uint32_t>(rng() % 9001);
    for (int msg = 0; msg < 6; ++msg) {
      if (msg % 2 == 0) s.hdr.src_rank = static_cast<uint32_t>(rng() % 4);
      if (msg % 2 == 0) s.hdr.dst_rank = static_cast<uint32_t>(rng() % 4);
      s.hdr.message_id = rng() % 3 == 0 ? rng() : static_cast<uint64_t>(msg);
      // Every other message has its predecessor's size (and ranks): the header-CRC cache hits across ids.
      if (msg % 2 == 0) s.hdr.message_length = rng() % (uint64_t{per_packet} * 12 + 1);
      s.hdr.count = static_cast<uint32_t>(std::max<uint64_t>(1, (s.hdr.message_length + per_packet - 1) / per_packet));
      for (uint32_t k = 0; k < s.hdr.count + 2; ++k) {
        const int what = static_cast<int>(rng() % 10);
        s.hdr.kind = what == 0 ? PacketKind::kAck : what == 1 ? PacketKind::kNack : PacketKind::kData;
        s.hdr.flags = what == 2 ? kFlagRetransmit : static_cast<uint16_t>(rng() % 16 == 0 ? rng() : 0);
        s.hdr.seq = k < s.hdr.count ? k : static_cast<uint32_t>(rng() % s.hdr.count);
        s.hdr.offset = uint64_t{s.hdr.seq} * per_packet;
        const uint64_t left = s.hdr.message_length - std::min(s.hdr.offset, s.hdr.message_length);
        s.payload_bytes = static_cast<uint32_t>(std::min<uint64_t>(per_packet, left));
        if (rng() % 8 == 0) s.payload_bytes = static_cast<uint32_t>(rng() % 9001);  // any size
        // Mostly close to the previous stamp (the cache's high half hits), sometimes anywhere.
        s.hdr.tx_time_ps = rng() % 4 == 0 ? rng() : s.hdr.tx_time_ps + rng() % 100000;
        s.ip_id = static_cast<uint16_t>(rng());
        missing.clear();
        if (s.hdr.kind == PacketKind::kNack) missing.resize(rng() % 40);
        for (auto& m : missing) m = static_cast<uint32_t>(rng());
        s.missing = missing;
        // P_Key and QP mostly the flow's (the ICRC cache hits), sometimes another.
        const bool other_qp = rng() % 8 == 0;
        s.bth = Bth{rc_send_opcode(s.hdr.seq, s.hdr.count), (rng() & 1) != 0, (rng() & 1) != 0,
                    static_cast<uint8_t>(rng() % 4 == 0 ? rng() : 0),
                    other_qp ? static_cast<uint16_t>(rng()) : kDefaultPkey,
                    other_qp ? static_cast<uint32_t>(rng()) : s.hdr.dst_rank + 1, (rng() & 1) != 0,
                    static_cast<uint32_t>(rng())};
        std::fill(got.begin(), got.end(), 0xA5);  // no byte may be left from an earlier frame
        const size_t n = encode(s, want);
        const size_t m = encode(t, s, got);
        ASSERT_EQ(m, n) << "flow " << flow << " message " << msg << " packet " << k;
        ASSERT_TRUE(std::equal(want.begin(), want.begin() + static_cast<ptrdiff_t>(n), got.begin()))
            << "flow " << flow << " message " << msg << " packet " << k;
        // Valid on its own too: reference checksums and CRCs, and decode.
        const Bytes f(got.begin(), got.begin() + static_cast<ptrdiff_t>(n));
        ASSERT_TRUE(ip_ok(f));
        ASSERT_EQ(be16(f, 40), ref_udp_checksum(f));
        const size_t h = s.mode == WireMode::kRoceV2 ? 54 : 42;
        ASSERT_EQ(uint32_t{be16(f, h + 56)} << 16 | be16(f, h + 58), ref_crc32(slice(f, h, 56)));
        if (s.mode == WireMode::kRoceV2) {
          ASSERT_EQ(f[n - 4] | f[n - 3] << 8 | f[n - 2] << 16 | uint32_t{f[n - 1]} << 24, ref_icrc(f));
        }
        if (s.hdr.kind == PacketKind::kData && s.hdr.flags == 0) {
          DecodedFrame d;
          const DecodeRules rules =
              s.mode == WireMode::kRoceV2 ? kRoceRules : DecodeRules{WireMode::kFabemu, s.dst.port, s.dst.port};
          const Verdict v = decode(f, rules, d);
          // Random payload sizes may break the message's own consistency (kBadFields); never a checksum.
          ASSERT_TRUE(v == Verdict::kOurs || v == Verdict::kBadFields || v == Verdict::kBadBth) << to_string(v);
        }
        ++frames;
      }
    }
  }
  EXPECT_GT(frames, 2000u);
}

TEST(FrameTemplate, RandomSpecsSameBytesAsEncode) {
  for (const CrcEngine e : engines()) random_specs_same_bytes_as_encode(e);
}

// encode_run against encode(spec) frame by frame: random flows and messages, runs of any length at any
// place in a message (with and without its shorter last packet), IP ids across the 16-bit wrap, offsets
// across 2^32 (the run falls back to frame by frame), both modes, both engines, and payloads written or
// vouched for as zero (payload_zero, frames pre-zeroed). The frames between runs of other kinds keep the
// template's caches honest.
// The engines for encode_run: each of engines() frame by frame, and kClmul once more at each batch width
// the CPU runs (its CRCs two frames at a time with AVX2 and VPCLMULQDQ, four with AVX-512).
struct RunEngine {
  CrcEngine engine;
  unsigned lanes;
};
std::vector<RunEngine> run_engines() {
  std::vector<RunEngine> e;
  for (const CrcEngine c : engines()) e.push_back({c, 0});
  for (const unsigned lanes : {2u, 4u}) {
    if (run_crc_batch_runs(lanes)) e.push_back({CrcEngine::kClmul, lanes});
  }
  return e;
}

TEST(FrameTemplate, RunCrcBatchIsTheWidestTheCpuRuns) {
  const unsigned widest = run_crc_batch_widest();
  EXPECT_TRUE(widest == 0 || widest == 2 || widest == 4) << widest;
  EXPECT_EQ(run_crc_batch(), widest);
  EXPECT_TRUE(run_crc_batch_runs(0));
  EXPECT_FALSE(run_crc_batch_runs(1));
  EXPECT_FALSE(run_crc_batch_runs(3));
  EXPECT_FALSE(run_crc_batch_runs(8));
  EXPECT_EQ(run_crc_batch_runs(2), widest >= 2);
  EXPECT_EQ(run_crc_batch_runs(4), widest == 4);
  EXPECT_EQ(set_run_crc_batch(0), 0u);
  EXPECT_EQ(set_run_crc_batch(3), 0u);  // not a width: unchanged
  EXPECT_EQ(set_run_crc_batch(2), widest >= 2 ? 2u : 0u);
  EXPECT_EQ(set_run_crc_batch(widest), widest);
  if (widest == 0) GTEST_SKIP() << "this CPU has no VPCLMULQDQ (with AVX2 or AVX-512): runs' CRCs frame by frame only";
}

TEST(FrameTemplate, RunsSameBytesAsEncodeFrameByFrame) {
  constexpr size_t kRoom = 9200;
  const unsigned batch_before = run_crc_batch();
  for (const auto [engine, lanes] : run_engines()) {
    SCOPED_TRACE(std::string(engine_name(engine)) + (lanes != 0 ? ", " + std::to_string(lanes) + " frames at a time" : ""));
    ASSERT_EQ(set_run_crc_batch(lanes), lanes);
    std::mt19937_64 rng(9191);
    std::vector<Bytes> bufs(40, Bytes(kRoom));
    std::vector<uint8_t*> frames;
    for (Bytes& b : bufs) frames.push_back(b.data());
    std::vector<uint16_t> lens(40);
    Bytes want(kRoom), other(kRoom);
    uint64_t checked = 0, fallback_runs = 0, wrapped_runs = 0;
    for (int flow = 0; flow < 60; ++flow) {
      FrameSpec s;
      s.mode = (flow & 1) ? WireMode::kRoceV2 : WireMode::kFabemu;
      s.src.mac[5] = static_cast<uint8_t>(flow);
      s.src.ip = static_cast<uint32_t>(rng());
      s.dst.ip = static_cast<uint32_t>(rng());
      s.src.port = static_cast<uint16_t>(rng());
      s.dst.port = static_cast<uint16_t>(rng());
      s.bth.dest_qp = static_cast<uint32_t>(rng() % 100);
      s.bth.solicited = (rng() & 1) != 0;
      FrameTemplate t(s);
      ASSERT_TRUE(t.set_crc_engine(engine));
      for (int msg = 0; msg < 8; ++msg) {
        const bool huge = rng() % 4 == 0;  // beyond 4 GiB: the run crosses an offset's high half
        // Huge messages of 256-byte packets cross 4 GiB at seq 2^24, where the RoCEv2 PSN (seq mod 2^24)
        // wraps too.
        const uint32_t stride = huge ? (rng() % 2 == 0 ? 9000 : 256)
                                     : rng() % 2 == 0 ? 1024 : static_cast<uint32_t>(rng() % 9001);
        s.hdr = FabemuHeader{};
        s.hdr.src_rank = static_cast<uint32_t>(rng() % 8);
        s.hdr.dst_rank = static_cast<uint32_t>(rng() % 8);
        s.hdr.message_id = rng() % 2 == 0 ? rng() : static_cast<uint64_t>(msg);
        s.hdr.message_length = huge ? (uint64_t{1} << 32) + rng() % 1000000 : rng() % (uint64_t{stride} * 80 + 1);
        s.hdr.count = static_cast<uint32_t>(
            std::max<uint64_t>(1, (s.hdr.message_length + std::max(stride, 1u) - 1) / std::max(stride, 1u)));
        if (stride == 0) s.hdr.message_length = 0;
        s.hdr.tx_time_ps = rng();
        s.hdr.flags = rng() % 4 == 0 ? kFlagRetransmit : uint16_t{0};
        s.bth.pkey = rng() % 8 == 0 ? static_cast<uint16_t>(rng()) : kDefaultPkey;
        // Runs: near the high-half crossing for huge messages, else from the start, the middle and the end.
        const uint32_t cross = static_cast<uint32_t>(((uint64_t{1} << 32) + stride - 1) / std::max(stride, 1u));
        for (int r = 0; r < 4; ++r) {
          uint32_t seq = huge ? cross - 20 + static_cast<uint32_t>(rng() % 40)  // across it, before and after
                              : static_cast<uint32_t>(rng() % s.hdr.count);
          if (r == 0 && !huge) seq = 0;
          const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(1 + rng() % 40, s.hdr.count - seq));
          s.hdr.seq = seq;
          s.hdr.offset = uint64_t{seq} * stride;
          s.payload_bytes = stride;
          const bool ends = seq + n == s.hdr.count;
          const uint64_t last_off = uint64_t{seq + n - 1} * stride;
          const uint32_t last = ends ? static_cast<uint32_t>(std::min<uint64_t>(stride, s.hdr.message_length - last_off))
                                     : stride;
          s.ip_id = static_cast<uint16_t>(rng() % 3 == 0 ? 0xFFF0 + rng() % 16 : rng());
          s.bth.opcode = static_cast<uint8_t>(rng());  // ignored by encode_run: it derives them from seq
          s.bth.psn = static_cast<uint32_t>(rng());
          s.bth.ack_req = (rng() & 1) != 0;
          const bool zero = rng() % 2 == 0;
          for (uint32_t i = 0; i < n; ++i) std::fill(bufs[i].begin(), bufs[i].end(), zero ? 0 : 0xA5);
          fallback_runs += (last_off >> 32) != (s.hdr.offset >> 32);
          // RoCEv2 runs written from a run image with the PSN wrapped (seq >= 2^24).
          wrapped_runs += s.mode == WireMode::kRoceV2 && n > 2 && seq >= (1u << 24) && (last_off >> 32) == (s.hdr.offset >> 32);
          ASSERT_TRUE(encode_run(t, s, n, last, frames.data(), kRoom, lens.data(), zero));
          for (uint32_t i = 0; i < n; ++i) {
            FrameSpec e = s;
            e.hdr.seq = seq + i;
            e.hdr.offset = uint64_t{seq + i} * stride;
            e.ip_id = static_cast<uint16_t>(s.ip_id + i);
            e.payload_bytes = i + 1 == n ? last : stride;
            e.bth.opcode = rc_send_opcode(e.hdr.seq, e.hdr.count);
            e.bth.psn = e.hdr.seq & 0xFFFFFF;
            e.bth.ack_req = e.hdr.seq + 1 == e.hdr.count;
            const size_t len = encode(e, want);
            ASSERT_EQ(lens[i], len) << "flow " << flow << " message " << msg << " run " << r << " frame " << i;
            ASSERT_TRUE(std::equal(want.begin(), want.begin() + static_cast<ptrdiff_t>(len), bufs[i].begin()))
                << "flow " << flow << " message " << msg << " run " << r << " frame " << i;
            ++checked;
          }
          // A frame of another kind between runs (the key changes and must come back).
          FrameSpec ack = s;
          ack.hdr.kind = PacketKind::kAck;
          const size_t len = encode(ack, want);
          ASSERT_EQ(encode(t, ack, other), len);
          ASSERT_TRUE(std::equal(want.begin(), want.begin() + static_cast<ptrdiff_t>(len), other.begin()));
        }
      }
    }
    EXPECT_GT(checked, 5000u);
    EXPECT_GT(fallback_runs, 10u);
    EXPECT_GT(wrapped_runs, 3u);
  }
  set_run_crc_batch(batch_before);
}

// A UDP checksum whose complement is 0 goes out as 0xFFFF (RFC 768): one frame in 65535, too rare for
// the random runs above to meet. Here runs of Middle packets are searched (frame by frame CRCs) until
// three of each mode hold such a frame, and every engine and batch width writes those runs as encode() does.
TEST(FrameTemplate, RunsSendAZeroUdpChecksumAsOnes) {
  constexpr uint32_t kN = 64;
  constexpr size_t kRoom = 2048;
  constexpr size_t kUdpSumAt = 14 + 20 + 6;
  const unsigned batch_before = run_crc_batch();
  std::vector<Bytes> bufs(kN, Bytes(kRoom));
  std::vector<uint8_t*> frames;
  for (Bytes& b : bufs) frames.push_back(b.data());
  std::vector<uint16_t> lens(kN);
  Bytes want(kRoom);
  for (const WireMode mode : {WireMode::kFabemu, WireMode::kRoceV2}) {
    SCOPED_TRACE(mode == WireMode::kRoceV2 ? "RoCEv2" : "fabemu");
    FrameSpec s;
    s.mode = mode;
    s.payload_bytes = 1024;
    s.hdr.src_rank = 3;
    s.hdr.dst_rank = 5;
    s.hdr.count = 1000;
    s.hdr.message_length = uint64_t{1000} * 1024;
    s.hdr.tx_time_ps = 123456789;
    s.hdr.seq = 1;
    s.hdr.offset = 1024;
    std::vector<FrameSpec> found;
    {
      ASSERT_EQ(set_run_crc_batch(0), 0u);
      FrameTemplate t(s);
      for (uint64_t id = 0; found.size() < 3 && id < 100000; ++id) {
        s.hdr.message_id = id;
        s.ip_id = static_cast<uint16_t>(id * 7919);
        ASSERT_TRUE(encode_run(t, s, kN, 1024, frames.data(), kRoom, lens.data(), true));
        for (uint32_t i = 0; i < kN; ++i) {
          if (bufs[i][kUdpSumAt] == 0xFF && bufs[i][kUdpSumAt + 1] == 0xFF) {
            found.push_back(s);
            break;
          }
        }
      }
    }
    ASSERT_EQ(found.size(), 3u) << "no run with a zero UDP checksum found";
    for (const auto [engine, lanes] : run_engines()) {
      SCOPED_TRACE(std::string(engine_name(engine)) + ", " + std::to_string(lanes) + " frames at a time");
      ASSERT_EQ(set_run_crc_batch(lanes), lanes);
      for (const FrameSpec& f : found) {
        FrameTemplate t(f);
        ASSERT_TRUE(t.set_crc_engine(engine));
        for (Bytes& b : bufs) std::fill(b.begin(), b.end(), 0);
        ASSERT_TRUE(encode_run(t, f, kN, 1024, frames.data(), kRoom, lens.data(), true));
        uint32_t ones = 0;
        for (uint32_t i = 0; i < kN; ++i) {
          FrameSpec e = f;
          e.hdr.seq = f.hdr.seq + i;
          e.hdr.offset = uint64_t{e.hdr.seq} * 1024;
          e.ip_id = static_cast<uint16_t>(f.ip_id + i);
          e.bth.opcode = rc_send_opcode(e.hdr.seq, e.hdr.count);
          e.bth.psn = e.hdr.seq;
          const size_t len = encode(e, want);
          ASSERT_EQ(lens[i], len) << "message " << f.hdr.message_id << " frame " << i;
          ASSERT_TRUE(std::equal(want.begin(), want.begin() + static_cast<ptrdiff_t>(len), bufs[i].begin()))
              << "message " << f.hdr.message_id << " frame " << i;
          ones += want[kUdpSumAt] == 0xFF && want[kUdpSumAt + 1] == 0xFF;
        }
        EXPECT_GE(ones, 1u) << "message " << f.hdr.message_id;
      }
    }
  }
  set_run_crc_batch(batch_before);
}

TEST(FrameTemplate, RunsRefuseWhatEncodeWouldNot) {
  FrameSpec s = golden_spec(WireMode::kFabemu);
  FrameTemplate t(s);
  Bytes buf(2048, 0xA5);
  uint8_t* frames[] = {buf.data()};
  uint16_t lens[1] = {7};
  s.hdr.kind = PacketKind::kData;
  s.payload_bytes = 1024;
  EXPECT_TRUE(encode_run(t, s, 0, 0, frames, buf.size(), lens));  // nothing to write
  EXPECT_EQ(lens[0], 7);
  EXPECT_FALSE(encode_run(t, s, 1, 1025, frames, buf.size(), lens));          // last longer than the others
  EXPECT_FALSE(encode_run(t, s, 1, 1024, frames, 1024 + 101, lens));          // 1 byte short of the frame
  EXPECT_TRUE(encode_run(t, s, 1, 1024, frames, 1024 + 102, lens));
  EXPECT_EQ(lens[0], 1024 + 102);
  s.payload_bytes = 65536;
  EXPECT_FALSE(encode_run(t, s, 1, 0, frames, 70000, lens));                  // beyond an IP datagram
  s.payload_bytes = 16;
  s.hdr.kind = PacketKind::kAck;
  EXPECT_FALSE(encode_run(t, s, 1, 16, frames, buf.size(), lens));            // data frames only
  EXPECT_TRUE(std::all_of(buf.begin() + 1126, buf.end(), [](uint8_t b) { return b == 0xA5; }));
}

TEST(FrameTemplate, CrcEngineChoice) {
  const FrameSpec s = golden_spec(WireMode::kRoceV2);
  FrameTemplate t(s);
  EXPECT_EQ(t.crc_engine(), best_crc_engine());
  EXPECT_EQ(FrameTemplate().crc_engine(), best_crc_engine());
  EXPECT_TRUE(t.set_crc_engine(CrcEngine::kTable));
  EXPECT_EQ(t.crc_engine(), CrcEngine::kTable);
  // kClmul only where the CPU runs it; else the template keeps the table engine.
  const bool clmul = best_crc_engine() == CrcEngine::kClmul;
  EXPECT_EQ(t.set_crc_engine(CrcEngine::kClmul), clmul);
  EXPECT_EQ(t.crc_engine(), clmul ? CrcEngine::kClmul : CrcEngine::kTable);
#if defined(__x86_64__) && defined(__linux__) && !defined(FABEMU_NO_CLMUL)
  // The choice agrees with the kernel's view of the CPU.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line) && line.rfind("flags", 0) != 0) {
  }
  ASSERT_EQ(line.rfind("flags", 0), 0u) << "no flags line in /proc/cpuinfo";
  const auto has = [&](const char* flag) {
    return (line + " ").find(std::string(" ") + flag + " ") != std::string::npos;
  };
  EXPECT_EQ(clmul, has("pclmulqdq") && has("sse4_1"));
#else
  EXPECT_FALSE(clmul);  // the carry-less engine is built for x86-64 only (and not with FABEMU_NO_CLMUL)
#endif
}

// The two engines against each other and against encode(spec), frame by frame: random values over the
// full range of every per-packet field (both halves of id, offset and time, seq, IP id, BTH bits and PSN),
// payload lengths around the zero-run tables' boundaries (256 and 2048 bytes) and up to the largest
// datagram, both modes, every kind. One template per engine, fed the same sequence (their caches hit and
// miss alike).
TEST(FrameTemplate, ClmulAndTableEnginesGiveTheSameFrames) {
  if (best_crc_engine() != CrcEngine::kClmul) GTEST_SKIP() << "this CPU has no PCLMULQDQ: table engine only";
  std::mt19937_64 rng(777);
  Bytes want(70000), table(70000), clmul(70000);
  std::vector<uint32_t> missing;
  const uint32_t sizes[] = {0, 1, 2, 3, 4, 5, 255, 256, 257, 1024, 2047, 2048, 2049, 4096, 8999, 65431};
  const uint32_t max_roce = static_cast<uint32_t>(max_payload_for_mtu(WireMode::kRoceV2, 65535));
  ASSERT_EQ(max_roce, 65428u);
  for (const WireMode mode : {WireMode::kFabemu, WireMode::kRoceV2}) {
    FrameSpec s = golden_spec(mode);
    FrameTemplate tt(s), tc(s);
    ASSERT_TRUE(tt.set_crc_engine(CrcEngine::kTable));
    ASSERT_TRUE(tc.set_crc_engine(CrcEngine::kClmul));
    for (int i = 0; i < 6000; ++i) {
      SCOPED_TRACE(testing::Message() << (mode == WireMode::kRoceV2 ? "roce" : "fabemu") << " frame " << i);
      if (i % 16 == 0) {  // a new message size and ranks now and then (the key caches miss)
        s.hdr.count = static_cast<uint32_t>(rng());
        s.hdr.message_length = rng();
        s.hdr.src_rank = static_cast<uint32_t>(rng());
        s.hdr.dst_rank = static_cast<uint32_t>(rng());
      }
      s.hdr.message_id = rng();
      s.hdr.seq = static_cast<uint32_t>(rng());
      s.hdr.offset = rng();
      s.hdr.tx_time_ps = rng();
      s.ip_id = static_cast<uint16_t>(rng());
      const int what = static_cast<int>(rng() % 8);
      s.hdr.kind = what == 0 ? PacketKind::kAck : what == 1 ? PacketKind::kNack : PacketKind::kData;
      s.payload_bytes = rng() % 2 == 0 ? sizes[rng() % std::size(sizes)] : static_cast<uint32_t>(rng() % 9001);
      if (mode == WireMode::kRoceV2) s.payload_bytes = std::min(s.payload_bytes, max_roce);
      missing.resize(rng() % 300);
      for (auto& m : missing) m = static_cast<uint32_t>(rng());
      s.missing = missing;
      s.bth = Bth{static_cast<uint8_t>(rng()), (rng() & 1) != 0, (rng() & 1) != 0, static_cast<uint8_t>(rng()),
                  static_cast<uint16_t>(rng() % 4 == 0 ? rng() : kDefaultPkey),
                  static_cast<uint32_t>(rng() % 4 == 0 ? rng() : 5), (rng() & 1) != 0, static_cast<uint32_t>(rng())};
      const size_t n = encode(s, want);
      ASSERT_GT(n, 0u);
      ASSERT_EQ(encode(tt, s, table), n);
      ASSERT_EQ(encode(tc, s, clmul), n);
      ASSERT_TRUE(std::equal(want.begin(), want.begin() + static_cast<ptrdiff_t>(n), table.begin()));
      ASSERT_TRUE(std::equal(want.begin(), want.begin() + static_cast<ptrdiff_t>(n), clmul.begin()));
      if (i % 64 == 0) {  // and by the naive reference routines
        const Bytes f(clmul.begin(), clmul.begin() + static_cast<ptrdiff_t>(n));
        const size_t h = mode == WireMode::kRoceV2 ? 54 : 42;
        ASSERT_EQ(uint32_t{be16(f, h + 56)} << 16 | be16(f, h + 58), ref_crc32(slice(f, h, 56)));
        if (mode == WireMode::kRoceV2) {
          ASSERT_EQ(f[n - 4] | f[n - 3] << 8 | f[n - 2] << 16 | uint32_t{f[n - 1]} << 24, ref_icrc(f));
        }
      }
    }
  }
}

// The IPv4 header checksum check (native 32-bit words, byte order independence) against RFC 1071's
// big-endian definition: random headers (TOS, id, TTL, checksum, addresses mutated), half of them
// repaired. A header is refused as kBadIpChecksum exactly when its words do not sum to 0xFFFF.
TEST(Wire, IpHeaderChecksumAgainstTheDefinition) {
  const Bytes good = encode_bytes(golden_spec(WireMode::kFabemu));
  std::mt19937 rng(791);
  const size_t positions[] = {15, 18, 19, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33};
  DecodedFrame d;
  int bad = 0, ok = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    Bytes f = good;
    for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) {
      f[positions[rng() % std::size(positions)]] = static_cast<uint8_t>(rng() % 4 == 0 ? 0xFF * (rng() % 2) : rng());
    }
    if (rng() % 2 == 0) fix_ip(f);
    const Verdict v = decode(f, kFabemuRules, d);
    if (ip_ok(f)) {
      ++ok;
      ASSERT_NE(v, Verdict::kBadIpChecksum) << "trial " << trial;
    } else {
      ++bad;
      ASSERT_EQ(v, Verdict::kBadIpChecksum) << "trial " << trial;
    }
  }
  EXPECT_GT(ok, 1000);
  EXPECT_GT(bad, 1000);
}

// Every reason a frame is not ours, each from one mutation of a valid frame (checksums that precede
// the checked field repaired, so the verdict is the intended one).
// What a switch whose queue built up does to an ECN-capable frame (the ring pair's device does it with
// mark_ce): the TOS byte's ECN bits become CE and the IPv4 checksum follows, as recomputing it from scratch
// gives; no other byte changes, so the frame is still ours in both modes (the RoCEv2 ICRC masks the TOS
// byte, the UDP checksum does not cover it). A frame that is not ECT, not IPv4 or too short is left alone.
// What a sender may set: the DPDK fabric, both lab transports and the lab protocol check it here.
TEST(Wire, SenderClassIsADscpOfSixBitsAndAnyCodepointButCe) {
  EXPECT_EQ(sender_ecn(""), Ecn::kNotEct);
  EXPECT_EQ(sender_ecn("not-ect"), Ecn::kNotEct);
  EXPECT_EQ(sender_ecn("ect0"), Ecn::kEct0);
  EXPECT_EQ(sender_ecn("ect1"), Ecn::kEct1);
  for (const char* bad : {"ce", "CE", "ect2", "ect", " ect0"}) EXPECT_EQ(sender_ecn(bad), std::nullopt) << bad;
  for (const Ecn e : {Ecn::kNotEct, Ecn::kEct0, Ecn::kEct1}) {
    EXPECT_EQ(sender_ecn(to_string(e)), e);
    EXPECT_NO_THROW(check_sender_class(0, e, "x"));
    EXPECT_NO_THROW(check_sender_class(63, e, "x"));
  }
  try {
    check_sender_class(64, Ecn::kEct0, "who");
    ADD_FAILURE() << "DSCP 64 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "who: DSCP 64 does not fit the field's 6 bits (0..63)");
  }
  try {
    check_sender_class(10, Ecn::kCe, "who");
    ADD_FAILURE() << "CE accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "who: CE is a congested switch's mark, never a sender's (RFC 3168): send not-ect, ect0 or ect1");
  }
}

TEST(Wire, MarkCeIsWhatARouterWrites) {
  std::mt19937_64 rng(77);
  for (const WireMode mode : {WireMode::kFabemu, WireMode::kRoceV2}) {
    for (int i = 0; i < 400; ++i) {
      FrameSpec s = golden_spec(mode);
      s.dscp = static_cast<uint8_t>(rng() & 0x3F);
      s.ecn = (i & 1) ? Ecn::kEct0 : Ecn::kEct1;
      s.ip_id = static_cast<uint16_t>(rng());
      s.src.ip = 0xC6120000 | static_cast<uint32_t>(rng() & 0xFFFF);
      s.hdr.message_id = rng();
      s.payload_bytes = static_cast<uint32_t>(rng() % 1400);
      s.hdr.message_length = s.hdr.offset + s.payload_bytes;
      const Bytes sent = encode_bytes(s);
      Bytes f = sent;
      ASSERT_TRUE(mark_ce(f)) << i;
      EXPECT_EQ(f[15], tos_byte(s.dscp, Ecn::kCe)) << i;
      Bytes ref = f;
      fix_ip(ref);
      EXPECT_EQ(f, ref) << "the incremental checksum is the recomputed one, frame " << i;
      for (size_t b = 0; b < f.size(); ++b) {
        if (b != 15 && b != 24 && b != 25) {
          ASSERT_EQ(f[b], sent[b]) << "byte " << b << " of frame " << i;
        }
      }
      DecodedFrame d;
      ASSERT_EQ(decode(f, mode == WireMode::kRoceV2 ? kRoceRules : kFabemuRules, d), Verdict::kOurs) << i;
      EXPECT_EQ(d.ecn, Ecn::kCe);
      EXPECT_EQ(d.dscp, s.dscp);
      EXPECT_EQ(d.hdr, s.hdr);
      EXPECT_FALSE(mark_ce(f)) << "CE already";
    }
  }
  FrameSpec s = golden_spec(WireMode::kFabemu);
  const Bytes not_ect = encode_bytes(s);
  Bytes f = not_ect;
  EXPECT_FALSE(mark_ce(f));
  EXPECT_EQ(f, not_ect);
  s.ecn = Ecn::kEct0;
  const Bytes ect = encode_bytes(s);
  f = ect;
  f[12] = 0x86;  // IPv6's EtherType
  EXPECT_FALSE(mark_ce(f));
  f = ect;
  f[14] = 0x65;  // IPv6's version
  EXPECT_FALSE(mark_ce(f));
  f = ect;
  f[14] = 0x46;  // an option word the frame is too short for
  EXPECT_FALSE(mark_ce(std::span<uint8_t>(f.data(), 14 + 23)));
  EXPECT_FALSE(mark_ce(std::span<uint8_t>(f.data(), 33)));
  f = ect;
  EXPECT_TRUE(mark_ce(std::span<uint8_t>(f.data(), 34)));  // the IPv4 header is all it reads
  EXPECT_EQ(to_string(Ecn::kNotEct), "not-ect");
  EXPECT_EQ(to_string(Ecn::kEct1), "ect1");
  EXPECT_EQ(to_string(Ecn::kEct0), "ect0");
  EXPECT_EQ(to_string(Ecn::kCe), "ce");
}

TEST(Wire, NotOursReasons) {
  const Bytes good = encode_bytes(golden_spec(WireMode::kFabemu));
  const Bytes good_roce = encode_bytes(golden_spec(WireMode::kRoceV2));
  DecodedFrame d;
  const auto verdict = [&](const Bytes& f, const DecodeRules& r = kFabemuRules) { return decode(f, r, d); };

  EXPECT_EQ(verdict(slice(good, 0, 10)), Verdict::kTruncated);
  EXPECT_EQ(verdict(slice(good, 0, 30)), Verdict::kTruncated);
  EXPECT_EQ(verdict(slice(good, 0, good.size() - 1)), Verdict::kTruncated);
  Bytes f = good;
  f[12] = 0x86, f[13] = 0xDD;
  EXPECT_EQ(verdict(f), Verdict::kNotIpv4);
  f = good;
  f[14] = 0x46;
  EXPECT_EQ(verdict(f), Verdict::kBadIpHeader);
  f = good;
  f[20] |= 0x20;  // more fragments
  EXPECT_EQ(verdict(f), Verdict::kBadIpHeader);
  f = good;
  f[22] = 63;  // TTL without fixing the checksum
  EXPECT_EQ(verdict(f), Verdict::kBadIpChecksum);
  f = good;
  f[23] = 6;  // TCP
  fix_ip(f);
  EXPECT_EQ(verdict(f), Verdict::kNotUdp);
  f = good;
  f[f.size() - 1] ^= 1;
  EXPECT_EQ(verdict(f), Verdict::kBadUdpChecksum);
  f = good;
  f[40] = f[41] = 0;  // "no checksum" is not accepted in fabemu mode
  EXPECT_EQ(verdict(f), Verdict::kBadUdpChecksum);
  EXPECT_EQ(verdict(good, DecodeRules{WireMode::kFabemu, 47001, 47010}), Verdict::kWrongPort);
  EXPECT_EQ(verdict(good, kRoceRules), Verdict::kWrongPort);  // a fabemu frame is not RoCEv2
  f = good_roce;
  f[43] |= 0x01;  // TVer 1
  fix_udp(f);
  EXPECT_EQ(verdict(f, kRoceRules), Verdict::kBadBth);
  f = good_roce;
  f[42] = 0x64;  // UD SEND Only: not an opcode we send
  fix_udp(f);
  EXPECT_EQ(verdict(f, kRoceRules), Verdict::kBadBth);
  f = good_roce;
  f[100] ^= 0x40;  // a header byte: the ICRC catches it first
  fix_udp(f);
  EXPECT_EQ(verdict(f, kRoceRules), Verdict::kBadIcrc);
  f = good_roce;
  f[40] = f[41] = 0;  // RoCEv2 may leave the UDP checksum zero: the ICRC protects the frame
  EXPECT_EQ(verdict(f, kRoceRules), Verdict::kOurs);
  f = good;
  f[42] = 'X';
  fix_udp(f);
  EXPECT_EQ(verdict(f), Verdict::kBadMagic);
  f = good;
  f[46] = 2;
  fix_udp(f);
  EXPECT_EQ(verdict(f), Verdict::kBadVersion);
  f = good;
  f[53] ^= 1;  // src rank
  fix_udp(f);
  EXPECT_EQ(verdict(f), Verdict::kBadHeaderCrc);
  f = good_roce;
  f[70] ^= 1;  // src rank, behind the BTH; ICRC and UDP repaired
  fix_icrc(f);
  fix_udp(f);
  EXPECT_EQ(verdict(f, kRoceRules), Verdict::kBadHeaderCrc);
  FrameSpec s = golden_spec(WireMode::kFabemu);
  s.hdr.seq = s.hdr.count;
  EXPECT_EQ(verdict(encode_bytes(s)), Verdict::kBadFields);
  s = golden_spec(WireMode::kFabemu);
  s.hdr.offset = s.hdr.message_length - 6;  // 7 bytes past the end
  EXPECT_EQ(verdict(encode_bytes(s)), Verdict::kBadFields);
  f = good;
  f[47] = 9;  // kind
  {  // repair the header CRC so that the field check is what fails
    const Bytes h = slice(f, 42, 56);
    const uint32_t c = ref_crc32(h);
    for (int i = 0; i < 4; ++i) f[98 + i] = static_cast<uint8_t>(c >> (24 - 8 * i));
  }
  fix_udp(f);
  EXPECT_EQ(verdict(f), Verdict::kBadFields);

  // With the NIC's checksum offload trusted, what is left unverified is only what the NIC verified.
  DecodeRules trust_nic = kFabemuRules;
  trust_nic.verify_udp_checksum = false;
  f = good;
  f[f.size() - 1] ^= 1;  // payload
  EXPECT_EQ(verdict(f, trust_nic), Verdict::kOurs);
  f[53] ^= 1;  // src rank: the header CRC still guards the header
  EXPECT_EQ(verdict(f, trust_nic), Verdict::kBadHeaderCrc);
  DecodeRules no_icrc = kRoceRules;
  no_icrc.verify_icrc = false;
  f = good_roce;
  f[115] ^= 1;  // payload
  EXPECT_EQ(verdict(f, no_icrc), Verdict::kBadUdpChecksum);
  fix_udp(f);
  EXPECT_EQ(verdict(f, no_icrc), Verdict::kOurs);
  EXPECT_EQ(verdict(f, kRoceRules), Verdict::kBadIcrc);

  // A foreign UDP datagram to our port with valid checksums: bad magic, never ours.
  f = good;
  for (size_t i = 42; i < f.size(); ++i) f[i] = static_cast<uint8_t>(i * 7);
  fix_udp(f);
  EXPECT_EQ(verdict(f), Verdict::kBadMagic);
  for (int v = 0; v < static_cast<int>(kVerdictCount); ++v) EXPECT_FALSE(to_string(static_cast<Verdict>(v)).empty());
}

// decode() takes a data frame's UDP checksum and ICRC over its headers alone when the bytes after them
// (payload, RoCEv2 pad) are zero, and over every byte otherwise; both give the checks' true values. Every
// sum engine and ICRC engine this CPU runs, payloads of 0..1500 bytes (every RoCEv2 pad; below 64 bytes the
// full sums are taken either way): the zero frame decodes as ours; one payload or pad byte made non-zero is
// caught (the UDP checksum first, the ICRC when only the UDP checksum is repaired); with both repaired (from
// the definitions) the frame is ours again, through the full sums, with the same fields.
TEST(Wire, ZeroPayloadChecksEqualFullChecks) {
  std::mt19937_64 rng(1071);
  const SumEngine best = best_sum_engine();
  int engines = 0, checked = 0;
  for (const SumEngine e : {SumEngine::kPortable, SumEngine::kSse2, SumEngine::kAvx2}) {
    if (!set_sum_engine(e)) continue;
    ++engines;
    for (const CrcEngine icrc : {CrcEngine::kTable, CrcEngine::kClmul}) {
      if (icrc == CrcEngine::kClmul && best_crc_engine() != CrcEngine::kClmul) continue;
      for (const WireMode mode : {WireMode::kFabemu, WireMode::kRoceV2}) {
        DecodeRules rules = mode == WireMode::kRoceV2 ? kRoceRules : kFabemuRules;
        rules.icrc_engine = icrc;
        for (uint32_t payload = 0; payload <= 1500; payload += payload < 80 ? 1 : 37) {
          SCOPED_TRACE(testing::Message() << "sum engine " << static_cast<int>(e) << " icrc engine "
                                          << static_cast<int>(icrc) << " mode " << static_cast<int>(mode)
                                          << " payload " << payload);
          FrameSpec spec = golden_spec(mode);
          spec.payload_bytes = payload;
          spec.hdr.count = 1;
          spec.hdr.seq = 0;
          spec.hdr.offset = 0;
          spec.hdr.message_length = payload;
          if (mode == WireMode::kRoceV2) spec.bth.opcode = rc_send_opcode(0, 1);
          const Bytes good = encode_bytes(spec);
          DecodedFrame d;
          ASSERT_EQ(decode(good, rules, d), Verdict::kOurs);
          ASSERT_EQ(d.payload_bytes, payload);
          const size_t body = kEthHeaderBytes + kIpv4HeaderBytes + kUdpHeaderBytes +
                              (mode == WireMode::kRoceV2 ? kBthBytes : 0) + kFabemuHeaderBytes;
          const size_t end = good.size() - (mode == WireMode::kRoceV2 ? kIcrcBytes : 0);
          if (end == body) continue;  // nothing after the headers
          Bytes f = good;
          const size_t at = body + rng() % (end - body);  // a payload or pad byte
          f[at] = static_cast<uint8_t>(1 + rng() % 255);
          ASSERT_EQ(decode(f, rules, d), Verdict::kBadUdpChecksum) << "byte " << at;
          fix_udp(f);
          if (mode == WireMode::kRoceV2) {
            ASSERT_EQ(decode(f, rules, d), Verdict::kBadIcrc) << "byte " << at;
            fix_icrc(f);
            fix_udp(f);  // the ICRC is in the UDP payload
          }
          ASSERT_EQ(decode(f, rules, d), Verdict::kOurs) << "byte " << at;
          EXPECT_EQ(d.payload_bytes, payload);
          EXPECT_EQ(d.hdr.message_id, spec.hdr.message_id);
          ++checked;
        }
      }
    }
  }
  ASSERT_TRUE(set_sum_engine(best));
  EXPECT_GE(engines, 1);
  EXPECT_GT(checked, 400);
}

// No single corrupted byte past the MAC addresses yields a frame that decodes as ours.
TEST(Wire, EverySingleByteCorruptionIsCaught) {
  for (const WireMode mode : {WireMode::kFabemu, WireMode::kRoceV2}) {
    const Bytes good = encode_bytes(golden_spec(mode));
    const DecodeRules rules = mode == WireMode::kRoceV2 ? kRoceRules : kFabemuRules;
    DecodedFrame d;
    for (size_t i = 12; i < good.size(); ++i) {
      for (const int x : {0x01, 0x80, 0xFF, 0x5A}) {
        Bytes f = good;
        f[i] = static_cast<uint8_t>(f[i] ^ x);
        const Verdict v = decode(f, rules, d);
        const bool zero_udp_csum_roce = mode == WireMode::kRoceV2 && (i == 40 || i == 41) && be16(f, 40) == 0;
        if (!zero_udp_csum_roce) {
          EXPECT_NE(v, Verdict::kOurs) << "byte " << i << " ^ " << x;
        }
      }
    }
  }
}

// --- address plan ---

TEST(AddressPlan, DefaultEdges) {
  const Endpoint r0 = default_endpoint(0);
  EXPECT_EQ(format_ip(r0.ip), "198.18.0.1");
  EXPECT_EQ(format_mac(r0.mac), "02:fe:00:00:00:00");
  EXPECT_EQ(r0.port, 47000);
  const Endpoint r65535 = default_endpoint(65535, 50000);
  EXPECT_EQ(format_ip(r65535.ip), "198.19.0.0");
  EXPECT_EQ(format_mac(r65535.mac), "02:fe:00:00:ff:ff");
  EXPECT_EQ(r65535.port, 50000);
  EXPECT_EQ(format_ip(default_endpoint(65534).ip), "198.18.255.255");
  EXPECT_EQ(format_ip(default_endpoint(kMaxDefaultRanks - 1).ip), "198.19.255.254");
  EXPECT_EQ(format_mac(default_endpoint(kMaxDefaultRanks - 1).mac), "02:fe:00:01:ff:fd");
  EXPECT_THROW(default_endpoint(kMaxDefaultRanks), std::out_of_range);
  EXPECT_THROW(AddressPlan::make_default(kMaxDefaultRanks + 1), std::out_of_range);

  const AddressPlan plan = AddressPlan::make_default(kMaxDefaultRanks);
  EXPECT_EQ(plan.size(), 131070u);
  EXPECT_EQ(plan.rank_of_ip(*parse_ip("198.18.0.1")), 0u);
  EXPECT_EQ(plan.rank_of_ip(*parse_ip("198.19.0.0")), 65535u);
  EXPECT_EQ(plan.rank_of_ip(*parse_ip("198.19.255.254")), 131069u);
  EXPECT_EQ(plan.rank_of_ip(*parse_ip("198.18.0.0")), std::nullopt);
  EXPECT_EQ(plan.rank_of_ip(*parse_ip("198.19.255.255")), std::nullopt);
  EXPECT_EQ(plan.rank_of_ip(*parse_ip("10.0.0.1")), std::nullopt);
  const AddressPlan small = AddressPlan::make_default(8);
  EXPECT_EQ(small.rank_of_ip(*parse_ip("198.18.0.8")), 7u);
  EXPECT_EQ(small.rank_of_ip(*parse_ip("198.18.0.9")), std::nullopt);
  const DecodeRules r = small.decode_rules(WireMode::kFabemu);
  EXPECT_EQ(r.port_lo, 47000);
  EXPECT_EQ(r.port_hi, 47000);
}

TEST(AddressPlan, ParseAndFormat) {
  EXPECT_EQ(parse_ip("198.18.0.1"), 0xC6120001u);
  EXPECT_EQ(parse_ip("198.18.0"), std::nullopt);
  EXPECT_EQ(parse_ip("198.18.0.256"), std::nullopt);
  EXPECT_EQ(parse_ip("198.18..1"), std::nullopt);
  EXPECT_EQ(parse_ip("198.18.0.1.2"), std::nullopt);
  EXPECT_EQ(parse_mac("02:FE:00:0a:00:01"), (MacAddr{2, 0xfe, 0, 0x0a, 0, 1}));
  EXPECT_EQ(parse_mac("02:fe:00:0a:00"), std::nullopt);
  EXPECT_EQ(parse_mac("02-fe-00-0a-00-01"), std::nullopt);
}

TEST(AddressPlan, FromEndpoints) {
  std::vector<Endpoint> e = {default_endpoint(0), default_endpoint(1)};
  e[1].port = 47010;
  const AddressPlan p = AddressPlan::from_endpoints(e);
  EXPECT_EQ(p.rank_of_ip(default_endpoint(1).ip), 1u);
  EXPECT_EQ(p.decode_rules(WireMode::kFabemu).port_hi, 47010);
  e[1].ip = e[0].ip;
  EXPECT_THROW(AddressPlan::from_endpoints(e), std::invalid_argument);
  e[1].ip = *parse_ip("10.1.2.3");
  EXPECT_THROW(AddressPlan::from_endpoints(e), std::invalid_argument);
  EXPECT_EQ(AddressPlan::from_endpoints(e, true).rank_of_ip(*parse_ip("10.1.2.3")), 1u);
}

class PlanYaml : public ::testing::Test {
 protected:
  AddressPlan load(const std::string& text) {
    test::write_bytes(dir_.file("plan.yaml"), text);
    return AddressPlan::load_yaml(dir_.file("plan.yaml"));
  }
  // The TraceError message for `text`, or "" when it loads.
  std::string error(const std::string& text) {
    try {
      load(text);
    } catch (const traces::TraceError& e) {
      return e.what();
    }
    return "";
  }
  std::string path() const { return dir_.file("plan.yaml"); }
  test::ScratchDir dir_;
};

TEST_F(PlanYaml, Loads) {
  const AddressPlan p = load(
      "base_port: 48000\n"
      "ranks:\n"
      "  - {rank: 1, mac: \"02:fe:00:00:00:11\", ip: 198.19.1.1, port: 48005}\n"
      "  - rank: 0\n"
      "    mac: 02:fe:00:00:00:10\n"
      "    ip: 198.18.3.4\n");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(format_ip(p.at(0).ip), "198.18.3.4");
  EXPECT_EQ(format_mac(p.at(0).mac), "02:fe:00:00:00:10");
  EXPECT_EQ(p.at(0).port, 48000);
  EXPECT_EQ(p.at(1).port, 48005);
  EXPECT_EQ(p.rank_of_ip(*parse_ip("198.19.1.1")), 1u);
  EXPECT_EQ(p.rank_of_ip(*parse_ip("198.18.0.1")), std::nullopt);
  EXPECT_EQ(p.decode_rules(WireMode::kFabemu).port_lo, 48000);
  EXPECT_EQ(p.decode_rules(WireMode::kFabemu).port_hi, 48005);
}

TEST_F(PlanYaml, AddressOutsideTheBenchmarkNet) {
  const std::string text =
      "ranks:\n"
      "  - {rank: 0, mac: \"02:fe:00:00:00:10\", ip: 198.18.0.1}\n"
      "  - {rank: 1, mac: \"02:fe:00:00:00:11\", ip: 10.0.0.2}\n";
  EXPECT_EQ(error(text), path() +
                             ": line 3: key \"ranks[1].ip\": 10.0.0.2 is outside 198.18.0.0/15; set "
                             "\"allow_any_address: true\" to use it");
  const AddressPlan p = load("allow_any_address: true\n" + text);
  EXPECT_EQ(p.rank_of_ip(*parse_ip("10.0.0.2")), 1u);
}

TEST_F(PlanYaml, Errors) {
  EXPECT_EQ(error("ranks:\n  - {rank: 0, mac: \"02:fe:00:00:00:10\", ip: 198.18.0.1, prot: 1}\n"),
            path() + ": line 2: unknown key \"prot\" in ranks[0]; the keys are rank, mac, ip, port");
  EXPECT_EQ(error("ranks:\n  - {rank: 0, mac: \"02:fe:00:00:00:10\"}\n"),
            path() + ": line 2: ranks[0]: missing key \"ip\"");
  EXPECT_EQ(error("ranks:\n  - {rank: 0, mac: \"02:fe:00:00:00:10\", ip: 198.18.0.1}\n"
                  "  - {rank: 0, mac: \"02:fe:00:00:00:11\", ip: 198.18.0.2}\n"),
            path() + ": line 3: key \"ranks[1].rank\": rank 0 is already defined on line 2");
  EXPECT_EQ(error("ranks:\n  - {rank: 0, mac: \"02:fe:00:00:00:10\", ip: 198.18.0.1}\n"
                  "  - {rank: 1, mac: \"02:fe:00:00:00:11\", ip: 198.18.0.1}\n"),
            path() + ": line 3: key \"ranks[1].ip\": 198.18.0.1 is already used on line 2");
  EXPECT_EQ(error("ranks:\n  - {rank: 2, mac: \"02:fe:00:00:00:10\", ip: 198.18.0.1}\n"),
            path() + ": line 2: key \"ranks[0].rank\" must be 0 to 0 (one entry per rank), not \"2\"");
  EXPECT_EQ(error("ranks:\n  - {rank: 0, mac: \"02:fe:00:00:10\", ip: 198.18.0.1}\n"),
            path() + ": line 2: key \"ranks[0].mac\" must look like 02:fe:00:00:00:01, not \"02:fe:00:00:10\"");
  EXPECT_EQ(error("ranks:\n  - {rank: 0, mac: \"03:fe:00:00:00:10\", ip: 198.18.0.1}\n"),
            path() + ": line 2: key \"ranks[0].mac\": 03:fe:00:00:00:10 is a multicast address");
  EXPECT_EQ(error("ranks:\n  - {rank: 0, mac: \"00:00:00:00:00:00\", ip: 198.18.0.1}\n"),
            path() + ": line 2: key \"ranks[0].mac\": 00:00:00:00:00:00 is the null address, no NIC's");
  EXPECT_EQ(error("ranks:\n  - {rank: 0, mac: \"02:fe:00:00:00:10\", ip: 198.18.0.0}\n"),
            path() + ": line 2: key \"ranks[0].ip\": 198.18.0.0 is the network address of 198.18.0.0/15, no host's; "
                     "set \"allow_any_address: true\" to use it");
  EXPECT_EQ(error("ranks:\n  - {rank: 0, mac: \"02:fe:00:00:00:10\", ip: 198.19.255.255}\n"),
            path() + ": line 2: key \"ranks[0].ip\": 198.19.255.255 is the broadcast address of 198.18.0.0/15, no "
                     "host's; set \"allow_any_address: true\" to use it");
  EXPECT_EQ(error("base_port: 70000\nranks: []\n"),
            path() + ": line 1: key \"base_port\" must be a UDP port 1 to 65535, not \"70000\"");
  EXPECT_EQ(error("allow_any_address: yes\n"),
            path() + ": line 1: key \"allow_any_address\" must be true or false, not \"yes\"");
  EXPECT_EQ(error("base_port: 1\n"), path() + ": missing key \"ranks\" (a list of {rank, mac, ip[, port]})");
  EXPECT_EQ(error("ranks: [\n"), error("ranks: [\n"));  // stable
  EXPECT_NE(error("ranks: [\n").find("invalid YAML"), std::string::npos);
  EXPECT_THROW(AddressPlan::load_yaml(dir_.file("absent.yaml")), traces::TraceError);
}

// --- pcap ---

Bytes read_file(const std::string& path) {
  const std::string s = test::read_bytes(path);
  return Bytes(s.begin(), s.end());
}
uint32_t le32(const Bytes& b, size_t at) {
  return b[at] | b[at + 1] << 8 | b[at + 2] << 16 | uint32_t{b[at + 3]} << 24;
}

TEST(Pcap, WritesReadableFile) {
  test::ScratchDir dir;
  const std::string path = dir.file("frames.pcap");
  const Bytes a = encode_bytes(golden_spec(WireMode::kFabemu));
  const Bytes b = encode_bytes(golden_spec(WireMode::kRoceV2));
  {
    PcapWriter w(path, 100);
    w.write(a, uint64_t{1'500'000'123});
    w.write(b, emu::Time::from_ps(2'000'000'000'456'789));
    w.close();
    EXPECT_EQ(w.frames(), 2u);
    EXPECT_THROW(w.write(a, uint64_t{0}), std::runtime_error);
  }
  const Bytes f = read_file(path);
  ASSERT_EQ(f.size(), 24u + 16 + 100 + 16 + 100);  // both cut at snaplen 100
  EXPECT_EQ(le32(f, 0), kPcapNanoMagic);  // written little-endian on this (x86/arm64) host
  EXPECT_EQ(le32(f, 4), 0x00040002u);     // version 2.4
  EXPECT_EQ(le32(f, 16), 100u);           // snaplen
  EXPECT_EQ(le32(f, 20), 1u);             // Ethernet
  EXPECT_EQ(le32(f, 24), 1u);             // 1.500000123 s
  EXPECT_EQ(le32(f, 28), 500'000'123u);
  EXPECT_EQ(le32(f, 32), 100u);
  EXPECT_EQ(le32(f, 36), a.size());
  EXPECT_EQ(slice(f, 40, 100), slice(a, 0, 100));
  EXPECT_EQ(le32(f, 140), 2000u);  // 2000.000000456 s (ps truncated)
  EXPECT_EQ(le32(f, 144), 456u);
  EXPECT_EQ(le32(f, 152), b.size());
}

TEST(Pcap, ErrorNamesThePath) {
  try {
    PcapWriter w("/nonexistent-dir/x.pcap");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "pcap /nonexistent-dir/x.pcap: cannot create: No such file or directory");
  }
}

TEST(Pcap, TcpdumpReadsIt) {
  if (std::system("command -v tcpdump >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "tcpdump is not installed: pcap checked by the reader above only";
  }
  test::ScratchDir dir;
  const std::string path = dir.file("frames.pcap");
  {
    PcapWriter w(path);
    w.write(encode_bytes(golden_spec(WireMode::kFabemu)), uint64_t{1});
    w.write(encode_bytes(golden_spec(WireMode::kRoceV2)), uint64_t{2});
    w.close();
  }
  const std::string out = dir.file("tcpdump.txt");
  ASSERT_EQ(std::system(("tcpdump -nn -vv -r " + path + " > " + out + " 2>&1").c_str()), 0);
  const std::string text = test::read_bytes(out);
  EXPECT_NE(text.find("198.18.0.2.47000 > 198.18.0.3.47000: [udp sum ok] UDP, length 67"), std::string::npos)
      << text;
  EXPECT_NE(text.find("4791"), std::string::npos) << text;
}

}  // namespace
}  // namespace fabemu::host::dpdk
