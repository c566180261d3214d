// One frame encoded from a FrameSpec, and decoded with the first reason it is not ours. Layout and the
// reasons for each choice: host/dpdk/README.md. The per-flow template path is frame_template.cpp.
#include "host/wire/frame.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "host/wire/byte_access.h"
#include "host/wire/checksum.h"
#include "host/wire/crc_kernels.h"
#include "host/wire/fabemu_header.h"
#include "host/wire/frame_layout.h"
#include "host/wire/roce_kernels.h"

namespace fabemu::host::dpdk {

using namespace detail;

namespace {

// True when the n bytes at p are all zero (a data frame's payload): 32 bytes a load with the AVX2 sum
// engine, 16 with SSE2, 8 otherwise.
bool all_zero(const uint8_t* p, size_t n) noexcept {
#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const SumEngine engine = n >= 32 ? g_sum_engine.load(std::memory_order_relaxed) : SumEngine::kPortable;
#if defined(FABEMU_HAVE_AVX2_SUM)
  if (engine == SumEngine::kAvx2) return all_zero_avx2(p, n);
#endif
  if (engine != SumEngine::kPortable) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + n - 16));
    for (; n >= 16; p += 16, n -= 16) a = _mm_or_si128(a, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm_movemask_epi8(_mm_cmpeq_epi8(a, _mm_setzero_si128())) == 0xFFFF;
  }
#endif
  uint64_t acc = 0;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    acc |= w;
  }
  for (; n > 0; --n) acc |= *p++;
  return acc == 0;
}

// An IPv4 header of 20 bytes sums to 0xFFFF (its checksum is right): five native 32-bit loads. The sum
// of little-endian words folds to the byte swap of RFC 1071's big-endian one (byte order independence),
// and 0xFFFF is its own swap; a folded sum is 0 only for all-zero bytes in either order.
bool ipv4_header_sum_ok(const uint8_t* ip) noexcept {
  uint64_t s = 0;
  for (size_t i = 0; i < kIpv4HeaderBytes; i += 4) {
    uint32_t w;
    std::memcpy(&w, ip + i, 4);
    s += w;
  }
  return fold(s) == 0xFFFF;
}

void write_bth(uint8_t* b, const Bth& t, size_t pad) noexcept {
  put8(b + 0, t.opcode);
  put8(b + 1, static_cast<uint8_t>((t.solicited ? 0x80 : 0) | (t.mig_req ? 0x40 : 0) | (pad << 4) | (t.tver & 0x0F)));
  put16(b + 2, t.pkey);
  put8(b + 4, 0);
  put24(b + 5, t.dest_qp & 0xFFFFFF);
  put8(b + 8, t.ack_req ? 0x80 : 0);
  put24(b + 9, t.psn & 0xFFFFFF);
}

bool known_opcode(uint8_t op) noexcept {
  return op == kRcSendFirst || op == kRcSendMiddle || op == kRcSendLast || op == kRcSendOnly;
}

}  // namespace

size_t frame_bytes(WireMode mode, size_t payload_bytes) noexcept {
  return std::max(kMinFrameBytes, kL4Off + udp_payload_bytes(mode, payload_bytes));
}

size_t max_payload_for_mtu(WireMode mode, size_t mtu) noexcept {
  const size_t overhead = kIpv4HeaderBytes + udp_payload_bytes(mode, 0) + kUdpHeaderBytes;
  if (mtu > 65535) mtu = 65535;
  if (mtu <= overhead) return 0;
  const size_t room = mtu - overhead;
  return mode == WireMode::kFabemu ? room : room & ~size_t{3};
}

