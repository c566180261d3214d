// Hand encoding of the protobuf wire format and of trace files, for tests that build bad and hostile
// input byte by byte.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>

#include "traces/reader.h"
#include "traces/writer.h"

namespace fabemu::test {

inline std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80u) {
    out.push_back(static_cast<char>((v & 0x7fu) | 0x80u));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
inline std::string field_varint(uint32_t field, uint64_t v) { return varint(uint64_t{field} << 3 | 0) + varint(v); }
inline std::string field_bytes(uint32_t field, const std::string& s) {
  return varint(uint64_t{field} << 3 | 2) + varint(s.size()) + s;
}
inline std::string frame(const std::string& body) { return varint(body.size()) + body; }
// Writes `bytes` gzip-compressed, as a compressed trace file would be.
inline void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}
inline std::string frame(const google::protobuf::MessageLite& m) {
  std::string out;
  traces::append_frame(m, out);
  return out;
}
// The GlobalMetadata frame TraceWriter puts first (version "0.0.4": 8 bytes).
inline std::string metadata_frame() {
  traces::GlobalMetadata md;
  md.set_version(traces::kSchemaVersion);
  return frame(md);
}

}  // namespace fabemu::test
