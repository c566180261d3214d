// Fuzz target: the DPDK fabric's frame decoder (host/wire/frame.h), fabemu and RoCEv2 frames, and the socket
// fabric's datagrams (host/lab/datagram.h), which share the fabemu header. Byte 0:
//   bit 0: RoCEv2 mode (else fabemu mode, every UDP port accepted);
//   bit 1: repair: before decoding, the harness makes the frame's lengths, EtherType, IPv4 version and
//          protocol, UDP port (RoCEv2), fabemu header CRC, ICRC, UDP and IPv4 checksums right, so that the
//          mutations reach the fields behind them;
//   bit 2: with repair in RoCEv2 mode, a zero UDP checksum (the ICRC alone protects the frame).
// The rest is the frame. Oracles (decode is noexcept; a crash or an ASan report is a finding too):
//  - the verdict and fields agree across the CRC engines and the ones'-complement sum engines;
//  - a frame decoded as ours re-encodes (encode, and encode with a FrameTemplate: the same bytes) to a frame
//    that decodes to the same fields;
//  - a fabemu header parsed as valid is written back to the same 60 bytes;
//  - decode_datagram's payload lies inside the datagram.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "host/lab/datagram.h"
#include "host/wire/checksum.h"
#include "host/wire/crc.h"
#include "host/wire/fabemu_header.h"
#include "host/wire/frame.h"
#include "host/wire/roce.h"
#include "tests/fuzz/fuzz_support.h"

