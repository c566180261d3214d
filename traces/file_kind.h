// What a file that fails to read as a Chakra trace looks like instead, so the error can say what to do
// (a JSON Lines trace to convert, an ASTRA-sim text workload, a text file that is no trace at all)
// rather than blame an old schema.
#pragma once

#include <string>

namespace fabemu::traces {

// From the file's first 4 KiB (decompressed when gzip): a sentence saying what the file looks like and
// what to do, or "" when it is binary and may be a (damaged or old) Chakra trace. Never throws.
std::string describe_non_trace(const std::string& path);

}  // namespace fabemu::traces
