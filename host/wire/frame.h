// The DPDK fabric's frames, encoded into and decoded from caller buffers (no allocation per frame):
// Ethernet II / IPv4 / UDP / fabemu header, or Ethernet II / IPv4 / UDP 4791 / InfiniBand BTH / fabemu
// header / ICRC (RoCEv2, roce.h). The byte layout is in host/dpdk/README.md. A frame that is not ours is
// classified with the reason, never mistaken for ours. The CRC engines are crc.h's, the internet
// checksums checksum.h's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "host/wire/crc.h"
#include "host/wire/roce.h"

namespace fabemu::host::dpdk {

inline constexpr uint32_t kFabemuMagic = 0x46454D55;  // "FEMU"
inline constexpr uint8_t kFabemuVersion = 1;
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr size_t kEthHeaderBytes = 14;
inline constexpr size_t kIpv4HeaderBytes = 20;
inline constexpr size_t kUdpHeaderBytes = 8;
inline constexpr size_t kFabemuHeaderBytes = 60;
inline constexpr size_t kMinFrameBytes = 60;  // Ethernet minimum without the FCS (the NIC appends it)

using MacAddr = std::array<uint8_t, 6>;

// a == b as a 4- and a 2-byte load each: std::array's operator== compares with a call to memcmp, which
// showed in perf profiles of both lcores (the template checks per run and per ACK/NACK frame; the
// figures: bench/README.md, "Figures behind code comments").
inline bool mac_equal(const MacAddr& a, const MacAddr& b) noexcept {
  uint32_t a4, b4;
  uint16_t a2, b2;
  std::memcpy(&a4, a.data(), 4);
  std::memcpy(&b4, b.data(), 4);
  std::memcpy(&a2, a.data() + 4, 2);
  std::memcpy(&b2, b.data() + 4, 2);
  return ((a4 ^ b4) | uint32_t{static_cast<uint16_t>(a2 ^ b2)}) == 0;
}

// IPv4 addresses are host-order integers (198.18.0.1 == 0xC6120001) everywhere in the API.
struct Endpoint {
  MacAddr mac{};
  uint32_t ip = 0;
  uint16_t port = 0;
  friend bool operator==(const Endpoint& a, const Endpoint& b) noexcept {
    return mac_equal(a.mac, b.mac) && a.ip == b.ip && a.port == b.port;
  }
};

enum class WireMode : uint8_t { kFabemu, kRoceV2 };

// The ECN field of the IPv4 TOS byte (RFC 3168): the low two bits. A sender marks its frames ECN-capable
// (ECT) so that a switch that runs ECN marks them CE when its queue builds instead of dropping them (RoCEv2
// fabrics' DCQCN relies on it); a frame not ECT is never marked.
enum class Ecn : uint8_t { kNotEct = 0, kEct1 = 1, kEct0 = 2, kCe = 3 };
// "not-ect", "ect1", "ect0", "ce".
std::string_view to_string(Ecn e) noexcept;
// The codepoint a sender may set by name: "not-ect" (and ""), "ect0", "ect1"; nullopt for anything else,
// "ce" included (RFC 3168: a congested switch sets CE, a sender never does).
std::optional<Ecn> sender_ecn(std::string_view name) noexcept;
// A traffic class a sender may set: a DSCP of 0..63 and any codepoint but CE. std::invalid_argument whose
// message starts with `who` otherwise.
void check_sender_class(uint32_t dscp, Ecn ecn, std::string_view who);
// " DSCP 26 ECN ect0" for a transport's name; "" for the default class (DSCP 0, not-ECT).
std::string class_suffix(uint8_t dscp, Ecn ecn);
// The TOS byte of `dscp` (6 bits) and `ecn`.
constexpr uint8_t tos_byte(uint8_t dscp, Ecn ecn) noexcept {
  return static_cast<uint8_t>(((dscp & 0x3F) << 2) | static_cast<uint8_t>(ecn));
}
// What a switch's ECN marking does to a frame: an ECT IPv4 frame gets the CE codepoint, its IPv4 header
// checksum updated incrementally (RFC 1624), as a router rewrites it. Every other byte stays (the RoCEv2
// ICRC masks the TOS byte; the UDP checksum does not cover it). Returns false, changing nothing, for a
// frame that is not IPv4, is too short for its IPv4 header, or is not ECT (Not-ECT, or CE already).
bool mark_ce(std::span<uint8_t> frame) noexcept;

enum class PacketKind : uint8_t { kData = 1, kAck = 2, kNack = 3 };

// Flags of the fabemu header.
inline constexpr uint16_t kFlagRetransmit = 0x0001;  // this copy is a retransmission

// The fabemu header (60 bytes on the wire, network byte order, its own CRC). For kAck/kNack the
// fields carry feedback about message `message_id` of the sender `dst_rank`: `seq` is the cumulative
// ack (all packets below it arrived), `offset` is the end of the range a NACK covers (packets in
// [seq, offset) not listed as missing arrived), and a NACK's payload lists missing seqs (u32 each).
struct FabemuHeader {
  PacketKind kind = PacketKind::kData;
  uint16_t flags = 0;
  uint32_t src_rank = 0;
  uint32_t dst_rank = 0;
  uint64_t message_id = 0;
  uint32_t seq = 0;
  uint32_t count = 0;
  uint64_t message_length = 0;
  uint64_t offset = 0;
  uint64_t tx_time_ps = 0;  // emulated transmit time
  friend bool operator==(const FabemuHeader&, const FabemuHeader&) = default;
};
// A UDP source port in the dynamic range derived from a flow key, so ECMP hashes spread flows.
constexpr uint16_t flow_source_port(uint64_t flow) noexcept {
  flow ^= flow >> 33;
  flow *= 0xff51afd7ed558ccdULL;
  flow ^= flow >> 33;
  return static_cast<uint16_t>(0xC000 | (flow & 0x3FFF));
}

// Everything encode() needs for one frame.
struct FrameSpec {
  WireMode mode = WireMode::kFabemu;
  Endpoint src;                 // src.port is the UDP source port (see flow_source_port)
  Endpoint dst;                 // dst.port is ignored in RoCEv2 mode (always 4791)
  uint16_t ip_id = 0;
  uint8_t dscp = 0;             // 6 bits
  Ecn ecn = Ecn::kNotEct;       // the TOS byte is tos_byte(dscp, ecn)
  FabemuHeader hdr;
  Bth bth;                      // RoCEv2 mode only
  // kData: message bytes this packet carries, sent as zero padding after the header.
  // kNack: ignored; the payload is `missing` (4 bytes per seq). kAck: ignored (no payload).
  uint32_t payload_bytes = 0;
  std::span<const uint32_t> missing;
};

// Bytes of the frame (no FCS) for `payload_bytes` after the fabemu header, at least kMinFrameBytes.
size_t frame_bytes(WireMode mode, size_t payload_bytes) noexcept;
// The largest payload_bytes whose frame fits `mtu` (the IPv4 total length limit, e.g. 1500 or 9000).
size_t max_payload_for_mtu(WireMode mode, size_t mtu) noexcept;

// Writes the frame into `out` with every checksum (IPv4, UDP, fabemu header CRC, RoCEv2 ICRC) filled
// in. Returns the frame's length, or 0 when `out` is too small or the IP datagram would exceed 65535.
size_t encode(const FrameSpec& spec, std::span<uint8_t> out) noexcept;

// --- per-flow templates: the same bytes as encode(spec), faster (README.md, "Fast framing") ---
// How many frames of a run encode_run's kClmul engine computes the CRCs of at a time (header CRC and RoCEv2
// ICRC, with VPCLMULQDQ): 4 (512-bit vectors: the CPU has AVX-512 F/BW/VL and VPCLMULQDQ), 2 (256-bit:
// AVX2 and VPCLMULQDQ, as Zen 3 has), or 0 (frame by frame). The widest the CPU runs is the default
// (checked once). The frames are the same bytes at every width; set_run_crc_batch(lanes) picks a width
// the CPU runs (run_crc_batch_runs: 0 always; tests compare them all, the benchmark measures them) and
// returns the width now (unchanged when the CPU does not run `lanes`).
unsigned run_crc_batch_widest() noexcept;
bool run_crc_batch_runs(unsigned lanes) noexcept;
unsigned run_crc_batch() noexcept;
unsigned set_run_crc_batch(unsigned lanes) noexcept;
namespace detail {
// The CRC register operator of a run of zero bytes (RoCEv2 payload and pad), as nibble tables.
struct ZeroRun {
  uint32_t bytes = UINT32_MAX;  // the run length it is for (UINT32_MAX: none yet)
  uint32_t nib[8][16] = {};
};
struct Encoder;  // encode(FrameTemplate&, ...): frame_encoder.h, frame_template.cpp
// kClmul: the multipliers of the RoCEv2 ICRC's per-frame parts that carry them across a run of zero bytes.
struct ClmulRun {
  uint32_t bytes = UINT32_MAX;  // as ZeroRun
  alignas(16) uint64_t k[6] = {};
};
}  // namespace detail

// Everything encode() writes that depends only on the flow (mode, MAC and IP addresses, UDP ports, TOS),
// built once, and caches of what repeats from frame to frame: the fabemu header CRC of the fields shared
// by the packets of messages of one size, and (RoCEv2) the CRC operator of the last payload length. The
// caches are why encode() takes it by non-const reference: one template per flow and core, never shared.
class FrameTemplate {
 public:
  FrameTemplate() = default;  // the flow of a default FrameSpec
  // Takes mode, src, dst, dscp and ecn of `flow`; the per-frame fields of `flow` are ignored.
  explicit FrameTemplate(const FrameSpec& flow) noexcept;
  // True when `spec` belongs to this flow (same mode, endpoints, DSCP and ECN; dst.port only in fabemu mode).
  bool matches(const FrameSpec& spec) const noexcept;
  WireMode mode() const noexcept { return mode_; }
  CrcEngine crc_engine() const noexcept { return engine_; }
  // Tests and benchmarks compare the engines: false (and no change) when this CPU cannot run `e`.
  bool set_crc_engine(CrcEngine e) noexcept;

