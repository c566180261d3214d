// The FrameTemplate encoder (frame_template.cpp): per-frame CRC engines (Table: slice tables; Clmul:
// carry-less products) and the writing of one frame or a run of frames from a template's cached image.
// host/wire's own, included by frame_template.cpp alone.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "host/wire/checksum.h"
#include "host/wire/crc_kernels.h"
#include "host/wire/fabemu_header.h"
#include "host/wire/frame.h"
#include "host/wire/frame_layout.h"

namespace fabemu::host::dpdk::detail {

// Nibble tables of the operator x^(8n): run.nib[i][v] is the product of the operator with the register
// nibble i (x^(4i) .. x^(4i+3)) equal to v, so a register crosses n zero bytes in eight lookups.
constexpr void build_zero_run(detail::ZeroRun& run, uint32_t n) noexcept {
  uint32_t a = mulmodp(kZeroOps.lo[n & 0xFF], kZeroOps.hi[n >> 8]);  // x^(8n)
  uint32_t pow[32] = {};                                             // a * x^k
  for (int k = 0; k < 32; ++k) {
    pow[k] = a;
    a = (a & 1) ? (a >> 1) ^ kPoly : a >> 1;
  }
  for (int i = 0; i < 8; ++i) {
    for (uint32_t v = 0; v < 16; ++v) {
      uint32_t p = 0;
      for (int j = 0; j < 4; ++j) {
        if (v & (8u >> j)) p ^= pow[4 * i + j];
      }
      run.nib[i][v] = p;
    }
  }
  run.bytes = n;
}

inline uint32_t cross_zeros(const detail::ZeroRun& run, uint32_t s) noexcept {
  uint32_t p = 0;
  for (int i = 0; i < 8; ++i) p ^= run.nib[i][(s >> (28 - 4 * i)) & 0xF];
  return p;
}

// RoCEv2 ICRC pieces: the masked bytes from IPv4 byte 2 to the end of the BTH, and the fabemu header.
constexpr size_t kIcrcPrefix = kIpv4HeaderBytes - 2 + kUdpHeaderBytes + kBthBytes;  // 38
constexpr detail::ZeroRun make_header_run() {
  detail::ZeroRun r;
  build_zero_run(r, kFabemuHeaderBytes);
  return r;
}
inline constexpr detail::ZeroRun kHeaderRun = make_header_run();  // a register across 60 bytes

// --- the engines of the per-frame CRC parts ---

// The packet's fields of the RoCEv2 ICRC prefix (masked IPv4 from byte 2, UDP, BTH), as written.
struct IcrcFields {
  uint16_t ip_len, ip_id, udp_len;
  uint16_t bth_head;  // BTH bytes 0-1: opcode, SE/M/pad/TVer
  uint32_t bth_psn;   // BTH bytes 8-11: A, PSN
};

#if defined(FABEMU_HAVE_CLMUL)
// The RoCEv2 ICRC at the end of the fabemu header, as multipliers of (IPv4 length|id, UDP length, BTH bytes
// 0-1, BTH A|PSN), each a 4-byte field (the 2-byte ones followed by two masked bytes that are 0 there),
// then of the register at the header's CRC field (cached key, packet fields, the CRC: 4 bytes before the
// end). A run of n zero bytes after the header multiplies each by x^(8n) (detail::ClmulRun).
constexpr size_t kPrefixTail = kIcrcPrefix - 4 + kFabemuHeaderBytes;  // bytes after a field at prefix 0
alignas(16) inline constexpr uint64_t kIcrcK[6] = {field_k(kPrefixTail - 0), field_k(kPrefixTail - 22),
                                            field_k(kPrefixTail - 26), field_k(kPrefixTail - 34),
                                            field_k(0), 0};
#endif

struct Encoder {
  // The portable engine: one slice-table lookup per byte of the packet's fields.
  struct Table {
    static constexpr bool kBatch = false;  // run_crc_batch() is Clmul's
    // The raw register (from zero) of the fabemu header's 56 CRC'd bytes with only the packet's fields.
    // In two parts, for a run of one message's frames: the fields fixed within the run (low halves of id
    // and time) and those that move (seq, low offset). header(h) == fixed ^ moving.
    static uint32_t fixed(uint32_t id_lo, uint32_t time_lo) noexcept {
      return crc_field<kCrcAt, kIdAt + 4, 4>(id_lo) ^ crc_field<kCrcAt, kTimeAt + 4, 4>(time_lo);
    }
    static uint32_t moving(uint32_t seq, uint32_t offset_lo) noexcept {
      return crc_field<kCrcAt, kSeqAt, 4>(seq) ^ crc_field<kCrcAt, kOffsetAt + 4, 4>(offset_lo);
    }
    static uint32_t header(const FabemuHeader& h) noexcept {
      return fixed(lo32(h.message_id), lo32(h.tx_time_ps)) ^ moving(h.seq, lo32(h.offset));
    }
    // The ICRC register after payload and pad (`tail` bytes at `body`, zeros unless `nack`), not inverted.
    // Linear in the bytes: the cached parts, the packet's fields by table, the register across the
    // header by kHeaderRun.
    static uint32_t icrc(FrameTemplate& t, const IcrcFields& p, uint32_t fields, uint32_t crc,
                         const FabemuHeader& h, const uint8_t* body, size_t tail, bool nack) noexcept {
      static_cast<void>(fields);  // Clmul's shortcut; here the header's bytes are looked up again
      uint32_t s = t.key_prefix_icrc_ ^ crc_field<kIcrcPrefix, 0, 2>(p.ip_len) ^
                   crc_field<kIcrcPrefix, 2, 2>(p.ip_id) ^ crc_field<kIcrcPrefix, 22, 2>(p.udp_len) ^
                   crc_field<kIcrcPrefix, 26, 2>(p.bth_head) ^ crc_field<kIcrcPrefix, 34, 4>(p.bth_psn);
      s = cross_zeros(kHeaderRun, s) ^ t.key_header_icrc_ ^
          crc_field<kFabemuHeaderBytes, kIdAt + 4, 4>(lo32(h.message_id)) ^
          crc_field<kFabemuHeaderBytes, kSeqAt, 4>(h.seq) ^
          crc_field<kFabemuHeaderBytes, kOffsetAt + 4, 4>(lo32(h.offset)) ^
          crc_field<kFabemuHeaderBytes, kTimeAt + 4, 4>(lo32(h.tx_time_ps)) ^
          crc_field<kFabemuHeaderBytes, kCrcAt, 4>(crc);
      if (nack) return crc_raw(s, body, tail);
      if (tail == 0) return s;
      if (t.zeros_.bytes != tail) build_zero_run(t.zeros_, static_cast<uint32_t>(tail));
      return cross_zeros(t.zeros_, s);
    }
    // The ICRCs of a run's data frames (IPv4 and UDP lengths and the zero tail fixed): icrc() per frame.
    class IcrcRun {
     public:
      IcrcRun(FrameTemplate& t, uint16_t ip_len, uint16_t udp_len, size_t tail) noexcept
          : t_(t), tail_(tail), ip_len_(ip_len), udp_len_(udp_len) {}
      uint32_t frame(uint16_t ip_id, uint16_t bth_head, uint32_t bth_psn, uint32_t fields, uint32_t crc,
                     const FabemuHeader& h) const noexcept {
        return icrc(t_, IcrcFields{ip_len_, ip_id, udp_len_, bth_head, bth_psn}, fields, crc, h, nullptr, tail_, false);
      }