size_t encode(const FrameSpec& spec, std::span<uint8_t> out) noexcept {
  const FabemuHeader& h = spec.hdr;
  const size_t payload = header_payload_bytes(h.kind, spec.payload_bytes, spec.missing);
  const size_t pad = spec.mode == WireMode::kRoceV2 ? roce_pad(payload) : 0;
  const size_t udp_len = kUdpHeaderBytes + udp_payload_bytes(spec.mode, payload);
  if (kIpv4HeaderBytes + udp_len > 65535) return 0;
  const size_t ip_end = kUdpOff + udp_len;
  const size_t total = std::max(kMinFrameBytes, ip_end);
  if (out.size() < total) return 0;
  uint8_t* f = out.data();

  // Ethernet II
  std::memcpy(f, spec.dst.mac.data(), 6);
  std::memcpy(f + 6, spec.src.mac.data(), 6);
  put16(f + 12, kEtherTypeIpv4);

  // IPv4: no options, DF, TTL 64
  uint8_t* ip = f + kEthHeaderBytes;
  put8(ip + 0, 0x45);
  put8(ip + 1, tos_byte(spec.dscp, spec.ecn));
  put16(ip + 2, static_cast<uint16_t>(kIpv4HeaderBytes + udp_len));
  put16(ip + 4, spec.ip_id);
  put16(ip + 6, 0x4000);
  put8(ip + 8, 64);
  put8(ip + 9, kIpProtoUdp);
  put16(ip + 10, 0);
  put32(ip + 12, spec.src.ip);
  put32(ip + 16, spec.dst.ip);
  put16(ip + 10, static_cast<uint16_t>(~fold(sum16(ip, kIpv4HeaderBytes))));

  // UDP (checksum last: it covers the ICRC)
  uint8_t* udp = f + kUdpOff;
  put16(udp + 0, spec.src.port);
  put16(udp + 2, spec.mode == WireMode::kRoceV2 ? kRoceV2Port : spec.dst.port);
  put16(udp + 4, static_cast<uint16_t>(udp_len));
  put16(udp + 6, 0);

  uint8_t* l4 = f + kL4Off;
  if (spec.mode == WireMode::kRoceV2) {
    write_bth(l4, spec.bth, pad);
    l4 += kBthBytes;
  }
  write_fabemu_header(h, std::span<uint8_t, kFabemuHeaderBytes>(l4, kFabemuHeaderBytes));
  uint8_t* body = l4 + kFabemuHeaderBytes;
  // The checksum sums only the bytes that may be non-zero: zero padding adds nothing.
  uint64_t sum = pseudo_header_sum(spec.src.ip, spec.dst.ip, static_cast<uint16_t>(udp_len)) + sum16(udp, body - udp);
  if (h.kind == PacketKind::kNack) {
    store_missing(body, spec.missing);
    sum += sum16(body, payload);
  } else {
    std::memset(body, 0, payload);
  }
  std::memset(body + payload, 0, pad);
  if (spec.mode == WireMode::kRoceV2) {
    uint8_t* icrc_at = body + payload + pad;
    // ICRC: the headers through the fabemu header, then payload+pad (zeros unless a NACK list).
    uint32_t s = ~roce_icrc({f, static_cast<size_t>(body - f)});
    s = h.kind == PacketKind::kNack ? crc_raw(s, body, payload + pad) : crc_raw_zeros(s, payload + pad);
    const uint32_t icrc = ~s;
    // Little-endian on the wire, like the Ethernet FCS (Linux rxe, Wireshark's check).
    for (int i = 0; i < 4; ++i) icrc_at[i] = static_cast<uint8_t>(icrc >> (8 * i));
    sum += sum16(icrc_at, kIcrcBytes);  // at an even offset: payload + pad is a multiple of 4
  }
  uint16_t csum = static_cast<uint16_t>(~fold(sum));
  put16(udp + 6, csum == 0 ? 0xFFFF : csum);
  std::memset(f + ip_end, 0, total - ip_end);
  return total;
}

uint32_t DecodedFrame::missing(size_t i) const noexcept { return get32(payload.data() + 4 * i); }

