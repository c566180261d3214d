// `fabemu run`'s pipeline, for the command line and for tests: check the options, load the plan, make the
// backend, walk, finish, write the summary and report, and give the exit status.
#pragma once

#include "host/run/run_args.h"

namespace fabemu::run {

// Returns the exit status (host/run/exit_status.h); throws for bad options and input (the CLI prints them
// and exits 2). Writes the summary to stdout unless a.quiet, the report and timeline where asked.
int run_workload(const RunArgs& a);

}  // namespace fabemu::run
