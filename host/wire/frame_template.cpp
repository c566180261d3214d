// FrameTemplate: a flow's frames written from a cached image (encode(FrameTemplate&), encode_run), byte for
// byte what encode(spec) writes. Why each piece is as it is: host/dpdk/README.md ("Fast framing") and
// PERFORMANCE.md.
#include "host/wire/frame.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#include "host/wire/byte_access.h"
#include "host/wire/checksum.h"
#include "host/wire/crc_kernels.h"
#include "host/wire/fabemu_header.h"
#include "host/wire/frame_encoder.h"
#include "host/wire/frame_layout.h"

namespace fabemu::host::dpdk {

using namespace detail;

FrameSpec run_frame(const FrameSpec& first, uint32_t i, uint32_t n, uint32_t last_bytes) noexcept {
  FrameSpec s = first;
  s.hdr.seq = first.hdr.seq + i;
  s.hdr.offset = first.hdr.offset + uint64_t{i} * first.payload_bytes;
  s.ip_id = static_cast<uint16_t>(first.ip_id + i);
  s.payload_bytes = i + 1 == n ? last_bytes : first.payload_bytes;
  set_data_bth(s.bth, s.hdr.seq, s.hdr.count);
  return s;
}

FrameTemplate::FrameTemplate(const FrameSpec& flow) noexcept
    : mode_(flow.mode), src_(flow.src), dst_(flow.dst), tos_(tos_byte(flow.dscp, flow.ecn)) {
  if (mode_ == WireMode::kRoceV2) dst_.port = kRoceV2Port;
  uint8_t* f = image_;
  std::memcpy(f, dst_.mac.data(), 6);
  std::memcpy(f + 6, src_.mac.data(), 6);
  put16(f + 12, kEtherTypeIpv4);
  uint8_t* ip = f + kEthHeaderBytes;
  put8(ip + 0, 0x45);
  put8(ip + 1, tos_);
  put16(ip + 6, 0x4000);
  put8(ip + 8, 64);
  put8(ip + 9, kIpProtoUdp);
  put32(ip + 12, src_.ip);
  put32(ip + 16, dst_.ip);
  ip_sum_ = fold(sum16(ip, kIpv4HeaderBytes));  // folded: congruent, and no carry lost
  uint8_t* udp = f + kUdpOff;
  put16(udp + 0, src_.port);
  put16(udp + 2, dst_.port);
  udp_sum_ = fold(pseudo_header_sum(src_.ip, dst_.ip, 0) + sum16(udp, 4));
  static constexpr uint8_t kMaskedStart[10] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x45, 0xFF};
  icrc_head_ = crc_raw(0xFFFFFFFFu, kMaskedStart, sizeof kMaskedStart);
}

bool FrameTemplate::matches(const FrameSpec& spec) const noexcept {
  if (spec.mode != mode_ || spec.src != src_ || tos_byte(spec.dscp, spec.ecn) != tos_) return false;
  if (!mac_equal(spec.dst.mac, dst_.mac) || spec.dst.ip != dst_.ip) return false;
  return mode_ == WireMode::kRoceV2 || spec.dst.port == dst_.port;
}

bool FrameTemplate::set_crc_engine(CrcEngine e) noexcept {
  if (e == CrcEngine::kClmul && best_crc_engine() != CrcEngine::kClmul) return false;
  engine_ = e;
  return true;
}

unsigned run_crc_batch_widest() noexcept {
#if defined(FABEMU_HAVE_CLMUL)
  static const unsigned widest = [] {
    __builtin_cpu_init();
    if (best_crc_engine() != CrcEngine::kClmul || !__builtin_cpu_supports("vpclmulqdq")) return 0u;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
      return 4u;
    }
    return __builtin_cpu_supports("avx2") ? 2u : 0u;
  }();
  return widest;
#else
  return 0;
#endif
}

bool run_crc_batch_runs(unsigned lanes) noexcept {
  return lanes == 0 || ((lanes == 2 || lanes == 4) && lanes <= run_crc_batch_widest());
}

namespace {
std::atomic<unsigned> g_run_crc_batch{run_crc_batch_widest()};
}  // namespace

unsigned run_crc_batch() noexcept { return g_run_crc_batch.load(std::memory_order_relaxed); }

