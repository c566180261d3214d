// Shared by the trace-reader targets (plain and gzip): a trace file read both ways fabemu reads one.
#pragma once

#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_support.h"
#include "traces/error.h"
#include "traces/reader.h"

namespace fabemu::fuzz {

// Every node (TraceReader::next, as the walker reads), then every id (next_id, the resolver's prescan); a
// TraceError is the documented answer to bad input, anything else a finding.
inline void read_trace_both_ways(const std::string& path) {
  expect_only<traces::TraceError>([&] {
    traces::TraceReader reader(path, 0);
    traces::Node node;
    while (reader.next(node)) {
    }
  });
  expect_only<traces::TraceError>([&] {
    traces::TraceReader reader(path);
    uint64_t id = 0;
    while (reader.next_id(id)) {
    }
  });
}

}  // namespace fabemu::fuzz