     private:
      FrameTemplate& t_;
      size_t tail_;
      uint16_t ip_len_, udp_len_;
    };
  };

#if defined(FABEMU_HAVE_CLMUL)
  // PCLMULQDQ: one product per 4-byte field against a constant, the products XORed, one reduction.
  struct Clmul {
    static constexpr bool kBatch = true;
    // moving() of a run's frames i = 0 .. n-1 (seq + i, offset_lo + i * stride) into moving[i], `lanes`
    // (run_crc_batch(): 2 or 4) at a time: `moving` has room for n rounded up to a multiple of 4.
    [[gnu::noinline]] static void moving_batch(unsigned lanes, uint32_t seq, uint32_t offset_lo, uint32_t stride,
                                               uint32_t n, uint32_t* moving) noexcept {
      if (lanes == 4) {
        lanes4::moving_batch(seq, offset_lo, stride, n, moving);
      } else {
        lanes2::moving_batch(seq, offset_lo, stride, n, moving);
      }
    }
    FABEMU_CLMUL_TARGET static uint32_t header(const FabemuHeader& h) noexcept {
      // Big-endian fields read as the register reads bytes: byte-swapped.
      const __m128i id_seq = clmul_pair(__builtin_bswap32(lo32(h.message_id)), __builtin_bswap32(h.seq), kHeaderK);
      const __m128i offset_time =
          clmul_pair(__builtin_bswap32(lo32(h.offset)), __builtin_bswap32(lo32(h.tx_time_ps)), kHeaderK + 2);
      return barrett(_mm_xor_si128(id_seq, offset_time));
    }
    // As Table's (the reduction is linear: header(h) == fixed ^ moving). One pair of products each.
    FABEMU_CLMUL_TARGET static uint32_t fixed(uint32_t id_lo, uint32_t time_lo) noexcept {
      return barrett(clmul_pair(__builtin_bswap32(id_lo), __builtin_bswap32(time_lo), kFixedK));
    }
    FABEMU_CLMUL_TARGET static uint32_t moving(uint32_t seq, uint32_t offset_lo) noexcept {
      return barrett(clmul_pair(__builtin_bswap32(seq), __builtin_bswap32(offset_lo), kHeaderK + 1));
    }
    // As Table::icrc. The register at the header's CRC field is the cached key part, `fields` (the header
    // register's packet part: the same bytes) and the CRC's own bytes; the CRC'd bytes after it (4, and
    // the zero run) are in the multipliers, so the whole ICRC is five products and one reduction.
    FABEMU_CLMUL_TARGET static uint32_t icrc(FrameTemplate& t, const IcrcFields& p, uint32_t fields, uint32_t crc,
                                             const FabemuHeader& h, const uint8_t* body, size_t tail,
                                             bool nack) noexcept {
      static_cast<void>(h);  // its fields are in `fields`
      const uint64_t* k = kIcrcK;
      if (!nack && tail != 0) {
        if (t.run_.bytes != tail) build_run(t.run_, static_cast<uint32_t>(tail));
        k = t.run_.k;
      }
      const uint32_t at_crc = t.key_icrc_at_crc_ ^ fields ^ __builtin_bswap32(crc);
      const __m128i r = _mm_xor_si128(
          _mm_xor_si128(clmul_pair(__builtin_bswap32(uint32_t{p.ip_len} << 16 | p.ip_id),
                                   __builtin_bswap32(uint32_t{p.udp_len} << 16), k),
                        clmul_pair(__builtin_bswap32(uint32_t{p.bth_head} << 16), __builtin_bswap32(p.bth_psn), k + 2)),
          _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(at_crc)),
                               _mm_loadu_si128(reinterpret_cast<const __m128i*>(k + 4)), 0x00));
      const uint32_t s = barrett(r);
      return nack ? crc_raw(s, body, tail) : s;
    }
    // icrc() of a run's data frames, whose IPv4 and UDP lengths and zero tail are the same: the
    // multipliers chosen and the lengths' products taken once, then four products and one reduction a
    // frame (the IPv4 id and the register at the CRC field paired, the BTH's two words paired). The same
    // values as icrc(): the lengths' word is XORed out of the (length | id) word, and products are
    // linear in it.
    class IcrcRun {
     public:
      FABEMU_CLMUL_TARGET IcrcRun(FrameTemplate& t, uint16_t ip_len, uint16_t udp_len, size_t tail) noexcept {
        const uint64_t* k = kIcrcK;
        if (tail != 0) {
          if (t.run_.bytes != tail) build_run(t.run_, static_cast<uint32_t>(tail));
          k = t.run_.k;
        }
        lens_ = clmul_pair(__builtin_bswap32(uint32_t{ip_len} << 16), __builtin_bswap32(uint32_t{udp_len} << 16), k);
        id_crc_k_[0] = k[0];
        id_crc_k_[1] = k[4];
        bth_k_[0] = k[2];
        bth_k_[1] = k[3];
        key_ = t.key_icrc_at_crc_;
      }
      // moving_batch() into moving[i], and the ICRCs' registers (frame()'s, before the inversion) into
      // icrc[i] of frames i = 0 .. n-1 as Middle packets (BTH word 0 `w0_middle`, A clear, PSN = seq mod
      // 2^24), IPv4 ids ip_id + i (mod 2^16); the header CRC part crc_base (key_crc ^ fixed) and key_crc as
      // full_frames has them. A message's first and last packets are not Middle ones: their icrc[i] is
      // not theirs. `lanes` (2 or 4) at a time: both arrays have room for n rounded up to a multiple of 4.
      [[gnu::noinline]] void batch(unsigned lanes, uint32_t seq, uint32_t offset_lo, uint32_t stride, uint16_t ip_id,
                                   uint32_t n, uint32_t crc_base, uint32_t key_crc, uint32_t w0_middle,
                                   uint32_t* moving, uint32_t* icrc) const noexcept {
        if (lanes == 4) {
          lanes4::icrc_batch(id_crc_k_, bth_k_, lens_, key_, seq, offset_lo, stride, ip_id, n, crc_base, key_crc,
                             w0_middle, moving, icrc);
        } else {
          lanes2::icrc_batch(id_crc_k_, bth_k_, lens_, key_, seq, offset_lo, stride, ip_id, n, crc_base, key_crc,
                             w0_middle, moving, icrc);
        }
      }
      FABEMU_CLMUL_TARGET uint32_t frame(uint16_t ip_id, uint16_t bth_head, uint32_t bth_psn, uint32_t fields,
                                         uint32_t crc, const FabemuHeader& h) const noexcept {
        static_cast<void>(h);  // its fields are in `fields`
        const uint32_t at_crc = key_ ^ fields ^ __builtin_bswap32(crc);
        return barrett(_mm_xor_si128(
            lens_, _mm_xor_si128(clmul_pair(__builtin_bswap32(uint32_t{ip_id}), at_crc, id_crc_k_),
                                 clmul_pair(__builtin_bswap32(uint32_t{bth_head} << 16), __builtin_bswap32(bth_psn),
                                            bth_k_))));
      }

