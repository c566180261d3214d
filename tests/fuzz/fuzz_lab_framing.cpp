// Fuzz target: the lab control plane's framing (host/lab/framing.h). Byte 0 picks the payload limit (the
// pre-authentication one, the default, or a tiny one); the rest is a byte stream decoded frame after frame
// as a reader would (decode_frame until it needs more, or refuses). Every frame decoded must re-encode to a
// frame that decodes to the same message. decode_frame reports problems by status and throws nothing;
// encode_frame throws only LabError.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <google/protobuf/util/field_comparator.h>
#include <google/protobuf/util/message_differencer.h>

#include "host/lab/error.h"
#include "host/lab/framing.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabemu;
  if (size == 0) return 0;
  constexpr size_t kLimits[] = {lab::kPreAuthMaxFrameBytes, lab::kDefaultMaxFrameBytes, 16, 0};
  const size_t limit = kLimits[data[0] & 3];
  std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
  fuzz::expect_only<>([&] {
    while (true) {
      lab::proto::Envelope envelope;
      const lab::DecodeResult r = lab::decode_frame(stream, limit, envelope);
      if (r.status == lab::DecodeStatus::kNeedMore) {
        if (stream.size() >= lab::kHeaderBytes + r.length && r.length != 0) fuzz::finding("framing", "need more with a whole frame");
        break;
      }
      if (r.status == lab::DecodeStatus::kTooLarge) {
        if (r.length <= limit) fuzz::finding("framing", "too large within the limit");
        break;
      }
      if (r.consumed != lab::kHeaderBytes + r.length || r.consumed > stream.size()) {
        fuzz::finding("framing", "consumed is not header + length within the buffer");
      }
      if (r.status == lab::DecodeStatus::kFrame) {
        lab::body_name(envelope);
        std::string frame;
        try {
          frame = lab::encode_frame(envelope, lab::kDefaultMaxFrameBytes);
        } catch (const lab::LabError&) {
          break;  // documented: a message that cannot be framed
        }
        lab::proto::Envelope again;
        const lab::DecodeResult r2 = lab::decode_frame(frame, lab::kDefaultMaxFrameBytes, again);
        if (r2.status != lab::DecodeStatus::kFrame || r2.consumed != frame.size()) {
          fuzz::finding("framing", "a frame encode_frame wrote does not decode");
        }
        // Field by field (a map's serialized order may differ), a NaN equal to itself (a double field may hold one).
        google::protobuf::util::DefaultFieldComparator doubles;
        doubles.set_treat_nan_as_equal(true);
        google::protobuf::util::MessageDifferencer differ;
        differ.set_field_comparator(&doubles);
        if (!differ.Compare(again, envelope)) {
          fuzz::finding("framing", "a message changed through encode_frame and decode_frame");
        }
      }
      stream.remove_prefix(r.consumed);
    }
  });
  return 0;
}
