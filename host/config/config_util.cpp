// Shared by the readers of host/config (ASTRA-sim's files and fabemu's own fabric file).
#include "host/config/config_util.h"

#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "emulator/topology.h"
#include "traces/error.h"

namespace fabemu::host::config {

using traces::Location;
using traces::TraceError;

[[noreturn]] void fail(const std::string& file, std::optional<uint64_t> line, const std::string& detail) {
  throw TraceError(Location{.file = file, .line = line}, detail);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::nullopt, fmt::format("cannot open: {}", std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(path, std::nullopt, "read error");
  return ss.str();
}

// --- "did you mean" ---------------------------------------------------------------------------------

namespace {

// Lower case, '_' read as '-': "Endpoint_Delay" is one edit-free step from "endpoint-delay".
std::string fold(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& known) {
  const std::string w = fold(word);
  std::string_view best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const auto k : known) {
    const size_t d = edit_distance(w, fold(k));
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  if (best.empty() || best_d > std::max<size_t>(2, w.size() / 3)) return "";
  return fmt::format(" (did you mean \"{}\"?)", best);
}

std::string join(const std::vector<std::string_view>& words, std::string_view last) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i != 0) out += i + 1 == words.size() ? last : ", ";
    out += words[i];
  }
  return out;
}

// --- numbers ------------------------------------------------------------------------------------------


PsParse decimal_ns_to_ps(std::string_view s, uint64_t& ps) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  std::string digits;
  int64_t fraction_digits = 0;
  bool any = false;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, any = true) digits += s[i];
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, any = true) {
      digits += s[i];
      ++fraction_digits;
    }
  }
  if (!any) return PsParse::kNotNumber;
  int64_t exponent = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) exp_negative = s[i++] == '-';
    if (i == s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return PsParse::kNotNumber;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      exponent = std::min<int64_t>(exponent * 10 + (s[i] - '0'), 1'000'000);  // saturate: far past any range
    }
    if (exp_negative) exponent = -exponent;
  }
  if (i != s.size()) return PsParse::kNotNumber;
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  if (digits.empty()) {
    ps = 0;  // "0", "-0.0"
    return PsParse::kOk;
  }
  if (negative) return PsParse::kNegative;
  int64_t shift = exponent - fraction_digits + 3;  // ns -> ps is 10^3
  if (shift < 0) {
    const auto dropped = static_cast<size_t>(-shift);
    if (dropped >= digits.size() || digits.find_first_not_of('0', digits.size() - dropped) != std::string::npos) {
      return PsParse::kNotWholePs;
    }
    digits.resize(digits.size() - dropped);
    shift = 0;
  }
  if (static_cast<int64_t>(digits.size()) + shift > 20) return PsParse::kTooLarge;
  __extension__ using u128 = unsigned __int128;
  u128 v = 0;
  for (const char c : digits) v = v * 10 + static_cast<unsigned>(c - '0');
  for (int64_t k = 0; k < shift; ++k) v *= 10;
  if (v > std::numeric_limits<uint64_t>::max()) return PsParse::kTooLarge;
  ps = static_cast<uint64_t>(v);
  return PsParse::kOk;
}

