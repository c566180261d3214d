// Shared by the readers of host/config (ASTRA-sim's network.yml and system.json, fabemu's own fabric
// file): errors naming the file, the line and the key; "did you mean"; exact decimal-ns parsing; YAML
// mappings checked for unknown and repeated keys; ASTRA-sim's collective implementation names.
// Internal to fabemu_host_config (it includes yaml-cpp, which the library links privately).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/config.h"
#include "emulator/time.h"

namespace fabemu::host::config {

using emu::Duration;

// Throws traces::TraceError at (file, line); `detail` should name the key.
[[noreturn]] void fail(const std::string& file, std::optional<uint64_t> line, const std::string& detail);

// The whole file, or a TraceError ("cannot open: ...").
std::string read_text(const std::string& path);

// " (did you mean "x"?)" when a known word is close to `word` (case-insensitive, '_' read as '-'),
// else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& known);

// "a, b or c" (or "a, b and c" with last = " and ").
std::string join(const std::vector<std::string_view>& words, std::string_view last = " or ");

// A decimal number of nanoseconds ("500", "936.25", "+1.5e3") converted to picoseconds exactly,
// without floating point: the decimal digits are scaled by a power of ten.
enum class PsParse { kOk, kNotNumber, kNegative, kNotWholePs, kTooLarge };
PsParse decimal_ns_to_ps(std::string_view s, uint64_t& ps);

// decimal_ns_to_ps, or a TraceError at (file, line) whose message starts with `what` (e.g.
// `key "latency", dimension 0`) and shows `expected` (the form the key takes).
Duration ns_to_duration(const std::string& file, uint64_t line, std::string_view what, std::string_view text,
                        std::string_view expected);

// The whole of `s` as a number, or nullopt. No "inf"/"nan"/hex (std::from_chars, correctly rounded).
std::optional<double> parse_double(std::string_view s);
std::optional<int64_t> parse_int(std::string_view s);

// What a path that is not a regular file is, from its st_mode: "a directory", "a FIFO", "a socket", "a
// character device", "a block device", else "not a regular file". For errors that name what was found.
const char* file_type_name(unsigned mode);

// --- ranges (host/config/README.md, "Bounds") ---
// Every integer key of the three files has a range, and every number key that fabemu turns into a rate
// has one; a value outside is an error naming the file, the line and the key, with the range.

struct IntRange {
  int64_t min;
  int64_t max;
};
struct RealRange {
  double min;
  double max;
};
// "an integer from 1 to 65536"
std::string range_text(IntRange r);
// "a number from 0.001 to 1000000"
std::string range_text(RealRange r);
bool in_range(int64_t v, IntRange r);
bool in_range(double v, RealRange r);

// Chunks a collective is cut into, and chunks in flight per dimension (system.json's
// preferred-dataset-splits and active-chunks-per-dimension, the fabric file's chunks and active_chunks).
inline constexpr IntRange kChunkRange{1, 65'536};
// NPUs along one dimension (npus_count, topology[i].npus): ASTRA-sim's int; the network's size is
// bounded as a whole by check_network_size.
inline constexpr IntRange kDimNpusRange{2, 2'147'483'647};
// Fat-tree hosts_per_leaf, leaves, spines.
inline constexpr IntRange kFatTreeCountRange{1, 2'147'483'647};
// Whole ns that fit a Duration (2^64-1 ps): endpoint-delay, local-reduction-delay.
inline constexpr IntRange kWholeNsRange{0, 18'446'744'073'709'551};
// boost-mode (an ASTRA-sim 1.x int, ignored).
inline constexpr IntRange kBoostModeRange{0, 2'147'483'647};
// Local memory bandwidth in GB/s (10^9 bytes/s) and peak compute in TFLOPS: the walker turns them into
// exact rates of at least 233 units/s and at most 2^63 units/s; 0.001 GB/s (1 MB/s) to 10^6 GB/s (1 PB/s) and
// 0.001 to 10^6 TFLOPS hold every real device (an HBM3 GPU: about 3,350 GB/s and 2,000 TFLOPS).
inline constexpr RealRange kMemBwRange{0.001, 1e6};
inline constexpr RealRange kPeakTflopsRange{0.001, 1e6};

// Peak memory of a run per link of the network with the packet model (the analytical model's is
// emu::kTopologyBytesPerLink, 64): measured as the peak RSS of a run on the largest network accepted
// (the figures: bench/README.md, "Figures behind code comments").
inline constexpr int64_t kPacketModelBytesPerLink = 100;

// The network's size checked before anything is built: at most emu::kMaxTopologyLinks links. The error,
// at (file, line), names `keys` (the keys that set the size) and the memory the network would need.
void check_network_size(const std::string& file, uint64_t line, std::string_view keys,
                        const emu::NetworkConfig& network);

// --- YAML ---

// 1-based line of a node (1 when yaml-cpp has no mark).
uint64_t yaml_line(const YAML::Node& node);

// Reads and parses `path`; a TraceError with the line for YAML that does not parse.
YAML::Node load_yaml(const std::string& path);

struct YamlEntry {
  YAML::Node value;
  uint64_t line;  // of the key
};
using YamlKeys = std::map<std::string, YamlEntry, std::less<>>;

// The keys of mapping `map`, each a plain scalar, one of `known`, at most once; otherwise a TraceError
// at the key's line: `unknown key "PREFIXkey" (did you mean "..."?); OWNER has the keys ...` or
// `key "PREFIXkey" appears twice (first on line N)`. `prefix` places a nested key ("topology.").
YamlKeys yaml_keys(const std::string& file, const YAML::Node& map, const std::vector<std::string_view>& known,
                   std::string_view prefix, std::string_view owner);

// --- collectives ---

// ASTRA-sim's implementation names (generate_collective_impl_from_input): ring, direct, directN,
// halvingDoubling, doubleBinaryTree, oneRing, oneDirect, oneDirectN, oneHalvingDoubling. "directN" is
// "direct" followed by a window of at most 5 digits (ASTRA-sim reads substr(6, 5) with stoi, so it
// would take "direct12345678" as 12345 and abort on "directX"; both are refused here).
extern const std::vector<std::string_view> kCollectiveImplNames;
// The implementation named `s`, or nullopt with `why` saying what is wrong (with a suggestion).
std::optional<emu::CollectiveImpl> parse_collective_impl(const std::string& s, std::string& why);

}  // namespace fabemu::host::config
