#include "host/lab/datagram.h"

#include <algorithm>
#include <cstring>

#include "host/wire/fabemu_header.h"

namespace fabemu::lab {

namespace hd = host::dpdk;

namespace {

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
  hd::write_fabemu_header(f, std::span<uint8_t, kDatagramHeaderBytes>(h, kDatagramHeaderBytes));
}

size_t encode_datagram(const hd::FabemuHeader& h, uint32_t data_bytes, std::span<const uint32_t> missing,
                       std::span<uint8_t> out) noexcept {
  const size_t payload = hd::header_payload_bytes(h.kind, data_bytes, missing);
  if (out.size() < kDatagramHeaderBytes + payload) return 0;
  write_datagram_header(h, out.data());
  uint8_t* p = out.data() + kDatagramHeaderBytes;
  if (h.kind == hd::PacketKind::kNack) {
    hd::store_missing(p, missing);
  } else if (payload > 0) {
    std::memset(p, 0, payload);
  }
  return kDatagramHeaderBytes + payload;
}

uint32_t DecodedDatagram::missing(size_t i) const noexcept { return hd::load_be32(payload.data() + 4 * i); }

DatagramVerdict decode_datagram(std::span<const uint8_t> d, const DatagramRules& rules, DecodedDatagram& out) noexcept {
  // Magic, version, CRC and what every receiver requires of the fields (a known kind; data: seq < count,
  // offset + bytes <= length; ACK: no payload, seq <= count; NACK: whole u32s, seq and offset <= count).
  // The socket fabric's layout checks below are stricter (each of these failures is one of theirs too),
  // so the verdict is kBadFields either way.
  hd::FabemuHeader h;
  switch (hd::parse_fabemu_header(d, h)) {
    case hd::HeaderVerdict::kOk: break;
    case hd::HeaderVerdict::kTruncated: return DatagramVerdict::kTruncated;
    case hd::HeaderVerdict::kBadMagic: return DatagramVerdict::kBadMagic;
    case hd::HeaderVerdict::kBadVersion: return DatagramVerdict::kBadVersion;
    case hd::HeaderVerdict::kBadHeaderCrc: return DatagramVerdict::kBadHeaderCrc;
    case hd::HeaderVerdict::kBadFields: return DatagramVerdict::kBadFields;
  }
  const uint8_t* p = d.data();
  const size_t payload = d.size() - kDatagramHeaderBytes;
  if (h.src_rank >= rules.ranks || h.dst_rank >= rules.ranks || h.src_rank == h.dst_rank) {
    return DatagramVerdict::kBadFields;
  }
  switch (h.kind) {  // beyond parse_fabemu_header: the layout only the Sender produces
    case hd::PacketKind::kData: {
      // The Sender's layout: ceil(length / payload) packets (one for an empty message), packet `seq` at
      // offset seq * payload with min(payload, length - offset) bytes.
      const uint64_t pp = rules.payload;
      const uint64_t count = h.message_length <= pp ? 1 : (h.message_length + pp - 1) / pp;
      if ((h.flags & ~hd::kFlagRetransmit) != 0 || h.count != count ||
          h.offset != uint64_t{h.seq} * pp || payload != std::min(pp, h.message_length - h.offset)) {
        return DatagramVerdict::kBadFields;
      }
      break;
    }
    case hd::PacketKind::kAck:
      if (h.flags != 0 || h.message_length != 0 || h.offset != h.seq) {
        return DatagramVerdict::kBadFields;
      }
      break;
    case hd::PacketKind::kNack:
      if (h.flags != 0 || h.seq > h.offset || h.message_length != 0) {
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
      const uint32_t s = hd::load_be32(body + 4 * i);
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