Verdict decode(std::span<const uint8_t> frame, const DecodeRules& rules, DecodedFrame& out) noexcept {
  const uint8_t* f = frame.data();
  const size_t n = frame.size();
  if (n < kEthHeaderBytes) return Verdict::kTruncated;
  if (get16(f + 12) != kEtherTypeIpv4) return Verdict::kNotIpv4;
  if (n < kUdpOff) return Verdict::kTruncated;
  const uint8_t* ip = f + kEthHeaderBytes;
  if (ip[0] != 0x45 || (get16(ip + 6) & 0x3FFF) != 0) return Verdict::kBadIpHeader;
  const size_t ip_len = get16(ip + 2);
  if (ip_len < kIpv4HeaderBytes || kEthHeaderBytes + ip_len > n) return Verdict::kTruncated;
  if (!ipv4_header_sum_ok(ip)) return Verdict::kBadIpChecksum;
  if (ip[9] != kIpProtoUdp) return Verdict::kNotUdp;
  if (ip_len < kIpv4HeaderBytes + kUdpHeaderBytes) return Verdict::kTruncated;
  const uint8_t* udp = f + kUdpOff;
  const size_t udp_len = get16(udp + 4);
  if (udp_len != ip_len - kIpv4HeaderBytes) return Verdict::kTruncated;
  const uint32_t src_ip = get32(ip + 12);
  const uint32_t dst_ip = get32(ip + 16);
  // The bytes after the headers (the payload and, in RoCEv2 mode, its pad) are zeros in every data frame:
  // the emulator moves sizes, not data. When they are, the UDP checksum and the ICRC are taken over the
  // headers (and the ICRC) alone, the zeros counted by their length: they add nothing to a ones'
  // complement sum and move a CRC register by one product, so the results are the full sums', and the
  // payload is read once, by the zero test, instead of twice. Anything else (a NACK's list, a corrupted
  // byte, an odd length) takes the full sums, and so do bodies shorter than 64 bytes, where the test and
  // the split sums cost what they save (RoCEv2 118 B frames: 31 -> 35 ns with them). With neither check to
  // make (the NIC summed the UDP checksum, fabemu mode) the body is not read at all.
  const bool roce = rules.mode == WireMode::kRoceV2;
  const size_t head = kUdpHeaderBytes + (roce ? kBthBytes : 0) + kFabemuHeaderBytes;
  const size_t tail = roce ? kIcrcBytes : 0;
  // A zero UDP checksum ("none") is accepted only in RoCEv2 mode, where the ICRC protects the packet
  // (the RoCEv2 annex lets senders leave it zero).
  const uint16_t udp_csum = get16(udp + 6);
  const bool check_udp = rules.verify_udp_checksum && (udp_csum != 0 || !roce);
  const bool zero_body = (check_udp || (roce && rules.verify_icrc)) && udp_len >= head + tail + 64 &&
                         (udp_len - tail) % 2 == 0 && all_zero(udp + head, udp_len - head - tail);
  if (check_udp) {
    const uint64_t sum = zero_body ? sum16(udp, head) + (tail != 0 ? sum16(udp + udp_len - tail, tail) : 0)
                                   : sum16(udp, udp_len);
    if (fold(pseudo_header_sum(src_ip, dst_ip, static_cast<uint16_t>(udp_len)) + sum) != 0xFFFF) {
      return Verdict::kBadUdpChecksum;
    }
  }
  const uint16_t dport = get16(udp + 2);
  if (rules.mode == WireMode::kRoceV2 ? dport != kRoceV2Port : (dport < rules.port_lo || dport > rules.port_hi)) {
    return Verdict::kWrongPort;
  }

  const uint8_t* l4 = f + kL4Off;
  size_t l4_len = udp_len - kUdpHeaderBytes;
  Bth bth;
  uint8_t pad = 0;
  if (rules.mode == WireMode::kRoceV2) {
    if (l4_len < kBthBytes) return Verdict::kTruncated;
    bth.opcode = l4[0];
    bth.solicited = (l4[1] & 0x80) != 0;
    bth.mig_req = (l4[1] & 0x40) != 0;
    pad = static_cast<uint8_t>((l4[1] >> 4) & 0x3);
    bth.tver = l4[1] & 0x0F;
    bth.pkey = get16(l4 + 2);
    bth.dest_qp = get24(l4 + 5);
    bth.ack_req = (l4[8] & 0x80) != 0;
    bth.psn = get24(l4 + 9);
    // Real RDMA traffic (CNPs, ACKs, READs...) stops here, before any length that only fabemu implies.
    if (bth.tver != 0 || !known_opcode(bth.opcode)) return Verdict::kBadBth;
    if (l4_len < kBthBytes + kFabemuHeaderBytes + kIcrcBytes) return Verdict::kTruncated;
    if (l4_len < kBthBytes + kFabemuHeaderBytes + kIcrcBytes + pad) return Verdict::kBadBth;
    if (rules.verify_icrc) {
      // Read only when checked: the ICRC sits in the frame's last line, which nothing else here reads
      // (loaded unconditionally, its miss was 88% of decode's time with the checks off).
      const size_t icrc_off = kUdpOff + udp_len - kIcrcBytes;
      const uint8_t* ic = f + icrc_off;
      const uint32_t want = uint32_t{ic[0]} | uint32_t{ic[1]} << 8 | uint32_t{ic[2]} << 16 | uint32_t{ic[3]} << 24;
      const uint32_t got = zero_body ? roce_icrc_zero_body(f, udp_len - head - tail, rules.icrc_engine)
                                     : roce_icrc(frame.first(icrc_off), rules.icrc_engine);
      if (got != want) return Verdict::kBadIcrc;
    }
    l4 += kBthBytes;
    l4_len -= kBthBytes + kIcrcBytes + pad;
  }
  FabemuHeader h;
  switch (parse_fabemu_header({l4, l4_len}, h)) {
    case HeaderVerdict::kOk: break;
    case HeaderVerdict::kTruncated: return Verdict::kTruncated;
    case HeaderVerdict::kBadMagic: return Verdict::kBadMagic;
    case HeaderVerdict::kBadVersion: return Verdict::kBadVersion;
    case HeaderVerdict::kBadHeaderCrc: return Verdict::kBadHeaderCrc;
    case HeaderVerdict::kBadFields: return Verdict::kBadFields;
  }
  const size_t payload = l4_len - kFabemuHeaderBytes;

  std::memcpy(out.dst.mac.data(), f, 6);
  std::memcpy(out.src.mac.data(), f + 6, 6);
  out.src.ip = src_ip;
  out.dst.ip = dst_ip;
  out.src.port = get16(udp);
  out.dst.port = dport;
  out.ip_id = get16(ip + 4);
  out.dscp = static_cast<uint8_t>(ip[1] >> 2);
  out.ecn = static_cast<Ecn>(ip[1] & 3);
  // Field by field from opaque loads: parse_fabemu_header has just stored them one by one, and a copy of
  // the struct reads them back in wide loads that the CPU cannot forward from those stores (alone()).
  out.hdr.kind = alone(h.kind);
  out.hdr.flags = alone(h.flags);
  out.hdr.src_rank = alone(h.src_rank);
  out.hdr.dst_rank = alone(h.dst_rank);
  out.hdr.message_id = alone(h.message_id);
  out.hdr.seq = alone(h.seq);
  out.hdr.count = alone(h.count);
  out.hdr.message_length = alone(h.message_length);
  out.hdr.offset = alone(h.offset);
  out.hdr.tx_time_ps = alone(h.tx_time_ps);
  out.bth = bth;
  out.pad_count = pad;
  out.payload_bytes = static_cast<uint32_t>(payload);
  out.payload = {l4 + kFabemuHeaderBytes, payload};
  return Verdict::kOurs;
}