     private:
      __m128i lens_;
      alignas(16) uint64_t id_crc_k_[2];
      alignas(16) uint64_t bth_k_[2];
      uint32_t key_;
    };
    // kIcrcK times x^(8n), for a run of n zero bytes: when the payload length changes.
    [[gnu::noinline]] FABEMU_CLMUL_TARGET static void build_run(ClmulRun& run, uint32_t n) noexcept {
      const uint32_t x8n = clmul_mulmod(kZeroOps.lo[n & 0xFF], kZeroOps.hi[n >> 8]);
      for (int i = 0; i < 5; ++i) run.k[i] = clmul_mulmod(static_cast<uint32_t>(kIcrcK[i]), x8n);
      run.k[5] = 0;
      run.bytes = n;
    }
  };
#endif

  // Caches what the frames of messages with `key` share (image, header CRC, UDP sum, RoCEv2 ICRC parts).
  [[gnu::noinline]] static void set_key(FrameTemplate& t, const FrameTemplate::MessageKey& key,
                                        const FabemuHeader& h) noexcept;
  // The cache for the message of `h` whose key fields are the values given (encode() reads them each
  // with a load of its own, alone()): set_key when any differs from t's key.
  [[gnu::always_inline]] static inline void use_key(FrameTemplate& t, const FabemuHeader& h, PacketKind kind,
                                                    uint16_t flags, uint32_t src_rank, uint32_t dst_rank,
                                                    uint32_t count, uint64_t length, uint16_t pkey,
                                                    uint32_t qp) noexcept {
    const FrameTemplate::MessageKey& k = t.key_;
    if (!t.key_valid_ || kind != k.kind || flags != k.flags || src_rank != k.src_rank || dst_rank != k.dst_rank ||
        count != k.count || length != k.message_length || hi32(h.message_id) != k.id_hi ||
        hi32(h.offset) != k.offset_hi || hi32(h.tx_time_ps) != k.time_hi || pkey != k.pkey || qp != k.dest_qp)
        [[unlikely]] {
      set_key(t,
              FrameTemplate::MessageKey{kind, flags, src_rank, dst_rank, count, length, hi32(h.message_id),
                                        hi32(h.offset), hi32(h.tx_time_ps), pkey, qp},
              h);
    }
  }
  struct Packet;
  // kRoce: the template's mode when the caller knows it (1 RoCEv2, 0 fabemu), -1 to read it.
  template <class Crc, int kRoce = -1>
  [[gnu::always_inline]] static inline size_t write(FrameTemplate& t, const Packet& p, PacketKind kind,
                                                    std::span<const uint32_t> missing, bool payload_zero,
                                                    uint8_t* f) noexcept;
  template <class Crc>
  [[gnu::always_inline]] static inline size_t encode(FrameTemplate& t, const FrameSpec& spec,
                                                     std::span<uint8_t> out) noexcept;
  // Frame i of the run from `first` (its seq, offset and IPv4 id moved on by i), of `bytes` payload,
  // written as encode() writes a frame: a run's shorter last frame, or the frame of a run of one.
  template <class Crc, int kRoce>
  [[gnu::always_inline]] static inline size_t run_frame_at(FrameTemplate& t, const FrameSpec& first, uint32_t i,
                                                           uint32_t bytes, bool payload_zero, uint8_t* f) noexcept;
  // Whether a run of data frames of first.payload_bytes each (the last one last_bytes) fits `room` and an
  // IPv4 datagram: what run() and one() refuse alike. The longest frame is a full one.
  [[gnu::always_inline]] static inline bool run_fits(WireMode mode, const FrameSpec& first, uint32_t last_bytes,
                                                     size_t room) noexcept {
    if (first.hdr.kind != PacketKind::kData || last_bytes > first.payload_bytes) return false;
    const size_t udp_len = kUdpHeaderBytes + udp_payload_bytes(mode, first.payload_bytes);
    return kIpv4HeaderBytes + udp_len <= 65535 && room >= std::max(kMinFrameBytes, kUdpOff + udp_len);
  }
  // run() of a run of one frame (one-packet messages, retransmissions), the template's mode known
  // (kRoce): written as encode() writes a frame (a run image would be one more copy of the frame head),
  // without the CRC batch and with only the branches of that mode.
  template <class Crc, bool kRoce>
  [[gnu::always_inline]] static inline bool one(FrameTemplate& t, const FrameSpec& first, uint32_t last_bytes,
                                                uint8_t* const* frames, size_t room, uint16_t* lens,
                                                bool payload_zero) noexcept;
  template <class Crc>
  [[gnu::always_inline]] static inline bool run(FrameTemplate& t, const FrameSpec& first, uint32_t n,
                                                uint32_t last_bytes, uint8_t* const* frames, size_t room,
                                                uint16_t* lens, bool payload_zero) noexcept;
  // What the full frames of a run share (run() computes it once): the run's frame-head image, the frames
  // and their lengths, the first frame's fields, the lengths, and the fixed parts of the checks.
  struct FullFrames {
    const uint8_t* img;
    uint8_t* const* frames;
    uint16_t* lens;
    uint32_t seq;
    uint64_t offset;
    uint16_t ip_id;
    uint32_t stride;
    size_t pad, udp_len;
    uint16_t ip_len;
    size_t tail_zeros;  // bytes after the IP datagram up to the minimum frame
    uint64_t ip_base;
    uint32_t crc_base;
    uint64_t sum_base;
    uint32_t count;
    uint64_t message_id, tx_time_ps;
    unsigned lanes;  // run_crc_batch() when full_frames batches (kBatch)
  };
  // kBatch: the CRCs of the frames from Crc's batch functions first (run_crc_batch(); lanes <= full <= kBatchMax).
  static constexpr uint32_t kBatchMax = 64;
  template <class Crc, bool kRoce, bool kZero, bool kBatch>
  [[gnu::always_inline]] static inline void full_frames(FrameTemplate& t, const FullFrames& r, Bth& b,
                                                        uint32_t full) noexcept;
  // full_frames of the mode and payload kind given (a function, not a lambda: inlined, it takes on the
  // caller's instruction set, as full_frames does).
  template <class Crc, bool kBatch>
  [[gnu::always_inline]] static inline void full_frames_of(FrameTemplate& t, const FullFrames& r, Bth& b,
                                                           uint32_t full, bool roce, bool zero) noexcept {
    if (roce && zero) {
      full_frames<Crc, true, true, kBatch>(t, r, b, full);
    } else if (roce) {
      full_frames<Crc, true, false, kBatch>(t, r, b, full);
    } else if (zero) {
      full_frames<Crc, false, true, kBatch>(t, r, b, full);
    } else {
      full_frames<Crc, false, false, kBatch>(t, r, b, full);
    }
  }
  static size_t table(FrameTemplate& t, const FrameSpec& spec, std::span<uint8_t> out) noexcept {
    return encode<Table>(t, spec, out);
  }
