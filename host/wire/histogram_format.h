// The text and JSON forms of a latency histogram in the fabrics' reports (DPDK and socket fabric).
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <string>

#include "emulator/histogram.h"

namespace fabemu::host::dpdk {

// "min A, median B, p99 C, max D" of a histogram.
inline std::string histogram_text(const emu::LogHistogram& h) {
  return fmt::format("min {}, median {}, p99 {}, max {}", h.min(), h.quantile(0.5), h.quantile(0.99), h.max());
}

// {"count", "min", "mean", "p50", "p90", "p99", "max"}; `detailed` adds "p999" (before "max") and the
// buckets, [lo, hi, n] each.
inline std::string histogram_json(const emu::LogHistogram& h, bool detailed) {
  std::string out = fmt::format("{{\"count\": {}, \"min\": {}, \"mean\": {:.3f}, \"p50\": {}, \"p90\": {}, \"p99\": {}, ",
                                h.count(), h.min(), h.mean(), h.quantile(0.5), h.quantile(0.9), h.quantile(0.99));
  if (!detailed) return out + fmt::format("\"max\": {}}}", h.max());
  out += fmt::format("\"p999\": {}, \"max\": {}, \"buckets\": [", h.quantile(0.999), h.max());
  bool first = true;
  h.for_each_bucket([&](uint64_t lo, uint64_t hi, uint64_t n) {
    out += fmt::format("{}[{}, {}, {}]", first ? "" : ", ", lo, hi, n);
    first = false;
  });
  out += "]}";
  return out;
}

}  // namespace fabemu::host::dpdk