std::string_view to_string(Ecn e) noexcept {
  switch (e) {
    case Ecn::kNotEct: return "not-ect";
    case Ecn::kEct1: return "ect1";
    case Ecn::kEct0: return "ect0";
    case Ecn::kCe: return "ce";
  }
  return "?";
}

std::optional<Ecn> sender_ecn(std::string_view name) noexcept {
  if (name.empty() || name == "not-ect") return Ecn::kNotEct;
  if (name == "ect0") return Ecn::kEct0;
  if (name == "ect1") return Ecn::kEct1;
  return std::nullopt;
}

void check_sender_class(uint32_t dscp, Ecn ecn, std::string_view who) {
  if (dscp > 63) {
    throw std::invalid_argument(std::string(who) + ": DSCP " + std::to_string(dscp) +
                                " does not fit the field's 6 bits (0..63)");
  }
  if (ecn == Ecn::kCe) {
    throw std::invalid_argument(std::string(who) +
                                ": CE is a congested switch's mark, never a sender's (RFC 3168): send not-ect, ect0 "
                                "or ect1");
  }
}

std::string class_suffix(uint8_t dscp, Ecn ecn) {
  if (dscp == 0 && ecn == Ecn::kNotEct) return {};
  return " DSCP " + std::to_string(dscp) + " ECN " + std::string(to_string(ecn));
}

bool mark_ce(std::span<uint8_t> frame) noexcept {
  if (frame.size() < kEthHeaderBytes + kIpv4HeaderBytes || get16(frame.data() + 12) != kEtherTypeIpv4) return false;
  uint8_t* ip = frame.data() + kEthHeaderBytes;
  const size_t ihl = size_t{ip[0] & 0x0Fu} * 4;
  if ((ip[0] >> 4) != 4 || ihl < kIpv4HeaderBytes || frame.size() < kEthHeaderBytes + ihl) return false;
  const auto ecn = static_cast<Ecn>(ip[1] & 3);
  if (ecn != Ecn::kEct0 && ecn != Ecn::kEct1) return false;
  // RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m'), m the 16-bit word holding the TOS byte.
  const uint16_t m = get16(ip);
  ip[1] = static_cast<uint8_t>(ip[1] | 3);
  const uint16_t m2 = get16(ip);
  const uint32_t sum = uint32_t{static_cast<uint16_t>(~get16(ip + 10))} + static_cast<uint16_t>(~m) + m2;
  put16(ip + 10, static_cast<uint16_t>(~fold(sum)));
  return true;
}

std::string_view to_string(Verdict v) noexcept {
  switch (v) {
    case Verdict::kOurs: return "ours";
    case Verdict::kTruncated: return "truncated";
    case Verdict::kNotIpv4: return "not IPv4 (EtherType)";
    case Verdict::kBadIpHeader: return "bad IPv4 header (version, options or fragment)";
    case Verdict::kBadIpChecksum: return "bad IPv4 header checksum";
    case Verdict::kNotUdp: return "not UDP";
    case Verdict::kBadUdpChecksum: return "bad UDP checksum";
    case Verdict::kWrongPort: return "not our UDP port";
    case Verdict::kBadBth: return "bad InfiniBand BTH";
    case Verdict::kBadIcrc: return "bad RoCEv2 ICRC";
    case Verdict::kBadMagic: return "bad fabemu magic";
    case Verdict::kBadVersion: return "unsupported fabemu version";
    case Verdict::kBadHeaderCrc: return "bad fabemu header CRC";
    case Verdict::kBadFields: return "inconsistent fabemu header fields";
  }
  return "unknown";
}

}  // namespace fabemu::host::dpdk
