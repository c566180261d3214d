// Framing of the lab control plane: a 4-byte big-endian payload length, then one serialized Envelope.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "host/lab/lab.pb.h"

namespace fabemu::lab {

inline constexpr std::size_t kHeaderBytes = 4;
// Before authentication a peer may send only small handshake frames; after it, trace shards need room.
inline constexpr std::size_t kDefaultMaxFrameBytes = 64u << 20;
inline constexpr std::size_t kPreAuthMaxFrameBytes = 64u << 10;

std::array<std::uint8_t, kHeaderBytes> encode_header(std::uint32_t payload_bytes);
std::uint32_t decode_header(const std::array<std::uint8_t, kHeaderBytes>& header);

// Header + payload of `envelope`; throws LabError(ERROR_FRAME_TOO_LARGE) above `max_payload`.
std::string encode_frame(const proto::Envelope& envelope, std::size_t max_payload = kDefaultMaxFrameBytes);

enum class DecodeStatus {
  kFrame,     // `out` holds the first frame; `consumed` bytes of the buffer were used
  kNeedMore,  // the buffer ends inside the first frame
  kTooLarge,  // the length prefix exceeds the limit (`length` holds it)
  kMalformed  // the payload is not an Envelope
};
struct DecodeResult {
  DecodeStatus status = DecodeStatus::kNeedMore;
  std::size_t consumed = 0;
  std::uint32_t length = 0;
};

// Decodes the first frame of `buffer` (for byte streams held in memory; the agent reads with Asio).
DecodeResult decode_frame(std::string_view buffer, std::size_t max_payload, proto::Envelope& out);

// A short name of the envelope's body for logs ("hello", "clock_probe", "empty").
std::string_view body_name(const proto::Envelope& envelope);

}  // namespace fabemu::lab
