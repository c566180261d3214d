#include "host/lab/framing.h"

#include <fmt/core.h>

#include <limits>

#include "host/lab/error.h"

namespace fabemu::lab {

std::array<std::uint8_t, kHeaderBytes> encode_header(std::uint32_t payload_bytes) {
  return {static_cast<std::uint8_t>(payload_bytes >> 24), static_cast<std::uint8_t>(payload_bytes >> 16),
          static_cast<std::uint8_t>(payload_bytes >> 8), static_cast<std::uint8_t>(payload_bytes)};
}

std::uint32_t decode_header(const std::array<std::uint8_t, kHeaderBytes>& header) {
  return (std::uint32_t{header[0]} << 24) | (std::uint32_t{header[1]} << 16) | (std::uint32_t{header[2]} << 8) |
         std::uint32_t{header[3]};
}

std::string encode_frame(const proto::Envelope& envelope, std::size_t max_payload) {
  const std::size_t size = envelope.ByteSizeLong();
  if (size > max_payload || size > std::numeric_limits<std::uint32_t>::max()) {
    throw LabError(proto::ERROR_FRAME_TOO_LARGE,
                   fmt::format("{} message of {} bytes exceeds the frame limit of {} bytes", body_name(envelope),
                               size, max_payload));
  }
  std::string frame(kHeaderBytes + size, '\0');
  const auto header = encode_header(static_cast<std::uint32_t>(size));
  for (std::size_t i = 0; i < kHeaderBytes; ++i) frame[i] = static_cast<char>(header[i]);
  if (!envelope.SerializeToArray(frame.data() + kHeaderBytes, static_cast<int>(size))) {
    throw LabError(proto::ERROR_INTERNAL, fmt::format("cannot serialize a {} message", body_name(envelope)));
  }
  return frame;
}

DecodeResult decode_frame(std::string_view buffer, std::size_t max_payload, proto::Envelope& out) {
  DecodeResult result;
  if (buffer.size() < kHeaderBytes) return result;
  std::array<std::uint8_t, kHeaderBytes> header{};
  for (std::size_t i = 0; i < kHeaderBytes; ++i) header[i] = static_cast<std::uint8_t>(buffer[i]);
  result.length = decode_header(header);
  if (result.length > max_payload) {
    result.status = DecodeStatus::kTooLarge;
    return result;
  }
  if (buffer.size() - kHeaderBytes < result.length) return result;
  result.consumed = kHeaderBytes + result.length;
  result.status = out.ParseFromArray(buffer.data() + kHeaderBytes, static_cast<int>(result.length))
                      ? DecodeStatus::kFrame
                      : DecodeStatus::kMalformed;
  return result;
}

std::string_view body_name(const proto::Envelope& envelope) {
  switch (envelope.body_case()) {
    case proto::Envelope::kHello: return "hello";
    case proto::Envelope::kChallenge: return "challenge";
    case proto::Envelope::kAuthResponse: return "auth_response";
    case proto::Envelope::kAuthResult: return "auth_result";
    case proto::Envelope::kHeartbeat: return "heartbeat";
    case proto::Envelope::kError: return "error";
    case proto::Envelope::kClockProbe: return "clock_probe";
    case proto::Envelope::kClockReply: return "clock_reply";
    case proto::Envelope::kAssignRanks: return "assign_ranks";
    case proto::Envelope::kTraceShard: return "trace_shard";
    case proto::Envelope::kStart: return "start";
    case proto::Envelope::kRankResult: return "rank_result";
    case proto::Envelope::kStop: return "stop";
    case proto::Envelope::kPrepared: return "prepared";
    case proto::Envelope::kRunDone: return "run_done";
    case proto::Envelope::BODY_NOT_SET: break;
  }
  return "empty";
}

}  // namespace fabemu::lab