namespace {
namespace hd = fabemu::host::dpdk;
using fabemu::fuzz::finding;

constexpr size_t kIpOff = hd::kEthHeaderBytes;
constexpr size_t kUdpOff = kIpOff + hd::kIpv4HeaderBytes;
constexpr size_t kL4Off = kUdpOff + hd::kUdpHeaderBytes;

void repair(std::vector<uint8_t>& f, bool roce, bool zero_udp_checksum) {
  const size_t n = f.size();
  if (n < kL4Off || n - hd::kEthHeaderBytes > 65535) return;
  uint8_t* ip = f.data() + kIpOff;
  uint8_t* udp = f.data() + kUdpOff;
  hd::store_be16(f.data() + 12, hd::kEtherTypeIpv4);
  ip[0] = 0x45;
  ip[6] &= 0x40;  // DF may stay; no fragment
  ip[7] = 0;
  ip[9] = hd::kIpProtoUdp;
  const auto ip_len = static_cast<uint16_t>(n - hd::kEthHeaderBytes);
  const auto udp_len = static_cast<uint16_t>(ip_len - hd::kIpv4HeaderBytes);
  hd::store_be16(ip + 2, ip_len);
  hd::store_be16(udp + 4, udp_len);
  if (roce) hd::store_be16(udp + 2, hd::kRoceV2Port);
  const size_t header_at = kL4Off + (roce ? hd::kBthBytes : 0);
  if (n >= header_at + hd::kFabemuHeaderBytes) {
    hd::store_be32(f.data() + header_at + hd::kHeaderCrcAt, hd::fabemu_header_crc(f.data() + header_at));
  }
  hd::store_be16(udp + 6, 0);
  if (roce && n >= kL4Off + hd::kBthBytes + hd::kIcrcBytes) {
    const uint32_t icrc = hd::roce_icrc(std::span<const uint8_t>(f).first(n - hd::kIcrcBytes));
    for (size_t i = 0; i < 4; ++i) f[n - 4 + i] = static_cast<uint8_t>(icrc >> (8 * i));
  }
  if (!(roce && zero_udp_checksum)) {
    std::array<uint8_t, 12> pseudo{};
    std::copy(ip + 12, ip + 20, pseudo.begin());
    pseudo[9] = hd::kIpProtoUdp;
    hd::store_be16(pseudo.data() + 10, udp_len);
    const uint16_t sum = hd::ones_complement_sum({udp, udp_len}, hd::ones_complement_sum(pseudo));
    const auto csum = static_cast<uint16_t>(~sum);
    hd::store_be16(udp + 6, csum == 0 ? 0xFFFF : csum);
  }
  hd::store_be16(ip + 10, 0);
  hd::store_be16(ip + 10, static_cast<uint16_t>(~hd::ones_complement_sum({ip, hd::kIpv4HeaderBytes})));
}

bool same(const hd::DecodedFrame& a, const hd::DecodedFrame& b) {
  return a.src == b.src && a.dst == b.dst && a.ip_id == b.ip_id && a.dscp == b.dscp && a.ecn == b.ecn &&
         a.hdr == b.hdr && a.bth == b.bth && a.payload_bytes == b.payload_bytes;
}

void check_reencode(const hd::DecodedFrame& d, const hd::DecodeRules& rules) {
  hd::FrameSpec spec;
  spec.mode = rules.mode;
  spec.src = d.src;
  spec.dst = d.dst;
  spec.ip_id = d.ip_id;
  spec.dscp = d.dscp;
  spec.ecn = d.ecn;
  spec.hdr = d.hdr;
  spec.bth = d.bth;
  spec.payload_bytes = d.payload_bytes;
  std::vector<uint32_t> missing(d.missing_count());
  for (size_t i = 0; i < missing.size(); ++i) missing[i] = d.missing(i);
  spec.missing = missing;
  std::vector<uint8_t> out(hd::frame_bytes(rules.mode, d.payload_bytes) + 64), fast(out.size());
  const size_t len = hd::encode(spec, out);
  if (len == 0) return;  // a datagram over 65535 bytes: not encodable, documented
  hd::FrameTemplate templ(spec);
  if (hd::encode(templ, spec, fast) != len || !std::equal(out.begin(), out.begin() + static_cast<long>(len), fast.begin())) {
    finding("wire", "encode with a FrameTemplate differs from encode");
  }
  hd::DecodedFrame again;
  const hd::Verdict v = hd::decode(std::span<const uint8_t>(out).first(len), rules, again);
  if (v != hd::Verdict::kOurs) finding("wire", std::string("a re-encoded frame decodes as ") + std::string(hd::to_string(v)));
  if (!same(d, again)) finding("wire", "a re-encoded frame decodes to other fields");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool roce = (data[0] & 1) != 0;
  std::vector<uint8_t> frame(data + 1, data + size);
  if ((data[0] & 2) != 0) repair(frame, roce, (data[0] & 4) != 0);

  hd::DecodeRules rules;
  rules.mode = roce ? hd::WireMode::kRoceV2 : hd::WireMode::kFabemu;
  rules.port_lo = 0;
  rules.port_hi = 65535;
  hd::DecodedFrame first;
  rules.icrc_engine = hd::CrcEngine::kTable;
  const hd::Verdict verdict = hd::decode(frame, rules, first);
  for (const hd::SumEngine e : {hd::SumEngine::kPortable, hd::SumEngine::kSse2, hd::SumEngine::kAvx2}) {
    if (!hd::set_sum_engine(e)) continue;
    for (const hd::CrcEngine c : {hd::CrcEngine::kTable, hd::CrcEngine::kClmul}) {
      rules.icrc_engine = c;
      hd::DecodedFrame other;
      const hd::Verdict v = hd::decode(frame, rules, other);
      if (v != verdict || (v == hd::Verdict::kOurs && !same(first, other))) {
        finding("wire", "the verdict or fields depend on the CRC or sum engine");
      }
    }
  }
  hd::set_sum_engine(hd::best_sum_engine());
  rules.icrc_engine = hd::best_crc_engine();
  if (verdict == hd::Verdict::kOurs) {
    if (first.payload.data() < frame.data() || first.payload.data() + first.payload.size() > frame.data() + frame.size() ||
        first.payload.size() != first.payload_bytes) {
      finding("wire", "the payload is not inside the frame");
    }
    for (size_t i = 0; i < first.missing_count(); ++i) (void)first.missing(i);
    check_reencode(first, rules);
  }
  // Unchecked UDP checksum and ICRC: the decoder must still stay inside the frame.
  rules.verify_udp_checksum = false;
  rules.verify_icrc = false;
  hd::DecodedFrame lax;
  (void)hd::decode(frame, rules, lax);

  // The fabemu header alone, and as the socket fabric's datagram (the bytes after byte 0, unrepaired).
  const std::span<const uint8_t> raw(data + 1, size - 1);
  hd::FabemuHeader h;
  if (hd::parse_fabemu_header(raw, h) == hd::HeaderVerdict::kOk) {
    std::array<uint8_t, hd::kFabemuHeaderBytes> back{};
    hd::write_fabemu_header(h, back);
    if (!std::equal(back.begin(), back.end(), raw.begin())) finding("wire", "a valid header does not write back the same");
  }
  fabemu::lab::DecodedDatagram dg;
  const fabemu::lab::DatagramRules drules{.ranks = 16, .payload = 1400, .local_rank = h.dst_rank % 16};
  if (fabemu::lab::decode_datagram(raw, drules, dg) == fabemu::lab::DatagramVerdict::kOurs) {
    if (dg.payload.data() < raw.data() || dg.payload.data() + dg.payload.size() > raw.data() + raw.size()) {
      finding("wire", "a datagram's payload is not inside it");
    }
    for (size_t i = 0; i < dg.missing_count(); ++i) (void)dg.missing(i);
  }
  return 0;
}
