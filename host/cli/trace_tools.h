// `fabemu trace generate | anonymize | analyze | graph` and the ASTRA-sim text and MSCCL-IR XML conversions of
// `trace convert`.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace fabemu::cli {

struct AstraTextArgs {
  int64_t ranks = 0;
  int64_t passes = 1;
};

int run_convert_astra_text(const std::string& input, const std::string& output_prefix, const AstraTextArgs& args);
// MSCCL-IR XML -> OUTPUT.<gpu>.et for a collective of `bytes` (a size: "1MiB", "1048576", ...).
int run_convert_msccl_xml(const std::string& input, const std::string& output_prefix, const std::string& bytes);
void add_trace_tool_commands(CLI::App& trace, int& status);
// `fabemu trace analyze | graph` (host/cli/analyze_commands.cpp).
void add_trace_analyze_commands(CLI::App& trace, int& status);

}  // namespace fabemu::cli
