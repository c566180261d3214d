// fabemu: replay Chakra execution traces over a target AI fabric. `main` only parses the command line,
// runs the chosen command and turns its outcome into an exit status.
#include <fmt/core.h>
#include <google/protobuf/stubs/logging.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "host/cli/commands.h"
#include "traces/error.h"

namespace {
// The error line a user reads last. What went to stdout before it (a report's first lines, EAL's usage
// text on bad EAL arguments) is flushed first: with both streams in one file (`2>&1`, CI logs) stdout's
// buffer would otherwise land after it at exit.
int error(const std::exception& e) {
  std::fflush(stdout);
  fmt::print(stderr, "fabemu: error: {}\n", e.what());
  return fabemu::cli::kExitError;
}
}  // namespace

int main(int argc, char** argv) {
  // Our own messages say what is wrong with an input; protobuf's stderr log would only repeat it.
  google::protobuf::SetLogHandler(nullptr);
  // A file that reaches the size limit (ulimit -f) fails its write with EFBIG, which the writer reports
  // naming the file, instead of SIGXFSZ killing fabemu with everything it had done (a capture, a report).
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"fabemu: hardware-in-the-loop network emulator for AI fabrics (Chakra traces)", "fabemu"};
  app.set_version_flag("--version", std::string("fabemu ") + FABEMU_VERSION);
  app.require_subcommand(1);
  int status = fabemu::cli::kExitOk;
  // Everything after the first `--` is passed through (EAL arguments of `fabemu run --fabric dpdk` and of
  // `fabemu agent --dpdk-device`).
  std::vector<std::string> passthrough;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) != "--") continue;
    for (int j = i + 1; j < argc; ++j) passthrough.emplace_back(argv[j]);
    argc = i;
    break;
  }
  fabemu::cli::add_trace_commands(app, status);
  fabemu::cli::add_run_command(app, status, passthrough);
  fabemu::cli::add_compare_command(app, status);
  fabemu::cli::add_bench_command(app, status);
  fabemu::cli::add_agent_command(app, status, passthrough);
  try {
    app.parse(argc, argv);  // runs the selected command's callback
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? fabemu::cli::kExitOk : fabemu::cli::kExitError;
  } catch (const fabemu::traces::TraceError& e) {
    return error(e);
  } catch (const std::exception& e) {
    return error(e);
  }
  return status;
}