 private:
  friend struct detail::Encoder;
  // The fabemu header fields shared by the packets of a flow's messages of one size, and the high halves
  // of message id, offset and transmit time (which change every 2^32 messages, bytes or picoseconds).
  struct MessageKey {
    PacketKind kind = PacketKind::kData;
    uint16_t flags = 0;
    uint32_t src_rank = 0, dst_rank = 0, count = 0;
    uint64_t message_length = 0;
    uint32_t id_hi = 0, offset_hi = 0, time_hi = 0;
    uint16_t pkey = 0;     // RoCEv2 only (0 in fabemu mode)
    uint32_t dest_qp = 0;  // RoCEv2 only
    // No operator==: encode() compares a packet's fields with key_ one load each (frame_template.cpp, alone()).
  };
  WireMode mode_ = WireMode::kFabemu;
  CrcEngine engine_ = best_crc_engine();
  Endpoint src_, dst_;
  uint8_t tos_ = 0;  // tos_byte(dscp, ecn)
  // The frame's bytes up to the end of the fabemu header, copied whole into every frame and then patched:
  // Ethernet, IPv4 and UDP of the flow (lengths, IP id and checksums zero), and for key_ (once valid) the
  // BTH's dest QP (RoCEv2) and the fabemu header's fields of key_, the packet's fields and the CRC zero.
  static constexpr size_t kImageBytes =
      kEthHeaderBytes + kIpv4HeaderBytes + kUdpHeaderBytes + kBthBytes + kFabemuHeaderBytes;
  alignas(64) uint8_t image_[kImageBytes] = {};
  uint32_t ip_sum_ = 0;     // ones'-complement sum (folded) of image_'s IPv4 header
  uint32_t udp_sum_ = 0;    // pseudo-header addresses and protocol, plus the UDP ports
  uint32_t icrc_head_ = 0;  // RoCEv2: the ICRC register after the masked LRH and IPv4 bytes 0-1
  MessageKey key_;
  bool key_valid_ = false;
  uint32_t key_crc_ = 0;    // raw CRC register of the header with key_'s fields, the other bytes zero
  uint64_t key_sum_ = 0;    // udp_sum_ plus the image's header words of key_ (and BTH word 1): the UDP sum
  // RoCEv2: the ICRC register after the masked IPv4/UDP/BTH bytes with key_'s fields (the packet's zero),
  // and the contribution of the header with key_'s fields (the rest zero) from a zero register.
  uint32_t key_prefix_icrc_ = 0;
  uint32_t key_header_icrc_ = 0;
  // kClmul: the two above as one register at the header's CRC field (prefix across the first 56 header bytes).
  uint32_t key_icrc_at_crc_ = 0;
  detail::ZeroRun zeros_;
  detail::ClmulRun run_;
};

// Writes the frame of `spec` with `t`'s flow fields: byte for byte what encode(spec, out) writes when
// t.matches(spec) (and the frame of t's flow otherwise). Returns the length, or 0 as encode() does.
size_t encode(FrameTemplate& t, const FrameSpec& spec, std::span<uint8_t> out) noexcept;

// A run of `n` data frames of one message, as a sender gives them (Sender::next_runs): frame i is byte for
// byte what encode(t, spec_i, ...) writes, where spec_i is `first` with hdr.seq + i, hdr.offset + i *
// first.payload_bytes, ip_id + i (mod 2^16), payload_bytes first.payload_bytes (last_bytes for the last
// frame) and, in RoCEv2 mode, bth.opcode = rc_send_opcode(seq, count), bth.psn = seq mod 2^24 and
// bth.ack_req = (seq + 1 == count): first.bth's own opcode, PSN and A are not used. Each frames[i] has
// room for `room` bytes; lens[i] gets frame i's length. The message's fields are checked against the
// template's cache once per run, not per frame. payload_zero: the caller vouches that the bytes after
// every frame's headers (payload and RoCEv2 pad) are zero already, so they are not written.
// Returns false (nothing written) when first.hdr is not kData, last_bytes > first.payload_bytes, or a
// full frame does not fit `room` or an IP datagram.
bool encode_run(FrameTemplate& t, const FrameSpec& first, uint32_t n, uint32_t last_bytes, uint8_t* const* frames,
                size_t room, uint16_t* lens, bool payload_zero = false) noexcept;
// Frame i of n of such a run as a FrameSpec (spec_i above): for paths that write a run frame by frame.
FrameSpec run_frame(const FrameSpec& first, uint32_t i, uint32_t n, uint32_t last_bytes) noexcept;

// Why a frame is not ours. Checked in this order, so a frame gets the first reason that applies.
enum class Verdict : uint8_t {
  kOurs,
  kTruncated,         // shorter than its headers or its stated lengths
  kNotIpv4,           // EtherType is not 0x0800
  kBadIpHeader,       // IP version != 4, options present, or a fragment
  kBadIpChecksum,
  kNotUdp,            // IP protocol != 17
  kBadUdpChecksum,
  kWrongPort,         // UDP destination port is not one of ours
  kBadBth,            // RoCEv2: TVer != 0, an opcode we never send (real RDMA traffic), or a bad pad count
  kBadIcrc,           // RoCEv2: invariant CRC mismatch
  kBadMagic,
  kBadVersion,
  kBadHeaderCrc,
  kBadFields,         // unknown kind, seq >= count, offset+bytes > length, NACK list not whole u32s
};
inline constexpr size_t kVerdictCount = 15;
std::string_view to_string(Verdict v) noexcept;

// What decode() accepts: the mode and the receiving side's UDP destination ports [port_lo, port_hi]
// (fabemu mode; RoCEv2 always 4791).
struct DecodeRules {
  WireMode mode = WireMode::kFabemu;
  uint16_t port_lo = 0;
  uint16_t port_hi = 0;
  // Off only when the NIC has already verified the UDP checksum (DPDK's RX L4 checksum offload): the
  // payload sum is most of a fabemu-mode decode. The IPv4 checksum and the header CRC are always checked.
  bool verify_udp_checksum = true;
  // Off only when the UDP checksum is verified (here or by the NIC), which then covers the same bytes.
  bool verify_icrc = true;
  // The ICRC's engine (roce_icrc): by byte tables about a cycle per byte; kClmul folds 16 bytes at a time
  // (about 0.1 cycle per byte: 1 KiB frames decode about five times faster).
  CrcEngine icrc_engine = best_crc_engine();
};

struct DecodedFrame {
  Endpoint src;
  Endpoint dst;
  uint16_t ip_id = 0;
  uint8_t dscp = 0;
  Ecn ecn = Ecn::kNotEct;               // as it arrived: a switch on the way may have marked it CE
  FabemuHeader hdr;
  Bth bth;                              // RoCEv2 mode only
  uint8_t pad_count = 0;                // RoCEv2 mode only
  uint32_t payload_bytes = 0;           // bytes after the fabemu header (without RoCE pad and ICRC)
  std::span<const uint8_t> payload;     // points into the decoded frame
  // A NACK's missing seqs (payload_bytes / 4 of them), without copying.
  size_t missing_count() const noexcept { return hdr.kind == PacketKind::kNack ? payload_bytes / 4 : 0; }
  uint32_t missing(size_t i) const noexcept;
};

// Classifies `frame`; fills `out` only when the verdict is kOurs, and then every field of it (a caller may
// reuse one DecodedFrame). Never reads past frame.size().
Verdict decode(std::span<const uint8_t> frame, const DecodeRules& rules, DecodedFrame& out) noexcept;

}  // namespace fabemu::host::dpdk
