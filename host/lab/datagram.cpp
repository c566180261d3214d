#include "host/lab/datagram.h"

#include <algorithm>
#include <cstring>

namespace fabemu::lab {

namespace hd = host::dpdk;

namespace {

void put16(uint8_t* p, uint16_t v) noexcept {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void put32(uint8_t* p, uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
void put64(uint8_t* p, uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}
uint16_t get16(const uint8_t* p) noexcept { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t get32(const uint8_t* p) noexcept {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}
uint64_t get64(const uint8_t* p) noexcept { return uint64_t{get32(p)} << 32 | get32(p + 4); }

bool all_zero(const uint8_t* p, size_t n) noexcept {
  // Word at a time: the payload of every data datagram is read once.
  uint64_t acc = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    acc |= w;
  }
  for (; i < n; ++i) acc |= p[i];
  return acc == 0;
}

}  // namespace

void write_datagram_header(const hd::FabemuHeader& f, uint8_t* h) noexcept {
  put32(h + 0, hd::kFabemuMagic);
  h[4] = hd::kFabemuVersion;
  h[5] = static_cast<uint8_t>(f.kind);
  put16(h + 6, f.flags);
  put32(h + 8, f.src_rank);
  put32(h + 12, f.dst_rank);
  put64(h + 16, f.message_id);
  put32(h + 24, f.seq);
  put32(h + 28, f.count);
  put64(h + 32, f.message_length);
  put64(h + 40, f.offset);
  put64(h + 48, f.tx_time_ps);
  put32(h + 56, hd::crc32_update(0, {h, 56}));
}

size_t encode_datagram(const hd::FabemuHeader& h, uint32_t data_bytes, std::span<const uint32_t> missing,
                       std::span<uint8_t> out) noexcept {
  const size_t payload = h.kind == hd::PacketKind::kData   ? data_bytes
                         : h.kind == hd::PacketKind::kNack ? missing.size() * 4
                                                           : 0;
  if (out.size() < kDatagramHeaderBytes + payload) return 0;
  write_datagram_header(h, out.data());
  uint8_t* p = out.data() + kDatagramHeaderBytes;
  if (h.kind == hd::PacketKind::kNack) {
    for (size_t i = 0; i < missing.size(); ++i) put32(p + 4 * i, missing[i]);
  } else if (payload > 0) {
    std::memset(p, 0, payload);
  }
  return kDatagramHeaderBytes + payload;
}

uint32_t DecodedDatagram::missing(size_t i) const noexcept { return get32(payload.data() + 4 * i); }

DatagramVerdict decode_datagram(std::span<const uint8_t> d, const DatagramRules& rules, DecodedDatagram& out) noexcept {
  const uint8_t* p = d.data();
  if (d.size() >= 4 && get32(p) != hd::kFabemuMagic) return DatagramVerdict::kBadMagic;
  if (d.size() < kDatagramHeaderBytes) return DatagramVerdict::kTruncated;
  if (p[4] != hd::kFabemuVersion) return DatagramVerdict::kBadVersion;
  if (hd::crc32_update(0, {p, 56}) != get32(p + 56)) return DatagramVerdict::kBadHeaderCrc;

  hd::FabemuHeader h;
  h.kind = static_cast<hd::PacketKind>(p[5]);
  h.flags = get16(p + 6);
  h.src_rank = get32(p + 8);
  h.dst_rank = get32(p + 12);
  h.message_id = get64(p + 16);
  h.seq = get32(p + 24);
  h.count = get32(p + 28);
  h.message_length = get64(p + 32);
  h.offset = get64(p + 40);
  h.tx_time_ps = get64(p + 48);
  const size_t payload = d.size() - kDatagramHeaderBytes;
  if (h.src_rank >= rules.ranks || h.dst_rank >= rules.ranks || h.src_rank == h.dst_rank) {
    return DatagramVerdict::kBadFields;
  }
  switch (h.kind) {
    case hd::PacketKind::kData: {
      // The Sender's layout: ceil(length / payload) packets (one for an empty message), packet `seq` at
      // offset seq * payload with min(payload, length - offset) bytes.
      const uint64_t pp = rules.payload;
      const uint64_t count = h.message_length <= pp ? 1 : (h.message_length + pp - 1) / pp;
      if ((h.flags & ~hd::kFlagRetransmit) != 0 || h.count != count || h.seq >= h.count ||
          h.offset != uint64_t{h.seq} * pp || payload != std::min(pp, h.message_length - h.offset)) {
        return DatagramVerdict::kBadFields;
      }
      break;
    }
    case hd::PacketKind::kAck:
      if (h.flags != 0 || payload != 0 || h.seq > h.count || h.message_length != 0 || h.offset != h.seq) {
        return DatagramVerdict::kBadFields;
      }
      break;
    case hd::PacketKind::kNack:
      if (h.flags != 0 || payload % 4 != 0 || h.seq > h.offset || h.offset > h.count || h.message_length != 0) {
        return DatagramVerdict::kBadFields;
      }
      break;
    default:
      return DatagramVerdict::kBadFields;
  }
  if (h.dst_rank != rules.local_rank) return DatagramVerdict::kNotLocal;
  const uint8_t* body = p + kDatagramHeaderBytes;
  if (h.kind == hd::PacketKind::kData) {
    if (!all_zero(body, payload)) return DatagramVerdict::kBadPayload;
  } else if (h.kind == hd::PacketKind::kNack) {
    // Missing seqs: strictly increasing, within [cumulative, covered).
    uint64_t prev = h.seq;
    for (size_t i = 0; i < payload / 4; ++i) {
      const uint32_t s = get32(body + 4 * i);
      if (s < prev || s >= h.offset) return DatagramVerdict::kBadPayload;
      prev = uint64_t{s} + 1;
    }
  }
  out.hdr = h;
  out.payload_bytes = static_cast<uint32_t>(payload);
  out.payload = {body, payload};
  return DatagramVerdict::kOurs;
}

std::string_view to_string(DatagramVerdict v) noexcept {
  switch (v) {
    case DatagramVerdict::kOurs: return "ours";
    case DatagramVerdict::kTruncated: return "truncated";
    case DatagramVerdict::kBadMagic: return "bad fabemu magic";
    case DatagramVerdict::kBadVersion: return "unsupported fabemu version";
    case DatagramVerdict::kBadHeaderCrc: return "bad fabemu header CRC";
    case DatagramVerdict::kBadFields: return "inconsistent fabemu header fields";
    case DatagramVerdict::kNotLocal: return "destination rank not local";
    case DatagramVerdict::kBadPayload: return "bad payload";
  }
  return "unknown";
}

}  // namespace fabemu::lab
