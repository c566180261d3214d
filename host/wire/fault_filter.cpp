// The seeded fault filter (reassembly.h: FaultFilter, describe_drops).
#include <fmt/core.h>

#include <cmath>
#include <string>

#include "host/wire/reassembly.h"

namespace fabemu::host::dpdk {

// --- FaultFilter ------------------------------------------------------------------------------------

namespace {
uint64_t to_q32(double p, const char* name) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw std::invalid_argument(std::string("fault injection: ") + name + " " + std::to_string(p) +
                                " must be between 0 and 1");
  }
  return static_cast<uint64_t>(std::llround(p * 4294967296.0));
}
}  // namespace

std::string describe_drops(const FaultConfig& config, std::string_view what) {
  if (config.drop_rate == 0) return {};
  return fmt::format(" (--drop-rate {:g}: the fault injection drops {} the data {} that arrive)", config.drop_rate,
                     config.drop_rate >= 1 ? "all of" : "that fraction of", what);
}

FaultFilter::FaultFilter(const FaultConfig& config)
    : state_(config.seed),
      drop_q32_(to_q32(config.drop_rate, "drop rate")),
      dup_q32_(to_q32(config.duplicate_rate, "duplicate rate")),
      reorder_q32_(to_q32(config.reorder_rate, "reorder rate")),
      active_(drop_q32_ != 0 || dup_q32_ != 0 || reorder_q32_ != 0) {}

uint64_t FaultFilter::draw() noexcept {  // splitmix64
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t FaultFilter::uniform(uint64_t n) noexcept {
  __extension__ using u128 = unsigned __int128;
  return n == 0 ? 0 : static_cast<uint64_t>((u128{draw()} * n) >> 64);
}

FaultDecision FaultFilter::draw_next() noexcept {
  ++seen_;
  FaultDecision d;
  // Three draws per packet whatever the outcome, so one rate does not shift the others' sequence.
  const uint64_t a = draw() >> 32, b = draw() >> 32, c = draw() >> 32;
  d.drop = a < drop_q32_;
  d.duplicate = !d.drop && b < dup_q32_;
  d.reorder = !d.drop && c < reorder_q32_;
  dropped_ += d.drop;
  duplicated_ += d.duplicate;
  reordered_ += d.reorder;
  return d;
}

}  // namespace fabemu::host::dpdk