std::optional<double> parse_double(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_int(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string range_text(IntRange r) { return fmt::format("an integer from {} to {}", r.min, r.max); }
std::string range_text(RealRange r) { return fmt::format("a number from {} to {}", r.min, r.max); }
bool in_range(int64_t v, IntRange r) { return v >= r.min && v <= r.max; }
bool in_range(double v, RealRange r) { return std::isfinite(v) && v >= r.min && v <= r.max; }

void check_network_size(const std::string& file, uint64_t line, std::string_view keys,
                        const emu::NetworkConfig& network) {
  const emu::TopologySize size = emu::topology_size(network);
  if (size.links <= emu::kMaxTopologyLinks) return;
  const auto gib = [](int64_t links, int64_t bytes_per_link) {
    return static_cast<double>(links) * static_cast<double>(bytes_per_link) / static_cast<double>(uint64_t{1} << 30);
  };
  fail(file, line,
       fmt::format("{}: the network has {} NPUs and {} links, which would need about {:.1f} GiB of memory with the "
                   "analytical model and {:.1f} GiB with the packet model ({} and {} bytes per link, measured); "
                   "fabemu models at most {} links ({:.1f} to {:.1f} GiB), whatever the workload uses",
                   keys, size.npus, size.links, gib(size.links, emu::kTopologyBytesPerLink),
                   gib(size.links, kPacketModelBytesPerLink), emu::kTopologyBytesPerLink, kPacketModelBytesPerLink,
                   emu::kMaxTopologyLinks, gib(emu::kMaxTopologyLinks, emu::kTopologyBytesPerLink),
                   gib(emu::kMaxTopologyLinks, kPacketModelBytesPerLink)));
}

Duration ns_to_duration(const std::string& file, uint64_t line, std::string_view what, std::string_view text,
                        std::string_view expected) {
  uint64_t ps = 0;
  switch (decimal_ns_to_ps(text, ps)) {
    case PsParse::kOk:
      break;
    case PsParse::kNotNumber:
      fail(file, line, fmt::format("{}: \"{}\" is not a decimal number; expected {}", what, text, expected));
    case PsParse::kNegative:
      fail(file, line, fmt::format("{}: {} is negative; expected {}", what, text, expected));
    case PsParse::kNotWholePs:
      fail(file, line,
           fmt::format("{}: {} ns is not a whole number of picoseconds (fabemu keeps time in integer ps); round it "
                       "to at most 3 decimals",
                       what, text));
    case PsParse::kTooLarge:
      fail(file, line, fmt::format("{}: {} ns is too large (at most 2^64-1 ps, 213 days)", what, text));
  }
  return Duration::from_ps(ps);
}

// --- YAML -----------------------------------------------------------------------------------------------

uint64_t yaml_line(const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  return m.line >= 0 ? static_cast<uint64_t>(m.line) + 1 : 1;
}

YAML::Node load_yaml(const std::string& path) {
  const std::string text = read_text(path);
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(path, e.mark.is_null() ? std::nullopt : std::optional<uint64_t>(static_cast<uint64_t>(e.mark.line) + 1),
         fmt::format("invalid YAML: {}", e.msg));
  }
}

YamlKeys yaml_keys(const std::string& file, const YAML::Node& map, const std::vector<std::string_view>& known,
                   std::string_view prefix, std::string_view owner) {
  YamlKeys found;
  for (const auto& kv : map) {
    const uint64_t line = yaml_line(kv.first);
    if (!kv.first.IsScalar()) fail(file, line, "a key must be a plain name");
    const std::string& key = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      fail(file, line,
           fmt::format("unknown key \"{}{}\"{}; {} has the keys {}", prefix, key, did_you_mean(key, known), owner,
                       join(known, " and ")));
    }
    if (const auto it = found.find(key); it != found.end()) {
      fail(file, line, fmt::format("key \"{}{}\" appears twice (first on line {})", prefix, key, it->second.line));
    }
    found.emplace(key, YamlEntry{kv.second, line});
  }
  return found;
}

// --- collective implementation names --------------------------------------------------------------------

const std::vector<std::string_view> kCollectiveImplNames = {
    "ring", "direct", "directN", "halvingDoubling", "doubleBinaryTree",
    "oneRing", "oneDirect", "oneDirectN", "oneHalvingDoubling"};

std::optional<emu::CollectiveImpl> parse_collective_impl(const std::string& s, std::string& why) {
  using emu::CollectiveAlgo;
  if (s == "ring") return emu::CollectiveImpl{CollectiveAlgo::kRing, false, -1};
  if (s == "oneRing") return emu::CollectiveImpl{CollectiveAlgo::kRing, true, -1};
  if (s == "doubleBinaryTree") return emu::CollectiveImpl{CollectiveAlgo::kDoubleBinaryTree, false, -1};
  if (s == "halvingDoubling") return emu::CollectiveImpl{CollectiveAlgo::kHalvingDoubling, false, -1};
  if (s == "oneHalvingDoubling") return emu::CollectiveImpl{CollectiveAlgo::kHalvingDoubling, true, -1};
  for (const std::string_view prefix : {std::string_view("direct"), std::string_view("oneDirect")}) {
    if (s.rfind(prefix, 0) != 0) continue;
    const std::string_view window = std::string_view(s).substr(prefix.size());
    emu::CollectiveImpl impl{CollectiveAlgo::kDirect, prefix == "oneDirect", -1};
    if (window.empty()) return impl;
    const bool digits = std::all_of(window.begin(), window.end(), [](char c) { return c >= '0' && c <= '9'; });
    const auto n = digits && window.size() <= 5 ? parse_int(window) : std::nullopt;
    if (!n || *n < 1) {
      why = fmt::format("\"{}\": the window after \"{}\" must be a number from 1 to 99999 (messages in flight)", s,
                        prefix);
      return std::nullopt;
    }
    impl.direct_window = *n;
    return impl;
  }
  why = fmt::format("unknown implementation \"{}\"{}; ASTRA-sim knows {} (case-sensitive)", s,
                    did_you_mean(s, kCollectiveImplNames), join(kCollectiveImplNames));
  return std::nullopt;
}

const char* file_type_name(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace fabemu::host::config
