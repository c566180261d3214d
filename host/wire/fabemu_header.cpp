// The fabemu header, written and parsed for both carriers. Layout: README.md, "fabemu header".
#include "host/wire/fabemu_header.h"

namespace fabemu::host::dpdk {

namespace {

uint16_t load_be16(const uint8_t* p) noexcept { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

// What both receivers require of the fields, given the payload length: a known kind; data: seq < count
// and the bytes within the message; ACK: no payload, cumulative <= count; NACK: a list of whole u32s,
// cumulative and covered <= count.
bool fields_consistent(const FabemuHeader& h, size_t payload) noexcept {
  switch (h.kind) {
    case PacketKind::kData:
      return h.seq < h.count && payload <= h.message_length && h.offset <= h.message_length - payload;
    case PacketKind::kAck:
      return payload == 0 && h.seq <= h.count;
    case PacketKind::kNack:
      return payload % 4 == 0 && h.seq <= h.count && h.offset <= h.count;
  }
  return false;
}

}  // namespace

void write_fabemu_header(const FabemuHeader& h, std::span<uint8_t, kFabemuHeaderBytes> out) noexcept {
  uint8_t* p = out.data();
  store_header_fields(p, h);
  store_be32(p + kHeaderCrcAt, fabemu_header_crc(p));
}

HeaderVerdict parse_fabemu_header(std::span<const uint8_t> bytes, FabemuHeader& out) noexcept {
  const uint8_t* p = bytes.data();
  if (bytes.size() >= 4 && load_be32(p) != kFabemuMagic) return HeaderVerdict::kBadMagic;
  if (bytes.size() < kFabemuHeaderBytes) return HeaderVerdict::kTruncated;
  if (p[4] != kFabemuVersion) return HeaderVerdict::kBadVersion;
  if (fabemu_header_crc(p) != load_be32(p + kHeaderCrcAt)) return HeaderVerdict::kBadHeaderCrc;

  out.kind = static_cast<PacketKind>(p[5]);
  out.flags = load_be16(p + 6);
  out.src_rank = load_be32(p + 8);
  out.dst_rank = load_be32(p + 12);
  out.message_id = load_be64(p + kHeaderIdAt);
  out.seq = load_be32(p + kHeaderSeqAt);
  out.count = load_be32(p + 28);
  out.message_length = load_be64(p + 32);
  out.offset = load_be64(p + kHeaderOffsetAt);
  out.tx_time_ps = load_be64(p + kHeaderTimeAt);
  return fields_consistent(out, bytes.size() - kFabemuHeaderBytes) ? HeaderVerdict::kOk : HeaderVerdict::kBadFields;
}

}  // namespace fabemu::host::dpdk
