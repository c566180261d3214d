// SHA-256 of trace shards (OpenSSL): the coordinator sends it with each shard, the agent checks it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace fabemu::lab {

// 32 raw bytes.
std::string sha256(std::string_view bytes);
// Of a whole regular file, read up to the size it had when opened (`bytes`, when given, gets that count).
// Throws LabError(ERROR_RUN_FAILED) naming the path when it cannot be read, is not a regular file (a
// device such as /dev/zero, a FIFO, a directory: refused before any byte is read), or when `cancel` is set
// (polled every 64 KiB).
std::string sha256_file(const std::string& path, const std::atomic<bool>* cancel = nullptr,
                        std::uint64_t* bytes = nullptr);
// Lower-case hex of raw bytes.
std::string to_hex(std::string_view bytes);

}  // namespace fabemu::lab