#if defined(FABEMU_HAVE_CLMUL)
  // Its own function with the instruction set enabled: Clmul's members inline only into such a caller.
  FABEMU_CLMUL_TARGET static size_t clmul(FrameTemplate& t, const FrameSpec& spec, std::span<uint8_t> out) noexcept {
    return encode<Clmul>(t, spec, out);
  }
  FABEMU_CLMUL_TARGET static bool clmul_run(FrameTemplate& t, const FrameSpec& first, uint32_t n, uint32_t last_bytes,
                                            uint8_t* const* frames, size_t room, uint16_t* lens,
                                            bool payload_zero) noexcept {
    return run<Clmul>(t, first, n, last_bytes, frames, room, lens, payload_zero);
  }
  // A run of one frame (one-packet messages, retransmissions): run() with n = 1, in a function of its own
  // without the run image and the CRC batch (their stack frame and its set-up cost about as much as the
  // frame's own work).
  FABEMU_CLMUL_TARGET static bool clmul_run_one(FrameTemplate& t, const FrameSpec& first, uint32_t last_bytes,
                                                uint8_t* const* frames, size_t room, uint16_t* lens,
                                                bool payload_zero) noexcept {
    if (t.mode_ == WireMode::kRoceV2) return one<Clmul, true>(t, first, last_bytes, frames, room, lens, payload_zero);
    return one<Clmul, false>(t, first, last_bytes, frames, room, lens, payload_zero);
  }
#endif
  static bool table_run(FrameTemplate& t, const FrameSpec& first, uint32_t n, uint32_t last_bytes,
                        uint8_t* const* frames, size_t room, uint16_t* lens, bool payload_zero) noexcept {
    return run<Table>(t, first, n, last_bytes, frames, room, lens, payload_zero);
  }
  static bool table_run_one(FrameTemplate& t, const FrameSpec& first, uint32_t last_bytes, uint8_t* const* frames,
                            size_t room, uint16_t* lens, bool payload_zero) noexcept {
    if (t.mode_ == WireMode::kRoceV2) return one<Table, true>(t, first, last_bytes, frames, room, lens, payload_zero);
    return one<Table, false>(t, first, last_bytes, frames, room, lens, payload_zero);
  }
};

}  // namespace fabemu::host::dpdk::detail
