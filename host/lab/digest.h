// SHA-256 of trace shards (OpenSSL): the coordinator sends it with each shard, the agent checks it.
#pragma once

#include <string>
#include <string_view>

namespace fabemu::lab {

// 32 raw bytes.
std::string sha256(std::string_view bytes);
// Of a whole file; throws LabError(ERROR_RUN_FAILED) naming the path when it cannot be read.
std::string sha256_file(const std::string& path);
// Lower-case hex of raw bytes.
std::string to_hex(std::string_view bytes);

}  // namespace fabemu::lab
