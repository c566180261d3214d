// Registration of the CLI's command groups; each adds its subcommands and their callbacks to the app.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "host/run/exit_status.h"

namespace fabemu::cli {

// Exit status of a command: 0 success, 1 the input has errors (validate), 2 bad usage or unreadable input.
using run::kExitError;
using run::kExitFindings;
using run::kExitOk;

// `fabemu trace ...`; `status` receives the command's exit status.
void add_trace_commands(CLI::App& app, int& status);

// `fabemu run`: replay a workload over a target fabric (host/cli/run_command.cpp). `passthrough` holds
// the arguments after the first `--` of the command line (the EAL's: main() takes them off before CLI11
// parses, so that an EAL option such as -m is never read as one of fabemu's); it is read when the command
// runs.
void add_run_command(CLI::App& app, int& status, const std::vector<std::string>& passthrough);

// `fabemu compare A.json B.json [--max-regression PCT] [--per-rank] [--json]`: exit 1 when B's total
// time is more than PCT% above A's, 2 when a report cannot be read.
void add_compare_command(CLI::App& app, int& status);

// `fabemu bench collective ...`: nccl-tests' sweep on the NCCL model of a system (host/cli/bench_command.cpp).
void add_bench_command(CLI::App& app, int& status);

// `fabemu agent --listen ADDR:PORT --token-file F [--dpdk-device DEVARGS [-- EAL args]]`: the lab control-plane
// agent (host/lab/agent_command.cpp); `passthrough` as for add_run_command.
void add_agent_command(CLI::App& app, int& status, const std::vector<std::string>& passthrough);

}  // namespace fabemu::cli