unsigned set_run_crc_batch(unsigned lanes) noexcept {
  if (run_crc_batch_runs(lanes)) g_run_crc_batch.store(lanes, std::memory_order_relaxed);
  return run_crc_batch();
}

namespace detail {

void Encoder::set_key(FrameTemplate& t, const FrameTemplate::MessageKey& key, const FabemuHeader& h) noexcept {
  const bool roce = t.mode_ == WireMode::kRoceV2;
  uint8_t* bth = t.image_ + kL4Off;
  uint8_t* hdr = roce ? bth + kBthBytes : bth;
  uint64_t sum = t.udp_sum_;
  if (roce) {
    std::memset(bth, 0, kBthBytes);  // words 0 and 2 are the packet's
    store_be32(bth + 4, key.dest_qp);
    sum += key.dest_qp;
  }
  // The header with the packet's fields zero: low halves of id, offset and time, seq, and the CRC.
  const uint32_t w_kind = store_header_fields(hdr, h);
  std::memset(hdr + kIdAt + 4, 0, 8);
  std::memset(hdr + kOffsetAt + 4, 0, 4);
  std::memset(hdr + kTimeAt + 4, 0, 4);
  std::memset(hdr + kCrcAt, 0, 4);
  sum += uint64_t{kFabemuMagic} + w_kind + key.src_rank + key.dst_rank + key.id_hi + key.count +
         hi32(key.message_length) + lo32(key.message_length) + key.offset_hi + key.time_hi;
  t.key_sum_ = sum;
  t.key_crc_ = crc_raw(0xFFFFFFFFu, hdr, kCrcAt);
  if (roce) {
    t.key_header_icrc_ = crc_raw(0, hdr, kFabemuHeaderBytes);
    // IPv4 from byte 2, UDP, BTH: masked as the ICRC masks them, the packet's fields zero.
    uint8_t prefix[kIcrcPrefix];
    std::memcpy(prefix, t.image_ + kEthHeaderBytes + 2, kIcrcPrefix);
    std::memset(prefix, 0, 4);                                       // total length, id
    prefix[8 - 2] = 0xFF;                                            // TTL
    prefix[10 - 2] = prefix[11 - 2] = 0xFF;                          // IP header checksum
    prefix[18 + 4] = prefix[18 + 5] = 0;                             // UDP length
    prefix[18 + 6] = prefix[18 + 7] = 0xFF;                          // UDP checksum
    prefix[26] = prefix[27] = 0;                                     // BTH opcode, SE/M/pad/TVer
    prefix[26 + 2] = static_cast<uint8_t>(key.pkey >> 8);            // P_Key: the message's
    prefix[26 + 3] = static_cast<uint8_t>(key.pkey);
    prefix[26 + 4] = 0xFF;                                           // BTH reserved byte
    std::memset(prefix + 26 + 8, 0, 4);                              // BTH A, PSN
    t.key_prefix_icrc_ = crc_raw(t.icrc_head_, prefix, kIcrcPrefix);
    t.key_icrc_at_crc_ = crc_raw_zeros(t.key_prefix_icrc_, kCrcAt) ^ crc_raw(0, hdr, kCrcAt);
  }
  t.key_ = key;
  t.key_valid_ = true;
}

// The packet's part of one frame (what encode() and run() share): every packet field of a frame of
// t.key_'s message. `missing` is a NACK's list (empty otherwise); payload_zero: the payload and pad
// bytes are already zero (not written).
struct Encoder::Packet {
  uint64_t message_id = 0, offset = 0, tx_time_ps = 0;
  uint32_t seq = 0;
  uint16_t ip_id = 0;
  uint32_t payload = 0;  // bytes after the fabemu header (a NACK's list, or the data's zeros)
  uint32_t w0 = 0, w2 = 0;  // RoCEv2: BTH words 0 and 2
};

template <class Crc, int kRoce>
[[gnu::always_inline]] inline size_t Encoder::write(FrameTemplate& t, const Packet& p, PacketKind kind,
                                                    std::span<const uint32_t> missing, bool payload_zero,
                                                    uint8_t* f) noexcept {
  const bool roce = kRoce < 0 ? t.mode_ == WireMode::kRoceV2 : kRoce == 1;
  const size_t payload = p.payload;
  const size_t pad = roce ? roce_pad(payload) : 0;
  const size_t udp_len = kUdpHeaderBytes + udp_payload_bytes(roce ? WireMode::kRoceV2 : WireMode::kFabemu, payload);
  const size_t ip_end = kUdpOff + udp_len;
  const size_t total = std::max(kMinFrameBytes, ip_end);
  // Everything up to the end of the fabemu header from the image (a constant-size copy per mode), then
  // the packet's fields: lengths, IP id and the IPv4 checksum (RFC 1624), BTH, the header's fields.
  uint8_t* l4 = f + kL4Off;
  if (roce) {
    std::memcpy(f, t.image_, kL4Off + kBthBytes + kFabemuHeaderBytes);
    store_be32(l4, p.w0);
    store_be32(l4 + 8, p.w2);
    l4 += kBthBytes;
  } else {
    std::memcpy(f, t.image_, kL4Off + kFabemuHeaderBytes);
  }
  uint8_t* ip = f + kEthHeaderBytes;
  const auto ip_len = static_cast<uint16_t>(kIpv4HeaderBytes + udp_len);
  store_be16(ip + 2, ip_len);
  store_be16(ip + 4, p.ip_id);
  store_be16(ip + 10, static_cast<uint16_t>(~fold(uint64_t{t.ip_sum_} + ip_len + p.ip_id)));
  uint8_t* udp = f + kUdpOff;
  store_be16(udp + 4, static_cast<uint16_t>(udp_len));
  store_be32(l4 + kIdAt + 4, lo32(p.message_id));
  store_be32(l4 + kSeqAt, p.seq);
  store_be32(l4 + kOffsetAt + 4, lo32(p.offset));
  store_be32(l4 + kTimeAt + 4, lo32(p.tx_time_ps));
  // The header CRC: the message's part from the cache, the packet's fields by the engine.
  FabemuHeader h;
  h.message_id = p.message_id;
  h.seq = p.seq;
  h.offset = p.offset;
  h.tx_time_ps = p.tx_time_ps;
  const uint32_t fields = Crc::header(h);
  const uint32_t crc = ~(t.key_crc_ ^ fields);
  store_be32(l4 + kCrcAt, crc);
  // The UDP checksum from the fields' values (big-endian 32-bit words sum like their 16-bit halves): the
  // message's words cached, the UDP length twice (header and pseudo-header), the packet's words.
  uint64_t sum = t.key_sum_ + 2 * udp_len + p.w0 + p.w2 + lo32(p.message_id) + p.seq + lo32(p.offset) +
                 lo32(p.tx_time_ps) + crc;

  uint8_t* body = l4 + kFabemuHeaderBytes;
  const bool nack = kind == PacketKind::kNack;
  if (nack) {
    // store_missing() spelled out, as above: the same instructions as before the header was shared.
    for (size_t i = 0; i < missing.size(); ++i) store_be32(body + 4 * i, missing[i]);
    sum += sum16(body, payload);
  } else if (payload != 0 && !payload_zero) {
    std::memset(body, 0, payload);
  }
  if (pad != 0 && (nack || !payload_zero)) std::memset(body + payload, 0, pad);
  if (roce) {
    // ICRC: masked IPv4 (from byte 2), UDP and BTH, the fabemu header, then payload and pad.
    const IcrcFields ic{ip_len, p.ip_id, static_cast<uint16_t>(udp_len), static_cast<uint16_t>(p.w0 >> 16), p.w2};
    const uint32_t s = Crc::icrc(t, ic, fields, crc, h, body, payload + pad, nack);
    const uint32_t icrc = ~s;
    uint8_t* icrc_at = body + payload + pad;
    const uint32_t le = std::endian::native == std::endian::little ? icrc : __builtin_bswap32(icrc);
    std::memcpy(icrc_at, &le, 4);    // little-endian on the wire
    sum += __builtin_bswap32(icrc);  // those bytes read as a big-endian word
  }
  const auto csum = static_cast<uint16_t>(~fold(sum));
  store_be16(udp + 6, csum == 0 ? 0xFFFF : csum);
  if (total > ip_end) std::memset(f + ip_end, 0, total - ip_end);
  return total;
}

// The BTH words 0 and 2 of a packet (RoCEv2): opcode, SE/M/pad/TVer and P_Key; A and PSN.
inline void bth_words(const Bth& b, size_t pad, uint32_t& w0, uint32_t& w2) noexcept {
  w0 = uint32_t{b.opcode} << 24 |
       uint32_t{static_cast<uint8_t>((b.solicited ? 0x80 : 0) | (b.mig_req ? 0x40 : 0) | (pad << 4) |
                                     (b.tver & 0x0F))}
           << 16 |
       b.pkey;
  w2 = (b.ack_req ? 0x80000000u : 0) | (b.psn & 0xFFFFFF);
}

template <class Crc>
size_t Encoder::encode(FrameTemplate& t, const FrameSpec& spec, std::span<uint8_t> out) noexcept {
  const FabemuHeader& h = spec.hdr;
  const bool roce = t.mode_ == WireMode::kRoceV2;
  // header_payload_bytes() spelled out: inlined, GCC 12 hoists both loads and a cmov ahead of the data branch.
  const size_t payload = h.kind == PacketKind::kData   ? spec.payload_bytes
                         : h.kind == PacketKind::kNack ? spec.missing.size() * 4
                                                       : 0;
  const size_t udp_len = kUdpHeaderBytes + udp_payload_bytes(t.mode_, payload);
  if (kIpv4HeaderBytes + udp_len > 65535) return 0;
  if (out.size() < std::max(kMinFrameBytes, kUdpOff + udp_len)) return 0;

  Packet p;
  if (roce) bth_words(spec.bth, roce_pad(payload), p.w0, p.w2);
  // The message's part of the frame (image, CRC and sums) is cached per MessageKey: built on a change.
  // The caller has usually just written `spec` a field at a time, so each field is read with a load of
  // its own (alone()): no MessageKey is built for the comparison, since its adjacent fields would be
  // copied and compared in wide loads that wait for those stores (about 5 ns a frame, measured).
  use_key(t, h, alone(h.kind), alone(h.flags), alone(h.src_rank), alone(h.dst_rank), alone(h.count),
          alone(h.message_length), roce ? alone(spec.bth.pkey) : uint16_t{0},
          roce ? alone(spec.bth.dest_qp) & 0xFFFFFF : 0);
  p.message_id = h.message_id;
  p.offset = h.offset;
  p.tx_time_ps = h.tx_time_ps;
  p.seq = h.seq;
  p.ip_id = spec.ip_id;
  p.payload = static_cast<uint32_t>(payload);
  return write<Crc>(t, p, h.kind, spec.missing, false, out.data());
}

// The frames of `stride` bytes of a run, from the run's image: per frame only the IP id, seq, offset, BTH
// words and the three checks are written (and the payload when it is not zero already).
template <class Crc, bool kRoce, bool kZero, bool kBatch>
[[gnu::always_inline]] inline void Encoder::full_frames(FrameTemplate& t, const FullFrames& r, Bth& b,
                                                        uint32_t full) noexcept {
  const size_t head = kRoce ? kL4Off + kBthBytes + kFabemuHeaderBytes : kL4Off + kFabemuHeaderBytes;
  const size_t l4_at = kRoce ? kL4Off + kBthBytes : kL4Off;
  // In locals: the frames' byte stores may alias anything in memory, so a value read through `r` or `t`
  // would be loaded again after every store.
  const uint8_t* const img = r.img;
  uint8_t* const* const frames = r.frames;
  uint16_t* const lens = r.lens;
  const uint32_t stride = r.stride, count = r.count;
  const size_t pad = r.pad, udp_len = r.udp_len, tail_zeros = r.tail_zeros;
  const uint16_t ip_len = r.ip_len;
  const uint64_t sum_base = r.sum_base;
  const uint32_t ip_base16 = fold(r.ip_base);  // not 0: the base holds the version word
  const uint32_t crc_base = r.crc_base, key_crc = t.key_crc_;
  const uint32_t body_bytes = static_cast<uint32_t>(stride + pad);
  const auto total = static_cast<uint16_t>(kUdpOff + udp_len + tail_zeros);
  FabemuHeader ch;  // Table::icrc reads the packet's fields from a header
  ch.message_id = r.message_id;
  ch.tx_time_ps = r.tx_time_ps;
  // RoCEv2: the BTH's first word of a Middle packet (every frame of the run but a message's first and
  // last has it), and the ICRC's per-run part (lengths, zero tail), once.
  uint32_t w0_middle = 0;
  if constexpr (kRoce) {
    Bth m = b;
    set_data_bth(m, 1, 3);  // packet 1 of 3: Middle, A clear
    uint32_t w2_unused = 0;
    bth_words(m, pad, w0_middle, w2_unused);
  }
  const auto icrc_run = [&] {
    if constexpr (kRoce) {
      return typename Crc::IcrcRun(t, ip_len, static_cast<uint16_t>(udp_len), body_bytes);
    } else {
      return 0;
    }
  }();
  // kBatch: every frame's moving CRC part, and in RoCEv2 mode its ICRC register as a Middle packet, r.lanes
  // frames at a time before the loop.
  alignas(16) uint32_t moving_of[kBatch ? kBatchMax : 1];
  alignas(16) uint32_t icrc_of[kBatch && kRoce ? kBatchMax : 1];
  if constexpr (kBatch) {
    if constexpr (kRoce) {
      icrc_run.batch(r.lanes, r.seq, static_cast<uint32_t>(r.offset), stride, r.ip_id, full, crc_base, key_crc, w0_middle,
                     moving_of, icrc_of);
    } else {
      Crc::moving_batch(r.lanes, r.seq, static_cast<uint32_t>(r.offset), stride, full, moving_of);
    }
  }
  uint32_t seq = r.seq;
  uint64_t offset = r.offset;
  uint16_t ip_id = r.ip_id;
  for (uint32_t i = 0; i < full; ++i, ++seq, offset += stride, ++ip_id) {
    uint8_t* f = frames[i];
    const auto offset_lo = static_cast<uint32_t>(offset);
    uint8_t* l4 = f + l4_at;
    uint64_t sum = sum_base;
    std::memcpy(f, img, head);
    uint32_t w0 = 0, w2 = 0;
    bool middle = false;
    if constexpr (kRoce) {
      if (seq != 0 && seq + 1 < count) [[likely]] {  // Middle: as set_data_bth and bth_words give
        middle = true;
        w0 = w0_middle;
        w2 = seq & 0xFFFFFF;
      } else {
        set_data_bth(b, seq, count);
        bth_words(b, pad, w0, w2);
      }
      store_be32(f + kL4Off, w0);
      store_be32(f + kL4Off + 8, w2);
      sum += uint64_t{w0} + w2;
    }
    store_be16(f + kEthHeaderBytes + 4, ip_id);
    // The base folded once (ip_base16: 1..0xFFFF) plus the id is at most 0x1FFFE: one end-around carry
    // gives fold()'s value (the same residue, never 0).
    const uint32_t ip_sum = ip_base16 + ip_id;
    store_be16(f + kEthHeaderBytes + 10, static_cast<uint16_t>(~((ip_sum & 0xFFFF) + (ip_sum >> 16))));
    store_be32(l4 + kSeqAt, seq);
    store_be32(l4 + kOffsetAt + 4, offset_lo);
    uint32_t moving;
    if constexpr (kBatch) {
      moving = moving_of[i];
    } else {
      moving = Crc::moving(seq, offset_lo);
    }
    const uint32_t crc = ~(crc_base ^ moving);
    store_be32(l4 + kCrcAt, crc);
    sum += uint64_t{seq} + offset_lo + crc;
    uint8_t* body = l4 + kFabemuHeaderBytes;
    if constexpr (!kZero) std::memset(body, 0, body_bytes);
    if constexpr (kRoce) {
      ch.seq = seq;
      ch.offset = offset;
      uint32_t icrc;
      if (kBatch && middle) [[likely]] {
        icrc = ~icrc_of[i];
      } else {
        icrc = ~icrc_run.frame(ip_id, static_cast<uint16_t>(w0 >> 16), w2, crc_base ^ moving ^ key_crc, crc, ch);
      }
      const uint32_t le = std::endian::native == std::endian::little ? icrc : __builtin_bswap32(icrc);
      std::memcpy(body + body_bytes, &le, 4);
      sum += __builtin_bswap32(icrc);
    }
    const auto csum = static_cast<uint16_t>(~fold(sum));
    store_be16(f + kUdpOff + 6, csum == 0 ? 0xFFFF : csum);
    if (tail_zeros != 0) [[unlikely]] std::memset(f + kUdpOff + udp_len, 0, tail_zeros);
    lens[i] = total;
  }
}

template <class Crc, int kRoce>
size_t Encoder::run_frame_at(FrameTemplate& t, const FrameSpec& first, uint32_t i, uint32_t bytes, bool payload_zero,
                             uint8_t* f) noexcept {
  const FabemuHeader& h = first.hdr;
  Packet p;
  p.message_id = h.message_id;
  p.tx_time_ps = h.tx_time_ps;
  p.seq = h.seq + i;
  p.offset = h.offset + uint64_t{i} * first.payload_bytes;
  p.ip_id = static_cast<uint16_t>(first.ip_id + i);
  p.payload = bytes;
  if (kRoce < 0 ? t.mode_ == WireMode::kRoceV2 : kRoce == 1) {
    Bth b = first.bth;
    set_data_bth(b, p.seq, h.count);
    bth_words(b, roce_pad(p.payload), p.w0, p.w2);
  }
  return write<Crc, kRoce>(t, p, PacketKind::kData, {}, payload_zero, f);
}

template <class Crc, bool kRoce>
bool Encoder::one(FrameTemplate& t, const FrameSpec& first, uint32_t last_bytes, uint8_t* const* frames, size_t room,
                  uint16_t* lens, bool payload_zero) noexcept {
  if (!run_fits(kRoce ? WireMode::kRoceV2 : WireMode::kFabemu, first, last_bytes, room)) return false;
  const FabemuHeader& h = first.hdr;
  if (h.seq == UINT32_MAX) [[unlikely]] {  // its seq + 1 does not fit: by encode(), as run() falls back
    lens[0] = static_cast<uint16_t>(
        encode<Crc>(t, run_frame(first, 0, 1, last_bytes), std::span<uint8_t>(frames[0], room)));
    return true;
  }
  use_key(t, h, h.kind, h.flags, h.src_rank, h.dst_rank, h.count, h.message_length,
          kRoce ? first.bth.pkey : uint16_t{0}, kRoce ? first.bth.dest_qp & 0xFFFFFF : 0);
  lens[0] = static_cast<uint16_t>(run_frame_at<Crc, kRoce ? 1 : 0>(t, first, 0, last_bytes, payload_zero, frames[0]));
  return true;
}

template <class Crc>
bool Encoder::run(FrameTemplate& t, const FrameSpec& first, uint32_t n, uint32_t last_bytes,
                  uint8_t* const* frames, size_t room, uint16_t* lens, bool payload_zero) noexcept {
  if (n == 0) return true;
  if (!run_fits(t.mode_, first, last_bytes, room)) return false;
  const FabemuHeader& h = first.hdr;
  const uint32_t stride = first.payload_bytes;
  const size_t udp_len = kUdpHeaderBytes + udp_payload_bytes(t.mode_, stride);
  const bool roce = t.mode_ == WireMode::kRoceV2;
  const uint64_t last_offset = h.offset + uint64_t{n - 1} * stride;
  if (hi32(last_offset) != hi32(h.offset) || h.seq + uint64_t{n} > UINT32_MAX) [[unlikely]] {
    // The offset's high half changes within the run (a message beyond 4 GiB): frame by frame.
    for (uint32_t i = 0; i < n; ++i) {
      lens[i] = static_cast<uint16_t>(
          encode<Crc>(t, run_frame(first, i, n, last_bytes), std::span<uint8_t>(frames[i], room)));
    }
    return true;
  }
  // One key for the whole run: the fields that change are seq, offset, IP id, the BTH's and the length.
  use_key(t, h, h.kind, h.flags, h.src_rank, h.dst_rank, h.count, h.message_length,
          roce ? first.bth.pkey : uint16_t{0}, roce ? first.bth.dest_qp & 0xFFFFFF : 0);
  // The frames of `stride` bytes (all, or all but a shorter last one) from an image of the run: the
  // flow's and message's image with this run's lengths, low id and low time in place, and the sums and
  // CRC part of those; per frame only the IP id, seq, offset, BTH words and the three checks are written.
  // (A run of one is one()'s: encode_run never gives it here.)
  const uint32_t full = last_bytes == stride ? n : n - 1;
  const uint32_t id_lo = lo32(h.message_id), time_lo = lo32(h.tx_time_ps);
  Bth b = first.bth;
  if (full > 0) {
    const size_t pad = roce ? roce_pad(stride) : 0;
    const size_t ip_end = kUdpOff + udp_len;
    const size_t total = std::max(kMinFrameBytes, ip_end);
    const auto ip_len = static_cast<uint16_t>(kIpv4HeaderBytes + udp_len);
    const size_t l4_at = roce ? kL4Off + kBthBytes : kL4Off;
    alignas(64) uint8_t img[FrameTemplate::kImageBytes];
    std::memcpy(img, t.image_, sizeof img);
    store_be16(img + kEthHeaderBytes + 2, ip_len);
    store_be16(img + kUdpOff + 4, static_cast<uint16_t>(udp_len));
    store_be32(img + l4_at + kIdAt + 4, id_lo);
    store_be32(img + l4_at + kTimeAt + 4, time_lo);
    const uint64_t ip_base = uint64_t{t.ip_sum_} + ip_len;
    const uint32_t crc_base = t.key_crc_ ^ Crc::fixed(id_lo, time_lo);
    const uint64_t sum_base = t.key_sum_ + 2 * udp_len + id_lo + time_lo;
    const FullFrames ff{img, frames, lens, h.seq, h.offset, first.ip_id, stride, pad, udp_len, ip_len,
                        total - ip_end, ip_base, crc_base, sum_base, h.count, h.message_id, h.tx_time_ps,
                        run_crc_batch()};
    // One loop per mode, payload kind and CRC batching: no per-frame test of any, and registers for the rest.
    // Batched only when the run fills every lane at least once: the batch's call and set-up cost more than
    // it saves on fewer frames (measured on 2-frame messages: host/dpdk/PERFORMANCE.md, `msg_2pkt`).
    if constexpr (Crc::kBatch) {
      if (ff.lanes != 0 && full >= ff.lanes && full <= kBatchMax) {
        full_frames_of<Crc, true>(t, ff, b, full, roce, payload_zero);
      } else {
        full_frames_of<Crc, false>(t, ff, b, full, roce, payload_zero);
      }
    } else {
      full_frames_of<Crc, false>(t, ff, b, full, roce, payload_zero);
    }
  }
  if (full < n) {  // the message's shorter last packet, or the only one
    lens[full] = static_cast<uint16_t>(run_frame_at<Crc, -1>(t, first, full, last_bytes, payload_zero, frames[full]));
  }
  return true;
}

}  // namespace detail

size_t encode(FrameTemplate& t, const FrameSpec& spec, std::span<uint8_t> out) noexcept {
#if defined(FABEMU_HAVE_CLMUL)
  if (t.crc_engine() == CrcEngine::kClmul) return detail::Encoder::clmul(t, spec, out);
#endif
  return detail::Encoder::table(t, spec, out);
}

bool encode_run(FrameTemplate& t, const FrameSpec& first, uint32_t n, uint32_t last_bytes, uint8_t* const* frames,
                size_t room, uint16_t* lens, bool payload_zero) noexcept {
#if defined(FABEMU_HAVE_CLMUL)
  if (t.crc_engine() == CrcEngine::kClmul) {
    if (n == 1) return detail::Encoder::clmul_run_one(t, first, last_bytes, frames, room, lens, payload_zero);
    return detail::Encoder::clmul_run(t, first, n, last_bytes, frames, room, lens, payload_zero);
  }
#endif
  if (n == 1) return detail::Encoder::table_run_one(t, first, last_bytes, frames, room, lens, payload_zero);
  return detail::Encoder::table_run(t, first, n, last_bytes, frames, room, lens, payload_zero);
}

}  // namespace fabemu::host::dpdk
